"""Index maps: shape ops (broadcast, reshape, slice, gather ...) fused into their consumer's
loop nest as index arithmetic that never reads out of bounds. codegen's Emitter reads them
through `rules.INDEX_MAPS`, which this module fills.

A rule is a generator: it yields `(operand, multi-index)` for each operand element it needs and
is sent that element back (codegen's Emitter drives the rules from an explicit stack, so a long
chain of fused ops never deepens Python's call stack); it returns the element it computes."""
from __future__ import annotations

from typing import Sequence

import llvmlite.ir as ir
import numpy as np

from ...lax import indexing as lx_indexing
from ...lax import shape as lx_shape
from ...lax import sharding as lx_sharding
from .codegen import Buf, Emitter, _strides
from .rules import INDEX_MAPS
from .scalar_ops import convert
from .types import I1, I64, const


def _zero() -> ir.Constant:
    return ir.Constant(I64, 0)


def _broadcast_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    bdims = eqn.params["broadcast_dimensions"]
    sub = [idx[bd] if x.aval.shape[k] != 1 else _zero() for k, bd in enumerate(bdims)]
    return (yield x, sub)


def _iota_at(em: Emitter, ins, eqn, idx):
    dt = eqn.params["dtype"]
    return convert(em.b, idx[eqn.params["dimension"]], np.dtype(np.int64), dt)


def _transpose_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    perm = eqn.params["permutation"]
    sub: list = [None] * len(perm)
    for k, p in enumerate(perm):
        sub[p] = idx[k]
    return (yield x, sub)


def _delinearize(em: Emitter, linear: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
    out = []
    for d, s in zip(shape, _strides(shape)):
        if d == 1:
            out.append(_zero())
            continue
        q = linear if s == 1 else em.b.udiv(linear, ir.Constant(I64, s))
        out.append(em.b.urem(q, ir.Constant(I64, d)))
    return out


def _reshape_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    out_shape = eqn.outvars[0].aval.shape
    dims = eqn.params.get("dimensions")
    if dims is not None:  # reshape of transpose(x, dims): go through the transposed index
        t_idx = _delinearize(em, em.linear(out_shape, idx), [x.aval.shape[d] for d in dims])
        sub: list = [None] * x.aval.ndim
        for k, d in enumerate(dims):
            sub[d] = t_idx[k]
        return (yield x, sub)
    in_shape = x.aval.shape
    if x.aval.ndim == 0:
        return (yield x, [])
    # dropping/adding unit dims keeps the index; anything else goes through the linear index
    squeezed_out = [i for i, d in zip(idx, out_shape) if d != 1]
    if [d for d in in_shape if d != 1] == [d for d in out_shape if d != 1]:
        it = iter(squeezed_out)
        return (yield x, [next(it) if d != 1 else _zero() for d in in_shape])
    if isinstance(x, Buf):
        return em.load(x, em.linear(out_shape, idx))
    return (yield x, _delinearize(em, em.linear(out_shape, idx), in_shape))


def _squeeze_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    dims = set(eqn.params["dimensions"])
    it = iter(idx)
    return (yield x, [_zero() if k in dims else next(it) for k in range(x.aval.ndim)])


def _rev_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    dims = set(eqn.params["dimensions"])
    sub = [em.b.sub(ir.Constant(I64, x.aval.shape[k] - 1), i) if k in dims else i
           for k, i in enumerate(idx)]
    return (yield x, sub)


def _slice_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    p = eqn.params
    strides = p["strides"] or (1,) * len(idx)
    sub = []
    for i, lo, st in zip(idx, p["start_indices"], strides):
        j = i if st == 1 else em.b.mul(i, ir.Constant(I64, st))
        sub.append(j if lo == 0 else em.b.add(j, ir.Constant(I64, lo)))
    return (yield x, sub)


def _clamp_index(em: Emitter, i: ir.Value, hi: int) -> ir.Value:
    b = em.b
    lo_c, hi_c = _zero(), ir.Constant(I64, hi)
    i = b.select(b.icmp_signed("<", i, lo_c), lo_c, i)
    return b.select(b.icmp_signed(">", i, hi_c), hi_c, i)


def _concatenate_at(em: Emitter, ins, eqn, idx):
    dim = eqn.params["dimension"]
    b = em.b
    offset = 0
    out = None
    for x in ins:
        n = x.aval.shape[dim]
        if n == 0:
            continue
        local = b.sub(idx[dim], ir.Constant(I64, offset)) if offset else idx[dim]
        sub = list(idx)
        sub[dim] = _clamp_index(em, local, n - 1)
        v = yield x, sub
        if out is None:
            out = v
        else:
            out = b.select(b.icmp_signed("<", idx[dim], ir.Constant(I64, offset)), out, v)
        offset += n
    if out is None:  # every operand is empty, so is the result: no element is ever read
        out = const(eqn.outvars[0].aval.dtype, 0)
    return out


def _pad_at(em: Emitter, ins, eqn, idx):
    x, pad_value = ins
    b = em.b
    inside = ir.Constant(I1, 1)
    sub = []
    for i, n, (lo, _, interior) in zip(idx, x.aval.shape, eqn.params["padding_config"]):
        t = b.sub(i, ir.Constant(I64, lo)) if lo else i
        step = interior + 1
        q = t if step == 1 else b.sdiv(t, ir.Constant(I64, step))
        ok = b.and_(b.icmp_signed(">=", t, _zero()), b.icmp_signed("<", q, ir.Constant(I64, n)))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(t, ir.Constant(I64, step)), _zero()))
        inside = b.and_(inside, ok)
        sub.append(_clamp_index(em, q, max(n - 1, 0)))
    pv = yield pad_value, []
    if x.aval.size == 0:
        return pv
    return b.select(inside, (yield x, sub), pv)


