"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, pad,
concatenate, iota, slice. Each registered with its rules beside its user function."""
from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray, check_shape
from ..core.primitive import Primitive
from ..core.trace import get_aval
from ._base import as_lax_operands, canonicalize_axis

# --- broadcast_in_dim ----------------------------------------------------------------------


def _broadcast_in_dim_abstract(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions {broadcast_dimensions} must "
                        f"have one entry per operand dimension ({x.shape})")
    if any(b >= len(shape) for b in broadcast_dimensions) or \
            list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing and "
                        f"within the result rank, got {broadcast_dimensions} for {shape}")
    for d, b in zip(x.shape, broadcast_dimensions):
        if d != 1 and d != shape[b]:
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {x.shape}, target broadcast shape "
                            f"{shape}, broadcast_dimensions {broadcast_dimensions}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for d, b in zip(x.shape, broadcast_dimensions):
        expanded[b] = d
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract)
broadcast_in_dim_p.def_impl(_broadcast_in_dim_impl)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    (operand,) = as_lax_operands("broadcast_in_dim", operand)
    shape = check_shape(shape)
    bdims = tuple(int(b) for b in broadcast_dimensions)
    aval = get_aval(operand)
    if aval.shape == shape and bdims == tuple(range(len(shape))):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bdims)


def broadcast(operand: Any, sizes: Sequence[int]):
    """lax.broadcast: prepend dimensions `sizes`."""
    aval = get_aval(operand)
    sizes = check_shape(sizes, "sizes")
    return broadcast_in_dim(operand, sizes + aval.shape,
                            tuple(range(len(sizes), len(sizes) + aval.ndim)))


def broadcast_to_rank(x: Any, rank: int):
    aval = get_aval(x)
    return broadcast(x, (1,) * (rank - aval.ndim)) if aval.ndim < rank else x


# --- reshape -------------------------------------------------------------------------------


def _reshape_abstract(x, *, new_sizes, dimensions):
    if math.prod(new_sizes) != x.size:
        raise TypeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into shape "
                        f"{new_sizes} (size {math.prod(new_sizes)})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = Primitive("reshape")
reshape_p.def_abstract_eval(_reshape_abstract)
reshape_p.def_impl(lambda x, *, new_sizes, dimensions: (
    x if dimensions is None else np.transpose(x, dimensions)).reshape(new_sizes))


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    (operand,) = as_lax_operands("reshape", operand)
    new_sizes = check_shape(new_sizes, "new_sizes")
    aval = get_aval(operand)
    dims = None if dimensions is None or tuple(dimensions) == tuple(range(aval.ndim)) \
        else tuple(int(d) for d in dimensions)
    if aval.shape == new_sizes and dims is None:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


# --- transpose -----------------------------------------------------------------------------


def _transpose_abstract(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {permutation} for operand shape {x.shape}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose")
transpose_p.def_abstract_eval(_transpose_abstract)
transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))


def transpose(operand: Any, permutation: Sequence[int]):
    (operand,) = as_lax_operands("transpose", operand)
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))) and len(perm) == get_aval(operand).ndim:
        return operand
    return transpose_p.bind(operand, permutation=perm)


# --- squeeze / expand_dims -----------------------------------------------------------------


def _squeeze_abstract(x, *, dimensions):
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                             f"one, got shape={x.shape} and dimensions={dimensions}")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype,
                       x.weak_type)


squeeze_p = Primitive("squeeze")
squeeze_p.def_abstract_eval(_squeeze_abstract)
squeeze_p.def_impl(lambda x, *, dimensions: np.squeeze(x, axis=dimensions) if dimensions else x)


def squeeze(array: Any, dimensions: Sequence[int]):
    (array,) = as_lax_operands("squeeze", array)
    ndim = get_aval(array).ndim
    dims = tuple(sorted({canonicalize_axis(d, ndim) for d in dimensions}))
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array: Any, dimensions: Sequence[int]):
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = sorted(canonicalize_axis(d, ndim_out) for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


# --- rev -----------------------------------------------------------------------------------

rev_p = Primitive("rev")
rev_p.def_abstract_eval(lambda x, *, dimensions: x)
rev_p.def_impl(lambda x, *, dimensions: np.flip(x, dimensions) if dimensions else x)


def rev(operand: Any, dimensions: Sequence[int]):
    (operand,) = as_lax_operands("rev", operand)
    ndim = get_aval(operand).ndim
    dims = tuple(sorted({canonicalize_axis(d, ndim) for d in dimensions}))
    return rev_p.bind(operand, dimensions=dims) if dims else operand


# --- concatenate ---------------------------------------------------------------------------


def _concatenate_abstract(*xs, dimension):
    x0 = xs[0]
    for x in xs:
        if x.dtype != x0.dtype:
            raise TypeError(f"Cannot concatenate arrays with different dtypes, got "
                            f"{', '.join(str(x.dtype) for x in xs)}.")
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions "
                            f"other than the one being concatenated: concatenating along "
                            f"dimension {dimension} for shapes {', '.join(str(x.shape) for x in xs)}.")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


concatenate_p = Primitive("concatenate")
concatenate_p.def_abstract_eval(_concatenate_abstract)
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))


def concatenate(operands: Sequence[Any], dimension: int):
    if not operands:
        raise ValueError("concatenate needs at least one operand")
    ops = as_lax_operands("concatenate", *operands)
    if len(ops) == 1:
        return ops[0]
    ndim = get_aval(ops[0]).ndim
    if ndim == 0:
        raise TypeError("Cannot concatenate scalars (zero-dimensional arrays)")
    return concatenate_p.bind(*ops, dimension=canonicalize_axis(dimension, ndim))


# --- pad -----------------------------------------------------------------------------------


def _pad_abstract(x, pad_value, *, padding_config):
    if pad_value.shape != () or pad_value.dtype != x.dtype:
        raise TypeError(f"pad: padding_value must be a scalar of the operand's dtype {x.dtype}, "
                        f"got {pad_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: padding_config has {len(padding_config)} entries for an operand "
                         f"of rank {x.ndim}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be non-negative, got {interior}")
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            raise ValueError(f"pad: resulting dimension would be negative: {padding_config}")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, pad_value, *, padding_config):
    shape = [d + max(d - 1, 0) * interior for d, (_, _, interior) in zip(x.shape, padding_config)]
    inner = np.full(shape, pad_value, dtype=x.dtype)
    inner[tuple(slice(None, None, interior + 1) for _, _, interior in padding_config)] = x
    # negative low/high padding crops
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    out = np.pad(inner, pads, constant_values=pad_value) if inner.ndim else inner
    crops = tuple(slice(-lo if lo < 0 else 0, (out.shape[i] + hi) if hi < 0 else None)
                  for i, (lo, hi, _) in enumerate(padding_config))
    return out[crops]


pad_p = Primitive("pad")
pad_p.def_abstract_eval(_pad_abstract)
pad_p.def_impl(_pad_impl)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]):
    operand, padding_value = as_lax_operands("pad", operand, padding_value)
    cfg = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=cfg)


# --- iota ----------------------------------------------------------------------------------

iota_p = Primitive("iota")
iota_p.def_abstract_eval(lambda *, dtype, shape, dimension: ShapedArray(shape, dtype))
iota_p.def_impl(lambda *, dtype, shape, dimension: np.broadcast_to(
    np.arange(shape[dimension], dtype=dtype).reshape(
        [shape[dimension] if i == dimension else 1 for i in range(len(shape))]), shape))


def iota(dtype: Any, size: int):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int):
    dtype = dtypes.check_user_dtype(dtype)
    shape = check_shape(shape)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=canonicalize_axis(dimension, len(shape)))


# --- static slice --------------------------------------------------------------------------


def _slice_abstract(x, *, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == x.ndim) or \
            (strides is not None and len(strides) != x.ndim):
        raise TypeError(f"slice indices must have length equal to the operand rank {x.ndim}")
    shape = []
    for i, (d, lo, hi) in enumerate(zip(x.shape, start_indices, limit_indices)):
        s = 1 if strides is None else strides[i]
        if not 0 <= lo <= hi <= d or s < 1:
            raise TypeError(f"slice start_indices {start_indices}, limit_indices {limit_indices},"
                            f" strides {strides} invalid for operand shape {x.shape}")
        shape.append(-(-(hi - lo) // s))
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p = Primitive("slice")
slice_p.def_abstract_eval(_slice_abstract)
slice_p.def_impl(lambda x, *, start_indices, limit_indices, strides: x[tuple(
    builtins.slice(lo, hi, 1 if strides is None else s) for lo, hi, s in
    zip(start_indices, limit_indices, strides or (1,) * x.ndim))])


def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None):
    (operand,) = as_lax_operands("slice", operand)
    st = tuple(int(i) for i in start_indices)
    lim = tuple(int(i) for i in limit_indices)
    strd = None if strides is None or all(s == 1 for s in strides) else tuple(int(s) for s in strides)
    aval = get_aval(operand)
    if st == (0,) * aval.ndim and lim == aval.shape and strd is None:
        return operand
    return slice_p.bind(operand, start_indices=st, limit_indices=lim, strides=strd)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0):
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    lo, hi, _ = builtins.slice(start_index, limit_index).indices(aval.shape[axis])
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = lo, max(hi, lo), stride
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True):
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    index = int(index)
    if index < 0:
        index += aval.shape[axis]
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


__all__ = ["broadcast_in_dim", "broadcast", "broadcast_to_rank", "reshape", "transpose",
           "squeeze", "expand_dims", "rev", "concatenate", "pad", "iota", "broadcasted_iota",
           "slice", "slice_in_dim", "index_in_dim"]
