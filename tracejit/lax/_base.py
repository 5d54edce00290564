"""Rule families shared by lax primitives: elementwise unary/binary ops, dtype checks, and the
conversion of Python scalars to lax operands.

A primitive is registered in one block beside its user function; families keep that to a line.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes, transfer_guard
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.primitive import ELEMENTWISE, Primitive
from ..core.rules import def_broadcasting, def_vectorized
from ..core.trace import Tracer, get_aval

# dtype kinds accepted by an op
BOOL = "bool"
INT = "int"          # signed and unsigned ints
SIGNED = "signed"    # signed ints
INTBOOL = "intbool"  # ints and bool (bitwise)
FLOAT = "float"      # inexact
REAL_FLOAT = "real_float"  # floating, not complex
NUM = "num"          # ints and floats (no bool)
REAL = "real"        # ints and real floats (no bool, no complex)
ORDERED = "ordered"  # what has an order: bool, ints, real floats (not complex)
ANY = "any"          # everything


def dtype_ok(dtype: np.dtype, kinds: str) -> bool:
    if kinds == ANY:
        return True
    if kinds == BOOL:
        return dtype == dtypes.bool_
    if kinds == INT:
        return dtypes.is_int(dtype)
    if kinds == SIGNED:
        return dtype.kind == "i"
    if kinds == INTBOOL:
        return dtypes.is_int(dtype) or dtype == dtypes.bool_
    if kinds == FLOAT:
        return dtypes.is_inexact(dtype)
    if kinds == REAL_FLOAT:
        return dtypes.is_float(dtype)
    if kinds == NUM:
        return dtypes.is_int(dtype) or dtypes.is_inexact(dtype)
    if kinds == REAL:
        return dtypes.is_int(dtype) or dtypes.is_float(dtype)
    if kinds == ORDERED:
        return dtypes.is_int(dtype) or dtypes.is_float(dtype) or dtype == dtypes.bool_
    raise ValueError(kinds)


_KIND_WORDS = {BOOL: "a boolean", INT: "an integer", SIGNED: "a signed integer",
               INTBOOL: "an integer or boolean", FLOAT: "a floating-point", NUM: "a numeric"}


# JAX's words for the kinds that exclude complex numbers
_ACCEPTED = {REAL: "integer, floating", REAL_FLOAT: "floating",
             ORDERED: "integer, floating, bool"}


def check_dtype(name: str, aval: ShapedArray, kinds: str, position: int | None = 0) -> None:
    """Raise JAX's TypeError for an operand outside `kinds`; `position` None: a unary op (whose
    message names no position, as JAX's)."""
    if dtype_ok(aval.dtype, kinds):
        return
    if kinds in _ACCEPTED and position is None:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are "
                        f"subtypes of {_ACCEPTED[kinds]}.")
    if kinds in _ACCEPTED:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position "
                        f"{position}. Accepted dtypes at position {position} are subtypes of "
                        f"{_ACCEPTED[kinds]}.")
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. It requires "
                    f"{_KIND_WORDS[kinds]} type.")


def unop(name: str, impl: Callable, kinds: str = NUM, result_dtype: Callable | None = None,
         transcendental: bool = False) -> Primitive:
    """An elementwise unary primitive: same shape; dtype kept (or `result_dtype(dtype)`)."""
    p = Primitive(name, fusion=ELEMENTWISE, transcendental=transcendental)

    def abstract(x: ShapedArray) -> ShapedArray:
        check_dtype(name, x, kinds, None)
        if result_dtype is None:
            return x
        return ShapedArray(x.shape, result_dtype(x.dtype), x.weak_type)  # JAX: weak bools

    p.def_abstract_eval(abstract)
    p.def_impl(impl)
    def_vectorized(p)
    return p


def binop(name: str, impl: Callable, kinds: str = NUM, result_dtype: Callable | None = None,
          transcendental: bool = False, iterative: bool = False) -> Primitive:
    """An elementwise n-ary primitive: operands of equal shape and dtype (lax does not promote)."""
    p = Primitive(name, fusion=ELEMENTWISE, transcendental=transcendental, iterative=iterative)

    def abstract(*avals: ShapedArray) -> ShapedArray:
        x = avals[0]
        for i, a in enumerate(avals):
            check_dtype(name, a, kinds, i)
        check_same_dtypes(name, *avals)
        # rank-0 operands broadcast (as in JAX's jaxprs: `mul b 2.0:f32[]`); others must agree
        shapes = {a.shape for a in avals if a.shape != ()}
        if len(shapes) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(str(a.shape) for a in avals)}.")
        shape = shapes.pop() if shapes else ()
        weak = all(a.weak_type for a in avals)
        dtype = x.dtype if result_dtype is None else result_dtype(x.dtype)
        return ShapedArray(shape, dtype, weak)  # lax.eq(1.0, 2.0) is a weak bool in JAX

    p.def_abstract_eval(abstract)
    p.def_impl(impl)
    def_broadcasting(p)
    return p


