"""jnp.linalg and jax.scipy.linalg against real JAX: values, dtypes and shapes (eagerly and under
jit), gradients, vmap, singular inputs (JAX's NaN/inf, no crash) and error classes."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
import tracejit.scipy.linalg  # noqa: F401

jax = pytest.importorskip("jax")
jnp = jax.numpy

RNG = np.random.default_rng(11)


def rand(shape, dtype=np.float32):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def spd(shape, dtype=np.float32):
    a = rand(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def tol_for(x):
    dt = np.asarray(x).dtype
    return 1e-3 if dt in (np.float32, np.complex64) else 1e-9


def assert_same(ours, theirs, scale=1.0, check_dtype=True):
    ol = tracejit.tree_util.tree_leaves(ours)
    tl = jax.tree_util.tree_leaves(theirs)
    assert len(ol) == len(tl)
    for o, t in zip(ol, tl):
        o, t = np.asarray(o), np.asarray(t)
        assert o.shape == t.shape, (o.shape, t.shape)
        if check_dtype:
            assert o.dtype == t.dtype, (o.dtype, t.dtype)
        tol = tol_for(t) * scale
        np.testing.assert_allclose(o, t, atol=tol, rtol=tol)


def both(name, *args, scale=1.0, check_jit=True, **kwargs):
    """Call jnp.linalg.<name> (a dotted path under tracejit/jax for other modules) on both."""
    def resolve(root, path):
        obj = root
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    ours_fn = resolve(tracejit, name) if "." in name else getattr(tnp.linalg, name)
    theirs_fn = resolve(jax, name) if "." in name else getattr(jnp.linalg, name)
    theirs = theirs_fn(*args, **kwargs)
    ours = ours_fn(*args, **kwargs)
    assert_same(ours, theirs, scale)
    if check_jit:  # arrays are traced; other arguments (flags, exponents) stay static
        traced = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

        def call(*xs):
            full = list(args)
            for i, x in zip(traced, xs):
                full[i] = x
            return ours_fn(*full, **kwargs)
        assert_same(tracejit.jit(call)(*[args[i] for i in traced]), theirs, scale)
    return ours, theirs


DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_inv_det_slogdet(dtype):
    a = rand((3, 4, 4), dtype) + 2 * np.eye(4, dtype=dtype)
    both("solve", a, rand((3, 4, 2), dtype), scale=10)
    both("solve", a[0], rand((4,), dtype), scale=10)
    both("solve", a, rand((4,), dtype), scale=10)  # a vector broadcast against a batch
    both("solve", a[None], rand((2, 1, 4, 3), dtype), scale=10)  # batch dims broadcast
    both("inv", a, scale=10)
    for n in (1, 2, 3, 5):
        m = rand((2, n, n), dtype) + 2 * np.eye(n, dtype=dtype)
        both("det", m, scale=10)
        both("slogdet", m, scale=10)


def test_integer_inputs_promote():
    a = np.array([[2, 1], [1, 3]], np.int32)
    both("solve", a, np.array([1, 2], np.int32))
    both("inv", a)
    both("det", a)
    both("cholesky", a)
    both("eigvalsh", a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    a = spd((2, 4, 4), dtype)
    both("cholesky", a, scale=10)
    both("cholesky", a, upper=True, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigen(dtype):
    a = rand((2, 4, 4), dtype)
    h = a + np.conj(np.swapaxes(a, -1, -2))
    both("eigvalsh", h, scale=10)
    both("eigvalsh", np.tril(h), UPLO="L", symmetrize_input=False, scale=10)
    w, v = tnp.linalg.eigh(h, UPLO="U")
    np.testing.assert_allclose(np.asarray(h @ v), np.asarray(v) * np.asarray(w)[..., None, :],
                               atol=tol_for(h) * 20, rtol=tol_for(h) * 20)
    assert v.dtype == jnp.linalg.eigh(h).eigenvectors.dtype
    w_ours = tnp.linalg.eigvals(a)
    w_theirs = jnp.linalg.eigvals(a)
    assert w_ours.dtype == w_theirs.dtype and w_ours.shape == w_theirs.shape
    gaps = np.abs(np.asarray(w_ours)[..., :, None] - np.asarray(w_theirs)[..., None, :]).min(-1)
    assert gaps.max() < 20 * tol_for(a) * np.abs(w_theirs).max()
    w, v = tracejit.jit(tnp.linalg.eig)(a)
    np.testing.assert_allclose(np.asarray(a @ v), np.asarray(v) * np.asarray(w)[..., None, :],
                               atol=tol_for(a) * 20, rtol=tol_for(a) * 20)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 5, 3)])
def test_svd_qr(dtype, shape):
    x = rand(shape, dtype)
    both("svdvals", x, scale=10)
    both("svd", x, compute_uv=False, scale=10)
    for full in (True, False):
        u, s, vh = tracejit.jit(lambda x: tnp.linalg.svd(x, full_matrices=full))(x)
        tu, ts, tvh = jnp.linalg.svd(x, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (tu.shape, ts.shape, tvh.shape)
        assert (u.dtype, s.dtype, vh.dtype) == (tu.dtype, ts.dtype, tvh.dtype)
        k = min(shape[-2:])
        recon = (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :]
        np.testing.assert_allclose(recon, x, atol=tol_for(x) * 20, rtol=tol_for(x) * 20)
    for mode in ("reduced", "complete", "r"):
        ours = tracejit.jit(lambda x: tnp.linalg.qr(x, mode=mode))(x)
        theirs = jnp.linalg.qr(x, mode=mode)
        # R is unique up to the signs of its rows
        r_o = np.asarray(ours if mode == "r" else ours[1])
        r_t = np.asarray(theirs if mode == "r" else theirs[1])
        assert r_o.shape == r_t.shape and r_o.dtype == r_t.dtype
        np.testing.assert_allclose(np.abs(r_o), np.abs(r_t), atol=tol_for(x) * 20,
                                   rtol=tol_for(x) * 20)


def test_svd_hermitian():
    a = rand((4, 4), np.float64)
    h = a + a.T
    both("svd", h, hermitian=True, compute_uv=False)
    u, s, vh = tnp.linalg.svd(h, hermitian=True)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh), h, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_pinv_lstsq_rank_cond(dtype):
    x = rand((5, 3), dtype)
    both("pinv", x, scale=10)
    both("pinv", x.T, scale=10)
    both("pinv", x @ x.T.conj(), hermitian=True, scale=100)
    both("lstsq", x, rand((5,), dtype), scale=10)
    both("lstsq", x, rand((5, 2), dtype), rcond=1e-3, scale=10)
    low_rank = (x @ rand((3, 2), dtype)) @ rand((2, 4), dtype)
    both("matrix_rank", low_rank)
    both("matrix_rank", low_rank, rtol=0.5)
    both("cond", x, scale=10)
    sq = rand((3, 3), dtype) + 3 * np.eye(3)
    for p in (None, 2, -2, 1, -1, np.inf, "fro", "nuc"):
        both("cond", sq, p, scale=100)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(ord, keepdims):
    x = rand((2, 4, 3), np.float64)
    both("norm", x, ord=ord, axis=(1, 2), keepdims=keepdims)
    both("norm", x, ord=ord, axis=(2, 0), keepdims=keepdims)
    both("matrix_norm", x, ord="fro" if ord is None else ord, keepdims=keepdims)


def test_small_functions():
    a = rand((3, 3), np.float64)
    both("matrix_power", a, 0)
    both("matrix_power", a, 1)
    both("matrix_power", a, 5)
    both("matrix_power", a + 3 * np.eye(3), -3, scale=10)
    both("matrix_power", rand((2, 3, 3)), 4, scale=10)
    t = rand((2, 3, 6), np.float64) + np.eye(6).reshape(6, 6)[:, :].reshape(2, 3, 6) * 4
    both("tensorinv", t, ind=2, scale=10)
    a4 = rand((2, 3, 6), np.float64) + np.eye(6).reshape(2, 3, 6) * 4
    both("tensorsolve", a4, rand((2, 3), np.float64), scale=10)
    both("multi_dot", [rand((4,)), rand((4, 3)), rand((3, 5)), rand((5, 2))], scale=10)
    both("multi_dot", [rand((2, 4)), rand((4,))])
    both("trace", rand((2, 3, 4)))
    both("trace", rand((2, 4, 4)), offset=1)
    both("diagonal", rand((2, 3, 4)), offset=-1)
    both("matrix_transpose", rand((2, 3, 4)))
    both("outer", rand((3,)), rand((2,)))
    both("cross", rand((2, 3)), rand((2, 3)))
    both("vecdot", rand((2, 3), np.complex64), rand((2, 3), np.complex64))


# --- singular and ill-conditioned inputs: JAX's infs and NaNs, no crash ----------------------

def test_singular_inputs():
    z = np.zeros((2, 2))
    for name, args in [("solve", (z, np.ones(2))), ("inv", (z,)), ("det", (z,)),
                       ("slogdet", (z,)), ("cholesky", (-np.eye(2),)),
                       ("det", (np.zeros((4, 4)),)), ("slogdet", (np.zeros((4, 4)),)),
                       ("inv", (np.zeros((4, 4)),)), ("cond", (z,)), ("pinv", (z,)),
                       ("matrix_rank", (z,)), ("eigvalsh", (np.full((2, 2), np.nan),))]:
        ours = tracejit.jit(getattr(tnp.linalg, name))(*args)
        theirs = getattr(jnp.linalg, name)(*args)
        for o, t in zip(tracejit.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            np.testing.assert_array_equal(np.isnan(o), np.isnan(t), err_msg=name)
            np.testing.assert_array_equal(np.isinf(o), np.isinf(t), err_msg=name)
            finite = np.isfinite(np.asarray(t))
            np.testing.assert_allclose(np.asarray(o)[finite], np.asarray(t)[finite], atol=1e-12,
                                       err_msg=name)


# --- gradients against JAX's ------------------------------------------------------------------

GRADS = [
    ("det", lambda m: m, (4, 4)),
    ("det", lambda m: m * np.array([1.0, 1, 1, 0])[None, :], (4, 4)),  # singular: cofactors
    ("slogdet", lambda m: m, (4, 4)),
    ("inv", lambda m: m, (3, 3)),
    ("pinv", lambda m: m, (4, 3)),
    ("pinv", lambda m: m, (3, 4)),
    ("eigvalsh", lambda m: m + m.T, (4, 4)),
    ("svdvals", lambda m: m, (4, 3)),
    ("cholesky", lambda m: m @ m.T + 4 * np.eye(4), (4, 4)),
    ("norm", lambda m: m, (3, 3)),
]


@pytest.mark.parametrize("name,prep,shape", GRADS, ids=[f"{g[0]}{i}" for i, g in enumerate(GRADS)])
def test_grads_match_jax(name, prep, shape):
    m = rand(shape, np.float64)
    if name == "norm":
        def f(mod):
            return lambda x: mod.linalg.norm(prep(x), ord=2)
    else:
        def f(mod):
            return lambda x: sum(mod.sum(mod.sin(y)) for y in
                                 jax.tree_util.tree_leaves(getattr(mod.linalg, name)(prep(x))))
    ours = tracejit.jit(tracejit.grad(f(tnp)))(m)
    theirs = jax.grad(f(jnp))(m)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-8, rtol=1e-7)


def test_solve_grad_matches_jax():
    a = rand((3, 3), np.float64) + 3 * np.eye(3)
    b = rand((3, 2), np.float64)

    def f(mod):
        return lambda a, b: mod.sum(mod.linalg.solve(a, b) ** 2)
    ours = tracejit.grad(f(tnp), argnums=(0, 1))(a, b)
    theirs = jax.grad(f(jnp), argnums=(0, 1))(a, b)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), atol=1e-10)


def test_vmap_matches_jax():
    a = rand((5, 3, 3), np.float64) + 3 * np.eye(3)
    b = rand((5, 3), np.float64)
    ours = tracejit.jit(tracejit.vmap(tnp.linalg.solve))(a, b)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(jax.vmap(jnp.linalg.solve)(a, b)),
                               atol=1e-10)
    ours = tracejit.vmap(tnp.linalg.det, in_axes=2)(np.moveaxis(a, 0, 2))
    np.testing.assert_allclose(np.asarray(ours), np.linalg.det(a), atol=1e-10)


# --- errors ----------------------------------------------------------------------------------

ERRORS = [
    ("solve", (np.ones(3), np.ones(3)), {}),
    ("solve", (np.ones((3, 3)), np.ones((4,))), {}),
    ("inv", (np.ones((2, 3)),), {}),
    ("det", (np.ones((2, 3)),), {}),
    ("slogdet", (np.ones((2, 3)),), {}),
    ("eigh", (np.eye(2),), {"UPLO": "X"}),
    ("qr", (np.eye(2),), {"mode": "bogus"}),
    ("matrix_power", (np.ones((2, 3)), 2), {}),
    ("matrix_power", (np.eye(2), 1.5), {}),
    ("matrix_power", (np.ones(3), 2), {}),
    ("tensorinv", (np.ones((2, 3)),), {"ind": 1}),
    ("multi_dot", ([np.ones((2, 3)), np.ones((2, 3))],), {}),
    ("multi_dot", ([np.ones((2, 3, 3)), np.ones((3, 3))],), {}),
    ("cond", (np.ones(3),), {}),
    ("matrix_transpose", (np.ones(3),), {}),
    ("lstsq", (np.ones((3, 2)), np.ones(4)), {}),
    ("pinv", (np.eye(2),), {"rtol": 0.1, "rcond": 0.1}),
]


@pytest.mark.parametrize("name,args,kwargs", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_classes_match_jax(name, args, kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(jnp.linalg, name)(*args, **kwargs)
    with pytest.raises(type(theirs.value)):
        getattr(tnp.linalg, name)(*args, **kwargs)


# --- jax.scipy.linalg ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_solves(dtype):
    a = rand((4, 4), dtype) + 3 * np.eye(4, dtype=dtype)
    p = spd((2, 4, 4), dtype)
    b = rand((4, 2), dtype)
    for assume_a in ("gen", "sym", "her", "pos"):
        both("scipy.linalg.solve", p[0], b, assume_a=assume_a, scale=10)
    both("scipy.linalg.solve", p, rand((2, 4, 3), dtype), assume_a="pos", lower=True, scale=10)
    for trans in (0, 1, 2, "N", "T", "C"):
        both("scipy.linalg.solve_triangular", a, b, trans=trans, lower=True, scale=10)
    both("scipy.linalg.solve_triangular", a, b[:, 0], unit_diagonal=True, scale=10)
    for lower in (False, True):
        both("scipy.linalg.cholesky", p, lower=lower, scale=10)
        ours = tracejit.scipy.linalg.cho_solve(tracejit.scipy.linalg.cho_factor(p, lower=lower),
                                               rand((2, 4, 2), dtype))
        assert ours.shape == (2, 4, 2)
        c = jax.scipy.linalg.cho_factor(p[0], lower=lower)
        both("scipy.linalg.cho_solve", (np.asarray(c[0]), lower), b, scale=10, check_jit=False)
    lu_piv = tuple(np.asarray(t) for t in jax.scipy.linalg.lu_factor(a))
    both("scipy.linalg.lu_factor", a, scale=10)
    for trans in (0, 1, 2):
        both("scipy.linalg.lu_solve", lu_piv, b, trans=trans, scale=10, check_jit=False)
        both("scipy.linalg.lu_solve", lu_piv, b[:, 0], trans=trans, scale=10, check_jit=False)
    both("scipy.linalg.inv", a, scale=10)
    both("scipy.linalg.det", a, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_scipy_decompositions(dtype, shape):
    x = rand(shape, dtype)
    both("scipy.linalg.lu", x, scale=10)
    both("scipy.linalg.lu", x, permute_l=True, scale=10)
    both("scipy.linalg.svd", x, compute_uv=False, scale=10)
    for mode in ("full", "economic", "r"):
        ours = tracejit.scipy.linalg.qr(x, mode=mode)
        theirs = jax.scipy.linalg.qr(x, mode=mode)
        assert [o.shape for o in ours] == [t.shape for t in theirs]
        r_o, r_t = np.asarray(ours[-1]), np.asarray(theirs[-1])
        np.testing.assert_allclose(np.abs(r_o), np.abs(r_t), atol=tol_for(x) * 20,
                                   rtol=tol_for(x) * 20)
    if shape[0] == shape[1]:
        h = x + np.conj(x.T)
        both("scipy.linalg.eigh", h, eigvals_only=True, scale=10)
        w, v = tracejit.jit(tracejit.scipy.linalg.eigh)(h)
        np.testing.assert_allclose(np.asarray(h @ v), np.asarray(v) * np.asarray(w)[None, :],
                                   atol=tol_for(h) * 20, rtol=tol_for(h) * 20)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 3.0, 30.0])
def test_expm(dtype, scale):
    a = rand((4, 4), dtype) * scale / 2
    both("scipy.linalg.expm", a, scale=100)
    both("scipy.linalg.expm", np.triu(a), upper_triangular=True, scale=100)
    both("scipy.linalg.expm", rand((2, 3, 3), dtype) * scale / 2, scale=100)


def test_expm_derivatives():
    a = rand((3, 3), np.float64)
    e = rand((3, 3), np.float64)
    both("scipy.linalg.expm_frechet", a, e)
    import scipy.linalg
    np.testing.assert_allclose(np.asarray(tracejit.scipy.linalg.expm_frechet(a, e)[1]),
                               scipy.linalg.expm_frechet(a, e)[1], atol=1e-10)
    ours = tracejit.jit(tracejit.grad(lambda a: tnp.sum(tracejit.scipy.linalg.expm(a) ** 2)))(a)
    theirs = jax.grad(lambda a: jnp.sum(jax.scipy.linalg.expm(a) ** 2))(a)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-9)
    # too many squarings needed: NaN, as JAX
    both("scipy.linalg.expm", a * 1e8, max_squarings=2)


def test_scipy_constructors():
    both("scipy.linalg.block_diag", np.ones((2, 2)), 3 * np.ones((1, 3)), np.array(5.0))
    both("scipy.linalg.block_diag", np.ones((2, 2), np.int32), np.ones(2, np.float32))
    both("scipy.linalg.toeplitz", rand((3,)), rand((4,)))
    both("scipy.linalg.toeplitz", rand((3,), np.complex64))
    assert_same(tracejit.scipy.linalg.hilbert(4), jax.scipy.linalg.hilbert(4))
    with pytest.raises(ValueError):
        tracejit.scipy.linalg.block_diag(np.ones((2, 2, 2)))


SCIPY_ERRORS = [
    ("solve", (np.eye(2), np.ones(2)), {"assume_a": "bogus"}),
    ("solve_triangular", (np.eye(2), np.ones(2)), {"trans": 3}),
    ("qr", (np.eye(2),), {"mode": "bogus"}),
    ("expm", (np.ones(3),), {}),
    ("expm_frechet", (np.eye(2), np.eye(3)), {}),
    ("eigh", (np.eye(2), np.eye(2)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", SCIPY_ERRORS, ids=[e[0] for e in SCIPY_ERRORS])
def test_scipy_error_classes_match_jax(name, args, kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(jax.scipy.linalg, name)(*args, **kwargs)
    with pytest.raises(type(theirs.value)):
        getattr(tracejit.scipy.linalg, name)(*args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_schur_hessenberg(dtype):
    a = rand((4, 4), dtype)
    both("scipy.linalg.hessenberg", a, scale=10)
    both("scipy.linalg.hessenberg", rand((2, 4, 4), dtype), calc_q=True, scale=10)
    for output in ("real", "complex"):
        t, z = tracejit.jit(lambda a: tracejit.scipy.linalg.schur(a, output=output))(a)
        tj, zj = jax.scipy.linalg.schur(a, output=output)
        assert (t.dtype, z.dtype) == (tj.dtype, zj.dtype)
        np.testing.assert_allclose(np.abs(np.asarray(t)), np.abs(np.asarray(tj)),
                                   atol=tol_for(a) * 20, rtol=tol_for(a) * 20)
    with pytest.raises(ValueError):
        tracejit.scipy.linalg.schur(a, output="bogus")


@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_sqrtm(dtype):
    a = rand((4, 4), dtype)
    spd_a = spd((4, 4), dtype)
    both("scipy.linalg.sqrtm", a, scale=100)
    both("scipy.linalg.sqrtm", spd_a, scale=100)
    r = np.asarray(tracejit.jit(tracejit.scipy.linalg.sqrtm)(a))
    np.testing.assert_allclose(r @ r, a, atol=tol_for(a) * 100, rtol=tol_for(a) * 100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_qr_raw(dtype, shape):
    both("qr", rand(shape, dtype), mode="raw", scale=10)


def test_lax_linalg_helpers_match_jax():
    a = spd((4, 4), np.float64)
    r = np.linalg.cholesky(a).T
    both("lax.linalg.cholesky_update", r, rand((4,), np.float64))
    both("lax.linalg.symmetric_product", rand((3, 4), np.float64), spd((3, 3), np.float64),
         alpha=0.5, beta=2.0)
    x = rand((2, 4, 4), np.float64)
    both("lax.linalg.tridiagonal", x + np.swapaxes(x, -1, -2), lower=False)
    both("lax.linalg.lu_pivots_to_permutation", np.array([[2, 2, 3], [1, 1, 2]], np.int32), 5)
