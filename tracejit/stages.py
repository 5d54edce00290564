"""tracejit.stages (`jax.stages`): the ahead-of-time stages of a jitted function — `Traced`,
`Lowered`, `Compiled`, their `ArgInfo` — and `Wrapped`, the type of what `jit` returns."""
from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

from .runtime.stages import ArgInfo, Compiled, Lowered, Traced  # noqa: F401

CompilerOptions = dict[str, Union[str, bool]]


@runtime_checkable
class Wrapped(Protocol):
    """A function wrapped by `jit`: callable, and traceable/lowerable ahead of time."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def trace(self, *args: Any, **kwargs: Any) -> Traced: ...

    def lower(self, *args: Any, **kwargs: Any) -> Lowered: ...
