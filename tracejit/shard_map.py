"""`jax.shard_map` on a one-device mesh (a user-facing layer over core/sharding.py): every mesh
axis has size 1, so each argument's one shard is the whole argument and `f` runs once on it.
The specs are checked as JAX checks them. Not here yet (they need the multi-device issue):
collectives over mesh axes (lax.psum & co.) and JAX's replication (check_vma) inference."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .core.pytree import prefix_errors, tree_flatten, tree_leaves
from .core.sharding import AbstractMesh, Mesh, PartitionSpec, get_mesh
from .core.trace import get_aval


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


__all__ = ["shard_map", "Infer"]
