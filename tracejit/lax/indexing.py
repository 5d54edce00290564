"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather and the scatter family, with
XLA's dimension numbers and out-of-bounds modes as JAX exposes them.

The NumPy impls never read or write out of bounds: start indices are clamped so the window fits
(dynamic slices, CLIP, PROMISE_IN_BOUNDS gathers), or whole windows are filled (FILL_OR_DROP
gathers) or dropped (FILL_OR_DROP and PROMISE_IN_BOUNDS scatters), as XLA does.
"""
from __future__ import annotations

import enum
import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray, check_shape
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.primitive import INDEX_MAP, Primitive
from ..core.rules import (Zero, aval_of, axis_size, bdim_at_front, defjvp, full_like_aval,
                          instantiate, is_undefined, moveaxis, not_mapped)
from ..core.trace import Tracer, get_aval, trace_to_jaxpr
from ._base import ANY, NUM, as_lax_operands, canonicalize_axis, check_dtype, const_like
from .elementwise import add, div, eq, lt, mul, neg, select
from .shape import (broadcast, broadcast_in_dim, concatenate, expand_dims, full_like, index_in_dim,
                    iota, reshape, squeeze)


class GatherScatterMode(enum.Enum):
    """How gathers and scatters treat out-of-bounds indices (see jax.lax.GatherScatterMode).

    CLIP clamps each window into range; FILL_OR_DROP fills a gathered window that is not wholly
    in range with `fill_value` and drops such a scattered window; PROMISE_IN_BOUNDS does what XLA
    does: gathers clamp, scatters drop.
    """
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


class GatherDimensionNumbers(NamedTuple):
    """XLA's gather dimension numbers; the index vector dimension is always the last one."""
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """XLA's scatter dimension numbers; the index vector dimension is always the last one."""
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _int_tuples(dnums: NamedTuple, cls: type) -> Any:
    if not isinstance(dnums, cls):
        raise TypeError(f"dimension_numbers must be a {cls.__name__}, got {dnums!r}")
    return cls(*(tuple(int(d) for d in field) for field in dnums))


# --- dimension-number checks (JAX's messages; all TypeErrors, as in jax.lax) ----------------

def _check_sorted(dims, op, name):
    if list(dims) != sorted(dims):
        raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _check_unique(dims, op, name):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _check_in_range(dims, rank, op, name):
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); "
                            f"got: {d}.")


def _check_disjoint(dims1, dims2, op, name1, name2):
    if set(dims1) & set(dims2):
        raise TypeError(f"{name1} and {name2} in {op} op must be disjoint; got: {dims1} and "
                        f"{dims2}.")


def _check_index_leaf_dim(op, indices):
    # JAX's index vector dimension is always the last one, so indices need rank >= 1
    if indices.ndim < 1:
        raise TypeError(f"{op.capitalize()} index leaf dimension must be within [0, "
                        f"rank(indices) + 1). rank(indices) is {indices.ndim} and {op} index "
                        f"leaf dimension is {indices.ndim - 1}.")


def _check_index_operands(op, indices, index_map, map_name, indices_bdims, operand_bdims,
                          operand_shape):
    """Checks shared by gather and scatter on the indices and the batching dimensions."""
    if not dtypes.is_int(indices.dtype):
        raise ValueError("indices must have an integer type")
    rank = len(operand_shape)
    if len(index_map) != indices.shape[-1]:
        raise TypeError(f"{op.capitalize()} op has {len(index_map)} elements in {map_name} and "
                        f"the bound of dimension index_vector_dim={indices.ndim - 1} of indices "
                        f"is {indices.shape[-1]}. These two numbers must be equal.")
    _check_in_range(index_map, rank, op, map_name)
    _check_unique(index_map, op, map_name)
    _check_sorted(operand_bdims, op, "operand_batching_dims")
    _check_unique(operand_bdims, op, "operand_batching_dims")
    _check_in_range(operand_bdims, rank, op, "operand_batching_dims")
    _check_disjoint(index_map, operand_bdims, op, map_name, "operand_batching_dims")
    ib_name = "start_indices_batching_dims" if op == "gather" else \
        "scatter_indices_batching_dims"
    _check_unique(indices_bdims, op, ib_name)
    _check_in_range(indices_bdims, indices.ndim - 1, op, ib_name)
    if len(operand_bdims) != len(indices_bdims):
        raise TypeError(f"{op.capitalize()} op requires equal numbers of operand_batching_dims "
                        f"and {ib_name}, got {operand_bdims} and {indices_bdims}.")
    operand_batch = tuple(operand_shape[d] for d in operand_bdims)
    indices_batch = tuple(indices.shape[d] for d in indices_bdims)
    if operand_batch != indices_batch:
        raise TypeError(f"{op.capitalize()} op requires operand batching dimensions and indices "
                        f"batching dimensions to have the same shape, got {operand_batch} and "
                        f"{indices_batch}.")


# --- shared NumPy machinery: where each window lands in the operand -------------------------

def _as_int64(indices: np.ndarray) -> np.ndarray:
    if indices.dtype == np.uint64:  # values past int64's range are out of bounds anyway
        indices = np.minimum(indices, np.iinfo(np.int64).max)
    return indices.astype(np.int64)


