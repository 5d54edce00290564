"""Parallel maps over devices (a user-facing layer over core/sharding.py and vmap):
`jax.shard_map` runs `f` once per device of a mesh on that device's shard of each argument, as
nested batch traces, one per mesh axis and bound to its name, so collectives over mesh axes
(lax.psum & co., lax/parallel.py) act across the shards; the results are reassembled as
out_specs says. `jax.pmap` maps a leading axis, one slice per device (a compiled vmap).
The shards are computed in this process, one after another in one vectorised program; over a
mesh spanning processes (after distributed.initialize) the axes along which the process changes
are not batched: each process computes its own shards (shard_map_processes.py).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from .core.devices import local_device_count
from .core.pytree import prefix_errors, tree_flatten, tree_leaves, tree_unflatten
from .core.array import Array
from .core.batching import BatchTracer
from .core.jvp_trace import JVPTracer
from .core.linearize import LinearizeTracer
from .core.global_array import GlobalArray, note_gathered, note_wanted
from .core.avals import ShapedArray
from .core.sharding import (UNCONSTRAINED, AbstractMesh, AxisType, Mesh, NamedSharding,
                            PartitionSpec, argument_type, explicit_type_sharding,
                            get_abstract_mesh, get_mesh)
from .core.trace import DynamicJaxprTracer, get_aval, user_source_info
from .lax.sharding import cotangent_layout_p, staged_layout
from .runtime.devices import to_array
from .runtime.jit import jit
from .runtime.sharded import argument_text, incompatible_devices
from .transforms.api import map_over_axis
from .transforms.spmd import join_shards, nest_axes, split_shards


class _InferFromArgs:
    def __repr__(self) -> str:
        return "jax.sharding.Infer"


Infer = _InferFromArgs()


def _check_specs(specs: Any, tree: Any, mesh: Mesh | AbstractMesh, what: str,
                 fun_name: str) -> None:
    """Each spec names axes of the mesh and is no longer than its values' rank; the specs
    are a tree prefix of the values."""
    for spec in tree_leaves(specs, is_leaf=lambda s: s is None):
        if spec is None:
            continue
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"shard_map {what}: expected PartitionSpec leaves (jax.P(...)), "
                            f"got {spec!r}")
        for axis in spec.mesh_axes():
            if axis not in mesh.axis_names:
                raise ValueError(
                    f"shard_map {what} argument must refer to an axis marked as manual "
                    f"({frozenset(mesh.axis_names)}), but:\n\n  {what} refers to {axis!r}\n\n"
                    f"Check the {what} values passed to shard_map.")
    for err in prefix_errors(specs, tree, is_leaf=lambda s: s is None):
        raise err(f"shard_map {what}")
    flat, treedef = tree_flatten(specs, is_leaf=lambda s: s is None)
    for spec, sub in zip(flat, treedef.flatten_up_to(tree)):
        for leaf in tree_leaves(sub):
            aval = leaf.aval if isinstance(leaf, GlobalArray) else get_aval(leaf)
            if spec is not None and len(spec) > aval.ndim:
                raise ValueError(
                    f"shard_map applied to the function {fun_name!r} was given {what} entry "
                    f"{spec} of length {len(spec)}, too long for a value of type "
                    f"{aval.str_short()} (rank {aval.ndim}). Entries in {what} must be of "
                    f"length no greater than the number of axes in the corresponding value.")


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer,
              mesh: Mesh | AbstractMesh | None = None, axis_names: Any = frozenset(),
              check_vma: bool = True) -> Callable:
    """Run `f` once per device of `mesh` (the mesh in effect by default) on that device's
    shard of each argument (in_specs: PartitionSpecs naming the mesh axes each dimension is
    split over); collectives inside act over the mesh axes; out_specs says how the per-device
    results form the global outputs."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f} "
                        f"of type {type(f)}.")
    fun_name = getattr(f, "__name__", type(f).__name__)
    bodies: dict = {}  # (across processes) the compiled per-process programs, by signature
    # with mesh=None, the abstract mesh in effect at the first call whose specs fit it: JAX
    # binds the shard_map to it (later calls run on the mesh in effect, of that shape)
    bound: list = []

    @functools.wraps(f)
    def mapped(*args):
        context = get_abstract_mesh()
        m = get_mesh() if mesh is None else mesh
        if m.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
        given = mesh if mesh is not None else bound[0] if bound else None
        if given is not None and not context.empty and given.abstract_mesh != context:
            raise _context_mesh_error(context, given, mesh is None, fun_name)
        specs = in_specs
        if specs is Infer:  # (no argument carries a sharding to infer from: replicated)
            specs = tuple(PartitionSpec() for _ in args)
        _check_specs(specs, args, m, "in_specs", fun_name)
        if mesh is None and not bound:
            bound.append(context)
        leaves, in_tree = tree_flatten(args)
        if isinstance(m, Mesh) and not m.is_multi_process:
            _check_devices(leaves, m, fun_name)
        flat_specs = _broadcast_specs(specs, args)
        if in_specs is not Infer and m.axis_types and \
                all(t is AxisType.Explicit for t in m.axis_types) and \
                (not axis_names or set(axis_names) == set(m.axis_names)):
            _check_typed_specs(leaves, flat_specs, fun_name)
        from .shard_map_processes import across_processes, process_axes
        processes = process_axes(m)
        if processes:
            return across_processes(f, m, processes, leaves, in_tree, flat_specs, out_specs,
                                    fun_name, bodies, check_vma=check_vma)
        leaves = [to_array(x) for x in leaves]
        sizes = dict(m.shape_tuple)
        if isinstance(m, Mesh):  # (staged by jit: the layout it takes, for jit's reports)
            for x, s in zip(leaves, flat_specs):
                staged = staged_layout(x, s if s is not None else PartitionSpec())
                if staged is not None:
                    note_wanted(staged[0]._var, NamedSharding(m, staged[1]))
            # (differentiated: the gradient laid out as the in_specs take the operand)
            leaves = [cotangent_layout_p.bind(x, sharding=NamedSharding(
                m, s if s is not None else PartitionSpec())) if isinstance(x, LinearizeTracer)
                else x for x, s in zip(leaves, flat_specs)]
        axes = list(m.axis_names)
        tree, out_flat_specs, results = _per_device(f, in_tree, leaves, flat_specs, out_specs,
                                                    m, axes, sizes, fun_name, vma=check_vma)
        if isinstance(m, Mesh):  # (laid out over the mesh as out_specs say)
            shardings = [NamedSharding(m, s if s is not None else PartitionSpec())
                         for s in out_flat_specs]
            results = [r.placed(s) if isinstance(r, Array) else r
                       for r, s in zip(results, shardings)]
            for r, s in zip(results, shardings):
                staged = staged_layout(r, s.spec)
                if staged is not None:  # (staged by jit: its result reports s)
                    note_gathered(staged[0]._var, staged[0]._var,
                                  NamedSharding(m, staged[1]))
        return tree_unflatten(tree, results)
    return mapped


