"""Collectives over named axes (JAX's lax.psum & co.): primitives computed across the lanes of
an axis that `vmap(axis_name=...)`, `pmap` or `shard_map` binds (core/axis_env.py).

The batch trace mapping the named axis computes a collective with its `named_batch` rule, as
ordinary array operations over the batch dimension (psum: a sum over it; all_gather: the batch
dimension made an array axis; ppermute: lanes reordered); any other batch trace treats it lane
by lane. So a collective never reaches the compiler: what is compiled is the arithmetic.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..core.avals import ShapedArray
from ..core.config import config
from ..core import trace as _trace
from ..core.axis_env import (NamedAxisPrimitive, axis_size as _bound_size, bound_names, lookup,
                             vma_frames)
from ..core.batching import in_batch_rule
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.pytree import tree_flatten, tree_map, tree_unflatten
from ..core.rules import bdim_at_front, def_linear, moveaxis, not_mapped
from ..core.trace import ensure_compile_time_eval, get_aval
from . import several_axes
from ._base import as_lax_operands
from .elementwise import convert_element_type, div, eq, mul, select_n
from .reductions import reduce_max, reduce_min, reduce_sum
from .shape import concatenate, full_like, index_in_dim, iota, reshape, transpose


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _rebind_rest(prim: NamedAxisPrimitive, x: Any, done: Any, params: dict, key: str) -> Any:
    """After reducing over axis `done`, the reduction over the other named axes (their own
    batch traces compute it)."""
    rest = tuple(n for n in params[key] if n != done)
    return prim.bind(x, **{**params, key: rest}) if rest else x


# --- axis_index_groups ---------------------------------------------------------------------
# Under pmap and shard_map a collective may act within groups of the axis's positions: each
# group (a list of positions) computes it by itself, as if the axis were just its members, in
# the order listed. JAX's vmap(axis_name=...) rejects groups, and so do we (AxisFrame.devices).

def _canonical_groups(axis_index_groups: Any, *, equal: bool = False) -> tuple | None:
    """The groups as a tuple of tuples, checked as JAX checks them: together they cover the
    positions 0..n-1 once each (and, for the collectives that route data, are equally sized)."""
    if axis_index_groups is None:
        return None
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
    if sorted(i for g in groups for i in g) != list(range(sum(map(len, groups)))):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    if equal and len({len(g) for g in groups}) > 1:
        raise ValueError("Replica groups must be equally sized")
    return groups


def _group_size(groups: tuple | None, name: Any) -> int:
    """The number of positions a collective acts over: its group's, or the axis's."""
    return _bound_size(name) if groups is None else len(groups[0])


def _grouped(rule: Any, vmap_error: str, checked_vma: bool = True) -> Any:
    """A named batch rule `rule(vals, dims, axis, **params)` made to honour
    axis_index_groups: each group's lanes, gathered in the group's order, run the collective as
    an axis of the group's size; each lane's result is put back at its position."""
    def named(vals, dims, axis, *, axis_index_groups, **params):
        if axis_index_groups is None:
            return rule(vals, dims, axis, axis_index_groups=None, **params)
        if not axis.devices:
            raise NotImplementedError(vmap_error)
        if axis.vma and not checked_vma:
            raise NotImplementedError("axis_index_groups under shard_map's check_vma=True "
                                      "(JAX implements them only without the varying-axes "
                                      "types): pass check_vma=False to shard_map")
        if sum(map(len, axis_index_groups)) != axis.size:
            raise ValueError(f"axis_index_groups must cover all indices exactly once: "
                             f"{[list(g) for g in axis_index_groups]} names "
                             f"{sum(map(len, axis_index_groups))} positions of the axis "
                             f"{axis.name!r} of size {axis.size}")
        (x,), (d,) = vals, dims
        front = bdim_at_front(x, d, axis.size)
        lanes: list = [None] * axis.size
        for group in axis_index_groups:
            members = concatenate([index_in_dim(front, m, 0) for m in group], 0)
            out, od = rule([members], [0], axis._replace(size=len(group)),
                           axis_index_groups=None, **params)
            out = bdim_at_front(out, od, len(group))
            for i, m in enumerate(group):
                lanes[m] = index_in_dim(out, i, 0)
        return concatenate(lanes, 0), 0
    return named


def _over_leaves(name: str, x: Any, axis_name: Any, bind_leaf: Any,
                 axis_index_groups: Any = None, equal: bool = True) -> Any:
    """A collective of each leaf of the pytree x: bind_leaf(leaf, names, their size, groups),
    the size being the product of the named axes' or, when axis_index_groups are given, the
    (first) group's. Each leaf is first made varying over the axes (JAX's implicit pvary)."""
    groups = _canonical_groups(axis_index_groups, equal=equal)
    names = _names(axis_name)
    n = math.prod(lookup(a).size for a in names) if groups is None else len(groups[0])
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [
        bind_leaf(_vary_over(as_lax_operands(name, leaf)[0], names), names, n, groups)
        for leaf in leaves])


# --- psum / pmax / pmin --------------------------------------------------------------------

def _reduction(name: str, reduce: Any, unmapped: Any, unmapped_np: Any) -> NamedAxisPrimitive:
    """`unmapped(x, n)`: the reduction of a value every lane holds (`unmapped_np` on NumPy)."""
    p = NamedAxisPrimitive(name, lambda params: params["axes"])
    p.def_abstract_eval(lambda x, *, axes, axis_index_groups: x.update(vma=x.vma - set(axes)))
    p.def_impl(lambda x, *, axes, axis_index_groups: unmapped_np(x, math.prod(
        _bound_size(n) for n in axes)))

    def named(vals, dims, axis, *, axes, axis_index_groups):
        (x,), (d,) = vals, dims
        if d is not not_mapped and get_aval(x).dtype == np.bool_ and reduce is reduce_sum:
            x = convert_element_type(x, np.int32)  # (a count of True lanes, as JAX)
        out = unmapped(x, axis.size) if d is not_mapped else reduce(x, (d,))
        params = dict(axes=axes, axis_index_groups=axis_index_groups)
        return _rebind_rest(p, out, axis.name, params, "axes"), not_mapped
    p.def_named_batch(_grouped(named, "axis_index_groups not supported in vmap collectives. "
                                      "Please open a feature request!", name != "psum"))

    def lanewise(vals, dims, **params):  # a reduction over another trace's axis
        (x,), (d,) = vals, dims
        return p.bind(x, **params), d
    p.def_batch(lanewise)
    return p


def _times(x: Any, n: int) -> Any:
    x = x if hasattr(x, "dtype") else np.asarray(x)
    if np.dtype(x.dtype) == np.bool_:  # (a count of True lanes, as JAX)
        x = convert_element_type(x, np.int32)
    return mul(x, full_like(x, n))


def _times_np(x: np.ndarray, n: int) -> np.ndarray:
    x = x.astype(np.int32) if x.dtype == np.bool_ else x
    return (x * np.asarray(n, x.dtype)).astype(x.dtype)


def _not_differentiable(name: str):
    def jvp(primals, tangents, **params):  # JAX defines none either
        raise NotImplementedError(f"Differentiation rule for '{name}' not implemented")
    return jvp


psum_p = _reduction("psum", reduce_sum, _times, _times_np)
pmax_p = _reduction("pmax", reduce_max, lambda x, n: x, lambda x, n: x)
pmin_p = _reduction("pmin", reduce_min, lambda x, n: x, lambda x, n: x)


def _psum_transpose(ct, x, *, axes, axis_index_groups):
    """The cotangent of a sum over lanes reaches every lane: under shard_map's check_vma=True
    the (invariant) cotangent is made varying again, pvary, over the axes x varied over; over
    those it did not (the sum was x times the axis size) it is summed, times the size, as
    JAX's pvary-then-psum transposes; otherwise (pmap, vmap) JAX transposes psum to the psum
    of the cotangents."""
    if all(_is_vma_axis(n) for n in axes):
        vma = getattr(x.aval, "vma", frozenset())
        invariant = tuple(n for n in axes if n not in vma)
        varying = tuple(n for n in axes if n in vma)
        if invariant:
            ct = psum_p.bind(ct, axes=invariant, axis_index_groups=None)
        return [pvary_p.bind(ct, axes=varying) if varying else ct]
    return [psum_p.bind(ct, axes=axes, axis_index_groups=axis_index_groups)]


def_linear(psum_p, _psum_transpose)
pmax_p.def_jvp(_not_differentiable("pmax"))
pmin_p.def_jvp(_not_differentiable("pmin"))


def _each_leaf(name: str, prim: NamedAxisPrimitive, x: Any, axis_name: Any,
               axis_index_groups: Any) -> Any:
    groups = _canonical_groups(axis_index_groups)
    leaves, tree = tree_flatten(x)
    names = _names(axis_name)
    for n in names:
        lookup(n)
    if prim is psum_p:
        for leaf in leaves:
            _one_state(leaf, names, "jax.lax.psum")
    if groups is not None and len(names) != 1:  # (groups of positions over the product)
        return tree_unflatten(tree, [several_axes.in_groups(
            prim, _vary_over(as_lax_operands(name, leaf)[0], names), names, groups,
            axes=(names,)) for leaf in leaves])
    # (no implicit pvary of an operand invariant over the axes, as JAX's: the named rules take
    # it unbatched — psum is x times the axis size, pmax/pmin x — with no lanes materialised
    # and summed, and across processes no MPI call)
    out = [prim.bind(as_lax_operands(name, leaf)[0], axes=names, axis_index_groups=groups)
           for leaf in leaves]
    return tree_unflatten(tree, out)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of `x` (a pytree) over the lanes of the named axis (or axes)."""
    return _each_leaf("psum", psum_p, x, axis_name, axis_index_groups)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The maximum of `x` (a pytree) over the lanes of the named axis (or axes)."""
    return _each_leaf("pmax", pmax_p, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The minimum of `x` (a pytree) over the lanes of the named axis (or axes)."""
    return _each_leaf("pmin", pmin_p, x, axis_name, axis_index_groups)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean of `x` (a pytree) over the lanes of the named axis (or axes)."""
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    groups = _canonical_groups(axis_index_groups)
    n = axis_size(axis_name) if groups is None else len(groups[0])  # (JAX: the first group's)
    leaves, tree = tree_flatten(total)
    return tree_unflatten(tree, [div(t, full_like(t, n)) for t in leaves])


def axis_size(axis_name: Any) -> int:
    """The number of lanes of the named axis (the product over several names)."""
    return math.prod(_bound_size(n) for n in _names(axis_name))


# --- axis_index ----------------------------------------------------------------------------

axis_index_p = NamedAxisPrimitive("axis_index", lambda params: (params["axis_name"],))
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray(
    (), np.dtype(np.int32), vma=frozenset({axis_name}) if _is_vma_axis(axis_name) else ()))


def _axis_index_impl(*, axis_name):
    raise NameError(f"axis_index({axis_name!r}) outside a transformation mapping the axis: "
                    f"the axis is bound only for staging (make_jaxpr's axis_env)")


def _axis_index_named(vals, dims, axis, *, axis_name):
    # the lanes' positions are a constant: built at once, not staged into a jit being traced
    # above the batch trace that maps the axis (the value belongs to that lower trace)
    with ensure_compile_time_eval():
        return iota(np.int32, axis.size), 0


axis_index_p.def_impl(_axis_index_impl)
axis_index_p.def_named_batch(_axis_index_named)
axis_index_p.def_not_differentiable()
axis_index_p.def_batch(lambda vals, dims, **params: (axis_index_p.bind(**params), not_mapped))


def axis_index(axis_name: Any) -> Any:
    """This lane's position along the named axis (int32); over several names, the position
    in their product, the first name major."""
    names = _names(axis_name)
    index = None
    for n in names:
        i = axis_index_p.bind(axis_name=n)
        index = i if index is None else index * _bound_size(n) + i
    return index


# --- pvary / pcast: varying manual axes (shard_map's check_vma=True) ------------------------
# A value's type lists the mesh axes it varies over (ShapedArray.vma); under shard_map's batch
# traces that is the axes whose trace maps it (core/batching.py). pvary makes an invariant value
# varying (its lanes materialised); its transpose sums over the axis, as psum's is pvary.

def _is_vma_axis(name: Any) -> bool:
    return any(f.name == name for f in vma_frames())


def _one_state(x: Any, names: Sequence, api: str) -> None:
    """JAX's error when `x` varies over some of the check_vma axes `names` and not others
    (psum and psum_scatter take either kind, not a mix)."""
    vma = getattr(get_aval(x), "vma", frozenset())
    states = {"varying" if n in vma else "invarying" for n in names if _is_vma_axis(n)}
    if len(states) > 1:
        raise ValueError(f"{api} can only accept axis_name which corresponds to one of varying, "
                         f"unreduced, reduced or invarying state of the input. Got input type: "
                         f"{get_aval(x).str_long()}, axes: {tuple(names)} and input state: "
                         f"{states}")


def _vary_over(x: Any, names: Sequence) -> Any:
    """x made varying over those of `names` that are check_vma axes it does not vary over yet
    (JAX's implicit pvary before a collective)."""
    frames = vma_frames()
    if not frames:
        return x
    vma = getattr(get_aval(x), "vma", frozenset())
    missing = tuple(f.name for f in frames if f.name in names and f.name not in vma)
    return pvary_p.bind(x, axes=missing) if missing else x


pvary_p = NamedAxisPrimitive("pvary", lambda params: params["axes"])
pvary_p.def_abstract_eval(lambda x, *, axes: x.update(vma=x.vma | set(axes)))
pvary_p.def_impl(lambda x, *, axes: x)  # (the type changes; every lane holds this x)


def _pvary_named(vals, dims, axis, *, axes):
    (x,), (d,) = vals, dims
    out = bdim_at_front(x, d, axis.size)  # the lanes made real: the batch dim is the type
    return _rebind_rest(pvary_p, out, axis.name, dict(axes=axes), "axes"), 0


pvary_p.def_named_batch(_pvary_named)
pvary_p.def_batch(lambda vals, dims, **params: (pvary_p.bind(vals[0], **params), dims[0]))
def_linear(pvary_p, lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes, axis_index_groups=None)])


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Change how `x` (a pytree) is typed over the manual mesh axes `axis_name`: to='varying'
    makes an invariant value varying (a no-op on its value; its transpose is a psum). Outside
    check_vma=True it returns x, as JAX's."""
    if to not in ("varying", "reduced", "unreduced"):
        raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                         "{'varying', 'reduced', 'unreduced'}")
    if to != "varying":
        raise NotImplementedError(f"pcast(to={to!r}): tracejit has no reduced/unreduced types")
    names = _names(axis_name)
    frames = [lookup(n) for n in names]
    if not names or not all(f.vma for f in frames):
        return x
    leaves, tree = tree_flatten(x)
    out = []
    for leaf in leaves:
        leaf = as_lax_operands("pcast", leaf)[0]
        if getattr(get_aval(leaf), "vma", frozenset()) & set(names):
            raise ValueError("Unsupported pcast from=varying, to='varying'")
        out.append(pvary_p.bind(leaf, axes=tuple(f.name for f in vma_frames()
                                                 if f.name in names)))
    return tree_unflatten(tree, out)


