"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, pad,
concatenate, iota, slice. Each registered with its rules beside its user function; full, split,
stack, unstack and tile are compositions of them."""
from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray, check_shape
from ..core.primitive import INDEX_MAP, Primitive
from ..core.rules import (aval_of, axis_size, bdim_at_front, def_linear, full_like_aval,
                          is_undefined, moveaxis, sum_over)
from ..core.trace import get_aval
from ._base import as_lax_operands, canonicalize_axis
from .elementwise import convert_element_type, select_n, sub

# --- broadcast_in_dim ----------------------------------------------------------------------


def _broadcast_in_dim_abstract(x, *, shape, broadcast_dimensions):
    bdims = broadcast_dimensions
    if len(bdims) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                        f"operand ndim; got broadcast_dimensions {bdims} for operand ndim "
                        f"{x.ndim}.")
    if any(not 0 <= b < len(shape) for b in bdims):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be a subset of output "
                        f"dimensions, got {bdims} for operand ndim {x.ndim} and shape {shape}.")
    if len(set(bdims)) != len(bdims):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must not contain duplicates, "
                        f"got broadcast_dimensions {bdims}")
    for d, b in zip(x.shape, bdims):
        if d != 1 and d != shape[b]:
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {x.shape}, target broadcast shape "
                            f"{shape}, broadcast_dimensions {bdims}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    # broadcast_dimensions need not increase (JAX allows it): order the operand's axes first
    order = np.argsort(broadcast_dimensions, kind="stable")
    x = np.transpose(x, order)
    expanded = [1] * len(shape)
    for d, b in zip(x.shape, sorted(broadcast_dimensions)):
        expanded[b] = d
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim", fusion=INDEX_MAP)
broadcast_in_dim_p.cheap = True  # recomputed in each consumer: it reads a smaller operand
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract)
broadcast_in_dim_p.def_impl(_broadcast_in_dim_impl)
# printed as JAX does: the shape is the binder's, trivial broadcast_dimensions go unsaid
broadcast_in_dim_p.pp_params = lambda params: (
    {"broadcast_dimensions": params["broadcast_dimensions"]}
    if params["broadcast_dimensions"] else {})


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


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None):
    """An array of `shape` filled with the scalar `fill_value` (weakly typed when it is a Python
    scalar and no dtype is given)."""
    shape = check_shape(shape)
    if np.shape(fill_value) != ():
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{np.shape(fill_value)}.")
    fill_dtype, fill_weak = dtypes.dtype_and_weak(fill_value)
    weak = dtype is None and fill_weak
    dtype = fill_dtype if dtype is None else dtypes.check_user_dtype(dtype)
    if isinstance(fill_value, (bool, int, float, complex)) and \
            not isinstance(fill_value, np.generic):
        # a Python scalar becomes the constant directly (JAX: full(3, 2**40, float) works)
        if isinstance(fill_value, complex) and dtype.kind not in "cb":
            raise TypeError(f"Cannot convert complex fill_value {fill_value} to {dtype.name}.")
        with np.errstate(all="ignore"):
            fill = Array.from_numpy(np.asarray(fill_value).astype(dtype),
                                    ShapedArray((), dtype, weak))
    else:
        fill = convert_element_type(fill_value, dtype, weak)
    return broadcast(fill, shape)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None):
    """full with x's shape and dtype (weak when x is weak and no dtype is given); x may be
    anything with an aval, such as a ShapeDtypeStruct."""
    aval = x.aval if hasattr(x, "aval") else get_aval(x)
    weak = dtype is None and aval.weak_type
    out = full(aval.shape if shape is None else shape, fill_value,
               aval.dtype if dtype is None else dtype)
    if weak:
        return convert_element_type(out, get_aval(out).dtype, True)
    # (JAX: a committed array's result goes where it is, unless another shape would need
    # another layout)
    placed = x._sharding if type(x) is Array else None
    if placed is not None and type(out) is Array and out is not fill_value and \
            (out.shape == x.shape or placed.is_fully_replicated):
        out._sharding = placed  # (a fresh result: full made it)
    return out


# --- reshape -------------------------------------------------------------------------------


def _reshape_abstract(x, *, new_sizes, dimensions):
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(f"reshape dimensions must be a permutation of operand dimensions, got "
                        f"dimensions {dimensions} for shape {x.shape}.")
    if math.prod(new_sizes) != x.size:
        raise TypeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into shape "
                        f"{new_sizes} (size {math.prod(new_sizes)})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = Primitive("reshape", fusion=INDEX_MAP)
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


transpose_p = Primitive("transpose", fusion=INDEX_MAP)
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


squeeze_p = Primitive("squeeze", fusion=INDEX_MAP)
squeeze_p.def_abstract_eval(_squeeze_abstract)
squeeze_p.def_impl(lambda x, *, dimensions: np.squeeze(x, axis=dimensions) if dimensions else x)


def squeeze(array: Any, dimensions: Sequence[int]):
    (array,) = as_lax_operands("squeeze", array)
    ndim = get_aval(array).ndim
    dims = tuple(canonicalize_axis(d, ndim) for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"dimensions are not unique: {tuple(dimensions)}")
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=tuple(sorted(dims)))


def expand_dims(array: Any, dimensions: Sequence[int]):
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = sorted(canonicalize_axis(d, ndim_out) for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


# --- rev -----------------------------------------------------------------------------------

def _rev_abstract(x, *, dimensions):
    # lax.rev takes axes as given: no negative-axis wrapping, as in JAX
    if any(d < 0 for d in dimensions):
        raise TypeError(f"rev dimensions must have every element be nonnegative, got "
                        f"{dimensions}.")
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if any(d >= x.ndim for d in dimensions):
        raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                        f"{dimensions} for operand ndim {x.ndim}.")
    return x


rev_p = Primitive("rev", fusion=INDEX_MAP)
rev_p.involution = True  # over the same dimensions
rev_p.def_abstract_eval(_rev_abstract)
rev_p.def_impl(lambda x, *, dimensions: np.flip(x, dimensions) if dimensions else x)


def rev(operand: Any, dimensions: Sequence[int]):
    (operand,) = as_lax_operands("rev", operand)
    dims = tuple(int(d) for d in dimensions)
    return rev_p.bind(operand, dimensions=dims) if dims else operand


# --- concatenate ---------------------------------------------------------------------------


def _concatenate_abstract(*xs, dimension):
    shapes = ", ".join(str(x.shape) for x in xs)
    if len({x.ndim for x in xs}) != 1:
        raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{shapes}.")
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                        f"{shapes}.")
    if any(x.dtype != x0.dtype for x in xs):
        raise TypeError(f"lax.concatenate requires arguments to have the same dtypes, got "
                        f"{', '.join(x.dtype.name for x in xs)}. (Tip: jnp.concatenate is a "
                        "similar function that does automatic type promotion on inputs).")
    if any(a != b for x in xs for i, (a, b) in enumerate(zip(x.shape, x0.shape))
           if i != dimension):
        raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions "
                        f"other than the one being concatenated: concatenating along "
                        f"dimension {dimension} for shapes {shapes}.")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


concatenate_p = Primitive("concatenate", fusion=INDEX_MAP)
concatenate_p.def_abstract_eval(_concatenate_abstract)
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))


def concatenate(operands: Sequence[Any], dimension: int):
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    ops = as_lax_operands("concatenate", *operands)
    dimension = int(dimension)
    if len(ops) == 1:
        # JAX's dimension check still applies to a lone operand (no negative wrapping)
        _concatenate_abstract(get_aval(ops[0]), dimension=dimension)
        return ops[0]
    return concatenate_p.bind(*ops, dimension=dimension)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list:
    """Split operand along `axis` into pieces of the given sizes (which must sum to its size)."""
    (operand,) = as_lax_operands("split", operand)
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}")
    if sum(sizes) != aval.shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {list(aval.shape)}")
    bounds = np.cumsum([0] + sizes).tolist()
    return [slice_in_dim(operand, lo, hi, 1, axis) for lo, hi in zip(bounds, bounds[1:])]


def stack(operands: Sequence[Any], axis: int = 0):
    """Join arrays of one shape along a new axis."""
    if len(operands) == 0:
        raise ValueError("stack expects at least one operand, got 0.")
    ops = as_lax_operands("stack", *operands)
    avals = [get_aval(op) for op in ops]
    shapes = ", ".join(str(a.shape) for a in avals)
    if len({a.ndim for a in avals}) != 1:
        raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                         f"{shapes}.")
    if len({a.shape for a in avals}) != 1:
        raise ValueError(f"All input arrays must have the same shape. Got {shapes}.")
    if len({a.dtype for a in avals}) != 1:
        raise TypeError(f"lax.stack requires arguments to have the same dtypes, got "
                        f"{', '.join(a.dtype.name for a in avals)}.")
    axis = canonicalize_axis(axis, avals[0].ndim + 1)
    return concatenate([expand_dims(op, (axis,)) for op in ops], axis)


def unstack(x: Any, axis: int = 0) -> tuple:
    """The slices of x along `axis`, each without that axis."""
    (x,) = as_lax_operands("unstack", x)
    aval = get_aval(x)
    axis = canonicalize_axis(axis, aval.ndim)
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def tile(operand: Any, reps: Sequence[int]):
    """Repeat operand reps[i] times along each axis i (len(reps) == operand.ndim)."""
    (operand,) = as_lax_operands("tile", operand)
    aval = get_aval(operand)
    reps = check_shape(reps, "reps")
    if len(reps) != aval.ndim:
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                        f"and x.ndim={aval.ndim}.")
    # (r0, d0, r1, d1, ...) then merge each pair: row-major order repeats whole blocks
    interleaved = tuple(n for r, d in zip(reps, aval.shape) for n in (r, d))
    out = broadcast_in_dim(operand, interleaved, tuple(range(1, 2 * aval.ndim, 2)))
    return reshape(out, tuple(r * d for r, d in zip(reps, aval.shape)))


# --- pad -----------------------------------------------------------------------------------


def _pad_abstract(x, pad_value, *, padding_config):
    if pad_value.shape != ():
        raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)="
                         f"{pad_value.shape}")
    if pad_value.dtype != x.dtype:
        raise TypeError(f"pad operand and padding_value must be same dtype: got "
                        f"{x.dtype.name} and {pad_value.dtype.name}.")
    if len(padding_config) != x.ndim:
        raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                         f"got padding_config {padding_config} for operand shape {x.shape}")
    if any(interior < 0 for _, _, interior in padding_config):
        raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                         f"padding_config {padding_config}")
    shape = [lo + hi + d + max(d - 1, 0) * interior
             for d, (lo, hi, interior) in zip(x.shape, padding_config)]
    if any(n < 0 for n in shape):
        raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                         f"{tuple(shape)}, for padding_config {padding_config} and operand "
                         f"shape {x.shape}")
    return ShapedArray(shape, x.dtype, x.weak_type and pad_value.weak_type)


def _pad_impl(x, pad_value, *, padding_config):
    shape = [d + max(d - 1, 0) * interior for d, (_, _, interior) in zip(x.shape, padding_config)]
    inner = np.full(shape, pad_value, dtype=x.dtype)
    inner[tuple(builtins.slice(None, None, interior + 1) for _, _, interior in padding_config)] = x
    # negative low/high padding crops
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    out = np.pad(inner, pads, constant_values=pad_value) if inner.ndim else inner
    crops = tuple(builtins.slice(-lo if lo < 0 else 0, (out.shape[i] + hi) if hi < 0 else None)
                  for i, (lo, hi, _) in enumerate(padding_config))
    return out[crops]


pad_p = Primitive("pad", fusion=INDEX_MAP)
pad_p.def_abstract_eval(_pad_abstract)
pad_p.def_impl(_pad_impl)


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]):
    # each converted on its own: a Python scalar keeps its default dtype (JAX: pad(f32, 0) fails)
    (operand,) = as_lax_operands("pad", operand)
    (padding_value,) = as_lax_operands("pad", padding_value)
    cfg = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=cfg)


# --- iota ----------------------------------------------------------------------------------

def _iota_abstract(*, dtype, shape, dimension):
    if not (dtypes.is_int(dtype) or dtypes.is_inexact(dtype)):
        raise TypeError(f"iota does not accept dtype {dtype.name}. Accepted dtypes are subtypes "
                        "of integer, floating, complexfloating.")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota dimension must be between 0 and len(shape), got "
                         f"dimension={dimension} for shape={shape}")
    return ShapedArray(shape, dtype)


iota_p = Primitive("iota", fusion=INDEX_MAP)
iota_p.cheap = True
iota_p.def_abstract_eval(_iota_abstract)
iota_p.def_impl(lambda *, dtype, shape, dimension: np.broadcast_to(
    np.arange(shape[dimension], dtype=dtype).reshape(
        [shape[dimension] if i == dimension else 1 for i in range(len(shape))]), shape))


def iota(dtype: Any, size: int):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int):
    dtype = dtypes.check_user_dtype(dtype, fun_name="broadcasted_iota")  # (iota's too, as JAX)
    shape = check_shape(shape)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=int(dimension))


# --- static slice --------------------------------------------------------------------------


def _slice_abstract(x, *, start_indices, limit_indices, strides):
    if len(start_indices) != x.ndim:
        raise TypeError(f"slice start_indices must have length equal to the number of "
                        f"dimensions of the operand, got indices {start_indices} for operand "
                        f"shape {x.shape}.")
    if len(limit_indices) != len(start_indices):
        raise TypeError(f"slice limit_indices must have the same length as start_indices, got "
                        f"start_indices {start_indices} and limit_indices {limit_indices}.")
    if any(hi > d for d, hi in zip(x.shape, limit_indices)):
        raise TypeError(f"slice limit_indices must be less than or equal to operand shape, got "
                        f"limit_indices {limit_indices} for operand shape {x.shape}.")
    if any(lo < 0 for lo in start_indices):
        raise TypeError(f"slice start_indices must be greater than or equal to zero, got "
                        f"start_indices of {start_indices}.")
    if any(hi < lo for lo, hi in zip(start_indices, limit_indices)):
        raise TypeError(f"slice limit_indices must be greater than or equal to start_indices, "
                        f"got start_indices {start_indices} and limit_indices {limit_indices}.")
    strides = strides or (1,) * x.ndim
    if len(strides) != x.ndim:
        raise TypeError(f"slice strides must have length equal to the number of dimensions of "
                        f"the operand, got strides {strides} for operand shape {x.shape}.")
    if any(s < 1 for s in strides):
        raise TypeError(f"slice strides must be positive, got {strides}")
    shape = [-(-(hi - lo) // s) for lo, hi, s in zip(start_indices, limit_indices, strides)]
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p = Primitive("slice", fusion=INDEX_MAP)
slice_p.def_abstract_eval(_slice_abstract)
slice_p.def_impl(lambda x, *, start_indices, limit_indices, strides: x[tuple(
    builtins.slice(lo, hi, 1 if strides is None else s) for lo, hi, s in
    zip(start_indices, limit_indices, strides or (1,) * x.ndim))])


def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None):
    (operand,) = as_lax_operands("slice", operand)
    st = tuple(int(i) for i in start_indices)
    lim = tuple(int(i) for i in limit_indices)
    strd = None if strides is None or all(s == 1 for s in strides) \
        else tuple(int(s) for s in strides)
    aval = get_aval(operand)
    if st == (0,) * aval.ndim and lim == aval.shape and strd is None:
        return operand
    return slice_p.bind(operand, start_indices=st, limit_indices=lim, strides=strd)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0):
    """operand[..., start:limit:stride] along `axis`; negative indices count from the end, but
    out-of-range ones are errors (lax.slice does not clamp)."""
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    size = aval.shape[axis]
    lo = 0 if start_index is None else int(start_index)
    hi = size if limit_index is None else int(limit_index)
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis] = lo + size if lo < 0 else lo
    limits[axis] = hi + size if hi < 0 else hi
    strides[axis] = int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True):
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim)
    index = int(index)
    size = aval.shape[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# --- transformation rules: JVP and transpose (all linear), batching -------------------------
def _zero_scalar(x):
    return full_like_aval(get_aval(x).update(shape=(), weak_type=False), 0)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = aval_of(x).shape
    bdims = broadcast_dimensions
    unit = {i for i, d in enumerate(in_shape) if d == 1 and shape[bdims[i]] != 1}
    kept = [i for i in range(len(in_shape)) if i not in unit]
    summed = sorted(set(range(len(shape))) - {bdims[i] for i in kept})
    out = sum_over(ct, summed) if summed else ct
    order = sorted(kept, key=lambda i: bdims[i])  # out's axes: kept dims by output position
    if order != kept:
        out = transpose(out, [order.index(i) for i in kept])
    return [reshape(out, in_shape)]


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = moveaxis(x, d, 0)
    return broadcast_in_dim_p.bind(x, shape=(get_aval(x).shape[0],) + shape,
                                   broadcast_dimensions=(0,) + tuple(b + 1 for b in
                                                                     broadcast_dimensions)), 0


def _reshape_transpose(ct, x, *, new_sizes, dimensions):
    shape = aval_of(x).shape
    if dimensions is None:
        return [reshape(ct, shape)]
    permuted = reshape(ct, tuple(shape[d] for d in dimensions))
    return [transpose(permuted, tuple(int(i) for i in np.argsort(dimensions)))]


def _reshape_batch(vals, dims, *, new_sizes, dimensions):
    (x,), (d,) = vals, dims
    x = moveaxis(x, d, 0)
    dims_b = None if dimensions is None else (0,) + tuple(i + 1 for i in dimensions)
    return reshape_p.bind(x, new_sizes=(get_aval(x).shape[0],) + new_sizes,
                          dimensions=dims_b), 0


def _transpose_batch(vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    perm = (d,) + tuple(p + (p >= d) for p in permutation)
    return transpose_p.bind(x, permutation=perm), 0


def _squeeze_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return squeeze_p.bind(moveaxis(x, d, 0), dimensions=tuple(i + 1 for i in dimensions)), 0


def _concatenate_transpose(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        n = aval_of(x).shape[dimension]
        out.append(slice_in_dim(ct, start, start + n, 1, dimension) if is_undefined(x) else None)
        start += n
    return out


def _concatenate_batch(vals, dims, *, dimension):
    size = axis_size(vals, dims)
    xs = [bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


def _pad_transpose(ct, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config)
    unpadded = pad(ct, _zero_scalar(ct), [(-a, -b, 0) for a, b in zip(lo, hi)])
    ndim = len(lo)
    t_x = slice(unpadded, (0,) * ndim, get_aval(unpadded).shape, [i + 1 for i in interior])
    t_pad = None
    if is_undefined(padding_value):
        everything = tuple(range(ndim))
        t_pad = sub(sum_over(ct, everything), sum_over(t_x, everything))
    return [t_x if is_undefined(x) else None, t_pad]


def _pad_batch(vals, dims, *, padding_config):
    (x, pad_value), (dx, dv) = vals, dims
    config = ((0, 0, 0),) + padding_config
    if dv is None:
        return pad_p.bind(moveaxis(x, dx, 0), pad_value, padding_config=config), 0
    # a batched padding value: pad with zeros, then select it where a mask says "padding"
    x = bdim_at_front(x, dx, axis_size(vals, dims))
    unbatched = get_aval(x).update(shape=get_aval(x).shape[1:])
    padded = pad_p.bind(x, _zero_scalar(x), padding_config=config)
    inside = Array.from_numpy(np.ones(unbatched.shape, bool), ShapedArray(unbatched.shape, bool))
    outside = Array.from_numpy(np.zeros((), bool), ShapedArray((), bool))
    mask = pad_p.bind(inside, outside, padding_config=padding_config)
    out_shape = get_aval(padded).shape
    mask = broadcast_in_dim(mask, out_shape, tuple(range(1, len(out_shape))))
    fill = broadcast_in_dim(moveaxis(pad_value, dv, 0), out_shape, (0,))
    return select_n(mask, fill, padded), 0


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = aval_of(x).shape
    ct_shape = get_aval(ct).shape
    if strides is None:
        config = [(s, n - lim, 0) for s, lim, n in zip(start_indices, limit_indices, shape)]
    else:
        real_limits = [s + (0 if m == 0 else 1 + (m - 1) * st)
                       for s, m, st in zip(start_indices, ct_shape, strides)]
        config = [(s, n - lim, st - 1)
                  for s, lim, n, st in zip(start_indices, real_limits, shape, strides)]
    return [pad(ct, _zero_scalar(ct), config)]


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    start = start_indices[:d] + (0,) + start_indices[d:]
    limit = limit_indices[:d] + (size,) + limit_indices[d:]
    strides = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides), d


def_linear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.def_batch(_broadcast_in_dim_batch)
def_linear(reshape_p, _reshape_transpose)
reshape_p.def_batch(_reshape_batch)
def_linear(transpose_p, lambda ct, x, *, permutation: [
    transpose(ct, tuple(int(i) for i in np.argsort(permutation)))])
transpose_p.def_batch(_transpose_batch)
def_linear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, aval_of(x).shape)])
squeeze_p.def_batch(_squeeze_batch)
def_linear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.def_batch(lambda vals, dims, *, dimensions: (rev_p.bind(
    vals[0], dimensions=tuple(a + (a >= dims[0]) for a in dimensions)), dims[0]))
def_linear(concatenate_p, _concatenate_transpose)
concatenate_p.def_batch(_concatenate_batch)
def_linear(pad_p, _pad_transpose)
pad_p.def_batch(_pad_batch)
def_linear(slice_p, _slice_transpose)
slice_p.def_batch(_slice_batch)
iota_p.def_not_differentiable()


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape NumPy-style broadcasting gives arrays of these shapes (ValueError when they
    do not broadcast)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                             f"{[tuple(s) for s in shapes]}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


__all__ = ["broadcast_shapes", "broadcast_in_dim", "broadcast", "broadcast_to_rank", "full",
           "full_like", "reshape",
           "transpose", "squeeze", "expand_dims", "rev", "concatenate", "split", "stack",
           "unstack", "tile", "pad", "iota", "broadcasted_iota", "slice", "slice_in_dim",
           "index_in_dim"]
