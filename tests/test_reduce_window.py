"""lax.reduce_window (sum/max/min fast paths and the generic computation) and the pooling
derivatives (select_and_gather_add, select_and_scatter_add): values against a loop reference
written here and real JAX, eagerly and natively under jit, under vmap; gradients against finite
differences and real JAX; JAX's shapes and errors."""
import itertools

import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.test_util import check_grads

from jax_oracle import same_error

jax = pytest.importorskip("jax")
RNG = np.random.default_rng(5)


def direct_reduce_window(x, init, op, dims, strides, padding, base_dil, win_dil):
    """The definition: the operand dilated (holes = init) and padded (pads = init), each
    window's taps folded with `op` in row-major order starting from `init`."""
    shape = [(d - 1) * b + 1 if d else 0 for d, b in zip(x.shape, base_dil)]
    out_shape = []
    for d, k, s, (lo, hi), wd in zip(shape, dims, strides, padding, win_dil):
        out_shape.append(max(0, (d + lo + hi - ((k - 1) * wd + 1)) // s + 1))
    out = np.empty(out_shape, x.dtype)
    for pos in itertools.product(*map(range, out_shape)):
        acc = np.asarray(init, x.dtype)
        for tap in itertools.product(*map(range, dims)):
            at = []
            for p, t, s, (lo, _), b, wd, d in zip(pos, tap, strides, padding, base_dil,
                                                  win_dil, x.shape):
                q = p * s + t * wd - lo
                at.append(q // b if q >= 0 and q % b == 0 and q // b < d else None)
            value = np.asarray(init, x.dtype) if None in at else x[tuple(at)]
            acc = np.asarray(op(acc, value), x.dtype)
        out[pos] = acc
    return out


CASES = [
    ((5, 7), dict(window_dimensions=(2, 3), window_strides=(1, 2), padding="SAME")),
    ((6, 7), dict(window_dimensions=(3, 3), window_strides=(2, 2), padding="VALID")),
    ((2, 6, 7, 3), dict(window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1),
                        padding="SAME")),
    ((5, 7), dict(window_dimensions=(2, 3), window_strides=(2, 1),
                  padding=((1, 2), (0, -1)), base_dilation=(2, 1), window_dilation=(1, 2))),
    ((9,), dict(window_dimensions=(4,), window_strides=(3,), padding="SAME_LOWER")),
    ((4, 0), dict(window_dimensions=(2, 1), padding="VALID")),
    ((2, 3), dict(window_dimensions=(3, 4), padding="VALID")),  # no whole window
]
MONOIDS = {"add": (np.add, 0.0), "max": (np.maximum, -np.inf), "min": (np.minimum, np.inf)}


def full_params(shape, kw):
    nd = len(shape)
    strides = kw.get("window_strides", (1,) * nd)
    wdil = kw.get("window_dilation", (1,) * nd)
    pad = kw["padding"]
    if isinstance(pad, str):
        span = [(k - 1) * w + 1 for k, w in zip(kw["window_dimensions"], wdil)]
        pad = jax.lax.padtype_to_pads(shape, span, strides, pad)
    return (kw["window_dimensions"], strides, pad, kw.get("base_dilation", (1,) * nd), wdil)


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("op", ["add", "max", "min", "mul", "max_from_half"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_values_against_direct_loops_and_jax(case, op, dtype, x64):
    shape, kw = CASES[case]
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    if op == "mul":
        fn, init, name = np.multiply, 1, "mul"
    elif op == "max_from_half":  # not the identity: the generic path
        fn, init, name = np.maximum, 0.5 if dtype != np.int32 else 1, "max"
    else:
        fn, init = MONOIDS[op]
        name = op
        if dtype == np.int32 and op != "add":
            init = (np.iinfo(np.int32).min if op == "max" else np.iinfo(np.int32).max)
    init = np.asarray(init, dtype)
    ref = direct_reduce_window(x, init, fn, *full_params(shape, kw))
    expected = jax.lax.reduce_window(x, init, getattr(jax.lax, name), **kw)

    def f(x):
        return lax.reduce_window(x, init, getattr(lax, name), **kw)
    for got in (f(x), tracejit.jit(f)(x)):
        assert got.shape == expected.shape == ref.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


def test_fast_paths_are_taken_like_jax():
    x = np.ones((4, 4), np.float32)
    for op, init, prim in (("add", 0.0, "reduce_window_sum"), ("max", -np.inf,
                                                               "reduce_window_max"),
                           ("min", np.inf, "reduce_window_min"), ("max", 0.0, "reduce_window"),
                           ("mul", 1.0, "reduce_window")):
        def f(x, op=op, init=init):
            return lax.reduce_window(x, init, getattr(lax, op), (2, 2), (1, 1), "VALID")
        names = [e.primitive.name for e in tracejit.make_jaxpr(f)(x).jaxpr.eqns]
        jnames = [e.primitive.name for e in jax.make_jaxpr(
            lambda x, op=op, init=init: jax.lax.reduce_window(
                x, init, getattr(jax.lax, op), (2, 2), (1, 1), "VALID"))(x).jaxpr.eqns]
        assert names == jnames == [prim]


def test_generic_reduce_window_on_a_pytree():
    """Argmax pooling: (value, index) pairs reduced together, as variadic reduce_window."""
    x = RNG.standard_normal((6, 5)).astype(np.float32)
    idx = np.arange(30, dtype=np.int32).reshape(6, 5)

    def pick(mod):
        def comp(a, b):
            take = mod.lax.gt(b[0], a[0])
            return (mod.lax.select(take, b[0], a[0]), mod.lax.select(take, b[1], a[1]))
        return lambda x, i: mod.lax.reduce_window((x, i), (np.float32(-np.inf), np.int32(-1)),
                                                  comp, (2, 2), (2, 1), "SAME")
    expected = pick(jax)(x, idx)
    for got in (pick(tracejit)(x, idx), tracejit.jit(pick(tracejit))(x, idx)):
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


@pytest.mark.parametrize("case", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_gradients_against_finite_differences_and_jax(case, op, x64):
    shape, kw = CASES[case]
    if op != "add":  # (JAX has no VJP for max/min pooling with window dilation: see below)
        kw = dict(kw, window_dilation=(1,) * len(shape))
    # distinct values: a tie would make max/min non-differentiable
    x = RNG.permutation(np.arange(np.prod(shape))).reshape(shape) * 0.37 + 0.1
    init = MONOIDS[op][1]

    def f(mod):
        return lambda x: mod.lax.reduce_window(x, init, getattr(mod.lax, op), **kw)
    check_grads(f(tracejit), (x,), order=2, modes=("fwd", "rev"), eps=1e-3)
    if case == 3 and op != "add":
        return  # JAX 0.10's VJP fails here (base dilation with negative padding)
    ct = RNG.standard_normal(f(jax)(x).shape)
    expected = jax.vjp(f(jax), x)[1](ct)[0]
    for fn in (lambda x, ct: tracejit.vjp(f(tracejit), x)[1](ct)[0],
               tracejit.jit(lambda x, ct: tracejit.vjp(f(tracejit), x)[1](ct)[0])):
        np.testing.assert_allclose(np.asarray(fn(x, ct)), np.asarray(expected), rtol=1e-12)


def test_window_dilated_max_pool_has_a_jvp_and_jax_s_vjp_error():
    x = RNG.standard_normal((5, 7))
    kw = dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="SAME",
              window_dilation=(2, 1))

    def f(mod):
        return lambda x: mod.lax.reduce_window(x, -np.inf, mod.lax.max, **kw)
    expected = jax.jvp(f(jax), (x,), (x,))[1]
    got = tracejit.jit(lambda x: tracejit.jvp(f(tracejit), (x,), (x,))[1])(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected))
    same_error(lambda: tracejit.grad(lambda x: f(tracejit)(x).sum())(x),
               lambda: jax.grad(lambda x: f(jax)(x).sum())(x))


def test_max_pool_gradient_picks_the_first_maximum_like_jax():
    """Ties and padding: JAX's select-and-scatter sends the cotangent to the first maximum."""
    x = np.array([[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, -np.inf, 3.0], [0.0, 0.0, 0.0, 0.0]],
                 np.float32)

    def f(mod):
        return lambda x: mod.lax.reduce_window(x, -np.inf, mod.lax.max, (2, 2), (1, 1), "SAME")
    ct = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    expected = jax.vjp(f(jax), x)[1](ct)[0]
    got = tracejit.jit(lambda x, ct: tracejit.vjp(f(tracejit), x)[1](ct)[0])(x, ct)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    # the JVP at a tie: ours takes the first maximum too (the VJP's transpose); JAX's CPU
    # lowering packs (value, tangent) pairs and may take another, so compare without ties
    x = RNG.permutation(12).reshape(3, 4).astype(np.float32)
    expected = jax.jvp(f(jax), (x,), (ct,))[1]
    got = tracejit.jit(lambda x, t: tracejit.jvp(f(tracejit), (x,), (t,))[1])(x, ct)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("prim", ["select_and_scatter_add_p", "select_and_gather_add_p"])
def test_pooling_derivative_primitives_match_jax(prim):
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    params = dict(window_dimensions=(2, 3), window_strides=(2, 1), padding=((1, 0), (1, 1)))
    for select in ("ge_p", "le_p"):
        if prim == "select_and_scatter_add_p":
            src = RNG.standard_normal((3, 6)).astype(np.float32)
            args = (src, x)
            extra = {}
        else:
            args = (RNG.standard_normal((5, 6)).astype(np.float32), x)
            extra = dict(base_dilation=(1, 1), window_dilation=(1, 1))
        expected = getattr(jax.lax, prim).bind(*args, select_prim=getattr(jax.lax, select),
                                               **params, **extra)

        def f(*a, select=select, extra=extra):
            return getattr(lax, prim).bind(*a, select_prim=getattr(lax, select), **params,
                                           **extra)
        for got in (f(*args), tracejit.jit(f)(*args)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


@pytest.mark.parametrize("shape,window,strides", [
    ((2, 8, 6, 5), (1, 2, 2, 1), (1, 2, 2, 1)),   # pooling's windows tile the operand
    ((7, 9), (2, 2), (2, 3)),                     # disjoint, rows and columns left uncovered
    ((1, 1), (1, 1), (1, 1))])
def test_disjoint_window_scatter_matches_jax(shape, window, strides):
    """The unrolled select-and-scatter of non-overlapping windows: ties (the first tap wins),
    NaN and -inf among the taps, both selects, against JAX's primitive."""
    x = RNG.integers(0, 3, shape).astype(np.float32)  # many ties
    x.flat[::7] = np.nan
    x.flat[3::11] = -np.inf
    src_shape = tuple((d - w) // s + 1 for d, w, s in zip(shape, window, strides))
    src = RNG.standard_normal(src_shape).astype(np.float32)
    params = dict(window_dimensions=window, window_strides=strides,
                  padding=((0, 0),) * len(shape))
    for select in ("ge_p", "le_p"):
        expected = jax.lax.select_and_scatter_add_p.bind(
            src, x, select_prim=getattr(jax.lax, select), **params)
        got = tracejit.jit(lambda s, x, select=select: lax.select_and_scatter_add_p.bind(
            s, x, select_prim=getattr(lax, select), **params))(src, x)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("op", ["add", "max", "mul"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_against_a_loop(op, axis):
    x = RNG.standard_normal((3, 5, 6)).astype(np.float32)
    init = {"add": 0.0, "max": -np.inf, "mul": 1.0}[op]

    def f(x):
        return lax.reduce_window(x, init, getattr(lax, op), (2, 2), (1, 2), "SAME")
    loop = np.stack([np.asarray(f(np.take(x, i, axis))) for i in range(x.shape[axis])])
    got = tracejit.jit(tracejit.vmap(f, axis))(x)
    np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-6)
    if op != "mul":
        def g(x):
            return (f(x) ** 2).sum()
        loop = np.stack([np.asarray(tracejit.grad(g)(np.take(x, i, axis)))
                         for i in range(x.shape[axis])])
        got = tracejit.jit(tracejit.vmap(tracejit.grad(g), axis))(x)
        np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-5, atol=1e-6)


def test_shape_tuple_matches_jax():
    for shape, kw in CASES:
        dims, strides, pad, bd, wd = full_params(shape, kw)
        assert lax.reduce_window_shape_tuple(shape, dims, strides, pad, bd, wd) == \
            tuple(jax.lax.reduce_window_shape_tuple(shape, dims, strides, pad, bd, wd))


BAD = [
    dict(window_dimensions=(2,), window_strides=(1,), padding="VALID"),
    dict(window_dimensions=(2, 2), window_strides=(1,), padding="VALID"),
    dict(window_dimensions=(2, 0), window_strides=(1, 1), padding="VALID"),
    dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="FULL"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_errors_match_jax(case):
    x = np.ones((4, 4), np.float32)
    kw = BAD[case]
    same_error(lambda: lax.reduce_window(x, -np.inf, lax.max, **kw),
               lambda: jax.lax.reduce_window(x, -np.inf, jax.lax.max, **kw))


def test_generic_reduce_window_derivatives_match_jax(x64):
    """The generic path's JVP reduces (primal, tangent) pairs with the computation's JVP (as
    JAX); neither library transposes it, so reverse mode is an error in both."""
    x = RNG.standard_normal((5, 6))
    t = RNG.standard_normal((5, 6))

    def f(mod):
        return lambda x: mod.lax.reduce_window(x, 1.0, mod.lax.mul, (2, 2), (1, 2), "SAME")
    expected = jax.jvp(f(jax), (x,), (t,))
    for fn in (lambda x, t: tracejit.jvp(f(tracejit), (x,), (t,)),
               tracejit.jit(lambda x, t: tracejit.jvp(f(tracejit), (x,), (t,)))):
        for g, e in zip(fn(x, t), expected):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12)
    check_grads(f(tracejit), (x,), order=1, modes=("fwd",))
    with pytest.raises(ValueError):
        jax.grad(lambda x: f(jax)(x).sum())(x)
    with pytest.raises(NotImplementedError, match="reduce_window"):
        tracejit.grad(lambda x: f(tracejit)(x).sum())(x)


def test_float16_window_sums_round_like_xla():
    """XLA folds a window tap by tap in float16 (no wider accumulator)."""
    x = (RNG.standard_normal((32, 32)) * 3).astype(np.float16)
    expected = jax.lax.reduce_window(x, 0.0, jax.lax.add, (3, 3), (1, 1), "SAME")
    for got in (lax.reduce_window(x, 0.0, lax.add, (3, 3), (1, 1), "SAME"),
                tracejit.jit(lambda x: lax.reduce_window(x, 0.0, lax.add, (3, 3), (1, 1),
                                                         "SAME"))(x)):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("dims,strides,padding", [
    ((1, 3, 3, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (1, 1), (0, 0))),
    ((1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0))),
    ((1, 3, 3, 1), (1, 1, 1, 1), ((0, 0), (2, 0), (0, 3), (0, 0))),
    ((1, 4, 1, 2), (1, 3, 1, 1), ((0, 0), (5, 5), (1, 1), (1, 0))),
    ((1, 3, 3, 1), (1, 1, 1, 1), ((0, 0), (9, 9), (1, 1), (0, 0))),  # no interior on axis 1
    ((1, 2, 3, 1), (1, 1, 1, 1), ((0, 0), (-1, 1), (2, -2), (0, 0))),
], ids=str)
@pytest.mark.parametrize("op", ["add", "max"])
def test_padded_windows_unrolled_inside(dims, strides, padding, op):
    """A small padded window: its output cut along each padded axis into the positions whose
    taps all fall on the operand (unrolled, no tests) and the rest (tested taps); the values
    of the definition wherever the cuts fall."""
    x = RNG.standard_normal((2, 9, 11, 5)).astype(np.float32)
    fn, init = MONOIDS[op]
    expected = direct_reduce_window(x, init, fn, dims, strides, padding, (1,) * 4, (1,) * 4)
    lax_op = {"add": lax.add, "max": lax.max}[op]
    got = tracejit.jit(lambda a: lax.reduce_window(a, np.float32(init), lax_op, dims, strides,
                                                   padding))(x)
    np.testing.assert_array_equal(np.asarray(got), expected)
