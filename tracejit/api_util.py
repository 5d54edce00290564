"""`jax.api_util`: the helpers JAX's own transformations use to flatten a wrapped function's
pytree arguments and results (jax.interpreters.partial_eval, numpyro) and to describe it in
errors (`debug_info`). User-facing layer, over core's pytrees and debug info and
extend.linear_util."""
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
    flat.__name__ = getattr(f, "__name__", "flat_fun")

    def out_tree() -> PyTreeDef:
        if not store:
            raise ValueError("the output tree of a flattened function is known only after the "
                             "function has been called (traced)")
        return store[0]
    return WrappedFun(flat, {}, f.debug_info), out_tree


def flatten_fun_nokwargs(f: WrappedFun, in_tree: PyTreeDef
                         ) -> tuple[WrappedFun, Callable[[], PyTreeDef]]:
    """f taking the leaves of the positional-arguments tuple `in_tree`, returning leaves."""
    return _with_out_tree(f, lambda *xs: f.call_wrapped(*tree_unflatten(in_tree, list(xs))))


def flatten_fun(f: WrappedFun, in_tree: PyTreeDef, *static_args: Any, use_eq_store: bool = False,
                unk_names: bool = False) -> tuple[WrappedFun, Callable[[], PyTreeDef]]:
    """f taking the leaves of the tree `in_tree` of (args, kwargs), returning leaves. (JAX's
    extra arguments tune its caches; they change nothing here.)"""
    def call(*xs):
        args, kwargs = tree_unflatten(in_tree, list(xs))
        return f.call_wrapped(*args, **kwargs)
    return _with_out_tree(f, call)


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any], *,
               static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk: Any = None, sourceinfo: str | None = None,
               signature: inspect.Signature | None = None) -> DebugInfo:
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


__all__ = ["debug_info", "flatten_fun", "flatten_fun_nokwargs"]
