"""jnp.ufunc: NumPy's ufunc interface (reduce, accumulate, at, reduceat, outer) around a
tracejit.numpy elementwise function, as JAX 0.10 wraps jnp.add & co. Known monoids use the
matching reduction (sum, cumsum, scatter-add); any other binary function goes through a
fori_loop or scan over the axis, as JAX's generic ufunc does."""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.trace import get_aval
from ..lax._base import canonicalize_axis
from ..runtime.jit import eval_shape
from ..transforms.api import vmap
from . import _reductions, _ufuncs
from ._creation import full
from ._shape import concatenate, moveaxis, ravel
from ._util import (asarray, broadcast_to, broadcast_shapes, check_arraylike,
                    promote_dtypes_inexact)
from ._vectorize import vectorize

__all__ = ["ufunc", "frompyfunc", "add", "multiply", "subtract", "negative", "maximum",
           "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
           "logical_xor", "logaddexp", "logaddexp2"]

_AT_INPLACE = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\n"
               "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
               ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


class ufunc:
    """A universal function: elementwise over broadcast arrays, with NumPy's ufunc methods
    (JAX's jax.numpy.ufunc). Instances are immutable and hashable, so they can be static
    arguments of jit."""

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity: Any = None, call: Callable | None = None,
                 reduce: Callable | None = None, accumulate: Callable | None = None,
                 at: Callable | None = None, reduceat: Callable | None = None):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self.__props = {"func": func, "nin": operator.index(nin), "nout": operator.index(nout),
                        "nargs": operator.index(nargs or nin), "identity": identity,
                        "call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                        "reduceat": reduceat}

    _func = property(lambda self: self.__props["func"])
    nin = property(lambda self: self.__props["nin"])
    nout = property(lambda self: self.__props["nout"])
    nargs = property(lambda self: self.__props["nargs"])
    identity = property(lambda self: self.__props["identity"])

    def _key(self) -> tuple:
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        check_arraylike(self.__name__, *args)
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self.__props["call"] or vectorize(self._func)
        return call(*args)

    def _binary_only(self, method: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *args: Any) -> np.dtype:
        ones = [lax.full((), 1, get_aval(a).dtype) for a in args]
        return eval_shape(self._func, *ones).dtype

    def reduce(self, a: Any, axis: Any = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None):
        """The reduction of a along axis by this binary function (numpy.ufunc.reduce)."""
        check_arraylike(f"{self.__name__}.reduce", a)
        self._binary_only("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            if get_aval(asarray(where)).dtype != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"dtype={get_aval(asarray(where)).dtype}")
        reduce = self.__props["reduce"] or self._reduce_via_loop
        return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                      where=where)

    def _reduce_via_loop(self, a: Any, axis: Any = 0, dtype: Any = None, keepdims: bool = False,
                         initial: Any = None, where: Any = None):
        arr = asarray(a)
        if initial is None:
            initial = self.identity
        if dtype is None:
            dtype = self._result_dtype(arr, arr)
        shape = get_aval(arr).shape
        if where is not None:
            where = broadcast_to(asarray(where), shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final_shape = (1,) * len(shape) if keepdims else ()
            arr, axis = ravel(arr), 0
            where = None if where is None else ravel(where)
        else:
            axis = canonicalize_axis(axis, len(shape))
            final_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
        arr = moveaxis(arr, axis, 0)
        where = None if where is None else moveaxis(where, axis, 0)
        n = get_aval(arr).shape[0]
        if n == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return full(final_shape, initial, dtype)

        def body(i, acc):
            step = self(acc, arr[i].astype(dtype))
            return step if where is None else _ufuncs._where(where[i], step, acc)
        start, init = (1, arr[0]) if initial is None else (0, asarray(initial))
        init = broadcast_to(asarray(init).astype(dtype), get_aval(arr).shape[1:])
        result = lax.fori_loop(start, n, body, init)
        return result.reshape(final_shape) if keepdims else result

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None):
        """Running results of the binary function along axis (numpy.ufunc.accumulate)."""
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        accumulate = self.__props["accumulate"] or self._accumulate_via_scan
        return accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, a: Any, axis: int = 0, dtype: Any = None):
        check_arraylike(f"{self.__name__}.accumulate", a)
        arr = asarray(a)
        if dtype is None:
            dtype = self._result_dtype(arr, arr)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = canonicalize_axis(axis, get_aval(arr).ndim)
        if get_aval(arr).size == 0:
            return full(get_aval(arr).shape, 0, dtype)
        arr = moveaxis(arr, axis, 0)
        first = arr[0].astype(dtype)

        def step(acc, x):
            y = self(acc, x.astype(dtype))
            return y, y
        _, rest = lax.scan(step, first, arr[1:])
        return moveaxis(concatenate([first[None], rest.astype(dtype)], 0), 0, axis)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True):
        """A copy of a with the function applied at `indices` (repeated indices apply
        repeatedly); pass inplace=False since JAX arrays are immutable."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        at = self.__props["at"] or self._at_via_scan
        return at(a, indices) if b is None else at(a, indices, b)

    def _at_via_scan(self, a: Any, indices: Any, *args: Any):
        check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = self._result_dtype(asarray(a), *(asarray(x) for x in args))
        a = asarray(a).astype(dtype)
        args = tuple(asarray(x).astype(dtype) for x in args)
        indices = indices if isinstance(indices, tuple) else (indices,)
        if not indices:
            return a
        shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
        shape = broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        count = math.prod(shape)
        if args:
            rest = get_aval(args[0]).shape[len(shape):]
            args = (broadcast_to(args[0], shape + rest).reshape((count,) + rest),)
        indices = [i if isinstance(i, slice) else ravel(broadcast_to(asarray(i), shape))
                   for i in indices]

        def step(acc, i):
            idx = tuple(ix if isinstance(ix, slice) else ix[i] for ix in indices)
            return acc.at[idx].set(self(acc.at[idx].get(), *(x[i] for x in args))), None
        out, _ = lax.scan(step, a, lax.iota(np.dtype(np.int32), count))
        return out

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None):
        """Reductions of a over the slices indices[i]:indices[i+1] along axis (a single
        element where indices[i] >= indices[i+1])."""
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a, indices = asarray(a), asarray(indices)
        if get_aval(a).ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got "
                             f"a.shape={get_aval(a).shape}")
        if get_aval(indices).ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got "
                             f"indices.shape={get_aval(indices).shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        if dtype is not None:
            a = a.astype(dtype)
        axis = canonicalize_axis(axis, get_aval(a).ndim)
        n = get_aval(a).shape[axis]
        a = moveaxis(a, axis, 0)
        out0 = a[indices]
        bounds = concatenate([indices, asarray([n], dtype=get_aval(indices).dtype)])
        extra = (1,) * (get_aval(a).ndim - 1)
        start, stop = bounds[:-1].reshape((-1,) + extra), bounds[1:].reshape((-1,) + extra)

        def body(i, acc):
            inside = (i > start) & (i < stop)
            return _ufuncs._where(inside, self(acc, a[i][None]), acc)
        return moveaxis(lax.fori_loop(0, n, body, out0), 0, axis)

    def outer(self, A: Any, B: Any, /):
        """The function applied to every pair (A[i...], B[j...]): shape A.shape + B.shape."""
        self._binary_only("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = asarray(A), asarray(B)
        result = vmap(vmap(self, (None, 0)), (0, None))(ravel(A), ravel(B))
        return result.reshape(get_aval(A).shape + get_aval(B).shape)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A ufunc from a scalar function of nin arguments returning nout values (vectorized)."""
    return ufunc(func, nin, nout, identity=identity)


