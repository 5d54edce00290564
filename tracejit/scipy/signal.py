"""jax.scipy.signal: direct convolution and correlation of N-d arrays (user-facing layer).

The direct method is lax.conv_general_dilated (native loops, or im2col + gemm for large
kernels) of the input with the flipped kernel; `fftconvolve` and method="fft" go through jnp.fft
(the native lax.fft)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis
from ..numpy._util import check_arraylike, promote_dtypes_inexact
from ..transforms.api import vmap
from ._spectral import csd, detrend, istft, stft, welch  # noqa: F401

_MODES = ("full", "same", "valid")


def _windows_dot(x: Any, kernel: Any, padding: list[tuple[int, int]],
                 precision: Any = None) -> Any:
    """The valid cross-correlation of x, zero-padded by `padding` (negative pads crop), with
    kernel: lax.conv_general_dilated with one batch element and one feature."""
    out = lax.conv_general_dilated(x[None, None], kernel[None, None], (1,) * x.ndim, padding,
                                   precision=precision)
    return out[0, 0]


def _convolve_nd(in1: Any, in2: Any, mode: str, precision: Any = None) -> Any:
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    in1, in2 = promote_dtypes_inexact(in1, in2)
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    shape_o = in2.shape                  # "same" centres on in1 as given
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(s - 1 - (s_o - 1) // 2, s - s_o + (s_o - 1) // 2)
                   for s, s_o in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    return _windows_dot(in1, jnp.flip(in2), padding, precision)


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """The N-d convolution of in1 and in2 ("full", "same" or "valid"), by the direct method."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("direct", "auto"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """The N-d cross-correlation: convolve(in1, flip(conj(in2)))."""
    return convolve(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, method=method,
                    precision=precision)


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: Any) -> None:
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-d convolution (zero fill only, as in JAX)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-d cross-correlation, with SciPy's orientation of the output when in2 is the
    larger input."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    if mode == "same":
        return jnp.flip(_convolve_nd(jnp.flip(in1), jnp.conj(in2), mode))
    if mode == "valid":
        if swap and not same_shape:
            return _convolve_nd(jnp.flip(in2), jnp.conj(in1), mode)
        return jnp.flip(_convolve_nd(jnp.flip(in1), jnp.conj(in2), mode))
    if swap:
        return jnp.conj(_convolve_nd(jnp.flip(in2), jnp.conj(in1), mode))
    return jnp.flip(_convolve_nd(jnp.flip(in1), jnp.conj(in2), mode))


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """The N-d convolution of in1 and in2 through the FFT ("full", "same" or "valid"); `axes`
    names the convolved axes, the others are mapped (they must agree in size)."""
    check_arraylike("fftconvolve", in1, in2)
    in1, in2 = promote_dtypes_inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    conv = functools.partial(_fftconvolve_unbatched, mode=mode)
    if axes is None:
        return conv(in1, in2)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(canonicalize_axis(ax, in1.ndim) for ax in axes)
    mapped = set(range(in1.ndim)) - set(axes)
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                         f"in2.shape={in2.shape} axes={axes}")
    for ax in sorted(mapped):
        conv = vmap(conv, in_axes=ax, out_axes=ax)
    return conv(in1, in2)


def _fftconvolve_unbatched(in1: Any, in2: Any, mode: str) -> Any:
    full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
        swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, One input must be at least as large as the "
                             "other in every dimension.")
        if swap:
            in1, in2 = in2, in1
    if all(s1 == 1 or s2 == 1 for s1, s2 in zip(in1.shape, in2.shape)):
        conv = in1 * in2  # (no axis longer than one on both sides: a broadcast product)
    else:
        complex_in = jnp.iscomplexobj(in1)
        fwd = jnp.fft.fftn if complex_in else jnp.fft.rfftn
        inv = jnp.fft.ifftn if complex_in else jnp.fft.irfftn
        conv = inv(fwd(in1, full_shape) * fwd(in2, full_shape), full_shape)
    if mode == "full":
        out_shape = full_shape
    elif mode == "same":
        out_shape = in1.shape
    else:
        out_shape = tuple(s1 - s2 + 1 for s1, s2 in zip(in1.shape, in2.shape))
    start = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
    return lax.dynamic_slice(conv, start, out_shape)
