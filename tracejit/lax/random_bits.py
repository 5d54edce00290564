"""The PRNG's primitives: the `threefry2x32` hash (JAX's 20-round threefry, bit-exact) and
`iota_2x32_shape`, the 64-bit row-major index of every element as (hi, lo) uint32 words.
tracejit.prng builds keys, split, fold_in and random bits from them. Both compute their two
results at one element together (elementwise, an index map): fusion computes them inside their
consumers' loops, so random bits never pass through memory. `philox4x32` (XLA's 10 rounds,
rng_bit_generator's PHILOX) likewise computes its four words at one element together."""
from __future__ import annotations

import math

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import ELEMENTWISE, INDEX_MAP, Primitive
from ..core.trace import get_aval
from .shape import broadcast, broadcast_in_dim, transpose

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_U32 = np.dtype(np.uint32)


def _rotl(v: np.ndarray, r: int) -> np.ndarray:
    return (v << np.uint32(r)) | (v >> np.uint32(32 - r))


def threefry2x32_numpy(k0, k1, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """20-round threefry2x32 on (broadcast) uint32 arrays: the reference implementation."""
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(v, np.uint32) for v in (k0, k1, x0, x1)))
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    with np.errstate(over="ignore"):
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for group in range(5):
            for r in _ROTATIONS[group % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r)
                x1 = x0 ^ x1
            x0 = x0 + ks[(group + 1) % 3]
            x1 = x1 + ks[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


PHILOX_MUL = (0xD2511F53, 0xCD9E8D57)
PHILOX_STEP = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10


def philox4x32_numpy(k0, k1, x0, x1, x2, x3) -> list[np.ndarray]:
    """XLA's philox4x32 (10 rounds) of the counter words x0..x3 under the key (k0, k1), on
    (broadcast) uint32 arrays: the reference implementation."""
    k0, k1, *x = np.broadcast_arrays(*(np.asarray(v, np.uint32) for v in (k0, k1, x0, x1, x2,
                                                                           x3)))
    ka, kb = k0.astype(np.uint64), k1.astype(np.uint64)
    x = [w.astype(np.uint64) for w in x]
    low = np.uint64(0xFFFFFFFF)
    for _ in range(PHILOX_ROUNDS):
        p0, p1 = x[0] * np.uint64(PHILOX_MUL[0]), x[2] * np.uint64(PHILOX_MUL[1])
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ ka, p1 & low, (p0 >> np.uint64(32)) ^ x[3] ^ kb,
             p0 & low]
        ka, kb = (ka + np.uint64(PHILOX_STEP[0])) & low, (kb + np.uint64(PHILOX_STEP[1])) & low
    return [w.astype(np.uint32) for w in x]


def _words_abstract(name: str, results: int):
    def abstract(*avals):
        if any(a.dtype != _U32 for a in avals):
            raise TypeError(f"Arguments to {name} must have uint32 type, got "
                            f"{[a.str_short() for a in avals]}")
        shapes = {a.shape for a in avals if a.ndim}
        if len(shapes) > 1:
            raise TypeError(f"{name} arguments must be rank-0 or share one shape, got "
                            f"{[a.shape for a in avals]}")
        shape = shapes.pop() if shapes else ()
        return [ShapedArray(shape, _U32)] * results
    return abstract


def _words_batch(prim: Primitive):
    """The batch rule of an element op of uint32 words (key words rank-0 or shaped like the
    counters): every batched operand moved to the front, the others broadcast to it."""
    def batch(vals, dims, **params):
        size = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
        avals = [get_aval(v) for v in vals]
        shape = max(((a.shape[:d] + a.shape[d + 1:]) if d is not None else a.shape
                     for a, d in zip(avals, dims)), key=len)
        args = []
        for v, d, a in zip(vals, dims, avals):
            if d is None and a.ndim == 0:
                args.append(v)
                continue
            if d is None:
                v = broadcast(v, (size,))
            elif d:
                v = transpose(v, (d, *[i for i in range(a.ndim) if i != d]))
            if get_aval(v).shape != (size, *shape):
                v = broadcast_in_dim(v, (size, *shape), tuple(range(get_aval(v).ndim)))
            args.append(v)
        outs = prim.bind(*args)
        return outs, [0] * len(outs)
    return batch


threefry2x32_p = Primitive("threefry2x32", multiple_results=True, fusion=ELEMENTWISE)
threefry2x32_p.def_abstract_eval(_words_abstract("threefry2x32", 2))
threefry2x32_p.def_impl(lambda *args: list(threefry2x32_numpy(*args)))
threefry2x32_p.def_not_differentiable()
threefry2x32_p.def_batch(_words_batch(threefry2x32_p))

# operands (k0, k1, x0, x1, x2, x3)
philox4x32_p = Primitive("philox4x32", multiple_results=True, fusion=ELEMENTWISE)
philox4x32_p.def_abstract_eval(_words_abstract("philox4x32", 4))
philox4x32_p.def_impl(philox4x32_numpy)
philox4x32_p.def_not_differentiable()
philox4x32_p.def_batch(_words_batch(philox4x32_p))


def _iota_2x32_impl(*, shape):
    idx = np.arange(math.prod(shape), dtype=np.uint64).reshape(shape)
    return [(idx >> np.uint64(32)).astype(np.uint32), idx.astype(np.uint32)]


iota_2x32_shape_p = Primitive("iota_2x32_shape", multiple_results=True, fusion=INDEX_MAP)
iota_2x32_shape_p.cheap = True  # the element's index: recomputed in each consumer
iota_2x32_shape_p.def_abstract_eval(
    lambda *, shape: [ShapedArray(shape, _U32), ShapedArray(shape, _U32)])
iota_2x32_shape_p.def_impl(_iota_2x32_impl)
iota_2x32_shape_p.def_not_differentiable()