def _window_indices(shape, indices, index_map, operand_bdims, indices_bdims, sizes,
                    window_dims):
    """Operand coordinates of every window element and which windows lie wholly in bounds.

    Returns (coords, in_bounds): coords[d] broadcasts to batch_shape + window_shape, where the
    batch shape is indices.shape[:-1] and the window shape lists sizes[d] for d in window_dims;
    start indices are clamped so each window fits. in_bounds has the batch shape.
    """
    batch = indices.shape[:-1]
    nb, nw = len(batch), len(window_dims)
    idx = _as_int64(indices)
    starts: dict[int, Any] = {}
    in_bounds = np.ones(batch, dtype=bool)
    for k, d in enumerate(index_map):
        s, upper = idx[..., k], shape[d] - sizes[d]
        in_bounds &= (s >= 0) & (s <= upper)
        starts[d] = np.clip(s, 0, max(upper, 0))
    for od, bd in zip(operand_bdims, indices_bdims):
        starts[od] = np.arange(batch[bd]).reshape([-1 if a == bd else 1 for a in range(nb)])
    coords = []
    for d in range(len(shape)):
        c = np.asarray(starts.get(d, 0))
        if c.ndim:
            c = c.reshape(c.shape + (1,) * nw)
        if d in window_dims:
            j = window_dims.index(d)
            c = c + np.arange(sizes[d]).reshape([-1 if a == nb + j else 1
                                                 for a in range(nb + nw)])
        coords.append(c)
    return coords, in_bounds


# --- dynamic_slice / dynamic_update_slice -------------------------------------------------

def _check_start_indices(op: str, starts: Sequence[ShapedArray]) -> None:
    if any(s.ndim != 0 for s in starts):
        raise TypeError(f"start_indices arguments to {op} must be scalars, got indices "
                        f"{[s.str_short() for s in starts]}")
    if any(s.dtype != starts[0].dtype or not dtypes.is_int(s.dtype) for s in starts):
        sep = ": " if op == "dynamic_slice" else " "
        raise TypeError(f"index arguments to {op} must be integers of the same type, got"
                        f"{sep}{', '.join(s.dtype.name for s in starts)}")


def _clamped_window(shape, starts, sizes) -> tuple:
    """The in-bounds window: each start clamped to [0, dim - size], as XLA does."""
    out = []
    for d, s, size in zip(shape, starts, sizes):
        lo = min(max(int(s), 0), d - size)
        out.append(slice(lo, lo + size))
    return tuple(out)


def _dynamic_slice_abstract(operand, *starts, slice_sizes):
    if len(starts) != operand.ndim:
        raise TypeError(f"dynamic_slice needs one start index per operand dimension, got "
                        f"{len(starts)} for operand shape {operand.shape}.")
    if any(s > d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, got "
                        f"slice_sizes {slice_sizes} for operand shape {operand.shape}.")
    if len(slice_sizes) != operand.ndim or any(s < 0 for s in slice_sizes):
        raise TypeError(f"slice slice_sizes must be non-negative and one per operand "
                        f"dimension, got slice_sizes of {slice_sizes}.")
    _check_start_indices("dynamic_slice", starts)
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p = Primitive("dynamic_slice", fusion=INDEX_MAP)
dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract)
dynamic_slice_p.def_impl(lambda operand, *starts, slice_sizes: operand[
    _clamped_window(operand.shape, starts, slice_sizes)])


def _dynamic_update_slice_abstract(operand, update, *starts):
    if operand.dtype != update.dtype:
        raise TypeError(f"lax.dynamic_update_slice requires arguments to have the same dtypes, "
                        f"got {operand.dtype.name}, {update.dtype.name}.")
    if operand.ndim != update.ndim:
        raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got "
                        f"update shape {update.shape} for operand shape {operand.shape}.")
    if len(starts) != operand.ndim:
        raise TypeError(f"dynamic_update_slice start_indices must have length equal to the "
                        f"rank of operand, got {len(starts)} for operand shape {operand.shape}.")
    if any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, "
                        f"got update shape {update.shape} for operand shape {operand.shape}.")
    _check_start_indices("dynamic_update_slice", starts)
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type and update.weak_type)


def _dynamic_update_slice_impl(operand, update, *starts):
    out = np.array(operand, copy=True)
    out[_clamped_window(operand.shape, starts, update.shape)] = update
    return out


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_abstract)
dynamic_update_slice_p.def_impl(_dynamic_update_slice_impl)


