"""lax.linalg's decompositions: native (LAPACK through SciPy's capsules) against the reference
interpreter, both against NumPy/SciPy identities, every inexact dtype, batched; gradients
against finite differences; vmap against a Python loop; NaNs where LAPACK fails."""
import zlib

import numpy as np
import pytest
import scipy.linalg

import tracejit
from tracejit import lax
from tracejit.test_util import check_grads

linalg = lax.linalg
RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BATCHES = [(), (3,), (2, 2)]


def rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def hpd(batch, n, dtype):
    """Hermitian positive definite matrices."""
    a = rand(batch + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def tol(dtype):
    return 2e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(a, b, dtype, scale=1.0):
    a = np.asarray(a)
    np.testing.assert_allclose(a, np.broadcast_to(b, a.shape), atol=tol(dtype) * scale,
                               rtol=tol(dtype) * scale)


def native_and_reference(f, *args):
    """f under jit (native code) and eagerly (the reference interpreter): equal within
    rounding, with equal dtypes and shapes; returns the native results as NumPy."""
    got = tracejit.jit(f)(*args)
    ref = f(*args)
    got_l, ref_l = tracejit.tree_util.tree_leaves(got), tracejit.tree_util.tree_leaves(ref)
    for g, r in zip(got_l, ref_l):
        assert g.dtype == r.dtype and g.shape == r.shape
    return [np.asarray(g) for g in got_l], [np.asarray(r) for r in ref_l]


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


@pytest.fixture(autouse=True)
def _inputs_of_the_test_alone(request):
    """RNG seeded by the test's id: a test's matrices do not depend on which tests ran before it
    in its process (pytest-xdist deals them out differently run by run; about 1 in 30 random
    4x3 matrices puts test_svd_grad's central differences, eps 1e-4, past 1e-5)."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky(dtype, batch):
    a = hpd(batch, 5, dtype)
    (got,), (ref,) = native_and_reference(linalg.cholesky, a)
    close(got, ref, dtype)
    close(got @ H(got), a, dtype, 10)
    close(got, np.linalg.cholesky(a), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 70])
def test_cholesky_reads_the_lower_triangle(dtype, n):
    """The native rule factors row-major memory as LAPACK's upper triangle: only x's lower
    triangle may count (here the upper one is garbage), at a size past LAPACK's block size."""
    a = hpd((2,), n, dtype)
    garbage = np.triu(rand((2, n, n), dtype), 1) * 100
    f = lambda x: linalg.cholesky(x, symmetrize_input=False)  # noqa: E731
    (got,), (ref,) = native_and_reference(f, np.tril(a) + garbage)
    close(got, ref, dtype, 10)
    close(got, np.linalg.cholesky(a), dtype, 10)
    assert (np.triu(got, 1) == 0).all()


@pytest.mark.parametrize("left_side,lower,transpose_a", [(True, True, False), (True, True, True),
                                                         (False, False, False),
                                                         (False, True, True)])
def test_triangular_solve_large(left_side, lower, transpose_a):
    """Past trsm's blocking, with a batch: against SciPy's solve_triangular per matrix."""
    n, k = 70, 9
    a = rand((2, n, n), np.float64) + n * np.eye(n)
    b = rand((2, n, k) if left_side else (2, k, n), np.float64)
    f = lambda a, b: linalg.triangular_solve(a, b, left_side=left_side, lower=lower,  # noqa
                                             transpose_a=transpose_a)
    got = np.asarray(tracejit.jit(f)(a, b))
    for i in range(2):
        if left_side:
            want = scipy.linalg.solve_triangular(a[i], b[i], lower=lower, trans=transpose_a)
        else:  # y op(a) = b  <=>  op(a)^T y^T = b^T
            want = scipy.linalg.solve_triangular(a[i], b[i].T, lower=lower,
                                                 trans=not transpose_a).T
        close(got[i], want, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a,conjugate_a", [(False, False), (True, False), (True, True),
                                                     (False, True)])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_triangular_solve(dtype, batch, left_side, lower, transpose_a, conjugate_a,
                          unit_diagonal):
    a = rand(batch + (4, 4), dtype) + 4 * np.eye(4, dtype=dtype)
    b = rand(batch + ((4, 3) if left_side else (3, 4)), dtype)
    f = lambda a, b: linalg.triangular_solve(a, b, left_side=left_side, lower=lower,  # noqa
                                             transpose_a=transpose_a, conjugate_a=conjugate_a,
                                             unit_diagonal=unit_diagonal)
    (got,), (ref,) = native_and_reference(f, a, b)
    close(got, ref, dtype)
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - np.eye(4) * np.diagonal(a, axis1=-2, axis2=-1)[..., None] + np.eye(4)
    t = np.conj(t) if conjugate_a else t
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    close(t @ got if left_side else got @ t, b, dtype, 10)


