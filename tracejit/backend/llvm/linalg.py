"""Structural rule for dot_general: large float/complex products through BLAS (?gemv for one
row or column, ?gemm otherwise, large ones as tiles on our thread pool, a batch holding work
enough for the pool as one pool job), the rest (small, integer, half precision, unusual
layouts) as an inline loop nest. codegen's Emitter dispatches to it through
`rules.STRUCTURAL`."""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax import elementwise as ew
from ...lax.linalg import dot_general_p
from ...lax.reductions import reduce_sum_p
from .codegen import I8P, Buf, Emitter, Scalar, _as_value
from .reductions import _acc_dtype, _combine
from .rules import STRUCTURAL
from .scalar_ops import convert, emit_scalar
from .types import I8, I64, const, mem_type, reg_type


def _gemm_layout(aval: ShapedArray, batch: tuple, contract: tuple, free: list[int]):
    """(transposed?, rows, cols) if the operand is a row-major [batch.., A, B] matrix whose two
    groups are the free and contracting dims in either order; None otherwise. Dimensions of
    size 1 take no place in memory, so they are left out first: a batch dimension after a
    size-1 free one (shard_map's per-device split of one device) is still leading. Both
    operands drop the same batch and contracting pairs (a pair's two sizes are equal)."""
    kept = [d for d in range(aval.ndim) if aval.shape[d] != 1]
    at = {d: i for i, d in enumerate(kept)}
    batch, contract, free = ([at[d] for d in dims if d in at] for dims in (batch, contract, free))
    nb = len(batch)
    if batch != list(range(nb)):
        return None
    rest = list(range(nb, len(kept)))
    if rest == free + contract:
        return False
    if rest == contract + free:
        return True
    return None


def _gemm_operand(em: Emitter, x: Buf, batch: tuple, contract: tuple, free: list[int]
                  ) -> tuple[Buf, bool]:
    """x as a GEMM operand, (buffer, transposed): x itself where its layout is one
    (_gemm_layout), else a copy of it in [batch.., free.., contract..] order, as XLA's dot
    decomposition transposes. A product over a middle dimension (jax.image.resize's, an
    einsum's) otherwise ran as a loop nest: (64, 64, 64) x (64, 128) over the middle 15 ms,
    against 0.6 for the same product over the last."""
    t = _gemm_layout(x.aval, batch, contract, free)
    if t is not None:
        return x, t
    perm = [*batch, *free, *contract]
    shape = tuple(x.aval.shape[d] for d in perm)
    copy = em.alloc(x.aval.update(shape=shape))

    def store(idx: list[ir.Value]) -> None:
        at: list = [None] * len(perm)
        for i, d in zip(idx, perm):
            at[d] = i
        em.store(copy, em.linear(shape, idx), em.load(x, em.linear(x.aval.shape, at)))
    em.tiled_nest(shape, store)
    return copy, False


I32 = ir.IntType(32)
_BLAS_MIN_FLOPS = 32 * 32 * 32
_GEMM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _dot_general(em: Emitter, eqn, ins, dests):
    lhs, rhs = [em.materialize(x) if not isinstance(x, Scalar) else x for x in ins]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    aval_out = eqn.outvars[0].aval
    out = dests[0] or em.alloc(aval_out)
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    dtype = aval_out.dtype
    m = math.prod(lhs.aval.shape[d] for d in lf)
    n = math.prod(rhs.aval.shape[d] for d in rf)
    k = math.prod(lhs.aval.shape[d] for d in lc)
    big = isinstance(lhs, Buf) and isinstance(rhs, Buf) and m * n * k >= _BLAS_MIN_FLOPS
    if big and dtype in _GEMM_DTYPES and lhs.aval.dtype == rhs.aval.dtype == dtype:
        _blas_product(em, dtype, lhs, rhs, out, (lb, lc, lf), (rb, rc, rf), m, n, k)
        return [out]
    half = (dtypes.float16, dtypes.bfloat16)  # (bfloat16 is bound once ml_dtypes is loaded)
    if big and lhs.aval.dtype in half and rhs.aval.dtype in half and \
            dtype in (*half, dtypes.float32):
        _half_product(em, lhs, rhs, out, (lb, lc, lf), (rb, rc, rf), m, n, k)
        return [out]
    exact = _exact_float(lhs.aval.dtype, rhs.aval.dtype, k)
    if big and dtypes.is_int(dtype) and exact is not None and m > 1 and n > 1:
        lt = _gemm_layout(lhs.aval, lb, lc, lf)
        rt = _gemm_layout(rhs.aval, rb, rf, rc)
        if lt is not None and rt is not None:
            _integer_gemm(em, exact, lhs, rhs, out, math.prod(lhs.aval.shape[d] for d in lb),
                          m, n, k, lt, rt)
            return [out]
    return _dot_loops(em, eqn, lhs, rhs, out, dests, lc, rc, lb, rb, lf, rf)


def _blas_product(em: Emitter, dtype, lhs: Buf, rhs: Buf, out: Buf, ldims: tuple,
                  rdims: tuple, m: int, n: int, k: int) -> None:
    """out = the product through BLAS (?gemv for one row or column, else ?gemm), each operand
    (batch, contracting, free dimensions: ldims, rdims) in GEMM order or copied into it."""
    (lb, lc, lf), (rb, rc, rf) = ldims, rdims
    (x, lt), (y, rt) = _gemm_operand(em, lhs, lb, lc, lf), _gemm_operand(em, rhs, rb, rf, rc)
    batch = math.prod(lhs.aval.shape[d] for d in lb)
    if m == 1 or n == 1:
        _emit_gemv(em, dtype, x, y, out, batch, m, n, k, lt, rt)
    else:
        _emit_gemm(em, dtype, x, y, out, batch, m, n, k, lt, rt)
    for copy, operand in ((x, lhs), (y, rhs)):
        if copy is not operand:
            em.release(copy)


