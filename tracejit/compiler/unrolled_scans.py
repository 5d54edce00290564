"""Scans unrolled whole where the program asks for it (a pass, after inline_calls): a scan whose
`unroll` covers its length (`unroll=True`, or jnp.polyval's default of 16 for up to 16
coefficients) becomes its steps' equations inline, as XLA unrolls it. The passes after it then
see straight-line ops: jnp.polyval of 9 coefficients over 1M points is one kernel of nine
multiply-adds an element, where the scan ran as an element loop that stored its carry at each
step after a kernel that broadcast its zero init (0.37 -> 0.13 ms; JAX 0.12: 0.20). The same
equations in the same order: the same values."""
from __future__ import annotations

from ..core.jaxpr import Eqn, Jaxpr, has_effects
from ..core.jaxpr_util import eval_jaxpr_bind
from ..lax.control_flow import scan_p
from .rewrite import rewrite_eqns

# A scan is unrolled only where its body's equations times its length are at most this many
MAX_UNROLLED_EQNS = 512


def unroll_scans(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """`jaxpr` with each scan asked to unroll whole (here and in sub-jaxprs) replaced by its
    steps."""
    return rewrite_eqns(jaxpr, consts, _whole, _steps)


def _whole(eqn: Eqn) -> bool | None:
    if eqn.primitive is not scan_p:
        return None
    p = eqn.params
    length = p["length"]
    if not 0 < length <= p["unroll"] or has_effects(eqn) \
            or length * len(p["jaxpr"].jaxpr.eqns) > MAX_UNROLLED_EQNS:
        return None
    return True


def _steps(eqn: Eqn, _plan, *operands) -> list:
    from .. import lax
    p = eqn.params
    body, nc, ncarry, length = p["jaxpr"], p["num_consts"], p["num_carry"], p["length"]
    consts, carry = operands[:nc], list(operands[nc:nc + ncarry])
    xs = operands[nc + ncarry:]
    ys = [None] * length
    for step in range(length):
        i = length - 1 - step if p["reverse"] else step
        outs = eval_jaxpr_bind(body.jaxpr, body.consts, *consts, *carry,
                               *[lax.index_in_dim(x, i, keepdims=False) for x in xs])
        carry, ys[i] = outs[:ncarry], outs[ncarry:]
    stacked = [lax.concatenate([lax.expand_dims(y[k], (0,)) for y in ys], 0)
               for k in range(len(body.jaxpr.outvars) - ncarry)]
    return [*carry, *stacked]
