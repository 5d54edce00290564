"""The FFT primitive (`lax.fft`, JAX's FftType FFT/IFFT/RFFT/IRFFT over the trailing
`fft_lengths` axes) with all its rules; its native lowering (our own mixed-radix and Bluestein
FFT emitted as LLVM IR) lives in backend/llvm/fft.py."""
from __future__ import annotations

import enum
import math
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.rules import def_linear, moveaxis
from ..core.trace import get_aval
from ._base import check_operand
from .elementwise import conj, convert_element_type, mul
from .shape import broadcast_in_dim


class FftType(enum.IntEnum):
    """Which FFT operation to perform (JAX's values)."""

    FFT = 0
    "Forward complex-to-complex FFT."
    IFFT = 1
    "Inverse complex-to-complex FFT."
    RFFT = 2
    "Forward real-to-complex FFT."
    IRFFT = 3
    "Inverse real-to-complex FFT."


_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
          "irfft": FftType.IRFFT}


def _complex_of(dtype: np.dtype) -> np.dtype:
    return dtypes.complex128 if dtype in (dtypes.float64, dtypes.complex128) else dtypes.complex64


def _real_of(dtype: np.dtype) -> np.dtype:
    return dtypes.float64 if dtype == dtypes.complex128 else dtypes.float32


def _fft_abstract(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple) -> ShapedArray:
    k = len(fft_lengths)
    if k > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {fft_lengths}.")
    if fft_type == FftType.RFFT:
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if x.shape[-k:] != fft_lengths:
            raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {fft_lengths}")
        shape = x.shape[:-k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        return ShapedArray(shape, _complex_of(x.dtype))
    if x.dtype.kind != "c":
        name = "IRFFT" if fft_type == FftType.IRFFT else "FFT"
        raise ValueError(f"{name} input must be complex64 or complex128, got {x.dtype}")
    if fft_type == FftType.IRFFT:
        if x.shape[-k:-1] != fft_lengths[:-1]:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"all except the last fft_length, got fft_lengths={fft_lengths}")
        if x.shape[-1] != fft_lengths[-1] // 2 + 1:  # (XLA refuses it when lowering)
            raise ValueError(f"IRFFT requires innermost dimension to be compatible with "
                             f"fft_length[-1]/2+1. Got: {x.shape[-1]} but fft_length is "
                             f"{fft_lengths[-1]}.")
        return ShapedArray(x.shape[:-k] + fft_lengths, _real_of(x.dtype))
    if x.shape[-k:] != fft_lengths:
        raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


def _fft_impl(x: np.ndarray, *, fft_type: FftType, fft_lengths: tuple) -> np.ndarray:
    """NumPy's pocketfft as the reference (the interpreter's rule, not the native path)."""
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out_aval = _fft_abstract(ShapedArray(x.shape, x.dtype), fft_type=fft_type,
                             fft_lengths=fft_lengths)
    if x.size == 0 or 0 in out_aval.shape:  # (pocketfft refuses empty transforms)
        return np.zeros(out_aval.shape, out_aval.dtype)
    if fft_type == FftType.FFT:
        out = np.fft.fftn(x, axes=axes)
    elif fft_type == FftType.IFFT:
        out = np.fft.ifftn(x, axes=axes)
    elif fft_type == FftType.RFFT:
        out = np.fft.rfftn(x, axes=axes)
    else:
        out = np.fft.irfftn(x, s=fft_lengths, axes=axes)
    return out.astype(out_aval.dtype)


def _hermitian_mask(n: int, m: int, dtype: np.dtype) -> np.ndarray:
    """Weights of the m stored RFFT bins of a length-n transform: 1 for DC (and Nyquist when n
    is even), 2 for the bins that stand for a conjugate pair."""
    mask = np.full(m, 2.0, dtype)
    mask[0] = 1
    if n % 2 == 0:
        mask[-1] = 1
    return mask


def _times_last_axis(x: Any, weights: np.ndarray) -> Any:
    """x scaled by a vector along its last axis."""
    aval = get_aval(x)
    w = broadcast_in_dim(weights.astype(aval.dtype), aval.shape, (aval.ndim - 1,))
    return mul(x, w)


def _fft_transpose(ct: Any, x: Any, *, fft_type: FftType, fft_lengths: tuple) -> list:
    n, size = fft_lengths[-1], math.prod(fft_lengths)
    if fft_type == FftType.RFFT:
        # the cotangent's bins stand for conjugate pairs: halve those before the inverse
        m = get_aval(ct).shape[-1]
        real = _real_of(get_aval(ct).dtype)
        ct = _times_last_axis(conj(ct), 1 / _hermitian_mask(n, m, real))
        out = fft_p.bind(ct, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)
        return [_times_last_axis(out, np.full(n, size, real))]
    if fft_type == FftType.IRFFT:
        y = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
        m = get_aval(y).shape[-1]
        real = _real_of(get_aval(y).dtype)
        # JAX's convention for complex cotangents: the conjugate
        return [conj(_times_last_axis(y, _hermitian_mask(n, m, real) / size))]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_batch(vals, dims, *, fft_type: FftType, fft_lengths: tuple):
    (x,), (d,) = vals, dims
    return fft_p.bind(moveaxis(x, d, 0), fft_type=fft_type, fft_lengths=fft_lengths), 0


fft_p = Primitive("fft")
fft_p.def_abstract_eval(_fft_abstract)
fft_p.def_impl(_fft_impl)
def_linear(fft_p, _fft_transpose)
fft_p.def_batch(_fft_batch)


def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]):
    """lax.fft: the FFT of kind `fft_type` over the trailing len(fft_lengths) axes of x.
    RFFT takes real input (integers become floats); the others complex (real input is
    converted). IFFT and IRFFT include the 1/n scaling."""
    if isinstance(fft_type, str):
        if fft_type.lower() not in _NAMES:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        fft_type = _NAMES[fft_type.lower()]
    elif not isinstance(fft_type, FftType):
        raise TypeError(f"Unknown FFT type value '{fft_type}'")
    check_operand(x, "lax.fft")
    dtype = get_aval(x).dtype
    if fft_type == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        x = convert_element_type(x, dtypes.to_inexact(dtype))
    else:
        x = convert_element_type(x, _complex_of(dtypes.to_inexact(dtype)))
    fft_lengths = tuple(int(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


__all__ = ["fft", "FftType"]
