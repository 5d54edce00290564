"""tracejit.scipy.linalg (JAX's `jax.scipy.linalg`): SciPy's spellings of the decompositions
and solves, built on lax.linalg (LAPACK in native code) and jnp.linalg; expm by JAX's Pade
approximants with scaling and squaring, differentiable through them."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..core.trace import get_aval
from ..lax import decompositions as _dec
from ..lax import lenient as lax
from ..numpy import linalg as _jnp_linalg
from ..numpy._util import check_arraylike, promote_dtypes, promote_dtypes_inexact
from ..transforms.api import jvp, vmap

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm",
           "expm_frechet", "hessenberg", "hilbert", "inv", "lu", "lu_factor", "lu_solve", "qr",
           "schur", "solve", "solve_triangular", "sqrtm", "svd", "toeplitz"]


def _inexact(*args: Any) -> list:
    return promote_dtypes_inexact(*[jnp.asarray(a) for a in args])


def _mT(x: Any) -> Any:
    nd = get_aval(x).ndim
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _batched_solve(solve1, a: Any, b: Any) -> Any:
    """Apply `solve1(a, b)` (a [..., n, n], b [..., n, k], equal batch dims) with SciPy's
    shapes: b a vector ([n]) or a batch of matrices; batch dims broadcast."""
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    vector = len(b_shape) == 1
    if vector:
        b = b[:, None]
    batch = np.broadcast_shapes(a_shape[:-2], get_aval(b).shape[:-2])
    a = jnp.broadcast_to(a, batch + a_shape[-2:])
    b = jnp.broadcast_to(b, batch + get_aval(b).shape[-2:])
    x = solve1(a, b)
    return x[..., 0] if vector else x


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """jax.scipy.linalg.cholesky: the upper (default) or lower Cholesky factor; only that
    triangle of `a` is read."""
    (a,) = _inexact(a)
    L = _dec.cholesky(a if lower else jnp.conj(_mT(a)), symmetrize_input=False)
    return L if lower else jnp.conj(_mT(L))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """jax.scipy.linalg.cho_factor: (factor, lower) for cho_solve."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """jax.scipy.linalg.cho_solve: x with A x = b from A's Cholesky factor."""
    c, lower = c_and_lower
    c, b = _inexact(c, b)

    def solve1(c, b):
        b = _dec.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
        return _dec.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=lower,
                                     conjugate_a=lower)
    return _batched_solve(solve1, c, b)


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
    """jax.scipy.linalg.solve_triangular: x with op(a) x = b; trans 0/'N', 1/'T', 2/'C'."""
    if trans == 0 or trans == "N":
        transpose_a, conjugate_a = False, False
    elif trans == 1 or trans == "T":
        transpose_a, conjugate_a = True, False
    elif trans == 2 or trans == "C":
        transpose_a, conjugate_a = True, True
    else:
        raise ValueError(f"Invalid 'trans' value {trans}")
    a, b = _inexact(a, b)
    return _batched_solve(
        lambda a, b: _dec.triangular_solve(a, b, left_side=True, lower=lower,
                                           transpose_a=transpose_a, conjugate_a=conjugate_a,
                                           unit_diagonal=unit_diagonal), a, b)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """jax.scipy.linalg.solve: x with a x = b; assume_a='pos' uses the Cholesky factor of
    a's `lower` (or upper) triangle, the rest LU."""
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
    if assume_a != "pos":
        return _jnp_linalg.solve(a, b)
    a, b = _inexact(a, b)
    return cho_solve(cho_factor(a, lower=lower), b)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """jax.scipy.linalg.lu_factor: (lu, pivots) for lu_solve."""
    (a,) = _inexact(a)
    lu_, pivots, _ = _dec.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv: tuple, b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """jax.scipy.linalg.lu_solve: x with a x = b (trans 0), a^T x = b (1) or a^H x = b (2)
    from lu_factor's result."""
    lu_, pivots = lu_and_piv
    lu_, b = _inexact(lu_, b)
    m = get_aval(lu_).shape[-2]
    perm = _dec.lu_pivots_to_permutation(pivots, m)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")

    def solve1(lu_, b):
        p = jnp.broadcast_to(perm, get_aval(lu_).shape[:-1])
        if trans == 0:
            x = _dec.take_rows(b, p)
            x = _dec.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
            return _dec.triangular_solve(lu_, x, left_side=True, lower=False)
        conj = trans == 2
        x = _dec.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                  conjugate_a=conj)
        x = _dec.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                                  transpose_a=True, conjugate_a=conj)
        return _dec.take_rows(x, jnp.argsort(p, axis=-1).astype(np.int32))
    return _batched_solve(solve1, lu_, b)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> tuple:
    """jax.scipy.linalg.lu: (p, l, u) with a = p l u, or (p l, u) with permute_l."""
    (a,) = _inexact(a)
    lu_, _, permutation = _dec.lu(a)
    dtype = get_aval(a).dtype
    m, n = get_aval(a).shape[-2:]
    p = jnp.real(jnp.array(permutation[..., None, :] == jnp.arange(m)[:, None], dtype=dtype))
    k = min(m, n)
    l_ = jnp.tril(lu_, -1)[..., :, :k] + jnp.eye(m, k, dtype=dtype)
    u = jnp.triu(lu_)[..., :k, :]
    if permute_l:
        return jnp.matmul(p, l_, precision=lax.Precision.HIGHEST), u
    return p, l_, u


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple:
    """jax.scipy.linalg.qr: (q, r) in mode 'full' or 'economic'; (r,) in mode 'r'. With
    pivoting, the column permutation p (int32, a[..., :, p] = q r) is appended: (q, r, p),
    or (r, p) in mode 'r'."""
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact(a)
    q, r, *p = _dec.qr(a, pivoting=bool(pivoting), full_matrices=full_matrices)
    return (r, *p) if mode == "r" else (q, r, *p)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """jax.scipy.linalg.svd: (u, s, vh), or s without compute_uv."""
    (a,) = _inexact(a)
    return _dec.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:  # noqa: A002
    """jax.scipy.linalg.eigh: (w, v) of a Hermitian matrix (w ascending), or w alone."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (a,) = _inexact(a)
    v, w = _dec.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def schur(a: Any, output: str = "real") -> tuple:
    """jax.scipy.linalg.schur: (T, Z) with a = Z T Z^H; output='complex' gives the complex
    (triangular) form of a real matrix."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    a = jnp.asarray(a)
    if output == "complex":
        a = a.astype(_dec.complex_dtype(get_aval(a).dtype))
    t, z = _dec.schur(a)
    return t, z


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """jax.scipy.linalg.hessenberg: the upper Hessenberg form H of a (and, with calc_q, the
    unitary Q with a = Q H Q^H)."""
    a = jnp.asarray(a)
    shape = get_aval(a).shape
    n = shape[-1]
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    a_out, taus = _dec.hessenberg(a)
    h = jnp.triu(a_out, -1)
    if not calc_q:
        return h
    q = _dec.householder_product(a_out[..., 1:, :-1], taus)
    dtype = get_aval(a_out).dtype
    batch = shape[:-2]
    top = jnp.concatenate([jnp.ones(batch + (1, 1), dtype), jnp.zeros(batch + (1, n - 1), dtype)],
                          axis=-1)
    bottom = jnp.concatenate([jnp.zeros(batch + (n - 1, 1), dtype), q], axis=-1)
    return h, jnp.concatenate([top, bottom], axis=-2)


