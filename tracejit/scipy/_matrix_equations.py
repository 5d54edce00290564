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