def _half_product(em: Emitter, lhs: Buf, rhs: Buf, out: Buf, ldims: tuple, rdims: tuple,
                  m: int, n: int, k: int) -> None:
    """A product of float16/bfloat16 operands as a float32 product through BLAS: the operands
    widened (exactly), then the float32 result rounded to the output's type where that is a
    half float -- the loop nest's arithmetic (products exact in float32, summed in float32,
    rounded once), in BLAS's order, as XLA computes half products on CPU. A bfloat16 512^2
    product ran 187 ms as the loop nest (JAX 0.12: 2.6)."""
    b = em.b
    wide = [_widened(em, x, dtypes.float32) for x in (lhs, rhs)]
    dtype = out.aval.dtype
    product = out if dtype == dtypes.float32 else em.alloc(out.aval.update(dtype=dtypes.float32))
    _blas_product(em, dtypes.float32, *wide, product, ldims, rdims, m, n, k)
    if product is not out:
        em.loop(out.aval.size, lambda i: em.store(
            out, i, convert(b, em.load(product, i), dtypes.float32, dtype)), name="narrow")
        em.release(product)
    for w in wide:
        em.release(w)


def _widened(em: Emitter, x: Buf, work: np.dtype) -> Buf:
    """A new buffer holding x's elements converted (exactly: a wider type) to `work`."""
    wide = em.alloc(ShapedArray(x.aval.shape, work))
    em.loop(x.aval.size, lambda i: em.store(
        wide, i, convert(em.b, em.load(x, i), x.aval.dtype, work)), name="widen")
    return wide


def _exact_float(a: np.dtype, c: np.dtype, k: int) -> np.dtype | None:
    """The float type in which a product of integers of types a and c summed over k terms is
    exact whatever their values (every partial sum an integer below 2^24 or 2^53), or None:
    integers of up to 16 bits."""
    if not (dtypes.is_int(a) and dtypes.is_int(c) and a.itemsize <= 2 and c.itemsize <= 2):
        return None
    largest = k * max(abs(int(np.iinfo(a).min)), int(np.iinfo(a).max)) * \
        max(abs(int(np.iinfo(c).min)), int(np.iinfo(c).max))
    return dtypes.float32 if largest <= 2 ** 24 else dtypes.float64 if largest < 2 ** 53 \
        else None


def _integer_gemm(em: Emitter, work: np.dtype, lhs: Buf, rhs: Buf, out: Buf, batch: int,
                  m: int, n: int, k: int, lt: bool, rt: bool) -> None:
    """A product of small integers as a float GEMM in `work`, where it is exact (_exact_float):
    the operands converted, the product, then each (integral) element back to the output's
    integer type, wrapped as an integer sum wraps (int8 256^3 -> int32: 1.2 -> ~0.2 ms)."""
    b = em.b
    ins = [_widened(em, x, work) for x in (lhs, rhs)]
    product = em.alloc(ShapedArray(out.aval.shape, work))
    _emit_gemm(em, work, *ins, product, batch, m, n, k, lt, rt)
    width = ir.IntType(out.aval.dtype.itemsize * 8)

    def narrow(i):  # (integral, so exact as an i64; then wrapped to the output's width)
        v = b.fptosi(em.load(product, i), I64)
        em.store(out, i, b.trunc(v, width) if width.width < 64 else v)
    em.loop(out.aval.size, narrow, name="narrow")
    for buf in (*ins, product):
        em.release(buf)


def _fortran_args(b: ir.IRBuilder, alloca, dtype, args: list) -> list:
    """Fortran's by-reference arguments: one-letter strings as i8 slots, ints (Python or i64
    values) as i32 slots, scalars of `dtype` (floats) as slots of its type, pointers as they
    are. `alloca(type)` makes a slot in the calling function's entry block."""
    i32 = ir.IntType(32)
    out = []
    for a in args:
        if isinstance(a, str):
            slot = alloca(I8)
            b.store(ir.Constant(I8, ord(a)), slot)
        elif isinstance(a, int):
            slot = alloca(i32)
            b.store(ir.Constant(i32, a), slot)
        elif isinstance(a, float):
            slot = alloca(reg_type(dtype))
            b.store(const(dtype, a), slot)
        elif a.type == I64:
            slot = alloca(i32)
            b.store(b.trunc(a, i32), slot)
        else:
            slot = a
        out.append(slot)
    return out


def _blas_fn(module: ir.Module, dtype, routine: str) -> ir.Function:
    """The declaration of SciPy's ?gemm / ?gemv, or of our sgemm (routine "ours": gemm.py,
    the same arguments as sgemm), in `module` (Fortran: every argument by pointer; declared as
    i8* so one type serves every dtype)."""
    from .blas import gemm_symbol
    if routine == "ours":
        from . import gemm
        symbol = gemm.routine(gemm.host_lanes())
    else:
        symbol = gemm_symbol(dtype, routine)
    n_args = {"gemm": 13, "ours": 13, "gemv": 11}[routine]
    return module.globals.get(symbol) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I8P] * n_args), name=symbol)


def _call_blas(b: ir.IRBuilder, alloca, module, dtype, routine: str, args: list) -> None:
    fn = _blas_fn(module, dtype, routine)
    b.call(fn, [b.bitcast(a, I8P) for a in _fortran_args(b, alloca, dtype, args)])


def _set_blas_threads(em: Emitter, work: int) -> None:
    from .blas import threads_symbol
    threads = threads_symbol()
    set_threads = em.module.globals.get(threads) or ir.Function(
        em.module, ir.FunctionType(ir.VoidType(), [I64]), name=threads)
    em.b.call(set_threads, [ir.Constant(I64, work)])


