"""jax.scipy.linalg.eigh_tridiagonal (user-facing layer): eigenvalues of a symmetric
tridiagonal matrix by Sturm-sequence bisection in lax loops, so it runs natively under jit."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..lax import decompositions as _dec

_SUPPORTED = (np.float32, np.float64, np.complex64, np.complex128)


def _sturm_counts(alpha: Any, beta_sq: Any, pivmin: Any, perturb0: Any, x: Any) -> Any:
    """For each shift x, how many eigenvalues of T lie below it (the negative pivots of the
    LDL^T factorisation of T - x I); tiny pivots are pushed to -pivmin to avoid overflow."""
    q = alpha[0] - x
    count = (q < 0).astype(np.int32)
    q = jnp.where(alpha[0] == x, perturb0, q)

    def step(i, qc):
        q, count = qc
        q = alpha[i] - beta_sq[i - 1] / q - x
        small = q <= pivmin
        return jnp.where(small, jnp.minimum(q, -pivmin), q), count + small.astype(np.int32)

    return lax.fori_loop(1, alpha.shape[0], step, (q, count))[1]


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None,
                     tol: float | None = None, key: Any = None) -> Any:
    """jax.scipy.linalg.eigh_tridiagonal: ascending eigenvalues of the symmetric (Hermitian)
    tridiagonal matrix with diagonal d (N,) and off-diagonal e (N-1,); select 'a' (all) or
    'i' (indices select_range[0]..select_range[1]); tol: absolute bisection tolerance.
    With eigvals_only=False also the eigenvectors (N, k), which tracejit takes from a dense
    eigh of T (JAX uses randomised inverse iteration; key is accepted and unused)."""
    alpha, beta = jnp.asarray(d), jnp.asarray(e)
    if alpha.dtype != beta.dtype:
        raise TypeError("diagonal and off-diagonal values must have same dtype, "
                        f"got {alpha.dtype} and {beta.dtype}")
    if alpha.dtype not in _SUPPORTED:
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        "jax.scipy.linalg.eigh_tridiagonal, got "
                        f"{alpha.dtype} and {beta.dtype}")
    n = alpha.shape[0]
    if n <= 1:
        vals = jnp.real(alpha)
        return vals if eigvals_only else (vals, jnp.eye(n, dtype=alpha.dtype))
    if select == "a":
        targets = jnp.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    else:
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")

    diag = jnp.real(alpha)
    beta_sq = jnp.real(beta * jnp.conj(beta))
    beta_abs = jnp.sqrt(beta_sq)
    # Gershgorin bounds on the spectrum start every bisection
    row_sum = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    est_max, est_min = jnp.max(diag + row_sum), jnp.min(diag - row_sum)
    t_norm = jnp.maximum(jnp.abs(est_min), jnp.abs(est_max))
    finfo = np.finfo(diag.dtype)
    one = np.ones([], dtype=diag.dtype)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
    perturb0 = jnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(tol, abs_tol)
    # widen the interval a little past Gershgorin, as LAPACK's xSTEBZ does
    slack = n * 2.1 * finfo.eps * t_norm
    shape = targets.shape
    lower = jnp.broadcast_to(est_min - slack - 4.2 * pivmin, shape)
    upper = jnp.broadcast_to(est_max + slack + 2.1 * pivmin, shape)
    max_it = finfo.nmant + 1  # one halving per mantissa bit reaches eps * |T|

    def unfinished(state):
        i, lower, upper = state
        return (i < max_it) & (jnp.max(upper - lower) > abs_tol)

    def halve(state):
        i, lower, upper = state
        mid = 0.5 * (lower + upper)
        below = _sturm_counts(diag, beta_sq, pivmin, perturb0, mid) <= targets
        return i + 1, jnp.where(below, mid, lower), jnp.where(below, upper, mid)

    _, lower, upper = lax.while_loop(unfinished, halve, (0, lower, upper))
    vals = 0.5 * (lower + upper)
    if eigvals_only:
        return vals
    # T's superdiagonal is e and its subdiagonal conj(e), as in JAX
    t = (jnp.diag(alpha.astype(beta.dtype)) + jnp.diag(beta, 1) + jnp.diag(jnp.conj(beta), -1))
    vecs, _ = _dec.eigh(t)  # lax.linalg.eigh returns (vectors, values)
    return vals, jnp.take(vecs, targets, axis=1)
