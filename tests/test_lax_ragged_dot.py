"""lax.ragged_dot / ragged_dot_general against real JAX: the three ragged modes, group sizes
summing to less (or more) than the ragged dim, int and float dtypes, preferred_element_type,
jit, grad of both operands, vmap, and the errors JAX raises for bad shapes."""
import numpy as np
import pytest
from jax_oracle import assert_matches, same_error

import tracejit
from tracejit import lax as tlax

jax = pytest.importorskip("jax")
jlax = jax.lax


def _dn(lib, dot, ragged, group):
    return lib.RaggedDotDimensionNumbers(dot, ragged, group)


# (dot dimension numbers, lhs ragged dims, rhs group dims, lhs shape, rhs shape, group sizes)
CASES = {
    # mode 1, ragged_dot's own layout; groups cover 5 of 7 rows, then more rows than there are
    "m": ((((1,), (1,)), ((), ())), (0,), (0,), (7, 3), (3, 3, 2), [2, 0, 3]),
    "m_over": ((((1,), (1,)), ((), ())), (0,), (0,), (7, 3), (3, 3, 2), [4, 2, 5]),
    # mode 1 with a batch dim, per-batch group sizes and rhs's group dim last
    "m_batched": ((((2,), (1,)), ((0,), (0,))), (1,), (3,), (2, 5, 3), (2, 3, 4, 2),
                  [[1, 2], [3, 1]]),
    # mode 2: the contraction split into groups, a leading group axis on the result
    "k": ((((1,), (0,)), ((), ())), (1,), (), (3, 6), (6, 2), [2, 1, 2]),
    "k_batched": ((((2,), (1,)), ((0,), (0,))), (2,), (), (2, 3, 5), (2, 5, 2),
                  [[2, 3], [1, 1]]),
    # mode 3: ragged batch (a plain batched dot_general, as in JAX)
    "b": ((((2,), (1,)), ((0,), (0,))), (0,), (), (3, 2, 4), (3, 4, 2), [1, 2]),
}


def _operands(case, dtype, seed=0):
    dot, ragged, group, lshape, rshape, gs = CASES[case]
    rng = np.random.RandomState(seed)
    if np.dtype(dtype).kind == "f":
        x, y = rng.randn(*lshape).astype(dtype), rng.randn(*rshape).astype(dtype)
    else:
        x, y = (rng.randint(-8, 8, s).astype(dtype) for s in (lshape, rshape))
    return x, y, np.array(gs, np.int32), (dot, ragged, group)


def _both(case, dtype, preferred=None):
    """(ours, theirs): the functions of (lhs, rhs, group_sizes) for `case`."""
    *_, dn = _operands(case, dtype)

    def make(lib):
        dims = _dn(lib, *dn)
        return lambda x, y, gs: lib.ragged_dot_general(x, y, gs, dims,
                                                       preferred_element_type=preferred)
    return make(tlax), make(jlax)


@pytest.mark.parametrize("case", list(CASES))
def test_values_eager_and_jit(case):
    for dtype, preferred, rtol in [(np.float32, None, 1e-5), (np.int8, np.int32, 0)]:
        x, y, gs, _ = _operands(case, dtype)
        ours, theirs = _both(case, dtype, preferred)
        expected = theirs(x, y, gs)
        assert_matches(ours(x, y, gs), expected, rtol or 0.0)
        assert_matches(tracejit.jit(ours)(x, y, gs), expected, rtol or 0.0)