def _sqrtm_triu(T: Any) -> Any:
    """The upper-triangular square root U (U @ U == T) of an upper-triangular T, column by
    column (each entry from the ones left of and below it), as JAX."""
    diag = jnp.sqrt(jnp.diagonal(T))
    n = get_aval(diag).shape[0]
    ks = jnp.arange(n)

    def column(j, U):
        def row(step, U):
            i = j - 1 - step
            between = (ks > i) & (ks < j)
            s = jnp.sum(jnp.where(between, U[i, :] * U[:, j], 0))
            value = jnp.where(T[i, j] == s, 0, (T[i, j] - s) / (diag[i] + diag[j]))
            return U.at[i, j].set(value)
        return lax.fori_loop(0, j, row, U)
    return lax.fori_loop(0, n, column, jnp.diag(diag))


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """jax.scipy.linalg.sqrtm: the principal matrix square root (complex), through the complex
    Schur form: Z sqrt(T) Z^H."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    A = jnp.asarray(A)
    shape = get_aval(A).shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"sqrtm expects a square matrix, got shape {shape}")
    T, Z = schur(A, output="complex")
    root = _sqrtm_triu(T)
    return jnp.matmul(jnp.matmul(Z, root, precision=lax.Precision.HIGHEST), jnp.conj(Z.T),
                      precision=lax.Precision.HIGHEST)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """jax.scipy.linalg.inv: jnp.linalg.inv."""
    return _jnp_linalg.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """jax.scipy.linalg.det: jnp.linalg.det."""
    return _jnp_linalg.det(a)


def block_diag(*arrs: Any) -> Any:
    """jax.scipy.linalg.block_diag: the arrays (at most 2-D) along the diagonal of a matrix."""
    if len(arrs) == 0:
        arrs = (jnp.zeros((1, 0)),)
    check_arraylike("block_diag", *arrs)
    arrs = tuple(promote_dtypes(*[jnp.asarray(a) for a in arrs]))
    bad = [i for i, a in enumerate(arrs) if get_aval(a).ndim > 2]
    if bad:
        raise ValueError(f"Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                         f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
    mats = [jnp.atleast_2d(a) for a in arrs]
    dtype = get_aval(mats[0]).dtype
    total = sum(get_aval(a).shape[1] for a in mats)
    padded, col = [], 0
    for a in mats:
        cols = get_aval(a).shape[1]
        padded.append(lax.pad(a, np.array(0, dtype), ((0, 0, 0), (col, total - cols - col, 0))))
        col += cols
    return jnp.concatenate(padded, axis=0)


def hilbert(n: int) -> Any:
    """jax.scipy.linalg.hilbert: the n x n Hilbert matrix 1 / (i + j + 1)."""
    a = lax.broadcasted_iota(jnp.zeros(()).dtype, (n, 1), 0)
    return 1 / (a + a.T + 1)


def toeplitz(c: Any, r: Any = None) -> Any:
    """jax.scipy.linalg.toeplitz: the matrix with first column c and first row r (r[0] is
    ignored); r defaults to conj(c)."""
    if r is None:
        check_arraylike("toeplitz", c)
        r = jnp.conjugate(jnp.asarray(c))
    else:
        check_arraylike("toeplitz", c, r)
    c, r = jnp.atleast_1d(jnp.asarray(c)), jnp.atleast_1d(jnp.asarray(r))
    c, r = promote_dtypes(c, r)
    m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
    if m == 0 or n == 0:
        return jnp.empty(get_aval(c).shape[:-1] + (m, n), get_aval(c).dtype)
    # element [i, j] is c[i - j] on and below the diagonal, r[j - i] above it
    elems = jnp.concatenate((jnp.flip(r[..., 1:], -1), c), axis=-1)  # r[n-1..1], c[0..m-1]
    idx = (n - 1) + jnp.arange(m)[:, None] - jnp.arange(n)[None, :]
    return elems[..., idx]


# --- expm: Pade approximants with scaling and squaring (JAX's constants) ---------------------

def _dot(a: Any, b: Any) -> Any:
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _pade(b: tuple, A: Any, powers: int) -> tuple:
    """(U, V) of the [m/m] Pade approximant with coefficients b (m < 13)."""
    ident = jnp.eye(*get_aval(A).shape, dtype=get_aval(A).dtype)
    A2 = _dot(A, A)
    pw = [ident, A2]
    for _ in range(powers - 1):
        pw.append(_dot(pw[-1], A2))
    odd = sum(b[2 * i + 1] * p for i, p in enumerate(pw))
    even = sum(b[2 * i] * p for i, p in enumerate(pw))
    return _dot(A, odd), even


def _pade3(A):
    return _pade((120., 60., 12., 1.), A, 1)


def _pade5(A):
    return _pade((30240., 15120., 3360., 420., 30., 1.), A, 2)


def _pade7(A):
    return _pade((17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.), A, 3)


def _pade9(A):
    return _pade((17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160.,
                  110880., 3960., 90., 1.), A, 4)


def _pade13(A):
    b = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.)
    ident = jnp.eye(*get_aval(A).shape, dtype=get_aval(A).dtype)
    A2 = _dot(A, A)
    A4 = _dot(A2, A2)
    A6 = _dot(A4, A2)
    U = _dot(A, _dot(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 +
             b[3] * A2 + b[1] * ident)
    V = _dot(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + \
        b[0] * ident
    return U, V


def _expm_2d(A: Any, upper_triangular: bool, max_squarings: int) -> Any:
    dtype = get_aval(A).dtype
    A_L1 = _jnp_linalg.norm(A, 1)
    if dtype in (np.float64, np.complex128):
        maxnorm = 5.371920351148152
        conds = [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                 2.097847961257068e+000]
        branches = [_pade3, _pade5, _pade7, _pade9, _pade13]
    elif dtype in (np.float32, np.complex64):
        maxnorm = 3.925724783138660
        conds = [4.258730016922831e-001, 1.880152677804762e+000]
        branches = [_pade3, _pade5, _pade7]
    else:
        raise TypeError(f"A.dtype={dtype} is not supported.")
    n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(A_L1 / maxnorm)))
    A = A / (2 ** n_squarings).astype(dtype)
    idx = jnp.digitize(A_L1, jnp.array(conds, dtype=get_aval(A_L1).dtype))
    U, V = lax.switch(idx, branches, A)
    P, Q = U + V, -U + V

    def compute(args):
        P, Q = args
        R = solve_triangular(Q, P) if upper_triangular else _jnp_linalg.solve(Q, P)

        def square(c, i):
            return lax.cond(i < n_squarings, lambda x: _dot(x, x), lambda x: x, c), None
        R, _ = lax.scan(square, R, jnp.arange(max_squarings, dtype=get_aval(n_squarings).dtype))
        return R

    return lax.cond(n_squarings > max_squarings, lambda args: jnp.full_like(args[0], np.nan),
                    compute, (P, Q))


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """jax.scipy.linalg.expm: the matrix exponential (Pade approximant of degree chosen by the
    1-norm, with scaling and squaring); NaN if more than max_squarings squarings are needed.
    Differentiable (its derivative is the Frechet derivative, see expm_frechet)."""
    (A,) = _inexact(A)
    shape = get_aval(A).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
    fn = lambda A: _expm_2d(A, upper_triangular, max_squarings)  # noqa: E731
    for _ in shape[:-2]:
        fn = vmap(fn)
    return fn(A)


def expm_frechet(A: Any, E: Any, *, method: str | None = None,
                 compute_expm: bool = True) -> Any:
    """jax.scipy.linalg.expm_frechet: the Frechet derivative of expm at A in direction E (and
    expm(A) with compute_expm)."""
    A, E = jnp.asarray(A), jnp.asarray(E)
    a_shape, e_shape = get_aval(A).shape, get_aval(E).shape
    if len(a_shape) < 2 or a_shape[-2] != a_shape[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={a_shape}")
    if len(e_shape) < 2 or e_shape[-2] != e_shape[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={e_shape}")
    if a_shape != e_shape:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={a_shape} "
                         f"E.shape={e_shape}")
    expm_A, frechet = jvp(lambda A: expm(A), (A,), (E,))
    return (expm_A, frechet) if compute_expm else frechet


def _polar_2d(a: Any, side: str, method: str) -> tuple[Any, Any]:
    m, n = a.shape
    if method == "qdwh" and ((m < n and side == "right") or (m >= n and side == "left")):
        raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where "
                                  f"side='right' and m >= n side='left', got {a.shape} with "
                                  f"side={side!r}")
    u, s, vh = svd(a, full_matrices=False)
    s = s.astype(u.dtype)
    unitary = u @ vh
    if side == "right":
        return unitary, (vh.T.conj() * s[None, :]) @ vh
    return unitary, (u * s[None, :]) @ u.T.conj()


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
    """The polar decomposition a = u p (side 'right') or p u ('left'): u with orthonormal
    columns or rows, p hermitian positive semi-definite. Both of JAX's methods are computed
    from the SVD here (QDWH's iteration converges to the same factors; eps and
    max_iterations, its knobs, change nothing)."""
    arr = jnp.asarray(a)
    if arr.ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ["right", "left"]:
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    arr, = promote_dtypes_inexact(arr)
    sig = "(m,n)->(m,n),(n,n)" if side == "right" else "(m,n)->(m,n),(m,m)"
    return jnp.vectorize(lambda x: _polar_2d(x, side, method), signature=sig)(arr)


from ._special_matrices import (  # noqa: E402,F401
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel,
    helmert, invhilbert, invpascal, leslie, pascal)
from ._matrix_equations import funm, rsf2csf, solve_sylvester  # noqa: E402,F401
from ._tridiagonal import eigh_tridiagonal  # noqa: E402,F401
from ._qr_multiply import qr_multiply  # noqa: E402,F401
