"""Sharded jit in one process: when jit's arguments are laid out over a mesh (by in_shardings or
by the NamedSharding they carry), the traced program is partitioned (compiler/sharding.py's
propagation) into a per-shard program with collectives, run over every shard
(transforms/spmd.py), and its results carry the shardings JAX would report."""
from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..core.array import Array
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.dce import dce_jaxpr
from ..core.global_array import (any_noted, as_global, note_gathered, noted, splits_processes,
                                 wanted)
from ..core.jaxpr import ClosedJaxpr, Literal, Var, runs_jaxpr
from ..core.primitive import ELEMENTWISE
from ..core.pytree import tree_flatten, tree_leaves
from ..core.sharding import (UNCONSTRAINED, AxisType, Mesh, NamedSharding, PartitionSpec,
                             SingleDeviceSharding, context_sharding, explicit_type_sharding,
                             get_abstract_mesh, keeps_short_spec, mesh_context, replicated_sharding,
                             resolve_sharding)
from ..core import trace as core_trace
from ..core.trace import trace_to_jaxpr
from ..lax.shape import transpose_p
from ..compiler.sharding import (constraints, eval_partitioned, propagate_shardings,
                                 values_made)
from ..transforms.spmd import Dims, replicated, run_sharded

_MESHES = mesh_context()  # (per thread; `.stack`: the meshes set_mesh put in effect)


def given_shardings(in_shardings: Any, dyn_args: tuple, n: int, fun_name: str) -> list | None:
    """Per argument leaf (`n` of them), the Sharding jit's in_shardings give it (None: none),
    or None when in_shardings are not a prefix of the arguments (jit's check names that)."""
    given: list = [None] * n
    if in_shardings is not None:
        shardings = tuple(in_shardings) if isinstance(in_shardings, (tuple, list)) else \
            (in_shardings,) * len(dyn_args)
        k = 0
        for s, arg in zip(shardings, dyn_args):
            specs, treedef = tree_flatten(s, is_leaf=lambda x: x is None)
            try:
                subs = treedef.flatten_up_to(arg)
            except (ValueError, TypeError):  # not a prefix: jit's check names the mismatch
                return None
            for spec, sub in zip(specs, subs):
                m = len(tree_flatten(sub)[0])
                given[k:k + m] = [resolve_sharding(spec, f"{fun_name} (jit in_shardings)")] * m
                k += m
    return given


def given_devices(in_shardings: Any, dyn_args: tuple, n: int, fun_name: str) -> tuple | None:
    """Per argument leaf, the SingleDeviceSharding jit's in_shardings put it on (None: none),
    or None when in_shardings name no single device (laid-out leaves: `leaf_shardings`)."""
    given = given_shardings(in_shardings, dyn_args, n, fun_name) if in_shardings is not None \
        else None
    if given is None or not any(type(s) is SingleDeviceSharding for s in given):
        return None
    return tuple(s if type(s) is SingleDeviceSharding else None for s in given)


def leaf_shardings(in_shardings: Any, dyn_args: tuple, leaves: Sequence,
                   fun_name: str) -> tuple | None:
    """Per argument leaf, the NamedSharding it is laid out as (jit's in_shardings where given,
    else the array's own), or None when no leaf is laid out over a mesh."""
    given = given_shardings(in_shardings, dyn_args, len(leaves), fun_name)
    if given is None:
        return None
    out = []
    for s, x in zip(given, leaves):
        own = own_sharding(x)
        # an argument laid out otherwise (or committed to one device) is refused where its
        # layout differs from in_shardings' as XLA compares them, whatever the devices; else
        # it is moved to in_shardings' devices, as JAX's jit does
        if s is not None and isinstance(own, (NamedSharding, SingleDeviceSharding)) and \
                not same_layout(s, own, x.ndim):
            raise ValueError(
                f"Sharding passed to jit does not match the sharding on the respective arg. "
                f"Got jit sharding: {s},\narg sharding: {own} for arg type: "
                f"{_type(x.aval)}")
        s = own if s is None else s
        out.append(s if isinstance(s, NamedSharding) else None)
    return tuple(out) if any(s is not None for s in out) else None


def same_layout(a: Any, b: Any, ndim: int) -> bool:
    """Whether shardings `a` and `b` lay an array of rank `ndim` out alike up to which devices
    hold it (JAX's `are_hlo_shardings_equal`): the same pieces, the k-th device of each's list
    holding the same piece. Every replicated layout (one device's included) is alike."""
    ta, tb = _tiles(a, ndim), _tiles(b, ndim)
    if ta is NotImplemented or tb is NotImplemented:  # (an abstract mesh: no device list)
        return not (isinstance(a, NamedSharding) and isinstance(b, NamedSharding) and
                    _differ(a, b, ndim))
    return ta == tb


