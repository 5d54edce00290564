"""The lax namespace as tracejit's own modules call it (jnp, nn, random, scipy, ...): every
name of tracejit.lax, except that the binary elementwise ops are elementwise.py's lenient ones,
where a Python scalar takes the other operand's dtype (`lax.mul(x, 2)` for x of any dtype).
Users get lax/strict.py's (JAX's lax.add(1, 1.0) TypeError). Import it as
`from ..lax import lenient as lax`."""
from __future__ import annotations

from typing import Any

from .elementwise import (  # noqa: F401  (the lenient binary ops)
    add,
    atan2,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    complex,
    div,
    eq,
    ge,
    gt,
    le,
    lt,
    max,
    min,
    mul,
    ne,
    nextafter,
    rem,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    sub,
)


def __getattr__(name: str) -> Any:
    from .. import lax
    value = getattr(lax, name)
    globals()[name] = value  # found once: later lookups are plain module attributes
    return value
