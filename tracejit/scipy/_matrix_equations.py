"""jax.scipy.linalg matrix equations (user-facing layer): solve_sylvester, built on the lax
schur/eig/triangular_solve primitives so it runs natively under jit and maps under vmap."""
from __future__ import annotations

from typing import Any

from .. import lax
from .. import numpy as jnp
from ..core.trace import get_aval
from ..lax import decompositions as _dec
from ..numpy._util import promote_dtypes_inexact


def _complex_schur(a: Any) -> tuple[Any, Any]:
    """(T, Z) with a = Z T Z^H and T upper triangular (the complex Schur form)."""
    return _dec.schur(a.astype(_dec.complex_dtype(get_aval(a).dtype)))


def _triangular_sylvester(r: Any, t: Any, f: Any) -> Any:
    """Y with R Y + Y T = F for upper-triangular R (m, m) and T (n, n), a column at a time:
    column j solves (R + T[j, j] I) y_j = f_j - sum_{k<j} T[k, j] y_k."""
    m, n = f.shape
    eye = jnp.eye(m, dtype=r.dtype)

    def column(j, y):
        # columns >= j of y are still zero, so y @ t[:, j] sums only the solved ones
        t_j = lax.dynamic_index_in_dim(t, j, axis=1, keepdims=False)
        rhs = lax.dynamic_index_in_dim(f, j, axis=1, keepdims=True) - y @ t_j[:, None]
        shifted = r + lax.dynamic_index_in_dim(t_j, j, keepdims=False) * eye
        y_j = _dec.triangular_solve(shifted, rhs, left_side=True, lower=False)
        return lax.dynamic_update_index_in_dim(y, y_j, j, axis=1)

    return lax.fori_loop(0, n, column, jnp.zeros_like(f))


def _solve_sylvester_2d(a: Any, b: Any, c: Any, method: str, tol: float) -> Any:
    m, n = c.shape
    if method == "schur":
        # Bartels-Stewart: A = U R U^H, B = V T V^H, so R Y + Y T = U^H C V with X = U Y V^H
        r, u = _complex_schur(a)
        t, v = _complex_schur(b)
        f = u.conj().T @ c.astype(r.dtype) @ v
        x = u @ _triangular_sylvester(r, t, f) @ v.conj().T
    elif method == "eigen":
        ra, ua = jnp.linalg.eig(a)
        rb, ub = jnp.linalg.eig(b)
        f = jnp.linalg.solve(ua, c.astype(ra.dtype) @ ub)
        x = ua @ (f / (ra[:, None] + rb[None, :])) @ jnp.linalg.inv(ub)
    else:
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either '
                         f'"schur" or "eigen".')
    if not jnp.issubdtype(c.dtype, jnp.complexfloating):
        x = x.real
    # a (near-)singular equation, where eigenvalues of A and -B meet, has no stable solution
    sums = jnp.linalg.eigvals(a)[:, None] + jnp.linalg.eigvals(b)[None, :]
    return jnp.where(jnp.any(jnp.abs(sums) < tol), jnp.full_like(x, jnp.nan), x)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",
                    tol: float = 1e-8) -> Any:
    """jax.scipy.linalg.solve_sylvester: X with A X + X B = C, for A (..., m, m),
    B (..., n, n), C (..., m, n) (batch axes broadcast). method "schur" (Bartels-Stewart)
    or "eigen"; X is NaN where an eigenvalue sum of A and B lies within tol of zero."""
    A, B, C = promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                         f"B: {B.shape}\nC: {C.shape}")
    return jnp.vectorize(lambda a, b, c: _solve_sylvester_2d(a, b, c, method, tol),
                         signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


def _rsf2csf_2d(t: Any, z: Any) -> tuple[Any, Any]:
    n = t.shape[0]
    if n == 1:
        return t, z
    eps = jnp.finfo(t.dtype).eps

    def undo_block(i, tz):
        # Going up the diagonal, a 2x2 block [[a, b], [c, d]] at rows m-1..m with c != 0 is
        # split by the Givens rotation that maps (mu, c) onto (r, 0), mu = eigenvalue - d
        t, z = tz
        m = n - i
        block = lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))
        a, b, c, d = block[0, 0], block[0, 1], block[1, 0], block[1, 1]
        half = 0.5 * (a - d)
        mu = half + jnp.sqrt(half * half + b * c)  # (a + d)/2 + root - d
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(c) ** 2)
        split = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        safe_r = jnp.where(split, r, 1)
        cos = jnp.where(split, mu / safe_r, 1).astype(t.dtype)
        sin = jnp.where(split, c / safe_r, 0).astype(t.dtype)
        g = jnp.stack([jnp.stack([cos.conj(), sin.conj()]), jnp.stack([-sin, cos])])
        rows = g @ lax.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
        t = lax.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
        gh = g.conj().T
        cols = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=1) @ gh
        t = lax.dynamic_update_slice_in_dim(t, cols, m - 1, axis=1)
        zc = lax.dynamic_slice_in_dim(z, m - 1, 2, axis=1) @ gh
        z = lax.dynamic_update_slice_in_dim(z, zc, m - 1, axis=1)
        below = lax.dynamic_update_slice(t, jnp.zeros((1, 1), t.dtype), (m, m - 1))
        return below, z

    return lax.fori_loop(1, n, undo_block, (t, z))


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """jax.scipy.linalg.rsf2csf: the complex Schur form (T', Z') of a real Schur form
    (T, Z) of a = Z T Z^H, splitting T's 2x2 blocks by Givens rotations so T' is triangular;
    batch axes map."""
    del check_finite  # nothing to check under jit
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    T, Z = promote_dtypes_inexact(T, Z)
    cdtype = _dec.complex_dtype(get_aval(T).dtype)
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(
        T.astype(cdtype), Z.astype(cdtype))


