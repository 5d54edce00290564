"""shard_map, and jit, over a mesh spanning processes (user-facing, beside shard_map.py): the
mesh axes along which the process changes are not batched. Each process takes its block of
every argument (a GlobalArray's local data, or its part of a value every process holds), runs
shard_map's batched program over the mesh axes local to it, with the process axes bound so
collectives over them call MPI (lax/processes.py), and returns its block of each result.
Outside any transformation that program is compiled (the collectives are calls from native
code). jit over such arrays runs its partitioned program (runtime/sharded.py) the same way.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
from typing import Any, Callable

import numpy as np

from .core.array import Array, aligned_copy
from .core.axis_env import AxisFrame, ProcessAxis, extend_frame
from .core.devices import process_count, process_index
from .core.global_array import GlobalArray, as_global, note_gathered, note_own_block_cut
from .core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .core.rules import moveaxis
from .core.sharding import (Mesh, NamedSharding, PartitionSpec,
                            axes_across_processes, mesh_processes, replicated_sharding,
                            resolve_sharding)
from .compiler.sharding import propagate_shardings, reshard, reshards
from .compiler.split_results import reported as split_reported, split_results
from .core.trace import DynamicJaxprTracer, Tracer, current_dynamic_trace, get_aval
from .lax import reshape, slice as lax_slice
from .lax.processes import allgather_p, pvary_p, shared_p, vma_p
from .runtime.devices import to_array
from .runtime.jit import jit, run_across_processes
from .runtime.sharded import check_layout, plan_layout
from .transforms.api import run_over_processes
from .shard_map import _check_divides, _dim_axes, _per_device


def process_axes(m: Any) -> dict:
    """Mesh axis name -> ProcessAxis for each axis along which the process changes ({} when
    one process holds the whole mesh), on the mesh the processes compute on
    (`computing_mesh`)."""
    if not isinstance(m, Mesh) or process_count() == 1 or not m.is_multi_process:
        return {}
    return _grouped_axes(computing_mesh(m))


@functools.lru_cache(maxsize=64)
def computing_mesh(m: Mesh, specs: tuple = ()) -> Mesh:
    """The mesh whose positions the processes compute: `m` itself when each process's devices
    form one block of it and, in every dimension `specs` split over several axes, the axes
    spanning processes come first; else the same axes over the devices in process order,
    laid along the axes in the first order (of all) that satisfies both. Values do not depend
    on which process computes a position, only where a split result lives: no process holds
    one block of such a result of `m`, so it leaves shard_map gathered (every process
    holding all of it, unsharded). `m` when no order fits (the errors then say why)."""
    ordered = sorted(m.devices.flat, key=lambda d: (d.process_index, d.id))
    flat = np.empty(len(ordered), dtype=object)
    flat[:] = ordered
    candidates = [m] + [
        Mesh(flat.reshape([m.devices.shape[i] for i in order]).transpose(np.argsort(order)),
             m.axis_names, m.axis_types)
        for order in itertools.permutations(range(m.devices.ndim))]
    for c in candidates:
        try:
            axes = _grouped_axes(c)
        except NotImplementedError:
            continue
        if all(_processes_first(s, axes) for s in specs):
            return c
    return m


def _processes_first(spec: Any, axes: dict) -> bool:
    for names in _dim_axes(spec, len(spec) if spec is not None else 0):
        ours = tuple(a for a in names if a in axes)
        if tuple(names[:len(ours)]) != ours:
            return False
    return True


def _grouped_axes(m: Mesh) -> dict:
    """process_axes of a mesh whose processes' devices are each one block: on each process
    axis one run of consecutive positions (the same length in every process), and every
    position of the other axes (NotImplementedError otherwise)."""
    procs = mesh_processes(m)
    mine = np.argwhere(procs == process_index())
    if not len(mine):
        raise ValueError(f"shard_map over {m!r}: none of its devices belongs to this process "
                         f"({process_index()}); every process must hold part of the mesh")
    out, local = {}, 1
    across = axes_across_processes(m)
    for i, name in enumerate(m.axis_names):
        size = procs.shape[i]
        if name not in across:
            local *= size
            continue
        at = sorted({int(c) for c in mine[:, i]})
        lanes = len(at)
        position = list(mine[0])
        along = []
        for k in range(size):
            position[i] = k
            along.append(int(procs[tuple(position)]))
        ranks = along[::lanes]
        if size % lanes or at != list(range(at[0], at[0] + lanes)) or at[0] % lanes or \
                along != [r for r in ranks for _ in range(lanes)] or \
                len(set(ranks)) != len(ranks):
            raise NotImplementedError(
                f"shard_map over {m!r}: along the mesh axis {name!r} the processes do not hold "
                f"equal runs of consecutive positions; order the devices by process (as "
                f"jax.devices() lists them)")
        out[name] = ProcessAxis(tuple(ranks), at[0] // lanes, lanes,
                                f"{name}#lanes" if lanes > 1 else None)
        local *= lanes
    if len(mine) != local:
        raise NotImplementedError(f"shard_map over {m!r}: this process's devices do not form "
                                  f"one block of the mesh")
    return out


def _block(spec: PartitionSpec | None, shape: tuple, sizes: dict, processes: dict,
           fun_name: str) -> tuple[slice, ...]:
    """This process's block of a value of `shape` split as `spec` says."""
    index = []
    for d, (n, names) in enumerate(zip(shape, _dim_axes(spec, len(shape)))):
        ours = [a for a in names if a in processes]
        if tuple(names[:len(ours)]) != tuple(ours):
            raise NotImplementedError(
                f"shard_map applied to {fun_name!r}: dimension {d} is split over {names}, "
                f"a mesh axis within a process before one across processes; name the "
                f"process axes first")
        _check_divides(shape, d, names, sizes, fun_name)
        position = 0
        for a in ours:
            position = position * len(processes[a].ranks) + processes[a].index
        length = n // math.prod(len(processes[a].ranks) for a in ours)
        index.append(slice(position * length, (position + 1) * length))
    return tuple(index)


