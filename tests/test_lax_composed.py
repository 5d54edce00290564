"""lax.composed (reciprocal, collapse, broadcast_like, index_take, split, empty, mulhi,
reduce_precision, optimization_barrier, platform_dependent, composite, DotAlgorithmPreset)
against real JAX: values bit for bit, eagerly and under jit (native), with grad and vmap."""
import numpy as np
import pytest

import tracejit
from tracejit import lax

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)


def _both(f, *args):
    """f eagerly and under jit; the two must agree bit for bit."""
    eager = f(*args)
    jitted = tracejit.jit(f)(*args)
    for e, j in zip(tracejit.tree_util.tree_leaves(eager), tracejit.tree_util.tree_leaves(jitted)):
        np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
    return eager


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def test_shape_helpers_match_jax(jax):
    jl = jax.lax
    _same(_both(lax.reciprocal, X), jl.reciprocal(X))
    for args in [(1,), (0, 2), (-2, None), (1, 1)]:
        _same(_both(lambda x, args=args: lax.collapse(x, *args), X), jl.collapse(X, *args))
    with pytest.raises(ValueError, match="Invalid dimension range"):
        lax.collapse(X, 2, 1)
    for shape in [(4, 1), (5,), (1, 1, 5), ()]:
        arr = np.ones(shape, np.float32)
        _same(_both(lambda a: lax.broadcast_like(a, X), arr), jl.broadcast_like(arr, X))
    idx = (np.array([0, 2, -1]), np.array([1, 5, 3]))
    _same(_both(lambda x: lax.index_take(x, idx, (0, 2)), X), jl.index_take(X, idx, (0, 2)))
    for sizes, axis in [((1, 3), 1), ((2, 0, 3), -1), ((3,), 0)]:
        ours = _both(lambda x, sizes=sizes, axis=axis: lax.split(x, sizes, axis), X)
        for a, b in zip(ours, jl.split(X, sizes, axis)):
            _same(a, b)
    with pytest.raises(ValueError):
        lax.split(X, (1, 1), 0)
    assert lax.empty((2, 3), np.float32).shape == jl.empty((2, 3), np.float32).shape
    assert lax.empty((2,), np.int8).dtype == jl.empty((2,), np.int8).dtype


def test_shape_helpers_grad_and_vmap(jax):
    jl = jax.lax

    def ours(x):
        parts = lax.split(x, (1, 3), 1)
        return (lax.collapse(parts[1], 0, 2) ** 2).sum() + lax.index_take(
            x, (np.array([0, 2]), np.array([1, 3])), (0, 1)).sum() + lax.reciprocal(x).sum()

    def theirs(x):
        parts = jl.split(x, (1, 3), 1)
        return (jl.collapse(parts[1], 0, 2) ** 2).sum() + jl.index_take(
            x, (np.array([0, 2]), np.array([1, 3])), (0, 1)).sum() + jl.reciprocal(x).sum()
    np.testing.assert_allclose(tracejit.grad(ours)(X), jax.grad(theirs)(X), rtol=1e-6)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(ours))(X), jax.grad(theirs)(X),
                               rtol=1e-6)
    np.testing.assert_allclose(tracejit.vmap(ours)(np.stack([X, 2 * X])),
                               jax.vmap(theirs)(np.stack([X, 2 * X])), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_mulhi_matches_jax(jax, dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, 500, endpoint=True, dtype=dtype)
    b = RNG.integers(info.min, info.max, 500, endpoint=True, dtype=dtype)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2], dtype)
    a[:25] = np.repeat(edges, 5)
    b[:25] = np.tile(edges, 5)
    if info.bits == 64:
        jax.config.update("jax_enable_x64", True)
        tracejit.config.update("jax_enable_x64", True)
    try:
        theirs = jax.lax.mulhi(a, b)
        _same(_both(lax.mulhi, a, b), theirs)
        _same(tracejit.vmap(lax.mulhi)(a.reshape(50, 10), b.reshape(50, 10)),
              np.asarray(theirs).reshape(50, 10))
    finally:
        jax.config.update("jax_enable_x64", False)
        tracejit.config.update("jax_enable_x64", False)
    with pytest.raises(TypeError):
        lax.mulhi(np.float32(1), np.float32(2))


