"""Structural rules on raw bits: the PRNG's threefry2x32 hash and its counters (iota_2x32_shape),
and bitcast_convert_type between widths. codegen's Emitter dispatches to them through
`rules.STRUCTURAL`."""
from __future__ import annotations

import llvmlite.ir as ir

from ...core import dtypes
from ...lax.elementwise import bitcast_convert_type_p
from ...lax.random_bits import iota_2x32_shape_p, threefry2x32_p
from ...lax.composed import reduce_precision_bits, reduce_precision_p
from .traced import traced
from ...lax.rng_bit_generator import _generate, rng_bit_generator_p, rng_uniform_p
from .host_callback import lower_with_impl
from .codegen import Buf, Emitter, NativeCompileError, Scalar, _as_value
from .rules import STRUCTURAL
from .types import I64, mem_type


def _threefry2x32(em: Emitter, eqn, ins, dests):
    k0, k1, x0, x1 = ins
    b = em.b
    aval = eqn.outvars[0].aval

    def rounds(key0, key1, c0, c1):
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

    if aval.ndim == 0 and dests[0] is None and dests[1] is None:
        y0, y1 = rounds(em.scalar_of(k0), em.scalar_of(k1), em.scalar_of(x0), em.scalar_of(x1))
        return [Scalar(y0, aval), Scalar(y1, aval)]
    outs = [d or em.alloc(aval) for d in dests]

    def body(idx):  # key words are rank-0 or shaped like the counters (batched keys)
        y0, y1 = rounds(em.value_at(k0, idx), em.value_at(k1, idx), em.value_at(x0, idx),
                        em.value_at(x1, idx))
        lin = em.linear(aval.shape, idx) if aval.ndim else None
        em.store(outs[0], lin, y0)
        em.store(outs[1], lin, y1)
    em.loop_nest(aval.shape, body)
    return outs


def _iota_2x32_shape(em: Emitter, eqn, ins, dests):
    aval = eqn.outvars[0].aval
    b = em.b
    outs = [d or em.alloc(aval) for d in dests]
    u32 = ir.IntType(32)

    def body(idx):
        lin = em.linear(aval.shape, idx)
        em.store(outs[0], lin, b.trunc(b.lshr(lin, ir.Constant(I64, 32)), u32))
        em.store(outs[1], lin, b.trunc(lin, u32))
    em.loop_nest(aval.shape, body)
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


STRUCTURAL.update({
    threefry2x32_p: _threefry2x32, iota_2x32_shape_p: _iota_2x32_shape,
    bitcast_convert_type_p: _bitcast_resize,
})


STRUCTURAL[rng_bit_generator_p] = traced(_generate)
STRUCTURAL[reduce_precision_p] = traced(reduce_precision_bits)
# the generator's state lives in the host process (see lax/rng_bit_generator.py)
lower_with_impl(rng_uniform_p)