def _tiles(s: Any, ndim: int) -> Any:
    """`s`'s tile assignment as XLA's HloSharding holds it: the pieces per dimension then the
    replicas, each position the index in `s`'s device list of the device holding it; None for
    a replicated layout."""
    if isinstance(s, SingleDeviceSharding):
        return None
    if not isinstance(s.mesh, Mesh):
        return NotImplemented
    sizes = dict(s.mesh.shape_tuple)
    parts = [tuple(a for a in axes if sizes[a] > 1) for axes in s._parts(ndim)]
    if not any(parts):
        return None
    names = list(s.mesh.axis_names)
    used = [a for axes in parts for a in axes]
    order = [names.index(a) for a in used + [a for a in names if a not in used]]
    ids = np.arange(s.mesh.devices.size).reshape(s.mesh.devices.shape).transpose(order)
    tiles = ids.reshape([math.prod(sizes[a] for a in axes) for axes in parts] + [-1])
    return tiles.shape, tuple(tiles.ravel().tolist())


def own_sharding(x: Any) -> Any:
    """The sharding an argument leaf carries (None: none): an Array's placement, or the
    sharding a ShapeDtypeStruct names for AOT lowering where its mesh is this process's
    (across processes, jit's call plans the per-process program from the arrays it gets)."""
    if type(x) is ShapeDtypeStruct:
        s = x.sharding
        return s if isinstance(s, NamedSharding) and \
            not getattr(s.mesh, "is_multi_process", False) else None
    return getattr(x, "_sharding", None)


def _differ(a: NamedSharding, b: NamedSharding, ndim: int) -> bool:
    return a.mesh != b.mesh or a._parts(ndim) != b._parts(ndim)


class IndivisibleError(ValueError):
    """A sharding that splits a dimension into pieces its size is not a multiple of."""


def check_layout(shardings: Sequence, avals: Sequence, arg_names: Sequence[str],
                 fun_name: str) -> None:
    """JAX's errors for arguments laid out over different meshes, or split unevenly."""
    first = None
    for s, aval, name in zip(shardings, avals, arg_names):
        if s is None:
            continue
        s.check_compatible_aval(aval.shape)
        sizes = dict(s.mesh.shape_tuple)
        factors = [math.prod(sizes[a] for a in axes) for axes in s._parts(aval.ndim)]
        for d, (n, count) in enumerate(zip(aval.shape, factors)):
            if n % count:
                raise IndivisibleError(
                    f"Sharding {s} implies that array axis {d} is partitioned {count} times, "
                    f"but the dimension size is {n} (full shape: {aval.shape}, per-dimension "
                    f"tiling factors: {factors} should evenly divide the shape)")
        if first is None:
            first = (s, aval, name)
        elif s.mesh != first[0].mesh:
            raise ValueError(
                f"Received incompatible devices for jitted computation. Got argument "
                f"{first[2]} of {fun_name} with shape {_type(first[1])} and with device ids "
                f"{_ids(first[0])} on platform CPU and argument {name} of {fun_name} with "
                f"shape {_type(aval)} and with device ids {_ids(s)} on platform CPU")


def check_context_mesh(shardings: Sequence, avals: Sequence, arg_names: Sequence[str],
                       fun_name: str, context: Mesh | None, where: Any) -> None:
    """JAX's error for arguments laid out over a mesh (their own layout or in_shardings') of
    other devices, or of the same in another order, than the mesh `jax.set_mesh` put in
    effect (`context`; `with mesh:` and use_abstract_mesh bind no devices, as in JAX): the
    program would run on both. Checked once per traced signature (the key holds both)."""
    if context is None:
        return
    ids = [d.id for d in context.devices.flat]
    for s, aval, name in zip(shardings, avals, arg_names):
        if s is not None and isinstance(s.mesh, Mesh) and not s.mesh.is_multi_process and \
                _ids(s) != ids:
            raise incompatible_devices(argument_text(name, fun_name, aval), _ids(s),
                                       "jit's context mesh", ids, _at(where), _CONTEXT_FIX)


def check_aval_meshes(name: str, shardings: Sequence, avals: Sequence,
                      where: Callable[[], Any]) -> None:
    """JAX's `check_avals_context_mesh`: under a mesh put in effect by `jax.set_mesh` or
    `use_abstract_mesh`, an operation (primitive `name`) on an operand laid out over a mesh of
    other axis names, sizes or types than the mesh in effect (`shardings`, per operand: its
    layout or None) raises — an array's type holds its mesh, and a program is typed by one —
    unless both meshes' axes are all Auto (JAX lets Auto meshes of other names mix). A
    mesh of the same types over other devices is the device check's (check_context_mesh).
    `where()` says where the operation is (read only for an error)."""
    context = get_abstract_mesh()
    if context.empty:
        return
    for s, aval in zip(shardings, avals):
        if type(s) is not NamedSharding:
            continue
        mesh = s.mesh.abstract_mesh
        if mesh is context or mesh.empty or mesh == context or \
                _all_auto(mesh) and _all_auto(context):
            continue
        typed = ShapedArray(aval.shape, aval.dtype, sharding=explicit_type_sharding(s, aval.ndim))
        raise ValueError(
            f"For primitive {name}, context mesh {context} should match the aval mesh {mesh} "
            f"for shape {typed.str_long()}. This error occurs at source:  {where()}\n\n"
            f"Under `jax.set_mesh(mesh)` (or `use_abstract_mesh`) every operation is typed by "
            f"the mesh in effect, and an array laid out over a mesh of other axis names, sizes "
            f"or types (Explicit against Auto) is of another type. Move the array to the mesh "
            f"in effect first (`jax.device_put(x, NamedSharding(mesh, spec))`), or compute on "
            f"it outside this block.")


