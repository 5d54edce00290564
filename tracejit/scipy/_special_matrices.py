"""jax.scipy.linalg's special matrices (hankel, circulant, leslie, companion, fiedler,
fiedler_companion, convolution_matrix, pascal, invpascal, invhilbert, helmert, hadamard,
dft), as JAX defines them (leading dimensions batch where JAX's do), in jax.numpy."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ..lax import lenient as lax
from .. import numpy as jnp
from ..core import dtypes
from ..numpy._util import promote_args_inexact


def _hankel(c: Any, r: Any) -> Any:
    m, n = c.shape[0], r.shape[0]
    v = jnp.concatenate((c, r[1:])) if n else c
    return v[jnp.arange(m)[:, None] + jnp.arange(n)[None, :]]


def hankel(c: Any, r: Any = None) -> Any:
    """The Hankel matrix with first column c and last row r (zeros by default)."""
    c = jnp.asarray(c)
    r = jnp.zeros_like(c) if r is None else jnp.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    dtype = jnp.result_type(c, r)
    c, r = c.astype(dtype), r.astype(dtype)
    if c.ndim < r.ndim:
        c = jnp.expand_dims(c, tuple(range(r.ndim - c.ndim)))
    elif r.ndim < c.ndim:
        r = jnp.expand_dims(r, tuple(range(c.ndim - r.ndim)))
    return jnp.vectorize(_hankel, signature="(m),(n)->(m,n)")(c, r)


def circulant(c: Any) -> Any:
    """The circulant matrix whose first column is c."""
    def one(c):
        n = c.shape[0]
        return c[(jnp.arange(n)[:, None] - jnp.arange(n)[None, :]) % n]
    return jnp.vectorize(one, signature="(n)->(n,n)")(jnp.atleast_1d(jnp.asarray(c)))


def leslie(f: Any, s: Any) -> Any:
    """The Leslie matrix: fecundities f in the first row, survival rates s below the
    diagonal."""
    f, s = jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s))
    if f.shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                         f"{f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                         "must be one less than the length of f; got f shape "
                         f"{f.shape} and s shape {s.shape}.")
    dtype = jnp.result_type(f, s)
    return jnp.vectorize(lambda f, s: jnp.diag(s, k=-1).at[0].set(f),
                         signature="(n),(m)->(n,n)")(f.astype(dtype), s.astype(dtype))


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients a (highest degree first)."""
    a, = promote_args_inexact("companion", a)
    a = jnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape "
                         f"{a.shape}.")

    def one(a):
        m = a.shape[0] - 1
        return jnp.eye(m, m, k=-1, dtype=a.dtype).at[0].set(-a[1:] / a[0])
    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def fiedler(a: Any) -> Any:
    """The symmetric Fiedler matrix |a_i - a_j|."""
    a = jnp.atleast_1d(jnp.asarray(a))
    return jnp.abs(a[..., None] - a[..., None, :])


def _fiedler_companion(a: Any) -> Any:
    n = a.shape[0] - 1
    if n == 0:
        return jnp.zeros((0, 0), a.dtype)
    a = a / a[0]
    if n == 1:
        return -a[1:].reshape(1, 1)
    i, j = jnp.arange(n)[:, None], jnp.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    one, zero = jnp.ones((), a.dtype), jnp.zeros((), a.dtype)
    conditions = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even,
                  (j == i + 2) & even, (j == i - 1) & even & (i >= 2),
                  (j == i - 2) & odd & (i >= 3)]
    choices = [-a[1], one, -a[jnp.minimum(i + 2, n)], one, -a[jnp.minimum(i + 1, n)], one]
    return jnp.select(conditions, choices, default=zero)


def fiedler_companion(a: Any) -> Any:
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients a."""
    a, = promote_args_inexact("fiedler_companion", a)
    a = jnp.atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    return jnp.vectorize(_fiedler_companion, signature="(n)->(m,m)")(a)


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The Toeplitz matrix whose product with a length-n vector v is convolve(a, v, mode)."""
    from .linalg import toeplitz
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = jnp.pad(a, pad), jnp.pad(jnp.flip(a, axis=-1), pad)
    length = m + n - 1
    trim = min(n, m) - 1
    begin, end = {"full": (0, 0), "valid": (trim, trim),
                  "same": (trim // 2, trim - trim // 2)}[mode]
    col = lax.slice_in_dim(az, begin, length - end, axis=-1)
    row = lax.slice_in_dim(raz, length - n - begin, length - begin, axis=-1)
    return toeplitz(col, row)


def _binom(n: Any, k: Any) -> Any:
    return lax.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def _check_kind(kind: str | None, article: str) -> str:
    kind = "symmetric" if kind is None else kind
    valid = ["symmetric", "lower", "upper"]
    if kind not in valid:
        raise ValueError(f"Expected kind to be {article} of: {valid}; got {kind}")
    return kind


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix of binomial coefficients: 'symmetric', 'lower' or 'upper'."""
    kind = _check_kind(kind, "on")  # (JAX's message)
    a = jnp.arange(n, dtype=np.float32)
    lower = _binom(a[:, None], a[None, :])
    if kind == "lower":
        return lower
    return lower.T if kind == "upper" else jnp.dot(lower, lower.T)


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of pascal(n, kind)."""
    kind = _check_kind(kind, "one")
    a = jnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    lower = (-1.0) ** (i - j) * _binom(i, j)
    if kind == "lower":
        return lower
    return lower.T if kind == "upper" else jnp.dot(lower.T, lower)


def invhilbert(n: int) -> Any:
    """The inverse of the n x n Hilbert matrix."""
    from .special import comb
    a = jnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    s = i + j
    return ((-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
            * comb(s, i) ** 2)


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix ((n - 1) x n; n x n with the first row when full)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i, j = jnp.arange(n - 1)[:, None], jnp.arange(n)[None, :]
    k = (i + 1).astype(dtypes.default_float())
    denom = jnp.sqrt(k * (k + 1))
    h = jnp.where(j <= i, 1.0 / denom, jnp.where(j == i + 1, -k / denom, jnp.zeros_like(denom)))
    if full:
        h = jnp.concatenate([jnp.full((1, n), 1.0 / math.sqrt(n), dtype=h.dtype), h], axis=0)
    return h


def hadamard(n: int, dtype: Any = int) -> Any:
    """The Sylvester-Hadamard matrix of order n (a power of 2)."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = jnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        h = jnp.block([[h, h], [h, -h]])
    return h


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The n-point discrete Fourier transform matrix (scale None, 'sqrtn' or 'n')."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = dtypes.default_complex()
    else:
        dtype = dtypes.check_user_dtype(dtype)
        if not jnp.issubdtype(dtype, np.complexfloating):
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = jnp.arange(n, dtype=dtype)
    omegas = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        return omegas / jnp.sqrt(n)
    return omegas / n if scale == "n" else omegas
