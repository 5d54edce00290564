"""lax's binary elementwise ops as users call them (`jax.lax.add`, ...): JAX's strict operands.
A Python scalar is a weakly typed value of its own default dtype, so the operands must then
agree (lax.add(1, 1.0) and lax.mul(x_bf16, 2.0) raise JAX's TypeError). The package's own code
calls elementwise.py's lenient twins instead (through lax/lenient.py), where a Python scalar
takes the other operand's dtype."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..core.primitive import Primitive
from . import elementwise as ew
from ._base import as_strict_lax_operands


_LENIENT: dict[Callable, Callable] = {}  # each strict op -> the lenient op it checks for


def _strict(lenient: Callable, prim: Primitive) -> Callable:
    name = lenient.__name__

    @functools.wraps(lenient)
    def op(x: Any, y: Any):
        x, y = as_strict_lax_operands(name, x, y)
        return prim.bind(x, y)
    _LENIENT[op] = lenient
    return op


def lenient_of(fn: Callable) -> Callable:
    """The package's own op for a public strict one (`fn` itself otherwise), so code that
    recognises lax.add & co. as a reduction's monoid sees one function whichever the user
    passed (reduce, reduce_window)."""
    return _LENIENT.get(fn, fn)


add = _strict(ew.add, ew.add_p)
sub = _strict(ew.sub, ew.sub_p)
mul = _strict(ew.mul, ew.mul_p)
div = _strict(ew.div, ew.div_p)
rem = _strict(ew.rem, ew.rem_p)
max = _strict(ew.max, ew.max_p)  # noqa: A001 - lax's name
min = _strict(ew.min, ew.min_p)  # noqa: A001 - lax's name
atan2 = _strict(ew.atan2, ew.atan2_p)
nextafter = _strict(ew.nextafter, ew.nextafter_p)
eq = _strict(ew.eq, ew.eq_p)
ne = _strict(ew.ne, ew.ne_p)
lt = _strict(ew.lt, ew.lt_p)
le = _strict(ew.le, ew.le_p)
gt = _strict(ew.gt, ew.gt_p)
ge = _strict(ew.ge, ew.ge_p)
bitwise_and = _strict(ew.bitwise_and, ew.and_p)
bitwise_or = _strict(ew.bitwise_or, ew.or_p)
bitwise_xor = _strict(ew.bitwise_xor, ew.xor_p)
shift_left = _strict(ew.shift_left, ew.shift_left_p)
shift_right_logical = _strict(ew.shift_right_logical, ew.shift_right_logical_p)
shift_right_arithmetic = _strict(ew.shift_right_arithmetic, ew.shift_right_arithmetic_p)
complex = _strict(ew.complex, ew.complex_p)  # noqa: A001 - lax's name

__all__ = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter", "eq", "ne",
           "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
           "shift_right_logical", "shift_right_arithmetic", "complex"]
