"""Elementwise functions of tracejit.numpy (NumPy's ufuncs) on top of lax, with JAX's promotion:
integer inputs to transcendental functions become floats; bool arithmetic promotes.

Each function follows jax.numpy's own construction (same lax ops, same constants), so results,
dtypes and weak types agree with JAX's, including integer division by zero and overflow. The
elementwise functions JAX keeps outside its ufunc module (clip, round, isclose, gcd, ...) are in
_elementwise.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.trace import get_aval, is_concrete
from ..lax._base import const_like
from ..runtime.sharded import JITTED_IN_JAX
from ..transforms.custom import custom_jvp
from ._util import (asarray, broadcast_shapes, broadcast_to, check_arraylike, promote_args,
                    promote_args_inexact, promote_args_numeric, promote_dtypes,
                    promote_dtypes_inexact, promote_dtypes_numeric, promote_shapes)

__all__: list[str] = []

_INT_OF_WIDTH = {16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


def _export(f):
    __all__.append(f.__name__)
    # (JAX jits its ufuncs, and its errors name their parameters x, y: runtime/sharded.py)
    JITTED_IN_JAX[f.__code__] = (None, ("x", "y")[:f.__code__.co_posonlyargcount])
    return f


def _alias(name: str, f):
    """Export `f` under a second name (NumPy 2 / array-API spellings)."""
    __all__.append(name)
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


# --- helpers: JAX's constants and selection --------------------------------------------------


def _constant(dtype: np.dtype, value: Any, weak: bool = False) -> Array:
    """A scalar constant; strongly typed unless asked (JAX's NumPy-array constants)."""
    return Array.from_numpy(np.asarray(value, dtype), ShapedArray((), dtype, weak))


def _lax_const(x: Any, value: Any) -> Array:
    """A scalar of x's dtype, weakly typed only if x is a weak scalar (JAX's lax._const)."""
    aval = get_aval(x)
    return _constant(aval.dtype, value, aval.weak_type and aval.ndim == 0)


def _zero(x: Any) -> Array:
    """A zero scalar of x's dtype and weak type (JAX's lax._zero)."""
    return const_like(get_aval(x), 0)


def _constant_like(x: Any, value: Any) -> Array:
    return _constant(get_aval(x).dtype, value)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return dtypes.finfo_of(dtype).dtype if dtype.kind == "c" else dtype


def _is_int(x: Any) -> bool:
    return dtypes.is_int(get_aval(x).dtype)


def _is_int_or_bool(x: Any) -> bool:
    dtype = get_aval(x).dtype
    return dtypes.is_int(dtype) or dtype == dtypes.bool_


def _is_complex(x: Any) -> bool:
    return get_aval(x).dtype.kind == "c"


def _broadcast_arrays(*args: Any) -> list:
    shape = broadcast_shapes(*(get_aval(a).shape for a in args))
    return [broadcast_to(a, shape) for a in args]


def _where(condition: Any, x: Any, y: Any) -> Any:
    """Three-argument where with jnp promotion of x and y (JAX's numpy.util._where)."""
    condition = asarray(condition)
    if get_aval(condition).dtype != dtypes.bool_:
        condition = lax.ne(condition, _zero(condition))
    x, y = promote_dtypes(x, y)
    if get_aval(condition).ndim == 0:  # lax.select takes a scalar predicate as is
        x, y = _broadcast_arrays(x, y)
    else:
        condition, x, y = _broadcast_arrays(condition, x, y)
    return lax.select(condition, x, y)


def _to_bool(x: Any) -> Any:
    return x if get_aval(x).dtype == dtypes.bool_ else lax.ne(x, _lax_const(x, 0))


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
arctanh = _unary_inexact("arctanh", lax.atanh)
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)
arctan2 = _binary("arctan2", lax.atan2, promote_args_inexact)
nextafter = _binary("nextafter", lax.nextafter, promote_args_inexact)


