"""`rng_bit_generator` (XLA's RngBitGenerator: THREE_FRY and PHILOX, bit-identical to JAX on
CPU, where DEFAULT is PHILOX) and `rng_uniform`. The bits are computed by `_generate`, written
in 32-bit lax operations and the threefry2x32 / philox4x32 hashes (so it runs without x64): the
impl evaluates it eagerly, and it is the primitive's composite, which the compiler expands
(compiler/lowerings.py), so its counters, hash and bits fuse as random.bits' do."""
from __future__ import annotations

import enum
import functools
import math
import operator
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.batching import move_to_front
from ..core.rules import axis_size
from ..core.trace import get_aval
from .elementwise import (add, bitwise_or, convert_element_type, lt, shift_left,
                          shift_right_logical)
from .random_bits import philox4x32_p, threefry2x32_p
from .shape import concatenate, full, iota, reshape, slice_in_dim, squeeze, stack

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of rng_bit_generator (JAX's values)."""
    RNG_DEFAULT = 0  # the platform's default: PHILOX on CPU
    RNG_THREE_FRY = 1  # threefry2x32
    RNG_PHILOX = 2  # philox4x32, 10 rounds

    def __str__(self) -> str:
        return self.name


# --- 64- and 128-bit counters as uint32 words, low word first ---------------------------------

def _u32(v: int) -> Any:
    return full((), v, _U32)


def _add_carry(a: Any, b: Any) -> tuple[Any, Any]:
    s = add(a, b)
    return s, convert_element_type(lt(s, a), _U32)


def _add64(lo: Any, hi: Any, n: Any) -> tuple[Any, Any]:
    """(lo, hi) + n for a uint32 n."""
    lo, carry = _add_carry(lo, n)
    return lo, add(hi, carry)


def _combine64(lo: Any, hi: Any) -> Any:
    return bitwise_or(convert_element_type(lo, _U64),
                      shift_left(convert_element_type(hi, _U64), full((), 32, _U64)))


def _index(n: int) -> Any:
    if n >= 2 ** 32:
        raise ValueError(f"rng_bit_generator: {n} values need 64-bit counters; at most 2**32 "
                         "per call are supported")
    return iota(_U32, n)


# --- THREE_FRY ----------------------------------------------------------------------------------

def _split_dim(shape: tuple[int, ...]) -> int:
    """XLA's choice of the dimension whose halves the two threefry words fill: the first even
    one, else the first largest."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i))


def _threefry(key: list, shape: tuple[int, ...], wide: bool) -> tuple[Any, list]:
    k0, k1, s_lo, s_hi = key
    if wide:  # one 64-bit value per pair of words, counters over the whole shape
        n = math.prod(shape)
        lo, hi = _add64(s_lo, s_hi, _index(n))
        y0, y1 = threefry2x32_p.bind(k0, k1, lo, hi)
        bits = reshape(_combine64(y0, y1), shape)
    else:  # each word of the pair fills one half of the split dimension, interleaved
        split = _split_dim(shape) if shape else 0
        dims = shape or (1,)
        half = (dims[split] + 1) // 2
        n = math.prod(dims) // dims[split] * half
        lo, hi = _add64(s_lo, s_hi, _index(n))
        y0, y1 = threefry2x32_p.bind(k0, k1, lo, hi)
        pair_shape = dims[:split] + (half, 1) + dims[split + 1:]
        both = concatenate([reshape(y0, pair_shape), reshape(y1, pair_shape)], split + 1)
        both = reshape(both, dims[:split] + (2 * half,) + dims[split + 1:])
        bits = slice_in_dim(both, 0, dims[split], axis=split)
        bits = reshape(bits, shape)
    new_lo, new_hi = _add64(s_lo, s_hi, _u32(n))
    return bits, [k0, k1, new_lo, new_hi]


# --- PHILOX -------------------------------------------------------------------------------------

def _philox(key: list, shape: tuple[int, ...], wide: bool) -> tuple[Any, list]:
    # the 128-bit counter is (state word, key word) read as (low, high), as XLA's expander
    # does for a two-word state; the key is the first word
    k0, k1, s_lo, s_hi = key
    n = math.prod(shape)
    blocks = -(-(2 * n if wide else n) // 4)
    w0, c0 = _add_carry(s_lo, _index(blocks))
    w1, c1 = _add_carry(s_hi, c0)
    w2, c2 = _add_carry(k0, c1)
    w3 = add(k1, c2)
    words = philox4x32_p.bind(k0, k1, w0, w1, w2, w3)
    if wide:
        values = [_combine64(words[0], words[1]), _combine64(words[2], words[3])]
    else:
        values = words
    flat = reshape(stack(values, axis=1), (blocks * len(values),))
    bits = reshape(slice_in_dim(flat, 0, n), shape)
    new_lo, new_hi = _add64(s_lo, s_hi, _u32(blocks))
    return bits, [k0, k1, new_lo, new_hi]


def _generate(key: Any, *, shape: tuple[int, ...], dtype: np.dtype,
              algorithm: RandomAlgorithm) -> list:
    """(new key, bits) by XLA's algorithms, in uint32 lax operations."""
    aval = get_aval(key)
    if aval.dtype == _U64:
        k64 = [squeeze(slice_in_dim(key, i, i + 1), (0,)) for i in range(2)]
        words = []
        for k in k64:
            words += [convert_element_type(k, _U32),
                      convert_element_type(shift_right_logical(k, full((), 32, _U64)), _U32)]
    else:
        words = [squeeze(slice_in_dim(key, i, i + 1), (0,)) for i in range(4)]
    wide = dtype.itemsize == 8
    make = _threefry if algorithm == RandomAlgorithm.RNG_THREE_FRY else _philox
    bits, new = make(words, shape, wide)
    if dtype.itemsize < 4:  # XLA truncates 32-bit values
        bits = convert_element_type(bits, dtype)
    if aval.dtype == _U64:
        new_key = stack([_combine64(new[0], new[1]), _combine64(new[2], new[3])])
    else:
        new_key = stack(new)
    return [new_key, bits]


def _rbg_abstract(key, *, shape, dtype, algorithm, out_sharding=None):
    if not ((key.shape == (4,) and key.dtype == _U32) or (key.shape == (2,)
                                                          and key.dtype == _U64)):
        raise TypeError(f"rng_bit_generator: the key must be uint32[4] (or uint64[2]), got "
                        f"{key.str_short()}")
    return [ShapedArray(key.shape, key.dtype), ShapedArray(shape, dtype)]


def _rbg_impl(key, **params):
    return [np.asarray(v) for v in _generate(key, **params)]


def _rbg_batch(vals, dims, *, shape, **params):
    """JAX's rule, kept for its bits: the first key draws all the rows (bits of shape
    (batch, *shape)); the other keys come back unchanged."""
    keys, = move_to_front(vals, dims)
    if not get_aval(keys).shape[0]:  # (JAX's rule indexes the first key)
        raise IndexError("index is out of bounds for axis 0 with size 0")
    new_key, bits = rng_bit_generator_p.bind(squeeze(slice_in_dim(keys, 0, 1), (0,)),
                                             shape=(axis_size(vals, dims), *shape), **params)
    rest = slice_in_dim(keys, 1, None)
    return [concatenate([reshape(new_key, (1, *get_aval(new_key).shape)), rest], 0),
            bits], [0, 0]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
rng_bit_generator_p.def_abstract_eval(_rbg_abstract)
rng_bit_generator_p.def_impl(_rbg_impl)
rng_bit_generator_p.def_composite(_generate)
rng_bit_generator_p.def_not_differentiable()
rng_bit_generator_p.def_batch(_rbg_batch)


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """Stateless random bits: (new_key, bits of `shape` and unsigned `dtype`) from a uint32[4]
    key, by XLA's THREE_FRY or PHILOX (DEFAULT: PHILOX, as JAX on CPU), bit for bit."""
    shape = tuple(operator.index(d) for d in shape)
    dtype = dtypes.check_user_dtype(dtype)
    if np.dtype(dtype) not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    algorithm = RandomAlgorithm(algorithm)
    if algorithm == RandomAlgorithm.RNG_DEFAULT:
        algorithm = RandomAlgorithm.RNG_PHILOX
    key = key if hasattr(key, "dtype") and not isinstance(key, np.ndarray) else \
        np.asarray(key)
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=np.dtype(dtype),
                                          algorithm=algorithm))


