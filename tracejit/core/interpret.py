"""The reference interpreter: evaluates a jaxpr equation by equation with NumPy impl rules.

It is the oracle the native backend is tested against, and what `backend="interpret"` runs.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .jaxpr import Jaxpr, Literal, Var


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[np.ndarray]:
    env: dict[Var, Any] = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = np.asarray(x)
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.impl(*[read(v) for v in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        for v, out in zip(eqn.outvars, outs):
            out = np.asarray(out)
            if out.shape != v.aval.shape:
                raise AssertionError(f"internal error: impl of {eqn.primitive.name} returned "
                                     f"shape {out.shape}, the jaxpr says {v.aval.shape}")
            if out.dtype != v.aval.dtype:
                out = out.astype(v.aval.dtype)
            env[v] = out
    return [read(v) for v in jaxpr.outvars]

