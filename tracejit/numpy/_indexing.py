"""Indexing in tracejit.numpy: `x[idx]` and `x.at[idx]` (NumPy's basic and advanced indexing,
lowered to lax slices, dynamic slices and gathers/scatters with JAX's out-of-bounds rules), and
the index functions (take, take_along_axis, where, nonzero, diagonal, tril_indices, ...).

Static basic indices become `slice`/`rev`/`squeeze`/`expand_dims`; scalar traced indices a
`dynamic_slice`; everything else one `gather` (or `scatter` for `.at[...]` updates).
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple

import numpy as np

from ..core import dtypes, errors
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.slicing import Slice
from ..core.trace import Tracer, concrete_value, get_aval
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis, const_like
from ..lax.indexing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from ._reductions import sum as _sum
from ._ufuncs import _where, add, divmod, multiply, power, remainder, true_divide
from ._util import asarray, broadcast_shapes, broadcast_to, check_arraylike, promote_dtypes

__all__ = ["take", "take_along_axis", "where", "select", "nonzero", "argwhere", "flatnonzero",
           "extract", "compress", "choose", "diagonal", "diag", "diag_indices",
           "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "trace", "put", "place", "unravel_index", "ravel_multi_index",
           "ix_"]

# --- parsing an index ----------------------------------------------------------------------

_NONE, _ELLIPSIS, _SLICE, _INT, _BOOL, _ARRAY = "none", "ellipsis", "slice", "int", "bool", "array"


class _Idx(NamedTuple):
    kind: str    # one of the six kinds above
    value: Any   # the index (slices hold Python ints; sequences became arrays)
    ndim: int    # how many dimensions of the indexed array it consumes


def _as_tuple(idx: Any) -> tuple:
    # JAX rejects NumPy's deprecated list-as-tuple indexing outright
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, str):
        unpack = any((isinstance(i, (Sequence, slice)) and not isinstance(i, str)) or
                     i is None or i is Ellipsis or np.ndim(i) != 0 for i in idx)
        fix = "arr[tuple(seq)]" if unpack else "arr[array(seq)]"
        raise TypeError(f"Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed; use `{fix}` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    return (idx,)


def _static_slice_entry(x: Any, s: slice, position: int) -> int | None:
    if x is None:
        return None
    if isinstance(x, Tracer) and x.to_concrete_value() is None:
        raise IndexError(f"Slice entries must be static integers. Got {s} at position {position}")
    return operator.index(x)


def _classify(i: Any, position: int) -> _Idx:
    if i is None:
        return _Idx(_NONE, None, 0)
    if i is Ellipsis:
        return _Idx(_ELLIPSIS, i, 0)
    if isinstance(i, slice):
        s = slice(*(_static_slice_entry(v, i, position) for v in (i.start, i.stop, i.step)))
        return _Idx(_SLICE, s, 1)
    if isinstance(i, Slice):  # jax.ds: a static one is the builtin slice it stands for
        if i.is_dynamic_size:
            raise IndexError(f"the size of a jax.ds slice must be static; got {i} at position "
                             f"{position}")
        if not i.is_dynamic_start:
            return _Idx(_SLICE, slice(i.start, i.start + i.size, i.stride), 1)
        return _Idx(_SLICE, i, 1)  # an array start: a dynamic slice (or a gather, strided)
    if isinstance(i, (bool, np.bool_)):
        return _Idx(_BOOL, bool(i), 0)
    if isinstance(i, (int, np.integer)):
        return _Idx(_INT, i, 1)
    if isinstance(i, str):
        raise TypeError(f"JAX does not support string indexing; got idx={i!r}")
    if isinstance(i, (float, complex, np.generic)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(type(i))}")
    if isinstance(i, Sequence):  # a list inside the index tuple is an index array
        i = asarray(i) if len(i) else np.zeros((0,), np.int32)
    if isinstance(i, (Array, Tracer, np.ndarray)):
        dtype = i.dtype
        if dtype == np.bool_:
            return _Idx(_BOOL, i, i.ndim)
        if dtypes.is_int(np.dtype(dtype)):
            return _Idx(_ARRAY, i, 1)
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dtype}")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
                     f"integer or boolean arrays are valid indices. Got {i}")


def _parse(idx: Any, ndim: int) -> list[_Idx]:
    entries = [_classify(i, p) for p, i in enumerate(_as_tuple(idx))]
    ellipses = [p for p, e in enumerate(entries) if e.kind == _ELLIPSIS]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(e.ndim for e in entries)
    if consumed > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {consumed} were "
                         "indexed")
    if ellipses:
        entries[ellipses[0]] = _Idx(_ELLIPSIS, Ellipsis, ndim - consumed)
    return entries


def _expand_ellipsis(entries: list[_Idx], ndim: int) -> list[_Idx]:
    """The entries with `...` and the implicit trailing `:`s written out as full slices."""
    full = _Idx(_SLICE, slice(None), 1)
    out = []
    for e in entries:
        out.extend([full] * e.ndim if e.kind == _ELLIPSIS else [e])
    return out + [full] * (ndim - sum(e.ndim for e in out))


def _index_dtype(shape: Sequence[int]) -> np.dtype:
    return dtypes.canonicalize_dtype(np.int64) if any(d > np.iinfo(np.int32).max
                                                      for d in shape) else dtypes.int32


def _full(shape: Sequence[int], value: Any, dtype: np.dtype, weak: bool = False):
    return lax.broadcast(const_like(ShapedArray((), dtype, weak), value), tuple(shape))


def _normalize_index(i: Any, size: int):
    """Signed integer indices counted from the end once (i + size where i < 0)."""
    aval = get_aval(i)
    if aval.dtype.kind != "i":  # unsigned ones cannot be negative; floats fail in the gather
        return i
    if size > np.iinfo(aval.dtype).max:  # i + size must not overflow a narrow index type
        i = lax.convert_element_type(i, _index_dtype((size,)))
        aval = get_aval(i)
    return lax.select(lax.lt(i, const_like(aval, 0)), lax.add(i, const_like(aval, size)), i)


# --- x[idx]: static slice, dynamic slice or gather -----------------------------------------

def _slice_bounds(s: slice, size: int) -> tuple[int, int, int, bool]:
    """(start, limit, stride, reversed) of a static slice as a forward lax.slice."""
    start, stop, step = s.indices(size)
    if step > 0:
        return start, max(start, stop), step, False
    lo = min(size, stop + 1 + abs(start - stop - 1) % -step)
    return lo, max(lo, start + 1), -step, True


def _static_take(arr: Any, entries: list[_Idx], normalize: bool):
    shape = get_aval(arr).shape
    starts, limits, strides, rev_axes, squeeze_axes, new_axes = [], [], [], [], [], []
    for e in _expand_ellipsis(entries, len(shape)):
        axis = len(starts)
        if e.kind == _NONE:
            new_axes.append(axis - len(squeeze_axes) + len(new_axes))
            continue
        if e.kind == _INT:
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            i = int(e.value)
            i = i + shape[axis] if normalize and i < 0 else i
            i = min(max(i, 0), shape[axis] - 1)  # out-of-range static ints clamp, as in JAX
            lo, hi, stride, reverse = i, i + 1, 1, False
            squeeze_axes.append(axis)
        else:
            lo, hi, stride, reverse = _slice_bounds(e.value, shape[axis])
        starts.append(lo)
        limits.append(hi)
        strides.append(stride)
        if reverse:
            rev_axes.append(axis)
    out = lax.slice(arr, starts, limits, strides)
    out = lax.rev(out, rev_axes) if rev_axes else out
    out = lax.squeeze(out, squeeze_axes) if squeeze_axes else out
    return lax.expand_dims(out, new_axes) if new_axes else out


def _dynamic_take(arr: Any, entries: list[_Idx], normalize: bool):
    shape = get_aval(arr).shape
    starts, sizes, rev_axes, squeeze_axes, new_axes = [], [], [], [], []
    for e in _expand_ellipsis(entries, len(shape)):
        axis = len(starts)
        if e.kind == _NONE:
            new_axes.append(axis - len(squeeze_axes) + len(new_axes))
        elif e.kind == _SLICE and type(e.value) is Slice:  # (jax.ds with a traced start)
            starts.append(e.value.start)
            sizes.append(e.value.size)
        elif e.kind == _SLICE:
            lo, hi, _, reverse = _slice_bounds(e.value, shape[axis])
            starts.append(lo)
            sizes.append(hi - lo)
            if reverse:
                rev_axes.append(axis)
        else:
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            starts.append(e.value)
            sizes.append(1)
            squeeze_axes.append(axis)
    idx_dtype = _index_dtype(shape)
    starts = [_full((), s, idx_dtype) if isinstance(s, (int, np.integer)) else
              lax.convert_element_type(s, idx_dtype) for s in starts]
    out = lax.dynamic_slice(arr, starts, sizes, allow_negative_indices=normalize)
    out = lax.rev(out, rev_axes) if rev_axes else out
    out = lax.squeeze(out, squeeze_axes) if squeeze_axes else out
    return lax.expand_dims(out, new_axes) if new_axes else out


class _GatherIndexer(NamedTuple):
    slice_shape: tuple          # shape of x[idx]
    gather_slice_shape: tuple   # slice_sizes of the gather
    gather_indices: Any         # (..., k) integer array
    dnums: GatherDimensionNumbers
    basic: bool                 # no index arrays: indices are sorted and unique
    newaxis_dims: tuple         # result axes made by None
    scalar_bool_dims: tuple     # axes inserted into x for scalar boolean indices


def _concrete_mask(mask: Any) -> np.ndarray:
    if isinstance(mask, Tracer) and mask.to_concrete_value() is None:
        raise errors.boolean_index_error(mask)
    return np.asarray(mask.to_concrete_value() if isinstance(mask, Tracer) else mask)


def _expand_bools(shape: tuple, entries: list[_Idx]) -> tuple[tuple, list[_Idx], tuple]:
    """Boolean masks become integer index arrays (their nonzero()); a scalar boolean becomes an
    index array of length 1 or 0 on a new size-1 axis of x. Returns (shape, entries, new axes)."""
    shape, out, new_axes, axis = list(shape), [], [], 0
    for position, e in enumerate(entries):
        if e.kind != _BOOL:
            out.append(e)
            axis += e.ndim
            continue
        mask = _concrete_mask(e.value)
        if mask.ndim == 0:
            shape.insert(axis, 1)
            new_axes.append(axis)
            out.append(_Idx(_ARRAY, np.arange(int(mask)), 1))
            axis += 1
            continue
        expected = shape[axis:axis + mask.ndim]
        if not all(m in (0, s) for m, s in zip(mask.shape, expected)):
            raise IndexError(f"boolean index did not match shape of indexed array in index "
                             f"{position}: got {mask.shape}, expected {expected}")
        out.extend(_Idx(_ARRAY, i, 1) for i in np.nonzero(mask))
        axis += mask.ndim
    return tuple(shape), out, tuple(new_axes)


def _to_gather(shape: tuple, entries: list[_Idx], normalize: bool) -> _GatherIndexer:
    """NumPy indexing as one XLA gather (JAX's _index_to_gather)."""
    shape, entries, scalar_bool_dims = _expand_bools(shape, entries)
    advanced = [p for p, e in enumerate(entries) if e.kind in (_INT, _ARRAY)]
    # index arrays separated by a slice, None or ... put their result dimensions first (NumPy)
    contiguous = all(b - a == 1 for a, b in zip(advanced, advanced[1:]))
    entries = _expand_ellipsis(entries, len(shape))
    if not any(e.kind == _ARRAY and np.ndim(e.value) > 0 for e in entries):
        advanced = []
    else:
        advanced = [p for p, e in enumerate(entries) if e.kind in (_INT, _ARRAY)]
    idx_dtype = _index_dtype(shape)

    def index_array(e: _Idx, size: int):
        if e.kind == _INT:  # a static int is normalized here, not in the program
            i = int(e.value)
            return _full((), i + size if normalize and i < 0 else i, idx_dtype)
        i = asarray(e.value)
        signed = get_aval(i).dtype.kind == "i"
        i = lax.convert_element_type(i, idx_dtype)
        return _normalize_index(i, size) if normalize and signed else i

    gather_indices: list = []   # (index array, its first dimension in the batch shape)
    batch_shape: list = []
    offset_dims, collapsed, start_index_map = [], [], []
    slice_shape, newaxis_dims, gather_slice_shape = [], [], []
    x_axis = y_axis = collapsed_y_axis = 0
    for position, e in enumerate(entries):
        if advanced and position == (advanced[0] if contiguous else 0):
            x_axes = [sum(f.kind != _NONE for f in entries[:p]) for p in advanced]
            arrays = [index_array(entries[p], shape[a]) for p, a in zip(advanced, x_axes)]
            bshape = broadcast_shapes(*(get_aval(a).shape for a in arrays))
            gather_indices += [(broadcast_to(a, bshape), len(batch_shape)) for a in arrays]
            batch_shape += bshape
            start_index_map += x_axes
            collapsed += x_axes
            slice_shape += bshape
            y_axis += len(bshape)
            collapsed_y_axis += len(bshape)
        if position in advanced:
            x_axis += 1
            gather_slice_shape.append(1)
        elif e.kind in (_INT, _ARRAY):  # a scalar index without index arrays around
            if shape[x_axis] == 0:
                raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
            gather_indices.append((index_array(e, shape[x_axis]), len(batch_shape)))
            collapsed.append(x_axis)
            start_index_map.append(x_axis)
            gather_slice_shape.append(1)
            x_axis += 1
        elif e.kind == _NONE:
            slice_shape.append(1)
            newaxis_dims.append(y_axis)
            y_axis += 1
        else:
            if type(e.value) is Slice:  # jax.ds with a traced start: start + stride * k
                start = lax.convert_element_type(e.value.start, idx_dtype)
                size, step = e.value.size, e.value.stride
            else:
                start, stop, step = e.value.indices(shape[x_axis])
                size = len(range(start, stop, step))
                start = _full((), start, idx_dtype)
            slice_shape.append(size)
            if step == 1:
                if size != shape[x_axis] or type(e.value) is Slice:
                    gather_indices.append((start, len(batch_shape)))
                    start_index_map.append(x_axis)
                gather_slice_shape.append(size)
                offset_dims.append(collapsed_y_axis)
            else:  # a strided slice gathers its elements one by one
                steps = lax.mul(lax.iota(idx_dtype, size), _full((size,), step, idx_dtype))
                gather_indices.append((lax.add(steps, lax.broadcast(start, (size,))),
                                       len(batch_shape)))
                batch_shape.append(size)
                start_index_map.append(x_axis)
                collapsed.append(x_axis)
                gather_slice_shape.append(1)
            collapsed_y_axis += 1
            y_axis += 1
            x_axis += 1
    if not gather_indices:
        indices = _full((0,), 0, idx_dtype)
    else:
        full = tuple(batch_shape) + (1,)
        indices = lax.concatenate([
            lax.broadcast_in_dim(g, full, tuple(range(d, d + get_aval(g).ndim)))
            for g, d in gather_indices], len(batch_shape))
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(sorted(collapsed)),
                                   start_index_map=tuple(start_index_map))
    return _GatherIndexer(tuple(slice_shape), tuple(gather_slice_shape), indices, dnums,
                          not advanced, tuple(newaxis_dims), scalar_bool_dims)


