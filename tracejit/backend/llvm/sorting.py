"""Structural rules for sort and top_k: a stable bottom-up merge sort of every row, emitted as
native loops over a permutation. codegen's Emitter dispatches to them through `rules.STRUCTURAL`."""
from __future__ import annotations

from typing import Callable, Sequence

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax.sorting import sort_p, top_k_p
from .codegen import Buf, Emitter, NativeCompileError
from .complex_ops import parts
from .rules import STRUCTURAL
from .types import I1, I8, I64, reg_bits


def _sort_rows(em: Emitter, shape: Sequence[int], axis: int,
               less: Callable[[list, ir.Value, ir.Value], ir.Value],
               emit_row: Callable[[list, Buf], None]) -> None:
    """Stable bottom-up merge sort of every row along `axis`: `less(oidx, i, j)` compares row
    positions i and j; `emit_row(oidx, perm)` consumes the sorted permutation of the row."""
    b = em.b
    n = shape[axis]
    perm_aval = ShapedArray((max(n, 1),), np.dtype(np.int64))
    bufs = [em.alloc(perm_aval), em.alloc(perm_aval)]
    outer_dims = [d for d in range(len(shape)) if d != axis]

    def row(oidx):
        em.loop(n, lambda i: em.store(bufs[0], i, i), name="perm")
        src, dst = 0, 1
        width = 1
        while width < n:
            nblocks = -(-n // (2 * width))

            def merge(blk, width=width, src=src, dst=dst):
                lo = b.mul(blk, ir.Constant(I64, 2 * width))
                mid = b.add(lo, ir.Constant(I64, width))
                n_c = ir.Constant(I64, n)
                mid = b.select(b.icmp_signed(">", mid, n_c), n_c, mid)
                hi = b.add(lo, ir.Constant(I64, 2 * width))
                hi = b.select(b.icmp_signed(">", hi, n_c), n_c, hi)
                i_ptr, j_ptr = em._entry_alloca(I64), em._entry_alloca(I64)
                b.store(lo, i_ptr)
                b.store(mid, j_ptr)

                def step(t):
                    k = b.add(lo, t)
                    i, j = b.load(i_ptr), b.load(j_ptr)
                    left_ok = b.icmp_signed("<", i, mid)
                    right_ok = b.icmp_signed("<", j, hi)
                    # read both candidates at clamped positions (never out of bounds)
                    pi = em.load(bufs[src], b.select(left_ok, i, lo))
                    pj = em.load(bufs[src], b.select(right_ok, j, lo))
                    take_right = b.and_(right_ok, b.or_(b.not_(left_ok), less(oidx, pj, pi)))
                    em.store(bufs[dst], k, b.select(take_right, pj, pi))
                    b.store(b.select(take_right, i, b.add(i, ir.Constant(I64, 1))), i_ptr)
                    b.store(b.select(take_right, b.add(j, ir.Constant(I64, 1)), j), j_ptr)
                em.loop(b.sub(hi, lo), step, name="merge")
            em.loop(nblocks, merge, name="blk")
            src, dst = dst, src
            width *= 2
        emit_row(oidx, bufs[src])
    em.loop_nest([shape[d] for d in outer_dims], row)
    for buf in bufs:
        em.release(buf)


def _full_index(oidx: list, axis: int, i: ir.Value) -> list:
    full = list(oidx)
    full.insert(axis, i)
    return full


def _key_less(em: Emitter, dtype: np.dtype, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(a < c, a == c) in sort order: NaNs last and equal to each other, -0.0 == 0.0."""
    b = em.b
    if dtype.kind == "c":  # the reference's lexicographic keys: real part, then imaginary
        part = np.dtype(dtypes.finfo_of(dtype).dtype)
        (ar, ai), (cr, ci) = parts(b, a), parts(b, c)
        lt_re, eq_re = _key_less(em, part, ar, cr)
        lt_im, eq_im = _key_less(em, part, ai, ci)
        return b.or_(lt_re, b.and_(eq_re, lt_im)), b.and_(eq_re, eq_im)
    if dtypes.is_inexact(dtype):
        a_nan, c_nan = b.fcmp_unordered("uno", a, a), b.fcmp_unordered("uno", c, c)
        lt = b.or_(b.and_(b.not_(a_nan), c_nan), b.fcmp_ordered("<", a, c))
        eq = b.or_(b.and_(a_nan, c_nan), b.fcmp_ordered("==", a, c))
        return lt, eq
    if dtype == dtypes.bool_ or dtype.kind == "u":
        return b.icmp_unsigned("<", a, c), b.icmp_unsigned("==", a, c)
    return b.icmp_signed("<", a, c), b.icmp_signed("==", a, c)


def _sort(em: Emitter, eqn, ins, dests):
    axis, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    aval = eqn.outvars[0].aval
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    b = em.b

    def less(oidx, i, j):
        result = ir.Constant(I1, 0)
        decided = ir.Constant(I1, 0)
        for x in ins[:num_keys]:
            xi = em.value_at(x, _full_index(oidx, axis, i))
            xj = em.value_at(x, _full_index(oidx, axis, j))
            lt, eq = _key_less(em, x.aval.dtype, xi, xj)
            result = b.select(decided, result, lt)
            decided = b.or_(decided, b.not_(eq))
        return result

    def emit_row(oidx, perm):
        def put(k):
            src = _full_index(oidx, axis, em.load(perm, k))
            dst = em.linear(aval.shape, _full_index(oidx, axis, k))
            for x, o in zip(ins, outs):
                em.store(o, dst, em.value_at(x, src))
        em.loop(aval.shape[axis], put, name="put")
    _sort_rows(em, aval.shape, axis, less, emit_row)
    return outs


def _total_order(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """An integer ordered like JAX's total order of floats (-NaN < -inf < -0 < 0 < inf < NaN)."""
    b = em.b
    if not dtypes.is_inexact(dtype):
        return b.zext(v, I8) if dtype == dtypes.bool_ else v
    width = reg_bits(dtype)  # (bfloat16: its float32 register orders the same)
    it = ir.IntType(width)
    bits = b.bitcast(v, it)
    neg = b.icmp_signed("<", bits, ir.Constant(it, 0))
    return b.select(neg, b.xor(bits, ir.Constant(it, (1 << (width - 1)) - 1)), bits)


def _top_k(em: Emitter, eqn, ins, dests):
    (x,) = ins
    k, axis = eqn.params["k"], eqn.params["axis"]
    dtype = x.aval.dtype
    if dtype.kind == "c":  # the reference orders the raw bits of the struct, not a number order
        raise NativeCompileError("native top_k of complex numbers is not supported")
    vals, idxs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    out_shape = eqn.outvars[0].aval.shape
    b = em.b
    signed = dtypes.is_inexact(dtype) or dtype.kind == "i"

    def greater(oidx, i, j):
        ki = _total_order(em, dtype, em.value_at(x, _full_index(oidx, axis, i)))
        kj = _total_order(em, dtype, em.value_at(x, _full_index(oidx, axis, j)))
        return b.icmp_signed(">", ki, kj) if signed else b.icmp_unsigned(">", ki, kj)

    def emit_row(oidx, perm):
        def put(t):
            p = em.load(perm, t)
            dst = em.linear(out_shape, _full_index(oidx, axis, t))
            em.store(vals, dst, em.value_at(x, _full_index(oidx, axis, p)))
            em.store(idxs, dst, b.trunc(p, ir.IntType(32)))
        em.loop(k, put, name="topk")
    _sort_rows(em, x.aval.shape, axis, greater, emit_row)
    return [vals, idxs]


STRUCTURAL.update({sort_p: _sort, top_k_p: _top_k})
