"""Structural rules for reductions: reduce_* along axes, argmin/argmax and the cumulative scans
(cumsum ... cumlogsumexp). codegen's Emitter dispatches to them through `rules.STRUCTURAL`."""
from __future__ import annotations

import math
from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.jaxpr import Var
from ...core.primitive import Primitive
from ...lax import cumulative as cu
from ...lax import elementwise as ew
from ...lax import reductions as rd
from .codegen import Buf, Emitter, Lazy, Scalar
from .complex_ops import accumulating_mul, pack, parts
from .complex_ops import logaddexp as complex_logaddexp
from .index_maps import _zero
from .lanes import lane_reduce, supported as lanes_supported
from .math import LLVM_17
from .math import repetitions
from .rules import STRUCTURAL
from .scalar_ops import convert, emit_scalar
from .types import I1, I64, const, reg_type


def _reduce_identity(name: str, dtype: np.dtype):
    if name == "reduce_sum" or name == "reduce_or" or name == "reduce_xor":
        return 0
    if name == "reduce_prod":
        return 1
    if name == "reduce_and":
        return True if dtype == dtypes.bool_ else -1
    info = np.finfo(dtype) if dtypes.is_inexact(dtype) else None
    if name == "reduce_max":
        if dtype == dtypes.bool_:
            return False
        return -np.inf if info is not None else np.iinfo(dtype).min
    if name == "reduce_min":
        if dtype == dtypes.bool_:
            return True
        return np.inf if info is not None else np.iinfo(dtype).max
    raise KeyError(name)


_REDUCE_COMBINE = {rd.reduce_sum_p: ew.add_p, rd.reduce_prod_p: ew.mul_p,
                   rd.reduce_max_p: ew.max_p, rd.reduce_min_p: ew.min_p, rd.reduce_and_p: ew.and_p,
                   rd.reduce_or_p: ew.or_p, rd.reduce_xor_p: ew.xor_p}


def _combine(em: Emitter, reducer: Primitive, dtype: np.dtype, acc: ir.Value, x: ir.Value,
             ordered: bool = False) -> ir.Value:
    """`acc` combined with `x`. `ordered`: the caller fixes which values are combined in which
    order (a pairwise sum's levels, a tree's pairs), so no `reassoc`: O3 made the same machine
    code without it there (every module of the benchmark rows), and with it a module is kept
    off the unoptimised first tier (jit_engine.unoptimised_exact)."""
    op = _REDUCE_COMBINE[reducer]
    flags = () if ordered else ("reassoc",)
    if dtype.kind == "c" and op is ew.add_p:  # part by part, so complex sums vectorise too
        b = em.b
        re, im = (b.fadd(b.extract_value(acc, k), b.extract_value(x, k), flags=flags)
                  for k in (0, 1))
        return pack(b, re, im)
    if dtype.kind == "c" and op is ew.mul_p:
        return accumulating_mul(em.b, acc, x)
    if dtypes.is_float(dtype) and op in (ew.add_p, ew.mul_p) and dtype != dtypes.bfloat16:
        # reassoc lets the sum vectorise (partial sums); NaN/Inf semantics are unchanged.
        # (bfloat16 goes in order, rounding every step, as the reference's ml_dtypes add)
        return (em.b.fadd if op is ew.add_p else em.b.fmul)(acc, x, flags=flags)
    return emit_scalar(em.b, op, [dtype, dtype], dtype, [acc, x], {})