def _dynamic_slice_indices(shape: tuple[int, ...], start_indices: Any,
                           allow_negative_indices: bool | Sequence[bool]) -> list:
    """Start indices as scalar operands; negative ones count from the end (once)."""
    if isinstance(start_indices, (np.ndarray, Tracer)) or hasattr(start_indices, "aval"):
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {aval.shape}")
        start_indices = [index_in_dim(start_indices, i, keepdims=False)
                         for i in range(aval.shape[0])]
    start_indices = list(start_indices)
    if len(start_indices) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shape})")
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * len(shape)
    out = []
    for i, d, allow_negative in zip(start_indices, shape, allow_negative_indices):
        if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            if i < 0 and not allow_negative:
                raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                 "allow_negative_indices=False")
            # Python ints become strong scalars of the default int type, as in JAX
            dtype = dtypes.default_int() if isinstance(i, int) else \
                dtypes.canonicalize_dtype(np.dtype(type(i)))
            out.append(const_like(ShapedArray((), dtype), int(i) + d if i < 0 else int(i)))
            continue
        (i,) = as_lax_operands("dynamic_slice", i)
        aval = get_aval(i)
        if allow_negative and aval.dtype.kind == "i":
            i = select(lt(i, const_like(aval, 0)), add(i, const_like(aval, d)), i)
        out.append(i)
    return out


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True):
    """lax.dynamic_slice: a `slice_sizes` window at traced starts, clamped to stay in bounds."""
    (operand,) = as_lax_operands("dynamic_slice", operand)
    shape = get_aval(operand).shape
    starts = _dynamic_slice_indices(shape, start_indices, allow_negative_indices)
    sizes = check_shape(slice_sizes, "slice_sizes")
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True):
    """lax.dynamic_update_slice: write `update` at traced starts, clamped so it fits."""
    (operand,) = as_lax_operands("dynamic_update_slice", operand)
    (update,) = as_lax_operands("dynamic_update_slice", update)
    shape = get_aval(operand).shape
    starts = _dynamic_slice_indices(shape, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def _in_dim_starts(ndim: int, index: Any, axis: int, allow_negative: bool):
    """Start indices that are `index` on `axis` and zeros (of index's type) elsewhere."""
    if isinstance(index, (int, np.integer)):
        zero = type(index)(0)
    else:
        zero = const_like(get_aval(index).strip_weak_type(), 0)
    starts: list = [zero] * ndim
    starts[axis] = index
    allow = [False] * ndim
    allow[axis] = allow_negative
    return starts, allow


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
    """`operand[..., start:start + slice_size]` on `axis`, with a traced start."""
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    starts, allow = _in_dim_starts(aval.ndim, start_index, axis, allow_negative_indices)
    sizes = list(aval.shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
    """`operand[..., index]` on `axis` with a traced index (kept as a size-1 axis if keepdims)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True):
    """dynamic_update_slice with a traced start on `axis` only."""
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    starts, allow = _in_dim_starts(aval.ndim, start_index, axis, allow_negative_indices)
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True):
    """Write `update` (with or without the size-1 `axis`) at a traced index on `axis`."""
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis(axis, ndim)
    if get_aval(update).ndim + 1 == ndim:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


# --- gather --------------------------------------------------------------------------------

def _gather_shape(operand, indices, dnums: GatherDimensionNumbers, slice_sizes):
    """XLA's gather shape inference (the checks of JAX's _gather_shape_rule, in its order)."""
    offset_dims, collapsed = dnums.offset_dims, dnums.collapsed_slice_dims
    _check_index_leaf_dim("gather", indices)
    _check_sorted(offset_dims, "gather", "offset_dims")
    _check_unique(offset_dims, "gather", "offset_dims")
    out_rank = len(offset_dims) + indices.ndim - 1
    for i, d in enumerate(offset_dims):
        if not 0 <= d < out_rank:
            raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                            f"should have been in [0, {out_rank})")
    _check_sorted(collapsed, "gather", "collapsed_slice_dims")
    _check_in_range(collapsed, operand.ndim, "gather", "collapsed_slice_dims")
    _check_unique(collapsed, "gather", "collapsed_slice_dims")
    _check_disjoint(collapsed, dnums.operand_batching_dims, "gather", "collapsed_slice_dims",
                    "operand_batching_dims")
    _check_index_operands("gather", indices, dnums.start_index_map, "start_index_map",
                          dnums.start_indices_batching_dims, dnums.operand_batching_dims,
                          operand.shape)
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                        f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
    if len(slice_sizes) != len(offset_dims) + len(collapsed) + len(dnums.operand_batching_dims):
        raise TypeError(f"All components of the offset index in a gather op must either be a "
                        f"offset dimension or explicitly collapsed/batching; got len(slice_sizes)"
                        f"={len(slice_sizes)}, output_slice_sizes={offset_dims}, "
                        f"collapsed_slice_dims={collapsed}, operand_batching_dims="
                        f"{dnums.operand_batching_dims}.")
    if indices.size:
        for i, (s, d) in enumerate(zip(slice_sizes, operand.shape)):
            if not 0 <= s <= d:
                raise TypeError(f"Slice size at index {i} in gather op is out of range, must "
                                f"be within [0, {d} + 1), got {s}.")
    for i, d in enumerate(collapsed):
        if slice_sizes[d] != 1:
            raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                            f"{slice_sizes[d]} for index {d} at position {i}.")
    for i, d in enumerate(dnums.operand_batching_dims):
        if slice_sizes[d] > 1:
            raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, but "
                            f"bound is {slice_sizes[d]} for index {d} at position {i}.")
    batch = iter(indices.shape[:-1])
    window = iter(s for d, s in enumerate(slice_sizes)
                  if d not in collapsed and d not in dnums.operand_batching_dims)
    return tuple(next(window) if i in offset_dims else next(batch) for i in range(out_rank))


def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                     unique_indices, mode, fill_value):
    shape = _gather_shape(operand, indices, dimension_numbers, slice_sizes)
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                 unique_indices, mode, fill_value):
    dn = dimension_numbers
    window_dims = [d for d in range(operand.ndim)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    batch = indices.shape[:-1]
    natural = batch + tuple(slice_sizes[d] for d in window_dims)
    if math.prod(natural) == 0:
        out = np.zeros(natural, operand.dtype)
    else:
        coords, in_bounds = _window_indices(operand.shape, indices, dn.start_index_map,
                                            dn.operand_batching_dims,
                                            dn.start_indices_batching_dims, slice_sizes,
                                            window_dims)
        out = np.broadcast_to(operand[tuple(coords)], natural)
        if mode == GatherScatterMode.FILL_OR_DROP:
            with np.errstate(all="ignore"):
                fill = np.asarray(fill_value).astype(operand.dtype)
            out = np.where(in_bounds.reshape(batch + (1,) * len(window_dims)), out, fill)
    # natural order is batch dims then window dims; offset_dims says where the window dims go
    batch_axes, window_axes = iter(range(len(batch))), iter(range(len(batch), len(natural)))
    perm = [next(window_axes) if p in dn.offset_dims else next(batch_axes)
            for p in range(len(natural))]
    return np.transpose(out, perm)


gather_p = Primitive("gather", fusion=INDEX_MAP)
gather_p.def_abstract_eval(_gather_abstract)
gather_p.def_impl(_gather_impl)


def _default_fill_value(dtype: np.dtype) -> Any:
    """JAX's fill for out-of-bounds gathers: NaN, the lowest signed / highest unsigned int, True."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None):
    """lax.gather: XLA's Gather. `mode=None` means PROMISE_IN_BOUNDS here (windows clamp)."""
    (operand,) = as_lax_operands("gather", operand)
    (start_indices,) = as_lax_operands("gather", start_indices)
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else \
        GatherScatterMode.from_any(mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill_value(get_aval(operand).dtype)
        elif isinstance(fill_value, (np.ndarray, np.generic)):
            fill_value = fill_value.item()
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices,
                         dimension_numbers=_int_tuples(dimension_numbers, GatherDimensionNumbers),
                         slice_sizes=check_shape(slice_sizes, "slice_sizes"),
                         unique_indices=bool(unique_indices),
                         indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                         fill_value=fill_value)


# --- scatter family ------------------------------------------------------------------------

def _scatter_shape_check(operand, indices, updates, dnums: ScatterDimensionNumbers) -> None:
    """XLA's scatter shape inference (the checks of JAX's _scatter_shape_rule)."""
    window, inserted = dnums.update_window_dims, dnums.inserted_window_dims
    operand_bdims = dnums.operand_batching_dims
    _check_index_leaf_dim("scatter", indices)
    expected_rank = indices.ndim - 1 + len(window)
    if updates.ndim != expected_rank:
        raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
    _check_sorted(window, "scatter", "update_window_dims")
    _check_unique(window, "scatter", "update_window_dims")
    _check_in_range(window, updates.ndim, "scatter", "update_window_dims")
    _check_sorted(inserted, "scatter", "inserted_window_dims")
    _check_unique(inserted, "scatter", "inserted_window_dims")
    _check_in_range(inserted, operand.ndim, "scatter", "inserted_window_dims")
    _check_disjoint(inserted, operand_bdims, "scatter", "inserted_window_dims",
                    "operand_batching_dims")
    _check_index_operands("scatter", indices, dnums.scatter_dims_to_operand_dims,
                          "scatter_dims_to_operand_dims", dnums.scatter_indices_batching_dims,
                          operand_bdims, operand.shape)
    if operand.ndim != len(window) + len(inserted) + len(operand_bdims):
        raise TypeError(f"Scatter op has window of size "
                        f"{len(window) + len(inserted) + len(operand_bdims)}; doesn't match "
                        f"operand of rank {operand.ndim}.")
    max_sizes = [d for i, d in enumerate(operand.shape)
                 if i not in inserted and i not in operand_bdims]
    for bound, w in zip(max_sizes, window):
        if updates.shape[w] > bound:
            raise TypeError(f"Bounds of the window dimensions of updates must not exceed the "
                            f"bounds of the corresponding dimensions of operand. For dimension "
                            f"{w}, updates bound is {updates.shape[w]}, operand bound is {bound}.")
    scatter_dims = [d for d in range(updates.ndim) if d not in window]
    for i, bound in zip(scatter_dims, indices.shape[:-1]):
        if updates.shape[i] != bound:
            raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as "
                            f"the bounds of the corresponding dimensions of scatter indices. For "
                            f"scatter dimension {i}, updates bound is {updates.shape[i]}, "
                            f"indices bound is {bound}.")


