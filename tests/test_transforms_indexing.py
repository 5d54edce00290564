"""Autodiff and vmap of the indexing (dynamic slices, gather, scatter family), sorting, dot_general,
complex and Bessel primitives, and vmap of the PRNG: JVP against central finite differences
(float64), VJP against JVP (transpose identity), jvp/vjp/vmap against real JAX on the same
programs, vmap against stacking a Python loop over every in_axes position, and JAX's errors."""
import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.core.rules import UndefinedPrimal
from tracejit.lax.indexing import scatter_p
from test_transforms import check_jvp, check_second_order, check_vjp

B = 3  # vmap batch size


class Rec(NamedTuple):
    """fn(L, N, *args) runs with (tracejit.lax, tracejit.numpy) and (jax.lax, jax.numpy)."""
    name: str
    fn: Callable
    shapes: tuple
    domain: tuple = (-2, 2)
    second_order: bool = False


def _ours(rec):
    return lambda *args: rec.fn(lax, tnp, *map(tnp.asarray, args))  # (x.at needs an array)


def _theirs(rec):
    return lambda *args: rec.fn(jax.lax, jnp, *map(jnp.asarray, args))


I4 = np.array([4, 0, 4, 2], np.int32)      # with a duplicate
J4 = np.array([2, 1, 0, 2], np.int32)
DUP = np.array([1, 3, 1], np.int32)        # scatter targets, one repeated
UNIQ = np.array([0, 3, 2], np.int32)
OOB = np.array([1, 9, -7], np.int32)       # one in range, two out (dropped, or clipped)


def _gdn(L, *args):
    return L.GatherDimensionNumbers(*args)


def _sdn(L, *args):
    return L.ScatterDimensionNumbers(*args)


def _batched_gather(L, N, x):
    # x[b, idx[b, j]] via batching dimensions
    idx = np.array([[[3], [0]], [[1], [1]], [[2], [0]]], np.int32)
    return L.gather(x, idx, _gdn(L, (), (1,), (1,), (0,), (0,)), (1, 1))


def _window_scatter(L, N, x, u):
    # 2x2 windows of updates added at (0, 1) and (2, 3) (and (0, 1) again)
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int32)
    return L.scatter_add(x, idx, u, _sdn(L, (1, 2), (), (0, 1)))


def _batched_scatter(L, N, x, u):
    idx = np.array([[[3], [0]], [[1], [1]], [[2], [0]]], np.int32)
    return L.scatter_add(x, idx, u, _sdn(L, (), (1,), (1,), (0,), (0,)))


def _scan_of_dynamic_slices(L, N, x, w):
    def body(c, i):
        window = L.dynamic_slice(x, (i,), (3,))
        return N.tanh(c * window + w), N.sum(window * c)
    c, ys = L.scan(body, N.zeros(3, x.dtype), np.arange(4, dtype=np.int32))
    return c, ys


