"""Shape manipulation of tracejit.numpy: reshape, transpose, stack/concatenate, split, tile,
repeat, flip, roll, pad, ... Built from lax shape primitives; sizes and axes must be concrete,
array contents may be traced."""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Sequence

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ..lax._base import canonicalize_axis, normalize_axes
from ._creation import _concrete, full, linspace, zeros_like
from ._ufuncs import multiply, subtract
from ._util import (array, asarray, broadcast_shapes, broadcast_to, check_arraylike,
                    is_arraylike, promote_dtypes)

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "moveaxis",
           "rollaxis", "swapaxes", "expand_dims", "squeeze", "atleast_1d", "atleast_2d",
           "atleast_3d", "broadcast_arrays", "concatenate", "concat", "stack", "unstack",
           "vstack", "hstack", "dstack", "column_stack", "split", "array_split", "hsplit",
           "vsplit", "dsplit", "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rot90",
           "pad", "append", "insert", "delete", "resize", "shape", "ndim", "size",
           "isscalar"]


def _arr(fun: str, a: Any) -> Any:
    check_arraylike(fun, a)
    return asarray(a)


def _index_tuple(x: Any) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple (TypeError for anything else, tracers too)."""
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(operator.index(i) for i in x)


def _concrete_tree(x: Any, context: str) -> Any:
    if isinstance(x, (tuple, list)):
        return [_concrete_tree(v, context) for v in x]
    return _concrete(x, context)


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, Array, Tracer))


# --- reshaping -----------------------------------------------------------------------------

def _compute_newshape(aval, newshape: Any) -> tuple[int, ...]:
    """newshape with its one allowed -1 resolved; JAX's TypeErrors for impossible sizes."""
    orig = newshape
    dims = _index_tuple(newshape)
    neg1s = [i for i, d in enumerate(dims) if d == -1]
    if len(neg1s) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {orig}")
    if neg1s:
        (i,) = neg1s
        others = math.prod(dims[:i] + dims[i + 1:])
        if aval.size % others != 0:  # others == 0 raises ZeroDivisionError, as in JAX
            raise TypeError(f"cannot reshape array of shape {aval.shape} (size {aval.size}) into "
                            f"shape {orig} because the product of specified axis sizes "
                            f"({others}) does not evenly divide {aval.size}")
        return dims[:i] + (aval.size // others,) + dims[i + 1:]
    if aval.size != math.prod(dims):
        raise TypeError(f"cannot reshape array of shape {aval.shape} (size {aval.size}) into "
                        f"shape {orig} (size {math.prod(dims)})")
    return dims


def reshape(a: Any, shape: Any, order: str = "C", *, copy: bool | None = None) -> Any:
    """a with a new shape of the same size (one entry may be -1); order 'C' or 'F'."""
    a = _arr("reshape", a)
    aval = get_aval(a)
    newshape = _compute_newshape(aval, shape)
    if order == "C":
        return lax.reshape(a, newshape)
    if order == "F":
        # Fortran order: reverse the axes, reshape to the reversed shape, reverse back
        out = lax.reshape(a, newshape[::-1], tuple(range(aval.ndim))[::-1])
        return lax.transpose(out, tuple(range(len(newshape)))[::-1])
    if order == "A":
        raise NotImplementedError("np.reshape order=A is not implemented.")
    raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def ravel(a: Any, order: str = "C") -> Any:
    """a flattened to one dimension."""
    a = _arr("ravel", a)
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    return reshape(a, (get_aval(a).size,), order)


def resize(a: Any, new_shape: Any) -> Any:
    """a's elements (flattened, repeated as needed) in an array of new_shape."""
    check_arraylike("resize", a)
    new_shape = _index_tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = ravel(a)
    n, new_size = get_aval(flat).size, math.prod(new_shape)
    if n == 0 or new_size == 0:
        return zeros_like(flat, shape=new_shape)
    flat = lax.slice_in_dim(tile(flat, -(-new_size // n)), 0, new_size)
    return lax.reshape(flat, new_shape)


def _shape_of(fun: str, a: Any) -> tuple[int, ...]:
    if hasattr(a, "shape"):
        return tuple(a.shape)
    if not is_arraylike(a) and not np.isscalar(a):  # JAX answers (as NumPy), with a warning
        warnings.warn(f"{fun} requires ndarray or scalar arguments, got {type(a)} at position 0. "
                      "In a future JAX release this will be an error.", DeprecationWarning,
                      stacklevel=3)
    return np.shape(a)


def shape(a: Any) -> tuple[int, ...]:
    """The shape of an array or scalar (a Python tuple)."""
    return _shape_of("shape", a)


def ndim(a: Any) -> int:
    """The number of dimensions of an array or scalar."""
    return a.ndim if hasattr(a, "ndim") else len(_shape_of("ndim", a))


def isscalar(element: Any) -> bool:
    """Whether `element` is a scalar: a NumPy/Python scalar or a zero-dimensional array (JAX
    counts 0-d arrays as scalars, unlike np.isscalar); non-array objects are not."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return element.ndim == 0
    if getattr(element, "__jax_array__", None) is not None:
        return asarray(element).ndim == 0
    return False


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    """The number of elements, in all or the given axes."""
    dims = _shape_of("size", a)
    return math.prod(dims[i] for i in normalize_axes(axis, len(dims)))


# --- axes ----------------------------------------------------------------------------------

def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """a with its axes permuted (reversed by default); negative axes count from the end."""
    a = _arr("transpose", a)
    nd = get_aval(a).ndim
    perm = tuple(range(nd))[::-1] if axes is None else \
        tuple(canonicalize_axis(i, nd) for i in axes)
    return lax.transpose(a, perm)


def permute_dims(a: Any, /, axes: tuple[int, ...]) -> Any:
    """The array-API transpose: axes must be a permutation (no negative axes)."""
    return lax.transpose(_arr("permute_dims", a), axes)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes."""
    x = _arr("matrix_transpose", x)
    nd = get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
    return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """a with axis1 and axis2 interchanged."""
    a = _arr("swapaxes", a)
    perm = list(range(get_aval(a).ndim))
    # list indexing gives NumPy's IndexError for an out-of-range axis, as JAX does
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return lax.transpose(a, perm)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    """a with the axes `source` moved to positions `destination` (others keep their order)."""
    a = _arr("moveaxis", a)
    nd = get_aval(a).ndim
    source = tuple(canonicalize_axis(i, nd) for i in _index_tuple(source))
    destination = tuple(canonicalize_axis(i, nd) for i in _index_tuple(destination))
    if len(source) != len(destination):
        raise ValueError(f"Inconsistent number of elements: {len(source)} vs {len(destination)}")
    perm = [i for i in range(nd) if i not in source]
    for dest, src in sorted(zip(destination, source)):
        perm.insert(dest, src)
    return lax.transpose(a, perm)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move `axis` to just before position `start` (NumPy's older moveaxis)."""
    a = _arr("rollaxis", a)
    nd = get_aval(a).ndim
    axis = canonicalize_axis(axis, nd)
    start = operator.index(start)
    if not -nd <= start <= nd:
        raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
    if start < 0:
        start += nd
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """a with size-1 axes inserted at the positions `axis` (of the result)."""
    return lax.expand_dims(_arr("expand_dims", a), _index_tuple(axis))


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """a without its size-1 axes (all of them, or those in `axis`, which must have size 1)."""
    a = _arr("squeeze", a)
    if axis is None:
        axis = tuple(i for i, d in enumerate(get_aval(a).shape) if d == 1)
    return lax.squeeze(a, _index_tuple(axis))


def _atleast(name: str, arys: tuple, n: int) -> Any:
    check_arraylike(name, *arys)
    out = [array(x, ndmin=n) if n < 3 else _to_3d(asarray(x)) for x in arys]
    return out[0] if len(out) == 1 else out


def _to_3d(x: Any) -> Any:
    # NumPy's rule: a 1-d array becomes (1, n, 1), a 2-d one (m, n, 1)
    new_axes = {0: (0, 1, 2), 1: (0, 2), 2: (2,)}.get(get_aval(x).ndim, ())
    return lax.expand_dims(x, new_axes) if new_axes else x


def atleast_1d(*arys: Any) -> Any:
    """Each input as an array of at least one dimension (a list if several)."""
    return _atleast("atleast_1d", arys, 1)


def atleast_2d(*arys: Any) -> Any:
    """Each input as an array of at least two dimensions (a list if several)."""
    return _atleast("atleast_2d", arys, 2)


def atleast_3d(*arys: Any) -> Any:
    """Each input as an array of at least three dimensions (a list if several)."""
    return _atleast("atleast_3d", arys, 3)


def broadcast_arrays(*args: Any) -> list:
    """The inputs broadcast against each other (dtypes unchanged)."""
    check_arraylike("broadcast_arrays", *args)
    args = [asarray(a) for a in args]
    target = broadcast_shapes(*(get_aval(a).shape for a in args))
    return [broadcast_to(a, target) for a in args]


# --- joining -------------------------------------------------------------------------------

def _concatenate_array(arr: Any, axis: int | None, dtype: Any) -> Any:
    # an array argument is a stack of pieces along its first axis
    arr = asarray(arr, dtype)
    aval = get_aval(arr)
    if aval.ndim == 0 or aval.shape[0] == 0:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return lax.reshape(arr, (aval.size,))
    if aval.ndim == 1:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, aval.ndim - 1)
    s = aval.shape
    new_shape = s[1:axis + 1] + (s[0] * s[axis + 1],) + s[axis + 2:]
    return lax.reshape(arr, new_shape, (*range(1, axis + 1), 0, *range(axis + 1, aval.ndim)))


def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis (axis=None: flatten first), promoting dtypes."""
    if _is_array(arrays):
        return _concatenate_array(arrays, axis, dtype)
    check_arraylike("concatenate", *arrays)
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return concatenate([ravel(a) for a in arrays], 0, dtype)
    if np.ndim(arrays[0]) == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, np.ndim(arrays[0]))
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:
        arrays = [asarray(a, dtype) for a in arrays]
    return lax.concatenate(arrays, axis)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """The array-API concatenate."""
    check_arraylike("concat", *arrays)
    return concatenate(arrays, axis=axis)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """Join arrays of one shape along a new axis, promoting dtypes."""
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
    if _is_array(arrays):
        axis = canonicalize_axis(axis, np.ndim(arrays))
        return concatenate(expand_dims(arrays, axis + 1), axis=axis, dtype=dtype)
    check_arraylike("stack", *arrays)
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:
        arrays = [asarray(a, dtype) for a in arrays]
    return lax.stack(arrays, axis)


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of x along `axis`."""
    return lax.unstack(_arr("unstack", x), axis)


def _pieces(name: str, tup: Any) -> list:
    """The pieces to join: a list's items, or an array's slices along its first axis."""
    if _is_array(tup):
        return list(lax.unstack(asarray(tup), 0))
    check_arraylike(name, *tup)
    return [asarray(t) for t in tup]


def vstack(tup: Any, dtype: Any = None) -> Any:
    """Stack row-wise: 1-d inputs become rows."""
    arrs = [array(a, ndmin=2) for a in _pieces("vstack", tup)]
    return concatenate(arrs, axis=0, dtype=dtype)


def hstack(tup: Any, dtype: Any = None) -> Any:
    """Stack column-wise (along axis 1; axis 0 for 1-d inputs)."""
    arrs = [array(a, ndmin=1) for a in _pieces("hstack", tup)]
    axis = 0 if arrs and get_aval(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis=axis, dtype=dtype)


def dstack(tup: Any, dtype: Any = None) -> Any:
    """Stack depth-wise (along axis 2), after atleast_3d."""
    return concatenate([_to_3d(a) for a in _pieces("dstack", tup)], axis=2, dtype=dtype)


def column_stack(tup: Any) -> Any:
    """Stack 1-d inputs as columns (2-d inputs join along axis 1)."""
    arrs = [lax.transpose(array(a, ndmin=2), (1, 0)) if get_aval(a).ndim < 2 else a
            for a in _pieces("column_stack", tup)]
    return concatenate(arrs, axis=1)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """arr with values joined at the end (both flattened when axis is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis=axis)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """arr with `values` inserted before the indices `obj` (an int, a 1-d int array or a slice)
    along `axis` (flattened if None). The indices may be traced."""
    from . import argsort, arange, clip, where  # the indexing/sorting layers
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(_concrete(axis, "axis argument of jnp.insert()"), get_aval(a).ndim)
    n_input = get_aval(a).shape[axis]
    indices = arange(*obj.indices(n_input)) if isinstance(obj, slice) else asarray(obj)
    idx_aval = get_aval(indices)
    if idx_aval.ndim > 1:
        raise ValueError(f"jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if not dtypes.is_int(idx_aval.dtype):
        if idx_aval.size != 0 or isinstance(obj, (Array, Tracer)):
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
        indices = lax.convert_element_type(indices, dtypes.default_int())
    values = array(values, ndmin=get_aval(a).ndim, dtype=get_aval(a).dtype)
    if get_aval(indices).size == 1:
        # one insertion point: all of `values` (along axis) goes there
        if idx_aval.ndim == 0:
            values = moveaxis(values, 0, axis)
        indices = full(get_aval(values).shape[axis], ravel(indices)[0])
    n_insert = broadcast_shapes(get_aval(indices).shape, (get_aval(values).shape[axis],))[0]
    out_shape = list(get_aval(a).shape)
    out_shape[axis] += n_insert
    indices = clip(where(indices < 0, indices + n_input, indices), 0, n_input)
    # each value's final position: its index plus the number of values placed before it
    values_ind = indices.at[argsort(indices)].add(arange(n_insert, dtype=indices.dtype))
    arr_mask = lax.full((n_input + n_insert,), True).at[values_ind].set(False)
    arr_ind = where(arr_mask, size=n_input)[0]
    lead = (slice(None),) * axis
    out = zeros_like(a, shape=tuple(out_shape)).at[lead + (values_ind,)].set(values)
    return out.at[lead + (arr_ind,)].set(a)


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    """arr without the entries `obj` (an int, a slice, an int or bool array) along `axis`
    (flattened if None). Traced indices need assume_unique_indices=True."""
    a = _arr("delete", arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    try:
        index = canonicalize_axis(operator.index(obj), n)
    except TypeError:
        pass
    else:
        return concatenate([lax.slice_in_dim(a, 0, index, axis=axis),
                            lax.slice_in_dim(a, index + 1, None, axis=axis)], axis=axis)
    from . import take  # the indexing layer's gather
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
    check_arraylike("delete", a, obj)
    if assume_unique_indices and dtypes.is_int(get_aval(obj).dtype):
        return take(a, _kept_indices(obj, n), axis=axis)
    obj = np.asarray(_concrete(obj, "'obj' array argument of jnp.delete()"))
    if dtypes.is_int(obj.dtype):
        mask = np.ones(n, dtype=bool)
        mask[obj] = False
    elif obj.dtype == bool:
        if obj.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~obj
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={obj.dtype}; must be integer or "
                         "bool.")
    return take(a, np.flatnonzero(mask).astype(dtypes.default_int()), axis=axis)


def _kept_indices(obj: Any, n: int) -> Any:
    """The indices of [0, n) not in the (unique, possibly traced) `obj`: the i-th kept index
    is i plus the number of deleted indices at or below it."""
    from . import arange, clip, sort, where  # the sorting layer
    obj = ravel(asarray(obj))
    obj = sort(clip(where(obj < 0, obj + n, obj), 0, n))
    dtype = get_aval(obj).dtype
    m = get_aval(obj).shape[0]
    obj = obj - arange(m, dtype=dtype)  # deleted index k becomes "k-th gap before obj[k]"
    kept = arange(n - m, dtype=dtype)
    passed = lax.ge(lax.broadcast(kept, (m,)), lax.broadcast_in_dim(obj, (m, n - m), (0,)))
    return kept + lax.reduce_sum(lax.convert_element_type(passed, dtype), (0,))


# --- splitting -----------------------------------------------------------------------------

def _split(op: str, ary: Any, indices_or_sections: Any, axis: int) -> list:
    ary = _arr(op, ary)
    axis = operator.index(_concrete(axis, f"in jax.numpy.{op} argument `axis`"))
    aval = get_aval(ary)
    n = aval.shape[canonicalize_axis(axis, aval.ndim)]
    if isinstance(indices_or_sections, (tuple, list)) or \
            (_is_array(indices_or_sections) and np.ndim(indices_or_sections) > 0):
        cuts = _concrete_tree(indices_or_sections, f"in jax.numpy.{op} argument 1")
        bounds = [0] + [operator.index(i) for i in np.asarray(cuts).tolist()] + [n]
        sizes = list(np.diff(bounds))
    else:
        # int(), not operator.index: JAX accepts (and truncates) a float count
        sections = int(_concrete(indices_or_sections, f"in jax.numpy.{op} argument 1"))
        part, rest = divmod(n, sections)
        if rest == 0:
            sizes = [part] * sections
        elif op == "array_split":
            sizes = [part + 1] * rest + [part] * (sections - rest)
        else:
            raise ValueError(f"array split does not result in an equal division: rest is {rest}")
    return lax.split(ary, sizes, axis)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """ary cut into equal sections, or at the given indices, along `axis`."""
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """As split, but the sections may differ in size by one (the first ones are longer)."""
    return _split("array_split", ary, indices_or_sections, axis)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """split along axis 0."""
    return _split("vsplit", ary, indices_or_sections, 0)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """split along axis 1 (axis 0 for 1-d input)."""
    a = _arr("hsplit", ary)
    return _split("hsplit", a, indices_or_sections, 0 if get_aval(a).ndim == 1 else 1)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """split along axis 2."""
    return _split("dsplit", ary, indices_or_sections, 2)


# --- repetition ----------------------------------------------------------------------------

def tile(A: Any, reps: int | Sequence[int]) -> Any:  # noqa: N803 - NumPy's name
    """A repeated reps[i] times along each axis (A or reps padded with leading ones)."""
    arr = _arr("tile", A)
    reps = _index_tuple(reps)
    nd = get_aval(arr).ndim
    reps = (1,) * (nd - len(reps)) + reps
    if len(reps) > nd:
        arr = lax.expand_dims(arr, tuple(range(len(reps) - nd)))
    return lax.tile(arr, reps)


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """Each element of a repeated `repeats` times along `axis` (flattened if None). Array
    repeats must be concrete unless total_repeat_length fixes the result's length (it pads with
    the last element or truncates)."""
    check_arraylike("repeat", a, repeats)
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    axis = operator.index(_concrete(axis, "'axis' argument of jnp.repeat()"))
    aval = get_aval(a)
    if total_repeat_length is None:
        repeats = _concrete(repeats, (
            "When jit-compiling jnp.repeat, the total number of repeats must be static. To fix "
            "this, either specify a static value for `repeats`, or pass a static value to "
            "`total_repeat_length`."))
        if np.ndim(repeats) == 0 and aval.ndim != 0:
            # one count for all: insert an axis, broadcast along it, merge it into `axis`
            axis = canonicalize_axis(axis, aval.ndim)
            count = operator.index(np.asarray(repeats)[()])
            aux_shape = list(aval.shape)
            aux_shape.insert(axis + 1, count)
            out = lax.broadcast_in_dim(a, aux_shape, [i for i in range(aval.ndim + 1)
                                                      if i != axis + 1])
            result_shape = list(aval.shape)
            result_shape[axis] *= count
            return lax.reshape(out, result_shape)
        repeats = np.ravel(np.asarray(repeats))
        if aval.ndim != 0:
            repeats = np.broadcast_to(repeats, [aval.shape[axis]])
        total_repeat_length = int(np.sum(repeats))
    else:
        total_repeat_length = operator.index(total_repeat_length)
        repeats = ravel(repeats)
        if aval.ndim != 0:
            repeats = broadcast_to(repeats, (aval.shape[axis],))
    if aval.ndim == 0:
        if np.shape(repeats) == (1,):
            return full((total_repeat_length,), a)
        raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                         "values of the parameter `repeats`.")
    axis = canonicalize_axis(axis, aval.ndim)
    if total_repeat_length == 0:
        result_shape = list(aval.shape)
        result_shape[axis] = 0
        return lax.full(result_shape, 0, aval.dtype)
    if aval.shape[axis] == 0:
        return a
    from . import take  # the indexing layer's gather
    return take(a, _repeat_indices(repeats, total_repeat_length), axis=axis)


def _repeat_indices(repeats: Any, total: int) -> Any:
    """out[j] = a[idx[j]]: idx[j] counts the elements whose runs end at or before j (capped at
    the last element, which pads a result longer than sum(repeats))."""
    last = np.shape(repeats)[0] - 1
    positions = np.arange(total)
    if isinstance(repeats, np.ndarray):
        idx = np.searchsorted(np.cumsum(repeats), positions, side="right")
        return np.minimum(idx, last).astype(dtypes.default_int())
    from . import searchsorted  # the sorting layer
    idx = searchsorted(lax.cumsum(repeats), positions.astype(np.int32), side="right")
    return lax.min(idx, np.asarray(last, get_aval(idx).dtype))


# --- reordering ----------------------------------------------------------------------------

def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    """m with the order of elements reversed along `axis` (all axes by default)."""
    m = _arr("flip", m)
    nd = get_aval(m).ndim
    axes = range(nd) if axis is None else _index_tuple(axis)
    return lax.rev(m, tuple(canonicalize_axis(ax, nd) for ax in axes))


def fliplr(m: Any) -> Any:
    """flip along axis 1."""
    return flip(_arr("fliplr", m), 1)


def flipud(m: Any) -> Any:
    """flip along axis 0."""
    return flip(_arr("flipud", m), 0)


def roll(a: Any, shift: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Elements shifted cyclically by `shift` along `axis` (flattened if None); a traced shift
    works (with a scalar or tuple of axes)."""
    a = _arr("roll", a)
    aval = get_aval(a)
    if axis is None:
        return lax.reshape(roll(ravel(a), shift, 0), aval.shape)
    axes = tuple(canonicalize_axis(ax, aval.ndim) for ax in _index_tuple(axis))
    try:
        shifts = _index_tuple(shift)
    except TypeError:  # a traced (or float) shift
        return _roll_dynamic(a, asarray(shift), axes)
    for ax, s in zip(*np.broadcast_arrays(axes, shifts)):
        n = get_aval(a).shape[ax]
        if n == 0:
            continue
        i = int(-s % n)
        a = lax.concatenate([lax.slice_in_dim(a, i, n, axis=ax),
                             lax.slice_in_dim(a, 0, i, axis=ax)], int(ax))
    return a


def _roll_dynamic(a: Any, shift: Any, axes: tuple[int, ...]) -> Any:
    shift_shape = get_aval(shift).shape
    b_shape = broadcast_shapes(shift_shape, np.shape(axes))
    if len(b_shape) != 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    shifts = broadcast_to(shift, b_shape)
    for k, ax in enumerate(np.broadcast_to(axes, b_shape)):
        n = get_aval(a).shape[ax]
        s = lax.convert_element_type(lax.index_in_dim(shifts, k, keepdims=False), np.int32)
        period = np.int32(max(n, 1))
        r = lax.rem(s, period)  # Python's modulo: the remainder takes the divisor's sign
        r = lax.select(lax.lt(r, np.int32(0)), lax.add(r, period), r)
        doubled = lax.concatenate([a, a], int(ax))
        a = lax.dynamic_slice_in_dim(doubled, lax.sub(np.int32(n), r), n, axis=int(ax))
    return a


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """m rotated by 90 degrees k times, from the first of `axes` towards the second."""
    m = _arr("rot90", m)
    nd = get_aval(m).ndim
    if nd < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {get_aval(m).shape}, which has ndim {nd}")
    ax1, ax2 = (canonicalize_axis(ax, nd) for ax in axes)
    if ax1 == ax2:
        raise ValueError("Axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (ax1, ax2))
    perm = list(range(nd))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return lax.transpose(lax.rev(m, (ax2,)), perm)
    return lax.rev(lax.transpose(m, perm), (ax2,))


# --- padding -------------------------------------------------------------------------------

_PAD_KWARGS = {"constant": ("constant_values",), "edge": (), "wrap": (), "empty": (),
               "linear_ramp": ("end_values",), "maximum": ("stat_length",),
               "minimum": ("stat_length",), "mean": ("stat_length",),
               "median": ("stat_length",), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",)}


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:  # noqa: A002
    """NumPy's pad: pad_width is n, (before, after) or one pair per axis. Modes: constant,
    edge, wrap, reflect, symmetric (reflect_type 'even'/'odd'), linear_ramp, maximum, minimum,
    mean, median, empty."""
    arr = _arr("pad", array)
    nd = get_aval(arr).ndim
    widths = _broadcast_to_pairs(pad_width, nd, "pad_width")
    if any(not isinstance(w, (int, np.integer)) for pair in widths for w in pair):
        raise TypeError("`pad_width` must be of integral type.")
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not supported by tracejit.")
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if nd == 0:
        return arr
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError("index can't contain negative values")
    widths = tuple((int(lo), int(hi)) for lo, hi in widths)
    if mode == "constant":
        return _pad_constant(arr, widths, asarray(kwargs.get("constant_values", 0)))
    if mode == "wrap":
        return _pad_wrap(arr, widths)
    if mode in ("symmetric", "reflect"):
        return _pad_reflect(arr, widths, mode, kwargs.get("reflect_type", "even"))
    if mode == "edge":
        return _pad_edge(arr, widths)
    if mode == "linear_ramp":
        ends = _broadcast_to_pairs(kwargs.get("end_values", 0), nd, "end_values")
        return _pad_linear_ramp(arr, widths, ends)
    if mode == "empty":
        return _pad_constant(arr, widths, asarray(0))
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
        stat_length = _broadcast_to_pairs(stat_length, nd, "stat_length")
    return _pad_stats(arr, widths, stat_length, mode)


def _broadcast_to_pairs(nvals: Any, nd: int, name: str) -> tuple:
    """((before, after),) * nd from NumPy's shorthand forms; entries must be concrete."""
    nvals = _concrete_tree(nvals, f"{name} argument of jnp.pad")
    try:
        vals = np.asarray(nvals)
    except ValueError as e:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}") from e
    if vals.dtype == object:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}")
    if vals.shape == (nd, 2):
        return tuple((v[0][()], v[1][()]) for v in vals)
    if vals.shape == (1, 2):
        return ((vals[0, 0][()], vals[0, 1][()]),) * nd
    if vals.shape == (2,):
        return ((vals[0][()], vals[1][()]),) * nd
    if vals.shape in ((1,), ()):
        v = vals.ravel()[0][()]
        return ((v, v),) * nd
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {vals.shape}. Valid "
                     f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _pad_constant(arr: Any, widths: tuple, values: Any) -> Any:
    aval = get_aval(arr)
    values = lax.convert_element_type(values, aval.dtype, aval.weak_type)
    vshape = get_aval(values).shape
    if vshape == () or vshape == (1,):
        return lax.pad(arr, lax.reshape(values, ()), [(lo, hi, 0) for lo, hi in widths])
    if len(vshape) == 1 and vshape[-1] != 2:
        raise ValueError(f"jnp.pad: constant_values has unsupported shape {vshape}. If the "
                         "shape is 1D or 2D, the last dimension must be of size 1 or 2.")
    values = broadcast_to(values, (aval.ndim, 2))
    for i, (lo, hi) in enumerate(widths):
        for side, width in ((0, lo), (1, hi)):
            if width:
                config = [(0, 0, 0)] * aval.ndim
                config[i] = (width, 0, 0) if side == 0 else (0, width, 0)
                value = lax.reshape(lax.slice(values, (i, side), (i + 1, side + 1)), ())
                arr = lax.pad(arr, value, config)
    return arr


def _check_no_padding(widths: tuple, mode: str) -> None:
    if widths[0] > 0 or widths[1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_wrap(arr: Any, widths: tuple) -> Any:
    for i, (lo, hi) in enumerate(widths):
        n = get_aval(arr).shape[i]
        if n == 0:
            _check_no_padding((lo, hi), "wrap")
            continue
        lo_reps, lo_rem = divmod(lo, n)
        hi_reps, hi_rem = divmod(hi, n)
        parts = [lax.slice_in_dim(arr, n - lo_rem, n, axis=i)] if lo_rem else []
        parts += [arr] * (lo_reps + hi_reps + 1)
        if hi_rem:
            parts.append(lax.slice_in_dim(arr, 0, hi_rem, axis=i))
        arr = lax.concatenate(parts, i)
    return arr


def _pad_reflect(arr: Any, widths: tuple, mode: str, reflect_type: str) -> Any:
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for i, (lo, hi) in enumerate(widths):
        n = get_aval(arr).shape[i]
        if n == 0:
            _check_no_padding((lo, hi), mode)
            continue
        # reflect skips the edge element, symmetric repeats it; wide padding reflects again
        offset = 1 if mode == "reflect" and n > 1 else 0
        for before, width in ((True, lo), (False, hi)):
            edge = _edge(arr, i, before) if reflect_type == "odd" else None
            while width > 0:
                cur = min(width, n - offset)
                width -= cur
                if before:
                    piece = lax.slice_in_dim(arr, offset, offset + cur, axis=i)
                else:
                    stop = None if mode == "symmetric" or n == 1 else -1
                    piece = lax.slice_in_dim(arr, -(cur + offset), stop, axis=i)
                piece = lax.rev(piece, (i,))
                if reflect_type == "odd":
                    piece = _odd_reflection(edge, piece)
                    if n > 1:
                        edge = _edge(piece, i, before)
                arr = lax.concatenate([piece, arr] if before else [arr, piece], i)
    return arr


def _edge(x: Any, axis: int, first: bool) -> Any:
    return lax.slice_in_dim(x, 0, 1, axis=axis) if first else \
        lax.slice_in_dim(x, -1, None, axis=axis)


def _odd_reflection(edge: Any, piece: Any) -> Any:
    """2 * edge - piece, with NumPy's promotion (as jnp arithmetic would do it)."""
    return subtract(multiply(2, edge), piece)


def _pad_edge(arr: Any, widths: tuple) -> Any:
    for i, (lo, hi) in enumerate(widths):
        n = get_aval(arr).shape[i]
        if n == 0:
            _check_no_padding((lo, hi), "edge")
            continue
        before = repeat(lax.slice_in_dim(arr, 0, 1, axis=i), lo, axis=i)
        after = repeat(lax.slice_in_dim(arr, n - 1, n, axis=i), hi, axis=i)
        arr = lax.concatenate([before, arr, after], i)
    return arr


def _pad_linear_ramp(arr: Any, widths: tuple, ends: tuple) -> Any:
    aval = get_aval(arr)
    for i, (lo, hi) in enumerate(widths):
        first = lax.squeeze(lax.slice_in_dim(arr, 0, 1, axis=i), (i,))
        last = lax.squeeze(lax.slice_in_dim(arr, -1, None, axis=i), (i,))
        ramp_lo = linspace(ends[i][0], first, lo, endpoint=False, dtype=aval.dtype, axis=i)
        ramp_hi = linspace(ends[i][1], last, hi, endpoint=False, dtype=aval.dtype, axis=i)
        ramp_lo = lax.convert_element_type(ramp_lo, aval.dtype, aval.weak_type)
        ramp_hi = lax.convert_element_type(ramp_hi, aval.dtype, aval.weak_type)
        arr = lax.concatenate([ramp_lo, arr, lax.rev(ramp_hi, (i,))], i)
    return arr


def _pad_stats(arr: Any, widths: tuple, stat_length: tuple | None, mode: str) -> Any:
    from .. import numpy as jnp  # the reductions layer
    stat = getattr(jnp, {"maximum": "amax", "minimum": "amin", "mean": "mean",
                         "median": "median"}[mode])
    aval = get_aval(arr)
    for i, (lo, hi) in enumerate(widths):
        if stat_length is None:
            stat_lo = stat_hi = stat(arr, axis=i, keepdims=True)
        else:
            n = get_aval(arr).shape[i]
            len_lo, len_hi = stat_length[i]
            if len_lo == 0 or len_hi == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            len_lo, len_hi = min(len_lo, n), min(len_hi, n)
            stat_lo = stat(lax.slice_in_dim(arr, 0, len_lo, axis=i), axis=i, keepdims=True)
            stat_hi = stat(lax.slice_in_dim(arr, n - len_hi, n, axis=i), axis=i,
                           keepdims=True)
        if dtypes.is_int(aval.dtype):
            stat_lo, stat_hi = jnp.round(stat_lo), jnp.round(stat_hi)
        stat_lo = lax.convert_element_type(stat_lo, aval.dtype, aval.weak_type)
        stat_hi = lax.convert_element_type(stat_hi, aval.dtype, aval.weak_type)
        arr = lax.concatenate([repeat(stat_lo, lo, axis=i), arr, repeat(stat_hi, hi, axis=i)], i)
    return arr
