"""Sorting primitives: sort (multi-operand, lexicographic on the first num_keys operands,
stable) and top_k. argsort is sort with an iota operand (see tracejit.numpy.argsort).

sort's order is JAX's: -0.0 and 0.0 are equal, NaNs (any sign) go last, complex numbers
compare by (real, imag). top_k uses the total order of the bits instead: -NaN < -inf < -0.0 <
0.0 < inf < NaN.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.rules import Zero, moveaxis, not_mapped
from ..core.trace import get_aval
from ._base import canonicalize_axis, check_operand
from .elementwise import neg
from .indexing import GatherDimensionNumbers, GatherScatterMode, gather
from .shape import broadcast_in_dim, broadcasted_iota, expand_dims

# --- sort ----------------------------------------------------------------------------------


def _sort_abstract(*avals: ShapedArray, dimension: int, is_stable: bool, num_keys: int):
    if any(a.shape != avals[0].shape for a in avals):
        raise TypeError(f"Arguments to sort must have equal shapes, got: "
                        f"{' '.join(str(a.shape) for a in avals)}")
    if not 0 <= dimension < avals[0].ndim:
        raise ValueError(f"sort dimension {dimension} is out of bounds for operands of rank "
                         f"{avals[0].ndim}")
    if not 1 <= num_keys <= len(avals):
        raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(avals)}")
    return avals


def _float_keys(x: np.ndarray) -> list[np.ndarray]:
    """(is NaN, value) keys: NaNs last whatever their sign; -0.0 == 0.0 as floats already."""
    x = x.astype(np.float64) if x.dtype.itemsize < 4 or x.dtype == dtypes.bfloat16 else x
    nan = np.isnan(x)
    return [nan, np.where(nan, 0, x)]


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    if x.dtype.kind == "c":
        return _float_keys(x.real) + _float_keys(x.imag)
    if dtypes.is_float(x.dtype):
        return _float_keys(x)
    return [x]


def _sort_impl(*operands: np.ndarray, dimension: int, is_stable: bool, num_keys: int):
    keys = [k for x in operands[:num_keys] for k in _sort_keys(x)]
    # np.lexsort is stable and takes its primary key last
    perm = np.lexsort(keys[::-1], axis=dimension) if operands[0].size else \
        np.zeros(operands[0].shape, np.intp)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


sort_p = Primitive("sort", multiple_results=True)
sort_p.def_abstract_eval(_sort_abstract)
sort_p.def_impl(_sort_impl)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """lax.sort: one array, or a sequence of equal-shape arrays sorted together by the first
    `num_keys` of them (lexicographically, first key primary)."""
    if isinstance(operand, (list, tuple)):
        if not operand:
            raise TypeError("Sort requires at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise ValueError(f"num_keys={num_keys} must be between 1 and "
                             f"len(operand)={len(operand)}")
        operands = list(operand)
    else:
        if num_keys != 1:
            raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
        operands = [operand]
    for x in operands:
        check_operand(x, "lax.sort")
    dimension = canonicalize_axis(dimension, get_aval(operands[0]).ndim)
    out = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                      num_keys=operator.index(num_keys))
    return tuple(out) if isinstance(operand, (list, tuple)) else out[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True):
    """lax.sort_key_val: sort `keys` along `dimension`, permuting `values` the same way."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


# --- top_k ---------------------------------------------------------------------------------


def _top_k_abstract(x: ShapedArray, *, k: int, axis: int):
    if x.dtype.kind == "c":
        raise ValueError("top_k is not compatible with complex inputs.")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if x.ndim == 0:
        raise TypeError(f"top_k operand must have >= 1 dimension, got {x.shape}")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis argument out of range: axis={axis} for operand.shape={x.shape}")
    if x.shape[axis] < k:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(x.shape)} and axis={axis}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32)


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """An integer key ordered as the values: floats by their bits (sign-magnitude -> two's
    complement), so that -NaN < -inf < -0.0 < 0.0 < inf < NaN."""
    if x.dtype == dtypes.bool_:
        return x.astype(np.int8)
    if not dtypes.is_float(x.dtype):
        return x
    bits = np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
    magnitude = np.iinfo(bits.dtype).max
    return np.where(bits < 0, bits ^ magnitude, bits)