RECORDS = [
    # gathers: NumPy indexing, take, lax.gather with batching dimensions
    Rec("getitem_array", lambda L, N, x: N.sin(x[I4]), ((5, 3),), second_order=True),
    Rec("getitem_2d_advanced", lambda L, N, x: x[I4, J4[::-1] % 3], ((5, 3),)),
    Rec("getitem_slice_and_array", lambda L, N, x: x[1:, J4] * x[1:, :1], ((5, 3),)),
    Rec("take_fill", lambda L, N, x: N.take(x, OOB, axis=0, mode="fill", fill_value=0.5),
        ((5, 3),)),
    Rec("take_clip", lambda L, N, x: N.take(x, OOB, axis=1, mode="clip"), ((2, 4),)),
    Rec("take_along_axis", lambda L, N, x: N.take_along_axis(
        x, np.array([[2, 0], [1, 1], [0, 2]]), axis=1), ((3, 3),)),
    Rec("gather_batching_dims", _batched_gather, ((3, 4),)),
    # dynamic slices, clamped into range as XLA does
    Rec("dynamic_slice", lambda L, N, x: L.dynamic_slice(x, (1, 2), (2, 2)) ** 2, ((4, 5),),
        second_order=True),
    Rec("dynamic_slice_clamped", lambda L, N, x: L.dynamic_slice(x, (3, -9), (2, 3)), ((4, 5),)),
    Rec("dynamic_update_slice", lambda L, N, x, u: L.dynamic_update_slice(x, u * u, (1, 2)),
        ((4, 5), (2, 2)), second_order=True),
    Rec("dynamic_update_slice_clamped", lambda L, N, x, u: L.dynamic_update_slice(x, u, (3, 4)),
        ((4, 5), (2, 3))),
    Rec("dynamic_slice_in_scan", _scan_of_dynamic_slices, ((6,), (3,))),
    # the scatter family through x.at[...]
    Rec("at_set_duplicates", lambda L, N, x, u: x.at[DUP].set(u * x[:3]), ((5, 2), (3, 2)),
        second_order=True),
    Rec("at_set_unique", lambda L, N, x, u: x.at[UNIQ].set(u, unique_indices=True) * x,
        ((5, 2), (3, 2))),
    Rec("at_set_clip", lambda L, N, x, u: x.at[OOB].set(u, mode="clip"), ((5,), (3,))),
    Rec("at_add_duplicates", lambda L, N, x, u: x.at[DUP].add(u * u), ((5, 2), (3, 2)),
        second_order=True),
    Rec("at_add_dropped", lambda L, N, x, u: x.at[OOB].add(u), ((5,), (3,))),
    Rec("at_subtract", lambda L, N, x, u: x.at[DUP].subtract(u), ((5,), (3,))),
    Rec("at_multiply_operand", lambda L, N, x: x.at[DUP].multiply(np.array([2., -3., .5])),
        ((5,),)),
    Rec("at_multiply_unique", lambda L, N, x, u: x.at[UNIQ].multiply(u, unique_indices=True),
        ((5,), (3,)), second_order=True),
    Rec("at_min", lambda L, N, x, u: x.at[DUP].min(u), ((5,), (3,))),
    Rec("at_max", lambda L, N, x, u: x.at[DUP].max(u * 2), ((5, 2), (3, 2))),
    Rec("scatter_add_windows", _window_scatter, ((4, 5), (3, 2, 2))),
    Rec("scatter_add_batching_dims", _batched_scatter, ((3, 4), (3, 2))),
    # sorting
    Rec("sort", lambda L, N, x: N.sort(x), ((3, 5),), second_order=True),
    Rec("sort_axis0", lambda L, N, x: N.sort(x, axis=0), ((4, 3),)),
    Rec("sort_key_val", lambda L, N, k, v: L.sort((k, v), num_keys=1), ((6,), (6,))),
    Rec("sort_two_keys", lambda L, N, k, v: L.sort((N.round(k), v), num_keys=2), ((2, 6), (2, 6)),
        (-1.5, 1.5)),
    Rec("argsort_gather", lambda L, N, x, y: x[N.argsort(y)], ((5,), (5,))),
    Rec("top_k", lambda L, N, x: L.top_k(x, 3)[0], ((2, 5),), second_order=True),
    Rec("top_k_axis0", lambda L, N, x: L.top_k(x, 2, axis=0)[0] * 3, ((4, 3),)),
    # dot_general
    Rec("matmul", lambda L, N, x, y: x @ y, ((3, 4), (4, 2)), second_order=True),
    Rec("matvec", lambda L, N, x, v: x @ v, ((3, 4), (4,))),
    Rec("einsum_batched", lambda L, N, x, y: N.einsum("bij,bjk->bik", x, y),
        ((2, 3, 4), (2, 4, 2))),
    Rec("einsum_two_contractions", lambda L, N, x, y: N.einsum("ijk,jkl->il", x, y),
        ((2, 3, 4), (3, 4, 2))),
    Rec("dot_general_trailing_batch", lambda L, N, x, y: L.dot_general(
        x, y, (((0,), (1,)), ((2,), (0,)))), ((4, 3, 2), (2, 4, 5)), second_order=True),
    # complex parts and the exponentially scaled Bessel functions
    Rec("complex_real_imag", lambda L, N, x, y: L.real(L.complex(x, y) * L.complex(y, x))
        + L.imag(L.complex(x, y) ** 2), ((4,), (4,)), second_order=True),
    Rec("conj", lambda L, N, x, y: L.imag(L.conj(L.complex(x, y)) * L.complex(x, x)),
        ((4,), (4,))),
    Rec("conj_of_real", lambda L, N, x: L.real(L.conj(x) * L.conj(x)), ((4,),)),
    Rec("bessel_i0e", lambda L, N, x: L.bessel_i0e(x), ((7,),), (-4, 4), second_order=True),
    Rec("bessel_i1e", lambda L, N, x: L.bessel_i1e(x), ((7,),), (-4, 4), second_order=True),
]
IDS = [r.name for r in RECORDS]