def test_ragged_dot_and_mixed_dtypes():
    x, y, gs, _ = _operands("m", np.float32)
    for args, kw in [((x, y, gs), {}), ((x.astype(np.int8), y.astype(np.int8), gs),
                                        {"preferred_element_type": np.int32}),
                     ((x, y.astype(np.float16), gs), {}),
                     ((x.astype(np.int32), y.astype(np.uint32), gs), {}),
                     ((x.astype(np.int32), y.astype(np.int32), gs), {}),
                     ((x.astype(np.float16), y.astype(np.float16), gs),
                      {"preferred_element_type": np.float32}),
                     ((x, y, gs.astype(np.uint8)), {"precision": tlax.Precision.HIGHEST}),
                     ((x, y, np.array([0, 0, 0], np.int32)), {}),
                     ((x, y, np.array([-1, 3, 2], np.int32)), {})]:
        jkw = {k: jlax.Precision.HIGHEST if k == "precision" else v for k, v in kw.items()}
        expected = jlax.ragged_dot(*args, **jkw)
        assert_matches(tlax.ragged_dot(*args, **kw), expected, 1e-5)
        assert_matches(tracejit.jit(lambda a, b, g, kw=kw: tlax.ragged_dot(a, b, g, **kw))(
            *args), expected, 1e-5)
    # a NaN in a row past the groups is masked out, an inf in another group's rhs is not
    # (0 * inf), as on JAX's CPU path
    x2, y2 = x.copy(), y.copy()
    x2[6], y2[2, 0, 0] = np.nan, np.inf
    assert_matches(tlax.ragged_dot(x2, y2, gs), jlax.ragged_dot(x2, y2, gs))


def test_grad_both_operands():
    """Mode 1 against JAX's grad (jit and eager); modes 2 and 3, whose transposes JAX leaves
    unimplemented, against JAX's jvp in random directions (<ct, J v> = <J^T ct, v>)."""
    for case in ["m", "m_batched"]:
        x, y, gs, _ = _operands(case, np.float32, seed=1)
        ours, theirs = _both(case, np.float32)
        ct = np.random.RandomState(2).randn(*theirs(x, y, gs).shape).astype(np.float32)

        def loss(f, gs=gs, ct=ct):
            return lambda a, b: (f(a, b, gs) * ct).sum()
        expected = jax.grad(loss(theirs), (0, 1))(x, y)
        assert_matches(tracejit.grad(loss(ours), (0, 1))(x, y), expected, 1e-5)
        assert_matches(tracejit.jit(tracejit.grad(loss(ours), (0, 1)))(x, y), expected, 1e-5)
    for case in ["k_batched", "b"]:
        x, y, gs, _ = _operands(case, np.float32, seed=1)
        ours, theirs = _both(case, np.float32)
        rng = np.random.RandomState(3)
        ct = rng.randn(*theirs(x, y, gs).shape).astype(np.float32)
        gx, gy = tracejit.grad(lambda a, b, f=ours, gs=gs, ct=ct: (f(a, b, gs) * ct).sum(),
                               (0, 1))(x, y)
        for _ in range(3):
            dx, dy = (rng.randn(*a.shape).astype(np.float32) for a in (x, y))
            _, t = jax.jvp(lambda a, b, f=theirs, gs=gs: f(a, b, gs), (x, y), (dx, dy))
            got = np.vdot(np.float64(gx), dx) + np.vdot(np.float64(gy), dy)
            np.testing.assert_allclose(got, np.vdot(np.float64(t), ct), rtol=1e-4, atol=1e-5)