def _all_auto(mesh: Any) -> bool:
    return all(t is AxisType.Auto for t in mesh.axis_types)


def check_arguments_typed(entry: Any, leaves: Sequence, where: Callable[[], Any]) -> None:
    """check_aval_meshes for jit's arguments laid out over a mesh, at the first operation of
    the traced program (`entry.closed`) that reads each: JAX checks them there, so an
    argument only returned, or not read, is not checked."""
    own = [own_sharding(x) for x in leaves]
    if not any(type(s) is NamedSharding for s in own):
        return
    if entry.readers is None:
        first = {}
        for eqn in entry.closed.jaxpr.eqns:
            for v in eqn.invars:
                if isinstance(v, Var):
                    first.setdefault(v, eqn.primitive.name)
        entry.readers = tuple(first.get(v) for v in entry.closed.jaxpr.invars)
    for name, s, aval in zip(entry.readers, own, entry.in_avals):
        if name is not None and type(s) is NamedSharding:
            check_aval_meshes(name, [s], [aval], where)


def check_shard_map_devices(closed: ClosedJaxpr, shardings: Sequence, avals: Sequence,
                            arg_names: Sequence[str], fun_name: str) -> None:
    """JAX's error for a program staging shard_map over a mesh of other devices (or of the
    same devices in another order) than those the arguments are laid out over: the devices
    the program runs on are fixed by both (checked once per traced signature)."""
    first = next(((s, a, n) for s, a, n in zip(shardings, avals, arg_names) if s is not None),
                 None)
    if first is None or not isinstance(first[0].mesh, Mesh) or first[0].mesh.is_multi_process:
        return  # (a mesh spanning processes: not checked here)
    ids = _ids(first[0])
    for s in _staged_meshes(closed):
        if _ids(s) != ids:
            raise incompatible_devices(argument_text(first[2], fun_name, first[1]), ids,
                                       "shard_map inside jit", _ids(s), "")


def _staged_meshes(closed: ClosedJaxpr):
    """The layouts over meshes of this process that the shard_maps staged in `closed` give
    their operands and results."""
    if not any_noted():
        return  # (no shard_map staged in this process yet)
    for v in values_made(closed.jaxpr):
        found = noted(v)
        for s in (wanted(v), found[1] if found is not None else None):
            if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and \
                    not s.mesh.is_multi_process:
                yield s


def check_program_devices(closed: ClosedJaxpr, reads: Sequence[int], laid_out: Sequence | None,
                          given: Sequence | None, out_shardings: Any, context: Mesh | None,
                          arg_text: Callable[[int], str], where: Any) -> Any:
    """JAX's check that what a traced program's devices are fixed by — the in_shardings and
    layouts of the argument leaves it reads (`reads`; `given`: in_shardings' single devices,
    `laid_out`: the layouts over meshes), its out_shardings, and the sharding constraints and
    shard_maps staged in it — names one list of devices, in one order, and under
    `jax.set_mesh` that of the mesh in effect (`context`): JAX's
    `_get_and_check_device_assignment`. Checked once per traced signature (arguments committed
    to one device by their own placement: check_committed, per call). Returns the device a
    program bound to one device by these runs on (its results are committed there), else
    None."""
    bound = []  # (what fixes the devices, as JAX's error names it; device ids in order)
    for i in reads:
        if given is not None and given[i] is not None:
            bound.append(("ARG_SHARDING", [given[i]._device.id]))
        elif laid_out is not None and laid_out[i] is not None and _concrete(laid_out[i]):
            bound.append((arg_text(i), _ids(laid_out[i])))
    for s in tree_leaves(out_shardings):
        if type(s) is SingleDeviceSharding:
            bound.append(("explicit output sharding", [s._device.id]))
        elif isinstance(s, NamedSharding) and _concrete(s):
            bound.append(("explicit output sharding", _ids(s)))
    for s in constraints(closed.jaxpr):
        if isinstance(s, NamedSharding) and _concrete(s):
            bound.append(("sharding_constraint inside jit", _ids(s)))
    for s in _staged_meshes(closed):
        bound.append(("shard_map inside jit", _ids(s)))
    if context is not None:
        ids = [d.id for d in context.devices.flat]
        for what, other in bound:
            if other != ids:
                raise incompatible_devices("jit's context mesh", ids, what, other, _at(where),
                                           _CONTEXT_BOUND_FIX)
    elif bound:
        first, ids = bound[0]
        for what, other in bound[1:]:
            if other != ids:
                raise incompatible_devices(first, ids, what, other, _at(where), _BOUND_FIX)
    if laid_out is not None or not bound or len(bound[0][1]) != 1:
        return None
    fixed = [given[i] for i in reads if given is not None] + tree_leaves(out_shardings)
    return next((s._device for s in fixed if type(s) is SingleDeviceSharding), None)


def _concrete(s: NamedSharding) -> bool:
    """Whether `s` is laid out over devices of this process alone (not an abstract mesh, not a
    mesh spanning processes: those are checked elsewhere)."""
    return isinstance(s.mesh, Mesh) and not s.mesh.is_multi_process


def committed_device(x: Any) -> int | None:
    """The id of the device `x` is committed to (`device_put(x, device)`, or computed from
    such an array), or None: never placed, or laid out over a mesh."""
    s = getattr(x, "_sharding", None)
    return s._device.id if type(s) is SingleDeviceSharding else None