def _args(rec, rng) -> list:
    return [rng.uniform(*rec.domain, s) for s in rec.shapes]


def _close(ours, theirs, rtol=1e-9, atol=1e-12):
    a, b = tj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_jvp_matches_finite_differences(rec, x64, rng):
    check_jvp(_ours(rec), _args(rec, rng), rng)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_vjp_is_transpose_of_jvp(rec, x64, rng):
    check_vjp(_ours(rec), _args(rec, rng), rng)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.second_order],
                         ids=[r.name for r in RECORDS if r.second_order])
def test_second_order(rec, x64, rng):
    check_second_order(_ours(rec), _args(rec, rng), rng)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_jvp_and_vjp_match_jax(rec, x64, rng):
    args = _args(rec, rng)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    out, pullback = tj.vjp(_ours(rec), *args)
    ct = tj.tree_util.tree_map(lambda o: rng.standard_normal(np.shape(o)), out)

    @jax.jit
    def theirs(args, tangents, ct):
        return jax.jvp(_theirs(rec), args, tangents), jax.vjp(_theirs(rec), *args)[1](ct)
    _close((tj.jvp(_ours(rec), tuple(args), tangents), pullback(ct)),
           theirs(tuple(args), tangents, ct))


def _axes_cases(n: int) -> list[tuple]:
    cases = [tuple(0 if j == i else None for j in range(n)) for i in range(n)]
    if n > 1:
        cases.append((0,) * n)
    cases.append((-1,) * n)  # the batch dimension last
    return cases


def _batched(rng, shapes, in_axes, domain=(-2, 2)):
    out = []
    for shape, ax in zip(shapes, in_axes):
        if ax is None:
            out.append(rng.uniform(*domain, shape))
        else:
            out.append(np.moveaxis(rng.uniform(*domain, (B,) + shape), 0, ax))
    return out


def _loop(f, args, in_axes, size=B):
    """The oracle: f on each lane, stacked along a new first axis."""
    lanes = [f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)])
             for b in range(size)]
    return tj.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *lanes)


VMAP_CASES = [(r, ax) for r in RECORDS for ax in _axes_cases(len(r.shapes))]


@pytest.mark.parametrize("rec,in_axes", VMAP_CASES, ids=[f"{r.name}-{a}" for r, a in VMAP_CASES])
def test_vmap_matches_python_loop_and_jax(rec, in_axes, x64, rng):
    args = _batched(rng, rec.shapes, in_axes, rec.domain)
    got = tj.vmap(_ours(rec), in_axes=in_axes)(*args)
    _close(got, _loop(_ours(rec), args, in_axes))
    if in_axes == (-1,) * len(in_axes):  # and once per record against JAX
        _close(got, jax.jit(jax.vmap(_theirs(rec), in_axes=in_axes))(*args))


# --- batched indices: vmap over the integer operands too ------------------------------------

class IRec(NamedTuple):
    """fn(L, N, x, i): x float64 of shape x_shape, i an integer index operand from `index`."""
    name: str
    fn: Callable
    x_shape: tuple
    index: Callable  # rng, batch shape -> integer array


def _ints(hi, shape=(), lo=0):
    return lambda rng, batch: rng.integers(lo, hi, batch + shape).astype(np.int32)