def test_vmap():
    x, y, _, _ = _operands("m", np.float32)
    xs = np.stack([x, -2 * x, x + 1])
    ys = np.stack([y, y[::-1], 3 * y])
    gss = np.array([[2, 0, 3], [1, 4, 2], [0, 0, 7]], np.int32)
    # every operand batched on axis 0 (the one vmap JAX's rule supports)
    assert_matches(tracejit.vmap(tlax.ragged_dot)(xs, ys, gss),
                   jax.vmap(jlax.ragged_dot)(xs, ys, gss), 1e-5)
    # other axes and unbatched operands: against a loop over JAX's values
    f = tracejit.jit(tracejit.vmap(tlax.ragged_dot, in_axes=(1, None, 0), out_axes=1))
    expected = np.stack([jlax.ragged_dot(xs[i], y, gss[i]) for i in range(3)], axis=1)
    np.testing.assert_allclose(f(xs.transpose(1, 0, 2), y, gss), expected, rtol=1e-5)
    ours, theirs = _both("k_batched", np.float32)
    xk, yk, gk, _ = _operands("k_batched", np.float32)
    xks = np.stack([xk, xk * 2])
    got = tracejit.vmap(ours, in_axes=(0, None, None))(xks, yk, gk)
    expected = np.stack([theirs(a, yk, gk) for a in xks])
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_errors_as_jax():
    x, y, gs, _ = _operands("m", np.float32)
    bad = [
        (x, y, gs[:2], (((1,), (1,)), ((), ())), (0,), (0,)),          # g != rhs group size
        (x, y, gs.astype(np.float32), (((1,), (1,)), ((), ())), (0,), (0,)),  # float sizes
        (x, y, np.int32(3), (((1,), (1,)), ((), ())), (0,), (0,)),        # rank-0 sizes
        (x, y, gs, (((1,), (1,)), ((), ())), (0, 1), (0,)),             # two ragged dims
        (x, y, gs, (((1,), (1,)), ((), ())), (2,), (0,)),               # out of range
        (x, y, gs, (((1,), (1,)), ((), ())), (0,), ()),                 # mode 1, no group dim
        (x, y, gs, (((1,), (0,)), ((), ())), (0,), (0,)),               # group dim contracted
        (x, y, gs, (((1,), (2,)), ((), ())), (0,), (0,)),               # k mismatch
        (x, y[:, :, 0], gs, (((1,), (1,)), ((), ())), (1,), (0,)),      # mode 2 with group dim
        (x, y, np.ones((2, 3), np.int32), (((1,), (1,)), ((), ())), (0,), (0,)),  # gs shape
    ]
    for args in bad:
        same_error(lambda a=args: tlax.ragged_dot_general(*a[:3], _dn(tlax, *a[3:])),
                   lambda a=args: jlax.ragged_dot_general(*a[:3], _dn(jlax, *a[3:])))
    same_error(lambda: tlax.ragged_dot(x, y, gs, group_offset=1),
               lambda: jlax.ragged_dot(x, y, gs, group_offset=1))
    # the dimension numbers are a frozen, hashable value, as JAX's
    dn = tlax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0])
    assert dn == tlax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    assert hash(dn) == hash(tlax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), [0], [0]))


# --- the other names JAX's lax has: accuracy=, lax.dtype, dce_sink, type names ---------------

ACCURACY_FNS = ["cbrt", "cos", "exp", "exp2", "expm1", "log", "log1p", "logistic", "rsqrt", "sin",
                "sqrt", "tan", "tanh"]


def test_accuracy_argument():
    """JAX on CPU accepts a Tolerance or AccuracyMode and keeps its one implementation; so does
    tracejit (log2 and erfc take it from JAX 0.12 on: checked against their plain values only)."""
    x = np.linspace(0.1, 2.0, 7).astype(np.float32)
    for name in ACCURACY_FNS + ["log2", "erfc"]:
        ours = getattr(tlax, name)
        for acc in (tlax.Tolerance(atol=1e-3), tlax.Tolerance(rtol=1e-6, ulps=2),
                    tlax.AccuracyMode.HIGHEST, tlax.AccuracyMode.DEFAULT):
            got = ours(x, accuracy=acc)
            np.testing.assert_array_equal(got, ours(x))
        if name in ("exp", "log", "tanh", "sqrt", "sin"):  # (JAX compiles per accuracy value)
            assert_matches(ours(x, accuracy=tlax.AccuracyMode.HIGHEST),
                           getattr(jlax, name)(x, accuracy=jlax.AccuracyMode.HIGHEST), 2e-6)
    for name in ("exp", "tanh"):
        ours, theirs = getattr(tlax, name), getattr(jlax, name)
        f = tracejit.jit(tracejit.grad(lambda v, f=ours: f(v, accuracy=tlax.AccuracyMode.HIGHEST)))
        g = jax.grad(lambda v, f=theirs: f(v, accuracy=jlax.AccuracyMode.HIGHEST))
        assert_matches(f(np.float32(0.7)), g(np.float32(0.7)), 2e-6)
    same_error(lambda: tlax.exp(x, accuracy="high"), lambda: jlax.exp(x, accuracy="high"))
    same_error(lambda: tlax.tanh(x, accuracy=3), lambda: jlax.tanh(x, accuracy=3))
    for kw in ({}, {"atol": -1.0}, {"ulps": -1}):
        same_error(lambda kw=kw: tlax.Tolerance(**kw), lambda kw=kw: jlax.Tolerance(**kw))
    assert [m.name for m in tlax.AccuracyMode] == [m.name for m in jlax.AccuracyMode]
    assert [m.value for m in tlax.AccuracyMode] == [m.value for m in jlax.AccuracyMode]