def argument_text(name: str, fun_name: str, aval: Any) -> str:
    """How JAX's errors name an argument binding a program to its devices."""
    return f"argument {name} of {fun_name} with shape {_type(aval)} and"


_COMMITTED_FIX = (
    "A jitted program runs on one set of devices: an array committed to a device "
    "(`jax.device_put(x, device)`, or computed from such an array) binds it to that device, "
    "one laid out over a mesh, a shard_map, a sharding constraint, out_shardings or the mesh "
    "`jax.set_mesh` put in effect to the mesh's devices. Put the committed array on the mesh "
    "first (`jax.device_put(x, NamedSharding(mesh, spec))`), or pass it uncommitted (an array "
    "made without a device or sharding).")
_BOUND_FIX = (
    "A jitted program runs on one list of devices, in one order: jit's in_shardings and "
    "out_shardings, the layouts of the arguments it reads, and the sharding constraints and "
    "shard_maps inside it must all name the same one. Use one mesh (or one device) for all of "
    "them, or move the arguments first (`jax.device_put`).")
_CONTEXT_BOUND_FIX = (
    "A jitted program runs on one list of devices, and under `jax.set_mesh(mesh)` (jit's "
    "context mesh) those are the mesh's, in its order: jit's in_shardings and out_shardings "
    "and the sharding constraints and shard_maps inside it must name that mesh (a bare "
    "PartitionSpec does), or the program must run outside this set_mesh.")
_CONTEXT_FIX = (
    "A jitted program runs on one set of devices, and under `jax.set_mesh(mesh)` (jit's "
    "context mesh) those are the mesh's, in its order: an array laid out over another mesh "
    "(another operation's result under another set_mesh included) binds it to that mesh's. "
    "Move the array first (`jax.device_put(x, NamedSharding(mesh, spec))`), or compute on it "
    "outside this set_mesh.")


def incompatible_devices(first: str, ids: list, other: str, other_ids: list,
                         where: str, fix: str = _COMMITTED_FIX) -> ValueError:
    """JAX's error for a jitted program bound to two sets of devices (`first` and `other`
    describe what binds it to each: "argument a of f with shape float32[8] and", "shard_map
    inside jit"), then why and what to do."""
    return ValueError(
        f"Received incompatible devices for jitted computation. Got {first} with device ids "
        f"{ids} on platform CPU and {other} with device ids {other_ids} on platform "
        f"CPU{where}\n\n{fix}")


def read_leaves(closed: ClosedJaxpr) -> tuple[int, ...]:
    """The argument leaves a program reads once dead code is dropped: only they bind it to
    their devices, as JAX prunes the others (jit's keep_unused=False) before it picks them."""
    live = dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))[1]
    return tuple(i for i, v in enumerate(closed.jaxpr.invars) if v in live)


def check_committed(closed: ClosedJaxpr, leaves: Sequence, laid_out: Sequence | None,
                    reads: Sequence[int], arg_names: Callable[[], list], fun_name: str,
                    out_shardings: Any, where: Any, given: Sequence | None = None) -> None:
    """JAX's error for arguments committed to single devices (`device_put(x, device)`) in a
    program bound to other devices: by another argument (committed elsewhere, or laid out over
    a mesh), a shard_map or sharding constraint staged in it, its out_shardings, or the mesh
    in effect (`set_mesh`). Only the leaves in `reads` count (`read_leaves`); one in_shardings
    put on a device (`given`) is moved there, as JAX moves it. (Laid-out arguments among
    themselves: check_layout and check_shard_map_devices.)"""
    shardings = [None] * len(leaves)
    for i in reads:
        s = laid_out[i] if laid_out is not None else None
        if s is None and given is not None:
            s = given[i]
        shardings[i] = s if s is not None else getattr(leaves[i], "_sharding", None)

    def inside():
        return [("shard_map inside jit", s.mesh) for s in _staged_meshes(closed)] + \
            [("sharding_constraint inside jit", s.mesh) for s in constraints(closed.jaxpr)] + \
            [("explicit output sharding", s.mesh if isinstance(s, NamedSharding) else s)
             for s in tree_leaves(out_shardings)
             if isinstance(s, (NamedSharding, SingleDeviceSharding))]
    _check_devices(shardings, lambda i: argument_text(arg_names()[i], fun_name,
                                                      core_trace.get_aval(leaves[i])),
                   inside, lambda: _at(where))


def _at(where: Any) -> str:
    return f" at {where}" if where is not None else ""


