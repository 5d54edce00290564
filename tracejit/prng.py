"""JAX's PRNG implementations, bit-exact: threefry2x32 (the `threefry2x32` hash and
`iota_2x32_shape` primitives), rbg and unsafe_rbg (lax.rng_bit_generator's bits, threefry or
rng_bit_generator for split and fold_in), each a `PRNGImpl` of key operations (seed, split,
fold_in, random bits) built from lax ops, and typed key arrays (`PRNGKeyArray`, dtype
`key<fry>`, `key<rbg>`, `key<urbg>`).

Key operations take raw key data of shape (*batch, *key_shape) (uint32) and work on every key of
the batch at once, as JAX's vmapped key primitives do. Both `jax_threefry_partitionable` modes
are implemented; the algorithm is summarised in DESIGN.md ("JAX PRNG, bit-exact").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .lax import lenient as lax
from .core import dtypes, key_reuse
from .core.array import BaseArray
from .core.config import config
from .core.pytree import register_pytree_node
from .core.avals import AbstractValue
from .core.trace import Tracer, get_aval, pytype_aval_mappings
from .lax.random_bits import iota_2x32_shape_p, threefry2x32_p
from .lax.rng_bit_generator import rng_bit_generator

_U32 = np.dtype(np.uint32)


# --- hashing counters ---------------------------------------------------------------------------

def _u32(v: Any):
    return lax.convert_element_type(v, _U32)


def iota_2x32_shape(shape: tuple[int, ...]):
    """(hi, lo) words of the 64-bit row-major index of every element of `shape`."""
    if not shape:
        return _u32(0), _u32(0)
    return iota_2x32_shape_p.bind(shape=tuple(shape))


def key_words(keys: Any):
    """The two uint32 words of raw keys (*batch, 2), each of shape batch."""
    last = get_aval(keys).ndim - 1
    return [lax.squeeze(lax.slice_in_dim(keys, i, i + 1, axis=last), (last,)) for i in (0, 1)]


def _hash(keys: Any, c0: Any, c1: Any):
    """threefry2x32 of every key of the batch with counter words of shape `count_shape`:
    results have shape (*batch, *count_shape)."""
    k0, k1 = key_words(keys)
    batch, count_shape = get_aval(k0).shape, get_aval(c0).shape
    if batch and count_shape:
        shape = (*batch, *count_shape)
        nb = len(batch)
        k0, k1 = (lax.broadcast_in_dim(k, shape, tuple(range(nb))) for k in (k0, k1))
        c0, c1 = (lax.broadcast_in_dim(c, shape, tuple(range(nb, len(shape)))) for c in (c0, c1))
    return threefry2x32_p.bind(k0, k1, c0, c1)


def threefry_2x32(keys: Any, count: Any):
    """JAX's `threefry_2x32(keypair, count)`: hash a uint32 array of counts (any size) whose
    halves are the two counter words; the result has shape (*batch, *count.shape)."""
    shape = get_aval(count).shape
    n = math.prod(shape)
    flat = lax.reshape(count, (n,))
    odd = n % 2
    if odd:
        flat = lax.concatenate([flat, lax.broadcast(_u32(0), (1,))], 0)
    half = (n + odd) // 2
    y0, y1 = _hash(keys, lax.slice(flat, (0,), (half,)), lax.slice(flat, (half,), (2 * half,)))
    last = get_aval(y0).ndim - 1
    out = lax.concatenate([y0, y1], last)
    batch = get_aval(keys).shape[:-1]
    if odd:
        out = lax.slice_in_dim(out, 0, n, axis=last)
    return lax.reshape(out, (*batch, *shape))


# --- key operations on raw key data ------------------------------------------------------------

def threefry_seed(seed_value: Any):
    """Raw key from an integer seed: [seed >> 32, seed & 0xFFFFFFFF] as uint32. Python ints
    (bools too, as in JAX) must fit int64; under x32 they are then truncated to int32."""
    from .numpy import asarray
    if isinstance(seed_value, int):
        if not -2 ** 63 <= seed_value < 2 ** 63:
            raise OverflowError("Python int too large to convert to C long")
        wide = np.int64(seed_value)
        seed_value = wide if config.jax_enable_x64 else wide.astype(np.int32)
    s = asarray(seed_value)
    aval = get_aval(s)
    if aval.ndim:
        raise TypeError(f"PRNG key seed must be a scalar; got {seed_value!r}.")
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"PRNG key seed must be an integer; got {seed_value!r}")
    if aval.dtype.itemsize == 8:
        hi = _u32(lax.shift_right_logical(s, lax.convert_element_type(32, aval.dtype)))
        lo = _u32(lax.bitwise_and(s, lax.convert_element_type(0xFFFFFFFF, aval.dtype)))
    else:
        hi, lo = _u32(0), _u32(s)
    return lax.concatenate([lax.broadcast(hi, (1,)), lax.broadcast(lo, (1,))], 0)


def threefry_split(keys: Any, shape: Sequence[int]):
    """New keys of shape (*batch, *shape, 2). Partitionable: key i is fold_in(key, i)'s hash of
    the 64-bit counter i; original: the hash of iota(2 * num), paired up."""
    shape = tuple(shape)
    batch = get_aval(keys).shape[:-1]
    if config.jax_threefry_partitionable:
        b0, b1 = _hash(keys, *iota_2x32_shape(shape))
        axis = len(batch) + len(shape)
        return lax.concatenate([lax.expand_dims(b0, (axis,)), lax.expand_dims(b1, (axis,))],
                               axis)
    num = math.prod(shape)
    return lax.reshape(threefry_2x32(keys, lax.iota(_U32, num * 2)), (*batch, *shape, 2))


def threefry_fold_in(keys: Any, data: Any):
    """Hash of the counts [0, data] (data already uint32, rank 0)."""
    return threefry_2x32(keys, lax.concatenate([lax.broadcast(_u32(0), (1,)),
                                                lax.broadcast(data, (1,))], 0))


def threefry_random_bits(keys: Any, bit_width: int, shape: tuple[int, ...]):
    """Uniform bits of shape (*batch, *shape) as uint{bit_width}."""
    _check_bit_width(bit_width)
    out_dtype = np.dtype(f"uint{bit_width}")
    if config.jax_threefry_partitionable:
        if math.prod(shape) > 2 ** 64:
            raise NotImplementedError("random bits array of size exceeding 2 ** 64")
        b0, b1 = _hash(keys, *iota_2x32_shape(shape))
        if bit_width == 64:
            hi = lax.convert_element_type(b0, out_dtype)
            return lax.bitwise_or(lax.shift_left(hi, lax.convert_element_type(32, out_dtype)),
                                  lax.convert_element_type(b1, out_dtype))
        bits = lax.bitwise_xor(b0, b1)
        return bits if bit_width == 32 else lax.convert_element_type(bits, out_dtype)
    return _random_bits_original(keys, bit_width, shape, out_dtype)


def _random_bits_original(keys, bit_width, shape, out_dtype):
    batch = get_aval(keys).shape[:-1]
    size = math.prod(shape)
    max_count = -(-bit_width * size // 32)
    if max_count >= 2 ** 32 - 1:
        raise NotImplementedError("more than 2**32 - 1 random words from one key in the "
                                  "original (jax_threefry_partitionable=False) mode")
    bits = threefry_2x32(keys, lax.iota(_U32, max_count))  # (*batch, max_count)
    last = len(batch)
    if bit_width == 64:  # the first half of the words are the high halves, as in JAX
        half = max_count // 2
        hi = lax.convert_element_type(lax.slice_in_dim(bits, 0, half, axis=last), out_dtype)
        lo = lax.convert_element_type(lax.slice_in_dim(bits, half, max_count, axis=last),
                                      out_dtype)
        bits = lax.bitwise_or(lax.shift_left(hi, lax.convert_element_type(32, out_dtype)), lo)
    elif bit_width < 32:  # each word gives 32 // bit_width values, low bits first
        per = 32 // bit_width
        wide = (*batch, max_count, per)
        bits = lax.broadcast_in_dim(bits, wide, tuple(range(last + 1)))
        shifts = lax.broadcast_in_dim(lax.mul(lax.iota(_U32, per), _u32(bit_width)), wide,
                                      (last + 1,))
        bits = lax.reshape(lax.shift_right_logical(bits, shifts), (*batch, max_count * per))
        bits = lax.slice_in_dim(lax.convert_element_type(bits, out_dtype), 0, size, axis=last)
    return lax.reshape(bits, (*batch, *shape))


def _check_bit_width(bit_width: int) -> None:
    if bit_width not in (8, 16, 32, 64):
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")


# --- rbg and unsafe_rbg: XLA's RngBitGenerator bits, keys of four words ------------------------
# JAX's definitions (jax/_src/random/rbg.py). A batch of keys goes through rng_bit_generator as
# JAX's vmapped calls do: its batching rule draws every row from the batch's first key (see
# lax/rng_bit_generator.py), so the batch's bits are those of one call on that key.

def _first_key_bits(keys: Any, shape: tuple[int, ...], dtype: Any):
    """rng_bit_generator's bits of shape (*batch, *shape) for keys (*batch, 4), as JAX's
    vmap over the batch computes them."""
    batch = get_aval(keys).shape[:-1]
    if batch:
        if not math.prod(batch):  # (JAX's rule indexes the batch's first key)
            raise IndexError("index is out of bounds for axis 0 with size 0")
        flat = lax.reshape(keys, (math.prod(batch), 4))
        keys = lax.squeeze(lax.slice_in_dim(flat, 0, 1), (0,))
    return rng_bit_generator(keys, (*batch, *shape), dtype=dtype)[1]


def rbg_seed(seed_value: Any):
    """threefry's key for the seed, twice."""
    half = threefry_seed(seed_value)
    return lax.concatenate([half, half], 0)


