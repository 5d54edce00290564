"""`lax.with_sharding_constraint` and `jax.sharding.reshard`'s primitive: `sharding_constraint`
says which layout over a mesh a value should have at that point of a traced program. Outside a
trace it lays the array out at once; inside jit the sharding propagation pass
(compiler/sharding.py) reshards the value there. Its value is its operand's (the identity)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.array import Array
from ..core.primitive import INDEX_MAP, Primitive
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.rules import def_linear, not_mapped
from ..core.sharding import (AxisType, NamedSharding, PartitionSpec, check_shardings,
                             resolve_sharding)
from ..core.trace import Tracer, get_aval
from ._base import as_lax_operands

sharding_constraint_p = Primitive("sharding_constraint", fusion=INDEX_MAP)
sharding_constraint_p.def_abstract_eval(lambda x, *, sharding: x)
sharding_constraint_p.def_impl(lambda x, *, sharding: x)
def_linear(sharding_constraint_p,  # the cotangent has the layout the value had, as in JAX
           lambda ct, x, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _sharding_constraint_batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is not not_mapped and isinstance(sharding, NamedSharding):
        parts = list(sharding.spec.partitions)
        parts += [None] * (x.ndim - 1 - len(parts))
        sharding = sharding.with_spec(PartitionSpec(*parts[:d], None, *parts[d:]))
    return sharding_constraint_p.bind(x, sharding=sharding), d


sharding_constraint_p.def_batch(_sharding_constraint_batch)


def constrain(x: Any, shardings: Any, where: str) -> Any:
    """Each array leaf of `x` laid out as its sharding (a prefix of x's structure of
    Shardings or PartitionSpecs of the mesh in effect): at once for an array, by a
    `sharding_constraint` equation for a traced value."""
    check_shardings(shardings, x, where)
    specs, treedef = tree_flatten(shardings, is_leaf=lambda s: s is None)
    out = []
    for spec, sub in zip(specs, treedef.flatten_up_to(x)):
        sharding = resolve_sharding(spec, where)
        leaves, tree = tree_flatten(sub)
        if sharding is not None:
            leaves = [_constrain_leaf(leaf, sharding, where) for leaf in leaves]
        out.append(tree_unflatten(tree, leaves))
    return tree_unflatten(treedef, out)


def _constrain_leaf(leaf: Any, sharding: Any, where: str) -> Any:
    (x,) = as_lax_operands(where, leaf)
    if isinstance(x, Tracer):
        return sharding_constraint_p.bind(x, sharding=sharding)
    if not isinstance(x, Array):  # a NumPy array or scalar: onto the devices, as jnp.asarray
        aval = get_aval(x)
        x = Array.from_numpy(np.asarray(x, aval.dtype), aval)
    return x.placed(sharding)


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
    return constrain(x, shardings, "with_sharding_constraint")


__all__ = ["with_sharding_constraint"]
