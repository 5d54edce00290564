"""jax.scipy.linalg's last LAPACK-style names (solve_sylvester, ...) against SciPy's values,
eagerly, under jit and vmap, with JAX's dtypes and errors."""
import numpy as np
import pytest
import scipy.linalg as sl

import tracejit as jax
import tracejit.numpy as jnp
import tracejit.scipy.linalg as jsl

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester_matches_scipy(method):
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 2)) + 3 * np.eye(2)
    c = RNG.standard_normal((3, 2))
    want = sl.solve_sylvester(a, b, c)
    got = jsl.solve_sylvester(a, b, c, method=method)
    assert got.dtype == jnp.float32 and got.shape == (3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    jitted = jax.jit(lambda a, b, c: jsl.solve_sylvester(a, b, c, method=method))
    np.testing.assert_allclose(jitted(a, b, c), want, rtol=1e-4, atol=1e-5)


def test_solve_sylvester_complex_batched_and_vmap():
    a = RNG.standard_normal((2, 3, 3)) + 1j * RNG.standard_normal((2, 3, 3))
    b = RNG.standard_normal((2, 2)) + 4 * np.eye(2)
    c = RNG.standard_normal((2, 3, 2)) + 0j
    want = np.stack([sl.solve_sylvester(a[k], b, c[k]) for k in range(2)])
    got = jsl.solve_sylvester(a.astype(np.complex64), b, c.astype(np.complex64))
    assert got.dtype == jnp.complex64
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    mapped = jax.vmap(jsl.solve_sylvester, in_axes=(0, None, 0))(
        a.astype(np.complex64), b, c.astype(np.complex64))
    np.testing.assert_allclose(mapped, want, rtol=1e-4, atol=1e-4)


def test_solve_sylvester_singular_is_nan_and_errors():
    # eigenvalues 1 of A and -1 of B sum to zero: no unique solution, JAX returns NaN
    x = jsl.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)))
    assert np.isnan(np.asarray(x)).all()
    with pytest.raises(ValueError, match="Incompatible shapes for Sylvester equation"):
        jsl.solve_sylvester(np.eye(2), np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="Unrecognized method bogus"):
        jsl.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="bogus")