def _halves(keys: Any):
    """Keys (*batch, 4) as two threefry keys each: (*batch, 2, 2)."""
    return lax.reshape(keys, (*get_aval(keys).shape[:-1], 2, 2))


def rbg_split(keys: Any, shape: Sequence[int]):
    """Each half of the key split by threefry; new key i is the pair of the halves' keys i."""
    shape = tuple(shape)
    batch = get_aval(keys).shape[:-1]
    nb = len(batch)
    halves = threefry_split(_halves(keys), shape)  # (*batch, 2, *shape, 2)
    perm = (*range(nb), *range(nb + 1, nb + 1 + len(shape)), nb, nb + 1 + len(shape))
    return lax.reshape(lax.transpose(halves, perm), (*batch, *shape, 4))


def rbg_fold_in(keys: Any, data: Any):
    return lax.reshape(threefry_fold_in(_halves(keys), data), get_aval(keys).shape)


def rbg_random_bits(keys: Any, bit_width: int, shape: tuple[int, ...]):
    _check_bit_width(bit_width)
    return _first_key_bits(keys, tuple(shape), np.dtype(f"uint{bit_width}"))


def unsafe_rbg_split(keys: Any, shape: Sequence[int]):
    """Ten rows of rng_bit_generator's bits per new key (a 'hash'), the first of each ten."""
    shape = tuple(shape)
    batch = get_aval(keys).shape[:-1]
    num = math.prod(shape)
    rows = _first_key_bits(keys, (10 * num, 4), _U32)
    nb = len(batch)
    starts, limits = (0,) * (nb + 2), (*batch, 10 * num, 4)
    picked = lax.slice(rows, starts, limits, (1,) * nb + (10, 1))
    return lax.reshape(picked, (*batch, *shape, 4))