def _dynamic_slice_at(em: Emitter, ins, eqn, idx):
    x, *starts = ins
    sizes = eqn.params["slice_sizes"]
    sub = []
    for i, start, n, size in zip(idx, starts, x.aval.shape, sizes):
        st = convert(em.b, (yield start, []), start.aval.dtype, np.dtype(np.int64))
        sub.append(em.b.add(i, _clamp_index(em, st, n - size)))  # XLA clamps the window
    return (yield x, sub)


def _window_starts(em: Emitter, shape, indices, bidx: list, index_map, operand_bdims,
                   indices_bdims, sizes):
    """Clamped window starts per operand dim for one index vector, and whether the unclamped
    window lay wholly in bounds (the same rule as the reference `_window_indices`). A generator
    reading `indices` as the rules do."""
    b = em.b
    starts: dict[int, ir.Value] = {}
    in_bounds = ir.Constant(I1, 1)
    for k, d in enumerate(index_map):
        raw = yield indices, bidx + [ir.Constant(I64, k)]
        st = convert(b, raw, indices.aval.dtype, np.dtype(np.int64))
        upper = shape[d] - sizes[d]
        ok = b.and_(b.icmp_signed(">=", st, _zero()),
                    b.icmp_signed("<=", st, ir.Constant(I64, upper)))
        in_bounds = b.and_(in_bounds, ok)
        starts[d] = _clamp_index(em, st, max(upper, 0))
    for od, bd in zip(operand_bdims, indices_bdims):
        starts[od] = bidx[bd]
    return starts, in_bounds


def _gather_at(em: Emitter, ins, eqn, idx):
    from ...lax.indexing import GatherScatterMode
    x, indices = ins
    p = eqn.params
    dn = p["dimension_numbers"]
    sizes = p["slice_sizes"]
    window_dims = [d for d in range(x.aval.ndim)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    bidx = [i for k, i in enumerate(idx) if k not in dn.offset_dims]
    widx = [i for k, i in enumerate(idx) if k in dn.offset_dims]
    starts, in_bounds = yield from _window_starts(em, x.aval.shape, indices, bidx,
                                                  dn.start_index_map, dn.operand_batching_dims,
                                                  dn.start_indices_batching_dims, sizes)
    coord = []
    for d in range(x.aval.ndim):
        c = starts.get(d, _zero())
        if d in window_dims:
            c = em.b.add(c, widx[window_dims.index(d)])
        coord.append(c)
    v = yield x, coord
    if p["mode"] == GatherScatterMode.FILL_OR_DROP:
        fill = np.asarray(p["fill_value"]) if p["fill_value"] is not None else None
        with np.errstate(all="ignore"):
            fill_c = const(x.aval.dtype, fill.astype(x.aval.dtype))
        v = em.b.select(in_bounds, v, fill_c)
    return v


INDEX_MAPS.update({
    lx_indexing.gather_p: _gather_at, lx_indexing.dynamic_slice_p: _dynamic_slice_at,
    lx_shape.broadcast_in_dim_p: _broadcast_at, lx_shape.iota_p: _iota_at,
    lx_shape.transpose_p: _transpose_at, lx_shape.reshape_p: _reshape_at,
    lx_shape.squeeze_p: _squeeze_at, lx_shape.rev_p: _rev_at, lx_shape.slice_p: _slice_at,
    lx_shape.concatenate_p: _concatenate_at, lx_shape.pad_p: _pad_at,
    # a layout constraint left in a program that runs unpartitioned: the identity
    lx_sharding.sharding_constraint_p: lambda em, ins, eqn, idx: (yield ins[0], list(idx)),
    lx_sharding.cotangent_layout_p: lambda em, ins, eqn, idx: (yield ins[0], list(idx)),
})
