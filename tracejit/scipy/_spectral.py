"""jax.scipy.signal's spectral analysis (user-facing layer): detrend, the windowed FFT of
overlapping segments behind stft/csd/welch, and istft's overlap-add, on jnp.fft (the native
lax.fft). Semantics, defaults and errors follow JAX's (which follow SciPy's)."""
from __future__ import annotations

import operator
import warnings
from typing import Any, Callable

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..lax._base import canonicalize_axis
from ..numpy._util import check_arraylike, promote_dtypes_inexact


def detrend(data: Any, axis: int = -1, type: str = "linear", bp: Any = 0,  # noqa: A002
            overwrite_data: None = None) -> Any:
    """data minus its mean ('constant') or minus a least-squares line on each piece between
    the breakpoints `bp` ('linear'), along `axis`."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (x,) = promote_dtypes_inexact(jnp.asarray(data))
    if type == "constant":
        return x - x.mean(axis, keepdims=True)
    n = x.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    x = jnp.moveaxis(x, axis, -1)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = x[..., lo:hi]
        count = hi - lo
        if count < 2:  # a line through one point fits it exactly
            pieces.append(jnp.zeros_like(seg))
            continue
        # the least-squares line in closed form: centred abscissae make the fit separable
        t = np.arange(count, dtype=np.float64)
        t = (t - t.mean()).astype(seg.dtype if seg.dtype.kind != "c" else
                                  np.finfo(seg.dtype).dtype)
        mean = seg.mean(-1, keepdims=True)
        slope = (seg * t).sum(-1, keepdims=True) / float(np.sum(t.astype(np.float64) ** 2))
        pieces.append(seg - mean - slope * t)
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)


def _window(window: Any, nperseg: int | None, input_length: int, dtype: Any) -> tuple[Any, int]:
    """The window array and the segment length (SciPy's rules for a named or given window)."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                          f"nperseg={input_length}")
            n = input_length
        return jnp.asarray(_named_window(window, n), dtype=dtype), n
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if n != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


def _named_window(window: Any, n: int) -> np.ndarray:
    if window == "hann":  # periodic Hann, SciPy's default, without SciPy
        return np.ones(1) if n == 1 else np.sin(np.linspace(0, np.pi, n, endpoint=False)) ** 2
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return get_window(window, n)


def _segments(x: Any, nperseg: int, noverlap: int) -> Any:
    """x's overlapping segments along its last axis: [..., segments, nperseg]."""
    if nperseg == 1 and noverlap == 0:
        return x[..., None]
    starts = np.arange(0, x.shape[-1] - nperseg + 1, nperseg - noverlap)
    return x[..., starts[:, None] + np.arange(nperseg)[None, :]]


def _odd_ext(x: Any, n: int) -> Any:
    """x extended by n samples at each end, point-reflected about its end values."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1:-1], -1)
    return jnp.concatenate([left, x, right], axis=-1)


def _extend(boundary: str | None, x: Any, n: int) -> Any:
    pad = [(0, 0)] * (x.ndim - 1) + [(n, n)]
    if boundary is None:
        return x
    if boundary == "odd":
        return _odd_ext(x, n)
    mode = {"even": "reflect", "constant": "edge", "zeros": "constant"}[boundary]
    return jnp.pad(x, pad, mode)


def _detrend_func(detrend_type: Any) -> Callable:
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    if callable(detrend_type):
        return detrend_type
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _spectral(x: Any, y: Any, fs: Any, window: Any, nperseg: int | None, noverlap: int | None,
              nfft: int | None, detrend_type: Any, return_onesided: bool, scaling: str,
              axis: int, mode: str, boundary: str | None = None, padded: bool = False):
    """(frequencies, segment times, per-segment spectra) of x (or the cross spectra of x and
    y), the segments on the last axis of the result."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in ("even", "odd", "constant", "zeros", None):
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         "['even', 'odd', 'constant', 'zeros', None]")
    axis = canonicalize_axis(operator.index(axis), np.ndim(x))
    if y is None:
        check_arraylike("spectral_helper", x)
        (x,) = promote_dtypes_inexact(x)
        outer = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        check_arraylike("spectral_helper", x, y)
        x, y = promote_dtypes_inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer = jnp.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                         y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = dtypes.complex128 if x.dtype in (dtypes.float64, dtypes.complex128) else \
        dtypes.complex64
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _window(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if y is None and x.size == 0:
        zeros = jnp.zeros(x.shape, freq_dtype)
        return zeros, zeros, jnp.zeros(x.shape, result_dtype)
    if y is not None and (x.size == 0 or y.size == 0):
        shape = outer[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer[axis:]
        zeros = jnp.zeros(shape, freq_dtype)
        return zeros, zeros, jnp.zeros(shape, result_dtype)
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1) if y.ndim > 1 else y
        if x.shape[-1] != y.shape[-1]:  # the shorter one is zero-padded
            longest = max(x.shape[-1], y.shape[-1])
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, longest - x.shape[-1])])
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, longest - y.shape[-1])])
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    x = _extend(boundary, x, nperseg // 2)
    if y is not None:
        y = _extend(boundary, y, nperseg // 2)
    if padded:
        extra = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
        if y is not None:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, extra)])
    detrend_func = _detrend_func(detrend_type)
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    onesided = return_onesided
    if onesided and (jnp.iscomplexobj(x) or jnp.iscomplexobj(y)):
        onesided = False
        warnings.warn("Input data is complex, switching to return_onesided=False")
    freqs = (jnp.fft.rfftfreq if onesided else jnp.fft.fftfreq)(nfft, 1 / fs, dtype=freq_dtype)

    def spectra(v):
        v = v.astype(win.dtype) if v.dtype.kind == "i" else v
        segs = detrend_func(_segments(v, nperseg, noverlap))
        if jnp.iscomplexobj(win) and not jnp.iscomplexobj(segs):
            segs = segs.astype(result_dtype)
        segs = win * segs
        return jnp.fft.rfft(segs.real, n=nfft) if onesided else jnp.fft.fft(segs, n=nfft)

    result = spectra(x)
    if y is not None:
        result = jnp.conjugate(result) * spectra(y)
    elif mode == "psd":
        result = jnp.conjugate(result) * result
    result = result * scale.astype(result_dtype)
    if onesided and mode == "psd":  # the negative frequencies' power folded onto the positive
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].mul(2)
    time = jnp.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """The short-time Fourier transform: (frequencies, segment times, Zxx[..., freq, time])."""
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """The cross power spectral density of x and y by Welch's method: (frequencies, Pxy)."""
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = 1 + np.sum(1 / (np.arange(2.0, pxy.shape[-1], 2) + 1) -
                                  1 / np.arange(2.0, pxy.shape[-1], 2))
                if jnp.iscomplexobj(pxy):
                    pxy = (jnp.median(jnp.real(pxy), axis=-1) +
                           1j * jnp.median(jnp.imag(pxy), axis=-1))
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / np.asarray(bias, dtype=np.finfo(pxy.dtype).dtype)
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """The power spectral density of x by Welch's method: (frequencies, Pxx)."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, pxx.real


def _overlap_add(frames: Any, step: int) -> Any:
    """Sum of the frames [..., n, length] placed `step` apart: [..., step (n - 1) + length]."""
    *batch, n, length = frames.shape
    total = step * (n - 1) + length
    # frame j lands at [j step, j step + length): scatter-add through static index arrays
    index = (np.arange(n)[:, None] * step + np.arange(length)[None, :]).reshape(-1)
    flat = frames.reshape(tuple(batch) + (n * length,))
    out = jnp.zeros(tuple(batch) + (total,), frames.dtype)
    return out.at[..., index].add(flat)


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,  # noqa: N803
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2) -> tuple[Any, Any]:
    """The inverse short-time Fourier transform by weighted overlap-add: (times, x)."""
    check_arraylike("istft", Zxx)
    z = jnp.asarray(Zxx)
    if z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonicalize_axis(freq_axis, z.ndim)
    time_axis = canonicalize_axis(time_axis, z.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    z = z.astype(dtypes.complex128 if z.dtype in (dtypes.float64, dtypes.complex128)
                 else dtypes.complex64)
    n_default = 2 * (z.shape[freq_axis] - 1) if input_onesided else z.shape[freq_axis]
    nperseg = int(nperseg or n_default)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    nfft = int(nfft)
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = int(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    if time_axis != z.ndim - 1 or freq_axis != z.ndim - 2:
        outer = tuple(i for i in range(z.ndim) if i not in (time_axis, freq_axis))
        z = jnp.transpose(z, outer + (freq_axis, time_axis))
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    segs = inverse(z, axis=-2, n=nfft)[..., :nperseg, :]
    if isinstance(window, (str, tuple)):
        win = jnp.asarray(_named_window(window, nperseg), dtype=segs.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
    segs = segs * win.sum()  # undoes stft's 'spectrum' scaling
    col = win.reshape((1,) * (segs.ndim - 2) + (nperseg, 1))
    x = _overlap_add(jnp.swapaxes(segs * col, -2, -1), step)
    frames = segs.shape[-1]
    norm = _overlap_add(jnp.broadcast_to((win * win)[None, :], (frames, nperseg)), step)
    if boundary:
        half = nperseg // 2
        x, norm = x[..., half:-half], norm[..., half:-half]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != z.ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = jnp.moveaxis(x, -1, time_axis)
    times = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return times, x


__all__ = ["detrend", "stft", "istft", "csd", "welch"]