def _scatter_abstract(name: str, kinds: str):
    def abstract(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                 unique_indices, mode):
        check_dtype(name, operand, kinds)
        if updates.dtype != operand.dtype:
            raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                            f"{operand.dtype.name}, {updates.dtype.name}.")
        _scatter_shape_check(operand, indices, updates, dimension_numbers)
        return operand
    return abstract


def _scatter_targets(shape, indices, updates, dnums: ScatterDimensionNumbers, mode):
    """Flat operand positions and values of the kept update elements, in scatter order."""
    window_dims = [d for d in range(len(shape))
                   if d not in dnums.inserted_window_dims and d not in dnums.operand_batching_dims]
    sizes = [1] * len(shape)
    for d, w in zip(window_dims, dnums.update_window_dims):
        sizes[d] = updates.shape[w]
    scatter_axes = [a for a in range(updates.ndim) if a not in dnums.update_window_dims]
    values = np.transpose(updates, scatter_axes + list(dnums.update_window_dims))
    coords, in_bounds = _window_indices(shape, indices, dnums.scatter_dims_to_operand_dims,
                                        dnums.operand_batching_dims,
                                        dnums.scatter_indices_batching_dims, sizes, window_dims)
    pos = np.zeros(values.shape, np.int64)
    for d, c in zip(shape, coords):
        pos = pos * d + c
    if mode == GatherScatterMode.CLIP:
        return pos.reshape(-1), values.reshape(-1)
    keep = np.broadcast_to(in_bounds.reshape(in_bounds.shape + (1,) * len(window_dims)),
                           values.shape)
    return pos[keep], values[keep]


