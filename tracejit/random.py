"""tracejit.random: JAX's functional PRNG (`jax.random`), bit-identical to JAX's threefry streams.

Keys are raw uint32[2] arrays (`PRNGKey`). Samplers are built from lax ops over `prng`'s bits,
so they work eagerly, under jit, and inside loops.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import lax, prng
from .core import dtypes
from .core.avals import check_shape
from .core.trace import get_aval
from .numpy import asarray

__all__ = ["PRNGKey", "split", "fold_in", "bits", "uniform", "normal"]


def _check_key(fn: str, key: Any) -> Any:
    key = asarray(key)
    aval = get_aval(key)
    if aval.dtype != dtypes.uint32 or aval.shape[-1:] != (2,):
        raise TypeError(f"{fn} requires a PRNG key: a uint32 array of shape (2,) as made by "
                        f"jax.random.PRNGKey(seed); got {aval.str_short()} for argument `key`.")
    if aval.ndim != 1:
        raise TypeError(f"{fn} accepts a single key, but was given a key array of shape "
                        f"{aval.shape[:-1]} != (). Use jax.vmap for batching.")
    return key


def PRNGKey(seed: Any) -> Any:  # noqa: N802 - JAX's name
    """A raw uint32[2] key from an integer seed (64-bit seeds use both words under x64)."""
    return prng.seed(seed)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    key = _check_key("split", key)
    shape = (num,) if isinstance(num, (int, np.integer)) else tuple(num)
    shape = check_shape(shape, "num")
    return prng.split(key, shape)


def fold_in(key: Any, data: Any) -> Any:
    key = _check_key("fold_in", key)
    d = asarray(data)
    if not dtypes.is_int(get_aval(d).dtype):
        raise TypeError(f"fold_in data must be an integer, got {get_aval(d).str_short()}")
    return prng.fold_in(key, d)


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    key = _check_key("bits", key)
    dtype = dtypes.check_user_dtype(np.uint32 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return prng.random_bits(key, dtype.itemsize * 8, check_shape(shape))


def _float_dtype(fn: str, dtype: Any) -> np.dtype:
    dtype = dtypes.check_user_dtype(dtypes.default_float() if dtype is None else dtype)
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `{fn}` must be a float dtype, got {dtype}")
    return dtype


def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval): mantissa bits of 1.0 + random, minus 1 (JAX's)."""
    key = _check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    return _uniform(key, check_shape(shape), dtype, minval, maxval)


def _uniform(key, shape, dtype, minval, maxval):
    minval = lax.broadcast_to_rank(lax.convert_element_type(asarray(minval), dtype), len(shape))
    maxval = lax.broadcast_to_rank(lax.convert_element_type(asarray(maxval), dtype), len(shape))
    finfo = dtypes.finfo_of(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    raw = prng.random_bits(key, rng_bits, shape)
    uint = np.dtype(f"uint{nbits}")
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    one_bits = np.array(1.0, dtype).view(uint)
    float_bits = lax.bitwise_or(
        lax.shift_right_logical(raw, lax.convert_element_type(rng_bits - nmant, uint)),
        lax.convert_element_type(int(one_bits), uint))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype),
                     lax.convert_element_type(1.0, dtype))
    span, low = _bcast(lax.sub(maxval, minval), shape), _bcast(minval, shape)
    if dtype.itemsize >= 4:  # XLA's CPU backend contracts this multiply-add into one FMA
        scaled = lax.fma(floats, span, low)
    else:  # half types compute each op in float32 and round in between: no contraction
        scaled = lax.add(lax.mul(floats, span), low)
    return lax.max(_bcast(minval, shape), lax.reshape(scaled, shape))


def _bcast(x, shape):
    aval = get_aval(x)
    if aval.shape == tuple(shape) or aval.shape == ():
        return x
    from .numpy import broadcast_to
    return broadcast_to(x, shape)


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal: √2 · erf_inv(u) for u uniform on (nextafter(-1, 0), 1), as JAX."""
    key = _check_key("normal", key)
    dtype = _float_dtype("normal", dtype)
    shape = check_shape(shape)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(key, shape, dtype, lo, 1.0)
    return lax.mul(lax.convert_element_type(np.sqrt(2), dtype), lax.erf_inv(u))