def _reduce(em: Emitter, eqn, ins, dests):
    (x,) = ins
    name = eqn.primitive.name
    axes = eqn.params["axes"]
    aval_out = eqn.outvars[0].aval
    dtype = x.aval.dtype
    # half-float sums accumulate in float32 and round once, as XLA on CPU (and the reference)
    work = _acc_dtype(dtype) if name == "reduce_sum" else dtype
    in_shape = x.aval.shape
    kept = [d for d in range(len(in_shape)) if d not in axes]
    init = const(work, _reduce_identity(name, dtype))
    if dtype.kind == "c" and name in ("reduce_max", "reduce_min") and \
            all(in_shape[d] for d in axes):
        # ±inf + 0j is the empty result, but it would beat -inf - 1j in the lexicographic order
        init = const(dtype, complex(-np.inf, -np.inf) if name == "reduce_max" else
                     complex(np.inf, np.inf))
    out = dests[0] or (None if aval_out.ndim == 0 else em.alloc(aval_out))
    b = em.b

    def element(full):
        return convert(b, em.value_at(x, full), dtype, work)

    reduced = [in_shape[d] for d in axes]
    # long float sums go pairwise (their error then grows as log n); the row-accumulating
    # loop below, which vectorises across a kept contiguous axis, is kept for wide outputs
    pairwise = name == "reduce_sum" and dtypes.is_inexact(work) and \
        int(np.prod(reduced)) > _BLOCK and (aval_out.size <= 16 or (len(in_shape) - 1) in axes)
    if aval_out.ndim and in_shape and (len(in_shape) - 1) not in axes and not pairwise and \
            name == "reduce_sum" and dtypes.is_inexact(work) and int(np.prod(reduced)) > _ROWS:
        return _blocked_column_sum(em, x, axes, kept, aval_out, out, work, element)
    if aval_out.ndim and in_shape and (len(in_shape) - 1) not in axes and not pairwise:
        # the contiguous axis is kept: accumulate rows into the output (inner loop vectorises)
        acc = out if work == dtype else em.alloc(aval_out.update(dtype=work))
        em.loop_nest(aval_out.shape, lambda idx: em.store(acc, em.linear(aval_out.shape, idx),
                                                         init))
        order = list(axes) + kept

        def body(idx_in_order):
            full: list = [None] * len(in_shape)
            for d, i in zip(order, idx_in_order):
                full[d] = i
            oidx = [full[d] for d in kept]
            lin = em.linear(aval_out.shape, oidx)
            em.store(acc, lin, _combine(em, eqn.primitive, work, em.load(acc, lin), element(full)))
        em.loop_nest([in_shape[d] for d in order], body)
        if acc is not out:
            em.loop_nest(aval_out.shape, lambda idx: em.store(
                out, em.linear(aval_out.shape, idx),
                convert(b, em.load(acc, em.linear(aval_out.shape, idx)), work, dtype)))
            em.release(acc)
        return [out]
    acc_ptr = em._entry_alloca(reg_type(work))
    lanes = _lanes_apply(em, x, name, axes, aval_out)
    staged = not lanes and _staged_sum(em, name, dtype, work, aval_out)
    flagged = not (lanes or staged) and _flagged_minmax(name, dtype)
    if flagged:
        nan_ptr, zero_ptr = em._entry_alloca(I1), em._entry_alloca(I1)
    if pairwise:
        return _pairwise_sum(em, x, axes, kept, aval_out, out, work, element, lanes, staged)

    def outer(oidx):
        if lanes or staged:
            if lanes:
                total = lane_reduce(em, name, dtype, _run_start(em, x, dict(zip(kept, oidx))),
                                    int(np.prod(reduced)))
            else:
                def value(k):
                    ridx = em.unravel(k, reduced)
                    return element(_full_index(len(in_shape), kept, oidx, axes, ridx))
                total = lane_reduce(em, name, dtype, None, int(np.prod(reduced)), value=value)
            if out is not None:
                em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None, total)
            b.store(total, acc_ptr)
            return
        b.store(init, acc_ptr)
        if flagged:
            b.store(I1(0), nan_ptr)
            b.store(I1(0), zero_ptr)

        def inner(ridx):
            full: list = [None] * len(in_shape)
            for d, i in zip(kept, oidx):
                full[d] = i
            for d, i in zip(axes, ridx):
                full[d] = i
            if flagged:
                _flagged_step(b, name, acc_ptr, nan_ptr, zero_ptr, element(full))
                return
            b.store(_combine(em, eqn.primitive, work, b.load(acc_ptr), element(full)), acc_ptr)
        em.loop_nest([in_shape[d] for d in axes], inner)
        if flagged:
            b.store(_flagged_result(b, name, acc_ptr, nan_ptr, zero_ptr), acc_ptr)
        if out is not None:
            em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None,
                     convert(b, b.load(acc_ptr), work, dtype))
    em.loop_nest(aval_out.shape, outer)
    if out is None:
        return [Scalar(convert(b, b.load(acc_ptr), work, dtype), aval_out)]
    return [out]


def _flagged_minmax(name: str, dtype: np.dtype) -> bool:
    """Whether a float32/64 max/min's serial loop keeps LLVM's maxnum/minnum with flags
    (`_flagged_step`) instead of math.minmax: on LLVM 15 only, whose loop vectoriser leaves
    minmax's compares and selects scalar (max of |x| over 16M float32: 31 ms against 2) but
    vectorises a maxnum marked nnan nsz (LLVM 17's vectorises llvm.maximum itself)."""
    return not LLVM_17 and name in ("reduce_max", "reduce_min") and \
        dtype in (dtypes.float32, dtypes.float64)


def _flagged_step(b: ir.IRBuilder, name: str, acc_ptr, nan_ptr, zero_ptr, v: ir.Value) -> None:
    """One element into a flagged max (min): maxnum (minnum) of the values, a NaN flag (a NaN
    makes the maxnum poison, which `_flagged_result` never returns) and a flag for +0 (-0)."""
    fn = b.module.declare_intrinsic("llvm.maxnum" if name == "reduce_max" else "llvm.minnum",
                                    [v.type], ir.FunctionType(v.type, [v.type, v.type]))
    b.store(b.call(fn, [b.load(acc_ptr), v], fastmath=("nnan", "nsz")), acc_ptr)
    b.store(b.or_(b.load(nan_ptr), b.fcmp_unordered("uno", v, v)), nan_ptr)
    it = ir.IntType(64 if isinstance(v.type, ir.DoubleType) else 32)
    bits = 0 if name == "reduce_max" else 1 << (it.width - 1)  # +0 (-0)
    b.store(b.or_(b.load(zero_ptr), b.icmp_unsigned("==", b.bitcast(v, it), it(bits))), zero_ptr)


