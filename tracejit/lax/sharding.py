"""`lax.with_sharding_constraint`: a layout hint inside traced code. It sits in lax beside the
primitives but binds none: with one device the constraint checks its arguments as JAX does and
returns the value unchanged (so nothing of it appears in a jaxpr, unlike JAX's
sharding_constraint equation)."""
from __future__ import annotations

from typing import Any

from ..core.sharding import AxisType, NamedSharding, check_shardings, resolve_sharding
from ..core.pytree import tree_flatten


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """`x` (a pytree of arrays) constrained to `shardings` (a Sharding or PartitionSpec per
    leaf, or a prefix of x's structure). Specs may name only Auto axes of their mesh, as in
    JAX: an Explicit axis is changed with `jax.sharding.reshard`."""
    for s in tree_flatten(shardings, is_leaf=lambda s: s is None)[0]:
        s = resolve_sharding(s, "with_sharding_constraint")
        if isinstance(s, NamedSharding):
            types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
            if any(types[a] != AxisType.Auto for a in s.spec.mesh_axes()):
                raise ValueError(
                    f"The spec of NamedSharding passed to with_sharding_constraint can only "
                    f"refer to Auto axes of the mesh. Got spec={s.spec} and "
                    f"mesh={s.mesh.abstract_mesh}. You probably meant to use `reshard` API?")
    check_shardings(shardings, x, "with_sharding_constraint")
    return x


__all__ = ["with_sharding_constraint"]
