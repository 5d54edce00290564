"""Our own float32 GEMM, generated through LLVM: a runtime routine with Fortran sgemm's signature
(alpha 1, beta 0 only) that backend/llvm/linalg.py calls in place of BLAS's sgemm where it
measured at least level (`linalg.gemm_routine`). Compiled once per machine
(jit_engine.compile_library), so a program's O0 and O3 tiers run the same machine code.

The loops are BLIS's: column-major C[M,N] = X[M,K] Y[K,N] (linalg's C^T = B^T A^T) in blocks
of KC of the sum, NC columns and MC rows; each block of Y packed once into a buffer (its
micro-panels of NR columns, each column at one stride per call, so the kernel reads them
through one pointer),
each block of X into micro-panels of MR rows. The micro-kernel holds an MR x NR tile of C in
NR * 2 vector registers (AVX-512: 32 x 14 in 28 zmm), broadcasts Y's elements and multiplies
them into vectors of X's. Every element of C is one chain of fused multiply-adds over k in
order -- the first block starts from 0 (C is never zeroed first), later blocks carry on from
what the previous one stored -- so its bits do not depend on the blocking, on which tile of a
product computes it, nor on the thread count (linalg's row and column tiles agree with one
call). Edge tiles run the same kernel (or a narrower one: fewer columns) on zero-padded panels
into a scratch tile, and only the valid part is copied: no read or write outside the operands.
A transposed X is packed by lanes x lanes transposes in registers."""
from __future__ import annotations

import functools
import sys

from llvmlite import ir

from .types import F32, I8, I32, I64

I8P = I8.as_pointer()
F32P = F32.as_pointer()
# The sum's block. BLIS keeps an NR-column micro-panel of Y in L1 (KC 256: 14 KiB), but then a
# product with K > KC loads and stores all of C again for each further block; where C is beyond
# L2 (a 1024^2 product's column tile: 2 MiB) that costs more than the kernel's reading its Y
# panel (56 KiB at 1024) from L2, which the hardware prefetchers stream: 512x1024x1024 on one
# thread, Zen 4, 4-13% less CPU (medians, alternating; K <= 256 and the MLP's products level).
KC = 1024
MC = 256          # rows of X per packed block (1 MiB at KC)
NC_PANELS = 80    # micro-panels of Y per packed block (NC = 1120 columns, 4.5 MiB at KC)
# Packed blocks of HUGE_PAGE_MIN bytes or more lie on whole 2 MiB pages advised huge (Linux's
# transparent huge pages, where the kernel grants them): a call's packing writes fresh memory
# the first time (later calls get the same memory back from malloc), and here (a VM, THP on
# `madvise`) each 4 KiB page's fault cost ~2.5 us: matmul 1024^2's first call faulted ~1,300
# pages on each thread (every column tile packs all of its 4 MiB lhs), ~3 ms of its CPU each.
HUGE_PAGE = 2 << 20
HUGE_PAGE_MIN = 2 << 20
_MADVISE = sys.platform.startswith("linux")
_MADV_HUGEPAGE = 14


def host_lanes() -> int | None:
    """float32 lanes of the host's vectors for the kernel: 16 with AVX-512, 8 with AVX2 and
    FMA, else None (no kernel: BLAS runs every product)."""
    from ..llvm_setup import host_has
    if host_has("avx512f"):
        return 16
    if host_has("avx2") and host_has("fma"):
        return 8
    return None


def symbol(lanes: int) -> str:
    return f"tracejit_sgemm_{lanes}"


def _shape(lanes: int) -> tuple[int, int]:
    """(MR, NR): 2 vectors of rows by as many columns as the registers hold (32 registers of
    AVX-512: 28 accumulators; 16 of AVX2: 12)."""
    return 2 * lanes, (14 if lanes >= 16 else 6)


def c64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