def _check_devices(shardings: Sequence, arg: Callable[[int], str],
                   inside: Callable[[], list], at: Callable[[], str]) -> None:
    """check_committed's rules, for the arguments' shardings (None: binds no device): `arg(i)`
    names argument i, `inside()` lists what else binds the program to a mesh besides the mesh
    in effect, `at()` says where the call is (each read only for an error)."""
    bound = []  # (leaf index, device ids) of each argument bound to devices, in order
    for i, s in enumerate(shardings):
        if type(s) is SingleDeviceSharding:
            bound.append((i, [s._device.id]))
        elif isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and \
                not s.mesh.is_multi_process:
            bound.append((i, _ids(s)))
    if not any(type(s) is SingleDeviceSharding for s in shardings):
        return
    (i0, ids0), single = bound[0], [i for i, ids in bound if len(ids) == 1]
    for i, ids in bound[1:]:
        if sorted(ids) != sorted(ids0) and (i in single or i0 in single):
            raise incompatible_devices(arg(i0), ids0, arg(i), ids, at())
    if i0 not in single:
        return  # (laid out over a mesh: the checks of laid-out arguments apply)
    stack = _MESHES.stack  # (get_mesh() builds an empty Mesh where none is in effect)
    context = [("jit's context mesh", stack[-1])] if stack and not stack[-1].empty else []
    for what, mesh in inside() + context:
        if type(mesh) is SingleDeviceSharding and mesh._device.id != ids0[0]:
            raise incompatible_devices(arg(i0), ids0, what, [mesh._device.id], at())
        if isinstance(mesh, Mesh) and not mesh.is_multi_process and \
                sorted(d.id for d in mesh.devices.flat) != sorted(ids0):
            raise incompatible_devices(arg(i0), ids0, what,
                                       [d.id for d in mesh.devices.flat], at())


def commit_results(outs: list, leaves: Sequence, reads: Sequence[int], context: Any) -> list:
    """jit's results where an argument it reads is committed to one device (and none is laid
    out over a mesh): committed to that device, as JAX's are — those the mesh in effect
    (`context`, whose devices check_committed found to be that one) replicated too. A fresh
    result is marked in place; one a shard_map laid out, or a committed argument returned,
    keeps its placement; an uncommitted argument returned is copied (`placed`), so that
    array stays as it is."""
    for i in reads:
        s = getattr(leaves[i], "_sharding", None)
        if type(s) is SingleDeviceSharding:
            break
    else:
        return outs
    committed = []
    for o in outs:
        if type(o) is Array and (o._sharding is None or context is not None and
                                 o._sharding == replicated_sharding(context, o.ndim)):
            if any(o is x for x in leaves):
                o = o.placed(s)
            else:
                o._sharding = s
        committed.append(o)
    return committed


def _type(aval) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _ids(s: NamedSharding) -> list:
    return [d.id for d in s.mesh.devices.flat]


def _mesh_of(shardings: Sequence, asked: list):
    """The mesh of the arguments' and the sharding constraints' layouts (one, or an error)."""
    meshes = {s.mesh for s in list(shardings) + asked if s is not None}
    if len(meshes) > 1:
        raise ValueError(f"Received incompatible devices for jitted computation: the arguments "
                         f"and the sharding constraints inside are laid out over different "
                         f"meshes {sorted(map(str, meshes))}. Use one mesh for all of them.")
    return meshes.pop()


def partition(closed: ClosedJaxpr, shardings: Sequence | None
              ) -> tuple[ClosedJaxpr, list | None]:
    """The program run shard by shard with the collectives its layout needs (one global
    program: the shards are the batch dimensions of the per-axis traces), and the sharding of
    each output (None: not laid out, as a constant output in JAX). A program with no argument
    laid out over a mesh and no sharding constraint is returned as it is, with no shardings."""
    layout = plan_layout(closed, shardings)
    if layout is None:
        return closed, None

    def sharded(*leaves):
        return run_sharded(layout.per_shard, leaves, layout.in_dims,
                           lambda: layout.out_dims, layout.sizes)

    return trace_to_jaxpr(sharded, closed.in_avals, closed.jaxpr.debug_info), layout.outs


@dataclass
class Layout:
    """A program partitioned over `mesh` (of axis sizes `sizes`): `per_shard(*pieces)` runs it
    on one shard's pieces of its inputs (laid out as `in_dims`), giving its outputs' pieces
    (laid out as `out_dims`); `outs`: the sharding JAX reports for each output."""
    mesh: Any
    sizes: dict
    in_dims: list
    out_dims: tuple
    outs: list
    per_shard: Callable


def plan_layout(closed: ClosedJaxpr, shardings: Sequence | None) -> Layout | None:
    """The partitioning of `closed` for its arguments laid out as `shardings` (per leaf, a
    NamedSharding or None), or None when nothing is laid out over a mesh and no sharding
    constraint asks for a layout."""
    asked = constraints(closed.jaxpr)
    if shardings is None and not asked:
        return None
    avals = closed.in_avals
    shardings = shardings or (None,) * len(avals)
    mesh = _mesh_of(shardings, asked)
    sizes = dict(mesh.shape_tuple)
    in_dims = [tuple(s._parts(a.ndim)) if s is not None else replicated(a.ndim)
               for s, a in zip(shardings, avals)]
    plan = propagate_shardings(closed.jaxpr, in_dims, sizes)

    def per_shard(*xs):
        return eval_partitioned(closed.jaxpr, closed.consts, plan, sizes, xs)

    # JAX reports the first argument's sharding itself for an output laid out alike; with
    # no argument laid out, a spec read off the layout of each output
    orig = next(((s, a.ndim) for s, a in zip(shardings, avals) if s is not None),
                (asked[0] if asked else None, None))
    outs = [None if isinstance(v, Literal) else _out_sharding(mesh, d, sizes, orig)
            for v, d in zip(closed.jaxpr.outvars, plan.out_dims)]
    return Layout(mesh, sizes, in_dims, plan.out_dims, outs, per_shard)


