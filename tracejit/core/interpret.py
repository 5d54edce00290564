"""The reference interpreter: evaluates a jaxpr equation by equation with NumPy impl rules.

It is the oracle the native backend is tested against, and what `backend="interpret"` runs.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .jaxpr import ClosedJaxpr, Jaxpr, Literal


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[np.ndarray]:
    env: dict[int, Any] = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[id(v)]

    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = np.asarray(x)
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
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
            env[id(v)] = out
    return [read(v) for v in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[np.ndarray]:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)
