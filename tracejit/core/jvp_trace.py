"""Forward mode: JVPTrace carries a (primal, tangent) pair through every primitive's JVP rule.

`jvp_flat` differentiates a flat function. The interpreter sits in core, beside the eval and
staging traces, because lax rules run it too (cumulative ops differentiate their scan form, and
control flow's rules differentiate their bodies with `jvp_jaxpr`, at the end of this module).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .avals import ShapedArray
from .jaxpr import ClosedJaxpr
from .jaxpr_util import eval_closed, trace_closed
from .primitive import Primitive, primitive_jvps
from .rules import Zero, differentiable, instantiate, tangent_aval
from .trace import Trace, Tracer, full_lower, full_raise, get_aval, new_main, typeof


def concrete_or_none(x: Any):
    """x's concrete value, or None while it is only known abstractly."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    to_concrete = getattr(x, "to_concrete_value", None)
    return to_concrete() if to_concrete is not None else x


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")


    def __repr__(self) -> str:
        return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"
    def __init__(self, trace: Trace, primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)

    def typed_aval(self) -> ShapedArray:
        return typeof(self.primal)  # (`float32[8@x,4]` for a primal laid out so, as JAX's)

    def to_concrete_value(self):
        # differentiating Python control flow on values works outside jit, as in JAX
        return concrete_or_none(self.primal)

    def full_lower(self):
        if type(self.tangent) is Zero:
            return full_lower(self.primal)
        return self

    def _origin_msg(self) -> str:  # the primal knows where its value comes from
        return self.primal._origin_msg() if isinstance(self.primal, Tracer) else ""


def jvp_rule(primitive: Primitive) -> Callable:
    if primitive.jvp is not None:
        return primitive.jvp
    rule = primitive_jvps.get(primitive)  # a user primitive's rule (jax.interpreters.ad)
    if rule is not None:
        return rule
    if primitive.not_differentiable:
        return _zero_jvp(primitive)
    raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented")


def _zero_jvp(primitive: Primitive) -> Callable:
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero.from_primal(o) for o in out]
        return out, Zero.from_primal(out)
    return jvp


class JVPTrace(Trace):
    def pure(self, val):
        return JVPTracer(self, val, Zero.from_primal(val))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            out = primitive.bind(*primals, **params)
            return wrap_outputs(self, primitive, out, None)
        out, t_out = jvp_rule(primitive)(primals, tangents, **params)
        return wrap_outputs(self, primitive, out, t_out)


def wrap_outputs(trace: Trace, primitive: Primitive, out: Any, t_out: Any) -> Any:
    """Pair a primitive's outputs with their tangents (zeros for t_out None) as the trace's
    tracers (JVPTracer, or LinearizeTracer for LinearizeTrace)."""
    cls = trace.tracer_type
    if not primitive.multiple_results:
        return cls(trace, out, Zero.from_primal(out) if t_out is None else t_out)
    if t_out is None:
        t_out = [Zero.from_primal(o) for o in out]
    return [cls(trace, o, t) for o, t in zip(out, t_out)]


JVPTrace.tracer_type = JVPTracer  # (set after both classes exist)


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any]) -> tuple[list, list]:
    """Run fun (flat in, flat list out) on JVP tracers; tangents may be Zeros."""
    with new_main(JVPTrace) as main:
        trace = JVPTrace(main)
        outs = fun(*[JVPTracer(trace, p, t) for p, t in zip(primals, tangents)])
        outs = [full_raise(trace, o) for o in outs]
        return [o.primal for o in outs], [o.tangent for o in outs]


# --- forward mode on jaxprs -----------------------------------------------------------------

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
