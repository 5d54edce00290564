"""Parallel maps on one device (a user-facing layer over core/sharding.py and jit/vmap):
`jax.shard_map` on a mesh whose axes all have size 1, so each argument's one shard is the whole
argument and `f` runs once on it (the specs are checked as JAX checks them), and `jax.pmap` over
a leading axis of size 1 (jit of vmap). Not here yet (the multi-device issue): collectives over
mesh axes (lax.psum & co.) and JAX's replication (check_vma) inference."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .core.devices import device_count
from .core.pytree import prefix_errors, tree_flatten, tree_leaves
from .core.sharding import AbstractMesh, Mesh, PartitionSpec, get_mesh
from .core.trace import get_aval
from .runtime.jit import jit
from .transforms.api import vmap


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
            aval = get_aval(leaf)
            if spec is not None and len(spec) > aval.ndim:
                raise ValueError(
                    f"shard_map applied to the function {fun_name!r} was given {what} entry "
                    f"{spec} of length {len(spec)}, too long for a value of type "
                    f"{aval.str_short()} (rank {aval.ndim}). Entries in {what} must be of "
                    f"length no greater than the number of axes in the corresponding value.")


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer,
              mesh: Mesh | AbstractMesh | None = None, axis_names: Any = frozenset(),
              check_vma: bool = True) -> Callable:
    """Map `f` over the shards of its arguments on `mesh` (the mesh in effect by default).
    One device: each shard is a whole argument, so `f` runs once; specs are checked."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f} "
                        f"of type {type(f)}.")
    fun_name = getattr(f, "__name__", type(f).__name__)

    @functools.wraps(f)
    def mapped(*args):
        m = get_mesh() if mesh is None else mesh
        if m.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
        if m.size != 1:
            raise NotImplementedError(
                f"shard_map over a mesh of {m.size} devices: tracejit runs on one device; use "
                f"a mesh whose axes all have size 1")
        if in_specs is not Infer:
            _check_specs(in_specs, args, m, "in_specs", fun_name)
        out = f(*args)
        _check_specs(out_specs, out, m, "out_specs", fun_name)
        return out
    return mapped


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = ()) -> Callable:
    """Map `fun` over a leading axis, one slice per device: with one device the axis has size
    1 and this is a compiled vmap (static_broadcasted_argnums stay static)."""
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    if devices is not None and len(devices) > device_count():
        raise ValueError(f"pmap: devices={devices} names more devices than the "
                         f"{device_count()} of this process")

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
        if size is not None and size > device_count():
            raise ValueError(f"compiling computation that requires {size} logical devices, "
                             f"but only {device_count()} devices are available (pmap maps one "
                             f"slice of the axis per device: use vmap to vectorise over it)")

        def body(*dyn_args):
            full = list(args)
            for i, a in zip(dyn, dyn_args):
                full[i] = a
            return fun(*full, **kwargs)
        return vmap(body, in_axes=tuple(axes), out_axes=out_axes, axis_name=axis_name,
                    axis_size=axis_size)(*[args[i] for i in dyn])
    return jit(mapped, static_argnums=static)


__all__ = ["shard_map", "Infer", "pmap"]
