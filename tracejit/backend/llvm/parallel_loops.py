"""Parallel loops (codegen, after fusion): a large kernel whose loop nest runs over independent
output rows (fused elementwise, gathers, row reductions, argmax, sorts and top_k, row_map
kernels) is emitted as a chunk body `void body(i8* ctx, i64 chunk)` and run on our thread pool
(thread_pool.py).

The body is the equation's ordinary lowering with its outermost loop cut to the chunk's rows;
each row is computed exactly as in the serial loop, so results are bit-identical for every
thread count. The lowering is checked while it is emitted: exactly one outermost loop, with a
static trip count of two or more; anything else (an init loop then an accumulating loop, a
host callback) drops the body and lowers the equation serially. Temporaries the body allocates
get a workspace region per chunk (chunks are capped so the regions stay small).

Reductions that fold rows together (a whole array to a scalar; the leading axis away) give
each chunk a partial (a value, or a row) and fold the partials in a fixed pairwise tree on the
calling thread: the same result every run and for every thread count."""
from __future__ import annotations

import functools
import math

import numpy as np
from llvmlite import ir

from ...compiler import element_loops
from ...compiler.fusion import element_op, fused_p
from ...compiler.rows import row_map_p
from ...core.avals import ShapedArray
from ...core.jaxpr import Var
from ...lax import reductions as rd
from ...lax.convolution import conv_general_dilated_p
from ...lax.sorting import sort_p, top_k_p
from . import convolution, thread_pool
from .codegen import VECTORIZE_COLD_ELEMENTS, Buf, Emitter, Scalar, define
from .interrupt import emit_poll
from .types import I8, I64, const, mem_type

I8P = I8.as_pointer()

# Elements (largest operand or result) from which a kernel runs on the pool. Waking a sleeping
# worker costs a futex wake and a scheduler hop (~5-50 us, more on a loaded machine), and a
# cheap elementwise op is memory-bound (2^20 float32 x*2+1: ~120 us on one thread, no faster on
# two); benchmarks/thread_threshold.py on the shared 2-core machine (load average ~13) found no
# size where two threads won on a cheap kernel, and no loss below 2^18 either. Kept at 2^17:
# conservative for cheap kernels, where transcendental chains (compute-bound) start to gain.
PARALLEL_MIN_ELEMENTS = 1 << 17
# An element of an iterative op (Primitive.iterative: betainc, igamma, ...) counts as this
# many: ~20-60 ns of a loop each in vectors (special_loops.py), against ~0.3-1 ns of a cheap
# op. float32 betainc of a, b in [0.1, 20] (medians, load ~0.3): 2,048 elements 87 us on one
# thread, 48 on two; 64K 2.76 ms and 1.39.
ITERATIVE_WORK = 64
# Work per chunk: many chunks per thread, so a thread the scheduler delays holds back little.
CHUNK_ELEMENTS = 1 << 15
# A body with temporaries of its own gets a region per chunk: at most this many chunks, and at
# most this many bytes for all the regions together
MAX_REGION_CHUNKS = 64
MAX_REGION_BYTES = 8 << 20
# Elements from which a parallel kernel checks for Ctrl-C after the pool returns. A program that
# polls pays for the native SIGINT handler's check around every call (a sigaction read through
# ctypes, runtime/interrupts.py); a smaller kernel ends within milliseconds anyway, and a loop
# around it polls at its back-edge.
POLL_MIN_ELEMENTS = 1 << 24

_REDUCERS = {rd.reduce_sum_p, rd.reduce_prod_p, rd.reduce_max_p, rd.reduce_min_p,
             rd.reduce_and_p, rd.reduce_or_p, rd.reduce_xor_p}
_ROW_ROOTS = _REDUCERS | {rd.argmax_p, rd.argmin_p}
_SORTS = {sort_p, top_k_p}


def _root(eqn):
    return eqn.params["body"].jaxpr.eqns[-1] if eqn.primitive is fused_p else eqn


