"""Collectives over several named axes at once (lax): all_gather, psum_scatter and all_to_all
over `axis_name=('x', 'y')`, and any collective within axis_index_groups over several axes.
Positions are numbered over the product of the axes in the order named, the first major (as
axis_index numbers them and JAX 0.10 does; ppermute alone numbers them in the mesh's order).

Each is one collective of lax/parallel.py per axis, so their transposes, batching rules and the
MPI path across processes (lax/processes.py) are those of one axis: all_gather's transpose is
psum_scatter over the axes in the other order, all_to_all's an all_to_all back.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.axis_env import AxisFrame, lookup
from ..core.axis_env import axis_size as _bound_size
from ..core.rules import bdim_at_front
from ..core.trace import get_aval
from .indexing import dynamic_index_in_dim
from .shape import reshape, transpose


def _sizes(names: Sequence) -> tuple:
    return tuple(_bound_size(a) for a in names)


def gather(x: Any, names: tuple, dim: int, tiled: bool) -> Any:
    """all_gather over several axes at `dim`: x flattened, gathered once per axis — those
    spanning processes first, so MPI moves each position's block once, not the copies a local
    gather made of it — the positions' axes then put in the order named (the first major) and
    at dim. (Kept flat, the operands stay of low rank: an MPI collective takes 9 axes.)"""
    from .parallel import all_gather_p
    shape, sizes = get_aval(x).shape, _sizes(names)
    order = sorted(names, key=lambda a: lookup(a).process is None)
    out = reshape(x, (math.prod(shape),))
    for a in order:  # (each gathered axis put first: they end in the reverse order)
        out = all_gather_p.bind(out, all_gather_dimension=0, axis_name=(a,),
                                axis_index_groups=None, axis_size=_bound_size(a), tiled=False)
    m = len(names)
    out = transpose(out, tuple(m - 1 - order.index(a) for a in names) + (m,))
    n = math.prod(sizes)
    out = _moved_to(reshape(out, (n,) + shape), dim)
    if tiled:
        return reshape(out, shape[:dim] + (n * shape[dim],) + shape[dim + 1:])
    return out


def scatter(x: Any, names: tuple, dim: int, tiled: bool) -> Any:
    """psum_scatter over several axes at `dim` (its size checked by the caller): the dimension
    cut into one axis per named axis (then the part each position keeps, if tiled), each
    scattered over its axis — those within this process first, so MPI moves only the sums
    left (the other dimensions flattened before and after it meanwhile)."""
    from .parallel import reduce_scatter_p
    shape, sizes = get_aval(x).shape, _sizes(names)
    before, after = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    part = shape[dim] // math.prod(sizes)
    out = reshape(x, (before,) + sizes + ((part,) if tiled else ()) + (after,))
    left = list(names)
    for a in sorted(names, key=lambda a: lookup(a).process is not None):
        out = reduce_scatter_p.bind(out, scatter_dimension=1 + left.index(a), axis_name=(a,),
                                    axis_index_groups=None, axis_size=_bound_size(a),
                                    tiled=False)
        left.remove(a)
    return reshape(out, shape[:dim] + ((part,) if tiled else ()) + shape[dim + 1:])


def all_to_all(x: Any, names: tuple, split_axis: int, concat_axis: int) -> Any:
    """all_to_all over several axes, tiled (the split axis cut into one chunk per position,
    what arrives joined along the concat axis in source order): each chunk's destination
    coordinates put first, one axis each, the chunk flattened after them; the all_to_all over
    the i-th named axis turns axis i from destination to source coordinate; the source
    coordinates, merged, joined at the concat axis."""
    from .parallel import all_to_all_p
    shape, sizes = get_aval(x).shape, _sizes(names)
    n, m = math.prod(sizes), len(names)
    piece = shape[:split_axis] + (shape[split_axis] // n,) + shape[split_axis + 1:]
    before, after = math.prod(shape[:split_axis]), math.prod(piece[split_axis:])
    out = reshape(x, (before,) + sizes + (after,))
    out = transpose(out, tuple(range(1, m + 1)) + (0, m + 1))
    out = reshape(out, sizes + (before * after,))
    for i, a in enumerate(names):
        out = all_to_all_p.bind(out, split_axis=i, concat_axis=i, axis_name=(a,),
                                axis_index_groups=None, tiled=True)
    out = _moved_to(reshape(out, (n,) + piece), concat_axis)
    return reshape(out, piece[:concat_axis] + (n * piece[concat_axis],) +
                   piece[concat_axis + 1:])


def _moved_to(x: Any, dim: int) -> Any:
    """x's leading axis moved to `dim`."""
    rest = tuple(range(1, get_aval(x).ndim))
    return transpose(x, rest[:dim] + (0,) + rest[dim:]) if dim else x


def in_groups(prim: Any, x: Any, names: tuple, groups: tuple, **params: Any) -> Any:
    """`prim` within axis_index_groups over several axes: every position's x gathered (one
    all_gather per axis), the primitive's own rule computing each group's result over an axis
    of all the positions, and this position's result kept — n times the operand's memory per
    position, where JAX moves only the group's. Reductions take `axes=(names,)` (that axis)."""
    from .parallel import axis_index
    frames = [lookup(a) for a in names]
    n = math.prod(f.size for f in frames)
    # (vmap(axis_name=...) refuses groups, as JAX's: make_jaxpr's axis_env stages them)
    devices = all(f.devices or f.process is not None or f.main is None for f in frames)
    positions = AxisFrame(names, n, None, devices=devices, vma=any(f.vma for f in frames))
    out, d = prim.named_batch([gather(x, names, 0, False)], [0], positions,
                              axis_index_groups=groups, **params)
    return dynamic_index_in_dim(bdim_at_front(out, d, n), axis_index(names), 0, keepdims=False)
