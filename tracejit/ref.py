"""jax.ref: mutable array references (a user-facing face over core/refs.py, where they are
made functional for jit, loops and cond)."""
from .core.refs import (  # noqa: F401
    AbstractRef,
    Ref,
    addupdate,
    empty_ref,
    free_ref,
    freeze,
    get,
    new_ref,
    set,
    swap,
)

__all__ = ["AbstractRef", "Ref", "addupdate", "free_ref", "freeze", "get", "new_ref",
           "empty_ref", "set", "swap"]