def _scalar_fill_value(fill_value: Any) -> Any:
    if isinstance(fill_value, Tracer):
        fill_value = concrete_value(fill_value, "fill_value must be concrete (known while "
                                    "tracing).")
    if np.ndim(fill_value) != 0:
        raise ValueError("fill_value argument to indexed get() must be a scalar")
    return np.asarray(fill_value).item()


def _rewriting_take(arr: Any, idx: Any, *, indices_are_sorted: bool = False,
                    unique_indices: bool = False, mode: Any = None, fill_value: Any = None,
                    normalize: bool = True):
    """arr[idx]: a static slice if possible, else a dynamic slice, else a gather."""
    arr = asarray(arr)
    aval = get_aval(arr)
    entries = _parse(idx, aval.ndim)
    parsed_mode = None if mode is None else GatherScatterMode.from_any(mode)
    if parsed_mode in (None, GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP):
        if all(e.kind in (_NONE, _ELLIPSIS, _INT) or
               e.kind == _SLICE and type(e.value) is slice for e in entries):
            return _static_take(arr, entries, normalize)
        if all(e.kind in (_NONE, _ELLIPSIS, _INT) or
               e.kind == _SLICE and type(e.value) is slice and e.value.step in (None, 1, -1) or
               e.kind == _SLICE and type(e.value) is Slice and e.value.stride == 1 or
               e.kind == _ARRAY and np.ndim(e.value) == 0 for e in entries):
            return _dynamic_take(arr, entries, normalize)
    ix = _to_gather(aval.shape, entries, normalize)
    if fill_value is not None:
        fill_value = _scalar_fill_value(fill_value)
    y = lax.expand_dims(arr, ix.scalar_bool_dims) if ix.scalar_bool_dims else arr
    if 0 in ix.slice_shape:
        return _full(ix.slice_shape, 0, aval.dtype, aval.weak_type)
    if get_aval(ix.gather_indices).size:
        y = lax.gather(y, ix.gather_indices, ix.dnums, ix.gather_slice_shape,
                       unique_indices=unique_indices or ix.basic,
                       indices_are_sorted=indices_are_sorted or ix.basic, mode=mode,
                       fill_value=fill_value)
    return lax.expand_dims(y, ix.newaxis_dims) if ix.newaxis_dims else y


