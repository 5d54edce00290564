"""Forward mode on jaxprs: `jvp_jaxpr` turns a closed jaxpr into the jaxpr of its JVP (what call
and control-flow primitives bind under differentiation). The interpreter it runs, JVPTrace, is
in core/jvp_trace.py.
"""
from __future__ import annotations

from typing import Sequence

from ..core.jaxpr import ClosedJaxpr
from ..core.jvp_trace import jvp_flat
from ..core.rules import Zero, differentiable, instantiate, tangent_aval
from .jaxpr_util import eval_closed, trace_closed


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate_out: Sequence[bool]
              ) -> tuple[ClosedJaxpr, list[bool]]:
    """The jaxpr (primals..., nonzero tangents...) -> (primal outs..., nonzero tangent outs...)
    of closed's JVP, and which output tangents are nonzero (those asked for always are)."""
    avals = closed.in_avals
    t_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros) if nz]
    out_nz: list[bool] = []

    def fun(*args):
        primals, it = args[:len(avals)], iter(args[len(avals):])
        tangents = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals, nonzeros)]
        p_out, t_out = jvp_flat(lambda *xs: eval_closed(closed, *xs), primals, tangents)
        out_nz[:] = [type(t) is not Zero or (inst and differentiable(t.aval))
                     for t, inst in zip(t_out, instantiate_out)]
        return p_out + [instantiate(t) for t, nz in zip(t_out, out_nz) if nz]

    return trace_closed(fun, list(avals) + t_avals), out_nz
