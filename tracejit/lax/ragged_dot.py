"""lax.ragged_dot / ragged_dot_general (mixture-of-experts grouped matmuls), composed from lax.

No primitive of its own: group_sizes become a mask over a new leading group axis and one
dot_general contracts it, as JAX's CPU path does, so jit fuses it to native code and grad and
vmap come from the rules of the parts (for every mode and vmap axis, wider than JAX's own rules).
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import get_aval
from ._base import check_operand
from .cumulative import cumsum
from .elementwise import bitwise_and, convert_element_type, le, lt, select, sub
from .linalg import _dot_general_abstract, dot_general
from .shape import broadcast_in_dim, broadcasted_iota, full, transpose


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """ragged_dot_general's dimension numbers: dot_general's ((lhs_contracting,
    rhs_contracting), (lhs_batch, rhs_batch)), the one lhs ragged dimension and the rhs group
    dimensions (one when the ragged dimension is a free one of lhs, else none)."""
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple

    def __init__(self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Sequence[int],
                 rhs_group_dimensions: Sequence[int]):
        set_field = object.__setattr__  # frozen: fields are set once, here
        set_field(self, "dot_dimension_numbers",
                  tuple(tuple(tuple(int(d) for d in dims) for dims in pair)
                        for pair in dot_dimension_numbers))
        set_field(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
        set_field(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


class _Mode(enum.Enum):
    RAGGED_NONCONTRACTING = 1  # [b,m,k], [g,b,k,n], [b,g] -> [b,m,n]
    RAGGED_CONTRACTING = 2     # [b,m,k], [b,k,n], [b,g] -> [g,b,m,n]
    RAGGED_BATCH = 3           # [b,m,k], [b,k,n], [g] -> [b,m,n]


_BASIC_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(
    dot_dimension_numbers=(((1,), (1,)), ((), ())), lhs_ragged_dimensions=(0,),
    rhs_group_dimensions=(0,))


def _in_range(dim: int, rank: int, what: str, arg: str) -> None:
    if not 0 <= dim < rank:
        raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative and less "
                        f"than the number of axes of the {arg} value, got {dim} for {arg} of "
                        f"rank {rank}.")


def _mode(lhs_ndim: int, dnums: RaggedDotDimensionNumbers) -> tuple[_Mode, int]:
    if len(dnums.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    ragged = dnums.lhs_ragged_dimensions[0]
    _in_range(ragged, lhs_ndim, "lhs ragged dimension", "lhs")
    (lc, _), (lb, _) = dnums.dot_dimension_numbers
    if ragged in lc:
        return _Mode.RAGGED_CONTRACTING, ragged
    if ragged in lb:
        return _Mode.RAGGED_BATCH, ragged
    return _Mode.RAGGED_NONCONTRACTING, ragged


def _prefix_dims(mode: _Mode, ndim: int, ragged: int, batch: tuple, contract: tuple) -> list:
    """The dims of an operand that group_sizes' leading axes index: [batch..., the dims of the
    ragged dim's kind that come before it]."""
    if mode is _Mode.RAGGED_BATCH:
        return list(batch[:batch.index(ragged)])
    if mode is _Mode.RAGGED_CONTRACTING:
        return list(batch) + list(contract[:contract.index(ragged)])
    free = [d for d in range(ndim) if d not in contract and d not in batch]
    return list(batch) + free[:free.index(ragged)]


def _check(lhs: ShapedArray, rhs: ShapedArray, gs: ShapedArray,
           dnums: RaggedDotDimensionNumbers, preferred: Any) -> tuple[_Mode, int]:
    """JAX's ragged_dot_general shape and dtype checks (TypeError, as JAX), returning the mode."""
    mode, ragged = _mode(lhs.ndim, dnums)
    (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
    if gs.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if gs.ndim != 1:
        expected = tuple(lhs.shape[d] for d in _prefix_dims(mode, lhs.ndim, ragged, lb, lc))
        expected += (gs.shape[-1],)
        if tuple(gs.shape) != expected:
            raise TypeError(f"expected group_sizes to have shape {expected}, got {gs.shape}.")
    groups = dnums.rhs_group_dimensions
    if mode is _Mode.RAGGED_NONCONTRACTING:
        if len(groups) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when "
                            "lhs ragged dimension is noncontracting.")
        _in_range(groups[0], rhs.ndim, "rhs group dimension", "rhs")
        if groups[0] in rb or groups[0] in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                            "distinct from contracting and batch dimensions.")
        if rhs.shape[groups[0]] != gs.shape[-1]:
            raise TypeError(f"expected rhs group dimension size to be {gs.shape[-1]}, got "
                            f"{rhs.shape[groups[0]]}.")
    elif groups:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                        "ragged dimension is contracting or batch.")
    if not dtypes.issubdtype(gs.dtype, np.integer):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                        "np.integer.")
    # the rest (dimension numbers, operand dtypes) as dot_general checks them, the group dim
    # of rhs set aside
    if groups:
        shape = tuple(s for d, s in enumerate(rhs.shape) if d != groups[0])
        rhs = ShapedArray(shape, rhs.dtype, rhs.weak_type)
        (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
        rc, rb = (tuple(d - (d > groups[0]) for d in ds) for ds in (rc, rb))
        _dot_general_abstract(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), precision=None,
                              preferred_element_type=preferred)
    else:
        _dot_general_abstract(lhs, rhs, dimension_numbers=dnums.dot_dimension_numbers,
                              precision=None, preferred_element_type=preferred)
    return mode, ragged


