"""Row fusion, the jaxpr pass just before fusion (compiler.fusion): a row region (softmax,
log_softmax, standardize) becomes one `row_map` equation whose body computes a single row, so
that code generation runs max, then exp/sum, then normalise on each row while it is in cache.

A region fixes row dims R and column dims C. Its values are full ([R..., C...]) or per-row
([R..., 1...]); its equations are elementwise ops, reductions of full values over exactly the C
dims, broadcasts of per-row values along C, and reshapes between per-row shapes. Plain fusion
(compiler.fusion) already handles a region whose reductions feed nothing back, so a region is
formed only when some full value depends on a reduction in it: there a value is used twice (the
exp of softmax) and would otherwise go to memory at full size."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..core.avals import ShapedArray
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..core.primitive import Primitive
from ..lax.elementwise import div_p, mul_p
from ..lax.shape import broadcast_in_dim_p, iota_p, reshape_p, squeeze_p
from .fusion import def_use, fusible, is_elementwise

_FULL, _PER_ROW, _SCALAR = "full", "per-row", "scalar"


# --- the row_map primitive -------------------------------------------------------------------

def _row_map_abstract(*avals: ShapedArray, body: ClosedJaxpr, rows: tuple[int, ...],
                      out_shapes: tuple[tuple[int, ...], ...], in_axes, out_axes,
                      tail) -> list[ShapedArray]:
    return [ShapedArray(s, v.aval.dtype, v.aval.weak_type)
            for s, v in zip(out_shapes, body.jaxpr.outvars)]


def _row_map_impl(*args, body: ClosedJaxpr, rows: tuple[int, ...],
                  out_shapes: tuple[tuple[int, ...], ...], in_axes: tuple, out_axes: tuple,
                  tail: ClosedJaxpr | None) -> list[np.ndarray]:
    """Row by row. An operand (or result) with axis a holds one body value per row along its
    axis a: row i is its i-th block of m elements, m the body value's size from axis a on, at
    every index of the axes before a (a = 0: consecutive blocks; a = 1: column blocks of a
    (steps, ...) array). Axis None: the whole operand, the same for every row. The last row
    runs `tail` where given: a shorter row, at the same offset."""
    n = math.prod(rows)
    outs = [np.empty(s, v.aval.dtype) for s, v in zip(out_shapes, body.jaxpr.outvars)]

    def blocks(x, v, axis):  # x with the axes before `axis` kept and the rest flattened
        return np.reshape(x, v.aval.shape[:axis] + (-1,))
    full_in, full_out = body.jaxpr.invars, body.jaxpr.outvars
    split = [None if a is None else blocks(x, v, a) for x, v, a in zip(args, full_in, in_axes)]
    dest = [blocks(o, v, a) for o, v, a in zip(outs, full_out, out_axes)]
    for i in range(n):
        closed = tail if tail is not None and i == n - 1 else body
        jaxpr = closed.jaxpr
        row = [x if a is None else
               part[..., i * _block(f, a):i * _block(f, a) + _block(v, a)].reshape(v.aval.shape)
               for x, part, a, f, v in zip(args, split, in_axes, full_in, jaxpr.invars)]
        for d, value, a, f, v in zip(dest, eval_jaxpr(jaxpr, closed.consts, *row), out_axes,
                                      full_out, jaxpr.outvars):
            start = i * _block(f, a)
            d[..., start:start + _block(v, a)] = np.reshape(value, d.shape[:-1] + (-1,))
    return outs


def _block(v, axis: int) -> int:
    """Elements of a row's block: the size of body value v from its axis `axis` on."""
    return math.prod(v.aval.shape[axis:])


row_map_p = Primitive("row_map", multiple_results=True)
row_map_p.def_abstract_eval(_row_map_abstract)
row_map_p.def_impl(_row_map_impl)


# --- the pass --------------------------------------------------------------------------------