def _set_last_wins(flat, pos, vals):
    # repeated indices: the last update wins, as NumPy's x[idx] = y does in practice
    _, first_from_end = np.unique(pos[::-1], return_index=True)
    keep = len(pos) - 1 - first_from_end
    flat[pos[keep]] = vals[keep]


def _scatter_impl(combine: Callable):
    def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        flat = operand.flatten()
        if flat.size and updates.size:
            pos, vals = _scatter_targets(operand.shape, indices, updates, dimension_numbers, mode)
            with np.errstate(all="ignore"):
                combine(flat, pos, vals)
        return flat.reshape(operand.shape)
    return impl


def _scatter_primitive(name: str, combine: Callable, kinds: str) -> Primitive:
    p = Primitive(name)
    p.def_abstract_eval(_scatter_abstract(name, kinds))
    p.def_impl(_scatter_impl(combine))
    return p


# ufunc.at accumulates repeated indices; lax.scatter's "last wins" matches NumPy assignment
scatter_p = _scatter_primitive("scatter", _set_last_wins, ANY)
scatter_add_p = _scatter_primitive("scatter-add", np.add.at, NUM)
scatter_sub_p = _scatter_primitive("scatter-sub", np.subtract.at, NUM)
scatter_mul_p = _scatter_primitive("scatter-mul", np.multiply.at, NUM)
scatter_min_p = _scatter_primitive("scatter-min", np.minimum.at, ANY)
scatter_max_p = _scatter_primitive("scatter-max", np.maximum.at, ANY)


_SCATTER_DOC = ("XLA's Scatter of `updates` into `operand` at `scatter_indices`, {}. "
                "Out-of-bounds windows are dropped unless mode='clip' (`mode=None` means "
                "FILL_OR_DROP).")