def _expand(x: Any, ragged: int, prefix: list, starts: Any, ends: Any) -> Any:
    """x with a new leading group axis: group i keeps the entries whose index along `ragged`
    lies in [starts[..., i], ends[..., i]) and zeros the rest. starts and ends are shaped
    [x's prefix dims..., g]."""
    aval = get_aval(x)
    shape = (get_aval(starts).shape[-1],) + tuple(aval.shape)
    # group axis first, then the prefix dims in x's order (broadcast_in_dim wants them rising)
    order = sorted(range(len(prefix)), key=lambda i: prefix[i])
    perm = (len(prefix),) + tuple(order)
    dims = (0,) + tuple(1 + prefix[i] for i in order)
    lo, hi = (broadcast_in_dim(transpose(b, perm), shape, dims) for b in (starts, ends))
    index = broadcasted_iota(get_aval(starts).dtype, shape, 1 + ragged)
    inside = bitwise_and(le(lo, index), lt(index, hi))
    return select(inside, broadcast_in_dim(x, shape, tuple(range(1, len(shape)))),
                  full(shape, 0, aval.dtype))


def _group_bounds(group_sizes: Any, prefix_shape: tuple) -> tuple[Any, Any]:
    """Each group's [start, end) along the ragged dim, shaped prefix_shape + (g,), computed in a
    32- or 64-bit integer type so that iota and running sums cannot wrap in a narrow one."""
    aval = get_aval(group_sizes)
    narrow = aval.dtype.itemsize < 4 or aval.dtype == np.int32
    wide = np.dtype(np.int32) if narrow else dtypes.canonicalize_dtype(np.int64)
    sizes = convert_element_type(group_sizes, wide)
    if aval.ndim == 1:  # one set of groups for every prefix index
        shape = tuple(prefix_shape) + aval.shape
        sizes = broadcast_in_dim(sizes, shape, (len(shape) - 1,))
    ends = cumsum(sizes, axis=get_aval(sizes).ndim - 1)
    return sub(ends, sizes), ends


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None, *,
                       reduction_order: Any = None):
    """lax.ragged_dot_general: a dot_general whose lhs ragged dimension is split into
    group_sizes.shape[-1] consecutive groups. Ragged free dim of lhs: each group's rows are
    multiplied by that group's slice of rhs (rhs's group dimension); rows past the groups give
    zeros. Ragged contracting dim: one product per group over that group's slice of the
    contraction, stacked on a new leading axis. Ragged batch dim: a plain dot_general."""
    for x in (lhs, rhs, group_sizes):
        check_operand(x, "lax.ragged_dot_general")
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support: JAX's ragged_dot "
                                  "implements group_offset on no CPU path; pass None and slice "
                                  "group_sizes instead.")
    if reduction_order is not None:
        raise NotImplementedError("ragged_dot's reduction_order is not supported by tracejit; "
                                  "pass None.")
    if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general expects a lax.RaggedDotDimensionNumbers, got "
                        f"{ragged_dot_dimension_numbers!r}")
    dnums = ragged_dot_dimension_numbers
    preferred = None if preferred_element_type is None else \
        dtypes.check_user_dtype(preferred_element_type, "preferred_element_type")
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    mode, ragged = _check(lhs_aval, rhs_aval, get_aval(group_sizes), dnums, preferred)
    (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
    dot = {"precision": precision, "preferred_element_type": preferred}
    if mode is _Mode.RAGGED_BATCH:  # as JAX: every batch index is in some group's product
        return dot_general(lhs, rhs, dnums.dot_dimension_numbers, **dot)
    prefix = _prefix_dims(mode, lhs_aval.ndim, ragged, lb, lc)
    starts, ends = _group_bounds(group_sizes, tuple(lhs_aval.shape[d] for d in prefix))
    x = _expand(lhs, ragged, prefix, starts, ends)

    def up(ds: tuple) -> tuple:  # the dims of an operand that gained the leading group axis
        return tuple(d + 1 for d in ds)

    if mode is _Mode.RAGGED_NONCONTRACTING:  # the group axis contracts with rhs's group dim
        group = dnums.rhs_group_dimensions[0]
        return dot_general(x, rhs, ((up(lc) + (0,), rc + (group,)), (up(lb), rb)), **dot)
    rhs_ragged = rc[lc.index(ragged)]
    y = _expand(rhs, rhs_ragged, _prefix_dims(mode, rhs_aval.ndim, rhs_ragged, rb, rc),
                starts, ends)
    return dot_general(x, y, ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb))), **dot)


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None, *, reduction_order: Any = None):
    """lax.ragged_dot: lhs (m, k) with rhs (g, k, n): rows [sum(gs[:i]), sum(gs[:i+1])) of lhs
    times rhs[i]; rows past sum(group_sizes) are zero. Returns (m, n)."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_DIMENSION_NUMBERS, precision,
                              preferred_element_type, group_offset, out_sharding,
                              reduction_order=reduction_order)


__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]
