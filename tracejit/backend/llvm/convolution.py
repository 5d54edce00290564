"""Structural rule for conv_general_dilated: a direct loop nest (small problems, groups, integer
and half precision); for large float convolutions a register-blocked loop nest where its layout
allows (2-D, features innermost in the input and the output: `_conv_blocked`), else im2col
into the workspace + BLAS gemm a chunk of batch elements at a time. The two loop nests run
their output rows on the thread pool (parallel_loops). codegen's Emitter dispatches to it
through `rules.STRUCTURAL`.

Padding and dilation are bounds tests on the input position, never reads: every load is in
bounds of its operand."""
from __future__ import annotations

import math

import llvmlite.ir as ir

from ...compiler.conv_layouts import along_positions
from ...core.avals import ShapedArray
from ...lax import elementwise as ew
from ...lax.convolution import conv_general_dilated_p
from ...lax.reductions import reduce_sum_p
from .codegen import Buf, Emitter, _strides
from .linalg import _GEMM_DTYPES, _emit_gemm
from .reductions import _acc_dtype, _combine
from .rules import STRUCTURAL
from .scalar_ops import convert, emit_scalar
from .types import I64, const, mem_type

# im2col + gemm pays for its copy once a batch element's product has this many multiply-adds
# and the contraction (kernel window x input features) is long enough for gemm's inner loop
_GEMM_MIN_FLOPS = 32 * 32 * 32
_GEMM_MIN_CONTRACT = 16
# the im2col buffer of one gemm (a chunk of batch elements) stays within this many bytes
_COLS_BYTES = 4 << 20


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


class _Geometry:
    """The convolution's sizes in canonical order and its operands' element strides."""

    def __init__(self, eqn, lhs: ShapedArray, rhs: ShapedArray, out: ShapedArray):
        p = eqn.params
        dn = p["dimension_numbers"]
        self.lhs_spec, self.rhs_spec, self.out_spec = dn
        self.strides = p["window_strides"]
        self.pads = [lo for lo, _ in p["padding"]]
        self.lhs_dil, self.rhs_dil = p["lhs_dilation"], p["rhs_dilation"]
        self.fgc, self.bgc = p["feature_group_count"], p["batch_group_count"]
        self.in_space = [lhs.shape[d] for d in self.lhs_spec[2:]]
        self.window = [rhs.shape[d] for d in self.rhs_spec[2:]]
        self.out_space = [out.shape[d] for d in self.out_spec[2:]]
        self.cin = rhs.shape[self.rhs_spec[1]]          # input features per group
        self.cout = out.shape[self.out_spec[1]]
        self.nout = out.shape[self.out_spec[0]]
        ls, rs = _strides(lhs.shape), _strides(rhs.shape)
        self.l_batch, self.l_feat = ls[self.lhs_spec[0]], ls[self.lhs_spec[1]]
        self.l_space = [ls[d] for d in self.lhs_spec[2:]]
        self.r_out, self.r_in = rs[self.rhs_spec[0]], rs[self.rhs_spec[1]]
        self.r_space = [rs[d] for d in self.rhs_spec[2:]]


def _window_loops(em: Emitter, g: _Geometry, pos: list[ir.Value], lhs_off: ir.Value, body,
                  rhs_off: ir.Value | None = None, skipped=None) -> None:
    """Loops over the kernel window at output position `pos`. `body(lhs_off, rhs_off, taps)`
    runs for each tap that lands on a real (not padded, not dilation-hole) input element,
    `taps` its index per window dimension; `skipped(d, taps)`, if given, for each tap off the
    input at dimension d (`taps` = the indices of dimensions 0..d), covering every tap below."""
    b = em.b

    def rec(d: int, l_off: ir.Value, r_off: ir.Value | None, taps: list) -> None:
        if d == len(g.window):
            body(l_off, r_off, taps)
            return

        def tap(k: ir.Value) -> None:
            at = b.add(b.mul(pos[d], _c(g.strides[d])),
                       b.sub(b.mul(k, _c(g.rhs_dil[d])), _c(g.pads[d])))
            ld = g.lhs_dil[d]
            extent = (g.in_space[d] - 1) * ld + 1 if g.in_space[d] else 0
            # unsigned: a negative position (in the low padding) compares as huge
            ok = b.icmp_unsigned("<", at, _c(extent))
            if ld != 1:
                ok = b.and_(ok, b.icmp_unsigned("==", b.urem(at, _c(ld)), _c(0)))
                at = b.udiv(at, _c(ld))
            l_next = b.add(l_off, b.mul(at, _c(g.l_space[d])))
            r_next = None if r_off is None else b.add(r_off, b.mul(k, _c(g.r_space[d])))
            if skipped is None:
                with b.if_then(ok):
                    rec(d + 1, l_next, r_next, taps + [k])
                return
            with b.if_else(ok) as (then, otherwise):
                with then:
                    rec(d + 1, l_next, r_next, taps + [k])
                with otherwise:
                    skipped(d, taps + [k])
        em.loop(g.window[d], tap, name=f"k{d}")
    rec(0, lhs_off, rhs_off, [])


