"""Results split over processes, carried through a per-process program (before jit compiles it,
runtime/jit.py and shard_map_processes.py): a value computed from shard_map's result split over
the processes stays this process's block where compiler/sharding.py's rules keep the split in
one process, so jit returns it as a block (no Allgather), with the sharding JAX reports. An
operand split over the processes the same way (jit's argument) enters as its own block (the
cut shard_map makes, read without a gather by compiler/passes.py); a sum, max or min over a
dimension split over processes reduces the block, then one Allreduce of that partial result
(half floats summed in float32 and rounded once, after it, as one device sums them).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..core.dce import drop_unread
from ..core.devices import process_index
from ..core.global_array import (any_noted, block_of, note_own_block_cut, noted, split_outputs,
                                 with_noted_blocks)
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Var
from ..core.primitive import ELEMENTWISE
from ..core.sharding import (AxisType, NamedSharding, PartitionSpec, axes_across_processes,
                             mesh_processes)
from ..lax.call import pjit_p
from ..lax.elementwise import convert_element_type_p
from ..lax.reductions import (reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p,
                              reduce_prod_p, reduce_sum_p)
from ..lax.processes import allreduce_p
from ..lax.shape import broadcast_in_dim_p, reshape_p, slice_p, squeeze_p, transpose_p
from ..transforms.spmd import replicated
from .sharding import propagate_shardings, summed_in

_REDUCERS = {reduce_sum_p, reduce_max_p, reduce_min_p, reduce_prod_p, reduce_and_p,
             reduce_or_p}
# the reductions a partial result per process completes with one Allreduce (its op)
_ACROSS = {reduce_sum_p: "sum", reduce_max_p: "max", reduce_min_p: "min"}


def split_results(closed: ClosedJaxpr, laid_out: Any = None) -> tuple[ClosedJaxpr, list | None]:
    """`split_outputs` with the values computed from split results carried as blocks too, and
    calls (a jit inside jit) no longer computing the gathered values nothing reads.
    `laid_out`: per argument its sharding or None (those over a mesh spanning processes may
    be split over them)."""
    split_in = [i for i, s in enumerate(laid_out or ()) if _spans_processes(s)]
    closed, carried = carry_blocks(closed, split_in, laid_out if split_in else None)
    closed, blocks = split_outputs(closed, carried)
    return (_pruned(closed) if blocks is not None else closed), blocks


def noted_results(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """`with_noted_blocks` with the values computed from split results carried as blocks too
    (a jit inside jit: the caller's program returns them split). Its arguments' layouts are
    the caller's: any of them may be split over processes."""
    closed, carried = carry_blocks(closed, range(len(closed.jaxpr.invars)))
    return with_noted_blocks(closed, carried)


def carry_blocks(closed: ClosedJaxpr, split_in: Any = (), laid_out: Any = None
                 ) -> tuple[ClosedJaxpr, dict]:
    """The program with each output computed from results split over processes by the rules
    below also computed from their blocks (equations added on the blocks), and per such
    output (not itself noted) its (block Var, sharding, None). Decided from the program and
    its notes alone, so alike on every process; ({} when none). `split_in`: the arguments
    (indices) that may be split over processes: the values computed from them are never
    taken as replicated operands of a block (the partitioner would split the block again),
    only, given the arguments' shardings `laid_out`, as their own blocks where the
    partitioner lays them out as the block is."""
    if not any_noted():
        return closed, {}  # (the common case, kept free: no shard_map staged yet)
    jaxpr = closed.jaxpr
    # whole Var -> (block Var, the mesh the block is of, dims: per dimension its mesh axes,
    # the mesh reported): on a mesh interleaving the processes the block is of the mesh they
    # computed on (shard_map_processes.py `computing_mesh`), the value's pieces fetched from it
    split: dict = {}
    for v in _made(jaxpr):
        found = noted(v)
        if found is not None and found[0] is not v and _spans_processes(found[1]):
            split[v] = (found[0], (found[2] or found[1]).mesh,
                        tuple(found[1]._parts(v.aval.ndim)), found[1].mesh)
    if not split:
        return closed, {}
    made = {o: e for e in jaxpr.eqns for o in e.outvars}
    tainted = {jaxpr.invars[i] for i in split_in if i < len(jaxpr.invars)}
    for e in jaxpr.eqns:
        if any(type(v) is Var and v in tainted for v in e.invars):
            tainted.update(e.outvars)
    layouts = _Layouts(jaxpr, laid_out)
    eqns, added = [], {}  # (added: block Var -> the equation computing it)
    for eqn in jaxpr.eqns:
        eqns.append(eqn)
        if not any(type(v) is Var and v in split for v in eqn.invars):
            continue
        mirrored = _mirror(eqn, split, made, tainted, layouts)
        if mirrored is None:
            continue
        for e in mirrored:
            eqns.append(e)
            added.update((o, e) for o in e.outvars)
            made.update((o, e) for o in e.outvars)  # (a whole value's broadcast, read again)
    carried = {v: _carried(*split[v]) for v in jaxpr.outvars
               if type(v) is Var and v in split and noted(v) is None}
    # only the added equations the carried outputs need: the others would compute blocks
    # nothing reads
    needed, todo = set(), [b for b, _, _ in carried.values()]
    while todo:
        e = added.get(todo.pop())
        if e is not None and id(e) not in needed:
            needed.add(id(e))
            todo += [v for v in e.invars if type(v) is Var]
    kept_added = {id(e) for e in added.values()}
    eqns = [e for e in eqns if id(e) not in kept_added or id(e) in needed]
    if not carried:
        return closed, {}
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns,
                             jaxpr.debug_info), closed.consts), carried