def _scatter(name: str, prim: Primitive, operand: Any, scatter_indices: Any, updates: Any,
             dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
             unique_indices: bool, mode: str | GatherScatterMode | None):
    operand, updates = as_lax_operands(name, operand, updates)
    (scatter_indices,) = as_lax_operands(name, scatter_indices)
    return prim.bind(operand, scatter_indices, updates,
                     dimension_numbers=_int_tuples(dimension_numbers, ScatterDimensionNumbers),
                     indices_are_sorted=bool(indices_are_sorted),
                     unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | GatherScatterMode | None = None):
    return _scatter("scatter", scatter_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter.__doc__ = _SCATTER_DOC.format("replacing the operand's elements (the last update wins)")


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    return _scatter("scatter_add", scatter_add_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter_add.__doc__ = _SCATTER_DOC.format("adding to the operand's elements")


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    return _scatter("scatter_sub", scatter_sub_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter_sub.__doc__ = _SCATTER_DOC.format("subtracting from the operand's elements")


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    return _scatter("scatter_mul", scatter_mul_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter_mul.__doc__ = _SCATTER_DOC.format("multiplying the operand's elements")


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    return _scatter("scatter_min", scatter_min_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter_min.__doc__ = _SCATTER_DOC.format("keeping the smaller of each element and its update")


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    return _scatter("scatter_max", scatter_max_p, operand, scatter_indices, updates,
                    dimension_numbers, indices_are_sorted, unique_indices, mode)


scatter_max.__doc__ = _SCATTER_DOC.format("keeping the larger of each element and its update")


# scatter_apply: operand[i] = func(operand[i]) at each scattered position; `jaxpr` is func on a
# scalar, its closed-over values come in as the trailing operands `consts`.
def _scatter_apply_abstract(operand, indices, *consts, jaxpr, update_shape, dimension_numbers,
                            indices_are_sorted, unique_indices, mode):
    _scatter_shape_check(operand, indices, ShapedArray(update_shape, operand.dtype),
                         dimension_numbers)
    return operand


def _scatter_apply_impl(operand, indices, *consts, jaxpr, update_shape, dimension_numbers,
                        indices_are_sorted, unique_indices, mode):
    flat = operand.flatten()
    if flat.size and math.prod(update_shape):
        dummy = np.zeros(update_shape, operand.dtype)
        pos, _ = _scatter_targets(operand.shape, indices, dummy, dimension_numbers, mode)
        for p in pos:  # in order: a repeated index applies func repeatedly, as XLA does
            (flat[p],) = eval_jaxpr(jaxpr.jaxpr, (), *consts, flat[p])
    return flat.reshape(operand.shape)


scatter_apply_p = Primitive("scatter_apply")
scatter_apply_p.def_abstract_eval(_scatter_apply_abstract)
scatter_apply_p.def_impl(_scatter_apply_impl)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable,
                  dimension_numbers: ScatterDimensionNumbers, *, update_shape: Sequence[int] = (),
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None):
    """lax.scatter_apply: replace scattered elements x by func(x); duplicates apply it again."""
    (operand,) = as_lax_operands("scatter_apply", operand)
    (scatter_indices,) = as_lax_operands("scatter_apply", scatter_indices)
    scalar = ShapedArray((), get_aval(operand).dtype)
    closed = trace_to_jaxpr(lambda x: [func(x)], [scalar])
    (out_aval,) = closed.out_avals
    if (out_aval.shape, out_aval.dtype) != ((), scalar.dtype):
        raise ValueError(f"scatter_apply: func must map a {scalar.str_short()} scalar to one of "
                         f"the same type, got {out_aval.str_short()}")
    j = closed.jaxpr
    # closed-over values (possibly tracers of an outer trace) become explicit operands
    jaxpr = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info), [])
    return scatter_apply_p.bind(operand, scatter_indices, *closed.consts, jaxpr=jaxpr,
                                update_shape=check_shape(update_shape, "update_shape"),
                                dimension_numbers=_int_tuples(dimension_numbers,
                                                              ScatterDimensionNumbers),
                                indices_are_sorted=bool(indices_are_sorted),
                                unique_indices=bool(unique_indices),
                                mode=GatherScatterMode.from_any(mode))


# --- transformation rules: JVP, transpose, batching (JAX's, from its lax/slicing.py) ---------

def _linear_jvp(prim: Primitive, *linear: int) -> None:
    """A JVP for a primitive linear in its operands at positions `linear` jointly (the others are
    indices): the tangent is the primitive applied to the tangents and the same indices."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(type(tangents[i]) is Zero for i in linear):
            return out, Zero.from_primal(out)
        args = [instantiate(t) if i in linear else x
                for i, (x, t) in enumerate(zip(primals, tangents))]
        return out, prim.bind(*args, **params)
    prim.def_jvp(jvp)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    zeros = full_like_aval(aval_of(x), 0)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_transpose(ct, x, update, *starts):
    update_aval = aval_of(update)
    x_ct = dynamic_update_slice_p.bind(ct, full_like_aval(update_aval, 0), *starts) \
        if is_undefined(x) else None
    update_ct = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape) \
        if is_undefined(update) else None
    return [x_ct, update_ct] + [None] * len(starts)


def _start_index_vector(starts, dims):
    """dynamic_slice's scalar starts as one index vector, (n,), or (batch, n) when batched."""
    if not starts:
        return Array.from_numpy(np.zeros(0, np.int32), ShapedArray((0,), np.int32)), not_mapped
    if all(d is not_mapped for d in dims):
        return concatenate([broadcast(s, (1,)) for s in starts], 0), not_mapped
    size = axis_size(starts, dims)
    return concatenate([broadcast_in_dim(s, (size, 1), () if d is not_mapped else (0,))
                        for s, d in zip(starts, dims)], 1), 0


def _dynamic_slice_batch(vals, dims, *, slice_sizes):
    # a dynamic slice is a gather of one clamped window
    (x, *starts), (dx, *d_starts) = vals, dims
    axes = tuple(range(len(slice_sizes)))
    index, d_index = _start_index_vector(starts, d_starts)
    return _gather_batch([x, index], [dx, d_index],
                         dimension_numbers=GatherDimensionNumbers(axes, (), axes),
                         slice_sizes=slice_sizes, unique_indices=True, indices_are_sorted=True,
                         mode=GatherScatterMode.CLIP, fill_value=None)


def _dynamic_update_slice_batch(vals, dims):
    # a dynamic update slice is a scatter of one clamped window
    (x, update, *starts), (dx, du, *d_starts) = vals, dims
    axes = tuple(range(len(starts)))
    index, d_index = _start_index_vector(starts, d_starts)
    return _scatter_batch(scatter_p)([x, index, update], [dx, d_index, du],
                                     dimension_numbers=ScatterDimensionNumbers(axes, (), axes),
                                     indices_are_sorted=True, unique_indices=True,
                                     mode=GatherScatterMode.CLIP)


def _shift(dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d + 1 for d in dims)


def _gather_jvp(g, operand, indices, *, fill_value, **params):
    # out-of-bounds windows of a FILL_OR_DROP gather have a zero tangent, whatever they hold
    return gather_p.bind(g, indices, fill_value=None if fill_value is None else 0, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                      indices_are_sorted, mode, fill_value):
    dn = dimension_numbers
    dnums = ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                    dn.operand_batching_dims, dn.start_indices_batching_dims)
    zeros = full_like_aval(aval_of(operand), 0)
    return [scatter_add_p.bind(zeros, indices, ct, dimension_numbers=dnums,
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode), None]


def _gather_batch(vals, dims, *, dimension_numbers, slice_sizes, **params):
    (operand, indices), (d_operand, d_indices) = vals, dims
    dn = dimension_numbers
    if d_indices is not_mapped:  # the batch dimension becomes the first window dimension
        operand = moveaxis(operand, d_operand, 0)
        dnums = GatherDimensionNumbers((0,) + _shift(dn.offset_dims),
                                       _shift(dn.collapsed_slice_dims),
                                       _shift(dn.start_index_map),
                                       _shift(dn.operand_batching_dims),
                                       dn.start_indices_batching_dims)
        sizes = (get_aval(operand).shape[0],) + slice_sizes
        return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=sizes,
                             **params), 0
    indices = moveaxis(indices, d_indices, 0)
    if d_operand is not_mapped:  # the batch dimension becomes the first index batch dimension
        dnums = dn._replace(offset_dims=_shift(dn.offset_dims),
                            start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
        # lanes may index the same elements: the batched indices are neither sorted nor unique
        params = dict(params, unique_indices=False, indices_are_sorted=False)
        return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                             **params), 0
    # both batched: a batching dimension pairs each lane's indices with its operand
    operand = moveaxis(operand, d_operand, 0)
    dnums = GatherDimensionNumbers(_shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                   _shift(dn.start_index_map),
                                   (0,) + _shift(dn.operand_batching_dims),
                                   (0,) + _shift(dn.start_indices_batching_dims))
    sizes = (min(get_aval(operand).shape[0], 1),) + slice_sizes
    return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=sizes,
                         **params), 0


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather reading the windows the scatter `dn` writes."""
    return GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                  dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                  dn.scatter_indices_batching_dims)


def _window_sizes(operand_shape, updates_shape, dn: ScatterDimensionNumbers) -> tuple:
    """The operand window each update of scatter `dn` covers (slice sizes of its gather)."""
    window = iter(updates_shape[d] for d in dn.update_window_dims)
    return tuple(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims
                 else next(window) for d in range(len(operand_shape)))


def _gather_windows(x, indices, dn: ScatterDimensionNumbers, updates_shape, mode=None,
                    fill_value=None):
    """The windows of x at which scatter `dn` writes updates of shape `updates_shape`."""
    return gather(x, indices, _gather_dnums_of(dn),
                  _window_sizes(get_aval(x).shape, updates_shape, dn), mode=mode,
                  fill_value=fill_value)


def _scatter_add_transpose(negate: bool):
    def transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                  unique_indices, mode):
        updates_ct = None
        if is_undefined(updates):
            # out-of-bounds updates were dropped: their cotangent is zero
            updates_ct = _gather_windows(ct, indices, dimension_numbers, aval_of(updates).shape,
                                         mode, 0)
            updates_ct = neg(updates_ct) if negate else updates_ct
        return [ct if is_undefined(operand) else None, None, updates_ct]
    return transpose


_SCATTER_MUL_UNIQUE = "scatter_mul gradients are only implemented if `unique_indices=True`"
_SCATTER_UNIQUE = "scatter transpose is only implemented where unique_indices=True"


def _check_unique_indices(unique_indices: bool, message: str) -> None:
    """Duplicate indices would need every update's share of a result: unsupported, as in JAX."""
    if not unique_indices:
        raise NotImplementedError(message)