def getitem(x: Any, idx: Any):
    """x[idx] with NumPy's indexing rules and JAX's clamping of out-of-bounds indices."""
    return _rewriting_take(x, idx)


# --- x.at[idx]: scatters ---------------------------------------------------------------------

def _scatter_update(x: Any, idx: Any, y: Any, scatter_op: Callable, *, indices_are_sorted: bool,
                    unique_indices: bool, mode: Any, normalize: bool):
    """The value of `x` after `x[idx] op= y`, as one scatter (JAX's _scatter_update)."""
    x = asarray(x)
    aval = get_aval(x)
    if isinstance(y, int) and not isinstance(y, bool) and dtypes.is_int(aval.dtype) and \
            np.iinfo(aval.dtype).min <= y <= np.iinfo(aval.dtype).max:
        y = asarray(y, dtype=aval.dtype)
    else:
        y = asarray(y)
    ix = _to_gather(aval.shape, _parse(idx, aval.ndim), normalize)
    y_dtype = get_aval(y).dtype
    if y_dtype != aval.dtype and dtypes.result_type(y, aval.dtype) != aval.dtype:
        warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value from "
                      f"dtype={y_dtype} to dtype={aval.dtype} with jax_numpy_dtype_promotion="
                      "standard. In future JAX releases this will result in an error.",
                      FutureWarning, stacklevel=4)
    if 0 in ix.slice_shape:
        return x
    x, y = promote_dtypes(x, y)
    y = broadcast_to(y, ix.slice_shape)
    y = lax.squeeze(y, ix.newaxis_dims) if ix.newaxis_dims else y
    x = lax.expand_dims(x, ix.scalar_bool_dims) if ix.scalar_bool_dims else x
    dnums = ScatterDimensionNumbers(update_window_dims=ix.dnums.offset_dims,
                                    inserted_window_dims=ix.dnums.collapsed_slice_dims,
                                    scatter_dims_to_operand_dims=ix.dnums.start_index_map)
    out = scatter_op(x, ix.gather_indices, y, dnums,
                     indices_are_sorted=indices_are_sorted or ix.basic,
                     unique_indices=unique_indices or ix.basic, mode=mode)
    out = lax.squeeze(out, ix.scalar_bool_dims) if ix.scalar_bool_dims else out
    return lax.convert_element_type(out, aval.dtype, aval.weak_type)