def _starts_dynamic_slice(L, N, x, i):
    return L.dynamic_slice(x, (i, i - 1), (2, 2))


def _starts_dynamic_update(L, N, x, i):
    return L.dynamic_update_slice(x, x[:2, :2] * 2, (np.int32(1), i))


def _gather_rows(L, N, x, i):
    return L.gather(x, i[:, None], _gdn(L, (1,), (0,), (0,)), (1, 3),
                    mode=L.GatherScatterMode.CLIP)


def _scatter_rows(L, N, x, i):
    return L.scatter(x, i[:, None], x[:2] * 10, _sdn(L, (1,), (0,), (0,)))


def _sort_with_int_values(L, N, x, i):
    return L.sort((x, i), num_keys=1)


IRECORDS = [
    IRec("getitem", lambda L, N, x, i: x[i], (5, 3), _ints(5, (2,))),
    IRec("getitem_scalar_index", lambda L, N, x, i: x[:, i], (4, 6), _ints(6)),
    IRec("take_fill", lambda L, N, x, i: N.take(x, i, axis=1, mode="fill", fill_value=-1.),
         (3, 4), _ints(6, (2,), -2)),
    IRec("take_along_axis", lambda L, N, x, i: N.take_along_axis(x, i, axis=0), (4, 3),
         _ints(4, (2, 3))),
    IRec("dynamic_slice", _starts_dynamic_slice, (4, 5), _ints(5, (), -1)),
    IRec("dynamic_update_slice", _starts_dynamic_update, (4, 5), _ints(5)),
    IRec("gather_clip", _gather_rows, (4, 3), _ints(7, (2,), -2)),
    IRec("scatter_set", _scatter_rows, (4, 3), _ints(4, (2,))),
    IRec("at_add", lambda L, N, x, i: x.at[i].add(x[:3] ** 2), (4, 2), _ints(4, (3,))),
    IRec("at_max", lambda L, N, x, i: x.at[i].max(x[1:]), (4,), _ints(4, (3,))),
    IRec("sort_int_values", _sort_with_int_values, (6,), _ints(9, (6,))),
]
I_CASES = [(r, ax) for r in IRECORDS for ax in ((None, 0), (0, 0), (-1, -1))]


@pytest.mark.parametrize("rec,in_axes", I_CASES, ids=[f"{r.name}-{a}" for r, a in I_CASES])
def test_vmap_over_indices(rec, in_axes, x64, rng):
    def ours(x, i):
        return rec.fn(lax, tnp, tnp.asarray(x), i)

    def theirs(x, i):
        return rec.fn(jax.lax, jnp, jnp.asarray(x), i)
    (x,) = _batched(rng, (rec.x_shape,), in_axes[:1])
    i = rec.index(rng, (B,))
    i = np.moveaxis(i, 0, in_axes[1]) if i.ndim > 1 else i
    _close(tj.vmap(ours, in_axes=in_axes)(x, i), _loop(ours, [x, i], in_axes))

    # per-lane gradients with respect to x, the indices batched, against JAX's
    def loss(mod, f):
        return lambda x, i: sum(mod.sum(o * o) for o in jax.tree_util.tree_leaves(f(x, i))
                                if o.dtype.kind == "f")
    _close(tj.vmap(tj.grad(loss(tnp, ours)), in_axes=in_axes)(x, i),
           jax.jit(jax.vmap(jax.grad(loss(jnp, theirs)), in_axes=in_axes))(x, i))


# --- structure, integer outputs, composition with jit and the native backend ---------------

def test_vmap_of_gather_and_dot_moves_no_more_axes_than_jax(rng):
    """One batched gather and one dot_general; only the final move to out_axes=0 transposes."""
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3, 4)).astype(np.float32)

    def names(api, f):
        jaxpr = api.make_jaxpr(api.vmap(f, in_axes=(None, 2)))(x, w)
        return [e.primitive.name for e in jaxpr.eqns]
    ours = names(tj, lambda x, w: tnp.asarray(x)[np.array([2, 0])] @ w)
    theirs = names(jax, lambda x, w: jnp.asarray(x)[np.array([2, 0])] @ w)
    assert ours.count("dot_general") == 1 and ours.count("gather") == 1
    assert ours.count("transpose") == theirs.count("transpose") == 1
    np.testing.assert_allclose(
        tj.vmap(lambda x, w: x[np.array([2, 0])] @ w, in_axes=(None, 2))(x, w),
        np.einsum("ij,jkb->bik", x[[2, 0]], w), rtol=1e-5)


