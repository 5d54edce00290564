"""Sorting, searching and set functions of tracejit.numpy, built on lax.sort and lax.top_k.

searchsorted is JAX's binary search by default (its 'sort' method co-sorts), bincount JAX's
scatter-add; elsewhere data-dependent gathers and scatters are done by co-sorting: sorting (keys,
values) moves values by a permutation, and sorting (perm, iota) inverts one. Functions whose
output size depends on the data (unique, union1d, bincount without `length`) need concrete
inputs or a static `size`.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core import dtypes
from ..core.trace import concrete_value, get_aval
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis, const_like
from ._creation import full
from ._indexing import take
from ._shape import moveaxis, ravel, swapaxes
from ._util import asarray, check_arraylike, promote_dtypes

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "searchsorted", "digitize",
           "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "union1d",
           "isin", "bincount", "top_k"]


def _array(name: str, x: Any) -> Any:
    check_arraylike(name, x)
    return asarray(x)


def _index_dtype(n: int) -> np.dtype:
    """JAX's dtype for indices into a dimension of size n: the default int, or int64 when the
    dimension is too large for int32."""
    return dtypes.int64 if n > np.iinfo(np.int32).max else dtypes.default_int()


def _check_sort_kwargs(name: str, kind: Any, order: Any) -> None:
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")


def sort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
    """jnp.sort: NaNs last (first when descending); axis=None sorts the flattened array."""
    _check_sort_kwargs("sort", kind, order)
    arr = _array("sort", a)
    if axis is None:
        arr, axis = ravel(arr), 0
    dimension = canonicalize_axis(axis, get_aval(arr).ndim)
    out = lax.sort(arr, dimension=dimension, is_stable=stable)
    return lax.rev(out, (dimension,)) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    """jnp.argsort: indices that sort `a` along `axis` (sort with an iota operand); a stable
    descending sort keeps equal elements in their original order."""
    _check_sort_kwargs("argsort", kind, order)
    arr = _array("argsort", a)
    if axis is None:
        arr, axis = ravel(arr), 0
    shape = get_aval(arr).shape
    dimension = canonicalize_axis(axis, len(shape))
    idx_dtype = _index_dtype(shape[dimension]) if dtype is None else dtypes.check_user_dtype(dtype)
    iota = lax.broadcasted_iota(idx_dtype, shape, dimension)
    if descending and stable:
        arr, iota = lax.rev(arr, (dimension,)), lax.rev(iota, (dimension,))
    _, indices = lax.sort_key_val(arr, iota, dimension=dimension, is_stable=stable)
    return lax.rev(indices, (dimension,)) if descending else indices


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """jnp.lexsort: indices sorting by several keys, the last key primary."""
    keys = tuple(keys)
    check_arraylike("lexsort", *keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = tuple(asarray(k) for k in keys)
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) > 1:
        raise ValueError("all keys need to be the same shape")
    (shape,) = shapes
    if not shape:
        return full((), 0, dtypes.default_int())
    axis = canonicalize_axis(axis, len(shape))
    iota = lax.broadcasted_iota(_index_dtype(shape[axis]), shape, axis)
    return lax.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys))[-1]


# --- partition -----------------------------------------------------------------------------


def _partition_setup(name: str, a: Any, kth: int, axis: int) -> tuple[Any, int, int]:
    arr = _array(name, a)
    aval = get_aval(arr)
    if aval.dtype.kind == "c":
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    axis = canonicalize_axis(axis, aval.ndim)
    kth = canonicalize_axis(kth, aval.shape[axis], "kth")
    return swapaxes(arr, axis, -1), kth, axis


def _negated_for_top_k(arr: Any) -> Any:
    """A key whose top_k gives the smallest elements of arr (unsigned ints cannot negate, so
    -(arr + 1) maps 0 to the largest value, as in JAX)."""
    aval = get_aval(arr)
    if aval.dtype.kind == "u":
        return lax.neg(lax.add(arr, const_like(aval, 1)))
    return lax.neg(arr)


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """jnp.partition: the kth element in its sorted place, smaller ones (sorted) before it and
    the larger ones after it (in top_k order, largest first)."""
    arr, kth, axis = _partition_setup("partition", a, kth, axis)
    n = get_aval(arr).shape[-1]
    bottom = lax.top_k(_negated_for_top_k(arr), kth + 1)[0]
    bottom = lax.neg(bottom)
    if get_aval(arr).dtype.kind == "u":
        bottom = lax.sub(bottom, const_like(get_aval(arr), 1))
    top = lax.top_k(arr, n - kth - 1)[0]
    out = lax.concatenate([bottom, top], get_aval(arr).ndim - 1)
    return swapaxes(out, axis, -1)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """jnp.argpartition: indices that partition `a` (see partition); the indices after the kth
    are the remaining ones in increasing order."""
    arr, kth, axis = _partition_setup("argpartition", a, kth, axis)
    shape = get_aval(arr).shape
    n = shape[-1]
    bottom = lax.top_k(_negated_for_top_k(arr), kth + 1)[1]
    # position j is taken when some bottom index equals j: compare all (n x (kth+1)) pairs
    pos = lax.broadcasted_iota(dtypes.int32, shape + (kth + 1,), len(shape) - 1)
    taken_pairs = lax.eq(pos, lax.broadcast_in_dim(bottom, shape + (kth + 1,),
                                                   tuple(range(len(shape) - 1)) + (len(shape),)))
    taken = lax.reduce_or(taken_pairs, (len(shape),))
    proxy = lax.select(taken, full(shape, 0.0, dtypes.float32), full(shape, 1.0, dtypes.float32))
    top = lax.top_k(proxy, n - kth - 1)[1]
    out = lax.concatenate([bottom, top], len(shape) - 1)
    return swapaxes(out, axis, -1)


# --- searching -----------------------------------------------------------------------------

_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def _is_nan(x: Any) -> Any:
    return lax.ne(x, x)


def _sort_lt(x: Any, y: Any) -> Any:
    """x < y in lax.sort's order (NaNs last, -0.0 == 0.0); complex by (real, imag)."""
    kind = get_aval(x).dtype.kind
    if kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        return lax.bitwise_or(_sort_lt(xr, yr),
                              lax.bitwise_and(_sort_eq(xr, yr), _sort_lt(lax.imag(x), lax.imag(y))))
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.lt(x, y)
    return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(lax.not_(_is_nan(x)), _is_nan(y)))