def _carried(block: Var, mesh: Any, dims: tuple, shown: Any) -> tuple:
    """An output's (block, sharding, computed) as `noted` gives a shard_map result's."""
    computed = None if mesh is shown or _whole(mesh, dims) else reported(mesh, dims)
    return block, reported(shown, dims), computed


class _Layouts:
    """How the partitioner (compiler/sharding.py) lays out each value of the program over the
    arguments' mesh, planned the first time it is asked (only an operand split over the
    processes asks)."""

    def __init__(self, jaxpr: Jaxpr, laid_out: Any):
        self.jaxpr, self.laid_out, self.mesh, self.dims = jaxpr, laid_out, None, None

    def of(self, v: Var, mesh: Any) -> tuple | None:
        """`v`'s layout (per dimension its mesh axes) when the arguments' mesh is `mesh`."""
        if self.dims is None:
            self.dims = {}
            meshes = {s.mesh for s in self.laid_out or () if isinstance(s, NamedSharding)}
            if len(meshes) == 1:
                (self.mesh,) = meshes
                self.dims = _planned(self.jaxpr, self.laid_out, self.mesh)
        return self.dims.get(v) if mesh == self.mesh else None


def _planned(jaxpr: Jaxpr, laid_out: Any, mesh: Any) -> dict:
    """Var -> its layout as the partitioner plans the program (the program's own values)."""
    in_dims = [tuple(s._parts(v.aval.ndim)) if isinstance(s, NamedSharding)
               else replicated(v.aval.ndim) for s, v in zip(laid_out, jaxpr.invars)]
    plan = propagate_shardings(jaxpr, in_dims, dict(mesh.shape_tuple))
    dims = dict(zip(jaxpr.invars, plan.in_dims))
    for eqn, ep in zip(jaxpr.eqns, plan.eqns):
        dims.update(zip(eqn.outvars, ep.out_dims))
    return dims


def _made(jaxpr: Jaxpr) -> list:
    return [v for e in jaxpr.eqns for v in e.outvars]


def _spans_processes(sharding: Any) -> bool:
    return isinstance(sharding, NamedSharding) and sharding.mesh.is_multi_process