def _flagged_result(b: ir.IRBuilder, name: str, acc_ptr, nan_ptr, zero_ptr) -> ir.Value:
    """A flagged max (min): NaN if any element was; a zero result +0 (-0) where that zero was
    among the elements, else the other (-0 < +0, as llvm.maximum); else maxnum's value."""
    acc = b.load(acc_ptr)
    ty = acc.type
    wanted, other = (0.0, -0.0) if name == "reduce_max" else (-0.0, 0.0)
    zero = b.select(b.load(zero_ptr), ir.Constant(ty, wanted), ir.Constant(ty, other))
    value = b.select(b.fcmp_ordered("==", acc, ir.Constant(ty, 0.0)), zero, acc)
    return b.select(b.load(nan_ptr), ir.Constant(ty, float("nan")), value)


def _lanes_apply(em: Emitter, x, name: str, axes, aval_out) -> bool:
    """Whether a reduction runs in explicit vector lanes (lanes.py): float32/64 sum, max or
    min of a value in memory over its trailing axes (a contiguous run per output element).
    Not where the reduced loop itself would be the one a parallel chunk body cuts (a
    whole-array max: the chunks then take whole elements of the serial loop instead)."""
    nd = x.aval.ndim
    if not (isinstance(x, Buf) and lanes_supported(name, x.aval.dtype) and axes and
            sorted(axes) == list(range(nd - len(axes), nd))):
        return False
    return not (em.split is not None and not em._trips and aval_out.ndim == 0 and
                name != "reduce_sum")


def _staged_sum(em: Emitter, name: str, dtype: np.dtype, work: np.dtype, aval_out) -> bool:
    """Whether a float32/64 sum of values not lying in memory as one run (computed by fused
    producers: logsumexp's exp, a sum of squares; or strided) goes through lane_reduce's
    `value` form: the same fixed order of additions as the sum of the same values in memory.
    Summed as they came (`_combine`'s reassoc adds), the order was LLVM's vectoriser's: other
    bits with another vector width, without the vectorisers (a huge function's O1), or when
    the fused values were also an output (the sum then read them from memory in lanes). Not
    where the reduced loop is the one a parallel chunk body cuts (as _lanes_apply)."""
    return name == "reduce_sum" and work == dtype and lanes_supported(name, dtype) and \
        not (em.split is not None and not em._trips and aval_out.ndim == 0)


def _full_index(ndim: int, kept, oidx, axes, ridx) -> list:
    full: list = [None] * ndim
    for d, i in zip(kept, oidx):
        full[d] = i
    for d, i in zip(axes, ridx):
        full[d] = i
    return full


def _run_start(em: Emitter, x, at: dict) -> ir.Value:
    """Pointer to the element of x at index `at` (axis -> index; the other axes at zero)."""
    shape = x.aval.shape
    lin = em.linear(shape, [at.get(d, _zero()) for d in range(len(shape))])
    return x.ptr if lin is None else em.b.gep(x.ptr, [lin], inbounds=True)


# Elements per block of a long float sum: a block sums in vectorised partial sums, the blocks
# pairwise, so the rounding error grows as block/lanes + log2(blocks) instead of n/lanes.
_BLOCK = 1024
_LEVELS = 64  # the binary counter's levels: one per bit of the block count
# Elements a call from which a long sum's whole blocks add in straight-line code (lanes.py,
# _unrolled_sum): ~7% of a read at L3 speed, for ~130 more instructions of O3's code a kernel,
# which a sum of a few blocks would pay for nothing (the first tier compiles a loop: sum 10M's
# first call 28-29 -> 22-26 ms of CPU against the straight-line IR it had)
UNROLL_MIN_ELEMENTS = 1 << 16


