"""Index tricks and diagonal/axis writers of tracejit.numpy (JAX's r_, c_, mgrid, ogrid,
fill_diagonal, diagflat, put_along_axis, mask_indices), built from jnp functions and `.at`."""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..core.trace import concrete_value, get_aval
from ..lax._base import canonicalize_axis
from ._creation import arange, linspace, meshgrid, ones, zeros
from ._indexing import diag_indices, nonzero
from ._shape import concatenate, expand_dims, ravel, stack, transpose
from ._util import array, asarray, broadcast_to, check_arraylike, promote_dtypes

__all__ = ["r_", "c_", "s_", "index_exp", "mgrid", "ogrid", "mask_indices", "fill_diagonal",
           "diagflat", "put_along_axis"]

s_, index_exp = np.s_, np.index_exp  # plain index tuples, as JAX re-exports NumPy's


def _grid_1d(s: slice, op_name: str):
    """The 1-D grid a slice names: arange(start, stop, step), or linspace when step is an
    imaginary number of points (NumPy's mgrid convention)."""
    start = concrete_value(s.start, f"slice start of jnp.{op_name}") if s.start is not None \
        else 0
    stop = concrete_value(s.stop, f"slice stop of jnp.{op_name}")
    step = concrete_value(s.step, f"slice step of jnp.{op_name}") if s.step is not None else 1
    start, stop, step = (v.item() if isinstance(v, np.ndarray) else v for v in (start, stop, step))
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Mgrid:
    """jnp.mgrid[a:b:s, ...]: a dense stack of 'ij' meshgrids (concrete slices only)."""

    def __getitem__(self, key: Any):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        grids = promote_dtypes(*(_grid_1d(k, "mgrid") for k in key))
        if not grids:
            return arange(0)
        return stack(meshgrid(*grids, indexing="ij", sparse=False), 0)


class _Ogrid:
    """jnp.ogrid[a:b:s, ...]: the open (sparse) 'ij' meshgrid of the slices."""

    def __getitem__(self, key: Any):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        grids = promote_dtypes(*(_grid_1d(k, "ogrid") for k in key))
        return meshgrid(*grids, indexing="ij", sparse=True)


class _AxisConcat:
    """r_ and c_: concatenation along an axis with NumPy's string directives
    ('r', 'c', 'axis,ndmin,trans1d[,matrix]')."""
    axis: int
    ndmin: int
    trans1d: int
    op_name: str

    def __getitem__(self, key: Any):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                params[-1] = 0 if directive == "r" else 1
            else:
                fields = directive.split(",")
                fields = fields + params[len(fields):] if len(fields) < 4 else \
                    fields[:3] + [params[-1]]
                try:
                    params = [int(f) for f in fields]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        parts = []
        for item in items:
            if isinstance(item, slice):
                part, item_ndim = _grid_1d(item, self.op_name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                part = asarray(item)
                item_ndim = get_aval(part).ndim
            part = array(part, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # NumPy's rule: where the item's own axes land among the ndmin ones
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                part = transpose(part, order[shift:] + order[:shift])
            parts.append(part)
        out = concatenate(tuple(parts), axis=axis)
        if matrix != -1 and get_aval(out).ndim == 1:
            out = expand_dims(out, matrix)
        return out

    def __len__(self) -> int:
        return 0


class RClass(_AxisConcat):
    """jnp.r_: concatenate slices and arrays along the first axis."""
    axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
    """jnp.c_: stack 1-D items as columns (concatenate along the last axis, at least 2-D)."""
    axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


mgrid, ogrid, r_, c_ = _Mgrid(), _Ogrid(), RClass(), CClass()


def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None) -> tuple:
    """Indices (rows, cols) where mask_func(ones((n, n)), k) is nonzero (numpy.mask_indices);
    under jit pass a static `size`."""
    return nonzero(mask_func(ones((n, n)), k), size=size)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True):
    """A copy of `a` with its main diagonal set to val (repeated to fill); JAX arrays are
    immutable, so pass inplace=False."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a, val = asarray(a), asarray(val)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and not all(n == shape[0] for n in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = min(shape)
    if get_aval(val).ndim:
        flat = ravel(val)
        m = get_aval(flat).shape[0]
        if m == 0:
            raise ValueError("fill_diagonal: val must not be empty")
        flat = concatenate([flat] * -(-n // m))[:n] if m < n else flat[:n]
        val = flat
    return a.at[diag_indices(n, len(shape))].set(val)


def diagflat(v: Any, k: int = 0):
    """A 2-D array with the flattened v on its k-th diagonal (numpy.diagflat)."""
    check_arraylike("diagflat", v)
    flat = ravel(asarray(v))
    k = operator.index(k)
    n = get_aval(flat).shape[0] + abs(k)
    i = arange(0, n - abs(k))
    pos = i + k + i * n if k >= 0 else i + (i - k) * n
    return zeros(n * n, dtype=get_aval(flat).dtype).at[pos].set(flat).reshape(n, n)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True,
                   *, mode: str | None = None):
    """A copy of arr with values written at `indices` along `axis` (take_along_axis's
    inverse); pass inplace=False since JAX arrays are immutable."""
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                         "arraysare immutable. Pass inplace=False to instead return an updated "
                         "array.")
    check_arraylike("put_along_axis", arr, indices, values)
    arr, indices, values = asarray(arr), asarray(indices), asarray(values)
    shape = get_aval(arr).shape
    if axis is None:
        arr, axis = ravel(arr), 0
    a_aval, i_aval = get_aval(arr), get_aval(indices)
    if a_aval.ndim != i_aval.ndim:
        raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={a_aval.ndim!r} and indices.ndim={i_aval.ndim!r}.")
    try:
        values = broadcast_to(values, i_aval.shape)
    except ValueError:
        raise ValueError(f"put_along_axis argument 'values' must be broadcastable to 'indices'. "
                         f"Got values.shape={get_aval(values).shape!r} and "
                         f"indices.shape={i_aval.shape!r}.") from None
    axis = canonicalize_axis(axis, a_aval.ndim)
    # one integer index array per dimension: `indices` along axis, arr's aranges elsewhere
    idx = tuple(indices if d == axis else
                expand_dims(arange(n), tuple(j for j in range(a_aval.ndim) if j != d))
                for d, n in enumerate(a_aval.shape))
    out = arr.at[idx].set(values, mode=mode)
    return out.reshape(shape)
