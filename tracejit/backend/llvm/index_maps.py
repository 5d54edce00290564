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
from .codegen import Buf, Emitter
from .rules import INDEX_MAPS, LOOP_DIMS
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
    return em.delinearized(linear, shape, em.unravel(linear, shape))


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
    if _splits_last(in_shape, out_shape):  # (..., n * c) -> (..., n, c)
        return (yield x, [*idx[:-1], *em.split_index(idx[-1], in_shape[-1], out_shape[-1])])
    # dimensions the two shapes share at either end keep their indices (row-major: a run of
    # trailing ones is laid out alike, and so are the leading ones above a run of equal size);
    # the ones between go through their own linear index. jnp.repeat(x, 2, axis=0) of a
    # (1000, 1000) reads x[i // 2, j] so, where unravelling i * 1000 + j over (1000, 2, 1000)
    # divided every element's index by 1000 and its loads were gathers: 1.63 -> 0.12 ms
    lead = _shared(in_shape, out_shape)
    trail = _shared(in_shape[lead:][::-1], out_shape[lead:][::-1])
    mid_in, mid_out = in_shape[lead:len(in_shape) - trail], out_shape[lead:len(out_shape) - trail]
    mid_linear = em.linear(mid_out, idx[lead:len(idx) - trail])
    mid = em.unravel(_zero() if mid_linear is None else mid_linear, mid_in)
    sub = [*idx[:lead], *mid, *idx[len(idx) - trail:]]
    return (yield x, em.delinearized(em.linear(out_shape, idx), in_shape, sub))


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading dimensions the shapes a and b have alike."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _splits_last(in_shape, out_shape) -> bool:
    """Whether a reshape to `out_shape` from `in_shape` only splits the last dimension in two:
    (..., n * c) from (..., n, c)."""
    return len(in_shape) == len(out_shape) + 1 and in_shape[:-2] == out_shape[:-1] and \
        in_shape[-2] * in_shape[-1] == out_shape[-1] and in_shape[-1] > 1


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
    known = em.index_range(idx[dim])  # (in a piece of a cut loop: codegen.loop_pieces)
    for x in ins:
        n = x.aval.shape[dim]
        if known is not None and offset <= known[0] and known[1] <= offset + n:
            sub = list(idx)  # the one operand this index reads, unclamped: it is in bounds
            sub[dim] = ir.Constant(I64, known[0] - offset) if known[1] - known[0] == 1 \
                else (b.sub(idx[dim], ir.Constant(I64, offset)) if offset else idx[dim])
            return (yield x, sub)
        offset += n
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
        known = em.index_range(i) if interior == 0 else None  # (a piece: codegen.loop_pieces)
        if known is not None and (known[1] <= lo or known[0] >= lo + n):
            return (yield pad_value, [])  # every index of the piece is in the padding
        if known is not None and lo <= known[0] and known[1] <= lo + n:
            sub.append(ir.Constant(I64, known[0] - lo) if known[1] - known[0] == 1
                       else b.sub(i, ir.Constant(I64, lo)) if lo else i)
            continue  # (inside, in bounds)
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


# A gather from a stored operand of at most this many elements (a lookup table: the binomial
# sampler's Stirling corrections) reads every entry and selects one by compares: vectorised
# with the rest of its loop, where an indexed load keeps the loop scalar (x86's vector gathers
# are slow on AMD, so LLVM's cost model leaves them out). Four lookups in a 10-entry table
# with their arithmetic over 2^16 float32: 662 -> ~160 us.
SMALL_TABLE = 16