def fuse_rows(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each beneficial row region replaced by one `row_map` (bodies included)."""
    eqns = [_in_bodies(eqn) for eqn in jaxpr.eqns]
    tried: set[Eqn] = set()  # seeds already grown
    while True:
        found = _next_region(eqns, tried)
        if found is None:
            break
        region, moved, rows, cols = found
        eqns = _rewrite(eqns, jaxpr.outvars, region, moved, rows, cols)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def _in_bodies(eqn: Eqn) -> Eqn:
    """Row fusion inside control-flow bodies (their signatures are unchanged)."""
    def apply(value):
        if isinstance(value, ClosedJaxpr):
            return ClosedJaxpr(fuse_rows(value.jaxpr), value.consts)
        if isinstance(value, tuple) and value and all(isinstance(x, ClosedJaxpr) for x in value):
            return tuple(apply(x) for x in value)
        return value
    if not any(isinstance(x, ClosedJaxpr) for value in eqn.params.values()
               for x in (value if isinstance(value, tuple) else (value,))):
        return eqn
    return eqn.replace(params={k: apply(v) for k, v in eqn.params.items()})


def _kind(shape: tuple[int, ...], rows: tuple[int, ...], cols: tuple[int, ...]) -> str | None:
    if shape == rows + cols:
        return _FULL
    if shape == ():
        return _SCALAR
    if shape[:len(rows)] == rows and all(d == 1 for d in shape[len(rows):]):
        return _PER_ROW
    return None


def _row_reduction(eqn: Eqn) -> bool:
    return eqn.primitive.monoid


# Rows shorter than this are left to plain fusion: a row body's passes over a few elements
# cost more than they keep in cache (an n-body step's pairwise differences, rows of 3: 45 ms
# as rows of 1000 x 1000 pairs, against ~10 in JAX 0.12).
MIN_ROW_ELEMENTS = 16


def _seed(eqn: Eqn) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(R, C) when `eqn` reduces trailing dims C of an [R..., C...] value, R and C not empty."""
    if not _row_reduction(eqn):
        return None
    shape = eqn.invars[0].aval.shape
    k = len(shape) - len(eqn.params["axes"])
    if k < 1 or sorted(eqn.params["axes"]) != list(range(k, len(shape))):
        return None
    rows, cols = shape[:k], shape[k:]
    if math.prod(rows) == 0 or math.prod(cols) < MIN_ROW_ELEMENTS:
        return None
    return rows, cols


def _is_alias(eqn: Eqn, rows, cols) -> bool:
    """Per-row (or rank-0) value to per-row value: the same value in the row body."""
    return (eqn.primitive in (reshape_p, squeeze_p, broadcast_in_dim_p)
            and _kind(eqn.outvars[0].aval.shape, rows, cols) == _PER_ROW)


def _compatible(eqn: Eqn, rows: tuple[int, ...], cols: tuple[int, ...]) -> bool:
    prim = eqn.primitive
    if len(eqn.outvars) != 1 or len(eqn.invars) == 0:
        return False
    out = eqn.outvars[0].aval.shape
    out_kind = _kind(out, rows, cols)
    ins = [_kind(v.aval.shape, rows, cols) for v in eqn.invars]
    if is_elementwise(eqn):
        return (fusible(eqn) and out_kind in (_FULL, _PER_ROW)
                and all(v.aval.shape in (out, ()) for v in eqn.invars))
    if _row_reduction(eqn):
        return _seed(eqn) == (rows, cols)
    if prim is broadcast_in_dim_p:
        bdims = eqn.params["broadcast_dimensions"]
        return out_kind in (_FULL, _PER_ROW) and (ins == [_SCALAR] or (
            ins == [_PER_ROW] and bdims[:len(rows)] == tuple(range(len(rows)))))
    if prim is reshape_p:
        return (eqn.params.get("dimensions") is None and out_kind == _PER_ROW
                and ins[0] in (_PER_ROW, _SCALAR))
    if prim is squeeze_p:
        return out_kind == _PER_ROW and ins == [_PER_ROW]
    return False


def _next_region(eqns: list[Eqn], tried: set[Eqn]):
    """The first beneficial region grown from an untried reduction: (region indices, indices of
    outside eqns to move after it, R, C), or None."""
    producer, users = def_use(eqns)
    for start, eqn in enumerate(eqns):
        seed = _seed(eqn)
        if seed is None or eqn in tried:
            continue
        tried.add(eqn)
        rows, cols = seed
        region = {start}
        stack = [start]
        while stack:  # grow along data flow through compatible equations
            e = eqns[stack.pop()]
            near = [producer[v] for v in e.invars if isinstance(v, Var) and v in producer]
            near += [u for v in e.outvars for u in users.get(v, ())]
            for k in near:
                if k not in region and _compatible(eqns[k], rows, cols):
                    region.add(k)
                    stack.append(k)
        region, moved = _schedulable(eqns, region)
        if _beneficial(eqns, region, rows, cols):
            return sorted(region), moved, rows, cols
    return None


def _schedulable(eqns: list[Eqn], region: set[int]) -> tuple[set[int], list[int]]:
    """The row_map takes the place of the region's last eqn. Outside eqns in between that read
    region values move after it; if one of those feeds the region back, the region is cut
    before the first eqn reading it (a prefix of a region is schedulable)."""
    while region:
        first, last = min(region), max(region)
        late = {v for k in region for v in eqns[k].outvars}
        moved_out: set[Var] = set()
        moved, cut = [], None
        for k in range(first, last + 1):
            reads = {v for v in eqns[k].invars if isinstance(v, Var)}
            if k in region:
                if reads & moved_out:
                    cut = k
                    break
            elif reads & late:
                moved.append(k)
                moved_out |= set(eqns[k].outvars)
                late |= moved_out
        if cut is None:
            return region, moved
        region = {k for k in region if k < cut}
    return region, []


def _beneficial(eqns: list[Eqn], region: set[int], rows, cols) -> bool:
    """Some full value in the region depends on a reduction in it."""
    reduced: set[Var] = set()
    for k in sorted(region):
        eqn = eqns[k]
        if _row_reduction(eqn) or any(
                isinstance(v, Var) and v in reduced for v in eqn.invars):
            out = eqn.outvars[0]
            if _kind(out.aval.shape, rows, cols) == _FULL:
                return True
            reduced.add(out)
    return False


def _row_aval(aval: ShapedArray, rows, cols) -> ShapedArray:
    shape = cols if _kind(aval.shape, rows, cols) == _FULL else ()
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def _rewrite(eqns: list[Eqn], outvars: list, region: Sequence[int], moved: list[int],
             rows: tuple[int, ...], cols: tuple[int, ...]) -> list[Eqn]:
    """Replace the region by one row_map eqn, at its last eqn's place, followed by `moved`."""
    inside = set(region)
    body_of: dict[Var, Var | Literal] = {}
    outer_in: list = []
    body_in: list[Var] = []
    made = {v: e for k, e in enumerate(eqns) if k not in inside for v in e.outvars}
    before: list[Eqn] = []  # outside, ahead of the row_map: per-row iotas
    body_eqns: list[Eqn] = []

    def operand(v):
        if isinstance(v, Literal):
            return v
        if v not in body_of:  # read from outside the region
            src = made.get(v)
            if src is not None and src.primitive is iota_p and \
                    _kind(v.aval.shape, rows, cols) == _FULL:
                body_of[v] = _row_iota(src, v, rows, cols, before, body_eqns, operand)
                return body_of[v]
            body_of[v] = Var(_row_aval(v.aval, rows, cols))
            outer_in.append(v)
            body_in.append(body_of[v])
        return body_of[v]

    for k in region:
        eqn = eqns[k]
        ins = [operand(v) for v in eqn.invars]
        (out,) = eqn.outvars
        if _is_alias(eqn, rows, cols):
            body_of[out] = ins[0]
            continue
        params = eqn.params
        if _row_reduction(eqn):
            params = {**params, "axes": tuple(range(len(cols)))}
        elif eqn.primitive is broadcast_in_dim_p:
            params = {**params, "shape": cols, "broadcast_dimensions": ()}
        body_of[out] = Var(_row_aval(out.aval, rows, cols))
        body_eqns.append(Eqn(eqn.primitive, ins, [body_of[out]], params, eqn.source_info))
    # results: region values read after it (by outside eqns or as the program's outputs)
    read_after = {v for k, e in enumerate(eqns) if k not in inside for v in e.invars}
    read_after |= set(outvars)
    results = [eqns[k].outvars[0] for k in region if eqns[k].outvars[0] in read_after]
    body = Jaxpr([], body_in, [body_of[v] for v in results], _scale_by_reciprocal(
        body_eqns, [body_of[v] for v in results]))
    row_eqn = Eqn(row_map_p, outer_in, results,
                  {"body": ClosedJaxpr(body, []), "rows": rows,
                   "out_shapes": tuple(v.aval.shape for v in results),
                   "in_axes": tuple(None if v.aval.ndim == 0 else 0 for v in outer_in),
                   "out_axes": (0,) * len(results), "tail": None},
                  eqns[region[-1]].source_info)
    late = set(moved)
    out: list[Eqn] = []
    for k, eqn in enumerate(eqns):
        if k == region[-1]:
            out.extend(before)
            out.append(row_eqn)
            out.extend(eqns[j] for j in moved)
        elif k not in inside and k not in late:
            out.append(eqn)
    return out


def _row_iota(src: Eqn, v: Var, rows: tuple[int, ...], cols: tuple[int, ...],
              before: list[Eqn], body_eqns: list[Eqn], operand) -> Var:
    """An iota over a region's full shape, as the row body's own value rather than an operand
    stored whole (a causal mask's two iotas were 4 MiB each at 1024^2): along a column dim,
    the body's iota over the row; along a row dim, an iota of one element per row made
    outside (`before`), broadcast along the row in the body."""
    row = Var(_row_aval(v.aval, rows, cols))
    d = src.params["dimension"]
    if d >= len(rows):
        body_eqns.append(Eqn(iota_p, [], [row], {**src.params, "shape": cols,
                                                   "dimension": d - len(rows)},
                             src.source_info))
        return row
    per_row = Var(ShapedArray(rows + (1,) * len(cols), v.aval.dtype, v.aval.weak_type))
    before.append(Eqn(iota_p, [], [per_row], {**src.params, "shape": per_row.aval.shape},
                      src.source_info))
    body_eqns.append(Eqn(broadcast_in_dim_p, [operand(per_row)], [row],
                         {"shape": cols, "broadcast_dimensions": ()}, src.source_info))
    return row


def _scale_by_reciprocal(eqns: list[Eqn], outvars: list) -> list[Eqn]:
    """A full row divided by a per-row float32/64 value (softmax's e / sum) becomes the row
    times the value's reciprocal, computed once per row: a multiply per element instead of a
    divide (several times slower). XLA rewrites A / broadcast(B) the same way, so results stay
    JAX's bits (within an ulp of the division)."""
    broadcasts = {e.outvars[0]: e for e in eqns if e.primitive is broadcast_in_dim_p
                  and isinstance(e.invars[0], Var) and e.invars[0].aval.shape == ()}
    out: list[Eqn] = []
    for eqn in eqns:
        den = eqn.invars[1] if eqn.primitive is div_p else None
        if den not in broadcasts or eqn.outvars[0].aval.dtype not in (np.float32, np.float64):
            out.append(eqn)
            continue
        spread = broadcasts[den]
        (per_row,) = spread.invars
        inv, inv_row = Var(per_row.aval), Var(den.aval)
        out.append(Eqn(div_p, [Literal(1, per_row.aval), per_row], [inv], {},
                       eqn.source_info))
        out.append(spread.replace(invars=[inv], outvars=[inv_row]))
        out.append(eqn.replace(primitive=mul_p, invars=[eqn.invars[0], inv_row]))
    # a broadcast that only fed the rewritten divisions is dead (codegen would still fill it)
    read = {v for e in out for v in e.invars if isinstance(v, Var)} | set(outvars)
    return [e for e in out if e.primitive is not broadcast_in_dim_p or e.outvars[0] in read]
