"""Set operations of tracejit.numpy on flattened arrays (intersect1d, setdiff1d, setxor1d).
One fixed-size algorithm serves both modes: sort, mark each value's first occurrence and
whether it belongs to the result, then gather the first `size` marked values. Without `size`
the inputs must be concrete (the count of results becomes the size), as in JAX."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core.trace import concrete_value, get_aval
from ..lax import lenient as lax
from ._creation import arange, full, ones
from ._indexing import nonzero, where
from ._shape import concatenate, ravel
from ._sorting import _UNIQUE_SIZE_HINT, isin
from ._util import asarray, check_arraylike, promote_dtypes

__all__ = ["intersect1d", "setdiff1d", "setxor1d"]

_UNIQUE_FIRST_ARG = "The error arose for the first argument of jnp.unique(). " + \
    _UNIQUE_SIZE_HINT


def _flat(name: str, *args: Any) -> list:
    check_arraylike(name, *args)
    return [ravel(asarray(a)) for a in args]


def _sort_with_positions(x: Any) -> tuple:
    """(sorted x, where each sorted entry came from), stable so equal values keep order."""
    n = get_aval(x).shape[0]
    return tuple(lax.sort((x, lax.iota(np.dtype(np.int32), n)), num_keys=1))


def _first_occurrences(s: Any) -> Any:
    """True at each sorted value's first appearance."""
    n = get_aval(s).shape[0]
    if n == 0:
        return ones((0,), bool)
    return concatenate([ones((1,), bool), s[1:] != s[:-1]])


def _result_size(mask: Any, size: Any, context: str) -> int:
    """`size` as a static int, or (unsized) the concrete number of marked entries."""
    if size is not None:
        return operator.index(concrete_value(size, context))
    return int(np.asarray(concrete_value(mask, context)).sum())


def _gather_marked(values: Any, mask: Any, size: int) -> tuple:
    """(the first `size` entries of values where mask holds, how many hold, their positions);
    positions past the count point one past the end."""
    n = get_aval(values).shape[0]
    if n == 0:  # nothing to gather from (a gather from an empty axis is ill-formed)
        return lax.full((size,), 0, get_aval(values).dtype), mask.sum(), \
            lax.full((size,), 0, np.dtype(np.int32))
    (pos,) = nonzero(mask, size=size, fill_value=n)
    gathered = values.at[pos].get(mode="fill", fill_value=0)
    return gathered, mask.sum(), pos


def _fill(vals: Any, count: Any, fill_value: Any) -> Any:
    """Entries past `count` set to fill_value, or by default (as JAX) to the smallest result,
    0 when there is none."""
    size = get_aval(vals).shape[0]
    if size == 0:
        return vals
    valid = arange(size) < count
    if fill_value is None:
        fill_value = where(count > 0, vals[0], lax.full((), 0, get_aval(vals).dtype))
    return where(valid, vals, asarray(fill_value).astype(get_aval(vals).dtype))


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values found in both arrays; with return_indices also the index of
    each one's first occurrence in ar1 and ar2 (past the results: len(ar1), len(ar2))."""
    a, b = _flat("intersect1d", ar1, ar2)
    if size is None:  # checked before promotion, so the error names the argument's own dtype
        concrete_value(a, _UNIQUE_FIRST_ARG)
        concrete_value(b, _UNIQUE_FIRST_ARG)
    a, b = promote_dtypes(a, b)
    s1, perm1 = _sort_with_positions(a)
    mask = isin(s1, b) if assume_unique else _first_occurrences(s1) & isin(s1, b)
    size = _result_size(mask, size, "The error arose in intersect1d()")
    vals, count, pos = _gather_marked(s1, mask, size)
    out = _fill(vals, count, fill_value)
    if not return_indices:
        return out
    n1, n2 = get_aval(a).shape[0], get_aval(b).shape[0]
    valid = arange(size) < count
    ind1 = where(valid, perm1.at[pos].get(mode="fill", fill_value=n1), n1)
    s2, perm2 = _sort_with_positions(b)
    j = lax.convert_element_type(
        lax.clamp(0, _searchsorted_left(s2, vals), max(n2 - 1, 0)), np.dtype(np.int32))
    ind2 = where(valid, perm2.at[j].get(mode="fill", fill_value=n2), n2)
    return out, ind1, ind2


def _searchsorted_left(sorted_values: Any, v: Any) -> Any:
    from ._sorting import searchsorted
    return searchsorted(sorted_values, v, side="left")


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The unique values of ar1 not in ar2, sorted (in ar1's order if assume_unique); entries
    past the results are fill_value (0 by default)."""
    a, b = _flat("setdiff1d", ar1, ar2)
    if size is None:
        concrete_value(a, "The error arose in setdiff1d()")
    dtype = get_aval(a).dtype
    fill = asarray(0 if fill_value is None else fill_value).astype(dtype)
    if get_aval(a).shape[0] == 0:
        n = 0 if size is None else operator.index(size)
        return full((n,), fill, dtype)
    if assume_unique:
        candidates, mask = a, ~isin(a, b)
    else:
        candidates, _ = _sort_with_positions(a)
        mask = _first_occurrences(candidates) & ~isin(candidates, b)
    size = _result_size(mask, size, "The error arose in setdiff1d()")
    vals, count, _ = _gather_marked(candidates, mask, size)
    return where(arange(size) < count, vals, fill) if size else vals


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted unique values in exactly one of the two arrays."""
    a, b = _flat("setxor1d", ar1, ar2)
    if size is None:  # checked before promotion, so the error names the argument's own dtype
        concrete_value(a, _UNIQUE_FIRST_ARG)
        concrete_value(b, _UNIQUE_FIRST_ARG)
    a, b = promote_dtypes(a, b)
    s, _ = _sort_with_positions(concatenate([a, b]))
    mask = _first_occurrences(s) & (isin(s, a) != isin(s, b))
    size = _result_size(mask, size, "The error arose in setxor1d()")
    vals, count, _ = _gather_marked(s, mask, size)
    return _fill(vals, count, fill_value)