def _table_lookup(em: Emitter, x: Buf, coord: list[ir.Value]) -> ir.Value:
    """x at `coord` (in bounds: clamped by _window_starts) as a chain of selects over all of
    x's elements, each a load at a constant place (hoisted out of the loop by LLVM)."""
    b = em.b
    linear = em.linear(x.aval.shape, coord)
    here = b.trunc(linear, ir.IntType(32))
    v = em.load(x, ir.Constant(I64, 0))
    for k in range(1, x.aval.size):
        v = b.select(b.icmp_unsigned("==", here, ir.Constant(ir.IntType(32), k)),
                     em.load(x, ir.Constant(I64, k)), v)
    return v


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
    if isinstance(x, Buf) and 1 < x.aval.size <= SMALL_TABLE:
        v = _table_lookup(em, x, coord)
    else:
        v = yield x, coord
    if p["mode"] == GatherScatterMode.FILL_OR_DROP:
        fill = np.asarray(p["fill_value"]) if p["fill_value"] is not None else None
        with np.errstate(all="ignore"):
            fill_c = const(x.aval.dtype, fill.astype(x.aval.dtype))
        v = em.b.select(in_bounds, v, fill_c)
    return v


def _broadcast_dims(eqn, dims):
    (v,) = eqn.invars
    out_shape = eqn.outvars[0].aval.shape
    return [tuple(dims[bd] if v.aval.shape[k] == out_shape[bd] else None
                  for k, bd in enumerate(eqn.params["broadcast_dimensions"]))], None


def _transpose_dims(eqn, dims):
    sub: list = [None] * len(dims)
    for k, p in enumerate(eqn.params["permutation"]):
        sub[p] = dims[k]
    return [tuple(sub)], None


def _reshape_dims(eqn, dims):  # (as _reshape_at: unit dimensions, or the last one split)
    (v,) = eqn.invars
    in_shape, out_shape = v.aval.shape, eqn.outvars[0].aval.shape
    if eqn.params.get("dimensions") is not None:
        return [None], None
    if _splits_last(in_shape, out_shape) and in_shape[-2] > 1:
        last = dims[-1]
        if last is None or len(last) != 1:
            return [None], None
        inner = (last[0], in_shape[-1])  # (the loop over dimension last[0] split as (n, c))
        # (n counts in units of c: no cut of its own)
        return [(*dims[:-1], None, inner)], (inner, [])
    if [d for d in in_shape if d != 1] != [d for d in out_shape if d != 1]:
        return [None], None
    it = iter(k for k, n in zip(dims, out_shape) if n != 1)
    return [tuple(next(it) if n != 1 else None for n in in_shape)], None


def _squeeze_dims(eqn, dims):
    gone = set(eqn.params["dimensions"])
    it = iter(dims)
    return [tuple(None if k in gone else next(it) for k in range(eqn.invars[0].aval.ndim))], None


def _concatenate_dims(eqn, dims):
    dim = eqn.params["dimension"]
    ends = np.cumsum([v.aval.shape[dim] for v in eqn.invars]).tolist()
    inner = tuple(None if k == dim else d for k, d in enumerate(dims))
    return [inner] * len(eqn.invars), None if dims[dim] is None else (dims[dim], ends)


def _pad_dims(eqn, dims):
    """The innermost dimension padded at its ends only is cut where the operand begins and
    ends; the operand's index follows the loop's where nothing is padded before it."""
    x = eqn.invars[0]
    operand, cuts = [], None
    for d, n, (lo, hi, interior) in zip(dims, x.aval.shape, eqn.params["padding_config"]):
        whole = interior == 0 and lo >= 0 and hi >= 0
        operand.append(d if whole and lo == 0 else None)
        if whole and d is not None and (lo or hi):
            cuts = (d, [lo, lo + n])  # (the innermost such dimension's: where LLVM vectorises)
    return [tuple(operand), ()], cuts


LOOP_DIMS.update({
    lx_shape.broadcast_in_dim_p: _broadcast_dims, lx_shape.transpose_p: _transpose_dims,
    lx_shape.reshape_p: _reshape_dims, lx_shape.squeeze_p: _squeeze_dims,
    lx_shape.concatenate_p: _concatenate_dims, lx_shape.pad_p: _pad_dims,
})


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