def _conv_direct(em: Emitter, g: _Geometry, lhs: Buf, rhs: Buf, out: Buf) -> None:
    """For each batch element and output position, a row acc[o] of the output features is
    built tap by tap and input feature by feature as acc[o] += x * w[o] (an axpy over the
    output features: no loop-carried reduction, so it vectorises), then stored."""
    b = em.b
    dtype = out.aval.dtype
    acc_dtype = _acc_dtype(dtype)
    groups = g.fgc * g.bgc  # (at most one of them is > 1)
    per = g.cout // groups
    acc = _row(em, ShapedArray((g.cout,), acc_dtype))
    os = _strides(out.aval.shape)
    o_stride = os[g.out_spec[1]]
    zero = const(acc_dtype, 0)

    def position(idx: list[ir.Value]) -> None:
        n, pos = idx[0], idx[1:]
        em.loop(g.cout, lambda o: em.store(acc, o, zero), name="o")
        out_base = b.mul(n, _c(os[g.out_spec[0]]))
        for d, p in zip(g.out_spec[2:], pos):
            out_base = b.add(out_base, b.mul(p, _c(os[d])))

        def group(q: ir.Value) -> None:
            o0 = b.mul(q, _c(per))
            n_lhs = b.add(b.mul(q, _c(g.nout)), n) if g.bgc > 1 else n
            c0 = b.mul(q, _c(g.cin)) if g.fgc > 1 else _c(0)
            lhs_off = b.add(b.mul(n_lhs, _c(g.l_batch)), b.mul(c0, _c(g.l_feat)))

            def taps(l_off: ir.Value, r_off: ir.Value, _taps) -> None:
                def feature(c: ir.Value) -> None:
                    x = convert(b, em.load(lhs, b.add(l_off, b.mul(c, _c(g.l_feat)))),
                                lhs.aval.dtype, acc_dtype)
                    w_base = b.add(b.add(r_off, b.mul(c, _c(g.r_in))),
                                   b.mul(o0, _c(g.r_out)))

                    def axpy(o: ir.Value) -> None:
                        w = convert(b, em.load(rhs, b.add(w_base, b.mul(o, _c(g.r_out)))),
                                    rhs.aval.dtype, acc_dtype)
                        at = b.add(o0, o)
                        prod = emit_scalar(b, ew.mul_p, [acc_dtype] * 2, acc_dtype, [x, w], {})
                        em.store(acc, at, _combine(em, reduce_sum_p, acc_dtype,
                                                   em.load(acc, at), prod))
                    em.loop(per, axpy, name="o")
                em.loop(g.cin, feature, name="c")
            _window_loops(em, g, pos, lhs_off, taps, rhs_off=_c(0))
        if groups == 1:
            group(_c(0))
        else:
            em.loop(groups, group, name="g")
        em.loop(g.cout, lambda o: em.store(out, b.add(out_base, b.mul(o, _c(o_stride))),
                                           convert(b, em.load(acc, o), acc_dtype, dtype)),
                name="o")
    em.loop_nest([g.nout] + list(g.out_space), position)
    if not _on_stack(acc.aval):
        em.release(acc)


# A row of sums of at most this many bytes lives on the stack (`_row`)
_STACK_ROW_BYTES = 4096


def _on_stack(aval: ShapedArray) -> bool:
    return aval.size * aval.dtype.itemsize <= _STACK_ROW_BYTES


def _row(em: Emitter, aval: ShapedArray) -> Buf:
    """A row of sums: on the stack (64-byte aligned) where small, else in the workspace. The
    stack's row aliases nothing, so LLVM vectorises the loops over it even where the other
    pointers come from a parallel chunk's context (a workspace row there could alias them: a
    1 -> 8 feature convolution of 32x28x28 images ran its rows scalar, 0.80 against 0.27 ms)."""
    if not _on_stack(aval):
        return em.alloc(aval)
    row = em._entry_alloca(ir.ArrayType(mem_type(aval.dtype), aval.size))
    row.align = 64
    return Buf(em.b.bitcast(row, mem_type(aval.dtype).as_pointer()), aval)