@functools.lru_cache(maxsize=64)
def _ranks(mesh: Any, axis: str) -> tuple:
    """The processes along the mesh axis `axis` through this process's devices, in order (the
    group an Allreduce over that axis spans; each of its processes finds the same one)."""
    procs = mesh_processes(mesh)
    i = mesh.axis_names.index(axis)
    line = np.moveaxis(procs, i, 0)[(slice(None),) + tuple(
        np.argwhere(np.moveaxis(procs, i, 0) == process_index())[0][1:])]
    return tuple(int(p) for k, p in enumerate(line) if k == 0 or p != line[k - 1])


def _whole(mesh: Any, dims: tuple) -> bool:
    """Whether a value laid out as `dims` is split over no process axis of `mesh` (its block is
    all of it)."""
    return not axes_across_processes(mesh).intersection(a for axes in dims for a in axes)


def reported(mesh: Any, dims: tuple) -> NamedSharding:
    """JAX's report of a layout (as runtime/sharded.py's): over Explicit axes an entry per
    dimension, else trailing unsplit dimensions left out (P('x', None) reads P('x',))."""
    entries = [None if not a else a[0] if len(a) == 1 else a for a in dims]
    while entries and entries[-1] is None and AxisType.Explicit not in mesh.axis_types:
        entries.pop()
    return NamedSharding(mesh, PartitionSpec(*entries))