def _sort_eq(x: Any, y: Any) -> Any:
    if not dtypes.is_inexact(get_aval(x).dtype):
        return lax.eq(x, y)
    return lax.bitwise_or(lax.eq(x, y), lax.bitwise_and(_is_nan(x), _is_nan(y)))


def _rank(x: Any, dtype: np.dtype) -> Any:
    """Position of each element of 1-D x in its stable sort (the inverse of argsort)."""
    iota = lax.iota(dtype, get_aval(x).shape[0])
    perm = lax.sort_key_val(x, iota)[1]
    return lax.sort_key_val(perm, iota)[1]


def _searchsorted_sort(a: Any, v: Any, side: str, dtype: np.dtype) -> Any:
    """Co-sort queries with `a`: a query's rank among both, less its rank among the queries,
    counts the elements of `a` before it (ties go after `a`'s elements for side='right')."""
    q = ravel(v)
    n, m = get_aval(a).shape[0], get_aval(q).shape[0]
    work = dtypes.int32 if n + m <= np.iinfo(np.int32).max else dtypes.int64
    if side == "left":
        index = lax.slice_in_dim(_rank(lax.concatenate([q, a], 0), work), 0, m)
    else:
        index = lax.slice_in_dim(_rank(lax.concatenate([a, q], 0), work), n, n + m)
    out = lax.sub(index, _rank(q, work))
    return lax.convert_element_type(lax.reshape(out, get_aval(v).shape), dtype)


def _searchsorted_scan(a: Any, v: Any, side: str, dtype: np.dtype, unrolled: bool) -> Any:
    """JAX's binary search: ceil(log2(n + 1)) halvings of [low, high) for every query at once
    (unsigned, mid = low + (high - low) // 2), going left where the query sorts before (left:
    at or before) a[mid]; the result is `high`. For an unsorted `a` it gives what JAX's does."""
    n = get_aval(a).shape[0]
    unsigned = dtypes.uint64 if dtype == dtypes.int64 else dtypes.uint32
    shape = get_aval(v).shape

    def halve(state, _):
        low, high = state
        mid = lax.add(low, lax.div(lax.sub(high, low), const_like(get_aval(low), 2)))
        at = take(a, mid, mode="clip")  # (mid is n only once low == high: either way low)
        go_left = lax.not_(_sort_lt(at, v)) if side == "left" else _sort_lt(v, at)
        return (lax.select(go_left, low, mid), lax.select(go_left, mid, high)), None
    levels = int(np.ceil(np.log2(n + 1)))
    init = (full(shape, 0, unsigned), full(shape, n, unsigned))
    (_, high), _ = lax.scan(halve, init, None, length=levels, unroll=levels if unrolled else 1)
    return lax.convert_element_type(high, dtype)