def _full_reduction(eqn) -> bool:
    """A reduce_* of a whole array to a scalar, in a type whose partial results lose nothing
    (half floats accumulate in float32 and round once; complex is left serial)."""
    root = _root(eqn)
    if root.primitive not in _REDUCERS or len(eqn.outvars) != 1:
        return False
    dtype = eqn.outvars[0].aval.dtype
    return eqn.outvars[0].aval.ndim == 0 and root.invars[0].aval.ndim >= 1 and (
        dtype in (np.float32, np.float64) or dtype.kind in "iub")


def _column_reduction(eqn) -> bool:
    """A reduce_* over the leading axis only, keeping the others (column sums, batch means):
    each chunk reduces a block of rows into a partial row, then the partial rows fold."""
    root = _root(eqn)
    if root.primitive not in _REDUCERS or len(eqn.outvars) != 1:
        return False
    x, dtype = root.invars[0].aval, eqn.outvars[0].aval.dtype
    return root.params["axes"] == (0,) and x.ndim >= 2 and x.shape[0] >= 2 and (
        dtype in (np.float32, np.float64) or dtype.kind in "iub")


def candidate(eqn) -> bool:
    """Whether the equation's loop nest runs over independent rows of its outputs: an
    elementwise op or index map, a row reduction (the last axis reduced) or a row kernel; or
    is a whole-array reduction (each chunk reduces a block of rows, then the partials)."""
    if _full_reduction(eqn) or _column_reduction(eqn):
        return True
    if not eqn.outvars or any(v.aval.ndim == 0 for v in eqn.outvars):
        return False
    if eqn.primitive is row_map_p:
        return True
    if eqn.primitive is conv_general_dilated_p:  # (its outermost loop: the batch)
        return convolution.direct(eqn)
    root = _root(eqn)
    if element_op(root):  # (threefry2x32's two words too)
        return True
    if root.primitive in _ROW_ROOTS:
        x = root.invars[0].aval
        axes = root.params["axes"]
        # (or middle axes of a float sum, each leading index's rows summed in turn:
        # reductions._blocked_column_sum, whose loop over them is the outermost)
        return x.ndim - 1 in axes or (
            root.primitive is rd.reduce_sum_p and 0 not in axes and
            x.dtype in (np.float32, np.float64) and x.shape[0] >= 2)
    if root.primitive in _SORTS:  # a row at a time along the axis (sorting.py): two rows or more
        shape = root.invars[0].aval.shape
        axis = root.params["dimension" if root.primitive is sort_p else "axis"]
        return math.prod(shape[:axis] + shape[axis + 1:]) >= 2
    return False