def test_integer_outputs_have_float0_tangents(x64, rng):
    x = rng.standard_normal((2, 5))
    t = rng.standard_normal((2, 5))
    for f in (lambda m, x: m.lax.top_k(x, 2), lambda m, x: m.lax.sort((x, m.numpy.argsort(x)),
                                                                       num_keys=1)):
        (_, idx), (_, t_idx) = tj.jvp(functools.partial(f, tj), (x,), (t,))
        (_, j_idx), (_, jt_idx) = jax.jvp(functools.partial(f, jax), (x,), (t,))
        np.testing.assert_array_equal(idx, j_idx)
        assert t_idx.dtype == jt_idx.dtype == jax.dtypes.float0
        assert t_idx.shape == jt_idx.shape


def test_jit_of_grad_and_vmap_on_both_backends(rng):
    """Forward and backward passes of indexing programs compile together, natively too."""
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    losses = [
        lambda x: tnp.sum(x.at[np.array([0, 0, 2])].set(x[1]) ** 2),
        lambda x: tnp.sum(tnp.sort(x, axis=0) * w),
        lambda x: tnp.sum(lax.top_k(x, 2)[0] ** 2),
        lambda x: tnp.sum(x.at[np.array([1, 1, 3])].max(x[0] * 2) * w),
        lambda x: tnp.sum(lax.dynamic_update_slice(x, x[:2, :2] ** 2, (3, 4)) * w),
    ]
    for loss in losses:
        eager = tj.grad(loss)(x)
        for backend in ("interpret", "native"):
            np.testing.assert_allclose(tj.jit(tj.grad(loss), backend=backend)(x), eager,
                                       rtol=1e-5, atol=1e-6)
        batched = tj.jit(tj.vmap(tj.grad(loss)), backend="native")(np.stack([x, w]))
        np.testing.assert_allclose(batched[1], tj.grad(loss)(w), rtol=1e-5, atol=1e-6)


def test_gradient_of_dynamic_slices_in_scan_matches_jax(x64, rng):
    x, w = rng.standard_normal(6), rng.standard_normal(3)

    def loss(L, N, x, w):
        c, ys = _scan_of_dynamic_slices(L, N, x, w)
        return N.sum(c ** 2) + N.sum(ys)
    ours = tj.jit(tj.grad(functools.partial(loss, lax, tnp), argnums=(0, 1)))(x, w)
    _close(ours, jax.grad(functools.partial(loss, jax.lax, jnp), argnums=(0, 1))(x, w))


# --- the PRNG: not differentiable, batched over keys ------------------------------------------

def test_vmap_of_random_over_keys_matches_jax():
    keys = tj.random.split(tj.random.PRNGKey(7), B)
    j_keys = jax.random.split(jax.random.PRNGKey(7), B)
    np.testing.assert_array_equal(keys, j_keys)
    for name, args in (("normal", ((2, 3),)), ("bits", ((5,),))):
        got = tj.vmap(lambda k: getattr(tj.random, name)(k, *args))(keys)
        want = jax.vmap(lambda k: getattr(jax.random, name)(k, *args))(j_keys)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, _loop(lambda k: getattr(tj.random, name)(k, *args),
                                                 [np.asarray(keys)], (0,)))
    # keys batched along axis 1, and a key closed over beside batched data
    np.testing.assert_array_equal(
        tj.vmap(lambda k: tj.random.uniform(k, (2,)), in_axes=1)(np.asarray(keys).T),
        jax.vmap(lambda k: jax.random.uniform(k, (2,)), in_axes=1)(np.asarray(j_keys).T))
    xs = np.arange(B, dtype=np.float32)
    np.testing.assert_array_equal(
        tj.vmap(lambda x: x + tj.random.normal(keys[0], (2,)))(xs),
        jax.vmap(lambda x: x + jax.random.normal(j_keys[0], (2,)))(xs))