def _searchsorted_compare_all(a: Any, v: Any, side: str, dtype: np.dtype) -> Any:
    """Count the elements of `a` before each query by comparing every pair."""
    v_shape = get_aval(v).shape
    n = get_aval(a).shape[0]
    pair_shape = v_shape + (n,)
    aa = lax.broadcast_in_dim(a, pair_shape, (len(v_shape),))
    vv = lax.broadcast_in_dim(v, pair_shape, tuple(range(len(v_shape))))
    before = _sort_lt(aa, vv) if side == "left" else lax.not_(_sort_lt(vv, aa))
    return lax.reduce_sum(lax.convert_element_type(before, dtype), (len(v_shape),))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """jnp.searchsorted: insertion indices of `v` into the sorted 1-D `a` (int32). `method` is
    'scan' (JAX's binary search), 'scan_unrolled' (the same, its levels unrolled), 'sort'
    (co-sorts `a` and `v`) or 'compare_all' (compares every pair); all agree whenever `a` is
    sorted."""
    a, v = _array("searchsorted", a), _array("searchsorted", v)
    if get_aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'; expected 'left' or "
                         "'right'")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"Unsupported method: {method!r}; expected one of {_SEARCH_METHODS}")
    a, v = promote_dtypes(a, v)
    if sorter is not None:
        a = a[_array("searchsorted", sorter)]
    n = get_aval(a).shape[0]
    dtype = dtypes.int64 if n > np.iinfo(np.int32).max else dtypes.int32
    if n == 0:
        return full(get_aval(v).shape, 0, dtype)
    if method == "compare_all":
        return _searchsorted_compare_all(a, v, side, dtype)
    if method == "sort":
        return _searchsorted_sort(a, v, side, dtype)
    return _searchsorted_scan(a, v, side, dtype, unrolled=method == "scan_unrolled")


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """jnp.digitize: the bin of each x for monotonically increasing or decreasing `bins`."""
    x, bins = _array("digitize", x), _array("digitize", bins)
    right = bool(concrete_value(right, "The error arose for the `right` argument of "
                                       "jnp.digitize()."))
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins of shape "
                         f"{get_aval(bins).shape}")
    n = get_aval(bins).shape[0]
    if n == 0:
        return full(get_aval(x).shape, 0, dtypes.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    increasing = lax.ge(lax.index_in_dim(bins, n - 1, keepdims=False),
                        lax.index_in_dim(bins, 0, keepdims=False))
    up = searchsorted(bins, x, side=side, **kw)
    down = lax.sub(const_like(get_aval(up), n), searchsorted(lax.rev(bins, (0,)), x, side=side,
                                                             **kw))
    return lax.select(increasing, up, down)


# --- unique and set functions --------------------------------------------------------------

_UNIQUE_SIZE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                     "specify a concrete value for the size argument, which will determine the "
                     "output size.")


def _static_size(size: Any, fn: str) -> int:
    return operator.index(concrete_value(
        size, f"The error arose for the size argument of {fn}. {_UNIQUE_SIZE_HINT}"))


def _resize(x: Any, size: int, pad_value: Any = 0) -> Any:
    """The first `size` entries of x along axis 0, padded with pad_value when x is shorter."""
    aval = get_aval(x)
    n = aval.shape[0]
    if size <= n:
        return lax.slice_in_dim(x, 0, size)
    cfg = [(0, size - n, 0)] + [(0, 0, 0)] * (aval.ndim - 1)
    return lax.pad(x, asarray(pad_value, aval.dtype), cfg)


def _select_rows(valid: Any, x: Any, fill: Any) -> Any:
    """Row i of x where valid[i], else `fill` (broadcast over x's trailing dims)."""
    shape = get_aval(x).shape
    fill_ndim = get_aval(fill).ndim
    return lax.select(lax.broadcast_in_dim(valid, shape, (0,)), x,
                      lax.broadcast_in_dim(fill, shape, tuple(range(len(shape) - fill_ndim,
                                                                    len(shape)))))


