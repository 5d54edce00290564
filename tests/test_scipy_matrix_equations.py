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


def _tridiag(d, e):
    return np.diag(d) + np.diag(e, 1) + np.diag(np.conj(e), -1)


def test_eigh_tridiagonal_matches_scipy_eager_jit_vmap():
    d = RNG.standard_normal((2, 6)).astype(np.float32)
    e = RNG.standard_normal((2, 5)).astype(np.float32)
    want = np.stack([sl.eigh_tridiagonal(d[k], e[k], eigvals_only=True) for k in range(2)])
    got = jsl.eigh_tridiagonal(d[0], e[0], eigvals_only=True)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, want[0], atol=1e-5)
    only = jax.jit(lambda d, e: jsl.eigh_tridiagonal(d, e, eigvals_only=True))
    np.testing.assert_allclose(only(d[1], e[1]), want[1], atol=1e-5)
    np.testing.assert_allclose(jax.vmap(only)(d, e), want, atol=1e-5)
    w, v = jax.jit(lambda d, e: jsl.eigh_tridiagonal(d, e, select="i", select_range=(1, 3)))(
        d[0], e[0])
    np.testing.assert_allclose(w, want[0, 1:4], atol=1e-5)
    t = _tridiag(d[0], e[0])
    assert v.shape == (6, 3)
    np.testing.assert_allclose(t @ v, v * w, atol=1e-4)
    np.testing.assert_allclose(v.T @ v, np.eye(3), atol=1e-5)


def test_eigh_tridiagonal_complex_tiny_and_errors():
    d = np.array([1.0, 2, 3, 4], np.complex64)
    e = np.array([1j, 1, -1j], np.complex64)
    w, v = jsl.eigh_tridiagonal(d, e)
    assert w.dtype == jnp.float32 and v.dtype == jnp.complex64
    t = _tridiag(d, e)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(t), atol=1e-5)
    np.testing.assert_allclose(t @ v, v * w, atol=1e-4)
    w1, v1 = jsl.eigh_tridiagonal(np.array([2.0], np.float32), np.zeros(0, np.float32))
    np.testing.assert_allclose(w1, [2.0])
    np.testing.assert_allclose(v1, [[1.0]])
    with pytest.raises(TypeError, match="Only float32 and float64"):
        jsl.eigh_tridiagonal(np.array([1, 2]), np.array([1]))
    with pytest.raises(TypeError, match="must have same dtype"):
        jsl.eigh_tridiagonal(d.real, e.real.astype(np.float16))
    with pytest.raises(ValueError, match="select_range must be specified"):
        jsl.eigh_tridiagonal(d, e, select="i")
    with pytest.raises(NotImplementedError, match="select='v'"):
        jsl.eigh_tridiagonal(d, e, select="v", select_range=(0.0, 1.0))


@pytest.mark.parametrize("mode,conjugate", [("left", False), ("right", False),
                                            ("left", True), ("right", True)])
def test_qr_multiply_matches_scipy(mode, conjugate):
    a = (RNG.standard_normal((5, 3)) + 1j * RNG.standard_normal((5, 3))).astype(np.complex64)
    c = RNG.standard_normal((3, 2) if mode == "left" else (2, 5)).astype(np.complex64)
    want, want_r = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
    got, r = jax.jit(lambda a, c: jsl.qr_multiply(a, c, mode=mode, conjugate=conjugate))(a, c)
    assert got.dtype == jnp.complex64
    # Q's columns are fixed up to a phase per column, so compare R through its diagonal's
    # phases, and the product against our Q = a R^-1 (exact for a full-rank a)
    phase = np.diag(np.asarray(r)) / np.diag(want_r)
    np.testing.assert_allclose(r, want_r * phase[:, None], atol=1e-4)
    q = np.asarray(a, np.complex128) @ np.linalg.inv(np.asarray(r, np.complex128))
    q = np.conj(q) if conjugate else q
    np.testing.assert_allclose(got, q @ c if mode == "left" else c @ q, atol=1e-4)