class IndexUpdateHelper:
    """`x.at`: indexing it gives an IndexUpdateRef whose methods return updated copies of x."""
    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """`x.at[idx]`: pure versions of `x[idx] = y`, `x[idx] += y`, ... and `x[idx]` itself.

    Repeated indices accumulate in add/multiply/min/max; in set the last update wins. Updates
    out of bounds are dropped unless mode='clip'; get() clamps unless mode='fill'.
    """
    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None, wrap_negative_indices: bool = True):
        return _rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                               normalize=wrap_negative_indices)

    def _update(self, values: Any, scatter_op: Callable, indices_are_sorted: bool,
                unique_indices: bool, mode: Any, wrap_negative_indices: bool, array: Any = None):
        return _scatter_update(self.array if array is None else array, self.index, values,
                               scatter_op, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode,
                               normalize=wrap_negative_indices)

    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter_add, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None,
                 wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter_sub, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None,
                 wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: Any = None,
               wrap_negative_indices: bool = True):
        # x / (ones with the divisors scattered in): ints become floats, as in JAX
        aval = get_aval(asarray(self.array))
        ones = _full(aval.shape, 1, aval.dtype, aval.weak_type)
        divisor = self._update(values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                               wrap_negative_indices, ones)
        return true_divide(self.array, divisor)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None,
              wrap_negative_indices: bool = True):
        aval = get_aval(asarray(self.array))
        ones = _full(aval.shape, 1, aval.dtype, aval.weak_type)
        exponent = self._update(values, lax.scatter_mul, indices_are_sorted, unique_indices,
                                mode, wrap_negative_indices, ones)
        return power(self.array, exponent)

    def min(self, values: Any, *, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False, mode: Any = None, wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter_min, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    def max(self, values: Any, *, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False, mode: Any = None, wrap_negative_indices: bool = True):
        return self._update(values, lax.scatter_max, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)

    def apply(self, func: Callable, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None, wrap_negative_indices: bool = True):
        """x with func applied at idx; a repeated index applies func again (ufunc.at)."""
        def scatter_apply(x, indices, y, dnums, **kw):
            return lax.scatter_apply(x, indices, func, dnums, update_shape=get_aval(y).shape, **kw)
        aval = get_aval(asarray(self.array))
        zero = _full((), 0, aval.dtype, aval.weak_type)
        return self._update(zero, scatter_apply, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices)


# --- take / take_along_axis ----------------------------------------------------------------

def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None):
    """Elements of `a` at `indices` along `axis` (flattened if None); out of bounds fill NaN
    (or the dtype's extreme) unless mode is 'clip' or 'wrap'."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    check_arraylike("take", a, indices)
    a, indices = asarray(a), asarray(indices)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    shape = get_aval(a).shape
    axis = canonicalize_axis(operator.index(axis), len(shape))
    if mode is None or mode == "fill":
        gather_mode = GatherScatterMode.FILL_OR_DROP
        indices = _normalize_index(indices, shape[axis])
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    elif mode == "wrap":
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
        indices = remainder(indices, shape[axis]) if shape[axis] else indices
    elif mode == "clip":
        gather_mode = GatherScatterMode.CLIP
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    idx_aval = get_aval(indices)
    if shape[axis] == 0:
        if idx_aval.size:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return a
    aval = get_aval(a)
    if idx_aval.size == 0:
        return _full(shape[:axis] + idx_aval.shape + shape[axis + 1:], 0, aval.dtype,
                     aval.weak_type)
    slice_sizes = list(shape)
    slice_sizes[axis] = 1
    n = idx_aval.ndim
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + n, len(shape) + n - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    return lax.gather(a, lax.expand_dims(indices, (n,)), dnums, slice_sizes,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      mode=gather_mode, fill_value=fill_value)


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, mode: Any = None,
                    fill_value: Any = None, *, wrap_negative_indices: bool | None = None):
    """out[..., i, ...] = arr[..., indices[..., i, ...], ...] along `axis`, broadcasting the
    other dimensions; out of bounds fill unless mode is 'clip' or 'promise_in_bounds'."""
    check_arraylike("take_along_axis", arr, indices)
    a, indices = asarray(arr), asarray(indices)
    idx_aval = get_aval(indices)
    if not dtypes.is_int(idx_aval.dtype):
        raise TypeError(f"take_along_axis indices must be of integer type, got "
                        f"{idx_aval.dtype}")
    if axis is None:
        if idx_aval.ndim != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{idx_aval.shape}")
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    aval = get_aval(a)
    rank, idx_shape = aval.ndim, idx_aval.shape
    if rank != idx_aval.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"{idx_aval.ndim} vs. {rank}")
    axis = canonicalize_axis(axis, rank)
    arr_shape = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
    out_shape = broadcast_shapes(idx_shape, arr_shape)
    if aval.shape[axis] == 0:
        return _full(out_shape, 0, aval.dtype)
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    indices = lax.convert_element_type(indices, _index_dtype(aval.shape))
    if wrap_negative_indices:
        indices = _normalize_index(indices, aval.shape[axis])
    index_dims = [i for i, s in enumerate(idx_shape) if i == axis or s != 1]
    indices = lax.reshape(indices, tuple(out_shape[i] for i in index_dims) + (1,))
    # each dimension is the gathered axis, a full window (index size 1), squeezed away
    # (operand size 1) or a batching dimension pairing operand and index elements
    slice_sizes, offset_dims, collapsed, start_map = [], [], [], []
    operand_bdims, indices_bdims, squeezed = [], [], []
    new_i = j = 0
    for i in range(rank):
        if i == axis:
            slice_sizes.append(1)
            start_map.append(new_i)
            collapsed.append(new_i)
            new_i += 1
            j += 1
        elif idx_shape[i] == 1:
            offset_dims.append(i)
            slice_sizes.append(arr_shape[i])
            new_i += 1
        elif arr_shape[i] == 1:
            squeezed.append(i)
            j += 1
        else:
            slice_sizes.append(1)
            operand_bdims.append(new_i)
            indices_bdims.append(j)
            new_i += 1
            j += 1
    a = lax.squeeze(a, squeezed) if squeezed else a
    dnums = GatherDimensionNumbers(tuple(offset_dims), tuple(collapsed), tuple(start_map),
                                   tuple(operand_bdims), tuple(indices_bdims))
    return lax.gather(a, indices, dnums, tuple(slice_sizes),
                      mode="fill" if mode is None else mode, fill_value=fill_value)


# --- where / select / nonzero --------------------------------------------------------------

def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None):
    """where(c, x, y): elementwise choice with promotion; where(c): nonzero(c, size=...)."""
    if x is None and y is None:
        check_arraylike("where", condition)
        return nonzero(condition, size=size, fill_value=fill_value)
    check_arraylike("where", condition, x, y)
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    return _where(condition, x, y)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0):
    """The choice of the first true condition, elementwise; `default` where none holds."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    conds = [lax.convert_element_type(asarray(c), dtypes.bool_) for c in condlist]
    choices = promote_dtypes(default, *choicelist)
    shape = broadcast_shapes(*(get_aval(v).shape for v in conds + choices))
    out, *choices = (broadcast_to(v, shape) for v in choices)
    for cond, choice in reversed(list(zip(conds, choices))):
        out = lax.select(broadcast_to(cond, shape), choice, out)
    return out