def short_spec_outputs(closed: ClosedJaxpr, short_in: Sequence[bool]) -> list[bool]:
    """Per output of `closed`, whether JAX writes its replicated spec over Explicit axes P()
    rather than an entry per dimension, given which inputs are typed P() (values nobody laid
    out, and closed-over constants): JAX's typing rules followed forward (core/sharding.py's
    keeps_short_spec); a body's outputs as its equations make them (a cond's as its first
    branch's, JAX's rule; a loop's carry and stacked outputs as its body's)."""
    jaxpr = closed.jaxpr
    short = dict(zip(jaxpr.invars, short_in))
    short.update((v, True) for v in jaxpr.constvars)

    def is_short(x: Any) -> bool:
        return isinstance(x, Literal) or not x.aval.ndim or short.get(x, False)

    for eqn in jaxpr.eqns:
        ins = [is_short(x) for x in eqn.invars]
        body = eqn.params.get("body_jaxpr") or next(
            (v if isinstance(v, ClosedJaxpr) else v[0] for v in eqn.params.values()
             if isinstance(v, ClosedJaxpr) or isinstance(v, tuple) and v and
             isinstance(v[0], ClosedJaxpr)), None)
        if body is not None:
            n = len(body.jaxpr.invars)
            outs = short_spec_outputs(body, ins[len(ins) - n:])
            outs = outs[len(outs) - len(eqn.outvars):]
        else:
            keep = all(ins) and keeps_short_spec(
                eqn.primitive, [x.aval for x in eqn.invars], [v.aval for v in eqn.outvars])
            outs = [keep] * len(eqn.outvars)
        short.update(zip(eqn.outvars, outs))
    return [is_short(v) for v in jaxpr.outvars]


def _eager_shardings(primitive: Any, params: dict, avals: Sequence, avals_out: Sequence,
                     laid: Sequence) -> list:
    """The shardings of an eager primitive's results (core/trace.py `eager_shardings`): as jit
    of that one operation reports them (JAX runs an eager operation as such a jit). Operands
    laid out over one mesh: their layouts propagated (over a mesh spanning processes too,
    where every process holds the operands whole and computes the result whole, as its
    sharding constraints and device_put lay them out). None laid out: replicated over the
    mesh set_mesh put in effect, if any. Else None each (one device). A primitive
    without a body to hold sharding constraints is not traced for it where every operand is
    whole on every device, or none is laid out: then so is every result (`_out_sharding`'s
    answer for such a layout, found without it: this runs for every eager operation). An
    operand committed to one device: the operation runs there (its results committed there
    too), or raises JAX's error where another operand or the mesh in effect binds it to
    other devices."""
    committed = next((s for s in laid if type(s) is SingleDeviceSharding), None)
    if committed is not None:
        if _MESHES.stack or any(s is not None and s is not committed and s != committed
                                for s in laid):  # (else nothing binds it elsewhere)
            _check_eager_devices(primitive, avals, laid)
        if not any(type(s) is NamedSharding for s in laid):
            return [committed] * len(avals_out)
    first, whole = None, True  # (the first operand laid out over a mesh, its rank)
    for s, a in zip(laid, avals):
        if type(s) is NamedSharding:
            if first is None:
                first = (s, a.ndim)
            elif s.mesh is not first[0].mesh and s.mesh != first[0].mesh:
                return [None] * len(avals_out)
            whole = whole and _whole(s)
    if first is not None and (_MESHES.stack or _MESHES.abstract):
        check_aval_meshes(primitive.name, laid, avals, core_trace.user_source_info)
    context = _MESHES.placing
    if first is not None and context is not None and isinstance(first[0].mesh, Mesh) and \
            _ids(first[0]) != [d.id for d in context.devices.flat]:
        k = next(k for k, s in enumerate(laid) if s is first[0])
        name = "xy"[k] if k < 2 and primitive.fusion == ELEMENTWISE else f"args[{k}]"
        check_context_mesh([first[0]], [avals[k]], [name], primitive.name, context,
                           core_trace.user_source_info())
    placed = all(s is None for s in laid)  # (an operand committed to one device: stays there)
    if not (params and runs_jaxpr(params)):
        if first is None:
            short = keeps_short_spec(primitive, avals, avals_out)
            return [context_sharding(None if short else a.ndim) if placed else None
                    for a in avals_out]
        if whole:
            s, ndim = first
            same = AxisType.Explicit not in s.mesh.axis_types
            return [s if same and a.ndim == ndim else replicated_sharding(s.mesh, a.ndim)
                    for a in avals_out]
    named = [s if type(s) is NamedSharding else None for s in laid]
    closed = trace_to_jaxpr(lambda *xs: _as_list(primitive.bind(*xs, **params)), avals)
    layout = plan_layout(closed, named if first is not None else None)
    if layout is None:
        short = short_spec_outputs(closed, [True] * len(avals))
        return [context_sharding(None if sh else a.ndim) if placed else None
                for a, sh in zip(avals_out, short)]
    return list(layout.outs)


# the jnp functions JAX runs as a jit of their own (its ufuncs, sum, mean, dot): their code
# objects -> (JAX's name of that jit where it differs, else None; JAX's names of their leading
# parameters). An eager operation refused inside one is named as JAX names the jit's argument
# ("x of multiply"), not the primitive's ("args[0] of mul").
JITTED_IN_JAX: dict = {}