def _has_jaxpr(params: dict) -> bool:
    return any(isinstance(v, (ClosedJaxpr, Jaxpr)) or callable(v) or
               (isinstance(v, tuple) and v and isinstance(v[0], (ClosedJaxpr, Jaxpr)))
               for v in params.values())


def _insert_pvary(primitive: Any, args: tuple, params: dict) -> tuple:
    """JAX's implicit pvary: under check_vma=True, operands of one operation that vary over
    different manual axes are all made to vary over the union (not control flow's, jit's or
    custom rules' operands: their bodies see each operand's own type)."""
    if not vma_frames() or primitive.own_vma or in_batch_rule() or _has_jaxpr(params):
        return args
    vmas = [getattr(get_aval(a), "vma", frozenset()) for a in args]
    union = frozenset().union(*vmas)
    if all(v == union for v in vmas):
        return args
    if not config.jax_auto_pcast:  # (JAX's option: no implicit pvary, the mismatch refused)
        raise ValueError(f"Primitive {primitive.name} requires varying manual axes to match, but "
                         f"got {vmas}. Please open an issue at https://github.com/jax-ml/jax/"
                         "issues and as a temporary workaround pass the check_vma=False argument "
                         "to `jax.shard_map`")
    order = [f.name for f in vma_frames()]
    return tuple(a if v == union else
                 pvary_p.bind(a, axes=tuple(n for n in order if n in union - v))
                 for a, v in zip(args, vmas))