def _check_devices(leaves: list, m: Mesh, fun_name: str) -> None:
    """JAX's error for an argument committed to a device (`device_put(x, device)`) or laid
    out over devices other than the mesh's: JAX runs shard_map as a jit, bound to both. (Under
    jit, jit checks its own arguments: runtime/sharded.py.)"""
    for i, x in enumerate(leaves):
        while isinstance(x, (JVPTracer, BatchTracer)):  # (eager grad, vmap: their values')
            x = x.primal if isinstance(x, JVPTracer) else x.val
        own = x._sharding if isinstance(x, Array) else None
        if own is None or isinstance(own, NamedSharding) and not isinstance(own.mesh, Mesh):
            continue  # (the common case, an array never placed: nothing to compare)
        ids, mesh_ids = sorted(d.id for d in own.device_set), sorted(d.id for d in m.devices.flat)
        if ids != mesh_ids:
            where = user_source_info()
            raise incompatible_devices(
                argument_text(f"args[{i}]", fun_name, get_aval(x)), ids, "shard_map inside jit",
                mesh_ids, f" at {where}" if where is not None else "")


def _check_typed_specs(leaves: list, flat_specs: list, fun_name: str) -> None:
    """JAX's error for an argument whose type lays it out otherwise than in_specs say, over a
    mesh whose axes are all Explicit: shard_map takes each argument as its type lays it out
    (a value never laid out is typed replicated, `P(None, ...)`). Checked where the type is
    known here: an array (under eager grad, its value's), or an argument of the jit being
    traced; a value computed inside a jit is not checked."""
    for x, spec in zip(leaves, flat_specs):
        if not isinstance(spec, PartitionSpec):
            continue
        while isinstance(x, JVPTracer):
            x = x.primal
        if isinstance(x, DynamicJaxprTracer):
            known, own = argument_type(x)
            if not known:
                continue
        elif isinstance(x, (Array, np.ndarray, np.generic, int, float, complex, bool)):
            own = x._sharding if isinstance(x, Array) else None
        else:
            continue
        aval = get_aval(x)
        typed = explicit_type_sharding(own, aval.ndim)
        have = tuple(typed.spec) if typed is not None else (None,) * aval.ndim
        want = tuple(_canonical(e) for e in spec) + (None,) * (aval.ndim - len(spec))
        if have == want:
            continue
        where = user_source_info()
        at = f" at {where}" if where is not None else ""
        shown = ShapedArray(aval.shape, aval.dtype, sharding=typed)
        raise ValueError(
            f"in_specs passed to shard_map: {PartitionSpec(*want)} does not match the specs of "
            f"the input: {PartitionSpec(*have)} for arg: {shown.str_long()}. `in_specs` is an "
            f"optional argument so you can omit specifying it and shard_map will infer the "
            f"in_specs from the arguments. If you want to reshard your inputs, you can use "
            f"`jax.reshard` on the arguments and then pass those args to shard_map.\n\n"
            f"The shard_map of {fun_name!r} called{at} runs over a mesh whose axes are all "
            f"Explicit, where an array's type says how it is laid out (one never laid out is "
            f"replicated) and in_specs must say the same. Lay the argument out first "
            f"(`jax.device_put(x, NamedSharding(mesh, spec))` or `jax.reshard(x, spec)`), or "
            f"give in_specs its layout.")