def work(eqn) -> int:
    """The elements a kernel touches: its largest operand or result (ITERATIVE_WORK times
    that for a kernel of an iterative op; a direct convolution's output elements times its
    contraction over 16, where that is more); for a row kernel, its
    rows times the largest row (per step, for the column blocks of a scan's xs and ys) times
    the iterations per element of a loop on each row (compiler.element_loops)."""
    if eqn.primitive is conv_general_dilated_p:  # (an output element: a row of products)
        elements = max(v.aval.size for v in (*eqn.invars, *eqn.outvars))
        return max(elements, eqn.outvars[0].aval.size * convolution.contraction(eqn) // 16)
    if eqn.primitive is not row_map_p:
        elements = max(v.aval.size for v in (*eqn.invars, *eqn.outvars))
        body = eqn.params["body"].jaxpr.eqns if eqn.primitive is fused_p else [eqn]
        return elements * (ITERATIVE_WORK if any(e.primitive.iterative for e in body) else 1)
    p = eqn.params
    body = p["body"].jaxpr
    row = max([v.aval.size // (v.aval.shape[0] if a == 1 else 1) for v, a in
               zip((*body.invars, *body.outvars), (*p["in_axes"], *p["out_axes"]))
               if a is not None], default=1)
    return math.prod(p["rows"]) * row * element_loops.trips(body)


def worth(eqn) -> bool:
    return candidate(eqn) and work(eqn) >= PARALLEL_MIN_ELEMENTS


class _Split:
    """Cuts the first outermost loop of a chunk body to [chunk * per, min(.. + per, n)), `per`
    read from the context at run time; notes when the body is not one loop over rows."""

    def __init__(self, chunk: ir.Value, per: ir.Value):
        self.chunk, self.per = chunk, per
        self.rows: int | None = None  # the split loop's trip count
        self.ok = True

    def bounds(self, em: Emitter, n) -> tuple:
        """(start, stop) of an outermost loop of n trips in the chunk body."""
        if self.rows is not None or not isinstance(n, int) or n < 2:
            self.ok = False
            return ir.Constant(I64, 0), n
        self.rows = n
        b = em.b
        lo = b.mul(self.chunk, self.per)
        hi = b.add(lo, self.per)
        hi = b.select(b.icmp_signed("<", hi, ir.Constant(I64, n)), hi, ir.Constant(I64, n))
        return lo, hi


def lower_parallel(em: Emitter, eqn, env: dict, dests: list) -> list | None:
    """Lower `eqn` as a chunk body called through the pool; None (nothing emitted) when its
    lowering turns out not to be one loop over rows."""
    dests_given = dests
    partials = _full_reduction(eqn)
    columns = _column_reduction(eqn)
    # the context: one i8* per distinct outer value (Bufs by pointer, Scalars by a stack slot)
    outer: dict[int, object] = {}
    for v in eqn.invars:
        if isinstance(v, Var):
            x = env[v]
            if not isinstance(x, (Buf, Scalar)):
                return None
            outer.setdefault(id(x.ptr if isinstance(x, Buf) else x.value), x)
    out_avals = [v.aval for v in eqn.outvars]
    fixed = 4  # inputs, workspace regions, rows per chunk, bytes per region
    body_fn = define(em.module, thread_pool.BODY_TYPE,
                     em.module.get_unique_name(f"chunks{len(em.module.globals)}"))
    body_fn.linkage = "internal"
    saved = (em.b, em.inputs, em.workspace, em._callback_ids, em._memo, em._trips,
             em.workspace_bytes, em._free, em._slot_of, em.split, em._allocs)
    callbacks = len(em.callbacks)
    b = em.b = ir.IRBuilder(body_fn.append_basic_block("entry"))
    ctx = b.bitcast(body_fn.args[0], I8P.as_pointer())
    chunk = body_fn.args[1]

    def slot(k):
        return b.load(b.gep(ctx, [ir.Constant(I64, k)], inbounds=True))
    try:
        em.inputs = b.bitcast(slot(0), I8P.as_pointer())
        region_bytes = b.ptrtoint(slot(3), I64)
        em.workspace = b.gep(slot(1), [b.mul(chunk, region_bytes)], inbounds=True)
        split = em.split = _Split(chunk, b.ptrtoint(slot(2), I64))
        em._callback_ids, em._memo, em._trips = None, None, []
        em.workspace_bytes, em._free, em._slot_of = 0, [], {}
        kenv = {}
        for k, (key, x) in enumerate(outer.items()):
            raw = slot(fixed + k)
            if isinstance(x, Buf):
                kenv[key] = Buf(b.bitcast(raw, x.ptr.type), x.aval)
            else:
                kenv[key] = Scalar(b.load(b.bitcast(raw, x.value.type.as_pointer())), x.aval)
        n_dest = fixed + len(outer)
        kdests = [Buf(b.bitcast(slot(n_dest + j), mem_type(a.dtype).as_pointer()), a)
                  for j, a in enumerate(out_avals)]
        # (per operand its own aval: one buffer may come under two shapes, codegen's `_view`)
        inner_env = {}
        for v in eqn.invars:
            if isinstance(v, Var):
                x = env[v]
                inner = kenv[id(x.ptr if isinstance(x, Buf) else x.value)]
                inner_env[v] = Buf(inner.ptr, x.aval) if isinstance(x, Buf) else inner
        if columns:  # this chunk's rows reduced to one row: partial row number `chunk`
            em.split = None
            split.rows = _column_body(em, eqn, inner_env, kdests[0], chunk, split.per)
        elif partials:  # this chunk's rows reduced to one value: partial number `chunk`
            (out,) = em.lower(eqn, inner_env, [None])
            (kd,) = kdests
            em.store(kd, chunk, em.scalar_of(out))
        else:
            for out, kd in zip(em.lower(eqn, inner_env, kdests), kdests):
                if not (isinstance(out, Buf) and out.ptr is kd.ptr):
                    em.materialize(out, kd)
        b.ret_void()
        local_bytes = em.workspace_bytes
        ok = split.ok and split.rows is not None and len(em.callbacks) == callbacks
    finally:
        (em.b, em.inputs, em.workspace, em._callback_ids, em._memo, em._trips,
         em.workspace_bytes, em._free, em._slot_of, em.split, em._allocs) = saved
    if ok:
        rows = split.rows
        per = max(1, CHUNK_ELEMENTS * rows // max(work(eqn), 1))
        # regions (and partial rows) per chunk: capped in count and in bytes
        region = local_bytes + (out_avals[0].size * out_avals[0].dtype.itemsize if columns else 0)
        if region:
            cap = max(1, min(MAX_REGION_CHUNKS, MAX_REGION_BYTES // region))
            per = max(per, -(-rows // cap))
        n_chunks = -(-rows // per)
        ok = n_chunks >= 2
    if not ok:  # not one loop over rows, or too little to split: the serial lowering
        del em.module.globals[body_fn.name]
        del em.callbacks[callbacks:]
        return None
    # the caller's side: destinations, regions, the context, the call, an interrupt check
    if partials or columns:
        (aval,) = out_avals
        dests = [em.alloc(ShapedArray((n_chunks, *aval.shape), aval.dtype))]
    else:
        dests = [d if d is not None else em.alloc(a) for a, d in zip(out_avals, dests_given)]
    b = em.b
    regions = em.alloc(ShapedArray((n_chunks * local_bytes,), np.dtype(np.uint8))) \
        if local_bytes else None
    words = [b.bitcast(em.inputs, I8P), b.bitcast(regions.ptr, I8P) if regions else
             ir.Constant(I8P, None), b.inttoptr(ir.Constant(I64, per), I8P),
             b.inttoptr(ir.Constant(I64, local_bytes), I8P)]
    for x in outer.values():
        if isinstance(x, Buf):
            words.append(b.bitcast(x.ptr, I8P))
        else:
            cell = em._entry_alloca(x.value.type)
            b.store(x.value, cell)
            words.append(b.bitcast(cell, I8P))
    words += [b.bitcast(d.ptr, I8P) for d in dests]
    ctx_mem = em._entry_alloca(ir.ArrayType(I8P, len(words)))
    for k, w in enumerate(words):
        b.store(w, b.gep(ctx_mem, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)],
                         inbounds=True))
    pool_fn = em.module.globals.get(thread_pool.symbol())
    if pool_fn is None:
        pool_fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]),
                              thread_pool.SYMBOL)
    b.call(pool_fn, [b.bitcast(body_fn, I8P), b.bitcast(ctx_mem, I8P),
                     ir.Constant(I64, n_chunks)])
    if regions is not None:
        em.release(regions)
    if work(eqn) >= POLL_MIN_ELEMENTS:
        emit_poll(em)  # Ctrl-C made the pool skip chunks: leave now (outputs are discarded)
    if partials or columns:
        return [_combine_partials(em, _root(eqn).primitive, dests[0], n_chunks,
                                  dests_given[0])]
    return dests


def _column_body(em: Emitter, eqn, env: dict, parts: Buf, chunk: ir.Value, per: ir.Value
                 ) -> int:
    """The chunk body of a leading-axis reduction: rows [chunk * per, + per) of the operand
    folded, in order, into partial row `chunk` of `parts` (the inner loop runs along the
    contiguous kept axes and vectorises). Returns the operand's row count."""
    from .codegen import lazy_env
    from .reductions import _combine, _reduce_identity
    root = _root(eqn)
    if eqn.primitive is fused_p:  # the root's operand, fused as codegen's `fused` rule does
        body = eqn.params["body"].jaxpr
        fenv = lazy_env(body, [em.read(env, v) for v in eqn.invars])
        x = em.read(fenv, root.invars[0])
    else:
        x = em.read(env, root.invars[0])
    b = em.b
    rows, shape = x.aval.shape[0], x.aval.shape[1:]
    dtype = eqn.outvars[0].aval.dtype
    size = ir.Constant(I64, int(np.prod(shape)))
    part = Buf(b.gep(parts.ptr, [b.mul(chunk, size)], inbounds=True), ShapedArray(shape, dtype))
    init = const(dtype, _reduce_identity(root.primitive.name, dtype))
    em.loop_nest(shape, lambda idx: em.store(part, em.linear(shape, idx), init))
    lo = b.mul(chunk, per)
    hi = b.add(lo, per)
    hi = b.select(b.icmp_signed("<", hi, ir.Constant(I64, rows)), hi, ir.Constant(I64, rows))

    def row(i):
        r = b.add(lo, i)

        def step(idx):
            lin = em.linear(shape, idx)
            em.store(part, lin, _combine(em, root.primitive, dtype, em.load(part, lin),
                                         em.value_at(x, [r, *idx])))
        em.loop_nest(shape, step)
    em.loop(b.sub(hi, lo), row, name="r")
    return rows


def _combine_partials(em: Emitter, reducer, parts: Buf, n: int, dest: Buf | None):
    """The partials (n values, or n rows of values) combined pairwise in a fixed tree
    (neighbours, then pairs of pairs, ...): the order depends on the sizes only, never on
    which thread finished first, and a float sum's rounding error grows as log2 of the chunk
    count. The result is row 0, copied to `dest` (or a register, for a scalar)."""
    from .reductions import _combine
    b = em.b
    dtype = parts.aval.dtype
    out_aval = parts.aval.update(shape=parts.aval.shape[1:])
    m = out_aval.size
    # one loop over the levels (strides 1, 2, 4, ... below n) with the pairs counted at run
    # time, not a loop per level: the same combines in the same order, and LLVM spent ~4 ms
    # optimising sum 10M's nine unrolled levels (~6 ms of its ~22 ms compile with machine code)
    c = functools.partial(ir.Constant, I64)

    def level(lvl):
        stride = b.shl(c(1), lvl)
        # len(range(0, n - stride, 2 * stride)): ceil((n - stride) / (2 * stride))
        pairs = b.lshr(b.add(stride, c(n - 1)), b.add(lvl, c(1)))
        gap = b.mul(stride, c(m))

        def fold(j):
            i = b.mul(b.shl(gap, c(1)), j)

            def elem(e):
                at = b.add(i, e)
                em.store(parts, at, _combine(em, reducer, dtype, em.load(parts, at),
                                             em.load(parts, b.add(at, gap)), ordered=True))
            if m == 1:
                elem(c(0))
            else:  # (vectorised as the first level's pairs * m elements decide)
                em.loop(m, elem, name="fold.e",
                        vectorize=n // 2 * m >= VECTORIZE_COLD_ELEMENTS)
        em.loop(pairs, fold, name="fold", vectorize=False)
    em.loop((n - 1).bit_length(), level, name="fold.lvl", over_data=False, vectorize=False)
    if out_aval.ndim == 0:
        total = em.load(parts, ir.Constant(I64, 0))
        em.release(parts)
        if dest is not None:
            em.store(dest, None, total)
            return dest
        return Scalar(total, out_aval)
    dest = dest if dest is not None else em.alloc(out_aval)
    em.loop(m, lambda e: em.store(dest, e, em.load(parts, e)), name="copy")
    em.release(parts)
    return dest
