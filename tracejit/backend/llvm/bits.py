"""Rules on raw bits: the PRNG's threefry2x32 hash and its counters (iota_2x32_shape), computed
element by element inside their readers' kernels (`rules.ELEMENT_TUPLES`) or as loops of their
own, and bitcast_convert_type between widths. codegen's Emitter dispatches to them through
`rules.ELEMENT_TUPLES` and `rules.STRUCTURAL`."""
from __future__ import annotations

import llvmlite.ir as ir

from ...core import dtypes
from ...lax.elementwise import bitcast_convert_type_p
from ...lax.random_bits import (PHILOX_MUL, PHILOX_ROUNDS, PHILOX_STEP, iota_2x32_shape_p,
                                philox4x32_p, threefry2x32_p)
from ...lax.rng_bit_generator import rng_uniform_p
from .host_callback import lower_with_impl
from .codegen import Buf, Emitter, NativeCompileError, Scalar, _as_value
from .rules import ELEMENT_TUPLES, STRUCTURAL
from .types import I64, mem_type


def _rounds(b: ir.IRBuilder, key0, key1, c0, c1) -> tuple[ir.Value, ir.Value]:
    """JAX's 20 rounds on one element: integer adds, rotates and xors, which vectorise."""
    u32 = c0.type
    ks = [key0, key1, b.xor(b.xor(key0, key1), ir.Constant(u32, 0x1BD11BDA))]
    v0, v1 = b.add(c0, ks[0]), b.add(c1, ks[1])
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    for group in range(5):
        for r in rot[group % 2]:
            v0 = b.add(v0, v1)
            v1 = b.or_(b.shl(v1, ir.Constant(u32, r)), b.lshr(v1, ir.Constant(u32, 32 - r)))
            v1 = b.xor(v0, v1)
        v0 = b.add(v0, ks[(group + 1) % 3])
        v1 = b.add(b.add(v1, ks[(group + 2) % 3]), ir.Constant(u32, group + 1))
    return v0, v1


def _hash_operands(em: Emitter, ins, idx):
    """A hash's operands at idx (key words are rank-0 or shaped like the counters: batched
    keys), its element one dependency chain more (the loop interleaves them:
    codegen.CHAIN_INTERLEAVE)."""
    args = []
    for x in ins:
        args.append((yield x, idx if x.aval.ndim else []))
    if idx:
        em.chains += 1
    return args


def _threefry_element(em: Emitter, ins, eqn, idx):
    """Both hash words at idx."""
    return _rounds(em.b, *(yield from _hash_operands(em, ins, idx)))


def _philox_element(em: Emitter, ins, eqn, idx):
    """The four philox words at idx: each round two 32x32 -> 64-bit products (their high and
    low words), xors and the key's steps."""
    ka, kb, *x = yield from _hash_operands(em, ins, idx)
    b = em.b
    u32, u64 = ir.IntType(32), ir.IntType(64)

    def product(word, mul):
        p = b.mul(b.zext(word, u64), ir.Constant(u64, mul))
        return b.trunc(b.lshr(p, ir.Constant(u64, 32)), u32), b.trunc(p, u32)
    for _ in range(PHILOX_ROUNDS):
        (hi0, lo0), (hi1, lo1) = product(x[0], PHILOX_MUL[0]), product(x[2], PHILOX_MUL[1])
        x = [b.xor(b.xor(hi1, x[1]), ka), lo1, b.xor(b.xor(hi0, x[3]), kb), lo0]
        ka = b.add(ka, ir.Constant(u32, PHILOX_STEP[0]))
        kb = b.add(kb, ir.Constant(u32, PHILOX_STEP[1]))
    return tuple(x)


def _iota_2x32_element(em: Emitter, ins, eqn, idx):
    """The element's 64-bit row-major index as (hi, lo) words."""
    lin = em.linear(eqn.outvars[0].aval.shape, idx)
    u32 = ir.IntType(32)
    return (em.b.trunc(em.b.lshr(lin, ir.Constant(I64, 32)), u32), em.b.trunc(lin, u32))


def _element_tuple_loop(em: Emitter, eqn, ins, dests):
    """An element op of several results as a kernel of its own (its operands possibly fused
    into it): one loop nest writing every result; rank 0 in registers."""
    avals = [v.aval for v in eqn.outvars]

    def elements(idx):
        got = ELEMENT_TUPLES[eqn.primitive](em, ins, eqn, idx)
        return got if isinstance(got, tuple) else em.drive(got)
    if avals[0].ndim == 0 and all(d is None for d in dests):
        return [Scalar(y, a) for y, a in zip(elements([]), avals)]
    outs = [d or em.alloc(a) for d, a in zip(dests, avals)]

    def body(idx):
        lin = em.linear(avals[0].shape, idx)
        for out, y in zip(outs, elements(idx)):
            em.store(out, lin, y)
    em.loop_nest(avals[0].shape, body)
    return outs


def _bitcast_resize(em: Emitter, eqn, ins, dests):
    """bitcast_convert_type between widths: the same row-major bytes read as another type."""
    x = em.materialize(ins[0])
    aval = eqn.outvars[0].aval
    if dtypes.bool_ in (x.aval.dtype, aval.dtype):
        raise NativeCompileError("bitcast_convert_type of bool")
    out = dests[0] or em.alloc(aval)
    view = Buf(em.b.bitcast(x.ptr, mem_type(aval.dtype).as_pointer()), aval)
    em.loop(aval.size, lambda i: em.store(out, i, em.load(view, i)), name="bytes")
    return [out if aval.ndim or dests[0] is not None else _as_value(em, out)]


ELEMENT_TUPLES.update({threefry2x32_p: _threefry_element, philox4x32_p: _philox_element,
                       iota_2x32_shape_p: _iota_2x32_element})
STRUCTURAL.update({
    threefry2x32_p: _element_tuple_loop, philox4x32_p: _element_tuple_loop,
    iota_2x32_shape_p: _element_tuple_loop,
    bitcast_convert_type_p: _bitcast_resize,
})

# the generator's state lives in the host process (see lax/rng_bit_generator.py)
lower_with_impl(rng_uniform_p)
