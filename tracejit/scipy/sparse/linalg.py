"""jax.scipy.sparse.linalg: Krylov solvers (cg, bicgstab, gmres) for an operator given as a
function or matrix, on arrays or pytrees (user-facing layer). Each is a lax.while_loop inside
lax.custom_linear_solve, so its derivatives are further solves, as in JAX."""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from ...lax import lenient as lax
from ... import numpy as jnp
from ...core.array import Array
from ...core.trace import Tracer
from ...flatten_util import ravel_pytree
from ...tree_util import tree_leaves, tree_map, tree_structure
from .. import linalg as jsp_linalg

_dot = functools.partial(jnp.dot, precision=lax.Precision.HIGHEST)


def _vdot_real(x: Any, y: Any) -> Any:
    """Re <x, y> (the cross terms of complex inputs left out, as JAX's solvers do)."""
    out = jnp.vdot(x.real, y.real, precision=lax.Precision.HIGHEST)
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
        out = out + jnp.vdot(x.imag, y.imag, precision=lax.Precision.HIGHEST)
    return out


def _vdot_real_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(_vdot_real, x, y)))


def _vdot_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(
        functools.partial(jnp.vdot, precision=lax.Precision.HIGHEST), x, y)))


def _mul(scalar: Any, tree: Any) -> Any:
    return tree_map(lambda v: scalar * v, tree)


def _add(a: Any, b: Any) -> Any:
    return tree_map(operator.add, a, b)


def _sub(a: Any, b: Any) -> Any:
    return tree_map(operator.sub, a, b)


def _identity(x: Any) -> Any:
    return x


def _normalize_matvec(f: Any) -> Callable:
    """A matvec function from a function, a square matrix or an object with __matmul__."""
    if callable(f):
        return f
    if isinstance(f, (np.ndarray, Array, Tracer)):
        if f.ndim != 2 or f.shape[0] != f.shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{f.shape}")
        return functools.partial(_dot, f)
    if hasattr(f, "__matmul__"):
        if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{f.shape}")
        return functools.partial(operator.matmul, f)
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _shapes(tree: Any) -> list:
    return [np.shape(x) for x in tree_leaves(tree)]


def _tolerance(b: Any, tol: float, atol: float) -> Any:
    """Squared stopping threshold: ||r|| <= max(tol * ||b||, atol)."""
    return jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))


def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):
    atol2 = _tolerance(b, tol, atol)
    r0 = _sub(b, A(x0))
    p0 = M(r0)
    dtype = jnp.result_type(*tree_leaves(p0))
    gamma0 = _vdot_real_tree(r0, p0).astype(dtype)

    def cond(value):
        _, r, gamma, _, k = value
        rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body(value):
        x, r, gamma, p, k = value
        Ap = A(p)
        alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
        x = _add(x, _mul(alpha, p))
        r = _sub(r, _mul(alpha, Ap))
        z = M(r)
        gamma_next = _vdot_real_tree(r, z).astype(dtype)
        p = _add(z, _mul(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):
    atol2 = _tolerance(b, tol, atol)

    def cond(value):
        r, k = value[1], value[-1]
        return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(value):
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_next = _vdot_tree(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _vdot_tree(rhat, q)
        s = _sub(r, _mul(alpha, q))
        done = _vdot_real_tree(s, s) < atol2  # converged half way: skip the second half
        shat = M(s)
        t = A(shat)
        omega = _vdot_tree(t, s) / _vdot_tree(t, t)
        x = tree_map(functools.partial(jnp.where, done), _add(x, _mul(alpha, phat)),
                     _add(x, _add(_mul(alpha, phat), _mul(omega, shat))))
        r = tree_map(functools.partial(jnp.where, done), s, _sub(s, _mul(omega, t)))
        # breakdown codes (negative k) end the loop, as in JAX
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    r0 = _sub(b, A(x0))
    one = jnp.ones((), jnp.result_type(*tree_leaves(b)))
    return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _prepare(A, b, x0, M, maxiter):
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.asarray, x0)
    if maxiter is None:
        maxiter = 10 * sum(np.size(x) for x in tree_leaves(b))  # SciPy's default
    A = _normalize_matvec(A)
    M = _identity if M is None else _normalize_matvec(M)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError("x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs "
                         f"{_shapes(b)}")
    return A, b, x0, M, maxiter


def _isolve(solver, A, b, x0, *, tol, atol, maxiter, M, check_symmetric):
    A, b, x0, M, maxiter = _prepare(A, b, x0, M, maxiter)
    solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    real = all(not jnp.iscomplexobj(x) for x in tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=lambda A, b: solve(A, b),
                                transpose_solve=lambda A, b: solve(A, b),
                                symmetric=check_symmetric and real)
    return x, None


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Conjugate gradients for a hermitian positive definite A (a function, a matrix or an
    object with @); returns (x, None). Derivatives are implicit: another cg solve."""
    return _isolve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                   check_symmetric=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Bi-conjugate gradient stabilized for a general square A; returns (x, None)."""
    return _isolve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                   check_symmetric=False)