def _scatter_mul_jvp_updates(g, operand, indices, updates, *, dimension_numbers,
                             indices_are_sorted, unique_indices, mode):
    _check_unique_indices(unique_indices, _SCATTER_MUL_UNIQUE)
    g_at_operand = scatter_add(full_like(operand, 0), indices, g, dimension_numbers,
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)
    return mul(operand, g_at_operand)


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
    operand_ct = updates_ct = None
    if is_undefined(operand):
        operand_ct = scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dimension_numbers,
                                        indices_are_sorted=indices_are_sorted,
                                        unique_indices=unique_indices, mode=mode)
    if is_undefined(updates):
        _check_unique_indices(unique_indices, _SCATTER_MUL_UNIQUE)
        updates_ct = _gather_windows(mul(ct, operand), indices, dimension_numbers,
                                     aval_of(updates).shape, mode, 0)
    return [operand_ct, None, updates_ct]


def _scatter_extremal_jvp(prim: Primitive):
    """scatter-min/max: a tangent where the operand or an update wins, averaged over ties."""
    def jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
        operand, indices, updates = primals
        g_operand, _, g_updates = tangents
        dn = dimension_numbers
        out = prim.bind(operand, indices, updates, dimension_numbers=dn,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                        mode=mode)
        if type(g_operand) is Zero and type(g_updates) is Zero:
            return out, Zero.from_primal(out)
        g_operand, g_updates = instantiate(g_operand), instantiate(g_updates)
        shape = get_aval(updates).shape

        def at_updates(x):
            return _gather_windows(x, indices, dn, shape)

        def count(marks):  # how many updates, of those marked, land on each update's element
            return at_updates(scatter_add(full_like(operand, 0), indices, marks, dn))

        ones, zeros = full_like(updates, 1), full_like(updates, 0)
        target = at_updates(out)
        successful = eq(updates, target)
        retained = eq(at_updates(operand), target)
        num_updates = count(select(successful, ones, zeros))
        num_refs = count(ones)
        shared = div(1, add(num_updates, 1))
        updates_coef = select(successful, select(retained, shared, div(1, num_updates)), zeros)
        operand_coef = div(add(select(retained, shared, zeros), -1), num_refs)
        t_updates = add(mul(at_updates(g_operand), operand_coef), mul(g_updates, updates_coef))
        return out, scatter_add(g_operand, indices, t_updates, dn,
                                indices_are_sorted=indices_are_sorted,
                                unique_indices=unique_indices, mode=mode)
    return jvp


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode):
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    dn = dimension_numbers
    params = dict(dimension_numbers=dn, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    if type(g_operand) is Zero and type(g_updates) is Zero:
        out = scatter_p.bind(*primals, **params)
        return out, Zero.from_primal(out)
    g_operand, g_updates = instantiate(g_operand), instantiate(g_updates)
    if unique_indices:  # no update overwrites another: scatter is linear in (operand, updates)
        return (scatter_p.bind(*primals, **params),
                scatter_p.bind(g_operand, indices, g_updates, **params))
    # Which of several updates to one element wins is unspecified, so as JAX: scatter a distinct
    # id per update, read back which id each element kept, and keep only the winners' values and
    # tangents, combined by a scatter-add (whose transpose is a gather).
    shape = get_aval(updates).shape
    ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(shape))
    num_ids = math.prod(ids_shape)
    id_dtype = np.dtype(np.uint32 if num_ids < np.iinfo(np.uint32).max else np.uint64)
    ids = add(reshape(iota(id_dtype, num_ids), ids_shape), 1)
    update_ids = broadcast_in_dim(ids, shape, tuple(range(len(shape))))
    scattered_ids = scatter(full_like(operand, 0, id_dtype), indices, update_ids, dn,
                            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                            mode=mode)
    operand_kept = eq(scattered_ids, 0)
    update_won = eq(update_ids, _gather_windows(scattered_ids, indices, dn, shape))

    def combine(x, u):
        return scatter_add(select(operand_kept, x, full_like(x, 0)), indices,
                           select(update_won, u, full_like(u, 0)), dn,
                           indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           mode=mode)
    return combine(operand, updates), combine(g_operand, g_updates)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode):
    _check_unique_indices(unique_indices, _SCATTER_UNIQUE)
    updates_aval = aval_of(updates)
    operand_ct = updates_ct = None
    if is_undefined(operand):  # the overwritten elements get no cotangent
        operand_ct = scatter_p.bind(ct, indices, full_like_aval(updates_aval, 0),
                                    dimension_numbers=dimension_numbers,
                                    indices_are_sorted=indices_are_sorted, unique_indices=True,
                                    mode=mode)
    if is_undefined(updates):
        updates_ct = _gather_windows(ct, indices, dimension_numbers, updates_aval.shape, mode, 0)
    return [operand_ct, None, updates_ct]