@_export
def arccosh(x: Any, /):
    """Elementwise inverse hyperbolic cosine (NumPy's branch for complex inputs)."""
    (x,) = promote_args_inexact("arccosh", x)
    out = lax.acosh(x)
    if _is_complex(out):
        out = _where(lax.lt(lax.real(out), _lax_const(lax.real(out), 0)), lax.neg(out), out)
    return out


# NumPy 2 / array-API names
acos = _alias("acos", arccos)
acosh = _alias("acosh", arccosh)
asin = _alias("asin", arcsin)
asinh = _alias("asinh", arcsinh)
atan = _alias("atan", arctan)
atanh = _alias("atanh", arctanh)
atan2 = _alias("atan2", arctan2)


@_export
def log2(x: Any, /):
    """Elementwise base-2 logarithm, computed as log(x) / log(2) like JAX."""
    (x,) = promote_args_inexact("log2", x)
    if _is_complex(x):
        r = lax.log(x)
        re, im = lax.real(r), lax.imag(r)
        ln2 = lax.log(_constant_like(re, 2))
        return lax.complex(lax.div(re, ln2), lax.div(im, ln2))
    return lax.div(lax.log(x), lax.log(_constant_like(x, 2)))


@_export
def log10(x: Any, /):
    """Elementwise base-10 logarithm, computed as log(x) * (1 / log(10)) like JAX."""
    (x,) = promote_args_inexact("log10", x)
    one_over_log10 = _constant(_real_dtype(get_aval(x).dtype), 0.4342944819032518)
    r = lax.log(x)
    if _is_complex(x):
        return lax.complex(lax.mul(lax.real(r), one_over_log10),
                           lax.mul(lax.imag(r), one_over_log10))
    return lax.mul(r, one_over_log10)


def _wrap_between(x, a: float):
    """x wrapped into [-a, a) by fmod (JAX's _wrap_between: a complex logaddexp's phase)."""
    rem = lax.rem(lax.add(x, _lax_const(x, a)), _lax_const(x, 2 * a))
    rem = lax.select(lax.lt(rem, _lax_const(x, 0)), lax.add(rem, _lax_const(x, 2 * a)), rem)
    return lax.sub(rem, _lax_const(x, a))


def _logaddexp(name: str, exp_fn, scale: float | None):
    @custom_jvp
    def stable(x1, x2):
        amax = lax.max(x1, x2)
        if _is_complex(x1):  # JAX's: the larger (re, im) term shifts; the phase is wrapped
            delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _lax_const(amax, 2)))
            term = lax.log1p(exp_fn(delta))
            if scale is not None:
                term = lax.mul(_lax_const(term, scale), term)
            out = lax.add(amax, term)
            return lax.complex(lax.real(out), _wrap_between(lax.imag(out),
                                                            np.pi * (scale or 1.0)))
        delta = lax.sub(x1, x2)
        log1p_term = lax.log1p(exp_fn(lax.neg(lax.abs(delta))))
        if scale is not None:
            log1p_term = lax.mul(_lax_const(amax, scale), log1p_term)
        # NaN delta: both infinite with one sign (or a NaN input) -- x1 + x2 is the answer
        return lax.select(lax.ne(delta, delta), lax.add(x1, x2), lax.add(amax, log1p_term))

    def replace_inf(x):  # a complex x is tested by its real part, as JAX's
        part = lax.real(x) if _is_complex(x) else x
        return lax.select(lax.eq(part, _lax_const(part, np.inf)), lax.full_like(x, 0), x)

    @stable.defjvp
    def _jvp(primals, tangents):  # JAX's rule: d/dx1 = exp(x1 - out), finite at the kinks
        (x1, x2), (t1, t2) = primals, tangents
        out = stable(x1, x2)
        return out, lax.add(lax.mul(t1, exp_fn(lax.sub(replace_inf(x1), replace_inf(out)))),
                            lax.mul(t2, exp_fn(lax.sub(replace_inf(x2), replace_inf(out)))))

    def f(x1: Any, x2: Any, /):
        x1, x2 = promote_args_inexact(name, x1, x2)
        return stable(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}, as numpy.{name}, without overflow."
    return _export(f)


