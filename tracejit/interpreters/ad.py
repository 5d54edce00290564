"""`jax.interpreters.ad`: the JVP and transpose rule tables and the vocabulary of autodiff
rules (Zero, UndefinedPrimal, defjvp, deflinear2, ...) for user-defined primitives.
User-facing layer over tracejit.core (rules.py, jvp_trace.py, primitive.py)."""
from __future__ import annotations

from typing import Any, Callable

from ..core import rules as _rules
from ..core.jvp_trace import JVPTrace, JVPTracer  # noqa: F401
from ..core.primitive import Primitive, primitive_jvps, primitive_transposes  # noqa: F401
from ..core.rules import UndefinedPrimal, Zero, zeros_like_aval  # noqa: F401
from ..core.transpose import transpose_rule

add_tangents = _rules.add_tangents


def is_undefined_primal(x: Any) -> bool:
    """Whether a transpose rule's argument is a linear input (only its aval is known)."""
    return type(x) is UndefinedPrimal


def instantiate_zeros(tangent: Any) -> Any:
    """A symbolic Zero as an array of zeros; any other tangent unchanged."""
    return _rules.instantiate(tangent)


def add_jaxvals(x: Any, y: Any) -> Any:
    """x + y for two tangents or cotangents of the same type."""
    return _rules.add_tangents(x, y)


def get_primitive_transpose(p: Primitive) -> Callable:
    """The transpose rule registered for p (NotImplementedError if none)."""
    return transpose_rule(p)


def defjvp(primitive: Primitive, *jvprules: Callable | None) -> None:
    """A JVP summed over arguments: jvprules[i](g, *primals, **params) is the output tangent
    due to argument i's tangent g (None: zero)."""
    _rules.defjvp(primitive, *jvprules)


def defjvp2(primitive: Primitive, *jvprules: Callable | None) -> None:
    """As defjvp, with the rules given the primal output: jvprules[i](g, ans, *primals)."""
    _rules.defjvp2(primitive, *jvprules)


def defjvp_zero(primitive: Primitive) -> None:
    """The primitive's output tangent is always zero."""
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        zeros = [Zero.from_primal(o) for o in out] if primitive.multiple_results else \
            Zero.from_primal(out)
        return out, zeros
    primitive.def_jvp(jvp)


def deflinear2(primitive: Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in its operands; transpose_rule(ct, *args, **params) gets the linear
    args as UndefinedPrimal and returns one cotangent per arg (None where not linear)."""
    _rules.def_linear(primitive, transpose_rule)


def deflinear(primitive: Primitive, transpose_rule: Callable) -> None:
    """As deflinear2, with transpose_rule(ct, **params) returning the cotangents of all args."""
    _rules.def_linear(primitive, lambda ct, *args, **params: transpose_rule(ct, **params))


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each of its two operands (like multiplication): lhs_rule(ct, x, y,
    **params) is the cotangent of x (given as UndefinedPrimal), rhs_rule that of y."""
    defjvp(prim, lambda g, x, y, **params: prim.bind(g, y, **params),
           lambda g, x, y, **params: prim.bind(x, g, **params))

    def transpose(ct, x, y, **params):
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]
    prim.def_transpose(transpose)