def _local_spec(spec: PartitionSpec | None, ndim: int, processes: dict) -> PartitionSpec:
    entries = []
    for names in _dim_axes(spec, ndim):
        rest = tuple(a if a not in processes else processes[a].lanes_name for a in names
                     if a not in processes or processes[a].lanes > 1)
        entries.append(None if not rest else rest[0] if len(rest) == 1 else rest)
    return PartitionSpec(*entries)


def _local_block(x: Any, spec: Any, m: Mesh, sizes: dict, processes: dict,
                 fun_name: str, check_vma: bool = False) -> Any:
    if isinstance(x, GlobalArray):
        x.check_live()
        _block(spec, x.shape, sizes, processes, fun_name)  # (its errors)
        # this process's block as in_specs split it: the array's own when it is laid out so
        # (on every process), else the parts it lacks fetched from the processes holding them
        computing = NamedSharding(m, spec if spec is not None else PartitionSpec())
        return x.block_as(computing, f"shard_map applied to {fun_name!r}")
    x = x if isinstance(x, Tracer) else to_array(x)
    # a value every process holds whole enters as one value, whatever part each takes: its
    # gradient sums the processes' contributions (as over a batched axis). Typed (check_vma),
    # only over the axes its spec splits it over (each process's block's cotangent, put in
    # place): over the others it is invariant, and an invariant value's cotangent is already
    # the whole one on every process (pvary's transpose psums it), as JAX adds none at the
    # boundary when it rewrites
    x = _vary(x, _split_over(spec, processes) if check_vma else processes)
    shape = get_aval(x).shape
    index = _block(spec, shape, sizes, processes, fun_name)
    if all(s == slice(0, n) for s, n in zip(index, shape)):
        return x
    cut = lax_slice(x, tuple(s.start for s in index), tuple(s.stop for s in index))
    if isinstance(cut, DynamicJaxprTracer):  # (staged: compiler/passes.py may bypass a gather)
        note_own_block_cut(cut._var)
    return cut


def _global_shape(shape: tuple, spec: Any, sizes: dict, processes: dict) -> tuple:
    return tuple(n * math.prod(len(processes[a].ranks) for a in names if a in processes)
                 for n, names in zip(shape, _dim_axes(spec, len(shape))))


