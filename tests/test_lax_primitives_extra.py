"""JAX's lax primitives that tracejit composed before and now registers (mulhi, split,
optimization_barrier, copy, reduce_precision): bind works, jaxprs print as JAX's, values,
jit (native), vmap and derivatives against real JAX and NumPy."""
import numpy as np
import pytest

import tracejit
from tracejit import lax

jax = pytest.importorskip("jax")

X = np.arange(6.0, dtype=np.float32).reshape(2, 3)


def test_primitives_are_exposed_under_jaxs_names():
    for name in ("mulhi_p", "split_p", "optimization_barrier_p", "copy_p", "reduce_precision_p",
                 "rng_bit_generator_p", "rng_uniform_p", "linear_solve_p", "scatter_add_p",
                 "scatter_mul_p", "scatter_min_p", "scatter_max_p", "scatter_sub_p"):
        assert getattr(lax, name).name == getattr(jax.lax, name).name, name


def test_mulhi_matches_numpy_every_width(x64):
    rng = np.random.RandomState(0)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
               np.uint64):
        info = np.iinfo(dt)
        x = rng.randint(info.min, info.max, 8, dtype=dt)
        y = rng.randint(info.min, info.max, 8, dtype=dt)
        x[:2], y[:2] = (info.min, info.max), (info.min, info.min)
        expected = np.array([(int(a) * int(b)) >> (8 * x.itemsize) for a, b in zip(x, y)])
        expected = expected.astype(object) % (1 << (8 * x.itemsize))
        expected = np.array([int(v) for v in expected], np.uint64).astype(dt)
        for f in (lax.mulhi, tracejit.jit(lax.mulhi), tracejit.vmap(lax.mulhi)):
            np.testing.assert_array_equal(np.asarray(f(x, y)), expected, err_msg=dt.__name__)
    with pytest.raises(TypeError):
        lax.mulhi(np.float32(1), np.float32(2))


def test_split_primitive():
    def f(lib, x):
        return lib.lax.split_p.bind(x, sizes=(1, 2), axis=1)
    expected = np.split(X, [1], axis=1)
    for got in (f(tracejit, X), tracejit.jit(lambda x: f(tracejit, x))(X)):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(np.asarray(g), e)
    grad = tracejit.grad(lambda x: (f(tracejit, x)[1] ** 2).sum())(X)
    np.testing.assert_array_equal(np.asarray(grad), 2 * X * (np.arange(3) > 0))
    rows = tracejit.vmap(lambda x: lax.split_p.bind(x, sizes=(2, 1), axis=0))(X)
    np.testing.assert_array_equal(np.asarray(rows[1]), X[:, 2:])
    assert str(tracejit.make_jaxpr(lambda x: f(tracejit, x))(X)) == \
        str(jax.make_jaxpr(lambda x: f(jax, x))(X))


def test_optimization_barrier_and_copy():
    def f(lib, x):
        return lib.lax.optimization_barrier((x * 2, x + 1))
    assert str(tracejit.make_jaxpr(lambda x: f(tracejit, x))(X)) == \
        str(jax.make_jaxpr(lambda x: f(jax, x))(X))
    for got in (f(tracejit, X), tracejit.jit(lambda x: f(tracejit, x))(X)):
        np.testing.assert_array_equal(np.asarray(got[0]), X * 2)
        np.testing.assert_array_equal(np.asarray(got[1]), X + 1)
    assert float(tracejit.grad(lambda x: lax.optimization_barrier(x * 2.0))(1.0)) == 2.0
    assert tracejit.vmap(lambda x: lax.optimization_barrier(x))(X).shape == X.shape
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda x: lax.copy_p.bind(x) * 2)(X)),
                                  X * 2)
    assert float(tracejit.grad(lambda x: lax.copy_p.bind(x) * 3.0)(1.0)) == 3.0
    z = np.array([1 + 2j], np.complex64)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lax.copy_p.bind)(z)), z)


def test_approx_top_k_is_exact_on_cpu_as_jax():
    x = np.array([[3., 1., 4., 1., 5.], [9., 2., 6., 5., 3.]], np.float32)
    cases = [lambda L: L.approx_max_k(x, 2), lambda L: L.approx_min_k(x, 2, reduction_dimension=0),
             lambda L: L.approx_max_k(x[0], 3)]
    for case in cases:
        for g, e in zip(case(lax), case(jax.lax), strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    for L in (lax, jax.lax):
        with pytest.raises(ValueError, match="floating type"):
            L.approx_min_k(np.arange(3), 2)
    jitted = tracejit.jit(lambda v: lax.approx_min_k(v, 2))(x)
    np.testing.assert_array_equal(np.asarray(jitted[0]), [[1., 1.], [2., 3.]])
