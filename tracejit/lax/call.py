"""The call primitive `jit` (JAX's pjit): a nested jitted function staged as one equation whose
`jaxpr` param is its body, with all of its rules (jvp, linearize, transpose, batching, DCE).
The compiler inlines it (compiler/passes.py `inline_calls`)."""
from __future__ import annotations

from ..core.batching import batch_jaxpr, move_to_front
from ..core.dce import compress, dce_closed, keep_invars, keep_outvars
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Eqn, Scoped
from ..core.jvp_trace import jvp_jaxpr
from ..core.linearize import linearize_jaxpr
from ..core.primitive import Primitive
from ..core.rules import (
    axis_size,
    batch_dims,
    nonzero_mask,
    nonzero_tangents,
    not_mapped,
    with_zeros,
)
from ..core.transpose import call_transpose

pjit_p = Primitive("jit", multiple_results=True)  # JAX prints it as `jit` (formerly pjit)


def _pjit_abstract(*avals, jaxpr: ClosedJaxpr, name: str):
    return jaxpr.out_avals


def _pjit_impl(*args, jaxpr: ClosedJaxpr, name: str):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


pjit_p.def_abstract_eval(_pjit_abstract)
pjit_p.def_impl(_pjit_impl)
# JAX prints the name first and the body with its own variable names
pjit_p.pp_params = lambda params: {"name": params["name"], "jaxpr": Scoped(params["jaxpr"])}


# --- transformation and DCE rules ---------------------------------------------------------


def _pjit_jvp(primals, tangents, *, jaxpr, name):
    n_out = len(jaxpr.out_avals)
    jvp, out_nz = jvp_jaxpr(jaxpr, nonzero_mask(tangents), [False] * n_out)
    outs = pjit_p.bind(*primals, *nonzero_tangents(tangents), jaxpr=jvp, name=f"jvp({name})")
    return outs[:n_out], with_zeros(outs[n_out:], out_nz, jaxpr.out_avals)


def _pjit_linearize(primals, tangents, *, jaxpr, name):
    n_out = len(jaxpr.out_avals)
    known, lin, _, out_nz = linearize_jaxpr(jaxpr, nonzero_mask(tangents), [False] * n_out)
    # a residual that is an input of the call is passed on directly, not returned by it
    kj = known.jaxpr
    input_of = {v: i for i, v in enumerate(kj.invars)}
    forwarded = [input_of.get(v) for v in kj.outvars[n_out:]]
    known = keep_outvars(known, [True] * n_out + [f is None for f in forwarded])
    outs = pjit_p.bind(*primals, jaxpr=known, name=name)
    computed = iter(outs[n_out:])
    residuals = [next(computed) if f is None else primals[f] for f in forwarded]
    t_out = []
    if any(out_nz):
        t_out = pjit_p.bind(*residuals, *nonzero_tangents(tangents), jaxpr=lin,
                            name=f"jvp({name})")
    return outs[:n_out], with_zeros(t_out, out_nz, jaxpr.out_avals)


def _pjit_batch(vals, dims, *, jaxpr, name):
    batched, out_b = batch_jaxpr(jaxpr, axis_size(vals, dims),
                                 [d is not not_mapped for d in dims], False)
    return pjit_p.bind(*move_to_front(vals, dims), jaxpr=batched, name=name), batch_dims(out_b)


pjit_p.def_jvp(_pjit_jvp)
pjit_p.def_linearize(_pjit_linearize)
pjit_p.def_transpose(call_transpose(pjit_p, "name"))
pjit_p.def_batch(_pjit_batch)


def _dce_call(eqn: Eqn, used: list[bool]) -> Eqn:
    body, reads = dce_closed(eqn.params["jaxpr"], used)
    return eqn.replace(invars=compress(eqn.invars, reads), outvars=compress(eqn.outvars, used),
                       params={**eqn.params, "jaxpr": keep_invars(body, reads)})


pjit_p.def_dce(_dce_call)