def _emit_gemv(em: Emitter, dtype, lhs: Buf, rhs: Buf, out: Buf, batch: int, m: int, n: int,
               k: int, lhs_t: bool, rhs_t: bool) -> None:
    """A product with one output row or column (m == 1 or n == 1) through ?gemv: gemm would
    pack the whole matrix operand first, a second pass over it (a 4096x256 by 256x1 sgemm
    took 0.20 ms, the sgemv 0.06 ms). The vector operand is contiguous in either layout."""
    from .blas import gemm_work
    if n == 1:  # out[m] = A[m,k] x: A row-major [m,k] is column-major [k,m] (ld k)
        mat, vec, trans, rows, cols = lhs, rhs, ("N" if lhs_t else "T"), \
            (m if lhs_t else k), (k if lhs_t else m)
    else:  # out[n] = x B[k,n]: B row-major [k,n] is column-major [n,k] (ld n)
        mat, vec, trans, rows, cols = rhs, lhs, ("T" if rhs_t else "N"), \
            (k if rhs_t else n), (n if rhs_t else k)
    work = gemm_work(dtype, m, n, k)
    _set_blas_threads(em, work)
    tiles = _gemv_tiles(dtype, batch, mat.aval.size, m * n)
    if tiles > 1:  # ("N": the output runs down the rows; "T": across the columns)
        part = m * n // tiles
        tile_args = [trans, part, cols] if trans == "N" else [trans, rows, part]
        _emit_calls(em, dtype, "gemv", [*tile_args, 1.0, None, rows, None, 1, 0.0, None, 1],
                    [mat, vec, out], (part if trans == "N" else part * rows, 0, part), tiles,
                    work)
        return
    _emit_calls(em, dtype, "gemv", [trans, rows, cols, 1.0, None, rows, None, 1, 0.0, None, 1],
                [mat, vec, out], (mat.aval.size // batch, vec.aval.size // batch, m * n), batch,
                _pool_the_batch(batch, work, GEMV_POOL_WORK))


# A matrix-vector product reading at least this many elements of matrix is cut into row tiles
# of whole multiples of GEMV_TILE_ALIGN outputs, one single-threaded ?gemv each, run as one pool
# job (or one after the other, as a timed site picks): ?gemv is bound by one core's memory
# bandwidth, and BLAS gives it one thread below blas.WORK_PER_THREAD (4096^2 float32 at 4096
# points: 2.1-2.5 ms on one core, JAX 0.12 1.2-1.8). OpenBLAS computes each output of a tile
# as of the whole where both are whole multiples of 64 outputs (its kernels' remainder paths
# differ): real types only, as measured (m of 256-4096, k odd and even, tiles of 64-512).
GEMV_TILE_ELEMENTS = 1 << 22
GEMV_TILE_ALIGN = 64
GEMV_MAX_TILES = 8


def _gemv_tiles(dtype, batch: int, matrix: int, outputs: int) -> int:
    """How many row tiles a gemv is cut into (1: not cut): the most, up to GEMV_MAX_TILES,
    that cut its outputs into equal whole multiples of GEMV_TILE_ALIGN."""
    if batch != 1 or dtype not in (dtypes.float32, dtypes.float64) or \
            matrix < GEMV_TILE_ELEMENTS or outputs % GEMV_TILE_ALIGN:
        return 1
    groups = outputs // GEMV_TILE_ALIGN
    return max(t for t in range(1, GEMV_MAX_TILES + 1) if groups % t == 0)


# --- the products of a batch as one pool job ---------------------------------------------------
# A batch of products (shard_map's per-device products on several devices of a process: the
# MLP step's weight gradient, 2 x 256x2048x256, and its 2 x 2048x256 gemvs) ran one product
# after the other, each alone on the pool or on the calling thread. Where the batch holds work
# enough for the pool (the threshold one product needs to be tiled), its products -- and their
# split-k tiles -- are the chunks of one pool job instead: each chunk is the call (or tile) the
# loop made, on one BLAS thread, so every product keeps its bits. Split-k tiles were pool jobs
# already (one per product; now one for all). Products run whole are new to the pool, and a
# pool job is at the scheduler's mercy: on a loaded machine the caller waits for a chunk a
# descheduled thread holds (64 products of 128^3 at load 13-16: medians of 2.8-7.3 ms as the
# loop, 15 ms as one pool job), so such a batch site times both ways, as row and column tiles
# do (_pick_tiles), and runs the faster lately.
GEMV_POOL_WORK = 1 << 20  # a batch of gemvs reading >= 4 MiB of float32 matrix (~0.1 ms)


def _pool_the_batch(batch: int, work: int, threshold: int) -> int:
    """The batch's work if its products of `work` each may run as one pool job, else 0:
    several products, enough work in all, and each one a single-threaded call in the loop too
    (blas.threads_for) -- OpenBLAS's own threads could split a product's sums otherwise."""
    from .blas import WORK_PER_THREAD
    ok = batch > 1 and batch * work >= threshold and work < WORK_PER_THREAD
    return batch * work if ok else 0


def _emit_calls(em: Emitter, dtype, routine: str, args: list, bufs: list, sizes: tuple,
                batch: int, pooled: int) -> None:
    """One BLAS call per product of a batch (`args` with its pointers left None, filled from
    `bufs`, product i's `sizes` elements further each): in a loop on the calling thread, or,
    where the batch's work `pooled` is not 0 (_pool_the_batch), as one pool job or that loop,
    whichever a timed site picks per call."""
    b = em.b

    def loop():
        def one(i):
            ptrs = [_nth(b, buf.ptr, i, size) for buf, size in zip(bufs, sizes)]
            _call_blas(b, em._entry_alloca, em.module, dtype, routine, _fill(args, ptrs))
        em.loop(batch, one, name="batch")
    if not pooled:
        loop()
        return
    body = _batch_body(em.module, dtype, routine, args, sizes)
    ctx = em._entry_alloca(ir.ArrayType(mem_type(dtype).as_pointer(), len(bufs)))
    # (a batch of more work than ONLINE_GEMM_MAX_WORK always runs on the pool, as large
    # products always tile)
    site = _timed_site(em) if GEMM_MODE is None and pooled < ONLINE_GEMM_MAX_WORK else None
    use_pool, clock = _pick_tiles(em, site)
    with b.if_else(use_pool) as (job, serial):
        with job:
            _run_tiles(em, body, ctx, [buf.ptr for buf in bufs], batch)
        with serial:
            loop()
    if clock is not None:
        _record_time(em, site, use_pool, clock)


def _nth(b: ir.IRBuilder, ptr: ir.Value, i: ir.Value, size: int) -> ir.Value:
    """Product i's pointer, in a batch whose products lie `size` elements apart from `ptr`."""
    return b.gep(ptr, [b.mul(i, ir.Constant(I64, size))], inbounds=True)


def _context_pointers(b: ir.IRBuilder, ctx: ir.Value, dtype, count: int) -> list:
    """The first `count` pointers a pool body's context (`i8* ctx`) holds."""
    slots = b.bitcast(ctx, mem_type(dtype).as_pointer().as_pointer())
    return [b.load(b.gep(slots, [ir.Constant(I64, j)], inbounds=True)) for j in range(count)]


def _fill(args: list, ptrs: list) -> list:
    """BLAS's argument list with its pointer slots (None) filled in order."""
    ptrs = iter(ptrs)
    return [next(ptrs) if a is None else a for a in args]


def _batch_body(module: ir.Module, dtype, routine: str, args: list, sizes: tuple
                ) -> ir.Function:
    """`void body(i8* ctx, i64 product)`: one product of a batch through `routine` (one BLAS
    call, `args` with its pointers left None). ctx holds the batch's operand and output
    pointers; product i's are `sizes` elements further each."""
    from . import thread_pool
    fn = ir.Function(module, thread_pool.BODY_TYPE, name=module.get_unique_name("blas_batch"))
    fn.linkage = "internal"
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    ptrs = [_nth(b, base, fn.args[1], size) for base, size in
            zip(_context_pointers(b, fn.args[0], dtype, len(sizes)), sizes)]

    def alloca(t):
        with b.goto_block(entry):
            b.position_at_start(entry)
            return b.alloca(t)
    _call_blas(b, alloca, module, dtype, routine, _fill(args, ptrs))
    b.ret_void()
    return fn


# --- large products as tiles on our thread pool ----------------------------------------------
# OpenBLAS's own threads stall when a core is busy (blas.py: a 4096x256x256 sgemm step took
# 100-200 ms on its 2 threads against 16 ms on one). A large product instead runs as tiles on
# our pool (thread_pool.py), each tile a single-threaded gemm; threads claim tiles as they come
# free, so a thread the scheduler delays holds back one tile, and with one thread the caller
# runs every tile itself. The tiling depends only on the shapes, never on the thread count.
POOL_GEMM_WORK = 1 << 24  # float32 multiply-adds from which a product is tiled (~0.3 ms)
TILE_WORK = 1 << 22       # at least this much work per tile
# ... and at least this many multiply-adds per element each extra tile packs or writes: a core
# does ~32 float32 multiply-adds per cycle in gemm's kernel but packs an element in ~3 cycles
# (perf: sgemm_itcopy), so a tile repacking k*n elements computes 512 k*n multiply-adds to
# keep that near 1/5 of its time (a 128x784x512 product in 7 column tiles packed its lhs 7
# times: +40% CPU; a 1024^3 one in 4 row tiles +20%, and on a loaded 2-core machine the second
# thread rarely comes: 2 tiles)
TILE_WORK_PER_PACKED = 512
# Two tiles need only this many per packed element: the repacking then adds up to ~40% to each
# tile, and two cores still take ~0.7x one call's time (the 784-512-10 MLP row's products:
# 3.3 ms as one call each, 1.6-1.9 ms as two tiles, on the quiet 2-core machine)
TWO_TILES_WORK_PER_PACKED = 128
# Repacking the rhs (row tiles) costs ~1.5x more per element than repacking the lhs (column
# tiles): in C^T = B^T A^T the rhs is OpenBLAS's `a`, packed by sgemm_itcopy (perf, a 1024^3
# product's halves: 11% of the kernel's samples for its 1M elements), the lhs its `b`, packed
# by sgemm_oncopy (7% for 1M). Halves as single-threaded calls (SkylakeX kernels, Zen 5 VM,
# best of 61, all four operand layouts): 1024^3 rows +5.5-7.9% over half the one call,
# columns +0.9-4.4%; 1536x1024x1024 even (+-1%); 2048x1024x1024 rows +2.2-2.7%, columns
# +3.3-4.5%.
RHS_REPACK_WEIGHT = 1.5
MAX_TILES = 8             # tiles of rows or columns
MAX_PARTIALS = 4          # tiles of the contracted dimension (each a partial product)
TILE_ALIGN = 16           # tile edges on multiples of this (the micro-kernels' blocking)


def tile_plan(dtype, m: int, n: int, k: int, split_k: bool = True
              ) -> tuple[str, int, int] | None:
    """How a product is split over the pool: (axis, per, tiles) -- the output's rows ("m") or
    columns ("n"), or the contracted dimension ("k": each tile's partial product, summed after
    in a fixed order; a float product where `split_k`) in tiles of `per` -- or None (one
    call). The axis is the one whose split costs least extra memory traffic: tiling m repacks
    the rhs (k*n) per tile, tiling n the lhs (m*k), tiling k writes and sums a partial output
    (~3*m*n). Where rows and columns would make as many tiles, an rhs element repacked weighs
    RHS_REPACK_WEIGHT (a square product: column tiles); the weight changes no tile count and
    no choice of split-k."""
    from .blas import gemm_work
    work = gemm_work(dtype, m, n, k)
    if work < POOL_GEMM_WORK:
        return None
    costs = {"m": k * n, "n": m * k}
    if np.dtype(dtype).kind == "f" and split_k:
        costs["k"] = 3 * m * n
    sizes = {"m": m, "n": n, "k": k}
    axis = min(costs, key=costs.get)
    tiles = _tile_count(work, axis, costs[axis], sizes[axis])
    other = {"m": "n", "n": "m"}.get(axis)
    weighted = {"m": RHS_REPACK_WEIGHT * costs["m"], "n": costs["n"]}
    if other is not None and weighted[other] < weighted[axis] \
            and _tile_count(work, other, costs[other], sizes[other]) == tiles:
        axis = other
    if tiles < 2:
        return None
    size = sizes[axis]
    per = -(-size // tiles)
    per = -(-per // TILE_ALIGN) * TILE_ALIGN
    tiles = -(-size // per)
    return (axis, per, tiles) if tiles >= 2 else None


def _tile_count(work: int, axis: str, cost: int, size: int) -> int:
    """Tiles of `size` along `axis` for a product of `work` whose every extra tile repacks or
    writes `cost` elements (fewer than 2: one call)."""
    tiles = min(MAX_PARTIALS if axis == "k" else MAX_TILES,
                work // max(TILE_WORK, TILE_WORK_PER_PACKED * cost), size // TILE_ALIGN)
    if tiles < 2 and work // max(TILE_WORK, TWO_TILES_WORK_PER_PACKED * cost) >= 2:
        tiles = min(2, size // TILE_ALIGN)
    return tiles


def _tile_body(module: ir.Module, dtype, plan, m: int, n: int, k: int, lhs_t: bool,
               rhs_t: bool, routine: str) -> ir.Function:
    """`void body(i8* ctx, i64 chunk)`: one tile's single-threaded gemm. ctx holds the rhs,
    lhs, output and partials pointers of a batch of products (or of one); chunk
    `product * tiles + tile` is that product's tile (each product's partials are
    `(tiles - 1) * m * n` elements)."""
    from . import thread_pool
    axis, per, tiles = plan
    fn = ir.Function(module, thread_pool.BODY_TYPE, name=module.get_unique_name("gemm_tiles"))
    fn.linkage = "internal"
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)

    def c64(v):
        return ir.Constant(I64, v)
    product, tile = b.udiv(fn.args[1], c64(tiles)), b.urem(fn.args[1], c64(tiles))
    bases = _context_pointers(b, fn.args[0], dtype, 4)
    rhs, lhs, out = (_nth(b, p, product, size) for p, size in zip(bases, (k * n, m * k, m * n)))
    # (the partials pointer is null but for split-k tiles)
    parts = _nth(b, bases[3], product, (tiles - 1) * m * n) if axis == "k" else None

    def alloca(t):
        with b.goto_block(entry):
            b.position_at_start(entry)
            return b.alloca(t)
    size = {"m": m, "n": n, "k": k}[axis]
    lo = b.mul(tile, c64(per))
    count = b.sub(c64(size), lo)
    count = b.select(b.icmp_signed("<", count, c64(per)), count, c64(per))

    def at(ptr, offset):
        return b.gep(ptr, [offset], inbounds=True)
    # Fortran computes C^T[n,m] = op(rhs^T)[n,k] op(lhs^T)[k,m] (see _emit_gemm)
    dims = {"m": m, "n": n, "k": k}
    dims[axis] = count
    if axis == "m":
        lhs = at(lhs, lo if lhs_t else b.mul(lo, c64(k)))
        out = at(out, b.mul(lo, c64(n)))
    elif axis == "n":
        rhs = at(rhs, b.mul(lo, c64(k)) if rhs_t else lo)
        out = at(out, lo)
    else:
        lhs = at(lhs, b.mul(lo, c64(m)) if lhs_t else lo)
        rhs = at(rhs, lo if rhs_t else b.mul(lo, c64(n)))
        # tile 0 writes the output, tile t > 0 partial t-1
        part = at(parts, b.mul(b.sub(tile, c64(1)), c64(m * n)))
        out = b.select(b.icmp_signed("==", tile, c64(0)), out, part)
    _call_blas(b, alloca, module, dtype, routine,
               ["T" if rhs_t else "N", "T" if lhs_t else "N", dims["n"], dims["m"], dims["k"],
                1.0, rhs, k if rhs_t else n, lhs, m if lhs_t else k, 0.0, out, n])
    b.ret_void()
    return fn


def _emit_gemm(em: Emitter, dtype, lhs: Buf, rhs: Buf, out: Buf, batch: int, m: int, n: int,
               k: int, lhs_t: bool, rhs_t: bool) -> None:
    """Row-major C[m,n] = A·B through Fortran BLAS: C^T = B^T·A^T (column-major), per batch.
    A product below POOL_GEMM_WORK first sets BLAS's thread count for its size (blas.py: the
    work of one product, not the batch's: a batch of small products must not wake threads for
    each) and makes one call; a larger one runs as tiles on our pool (tile_plan)."""
    from .blas import gemm_work, splits_agree
    b = em.b
    plan, routine = product_plan(dtype, m, n, k)
    # (our gemm gives every element one chain of multiply-adds in k's order: tiles of rows or
    # columns agree with one call by construction)
    agree = routine == "ours" or splits_agree(dtype)
    # B (rhs) is op(X1): row-major [k,n] is column-major [n,k] = B^T ('N', ld n); stored [n,k]
    # it is column-major [k,n] = B, so 'T' with ld k. Likewise for A.
    args = ["T" if rhs_t else "N", "T" if lhs_t else "N", n, m, k, 1.0, None,
            k if rhs_t else n, None, m if lhs_t else k, 0.0, None, n]
    sizes = (k * n, m * k, m * n)
    if plan is None:
        work = gemm_work(dtype, m, n, k)
        if routine == "gemm":
            _set_blas_threads(em, work)
        _emit_calls(em, dtype, routine, args, [rhs, lhs, out], sizes, batch,
                    _pool_the_batch(batch, work, POOL_GEMM_WORK))
        return
    if routine == "gemm":  # (ours needs no BLAS: a program of our products never loads it)
        _set_blas_threads(em, 0)  # (one thread per tile)
    body = _tile_body(em.module, dtype, plan, m, n, k, lhs_t, rhs_t, routine)
    ctx = em._entry_alloca(ir.ArrayType(mem_type(dtype).as_pointer(), 4))
    axis, _, tiles = plan
    if axis == "k":
        # every product's partial products in one pool job, then each product's sum
        parts = em.alloc(ShapedArray((batch * (tiles - 1) * m * n,), np.dtype(dtype)))
        _run_tiles(em, body, ctx, [rhs.ptr, lhs.ptr, out.ptr, parts.ptr], batch * tiles)

        def sum_one(i):
            _sum_partials(em, _nth(b, out.ptr, i, m * n),
                          _nth(b, parts.ptr, i, (tiles - 1) * m * n), tiles - 1, m * n)
        em.loop(batch, sum_one, name="batch")
        em.release(parts)
        return
    site = None  # a mid-size product's times
    if GEMM_MODE is None and gemm_work(dtype, m, n, k) < ONLINE_GEMM_MAX_WORK and agree:
        site = _timed_site(em)

    def one(i):
        ptrs = [_nth(b, buf.ptr, i, size) for buf, size in zip((rhs, lhs, out), sizes)]
        # row or column tiles give each output element the same sum as one call (where this
        # BLAS's do: blas.splits_agree), so which runs may change per call: one call with one
        # thread (each tile would repack the other operand: +20% for 1024^3), else tiles, or
        # for a mid-size product whichever has been faster here lately (_pick_tiles)
        use_tiles, clock = _pick_tiles(em, site) if agree else (
            ir.Constant(ir.IntType(1), 1), None)
        with b.if_else(use_tiles) as (tiled, serial):
            with tiled:
                _run_tiles(em, body, ctx, [*ptrs, None], tiles)
            with serial:
                _call_blas(b, em._entry_alloca, em.module, dtype, routine, _fill(args, ptrs))
        if clock is not None:
            _record_time(em, site, use_tiles, clock)
    em.loop(batch, one, name="batch")


# --- our gemm or BLAS's ----------------------------------------------------------------------
# A float32 product runs our own gemm (gemm.py) where it measured at least level with OpenBLAS's
# sgemm (one thread each, thread CPU, best of 41, Zen 5 at load ~7): on AVX-512 hosts (its width is
# what the kernel was tuned for; AVX2 hosts keep BLAS, with which it was level on Zen 3), from
# OURS_MIN_WORK multiply-adds (128^3: 24.0 against 27.0 us, every layout 11-25% faster; 200^3 level,
# 80 / 81 us; 100^3 18 / 14 us, 64^3 8.8 / 8.4 us: an edge of rows runs the kernel's full 32, 28 of
# 128 rows of padding at 100), and without split-k tiles (their partial sums would make our bits
# differ from one call's), and only where every dimension is at least OURS_MIN_SIDE: the CNN row's
# products (im2col's 6272x144 by 144x32, k = 9 for the first layer, the weight gradients' long k by
# 32 columns) ran 1.62-1.63x JAX's speed on ours against 2.00-2.10 on BLAS (the 14-column panels
# cover 32 columns as 14 + 14 + 4; shapes this narrow were never tuned).
OURS_MIN_WORK = 1 << 21
OURS_MIN_SIDE = 128
GEMM_KERNEL = None  # "ours" / "blas" forces the float32 kernel (tests), or None: the rule


def gemm_routine(dtype, m: int, n: int, k: int, plan) -> str:
    """"ours" (gemm.py) or "gemm" (BLAS) for one float32 product of m x k by k x n split by
    `plan` (tile_plan); other dtypes always "gemm"."""
    from . import gemm
    if np.dtype(dtype) != dtypes.float32 or gemm.host_lanes() is None:
        return "gemm"
    if GEMM_KERNEL is not None:
        return "ours" if GEMM_KERNEL == "ours" else "gemm"
    split_k = plan is not None and plan[0] == "k"
    ours = (gemm.host_lanes() >= 16 and m * n * k >= OURS_MIN_WORK
            and min(m, n, k) >= OURS_MIN_SIDE and not split_k)
    return "ours" if ours else "gemm"


def product_plan(dtype, m: int, n: int, k: int) -> tuple[tuple[str, int, int] | None, str]:
    """(tile_plan, gemm_routine) for a product. A long-k product whose traffic would favour
    split-k tiles on BLAS runs as row or column tiles on our gemm instead where it is ours
    there: the MLP step's 256x4096 by 4096x256 weight gradient, 2 tiles of 128 columns
    repacking its lhs, 7.3 -> 6.6 ms a step on two threads and 14.5 -> 12.9 ms of CPU (split-k
    on ours, whose partial sums would change the bits, as fast: 6.6 ms), OpenBLAS's packing
    having taken 15% of the step's CPU (Zen 4, medians of 5 x 40 calls, load ~1.4). Where
    rows or columns make one tile, split-k stays, on BLAS: one thread would take it all."""
    plan = tile_plan(dtype, m, n, k)
    routine = gemm_routine(dtype, m, n, k, plan)
    if plan is not None and plan[0] == "k" and routine == "gemm":
        whole = tile_plan(dtype, m, n, k, split_k=False)
        if whole is not None and gemm_routine(dtype, m, n, k, whole) == "ours":
            return whole, "ours"
    return plan, routine


# --- tiles or one call, per call --------------------------------------------------------------
# Two tiles of a mid-size product take ~0.7x one call's time when the pool's other thread finds
# a free core, but up to 2x when it does not (the 784-512-10 MLP's products on a loaded 2-core
# machine: 3.1-3.5 ms as one call, 6-8 ms as tiles, the second thread never overlapping), and
# which holds changes from second to second. Row and column tiles give the same bits as one
# call, so each such product site times both: it runs the mode with the lower recent time
# (each call's time averaged with the last), and every PROBE_EVERY-th call the other one (its
# time replaced by the new one), so a site follows the machine's load within a few calls.
# Split-k tiles sum in another order: their plan stays fixed. Larger products always tile.
ONLINE_GEMM_MAX_WORK = 1 << 29  # (the MLP step's 4096x256x256: 2^28; 1024^3: 2^30)
PROBE_EVERY = 32                # (a power of two)
WARM_UP_CALLS = 4               # alternating modes, so each has a warm time
GEMM_MODE = None  # "tiles" / "one" forces a row/column-tiled product's mode (tests; "one" only
# where blas.splits_agree), or None


def _pick_tiles(em: Emitter, site) -> tuple[ir.Value, ir.Value | None]:
    """(i1: run tiles now, the cycle counter's value before the product or None when this
    site is not timed). Forced modes and large products: tiles unless the pool has one
    thread. A timed site: the first calls alternate, then the mode faster recently."""
    b = em.b
    if GEMM_MODE is not None:
        return ir.Constant(ir.IntType(1), GEMM_MODE == "tiles"), None
    several = b.not_(_one_thread(em))
    if site is None:
        return several, None
    one_time, tile_time, calls = (_site_slot(em, site, j) for j in range(3))
    count = b.add(_load(b, calls), ir.Constant(I64, 1))
    b.store_atomic(count, calls, "monotonic", 8)
    t_one, t_tiles = _load(b, one_time), _load(b, tile_time)
    zero = ir.Constant(I64, 0)
    probe = b.icmp_unsigned("==", b.and_(count, ir.Constant(I64, PROBE_EVERY - 1)), zero)
    faster = b.icmp_unsigned("<=", t_tiles, t_one)
    choice = b.select(b.icmp_unsigned("==", t_tiles, zero), ir.Constant(ir.IntType(1), 1),
                      b.xor(faster, probe))
    choice = b.select(b.icmp_unsigned("==", t_one, zero), ir.Constant(ir.IntType(1), 0),
                      choice)
    # the first calls alternate (one call, tiles, one call, tiles), each time replacing the
    # last: a first call's time includes cold caches and starting the pool's threads
    warm = b.icmp_unsigned("<=", count, ir.Constant(I64, WARM_UP_CALLS))
    even = b.trunc(b.xor(count, ir.Constant(I64, 1)), ir.IntType(1))
    choice = b.select(warm, even, choice)
    return b.and_(several, choice), b.call(_cycle_counter(em), [])


def _record_time(em: Emitter, site, tiles: ir.Value, start: ir.Value) -> None:
    """Average the product's time into its mode's slot (a probe or first time: replace)."""
    b = em.b
    spent = b.sub(b.call(_cycle_counter(em), []), start)
    spent = b.select(b.icmp_unsigned("<", spent, ir.Constant(I64, 1)), ir.Constant(I64, 1),
                     spent)
    slot = b.gep(site, [ir.Constant(I32, 0), b.zext(tiles, I32)], inbounds=True)
    old = _load(b, slot)
    count = _load(b, _site_slot(em, site, 2))
    fresh = b.or_(b.icmp_unsigned("==", old, ir.Constant(I64, 0)), b.icmp_unsigned(
        "==", b.and_(count, ir.Constant(I64, PROBE_EVERY - 1)), ir.Constant(I64, 0)))
    fresh = b.or_(fresh, b.icmp_unsigned("<=", count, ir.Constant(I64, WARM_UP_CALLS)))
    mean = b.lshr(b.add(old, spent), ir.Constant(I64, 1))
    b.store_atomic(b.select(fresh, spent, mean), slot, "monotonic", 8)


def _timed_site(em: Emitter) -> ir.GlobalVariable:
    """A product site's times: [one call (or the loop), tiles (or one pool job), calls]."""
    site = ir.GlobalVariable(em.module, ir.ArrayType(I64, 3),
                             em.module.get_unique_name("gemm_site"))
    site.linkage = "internal"
    site.initializer = ir.Constant(ir.ArrayType(I64, 3), None)
    return site


def _site_slot(em: Emitter, site, j: int) -> ir.Value:
    return em.b.gep(site, [ir.Constant(I32, 0), ir.Constant(I32, j)], inbounds=True)


def _load(b: ir.IRBuilder, ptr) -> ir.Value:
    # (monotonic: threads running the same program race on a site's times harmlessly)
    return b.load_atomic(ptr, "monotonic", 8)


def _cycle_counter(em: Emitter) -> ir.Function:
    fn = em.module.globals.get("llvm.readcyclecounter")
    return fn or ir.Function(em.module, ir.FunctionType(I64, []), "llvm.readcyclecounter")


def _one_thread(em: Emitter) -> ir.Value:
    """i1: whether the pool runs with one thread now (tracejit_num_threads, read per call)."""
    from . import thread_pool
    thread_pool.symbol()  # (binds the pool's globals)
    wanted = em.module.globals.get(thread_pool.WANTED_SYMBOL)
    if wanted is None:
        wanted = ir.GlobalVariable(em.module, I64, thread_pool.WANTED_SYMBOL)
        wanted.linkage = "external"
    return em.b.icmp_signed("<=", em.b.load_atomic(wanted, "monotonic", 8),
                            ir.Constant(I64, 1))


def _run_tiles(em: Emitter, body: ir.Function, ctx, ptrs: list, tiles: int) -> None:
    """Fill the tile bodies' context (None: a null pointer) and run `tiles` of them on the
    pool; then leave if Ctrl-C made the pool skip some."""
    from . import thread_pool
    from .interrupt import emit_poll
    b = em.b
    ptr_t = ctx.type.pointee.element
    for j, p in enumerate(ptrs):
        b.store(ir.Constant(ptr_t, None) if p is None else p,
                b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, j)], inbounds=True))
    pool_fn = em.module.globals.get(thread_pool.symbol()) or ir.Function(
        em.module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]), thread_pool.SYMBOL)
    b.call(pool_fn, [b.bitcast(body, I8P), b.bitcast(ctx, I8P), ir.Constant(I64, tiles)])
    emit_poll(em)  # Ctrl-C made the pool skip tiles: leave now (the outputs are discarded)


