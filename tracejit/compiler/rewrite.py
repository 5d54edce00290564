"""The rewrite several passes make: each equation a pass plans for, here and in sub-jaxprs,
replaced by the equations a function of its operands traces (compiler/conv_phases.py,
conv_layouts.py, unrolled_scans.py)."""
from __future__ import annotations

from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, has_subjaxprs, inline_equations, map_subjaxprs
from ..core.trace import trace_to_jaxpr


def rewrite_eqns(jaxpr: Jaxpr, consts: list, plan_of, build) -> tuple[Jaxpr, list]:
    """`jaxpr` with each equation that `plan_of(eqn)` plans for (not None), here and in
    sub-jaxprs, replaced by the equations `build(eqn, plan, *operands)` traces (it returns the
    list of the equation's results)."""
    memo: dict = {}

    def body(closed: ClosedJaxpr) -> ClosedJaxpr:
        inner, inner_consts = rewrite_eqns(closed.jaxpr, closed.consts, plan_of, build)
        return ClosedJaxpr(inner, inner_consts)

    def expand(eqn: Eqn):
        plan = plan_of(eqn)
        if plan is None:
            return map_subjaxprs(eqn, body, memo)
        closed = trace_to_jaxpr(lambda *operands: list(build(eqn, plan, *operands)),
                                [v.aval for v in eqn.invars])
        return closed.jaxpr, closed.consts
    if not any(plan_of(e) is not None or has_subjaxprs(e) for e in jaxpr.eqns):
        return jaxpr, consts
    return inline_equations(jaxpr, consts, expand)