def across_processes(f: Callable, m: Mesh, processes: dict, leaves: list, in_tree: Any,
                     flat_specs: list, out_specs: Any, fun_name: str, bodies: dict,
                     donated: tuple = (), check_vma: bool = False,
                     relabel: bool = False) -> Any:
    """shard_map's call over a mesh whose axes `processes` span processes (see the module).
    `donated` (jit's donate_argnums, per leaf): those leaves' blocks are donated to the
    per-process program, which may write its results over them, as in one process.
    check_vma: values' types carry the mesh axes they vary over, the process axes among them
    (a block split over one varies over it), as shard_map's check_vma=True in one process.
    relabel: on a mesh interleaving the processes, each process computes the positions it
    holds (its pieces put together as its block of the mesh computed on, and its results'
    pieces taken back out of its block: `GlobalArray.relabelled_block`), not those the mesh
    computed on gives it, whose parts it would fetch and send back; only for a program that
    never reads which positions a shard holds, every argument split over the processes a
    GlobalArray on the mesh (jit's plain programs, `_plan`)."""
    specs = tuple(flat_specs) + tuple(tree_leaves(
        out_specs, is_leaf=lambda s: s is None or isinstance(s, PartitionSpec)))
    specs = tuple(s for s in specs if s is not None)
    try:
        given_mesh, m = m, computing_mesh(m, specs)
    except TypeError:  # (a spec that cannot be hashed: chosen afresh)
        given_mesh, m = m, computing_mesh.__wrapped__(m, specs)
    if m is not given_mesh:
        processes = _grouped_axes(m)
    sizes = dict(m.shape_tuple)
    # the axes batched here: the lanes of process axes where this process holds several
    # positions, then those within this process. The lanes' batch traces are the outer ones: a
    # collective over a process axis and a local one (or check_vma's implicit pvary over both)
    # runs the local axis's rule first, which binds the process axis's part, over its lanes,
    # from inside that rule, so to a trace below it (one above would take the rule's operands
    # as unbatched, and its tracers would leak out of the rule)
    local_axes = [processes[a].lanes_name for a in m.axis_names
                  if a in processes and processes[a].lanes > 1] + \
        [a for a in m.axis_names if a not in processes]
    local_sizes = {a: sizes[a] for a in m.axis_names if a not in processes}
    local_sizes.update({p.lanes_name: p.lanes for p in processes.values() if p.lanes > 1})
    relabel = relabel and m is not given_mesh
    blocks = [x.relabelled_block(NamedSharding(m, s if s is not None else PartitionSpec()))
              if relabel and isinstance(x, GlobalArray) else
              _local_block(x, s, m, sizes, processes, fun_name, check_vma)
              for x, s in zip(leaves, flat_specs)]
    local_specs = [_local_spec(s, get_aval(b).ndim, processes)
                   for b, s in zip(blocks, flat_specs)]
    traced = any(isinstance(b, Tracer) for b in blocks)
    # (the positions a process holds of a process axis vary over that axis)
    typed_as = {p.lanes_name: a for a, p in processes.items() if p.lanes > 1}

    def body(*xs):
        with contextlib.ExitStack() as stack:
            for name, axis in processes.items():
                stack.enter_context(extend_frame(AxisFrame(name, sizes[name], None, axis,
                                                           vma=check_vma)))
            if check_vma:
                xs = [_typed(x, s, processes) for x, s in zip(xs, flat_specs)]
            tree, out_flat, results = _per_device(
                f, in_tree, xs, local_specs, out_specs, m, local_axes, local_sizes, fun_name,
                out_spec=lambda spec, ndim: _local_spec(spec, ndim, processes), vma=check_vma,
                typed_as=typed_as)
            if check_vma:  # (leaving typed as outside shard_map; before _leave, which notes the
                # values jit returns split over the processes)
                results = [_untyped(_placed(r, s, processes), processes)
                           for r, s in zip(results, out_flat)]
            if traced:  # (inside a transformation: the whole value on every process, and a
                # gradient may cross the boundary)
                results = [_leave(r, s, given_mesh, processes, m, check_vma)
                           for r, s in zip(results, out_flat)]
            info[:] = [tree, out_flat]
            return results

    key = (in_tree, tuple(flat_specs), m, tuple(get_aval(b) for b in blocks), donated)
    if traced and not (check_vma and current_dynamic_trace() is None):
        info: list = []
        results = body(*blocks)
    elif traced:  # (under grad or vmap of concrete values, staged: a concrete value carries
        # no type, so a psum of a varying block would take it as invariant and call no MPI)
        key = ("staged",) + key
        if key not in bodies:
            staged = jit(body)
            staged.split_outputs = False  # (the whole results, as _leave makes them)
            bodies[key] = (staged, [])
        staged, info = bodies[key]
        results = staged(*blocks)
    else:
        if key not in bodies:
            compiled = jit(body, donate_argnums=tuple(i for i, d in enumerate(donated) if d))
            compiled.split_outputs = False  # (its blocks are laid out by _wrap below)
            bodies[key] = (compiled, [])
        compiled, info = bodies[key]
        results = compiled(*blocks)
    tree, out_flat = info
    if not traced:
        given = {id(b) for b in blocks}
        results = [_wrap(r, s, given_mesh, sizes, processes, id(r) in given, m, fun_name,
                         relabel) for r, s in zip(results, out_flat)]
    return tree_unflatten(tree, results)