def _pairwise_sum(em: Emitter, x, axes, kept, aval_out, out, work, element, lanes: bool,
                  staged: bool):
    """A float reduce_sum into a scalar accumulator, blocked: the innermost reduced axis is cut
    into blocks of _BLOCK elements, each summed from zero (vectorised; in explicit lanes where
    `lanes`, see lanes.lane_reduce, or `staged`, see _staged_sum), and the block sums
    combined as in pairwise summation through a binary counter: block j is added to level 0,
    carried up while the counter's low bits are set (so level k holds a sum of 2^k blocks)."""
    b = em.b
    in_shape = x.aval.shape
    n_inner = in_shape[axes[-1]]
    n_blocks = -(-n_inner // _BLOCK)
    zero = const(work, 0)
    block_ptr = em._entry_alloca(reg_type(work))
    levels = em._entry_alloca(ir.ArrayType(reg_type(work), _LEVELS))
    count_ptr = em._entry_alloca(I64)
    carry_ptr = em._entry_alloca(reg_type(work))
    one64 = ir.Constant(I64, 1)

    def level(k):
        return b.gep(levels, [ir.Constant(ir.IntType(32), 0), k], inbounds=True)
    # in a row kernel, a slice of the next row a block, loaded while this row's blocks compute:
    # in a sum of values computed from the row (logsumexp's exp pass, standardize's squares),
    # which finds the row in cache; not in a sum of a row in memory: the row itself (a first
    # pass, such as standardize's mean), whose own loads it would compete with, or softmax's
    # output row of exp values (a prefetch there, before the scaling pass, gained nothing)
    ahead = em.next_row
    if ahead is not None and isinstance(x, Buf):
        ahead = None
    elif ahead is not None:
        em.next_row = None
        if aval_out.size != 1 or len(axes) != 1 or n_blocks < 2 or \
                ahead[0].parent.parent is not b.function:  # (an outlined kernel's)
            ahead = None
    if ahead is not None:
        lines = -(-ahead[1] // 64)  # (cache lines)
        ahead_per_block = -(-lines // n_blocks)

    def outer(oidx):
        b.store(ir.Constant(I64, 0), count_ptr)

        def per_block(idx):
            *outer_r, jb = idx
            start = b.mul(jb, ir.Constant(I64, _BLOCK))
            length = b.sub(ir.Constant(I64, n_inner), start)
            length = b.select(b.icmp_signed("<", length, ir.Constant(I64, _BLOCK)), length,
                              ir.Constant(I64, _BLOCK))
            b.store(zero, block_ptr)
            if ahead is not None:  # lines [jb * per, min(+ per, lines)) of the next row
                step = ir.Constant(I64, ahead_per_block)
                first = b.mul(jb, step)
                count = b.sub(ir.Constant(I64, lines), first)
                count = b.select(b.icmp_signed("<", count, step), count, step)
                em.prefetch_lines(ahead[0], first, count)

            def value(k):
                full: list = [None] * len(in_shape)
                for d, i in zip(kept, oidx):
                    full[d] = i
                for d, i in zip(axes[:-1], outer_r):
                    full[d] = i
                full[axes[-1]] = b.add(start, k)
                return element(full)
            if lanes:
                at = dict(zip(kept, oidx)) | dict(zip(axes[:-1], outer_r)) | {axes[-1]: start}
                _lane_blocks(em, work, _run_start(em, x, at), jb, n_inner, block_ptr,
                             unroll=x.aval.size * repetitions() >= UNROLL_MIN_ELEMENTS)
            elif staged:
                _lane_blocks(em, work, None, jb, n_inner, block_ptr, value)
            else:
                em.loop_nest([length], lambda k: b.store(_combine(
                    em, rd.reduce_sum_p, work, b.load(block_ptr), value(k[0])), block_ptr))
            # carry: while bit k of the count is set, fold level k into the sum and clear it
            count = b.load(count_ptr)
            b.store(b.load(block_ptr), carry_ptr)
            head = b.append_basic_block("carry.head")
            body = b.append_basic_block("carry.body")
            done = b.append_basic_block("carry.done")
            pre = b.block
            b.branch(head)
            b.position_at_end(head)
            k = b.phi(I64, name="lvl")
            k.add_incoming(ir.Constant(I64, 0), pre)
            bit = b.and_(b.lshr(count, k), one64)
            b.cbranch(b.icmp_unsigned("!=", bit, ir.Constant(I64, 0)), body, done)
            b.position_at_end(body)
            b.store(_combine(em, rd.reduce_sum_p, work, b.load(level(k)), b.load(carry_ptr),
                             ordered=True), carry_ptr)
            k.add_incoming(b.add(k, one64), body)
            b.branch(head)
            b.position_at_end(done)
            b.store(b.load(carry_ptr), level(k))
            b.store(b.add(count, one64), count_ptr)
        em.loop_nest([in_shape[d] for d in axes[:-1]] + [n_blocks], per_block)
        # the total: the levels whose bit is set in the final count, smallest first
        count = b.load(count_ptr)
        b.store(zero, carry_ptr)

        def gather(k):
            bit = b.trunc(b.lshr(count, k), ir.IntType(1))
            total = b.load(carry_ptr)
            b.store(b.select(bit, _combine(em, rd.reduce_sum_p, work, total, b.load(level(k)),
                                           ordered=True), total), carry_ptr)
        em.loop(_LEVELS, gather, name="lvl", over_data=False)
        return convert(b, b.load(carry_ptr), work, x.aval.dtype)
    return _per_output(em, aval_out, out, outer)


def _lane_blocks(em: Emitter, dtype: np.dtype, ptr: ir.Value | None, jb: ir.Value, n: int,
                 block_ptr, value: Callable | None = None, unroll: bool = False) -> None:
    """Block jb of a run of n elements (its last block may be shorter), starting at ptr (or
    computed: value(k) its k-th, see lane_reduce), summed in lanes into *block_ptr; `unroll`:
    whole blocks at ptr in straight-line code (lane_reduce)."""
    b = em.b
    last = n - (-(-n // _BLOCK) - 1) * _BLOCK
    if last == _BLOCK:
        b.store(lane_reduce(em, "reduce_sum", dtype, ptr, _BLOCK, value=value, unroll=unroll),
                block_ptr)
        return
    is_last = b.icmp_signed("==", jb, ir.Constant(I64, -(-n // _BLOCK) - 1))
    b.store(lane_reduce(em, "reduce_sum", dtype, ptr, _BLOCK, short=(is_last, last),
                        value=value, unroll=unroll), block_ptr)


# Rows per block of a wide float sum over leading axes (a column sum): each block's rows are
# added one by one into a row of partial sums (vectorised across the output), the blocks'
# rows combined pairwise, so the error grows as _ROWS + log2(blocks) instead of the row count.
_ROWS = 64


def _blocked_column_sum(em: Emitter, x, axes, kept, aval_out, out, work, element):
    """A float reduce_sum that keeps the contiguous axis and has over _ROWS rows to add: the
    rows (the reduced positions, flattened) in blocks of _ROWS summed into `block`, and the
    block rows combined through a binary counter of rows, as _pairwise_sum does for scalars
    (level k, a row of `levels`, holds the sum of 2^k blocks). Kept axes before the first
    reduced one (an image batch's, in a mean over height and width) are looped over outside,
    each index's rows summed in turn (the loop a parallel chunk body cuts): its rows then lie
    together in memory, where a row of the whole output read each of them a stride apart. The
    (32, 64, 64, 64) float32 mean over (1, 2): 2.5 ms, 1.7 looped so, 0.95 on two threads
    (JAX 0.12 0.93). Each output element gets the same additions in the same order."""
    b = em.b
    in_shape = x.aval.shape
    reduced = [in_shape[d] for d in axes]
    n_rows = int(np.prod(reduced))
    n_blocks = -(-n_rows // _ROWS)
    lead = [d for d in kept if d < min(axes)]
    inner = [d for d in kept if d > min(axes)]
    inner_shape = [in_shape[d] for d in inner]
    size = int(np.prod(inner_shape))
    row = aval_out.update(shape=(size,), dtype=work)
    block = em.alloc(row)
    levels = em.alloc(row.update(shape=(n_blocks.bit_length() * size,)))
    count_ptr = em._entry_alloca(I64)
    zero = const(work, 0)

    def add(acc, v):
        return _combine(em, rd.reduce_sum_p, work, acc, v, ordered=True)

    def level_at(k, i):
        return b.add(b.mul(k, ir.Constant(I64, size)), i)

    def rows_of(lidx: list) -> None:
        """The sums of the rows at the leading kept index `lidx`."""
        b.store(ir.Constant(I64, 0), count_ptr)

        def per_block(jb):
            em.loop(size, lambda i: em.store(block, i, zero))
            start = b.mul(jb, ir.Constant(I64, _ROWS))
            length = b.sub(ir.Constant(I64, n_rows), start)
            length = b.select(b.icmp_signed("<", length, ir.Constant(I64, _ROWS)), length,
                              ir.Constant(I64, _ROWS))

            def per_row(r):
                # the flat row index unravelled over the reduced axes (once per row)
                rest, ridx = b.add(start, r), dict(zip(lead, lidx))
                for d, n in reversed(list(zip(axes, reduced))):
                    ridx[d] = b.urem(rest, ir.Constant(I64, n))
                    rest = b.udiv(rest, ir.Constant(I64, n))

                def body(iidx):
                    full = [ridx[d] if d in ridx else None for d in range(len(in_shape))]
                    for d, i in zip(inner, iidx):
                        full[d] = i
                    lin = em.linear(inner_shape, iidx)
                    em.store(block, lin, add(em.load(block, lin), element(full)))
                em.loop_nest(inner_shape, body)
            em.loop(length, per_row, name="row")
            # carry: while bit k of the count is set, add level k into the block row
            count = b.load(count_ptr)
            pre = b.block
            head = b.append_basic_block("carry.head")
            body_bb = b.append_basic_block("carry.body")
            done = b.append_basic_block("carry.done")
            b.branch(head)
            b.position_at_end(head)
            k = b.phi(I64, name="lvl")
            k.add_incoming(ir.Constant(I64, 0), pre)
            bit = b.and_(b.lshr(count, k), ir.Constant(I64, 1))
            b.cbranch(b.icmp_unsigned("!=", bit, ir.Constant(I64, 0)), body_bb, done)
            b.position_at_end(body_bb)
            em.loop(size, lambda i: em.store(block, i, add(em.load(levels, level_at(k, i)),
                                                           em.load(block, i))))
            k.add_incoming(b.add(k, ir.Constant(I64, 1)), b.block)
            b.branch(head)
            b.position_at_end(done)
            em.loop(size, lambda i: em.store(levels, level_at(k, i), em.load(block, i)))
            b.store(b.add(count, ir.Constant(I64, 1)), count_ptr)
        em.loop(n_blocks, per_block, name="blk")
        # the total: the levels whose bit is set in the final count, smallest first
        count = b.load(count_ptr)
        em.loop(size, lambda i: em.store(block, i, zero))

        def gather(k):
            bit = b.trunc(b.lshr(count, k), ir.IntType(1))
            em.loop(size, lambda i: em.store(block, i, b.select(
                bit, add(em.load(block, i), em.load(levels, level_at(k, i))),
                em.load(block, i))))
        em.loop(n_blocks.bit_length(), gather, name="lvl")
        first = em.linear([in_shape[d] for d in lead], lidx)
        at = (lambda i: i) if first is None else \
            (lambda i: b.add(b.mul(first, ir.Constant(I64, size)), i))
        em.loop(size, lambda i: em.store(out, at(i), convert(b, em.load(block, i), work,
                                                             x.aval.dtype)))
    em.loop_nest([in_shape[d] for d in lead], rows_of)
    em.release(levels)
    em.release(block)
    return [out]


def _per_output(em: Emitter, aval_out: Any, out: Any, result_at: Callable) -> list:
    """Loop over the output positions, storing result_at(position) at each: into `out`, or,
    for a scalar result kept in a register (out None), the value itself."""
    b = em.b
    res_ptr = None if out is not None else em._entry_alloca(reg_type(aval_out.dtype))

    def body(oidx):
        result = result_at(oidx)
        if out is not None:
            em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None, result)
        else:
            b.store(result, res_ptr)
    em.loop_nest(aval_out.shape, body)
    return [out] if out is not None else [Scalar(b.load(res_ptr), aval_out)]


def _is_nan(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """NaN test of a float, or of either part of a complex number (NumPy's isnan)."""
    b = em.b
    if dtype.kind == "c":
        re, im = parts(b, v)
        return b.or_(b.fcmp_unordered("uno", re, re), b.fcmp_unordered("uno", im, im))
    return b.fcmp_unordered("uno", v, v)


# Longest row of computed values an argmax/argmin copies into a temporary row (its workspace)
ARG_ROW_COPY_MAX = 1 << 20


def _argminmax(em: Emitter, eqn, ins, dests):
    (x,) = ins
    is_max = eqn.primitive.name == "argmax"
    (axis,) = eqn.params["axes"]
    aval_out = eqn.outvars[0].aval
    dtype = x.aval.dtype
    in_shape = x.aval.shape
    kept = [d for d in range(len(in_shape)) if d != axis]
    b = em.b
    best_ptr = em._entry_alloca(reg_type(dtype))
    idx_ptr = em._entry_alloca(I64)
    out = dests[0] or (None if aval_out.ndim == 0 else em.alloc(aval_out))
    # the best value in vectors, then the first place it is at: of rows in memory where they
    # are, of other rows (computed here, or strided) once copied into a temporary row
    n = in_shape[axis]
    if axis < len(in_shape) - 1 and n > 1 and out is not None and dtype.kind != "c":
        return [_argminmax_rows(em, x, axis, is_max, out)]
    vectors = 0 < n and (lanes_supported("reduce_max", dtype) or dtype.kind in "iu")
    stored = _stored(x) if vectors and axis == len(in_shape) - 1 else None
    row = em.alloc(ShapedArray((n,), dtype)) \
        if vectors and stored is None and n <= ARG_ROW_COPY_MAX else None

    def outer(oidx):
        def at(i):
            full: list = [None] * len(in_shape)
            for d, j in zip(kept, oidx):
                full[d] = j
            full[axis] = i
            return em.value_at(x, full)
        if stored is not None:
            start = em.linear(in_shape, [*oidx, _zero()])
            return convert(b, _first_best(em, is_max, dtype, b.gep(stored.ptr, [start],
                                                                   inbounds=True), n),
                           np.dtype(np.int64), aval_out.dtype)
        if row is not None:
            em.loop(n, lambda i: em.store(row, i, at(i)), name="row")
            return convert(b, _first_best(em, is_max, dtype, row.ptr, n), np.dtype(np.int64),
                           aval_out.dtype)
        b.store(at(_zero()), best_ptr)
        b.store(_zero(), idx_ptr)

        def step(i):
            v = at(i)
            best = b.load(best_ptr)
            take = _takes(em, is_max, dtype, v, best)
            b.store(b.select(take, v, best), best_ptr)
            b.store(b.select(take, i, b.load(idx_ptr)), idx_ptr)
        em.loop(in_shape[axis], step, name="r")
        return convert(b, b.load(idx_ptr), np.dtype(np.int64), aval_out.dtype)
    result = _per_output(em, aval_out, out, outer)
    em.release(row)
    return result


def _takes(em: Emitter, is_max: bool, dtype: np.dtype, v: ir.Value, best: ir.Value) -> ir.Value:
    """Whether `v` replaces `best` as the first best so far: strictly better, or the first NaN
    (which then stays)."""
    b = em.b
    if dtypes.is_inexact(dtype):
        best_nan, v_nan = _is_nan(em, dtype, best), _is_nan(em, dtype, v)
        better = emit_scalar(b, ew.gt_p if is_max else ew.lt_p, [dtype] * 2, dtypes.bool_,
                             [v, best], {})
        return b.and_(b.not_(best_nan), b.or_(v_nan, better))
    if dtype == dtypes.bool_ or dtype.kind == "u":
        return b.icmp_unsigned(">" if is_max else "<", v, best)
    return b.icmp_signed(">" if is_max else "<", v, best)


def _argminmax_rows(em: Emitter, x, axis: int, is_max: bool, out: Buf) -> Buf:
    """argmax/argmin along an axis before the last: at each index of the axes before it, the
    rows along it walked in order, each compared elementwise with a row of the best values so
    far and their places -- vectorised along the contiguous axes, where each output walked
    down its column alone (jnp.argmax over axis 0 of 1000^2 float32: 1.07 ms, JAX 0.12 0.85).
    The rows so far alternate between two pairs of buffers, each row read from one and written
    to the other: updated where they lie, LLVM made masked stores of them (slow on AMD's cores:
    1.2 ms). The same comparisons in the same order: the first best, or the first NaN."""
    b = em.b
    shape, dtype = x.aval.shape, x.aval.dtype
    lead, inner = list(shape[:axis]), list(shape[axis + 1:])
    size, out_dtype = math.prod(inner), out.aval.dtype
    bests = [em.alloc(ShapedArray((size,), dtype)) for _ in range(2)]
    places = [em.alloc(ShapedArray((size,), out_dtype)) for _ in range(2)]
    rows_after_first = shape[axis] - 1

    def rows(lidx):
        def at(r, iidx):
            return em.value_at(x, [*lidx, r, *iidx])

        def first(iidx):
            k = em.linear(inner, iidx)
            em.store(bests[0], k, at(_zero(), iidx))
            em.store(places[0], k, const(out_dtype, 0))
        em.loop_nest(inner, first)

        def row(r, src: int):
            def update(iidx):
                k = em.linear(inner, iidx)
                v, so_far = at(r, iidx), em.load(bests[src], k)
                take = _takes(em, is_max, dtype, v, so_far)
                em.store(bests[1 - src], k, b.select(take, v, so_far))
                em.store(places[1 - src], k, b.select(
                    take, convert(b, r, np.dtype(np.int64), out_dtype), em.load(places[src], k)))
            em.loop_nest(inner, update)

        def pair(p):
            r = b.add(b.mul(p, ir.Constant(I64, 2)), ir.Constant(I64, 1))
            row(r, 0)
            row(b.add(r, ir.Constant(I64, 1)), 1)
        em.loop(rows_after_first // 2, pair, name="rows")
        last = 0
        if rows_after_first % 2:
            row(ir.Constant(I64, shape[axis] - 1), 0)
            last = 1
        first_out = em.linear(out.aval.shape, [*lidx, *[_zero()] * len(inner)])
        em.loop(size, lambda k: em.store(out, b.add(first_out, k), em.load(places[last], k)),
                name="places")
    em.loop_nest(lead, rows)
    for buf in (*bests, *places):
        em.release(buf)
    return out


def _stored(x) -> Buf | None:
    """`x` as a buffer in row-major order: itself, or the buffer a reshape fused into this
    kernel reads (jnp.argmax without an axis flattens first); None for values computed here."""
    if isinstance(x, Lazy) and x.eqn.primitive.name == "reshape" and \
            x.eqn.params["dimensions"] is None and isinstance(x.eqn.invars[0], Var) and \
            isinstance(x.env.get(x.eqn.invars[0]), Buf):
        return Buf(x.env[x.eqn.invars[0]].ptr, x.aval)
    return x if isinstance(x, Buf) else None


def _first_best(em: Emitter, is_max: bool, dtype: np.dtype, row: ir.Value, n: int) -> ir.Value:
    """argmax (argmin) of the n elements of `dtype` at `row`, as an i64: the row's max (min) --
    lane_reduce's for floats, NaN where there is one -- then the least place holding it (equal
    to it, or a NaN where it is NaN), found by a min over the places in a vectorisable loop.
    Two reads of the row in place of a serial chain of compares and selects (1,000 rows of
    1,000 float32: 2.2 -> 0.1 ms)."""
    b = em.b
    name = "reduce_max" if is_max else "reduce_min"
    if dtypes.is_inexact(dtype):
        best = lane_reduce(em, name, dtype, row, n)
        best_nan = b.fcmp_unordered("uno", best, best)
    else:
        acc = em._entry_alloca(reg_type(dtype))
        b.store(b.load(row), acc)
        op = ">" if is_max else "<"
        compare = b.icmp_unsigned if dtype.kind == "u" else b.icmp_signed

        def fold(i):
            v, a = b.load(b.gep(row, [i], inbounds=True)), b.load(acc)
            b.store(b.select(compare(op, v, a), v, a), acc)
        em.loop(n, fold, name="best")
        best = b.load(acc)
    first = em._entry_alloca(I64)
    none = ir.Constant(I64, n)
    b.store(none, first)

    def find(i):
        v = b.load(b.gep(row, [i], inbounds=True))
        if dtypes.is_inexact(dtype):
            hit = b.or_(b.fcmp_ordered("==", v, best),
                        b.and_(best_nan, b.fcmp_unordered("uno", v, v)))
        else:
            hit = b.icmp_signed("==", v, best)
        place, f = b.select(hit, i, none), b.load(first)
        b.store(b.select(b.icmp_signed("<", place, f), place, f), first)
    em.loop(n, find, name="first")
    return b.load(first)


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    """Where products are summed: half floats in float32 (as XLA on CPU and the reference)."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _cumulative(em: Emitter, eqn, ins, dests):
    (x,) = ins
    name = eqn.primitive.name
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    aval = eqn.outvars[0].aval
    dtype = aval.dtype
    # complex cumlogsumexp folds from JAX's initial value -inf + 0j: its combine wraps the
    # imaginary part, so even the first output is combine(-inf + 0j, x[0]), not x[0]
    from_init = dtype.kind == "c" and name == "cumlogsumexp"
    work = _acc_dtype(dtype)
    b = em.b
    out = dests[0] or em.alloc(aval)
    acc_ptr = em._entry_alloca(reg_type(work))
    n = aval.shape[axis]
    outer_dims = [d for d in range(aval.ndim) if d != axis]

    def combine(acc, v):
        if name == "cumsum":
            return emit_scalar(b, ew.add_p, [work] * 2, work, [acc, v], {})
        if name == "cumprod":
            if work.kind == "c":
                return accumulating_mul(b, acc, v)
            return emit_scalar(b, ew.mul_p, [work] * 2, work, [acc, v], {})
        if name == "cummax":
            return emit_scalar(b, ew.max_p, [work] * 2, work, [acc, v], {})
        if name == "cummin":
            return emit_scalar(b, ew.min_p, [work] * 2, work, [acc, v], {})
        if work.kind == "c":
            return complex_logaddexp(b, acc, v)
        return _logaddexp(em, work, acc, v)

    def init():  # (from_init's -inf + 0j)
        part = reg_type(work).elements[0]
        return pack(b, ir.Constant(part, float("-inf")), ir.Constant(part, 0.0))

    def first_value(v):
        return combine(init(), v) if from_init else v

    inner = [aval.shape[d] for d in range(axis + 1, aval.ndim)]
    if math.prod(inner) > 1 and work == dtype:
        # rows along the axis, each combined elementwise with the row before it (already in
        # `out`): the loop over the inner dimensions vectorises and reads rows in order. Each
        # element is combined in the same order as by the scalar walk below, so the same bits
        # (half floats keep the walk: its running values are float32, rounded once each):
        # cumsum over axis 0 of 1000^2 float32 5.6 -> 0.16 ms (JAX 0.12: 4.5)
        def row(pre):
            def at(t, post):
                return [*pre, t, *post]

            def first(post):
                t = ir.Constant(I64, n - 1 if reverse else 0)
                v = convert(b, em.value_at(x, at(t, post)), dtype, work)
                em.store(out, em.linear(aval.shape, at(t, post)),
                         convert(b, first_value(v), work, dtype))
            em.loop_nest(inner, first)

            def step(j):
                j = b.add(j, ir.Constant(I64, 1))
                t = b.sub(ir.Constant(I64, n - 1), j) if reverse else j
                before = b.add(t, ir.Constant(I64, 1)) if reverse else b.sub(t, ir.Constant(I64, 1))

                def element(post):
                    v = convert(b, em.value_at(x, at(t, post)), dtype, work)
                    acc = convert(b, em.load(out, em.linear(aval.shape, at(before, post))),
                                  dtype, work)
                    em.store(out, em.linear(aval.shape, at(t, post)),
                             convert(b, combine(acc, v), work, dtype))
                em.loop_nest(inner, element)
            em.loop(n - 1, step, name="cum", vectorize=False)
        if n:
            em.loop_nest(list(aval.shape[:axis]), row)
        return [out]

    def outer(oidx):
        def step(j):
            t = b.sub(ir.Constant(I64, n - 1), j) if reverse else j
            full: list = [None] * aval.ndim
            for d, i in zip(outer_dims, oidx):
                full[d] = i
            full[axis] = t
            v = convert(b, em.value_at(x, full), dtype, work)
            first = b.icmp_signed("==", j, _zero())
            if from_init:
                acc = combine(b.select(first, init(), b.load(acc_ptr)), v)
            else:
                acc = b.select(first, v, combine(b.load(acc_ptr), v))
            b.store(acc, acc_ptr)
            em.store(out, em.linear(aval.shape, full), convert(b, acc, work, dtype))
        em.loop(n, step, name="cum")
    em.loop_nest([aval.shape[d] for d in outer_dims], outer)
    return [out]


def _logaddexp(em: Emitter, dtype, a: ir.Value, c: ir.Value) -> ir.Value:
    """log(exp(a) + exp(c)) = max + log1p(exp(-|a - c|)), with -inf/-inf and NaN handled."""
    b = em.b
    from .scalar_ops import math_fn
    hi = emit_scalar(b, ew.max_p, [dtype] * 2, dtype, [a, c], {})
    lo = emit_scalar(b, ew.min_p, [dtype] * 2, dtype, [a, c], {})
    diff = b.fsub(lo, hi)
    # -inf/-inf or +inf/+inf: the sum is that value (inf - inf would make a NaN below)
    fabs = b.module.declare_intrinsic("llvm.fabs", [a.type])
    a_inf = b.fcmp_ordered("==", b.call(fabs, [a]), ir.Constant(a.type, float("inf")))
    same_inf = b.and_(a_inf, b.fcmp_ordered("==", a, c))
    t = math_fn(b, "log1p", [math_fn(b, "exp", [diff])])
    return b.select(same_inf, hi, b.fadd(hi, t))


STRUCTURAL.update({p: _reduce for p in _REDUCE_COMBINE})
STRUCTURAL.update({rd.argmax_p: _argminmax, rd.argmin_p: _argminmax})
STRUCTURAL.update({p: _cumulative for p in (cu.cumsum_p, cu.cumprod_p, cu.cummax_p, cu.cummin_p,
                                            cu.cumlogsumexp_p)})
