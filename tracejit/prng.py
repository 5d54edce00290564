"""JAX's threefry PRNG, bit-exact: the `threefry2x32` hash and `iota_2x32_shape` primitives, and
the key operations (seed, split, fold_in, random bits) built from them and lax ops.

The algorithm is JAX's (see DESIGN.md, "JAX PRNG, bit-exact"); both `jax_threefry_partitionable`
modes are implemented.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import lax
from .core import dtypes
from .core.avals import ShapedArray
from .core.config import config
from .core.primitive import Primitive
from .core.trace import get_aval

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(v: np.ndarray, r: int) -> np.ndarray:
    return (v << np.uint32(r)) | (v >> np.uint32(32 - r))


def threefry2x32_numpy(k0, k1, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """20-round threefry2x32 on uint32 arrays (the reference implementation)."""
    k0, k1 = np.uint32(k0), np.uint32(k1)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0 = np.asarray(x0, np.uint32) + ks[0]
    x1 = np.asarray(x1, np.uint32) + ks[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r)
            x1 = x0 ^ x1
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + ks[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


def _threefry_abstract(k0, k1, x0, x1):
    for a in (k0, k1, x0, x1):
        if a.dtype != dtypes.uint32:
            raise TypeError(f"threefry2x32 requires uint32 arguments, got {a.dtype}")
    if k0.shape != () or k1.shape != ():
        raise TypeError("threefry2x32 key words must be scalars")
    if x0.shape != x1.shape:
        raise TypeError(f"threefry2x32 count shapes differ: {x0.shape} vs {x1.shape}")
    return [ShapedArray(x0.shape, dtypes.uint32), ShapedArray(x1.shape, dtypes.uint32)]


def _threefry_impl(k0, k1, x0, x1):
    with np.errstate(over="ignore"):
        return list(threefry2x32_numpy(k0, k1, x0, x1))


threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
threefry2x32_p.def_abstract_eval(_threefry_abstract)
threefry2x32_p.def_impl(_threefry_impl)


def _iota_2x32_impl(*, shape):
    idx = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    return [(idx >> np.uint64(32)).astype(np.uint32), (idx & np.uint64(0xFFFFFFFF)).astype(
        np.uint32)]


iota_2x32_shape_p = Primitive("iota_2x32_shape", multiple_results=True)
iota_2x32_shape_p.def_abstract_eval(
    lambda *, shape: [ShapedArray(shape, dtypes.uint32), ShapedArray(shape, dtypes.uint32)])
iota_2x32_shape_p.def_impl(_iota_2x32_impl)


def _u32(v: int):
    return np.uint32(v)


def iota_2x32_shape(shape: tuple[int, ...]):
    """(hi, lo) words of the 64-bit row-major index of every element of `shape`."""
    if not shape:
        zero = lax.convert_element_type(0, dtypes.uint32)
        return zero, zero
    return iota_2x32_shape_p.bind(shape=tuple(shape))


def key_words(key: Any):
    k0 = lax.squeeze(lax.slice_in_dim(key, 0, 1, axis=key.ndim - 1), (key.ndim - 1,))
    k1 = lax.squeeze(lax.slice_in_dim(key, 1, 2, axis=key.ndim - 1), (key.ndim - 1,))
    return k0, k1


def threefry_2x32(key: Any, count: Any):
    """JAX's `threefry_2x32(keypair, count)`: hash a uint32 array of counts (any size)."""
    k0, k1 = key_words(key)
    shape = get_aval(count).shape
    flat = lax.reshape(count, (int(np.prod(shape)),))
    n = int(np.prod(shape))
    odd = n % 2
    if odd:
        flat = lax.concatenate([flat, lax.convert_element_type(
            lax.broadcast(_u32(0), (1,)), dtypes.uint32)], 0)
    half = (n + odd) // 2
    x0 = lax.slice(flat, (0,), (half,))
    x1 = lax.slice(flat, (half,), (2 * half,))
    y0, y1 = threefry2x32_p.bind(k0, k1, x0, x1)
    out = lax.concatenate([y0, y1], 0)
    if odd:
        out = lax.slice(out, (0,), (n,))
    return lax.reshape(out, shape)