def _canonical(entry: Any) -> Any:
    """A spec entry as JAX compares it: a one-axis tuple as that axis, an empty one as None."""
    if isinstance(entry, tuple):
        return None if not entry else entry[0] if len(entry) == 1 else entry
    return entry


def _context_mesh_error(context: AbstractMesh, given: Mesh | AbstractMesh, first: bool,
                        fun_name: str) -> ValueError:
    """JAX's error for a shard_map called under a context mesh (set_mesh, use_abstract_mesh)
    other than its own (given, or with mesh=None the one of its first call: `first`), then
    where and what to do."""
    where = user_source_info()
    at = f" at {where}" if where is not None else ""
    if first:
        why = (f"was created with mesh=None and first called under the mesh {given}, to which "
               f"it is bound (as in JAX). Create a shard_map for each mesh (e.g. "
               f"`jax.shard_map({fun_name}, mesh=None, ...)` inside the function that runs under "
               f"this mesh), or call this one under a mesh of that shape")
    else:
        why = ("is given a mesh other than the one in effect. Pass `mesh=None` to run on the "
               "mesh in effect, or call it outside this `jax.set_mesh` / `use_abstract_mesh` "
               "block")
    return ValueError(f"The context mesh {context} should match the mesh passed to shard_map "
                      f"{given}\n\nThe shard_map of {fun_name!r} called{at} {why}.")