# --- rng_uniform: XLA's stateful generator ------------------------------------------------------
# XLA keeps its state inside the runtime, so its numbers cannot be reproduced outside it; here
# the state is one process-wide NumPy generator, advanced by every call (eager or compiled: the
# native code calls back to it), so calls differ from each other as in JAX. Made on the first
# draw: NumPy's random package is ~7 ms of `import tracejit` that programs without one never use.


@functools.cache
def _uniform_state() -> np.random.Generator:
    return np.random.Generator(np.random.Philox(0))


def _rng_uniform_abstract(a, b, *, shape):
    if a.dtype != b.dtype or a.shape != () or b.shape != ():
        raise TypeError(f"rng_uniform requires scalar bounds of one dtype, got {a.str_short()} "
                        f"and {b.str_short()}")
    if not (dtypes.is_float(a.dtype) or dtypes.is_int(a.dtype)):
        raise TypeError(f"rng_uniform does not accept dtype {a.dtype}")
    return ShapedArray(shape, a.dtype)


def _rng_uniform_impl(a, b, *, shape):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        u = _uniform_state().random(shape)
        return np.asarray(a + (b - a) * u, a.dtype)
    return _uniform_state().integers(a, b, size=shape, dtype=a.dtype, endpoint=False)


def _no_rule(kind: str):
    def rule(*args, **params):
        raise NotImplementedError(f"{kind} rule for 'rng_uniform' not implemented")
    return rule


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract)
rng_uniform_p.def_impl(_rng_uniform_impl)
rng_uniform_p.effectful = True  # (two calls are two draws: never merged, folded or hoisted)
rng_uniform_p.def_jvp(_no_rule("Differentiation"))  # JAX's errors
rng_uniform_p.def_batch(_no_rule("Batching"))


def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
    """Uniform values in [a, b) of a's dtype from a stateful generator (as XLA's RngUniform;
    not JAX's numbers, which depend on XLA's internal state); use jax.random instead."""
    shape = tuple(operator.index(d) for d in shape)
    a = a if hasattr(a, "dtype") else np.asarray(a, dtypes.default_float() if isinstance(
        a, float) else dtypes.default_int())
    b = b if hasattr(b, "dtype") else np.asarray(b, get_aval(a).dtype)
    return rng_uniform_p.bind(a, b, shape=shape)


__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_uniform"]
