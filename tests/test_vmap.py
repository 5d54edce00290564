"""vmap: every op record of test_transforms batched over every in_axes position against stacking
a Python loop; control flow (batched predicates included), nesting, axis specs, composition with
jit and grad, and errors against JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_transforms import RECORDS
from tolerance import assert_jit_matches_eager, contraction_ulps, math_ulps

import tracejit as tj
import tracejit.numpy as tnp
from tracejit import lax

B = 3


def _loop(f, args, in_axes, out_axis=0):
    """The oracle: f on each slice, stacked along out_axis."""
    outs = []
    for b in range(B):
        outs.append(f(*[a if ax is None else np.take(a, b, axis=ax)
                        for a, ax in zip(args, in_axes)]))
    return np.stack([np.asarray(o) for o in outs], axis=out_axis)


def _batched_args(rec, rng, in_axes):
    args = []
    for shape, ax in zip(rec.shapes, in_axes):
        lo, hi = rec.domain
        if ax is None:
            args.append(rng.uniform(lo, hi, shape))
        else:
            x = rng.uniform(lo, hi, (B,) + shape)
            args.append(np.moveaxis(x, 0, ax % (len(shape) + 1)))
    return args


def _axes_cases(rec):
    n = len(rec.shapes)
    cases = [tuple(0 if j == i else None for j in range(n)) for i in range(n)]
    if n > 1:
        cases.append((0,) * n)
    cases.append(tuple(-1 for _ in range(n)))  # the batch dimension last
    return cases


CASES = [(rec, axes) for rec in RECORDS for axes in _axes_cases(rec)]


@pytest.mark.parametrize("rec,in_axes", CASES, ids=[f"{r.name}-{a}" for r, a in CASES])
def test_vmap_matches_python_loop(rec, in_axes, x64, rng):
    args = _batched_args(rec, rng, in_axes)
    got = tj.vmap(rec.fn, in_axes=in_axes)(*args)
    np.testing.assert_allclose(got, _loop(rec.fn, args, in_axes), rtol=1e-10, atol=1e-12)
    assert got.dtype == np.asarray(rec.fn(*[np.take(a, 0, ax) if ax is not None else a
                                            for a, ax in zip(args, in_axes)])).dtype


def test_vmap_of_dot_is_one_batched_matmul(rng):
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4, 2)).astype(np.float32)
    jaxpr = tj.make_jaxpr(tj.vmap(tnp.dot))(x, w)
    dots = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(dots) == 1 and dots[0].params["dimension_numbers"][1] == ((0,), (0,))
    np.testing.assert_allclose(tj.vmap(tnp.dot)(x, w), np.matmul(x, w), rtol=1e-5)


# --- control flow --------------------------------------------------------------------------

def _cond_f(x, y):
    return lax.cond(x.sum() > 0, lambda a, b: a * b, lambda a, b: a - b, x, y)


def _while_f(n, x):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x + 1.0), (0, x))[1]


def _scan_f(c0, xs, w):
    def body(c, x):
        c = tnp.tanh(c * w + x)
        return c, c * 2
    return lax.scan(body, c0, xs)


def _fori_f(x, k):
    return lax.fori_loop(0, 3, lambda i, c: c * k + i, x)


@pytest.mark.parametrize("f,shapes,in_axes", [
    (_cond_f, [(4,), (4,)], (0, 0)),       # batched predicate: both branches, then select
    (_cond_f, [(4,), (4,)], (None, 0)),    # unbatched predicate: one cond
    (_cond_f, [(4,), (4,)], (1, None)),
    (_scan_f, [(2,), (5, 2), ()], (0, None, None)),
    (_scan_f, [(2,), (5, 2), ()], (None, 1, None)),
    (_scan_f, [(2,), (5, 2), ()], (None, None, 0)),
    (_scan_f, [(2,), (5, 2), ()], (0, 0, 0)),
    (_fori_f, [(2,), ()], (0, None)),
    (_fori_f, [(2,), ()], (None, 0)),
], ids=["cond-pred", "cond-operand", "cond-axis1", "scan-carry", "scan-xs", "scan-const",
        "scan-all", "fori-carry", "fori-const"])
def test_vmap_of_control_flow_matches_loop(f, shapes, in_axes, rng):
    args = [rng.uniform(-1, 1, s if ax is None else
                        s[:ax] + (B,) + s[ax:]).astype(np.float32)
            for s, ax in zip(shapes, in_axes)]
    got = tj.vmap(f, in_axes=in_axes)(*args)
    for b in range(B):
        sl = [a if ax is None else np.take(a, b, ax) for a, ax in zip(args, in_axes)]
        for g, e in zip(tj.tree_util.tree_leaves(got), tj.tree_util.tree_leaves(f(*sl))):
            np.testing.assert_allclose(np.asarray(g)[b], e, rtol=1e-6, atol=1e-7)
    jitted = tj.jit(tj.vmap(f, in_axes=in_axes))(*args)
    # scan: c = tanh(c * w + x) five times, |w| <= 1 keeping earlier errors from growing; each
    # step adds c * w + x's contraction into one fma under jit (of at most 2) and tanh's ulps
    # (none: XLA's float32 algorithm on both sides), which moves its input's difference no
    # further (|tanh'| <= 1); fori: c * k + i three times, each product one fma under jit (the
    # first adds 0: exact either way), |k| <= 1, products of at most 2; the other bodies are
    # exact arithmetic
    ulps = (5 * (math_ulps("tanh", np.float32) + contraction_ulps(1)) if f is _scan_f else
            contraction_ulps(2) if f is _fori_f else 0)
    for g, e in zip(tj.tree_util.tree_leaves(jitted), tj.tree_util.tree_leaves(got)):
        assert_jit_matches_eager(g, e, ulps=ulps, scale=2.0)


def test_vmap_of_cond_with_batched_predicate_selects(rng):
    x = np.array([[1., 2.], [-3., 1.], [0.5, -2.]], np.float32)
    jaxpr = tj.make_jaxpr(tj.vmap(lambda v: _cond_f(v, v)))(x)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert "cond" not in names and "select_n" in names
    np.testing.assert_allclose(tj.vmap(lambda v: _cond_f(v, v))(x),
                               jax.vmap(lambda v: jax.lax.cond(
                                   v.sum() > 0, lambda a, b: a * b, lambda a, b: a - b, v, v))(x))


def test_vmap_of_switch_with_batched_index():
    f = lambda i, x: lax.switch(i, [tnp.sin, tnp.cos, lambda v: v * 10], x)  # noqa: E731
    i = np.array([0, 2, 1, 7, -1], np.int32)  # out-of-range indices clamp, as in JAX
    x = np.linspace(0, 1, 5).astype(np.float32)
    expected = jax.jit(jax.vmap(lambda i, x: jax.lax.switch(
        i, [jnp.sin, jnp.cos, lambda v: v * 10], x)))(i, x)
    np.testing.assert_allclose(tj.vmap(f)(i, x), expected, rtol=1e-6)


def test_vmap_of_while_runs_until_every_lane_finishes():
    n = np.array([0, 3, 1, 5], np.int32)
    x = np.array([2., 0.5, 1., 1.5], np.float32)
    got = tj.vmap(_while_f)(n, x)
    expected = np.array([_while_f(int(k), float(v)) for k, v in zip(n, x)])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(tj.vmap(_while_f, in_axes=(None, 0))(3, x),
                               [_while_f(3, float(v)) for v in x], rtol=1e-6)
    np.testing.assert_allclose(tj.jit(tj.vmap(_while_f))(n, x), expected, rtol=1e-6)


def test_vmap_of_jit_and_custom_rules(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    f = tj.jit(lambda v: tnp.sin(v) @ v)
    np.testing.assert_allclose(tj.vmap(f)(x), [np.sin(r) @ r for r in x], rtol=1e-5)
    g = tj.checkpoint(lambda v: tnp.cumsum(v) * 2)
    np.testing.assert_allclose(tj.vmap(g, in_axes=1)(x), (np.cumsum(x, 0) * 2).T, rtol=1e-5)


# --- axis specifications -------------------------------------------------------------------

def test_in_axes_pytrees_none_and_negative(rng):
    tree = {"a": rng.standard_normal((2, B)).astype(np.float32),
            "b": rng.standard_normal(2).astype(np.float32)}
    y = rng.standard_normal((B, 2)).astype(np.float32)

    def f(m):
        return lambda t, v: m.sum(t["a"] * t["b"]) + v
    axes = ({"a": -1, "b": None}, 0)
    np.testing.assert_allclose(tj.vmap(f(tnp), in_axes=axes)(tree, y),
                               jax.vmap(f(jnp), in_axes=axes)(tree, y), rtol=1e-6)
    # a list of axes is accepted like a tuple; keyword arguments map over axis 0
    np.testing.assert_allclose(tj.vmap(lambda u, v: u * v, in_axes=[0, None])(y, 2.0), y * 2)
    np.testing.assert_allclose(tj.vmap(lambda u, v: u - v)(y, v=y), np.zeros_like(y))


@pytest.mark.parametrize("out_axes", [0, 1, -1, (None, 0), (0, -1)])
def test_out_axes(out_axes, rng):
    x = rng.standard_normal((B, 2, 3)).astype(np.float32)
    f = lambda api: lambda v: (np.float32(2.0) * api.numpy.ones(2), v * 2)  # noqa: E731
    ours = tj.vmap(f(tj), out_axes=out_axes)(x)
    theirs = jax.vmap(f(jax), out_axes=out_axes)(x)
    for a, b in zip(tj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b)


def test_axis_size_and_unbatched_outputs():
    out = tj.vmap(lambda: tnp.float32(1.5), in_axes=(), axis_size=4)()
    np.testing.assert_array_equal(out, np.full(4, 1.5, np.float32))
    out = tj.vmap(lambda x: x * 2, in_axes=None, axis_size=2)(np.arange(3.))
    assert out.shape == (2, 3)


def test_nested_vmap_and_composition_with_grad(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    f = lambda m: lambda v: m.sum(m.tanh(v) * v[0])  # noqa: E731
    checks = [  # (the JAX side jitted: its eager mode is slow)
        (tj.vmap(tj.vmap(f(tnp))), jax.vmap(jax.vmap(f(jnp))), x),
        (tj.vmap(tj.vmap(tj.grad(f(tnp))), in_axes=(1,)),
         jax.vmap(jax.vmap(jax.grad(f(jnp))), in_axes=(1,)), x),
        (tj.grad(lambda v: tnp.sum(tj.vmap(f(tnp))(v))),
         jax.grad(lambda v: jnp.sum(jax.vmap(f(jnp))(v))), x[0]),
        (tj.jit(tj.vmap(tj.grad(f(tnp)))), jax.vmap(jax.grad(f(jnp))), x[0]),
    ]
    for ours, theirs, arg in checks:
        np.testing.assert_allclose(ours(arg), jax.jit(theirs)(arg), rtol=1e-5)


def test_weak_types_and_dtypes_match_jax():
    for case in (lambda api: api.vmap(lambda v: v * 2)(np.arange(3, dtype=np.int32)),
                 lambda api: api.vmap(lambda v: v + 1.0)(np.ones(3, np.float16)),
                 lambda api: api.vmap(lambda v, s: v * s, in_axes=(0, None))(
                     np.ones(2, np.float32), 3.0)):
        ours, theirs = case(tj), case(jax)
        assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda api: api.vmap(lambda x, y: x + y)(np.ones(3), np.ones(4)),
    lambda api: api.vmap(lambda x, y: x["a"] + y)({"a": np.ones(3)}, np.ones(4)),
    lambda api: api.vmap(lambda x: x, in_axes=None)(np.ones(3)),
    lambda api: api.vmap(lambda x: x)(1.0),
    lambda api: api.vmap(lambda x: x, in_axes=2)(np.ones(3)),
    lambda api: api.vmap(lambda x: x, in_axes=1.0)(np.ones(3)),
    lambda api: api.vmap(lambda x, y: x, in_axes=(0,))(np.ones(3), np.ones(3)),
    lambda api: api.vmap(lambda x: x, out_axes=None)(np.ones(3)),
    lambda api: api.vmap(lambda x: x, out_axes=3)(np.ones(3)),
], ids=["sizes", "sizes_tree", "all_none", "scalar", "axis_rank", "axis_type", "axes_len",
        "out_none", "out_range"])
def test_errors_match_jax(call):
    with pytest.raises(Exception) as theirs:
        call(jax)
    with pytest.raises(type(theirs.value)) as ours:
        call(tj)
    if "inconsistent sizes" in str(theirs.value):
        # the message names each argument with its axis and size, as JAX's does
        for line in str(theirs.value).splitlines()[1:]:
            assert line.strip(" *;") in str(ours.value)
    else:
        assert str(theirs.value)[:50] in str(ours.value)


def test_python_branch_on_a_batched_value_names_the_line():
    def f(x):
        return x if x > 0 else -x
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.vmap(f)(np.ones(3))
    with pytest.raises(tj.errors.TracerBoolConversionError, match="batched by vmap.*test_vmap"):
        tj.vmap(f)(np.ones(3))
