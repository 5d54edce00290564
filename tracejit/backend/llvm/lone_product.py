"""A program that is one float32 product on our gemm (gemm.py), beside codegen: its entry is a
routine of the runtime's own, compiled once per machine (the library cache), that reads the
product's shape and tiling from a block of int64 parameters passed where a program's workspace
pointer goes. Such a program's first call then pays no code generation and no LLVM (matmul
1024^2: ~7 of its ~10 ms of compile CPU); it computes what linalg's code for the same product
does: the same routine called on the same tiles (product_plan), or once where the pool has one
thread, and a mid-size product's choice between the two timed per call as linalg's code times
it (the times kept in the block), so the same bits. Products split over k, BLAS's products and
batches keep codegen."""
from __future__ import annotations

import functools
import math

import numpy as np
from llvmlite import ir

from ...core import dtypes
from ...lax.linalg import dot_general_p
from .types import F32, I8, I32, I64

I8P = I8.as_pointer()
# the parameter block's words
LHS, RHS, M, N, K, LHS_T, RHS_T, AXIS, PER, TILES, TIMED = range(11)
# a timed product's times and calls (linalg._timed_site's slots: one call, tiles, calls), which
# the entry updates as linalg's code does (_pick_tiles, _record_time)
SITE = 11
WORDS = SITE + 3
_AXES = {None: 0, "m": 1, "n": 2}


def params(jaxpr, donated) -> np.ndarray | None:
    """The parameter block of `jaxpr` (optimised) if it is one product this entry runs, else
    None: a lone float32 dot_general of two inputs (or consts) whose result is the only output,
    no batch, a layout BLAS takes, our routine chosen for it, a plan of one call or of row or
    column tiles, and no mode forced (linalg.GEMM_MODE)."""
    from . import linalg
    from .blas import gemm_work
    if donated or len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1 or linalg.GEMM_MODE:
        return None
    eqn, = jaxpr.eqns
    inputs = [*jaxpr.constvars, *jaxpr.invars]
    if eqn.primitive is not dot_general_p or jaxpr.outvars[0] is not eqn.outvars[0] or \
            not all(any(x is v for v in inputs) for x in eqn.invars):
        return None
    lhs, rhs = (x.aval for x in eqn.invars)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    f32 = dtypes.float32
    if lb or rb or not (lhs.dtype == rhs.dtype == eqn.outvars[0].aval.dtype == f32):
        return None
    lf = [d for d in range(lhs.ndim) if d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rc]
    m, n, k = (math.prod(a.shape[d] for d in ds) for a, ds in ((lhs, lf), (rhs, rf), (lhs, lc)))
    lt, rt = linalg._gemm_layout(lhs, (), lc, lf), linalg._gemm_layout(rhs, (), rf, rc)
    if lt is None or rt is None or m == 1 or n == 1 or m * n * k < linalg._BLAS_MIN_FLOPS:
        return None
    plan, routine = linalg.product_plan(f32, m, n, k)
    if routine != "ours" or plan is not None and plan[0] == "k":
        return None
    axis, per, tiles = plan or (None, 0, 1)
    # (a mid-size product runs tiles or one call, whichever has been faster here lately)
    timed = plan is not None and gemm_work(f32, m, n, k) < linalg.ONLINE_GEMM_MAX_WORK
    index = [next(i for i, v in enumerate(inputs) if v is x) for x in eqn.invars]
    return np.array([*index, m, n, k, lt, rt, _AXES[axis], per, tiles, timed, 0, 0, 0],
                    np.int64)


def symbol(lanes: int) -> str:
    return f"tracejit_lone_product_{lanes}"


