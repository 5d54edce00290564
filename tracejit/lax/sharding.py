"""`lax.with_sharding_constraint` and `jax.sharding.reshard`'s primitive: `sharding_constraint`
says which layout over a mesh a value should have at that point of a traced program. Outside a
trace it lays the array out at once; inside jit the sharding propagation pass
(compiler/sharding.py) reshards the value there. Its value is its operand's (the identity)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.array import Array
from ..core.batching import BatchTracer
from ..core.global_array import note_gathered
from ..core.jaxpr import Var
from ..core.jvp_trace import JVPTracer
from ..core.primitive import INDEX_MAP, Primitive
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.rules import Zero, def_linear, not_mapped
from ..core.sharding import (AxisType, NamedSharding, PartitionSpec, check_shardings,
                             resolve_sharding)
from ..core.trace import DynamicJaxprTracer, Tracer, get_aval
from ._base import as_lax_operands

sharding_constraint_p = Primitive("sharding_constraint", fusion=INDEX_MAP)
sharding_constraint_p.def_abstract_eval(lambda x, *, sharding: x)
sharding_constraint_p.def_impl(lambda x, *, sharding: x)
def_linear(sharding_constraint_p,  # the cotangent has the layout the value had, as in JAX
           lambda ct, x, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _sharding_constraint_batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    return sharding_constraint_p.bind(x, sharding=_batched(sharding, x.ndim, d)), d


sharding_constraint_p.def_batch(_sharding_constraint_batch)


# shard_map's operands under reverse-mode differentiation (shard_map.py): the identity on the
# primal, and on the tangent an equation whose transpose lays the cotangent out as in_specs
# took the operand, as JAX's transposed shard_map returns it (P('x') over the mesh: eagerly a
# placed array, under jit a value noted so for jit's reports). Only the transpose acts: the
# primal program holds no equation, and a staged one (a linearized function evaluated under
# jit) lowers to nothing.
cotangent_layout_p = Primitive("cotangent_layout", fusion=INDEX_MAP)
cotangent_layout_p.def_abstract_eval(lambda x, *, sharding: x)
cotangent_layout_p.def_impl(lambda x, *, sharding: x)


def _cotangent_layout_jvp(primals, tangents, *, sharding):
    (x,), (t,) = primals, tangents
    return x, t if type(t) is Zero else cotangent_layout_p.bind(t, sharding=sharding)


def _cotangent_layout_transpose(ct, x, *, sharding):
    if type(ct) is Array:  # (eagerly: JAX's transposed shard_map returns it laid out so)
        return [ct.placed(sharding)]
    staged = staged_layout(ct, sharding.spec)
    if staged is not None and isinstance(staged[0]._var, Var):  # (under jit: reported so)
        note_gathered(staged[0]._var, staged[0]._var, sharding.with_spec(staged[1]))
    return [ct]


cotangent_layout_p.def_jvp(_cotangent_layout_jvp)
cotangent_layout_p.def_transpose(_cotangent_layout_transpose)


def _cotangent_layout_batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    return cotangent_layout_p.bind(x, sharding=_batched(sharding, x.ndim, d)), d


cotangent_layout_p.def_batch(_cotangent_layout_batch)


def _batched(sharding: Any, ndim: int, d: int | None) -> Any:
    """`sharding` of a value widened by a batch dimension at `d` (unsplit)."""
    if d is not_mapped or not isinstance(sharding, NamedSharding):
        return sharding
    parts = list(sharding.spec.partitions)
    parts += [None] * (ndim - 1 - len(parts))
    return sharding.with_spec(PartitionSpec(*parts[:d], None, *parts[d:]))


def staged_layout(x: Any, spec: PartitionSpec) -> tuple | None:
    """The value jit stages for `x` laid out as `spec`, and that value's spec (under
    grad/jvp inside jit: the primal's; under vmap: the batched value's, its batch dimension
    unsplit), or None when `x` is not staged by jit."""
    while isinstance(x, (JVPTracer, BatchTracer)):
        if isinstance(x, JVPTracer):
            x = x.primal
            continue
        if x._trace.main.global_data is not None:
            return None  # (a named axis: shard_map's own, or vmap's with axis_name)
        if x.bdim is not not_mapped:
            entries = list(spec) + [None] * (x.ndim - len(spec))
            spec = PartitionSpec(*entries[:x.bdim], None, *entries[x.bdim:])
        x = x.val
    return (x, spec) if isinstance(x, DynamicJaxprTracer) else None


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