def _unique(arr: Any, axis: int, *, return_inverse: bool, return_counts: bool,
            equal_nan: bool, size: int | None, fill_value: Any) -> tuple:
    """(values, first indices, inverse or None, counts or None) of the rows along `axis`."""
    aval = get_aval(arr)
    n, rest = aval.shape[axis], aval.shape[:axis] + aval.shape[axis + 1:]
    int_dtype = dtypes.default_int()
    if n == 0:  # JAX's answers: filled values, empty index arrays
        if size and fill_value is None:
            raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                             "fill_value must be specified")
        values = full((size,) + rest, asarray(fill_value, aval.dtype), aval.dtype) if size \
            else lax.reshape(arr, (0,) + rest)
        empty = full((0,), 0, int_dtype)
        return values, empty, empty, empty
    if aval.dtype.kind == "c":  # one NaN for all complex NaNs, so that they compare equal
        arr = lax.select(_is_nan(arr), full(aval.shape, complex(np.nan, 0), aval.dtype), arr)
    # sort the rows lexicographically: their columns are the keys, the row index rides along
    m = int(np.prod(rest))
    rows = lax.reshape(moveaxis(arr, axis, 0), (n, m))
    columns = [lax.index_in_dim(rows, j, 1, keepdims=False) for j in range(m)]
    iota = lax.iota(int_dtype, n)
    perm = iota
    if columns:
        *columns, perm = lax.sort((*columns, iota), 0, num_keys=m)
    # mask[i]: sorted row i starts a group (differs from row i-1; row 0 always does)
    differs = full((n - 1,), False, dtypes.bool_)
    for col in columns:
        cur, prev = lax.slice_in_dim(col, 1, n), lax.slice_in_dim(col, 0, n - 1)
        ne = lax.not_(_sort_eq(cur, prev)) if equal_nan else lax.ne(cur, prev)
        differs = lax.bitwise_or(differs, ne)
    mask = lax.concatenate([full((1,), True, dtypes.bool_), differs], 0)
    num_unique = lax.reduce_sum(lax.convert_element_type(mask, int_dtype), (0,))
    if size is None:
        size = int(num_unique)  # the caller checked that the input is concrete
    # compact: a stable sort on "not a group start" moves the group starts to the front, in
    # order, with their first index (perm) and their position in the sorted rows
    _, *ucolumns, index, ustarts = lax.sort((lax.not_(mask), *columns, perm, iota), 0,
                                            num_keys=1)
    urows = lax.concatenate([lax.expand_dims(c, (1,)) for c in ucolumns], 1) if m else \
        full((n, 0), 0, aval.dtype)
    urows, index = _resize(urows, size), _resize(index, size)
    if size:  # entries past the last group: fill_value, or (as JAX) the first group's
        valid = lax.lt(lax.iota(int_dtype, size), num_unique)
        first = lax.index_in_dim(urows, 0, keepdims=False)
        urows = _select_rows(valid, urows, first if fill_value is None else
                             asarray(fill_value, aval.dtype))
        first_index = lax.index_in_dim(index, 0, keepdims=False)
        index = lax.select(valid, index, lax.broadcast(first_index, (size,)))
    values = moveaxis(lax.reshape(urows, (size,) + rest), 0, axis)
    inverse = counts = None
    if return_inverse:
        group = lax.sub(lax.cumsum(lax.convert_element_type(mask, int_dtype)),
                        const_like(get_aval(iota), 1))
        inverse = lax.sort_key_val(perm, group)[1]  # scatter group ids back to input order
    if return_counts:
        # group i spans sorted rows [start_i, start_{i+1}); the bounds past the last group are n
        bounds = lax.select(lax.lt(iota, num_unique), ustarts, full((n,), n, int_dtype))
        bounds = _resize(bounds, size + 1, n)
        counts = lax.sub(lax.slice_in_dim(bounds, 1, size + 1), lax.slice_in_dim(bounds, 0, size))
    return values, index, inverse, counts


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """jnp.unique: sorted unique values (rows along `axis`), with optional first indices,
    inverse indices and counts. Under jit pass a static `size`: results are truncated or
    padded to it (values with `fill_value`, default the smallest value)."""
    arr = _array("unique", ar)
    if size is None:
        concrete_value(arr, "The error arose for the first argument of jnp.unique(). "
                       + _UNIQUE_SIZE_HINT)
    else:
        size = _static_size(size, "jnp.unique()")
    shape = get_aval(arr).shape
    if axis is None:
        arr, axis_int = ravel(arr), 0
    else:
        axis_int = canonicalize_axis(axis, len(shape))
    values, index, inverse, counts = _unique(
        arr, axis_int, return_inverse=return_inverse, return_counts=return_counts,
        equal_nan=equal_nan, size=size, fill_value=fill_value)
    if return_inverse and axis is None:
        inverse = lax.reshape(inverse, shape)
    out = (values,) + ((index,) if return_index else ()) + \
        ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


class _UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class _UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class _UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> _UniqueAllResult:
    """jnp.unique_all (array API): values, first indices, inverse indices, counts."""
    return _UniqueAllResult(*unique(x, True, True, True, equal_nan=False, size=size,
                                    fill_value=fill_value))


