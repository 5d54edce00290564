"""`jax.scipy.fft`: the type-2 discrete cosine transform and its inverse, in one and n
dimensions (numpyro's DCT transform uses them), each axis through one complex FFT of its length
(jnp.fft, the native lax.fft): O(N log N), as JAX's."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as jnp
from ..numpy._util import promote_args_inexact


def _ortho_scale(n: int) -> np.ndarray:
    """The orthonormal DCT-II's scaling of the unnormalised one: sqrt(1/4n) for bin 0,
    sqrt(1/2n) for the others."""
    scale = np.full(n, np.sqrt(1 / (2 * n)))
    scale[0] = np.sqrt(1 / (4 * n))
    return scale


def _dct2_last(x: Any, norm: str | None) -> Any:
    """DCT-II along the last axis through one complex FFT of the same length (Makhoul): the
    even samples then the odd ones reversed, transformed, turned by a quarter-bin phase."""
    n = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    cdtype = jnp.result_type(x.dtype, np.complex64)
    turn = np.exp(-0.5j * np.pi * np.arange(n) / n).astype(cdtype)
    y = 2 * jnp.real(jnp.fft.fft(v) * turn)
    return y * _ortho_scale(n).astype(x.dtype) if norm == "ortho" else y


def _idct2_last(y: Any, norm: str | None) -> Any:
    """The exact inverse of _dct2_last: the spectrum of the reordered signal is rebuilt from
    the bins k and n - k, inverse transformed, and the samples put back in order."""
    n = y.shape[-1]
    if norm == "ortho":
        y = y / _ortho_scale(n).astype(y.dtype)
    mirrored = jnp.concatenate([jnp.zeros_like(y[..., :1]), jnp.flip(y[..., 1:], -1)], axis=-1)
    cdtype = jnp.result_type(y.dtype, np.complex64)
    turn = np.exp(0.5j * np.pi * np.arange(n) / n).astype(cdtype)
    v = jnp.real(jnp.fft.ifft(turn * (y - 1j * mirrored) / 2))
    order = np.empty(n, np.int64)  # x[2j] = v[j], x[2j + 1] = v[n - 1 - j]
    order[::2] = np.arange((n + 1) // 2)
    order[1::2] = n - 1 - np.arange(n // 2)
    return v[..., order]


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
    y = _idct2_last(x, norm) if inverse else _dct2_last(x, norm)
    return jnp.moveaxis(y, -1, axis)


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