def unsafe_rbg_fold_in(keys: Any, data: Any):
    """The key xor the last of ten rows of bits from the data's rbg key."""
    rows = _first_key_bits(rbg_seed(data), (10, 4), _U32)
    last = lax.squeeze(lax.slice_in_dim(rows, 9, 10), (0,))
    return lax.bitwise_xor(keys, lax.broadcast_to_rank(last, get_aval(keys).ndim))


# --- implementations -----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PRNGImpl:
    """A PRNG implementation as JAX defines one: key shape, and seed/split/fold_in/random_bits
    on raw key data (*batch, *key_shape). Compared by identity: one object per name."""
    name: str
    tag: str  # the dtype's name: key<tag>
    key_shape: tuple[int, ...]
    seed: Callable[[Any], Any]
    split: Callable[[Any, Sequence[int]], Any]
    fold_in: Callable[[Any, Any], Any]
    random_bits: Callable[[Any, int, tuple[int, ...]], Any]

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name})"


THREEFRY = PRNGImpl("threefry2x32", "fry", (2,), threefry_seed, threefry_split,
                    threefry_fold_in, threefry_random_bits)
RBG = PRNGImpl("rbg", "rbg", (4,), rbg_seed, rbg_split, rbg_fold_in, rbg_random_bits)
UNSAFE_RBG = PRNGImpl("unsafe_rbg", "urbg", (4,), rbg_seed, unsafe_rbg_split, unsafe_rbg_fold_in,
                      rbg_random_bits)