def _sum_partials(em: Emitter, out, parts, count: int, size: int) -> None:
    """out += parts[0] + ... + parts[count-1], element by element, always in that order."""
    b = em.b

    def add(i):
        ptr = b.gep(out, [i], inbounds=True)
        acc = b.load(ptr)
        for j in range(count):
            acc = b.fadd(acc, b.load(b.gep(parts, [b.add(i, ir.Constant(I64, j * size))],
                                           inbounds=True)))
        b.store(acc, ptr)
    em.loop(size, add, over_data=False)


def _dot_loops(em: Emitter, eqn, lhs, rhs, out: Buf, dests, lc, rc, lb, rb, lf, rf):
    """Inline loop nest: small dots, integer and half-precision dots, unusual layouts."""
    aval_out = eqn.outvars[0].aval
    dtype = aval_out.dtype
    acc_dtype = _acc_dtype(dtype)
    b = em.b
    csizes = [lhs.aval.shape[d] for d in lc]
    if dtypes.is_int(dtype) and aval_out.ndim and out.ptr is not lhs.ptr and \
            out.ptr is not rhs.ptr:
        _integer_dot(em, lhs, rhs, out, lc, rc, lb, rb, lf, rf)
        return [out]
    acc_ptr = em._entry_alloca(reg_type(acc_dtype))

    def outer(oidx):
        nb = len(lb)
        bidx, lidx, ridx = oidx[:nb], oidx[nb:nb + len(lf)], oidx[nb + len(lf):]
        b.store(const(acc_dtype, 0), acc_ptr)

        def inner(cidx):
            li = _placed(lhs.aval.ndim, (lb, bidx), (lf, lidx), (lc, cidx))
            ri = _placed(rhs.aval.ndim, (rb, bidx), (rf, ridx), (rc, cidx))
            x = convert(b, em.value_at(lhs, li), lhs.aval.dtype, acc_dtype)
            y = convert(b, em.value_at(rhs, ri), rhs.aval.dtype, acc_dtype)
            if acc_dtype == dtypes.bool_:
                b.store(b.or_(b.load(acc_ptr), b.and_(x, y)), acc_ptr)
                return
            prod = emit_scalar(b, ew.mul_p, [acc_dtype] * 2, acc_dtype, [x, y], {})
            b.store(_combine(em, reduce_sum_p, acc_dtype, b.load(acc_ptr), prod), acc_ptr)
        em.loop_nest(csizes, inner)
        em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None,
                 convert(b, b.load(acc_ptr), acc_dtype, dtype))
    em.loop_nest(aval_out.shape, outer)
    return [out if aval_out.ndim or dests[0] is not None else _as_value(em, out)]