def _leave(x: Any, spec: Any, m: Mesh, processes: dict, computed_on: Mesh,
           check_vma: bool = False) -> Any:
    """A result of shard_map traced inside a transformation, as its whole value on every
    process. Staged by jit, a result split over processes is noted as gathered from its
    block, so that jit returning it returns the block as a GlobalArray, as JAX does (and a
    replicated one as an Array laid out over the mesh); on a mesh interleaving the processes
    the block is of the mesh the processes computed on (`computed_on`), from which the call
    fetches each process's pieces. Its cotangent is shared among the processes' copies over
    the axes it was gathered along (their blocks' cotangents then summed by the gather's
    transpose); untyped, over every process axis (JAX's check_vma=False division of an
    unmapped result's cotangent), but typed an invariant result's cotangent is whole on every
    process, as the typed transposes inside (psum's is pvary) take it."""
    whole = _share(_gather(x, spec, processes),
                   _split_over(spec, processes) if check_vma else processes)
    spec = spec if spec is not None else PartitionSpec()
    if isinstance(x, DynamicJaxprTracer) and isinstance(whole, DynamicJaxprTracer) and \
            x._trace.main is whole._trace.main:
        # (a replicated result is its own block: jit returns it laid out over the mesh)
        split = any(a in processes for a in spec.mesh_axes())
        note_gathered(whole._var, x._var if split else whole._var, NamedSharding(m, spec),
                      NamedSharding(computed_on, spec) if split and computed_on is not m
                      else None)
    return whole


def _split_over(spec: Any, processes: dict) -> dict:
    """The process axes among `processes` that `spec` splits a value over."""
    named = set(spec.mesh_axes()) if spec is not None else set()
    return {a: p for a, p in processes.items() if a in named}


def _vary(x: Any, processes: dict) -> Any:
    if isinstance(x, Tracer) and np.issubdtype(get_aval(x).dtype, np.inexact):
        for name, axis in processes.items():
            x = pvary_p.bind(x, ranks=axis.ranks, axis_name=name, vma=False)
    return x


def _typed(x: Any, spec: Any, processes: dict) -> Any:
    """A block entering shard_map (check_vma=True) typed varying over the process axes its
    spec splits it over (the batch traces type the axes within the process)."""
    split = tuple(a for a in (spec.mesh_axes() if spec is not None else ()) if a in processes)
    return vma_p.bind(x, add=split, remove=()) if split else x


def _placed(x: Any, spec: Any, processes: dict) -> Any:
    """A result leaving split over process axes it is typed invariant over (each position
    holds the same value): made varying over them, JAX's implicit pvary at out_specs, so that
    its cotangent sums its positions' (pvary's transpose)."""
    vma = getattr(get_aval(x), "vma", frozenset())
    for name, axis in _split_over(spec, processes).items():
        if name not in vma:
            x = pvary_p.bind(x, ranks=axis.ranks, axis_name=name, vma=True)
    return x


def _untyped(x: Any, processes: dict) -> Any:
    varying = tuple(a for a in processes if a in getattr(get_aval(x), "vma", ()))
    return vma_p.bind(x, add=(), remove=varying) if varying else x