def test_dtype():
    import warnings
    values = [1, 1.5, True, 2j, np.float32(1), np.int64(3), np.ones(2, np.int16), np.ones(2),
              "float32", "float64", np.float64, np.uint8, float, int, bool, complex,
              np.dtype("int64"), [1, 2], None, np.array(["a"]), "no such type"]
    for v in values:
        out = []
        for lib in (tlax, jlax):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    out.append((lib.dtype(v), len(w)))
                except (TypeError, ValueError) as e:
                    out.append((type(e), 0))
        assert out[0] == out[1], (v, out)
    assert tlax.dtype(tracejit.numpy.ones(2, np.int8)) == np.int8
    assert tlax.dtype(tracejit.ShapeDtypeStruct((2,), np.uint16)) == np.uint16
    f = tracejit.jit(lambda v: tracejit.numpy.zeros(2, tlax.dtype(v)))
    assert f(np.int16(1)).dtype == np.int16


def test_dce_sink():
    def f(lax, v):
        lax.dce_sink({"a": v * 3, "b": [v]})
        return (v * 2).sum()
    x = np.arange(3.0, dtype=np.float32)
    ours, theirs = (lambda v, lax=lax: f(lax, v) for lax in (tlax, jlax))
    assert tlax.dce_sink(x) is None and jlax.dce_sink(x) is None

    def names(jaxpr):
        return [e.primitive.name for e in jaxpr.eqns]
    assert names(tracejit.make_jaxpr(ours)(x).jaxpr) == names(jax.make_jaxpr(theirs)(x).jaxpr)
    assert_matches(tracejit.jit(ours)(x), jax.jit(theirs)(x))
    assert_matches(tracejit.jit(tracejit.grad(ours))(x), jax.grad(theirs)(x))
    assert_matches(tracejit.vmap(ours)(np.stack([x, x + 1])),
                   jax.vmap(theirs)(np.stack([x, x + 1])))
    # the sink survives jit's DCE in the jaxpr (an effect) and costs nothing compiled
    inner = tracejit.make_jaxpr(tracejit.jit(lambda v: (tlax.dce_sink(v * 3), v)[1]))(x)
    assert "dce_sink" in str(inner) and "mul" in str(inner)


def test_type_names():
    import typing
    assert tlax.DotAlgorithm._fields == jlax.DotAlgorithm._fields
    assert tlax.DotAlgorithm._field_defaults == jlax.DotAlgorithm._field_defaults
    alg = tlax.DotAlgorithm(np.float16, np.float16, np.float32)
    assert alg.lhs_component_count == 1 and hash(alg) == hash(tlax.DotAlgorithm(*alg))
    assert len(typing.get_args(tlax.PrecisionLike)) == len(typing.get_args(jlax.PrecisionLike))
    assert typing.get_origin(tlax.DotDimensionNumbers) is tuple
    assert repr(tlax.DotDimensionNumbers) == repr(jlax.DotDimensionNumbers)
