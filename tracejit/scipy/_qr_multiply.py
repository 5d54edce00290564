"""jax.scipy.linalg.qr_multiply (user-facing layer): Q c or c Q from geqrf's (with pivoting,
geqp3's) reflectors via lax.linalg.ormqr, without forming Q; all lower natively under jit."""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp
from ..lax import decompositions as _dec
from ..numpy._util import promote_dtypes_inexact


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple:
    """jax.scipy.linalg.qr_multiply: with a = Q R (a (..., M, N), K = min(M, N)), mode
    'left' returns (Q @ c, R) for c (..., K, P) and 'right' (c @ Q, R) for c (..., P, M), Q
    cut to K columns; conjugate uses conj(Q). A 1-D c is a column (left) or row (right).
    With pivoting, a[..., :, p] = Q R and p (int32) is appended: (out, R, p)."""
    del overwrite_a, overwrite_c  # no buffers to reuse
    a, c = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(c))
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} "
                         f"rows (expected {k}).")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} "
                         f"columns (expected {m}).")
    batch = jnp.broadcast_shapes(a.shape[:-2], c.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    c = jnp.broadcast_to(c, batch + c.shape[-2:])
    p = ()
    if pivoting:  # geqp3's pivots are 1-based; every column free (jpvt zero)
        r, jpvt, taus = _dec.geqp3(a, jnp.zeros(a.shape[:-2] + (n,), dtype=jnp.int32))
        p = (jpvt - 1,)
    else:
        r, taus = _dec.geqrf(a)
    if m > n and mode == "left":
        # Q is M x M in ormqr: rows past K of c meet Q's dropped columns, so pad them with 0
        pad = jnp.zeros(c.shape[:-2] + (m - k,) + c.shape[-1:], dtype=c.dtype)
        c = jnp.concatenate([c, pad], axis=-2)
    if conjugate:
        # conj(Q) c = (c^T Q^H)^T: transposing c swaps the side Q multiplies from
        c = jnp.swapaxes(c, -1, -2)
    out = _dec.ormqr(r, taus, c, left=(mode == "left") != conjugate, transpose=conjugate)
    if conjugate:
        out = jnp.swapaxes(out, -1, -2)
    if mode == "right":
        out = out[..., :k]
    if onedim:
        out = out.ravel()
    return (out, jnp.triu(r[..., :k, :]), *p)