_trace.insert_pvary = _insert_pvary


# --- all_gather / psum_scatter -------------------------------------------------------------

def _gathered_shape(shape: tuple, n: int, dim: int, tiled: bool) -> tuple:
    if tiled:
        return shape[:dim] + (n * shape[dim],) + shape[dim + 1:]
    return shape[:dim] + (n,) + shape[dim:]


def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
    return x.update(shape=_gathered_shape(x.shape, axis_size, all_gather_dimension, tiled))


def _stacked_to(front: Any, dim: int, tiled: bool) -> Any:
    """Lanes first (n, *s) -> the gathered array: stacked at `dim`, or concatenated there."""
    out = moveaxis(front, 0, dim)
    if not tiled:
        return out
    shape = get_aval(out).shape
    return reshape(out, shape[:dim] + (shape[dim] * shape[dim + 1],) + shape[dim + 2:])


all_gather_p = NamedAxisPrimitive("all_gather", lambda params: params["axis_name"])
all_gather_p.def_abstract_eval(_all_gather_abstract)


def _all_gather_impl(x, *, all_gather_dimension, axis_size, tiled, **_):
    stacked = np.stack([x] * axis_size)
    return np.asarray(_stacked_to_np(stacked, all_gather_dimension, tiled))


def _stacked_to_np(front: np.ndarray, dim: int, tiled: bool) -> np.ndarray:
    out = np.moveaxis(front, 0, dim)
    if not tiled:
        return out
    return out.reshape(out.shape[:dim] + (-1,) + out.shape[dim + 2:])