def _top_k_impl(x: np.ndarray, *, k: int, axis: int):
    # ~key reverses the order without overflow; a stable sort keeps lower indices first on ties
    perm = np.argsort(~_total_order_key(x), axis=axis, kind="stable")
    idx = np.take(perm, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.def_abstract_eval(_top_k_abstract)
top_k_p.def_impl(_top_k_impl)


def top_k(operand: Any, k: int, *, axis: int = -1):
    """lax.top_k: [values, int32 indices] of the `k` largest entries along `axis`, largest
    first (lower index first among equal values)."""
    check_operand(operand, "lax.top_k")
    k = operator.index(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    axis = canonicalize_axis(axis, get_aval(operand).ndim)
    return list(top_k_p.bind(operand, k=k, axis=axis))  # a list, as JAX returns


# --- transformation rules: JVP (permute the tangents as the values), batching --------------

def _take_along_axis(x: Any, idx: Any, axis: int):
    """x[..., idx[...], ...] along `axis`: a gather whose other dimensions are batching ones."""
    ndim = get_aval(x).ndim
    others = tuple(d for d in range(ndim) if d != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=others,
                                   start_indices_batching_dims=others)
    return gather(x, expand_dims(idx, (ndim,)), dnums, (1,) * ndim,
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    # sort an iota along with the operands: it records where each sorted element came from
    shape = get_aval(primals[0]).shape
    iota = broadcasted_iota(np.uint32, shape, dimension)
    *out, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                             num_keys=num_keys)
    return out, [t if type(t) is Zero else _take_along_axis(t, perm, dimension)
                 for t in tangents]


def _sort_batch(vals, dims, *, dimension, is_stable, num_keys):
    proto, bdim = next((x, d) for x, d in zip(vals, dims) if d is not not_mapped)
    shape = get_aval(proto).shape
    unbatched = tuple(d for d in range(len(shape)) if d != bdim)
    args = [broadcast_in_dim(x, shape, unbatched) if d is not_mapped else moveaxis(x, d, bdim)
            for x, d in zip(vals, dims)]
    out = sort_p.bind(*args, dimension=dimension + (bdim <= dimension), is_stable=is_stable,
                      num_keys=num_keys)
    return out, [bdim] * len(out)


def _top_k_jvp(primals, tangents, *, k, axis):
    (x,), (t,) = primals, tangents
    values, idx = top_k_p.bind(x, k=k, axis=axis)
    t_values = Zero.from_primal(values) if type(t) is Zero else _take_along_axis(t, idx, axis)
    return [values, idx], [t_values, Zero.from_primal(idx)]


def _top_k_batch(vals, dims, *, k, axis):
    (x,), (d,) = vals, dims
    return top_k_p.bind(x, k=k, axis=axis + (d <= axis)), [d, d]


sort_p.def_jvp(_sort_jvp)
sort_p.def_batch(_sort_batch)
top_k_p.def_jvp(_top_k_jvp)
top_k_p.def_batch(_top_k_batch)

def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list:
    """[values, indices] of the k largest entries along reduction_dimension (floats only, as
    JAX). On CPU JAX computes them exactly (recall 1), as here: top_k."""
    _check_float(operand)
    return top_k(operand, k, axis=reduction_dimension)


def _check_float(operand: Any) -> None:
    if np.dtype(get_aval(operand).dtype).kind != "f":
        raise ValueError("operand must be a floating type")


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list:
    """[values, indices] of the k smallest entries along reduction_dimension (floats only),
    exactly (as JAX on CPU): top_k of -x."""
    _check_float(operand)
    values, indices = top_k(neg(operand), k, axis=reduction_dimension)
    return [neg(values), indices]


__all__: list[str] = ["approx_max_k", "approx_min_k", "sort", "sort_key_val", "top_k"]
