"""`jax.api_util`: the helpers JAX's own transformations use to flatten a wrapped function's
pytree arguments and results and to describe it in errors (numpyro imports debug_info and
flatten_fun). User-facing layer, over core's pytrees and debug info."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from .core.pytree import PyTreeDef, tree_flatten, tree_unflatten
from .core.trace import fun_debug_info


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict, *,
               static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk: Any = None, sourceinfo: str | None = None,
               signature: inspect.Signature | None = None):
    """What errors say about `fun` traced for `traced_for`: its name, source line and the
    names of its arguments (positional by parameter name, keyword by key)."""
    try:
        params = list((signature or inspect.signature(fun)).parameters)
    except (TypeError, ValueError):
        params = []
    names = [params[i] if i < len(params) else f"args[{i}]" for i in range(len(args))
             if i not in static_argnums]
    names += [k for k in kwargs if k not in static_argnames]
    return fun_debug_info(fun, names, traced_for)


class _Store:
    """A value set once the wrapped function has run (JAX's `out_tree` thunk)."""

    def __init__(self):
        self._value = None

    def store(self, value: Any) -> None:
        self._value = value

    def __call__(self) -> Any:
        if self._value is None:
            raise ValueError("the output tree is known only once the flattened function has "
                             "been called")
        return self._value


def flatten_fun(fun: Any, in_tree: PyTreeDef, *static_args: Any, use_eq_store: bool = False,
                unk_names: bool = False) -> tuple[Any, Callable[[], PyTreeDef]]:
    """`fun` (a linear_util WrappedFun taking (args, kwargs)) as a function of the flat leaves
    of `in_tree`, returning flat leaves; the second result, called after it has run, gives
    the results' tree."""
    out_tree = _Store()

    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, list(leaves))
        outs, tree = tree_flatten(fun.call_wrapped(*args, **kwargs))
        out_tree.store(tree)
        return outs
    flat.__name__ = getattr(fun, "__name__", "flat_fun")
    return type(fun)(flat, {}, getattr(fun, "debug_info", None)), out_tree


def flatten_fun_nokwargs(fun: Any, in_tree: PyTreeDef) -> tuple[Any, Callable[[], PyTreeDef]]:
    """flatten_fun for a function of positional arguments only (`in_tree` of the args tuple)."""
    out_tree = _Store()

    def flat(*leaves):
        outs, tree = tree_flatten(fun.call_wrapped(*tree_unflatten(in_tree, list(leaves))))
        out_tree.store(tree)
        return outs
    flat.__name__ = getattr(fun, "__name__", "flat_fun")
    return type(fun)(flat, {}, getattr(fun, "debug_info", None)), out_tree


__all__ = ["debug_info", "flatten_fun", "flatten_fun_nokwargs"]
