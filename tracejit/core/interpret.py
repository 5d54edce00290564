"""The reference interpreter: evaluates a jaxpr equation by equation with NumPy impl rules.

It is the oracle the native backend is tested against, and what `backend="interpret"` runs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .jaxpr import ClosedJaxpr, Jaxpr, Literal, SourceInfo, Var


def invalid_values(outs: Sequence[Any], nans: bool, infs: bool) -> str | None:
    """"nan" or "inf" when a float output holds one that is checked for (jax_debug_nans/infs),
    else None."""
    for out in outs:
        out = np.asarray(out)
        if out.dtype.kind not in "fc" and out.dtype.name != "bfloat16":
            continue
        with np.errstate(all="ignore"):
            if nans and np.isnan(out).any():
                return "nan"
            if infs and np.isinf(out).any():
                return "inf"
    return None


def invalid_value_error(kind: str, name: str, where: SourceInfo | None) -> FloatingPointError:
    """JAX's FloatingPointError, with the user's line where it is known."""
    at = f" (at {where.filename}:{where.lineno}, in {where.function})" if where else ""
    return FloatingPointError(f"invalid value ({kind}) encountered in {name}{at}")


def eval_jaxpr_checked(closed: ClosedJaxpr, args: Sequence[Any], nans: bool, infs: bool
                       ) -> None:
    """Run `closed` op by op (nested jit bodies too) and raise at the first operation whose
    output has a NaN or infinity that is checked for: the de-optimized rerun of a jitted
    function whose output had one."""
    def check(eqn, ins, outs):
        body = eqn.params.get("jaxpr")
        if eqn.primitive.name == "jit" and isinstance(body, ClosedJaxpr):
            eval_jaxpr(body.jaxpr, body.consts, *ins, check=check)  # raises inside if it can
        kind = invalid_values(outs, nans, infs)
        if kind is not None:
            raise invalid_value_error(kind, eqn.primitive.name, eqn.source_info)
    eval_jaxpr(closed.jaxpr, closed.consts, *args, check=check)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any,
               check: Callable | None = None) -> list[np.ndarray]:
    """`check(eqn, ins, outs)`, where given, sees every equation once it has run."""
    env: dict[Var, Any] = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = np.asarray(x)
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        outs = eqn.primitive.impl(*ins, **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        if check is not None:
            check(eqn, ins, outs)
        for v, out in zip(eqn.outvars, outs):
            out = np.asarray(out)
            if out.shape != v.aval.shape:
                raise AssertionError(f"internal error: impl of {eqn.primitive.name} returned "
                                     f"shape {out.shape}, the jaxpr says {v.aval.shape}")
            if out.dtype != v.aval.dtype:
                out = out.astype(v.aval.dtype)
            env[v] = out
    return [read(v) for v in jaxpr.outvars]