def jitted_in_jax(jax_name: str | None = None, params: tuple = ("a",)) -> Callable:
    """Register a jnp function in JITTED_IN_JAX (a decorator)."""
    def register(fun: Callable) -> Callable:
        JITTED_IN_JAX[fun.__code__] = (jax_name, params)
        return fun
    return register


def _check_eager_devices(primitive: Any, avals: Sequence, laid: Sequence) -> None:
    """check_committed's rules for an eager operation (JAX runs it as a jit: of the jnp
    function it is in where JAX jits that one, else of its primitive), naming its arguments
    and, under grad/jvp/vmap of such a jnp function, wording the error as JAX's jit of it
    does (`ARG_SHARDING`: its jvp or batching rule binds the jit to the argument's device)."""
    named, traced = [], []  # (the arguments named; whether the jnp function was traced)

    def arg(i: int) -> str:
        named.append(i)
        caller = _jnp_caller(laid[i])
        if caller is None:
            return argument_text(f"args[{i}]", primitive.name, avals[i])
        traced.append(caller[2])
        return argument_text(caller[1], caller[0], avals[i])

    def at() -> str:
        return _at(core_trace.user_source_info())

    try:
        _check_devices(laid, arg, list, at)
    except ValueError:
        stack = _MESHES.stack
        if len(named) != 1 or not any(traced) or not stack or stack[-1].empty:
            raise
        ids = [laid[named[0]]._device.id]  # (refused by the mesh in effect, not an operand)
        raise incompatible_devices("jit's context mesh", [d.id for d in stack[-1].devices.flat],
                                   "ARG_SHARDING", ids, at()) from None


def _jnp_caller(sharding: Any) -> tuple | None:
    """(name, JAX's parameter name, whether transformed) of the outermost jnp function in
    JITTED_IN_JAX this operation runs in, for its parameter holding an array committed as
    `sharding` (a JVP or batch tracer: its value's); None outside any. Read off the Python
    stack, only for an error."""
    frame, found = sys._getframe(1), None
    while frame is not None:
        if frame.f_code in JITTED_IN_JAX:
            found = frame
        frame = frame.f_back
    if found is None:
        return None
    code, values = found.f_code, found.f_locals
    fun_name, params = JITTED_IN_JAX[code]
    for name, jax_name in zip(code.co_varnames, params):
        x, transformed = values.get(name), False
        while isinstance(x, core_trace.Tracer) and (hasattr(x, "primal") or hasattr(x, "val")):
            x, transformed = (x.primal if hasattr(x, "primal") else x.val), True
        if isinstance(x, Array) and x._sharding == sharding:
            return fun_name or values.get("name", code.co_name), jax_name, transformed
    return None


def _whole(s: NamedSharding) -> bool:
    """Whether `s` puts the whole array on every device (its spec names no mesh axis)."""
    parts = s.spec.partitions
    return not parts or all(p is None or p is UNCONSTRAINED for p in parts)


def _as_list(out: Any) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


core_trace.eager_shardings = _eager_shardings


def _significant(dims: Dims, sizes: dict) -> tuple:
    return tuple(tuple(a for a in axes if sizes[a] > 1) for axes in dims)


def _out_sharding(mesh, dims: Dims, sizes: dict, orig: tuple) -> NamedSharding:
    """JAX's report of an output's sharding. Over Explicit mesh axes, the layout is part of
    the output's type: a spec with an entry per dimension. Otherwise (Auto axes, GSPMD) the
    first argument's sharding itself when the layout is the same (same rank), else a spec
    read off the layout: axes of size 1 left out, trailing unsplit dimensions dropped."""
    dims = _significant(dims, sizes)
    first, ndim = orig
    explicit = AxisType.Explicit in mesh.axis_types
    if not explicit and ndim == len(dims) and \
            _significant(tuple(first._parts(ndim)), sizes) == dims:
        return first
    entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in dims]
    while entries and entries[-1] is None and not explicit:
        entries.pop()
    return NamedSharding(mesh, PartitionSpec(*entries))


def propagate_noted(closed: ClosedJaxpr) -> None:
    """jit of a program staging shard_map over a mesh of this process (its results noted with
    the out_specs' NamedSharding) and no argument laid out: each output not noted itself is
    noted with the sharding JAX's propagation reports for it — the shard_map results' layouts
    carried forward by compiler/sharding.py's rules (elementwise ops keep them, a reduction
    drops a reduced dimension's axes, a transpose permutes them) from the arguments laid out
    as the in_specs ask (`_asked_of_arguments`), P() on the mesh where none reaches. Only the
    reports change: the program still runs as traced."""
    if not any_noted():
        return  # (the common case, kept free: no shard_map staged in this process yet)
    jaxpr = closed.jaxpr
    seeds, asked = {}, {}
    for v in values_made(jaxpr):
        found, want = noted(v), wanted(v)
        if found is not None and found[0] is v and isinstance(found[1], NamedSharding):
            seeds[v] = found[1]
        if isinstance(want, NamedSharding):
            asked[v] = want
    meshes = {s.mesh for s in itertools.chain(seeds.values(), asked.values())}
    if not seeds or len(meshes) != 1 or constraints(jaxpr):
        return  # (none; several meshes; or constraints: `partition` lays the outputs out)
    (mesh,) = meshes
    if getattr(mesh, "is_multi_process", False):
        return  # (across processes a noted value is a block: its results stay as they are)
    sizes = dict(mesh.shape_tuple)
    known = {v: tuple(s._parts(v.aval.ndim)) for v, s in seeds.items()}
    in_dims = _asked_of_arguments(jaxpr, {v: tuple(s._parts(v.aval.ndim))
                                          for v, s in asked.items()})
    plan = propagate_shardings(jaxpr, in_dims, sizes, known)
    for v, dims in zip(jaxpr.outvars, plan.out_dims):
        if isinstance(v, Var) and v in seeds:
            note_gathered(v, v, _trimmed(seeds[v]))
        elif isinstance(v, Var) and noted(v) is None:
            note_gathered(v, v, _out_sharding(mesh, dims, sizes, (None, None)))