all_gather_p.def_impl(_all_gather_impl)


def _all_gather_named(vals, dims, axis, *, all_gather_dimension, tiled, **_):
    (x,), (d,) = vals, dims
    out = _stacked_to(bdim_at_front(x, d, axis.size), all_gather_dimension, tiled)
    if axis.vma:  # (under check_vma the gathered value is typed varying, as JAX's all_gather)
        return bdim_at_front(out, not_mapped, axis.size), 0
    return out, not_mapped


all_gather_p.def_named_batch(_grouped(_all_gather_named,
                                      "axis_index_groups not supported in vmap"))


def _lanes_first(prim: NamedAxisPrimitive, shifted: tuple):
    """The batch rule over another trace's axis: lanes first, the axis params shifted by one."""
    def rule(vals, dims, **params):
        (x,), (d,) = vals, dims
        x = moveaxis(x, d, 0)
        return prim.bind(x, **{**params, **{k: params[k] + 1 for k in shifted}}), 0
    return rule


all_gather_p.def_batch(_lanes_first(all_gather_p, ("all_gather_dimension",)))


def _scattered_shape(shape: tuple, n: int, dim: int, tiled: bool) -> tuple:
    if tiled:
        if shape[dim] % n:  # (JAX's words; n: the axis's or the group's size)
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size "
                             f"{shape[dim]} must be divisible by shard_count {n}")
        return shape[:dim] + (shape[dim] // n,) + shape[dim + 1:]
    if shape[dim] != n:
        raise ValueError(f"reduce_scatter operand scatter dimension size {shape[dim]} must "
                         f"match shard count {n}")
    return shape[:dim] + shape[dim + 1:]


reduce_scatter_p = NamedAxisPrimitive("reduce_scatter", lambda params: params["axis_name"])
reduce_scatter_p.def_abstract_eval(
    lambda x, *, scatter_dimension, axis_name, axis_index_groups, axis_size, tiled: x.update(
        shape=_scattered_shape(x.shape, axis_size, scatter_dimension, tiled)))


def _reduce_scatter_impl(x, *, axis_name, **_):
    raise NameError(f"psum_scatter over {axis_name!r} outside a transformation mapping the "
                    f"axis: each lane's share is defined only when the lanes exist")


reduce_scatter_p.def_impl(_reduce_scatter_impl)


def _reduce_scatter_named(vals, dims, axis, *, scatter_dimension, tiled, **_):
    (x,), (d,) = vals, dims
    total = _times(x, axis.size) if d is not_mapped else reduce_sum(x, (d,))
    shape, sd, n = get_aval(total).shape, scatter_dimension, axis.size
    if tiled:
        total = reshape(total, shape[:sd] + (n, shape[sd] // n) + shape[sd + 1:])
    return moveaxis(total, sd, 0), 0


reduce_scatter_p.def_named_batch(_grouped(_reduce_scatter_named,
                                          "axis_index_groups not supported in vmap"))
reduce_scatter_p.def_batch(_lanes_first(reduce_scatter_p, ("scatter_dimension",)))


def_linear(all_gather_p, lambda ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
           axis_size, tiled: [reduce_scatter_p.bind(
               ct, scatter_dimension=all_gather_dimension, axis_name=axis_name,
               axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])
def_linear(reduce_scatter_p, lambda ct, x, *, scatter_dimension, axis_name, axis_index_groups,
           axis_size, tiled: [all_gather_p.bind(
               ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
               axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False, to: str = "varying") -> Any:
    """Every position's `x` (a pytree), stacked along a new axis `axis` (concatenated along it
    with tiled=True), on every position; over several axes, in the order axis_index numbers
    them."""
    if to not in ("varying", "invarying", "reduced"):
        raise ValueError("Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                         "values are: {'invarying', 'reduced', 'varying'}")
    if to == "reduced":
        raise NotImplementedError("all_gather(to='reduced'): tracejit has no reduced types; "
                                  "use to='varying' or to='invarying'")

    if not _names(axis_name):  # (no axes: x itself, as JAX's)
        return x

    def bind(leaf, names, n, groups):
        dim = _checked_axis("all_gather", axis, get_aval(leaf).ndim + (not tiled))
        if to == "invarying" and all(_is_vma_axis(a) for a in names):
            return _all_gather_invariant(leaf, names, n, groups, dim, tiled)
        if len(names) == 1:
            return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                     axis_index_groups=groups, axis_size=n, tiled=bool(tiled))
        if groups is not None:
            return several_axes.in_groups(all_gather_p, leaf, names, groups,
                                          all_gather_dimension=dim, tiled=bool(tiled))
        return several_axes.gather(leaf, names, dim, bool(tiled))
    return _over_leaves("all_gather", x, axis_name, bind, axis_index_groups)


def _all_gather_invariant(x: Any, names: tuple, n: int, groups: Any, dim: int, tiled: bool):
    """all_gather(to='invarying'): each position's x placed at its place in zeros, psummed,
    so the result is typed invariant and its transpose is each position's slice of the
    cotangent."""
    if groups is not None:
        raise NotImplementedError("all_gather(to='invarying') with axis_index_groups")
    from .indexing import dynamic_update_index_in_dim, dynamic_update_slice_in_dim
    shape = get_aval(x).shape
    here = axis_index(names)
    zeros = full_like(x, 0, shape=_gathered_shape(shape, n, dim, tiled))
    if tiled:
        placed = dynamic_update_slice_in_dim(zeros, x, here * shape[dim], dim)
    else:
        placed = dynamic_update_index_in_dim(zeros, x, here, dim)
    return psum_p.bind(placed, axes=names, axis_index_groups=None)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """The psum of `x` (a pytree), split along `scatter_dimension`: position i keeps part i
    (over several axes, positions numbered as axis_index numbers them)."""
    names = _names(axis_name)
    if not names:  # (no axes: x itself, as JAX's)
        return x
    for leaf in tree_flatten(x)[0]:  # (before the implicit pvary, as JAX checks it)
        _one_state(as_lax_operands("psum_scatter", leaf)[0], names, "jax.lax.psum_scatter")

    def bind(leaf, names, n, groups):
        dim = _checked_axis("psum_scatter", scatter_dimension, get_aval(leaf).ndim)
        try:
            _scattered_shape(get_aval(leaf).shape, n, dim, tiled)
        except ValueError as e:  # (JAX's error before binding, then where and what to do)
            raise _shape_error("psum_scatter", str(e), f"its dimension {dim} (of "
                               f"{get_aval(leaf).str_short()}) must " +
                               (f"be a multiple of {n}" if tiled else f"be {n}, or pass "
                                f"tiled=True to cut it in {n} parts")) from None
        _canonical_groups(groups, equal=True)  # (then, groups of unequal sizes)
        if len(names) == 1:
            return reduce_scatter_p.bind(leaf, scatter_dimension=dim, axis_name=names,
                                         axis_index_groups=groups, axis_size=n,
                                         tiled=bool(tiled))
        if groups is not None:
            return several_axes.in_groups(reduce_scatter_p, leaf, names, groups,
                                          scatter_dimension=dim, tiled=bool(tiled))
        return several_axes.scatter(leaf, names, dim, bool(tiled))
    return _over_leaves("psum_scatter", x, axis_name, bind, axis_index_groups, equal=False)


def _shape_error(api: str, words: str, fix: str) -> ValueError:
    """JAX's ValueError (`words`) for an operand whose shape does not fit the axes, then the
    user's line and what to do."""
    where = _trace.user_source_info()
    at = f" at {where}" if where is not None else ""
    return ValueError(f"{words}\n\nThe lax.{api}{at}: {fix}.")


def _checked_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of bounds for rank {ndim}")
    return axis % max(ndim, 1)


# --- ppermute / pbroadcast -----------------------------------------------------------------

ppermute_p = NamedAxisPrimitive("ppermute", lambda params: params["axis_name"])
ppermute_p.def_abstract_eval(lambda x, *, axis_name, perm: x)


def _ppermute_impl(x, *, axis_name, perm):
    raise NameError(f"ppermute over {axis_name!r} outside a transformation mapping the axis")


ppermute_p.def_impl(_ppermute_impl)


def _ppermute_named(vals, dims, axis, *, axis_name, perm):
    (x,), (d,) = vals, dims
    front = bdim_at_front(x, d, axis.size)
    source = {dst: src for src, dst in perm}
    lanes = [index_in_dim(front, source[dst], 0) if dst in source else
             full_like(index_in_dim(front, 0, 0), 0) for dst in range(axis.size)]
    return concatenate(lanes, 0), 0


ppermute_p.def_named_batch(_ppermute_named)
ppermute_p.def_batch(lambda vals, dims, **params: (ppermute_p.bind(vals[0], **params), dims[0]))
def_linear(ppermute_p, lambda ct, x, *, axis_name, perm: [ppermute_p.bind(
    ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Send each lane's `x` (a pytree) to another: `perm` lists (source, destination) pairs;
    a lane no pair sends to receives zeros."""
    names = _names(axis_name)
    name = names[0] if len(names) == 1 else names
    n = math.prod(_bound_size(a) for a in names)
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    for s, d in perm:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute permutation {perm} names a lane outside the axis "
                             f"{name!r} of size {n}")
    if len(names) > 1:
        return _ppermute_several(x, names, perm)
    return _over_leaves("ppermute", x, name, lambda leaf, names, n, _: ppermute_p.bind(
        leaf, axis_name=names, perm=perm))


def _ppermute_several(x: Any, names: tuple, perm: tuple) -> Any:
    """ppermute over several axes: positions numbered over their product in the order the
    axes are bound (the mesh's, whatever the tuple's order, as JAX 0.10 numbers them); each
    position gathers every position's x and keeps its source's, zeros where none sends to it
    (one all_gather per axis: n times the operand's memory, where JAX sends the one piece)."""
    from .indexing import dynamic_index_in_dim
    bound = bound_names()
    order = sorted(names, key=bound.index)
    n = math.prod(_bound_size(a) for a in order)
    source = np.zeros(n, np.int32)
    sent = np.zeros(n, np.bool_)
    for s, d in perm:
        source[d], sent[d] = s, True
    here = axis_index(tuple(order))

    def one(leaf):
        gathered = leaf
        for a in reversed(order):  # (the outermost axis ends up major)
            gathered = all_gather(gathered, a)
        gathered = reshape(gathered, (n,) + get_aval(leaf).shape)
        mine = dynamic_index_in_dim(gathered, dynamic_index_in_dim(source, here, 0, False), 0,
                                    False)
        return select_n(dynamic_index_in_dim(sent, here, 0, False), full_like(mine, 0), mine)
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [one(as_lax_operands("ppermute", leaf)[0]) for leaf in leaves])


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Lane i receives the `x` of lane perm[i] (perm a permutation of the lanes)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


pbroadcast_p = NamedAxisPrimitive("pbroadcast", lambda params: (params["axis_name"],))
pbroadcast_p.def_abstract_eval(lambda x, *, axis_name, source: x)
pbroadcast_p.def_impl(lambda x, *, axis_name, source: x)  # (every lane holds this x)


def _pbroadcast_named(vals, dims, axis, *, axis_name, source):
    (x,), (d,) = vals, dims
    if d is not_mapped:  # (every lane holds x already)
        return x, not_mapped
    out = index_in_dim(x, source, d, keepdims=False)
    if axis.vma:  # (typed varying, as JAX's: an invariant result would be pvaried where it
        # meets a varying value, the transpose of which psums the cotangent a second time)
        return bdim_at_front(out, not_mapped, axis.size), 0
    return out, not_mapped


def _pbroadcast_transpose(ct, x, *, axis_name, source):
    total = psum_p.bind(ct, axes=(axis_name,), axis_index_groups=None)
    here = axis_index_p.bind(axis_name=axis_name)
    is_source = convert_element_type(eq(here, full_like(here, source)), np.int32)
    return [select_n(is_source, full_like(total, 0), total)]


pbroadcast_p.def_named_batch(_pbroadcast_named)
pbroadcast_p.def_batch(lambda vals, dims, **params: (pbroadcast_p.bind(vals[0], **params),
                                                     dims[0]))
def_linear(pbroadcast_p, _pbroadcast_transpose)


def _varying_operand(x: Any, names: tuple) -> Any:
    """x, checked as JAX checks pbroadcast's operand: unlike the other collectives it gets no
    implicit pvary, so under check_vma a value invariant over one of the axes (the same on
    every device along it, which a broadcast would return unchanged) is JAX's ValueError
    (which names ppermute, whose type rule it shares); then where it is and what to do."""
    vma = getattr(get_aval(x), "vma", frozenset())
    invariant = [a for a in names if _is_vma_axis(a) and a not in vma]
    if invariant:
        where = _trace.user_source_info()
        at = f" at {where}" if where is not None else ""
        over = f"the mesh axis {invariant[0]!r}" if len(invariant) == 1 else \
            f"the mesh axes {tuple(invariant)}"
        cast = invariant[0] if len(invariant) == 1 else tuple(invariant)
        raise ValueError(
            f"Collective ppermute must be applied to a device-varying  type, but got {vma} for "
            f"collective acting over axis name {names}. Please open an issue at "
            f"https://github.com/jax-ml/jax/issues and as a temporary workaround pass the "
            f"check_vma=False argument to `jax.shard_map`\n\nThe lax.pbroadcast{at} is given "
            f"a value invariant over {over}: every device along it holds the "
            f"same value already, so broadcasting it changes nothing. Drop the pbroadcast, or, "
            f"if each device is meant to hold its own value, make it varying first: "
            f"`jax.lax.pcast(x, {cast!r}, to='varying')`.")
    return x


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every position receives position `source`'s `x` (a pytree). Over several axes a
    position is numbered as axis_index numbers it (the first axis major), and the broadcast is
    one per axis, from the source's coordinate along it (JAX's collective-broadcast over
    their product gives the same values; its CPU backend has no lowering for it)."""
    names = _names(axis_name)
    sizes = [_bound_size(n) for n in names]
    if not 0 <= source < math.prod(sizes):
        shown = names[0] if len(names) == 1 else names
        raise ValueError(f"pbroadcast source {source} is outside the axis {shown!r} of size "
                         f"{math.prod(sizes)}")
    place = [int(i) for i in np.unravel_index(int(source), sizes)]
    leaves, tree = tree_flatten(x)
    outs = []
    for leaf in leaves:
        leaf = _varying_operand(as_lax_operands("pbroadcast", leaf)[0], names)
        for name, at in zip(names, place):
            leaf = pbroadcast_p.bind(leaf, axis_name=name, source=at)
        outs.append(leaf)
    return tree_unflatten(tree, outs)


# --- all_to_all ----------------------------------------------------------------------------

def _all_to_all_abstract(x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    n = _group_size(axis_index_groups, axis_name[0])
    shape = list(x.shape)
    if shape[split_axis] % n:
        raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {axis_name[0]} ({n})")
    shape[split_axis] //= n
    shape[concat_axis] *= n
    return x.update(shape=tuple(shape))


all_to_all_p = NamedAxisPrimitive("all_to_all", lambda params: params["axis_name"])
all_to_all_p.def_abstract_eval(_all_to_all_abstract)


def _all_to_all_impl(x, *, axis_name, **_):
    raise NameError(f"all_to_all over {axis_name!r} outside a transformation mapping the axis")


all_to_all_p.def_impl(_all_to_all_impl)


def _all_to_all_named(vals, dims, axis, *, split_axis, concat_axis, **_):
    """Lane j gets chunk j of every lane's split axis, concatenated (by source lane) along
    the concat axis: with lanes first, a relabelling of axes and two reshapes."""
    (x,), (d,) = vals, dims
    n = axis.size
    front = bdim_at_front(x, d, n)
    shape = get_aval(front).shape[1:]
    k = shape[split_axis] // n
    # labels: 'src' (the lanes), then each per-lane axis; the split axis becomes chunk, k
    labels = ["src"]
    sizes = [n]
    for i, s in enumerate(shape):
        if i == split_axis:
            labels += ["chunk", ("ax", i)]
            sizes += [n, k]
        else:
            labels.append(("ax", i))
            sizes.append(s)
    split = reshape(front, tuple(sizes))
    target = ["chunk"]
    for i in range(len(shape)):
        if i == concat_axis:
            target.append("src")
        target.append(("ax", i))
    moved = transpose(split, tuple(labels.index(t) for t in target))
    out_shape = list(get_aval(moved).shape)
    at = target.index("src")
    merged = out_shape[:at] + [out_shape[at] * out_shape[at + 1]] + out_shape[at + 2:]
    return reshape(moved, tuple(merged)), 0


all_to_all_p.def_named_batch(_grouped(_all_to_all_named, "Please open a feature request!"))
all_to_all_p.def_batch(_lanes_first(all_to_all_p, ("split_axis", "concat_axis")))
def_linear(all_to_all_p, lambda ct, x, *, split_axis, concat_axis, **params: [
    all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)])


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Split `x` (a pytree) along `split_axis` into one chunk per position, send chunk j to
    position j, and join what arrives along `concat_axis` (tiled=False: the split axis, of the
    axis's size, is removed and a new axis of that size inserted at concat_axis). Over several
    axes, positions numbered as axis_index numbers them."""
    def bind(leaf, names, n, groups):
        shape = get_aval(leaf).shape
        sa = _checked_axis("all_to_all", split_axis, len(shape))
        ca = _checked_axis("all_to_all", concat_axis, len(shape))
        if tiled and shape[sa] % n:
            raise _shape_error("all_to_all", f"The size of all_to_all split_axis ({shape[sa]}) "
                               f"has to be divisible by the size of the named axis "
                               f"{axis_name} ({n})", f"its split axis {sa} (of "
                               f"{get_aval(leaf).str_short()}) must be a multiple of {n}")
        if not tiled and shape[sa] != n:
            raise _shape_error("all_to_all", f"all_to_all requires the size of the mapped axis "
                               f"axis_name to equal x.shape[split_axis], but they are {n} and "
                               f"{shape[sa]} respectively.", f"its split axis {sa} (of "
                               f"{get_aval(leaf).str_short()}) must be {n}, or pass tiled=True "
                               f"to cut it in {n} chunks")
        if not tiled:  # (a unit axis to concatenate on, at the end)
            leaf, ca = reshape(leaf, shape + (1,)), len(shape)
        if len(names) == 1:
            out = all_to_all_p.bind(leaf, split_axis=sa, concat_axis=ca, axis_name=names,
                                    axis_index_groups=groups, tiled=bool(tiled))
        elif groups is not None:
            out = several_axes.in_groups(all_to_all_p, leaf, names, groups, split_axis=sa,
                                         concat_axis=ca)
        else:
            out = several_axes.all_to_all(leaf, names, sa, ca)
        if tiled:
            return out
        out = reshape(out, tuple(s for i, s in enumerate(get_aval(out).shape) if i != sa))
        return moveaxis(out, len(shape) - 1, _checked_axis("all_to_all", concat_axis,
                                                           len(shape)))
    return _over_leaves("all_to_all", x, axis_name, bind, axis_index_groups)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swap the named axis with array axis `axis` (of the axis's size): all_to_all with the
    split and concat axes both `axis`."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


class Future:
    """The value an asynchronous collective's start gives (JAX 0.12's AbstractFuture): `done()`
    is the collective's result. Collectives here are arithmetic over the mapped axis inside one
    traced program, which LLVM schedules as a whole, so the result is computed at the start and
    `done()` hands it over."""
    __slots__ = ("_value",)

    def __init__(self, value: Any):
        self._value = value

    def done(self) -> Any:
        return self._value

    shape = property(lambda self: get_aval(self._value).shape)
    dtype = property(lambda self: get_aval(self._value).dtype)
    ndim = property(lambda self: get_aval(self._value).ndim)

    def __repr__(self) -> str:
        return f"Future{{{get_aval(self._value).str_short()}}}"


def psum_scatter_start(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                       axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """JAX 0.12's asynchronous psum_scatter: a pytree of Futures whose `done()` is
    `psum_scatter(x, ...)`. As in JAX, only the tiled form exists (NotImplementedError else)."""
    if not tiled:
        raise NotImplementedError("psum_scatter_start: only tiled=True is supported (as in JAX)")
    out = psum_scatter(x, axis_name, scatter_dimension=scatter_dimension,
                       axis_index_groups=axis_index_groups, tiled=True)
    return tree_map(Future, out)


__all__ = ["psum", "pmean", "pmax", "pmin", "pcast", "all_gather", "psum_scatter",
           "psum_scatter_start", "ppermute",
           "pshuffle", "pbroadcast", "all_to_all", "pswapaxes", "axis_index", "axis_size"]
