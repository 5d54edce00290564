"""The call primitive `jit` (JAX's pjit): a nested jitted function staged as one equation whose
`jaxpr` param is its body. Its transformation rules are in transforms/control_flow.py; the
compiler inlines it (compiler/passes.py `inline_calls`)."""
from __future__ import annotations

from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.primitive import Primitive
from ..core.trace import Tracer

pjit_p = Primitive("jit", multiple_results=True)  # JAX prints it as `jit` (formerly pjit)


def _pjit_abstract(*avals, jaxpr: ClosedJaxpr, name: str):
    return jaxpr.out_avals


def _pjit_impl(*args, jaxpr: ClosedJaxpr, name: str):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


pjit_p.def_abstract_eval(_pjit_abstract)
pjit_p.def_impl(_pjit_impl)


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