logaddexp = _logaddexp("logaddexp", lax.exp, None)
logaddexp2 = _logaddexp("logaddexp2", lax.exp2, 1 / np.log(2))


@_export
def sinc(x: Any, /):
    """Normalised sinc, sin(pi x) / (pi x), with sinc(0) = 1."""
    check_arraylike("sinc", x)
    (x,) = promote_dtypes_inexact(x)
    eq_zero = lax.eq(x, _lax_const(x, 0))
    pi_x = lax.mul(_lax_const(x, np.pi), x)
    safe_pi_x = _where(eq_zero, _lax_const(x, 1), pi_x)
    at_zero = add(multiply(pi_x, 0), _lax_const(x, 1.0))  # JAX's Maclaurin term, order 0
    return _where(eq_zero, at_zero, lax.div(lax.sin(safe_pi_x), safe_pi_x))


@_export
def deg2rad(x: Any, /):
    """Degrees to radians."""
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, _lax_const(x, np.pi / 180))


@_export
def rad2deg(x: Any, /):
    """Radians to degrees."""
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, _lax_const(x, 180 / np.pi))


degrees = _alias("degrees", rad2deg)
radians = _alias("radians", deg2rad)


@_export
def hypot(x1: Any, x2: Any, /):
    """sqrt(x1**2 + x2**2) without intermediate overflow."""
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    if _is_complex(x1):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                         "convert to real values first, such as by using abs(x)")
    x1, x2 = lax.abs(x1), lax.abs(x2)
    idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
    x1, x2 = maximum(x1, x2), minimum(x1, x2)
    safe_x1 = _where(equal(x1, 0), lax.full_like(x1, 1), x1)
    x = _where(equal(x1, 0), x1, multiply(x1, lax.sqrt(add(1, lax.square(lax.div(x2, safe_x1))))))
    return _where(idx_inf, _lax_const(x, np.inf), x)


# --- arithmetic ----------------------------------------------------------------------------
add = _binary("add", lambda a, b: lax.bitwise_or(a, b) if a.dtype == dtypes.bool_
              else lax.add(a, b))
multiply = _binary("multiply", lambda a, b: lax.bitwise_and(a, b) if a.dtype == dtypes.bool_
                   else lax.mul(a, b))


@_export
def subtract(x1: Any, x2: Any, /):
    """Elementwise x1 - x2 (not defined for bools, as in JAX)."""
    x1, x2 = promote_args("subtract", x1, x2)
    if x1.dtype == dtypes.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return lax.sub(x1, x2)


true_divide = _binary("true_divide", lax.div, promote_args_inexact)
divide = _alias("divide", true_divide)
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)


@_export
def negative(x: Any, /):
    """Elementwise -x (not defined for bools, as in JAX)."""
    (x,) = promote_args("negative", x)
    if x.dtype == dtypes.bool_:
        raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use "
                        "the `~` operator or the logical_not function instead.")
    return lax.neg(x)


@_export
def positive(x: Any, /):
    """Elementwise +x: the input as an array."""
    (x,) = promote_args("positive", x)
    return x


@_export
def floor_divide(x1: Any, x2: Any, /):
    """Elementwise x1 // x2, rounding toward -inf. Integer x // 0 is -1 (XLA's division)."""
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    dtype = get_aval(x1).dtype
    if dtype.kind == "u":
        return lax.div(x1, x2)
    if dtype.kind == "i":
        quotient = lax.div(x1, x2)
        round_down = logical_and(not_equal(lax.sign(x1), lax.sign(x2)),
                                 not_equal(lax.rem(x1, x2), 0))
        return _where(round_down, subtract(quotient, 1), quotient)
    if dtype.kind == "c":
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