PRNGS = {impl.name: impl for impl in (THREEFRY, RBG, UNSAFE_RBG)}


# --- key operations on typed keys ----------------------------------------------------------------
# What jax.random builds on: the keys' implementation picks the operation.

def random_seed(seed_value: Any, impl: PRNGImpl) -> PRNGKeyArray:
    return PRNGKeyArray(impl.seed(seed_value), impl)


def random_split(keys: PRNGKeyArray, shape: Sequence[int]) -> PRNGKeyArray:
    """New keys of shape (*keys.shape, *shape)."""
    return PRNGKeyArray(keys.impl.split(keys._base_array, tuple(shape)), keys.impl)


def random_fold_in(keys: PRNGKeyArray, data: Any) -> PRNGKeyArray:
    """data: uint32, rank 0."""
    return PRNGKeyArray(keys.impl.fold_in(keys._base_array, data), keys.impl)


def random_bits(keys: PRNGKeyArray, bit_width: int, shape: tuple[int, ...]):
    """Uniform bits of shape (*keys.shape, *shape) as uint{bit_width}."""
    return keys.impl.random_bits(keys._base_array, bit_width, tuple(shape))


# --- typed key arrays ---------------------------------------------------------------------------

class KeyTy(dtypes.ExtendedDType):
    """The dtype of typed key arrays of one implementation: `key<fry>` (threefry2x32 keys of two
    uint32 words), `key<rbg>`, `key<urbg>` (four words); its scalar class is `prng_key`, so
    `issubdtype(key.dtype, jax.dtypes.prng_key)` holds."""
    type = dtypes.prng_key

    def __init__(self, impl: PRNGImpl):
        self._impl = impl
        self.name = f"key<{impl.tag}>"
        self.impl_name = impl.name
        self.key_shape = impl.key_shape
        self.itemsize = 4 * math.prod(impl.key_shape)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, KeyTy) and other._impl is self._impl

    def __hash__(self) -> int:
        return hash((KeyTy, self._impl.name))


KEY_DTYPES = {impl: KeyTy(impl) for impl in PRNGS.values()}
KEY_DTYPE = KEY_DTYPES[THREEFRY]


def check_key_data(key_data: Any, impl: PRNGImpl = THREEFRY) -> None:
    """JAX's checks of raw key data for `impl` (TypeError with JAX's messages)."""
    if not all(hasattr(key_data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                        f"shape, and dtype attributes. Got {key_data}")
    if key_data.ndim < 1:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={key_data.ndim}")
    if tuple(key_data.shape[-1:]) != impl.key_shape:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                        f"with {impl.key_shape}; got shape={tuple(key_data.shape)} for "
                        f"impl={impl.name}")
    if np.dtype(key_data.dtype) != _U32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                        f"got dtype={np.dtype(key_data.dtype)}")


