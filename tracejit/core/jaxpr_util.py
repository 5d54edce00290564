"""Jaxpr plumbing shared by the transformations: re-running a jaxpr through `bind` (so whatever
trace is active sees its equations), staging a flat function, and reordering binders."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .array import Array
from .global_array import any_noted, carry_notes
from .avals import ShapedArray
from .jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .trace import Tracer, rebinding_source, trace_to_jaxpr


def literal_value(v: Literal) -> Array:
    """A literal as an Array, keeping its weak type (a bare NumPy scalar would lose it)."""
    return Array.from_numpy(v.val, v.aval)


def eval_jaxpr_bind(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list:
    """Evaluate `jaxpr` by binding each equation's primitive: the active traces transform it."""
    env: dict[Var, Any] = {}

    def read(v):
        return literal_value(v) if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    notes = any_noted()  # (shard_map staged under jit: its results' reports follow them)
    if notes:
        for v, x in zip(jaxpr.invars, args):
            carry_notes(v, x)
    for eqn in jaxpr.eqns:
        args = [read(v) for v in eqn.invars]
        if eqn.source_info is None:
            outs = eqn.primitive.bind(*args, **eqn.params)
        else:  # what the transformations stage for this equation keeps its source line
            prev = rebinding_source(eqn.source_info)
            try:
                outs = eqn.primitive.bind(*args, **eqn.params)
            finally:
                rebinding_source(prev)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        for v, out in zip(eqn.outvars, outs):
            env[v] = out
            if notes:
                carry_notes(v, out)
    return [read(v) for v in jaxpr.outvars]


def eval_closed(closed: ClosedJaxpr, *args: Any) -> list:
    return eval_jaxpr_bind(closed.jaxpr, closed.consts, *args)


def trace_closed(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
                 ) -> ClosedJaxpr:
    """Stage a flat function of closed jaxprs (it captures no tracers) into a ClosedJaxpr."""
    closed = trace_to_jaxpr(fun, in_avals)
    assert not any(isinstance(c, Tracer) for c in closed.consts), "internal: leaked tracer"
    return closed


def permute_invars(closed: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
    """The same jaxpr taking its inputs in the order invars[order[0]], invars[order[1]], ..."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in order], j.outvars, j.eqns,
                             j.debug_info), closed.consts)


def permute_outvars(closed: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, [j.outvars[i] for i in order], j.eqns,
                             j.debug_info), closed.consts)


def add_unused_invars(closed: ClosedJaxpr, avals: Sequence[ShapedArray],
                      at_end: bool = True) -> ClosedJaxpr:
    j = closed.jaxpr
    extra = [Var(a) for a in avals]
    invars = j.invars + extra if at_end else extra + j.invars
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.debug_info),
                       closed.consts)


def closure_convert(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """Turn consts that are tracers of an enclosing trace into leading invars: a body staged
    inside another trace then closes over nothing that trace owns."""
    if not any(isinstance(c, Tracer) for c in closed.consts):
        return closed, []
    jaxpr = closed.jaxpr
    keep = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if not isinstance(c, Tracer)]
    moved = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if isinstance(c, Tracer)]
    new = Jaxpr([v for v, _ in keep], [v for v, _ in moved] + jaxpr.invars, jaxpr.outvars,
                jaxpr.eqns, jaxpr.debug_info)
    return ClosedJaxpr(new, [c for _, c in keep]), [c for _, c in moved]