@_export
def remainder(x1: Any, x2: Any, /):
    """Elementwise x1 % x2 with the sign of x2. Integer x % 0 is 0, as in JAX."""
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    zero = _constant_like(x1, 0)
    if _is_int(x2):
        x2 = _where(equal(x2, 0), lax.full_like(x2, 1), x2)
    trunc_mod = lax.rem(x1, x2)
    trunc_mod_not_zero = lax.ne(trunc_mod, zero)
    do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                              trunc_mod_not_zero)
    return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = _alias("mod", remainder)


@_export
def fmod(x1: Any, x2: Any, /):
    """Elementwise C fmod: remainder with the sign of x1. Integer x fmod 0 is 0, as in JAX."""
    check_arraylike("fmod", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    if dtypes.is_int(dtypes.result_type(x1, x2)):
        x2 = _where(equal(x2, 0), lax.full_like(x2, 1), x2)
    return lax.rem(*promote_args_numeric("fmod", x1, x2))


@_export
def divmod(x1: Any, x2: Any, /) -> tuple:  # noqa: A001 - NumPy's name
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    x1, x2 = promote_args_numeric("divmod", x1, x2)
    if _is_int(x1):
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


def _float_divmod(x1: Any, x2: Any) -> tuple:
    mod = lax.rem(x1, x2)
    x1_corrected = _where(equal(x2, 0), x1, lax.sub(x1, mod))
    div = lax.div(x1_corrected, x2)
    ind = lax.bitwise_and(not_equal(mod, 0), not_equal(lax.sign(x2), lax.sign(mod)))
    mod = lax.select(ind, add(mod, x2), mod)
    div = lax.select(ind, subtract(div, 1.0), div)
    return lax.round(div), mod


@_export
def power(x1: Any, x2: Any, /):
    """Elementwise x1 ** x2. A concrete integer exponent uses lax.integer_pow (as JAX does);
    integer bases with array exponents use binary exponentiation."""
    check_arraylike("power", x1, x2)
    x1 = x1.__jax_array__() if hasattr(x1, "__jax_array__") else x1
    x2 = x2.__jax_array__() if hasattr(x2, "__jax_array__") else x2
    if is_concrete(x2):
        try:
            exponent = operator.index(x2)
        except TypeError:
            pass
        else:
            (x1,) = promote_dtypes_numeric(x1)
            return lax.integer_pow(x1, exponent)
    x1, x2 = promote_shapes("power", asarray(x1), asarray(x2))
    x1_, x2_ = promote_args_numeric("power", x1, x2)
    if _is_int_or_bool(x1_):
        return _pow_int_int(x1_, x2_)
    if dtypes.is_inexact(get_aval(x1).dtype) and _is_int(x2):
        return lax.pow(x1, x2)
    return lax.pow(x1_, x2_)


pow = _alias("pow", power)  # noqa: A001 - NumPy 2's name


def _pow_int_int(x1: Any, x2: Any) -> Any:
    # binary exponentiation over the exponent's low 6 bits: more overflows any base > 1
    zero, one = _constant_like(x2, 0), _constant_like(x2, 1)
    # pow(0, n) is 0 for n != 0
    acc = _where(lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero)), zero, one)
    for _ in range(6):
        acc = _where(lax.bitwise_and(x2, one), lax.mul(acc, x1), acc)
        x1 = lax.mul(x1, x1)
        x2 = lax.shift_right_logical(x2, one)
    return acc


@_export
def float_power(x1: Any, x2: Any, /):
    """x1 ** x2 in floating point (JAX keeps the promoted float width, NumPy uses float64)."""
    return lax.pow(*promote_args_inexact("float_power", x1, x2))


@_export
def square(x: Any, /):
    """Elementwise x * x (bools become ints)."""
    check_arraylike("square", x)
    (x,) = promote_dtypes_numeric(x)
    return lax.square(x)


