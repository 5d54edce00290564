"""Higher-order and bit-level helpers of tracejit.numpy: piecewise (lax.switch per element),
apply_along_axis / apply_over_axes / fromfunction (vmap), block, sort_complex, packbits,
unpackbits and einsum_path, as JAX defines them."""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis
from ..transforms.api import vmap
from ._creation import arange, zeros_like
from ._reductions import argmax, cumsum
from ._shape import concatenate, expand_dims, pad, ravel, swapaxes
from ._util import array, asarray, check_arraylike
from ._vectorize import vectorize

__all__ = ["piecewise", "apply_along_axis", "apply_over_axes", "fromfunction", "block",
           "sort_complex", "packbits", "unpackbits", "einsum_path"]


def piecewise(x: Any, condlist: Any, funclist: list, *args: Any, **kw: Any):
    """Per element of x, the value of the function (or constant) of the first true condition;
    one extra entry in funclist gives the value where none holds (0 otherwise)."""
    check_arraylike("piecewise", x)
    x = asarray(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = funclist[-1:] + funclist[:-1]
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = asarray(condlist, dtype=bool)
    # the branch index: how many conditions hold up to the first true one (0: the default)
    index = argmax(cumsum(concatenate([zeros_like(conds[:1]), conds], 0), 0), 0)
    dtype = get_aval(x).dtype

    def _branch(f: Any) -> Callable:
        if callable(f):
            return lambda v: asarray(f(v, *args, **kw)).astype(dtype)
        return lambda v: array(f, dtype=dtype)
    branches = [_branch(f) for f in funclist]
    return vectorize(lambda i, v: lax.switch(i, branches, v))(index, x)


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any):
    """func1d applied to each 1-D slice of arr along axis (vmapped over the other axes); its
    output axes take the place of `axis`."""
    check_arraylike("apply_along_axis", arr)
    ndim = np.ndim(arr)
    axis = canonicalize_axis(axis, ndim)
    func = lambda a: func1d(a, *args, **kwargs)  # noqa: E731
    for i in range(1, ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(asarray(arr))


def apply_over_axes(func: Callable, a: Any, axes: Sequence[int]):
    """func(a, axis) applied for each axis in turn, keeping the rank (a dropped axis is put
    back with size 1)."""
    check_arraylike("apply_over_axes", a)
    a = asarray(a)
    for axis in axes:
        b = func(a, axis)
        if get_aval(b).ndim == get_aval(a).ndim:
            a = b
        elif get_aval(b).ndim == get_aval(a).ndim - 1:
            a = expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, **kwargs: Any):
    """function called on the index grids of `shape` (vmapped over each axis, so it sees
    scalars' batches rather than whole grids, as in JAX)."""
    shape = tuple(operator.index(d) for d in (shape if np.iterable(shape) else (shape,)))
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        function = vmap(function, in_axes=tuple(in_axes[::-1]))
    return function(*(arange(s, dtype=dtype) for s in shape), **kwargs)


def _block(xs: Any) -> tuple:
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if len(xs) == 0:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts, depths = zip(*(_block(x) for x in xs))
        if any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = max(depths[0], max(get_aval(x).ndim for x in parts))
        parts = tuple(lax.expand_dims(x, tuple(range(rank - get_aval(x).ndim))) for x in parts)
        return concatenate(parts, axis=-depths[0]), depths[0] + 1
    check_arraylike("block", xs)
    return asarray(xs), 1


def block(arrays: Any):
    """An array assembled from nested lists of blocks (the innermost lists join along the
    last axis)."""
    out, _ = _block(arrays)
    return out


def sort_complex(a: Any):
    """a sorted (lexicographically by real, then imaginary part), as a complex array."""
    check_arraylike("sort_complex", a)
    a = lax.sort(asarray(a))
    dtype = get_aval(a).dtype
    complex_dtype = np.result_type(dtypes.to_inexact(dtype), np.complex64)
    return lax.convert_element_type(a, complex_dtype)


def packbits(a: Any, axis: int | None = None, bitorder: str = "big"):
    """Nonzero entries of a as bits packed eight to a uint8 along axis (flattened if None)."""
    check_arraylike("packbits", a)
    arr = asarray(a)
    dtype = get_aval(arr).dtype
    if not (dtypes.issubdtype(dtype, np.integer) or dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    arr = (arr != 0).astype(np.uint8)
    bits = arange(8, dtype=np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    shape = get_aval(arr).shape
    if shape[-1] % 8:
        arr = pad(arr, [(0, 0)] * (len(shape) - 1) + [(0, 8 - shape[-1] % 8)])
    arr = arr.reshape(get_aval(arr).shape[:-1] + (get_aval(arr).shape[-1] // 8, 8))
    packed = (arr << bits).sum(-1).astype(np.uint8)
    return swapaxes(packed, axis, -1)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big"):
    """The bits of a uint8 array as 0/1 uint8s along axis (flattened if None), the first
    `count` of them if given (padded with zeros past the end)."""
    check_arraylike("unpackbits", a)
    arr = asarray(a)
    if get_aval(arr).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = asarray(1, dtype=np.uint8) << arange(8, dtype=np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    unpacked = ((arr[..., None] & bits) > 0).astype(np.uint8)
    unpacked = unpacked.reshape(get_aval(unpacked).shape[:-2] + (-1,))
    if count is not None:
        n = get_aval(unpacked).shape[-1]
        if count > n:
            unpacked = pad(unpacked, [(0, 0)] * (get_aval(unpacked).ndim - 1) + [(0, count - n)])
        else:
            unpacked = unpacked[..., :count]
    return swapaxes(unpacked, axis, -1)


def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "auto") -> tuple:
    """The contraction order einsum would use and its report, from opt_einsum (as JAX);
    optimize=False gives the left-to-right path."""
    try:
        import opt_einsum
    except ImportError as err:
        raise ImportError("jnp.einsum_path needs the opt_einsum package: pip install "
                          "opt_einsum") from err
    if optimize is True:
        optimize = "optimal"
    elif optimize is False:
        n = len(operands) if isinstance(subscripts, str) else (len(operands) + 2) // 2
        optimize = [(0, 1)] * max(n - 1, 0) if n > 1 else [(0,)]
    return opt_einsum.contract_path(subscripts, *operands, optimize=optimize)