def _conv_blocked(em: Emitter, g: _Geometry, lhs: Buf, rhs: Buf, out: Buf, lanes: int
                  ) -> None:
    """A 2-D convolution as a register-blocked loop nest, without im2col: for each output row (batch
    element and output height; the loop the pool shares out) and block of output features (1-4
    vectors on AVX-512, 1-2 on AVX2: _block_vectors), blocks of P output positions along the row
    hold a P x vectors tile of sums in registers; each window tap and input feature adds one input
    element (broadcast) times the weights' vectors into it (P x vectors fused multiply-adds for P
    loads and vectors loads). Positions whose window crosses the row's ends (padding) are tiles of
    one, each window column tested; a window row off the input is skipped. Each sum runs over the
    taps in order, then the input features: one chain per output element. Weights not already [taps,
    in features, out features] with out innermost are packed so, per chunk of rows (a loop off the
    pool's rows: the pool's chunks each pack their own)."""
    b = em.b
    dtype = out.aval.dtype
    ty = mem_type(dtype)
    vec = ir.VectorType(ty, lanes)
    (height, width), (kh_n, kw_n) = g.in_space, g.window
    out_h, out_w = g.out_space
    (sh, sw), (dh, dw), (ph, pw) = g.strides, g.rhs_dil, g.pads
    cin, cout = g.cin, g.cout
    taps = kh_n * kw_n
    if g.r_out == 1 and g.r_in == cout and g.r_space == [kw_n * cin * cout, cin * cout]:
        w = rhs
    else:
        w = em.alloc(ShapedArray((taps * cin * cout,), dtype))

        def pack(kidx: list[ir.Value]) -> None:
            k = b.add(b.mul(kidx[0], _c(kw_n)), kidx[1])
            src = b.add(b.mul(kidx[0], _c(g.r_space[0])), b.mul(kidx[1], _c(g.r_space[1])))

            def feature(c: ir.Value) -> None:
                row = b.mul(b.add(b.mul(k, _c(cin)), c), _c(cout))
                s_c = b.add(src, b.mul(c, _c(g.r_in)))
                em.loop(cout, lambda o: em.store(w, b.add(row, o), em.load(
                    rhs, b.add(s_c, b.mul(o, _c(g.r_out))))), name="o", over_data=False)
            em.loop(cin, feature, name="c", over_data=False)
        em.loop(kh_n, lambda kh: em.loop(kw_n, lambda kw: pack([kh, kw]), name="kw",
                                        over_data=False), name="kh", over_data=False)
    os = _strides(out.aval.shape)
    o_batch, (o_h, o_w) = os[g.out_spec[0]], [os[d] for d in g.out_spec[2:]]
    l_h, l_w = g.l_space
    fma = _fma(em, vec)
    zero = ir.Constant(vec, [0.0] * lanes)

    def column(ow: int, kw: int) -> int:
        return ow * sw + kw * dw - pw

    def inside(ow: int) -> list[int]:
        """The window columns of output position ow that land on the input."""
        return [kw for kw in range(kw_n) if 0 <= column(ow, kw) < width]
    interior = [ow for ow in range(out_w) if len(inside(ow)) == kw_n]
    lo, hi = (interior[0], interior[-1] + 1) if interior else (0, 0)
    edges = [ow for ow in range(out_w) if not lo <= ow < hi]

    def row(r: ir.Value) -> None:
        n, oh = b.udiv(r, _c(out_h)), b.urem(r, _c(out_h))
        lhs_n = b.mul(n, _c(g.l_batch))
        out_row = b.add(b.mul(n, _c(o_batch)), b.mul(oh, _c(o_h)))
        ih0 = b.sub(b.mul(oh, _c(sh)), _c(ph))

        def tile(ow0: ir.Value, positions: int, o0: ir.Value, vectors: int, edge: bool
                 ) -> None:
            """The sums of `positions` output positions from ow0 by `vectors` vectors of
            output features from o0; `edge`: one position whose window may cross the row's
            ends (each tap's column tested)."""
            def kh_step(kh: ir.Value, acc: list) -> list:
                ih = b.add(ih0, b.mul(kh, _c(dh)))
                base = b.add(lhs_n, b.mul(ih, _c(l_h)))

                def kw_step(kw: ir.Value, acc: list) -> list:
                    cols = [b.sub(b.add(b.mul(b.add(ow0, _c(p)), _c(sw)), b.mul(kw, _c(dw))),
                                  _c(pw)) for p in range(positions)]
                    xs = [b.add(base, b.mul(col, _c(l_w))) for col in cols]
                    w0 = b.add(b.mul(b.add(b.mul(kh, _c(kw_n)), kw), _c(cin * cout)), o0)

                    def step(c: ir.Value, acc: list) -> list:
                        x = [_splat(b, em.load(lhs, b.add(at, c)), vec)
                             for at in xs]
                        w_c = b.add(w0, b.mul(c, _c(cout)))
                        wv = [_load_vector(b, w, b.add(w_c, _c(v * lanes)), vec)
                              for v in range(vectors)]
                        return [b.call(fma, [x[p], wv[v], acc[p * vectors + v]])
                                for p in range(positions) for v in range(vectors)]
                    if not edge:
                        return _carried_range(b, _c(0), _c(cin), acc, step)
                    # (a column below 0 compares as huge)
                    return _if_merged(b, b.icmp_unsigned("<", cols[0], _c(width)), acc,
                                      lambda acc: _carried_range(b, _c(0), _c(cin), acc, step))
                return _if_merged(b, b.icmp_unsigned("<", ih, _c(height)), acc,
                                  lambda acc: _carried_range(b, _c(0), _c(kw_n), acc, kw_step))
            acc = _carried_range(b, _c(0), _c(kh_n), [zero] * (positions * vectors),
                                 kh_step)
            for p in range(positions):
                at = b.add(b.add(out_row, b.mul(b.add(ow0, _c(p)), _c(o_w))), o0)
                for v in range(vectors):
                    ptr = b.bitcast(b.gep(out.ptr, [b.add(at, _c(v * lanes))], inbounds=True),
                                    vec.as_pointer())
                    b.store(acc[p * vectors + v], ptr, align=dtype.itemsize)

        def block(o0: ir.Value, vectors: int) -> None:
            positions = _tile_positions(vectors)
            full, rest = divmod(hi - lo, positions)
            if full:
                em.loop(full, lambda q: tile(b.add(_c(lo), b.mul(q, _c(positions))),
                                             positions, o0, vectors, False),
                        name="tile", vectorize=False)
            if rest:
                tile(_c(lo + full * positions), rest, o0, vectors, False)
            if edges:  # (the positions before lo, then those from hi)
                em.loop(len(edges), lambda i: tile(b.select(
                    b.icmp_unsigned("<", i, _c(lo)), i, b.add(i, _c(hi - lo))), 1, o0, vectors,
                    True), name="edge", vectorize=False)
        most = _block_vectors()
        wide, narrow = divmod(cout // lanes, most)
        if wide:
            em.loop(wide, lambda ob: block(b.mul(ob, _c(most * lanes)), most), name="oblock",
                    vectorize=False)
        if narrow:
            block(_c(wide * most * lanes), narrow)
    em.loop(g.nout * out_h, row, name="rows", vectorize=False)
    if w is not rhs:
        em.release(w)


def _conv_weight_blocked(em: Emitter, g: _Geometry, lhs: Buf, rhs: Buf, out: Buf,
                         lanes: int) -> None:
    """A weight gradient's convolution as a register-blocked loop nest: out[b, o, s] = sum over c
    and window w of lhs[b, c, s * stride + w * dilation - pad] rhs[o, c, w], where b (the forward
    input's features) is innermost in lhs and o innermost in rhs and out. Each unit of work (an
    output position s, a block of up to 12 b, a block of 1-4 vectors of o: _block_vectors; the units
    are shared out on the pool) keeps its b x o tile of sums in registers over the whole contraction
    (c, then the window's rows, then its columns, those on the input only): one broadcast lhs
    element per b and the rhs's vectors, tile-size fused multiply-adds, each sum one chain in that
    order. im2col had copied the input once per window tap (the window as large as the image) for a
    product whose k was the batch times the image."""
    b = em.b
    dtype = out.aval.dtype
    vec = ir.VectorType(mem_type(dtype), lanes)
    (height, width), (win_h, win_w) = g.in_space, g.window
    (sh, sw), (dh, dw), (ph, pw) = g.strides, g.rhs_dil, g.pads
    out_h, out_w = g.out_space
    nb, cin, cout = g.nout, g.cin, g.cout
    os = _strides(out.aval.shape)
    o_batch, (o_h, o_w) = os[g.out_spec[0]], [os[d] for d in g.out_spec[2:]]
    l_h, l_w = g.l_space
    r_h, r_w = g.r_space
    fma = _fma(em, vec)
    zero = ir.Constant(vec, [0.0] * lanes)
    vectors = min(_block_vectors(), cout // lanes)
    o_blocks = -(-(cout // lanes) // vectors)
    full = _tile_positions(vectors)
    b_blocks = -(-nb // full)

    def window_on_input(at: ir.Value, dilation: int, size: int, n: int) -> tuple:
        """[lo, hi) of the window indices w < n with 0 <= at + w * dilation < size."""
        def floor_div(x: ir.Value) -> ir.Value:  # (sdiv truncates towards zero)
            return b.select(b.icmp_signed("<", x, _c(0)),
                            b.sdiv(b.sub(x, _c(dilation - 1)), _c(dilation)),
                            b.sdiv(x, _c(dilation)))
        lo = b.neg(floor_div(at))                       # ceil(-at / d)
        hi = b.neg(floor_div(b.sub(at, _c(size))))      # ceil((size - at) / d)
        lo = b.select(b.icmp_signed("<", lo, _c(0)), _c(0), lo)
        hi = b.select(b.icmp_signed(">", hi, _c(n)), _c(n), hi)
        return lo, b.select(b.icmp_signed("<", hi, lo), lo, hi)

    def unit(u: ir.Value) -> None:
        ob = b.urem(u, _c(o_blocks))
        rest = b.udiv(u, _c(o_blocks))
        bb = b.urem(rest, _c(b_blocks))
        pos = b.udiv(rest, _c(b_blocks))
        oh, ow = b.udiv(pos, _c(out_w)), b.urem(pos, _c(out_w))
        o0 = b.mul(ob, _c(vectors * lanes))
        b0 = b.mul(bb, _c(full))
        at_h = b.sub(b.mul(oh, _c(sh)), _c(ph))
        at_w = b.sub(b.mul(ow, _c(sw)), _c(pw))
        kh_lo, kh_hi = window_on_input(at_h, dh, height, win_h)
        kw_lo, kw_hi = window_on_input(at_w, dw, width, win_w)

        def tile(rows: int, vecs: int) -> None:
            def c_step(c: ir.Value, acc: list) -> list:
                l_c = b.add(b.mul(c, _c(g.l_feat)), b0)
                r_c = b.add(b.mul(c, _c(g.r_in)), o0)

                def kh_step(kh: ir.Value, acc: list) -> list:
                    ih = b.add(at_h, b.mul(kh, _c(dh)))
                    l_row = b.add(l_c, b.mul(ih, _c(l_h)))
                    r_row = b.add(r_c, b.mul(kh, _c(r_h)))

                    def kw_step(kw: ir.Value, acc: list) -> list:
                        iw = b.add(at_w, b.mul(kw, _c(dw)))
                        l_at = b.add(l_row, b.mul(iw, _c(l_w)))
                        r_at = b.add(r_row, b.mul(kw, _c(r_w)))
                        x = [_splat(b, em.load(lhs, b.add(l_at, _c(i))), vec)
                             for i in range(rows)]
                        wv = [_load_vector(b, rhs, b.add(r_at, _c(v * lanes)), vec)
                              for v in range(vecs)]
                        return [b.call(fma, [x[i], wv[v], acc[i * vecs + v]])
                                for i in range(rows) for v in range(vecs)]
                    return _carried_range(b, kw_lo, kw_hi, acc, kw_step)
                return _carried_range(b, kh_lo, kh_hi, acc, kh_step)
            acc = _carried_range(b, _c(0), _c(cin), [zero] * (rows * vecs), c_step)
            base = b.add(b.add(b.mul(oh, _c(o_h)), b.mul(ow, _c(o_w))), o0)
            for i in range(rows):
                at = b.add(base, b.mul(b.add(b0, _c(i)), _c(o_batch)))
                for v in range(vecs):
                    ptr = b.bitcast(b.gep(out.ptr, [b.add(at, _c(v * lanes))], inbounds=True),
                                    vec.as_pointer())
                    b.store(acc[i * vecs + v], ptr, align=dtype.itemsize)

        def by_vectors(rows: int) -> None:
            narrow = (cout // lanes) % vectors
            if not narrow:
                tile(rows, vectors)
                return
            with b.if_else(b.icmp_unsigned("<", ob, _c(o_blocks - 1))) as (wide, last):
                with wide:
                    tile(rows, vectors)
                with last:
                    tile(rows, narrow)
        last_rows = nb - (b_blocks - 1) * full
        if last_rows == full:
            by_vectors(full)
        else:
            with b.if_else(b.icmp_unsigned("<", bb, _c(b_blocks - 1))) as (whole, last):
                with whole:
                    by_vectors(full)
                with last:
                    by_vectors(last_rows)
    em.loop(out_h * out_w * b_blocks * o_blocks, unit, name="units", vectorize=False)


def _conv_positions(em: Emitter, g: _Geometry, lhs: Buf, rhs: Buf, out: Buf, lanes: int
                    ) -> None:
    """A convolution of few output features per group, vectorised along its innermost output
    positions (where the kernels over output features would run part-empty vectors, and im2col a
    gemm of a column or a few that copies the input once per window tap: jnp.convolve's 100,000
    by 64 taps 10.9 ms against JAX 0.12's 1.6). The work is units of a row (batch element, output
    feature, outer output positions) by a tile of _POSITION_VECTORS vectors of consecutive
    positions, shared out on the pool: a tile's sums stay in registers over the outer window taps
    on the input, the group's input features, then the window's columns, each adding one
    broadcast weight times the input vector under each of its vectors (unaligned loads, the
    input's positions contiguous). A tile whose window crosses the row's ends (padding) runs as
    single vectors where they stay inside, else position by position, each tap's column tested.
    Each sum runs over the taps in that order: one chain per output element."""
    b = em.b
    dtype = out.aval.dtype
    ty = mem_type(dtype)
    vec = ir.VectorType(ty, lanes)
    *outer_win, kw_n = g.window
    *outer_out, out_w = g.out_space
    width, dw, pw = g.in_space[-1], g.rhs_dil[-1], g.pads[-1]
    per = g.cout // g.fgc
    os = _strides(out.aval.shape)
    o_batch, o_feat = os[g.out_spec[0]], os[g.out_spec[1]]
    o_outer = [os[d] for d in g.out_spec[2:-1]]
    # the positions whose every window column lands on the input (window stride 1)
    lo = min(max(pw, 0), out_w)
    hi = min(max(width - (kw_n - 1) * dw + pw, lo), out_w)
    span = _POSITION_VECTORS * lanes
    tiles = -(-out_w // span)
    rows = [g.nout, g.cout, *outer_out]
    vector_fma, scalar_fma = _fma(em, vec), _fma(em, ty)

    def unit(u: ir.Value) -> None:
        row, t = em.divmod_index(u, tiles, math.prod(rows) * tiles)
        n, o, *pos = em.unravel(row, rows)
        lhs_row = b.mul(n, _c(g.l_batch))
        if g.fgc > 1:
            lhs_row = b.add(lhs_row, b.mul(b.udiv(o, _c(per)), _c(g.cin * g.l_feat)))
        out_row = b.add(b.mul(n, _c(o_batch)), b.mul(o, _c(o_feat)))
        for p, stride in zip(pos, o_outer):
            out_row = b.add(out_row, b.mul(p, _c(stride)))

        def sums(ow: ir.Value, count: int, edge: bool) -> list[ir.Value]:
            """The sums of `count` vectors of positions from ow (one position where `edge`,
            each tap's column tested)."""
            t_ = ty if edge else vec
            fma = scalar_fma if edge else vector_fma

            def taps(l_off: ir.Value, r_off: ir.Value, acc: list) -> list:
                def feature(c: ir.Value, acc: list) -> list:
                    l_c = b.add(l_off, b.mul(c, _c(g.l_feat)))
                    r_c = b.add(r_off, b.mul(c, _c(g.r_in)))

                    def column(k: ir.Value, acc: list) -> list:
                        col = b.sub(b.add(ow, b.mul(k, _c(dw))), _c(pw))
                        w = em.load(rhs, b.add(r_c, b.mul(k, _c(g.r_space[-1]))))
                        at = b.add(l_c, col)
                        if edge:  # (a column below 0 compares as huge)
                            return _if_merged(b, b.icmp_unsigned("<", col, _c(width)), acc,
                                              lambda acc: [b.call(fma, [em.load(lhs, at), w,
                                                                        acc[0]])])
                        w = _splat(b, w, vec)
                        return [b.call(fma, [_load_vector(b, lhs, b.add(at, _c(j * lanes)),
                                                          vec), w, a])
                                for j, a in enumerate(acc)]
                    return _carried_range(b, _c(0), _c(kw_n), acc, column)
                return _carried_range(b, _c(0), _c(g.cin), acc, feature)

            def outer(d: int, l_off: ir.Value, r_off: ir.Value, acc: list) -> list:
                if d == len(outer_win):
                    return taps(l_off, r_off, acc)

                def step(k: ir.Value, acc: list) -> list:
                    at = b.add(b.mul(pos[d], _c(g.strides[d])),
                               b.sub(b.mul(k, _c(g.rhs_dil[d])), _c(g.pads[d])))
                    return _if_merged(b, b.icmp_unsigned("<", at, _c(g.in_space[d])), acc,
                                      lambda acc: outer(d + 1, b.add(l_off, b.mul(
                                          at, _c(g.l_space[d]))), b.add(r_off, b.mul(
                                              k, _c(g.r_space[d]))), acc))
                return _carried_range(b, _c(0), _c(outer_win[d]), acc, step)
            zero = ir.Constant(t_, 0.0 if edge else [0.0] * lanes)
            return outer(0, lhs_row, b.mul(o, _c(g.r_out)), [zero] * count)

        def store(ow: ir.Value, acc: list) -> None:
            for j, a in enumerate(acc):
                ptr = b.gep(out.ptr, [b.add(out_row, b.add(ow, _c(j * lanes)))], inbounds=True)
                if isinstance(a.type, ir.VectorType):
                    ptr = b.bitcast(ptr, vec.as_pointer())
                b.store(a, ptr, align=dtype.itemsize)

        def inside(ow: ir.Value, n: int) -> ir.Value:
            """Whether positions [ow, ow + n) are all interior."""
            return b.and_(b.icmp_unsigned(">=", ow, _c(lo)),
                          b.icmp_unsigned("<=", b.add(ow, _c(n)), _c(hi)))

        ow0 = b.mul(t, _c(span))
        with b.if_else(inside(ow0, span)) as (whole, part):
            with whole:
                store(ow0, sums(ow0, _POSITION_VECTORS, False))
            with part:
                def one_vector(v: ir.Value) -> None:
                    ow1 = b.add(ow0, b.mul(v, _c(lanes)))
                    with b.if_else(inside(ow1, lanes)) as (vector, scalars):
                        with vector:
                            store(ow1, sums(ow1, 1, False))
                        with scalars:
                            def position(j: ir.Value) -> None:
                                ow = b.add(ow1, j)
                                with b.if_then(b.icmp_unsigned("<", ow, _c(out_w))):
                                    store(ow, sums(ow, 1, True))
                            em.loop(lanes, position, name="p", vectorize=False)
                em.loop(_POSITION_VECTORS, one_vector, name="v", vectorize=False)
    em.loop(math.prod(rows) * tiles, unit, name="units", vectorize=False)


def _carried_range(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, acc: list, step) -> list:
    """`acc = step(i, acc)` for i in range(lo, hi) (none where hi <= lo), the values carried
    in registers; returns them after the last step."""
    pre = b.block
    head = b.append_basic_block("range")
    body = b.append_basic_block("range.body")
    done = b.append_basic_block("range.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(lo, pre)
    phis = []
    for v in acc:
        phi = b.phi(v.type)
        phi.add_incoming(v, pre)
        phis.append(phi)
    b.cbranch(b.icmp_signed("<", i, hi), body, done)
    b.position_at_end(body)
    new = step(i, phis)
    i.add_incoming(b.add(i, _c(1)), b.block)
    for phi, v in zip(phis, new):
        phi.add_incoming(v, b.block)
    b.branch(head)
    b.position_at_end(done)
    return phis


def _splat(b: ir.IRBuilder, x: ir.Value, vec: ir.VectorType) -> ir.Value:
    one = b.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(one, ir.Constant(vec, ir.Undefined),
                            ir.Constant(ir.VectorType(ir.IntType(32), vec.count), [0] * vec.count))


def _fma(em: Emitter, ty: ir.Type) -> ir.Function:
    """The module's llvm.fma on `ty`: vectors or a scalar float."""
    element = ty.element if isinstance(ty, ir.VectorType) else ty
    name = "llvm.fma." + (f"v{ty.count}" if isinstance(ty, ir.VectorType) else "") + \
        ("f64" if isinstance(element, ir.DoubleType) else "f32")
    return em.module.globals.get(name) or ir.Function(em.module, ir.FunctionType(ty, [ty] * 3),
                                                      name=name)


def _load_vector(b: ir.IRBuilder, buf: Buf, at: ir.Value, vec: ir.VectorType) -> ir.Value:
    ptr = b.bitcast(b.gep(buf.ptr, [at], inbounds=True), vec.as_pointer())
    return b.load(ptr, align=buf.aval.dtype.itemsize)


def _if_merged(b: ir.IRBuilder, cond: ir.Value, acc: list, then) -> list:
    """`then(acc)` where `cond` holds, else `acc` (phis merge the two)."""
    before = b.block
    with b.if_then(cond):
        new = then(acc)
        inside = b.block
    merged = []
    for old, v in zip(acc, new):
        phi = b.phi(v.type)
        phi.add_incoming(old, before)
        phi.add_incoming(v, inside)
        merged.append(phi)
    return merged


def _channels_last(spec) -> bool:
    """out_spec is (N, spatial..., C) in memory order: a gemm's [P, O] rows land in place."""
    n = len(spec)
    return tuple(spec) == (0, n - 1) + tuple(range(1, n - 1))


def _chunk(nout: int, row_bytes: int) -> int:
    """Batch elements per gemm: the largest divisor of nout whose columns fit the budget."""
    fit = max(1, _COLS_BYTES // max(row_bytes, 1))
    return max(d for d in range(1, min(nout, fit) + 1) if nout % d == 0)


def _conv_gemm(em: Emitter, g: _Geometry, lhs: Buf, rhs: Buf, out: Buf) -> None:
    """A chunk of batch elements at a time: cols[(n, p), (k, c)] = the input under window tap
    k at output position p (zero in padding), then out[(n, p), o] = cols @ w2 with
    w2[(k, c), o] = rhs[o, c, k]: one gemm per chunk."""
    b = em.b
    dtype = out.aval.dtype
    npos, ntaps = math.prod(g.out_space), math.prod(g.window)
    kc = ntaps * g.cin
    chunk = _chunk(g.nout, npos * kc * dtype.itemsize)
    rows = chunk * npos
    cols = em.alloc(ShapedArray((rows, kc), dtype))
    w2 = em.alloc(ShapedArray((kc, g.cout), dtype))
    zero = const(dtype, 0)

    def weights(kidx: list[ir.Value]) -> None:
        r_off = _c(0)
        for k, s in zip(kidx, g.r_space):
            r_off = b.add(r_off, b.mul(k, _c(s)))
        row0 = b.mul(em.linear(g.window, kidx) or _c(0), _c(g.cin))

        def feature(c: ir.Value) -> None:
            row = b.mul(b.add(row0, c), _c(g.cout))
            r_c = b.add(r_off, b.mul(c, _c(g.r_in)))
            em.loop(g.cout, lambda o: em.store(
                w2, b.add(row, o), em.load(rhs, b.add(r_c, b.mul(o, _c(g.r_out))))), name="o")
        em.loop(g.cin, feature, name="c")
    em.loop_nest(g.window, weights)

    direct = _channels_last(g.out_spec)
    res = out if direct else em.alloc(ShapedArray((rows, g.cout), dtype))

    def fill(n: ir.Value, j: ir.Value) -> None:
        """Batch element n's rows of cols, the j-th block of the chunk."""
        lhs_n = b.mul(n, _c(g.l_batch))

        def position(pidx: list[ir.Value]) -> None:
            p = b.add(b.mul(j, _c(npos)), em.linear(g.out_space, pidx) or _c(0))
            row = b.mul(p, _c(kc))

            def column(taps: list[ir.Value]) -> ir.Value:
                """The first column of the block under taps (dims 0..len-1, row-major)."""
                tap = _c(0)
                for d, k in enumerate(taps):
                    tap = b.add(b.mul(tap, _c(g.window[d])), k)
                inner = math.prod(g.window[len(taps):]) * g.cin
                return b.add(row, b.mul(tap, _c(inner)))

            def copy(l_off: ir.Value, _r, taps: list[ir.Value]) -> None:
                col = column(taps)
                em.loop(g.cin, lambda c: em.store(cols, b.add(col, c), em.load(
                    lhs, b.add(l_off, b.mul(c, _c(g.l_feat))))), name="c")

            def zero_fill(d: int, taps: list[ir.Value]) -> None:
                # a tap off the input at dimension d: zero every column under it
                col = column(taps)
                em.loop(math.prod(g.window[d + 1:]) * g.cin,
                        lambda z: em.store(cols, b.add(col, z), zero), name="z")
            _window_loops(em, g, pidx, lhs_n, copy, skipped=zero_fill)
        em.loop_nest(g.out_space, position)

    def scatter(n: ir.Value, j: ir.Value) -> None:
        """Batch element n's block j of the gemm's rows into the output's layout."""
        def one(pidx: list[ir.Value]) -> None:
            p = b.add(b.mul(j, _c(npos)), em.linear(g.out_space, pidx) or _c(0))
            idx: list = [None] * out.aval.ndim
            idx[g.out_spec[0]] = n
            for d, i in zip(g.out_spec[2:], pidx):
                idx[d] = i

            def feature(o: ir.Value) -> None:
                idx[g.out_spec[1]] = o
                em.store(out, em.linear(out.aval.shape, idx),
                         em.load(res, b.add(b.mul(p, _c(g.cout)), o)))
            em.loop(g.cout, feature, name="o")
        em.loop_nest(g.out_space, one)

    def run_chunk(ci: ir.Value) -> None:
        n0 = b.mul(ci, _c(chunk))
        em.loop(chunk, lambda j: fill(b.add(n0, j), j), name="j")
        base = b.mul(n0, _c(npos * g.cout)) if direct else _c(0)
        dst = Buf(b.gep(res.ptr, [base], inbounds=True), res.aval)
        _emit_gemm(em, dtype, cols, w2, dst, 1, rows, g.cout, kc, False, False)
        if not direct:
            em.loop(chunk, lambda j: scatter(b.add(n0, j), j), name="j")
    em.loop(g.nout // chunk, run_chunk, name="chunk")
    for buf in (cols, w2) + (() if direct else (res,)):
        em.release(buf)


def contraction(eqn) -> int:
    """The multiply-adds of each output element: kernel window x input features per group."""
    rhs = eqn.invars[1].aval
    return math.prod(rhs.shape[d] for d in eqn.params["dimension_numbers"][1][2:]) * \
        rhs.shape[eqn.params["dimension_numbers"][1][1]]


def _gemm_sized(eqn) -> bool:
    """Whether the convolution is large enough for im2col and gemm (or the blocked kernel)."""
    lhs, rhs = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    p = eqn.params
    npos = math.prod(out.shape[d] for d in p["dimension_numbers"][2][2:])
    cout = out.shape[p["dimension_numbers"][2][1]]
    kc = contraction(eqn)
    return (p["feature_group_count"] == 1 and p["batch_group_count"] == 1
            and out.dtype in _GEMM_DTYPES and lhs.dtype == rhs.dtype == out.dtype
            and npos * cout * kc >= _GEMM_MIN_FLOPS and kc >= _GEMM_MIN_CONTRACT)


def direct(eqn) -> bool:
    """Whether the convolution is a loop nest over its output rows (the direct loop nest, the
    kernel along positions, the blocked kernel or the weight gradient's; else im2col and gemm):
    parallel_loops runs it on the pool."""
    return (not _gemm_sized(eqn) or _positions_lanes(eqn) is not None
            or _blocked_lanes(eqn) is not None or _weight_lanes(eqn) is not None)


# Vectors of output positions per tile of `_conv_positions`: its sums and a broadcast weight
# within AVX2's 16 vector registers (the input vectors are memory operands of the multiply-adds)
_POSITION_VECTORS = 8


def _positions_lanes(eqn) -> int | None:
    """The vector lanes of `_conv_positions` for a convolution its layout lets run along its
    positions (compiler.conv_layouts.along_positions) with at least two vectors of output
    positions along its innermost spatial dimension; else None."""
    from . import gemm
    host = gemm.host_lanes()
    if host is None or not along_positions(eqn):
        return None
    out = eqn.outvars[0].aval
    lanes = host if out.dtype.itemsize == 4 else host // 2
    return lanes if out.shape[eqn.params["dimension_numbers"][2][-1]] >= 2 * lanes else None


def _weight_lanes(eqn) -> int | None:
    """The vector lanes of the weight gradient's kernel (`_conv_weight_blocked`) for a
    convolution in the form JAX gives an NHWC convolution's weight gradient (the input's
    features as this convolution's batch, innermost; the output gradient's features innermost
    as its output features; the batch contracted), else None."""
    return _kernel_lanes(eqn, lambda lhs_spec, rhs_spec, out_spec:
                         lhs_spec[0] == 3 and rhs_spec[0] == 3 and out_spec[1] == 3)


def _kernel_lanes(eqn, layout) -> int | None:
    """The vector lanes of a register-blocked kernel for a gemm-sized 2-D real float
    convolution (complex ones keep im2col) without input dilation whose specs pass
    `layout(lhs, rhs, out)` and whose output features are a multiple of the lanes, else
    None."""
    from . import gemm
    if not _gemm_sized(eqn):
        return None
    out = eqn.outvars[0].aval
    p = eqn.params
    specs = p["dimension_numbers"]
    host = gemm.host_lanes()
    if (host is None or out.dtype.kind != "f" or len(specs[0]) != 4
            or any(d != 1 for d in p["lhs_dilation"]) or not layout(*specs)):
        return None
    lanes = host if out.dtype.itemsize == 4 else host // 2
    return lanes if out.shape[specs[2][1]] % lanes == 0 else None


# The blocked kernel's contraction (window taps x input features) at most: its weights for
# one block of output features (64 float32) then stay within 1 MiB, L2, where every block of
# output positions reads them all again
_BLOCKED_MAX_CONTRACT = 4096
# Output positions per tile at most (rows of the register tile)
_MAX_TILE_POSITIONS = 12


def _block_vectors() -> int:
    """The most output-feature vectors in a tile of the blocked kernels: 4 in AVX-512's 32
    registers, 2 in AVX2's 16 (a 6 x 2 tile, 12 sums, as AVX2 gemm kernels have it; a 2 x 4
    one loads 6 vectors for 8 multiply-adds). Measured on Zen 3 (AVX2), 8x32x32x32, 3x3, SAME,
    medians of 9 rounds: forward to 64 features 2.96 ms with 4 (2 x 4 tiles), 2.28 with 3 (3 x
    3), 1.79 with 2 (6 x 2), 2.68 with 1 (12 x 1); 6 x 2 against 4, 5 or 7 positions: 2.18,
    2.05, 1.70, 4.91 (spills); its weight gradient to 64 features 4.88 (4), 4.94 (3), 3.35 ms
    (2); JAX 0.12 2.43 and 5.48 ms."""
    from . import gemm
    return 4 if gemm.host_lanes() == 16 else 2


def _tile_positions(vectors: int) -> int:
    """Output positions per tile of `vectors` vectors of output features: its sums, the
    weights' vectors and a broadcast input element within the vector registers (AVX-512's
    32, AVX2's 16): 12, 12, 9, 6 for 1-4 vectors on AVX-512, 12 and 6 for 1-2 on AVX2."""
    from . import gemm
    registers = 32 if gemm.host_lanes() == 16 else 16
    return max(1, min(_MAX_TILE_POSITIONS, (registers - 2 - vectors) // vectors))


def _blocked_lanes(eqn) -> int | None:
    """The vector lanes of the blocked kernel (`_conv_blocked`) for a convolution with its
    features innermost in the input and the output and a contraction of at most
    _BLOCKED_MAX_CONTRACT, else None."""
    return _kernel_lanes(eqn, lambda lhs_spec, rhs_spec, out_spec:
                         lhs_spec[1] == 3 and out_spec[1] == 3
                         and contraction(eqn) <= _BLOCKED_MAX_CONTRACT)


def _conv(em: Emitter, eqn, ins, dests):
    lhs, rhs = [em.materialize(x) for x in ins]
    out_aval = eqn.outvars[0].aval
    out = dests[0] or em.alloc(out_aval)
    if out_aval.size == 0:
        return [out]
    g = _Geometry(eqn, lhs.aval, rhs.aval, out_aval)
    lanes = _positions_lanes(eqn)
    if lanes is not None:
        _conv_positions(em, g, lhs, rhs, out, lanes)
        return [out]
    lanes = _blocked_lanes(eqn)
    if lanes is not None:
        _conv_blocked(em, g, lhs, rhs, out, lanes)
        return [out]
    lanes = _weight_lanes(eqn)
    if lanes is not None:
        _conv_weight_blocked(em, g, lhs, rhs, out, lanes)
        return [out]
    if direct(eqn):
        _conv_direct(em, g, lhs, rhs, out)
        return [out]
    packed = _features_last(em, g, lhs) if g.l_feat != 1 else None
    _conv_gemm(em, g, packed or lhs, rhs, out)
    if packed is not None:
        em.release(packed)
    return [out]


def _features_last(em: Emitter, g: _Geometry, lhs: Buf) -> Buf:
    """lhs copied to (batch, spatial..., features) order, and g's lhs strides made that
    copy's: im2col then copies runs of contiguous features. Where the features are not the
    innermost dimension (a weight gradient's convolution reads the batch as its features, at
    the batch's stride), im2col read each element from a line of its own: the 3x3 weight
    gradient of an 8x32x32x32 -> 16 convolution 3.0-4.1 ms before, 1.5-1.6 after (JAX 0.12
    1.5-1.7)."""
    b = em.b
    shape = (g.nout * g.bgc, *g.in_space, g.cin * g.fgc)
    packed = em.alloc(ShapedArray(shape, lhs.aval.dtype))
    old = (g.l_batch, *g.l_space, g.l_feat)

    def copy(idx: list[ir.Value]) -> None:
        src = _c(0)
        for i, stride in zip(idx, old):
            src = b.add(src, b.mul(i, _c(stride)))
        em.store(packed, em.linear(shape, idx), em.load(lhs, src))
    em.loop_nest(shape, copy)
    strides = _strides(shape)
    g.l_batch, g.l_space, g.l_feat = strides[0], list(strides[1:-1]), strides[-1]
    return packed


STRUCTURAL[conv_general_dilated_p] = _conv