def _placed(ndim: int, *groups) -> list:
    """An operand's multi-index from (its dimensions, their indices) groups."""
    idx: list = [None] * ndim
    for dims, at in groups:
        for d, i in zip(dims, at):
            idx[d] = i
    return idx


def _integer_dot(em: Emitter, lhs: Buf, rhs: Buf, out: Buf, lc, rc, lb, rb, lf, rf) -> None:
    """An integer product accumulated in the output, a row of it at a time: for each batch
    element, lhs free index and contraction index (in that order), the lhs element times the
    rhs's row of free elements, added into the output's row (its innermost dimensions: one
    vectorised loop where the rhs's free dimensions are its last). Each element gets the same
    products in the same order as a sum over the contraction, and integer sums wrap exactly
    in any order (256^3 int8 -> int32: 15.5 ms as a sum per element (the rhs read down its
    columns) -> 1.2 ms under load; 256^3 int32 0.74 ms on a quiet machine. Integers of up to
    16 bits take _integer_gemm where it is exact)."""
    b = em.b
    dtype = out.aval.dtype
    zero = const(dtype, 0)
    em.loop_nest(out.aval.shape, lambda oidx: em.store(out, em.linear(out.aval.shape, oidx),
                                                         zero))
    outer = [lhs.aval.shape[d] for d in (*lb, *lf, *lc)]
    inner = [rhs.aval.shape[d] for d in rf]

    def row(idx):
        nb, nf = len(lb), len(lf)
        bidx, lidx, cidx = idx[:nb], idx[nb:nb + nf], idx[nb + nf:]
        li = _placed(lhs.aval.ndim, (lb, bidx), (lf, lidx), (lc, cidx))
        x = convert(b, em.value_at(lhs, li), lhs.aval.dtype, dtype)

        def element(ridx):
            ri = _placed(rhs.aval.ndim, (rb, bidx), (rc, cidx), (rf, ridx))
            y = convert(b, em.value_at(rhs, ri), rhs.aval.dtype, dtype)
            at = em.linear(out.aval.shape, [*bidx, *lidx, *ridx])
            em.store(out, at, b.add(em.load(out, at), b.mul(x, y)))
        em.loop_nest(inner, element)
    em.loop_nest(outer, row)


STRUCTURAL[dot_general_p] = _dot_general
