"""Running a per-shard function over a mesh in one process (the machinery of sharded jit and of
shard_map): each global argument is cut into its shards, the function runs under one batch trace
per mesh axis, bound to the axis name (so lax/parallel.py's collectives act across shards), and
the per-shard results are joined into global values. A layout is given per dimension as the
tuple of mesh axes splitting it, major first (`Dims`)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from ..core.config import config
from ..core.axis_env import AxisFrame
from ..core.batching import batch_flat
from ..core.rules import moveaxis, not_mapped
from ..core.trace import get_aval
from ..lax import broadcast_in_dim, index_in_dim, reshape, transpose

Dims = tuple  # per array dimension, the mesh axes splitting it (major first)


def replicated(ndim: int) -> Dims:
    """The layout of a value every shard holds whole."""
    return ((),) * ndim


def dims_axes(dims: Dims) -> list[str]:
    """The mesh axes a layout uses, dimension by dimension."""
    return [a for axes in dims for a in axes]


def local_shape(shape: Sequence[int], dims: Dims, sizes: dict) -> tuple:
    """The shape of one shard of a value of `shape` laid out as `dims`."""
    return tuple(n // math.prod(sizes[a] for a in axes) for n, axes in zip(shape, dims))


def run_sharded(fun: Callable, args: Sequence, in_dims: Sequence[Dims],
                out_dims: Callable[[], Sequence[Dims]], sizes: dict) -> list:
    """`fun(*shards) -> list` run on every shard of `args` (laid out as `in_dims`; `sizes`:
    mesh axis -> size, in mesh order). `out_dims()`, asked once fun has run, gives the layout
    of each result; a result laid out replicated over an axis is the same on every shard of
    it, so shard 0's is taken."""
    axes = list(sizes)
    shards = [split_shards(x, d, axes, sizes) for x, d in zip(args, in_dims)]
    outs, mapped = nest_axes(fun, shards, in_dims, axes, sizes)
    return [join_shards(o, m, d, axes, sizes) for o, m, d in zip(outs, mapped, out_dims())]


def split_shards(x, dims: Dims, axes: list, sizes: dict):
    """x (laid out as `dims`) with each split dimension cut in (its mesh axes..., piece) and
    the mesh-axis dimensions moved first, in the order of `axes`: every shard stacked over the
    mesh axes it is split by (the caller checks that the sizes divide)."""
    shape = get_aval(x).shape
    split_shape, labels = [], []
    for d, (n, names) in enumerate(zip(shape, dims)):
        split_shape += [sizes[a] for a in names] + [n // math.prod(sizes[a] for a in names)]
        labels += list(names) + [("dim", d)]
    if tuple(split_shape) != shape:
        x = reshape(x, tuple(split_shape))
    front = [a for a in axes if a in labels]
    order = [labels.index(lab) for lab in front + [lab for lab in labels
                                                   if not isinstance(lab, str)]]
    return transpose(x, tuple(order)) if order != list(range(len(order))) else x


def nest_axes(fun: Callable, shards: list, in_dims: Sequence[Dims], axes: list,
              sizes: dict, *, vma: bool = False, typed_as: dict | None = None,
              typed: list | None = None) -> tuple[list, list]:
    """`fun(*shards) -> list` run per shard (each of `shards` as split_shards gives it for its
    layout in `in_dims`), under one batch trace per mesh axis of `axes`, bound to the axis
    name (vma: shard_map's check_vma=True, values' types track the axes they vary over, by
    the names `typed_as` maps axes to where given).
    Returns the outputs, each with the mesh axes it varies over first (in the order of
    `axes`), and, per output, those axes. `typed`, if given, receives per output the axes
    among those that its type says it varies over (check_vma=True: a cond on a varying
    predicate gives each device its own value of an output typed invariant)."""
    uses = [[a in dims_axes(d) for a in axes] for d in in_dims]
    outs, mapped, typed_axes = _nest(fun, list(shards), uses, axes, sizes, 0, vma,
                                     typed_as or {})
    if typed is not None:
        typed[:] = typed_axes
    return outs, mapped


def _nest(fun: Callable, args: list, uses: list, axes: list, sizes: dict, k: int,
          vma: bool = False, typed_as: dict | None = None):
    if k == len(axes):
        outs = fun(*args)
        return outs, [[] for _ in outs], [[] for _ in outs]
    name = axes[k]
    inner_mapped: list = []
    inner_typed: list = []

    def level(*xs):
        outs, mapped, typed = _nest(fun, list(xs), uses, axes, sizes, k + 1, vma, typed_as)
        inner_mapped[:], inner_typed[:] = mapped, typed
        return outs

    in_dims = [0 if u[k] else not_mapped for u in uses]
    spread: list = []
    # (jax_remove_size_one_mesh_axis_from_type: an axis of size 1 is in no value's vma)
    typed = vma and not (sizes[name] == 1 and config.jax_remove_size_one_mesh_axis_from_type)
    outs, out_bdims = batch_flat(level, args, in_dims, AxisFrame(name, sizes[name], None,
                                                                devices=True, vma=typed,
                                                                typed_as=typed_as.get(name)),
                                 spread=spread)
    result, mapped, typed = [], [], []
    for o, d, inner, inner_t, s in zip(outs, out_bdims, inner_mapped, inner_typed, spread):
        result.append(o if d is not_mapped else moveaxis(o, d, 0))
        mapped.append(inner if d is not_mapped else [name] + inner)
        typed.append(inner_t if d is not_mapped or s else [name] + inner_t)
    return result, mapped, typed


def join_shards(x, mapped: list, dims: Dims, axes: list, sizes: dict):
    """The global value laid out as `dims` from per-shard results stacked over the mesh axes
    `mapped` (as nest_axes gives them); over an axis the layout leaves out, shard 0's copy."""
    used = dims_axes(dims)
    front = list(mapped)
    for a in [a for a in front if a not in used]:  # replicated over a: shard 0's copy
        x = index_in_dim(x, 0, front.index(a), keepdims=False)
        front.remove(a)
    shape = get_aval(x).shape
    for a in [a for a in axes if a in used and a not in front]:  # the same on every shard
        at = sum(1 for b in axes[:axes.index(a)] if b in front)
        new_shape = shape[:at] + (sizes[a],) + shape[at:]
        x = broadcast_in_dim(x, new_shape, tuple(j for j in range(len(new_shape)) if j != at))
        shape = new_shape
        front.insert(at, a)
    nf = len(front)
    order, final = [], []
    for d, names in enumerate(dims):
        order += [front.index(a) for a in names] + [nf + d]
        final.append(shape[nf + d] * math.prod(sizes[a] for a in names))
    if order != list(range(len(order))):
        x = transpose(x, tuple(order))
    return reshape(x, tuple(final)) if tuple(final) != get_aval(x).shape else x


__all__ = ["Dims", "replicated", "dims_axes", "local_shape", "run_sharded", "split_shards",
           "nest_axes", "join_shards"]
