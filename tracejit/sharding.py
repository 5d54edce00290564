"""`jax.sharding`: meshes, partition specs and shardings (the objects live in core/sharding.py,
beside the device model, since arrays answer `.sharding`). One device: every sharding holds
the whole array, so these describe layouts and check them without moving data."""
from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any

from .core.avals import ManualAxisType
from .core.config import config
from .core.devices import Device
from .core.sharding import (  # noqa: F401
    AbstractDevice,
    AbstractMesh,
    AxisType,
    DuplicateSpecError,
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    check_shardings,
    get_abstract_mesh,
    get_mesh,
    set_mesh,
    use_abstract_mesh,
)
from .lax.sharding import constrain


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
    """The sharding that puts a whole array on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


class UnreducedKind(enum.Enum):
    """How an unreduced axis's partial values combine (JAX 0.12's enum, beside PartitionSpec's
    `unreduced`)."""
    sum = enum.auto()
    max = enum.auto()
    min = enum.auto()


class ForbiddenCollectiveError(Exception):
    """An operation needs a collective over an axis that `no_collectives` forbids (JAX's
    core.ForbiddenCollectiveError)."""


class _NoCollectives:
    """JAX's option `jax_no_collectives` (a set of mesh axis names, empty by default):
    `with no_collectives({"x"}):` forbids collectives across those Explicit axes, and `.value`
    reads it. Checked where tracejit changes a layout: `reshard` that moves an axis to another
    dimension, or drops it (JAX checks those, and also its typing rules of dot_general and
    broadcast_in_dim, which tracejit's Explicit types do not track: see README)."""

    def __call__(self, new_val: Any):
        if not isinstance(new_val, (set, frozenset)):
            raise TypeError(f"Expected axis name(s) as set or frozenset, got {new_val} of type "
                            f"{type(new_val)}")
        return config._override("jax_no_collectives", frozenset(new_val))

    @property
    def value(self) -> frozenset:
        return config.read("jax_no_collectives")


no_collectives = _NoCollectives()


def _spec_axes(parts: tuple) -> dict[str, list[int]]:
    """Mesh axis -> the dimensions it splits."""
    out: dict[str, list[int]] = {}
    for i, p in enumerate(parts):
        for name in (p if isinstance(p, tuple) else (p,)):
            if isinstance(name, str):
                out.setdefault(name, []).append(i)
    return out


def _check_no_collectives_reshard(src: Any, dst: Any) -> None:
    """JAX's _check_no_collectives_reshard: a reshard moving or dropping a forbidden axis."""
    forbidden = no_collectives.value
    if not forbidden or not isinstance(src, NamedSharding) or not isinstance(dst, NamedSharding):
        return
    src_axes, dst_axes = _spec_axes(tuple(src.spec)), _spec_axes(tuple(dst.spec))
    for r in sorted(forbidden):
        if r in src_axes and r not in dst_axes and r not in dst.spec.unreduced:
            raise ForbiddenCollectiveError(
                f"Collective across axis '{r}' is forbidden by `no_collectives`, but `reshard` "
                f"loses sharding axis '{r}' in the output without marking it unreduced.")
        if r in src_axes and r in dst_axes and src_axes[r] != dst_axes[r]:
            raise ForbiddenCollectiveError(
                f"Collective across axis '{r}' is forbidden by `no_collectives`, but `reshard` "
                f"changes the sharded dimension of axis '{r}'.")


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out as `out_shardings` says (a prefix of Shardings, or PartitionSpecs of the
    mesh in effect): at once for arrays, at that point of the program inside jit."""
    if no_collectives.value:
        from .core.pytree import tree_flatten
        from .core.trace import Tracer, get_aval
        from .lax.sharding import resolve_sharding
        specs, treedef = tree_flatten(out_shardings, is_leaf=lambda s: s is None)
        for spec, sub in zip(specs, treedef.flatten_up_to(xs)):
            dst = resolve_sharding(spec, "reshard")
            for leaf in tree_flatten(sub)[0]:
                src = get_aval(leaf).sharding if isinstance(leaf, Tracer) else \
                    getattr(leaf, "sharding", None)
                _check_no_collectives_reshard(src, dst)
    return constrain(xs, out_shardings, "reshard")


def is_single_device_sharding(sharding: Sharding) -> bool:
    """Whether `sharding` holds a whole array on one device (JAX 0.12's test, in place of
    isinstance checks against SingleDeviceSharding)."""
    return isinstance(sharding, SingleDeviceSharding)


def _retyped_mesh(axes: Any, axis_type: AxisType, name: str, shardings: Any = None
                  ) -> tuple[AbstractMesh, AbstractMesh, tuple] | None:
    """(the abstract mesh in effect, it with `axes` (all by default) of `axis_type`, the axes),
    from the mesh in effect or that of the NamedShardings in `shardings`; None with neither."""
    from .core.pytree import tree_leaves
    current = get_abstract_mesh()
    given = AbstractMesh((), ())
    for s in tree_leaves(shardings):
        if isinstance(s, NamedSharding):
            if not given.empty and given != s.mesh.abstract_mesh:
                raise ValueError(f"Shardings passed to {name} should have the same mesh. Got "
                                 f"one mesh {given} and another {s.mesh}")
            given = s.mesh.abstract_mesh
    if given.empty and current.empty:
        return None
    if not given.empty and not current.empty and given != current:
        raise ValueError(f"Context mesh {current} must match the mesh passed to shardings "
                         f"{given}. Recommended approach is to use `jax.set_mesh` context "
                         f"manager.")
    mesh = current if not current.empty else given
    axes = mesh.axis_names if axes is None else axes if isinstance(axes, tuple) else (axes,)
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    for a in axes:
        if a not in types:
            raise ValueError(f"{name}: axis {a!r} is not an axis of the mesh {mesh}")
        if types[a] == AxisType.Manual:
            raise NotImplementedError(
                "Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed. "
                "Please file a bug at https://github.com/jax-ml/jax/issues with your use case")
        types[a] = axis_type
    return mesh, mesh.update(axis_types=tuple(types[a] for a in mesh.axis_names)), axes


def _explicit_part(x: Any, mesh: AbstractMesh) -> PartitionSpec:
    """The spec of `x`'s type with only the axes that are Explicit in `mesh` (JAX's
    modify_spec_for_auto_manual)."""
    from .core.trace import typeof
    spec = typeof(x).sharding.spec
    explicit = set(mesh.explicit_axes)
    parts = [p if p is None else tuple(a for a in p if a in explicit) if isinstance(p, tuple)
             else p if p in explicit else None for p in spec]
    return PartitionSpec(*parts, unreduced=spec.unreduced & explicit,
                         reduced=spec.reduced & explicit)


def _reshard_in(xs: Any, shardings: Any, mesh: AbstractMesh, traced: str) -> Any:
    """`xs` resharded as `shardings` (a prefix; PartitionSpecs name axes of `mesh`) on entering
    a block where `mesh` is in effect. An array goes onto the concrete mesh in effect retyped as
    `mesh` (its operations there must see its types). A traced value carries no layout in its
    type here (see README), so per `traced`: "keep" leaves it to jit's partitioner, "outer"
    constrains it over the mesh in effect outside, whose devices and layout are the same
    (jit's partitioner lays a program out over one mesh)."""
    from .core.pytree import tree_flatten, tree_map
    from .core.trace import Tracer
    concrete = get_mesh()
    inner = concrete.update(axis_types=mesh.axis_types) \
        if not concrete.empty and concrete.shape_tuple == mesh.shape_tuple else mesh
    specs, treedef = tree_flatten(
        shardings, is_leaf=lambda s: s is None or isinstance(s, (PartitionSpec, Sharding)))

    def one(x: Any, s: Any) -> Any:
        if isinstance(x, Tracer):
            if traced == "keep":
                return x
            return reshard(x, s)  # (a PartitionSpec: on the mesh in effect outside)
        return reshard(x, NamedSharding(inner, s) if isinstance(s, PartitionSpec) else s)
    return treedef.unflatten([tree_map(lambda x, s=s: one(x, s), sub)
                              for s, sub in zip(specs, treedef.flatten_up_to(xs))])


def _retyped_out(out: Any, mesh: AbstractMesh) -> Any:
    """explicit_axes's results, typed by `mesh` (the mesh in effect outside, where the axes
    made Explicit inside may be Auto): each array stays laid out as it is, over the concrete
    mesh in effect retyped so; a traced value (no layout in its type here) is left as it is."""
    from .core.pytree import tree_map
    from .core.trace import Tracer
    concrete = get_mesh()
    if concrete.empty or concrete.shape_tuple != mesh.shape_tuple:
        return out
    concrete = concrete.update(axis_types=mesh.axis_types)

    def one(x: Any) -> Any:
        spec = getattr(getattr(x, "sharding", None), "spec", None)
        if isinstance(x, Tracer) or spec is None:
            return x
        return reshard(x, NamedSharding(concrete, spec))
    return tree_map(one, out)


def _sharding_argument(kwargs: dict, given: Any, name: str) -> Any:
    if given is not None:
        return given
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def auto_axes(f: Callable | None = None, /, *, axes: str | tuple[str, ...] | None = None,
              out_sharding: Any = None) -> Callable:
    """`f` run with the mesh axes `axes` (all by default) of the mesh in effect made Auto (its
    arguments' types drop them), its results then laid out as `out_sharding` says (given here
    or as a keyword argument of each call)."""
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        out_sharding_ = _sharding_argument(kwargs, out_sharding, "out_sharding")
        meshes = _retyped_mesh(axes, AxisType.Auto, "auto_axes", out_sharding_)
        if meshes is None or set(meshes[0].auto_axes) == set(meshes[2]):
            return f(*args, **kwargs)
        from .core.pytree import tree_map
        inner = meshes[1]
        with use_abstract_mesh(inner):
            specs = tree_map(lambda x: _explicit_part(x, inner), args)
            out = f(*_reshard_in(args, specs, inner, "outer"), **kwargs)
        return reshard(out, out_sharding_)
    return wrapped


def explicit_axes(f: Callable | None = None, /, *, axes: str | tuple[str, ...] | None = None,
                  in_sharding: Any = None) -> Callable:
    """`f` run with the mesh axes `axes` (all by default) of the mesh in effect made Explicit,
    its arguments laid out as `in_sharding` says (given here or as a keyword argument of each
    call); its results leave typed by the outer mesh's Explicit axes only."""
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        in_sharding_ = _sharding_argument(kwargs, in_sharding, "in_sharding")
        meshes = _retyped_mesh(axes, AxisType.Explicit, "explicit_axes")
        if meshes is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                             "enter into a mesh context when using `explicit_axes` API.")
        with use_abstract_mesh(meshes[1]):
            out = f(*_reshard_in(args, in_sharding_, meshes[1], "outer"), **kwargs)
        return _retyped_out(out, meshes[0])
    return wrapped


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh",
           "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding", "UnreducedKind",
           "auto_axes", "explicit_axes", "get_abstract_mesh", "get_mesh",
           "is_single_device_sharding", "make_single_device_sharding", "no_collectives",
           "reshard", "set_mesh", "use_abstract_mesh"]