# --- gmres ------------------------------------------------------------------------------------
# Works on b raveled into one vector (the operator and preconditioner wrapped to match): the
# Krylov basis is then one (n, restart + 1) matrix.

def _safe_normalize(x, thresh=None):
    """x / ||x|| and ||x||; both zero where ||x|| <= thresh (default: the dtype's eps)."""
    norm = jnp.sqrt(_vdot_real(x, x))
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    use = norm > thresh
    return jnp.where(use, x / norm.astype(x.dtype), 0), jnp.where(use, norm, 0)


def _arnoldi_step(k, A, M, V, H):
    """Column k + 1 of the orthonormal Krylov basis V (classical Gram-Schmidt, repeated once
    for orthogonality) and row k of the Hessenberg matrix H; also whether the space closed."""
    v = M(A(V[:, k]))
    _, v_norm0 = _safe_normalize(v)
    h = jnp.zeros(V.shape[1], V.dtype)
    for _ in range(2):
        proj = _dot(V.T.conj(), v)
        v = v - _dot(V, proj)
        h = h + proj
    unit, v_norm1 = _safe_normalize(v, thresh=jnp.finfo(v_norm0.dtype).eps * v_norm0)
    V = V.at[:, k + 1].set(unit)
    H = H.at[k, :].set(h.at[k + 1].set(v_norm1.astype(V.dtype)))
    return V, H, v_norm1 == 0


def _gmres_restart(A, b, x0, unit_residual, residual_norm, restart, M):
    """One restart: the projection of the solution onto the Krylov space of dimension
    `restart`, by least squares on the Hessenberg matrix (normal equations, as JAX)."""
    n = b.shape[0]
    V = jnp.zeros((n, restart + 1), b.dtype).at[:, 0].set(unit_residual)
    H = jnp.eye(restart, restart + 1, dtype=b.dtype)

    def cond(carry):
        return (carry[3] < restart) & jnp.logical_not(carry[2])

    def body(carry):
        V, H, _, k = carry
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(cond, body, (V, H, False, 0))
    beta = jnp.zeros(restart + 1, b.dtype).at[0].set(residual_norm.astype(b.dtype))
    Ht = H.T
    y = jsp_linalg.solve(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
    x = x0 + _dot(V[:, :-1], y)
    unit_residual, residual_norm = _safe_normalize(M(b - A(x)))
    return x, unit_residual, residual_norm


def _gmres_solve(A, b, x0, atol, restart, maxiter, M):
    unit_residual, residual_norm = _safe_normalize(M(b - A(x0)))

    def cond(value):
        return (value[1] < maxiter) & (value[3] > atol)

    def body(value):
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = _gmres_restart(A, b, x, unit_residual,
                                                         residual_norm, restart, M)
        return x, k + 1, unit_residual, residual_norm

    return lax.while_loop(cond, body, (x0, 0, unit_residual, residual_norm))[0]


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, Any]:
    """GMRES with restarts for a general square A; returns (x, info), info -1 where x came
    out NaN and 0 otherwise (as JAX). Both of JAX's solve_methods give the least-squares
    projection of each restart; this one computes it by the batched method."""
    if solve_method not in ("incremental", "batched"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                         "or 'batched'")
    A, b, x0, M, maxiter = _prepare(A, b, x0, M, maxiter)
    size = sum(np.size(x) for x in tree_leaves(b))
    restart = min(restart, size)
    b_flat, unravel = ravel_pytree(b)
    x0_flat, _ = ravel_pytree(x0)

    def flat(op):
        return lambda v: ravel_pytree(op(unravel(v)))[0]

    b_norm = jnp.sqrt(_vdot_real(b_flat, b_flat))
    atol = jnp.maximum(tol * b_norm, atol)

    def solve(A, b):
        return unravel(_gmres_solve(flat(A), ravel_pytree(b)[0], x0_flat, atol, restart,
                                    maxiter, flat(M)))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    x_flat = ravel_pytree(x)[0]
    info = jnp.where(jnp.isnan(jnp.sqrt(_vdot_real(x_flat, x_flat))), -1, 0)
    return x, info
