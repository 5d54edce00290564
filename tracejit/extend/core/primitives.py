"""`jax.extend.core.primitives`: JAX's call primitives by their names. `jit_p` is tracejit's
jit call (lax/call.py); `call_p` and `closed_call_p` (a call of a jaxpr, open or closed) are
defined here as user-level primitives whose rules evaluate, differentiate and batch the called
jaxpr, and whose lowering inlines it (numpyro keys its dependency tracking by them). Like JAX's
module it also names every lax primitive (`add_p`, `reduce_sum_p`, ...)."""
from __future__ import annotations

from typing import Any

from ...core import primitive as _primitive
from ...core.jaxpr import ClosedJaxpr, Jaxpr
from ...core.jaxpr_util import eval_jaxpr_bind
from ...core.rules import instantiate
from ... import lax as _lax
from ...lax.call import pjit_p
from ...transforms.api import jvp, vmap
from . import Primitive

jit_p = pjit_p
globals().update({_name: getattr(_lax, _name) for _name in dir(_lax) if _name.endswith("_p")})


def _closed(call_jaxpr: Jaxpr | ClosedJaxpr) -> ClosedJaxpr:
    return call_jaxpr if isinstance(call_jaxpr, ClosedJaxpr) else ClosedJaxpr(call_jaxpr, [])


def _run(call_jaxpr: Jaxpr | ClosedJaxpr, *args: Any) -> list:
    closed = _closed(call_jaxpr)
    return list(eval_jaxpr_bind(closed.jaxpr, closed.consts, *args))


def _define(name: str) -> Primitive:
    p = Primitive(name)
    p.multiple_results = True
    p.def_impl(lambda *args, call_jaxpr, **_: _run(call_jaxpr, *args))
    p.def_abstract_eval(lambda *avals, call_jaxpr, **_: list(_closed(call_jaxpr).out_avals))

    def jvp_rule(primals, tangents, *, call_jaxpr, **_):
        tangents = [instantiate(t) for t in tangents]
        return jvp(lambda *xs: _run(call_jaxpr, *xs), list(primals), list(tangents))

    def batch_rule(args, dims, *, call_jaxpr, **_):
        return vmap(lambda *xs: _run(call_jaxpr, *xs), in_axes=tuple(dims))(*args), \
            [0] * len(_closed(call_jaxpr).out_avals)

    _primitive.primitive_jvps[p] = jvp_rule
    _primitive.primitive_batchers[p] = batch_rule
    _primitive.lowerings[p] = _primitive.TracedLowering(
        lambda *args, call_jaxpr, **_: _run(call_jaxpr, *args), True)
    return p


call_p = _define("call")
closed_call_p = _define("closed_call")

__all__ = ["call_p", "closed_call_p", "jit_p", "pjit_p"]