def test_qr_multiply_real_1d_vmap_and_errors():
    a = RNG.standard_normal((3, 4, 3)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    got, r = jax.vmap(jsl.qr_multiply)(a, b)
    assert got.shape == (3, 3) and r.shape == (3, 3, 3)
    for k in range(3):
        want, want_r = sl.qr_multiply(a[k], b[k])
        sign = np.sign(np.diag(np.asarray(r[k]))) / np.sign(np.diag(want_r))
        np.testing.assert_allclose(got[k], want * sign, atol=1e-4)
        # c Q R = b a: the product is sign-free
        np.testing.assert_allclose(np.asarray(got[k]) @ np.asarray(r[k]), b[k] @ a[k],
                                   atol=1e-4)
    with pytest.raises(ValueError, match="mode must be 'right' or 'left'"):
        jsl.qr_multiply(a[0], b[0], mode="up")
    with pytest.raises(ValueError, match="not compatible for c @ Q"):
        jsl.qr_multiply(a[0], np.ones(3))
    with pytest.raises(ValueError, match="not compatible for Q @ c"):
        jsl.qr_multiply(a[0], np.ones(4), mode="left")


def test_rsf2csf_matches_scipy_jit_and_vmap():
    # two complex pairs and a real eigenvalue: T has two 2x2 blocks to split
    a = np.random.default_rng(3).standard_normal((2, 5, 5))
    forms = [sl.schur(a[k]) for k in range(2)]
    t = np.stack([f[0] for f in forms]).astype(np.float32)
    z = np.stack([f[1] for f in forms]).astype(np.float32)
    want = [sl.rsf2csf(t[k], z[k]) for k in range(2)]
    got_t, got_z = jax.jit(jsl.rsf2csf)(t[0], z[0])
    assert got_t.dtype == jnp.complex64 and got_z.dtype == jnp.complex64
    np.testing.assert_allclose(got_t, want[0][0], atol=1e-4)
    np.testing.assert_allclose(got_z, want[0][1], atol=1e-4)
    mt, mz = jax.vmap(jsl.rsf2csf)(t, z)
    for k in range(2):
        np.testing.assert_allclose(mt[k], want[k][0], atol=1e-4)
        np.testing.assert_allclose(mz[k], want[k][1], atol=1e-4)
        assert np.abs(np.tril(np.asarray(mt[k]), -1)).max() == 0


def test_rsf2csf_one_by_one_and_errors():
    t, z = jsl.rsf2csf(np.array([[2.0]]), np.array([[1.0]]))
    assert t.dtype == jnp.complex64
    np.testing.assert_allclose(t, [[2.0]])
    with pytest.raises(ValueError, match="Input 'T' must be square"):
        jsl.rsf2csf(np.ones((2, 3)), np.eye(2))
    with pytest.raises(ValueError, match="Input 'Z' must be square"):
        jsl.rsf2csf(np.eye(2), np.ones(2))
    with pytest.raises(ValueError, match="Input array shapes must match"):
        jsl.rsf2csf(np.eye(2), np.eye(3))


def test_funm_matches_scipy_eager_and_jit():
    a = np.random.default_rng(3).standard_normal((5, 5))
    want = sl.funm(a, lambda x: np.sin(x) + 2 * np.cos(x))
    got = jsl.funm(a.astype(np.float32), lambda x: jnp.sin(x) + 2 * jnp.cos(x))
    assert got.dtype == jnp.complex64
    np.testing.assert_allclose(got, want, atol=2e-5)
    f, err = jax.jit(lambda a: jsl.funm(a, jnp.exp, disp=False))(a.astype(np.float32))
    np.testing.assert_allclose(f, sl.expm(a), rtol=1e-4, atol=1e-4)
    # JAX's error estimate for this matrix (float32 eps over the smallest eigenvalue gap)
    np.testing.assert_allclose(err, 5.0341936e-07, rtol=1e-2)


def test_funm_complex_repeated_eigenvalues_and_errors():
    a = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [1j, 0.0, 1.0]], np.complex64)
    np.testing.assert_allclose(jsl.funm(a, jnp.exp), sl.funm(a, np.exp), atol=1e-4)
    with pytest.raises(ValueError, match="expected square array_like input"):
        jsl.funm(np.ones(3), jnp.exp)