class _Loops:
    """Counted loops on one builder (phi counters)."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    def range(self, start, stop, step, body, name="i"):
        b = self.b
        start = c64(start) if isinstance(start, int) else start
        stop = c64(stop) if isinstance(stop, int) else stop
        pre = b.block
        head = b.append_basic_block(f"{name}.head")
        body_bb = b.append_basic_block(f"{name}.body")
        done = b.append_basic_block(f"{name}.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, stop), body_bb, done)
        b.position_at_end(body_bb)
        body(i)
        nxt = b.add(i, c64(step) if isinstance(step, int) else step)
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _at(b, ptr, offset):
    return b.gep(ptr, [offset], inbounds=True)


def _kernel(mod: ir.Module, lanes: int, y_rows: bool, width: int) -> ir.Function:
    """`void kernel(float* x, float* y, i64 kc, float* c, i64 ldc, i1 first, i64 ys)`:
    C[0:MR, 0:width] (column stride ldc) = (first ? 0 : C) + sum over p < kc of
    x[p*MR : p*MR+MR] y(p, j), y(p, j) at y[j*ys + p] or, y_rows, y[p*NR + j]. Each element's
    fused multiply-adds run in p's order, whatever the width (the last micro-panel of columns
    runs the narrowest width that covers it: a full one would compute up to NR - 1 columns of
    padding)."""
    mr, nr = _shape(lanes)
    row_stride = nr
    vec = ir.VectorType(F32, lanes)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [F32P, F32P, I64, F32P, I64,
                                                           ir.IntType(1), I64]),
                     name=f"sgemm_kernel_{lanes}_{int(y_rows)}_{width}")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for a in fn.args[:2] + fn.args[3:4]:
        a.add_attribute("noalias")
    x, y, kc, c, ldc, first, ystride = fn.args
    fma = mod.globals.get(f"llvm.fma.v{lanes}f32") or ir.Function(
        mod, ir.FunctionType(vec, [vec] * 3), name=f"llvm.fma.v{lanes}f32")
    entry, load_c, start = (fn.append_basic_block(n) for n in ("entry", "load_c", "start"))
    b = ir.IRBuilder(entry)
    vp = vec.as_pointer()
    cols = [_at(b, c, b.mul(c64(j), ldc)) for j in range(width)]
    zero = ir.Constant(vec, None)
    b.cbranch(first, start, load_c)
    b.position_at_end(load_c)
    loaded = [[b.load(b.bitcast(_at(b, cols[j], c64(v * lanes)), vp), align=4)
               for v in range(2)] for j in range(width)]
    b.branch(start)
    b.position_at_end(start)
    init = []
    for j in range(width):
        row = []
        for v in range(2):
            phi = b.phi(vec)
            phi.add_incoming(zero, entry)
            phi.add_incoming(loaded[j][v], load_c)
            row.append(phi)
        init.append(row)
    head, body, done = (fn.append_basic_block(n) for n in ("p.head", "p.body", "p.done"))
    b.branch(head)
    b.position_at_end(head)
    p = b.phi(I64, name="p")
    p.add_incoming(c64(0), start)
    acc = [[b.phi(vec) for _ in range(2)] for _ in range(width)]
    for j in range(width):
        for v in range(2):
            acc[j][v].add_incoming(init[j][v], start)
    b.cbranch(b.icmp_signed("<", p, kc), body, done)
    b.position_at_end(body)
    xrow = _at(b, x, b.mul(p, c64(mr)))
    xs = [b.load(b.bitcast(_at(b, xrow, c64(v * lanes)), vp), align=64) for v in range(2)]
    undef = ir.Constant(vec, ir.Undefined)
    splat_mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    ybase = _at(b, y, b.mul(p, c64(row_stride)) if y_rows else p)
    for j in range(width):
        s = b.load(_at(b, ybase, c64(j) if y_rows else b.mul(c64(j), ystride)))
        sv = b.shuffle_vector(b.insert_element(undef, s, ir.Constant(I32, 0)), undef,
                              splat_mask)
        for v in range(2):
            acc[j][v].add_incoming(b.call(fma, [xs[v], sv, acc[j][v]]), body)
    p.add_incoming(b.add(p, c64(1)), body)
    b.branch(head)
    b.position_at_end(done)
    for j in range(width):
        for v in range(2):
            b.store(acc[j][v], b.bitcast(_at(b, cols[j], c64(v * lanes)), vp), align=4)
    b.ret_void()
    return fn


def _transpose_in(b: ir.IRBuilder, lanes: int, x, xs_i, i0, pc, p0, dst, mr: int) -> None:
    """dst[(p0 + j) * mr + r] = X(i0 + r, pc + p0 + j) for j < lanes, r < mr, X's rows
    contiguous in p (row stride xs_i): `lanes` x `lanes` blocks loaded a row per vector and
    transposed in registers (swapping halves, then quarters, ... of each pair of rows)."""
    vec = ir.VectorType(F32, lanes)
    for half in range(mr // lanes):
        rows = []
        for i in range(lanes):
            src = _at(b, x, b.add(b.mul(b.add(i0, c64(half * lanes + i)), xs_i),
                                  b.add(pc, p0)))
            rows.append(b.load(b.bitcast(src, vec.as_pointer()), align=4))
        s = lanes // 2
        while s:
            new = list(rows)
            for i in range(lanes):
                if i & s:
                    continue
                lo, hi = [], []
                for t in range(0, lanes, 2 * s):
                    lo += [*range(t, t + s), *range(lanes + t, lanes + t + s)]
                    hi += [*range(t + s, t + 2 * s), *range(lanes + t + s, lanes + t + 2 * s)]
                for at, mask in ((i, lo), (i + s, hi)):
                    new[at] = b.shuffle_vector(rows[i], rows[i + s],
                                               ir.Constant(ir.VectorType(I32, lanes), mask))
            rows, s = new, s // 2
        for j in range(lanes):
            out = _at(b, dst, b.add(b.mul(b.add(p0, c64(j)), c64(mr)), c64(half * lanes)))
            b.store(rows[j], b.bitcast(out, vec.as_pointer()), align=4)


def module(lanes: int) -> ir.Module:
    """The routine `symbol(lanes)`: Fortran's sgemm(transx, transy, m, n, k, alpha, x, ldx, y,
    ldy, beta, c, ldc) with alpha 1 and beta 0 (the values are not read)."""
    mr, nr = _shape(lanes)
    nc = NC_PANELS * nr
    mod = ir.Module(name=symbol(lanes))
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P] * 13), name=symbol(lanes))
    widths = [*range(2, nr, 2), nr]  # (an edge's columns, rounded up to even: fewer kernels)
    kernels = {(rows, w): _kernel(mod, lanes, rows, w) for rows in (False, True) for w in widths}
    malloc = ir.Function(mod, ir.FunctionType(I8P, [I64]), name="malloc")
    free = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I8P]), name="free")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loops = _Loops(b)
    tx, ty, pm, pn, pk, _, px, pldx, py, pldy, _, pc_, pldc = fn.args

    def int_arg(ptr):
        return b.sext(b.load(b.bitcast(ptr, I32.as_pointer())), I64)

    def transposed(ptr):
        ch = b.load(ptr)
        return b.and_(b.icmp_unsigned("!=", ch, ir.Constant(I8, ord("N"))),
                      b.icmp_unsigned("!=", ch, ir.Constant(I8, ord("n"))))
    m, n, k, ldx, ldy, ldc = (int_arg(p) for p in (pm, pn, pk, pldx, pldy, pldc))
    x, y, c = (b.bitcast(p, F32P) for p in (px, py, pc_))
    x_t, y_t = transposed(tx), transposed(ty)
    one = c64(1)
    # X(i, p) at i*xs_i + p*xs_p; Y(p, j) at p*ys_p + j*ys_j
    xs_i, xs_p = b.select(x_t, ldx, one), b.select(x_t, one, ldx)
    ys_p, ys_j = b.select(y_t, ldy, one), b.select(y_t, one, ldy)
    fn_entry = b.block
    ret = fn.append_basic_block("ret")
    work = fn.append_basic_block("work")
    empty = b.or_(b.icmp_signed("<=", m, c64(0)), b.icmp_signed("<=", n, c64(0)))
    b.cbranch(empty, ret, work)
    b.position_at_end(work)
    del fn_entry

    zeros, products = fn.append_basic_block("zeros"), fn.append_basic_block("products")
    b.cbranch(b.icmp_signed("<=", k, c64(0)), zeros, products)
    b.position_at_end(zeros)  # an empty sum: C = 0
    loops.range(0, n, 1, lambda j: loops.range(0, m, 1, lambda i: b.store(
        ir.Constant(F32, 0.0), _at(b, c, b.add(i, b.mul(j, ldc))))))
    b.branch(ret)
    b.position_at_end(products)
    # the packed blocks, 64-byte aligned, and an edge tile's scratch
    # (sized to the product: a small one takes no more than it packs)
    x_floats = b.mul(_min(b, c64(MC), b.mul(b.udiv(b.add(m, c64(mr - 1)), c64(mr)), c64(mr))),
                     _min(b, c64(KC), k))
    y_panels = b.udiv(b.add(_min(b, c64(nc), n), c64(nr - 1)), c64(nr))
    # a Y micro-panel's column stride: the first block's kc rounded up to an odd number of cache
    # lines (its columns in as many L1 sets; a stride fixed at KC+16 spread k = 256's panels
    # over 4x the lines: 4096x256x256 3% slower)
    kc_lines = b.and_(b.add(_min(b, c64(KC), k), c64(15)), c64(-16))
    ystride = b.sub(b.add(kc_lines, c64(16)), b.and_(kc_lines, c64(16)))
    y_floats = b.add(b.mul(y_panels, b.mul(c64(nr), ystride)), c64(16))
    nbytes = b.mul(b.add(b.add(x_floats, y_floats), c64(mr * nr + 16)), c64(4))
    # large blocks on whole 2 MiB pages advised huge (HUGE_PAGE_MIN): a first call's packing
    # faults a few huge pages in, not a page fault each 4 KiB
    huge = b.icmp_unsigned(">=", nbytes, c64(HUGE_PAGE_MIN if _MADVISE else 1 << 62))
    huge_bytes = b.and_(b.add(nbytes, c64(HUGE_PAGE - 1)), c64(-HUGE_PAGE))
    raw = b.call(malloc, [b.select(huge, b.add(huge_bytes, c64(HUGE_PAGE)), nbytes)])
    packed, unpacked = fn.append_basic_block("packed"), fn.append_basic_block("unpacked")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(raw, I64), c64(0)), unpacked, packed)
    # no memory for the packed blocks: each element's chain of fmas straight from X and Y, in
    # the same order (the same bits), slowly
    b.position_at_end(unpacked)
    f32_fma = mod.globals.get("llvm.fma.f32") or ir.Function(
        mod, ir.FunctionType(F32, [F32] * 3), name="llvm.fma.f32")

    def element(j, i):
        out = _at(b, c, b.add(i, b.mul(j, ldc)))
        b.store(ir.Constant(F32, 0.0), out)

        def term(p):
            xv = b.load(_at(b, x, b.add(b.mul(i, xs_i), b.mul(p, xs_p))))
            yv = b.load(_at(b, y, b.add(b.mul(p, ys_p), b.mul(j, ys_j))))
            b.store(b.call(f32_fma, [xv, yv, b.load(out)]), out)
        loops.range(0, k, 1, term, "up")
    loops.range(0, n, 1, lambda j: loops.range(0, m, 1, lambda i: element(j, i), "ui"), "uj")
    b.branch(ret)
    b.position_at_end(packed)
    align = b.select(huge, c64(HUGE_PAGE), c64(64))
    base = b.inttoptr(b.and_(b.add(b.ptrtoint(raw, I64), b.sub(align, one)), b.neg(align)), F32P)
    if _MADVISE:
        with b.if_then(huge):
            madvise = ir.Function(mod, ir.FunctionType(I32, [I8P, I64, I32]), name="madvise")
            b.call(madvise, [b.bitcast(base, I8P), huge_bytes, ir.Constant(I32, _MADV_HUGEPAGE)])
    xbuf, ybuf = base, _at(b, base, x_floats)  # (64-byte aligned: mr and 16 divide them)
    tile = _at(b, ybuf, y_floats)
    ys_rows = y_t  # a row of Y is contiguous: pack it p-major (y_rows kernel)

    v16 = ir.VectorType(F32, 16)
    masked_load = ir.Function(mod, ir.FunctionType(v16, [v16.as_pointer(), I32, ir.VectorType(
        ir.IntType(1), 16), v16]), name="llvm.masked.load.v16f32.p0")

    def copy_floats(src, dst, count):
        """dst[0:count] = src[0:count] (zeros where src is None) in 16-lane vectors, the last
        one masked (no access past count)."""
        lane = ir.Constant(ir.VectorType(I64, 16), list(range(16)))
        masked_store = mod.globals.get("llvm.masked.store.v16f32.p0") or ir.Function(
            mod, ir.FunctionType(ir.VoidType(), [v16, v16.as_pointer(), I32, ir.VectorType(
                ir.IntType(1), 16)]), name="llvm.masked.store.v16f32.p0")

        def chunk(p):
            left = b.sub(count, p)
            limit = b.insert_element(ir.Constant(ir.VectorType(I64, 16), None), left,
                                     ir.Constant(I32, 0))
            limit = b.shuffle_vector(limit, ir.Constant(ir.VectorType(I64, 16), None),
                                     ir.Constant(ir.VectorType(I32, 16), [0] * 16))
            mask = b.icmp_signed("<", lane, limit)
            val = ir.Constant(v16, None) if src is None else b.call(masked_load, [
                b.bitcast(_at(b, src, p), v16.as_pointer()), ir.Constant(I32, 4), mask,
                ir.Constant(v16, None)])
            b.call(masked_store, [val, b.bitcast(_at(b, dst, p), v16.as_pointer()),
                                  ir.Constant(I32, 4), mask])
        loops.range(0, count, 16, chunk, "copy")

    def pack_y(pc, kc, jc, ncols):
        """Y[pc:pc+kc, jc:jc+ncols] into micro-panels of NR columns, zeros past ncols: p-major
        (one masked vector load of a row's NR elements per p) where Y's rows are contiguous,
        else column-major with column stride ystride (a copy loop per column)."""
        def panel(q):
            dst = _at(b, ybuf, b.mul(q, b.mul(c64(nr), ystride)))
            j0 = b.add(jc, b.mul(q, c64(nr)))
            valid_cols = _min(b, c64(nr), b.sub(b.add(jc, ncols), j0))
            with b.if_else(ys_rows) as (rows, cols):
                with rows:
                    lane = ir.Constant(ir.VectorType(I64, 16), list(range(16)))
                    limit = b.insert_element(ir.Constant(ir.VectorType(I64, 16), None),
                                             valid_cols, ir.Constant(I32, 0))
                    limit = b.shuffle_vector(limit, ir.Constant(ir.VectorType(I64, 16), None),
                                             ir.Constant(ir.VectorType(I32, 16), [0] * 16))
                    mask = b.icmp_unsigned("<", lane, limit)
                    src = _at(b, y, b.add(b.mul(pc, ys_p), j0))

                    def row(p):
                        val = b.call(masked_load, [
                            b.bitcast(_at(b, src, b.mul(p, ys_p)), v16.as_pointer()),
                            ir.Constant(I32, 4), mask, ir.Constant(v16, None)])
                        # (16 lanes: the 16 - NR past NR land in the next row or panel,
                        # written after, or in the buffer's 16 floats of slack)
                        b.store(val, b.bitcast(_at(b, dst, b.mul(p, c64(nr))),
                                               v16.as_pointer()), align=4)
                    loops.range(0, kc, 1, row, "yp")
                with cols:
                    def col(r):
                        col_dst = _at(b, dst, b.mul(r, ystride))
                        with b.if_else(b.icmp_signed("<", r, valid_cols)) as (ok, pad):
                            with ok:
                                src = _at(b, y, b.add(pc, b.mul(b.add(j0, r), ys_j)))
                                copy_floats(src, col_dst, kc)
                            with pad:
                                copy_floats(None, col_dst, kc)
                    loops.range(0, nr, 1, col, "yr")
        loops.range(0, b.udiv(b.add(ncols, c64(nr - 1)), c64(nr)), 1, panel, "yq")

    def pack_x(ic, mrows, pc, kc):
        def panel(q):
            dst = _at(b, xbuf, b.mul(q, b.mul(kc, c64(mr))))
            i0 = b.add(ic, b.mul(q, c64(mr)))
            full = b.and_(b.icmp_signed("<=", b.add(i0, c64(mr)), b.add(ic, mrows)),
                          b.icmp_signed("==", xs_i, one))
            with b.if_else(full) as (fast, slow):
                with fast:  # contiguous rows: vector copies
                    vec = ir.VectorType(F32, mr)

                    def row(p):
                        src = _at(b, x, b.add(i0, b.mul(b.add(pc, p), xs_p)))
                        val = b.load(b.bitcast(src, vec.as_pointer()), align=4)
                        b.store(val, b.bitcast(_at(b, dst, b.mul(p, c64(mr))),
                                               vec.as_pointer()), align=64)
                    loops.range(0, kc, 1, row, "xp")
                with slow:
                    def rows_from(p_start):
                        def one_row(r):
                            i = b.add(i0, r)
                            valid = b.icmp_signed("<", i, b.add(ic, mrows))
                            ii = b.select(valid, i, ic)
                            src = _at(b, x, b.add(b.mul(ii, xs_i), b.mul(pc, xs_p)))

                            def elem(p):
                                val = b.load(_at(b, src, b.mul(p, xs_p)))
                                val = b.select(valid, val, ir.Constant(F32, 0.0))
                                b.store(val, _at(b, dst, b.add(b.mul(p, c64(mr)), r)))
                            loops.range(p_start, kc, 1, elem, "xe")
                        loops.range(0, mr, 1, one_row, "xr")
                    rows_full = b.icmp_signed("<=", b.add(i0, c64(mr)), b.add(ic, mrows))
                    with b.if_else(b.and_(rows_full, b.icmp_signed("==", xs_p, one))) as (
                            transpose, scalar):
                        with transpose:  # rows of X contiguous in p: 16 x 16 transposes
                            whole = b.and_(kc, c64(-lanes))
                            loops.range(0, whole, lanes,
                                        lambda p0: _transpose_in(b, lanes, x, xs_i, i0, pc,
                                                                 p0, dst, mr), "xt")
                            rows_from(whole)
                        with scalar:
                            rows_from(c64(0))
        loops.range(0, b.udiv(b.add(mrows, c64(mr - 1)), c64(mr)), 1, panel, "xq")

    def tiles(ic, mrows, pc, kc, jc, ncols):
        first = b.icmp_signed("==", pc, c64(0))

        def column_panel(jr):
            ypanel = _at(b, ybuf, b.mul(b.udiv(jr, c64(nr)), b.mul(c64(nr), ystride)))
            nvalid = _min(b, c64(nr), b.sub(ncols, jr))

            def row_panel(ir_):
                xpanel = _at(b, xbuf, b.mul(ir_, kc))
                mvalid = _min(b, c64(mr), b.sub(mrows, ir_))
                cptr = _at(b, c, b.add(b.add(ic, ir_), b.mul(b.add(jc, jr), ldc)))
                whole = b.and_(b.icmp_signed("==", mvalid, c64(mr)),
                               b.icmp_signed("==", nvalid, c64(nr)))

                def call(dst, ld, width):
                    args = [xpanel, ypanel, kc, dst, ld, first, ystride]
                    with b.if_else(ys_rows) as (rows, cols):
                        with rows:
                            b.call(kernels[True, width], args)
                        with cols:
                            b.call(kernels[False, width], args)

                def call_narrowest(dst, ld):
                    """The kernel of the narrowest width >= nvalid."""
                    done = b.append_basic_block("edge.done")
                    blocks = {w: b.append_basic_block(f"edge.{w}") for w in widths}
                    switch = b.switch(nvalid, blocks[nr])
                    for j in range(1, nr):
                        switch.add_case(c64(j), blocks[min(w for w in widths if w >= j)])
                    for w, block in blocks.items():
                        b.position_at_end(block)
                        call(dst, ld, w)
                        b.branch(done)
                    b.position_at_end(done)

                def copy(to_tile):
                    def col(j):
                        def el(i):
                            t = _at(b, tile, b.add(i, b.mul(j, c64(mr))))
                            cc = _at(b, cptr, b.add(i, b.mul(j, ldc)))
                            if to_tile:
                                b.store(b.load(cc), t)
                            else:
                                b.store(b.load(t), cc)
                        loops.range(0, mvalid, 1, el, "ei")
                    loops.range(0, nvalid, 1, col, "ej")
                with b.if_else(whole) as (fast, edge):
                    with fast:
                        call(cptr, ldc, nr)
                    with edge:
                        with b.if_then(b.not_(first)):
                            copy(True)
                        call_narrowest(tile, c64(mr))
                        copy(False)
            loops.range(0, mrows, mr, row_panel, "ir")
        loops.range(0, ncols, nr, column_panel, "jr")

    def by_columns(jc):
        ncols = _min(b, c64(nc), b.sub(n, jc))

        def by_sum(pc):
            kc = _min(b, c64(KC), b.sub(k, pc))
            pack_y(pc, kc, jc, ncols)

            def by_rows(ic):
                mrows = _min(b, c64(MC), b.sub(m, ic))
                pack_x(ic, mrows, pc, kc)
                tiles(ic, mrows, pc, kc, jc, ncols)
            loops.range(0, m, MC, by_rows, "ic")
        loops.range(0, k, KC, by_sum, "pc")
    loops.range(0, n, nc, by_columns, "jc")
    b.call(free, [raw])
    b.branch(ret)
    b.position_at_end(ret)
    b.ret_void()
    return mod


@functools.cache
def _code(lanes: int):
    """The routine's machine code, kept for the process (compiled once per machine: the
    library cache), its symbol bound."""
    import llvmlite.binding as llvm

    from . import jit_engine
    name = symbol(lanes)
    # (O1: the loops are vectorised by hand, and O3 gives the micro-kernel's loop the same 48
    # instructions; compiling takes ~265 ms of CPU instead of ~380)
    code = jit_engine.compile_library(name, lambda: module(lanes), speed_level=1)
    llvm.add_symbol(name, code.address(name))
    return code


def routine(lanes: int) -> str:
    """The name generated code calls the routine of `lanes` by (bound for this process)."""
    _code(lanes)
    return symbol(lanes)


def address(lanes: int) -> int:
    return _code(lanes).address(symbol(lanes))