def _parlett(f: Any, t: Any) -> tuple[Any, Any]:
    """Fill the upper triangle of f = func(T) from its diagonal by Parlett's recurrence
    (Golub & Van Loan 11.1.1), one superdiagonal p at a time: every entry (i, i+p) needs only
    entries on lower superdiagonals, so a whole superdiagonal is one masked, vectorized step.
    Also returns the smallest |T[j,j] - T[i,i]| divided by (the error estimate's input)."""
    n = t.shape[0]
    rows = jnp.arange(n)[:, None]
    cols = jnp.arange(n)[None, :]

    def superdiagonal(p, state):
        f, minden = state
        i = jnp.arange(n)
        valid = i + p < n
        j = jnp.minimum(i + p, n - 1)
        t_ij = t[i, j]
        f_j = jnp.take(f, j, axis=1).T  # f_j[i, k] = f[k, j_i]
        t_j = jnp.take(t, j, axis=1).T
        between = (cols > rows) & (cols < j[:, None])
        inner = jnp.sum(jnp.where(between, t * f_j - f * t_j, 0), axis=1)
        s = t_ij * (f[j, j] - f[i, i]) + inner
        den = t[j, j] - t[i, i]
        s = jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s)
        f = jnp.where((cols == rows + p) & valid[:, None], s[:, None], f)
        minden = jnp.minimum(minden, jnp.min(jnp.where(valid, jnp.abs(den), jnp.inf)))
        return f, minden

    return lax.fori_loop(1, n, superdiagonal, (f, jnp.abs(t[0, 0])))


def funm(A: Any, func: Any, disp: bool = True) -> Any:
    """jax.scipy.linalg.funm: the matrix function func(A) of a square A, from func applied to
    the eigenvalues on the complex Schur form's diagonal (func maps an array elementwise).
    The result is complex. With disp=False also returns (F, err), err estimating the
    relative error as SciPy does."""
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("expected square array_like input")
    A, = promote_dtypes_inexact(A)
    t, z = _complex_schur(A) if jnp.iscomplexobj(A) else rsf2csf(*_dec.schur(A))
    f = jnp.diag(jnp.asarray(func(jnp.diag(t))).astype(t.dtype))
    f, minden = _parlett(f, t)
    f = z @ f @ z.conj().T
    if disp:
        return f
    tol = jnp.finfo(f.dtype).eps
    minden = jnp.where(minden == 0, tol, minden)
    strict = jnp.max(jnp.sum(jnp.abs(jnp.triu(t, 1)), axis=0))  # 1-norm of T's off-diagonal
    err = jnp.where(jnp.any(jnp.isinf(f)), jnp.inf,
                    jnp.minimum(1, jnp.maximum(tol, (tol / minden) * strict)))
    return f, err