# lax op -> the jnp function that promotes instead (JAX names it in the dtype error)
_JNP_EQUIVALENTS = {
    "add": "add", "atan2": "arctan2", "div": "divide", "eq": "equal", "max": "maximum",
    "min": "minimum", "mul": "multiply", "ne": "not_equal", "nextafter": "nextafter",
    "pow": "float_power",
    "select": "where", "shift_left": "left_shift", "shift_right_logical": "right_shift",
    "shift_right_arithmetic": "right_shift", "sub": "subtract",
}


def check_same_dtypes(name: str, *avals: ShapedArray) -> None:
    """lax does not promote: operands must agree in dtype (JAX's error text)."""
    if any(a.dtype != avals[0].dtype for a in avals):
        msg = (f"lax.{name} requires arguments to have the same dtypes, got "
               f"{', '.join(a.dtype.name for a in avals)}.")
        if name in _JNP_EQUIVALENTS:
            msg += (f" (Tip: jnp.{_JNP_EQUIVALENTS[name]} is a similar function that does "
                    "automatic type promotion on inputs).")
        raise TypeError(msg)


def is_array_like(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def check_operand(x: Any, fn: str) -> None:
    if not is_array_like(x) and not hasattr(x, "__jax_array__"):
        raise TypeError(f"{fn}: argument of type {type(x).__name__} ({x!r:.60}) is not a valid "
                        "JAX type; pass an array or a numeric scalar.")


def as_lax_operands(fn: str, *args: Any) -> list:
    """lax ops accept Python scalars beside arrays: they take the dtype of the array operands
    (JAX's weak-type rule); arrays must otherwise agree in dtype exactly."""
    for a in args:
        check_operand(a, f"lax.{fn}")
    strong = [a for a in args if not isinstance(a, (bool, int, float, complex))]
    if not strong:
        dtype, weak = dtypes.result_type_and_weak(*args)
        return [_const(a, dtype, weak) for a in args]
    target = get_aval(strong[0]).dtype
    out = []
    for a in args:
        if isinstance(a, (bool, int, float, complex)):
            out.append(_const(a, target, True))
        else:
            out.append(a)
    return out


def as_strict_lax_operands(fn: str, *args: Any) -> list:
    """The operands of lax's elementwise ops, as JAX 0.10 takes them: a Python scalar is a
    weakly typed value of its own default dtype (int32, float32, ...; 64-bit under x64), and
    the abstract evaluation then requires equal dtypes (lax.add(1, 1.0) raises)."""
    for a in args:
        check_operand(a, f"lax.{fn}")
    return [_const(a, *dtypes.dtype_and_weak(a)) if isinstance(a, (bool, int, float, complex))
            else a for a in args]


def _const(x: Any, dtype: np.dtype, weak: bool) -> Array:
    if isinstance(x, int) and not isinstance(x, bool) and dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
    if isinstance(x, complex) and dtype.kind != "c":
        raise TypeError(f"cannot convert complex {x} to {dtype.name}")
    if isinstance(x, float) and dtypes.is_int(dtype):
        raise TypeError(f"lax operands must agree in dtype: Python float {x} with {dtype.name} "
                        "operands (use jnp functions, which promote, or convert explicitly)")
    aval = ShapedArray((), dtype, weak)
    if transfer_guard.guarding:  # (a user's Python scalar operand: an implicit transfer)
        transfer_guard.host_to_device(aval)
    return Array.from_numpy(np.asarray(x, dtype=dtype), aval)


def const_like(ref_aval: ShapedArray, value: Any) -> Array:
    """A scalar of ref_aval's dtype (weakness kept), for building expressions inside lax/jnp."""
    return Array.from_numpy(np.asarray(value, dtype=ref_aval.dtype),
                            ShapedArray((), ref_aval.dtype, ref_aval.weak_type))


def normalize_axes(axes: Sequence[int] | int | None, ndim: int, name: str = "axis") -> tuple:
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    out = []
    for a in axes:
        a = canonicalize_axis(a, ndim, name)
        if a in out:
            raise ValueError(f"repeated {name}: {a}")
        out.append(a)
    return tuple(out)


def canonicalize_axis(axis: Any, ndim: int, name: str = "axis") -> int:
    try:
        axis = int(axis.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{name} must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


class _SciPySpecial:
    """scipy.special, imported on first attribute access: it costs ~0.2 s of CPU to import
    and only the NumPy reference rules (interpreter, constant folding) call it, so
    `import tracejit` leaves it out."""

    def __getattr__(self, attr: str) -> Any:
        import scipy.special
        return getattr(scipy.special, attr)


sp = _SciPySpecial()