def unique_counts(x: Any, /, *, size: int | None = None,
                  fill_value: Any = None) -> _UniqueCountsResult:
    """jnp.unique_counts (array API): values and counts."""
    return _UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                       fill_value=fill_value))


def unique_inverse(x: Any, /, *, size: int | None = None,
                   fill_value: Any = None) -> _UniqueInverseResult:
    """jnp.unique_inverse (array API): values and inverse indices."""
    return _UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                        fill_value=fill_value))


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """jnp.unique_values (array API): the unique values."""
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """jnp.union1d: sorted unique values of both (flattened) arrays."""
    a, b = promote_dtypes(_array("union1d", ar1), _array("union1d", ar2))
    if size is None:
        concrete_value(a, "The error arose in union1d(). " + _UNIQUE_SIZE_HINT)
        concrete_value(b, "The error arose in union1d(). " + _UNIQUE_SIZE_HINT)
    return unique(lax.concatenate([ravel(a), ravel(b)], 0), size=size, fill_value=fill_value)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """jnp.isin: whether each element occurs in test_elements (every pair compared; the other
    methods give the same answer)."""
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    element, test = promote_dtypes(_array("isin", element), _array("isin", test_elements))
    shape = get_aval(element).shape
    x, t = ravel(element), ravel(test)
    n, m = get_aval(x).shape[0], get_aval(t).shape[0]
    if n == 0 or m == 0:
        return full(shape, bool(invert), dtypes.bool_)
    pairs = lax.eq(lax.broadcast_in_dim(x, (n, m), (0,)), lax.broadcast_in_dim(t, (n, m), (1,)))
    found = lax.reduce_or(pairs, (1,))
    return lax.reshape(lax.not_(found) if invert else found, shape)


def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: int | None = None) -> Any:
    """jnp.bincount: counts (or summed weights) of each non-negative int in 1-D x; negative
    values count in bin 0 and values >= length are dropped, as in JAX. Under jit pass a static
    `length`."""
    x = _array("bincount", x)
    if get_aval(x).dtype == dtypes.bool_:
        x = lax.convert_element_type(x, dtypes.int32)
    if not dtypes.is_int(get_aval(x).dtype):
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{get_aval(x).dtype}")
    if get_aval(x).ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(concrete_value(
        minlength, "The error occurred because of argument 'minlength' of jnp.bincount."))
    if length is None:
        x_val = concrete_value(x, "The error occurred because of argument 'x' of jnp.bincount. "
                                  "To avoid this error, pass a static `length` argument.")
        length = max(minlength, x_val.size and int(max(0, x_val.max())) + 1)
    else:
        length = operator.index(concrete_value(
            length, "The error occurred because of argument 'length' of jnp.bincount."))
    if weights is None:
        weights = full(get_aval(x).shape, 1, dtypes.default_int())
    else:
        weights = _array("bincount", weights)
        if get_aval(weights).shape != get_aval(x).shape:
            raise ValueError(f"type of weights must match type of x. Got "
                             f"typeof(x)={get_aval(x).str_short()} and "
                             f"typeof(weights)={get_aval(weights).str_short()}")
    # JAX's: the weights added into their bins in order (a scatter-add; out of range dropped)
    xs = lax.max(x, const_like(get_aval(x), 0))
    return full(length, 0, get_aval(weights).dtype).at[xs].add(weights, mode="drop")


def top_k(a: Any, k: int, /, *, axis: int = -1, mode: str = "largest",
          sorted: bool = True) -> tuple[Any, Any]:
    """The k largest (or smallest) entries along `axis` and their indices (JAX 0.12's
    jnp.top_k): lax.top_k, of an order-reversed copy for "smallest" (bitwise not for bools and
    integers, negation for floats, as JAX)."""
    del sorted  # (JAX's results are always sorted)
    arr = _array("top_k", a)
    dtype = get_aval(arr).dtype
    if dtypes.issubdtype(dtype, np.complexfloating):
        raise ValueError("top_k is not compatible with complex inputs.")
    if mode not in ("largest", "smallest"):
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    axis = canonicalize_axis(axis, get_aval(arr).ndim)
    if mode == "largest":
        return tuple(lax.top_k(arr, k, axis=axis))
    invert = lax.bitwise_not if dtype == np.bool_ or dtypes.issubdtype(dtype, np.integer) \
        else lax.neg
    values, indices = lax.top_k(invert(arr), k, axis=axis)
    return invert(values), indices