def _static_int(x: Any, what: str) -> int:
    if isinstance(x, Tracer):
        x = concrete_value(x, f"The {what} must be static (known while tracing).")
    return operator.index(x)


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """Indices of the nonzero elements, one array per dimension. Under jit `size` must be given:
    the result is truncated or padded (with 0 or `fill_value`) to that length."""
    check_arraylike("nonzero", a)
    arr = asarray(a)
    aval = get_aval(arr)
    if aval.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "jnp.atleast_1d(scalar).nonzero() instead.")
    int_dtype = dtypes.default_int()
    mask = arr if aval.dtype == dtypes.bool_ else lax.ne(arr, const_like(aval, 0))
    flat = lax.convert_element_type(lax.reshape(mask, (aval.size,)), int_dtype)
    count = lax.reduce_sum(flat, (0,))
    if size is None:
        size = concrete_value(count, "The size argument of jnp.nonzero must be statically "
                              "specified to use jnp.nonzero within JAX transformations.")
    size = _static_int(size, "size argument of jnp.nonzero")
    if aval.size == 0 or size == 0:
        return tuple(_full((size,), 0, int_dtype) for _ in aval.shape)
    # the k-th nonzero sits at flat index #{j : cumsum(mask)[j] <= k}: a bincount, then a cumsum
    ones = _full((aval.size,), 1, int_dtype)
    counts = lax.scatter_add(_full((size,), 0, int_dtype),
                             lax.reshape(lax.cumsum(flat), (aval.size, 1)), ones,
                             ScatterDimensionNumbers((), (0,), (0,)))
    flat_indices = lax.cumsum(counts)
    out = []
    for axis, d in enumerate(aval.shape):
        stride = math.prod(aval.shape[axis + 1:])
        out.append(lax.rem(lax.div(flat_indices, stride), d))
    if fill_value is not None:
        fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * aval.ndim
        if len(fills) != aval.ndim or any(np.shape(v) != () for v in fills):
            raise ValueError(f"fill_value must be a scalar or a tuple of length {aval.ndim}; "
                             f"got {fill_value}")
        padding = lax.ge(lax.iota(int_dtype, size), count)
        out = [_where(padding, v, o) for v, o in zip(fills, out)]
    return tuple(out)


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None):
    """nonzero(a) stacked as rows: shape (count or size, a.ndim)."""
    check_arraylike("argwhere", a)
    a = asarray(a)
    ndim = get_aval(a).ndim
    cols = nonzero(a if ndim else lax.reshape(a, (1,)), size=size, fill_value=fill_value)
    rows = get_aval(cols[0]).shape[0]
    out = lax.concatenate([lax.reshape(c, (rows, 1)) for c in cols], 1)
    return out if ndim else lax.slice(out, (0, 0), (rows, 0))


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None):
    """Indices of the nonzero elements of the flattened array."""
    check_arraylike("flatnonzero", a)
    a = asarray(a)
    return nonzero(lax.reshape(a, (get_aval(a).size,)), size=size, fill_value=fill_value)[0]


