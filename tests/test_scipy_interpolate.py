"""jax.scipy.interpolate.RegularGridInterpolator against SciPy's values, eagerly, under jit,
vmap and grad (finite differences), with JAX's errors."""
import numpy as np
import pytest
import scipy.interpolate as si

import tracejit as jax
import tracejit.numpy as jnp
from tracejit.scipy.interpolate import RegularGridInterpolator

RNG = np.random.default_rng(0)
GRID = (np.array([0.0, 0.5, 1.5, 3.0]), np.array([-1.0, 0.0, 2.0]))
VALUES = RNG.standard_normal((4, 3, 2))  # a trailing non-grid axis too
XI = np.array([[0.2, -0.5], [1.0, 1.9], [2.9, 0.1], [3.5, 0.0], [0.0, -1.0]])


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_matches_scipy_eager_and_jit(method):
    want = si.RegularGridInterpolator(GRID, VALUES, method=method, bounds_error=False)(XI)
    interp = RegularGridInterpolator(GRID, VALUES, method=method)
    np.testing.assert_allclose(interp(XI), want, rtol=1e-5, equal_nan=True)
    got = jax.jit(lambda v, x: RegularGridInterpolator(GRID, v, method=method)(x))(VALUES, XI)
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def test_fill_value_none_extrapolates_and_tuple_points():
    want = si.RegularGridInterpolator(GRID, VALUES, bounds_error=False, fill_value=None)(XI)
    interp = RegularGridInterpolator(GRID, VALUES, fill_value=None)
    np.testing.assert_allclose(interp((XI[:, 0], XI[:, 1])), want, rtol=1e-5)
    assert interp(XI).dtype == jnp.float32


def test_interpolator_is_a_pytree_under_jit_and_vmap():
    interp = RegularGridInterpolator(GRID, VALUES[..., 0])
    got = jax.jit(lambda f, x: f(x))(interp, XI[:3])
    want = si.RegularGridInterpolator(GRID, VALUES[..., 0])(XI[:3])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    mapped = jax.vmap(lambda x: interp(x[None])[0])(XI[:3])
    np.testing.assert_allclose(mapped, want, rtol=1e-5)


def test_grad_matches_finite_differences():
    v = VALUES[..., 0]

    def f(x):
        return RegularGridInterpolator(GRID, v)(x[None])[0]

    x = np.array([0.7, 0.4])
    g = jax.grad(f)(jnp.asarray(x, dtype=jnp.float32))
    ref = si.RegularGridInterpolator(GRID, v)
    eps = 1e-4
    fd = [(ref(x + eps * e) - ref(x - eps * e))[0] / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-3)


def test_errors_like_jax():
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator(GRID, VALUES, method="cubic")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator(GRID, VALUES, bounds_error=True)
    with pytest.raises(ValueError, match="there are 3 point arrays"):
        RegularGridInterpolator(GRID + (GRID[0],), VALUES[..., 0])
    with pytest.raises(ValueError, match="fill_value must be"):
        RegularGridInterpolator(GRID, VALUES, fill_value=1j)
    with pytest.raises(ValueError, match="have dimension 3"):
        RegularGridInterpolator(GRID, VALUES)(np.zeros((2, 3)))