def _mirror(eqn: Eqn, split: dict, made: dict, tainted: set,
            layouts: _Layouts) -> list | None:
    """The equations computing `eqn`'s result from its split operands' blocks (recording the
    result in `split`), or None where no rule keeps the split (the gathered value is read).
    A value every process holds whole after an Allreduce (split over no process axis) is
    recorded too, as its own block."""
    ins = [split.get(v) if type(v) is Var else None for v in eqn.invars]
    found = [s for s in ins if s is not None]
    block, mesh, dims, shown = next((s for s in found if not _whole(s[1], s[2])), found[0])
    (out,) = eqn.outvars if len(eqn.outvars) == 1 else (None,)
    if out is None:
        return None
    pre, operands, params = [], [block], eqn.params
    if eqn.primitive.fusion == ELEMENTWISE:
        operands = []
        shape = block.aval.shape
        for v, s in zip(eqn.invars, ins):
            if s is not None and s[1] != mesh:
                return None
            if s is not None and s[2] == dims and v.aval.shape == out.aval.shape:
                operands.append(s[0])
                continue
            if s is not None and _whole(mesh, s[2]):  # (whole on every process: as replicated)
                v, s = s[0], None
            elif s is not None:
                return None
            if v.aval.ndim == 0:
                operands.append(v)
                continue
            if v.aval.shape != out.aval.shape:
                return None
            if v in tainted:  # (perhaps split over processes itself: its own block only where
                # the partitioner lays it out as the block, else not cut again)
                if layouts.of(v, shown) != dims:
                    return None
                b = _block_cut(v, mesh, dims)
                if b is not None:
                    note_own_block_cut(b.outvars[0])
            else:  # replicated: broadcast to, or cut out, the block
                b = _block_broadcast(v, made, dims, block.aval.shape, tainted) or \
                    _block_cut(v, mesh, dims)
            if b is None:
                return None
            pre.append(b)
            operands.append(b.outvars[0])
        new_dims = dims
    elif len(eqn.invars) != 1:
        return None
    elif eqn.primitive is transpose_p:
        perm = eqn.params["permutation"]
        shape = tuple(block.aval.shape[p] for p in perm)
        new_dims = tuple(dims[p] for p in perm)
    elif eqn.primitive is squeeze_p:
        gone = eqn.params["dimensions"]
        if any(dims[a] for a in gone):
            return None
        shape = tuple(n for a, n in enumerate(block.aval.shape) if a not in gone)
        new_dims = tuple(d for a, d in enumerate(dims) if a not in gone)
    elif eqn.primitive in _REDUCERS:
        axes = eqn.params["axes"]
        # (within a process the partitioner reduces the lanes)
        across = axes_across_processes(mesh)
        over = [a for a in mesh.axis_names if any(a in dims[d] for d in axes) and a in across]
        shape = tuple(n for a, n in enumerate(block.aval.shape) if a not in axes)
        new_dims = tuple(d for a, d in enumerate(dims) if a not in axes)
        if over:  # this process's partial result, then an Allreduce of it: whole on every
            # process where no other dimension is split over processes
            if eqn.primitive not in _ACROSS or not _whole(mesh, new_dims) or \
                    np.dtype(out.aval.dtype) == np.bool_:
                return None
            # (a half-float sum: the partial sums and their Allreduce in float32, rounded once
            # at the end, as one device sums it)
            narrow = np.dtype(out.aval.dtype)
            wide = summed_in(narrow) if eqn.primitive is reduce_sum_p else narrow
            steps, x = [], block
            if wide != narrow:
                steps.append(_staged(convert_element_type_p, [x], {
                    "new_dtype": wide, "weak_type": False}, block.aval.shape, eqn.source_info))
                x = steps[-1].outvars[0]
            partial = _staged(eqn.primitive, [x], params, shape, eqn.source_info)
            if partial is None:
                return None
            steps.append(partial)
            x = partial.outvars[0]
            for a in over:
                steps.append(_staged(allreduce_p, [x], {
                    "op": _ACROSS[eqn.primitive], "ranks": _ranks(mesh, a), "axis_name": a,
                    "vma": False}, shape, eqn.source_info))
                x = steps[-1].outvars[0]
            if wide != narrow:
                steps.append(_staged(convert_element_type_p, [x], {
                    "new_dtype": narrow, "weak_type": out.aval.weak_type}, shape,
                    eqn.source_info))
                x = steps[-1].outvars[0]
            if any(e is None for e in steps):
                return None
            split[out] = (x, mesh, new_dims, shown)
            return steps
    elif eqn.primitive is broadcast_in_dim_p:  # (new dimensions whole; kept ones as they were)
        bdims = eqn.params["broadcast_dimensions"]
        if any(dims[i] and eqn.invars[0].aval.shape[i] != out.aval.shape[d]
               for i, d in enumerate(bdims)):
            return None
        shape, new_dims = list(out.aval.shape), [()] * out.aval.ndim
        for i, d in enumerate(bdims):
            shape[d] = block.aval.shape[i] if dims[i] else shape[d]
            new_dims[d] = dims[i]
        shape, new_dims = tuple(shape), tuple(new_dims)
        params = dict(eqn.params, shape=shape)
    elif eqn.primitive is reshape_p and eqn.params.get("dimensions") is None:
        kept = _reshaped(eqn.invars[0].aval.shape, out.aval.shape, dims)
        if kept is None:
            return None
        last = kept - 1
        shape = tuple(out.aval.shape[:last]) + (
            out.aval.shape[last] * block.aval.shape[last] // eqn.invars[0].aval.shape[last],) \
            + tuple(out.aval.shape[kept:])
        new_dims = tuple(dims[:kept]) + ((),) * (out.aval.ndim - kept)
        params = dict(eqn.params, new_sizes=shape)
    else:
        return None
    mirrored = _staged(eqn.primitive, operands, params, shape, eqn.source_info)
    if mirrored is None:
        return None
    split[out] = (mirrored.outvars[0], mesh, new_dims, shown)
    return pre + [mirrored]


def _staged(primitive: Any, operands: list, params: dict, shape: tuple,
            source_info: Any = None) -> Eqn | None:
    """`primitive` applied to `operands` (blocks), its result typed by the primitive's own
    rule; None when that rule refuses them or does not give the block's `shape`."""
    try:
        (aval,) = primitive.abstract_eval(*[v.aval for v in operands], **params)
    except (TypeError, ValueError):
        return None
    if tuple(aval.shape) != tuple(shape):
        return None
    return Eqn(primitive, operands, [Var(aval)], params, source_info)


def _reshaped(old: tuple, new: tuple, dims: tuple) -> int | None:
    """Where a reshape from `old` to `new` keeps a split `dims` (of `old`): the number of
    leading dimensions (through the last split one) it keeps, the last possibly merged with
    the whole dimensions after it; None when it moves a split dimension."""
    split_at = [d for d, axes in enumerate(dims) if axes]
    if not split_at:
        return None
    last = split_at[-1]
    if tuple(old[:last]) != tuple(new[:last]) or len(new) <= last:
        return None
    size = old[last]
    for n in old[last + 1:]:
        if size == new[last]:
            break
        size *= n
    return last + 1 if size == new[last] else None


def _block_broadcast(v: Any, made: dict, dims: tuple, shape: tuple,
                     tainted: set) -> Eqn | None:
    """A value broadcast (broadcast_in_dim) from a replicated operand that is whole along
    every split dimension of `dims` (it has size 1 or is absent there): the same broadcast to
    the block's `shape`."""
    e = made.get(v) if type(v) is Var else None
    if e is None or e.primitive is not broadcast_in_dim_p:
        return None
    (x,) = e.invars
    if x in tainted:
        return None
    bdims = e.params["broadcast_dimensions"]
    for i, d in enumerate(bdims):
        if dims[d] and x.aval.shape[i] != 1:
            return None
    return _staged(broadcast_in_dim_p, [x], dict(e.params, shape=tuple(shape)), tuple(shape),
                   e.source_info)


def _block_cut(v: Any, mesh: Any, dims: tuple) -> Eqn | None:
    """This process's block of a value every process holds whole, laid out as `dims` (a
    slice at this process's position: the one part of the program that differs between
    processes, as shard_map's cut of a replicated operand does; no collective)."""
    shape = v.aval.shape
    try:
        box = block_of(NamedSharding(mesh, reported(mesh, dims).spec).devices_indices_map(
            shape), shape)
    except NotImplementedError:  # (this process's devices hold no one block of it)
        return None
    start, limit = tuple(b.start for b in box), tuple(b.stop for b in box)
    return _staged(slice_p, [v], {"start_indices": start, "limit_indices": limit,
                                 "strides": None}, tuple(b - a for a, b in zip(start, limit)))


def _pruned(closed: ClosedJaxpr) -> ClosedJaxpr:
    """The program with each call (jit inside jit) computing only the results read: a
    gathered value its caller returns split as the block is no longer gathered inside it
    (collectives are effects: dead-code elimination keeps them, every process drops them
    alike)."""
    jaxpr = closed.jaxpr
    read = {v for e in jaxpr.eqns for v in e.invars if type(v) is Var}
    read.update(v for v in jaxpr.outvars if type(v) is Var)
    eqns = [_pruned_call(e, [o in read for o in e.outvars]) if e.primitive is pjit_p else e
            for e in jaxpr.eqns]
    if all(a is b for a, b in zip(eqns, jaxpr.eqns)):
        return closed
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns,
                             jaxpr.debug_info), closed.consts)


def _pruned_call(eqn: Eqn, used: list) -> Eqn:
    if all(used):
        return eqn
    body = eqn.params["jaxpr"]
    inner = body.jaxpr
    outvars = [v for v, u in zip(inner.outvars, used) if u]
    dropped = [v for v, u in zip(inner.outvars, used) if not u and type(v) is Var]
    eqns = drop_unread(inner.eqns, outvars, dropped)
    pruned = _pruned(ClosedJaxpr(Jaxpr(inner.constvars, inner.invars, outvars, eqns,
                                       inner.debug_info), body.consts))
    return eqn.replace(outvars=[o for o, u in zip(eqn.outvars, used) if u],
                       params={**eqn.params, "jaxpr": pruned})