@_export
def reciprocal(x: Any, /):
    """Elementwise 1 / x (ints become floats)."""
    check_arraylike("reciprocal", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.integer_pow(x, -1)


@_export
def absolute(x: Any, /):
    """Elementwise |x|; bools and unsigned ints come back unchanged."""
    check_arraylike("absolute", x)
    x = asarray(x)
    dtype = get_aval(x).dtype
    return x if dtype == dtypes.bool_ or dtype.kind == "u" else lax.abs(x)


abs = _alias("abs", absolute)  # noqa: A001 - NumPy's name


@_export
def fabs(x: Any, /):
    """Elementwise |x| as a float."""
    check_arraylike("fabs", x)
    if _is_complex(asarray(x)):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(*promote_args_inexact("fabs", x))


@_export
def sign(x: Any, /):
    """Elementwise sign: -1, 0 or 1 (±0 and NaN kept for floats)."""
    return lax.sign(*promote_args("sign", x))


@_export
def copysign(x1: Any, x2: Any, /):
    """|x1| with the sign bit of x2."""
    check_arraylike("copysign", x1, x2)
    # shapes meet first in the where (so a mismatch is where's ValueError, as in JAX)
    x1, x2 = promote_dtypes_inexact(x1, x2)
    if _is_complex(x1):
        raise TypeError("copysign does not support complex-valued inputs")
    return _where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


@_export
def heaviside(x1: Any, x2: Any, /):
    """Step function: 0 below zero, 1 above, x2 at zero (NaN stays NaN)."""
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(x1, x2)
    zero = _lax_const(x1, 0)
    return _where(lax.lt(x1, zero), zero,
                  _where(lax.gt(x1, zero), _lax_const(x1, 1),
                         _where(lax.ne(x1, x1), x1, x2)))


# --- rounding ------------------------------------------------------------------------------


@_export
def floor(x: Any, /):
    """Elementwise floor; integers and bools come back unchanged."""
    check_arraylike("floor", x)
    if _is_int_or_bool(asarray(x)):
        return asarray(x)
    return lax.floor(*promote_args_inexact("floor", x))


@_export
def ceil(x: Any, /):
    """Elementwise ceiling; integers and bools come back unchanged."""
    check_arraylike("ceil", x)
    if _is_int_or_bool(asarray(x)):
        return asarray(x)
    return lax.ceil(*promote_args_inexact("ceil", x))


@_export
def rint(x: Any, /):
    """Round to the nearest integer, ties to even; integers become floats."""
    check_arraylike("rint", x)
    x = asarray(x)
    if _is_int_or_bool(x):
        return lax.convert_element_type(x, dtypes.default_float())
    if _is_complex(x):
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@_export
def modf(x: Any, /, out: Any = None) -> tuple:
    """(fractional part, integral part), both with the sign of x."""
    check_arraylike("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    (x,) = promote_dtypes_inexact(x)
    whole = _where(lax.ge(x, _zero(x)), floor(x), ceil(x))
    return subtract(x, whole), whole


# --- comparisons and logic -----------------------------------------------------------------
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)


def _ordered_comparison(name: str, lax_fn):
    def f(x1: Any, x2: Any, /):
        x1, x2 = promote_args(name, x1, x2)
        if _is_complex(x1):  # lexicographic on (real, imag), as NumPy
            return lax.select(lax.eq(lax.real(x1), lax.real(x2)),
                              lax_fn(lax.imag(x1), lax.imag(x2)),
                              lax_fn(lax.real(x1), lax.real(x2)))
        return lax_fn(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}, as numpy.{name}, with JAX's type promotion."
    return _export(f)


less = _ordered_comparison("less", lax.lt)
less_equal = _ordered_comparison("less_equal", lax.le)
greater = _ordered_comparison("greater", lax.gt)
greater_equal = _ordered_comparison("greater_equal", lax.ge)


def _logical(name: str, lax_fn):
    def f(x1: Any, x2: Any, /):
        x1, x2 = promote_args(name, x1, x2)
        return lax_fn(_to_bool(x1), _to_bool(x2))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}: nonzero counts as True."
    return _export(f)


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