def _trimmed(s: NamedSharding) -> NamedSharding:
    """shard_map's result as jit reports it: over Auto axes, out_specs' trailing unsplit
    dimensions left out (P('x', None) reads P('x',)), as eager shard_map does not."""
    entries = list(s.spec)
    if AxisType.Explicit in s.mesh.axis_types or not entries or entries[-1] is not None:
        return s
    while entries and entries[-1] is None:
        entries.pop()
    return NamedSharding(s.mesh, PartitionSpec(*entries))


def _asked_of_arguments(jaxpr, asked: dict) -> list:
    """Per argument of `jaxpr`, the layout shard_map takes it as (`asked`: Var -> Dims of the
    values shard_map takes), carried back through elementwise operations of one shape and
    transposes (as GSPMD propagates a layout to the operands a value is computed from); else
    replicated."""
    for eqn in reversed(jaxpr.eqns):
        dims = asked.get(eqn.outvars[0]) if len(eqn.outvars) == 1 else None
        if dims is None:
            continue
        if eqn.primitive is transpose_p and isinstance(eqn.invars[0], Var):
            inverse = sorted(range(len(dims)), key=eqn.params["permutation"].__getitem__)
            asked.setdefault(eqn.invars[0], tuple(dims[k] for k in inverse))
        if eqn.primitive.fusion != ELEMENTWISE:
            continue
        for v in eqn.invars:
            if isinstance(v, Var) and v.aval.shape == eqn.outvars[0].aval.shape:
                asked.setdefault(v, dims)
    return [asked.get(v, replicated(v.aval.ndim)) for v in jaxpr.invars]


def lay_out(outs: list, placement: list, leaves: Sequence) -> list:
    """A sharded program's results marked with the shardings JAX reports. A result the call
    made is marked in place (no copy per call); one that is an argument itself (the program
    returned it), or already laid out some way, is copied (`placed`), so that array keeps
    its own sharding."""
    args = {id(x) for x in leaves}
    laid = []
    for o, s in zip(outs, placement):
        if s is not None and type(o) is Array:
            if id(o) in args or o._sharding is not None:
                o = o.placed(s)
            else:
                o._sharding = s  # a fresh result: its only owner is this call's caller
        laid.append(o)
    return laid


def device_marker(device: Any, mark: Callable | None) -> Callable[[list, Sequence], list]:
    """`mark`, then every result committed to `device` (a program in_shardings or
    out_shardings bind to one device: JAX's results live there, committed), as `lay_out`
    marks them."""
    s = SingleDeviceSharding(device)

    def committed(outs: list, leaves: Sequence) -> list:
        outs = outs if mark is None else mark(outs, leaves)
        committed = []
        for o in outs:
            if type(o) is Array:
                if o._sharding is None and not any(o is x for x in leaves):
                    o._sharding = s  # (a fresh result: its only owner is this call's caller)
                elif o._sharding is not s:
                    o = o.placed(s)
            committed.append(o)
        return committed
    return committed


def result_marker(placement: list | None, blocks: list | None, out_avals: Sequence
                  ) -> Callable[[list, Sequence], list] | None:
    """What a call does to a compiled program's results (None: nothing), decided once per
    program: `lay_out` with `placement` (the partitioned program's output shardings), then
    global_array.as_global with `blocks` (shard_map's results noted in the trace). Where
    every block is a value this process holds whole, of its output's shape, laid out as the
    placement says or with no placement, both come down to one `lay_out` with the merged
    shardings (no per-call checks of meshes, shapes and sharding equality); else both run."""
    if blocks is None:
        return None if placement is None else \
            (lambda outs, leaves: lay_out(outs, placement, leaves))
    merged = []
    for j, (aval, b) in enumerate(zip(out_avals, blocks)):
        s = placement[j] if placement is not None else None
        if b is None:
            merged.append(s)
        elif b[2] is None and aval.shape == b[1] and not splits_processes(b[0], aval.shape) \
                and (s is None or s == b[0]):
            merged.append(b[0] if s is None else s)  # (as_global keeps `s`, equal to b[0])
        else:
            return lambda outs, leaves: as_global(
                outs if placement is None else lay_out(outs, placement, leaves), blocks, leaves)
    return lambda outs, leaves: lay_out(outs, merged, leaves)
