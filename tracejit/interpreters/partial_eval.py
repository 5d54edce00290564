"""`jax.interpreters.partial_eval`: tracing a function to a jaxpr, as code that stages
functions itself calls it (`trace_to_jaxpr_dynamic`), and splitting its work into what is
known now and what waits for unknown inputs (`trace_to_jaxpr_nounits`). User-facing layer
over tracejit.core.trace."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from ..core.avals import AbstractValue, ShapedArray
from ..core.dce import dce
from ..core.dce import dce_jaxpr as _dce_jaxpr
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.jaxpr_util import eval_jaxpr_bind, literal_value
from ..core.trace import DynamicJaxprTracer, trace_to_jaxpr  # noqa: F401
from ..extend.linear_util import WrappedFun


class PartialVal(NamedTuple):
    """An input or output of partial evaluation: (None, value) when known, (aval, None) when
    only its type is."""
    pv: AbstractValue | None
    const: Any

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        return cls(None, const)

    @classmethod
    def unknown(cls, aval: AbstractValue) -> PartialVal:
        return cls(aval, None)

    def is_known(self) -> bool:
        return self.pv is None

    def get_known(self) -> Any:
        return self.const if self.pv is None else None

    def get_aval(self) -> AbstractValue:
        from ..core.trace import get_aval
        return get_aval(self.const) if self.pv is None else self.pv


def trace_to_jaxpr_dynamic(fun: WrappedFun, in_avals: Sequence[ShapedArray], **_: Any
                           ) -> tuple[Jaxpr, list[ShapedArray], list]:
    """(jaxpr, out_avals, consts) of `fun` (flat arrays in, a flat sequence out)."""
    closed = trace_to_jaxpr(lambda *xs: list(fun.call_wrapped(*xs)), in_avals)
    return closed.jaxpr, closed.out_avals, closed.consts


def trace_to_jaxpr_nounits(fun: WrappedFun, pvals: Sequence[PartialVal],
                           instantiate: bool | Sequence[bool] = False
                           ) -> tuple[Jaxpr, list[PartialVal], list]:
    """Trace `fun` with its known inputs' values and its unknown inputs' types. Outputs that
    depend on no unknown input (and that `instantiate` does not ask to keep unknown) come back
    known, with their values; the jaxpr (taking the unknown inputs, with the known values among
    its consts) computes the others."""
    unknown = [not p.is_known() for p in pvals]
    avals = [p.pv for p in pvals if not p.is_known()]

    def flat(*xs):
        it = iter(xs)
        return list(fun.call_wrapped(*[next(it) if u else p.const
                                        for p, u in zip(pvals, unknown)]))

    closed = trace_to_jaxpr(flat, avals)
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    out_unknown = [i or _depends_on(jaxpr, v) for v, i in zip(jaxpr.outvars, inst)]
    known_outs = [v for v, u in zip(jaxpr.outvars, out_unknown) if not u]
    known_vals = iter(_evaluate_known(jaxpr, closed.consts, known_outs))
    out_pvals = [PartialVal.unknown(v.aval) if u else PartialVal.known(next(known_vals))
                 for v, u in zip(jaxpr.outvars, out_unknown)]
    rest = Jaxpr(jaxpr.constvars, jaxpr.invars,
                 [v for v, u in zip(jaxpr.outvars, out_unknown) if u], jaxpr.eqns,
                 jaxpr.debug_info)
    return dce(rest), out_pvals, closed.consts


def _depends_on(jaxpr: Jaxpr, out: Any) -> bool:
    """Whether `out` depends on one of jaxpr's invars."""
    tainted = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, Literal) and v in tainted for v in eqn.invars):
            tainted.update(eqn.outvars)
    return not isinstance(out, Literal) and out in tainted


def _evaluate_known(jaxpr: Jaxpr, consts: list, outs: list) -> list:
    if not outs:
        return []
    only = dce(Jaxpr(jaxpr.constvars, [Var(v.aval) for v in jaxpr.invars], outs, jaxpr.eqns))
    return [literal_value(o) if isinstance(o, Literal) else o for o in
            eval_jaxpr_bind(only, consts)]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: bool | Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[Jaxpr, list[bool]]:
    """The jaxpr computing only the used outputs from only the inputs they need (and those
    `instantiate` keeps), and which inputs it kept."""
    n_out, n_in = len(jaxpr.outvars), len(jaxpr.invars)
    used = [used_outputs] * n_out if isinstance(used_outputs, bool) else list(used_outputs)
    keep = [instantiate] * n_in if isinstance(instantiate, bool) else list(instantiate)
    new, live = _dce_jaxpr(jaxpr, used)
    used_inputs = [v in live or k for v, k in zip(jaxpr.invars, keep)]
    invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u]
    return Jaxpr(new.constvars, invars, new.outvars, new.eqns, new.debug_info), used_inputs
