"""`jax.interpreters.mlir`: registering how a user-defined primitive is compiled. tracejit
compiles through LLVM, not MLIR: the lowering it can use is a traceable function
(`lower_fun`), whose jaxpr the compiler inlines in place of the primitive (compiler/
lowerings.py). User-facing layer over the table in tracejit.core.primitive."""
from __future__ import annotations

from typing import Any, Callable

from ..core.primitive import Primitive, TracedLowering, lowerings  # noqa: F401

# platforms whose lowerings apply to tracejit's only device (the host CPU)
_HOST_PLATFORMS = (None, "cpu")


def lower_fun(fun: Callable, multiple_results: bool = True) -> TracedLowering:
    """A lowering computing the primitive as `fun(*operands, **params)` does with jax
    operations (a single result unless multiple_results)."""
    return TracedLowering(fun, multiple_results)


def register_lowering(prim: Primitive, rule: Any, platform: str | None = None,
                      **kwargs: Any) -> Any:
    """Register how `prim` is compiled under jit (a rule for another platform than the CPU is
    kept out: tracejit never runs there). Only `lower_fun` rules can be compiled; another rule
    is refused, naming the fix, when a jitted program uses the primitive."""
    del kwargs  # cacheable=, inline=: how MLIR lowerings are emitted
    if platform in _HOST_PLATFORMS:
        lowerings[prim] = rule
    return rule
