"""A module's deprecated name, as JAX keeps one: reading it warns (once a process) and gives
the value."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any


def deprecated_attribute(module: str, name: str, value: Any, message: str
                         ) -> Callable[[str], Any]:
    """The module `__getattr__` that gives `value` for `name`, warning `message` the first
    time (a DeprecationWarning at the reader's line; its `warned` list, emptied, rearms it)."""
    warned: list[bool] = []

    def __getattr__(attribute: str) -> Any:
        if attribute != name:
            raise AttributeError(f"module {module!r} has no attribute {attribute!r}")
        if not warned:
            warned.append(True)
            warnings.warn(message, DeprecationWarning, stacklevel=2)
        return value
    __getattr__.warned = warned
    return __getattr__