def _share(x: Any, processes: dict) -> Any:
    """A result every process holds whole (replicated, or gathered) as the one value it is:
    its cotangent is shared out among the processes' copies."""
    if np.issubdtype(get_aval(x).dtype, np.inexact):
        for name, axis in processes.items():
            x = shared_p.bind(x, ranks=axis.ranks, axis_name=name)
    return x


def _gather(x: Any, spec: Any, processes: dict) -> Any:
    """The whole of a result split over process axes, gathered onto every process (minor
    axes first)."""
    for d, names in enumerate(_dim_axes(spec, get_aval(x).ndim)):
        for a in reversed([a for a in names if a in processes]):
            pa = processes[a]  # (the processes' blocks: this one's lanes are in its block)
            stacked = moveaxis(allgather_p.bind(x, ranks=pa.ranks, axis_name=a), 0, d)
            shape = get_aval(stacked).shape
            x = reshape(stacked, shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:])
    return x


def _wrap(x: Array, spec: Any, m: Mesh, sizes: dict, processes: dict, given: bool,
          computed_on: Mesh, fun_name: str, relabel: bool = False) -> Any:
    """A result block (of the mesh `computed_on`; `relabel`: computed on the positions this
    process holds, as `across_processes` says) as the global array: a GlobalArray when split
    over processes, else the Array every process holds alike (marked in place unless it is
    an argument: a fresh result keeps the buffer it was computed in, a donated argument's
    among them)."""
    spec = spec if spec is not None else PartitionSpec()
    sharding = NamedSharding(m, spec)
    if not any(a in processes for a in spec.mesh_axes()):
        if given or x._sharding is not None:
            return x.placed(sharding)
        x._sharding = sharding
        return x
    shape = _global_shape(x.shape, spec, sizes, processes)
    if computed_on is not m and relabel:
        return GlobalArray.from_relabelled_block(x, shape, NamedSharding(computed_on, spec),
                                                 sharding)
    if computed_on is not m:  # (on a mesh interleaving processes: each process's pieces
        # fetched from the processes that computed them, not the whole gathered)
        return GlobalArray.from_block(x, shape, NamedSharding(computed_on, spec), sharding,
                                      f"shard_map applied to {fun_name!r}")
    return GlobalArray(x, shape, sharding)


# --- jit over a mesh spanning processes ------------------------------------------------------

def _spec(dims: tuple) -> PartitionSpec:
    return PartitionSpec(*[None if not axes else axes[0] if len(axes) == 1 else axes
                           for axes in dims])


def _stand_in(x: Any) -> Any:
    """What jit traces for an array spanning processes: a NumPy array of its global shape and
    dtype that holds no data (a broadcast zero)."""
    return np.broadcast_to(np.zeros((), x.dtype), x.shape) if isinstance(x, GlobalArray) else x


def _out_targets(out_shardings: Any, out_tree: Any, n: int, fun_name: str) -> list:
    """Per output leaf, the NamedSharding out_shardings lay it out as (None: as computed)."""
    if out_shardings is None:
        return [None] * n
    specs, treedef = tree_flatten(out_shardings, is_leaf=lambda s: s is None)
    outs = tree_unflatten(out_tree, list(range(n)))
    targets = []
    for spec, sub in zip(specs, treedef.flatten_up_to(outs)):
        s = resolve_sharding(spec, f"{fun_name} (jit out_shardings)") if spec is not None \
            else None
        targets += [s] * len(tree_leaves(sub))
    return targets