def _reducer(reduction: Callable, takes_dtype: bool = True) -> Callable:
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        if takes_dtype:
            return reduction(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                             where=where)
        a = asarray(a) if dtype is None else asarray(a).astype(dtype)
        return reduction(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return reduce


def _logsumexp_reduce(a, *, axis, dtype, keepdims, initial, where):
    """logaddexp.reduce as JAX's (its reductions._logsumexp), not a fold of logaddexp: the
    maximum, then log(sum(exp(a - max))) + max, `initial` logaddexp'ed to that; like JAX's it
    ignores `dtype`."""
    del dtype
    check_arraylike("logsumexp", a)
    (a,) = promote_dtypes_inexact(asarray(a))
    dims = tuple(sorted(_reductions._reduction_axes(get_aval(a).ndim, axis)))
    amax = _reductions.max(_ufuncs.real(a), axis=dims, keepdims=True, where=where,
                           initial=-np.inf)
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    exp_a = lax.exp(_ufuncs.subtract(a, amax.astype(get_aval(a).dtype)))
    sumexp = _reductions.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    amax = amax if keepdims else lax.squeeze(amax, dims)
    result = lax.add(lax.log(sumexp), amax.astype(get_aval(sumexp).dtype))
    return result if initial is None else _ufuncs.logaddexp(initial, result)


def _logsumexp2_reduce(a, *, axis, dtype, keepdims, initial, where):
    """logaddexp2.reduce as JAX's (reductions._logsumexp2): logaddexp.reduce's in base e of
    a * ln 2, over ln 2."""
    check_arraylike("logsumexp2", a)
    ln2 = float(np.log(2))
    if initial is not None:
        initial *= ln2
    return _logsumexp_reduce(asarray(a) * ln2, axis=axis, dtype=dtype, keepdims=keepdims,
                             initial=initial, where=where) / ln2


def _require_integer(a: Any) -> Any:
    if not (dtypes.is_int(get_aval(a).dtype) or get_aval(a).dtype == np.bool_):
        raise ValueError(f"integer argument required; got dtype={get_aval(a).dtype}")
    return a


def _monoid_reducer(name: str, monoid: Any, identity: Any, logical: bool) -> Callable:
    """reduce for the bitwise/logical ufuncs: one lax reduction over any axes (JAX's
    _reduce_bitwise_* / _reduce_logical_*), the identity filling masked-out elements."""
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        a = asarray(a)
        init = np.array(identity).astype(dtype or (np.bool_ if logical else get_aval(a).dtype))
        return _reductions._reduction(
            a, name, monoid, init, preproc=_reductions._cast_to_bool if logical else
            _require_integer, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
            where=where)
    return reduce


def _scatter_at(method: str) -> Callable:
    """jnp.<f>.at through the matching `.at[...]` update (bools as ints, as JAX)."""
    def at(a, indices, b):
        a = asarray(a)
        if get_aval(a).dtype == np.bool_ and method != "subtract":
            upd = getattr(a.astype(np.int32).at[indices], method)
            return upd(asarray(b).astype(bool).astype(np.int32)).astype(bool)
        return getattr(a.at[indices], method)(b)
    return at


def _binary(f: Callable, identity: Any, **methods: Callable) -> ufunc:
    return ufunc(f, name=f.__name__, nin=2, nout=1, call=f, identity=identity, **methods)


def _cumulative(f: Callable) -> Callable:
    return lambda a, *, axis, dtype: f(a, axis=axis, dtype=dtype)


add = _binary(_ufuncs.add, 0, reduce=_reducer(_reductions.sum),
              accumulate=_cumulative(_reductions.cumsum), at=_scatter_at("add"))
multiply = _binary(_ufuncs.multiply, 1, reduce=_reducer(_reductions.prod),
                   accumulate=_cumulative(_reductions.cumprod), at=_scatter_at("multiply"))
subtract = _binary(_ufuncs.subtract, None, at=_scatter_at("subtract"))
maximum = _binary(_ufuncs.maximum, None, reduce=_reducer(_reductions.max, takes_dtype=False))
minimum = _binary(_ufuncs.minimum, None, reduce=_reducer(_reductions.min, takes_dtype=False))
_XOR = _reductions._Monoid(lax.reduce_xor, lax.bitwise_xor)
bitwise_and = _binary(_ufuncs.bitwise_and, -1, reduce=_monoid_reducer(
    "reduce_bitwise_and", _reductions._AND, -1, logical=False))
bitwise_or = _binary(_ufuncs.bitwise_or, 0, reduce=_monoid_reducer(
    "reduce_bitwise_or", _reductions._OR, 0, logical=False))
bitwise_xor = _binary(_ufuncs.bitwise_xor, 0, reduce=_monoid_reducer(
    "reduce_bitwise_xor", _XOR, 0, logical=False))
logical_and = _binary(_ufuncs.logical_and, True, reduce=_monoid_reducer(
    "reduce_logical_and", _reductions._AND, True, logical=True))
logical_or = _binary(_ufuncs.logical_or, False, reduce=_monoid_reducer(
    "reduce_logical_or", _reductions._OR, False, logical=True))
logical_xor = _binary(_ufuncs.logical_xor, False, reduce=_monoid_reducer(
    "reduce_logical_xor", _XOR, False, logical=True))
logaddexp = _binary(_ufuncs.logaddexp, -np.inf, reduce=_logsumexp_reduce)
logaddexp2 = _binary(_ufuncs.logaddexp2, -np.inf, reduce=_logsumexp2_reduce)
negative = ufunc(_ufuncs.negative, name="negative", nin=1, nout=1, call=_ufuncs.negative)
