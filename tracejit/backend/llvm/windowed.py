"""Structural rules for windowed reductions (reduce_window_sum/max/min, the generic reduce_window
with its computation inlined per tap) and pooling gradients (select_and_gather_add,
select_and_scatter_add). codegen's Emitter dispatches to them through `rules.STRUCTURAL`.

A window tap on padding or a base-dilation hole is a bounds test, never a read."""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ...core.avals import ShapedArray
from ...lax import elementwise as ew
from ...lax import reductions as rd
from ...lax import windowed as wd
from .codegen import Buf, Emitter, Scalar, _as_value, _strides
from .reductions import _combine
from .rules import STRUCTURAL
from .scalar_ops import convert, emit_scalar
from .types import I1, I64, const, reg_type


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _taps(em: Emitter, params: dict, in_shape, pos: list[ir.Value], body, skipped=None) -> None:
    """Loops over the window at output position `pos`: body(offset) for each tap on a real
    operand element (row-major offset), skipped() for each tap on padding or a hole."""
    b = em.b
    strides = _strides(in_shape)
    window = params["window_dimensions"]

    def rec(d: int, off: ir.Value) -> None:
        if d == len(window):
            body(off)
            return

        def tap(k: ir.Value) -> None:
            at = b.add(b.mul(pos[d], _c(params["window_strides"][d])),
                       b.sub(b.mul(k, _c(params["window_dilation"][d])),
                             _c(params["padding"][d][0])))
            bd = params["base_dilation"][d]
            extent = (in_shape[d] - 1) * bd + 1 if in_shape[d] else 0
            ok = b.icmp_unsigned("<", at, _c(extent))  # negative: huge, out of bounds
            if bd != 1:
                ok = b.and_(ok, b.icmp_unsigned("==", b.urem(at, _c(bd)), _c(0)))
                at = b.udiv(at, _c(bd))
            nxt = b.add(off, b.mul(at, _c(strides[d])))
            if skipped is None:
                with b.if_then(ok):
                    rec(d + 1, nxt)
                return
            with b.if_else(ok) as (then, otherwise):
                with then:
                    rec(d + 1, nxt)
                with otherwise:
                    # every tap below this one is off the operand too
                    em.loop(int(np.prod(window[d + 1:], dtype=np.int64)),
                            lambda _: skipped(), name=f"pad{d}")
        em.loop(window[d], tap, name=f"w{d}")
    rec(0, _c(0))


# Windows of at most this many taps whose taps all fall on the operand (no padding, no holes)
# are unrolled without bounds tests, so the loop over the last axis (channels) vectorises.
_UNROLL_TAPS = 16


def _static_taps(params: dict, in_shape, out_shape) -> list[tuple] | None:
    """Every window tap as a tuple of per-axis offsets, when each tap of each output position
    falls on a real operand element; else None (the taps need bounds tests)."""
    window = params["window_dimensions"]
    if int(np.prod(window, dtype=np.int64)) > _UNROLL_TAPS or not all(out_shape):
        return None
    for d in range(len(window)):
        if params["padding"][d] != (0, 0) or params["base_dilation"][d] != 1:
            return None
        last = (out_shape[d] - 1) * params["window_strides"][d] + \
            (window[d] - 1) * params["window_dilation"][d]
        if last >= in_shape[d]:
            return None
    return list(np.ndindex(*window))