def _moveaxes(x: Any, src: Sequence[int], dst: Sequence[int]):
    ndim = get_aval(x).ndim
    src = [canonicalize_axis(s, ndim) for s in src]
    dst = [canonicalize_axis(d, ndim) for d in dst]
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(x, perm)


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None):
    """The slices of `a` along `axis` where `condition` is true (padded to `size` if given)."""
    check_arraylike("compress", condition, a, fill_value)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    cond = lax.convert_element_type(asarray(condition), dtypes.bool_)
    if get_aval(cond).ndim != 1:
        raise ValueError("condition must be a 1D array")
    arr = asarray(a)
    if axis is None:
        axis, arr = 0, lax.reshape(arr, (get_aval(arr).size,))
    else:
        arr = _moveaxes(arr, (axis,), (0,))
    aval = get_aval(arr)
    n = aval.shape[0]
    cond, extra = cond[:n], cond[n:]
    arr = arr[:get_aval(cond).shape[0]]
    if size is None:
        if bool(lax.reduce_or(extra, (0,))):
            raise ValueError("condition contains entries that are out of bounds")
        result = arr[cond]
    elif not 0 <= size <= n:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={n}")
    else:
        (kept,) = nonzero(cond, size=size)
        count = lax.reduce_sum(lax.convert_element_type(cond, dtypes.int32), (0,))
        valid = lax.lt(lax.iota(dtypes.int32, size), count)
        rows = getitem(arr, kept)
        fill = asarray(fill_value, dtype=aval.dtype)
        result = _where(lax.broadcast_in_dim(valid, get_aval(rows).shape, (0,)), rows, fill)
    return _moveaxes(result, (0,), (axis,))


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0):
    """The elements of `arr` (flattened) where `condition` (flattened) is nonzero."""
    check_arraylike("extract", condition, arr, fill_value)
    condition, arr = asarray(condition), asarray(arr)
    return compress(lax.reshape(condition, (get_aval(condition).size,)),
                    lax.reshape(arr, (get_aval(arr).size,)), size=size, fill_value=fill_value)


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise"):
    """out[i] = choices[a[i]][i] with broadcasting; mode 'raise' needs concrete `a`."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    check_arraylike("choose", a, *choices)
    a = asarray(a)
    if not dtypes.is_int(get_aval(a).dtype):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        value = concrete_value(a, "The error occurred because jnp.choose was jit-compiled with "
                               "mode='raise'. Use mode='wrap' or mode='clip' instead.")
        if np.any((value < 0) | (value >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = remainder(a, n)
    elif mode == "clip":
        a = lax.clamp(0, a, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    dtype = dtypes.result_type(*choices)  # like jnp.array(choices): a strong dtype
    cases = [lax.convert_element_type(asarray(c), dtype) for c in choices]
    shape = broadcast_shapes(*(get_aval(v).shape for v in [a] + cases))
    return lax.select_n(broadcast_to(a, shape), *(broadcast_to(c, shape) for c in cases))


# --- diagonals -----------------------------------------------------------------------------

def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The `offset` diagonal of the (axis1, axis2) planes, as the last axis of the result."""
    check_arraylike("diagonal", a)
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = _static_int(offset, "'offset' argument of jnp.diagonal()")
    axis1, axis2 = canonicalize_axis(axis1, len(shape)), canonicalize_axis(axis2, len(shape))
    if axis1 == axis2:
        raise ValueError(f"axis1 and axis2 cannot be the same, got {axis1}")
    a = _moveaxes(a, (axis1, axis2), (-2, -1))
    n = max(0, min(shape[axis1] + min(offset, 0), shape[axis2] - max(offset, 0)))
    i, j = np.arange(n), np.arange(abs(offset), abs(offset) + n)
    return getitem(a, (Ellipsis, i, j) if offset >= 0 else (Ellipsis, j, i))


