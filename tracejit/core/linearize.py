"""Reverse mode, first half: linearization. A LinearizeTrace runs each JVP rule with the primal
work on the enclosing trace (eagerly, or staged into an outer jaxpr) and the tangent work staged
into a separate linear jaxpr; primal values the tangent work reads become its constants (the
residuals). Call and control-flow primitives split their own bodies (`Primitive.linearize`).

`linearize_flat` linearizes a flat function; `linearize_jaxpr` splits a closed jaxpr into a
known jaxpr (primal outputs and residuals) and a linear jaxpr (residuals, tangents -> tangents).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from .avals import ShapedArray
from .jaxpr import ClosedJaxpr
from .jaxpr_util import closure_convert, eval_closed, trace_closed
from .jvp_trace import JVPTracer, jvp_rule, wrap_outputs
from .rules import Zero, differentiable, instantiate, tangent_aval
from .trace import (DebugInfo, DynamicJaxprTrace, JaxprBuilder, Trace, full_raise, get_aval,
                    new_main)


class LinearizeTracer(JVPTracer):
    """A primal value of the enclosing trace and its tangent, a tracer of the linear jaxpr."""
    __slots__ = ()

    def __repr__(self) -> str:  # JAX's name for a tracer of reverse-mode differentiation
        t = self.tangent  # a tracer of the linear jaxpr, or a symbolic Zero
        tangent = (t.aval if hasattr(t, "aval") else get_aval(t)).str_short()
        return f"GradTracer(primal={self.primal}, typeof(tangent)={tangent})"


class LinearizeTrace(Trace):
    """global_data: the DynamicJaxprTrace that stages tangent work (one level up)."""

    def pure(self, val):
        return LinearizeTracer(self, val, Zero.from_primal(val))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            return wrap_outputs(self, primitive, primitive.bind(*primals, **params), None)
        rule = primitive.linearize or jvp_rule(primitive)
        out, t_out = rule(primals, tangents, **params)
        return wrap_outputs(self, primitive, out, t_out)


LinearizeTrace.tracer_type = LinearizeTracer


class Linearized(NamedTuple):
    """The linear map of a linearization: nonzero input tangents -> nonzero output tangents."""
    jaxpr: ClosedJaxpr       # consts: residuals (may be tracers of enclosing traces)
    in_nonzero: list[bool]   # which inputs have a (float) tangent the jaxpr takes
    out_nonzero: list[bool]  # which outputs' tangents it returns (the others are zero)
    in_avals: list[ShapedArray]   # tangent avals of all inputs
    out_avals: list[ShapedArray]  # tangent avals of all outputs


def linearize_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
                   debug: DebugInfo | None = None, instantiate_out: Sequence[bool] | None = None
                   ) -> tuple[list, Linearized]:
    """Run fun on primals, returning its outputs and its linear map at primals."""
    builder = JaxprBuilder(debug)
    with new_main(LinearizeTrace) as main, new_main(DynamicJaxprTrace, builder) as tangent_main:
        tangent_trace = DynamicJaxprTrace(tangent_main)
        main.global_data = tangent_trace
        trace = LinearizeTrace(main)
        t_avals = [tangent_aval(get_aval(p)) for p in primals]
        in_nz = [differentiable(a) for a in t_avals]
        t_in = [tangent_trace.new_arg(a) if nz else Zero(a) for a, nz in zip(t_avals, in_nz)]
        outs = fun(*[LinearizeTracer(trace, p, t) for p, t in zip(primals, t_in)])
        outs = [full_raise(trace, o) for o in outs]
        t_out = [o.tangent for o in outs]
        inst = instantiate_out or [False] * len(outs)
        out_nz = [type(t) is not Zero or (i and differentiable(t.aval))
                  for t, i in zip(t_out, inst)]
        lin_outs = [full_raise(tangent_trace, instantiate(t)) for t, nz in zip(t_out, out_nz)
                    if nz]
        jaxpr = builder.build([t for t in t_in if type(t) is not Zero], lin_outs)
        out_avals = [tangent_aval(get_aval(o.primal)) for o in outs]
        return [o.primal for o in outs], Linearized(jaxpr, in_nz, out_nz, t_avals, out_avals)


def linearize_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool],
                    instantiate_out: Sequence[bool]
                    ) -> tuple[ClosedJaxpr, ClosedJaxpr, int, list[bool]]:
    """Split closed into `known` (primals -> primal outs + residuals) and `lin` (residuals +
    nonzero tangents -> nonzero output tangents); returns (known, lin, num_res, out_nonzero)."""
    avals = closed.in_avals
    info: dict[str, Any] = {}

    def known_fun(*primals):
        builder = JaxprBuilder(None)
        with new_main(LinearizeTrace) as main, \
                new_main(DynamicJaxprTrace, builder) as tangent_main:
            tangent_trace = DynamicJaxprTrace(tangent_main)
            main.global_data = tangent_trace
            trace = LinearizeTrace(main)
            t_in = [tangent_trace.new_arg(tangent_aval(a)) if nz else Zero(tangent_aval(a))
                    for a, nz in zip(avals, nonzeros)]
            outs = eval_closed(closed, *[LinearizeTracer(trace, p, t)
                                         for p, t in zip(primals, t_in)])
            outs = [full_raise(trace, o) for o in outs]
            out_nz = [type(o.tangent) is not Zero or (i and differentiable(o.tangent.aval))
                      for o, i in zip(outs, instantiate_out)]
            lin_outs = [full_raise(tangent_trace, instantiate(o.tangent))
                        for o, nz in zip(outs, out_nz) if nz]
            lin = builder.build([t for t in t_in if type(t) is not Zero], lin_outs)
        lin, residuals = closure_convert(lin)
        info.update(lin=lin, out_nz=out_nz, num_res=len(residuals))
        return [o.primal for o in outs] + residuals

    known = trace_closed(known_fun, avals)
    return known, info["lin"], info["num_res"], info["out_nz"]
