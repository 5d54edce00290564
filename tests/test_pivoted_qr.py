"""Column-pivoted QR (lax.linalg.qr(pivoting=True), the geqp3 primitive, scipy.linalg.qr and
qr_multiply with pivoting): native (LAPACK's geqp3 + orgqr) against the reference interpreter,
both against SciPy's pivoted QR; shapes, dtypes and errors against real JAX; derivatives
against finite differences."""
import numpy as np
import pytest
import scipy.linalg

import tracejit
from tracejit import lax
from tracejit.lax import decompositions as dec
from tracejit.scipy import linalg as jsl
from tracejit.test_util import check_grads

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


def rand(shape, dtype):
    """Columns scaled apart (norms ~1, 3, 9, ... in shuffled order) so the pivots are well
    separated and not simply the column order."""
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return (x * 3.0 ** RNG.permutation(shape[-1])).astype(dtype)


def tol(dtype):
    return 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def pivoted_qr(full_matrices):
    return lambda a: lax.linalg.qr(a, pivoting=True, full_matrices=full_matrices)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_matches_scipy(dtype, shape, full_matrices):
    a = rand(shape, dtype)
    f = pivoted_qr(full_matrices)
    q, r, p = (np.asarray(v) for v in tracejit.jit(f)(a))
    q_ref, r_ref, p_ref = (np.asarray(v) for v in f(a))  # the reference interpreter
    scale = np.abs(a).max()
    np.testing.assert_array_equal(p, p_ref)
    np.testing.assert_allclose(r, r_ref, atol=tol(dtype) * scale)
    np.testing.assert_allclose(q, q_ref, atol=tol(dtype))
    mode = "full" if full_matrices else "economic"
    for i in np.ndindex(shape[:-2]):
        qs, rs, ps = scipy.linalg.qr(a[i], mode=mode, pivoting=True)
        assert q[i].shape == qs.shape and r[i].shape == rs.shape and p.dtype == np.int32
        np.testing.assert_array_equal(p[i], ps)
        np.testing.assert_allclose(q[i] @ r[i], a[i][:, p[i]], atol=tol(dtype) * scale)
        np.testing.assert_allclose(H(q[i]) @ q[i], np.eye(q.shape[-1]), atol=tol(dtype))
        np.testing.assert_allclose(np.abs(r[i]), np.abs(rs), atol=tol(dtype) * scale)
        d = np.abs(np.diagonal(r[i]))
        assert np.all(d[:-1] >= d[1:] * (1 - tol(dtype)))
        assert np.allclose(np.tril(r[i], -1), 0)


def test_vmap_matches_loop():
    a = rand((3, 5, 4), np.float64)
    f = pivoted_qr(False)
    got = tracejit.jit(tracejit.vmap(f, in_axes=2, out_axes=1))(np.moveaxis(a, 0, 2))
    for i in range(3):
        for g, w in zip(got, f(a[i])):
            np.testing.assert_allclose(np.take(np.asarray(g), i, axis=1), w, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_derivatives_match_finite_differences(shape, full_matrices):
    a = rand(shape, np.float64)

    def f(a):
        q, r, _ = lax.linalg.qr(a, pivoting=True, full_matrices=full_matrices)
        return q, r
    check_grads(f, (a,), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    check_grads(tracejit.jit(f), (a,), order=1, modes=("fwd",), atol=1e-5, rtol=1e-5)


def test_complex_jvp_matches_finite_differences():
    a = rand((4, 3), np.complex128)
    check_grads(lambda a: pivoted_qr(False)(a)[:2], (a,), order=1, modes=("fwd",),
                atol=1e-5, rtol=1e-5)


def test_geqp3_pinned_columns_native_and_reference():
    a = rand((2, 5, 4), np.float64)
    jpvt = np.zeros((2, 4), np.int32)
    jpvt[:, 0] = 1  # pin the smallest column to the front
    got = [np.asarray(v) for v in tracejit.jit(dec.geqp3)(a, jpvt)]
    ref = [np.asarray(v) for v in dec.geqp3(a, jpvt)]
    for g, w in zip(got, ref):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, atol=1e-12)
    assert (got[1][:, 0] == 1).all() and got[1].dtype == np.int32
    for i in range(2):  # a[:, jpvt - 1] = Q R, Q from the reflectors
        q = np.asarray(lax.linalg.householder_product(got[0][i], got[2][i]))
        np.testing.assert_allclose(q @ np.triu(got[0][i])[:4], a[i][:, got[1][i] - 1],
                                   atol=1e-10)
    free = [np.asarray(v) for v in tracejit.jit(dec.geqp3)(a, np.zeros((2, 4), np.int32))]
    np.testing.assert_array_equal(free[1][0], scipy.linalg.qr(a[0], pivoting=True)[2] + 1)
    with pytest.raises(TypeError, match="int32"):
        dec.geqp3(a, jpvt.astype(np.int16))
    with pytest.raises(ValueError, match="jpvt of shape"):
        dec.geqp3(a, jpvt[:, :3])


@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_scipy_qr_pivoting_against_jax(mode):
    jax = pytest.importorskip("jax")
    a = rand((5, 3), np.float32)
    got = tracejit.jit(lambda a: jsl.qr(a, mode=mode, pivoting=True))(a)
    want = jax.scipy.linalg.qr(a, mode=mode, pivoting=True)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_array_equal(got[-1], want[-1])
    np.testing.assert_allclose(np.abs(np.asarray(got[-2])), np.abs(np.asarray(want[-2])),
                               atol=1e-4)
    empty = jsl.qr(np.zeros((0, 3), np.float32), pivoting=True)
    for g, w in zip(empty, jax.scipy.linalg.qr(np.zeros((0, 3), np.float32), pivoting=True)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    with pytest.raises(TypeError, match="qr does not accept dtype int32"):
        lax.linalg.qr(np.ones((3, 3), np.int32), pivoting=True)


@pytest.mark.parametrize("mode", ["left", "right"])
@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply_pivoting_matches_scipy(mode, conjugate):
    a = rand((5, 3), np.complex128)
    c = rand((3, 2) if mode == "left" else (2, 5), np.complex128)
    want, want_r, want_p = scipy.linalg.qr_multiply(a, c, mode=mode, pivoting=True,
                                                    conjugate=conjugate)
    got, r, p = tracejit.jit(lambda a, c: jsl.qr_multiply(a, c, mode=mode, pivoting=True,
                                                          conjugate=conjugate))(a, c)
    assert p.dtype == np.int32
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_allclose(r, want_r, atol=1e-10)
    np.testing.assert_allclose(got, want, atol=1e-10)
