"""Primitive: one operation with all its rules registered together, and the registry of them.

Rules: abstract eval (avals -> avals, required), impl (NumPy reference, required), then the slots
later stages fill: jvp, transpose, batch (vmap) and lowering (native codegen).
"""
from __future__ import annotations

from typing import Any, Callable

from .avals import ShapedArray
from .trace import bind

registry: dict[str, Primitive] = {}

RULES = ("abstract_eval", "impl", "jvp", "transpose", "batch", "lowering")


class Primitive:
    multiple_results = False

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self._abstract_eval: Callable | None = None
        self.impl: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        # call and control-flow primitives split their primal and tangent work themselves
        self.linearize: Callable | None = None
        # dce(eqn, used_outputs) -> the equation computing only the used outputs (primitives
        # with sub-jaxprs drop carries, branch outputs and operands nothing needs)
        self.dce: Callable | None = None
        self.lowering: Callable | None = None
        self.not_differentiable = False
        if name in registry:
            raise ValueError(f"primitive {name!r} registered twice")
        registry[name] = self

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any):
        return bind(self, *args, **params)

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> list[ShapedArray]:
        out = self._abstract_eval(*avals, **params)
        return list(out) if self.multiple_results else [out]

    def has_rule(self, rule: str) -> bool:
        if rule == "abstract_eval":
            return self._abstract_eval is not None
        if rule == "jvp":
            return self.jvp is not None or self.not_differentiable
        return getattr(self, rule) is not None

    def def_abstract_eval(self, f: Callable) -> Callable:
        self._abstract_eval = f
        return f

    def def_impl(self, f: Callable) -> Callable:
        self.impl = f
        return f

    def def_jvp(self, f: Callable) -> Callable:
        self.jvp = f
        return f

    def def_transpose(self, f: Callable) -> Callable:
        self.transpose = f
        return f

    def def_batch(self, f: Callable) -> Callable:
        self.batch = f
        return f

    def def_linearize(self, f: Callable) -> Callable:
        self.linearize = f
        return f

    def def_dce(self, f: Callable) -> Callable:
        self.dce = f
        return f

    def def_lowering(self, f: Callable) -> Callable:
        self.lowering = f
        return f

    def def_not_differentiable(self) -> None:
        self.not_differentiable = True
