"""`jax.numpy.fft`: NumPy's FFT interface (n/s cropping and zero padding, axis/axes, norm=) on
top of lax.fft, with JAX's dtypes and errors; frequencies and shifts."""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..lax import lenient as lax
from ..lax.fft import FftType
from . import _creation, _shape, _ufuncs
from ._util import asarray, check_arraylike

_NORMS = ("backward", "ortho", "forward")


def _norm_scale(func_name: str, norm: str | None, s: Sequence[int]) -> float | None:
    """The factor a `norm` mode applies to the lax transform's result (None: none)."""
    if norm is None or norm == "backward":
        return None
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')
    size = math.prod(s)
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return math.sqrt(size) if inverse else 1 / math.sqrt(size)
    return float(size) if inverse else 1 / size


def _fft_core(func_name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
              axes: Sequence[int] | None, norm: str | None) -> Any:
    full_name = f"jax.numpy.fft.{func_name}"
    check_arraylike(full_name, a)
    arr = asarray(a)
    if s is not None:
        s = tuple(operator.index(d) for d in s)
        if any(d <= 0 for d in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
    axes = tuple(axes)
    if len(axes) != len(set(axes)):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:  # the transformed axes become the trailing ones (lax.fft's)
        for ax in orig_axes:
            if not -arr.ndim <= ax < arr.ndim:
                raise ValueError(f"axis {ax} is out of bounds for array of dimension "
                                 f"{arr.ndim}")
        axes = tuple(range(arr.ndim - len(axes), arr.ndim))
        arr = _shape.moveaxis(arr, orig_axes, axes)
    if s is not None:
        in_s = list(arr.shape)
        for axis, d in zip(axes, s):
            in_s[axis] = d
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(d) for d in in_s)]
        arr = _shape.pad(arr, [(0, d - e) for d, e in zip(in_s, arr.shape)])
    elif fft_type == FftType.IRFFT:
        s = [arr.shape[axis] for axis in axes[:-1]]
        if axes:
            s += [max(0, 2 * (arr.shape[axes[-1]] - 1))]
    else:
        s = [arr.shape[axis] for axis in axes]
    out = _fft_nd(arr, fft_type, tuple(s))
    scale = _norm_scale(func_name, norm, s)
    if scale is not None:
        out = out * scale
    if orig_axes is not None:
        out = _shape.moveaxis(out, axes, orig_axes)
    return out


def _fft_nd(arr: Any, fft_type: FftType, s: tuple) -> Any:
    """lax.fft over the trailing len(s) axes; more than three are done as JAX does, three at a
    time (XLA's limit), so results and errors agree."""
    if len(s) <= 3:
        return lax.fft(arr, fft_type, s)
    n = 2 if len(s) == 4 else 3
    src = tuple(range(arr.ndim - len(s), arr.ndim - n))
    dst = tuple(range(arr.ndim - len(s) + n, arr.ndim))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax.fft(arr, fft_type, s[-n:])
        arr = _shape.moveaxis(arr, src, dst)
        arr = _fft_nd(arr, FftType.FFT, s[:-n])
        return _shape.moveaxis(arr, dst, src)
    arr = _shape.moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.IFFT, s[:-n])
    arr = _shape.moveaxis(arr, dst, src)
    return lax.fft(arr, fft_type, s[-n:])


def _check_1d(func_name: str, axis: Any) -> None:
    if isinstance(axis, (list, tuple)):
        full_name = f"jax.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_1d(func_name: str, fft_type: FftType, a: Any, n: int | None, axis: int,
            norm: str | None) -> Any:
    _check_1d(func_name, axis)
    return _fft_core(func_name, fft_type, a, None if n is None else [n],
                     None if axis is None else [axis], norm)


def _fft_2d(func_name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
            axes: Sequence[int], norm: str | None) -> Any:
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = "
                         f"{axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The one-dimensional discrete Fourier transform along `axis` (NumPy's fft)."""
    return _fft_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The one-dimensional inverse discrete Fourier transform (NumPy's ifft)."""
    return _fft_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The DFT of real input: the n // 2 + 1 non-negative frequency bins (NumPy's rfft)."""
    return _fft_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of rfft: a real signal of length n (default 2 (m - 1)) (NumPy's irfft)."""
    return _fft_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The DFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    _check_1d("hfft", axis)
    conj_a = _ufuncs.conj(a)
    nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
    return _fft_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of hfft: the first half of a Hermitian spectrum from a real signal."""
    _check_1d("ihfft", axis)
    arr = asarray(a)
    nn = arr.shape[axis] if n is None else n
    out = _fft_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return _ufuncs.conj(out) * (1 / nn)


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    """The n-dimensional DFT over `axes` (all by default), sizes `s` (NumPy's fftn)."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The n-dimensional inverse DFT (NumPy's ifftn)."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The n-dimensional DFT of real input, halved along the last axis (NumPy's rfftn)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    """The inverse of rfftn (NumPy's irfftn)."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    """The two-dimensional DFT over `axes` (NumPy's fft2)."""
    return _fft_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """The two-dimensional inverse DFT (NumPy's ifft2)."""
    return _fft_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """The two-dimensional DFT of real input (NumPy's rfft2)."""
    return _fft_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    """The inverse of rfft2 (NumPy's irfft2)."""
    return _fft_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _check_freq_args(name: str, n: Any, d: Any) -> None:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an n-point DFT with sample spacing d: [0, 1, ..., -1] / (d n)."""
    _check_freq_args("fftfreq", n, d)
    out_dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype)
    work = np.dtype(dtypes.finfo_of(dtypes.to_inexact(out_dtype)).dtype)
    i = _creation.arange(n, dtype=work)
    k = (i + n // 2) % n - n // 2
    return (k / asarray(d * n, dtype=work)).astype(out_dtype)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of rfft's n // 2 + 1 bins: [0, 1, ..., n // 2] / (d n)."""
    _check_freq_args("rfftfreq", n, d)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype)
    k = _creation.arange(0, n // 2 + 1, dtype=dtype)
    return k / asarray(d * n, dtype=dtype)


def _shifts(x: Any, axes: Any, sign: int) -> tuple[Any, Any]:
    if axes is None:
        return [sign * (d // 2) for d in x.shape], tuple(range(x.ndim))
    if isinstance(axes, int):
        return sign * (x.shape[axes] // 2), axes
    return [sign * (x.shape[ax] // 2) for ax in axes], axes


def fftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """x with the zero-frequency bin moved to the middle of each of `axes` (all by default)."""
    check_arraylike("fftshift", x)
    x = asarray(x)
    shift, axes = _shifts(x, axes, 1)
    return _shape.roll(x, shift, axes)


def ifftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """The inverse of fftshift."""
    check_arraylike("ifftshift", x)
    x = asarray(x)
    shift, axes = _shifts(x, axes, -1)
    return _shape.roll(x, shift, axes)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
           "fft2", "ifft2", "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