def test_triangular_solve_vector_rhs():
    a = np.tril(rand((4, 4), np.float64)) + 4 * np.eye(4)
    b = rand((4,), np.float64)
    x = tracejit.jit(lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True))(a, b)
    assert x.shape == (4,)
    close(a @ np.asarray(x), b, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (70, 45), (45, 70)])
def test_lu(dtype, batch, shape):
    """(The larger shapes go into and out of LAPACK's column-major order by tiles of 16, a
    partial tile at each edge.)"""
    x = rand(batch + shape, dtype)
    (lu, piv, perm), (lu_r, piv_r, perm_r) = native_and_reference(linalg.lu, x)
    close(lu, lu_r, dtype)
    np.testing.assert_array_equal(piv, piv_r)
    np.testing.assert_array_equal(perm, perm_r)
    assert piv.dtype == perm.dtype == np.int32
    m, n = shape
    k = min(m, n)
    for idx in np.ndindex(*batch):
        p, l_, u = scipy.linalg.lu(x[idx])
        lo = np.tril(lu[idx], -1)[:, :k] + np.eye(m, k)
        up = np.triu(lu[idx])[:k, :]
        close(lo @ up, x[idx][perm[idx]], dtype, 10)
        close(up, u, dtype, 10)
    close(np.asarray(linalg.lu_pivots_to_permutation(piv, m)), perm, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr(dtype, batch, shape, full_matrices):
    x = rand(batch + shape, dtype)
    (q, r), (q_r, r_r) = native_and_reference(
        lambda x: linalg.qr(x, full_matrices=full_matrices), x)
    close(q, q_r, dtype)
    close(r, r_r, dtype)
    mode = "complete" if full_matrices else "reduced"
    q_np, r_np = np.linalg.qr(x, mode=mode)
    assert q.shape == q_np.shape and r.shape == r_np.shape
    close(q @ r, x, dtype, 10)
    close(np.abs(r), np.abs(r_np), dtype, 10)
    close(H(q) @ q, np.eye(q.shape[-1]), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh(dtype, batch, lower):
    a = rand(batch + (5, 5), dtype)
    a = a + H(a)
    (v, w), (v_r, w_r) = native_and_reference(lambda a: linalg.eigh(a, lower=lower), a)
    assert w.dtype == np.abs(a).dtype
    close(w, w_r, dtype, 10)
    close(w, np.linalg.eigvalsh(a), dtype, 10)
    close(a @ v, v * w[..., None, :].astype(dtype), dtype, 20)
    # only the chosen triangle is read without symmetrize_input
    junk = rand(batch + (5, 5), dtype)
    skewed = np.tril(a) + np.triu(junk, 1) if lower else np.triu(a) + np.tril(junk, -1)
    v2, w2 = tracejit.jit(lambda a: linalg.eigh(a, lower=lower, symmetrize_input=False))(skewed)
    close(w2, w, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(dtype, batch, shape, full_matrices):
    x = rand(batch + shape, dtype)
    (u, s, vt), (u_r, s_r, vt_r) = native_and_reference(
        lambda x: linalg.svd(x, full_matrices=full_matrices), x)
    u_np, s_np, vt_np = np.linalg.svd(x, full_matrices=full_matrices)
    assert (u.shape, s.shape, vt.shape) == (u_np.shape, s_np.shape, vt_np.shape)
    assert s.dtype == s_np.dtype.type(0).real.dtype
    close(s, s_np, dtype, 10)
    close(s, s_r, dtype, 10)
    k = min(shape)
    close((u[..., :, :k] * s[..., None, :].astype(dtype)) @ vt[..., :k, :], x, dtype, 10)
    (s_only,), _ = native_and_reference(lambda x: linalg.svd(x, compute_uv=False), x)
    close(s_only, s_np, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_eig(dtype, batch):
    x = rand(batch + (4, 4), dtype)
    (w, vl, vr), (w_r, vl_r, vr_r) = native_and_reference(linalg.eig, x)
    assert w.dtype.kind == "c" and w.dtype.itemsize == 2 * np.abs(x).dtype.itemsize
    close(w, w_r, dtype, 10)
    close(vr, vr_r, dtype, 10)
    close(x @ vr, vr * w[..., None, :], dtype, 20)
    close(H(vl) @ x, w[..., :, None] * H(vl), dtype, 20)
    w_np = np.linalg.eigvals(x)  # the same multiset (LAPACK's orders may differ)
    gaps = np.abs(w[..., :, None] - w_np[..., None, :]).min(-1)
    assert gaps.max() < 10 * tol(dtype) * np.abs(w_np).max()
    (w_only,), _ = native_and_reference(
        lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                             compute_right_eigenvectors=False), x)
    close(w_only, w, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_tridiagonal_solve(dtype, batch):
    m = 6
    dl, d, du = (rand(batch + (m,), dtype) for _ in range(3))
    d = d + 4
    dl[..., 0] = 0
    du[..., -1] = 0
    b = rand(batch + (m, 2), dtype)
    (x,), (x_r,) = native_and_reference(linalg.tridiagonal_solve, dl, d, du, b)
    close(x, x_r, dtype)
    for idx in np.ndindex(*batch):
        a = np.diag(d[idx]) + np.diag(dl[idx][1:], -1) + np.diag(du[idx][:-1], 1)
        close(a @ x[idx], b[idx], dtype, 10)


# --- failures give NaNs, as JAX on CPU -------------------------------------------------------

def test_failures_are_nan():
    not_pd = np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]])
    (L,), _ = native_and_reference(linalg.cholesky, not_pd)
    assert np.isnan(L[0][np.tril_indices(2)]).all() and not np.isnan(L[1]).any()
    assert (np.triu(L[0], 1) == 0).all()
    (x,), _ = native_and_reference(
        lambda d: linalg.tridiagonal_solve(d * 0, d * 0, d * 0, np.ones((3, 1))), np.ones(3))
    assert np.isnan(x).all()
    # a singular matrix is factored (LAPACK's info > 0 is not a failure for LU)
    (lu, _, _), _ = native_and_reference(linalg.lu, np.zeros((3, 3)))
    assert (lu == 0).all()


# --- errors ----------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        linalg.lu(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="square"):
        linalg.cholesky(np.ones((2, 3)), symmetrize_input=False)
    with pytest.raises(TypeError, match="rank at least 2"):
        linalg.qr(np.ones(3))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        linalg.triangular_solve(np.eye(3), np.ones((2, 2)), left_side=True)
    with pytest.raises(TypeError, match="same dtypes"):
        linalg.triangular_solve(np.eye(2), np.ones((2, 2), np.float32))


def test_empty_matrices():
    q, r = tracejit.jit(linalg.qr)(np.ones((3, 0)))
    np.testing.assert_array_equal(q, np.eye(3))
    assert r.shape == (3, 0)
    u, s, vt = tracejit.jit(linalg.svd)(np.ones((0, 2)))
    assert (u.shape, s.shape, vt.shape) == ((0, 0), (0,), (2, 2))
    assert tracejit.jit(linalg.cholesky)(np.ones((2, 0, 0))).shape == (2, 0, 0)
    assert tracejit.jit(linalg.lu)(np.ones((0, 3, 3)))[2].shape == (0, 3)


# --- gradients against finite differences ----------------------------------------------------

GRAD_DTYPES = [np.float64, np.complex128]


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_cholesky_grad(dtype):
    a = hpd((2,), 3, dtype)
    check_grads(linalg.cholesky, (a,), 2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
def test_triangular_solve_grad(dtype, left_side, transpose_a):
    a = rand((3, 3), dtype) + 3 * np.eye(3)
    b = rand((3, 2) if left_side else (2, 3), dtype)
    f = lambda a, b: linalg.triangular_solve(a, b, left_side=left_side, lower=True,  # noqa
                                             transpose_a=transpose_a,
                                             conjugate_a=transpose_a)
    check_grads(f, (a, b), 2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_lu_grad(shape):
    x = rand(shape, np.float64)
    check_grads(lambda x: linalg.lu(x)[0], (x,), 1, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.parametrize("shape,full", [((4, 3), False), ((3, 3), True), ((3, 4), True),
                                        ((4, 3), True)])
def test_qr_grad(dtype, shape, full):
    x = rand(shape, dtype)
    check_grads(lambda x: linalg.qr(x, full_matrices=full), (x,), 1, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_eigh_grad(dtype):
    a = rand((4, 4), dtype)
    a = a + H(a)

    def f(a):  # eigenvalues, and eigenvectors up to their phase (v v^H projectors)
        v, w = linalg.eigh(a)
        return w, v * tracejit.numpy.conj(v)
    check_grads(f, (a,), 1, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_svd_grad(dtype, shape):
    x = rand(shape, dtype)
    check_grads(lambda x: linalg.svd(x, compute_uv=False), (x,), 1, atol=1e-5, rtol=1e-5)

    def f(x):  # phase-invariant: u diag(s) vh itself and the projectors onto singular vectors
        u, s, vh = linalg.svd(x, full_matrices=False)
        return u * tracejit.numpy.conj(u), vh * tracejit.numpy.conj(vh), s
    check_grads(f, (x,), 1, atol=1e-5, rtol=1e-5)


def test_eig_grad():
    x = rand((3, 3), np.float64)
    f = lambda x: linalg.eig(x, compute_left_eigenvectors=False,  # noqa: E731
                             compute_right_eigenvectors=False)[0]
    # (central differences of eigenvalues are accurate to about 1e-4 here)
    check_grads(f, (x,), 1, modes=("fwd",), atol=2e-3, rtol=2e-3)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        tracejit.jvp(lambda x: linalg.eig(x)[2], (x,), (x,))


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_tridiagonal_solve_grad(dtype):
    m = 4
    dl, d, du = (rand((m,), dtype) for _ in range(3))
    d = d + 4
    dl[0] = 0
    du[-1] = 0
    b = rand((m, 2), dtype)

    def f(dl, d, du, b):  # dl[0] and du[-1] are not read: keep them out of the perturbation
        mask = np.arange(m) > 0
        return linalg.tridiagonal_solve(dl * mask, d, du * mask[::-1], b)
    check_grads(f, (dl, d, du, b), 1, atol=1e-5, rtol=1e-5)


# --- vmap ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,make", [
    ("cholesky", lambda: (linalg.cholesky, [hpd((3,), 3, np.float64)])),
    ("triangular_solve", lambda: (
        lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
        [rand((3, 3, 3), np.float64) + 3 * np.eye(3), rand((3, 3, 2), np.float64)])),
    ("lu", lambda: (linalg.lu, [rand((3, 4, 3), np.float64)])),
    ("qr", lambda: (linalg.qr, [rand((3, 4, 3), np.float64)])),
    ("eigh", lambda: (linalg.eigh, [hpd((3,), 3, np.float64)])),
    ("svd", lambda: (lambda x: linalg.svd(x, compute_uv=False), [rand((3, 4, 3), np.float64)])),
    ("tridiagonal_solve", lambda: (linalg.tridiagonal_solve,
                                   [rand((3, 4), np.float64) for _ in range(3)]
                                   + [rand((3, 4, 2), np.float64)])),
])
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_matches_loop(name, make, axis):
    f, args = make()
    moved = [np.moveaxis(a, 0, axis if a.ndim > 2 or axis == 0 else 0) for a in args]
    in_axes = [axis if a.ndim > 2 or axis == 0 else 0 for a in args]
    got = tracejit.jit(tracejit.vmap(f, in_axes=in_axes))(*moved)
    loop = [f(*[a[i] for a in args]) for i in range(3)]
    got_l = tracejit.tree_util.tree_leaves(got)
    for j, g in enumerate(got_l):
        want = np.stack([np.asarray(tracejit.tree_util.tree_leaves(r)[j]) for r in loop])
        np.testing.assert_allclose(np.asarray(g), want, atol=1e-9, rtol=1e-9)


def test_vmap_unbatched_matrix_batched_rhs():
    a = np.tril(rand((3, 3), np.float64)) + 3 * np.eye(3)
    bs = rand((5, 3, 2), np.float64)
    f = lambda b: linalg.triangular_solve(a, b, left_side=True, lower=True)  # noqa: E731
    got = tracejit.jit(tracejit.vmap(f))(bs)
    np.testing.assert_allclose(np.asarray(got), np.linalg.solve(a, bs), atol=1e-10)


def test_inside_scan():
    a = hpd((4,), 3, np.float64)

    def step(c, x):
        return c + linalg.cholesky(x).sum(), None
    got, _ = tracejit.jit(lambda a: lax.scan(step, 0.0, a))(a)
    close(got, np.linalg.cholesky(a).sum(), np.float64)


# --- schur, hessenberg, householder_product (not differentiable, as in JAX) -------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_schur_hessenberg(dtype, batch):
    x = rand(batch + (5, 5), dtype)
    (t, vs), (t_r, vs_r) = native_and_reference(linalg.schur, x)
    close(t, t_r, dtype, 10)
    close(vs @ t @ H(vs), x, dtype, 20)
    close(H(vs) @ vs, np.eye(5), dtype, 10)
    below = np.tril(t, -2 if np.dtype(dtype).kind == "f" else -1)  # (quasi-)triangular
    assert np.abs(below).max() == 0
    (t_only,), _ = native_and_reference(
        lambda x: linalg.schur(x, compute_schur_vectors=False), x)
    close(t_only, t, dtype, 10)
    (h, taus), (h_r, taus_r) = native_and_reference(linalg.hessenberg, x)
    close(h, h_r, dtype)
    close(taus, taus_r, dtype)
    assert taus.shape == batch + (4,)
    for idx in np.ndindex(*batch):
        want = scipy.linalg.hessenberg(x[idx])
        close(np.abs(np.triu(h[idx], -1)), np.abs(want), dtype, 10)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'schur'"):
        tracejit.jvp(lambda x: linalg.schur(x)[0], (x,), (x,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product(dtype):
    x = rand((2, 5, 3), dtype)
    from scipy.linalg import get_lapack_funcs
    geqrf = get_lapack_funcs("geqrf", (x[0],))
    factored = [geqrf(m)[:2] for m in x]
    a = np.stack([f[0] for f in factored])
    taus = np.stack([f[1] for f in factored])
    (q,), (q_r,) = native_and_reference(linalg.householder_product, a, taus)
    close(q, q_r, dtype)
    close(q, np.linalg.qr(x)[0], dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal(dtype, lower):
    x = rand((2, 5, 5), dtype)
    x = x + H(x)
    (a, d, e, taus), refs = native_and_reference(lambda x: linalg.tridiagonal(x, lower=lower), x)
    for got, ref in zip((a, d, e, taus), refs):
        close(got, ref, dtype)
    assert d.dtype == e.dtype == np.abs(x).dtype and taus.dtype == x.dtype
    for i in range(2):  # the tridiagonal matrix has x's eigenvalues
        t = np.diag(d[i]) + np.diag(e[i], -1) + np.diag(e[i], 1)
        close(np.linalg.eigvalsh(t), np.linalg.eigvalsh(x[i]), dtype, 20)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr(dtype, left, transpose):
    x = rand((2, 5, 3), dtype)
    from scipy.linalg import get_lapack_funcs
    geqrf = get_lapack_funcs("geqrf", (x[0],))
    factored = [geqrf(m)[:2] for m in x]
    a = np.stack([f[0] for f in factored])
    taus = np.stack([f[1] for f in factored])
    c = rand((2, 5, 4) if left else (2, 4, 5), dtype)
    f = lambda a, t, c: linalg.ormqr(a, t, c, left=left, transpose=transpose)  # noqa: E731
    (got,), (ref,) = native_and_reference(f, a, taus, c)
    close(got, ref, dtype)
    q = np.linalg.qr(x, mode="complete")[0]
    q = H(q) if transpose else q
    close(got, q @ c if left else c @ q, dtype, 10)
