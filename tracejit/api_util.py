"""`jax.api_util`: helpers for code that traces functions itself: flattening a wrapped function's
pytree arguments and results (for jax.interpreters.partial_eval), and the debug info tracing
records. User-facing layer over tracejit.core (pytrees, DebugInfo) and extend.linear_util."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from .core.pytree import PyTreeDef, tree_flatten, tree_unflatten
from .core.trace import DebugInfo, fun_debug_info
from .extend.linear_util import WrappedFun


def _with_out_tree(f: WrappedFun, call: Callable) -> tuple[WrappedFun, Callable[[], PyTreeDef]]:
    """f as a function of flat arguments returning flat results, and a thunk giving the
    results' tree once it has run."""
    store: list[PyTreeDef] = []

    def flat(*args_flat):
        leaves, tree = tree_flatten(call(*args_flat))
        store[:] = [tree]
        return leaves

    def out_tree() -> PyTreeDef:
        if not store:
            raise ValueError("the output tree of a flattened function is known only after the "
                             "function has been called (traced)")
        return store[0]
    return WrappedFun(flat, {}, f.debug_info), out_tree


def flatten_fun_nokwargs(f: WrappedFun, in_tree: PyTreeDef
                         ) -> tuple[WrappedFun, Callable[[], PyTreeDef]]:
    """f taking the leaves of the positional-arguments tuple `in_tree`, returning leaves."""
    return _with_out_tree(f, lambda *xs: f.call_wrapped(*tree_unflatten(in_tree, xs)))


def flatten_fun(f: WrappedFun, in_tree: PyTreeDef) -> tuple[WrappedFun, Callable[[], PyTreeDef]]:
    """f taking the leaves of the tree `in_tree` of (args, kwargs), returning leaves."""
    def call(*xs):
        args, kwargs = tree_unflatten(in_tree, xs)
        return f.call_wrapped(*args, **kwargs)
    return _with_out_tree(f, call)


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any], *,
               static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk: Any = None, sourceinfo: str | None = None,
               signature: inspect.Signature | None = None) -> DebugInfo:
    """What tracing `fun` for `traced_for` records for error messages: its name, source and
    argument names."""
    try:
        sig = signature or inspect.signature(fun)
        names = [p.name for p in sig.parameters.values()]
    except (TypeError, ValueError):
        names = []
    return fun_debug_info(fun, names, traced_for)
