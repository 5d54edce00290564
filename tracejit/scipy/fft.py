"""`jax.scipy.fft`: the type-2 discrete cosine transform and its inverse, in one and n
dimensions (numpyro's DCT transform uses them). tracejit has no FFT primitive yet, so each
axis's transform is a product with its N x N cosine matrix (built once per length in float64,
O(N^2) work): the same values as JAX's FFT-based transform up to rounding."""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from .. import numpy as jnp
from ..numpy._util import promote_args_inexact


@functools.lru_cache(maxsize=64)
def _dct2_matrix(n: int, norm: str | None, inverse: bool) -> np.ndarray:
    """DCT-II over length n as a matrix acting on the last axis (rows: outputs), or its
    inverse. Unnormalized: y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / 2n), SciPy's definition."""
    k = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    cos = np.cos(np.pi * k * (2 * j + 1) / (2 * n))  # [k, j]
    if norm == "ortho":  # orthonormal: scale row 0 by sqrt(1/4n), the rest by sqrt(1/2n)
        scale = np.full((n, 1), np.sqrt(1 / (2 * n)))
        scale[0] = np.sqrt(1 / (4 * n))
        forward = 2 * cos * scale
        return forward.T if inverse else forward
    if inverse:  # x[j] = (y[0] + 2 sum_{k>=1} y[k] cos(...)) / 2n
        weights = np.full((n, 1), 2.0)
        weights[0] = 1.0
        return (weights * cos).T / (2 * n)
    return 2 * cos


def _check(name: str, type: int, norm: str | None) -> None:
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented")


def _resize(x: Any, n: int | None, axis: int) -> Any:
    """x cut or zero-padded to length n along axis (SciPy's `n`)."""
    if n is None or n == x.shape[axis]:
        return x
    if n < 1:
        raise ValueError(f"jax.scipy.fft: invalid number of data points ({n}) specified")
    if n < x.shape[axis]:
        return jnp.take(x, jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - x.shape[axis])
    return jnp.pad(x, pad)


def _along(x: Any, axis: int, norm: str | None, inverse: bool) -> Any:
    x = jnp.moveaxis(x, axis, -1)
    m = jnp.asarray(_dct2_matrix(x.shape[-1], None if norm == "backward" else norm, inverse),
                    dtype=x.dtype)
    return jnp.moveaxis(jnp.matmul(x, m.T), -1, axis)


def _transform(name: str, x: Any, type: int, n: int | None, axis: int, norm: str | None,
               inverse: bool) -> Any:
    _check(name, type, norm)
    x, = promote_args_inexact(name, x)
    if jnp.iscomplexobj(x):
        return _complex(_transform(name, x.real, type, n, axis, norm, inverse),
                           _transform(name, x.imag, type, n, axis, norm, inverse))
    axis = axis % max(x.ndim, 1)
    return _along(_resize(x, n, axis), axis, norm, inverse)


def _complex(re: Any, im: Any) -> Any:
    return re + 1j * im


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None) -> Any:
    """The type-2 discrete cosine transform of x along `axis` (norm None/'backward' or
    'ortho'), as scipy.fft.dct."""
    return _transform("dct", x, type, n, axis, norm, inverse=False)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None) -> Any:
    """The inverse of the type-2 DCT along `axis`, as scipy.fft.idct."""
    return _transform("idct", x, type, n, axis, norm, inverse=True)


def _n_axes(name: str, x: Any, s: Sequence[int] | None, axes: Sequence[int] | None):
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = list(axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"jax.scipy.fft.{name}: shape and axes have different lengths")
    return axes, [None] * len(axes) if s is None else list(s)


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The type-2 DCT over several axes (all by default), as scipy.fft.dctn."""
    _check("dctn", type, norm)
    x = jnp.asarray(x)
    for axis, n in zip(*_n_axes("dctn", x, s, axes)):
        x = dct(x, type, n, axis, norm)
    return x


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The inverse of dctn, as scipy.fft.idctn."""
    _check("idctn", type, norm)
    x = jnp.asarray(x)
    for axis, n in zip(*_n_axes("idctn", x, s, axes)):
        x = idct(x, type, n, axis, norm)
    return x


__all__ = ["dct", "dctn", "idct", "idctn"]
