"""The first compiler pass: primitives computed by other operations become those operations'
equations — tracejit's composites (`Primitive.def_composite`: rng_bit_generator, split,
reduce_precision) and primitives defined by user code (jax.extend.core.Primitive) with the
lowering they registered (`mlir.register_lowering(p, mlir.lower_fun(f))`). The equations then
go through every later pass (fusion above all) as the program's own do. A user primitive with
only an impl rule stays as it is: the native backend compiles it as a call back into Python
running the impl (backend/llvm/host_callback.py)."""
from __future__ import annotations

from typing import Any

from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, inline_equations, map_subjaxprs
from ..core import primitive as _primitive
from ..core.primitive import Primitive, TracedLowering, lowerings
from ..core.trace import trace_to_jaxpr


def is_user_primitive(prim: Primitive) -> bool:
    """Whether `prim` was made by user code rather than by tracejit (which registers its own)."""
    return _primitive.registry.get(prim.name) is not prim


def _expands(prim: Primitive) -> bool:
    return prim.composite is not None or is_user_primitive(prim)


def expand_lowerings(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """Replace each equation of a composite or user primitive (here and in sub-jaxprs) by the
    jaxpr of its composite or traced lowering; their consts become constvars of the result."""
    if not _has_expansions(jaxpr):
        return jaxpr, consts
    memo: dict = {}

    def expand_body(closed: ClosedJaxpr) -> ClosedJaxpr:
        inner, inner_consts = expand_lowerings(closed.jaxpr, closed.consts)
        return ClosedJaxpr(inner, inner_consts)

    def expand(eqn: Eqn):
        if not _expands(eqn.primitive):
            return map_subjaxprs(eqn, expand_body, memo)
        lowered = _lowered(eqn)
        if lowered is None:  # only an impl rule: the backend calls it on the host
            return eqn
        return expand_lowerings(*lowered)
    return inline_equations(jaxpr, consts, expand)


def _has_expansions(jaxpr: Jaxpr) -> bool:
    return any(_expands(eqn.primitive) or any(
        _has_expansions(closed.jaxpr) for value in eqn.params.values()
        for closed in (value if isinstance(value, tuple) else (value,))
        if isinstance(closed, ClosedJaxpr)) for eqn in jaxpr.eqns)


def _lowered(eqn: Eqn) -> tuple[Jaxpr, list] | None:
    """The jaxpr of eqn's composite, or of the lowering registered for its (user) primitive, at
    eqn's types; None for a user primitive with only an impl rule (compiled as a call of it on
    the host)."""
    prim = eqn.primitive
    if prim.composite is not None:
        return _traced(prim, lambda *args: _as_list(prim.composite(*args, **eqn.params)), eqn)
    rule = lowerings.get(prim)
    if rule is None and prim.impl is not None:
        return None
    if rule is None:
        raise NotImplementedError(
            f"The primitive '{prim.name}' has no lowering, so it cannot run inside jit (its impl "
            f"rule runs only eagerly). Register one that computes it with jax operations: "
            f"jax.interpreters.mlir.register_lowering(p, jax.interpreters.mlir.lower_fun("
            f"fun, multiple_results={prim.multiple_results})).")
    if not isinstance(rule, TracedLowering):
        raise NotImplementedError(
            f"The lowering registered for the primitive '{prim.name}' is an MLIR lowering rule; "
            f"tracejit compiles to native code through LLVM, not MLIR, and cannot run it. "
            f"Register a traceable one instead: jax.interpreters.mlir.register_lowering(p, "
            f"jax.interpreters.mlir.lower_fun(fun, multiple_results="
            f"{prim.multiple_results})).")
    params = eqn.params

    def fun(*args):
        out = rule.fun(*args, **params)
        return list(out) if rule.multiple_results else [out]
    return _traced(prim, fun, eqn)


def _as_list(out: Any) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _traced(prim: Primitive, fun, eqn: Eqn) -> tuple[Jaxpr, list]:
    """fun's jaxpr at eqn's operand types, checked against eqn's result types."""
    closed = trace_to_jaxpr(fun, [v.aval for v in eqn.invars])
    got = closed.out_avals
    want = [v.aval for v in eqn.outvars]
    if [(a.shape, a.dtype) for a in got] != [(a.shape, a.dtype) for a in want]:
        raise TypeError(
            f"The lowering of the primitive '{prim.name}' returned "
            f"{[a.str_short() for a in got]}, but its abstract evaluation rule says "
            f"{[a.str_short() for a in want]}.")
    return closed.jaxpr, closed.consts