def _plan(entry: Any, shardings: tuple, out_shardings: Any, fun_name: str) -> tuple:
    """(mesh, in_specs, out_specs, the shardings JAX reports for the outputs, the per-shard
    program, per output its block's layout as `split_outputs` gives it, or None, whether the
    program may run on relabelled blocks: `across_processes`' relabel) of a traced signature
    for its arguments laid out as `shardings`; out_shardings reshard the results.
    A result of shard_map split over processes that nothing else reads is returned as this
    process's block, its gather dropped (as jit returns it in one process's program); one
    that out_shardings lay out is gathered and resharded."""
    targets = _out_targets(out_shardings, entry.out_tree, len(entry.closed.out_avals),
                           fun_name)
    # (the notes and so the program are alike on every process: all drop the same gathers)
    closed, blocks = split_results(entry.closed, shardings)
    # (those a block replaced: a replicated result is its own block, and a value every
    # process holds whole after an Allreduce, laid out by the partitioner as computed)
    whole_blocks = list(blocks or [None] * len(targets))
    blocks = [b if b is not None and (b[2] is not None or v.aval.shape != b[1]) else None
              for v, b in zip(closed.jaxpr.outvars, whole_blocks)]
    if any(b is not None and t is not None for b, t in zip(blocks, targets)):
        closed, blocks = entry.closed, None  # (a block the partitioner would take as whole)
        whole_blocks = [None] * len(targets)
    elif not any(blocks):
        blocks = None
    layout = plan_layout(closed, shardings)
    out_dims = [d if t is None else tuple(t._parts(len(d)))
                for d, t in zip(layout.out_dims, targets)]
    reported = [s if t is None else t for s, t in zip(layout.outs, targets)]
    if blocks is not None:  # (a block is laid out whole on this process's shards)
        reported = [s if b is None else b[0] for s, b in zip(reported, blocks)]
    # a value every process holds whole, split over axes within the processes (an
    # Allreduce's over the process axes): the partitioner takes it as replicated; JAX reports
    # its layout
    reported = [split_reported(b[0].mesh, tuple(b[0]._parts(len(b[1]))))
                if b is not None and b[2] is None and v.aval.shape == b[1] and
                b[0].spec.mesh_axes() and t is None else s
                for s, b, v, t in zip(reported, whole_blocks, closed.jaxpr.outvars, targets)]

    def per_shard(*xs):
        outs = layout.per_shard(*xs)
        return tuple(reshard(o, d, want, layout.sizes)
                     for o, d, want in zip(outs, layout.out_dims, out_dims))

    # (no shard_map inside, whose collectives and notes know the positions, nor out_shardings
    # resharding a result)
    relabel = blocks is None and not _has_collectives(closed.jaxpr) and \
        all(tuple(d) == tuple(w) for d, w in zip(layout.out_dims, out_dims)) and \
        not reshards(closed.jaxpr, propagate_shardings(closed.jaxpr, layout.in_dims,
                                                       layout.sizes))
    return (layout.mesh, [_spec(d) for d in layout.in_dims], tuple(map(_spec, out_dims)),
            reported, per_shard, blocks, relabel)


def _has_collectives(jaxpr: Any) -> bool:
    """Whether `jaxpr` (or a body in it) holds a collective between processes."""
    todo = [jaxpr]
    while todo:
        for eqn in todo.pop().eqns:
            if eqn.primitive.name.startswith("mpi_"):
                return True
            for v in eqn.params.values():  # (bodies: jaxprs, closed ones, cond's branches)
                for body in v if isinstance(v, tuple) else (v,):
                    body = getattr(body, "jaxpr", body)
                    if hasattr(body, "eqns"):
                        todo.append(body)
    return False


def _unplaced(x: Array, donated: bool) -> Array:
    if not donated:  # (a copy, never placed: `placed` would commit it to device 0)
        return Array.from_numpy(aligned_copy(x._data), x.aval, fresh=True)
    x._data  # (Array's error if it was donated before)
    value, address, pool = x._take_buffer()
    return Array(value, x.aval, address, pool)