def _batched_scatter_dnums(dn: ScatterDimensionNumbers, indices_batched: bool
                           ) -> ScatterDimensionNumbers:
    """Dimension numbers for operand and updates batched first: the batch dimension is the
    first update window dimension, or (batched indices) a batching dimension."""
    if not indices_batched:
        return ScatterDimensionNumbers((0,) + _shift(dn.update_window_dims),
                                       _shift(dn.inserted_window_dims),
                                       _shift(dn.scatter_dims_to_operand_dims),
                                       _shift(dn.operand_batching_dims),
                                       dn.scatter_indices_batching_dims)
    return ScatterDimensionNumbers(_shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                   _shift(dn.scatter_dims_to_operand_dims),
                                   (0,) + _shift(dn.operand_batching_dims),
                                   (0,) + _shift(dn.scatter_indices_batching_dims))


def _scatter_batch(prim: Primitive):
    def batch(vals, dims, *, dimension_numbers, **params):
        (operand, indices, updates), (d_operand, d_indices, d_updates) = vals, dims
        size = axis_size(vals, dims)
        operand = bdim_at_front(operand, d_operand, size)
        updates = bdim_at_front(updates, d_updates, size)
        if d_indices is not not_mapped:
            indices = moveaxis(indices, d_indices, 0)
        dnums = _batched_scatter_dnums(dimension_numbers, d_indices is not not_mapped)
        return prim.bind(operand, indices, updates, dimension_numbers=dnums, **params), 0
    return batch


def _scatter_apply_jvp(primals, tangents, **params):
    raise NotImplementedError("scatter_apply JVP not implemented")


def _scatter_apply_batch(vals, dims, *, dimension_numbers, update_shape, **params):
    (operand, indices, *consts), (d_operand, d_indices, *d_consts) = vals, dims
    if any(d is not not_mapped for d in d_consts):
        raise NotImplementedError("scatter_apply: func closes over a value batched by vmap; "
                                  "pass it in the operand instead")
    size = axis_size(vals, dims)
    operand = bdim_at_front(operand, d_operand, size)
    if d_indices is not not_mapped:
        indices = moveaxis(indices, d_indices, 0)
    dnums = _batched_scatter_dnums(dimension_numbers, d_indices is not not_mapped)
    return scatter_apply_p.bind(operand, indices, *consts, dimension_numbers=dnums,
                                update_shape=(size,) + update_shape, **params), 0


defjvp(dynamic_slice_p, lambda g, x, *starts, slice_sizes: dynamic_slice_p.bind(
    g, *starts, slice_sizes=slice_sizes))
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)
dynamic_slice_p.def_batch(_dynamic_slice_batch)
_linear_jvp(dynamic_update_slice_p, 0, 1)
dynamic_update_slice_p.def_transpose(_dynamic_update_slice_transpose)
dynamic_update_slice_p.def_batch(_dynamic_update_slice_batch)
defjvp(gather_p, _gather_jvp)
gather_p.def_transpose(_gather_transpose)
gather_p.def_batch(_gather_batch)
for _p, _negate in ((scatter_add_p, False), (scatter_sub_p, True)):
    _linear_jvp(_p, 0, 2)
    _p.def_transpose(_scatter_add_transpose(_negate))
defjvp(scatter_mul_p, lambda g, x, i, u, **params: scatter_mul_p.bind(g, i, u, **params), None,
       _scatter_mul_jvp_updates)
scatter_mul_p.def_transpose(_scatter_mul_transpose)
scatter_min_p.def_jvp(_scatter_extremal_jvp(scatter_min_p))
scatter_max_p.def_jvp(_scatter_extremal_jvp(scatter_max_p))
scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)
for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    _p.def_batch(_scatter_batch(_p))
scatter_apply_p.def_jvp(_scatter_apply_jvp)
scatter_apply_p.def_batch(_scatter_apply_batch)

__all__ = ["GatherScatterMode", "GatherDimensionNumbers", "ScatterDimensionNumbers",
           "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim",
           "dynamic_index_in_dim", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
           "gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
           "scatter_max", "scatter_apply"]