def module(lanes: int) -> ir.Module:
    """`void entry(i8** ins, i8** outs, i64* params)` (a program's entry's type) and its tile
    body, calling gemm's routine as linalg's tiles do (linalg._tile_body, _emit_gemm)."""
    from . import gemm, linalg, thread_pool
    from .codegen import Emitter
    em = Emitter(symbol(lanes))  # (linalg's choice of tiles, below, takes its module and builder)
    mod = em.module
    routine = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P] * 13), gemm.symbol(lanes))
    pool = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]), thread_pool.SYMBOL)
    ctx_t = ir.ArrayType(I8P, 4)  # params, lhs, rhs, out

    # part(ctx, axis, lo, count): the product's rows (axis 1) or columns (2) [lo, lo + count),
    # or all of it (0)
    part = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ctx_t.as_pointer(), I64, I64, I64]),
                       "part")
    part.linkage = "internal"
    b = ir.IRBuilder(part.append_basic_block("entry"))
    ctx, axis, lo, count = part.args
    slot = [b.load(b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, j)])) for j in range(4)]
    p = b.bitcast(slot[0], I64.as_pointer())
    word = {w: b.load(b.gep(p, [ir.Constant(I64, w)])) for w in (M, N, K, LHS_T, RHS_T)}
    m, n, k = word[M], word[N], word[K]
    lhs_t, rhs_t = (b.icmp_unsigned("!=", word[w], ir.Constant(I64, 0)) for w in (LHS_T, RHS_T))
    lhs, rhs, out = (b.bitcast(s, F32.as_pointer()) for s in slot[1:])
    rows, cols = (b.icmp_unsigned("==", axis, ir.Constant(I64, a)) for a in (1, 2))

    def at(ptr, offset):
        return b.gep(ptr, [offset], inbounds=True)
    # rows: lhs from row lo, out from row lo; columns: rhs from column lo, out from column lo
    lhs = b.select(rows, at(lhs, b.select(lhs_t, lo, b.mul(lo, k))), lhs)
    rhs = b.select(cols, at(rhs, b.select(rhs_t, b.mul(lo, k), lo)), rhs)
    out = b.select(rows, at(out, b.mul(lo, n)), b.select(cols, at(out, lo), out))
    m_part, n_part = b.select(rows, count, m), b.select(cols, count, n)

    def slot_of(t, value):
        s = b.alloca(t)
        b.store(value, s)
        return b.bitcast(s, I8P)

    def letter(transposed):
        return slot_of(I8, b.select(transposed, ir.Constant(I8, ord("T")),
                                    ir.Constant(I8, ord("N"))))

    def int32(v):
        return slot_of(I32, b.trunc(v, I32))
    # Fortran: C^T[n,m] = op(rhs^T)[n,k] op(lhs^T)[k,m] (linalg._emit_gemm)
    b.call(routine, [letter(rhs_t), letter(lhs_t), int32(n_part), int32(m_part), int32(k),
                     slot_of(F32, ir.Constant(F32, 1.0)), b.bitcast(rhs, I8P),
                     int32(b.select(rhs_t, k, n)), b.bitcast(lhs, I8P),
                     int32(b.select(lhs_t, m, k)), slot_of(F32, ir.Constant(F32, 0.0)),
                     b.bitcast(out, I8P), int32(n)])
    b.ret_void()

    tile = ir.Function(mod, thread_pool.BODY_TYPE, "tile")
    tile.linkage = "internal"
    b = ir.IRBuilder(tile.append_basic_block("entry"))
    ctx = b.bitcast(tile.args[0], ctx_t.as_pointer())
    p = b.bitcast(b.load(b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, 0)])),
                  I64.as_pointer())
    axis, per, m, n = (b.load(b.gep(p, [ir.Constant(I64, w)])) for w in (AXIS, PER, M, N))
    lo = b.mul(tile.args[1], per)
    rest = b.sub(b.select(b.icmp_unsigned("==", axis, ir.Constant(I64, 1)), m, n), lo)
    b.call(part, [ctx, axis, lo, b.select(b.icmp_signed("<", rest, per), rest, per)])
    b.ret_void()

    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P.as_pointer()] * 2 + [I8P]),
                     symbol(lanes))
    b = em.b = ir.IRBuilder(fn.append_basic_block("entry"))
    ins, outs, params_ = fn.args
    p = b.bitcast(params_, I64.as_pointer())
    ctx = b.alloca(ctx_t)
    values = [params_, *(b.load(b.gep(ins, [b.load(b.gep(p, [ir.Constant(I64, w)]))]))
                         for w in (LHS, RHS)), b.load(outs)]
    for j, v in enumerate(values):
        b.store(v, b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, j)]))
    tiles = b.load(b.gep(p, [ir.Constant(I64, TILES)]))
    timed = b.icmp_unsigned("!=", b.load(b.gep(p, [ir.Constant(I64, TIMED)])),
                            ir.Constant(I64, 0))
    # a timed product: linalg's choice between tiles and one call on the times the block
    # keeps (its site: [one call, tiles, calls]), updated after as linalg's code does; any
    # other: tiles wherever the pool has threads (linalg's _pick_tiles, _record_time)
    site = b.bitcast(b.gep(p, [ir.Constant(I64, SITE)]), ir.ArrayType(I64, 3).as_pointer())
    with b.if_else(timed) as (then, otherwise):
        with then:
            picked, began = linalg._pick_tiles(em, site)  # (no mode forced: `params`)
            picked_in = b.block
        with otherwise:
            threads = b.not_(linalg._one_thread(em))
            threads_in = b.block
    choice = b.phi(ir.IntType(1))
    choice.add_incoming(picked, picked_in)
    choice.add_incoming(threads, threads_in)
    start = b.phi(I64)
    start.add_incoming(began, picked_in)
    start.add_incoming(ir.Constant(I64, 0), threads_in)
    use_tiles = b.and_(b.icmp_signed(">=", tiles, ir.Constant(I64, 2)), choice)
    with b.if_else(use_tiles) as (tiled, serial):
        with tiled:  # (Ctrl-C makes the pool skip tiles; the caller discards the output)
            b.call(pool, [b.bitcast(tile, I8P), b.bitcast(ctx, I8P), tiles])
        with serial:
            zero = ir.Constant(I64, 0)
            b.call(part, [ctx, zero, zero, zero])
    with b.if_then(timed):
        linalg._record_time(em, site, use_tiles, start)
    b.ret_void()
    return mod


@functools.cache
def address(lanes: int) -> int:
    """The entry of `lanes`' routine, its code kept for the process (compiled once per machine:
    the library cache); gemm's routine and the pool bound first."""
    from . import gemm, jit_engine, thread_pool
    gemm.routine(lanes)
    thread_pool.symbol()
    code = jit_engine.compile_library(symbol(lanes), lambda: module(lanes), speed_level=1)
    _codes.append(code)
    return code.address(symbol(lanes))


_codes: list = []  # (the entries' code, kept for the process)


@functools.cache
def ir_text(lanes: int) -> str:
    """The entry's IR (as_text("llvm") of such a program)."""
    return str(module(lanes))