def _per_device(f: Callable, in_tree: Any, leaves: list, flat_specs: list, out_specs: Any,
                m: Mesh | AbstractMesh, axes: list, sizes: dict, fun_name: str,
                out_spec: Callable = lambda spec, ndim: spec, *, vma: bool = False,
                typed_as: dict | None = None) -> tuple[Any, list, list]:
    """f run on every shard of `leaves` (split as flat_specs say over the mesh axes `axes`,
    of sizes `sizes`) under transforms/spmd.py's batch traces, its results joined as
    out_specs say (`out_spec(spec, ndim)`: the spec a result is joined by, given its rank per
    shard; typed_as: the mesh axis whose name an axis of `axes` is typed by, where it is not
    one itself). Returns the output tree, out_specs per output, and the joined outputs."""
    shards = [_to_shards(x, s, axes, sizes, fun_name) for x, s in zip(leaves, flat_specs)]
    out_tree: list = []

    def per_shard(*xs):
        out = f(*tree_unflatten(in_tree, xs))
        flat, tree = tree_flatten(out)
        out_tree[:] = [tree, out]
        return flat

    in_dims = [tuple(_dim_axes(s, get_aval(x).ndim)) for x, s in zip(leaves, flat_specs)]
    typed: list = []  # (the axes each output's type varies over: within `mapped`)
    outs, mapped = nest_axes(per_shard, shards, in_dims, axes, sizes, vma=vma,
                             typed_as=typed_as, typed=typed)
    tree, sample = out_tree
    _check_specs(out_specs, sample, m, "out_specs", fun_name)
    out_flat = _broadcast_specs(out_specs, sample)
    if vma:  # (the axes spanning processes: in the types of the values, not batched)
        full = list(m.axis_names)
        named = typed_as or {}
        varying = [[named.get(a, a) for a in mp] +
                   [a for a in full if a in getattr(get_aval(o), "vma", ())]
                   for o, mp in zip(outs, typed)]
        _check_out_vma(out_specs, sample, varying, full, dict(m.shape_tuple), fun_name)
    results = [_from_shards(o, mp, out_spec(s, get_aval(o).ndim - len(mp)), axes, sizes)
               for o, mp, s in zip(outs, mapped, out_flat)]
    return tree, out_flat, results


def _check_out_vma(out_specs: Any, sample: Any, mapped: list, axes: list, sizes: dict,
                   fun_name: str) -> None:
    """JAX's error (check_vma=True) when an output's type varies over a mesh axis its
    out_specs entry leaves out; each output varies over the axes its batch traces map."""
    # (JAX 0.10 names each failing entry `out_specs`, without its path in the tree)
    msgs = []
    for spec, varying in zip(_broadcast_specs(out_specs, sample), mapped):
        named = set(_spec_axes(spec))
        unmentioned = [a for a in axes if a not in named]
        if not [a for a in unmentioned if a in varying]:
            continue
        if len(unmentioned) > 1:
            need = ",".join(a for a in axes if a in named)
            diff = ",".join(a for a in unmentioned if a in varying)
            got = ",".join(a for a in axes if a in varying)
            msgs.append(f"* out_specs is {spec} which implies that the corresponding "
                        f"output value is only varying across mesh axes {{{need}}} and not "
                        f"{{{diff}}}, but it was inferred to be possibly varying over {{{got}}}")
        else:
            msgs.append(f"* out_specs is {spec} which implies that the corresponding "
                        f"output value is replicated across mesh axis '{unmentioned[0]}', but "
                        f"could not infer replication over any axes")
    if not msgs:
        return
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    raise ValueError(
        f"shard_map applied to the function '{fun_name}' was given out_specs which require "
        f"replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {tuple(sizes[a] for a in axes)} with corresponding axis "
        f"names {tuple(axes)}.\n\n" + "\n\n".join(msgs) + "\n\n"
        "Check if these output values are meant to be replicated over those mesh axes. If "
        "not, consider revising the corresponding out_specs entries. If so, consider "
        "disabling the check by passing the check_vma=False argument to `jax.shard_map`.")


def _spec_axes(spec: PartitionSpec | None) -> list:
    return [] if spec is None else spec.mesh_axes()


def _dim_axes(spec: PartitionSpec | None, ndim: int) -> list[tuple]:
    out = []
    for d in range(ndim):
        entry = spec[d] if spec is not None and d < len(spec) else None
        out.append(() if entry is None or entry is UNCONSTRAINED else
                   entry if isinstance(entry, tuple) else (entry,))
    return out


def _broadcast_specs(specs: Any, tree: Any) -> list:
    flat, treedef = tree_flatten(specs, is_leaf=lambda s: s is None)
    return [s for s, sub in zip(flat, treedef.flatten_up_to(tree)) for _ in tree_leaves(sub)]