def test_threefry_primitive_batched_over_every_operand(rng):
    from tracejit.prng import threefry2x32_p
    words = [rng.integers(0, 2 ** 32, (B, 4), dtype=np.uint64).astype(np.uint32)
             for _ in range(4)]
    for batched in range(4):
        in_axes = [None] * 4
        in_axes[batched] = 0
        args = [w if ax == 0 else w[0] for w, ax in zip(words, in_axes)]
        got = tj.vmap(lambda *a: threefry2x32_p.bind(*a), in_axes=tuple(in_axes))(*args)
        want = _loop(lambda *a: threefry2x32_p.bind(*a), args, in_axes)
        np.testing.assert_array_equal(got, want)


def test_random_is_not_differentiated_through_the_key(x64):
    key = tj.random.PRNGKey(0)
    g = tj.grad(lambda s: tnp.sum(s * tj.random.normal(key, (3,))))(2.0)
    np.testing.assert_allclose(g, np.sum(tj.random.normal(key, (3,))))


# --- errors JAX raises ------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda api, L: api.grad(lambda u: L.scatter_mul(
        np.ones(4), np.array([[1], [1]]), u, L.ScatterDimensionNumbers((), (0,), (0,))).sum())(
        np.ones(2)),
    lambda api, L: api.jvp(lambda x: L.scatter_apply(
        x, np.array([[1]]), lambda v: v * 2, L.ScatterDimensionNumbers((), (0,), (0,))),
        (np.ones(3),), (np.ones(3),)),
], ids=["scatter_mul_updates_not_unique", "scatter_apply_jvp"])
def test_unsupported_derivatives_raise_as_jax(call):
    with pytest.raises(NotImplementedError) as theirs:
        call(jax, jax.lax)
    with pytest.raises(NotImplementedError) as ours:
        call(tj, lax)
    assert str(ours.value) == str(theirs.value)


def test_scatter_transpose_needs_unique_indices():
    dnums = lax.ScatterDimensionNumbers((), (0,), (0,))
    idx = np.array([[1], [3]], np.int32)
    ct, u = np.arange(5.0, dtype=np.float32), np.ones(2, np.float32)
    transposed = tj.linear_transpose(
        lambda u: lax.scatter(np.zeros(5, np.float32), idx, u, dnums, unique_indices=True), u)
    j_transposed = jax.linear_transpose(
        lambda u: jax.lax.scatter(np.zeros(5, np.float32), idx, u,
                                  jax.lax.ScatterDimensionNumbers((), (0,), (0,)),
                                  unique_indices=True), u)
    _close(transposed(ct), j_transposed(ct))
    params = dict(dimension_numbers=dnums, indices_are_sorted=False, unique_indices=False,
                  mode=lax.GatherScatterMode.FILL_OR_DROP)
    with pytest.raises(NotImplementedError, match="only implemented where unique_indices=True"):
        scatter_p.transpose(ct, np.zeros(5, np.float32), idx,
                                UndefinedPrimal(tj.ShapedArray((2,), np.float32)), **params)


def test_vmap_of_scatter_apply_matches_loop():
    dnums = lax.ScatterDimensionNumbers((), (0,), (0,))

    def f(x, i):
        return lax.scatter_apply(x, i, lambda v: v * 3 + 1, dnums)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    i = np.array([[0], [4]], np.int32)
    for in_axes, args in (((0, 0), (x, i)), ((1, None), (x.T, i[1])), ((None, 0), (x[0], i))):
        np.testing.assert_array_equal(tj.vmap(f, in_axes=in_axes)(*args),
                                      _loop(f, list(args), in_axes, size=2))
    with pytest.raises(NotImplementedError, match="closes over a value batched by vmap"):
        tj.vmap(lambda c: lax.scatter_apply(x[0], i[0], lambda v: v * c, dnums))(np.ones(3))
