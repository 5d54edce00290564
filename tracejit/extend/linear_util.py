"""`jax.extend.linear_util`: a function wrapped with fixed keyword params, the form in which
JAX's tracing entry points (jax.interpreters.partial_eval) take the function to trace.
User-facing layer."""
from __future__ import annotations

from typing import Any, Callable


class WrappedFun:
    """`f` with its params: `call_wrapped(*args)` calls `f(*args, **params)`."""
    __slots__ = ("f", "params", "debug_info")

    def __init__(self, f: Callable, params: dict, debug_info: Any = None):
        self.f = f
        self.params = params
        self.debug_info = debug_info

    def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
        return self.f(*args, **self.params, **kwargs)

    @property
    def __name__(self) -> str:
        return getattr(self.f, "__name__", type(self.f).__name__)

    def __repr__(self) -> str:
        return f"Wrapped function: {self.f!r} with params {self.params!r}"


def wrap_init(f: Callable, params: dict | None = None, *, debug_info: Any = None) -> WrappedFun:
    """Wrap `f` (and keyword `params` to call it with) for the tracing entry points."""
    return WrappedFun(f, dict(params or {}), debug_info)