def _to_shards(x: Any, spec: PartitionSpec | None, axes: list, sizes: dict,
               fun_name: str) -> Any:
    """x cut into its shards (transforms/spmd.py's split_shards), once every dimension the
    spec splits is checked to divide evenly."""
    shape = get_aval(x).shape
    dims = _dim_axes(spec, len(shape))
    for d in range(len(shape)):
        _check_divides(shape, d, dims[d], sizes, fun_name)
    return split_shards(x, tuple(dims), axes, sizes)


def _check_divides(shape: tuple, d: int, names: tuple, sizes: dict, fun_name: str) -> None:
    """JAX's error unless dimension d of an argument splits evenly over the mesh axes
    `names`."""
    count = math.prod(sizes[a] for a in names)
    if shape[d] % count:
        raise ValueError(
            f"shard_map applied to the function {fun_name!r} was given argument arrays "
            f"with axis sizes that are not evenly divisible by the corresponding mesh axis "
            f"sizes: dimension {d} of an argument of shape {shape} is split over mesh axes "
            f"{names} of total size {count}")


def _from_shards(x: Any, mapped: list, spec: PartitionSpec | None, axes: list, sizes: dict
                 ) -> Any:
    """The global array from the per-shard outputs stacked over the mesh axes `mapped`
    (transforms/spmd.py's join_shards); over an axis the spec leaves out, shard 0's copy, as
    JAX's (check_vma=True has checked the type is invariant there: _check_out_vma; without it,
    JAX checks nothing)."""
    dims = _dim_axes(spec, get_aval(x).ndim - len(mapped))
    return join_shards(x, mapped, tuple(dims), axes, sizes)


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = ()) -> Callable:
    """Map `fun` over a leading axis, one slice per device: with one device the axis has size
    1 and this is a compiled vmap (static_broadcasted_argnums stay static)."""
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    if devices is not None and len(devices) > local_device_count():
        raise ValueError(f"pmap: devices={devices} names more devices than the "
                         f"{local_device_count()} of this process")

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        dyn = [i for i in range(len(args)) if i not in static]
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(dyn)
        if len(axes) != len(dyn):
            raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                             f"corresponding value, got {len(axes)} in_axes for {len(dyn)} "
                             f"positional arguments")
        sizes = {get_aval(leaf).shape[ax] for i, ax in zip(dyn, axes) if ax is not None
                 for leaf in tree_leaves(args[i]) if get_aval(leaf).ndim > ax}
        size = axis_size if not sizes else max(sizes)
        n = local_device_count()
        if size is not None and size > n:
            raise ValueError(f"compiling computation that requires {size} logical devices, "
                             f"but only {n} devices are available (pmap maps one slice of the "
                             f"axis per device of this process: use vmap to vectorise over it)")

        def body(*dyn_args):
            full = list(args)
            for i, a in zip(dyn, dyn_args):
                full[i] = a
            return fun(*full, **kwargs)
        return map_over_axis(body, tuple(axes), out_axes, axis_name, axis_size,
                             devices=True)(*[args[i] for i in dyn])
    return jit(mapped, static_argnums=static)


__all__ = ["shard_map", "Infer", "pmap", "smap"]


def _axes_to_pspec(axis_name: Any, axis: int | None) -> PartitionSpec:
    return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Any) -> Callable:
    """shard_map over the one mesh axis `axis_name` (of the mesh in effect), with vmap-style
    axes: `in_axes` (an int or None for all arguments, or one per positional argument) and
    `out_axes` say which dimension of each value is split over the axis."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                        "entries corresponding to the positional arguments passed to the "
                        f"function, but got {in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int) for a in tree_leaves(in_axes)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                        f"container with those types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")

    def to_specs(axes: Any) -> Any:
        flat, treedef = tree_flatten(axes, is_leaf=lambda a: a is None)
        return tree_unflatten(treedef, [_axes_to_pspec(axis_name, a) for a in flat])
    in_specs = Infer if in_axes is Infer else to_specs(in_axes)
    return shard_map(f, mesh=None, in_specs=in_specs, out_specs=to_specs(out_axes),
                     axis_names={axis_name}, check_vma=True)
