"""jax.make_user_context: a value of the user's that jit's caches key on, as a config option
would (core/config.py's trace key), set in a with-block. Core: jit's key reads it there."""
from __future__ import annotations

import itertools
from typing import Any

from .config import _OPTIONS, config

_COUNT = itertools.count()


class UserConfig:
    """A user context: `ctx(value)` is a with-block with `value` in effect in its thread (as JAX's:
    `set_global` sets what threads see outside their blocks); a jitted function called with
    another value in effect traces and compiles again (its own cache entry)."""

    def __init__(self, default_value: Any):
        # an option of its own, part of the trace key (the second field: semantic)
        self._name = f"tracejit_user_context_{next(_COUNT)}"
        _OPTIONS[self._name] = (default_value, True)
        config._values[self._name] = default_value
        config._trace_key_cache = None

    @property
    def value(self) -> Any:
        return config.read(self._name)

    def get_global(self) -> Any:
        return config.read_global(self._name)

    def set_global(self, new_value: Any) -> None:
        config.update(self._name, new_value)

    def __call__(self, new_value: Any):
        return config._override(self._name, new_value)


def make_user_context(default_value: Any = None) -> UserConfig:
    """Creates a jit-cache-sensitive context (JAX's): inside `with ctx(v):` jitted functions
    are traced, lowered and compiled for `v`; its value is `ctx.value`. Not thread-safe to
    create concurrently with other calls (as JAX says of its own)."""
    return UserConfig(default_value)