@_export
def logical_not(x: Any, /):
    """Elementwise logical NOT: zero counts as False."""
    (x,) = promote_args("logical_not", x)
    return lax.bitwise_not(_to_bool(x))

bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)


@_export
def invert(x: Any, /):
    """Elementwise bitwise NOT (logical NOT for bools)."""
    return lax.bitwise_not(*promote_args("invert", x))


bitwise_not = _alias("bitwise_not", invert)
bitwise_invert = _alias("bitwise_invert", invert)


@_export
def left_shift(x1: Any, x2: Any, /):
    """x1 << x2; shifts by the bit width or more give 0 (XLA's rule)."""
    return lax.shift_left(*promote_args_numeric("left_shift", x1, x2))


@_export
def right_shift(x1: Any, x2: Any, /):
    """x1 >> x2: arithmetic for signed ints, logical for unsigned ones."""
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    if get_aval(x1).dtype.kind == "u":
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


bitwise_left_shift = _alias("bitwise_left_shift", left_shift)
bitwise_right_shift = _alias("bitwise_right_shift", right_shift)


@_export
def bitwise_count(x: Any, /):
    """Number of set bits in |x|, as uint8."""
    (x,) = promote_args_numeric("bitwise_count", x)
    return lax.convert_element_type(lax.population_count(absolute(x)), dtypes.uint8)


# --- floating-point classification and bits --------------------------------------------------


@_export
def isnan(x: Any, /):
    """Elementwise x != x."""
    check_arraylike("isnan", x)
    x = asarray(x)
    return lax.ne(x, x)


@_export
def isinf(x: Any, /):
    """Elementwise |x| == inf (always False for ints and bools)."""
    check_arraylike("isinf", x)
    x = asarray(x)
    dtype = get_aval(x).dtype
    if dtypes.is_float(dtype):
        return lax.eq(lax.abs(x), _constant_like(x, np.inf))
    if dtype.kind == "c":
        re, im = lax.real(x), lax.imag(x)
        return lax.bitwise_or(lax.eq(lax.abs(re), _constant_like(re, np.inf)),
                              lax.eq(lax.abs(im), _constant_like(im, np.inf)))
    return lax.full_like(x, False, dtypes.bool_)


@_export
def isfinite(x: Any, /):
    """Elementwise: neither infinite nor NaN (always True for ints and bools)."""
    check_arraylike("isfinite", x)
    x = asarray(x)
    dtype = get_aval(x).dtype
    if dtypes.is_float(dtype):
        return lax.is_finite(x)
    if dtype.kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.full_like(x, True, dtypes.bool_)


def _isposneginf(name: str, infinity: float):
    def f(x: Any, /, out: Any = None):
        check_arraylike(name, x)
        if out is not None:
            raise NotImplementedError("The 'out' argument to isneginf/isposinf is not "
                                      "supported.")
        x = asarray(x)
        dtype = get_aval(x).dtype
        if dtypes.is_float(dtype):
            return lax.eq(x, _constant_like(x, infinity))
        if dtype.kind == "c":
            raise ValueError("isposinf/isneginf are not well defined for complex types")
        return lax.full_like(x, False, dtypes.bool_)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise x == {infinity} (always False for ints and bools)."
    return _export(f)


isposinf = _isposneginf("isposinf", np.inf)
isneginf = _isposneginf("isneginf", -np.inf)


@_export
def signbit(x: Any, /):
    """Elementwise sign bit (True for -0.0 and negative NaNs)."""
    (x,) = promote_args("signbit", x)
    dtype = get_aval(x).dtype
    if dtypes.is_int(dtype):
        return lax.lt(x, _constant_like(x, 0))
    if dtype == dtypes.bool_:
        return lax.full_like(x, False, dtypes.bool_)
    if not dtypes.is_float(dtype):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dtype}")
    info = dtypes.finfo_of(dtype)
    bits = lax.bitcast_convert_type(x, _INT_OF_WIDTH[info.bits])
    return lax.convert_element_type(right_shift(bits, info.nexp + info.nmant), dtypes.bool_)