def jit_across_processes(jitted: Any, args: tuple, kwargs: dict) -> Any:
    """jit's call when an argument spans processes (or in_shardings lay one out over a mesh
    spanning processes): the program partitioned as in one process (runtime/sharded.py), each
    process running its block of it as shard_map does across processes (collectives over the
    process axes through MPI); results spanning processes are GlobalArrays, every result
    carrying the sharding JAX reports."""
    for x in tree_leaves((args, kwargs)):  # (JAX's error for the first donated one)
        if isinstance(x, GlobalArray):
            x.check_live()
        elif isinstance(x, Array):
            x._data
    replicated_over = _replicated_only(tree_leaves((args, kwargs)), jitted)
    if replicated_over is not None:
        return _on_replicated(jitted, args, kwargs, replicated_over)
    stand_ins = {}

    def stand_in(x):
        y = _stand_in(x)
        stand_ins[id(y)] = x
        return y

    entry, leaves = jitted._trace(*tree_map(stand_in, (args, kwargs)))
    leaves = [stand_ins.get(id(x), x) for x in leaves]
    given = entry.laid_out or (None,) * len(leaves)
    for x, s, name in zip(leaves, given, entry.arg_names):
        if isinstance(x, GlobalArray) and isinstance(s, NamedSharding) and \
                (s.mesh != x.sharding.mesh or s._parts(x.ndim) != x.sharding._parts(x.ndim)):
            raise ValueError(
                f"Sharding passed to jit does not match the sharding on the respective arg. "
                f"Got jit sharding: {s},\narg sharding: {x.sharding} for arg {name} of "
                f"{jitted.fun_name}")
    shardings = tuple(x.sharding if isinstance(x, GlobalArray) else s
                      for x, s in zip(leaves, given))
    shardings = tuple(s if isinstance(s, NamedSharding) else None for s in shardings)
    # per traced signature: its partitioning for each layout of the arguments, and the
    # compiled per-process programs by their arguments' blocks (planned and compiled once)
    store = jitted.__dict__.setdefault("_process_bodies", {})
    held = store.get(id(entry))
    if held is None or held[0] is not entry:
        held = store[id(entry)] = (entry, {}, {})
    _, plans, bodies = held
    if shardings not in plans:
        check_layout(shardings, entry.in_avals, entry.arg_names, jitted.fun_name)
        plans[shardings] = _plan(entry, shardings, jitted.out_shardings, jitted.fun_name)
    mesh, in_specs, out_specs, reported, per_shard, blocks, relabel = plans[shardings]
    flat_tree = tree_flatten(tuple(leaves))[1]
    # an array every process holds alike enters unplaced (a copy: the per-process program it
    # enters is jit's too, which would otherwise come back here; a donated one hands over
    # its buffer, as donation does in one process)
    donated = entry.donated if any(entry.donated) else ()
    given_leaves = leaves
    leaves = [_unplaced(x, donated and donated[i]) if type(x) is Array and
              x._sharding is not None else x for i, x in enumerate(leaves)]
    # (every argument split over the mesh a GlobalArray laid out so: a value every process
    # holds would be cut at the position the mesh computed on gives this process)
    relabel = relabel and all(
        isinstance(x, GlobalArray) and x.sharding.mesh == mesh or not spec.mesh_axes()
        for x, spec in zip(leaves, in_specs))
    results = across_processes(per_shard, mesh, process_axes(mesh), leaves, flat_tree,
                               in_specs, out_specs, jitted.fun_name, bodies, donated,
                               relabel=relabel)
    for x, d in zip(given_leaves, donated):  # (those the program did not write over too)
        if d and isinstance(x, (Array, GlobalArray)):
            x.delete()
    if blocks is not None:  # (each block came back as the Array it was computed in)
        results = as_global(list(results), blocks, given_leaves)
    laid, args = [], {id(x) for x in tree_leaves((args, kwargs))}
    for r, s in zip(results, reported):
        if isinstance(r, Array) and s is not None and \
                set(s.spec.mesh_axes()) & axes_across_processes(s.mesh):
            # (split over processes, computed on another mesh: it came back whole)
            laid.append(GlobalArray.from_whole(r, s))
            continue
        if s is not None and isinstance(r, Array) and id(r) in args:  # an argument: a copy
            r = r.placed(s)
        elif s is not None and isinstance(r, GlobalArray):
            r.sharding = s  # (a fresh result, laid out as computed: the same block)
        elif s is not None and isinstance(r, Array):
            r._sharding = s
        laid.append(r)
    return tree_unflatten(entry.out_tree, laid)


def _replicated_only(leaves: list, jitted: Any) -> Mesh | None:
    """The mesh spanning processes that every argument laid out is replicated over (a result
    made under set_mesh of it, say), when nothing else asks for a layout (in_shardings,
    out_shardings); None otherwise."""
    if jitted.in_shardings is not None or jitted.out_shardings is not None:
        return None
    mesh = None
    for x in leaves:
        s = getattr(x, "_sharding", None) if type(x) is Array else getattr(x, "sharding", None)
        if s is None:
            continue
        if type(x) is not Array or not isinstance(s, NamedSharding) or \
                not s.is_fully_replicated or (mesh is not None and s.mesh != mesh):
            return None
        mesh = s.mesh
    return mesh