class PRNGKeyArray:
    """An array of typed PRNG keys (`jax.random.key`) of one implementation: shape excludes
    the key's words, dtype is `key<fry>`, `key<rbg>` or `key<urbg>`. A pytree over its uint32 key
    data (the implementation rides in the tree's structure), so it passes through jit, scan and
    while_loop; arithmetic and NumPy conversion are refused as in JAX."""
    __slots__ = ("_base_array", "_consumed", "impl")
    __array_priority__ = 100

    def __init__(self, key_data: Any, impl: PRNGImpl = THREEFRY):
        self._base_array = key_data
        self.impl = impl
        # jax_debug_key_reuse: which keys were consumed (a bool, or a mask over the shape)
        self._consumed: Any = False

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(get_aval(self._base_array).shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> KeyTy:
        return KEY_DTYPES[self.impl]

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __repr__(self) -> str:
        if isinstance(self._base_array, Tracer):
            return f"Traced<{self.dtype.name}{list(self.shape)}> overlaying:\n{self._base_array}"
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._base_array}"

    __str__ = __repr__

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx: Any) -> PRNGKeyArray:
        full = idx if isinstance(idx, tuple) else (idx,)
        out = PRNGKeyArray(self._base_array[(*full, slice(None))], self.impl)
        if key_reuse.enabled():
            key_reuse.consume_slice(self, idx, out)
        return out

    def __bool__(self) -> bool:
        raise TypeError("key array cannot be converted to boolean.")

    def __array__(self, dtype: Any = None, copy: Any = None):
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                        "jax.random.key_data(arr) if you wish to extract the underlying integer "
                        "array.")

    __hash__ = None  # type: ignore[assignment]

    def _compare(self, other: Any, name: str):
        if not isinstance(other, PRNGKeyArray) or other.impl is not self.impl:
            other_dtype = getattr(other, "dtype", None) or get_aval(other).dtype
            raise TypeError(f"{name} does not accept dtypes {self.dtype.name}, {other_dtype}.")
        from .numpy import all as all_, equal
        return all_(equal(self._base_array, other._base_array), axis=-1)

    def __eq__(self, other: Any):  # type: ignore[override]
        return self._compare(other, "equal")

    def __ne__(self, other: Any):  # type: ignore[override]
        return lax.bitwise_not(self._compare(other, "not_equal"))

    def reshape(self, *shape: Any, order: str = "C") -> PRNGKeyArray:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return PRNGKeyArray(self._base_array.reshape(*shape, *self.impl.key_shape, order=order),
                            self.impl)

    def flatten(self) -> PRNGKeyArray:
        return self.reshape(-1)

    ravel = flatten

    def squeeze(self, axis: Any = None) -> PRNGKeyArray:
        from .numpy import squeeze
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        return PRNGKeyArray(squeeze(self._base_array, tuple(a % max(self.ndim, 1)
                                                            for a in axes)), self.impl)

    def transpose(self, *axes: Any) -> PRNGKeyArray:
        if not axes or axes == (None,):
            perm = tuple(reversed(range(self.ndim)))
        else:
            perm = tuple(axes[0]) if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return PRNGKeyArray(lax.transpose(self._base_array, (*perm, self.ndim)), self.impl)

    @property
    def T(self) -> PRNGKeyArray:  # noqa: N802 - NumPy's name
        return self.transpose()

    def copy(self) -> PRNGKeyArray:
        out = PRNGKeyArray(self._base_array, self.impl)
        out._consumed = self._consumed  # (as JAX's copy: the same key, used or not)
        return out

    def block_until_ready(self) -> PRNGKeyArray:
        return self


register_pytree_node(PRNGKeyArray, lambda k: ((k._base_array,), k.impl),
                     lambda impl, children: PRNGKeyArray(children[0], impl))
key_reuse.KEY_TYPE = PRNGKeyArray
BaseArray.register(PRNGKeyArray)  # typed keys are `jax.Array`s, as in JAX (flax.nnx checks it)


class KeyShapedArray(AbstractValue):
    """`jax.typeof` of a typed key array: its key shape and the key dtype (`key<fry>[3]`)."""

    def __init__(self, shape: tuple[int, ...], dtype: KeyTy = KEY_DTYPE):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.weak_type = False

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, KeyShapedArray) and other.shape == self.shape
                and other.dtype == self.dtype)

    def __hash__(self) -> int:
        return hash((KeyShapedArray, self.shape, self.dtype))

    def str_short(self, short_dtypes: bool = False) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __repr__(self) -> str:  # (JAX's: a ShapedArray of the key dtype)
        return f"ShapedArray({self.str_short()})"


pytype_aval_mappings[PRNGKeyArray] = lambda key: KeyShapedArray(key.shape, key.dtype)
