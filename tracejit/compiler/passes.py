"""Jaxpr -> Jaxpr passes run before code generation: inlining of nested jit calls and dead-code
elimination. Each pass returns a new Jaxpr; the jaxpr checker accepts every result."""
from __future__ import annotations

from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Literal, Var


def inline_calls(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """Replace `jit` equations by their bodies (their consts become constvars of the result)."""
    if not any(e.primitive.name == "jit" for e in jaxpr.eqns):
        return jaxpr, consts
    constvars, consts = list(jaxpr.constvars), list(consts)
    eqns: list[Eqn] = []
    rename: dict[int, object] = {}

    def read(v):
        return v if isinstance(v, Literal) else rename.get(id(v), v)

    for eqn in jaxpr.eqns:
        invars = [read(v) for v in eqn.invars]
        if eqn.primitive.name != "jit":
            eqns.append(eqn.replace(invars=invars))
            continue
        closed: ClosedJaxpr = eqn.params["jaxpr"]
        inner, inner_consts = inline_calls(closed.jaxpr, closed.consts)
        for v, c in zip(inner.constvars, inner_consts):
            fresh = Var(v.aval)
            constvars.append(fresh)
            consts.append(c)
            rename[id(v)] = fresh
        for v, x in zip(inner.invars, invars):
            rename[id(v)] = x
        for e in inner.eqns:
            new_outs = [Var(v.aval) for v in e.outvars]
            eqns.append(e.replace(invars=[read(v) for v in e.invars], outvars=new_outs))
            for old, new in zip(e.outvars, new_outs):
                rename[id(old)] = new
        for v, out in zip(eqn.outvars, inner.outvars):
            rename[id(v)] = read(out)
    outvars = [read(v) for v in jaxpr.outvars]
    return Jaxpr(constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), consts


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations none of whose outputs are used (all primitives are pure)."""
    live = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    kept: list[Eqn] = []
    for eqn in reversed(jaxpr.eqns):
        if any(id(v) in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(id(v) for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, kept, jaxpr.debug_info)