def _on_replicated(jitted: Any, args: tuple, kwargs: dict, mesh: Mesh) -> Any:
    """jit's call on arrays every process holds whole, replicated over `mesh`: each process
    computes the whole program, as jit of values nobody laid out does (the arrays enter as
    views of their buffers, the dispatch fast path's), and its results are replicated over
    the mesh, as JAX reports them. (The partitioned per-process program took ~0.1 ms a call
    more for the same work, and a copy of each argument.)"""
    views: dict = {}

    def view(x):
        if type(x) is not Array or x._sharding is None:
            return x
        v = Array(x._data, x.aval, x._address)  # (no pool: the buffer stays x's)
        views[id(v)] = (v, x)
        return v

    like = (tree_map(view, args), tree_map(view, kwargs))
    out = jitted(*like[0], **like[1])
    for v, x in views.values():
        if v.is_deleted():  # (donated: its buffer is a result's now, never x's pool's again)
            x._take_buffer()

    def placed(r):
        if id(r) in views:  # (an argument returned as it is)
            return views[id(r)][1]
        if type(r) is Array and r._sharding is None:
            r._sharding = replicated_sharding(mesh, r.ndim)
        return r

    by_rank: dict = {}

    def mark(outs: list) -> list:
        for r in outs:
            if type(r) is Array and r._sharding is None:
                s = by_rank.get(r.ndim)
                r._sharding = s if s is not None else \
                    by_rank.setdefault(r.ndim, replicated_sharding(mesh, r.ndim))
        return outs
    # the next such call goes straight to the compiled program (dispatch's fast path, keyed
    # on these arrays' shardings), its results marked so (it flattened, made views and called
    # jit again: ~30 us a call of a 4x8 `a * 2`)
    jitted.remember_call_as(args, kwargs, like, mark)
    return tree_map(placed, out)


run_across_processes(jit_across_processes)


# --- transformations called on arrays spanning processes -------------------------------------

_TRANSFORMED: dict = {}  # (transformation key, argument structure, static leaves) -> jit
_TRANSFORMED_KEPT = 64   # (the most recently made are kept: a loop reuses one)


def _is_value(x: Any) -> bool:
    return isinstance(x, (Array, GlobalArray, Tracer, np.ndarray, np.generic, bool, int, float,
                          complex))


def _frozen(x: Any) -> Any:
    """Options as a hashable key: lists (argnums=[0, 1]) and dicts (in_axes) as tagged
    tuples."""
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_frozen(v) for v in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((k, _frozen(v)) for k, v in sorted(x.items(), key=repr))
    return x


def transformed_across_processes(key: tuple, transformed: Callable, args: tuple,
                                 kwargs: dict) -> Any:
    """A transformed function (grad(f), vmap(f), ...) called on arrays spanning processes:
    run as jit(transformed), so that each process runs its block of the partitioned program
    (jit_across_processes) and results split over processes are GlobalArrays. Leaves that
    are not arrays are closed over (static), as the transformation treats them; one jit is
    kept per transformation, argument structure and static leaves, so a training loop that
    calls `jax.grad(f)` every step compiles once."""
    leaves, tree = tree_flatten((args, kwargs))
    dynamic = tuple(_is_value(x) for x in leaves)
    static = tuple(x for x, d in zip(leaves, dynamic) if not d)
    cache_key = (_frozen(key), tree, dynamic, static)
    try:
        jitted = _TRANSFORMED.get(cache_key)
    except TypeError:  # (an option or static leaf that cannot be hashed: not kept)
        jitted, cache_key = None, None
    if jitted is None:
        def run(*values):
            given, held = iter(values), iter(static)
            a, k = tree_unflatten(tree, [next(given) if d else next(held) for d in dynamic])
            return transformed(*a, **k)

        jitted = jit(run)
        jitted.fun_name = getattr(transformed, "__name__", jitted.fun_name)
        if cache_key is not None:
            if len(_TRANSFORMED) >= _TRANSFORMED_KEPT:
                del _TRANSFORMED[next(iter(_TRANSFORMED))]
            _TRANSFORMED[cache_key] = jitted
    return jitted(*[x for x, d in zip(leaves, dynamic) if d])


run_over_processes(transformed_across_processes)