def _interior(params: dict, in_shape, out_shape) -> list[tuple[int, int]] | None:
    """Per axis, the [lo, hi) of output positions whose window's taps along it all fall on the
    operand (past the low padding, before the high); None where the base is dilated (holes)."""
    if any(bd != 1 for bd in params["base_dilation"]):
        return None
    ranges = []
    for d, (n, size) in enumerate(zip(out_shape, in_shape)):
        s, w, wd = (params[k][d] for k in ("window_strides", "window_dimensions",
                                           "window_dilation"))
        low = params["padding"][d][0]
        lo = min(max(-(-low // s), 0), n)
        hi = min(max((size - 1 + low - (w - 1) * wd) // s + 1, lo), n)
        ranges.append((lo, hi))
    return ranges


def _tap_offsets(em: Emitter, params: dict, in_shape, pos: list[ir.Value], taps) -> list:
    """The row-major operand offset of each static tap at output position `pos` (each of
    which falls on the operand, past its low padding)."""
    b = em.b
    strides = _strides(in_shape)
    corner = _c(0)
    for d, i in enumerate(pos):
        corner = b.add(corner, b.mul(i, _c(params["window_strides"][d] * strides[d])))
    return [b.add(corner, _c(sum((k * params["window_dilation"][d] - params["padding"][d][0])
                                 * strides[d] for d, k in enumerate(tap)))) for tap in taps]


def _out(em: Emitter, eqn, dests, k: int = 0) -> Buf:
    return dests[k] or em.alloc(eqn.outvars[k].aval)


def _result(em: Emitter, eqn, dests, out: Buf, k: int = 0):
    return out if eqn.outvars[k].aval.ndim or dests[k] is not None else _as_value(em, out)


_MONOID = {wd.reduce_window_sum_p: (rd.reduce_sum_p, "sum"),
           wd.reduce_window_max_p: (rd.reduce_max_p, "max"),
           wd.reduce_window_min_p: (rd.reduce_min_p, "min")}


def _reduce_window_monoid(em: Emitter, eqn, ins, dests):
    reducer, kind = _MONOID[eqn.primitive]
    x = em.materialize(ins[0])
    out = _out(em, eqn, dests)
    dtype = out.aval.dtype
    acc_dtype = dtype  # XLA folds a window in the operand's dtype (half floats too)
    acc = em._entry_alloca(reg_type(acc_dtype))
    b = em.b
    init = const(acc_dtype, wd._identity(kind, dtype))
    # a small window's taps unrolled without bounds tests where they all fall on the operand:
    # the output cut, along each padded axis, into the positions before, inside and after that
    # interior (loop pieces), so the interior's loop over the last axis (channels) vectorises
    window = eqn.params["window_dimensions"]
    inside = _interior(eqn.params, x.aval.shape, out.aval.shape) \
        if int(np.prod(window, dtype=np.int64)) <= _UNROLL_TAPS else None
    taps = list(np.ndindex(*window)) if inside is not None else None
    pieces = {(d,): [r for r in ((0, lo), (lo, hi), (hi, n)) if r[1] > r[0]]
              for d, ((lo, hi), n) in enumerate(zip(inside or (), out.aval.shape))
              if (lo, hi) != (0, n)}

    def interior(idx) -> bool:
        for i, (lo, hi), n in zip(idx, inside, out.aval.shape):
            at = em.index_range(i) if (lo, hi) != (0, n) else (lo, hi)
            if at is None or not lo <= at[0] < at[1] <= hi:
                return False
        return True

    def element(idx):
        b.store(init, acc)

        def body(off):
            v = convert(b, em.load(x, off), x.aval.dtype, acc_dtype)
            if kind == "sum":  # in order, each add rounded (no reassociation), as XLA
                total = emit_scalar(b, ew.add_p, [acc_dtype] * 2, acc_dtype, [b.load(acc), v],
                                    {})
            else:
                total = _combine(em, reducer, acc_dtype, b.load(acc), v)
            b.store(total, acc)
        if taps is None or not interior(idx):
            _taps(em, eqn.params, x.aval.shape, idx, body)
        else:
            for off in _tap_offsets(em, eqn.params, x.aval.shape, idx, taps):
                body(off)
        em.store(out, em.linear(out.aval.shape, idx) if out.aval.ndim else None,
                 convert(b, b.load(acc), acc_dtype, dtype))
    em.loop_nest(out.aval.shape, element, pieces=pieces)
    return [_result(em, eqn, dests, out)]


def _selects(em: Emitter, select_prim, dtype, cur: ir.Value, e: ir.Value) -> ir.Value:
    """select(cur, e): keep the current choice (ge for max pooling, le for min)."""
    return emit_scalar(em.b, select_prim, [dtype, dtype], np.dtype(bool), [cur, e], {})


def _select_and_gather_add(em: Emitter, eqn, ins, dests):
    """Per window: the tangent at the operand's selected tap; padding taps hold the select's
    identity (-inf for ge) with tangent 0, as JAX pads them."""
    t, x = (em.materialize(v) for v in ins)
    out = _out(em, eqn, dests)
    p = eqn.params
    b = em.b
    sel = p["select_prim"]
    xd, td = x.aval.dtype, t.aval.dtype
    cur = em._entry_alloca(reg_type(xd))
    tan = em._entry_alloca(reg_type(td))
    have = em._entry_alloca(I1)
    pad_x = const(xd, wd._select_pad(sel, xd))
    zero_t = const(td, 0)

    def offer(e: ir.Value, te: ir.Value) -> None:
        take = b.or_(b.not_(b.load(have)), b.not_(_selects(em, sel, xd, b.load(cur), e)))
        with b.if_then(take):
            b.store(e, cur)
            b.store(te, tan)
            b.store(ir.Constant(I1, 1), have)

    def element(idx):
        b.store(ir.Constant(I1, 0), have)
        b.store(zero_t, tan)
        _taps(em, p, x.aval.shape, idx, lambda off: offer(em.load(x, off), em.load(t, off)),
              lambda: offer(pad_x, zero_t))
        em.store(out, em.linear(out.aval.shape, idx) if out.aval.ndim else None, b.load(tan))
    em.loop_nest(out.aval.shape, element)
    return [_result(em, eqn, dests, out)]


def _select_and_scatter_add(em: Emitter, eqn, ins, dests):
    """Zero the result, then add each source element at its window's selected operand element
    (taps on padding are never selected)."""
    src, x = (em.materialize(v) for v in ins)
    out = _out(em, eqn, dests)
    p = dict(eqn.params)
    ones = (1,) * x.aval.ndim
    p.update(base_dilation=ones, window_dilation=ones)
    b = em.b
    sel = p["select_prim"]
    xd, od = x.aval.dtype, out.aval.dtype
    zero = const(od, 0)
    if _disjoint_windows(p, x.aval.shape, src.aval.shape):
        return [_select_and_scatter_disjoint(em, eqn, p, src, x, out, dests)]
    em.loop_nest(out.aval.shape, lambda idx: em.store(
        out, em.linear(out.aval.shape, idx) if out.aval.ndim else None, zero))
    cur = em._entry_alloca(reg_type(xd))
    where = em._entry_alloca(I64)
    have = em._entry_alloca(I1)

    def element(idx):
        b.store(ir.Constant(I1, 0), have)

        def body(off):
            e = em.load(x, off)
            take = b.or_(b.not_(b.load(have)), b.not_(_selects(em, sel, xd, b.load(cur), e)))
            with b.if_then(take):
                b.store(e, cur)
                b.store(off, where)
                b.store(ir.Constant(I1, 1), have)
        _taps(em, p, x.aval.shape, idx, body)
        with b.if_then(b.load(have)):
            at = b.load(where)
            s = em.load(src, em.linear(src.aval.shape, idx) if src.aval.ndim else None)
            total = emit_scalar(b, ew.add_p, [od, od], od, [em.load(out, at), s], {})
            em.store(out, at, total)
    em.loop_nest(src.aval.shape, element)
    return [_result(em, eqn, dests, out)]


def _disjoint_windows(p: dict, in_shape, src_shape) -> bool:
    """The windows (pooling's usual stride = window) never share an operand element, and all
    their taps fall on it: each operand element gets at most one source element."""
    return src_shape != () and _static_taps(p, in_shape, src_shape) is not None and all(
        s >= w for s, w in zip(p["window_strides"], p["window_dimensions"]))


def _select_and_scatter_disjoint(em: Emitter, eqn, p: dict, src: Buf, x: Buf, out: Buf, dests):
    """select_and_scatter_add over disjoint windows: per window, the selected tap found with
    selects (no branches, so the loop over channels vectorises), then each tap stored once,
    the source element where selected and zero elsewhere. Operand elements no window covers
    are zeroed first."""
    b = em.b
    sel, xd, od = p["select_prim"], x.aval.dtype, out.aval.dtype
    zero = const(od, 0)
    covered = all(n * s == d for n, s, d in zip(src.aval.shape, p["window_strides"],
                                                 x.aval.shape))
    if not covered:
        em.loop_nest(out.aval.shape, lambda idx: em.store(out, em.linear(out.aval.shape, idx),
                                                          zero))
    taps = _static_taps(p, x.aval.shape, src.aval.shape)

    def element(idx):
        offs = _tap_offsets(em, p, x.aval.shape, idx, taps)
        cur, best = em.load(x, offs[0]), ir.Constant(I64, 0)
        for k, off in enumerate(offs[1:], 1):  # a later tap wins where select(cur, e) fails
            e = em.load(x, off)
            take = b.not_(_selects(em, sel, xd, cur, e))
            cur, best = b.select(take, e, cur), b.select(take, _c(k), best)
        s = em.load(src, em.linear(src.aval.shape, idx))
        for k, off in enumerate(offs):
            em.store(out, off, b.select(b.icmp_unsigned("==", best, _c(k)), s, zero))
    em.loop_nest(src.aval.shape, element)
    return _result(em, eqn, dests, out)


def _reduce_window_generic(em: Emitter, eqn, ins, dests):
    """Each output element folds its taps through the computation's jaxpr, emitted inline on
    scalars; padding and holes feed the init value (XLA's semantics)."""
    p = eqn.params
    nc = p["num_consts"]
    consts, rest = ins[:nc], ins[nc:]
    n = len(rest) // 2
    xs = [em.materialize(v) for v in rest[:n]]
    inits = [em.scalar_of(v) for v in rest[n:]]
    outs = [_out(em, eqn, dests, k) for k in range(n)]
    b = em.b
    accs = [em._entry_alloca(reg_type(x.aval.dtype)) for x in xs]
    scalar_avals = [ShapedArray((), x.aval.dtype) for x in xs]

    def fold(vals: list[ir.Value]) -> None:
        args = [Scalar(b.load(a), av) for a, av in zip(accs, scalar_avals)] + \
            [Scalar(v, av) for v, av in zip(vals, scalar_avals)]
        res = em.emit_jaxpr(p["jaxpr"], [], list(consts) + args)
        for a, r in zip(accs, res):
            b.store(em.scalar_of(r), a)

    def element(idx):
        for a, i in zip(accs, inits):
            b.store(i, a)
        _taps(em, p, xs[0].aval.shape, idx,
              lambda off: fold([em.load(x, off) for x in xs]), lambda: fold(inits))
        for o, a in zip(outs, accs):
            em.store(o, em.linear(o.aval.shape, idx) if o.aval.ndim else None, b.load(a))
    em.loop_nest(outs[0].aval.shape, element)
    return [_result(em, eqn, dests, o, k) for k, o in enumerate(outs)]


STRUCTURAL.update({prim: _reduce_window_monoid for prim in _MONOID})
STRUCTURAL[wd.select_and_gather_add_p] = _select_and_gather_add
STRUCTURAL[wd.select_and_scatter_add_p] = _select_and_scatter_add
STRUCTURAL[wd.reduce_window_p] = _reduce_window_generic