def diag(v: Any, k: int = 0):
    """A 1-D v as the k-th diagonal of a square matrix; the k-th diagonal of a 2-D v."""
    check_arraylike("diag", v)
    v = asarray(v)
    k = operator.index(k)
    aval = get_aval(v)
    if aval.ndim == 2:
        return diagonal(v, offset=k)
    if aval.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = aval.shape[0] + abs(k)
    zero = const_like(aval, 0)
    rows = lax.pad(v, zero, ((max(0, -k), max(0, k), 0),))
    on_diag = lax.eq(lax.add(lax.broadcasted_iota(dtypes.int32, (n, n), 0), k),
                     lax.broadcasted_iota(dtypes.int32, (n, n), 1))
    return lax.select(on_diag, lax.broadcast_in_dim(rows, (n, n), (0,)),
                      lax.broadcast(zero, (n, n)))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None):
    """Sum along the `offset` diagonal of the (axis1, axis2) planes (jnp.sum's dtype rules)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    check_arraylike("trace", a)
    a = asarray(a)
    ndim = get_aval(a).ndim
    if canonicalize_axis(axis1, ndim) == canonicalize_axis(axis2, ndim):
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """The indices of the main diagonal of an (n,)*ndim array."""
    n = _static_int(n, "'n' argument of jnp.diag_indices()")
    ndim = _static_int(ndim, "'ndim' argument of jnp.diag_indices()")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (lax.iota(dtypes.default_int(), n),) * ndim


def diag_indices_from(arr: Any) -> tuple:
    """diag_indices for an array whose dimensions are all equal."""
    check_arraylike("diag_indices_from", arr)
    shape = get_aval(asarray(arr)).shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def _tri_indices(np_fn: Callable, name: str, n: Any, k: Any, m: Any) -> tuple:
    n = _static_int(n, f"n argument of jnp.{name}")
    k = _static_int(k, f"k argument of jnp.{name}")
    m = n if m is None else _static_int(m, f"m argument of jnp.{name}")
    # the indices depend only on static sizes: compute them now, as constants
    return tuple(asarray(i.astype(dtypes.default_int())) for i in np_fn(n, k, m))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the lower triangle (on and below the k-th diagonal)."""
    return _tri_indices(np.tril_indices, "tril_indices", n, k, m)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the upper triangle (on and above the k-th diagonal)."""
    return _tri_indices(np.triu_indices, "triu_indices", n, k, m)


def _shape_2d(arr: Any) -> tuple:
    shape = arr.shape if hasattr(arr, "shape") else get_aval(asarray(arr)).shape
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    n, m = _shape_2d(arr)
    return tril_indices(n, k=k, m=m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    n, m = _shape_2d(arr)
    return triu_indices(n, k=k, m=m)


# --- flat and multi-dimensional indices ----------------------------------------------------

def unravel_index(indices: Any, shape: Sequence[int]) -> tuple:
    """Flat indices as coordinate arrays; out-of-range ones clamp to the first/last element."""
    check_arraylike("unravel_index", indices)
    rest = asarray(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    coords: list = [0] * len(shape)
    for i, s in reversed(list(enumerate(shape))):
        rest, coords[i] = divmod(rest, s)
    aval = get_aval(rest)
    too_big = lax.gt(rest, const_like(aval, 0))
    too_small = asarray(False) if aval.dtype.kind == "u" else lax.lt(rest, const_like(aval, -1))
    return tuple(_where(too_big, s - 1, _where(too_small, 0, c)) for s, c in zip(shape, coords))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None):
    """Coordinate arrays as flat indices into an array of shape `dims`."""
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(_static_int(d, "`dims` argument of ravel_multi_index()") for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    arrays = [asarray(i) for i in multi_index]
    dtype = dtypes.result_type(int, *arrays) if dtype is None else \
        dtypes.check_user_dtype(dtype)
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype={dtype!r} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dtype).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dtype!r} not large enough to hold "
                         f"flattened index for dims={dims}. Use the dtype argument to pass a "
                         "suitable dtype (e.g. dtype=np.min_scalar_type(prod(dims))).")
    for i in arrays:
        if mode == "raise":
            concrete_value(i, "The error occurred because ravel_multi_index was jit-compiled "
                           "with mode='raise'. Use mode='wrap' or mode='clip' instead.")
        if not dtypes.is_int(get_aval(i).dtype):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        if any(np.any((np.asarray(i) < 0) | (np.asarray(i) >= d)) for i, d in zip(arrays, dims)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        arrays = [lax.clamp(0, i, d - 1) for i, d in zip(arrays, dims)]
    elif mode == "wrap":
        arrays = [remainder(i, d) for i, d in zip(arrays, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = _full((), 0, dtype)
    for i, s in zip(arrays, strides):
        result = add(result, multiply(lax.convert_element_type(i, dtype), int(s)))
    return result


def ix_(*args: Any) -> tuple:
    """Open-mesh index arrays: the i-th argument reshaped to lie along axis i."""
    check_arraylike("ix_", *args)
    out = []
    for i, a in enumerate(args):
        a = asarray(a)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{aval.shape}")
        if aval.dtype == dtypes.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * len(args)
        shape[i] = aval.shape[0]
        if aval.size == 0:  # NumPy uses an integer index type for empty arrays
            out.append(_full(shape, 0, dtypes.default_int()))
        else:
            out.append(lax.broadcast_in_dim(a, shape, (i,)))
    return tuple(out)


# --- put / place ---------------------------------------------------------------------------

def _tile_to_size(v: Any, size: int):
    n = get_aval(v).shape[0]
    if n < size:
        v = lax.concatenate([v] * -(-size // n), 0)
    return v[:size]


def _immutable(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays "
                         "are immutable. Pass inplace=False to instead return an updated array.")


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True):
    """A copy of `a` with the flat positions `ind` set to `v` (repeated as needed)."""
    _immutable("put", inplace)
    check_arraylike("put", a, ind, v)
    arr, ind, v = asarray(a), asarray(ind), asarray(v)
    size = get_aval(arr).size
    ind = lax.reshape(ind, (get_aval(ind).size,))
    v = lax.reshape(v, (get_aval(v).size,))
    if not size or not get_aval(ind).size or not get_aval(v).size:
        return arr
    v = _tile_to_size(v, get_aval(ind).shape[0])
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = lax.clamp(0, ind, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind, scatter_mode = remainder(ind, size), "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    coords = unravel_index(ind, get_aval(arr).shape)
    return IndexUpdateRef(arr, coords).set(v, mode=scatter_mode)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True):
    """A copy of `arr` with the masked positions set to `vals` in order (repeated as needed)."""
    _immutable("place", inplace)
    check_arraylike("place", arr, mask, vals)
    data, mask, vals = asarray(arr), asarray(mask), asarray(vals)
    vals = lax.reshape(vals, (get_aval(vals).size,))
    size = get_aval(data).size
    if size != get_aval(mask).size:
        raise ValueError("place: arr and mask must be the same size")
    if not get_aval(vals).size:
        raise ValueError("Cannot place values from an empty array")
    if not size:
        return data
    (indices,) = nonzero(lax.reshape(mask, (size,)), size=size, fill_value=size)
    flat = lax.reshape(data, (size,))
    updated = IndexUpdateRef(flat, indices).set(_tile_to_size(vals, size), mode="drop")
    return lax.reshape(updated, get_aval(data).shape)