@_export
def spacing(x: Any, /):
    """Distance from x to the next float away from zero."""
    (x,) = promote_args_inexact("spacing", x)
    if _is_complex(x):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    dtype = get_aval(x).dtype
    inf = _lax_const(x, np.inf)
    if dtype == dtypes.float16:
        return subtract(lax.nextafter(x, inf), x)
    result = subtract(lax.nextafter(x, copysign(inf, x)), x)
    return _where(equal(result, 0), copysign(dtypes.finfo_of(dtype).smallest_subnormal, x),
                  result)


def _normalize_float(x: Any) -> tuple:
    """(bits of x with subnormals scaled into the normal range, the exponent correction)."""
    info = dtypes.finfo_of(get_aval(x).dtype)
    int_type = _INT_OF_WIDTH[info.bits]
    cond = less(lax.abs(x), info.tiny)
    x1 = _where(cond, multiply(x, _lax_const(x, 1 << info.nmant)), x)
    x2 = _where(cond, int_type.type(-info.nmant), int_type.type(0))
    return lax.bitcast_convert_type(x1, int_type), x2


@_export
def frexp(x: Any, /) -> tuple:
    """(mantissa in [0.5, 1), int32 exponent) with x == mantissa * 2**exponent."""
    check_arraylike("frexp", x)
    (x,) = promote_dtypes_inexact(x)
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        raise TypeError("frexp does not support complex-valued inputs")
    info = dtypes.finfo_of(dtype)
    mask = (1 << info.nexp) - 1
    bias = 1 - info.minexp
    x1, x2 = _normalize_float(x)
    x2 = add(x2, add(bitwise_and(right_shift(x1, info.nmant), mask), 1 - bias))
    x1 = bitwise_or(bitwise_and(x1, ~(mask << info.nmant)), (bias - 1) << info.nmant)
    x1 = lax.bitcast_convert_type(x1, dtype)
    cond = logical_or(logical_or(isinf(x), isnan(x)), equal(x, 0))
    x2 = _where(cond, lax.full_like(x2, 0), x2)
    return _where(cond, x, x1), lax.convert_element_type(x2, dtypes.int32)


@_export
def ldexp(x1: Any, x2: Any, /):
    """x1 * 2**x2 for integer x2, without intermediate overflow."""
    check_arraylike("ldexp", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    d1, d2 = get_aval(x1).dtype, get_aval(x2).dtype
    if d1.kind == "c" or dtypes.is_inexact(d2):
        raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
    (x1,) = promote_args_inexact("ldexp", x1)
    x2 = lax.convert_element_type(x2, get_aval(x1).dtype)
    # split off the exponent: small x1 with large x2 must not overflow on the way
    m, e = frexp(x1)
    e = lax.convert_element_type(add(lax.convert_element_type(e, get_aval(x2).dtype), x2),
                                 get_aval(x1).dtype)
    # the exponent may overflow by one and the result still be finite
    m = _where(greater(e, 0), multiply(m, 2), m)
    e = _where(greater(e, 0), subtract(e, 1), e)
    x = multiply(m, power(2, e))
    return _where(logical_or(isinf(x1), equal(x1, 0)), x1, x)


# --- complex parts -------------------------------------------------------------------------


@_export
def real(val: Any, /):
    """Real part (the input itself for real dtypes)."""
    check_arraylike("real", val)
    val = asarray(val)
    return lax.real(val) if _is_complex(val) else val


@_export
def imag(val: Any, /):
    """Imaginary part (zeros of the input's dtype for real dtypes)."""
    check_arraylike("imag", val)
    val = asarray(val)
    return lax.imag(val) if _is_complex(val) else lax.full_like(val, 0)


@_export
def conjugate(x: Any, /):
    """Complex conjugate (the input itself for real dtypes)."""
    check_arraylike("conjugate", x)
    x = asarray(x)
    return lax.conj(x) if _is_complex(x) else x


conj = _alias("conj", conjugate)