def seed(seed_value: Any):
    """PRNGKey(seed): [seed >> 32, seed & 0xFFFFFFFF] as uint32, with JAX's integer handling."""
    if isinstance(seed_value, (bool, float)) or (hasattr(seed_value, "dtype") and not
                                                 dtypes.is_int(np.dtype(seed_value.dtype))):
        raise TypeError(f"PRNG key seed must be an integer; got {seed_value!r}")
    if isinstance(seed_value, int):
        bits = 64 if config.jax_enable_x64 else 32
        wrapped = np.array(seed_value & ((1 << 64) - 1), dtype=np.uint64).astype(np.int64)
        seed_value = wrapped if bits == 64 else wrapped.astype(np.int32)
    from .numpy import asarray
    s = asarray(seed_value)
    if s.ndim:
        raise TypeError(f"PRNG key seed must be a scalar; got an array of shape {s.shape}")
    if dtypes.is_int(s.dtype) and s.dtype.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(s, lax.convert_element_type(
            32, s.dtype)), dtypes.uint32)
    else:
        hi = lax.convert_element_type(0, dtypes.uint32)
    lo = lax.convert_element_type(s, dtypes.uint32) if s.dtype.itemsize <= 4 else \
        lax.convert_element_type(lax.bitwise_and(s, lax.convert_element_type(0xFFFFFFFF, s.dtype)),
                                 dtypes.uint32)
    return lax.concatenate([lax.broadcast(hi, (1,)), lax.broadcast(lo, (1,))], 0)


def split(key: Any, shape: Sequence[int]):
    shape = tuple(shape)
    if config.jax_threefry_partitionable:
        k0, k1 = key_words(key)
        c0, c1 = iota_2x32_shape(shape)
        b0, b1 = threefry2x32_p.bind(k0, k1, c0, c1)
        return lax.concatenate([lax.expand_dims(b0, (len(shape),)),
                                lax.expand_dims(b1, (len(shape),))], len(shape))
    num = int(np.prod(shape))
    counts = lax.iota(dtypes.uint32, num * 2)
    return lax.reshape(threefry_2x32(key, counts), (*shape, 2))


def fold_in(key: Any, data: Any):
    from .numpy import asarray
    d = asarray(data)
    return threefry_2x32(key, seed(lax.convert_element_type(d, dtypes.uint32)
                                   if d.dtype.itemsize < 8 else d))


def random_bits(key: Any, bit_width: int, shape: tuple[int, ...]):
    if bit_width not in (8, 16, 32, 64):
        raise ValueError(f"bit_width must be 8, 16, 32 or 64, got {bit_width}")
    out_dtype = np.dtype(f"uint{bit_width}")
    if bit_width == 64 and not config.jax_enable_x64:
        raise TypeError("64-bit random bits need config.update('jax_enable_x64', True)")
    if config.jax_threefry_partitionable:
        k0, k1 = key_words(key)
        c0, c1 = iota_2x32_shape(shape)
        b0, b1 = threefry2x32_p.bind(k0, k1, c0, c1)
        if bit_width == 64:
            hi = lax.convert_element_type(b0, out_dtype)
            return lax.bitwise_or(lax.shift_left(hi, lax.convert_element_type(32, out_dtype)),
                                  lax.convert_element_type(b1, out_dtype))
        bits = lax.bitwise_xor(b0, b1)
        return bits if bit_width == 32 else lax.convert_element_type(bits, out_dtype)
    return _random_bits_original(key, bit_width, shape)


def _random_bits_original(key: Any, bit_width: int, shape: tuple[int, ...]):
    size = int(np.prod(shape))
    max_count = -(-bit_width * size // 32)
    nblocks, rem = divmod(max_count, 2 ** 32 - 1)
    if nblocks:
        raise NotImplementedError("more than 2**32 random words in one call")
    bits = threefry_2x32(key, lax.iota(dtypes.uint32, rem))
    out_dtype = np.dtype(f"uint{bit_width}")
    if bit_width == 64:  # first half of the words are the high halves, as in JAX
        half = max_count // 2
        hi = lax.convert_element_type(lax.slice(bits, (0,), (half,)), out_dtype)
        lo = lax.convert_element_type(lax.slice(bits, (half,), (max_count,)), out_dtype)
        words = lax.bitwise_or(lax.shift_left(hi, lax.convert_element_type(32, out_dtype)), lo)
        return lax.reshape(words, shape)
    if bit_width < 32:
        per = 32 // bit_width
        bits = lax.reshape(lax.broadcast_in_dim(bits, (max_count, per), (0,)), (max_count * per,))
        shifts = lax.convert_element_type(lax.mul(lax.iota(dtypes.uint32, per),
                                                  _u32(bit_width)), dtypes.uint32)
        shifts = lax.reshape(lax.broadcast_in_dim(shifts, (max_count, per), (1,)),
                             (max_count * per,))
        bits = lax.convert_element_type(lax.shift_right_logical(bits, shifts), out_dtype)
        bits = lax.slice(bits, (0,), (size,))
    return lax.reshape(bits, shape)
