"""Operators and methods of Array and of every Tracer, all routed to tracejit.numpy functions,
so eager and traced values behave identically."""
from __future__ import annotations

from typing import Any, Callable

from ..core.array import Array
from ..core.trace import Tracer
from ._util import is_arraylike

# operator -> (jnp function name, swap operands)
_BINARY_OPS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
    "rshift": "right_shift", "divmod": "divmod",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}
_UNARY_OPS = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "invert"}

# method name -> jnp function name (the array is passed first)
_METHODS = {
    "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin", "argsort": "argsort",
    "clip": "clip", "conj": "conjugate", "conjugate": "conjugate", "cumprod": "cumprod",
    "cumsum": "cumsum", "diagonal": "diagonal", "dot": "dot", "max": "max", "mean": "mean",
    "min": "min", "nonzero": "nonzero", "prod": "prod", "ptp": "ptp", "ravel": "ravel",
    "repeat": "repeat", "round": "round", "searchsorted": "searchsorted", "sort": "sort",
    "squeeze": "squeeze", "std": "std", "sum": "sum", "swapaxes": "swapaxes", "take": "take",
    "trace": "trace", "var": "var", "flatten": "ravel", "__round__": "round",
}


# Operands JAX rejects outright: Python would otherwise answer `x == [1, 2]` with False and let
# `x * [1, 2]` repeat the list (through x.__index__).
_REJECTED = {"eq": ("==", (dict, list, set, tuple)), "ne": ("!=", (dict, list, set, tuple)),
             "add": ("+", (list, tuple)), "mul": ("*", (list, tuple))}


def _defer(binary: Callable, swap: bool, op_name: str = "") -> Callable:
    symbol, rejected = _REJECTED.get(op_name, ("", ()))

    def op(self, other):
        if type(other) in rejected:
            raise TypeError(f"unsupported operand type(s) for {symbol}: "
                            f"{type(self).__name__!r} and {type(other).__name__!r}")
        if not is_arraylike(other):
            return NotImplemented
        return binary(other, self) if swap else binary(self, other)
    return op


def _reshape(self, *args, order: str = "C"):
    from . import reshape
    shape = args[0] if len(args) == 1 and not isinstance(args[0], int) and \
        not hasattr(args[0], "__index__") else args
    return reshape(self, shape, order=order)


def _transpose(self, *args):
    from . import transpose
    axes = args[0] if len(args) == 1 and not isinstance(args[0], int) else (args or None)
    return transpose(self, axes)


def _astype(self, dtype, copy: bool = False, device=None):
    from . import astype
    return astype(self, dtype, copy=copy, device=device)


def _array_namespace(self, *, api_version: str | None = None):
    from . import __array_api_version__
    if api_version is not None and api_version != __array_api_version__:
        raise ValueError(f"{api_version=!r} is not available; "
                         f"available versions are: {[__array_api_version__]}")
    from .. import numpy
    return numpy


def _getitem(self, idx):
    from ._indexing import getitem
    return getitem(self, idx)


def _T(self):
    from . import transpose
    return transpose(self)


def _mT(self):
    from . import swapaxes
    if self.ndim < 2:
        raise ValueError(f"Matrix transpose with ndim < 2 is undefined. Got ndim {self.ndim}.")
    return swapaxes(self, -1, -2)


def _at(self):
    from ._indexing import IndexUpdateHelper
    return IndexUpdateHelper(self)


def _real(self):
    from . import real
    return real(self)


def _imag(self):
    from . import imag
    return imag(self)


def _view(self, dtype=None):
    """JAX's (NumPy's) view: to a wider or narrower dtype the last axis shrinks or grows, where
    bitcast_convert_type adds or drops a trailing axis."""
    if dtype is None:
        return self
    from ..core import dtypes
    from ..lax import lenient as lax
    dtype = dtypes.check_user_dtype(dtype, fun_name="view")
    size_in, size_out = self.dtype.itemsize, dtype.itemsize
    if size_in == size_out:
        return lax.bitcast_convert_type(self, dtype)
    if not self.shape:
        raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
    *lead, last = self.shape
    if last * size_in % size_out:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                         "total size in bytes of the last axis of the array.")
    if size_in < size_out:
        factor = size_out // size_in
        return lax.bitcast_convert_type(lax.reshape(self, (*lead, last // factor, factor)),
                                        dtype)
    return lax.reshape(lax.bitcast_convert_type(self, dtype), (*lead, last * size_in // size_out))


def install(namespace: dict[str, Any]) -> list[str]:
    """Attach operators and methods to Array and Tracer; returns the names not (yet) available."""
    missing = []

    def get(name):
        fn = namespace.get(name)
        if fn is None:
            missing.append(name)
        return fn

    for cls in (Array, Tracer):
        for op, name in {**_BINARY_OPS, **_COMPARISONS}.items():
            fn = get(name)
            if fn is None:
                continue
            setattr(cls, f"__{op}__", _defer(fn, False, op))
            if op not in _COMPARISONS:
                setattr(cls, f"__r{op}__", _defer(fn, True))
        for op, name in _UNARY_OPS.items():
            fn = get(name)
            if fn is not None:
                setattr(cls, f"__{op}__", fn)
        for meth, name in _METHODS.items():
            fn = get(name)
            if fn is not None:
                setattr(cls, meth, fn)
        cls.reshape = _reshape
        cls.transpose = _transpose
        cls.astype = _astype
        cls.__array_namespace__ = _array_namespace
        cls.__getitem__ = _getitem
        cls.view = _view
        cls.T = property(_T)
        cls.mT = property(_mT)
        cls.at = property(_at)
        cls.real = property(_real)
        cls.imag = property(_imag)
    Tracer.to_device = Array.to_device  # under jit placement is the caller's: checked only
    return sorted(set(missing))
