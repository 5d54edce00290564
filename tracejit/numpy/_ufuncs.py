"""Elementwise functions of tracejit.numpy (NumPy's ufuncs) on top of lax, with JAX's promotion:
integer inputs to transcendental functions become floats; bool arithmetic promotes."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.trace import get_aval
from ._util import (asarray, check_arraylike, promote_args, promote_args_inexact,
                    promote_args_numeric)

__all__: list[str] = []


def _export(f):
    __all__.append(f.__name__)
    return f


def _unary_inexact(name: str, lax_fn):
    def f(x: Any, /):
        (x,) = promote_args_inexact(name, x)
        return lax_fn(x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}, as numpy.{name} (integer inputs give floats)."
    return _export(f)


def _binary(name: str, lax_fn, promote=promote_args):
    def f(x1: Any, x2: Any, /):
        x1, x2 = promote(name, x1, x2)
        return lax_fn(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}, as numpy.{name}, with JAX's type promotion."
    return _export(f)


# --- transcendental ------------------------------------------------------------------------
exp = _unary_inexact("exp", lax.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
log = _unary_inexact("log", lax.log)
log1p = _unary_inexact("log1p", lax.log1p)
expm1 = _unary_inexact("expm1", lax.expm1)
tanh = _unary_inexact("tanh", lax.tanh)
sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
arcsin = _unary_inexact("arcsin", lax.asin)
arccos = _unary_inexact("arccos", lax.acos)
arctan = _unary_inexact("arctan", lax.atan)
sinh = _unary_inexact("sinh", lax.sinh)
cosh = _unary_inexact("cosh", lax.cosh)
arcsinh = _unary_inexact("arcsinh", lax.asinh)
arccosh = _unary_inexact("arccosh", lax.acosh)
arctanh = _unary_inexact("arctanh", lax.atanh)
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)
arctan2 = _binary("arctan2", lax.atan2, promote_args_inexact)
nextafter = _binary("nextafter", lax.nextafter, promote_args_inexact)

# --- arithmetic ----------------------------------------------------------------------------
add = _binary("add", lambda a, b: lax.bitwise_or(a, b) if a.dtype == dtypes.bool_
              else lax.add(a, b))
multiply = _binary("multiply", lambda a, b: lax.bitwise_and(a, b) if a.dtype == dtypes.bool_
                   else lax.mul(a, b))


@_export
def subtract(x1: Any, x2: Any, /):
    x1, x2 = promote_args("subtract", x1, x2)
    if x1.dtype == dtypes.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return lax.sub(x1, x2)


true_divide = _binary("true_divide", lax.div, promote_args_inexact)
divide = true_divide
__all__.append("divide")
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)


@_export
def negative(x: Any, /):
    (x,) = promote_args("negative", x)
    if x.dtype == dtypes.bool_:
        raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use "
                        "the `~` operator or the logical_not function instead.")
    return lax.neg(x)


@_export
def positive(x: Any, /):
    (x,) = promote_args("positive", x)
    return x