FLOATS = np.concatenate([RNG.standard_normal(3000) * 10.0 ** RNG.integers(-45, 39, 3000),
                         [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.4e38, 65504.0,
                          65520.0, 1e-8, 6.1e-5, 5.96e-8]]).astype(np.float32)


@pytest.mark.parametrize("bits", [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (2, 0), (3, 1),
                                  (8, 0), (1, 5), (11, 52)])
def test_reduce_precision_matches_jax(jax, bits):
    e, m = bits
    theirs = np.asarray(jax.lax.reduce_precision(FLOATS, e, m))
    ours = np.asarray(_both(lambda v: lax.reduce_precision(v, e, m), FLOATS))
    np.testing.assert_array_equal(ours.view(np.uint32), theirs.view(np.uint32))


def test_reduce_precision_float64_and_grad(jax):
    jax.config.update("jax_enable_x64", True)
    tracejit.config.update("jax_enable_x64", True)
    try:
        v = FLOATS.astype(np.float64) * 1e10
        for e, m in [(8, 23), (5, 10), (11, 30)]:
            theirs = np.asarray(jax.lax.reduce_precision(v, e, m))
            ours = np.asarray(_both(lambda x, e=e, m=m: lax.reduce_precision(x, e, m), v))
            np.testing.assert_array_equal(ours.view(np.uint64), theirs.view(np.uint64))
    finally:
        jax.config.update("jax_enable_x64", False)
        tracejit.config.update("jax_enable_x64", False)
    # JAX rounds the tangent and the cotangent as the value: bit for bit the same
    x = np.float32(1.2345678)
    g_theirs = jax.grad(lambda x: jax.lax.reduce_precision(x * x, 5, 10))(x)
    g_ours = tracejit.grad(lambda x: lax.reduce_precision(x * x, 5, 10))(x)
    assert float(g_ours) == float(g_theirs)
    t_theirs = jax.jvp(lambda x: jax.lax.reduce_precision(x, 5, 2), (x,), (np.float32(1.3),))
    t_ours = tracejit.jvp(lambda x: lax.reduce_precision(x, 5, 2), (x,), (np.float32(1.3),))
    assert float(t_ours[1]) == float(t_theirs[1]) == 1.25
    assert tracejit.lax.reduce_precision_p.name == jax.lax.reduce_precision_p.name


def test_barrier_platform_composite_presets(jax):
    tree = (1.0, {"a": X})
    out = _both(lax.optimization_barrier, tree)
    _same(out[1]["a"], X)
    assert tracejit.grad(lambda x: lax.optimization_barrier(x * 2.0))(1.0) == 2.0

    def branches(x):
        return lax.platform_dependent(x, cpu=lambda z: z + 1, default=lambda z: z * 10)
    assert float(_both(branches, np.float32(2))) == float(jax.lax.platform_dependent(
        np.float32(2), cpu=lambda z: z + 1, default=lambda z: z * 10))
    assert float(lax.platform_dependent(np.float32(2), tpu=lambda z: z,
                                        default=lambda z: z * 10)) == 20.0
    with pytest.raises(ValueError, match="cuda"):
        lax.platform_dependent(1.0, gpu=lambda z: z)
    with pytest.raises(TypeError):
        lax.platform_dependent(1.0, cpu=3)

    def tangent_fn(x, *, alpha):
        return alpha * lax.tanh(x)
    ours = lax.composite(tangent_fn, name="my.tanh")
    theirs = jax.lax.composite(lambda x, *, alpha: alpha * jax.lax.tanh(x), name="my.tanh")
    for run in (ours, tracejit.jit(lambda x, alpha: ours(x, alpha=2.0))):  # native tanh: ulps
        np.testing.assert_allclose(run(X, alpha=2.0), theirs(X, alpha=2.0), rtol=2e-6)
    assert ([p.name for p in lax.DotAlgorithmPreset] ==
            [p.name for p in jax.lax.DotAlgorithmPreset])
    assert str(lax.DotAlgorithmPreset.BF16_BF16_F32) == str(
        jax.lax.DotAlgorithmPreset.BF16_BF16_F32)
