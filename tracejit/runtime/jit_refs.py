"""jit of functions that use mutable references (Refs): the Refs passed as arguments and those
the function closes over become extra operands in and results out of the compiled program, and
their final values are written back after the call (core/refs.py has the mechanism)."""
from __future__ import annotations

from typing import Any

from ..core.pytree import tree_flatten, tree_leaves, tree_unflatten
from ..core.refs import (Ref, check_no_refs, current_values, is_new_ref_for, ref_scope,
                         thread_refs)
from ..core.trace import fun_debug_info


def call_with_refs(jitted: Any, args: tuple, kwargs: dict) -> Any:
    """A call of `jitted` once Refs exist in the process."""
    leaves, tree = tree_flatten((args, kwargs))
    ref_leaves = tuple(i for i, x in enumerate(leaves) if isinstance(x, Ref))
    if not ref_leaves:
        try:
            return jitted._call(args, kwargs)
        except Exception as e:  # noqa: BLE001 - only a closed-over Ref goes on below
            if not is_new_ref_for(e, jitted):
                raise
    _check_not_aliased(jitted, args, kwargs, leaves, ref_leaves)
    plain = tree_unflatten(tree, [leaves[i]._read() if i in ref_leaves else x
                                  for i, x in enumerate(leaves)])
    inners = jitted.__dict__.setdefault("_ref_inners", {})

    def run(plan: list[Ref]):
        inner = inners.get(tuple(plan))
        if inner is None:
            inner = inners[tuple(plan)] = _threaded(jitted, tuple(plan))
        out, closed_finals, arg_finals = inner(*plain[0], _ref_closed=current_values(plan),
                                               _ref_leaves=ref_leaves, **plain[1])
        for i, v in zip(ref_leaves, arg_finals):
            leaves[i]._write(v)
        return out, closed_finals
    return thread_refs(jitted, run)


def _threaded(jitted: Any, plan: tuple[Ref, ...]) -> Any:
    """A jitted function of (the user's arguments with Refs' values in their place, the values
    of the closed-over Refs in plan) -> (the output, the final values of those, and of the
    argument Refs)."""
    fun = jitted.fun
    debug = fun_debug_info(fun, [], "jit")

    def threaded(*args, _ref_closed, _ref_leaves, **kwargs):
        with ref_scope(jitted, plan, _ref_closed) as scope:
            leaves, tree = tree_flatten((args, kwargs))
            # the function sees fresh Refs holding its operands (so one trace serves any Refs)
            proxies = {i: Ref(leaves[i]) for i in _ref_leaves}
            a, kw = tree_unflatten(tree, [proxies.get(i, x) for i, x in enumerate(leaves)])
            out = fun(*a, **kw)
            check_no_refs(tree_leaves(out), debug.fun_name, debug.fun_source, "jit")
            return (out, [scope.values[r] for r in plan],
                    [scope.values[proxies[i]] for i in _ref_leaves])

    threaded.__name__ = threaded.__qualname__ = jitted.fun_name
    return type(jitted)(threaded, static_argnums=jitted.static_argnums,
                        static_argnames=tuple(jitted.static_argnames) + ("_ref_leaves",),
                        keep_unused=jitted.keep_unused, backend=jitted.backend)


def _check_not_aliased(jitted: Any, args: tuple, kwargs: dict, leaves: list,
                       ref_leaves: tuple[int, ...]) -> None:
    """JAX's error for one Ref passed twice."""
    seen: dict[int, int] = {}
    for i in ref_leaves:
        if id(leaves[i]) in seen:
            static, static_kw, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
            names = jitted._arg_names(args, dyn_kwargs)
            dyn = tree_leaves((dyn_args, dyn_kwargs))
            where = [names[k] for k, x in enumerate(dyn) if x is leaves[i]]
            debug = fun_debug_info(jitted.fun, [], "jit")
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {debug.fun_name} at {debug.fun_source} for jit "
                f"the mutable array reference of type {leaves[i].aval!r} appeared at both "
                f"{where[0]} and {where[1]}.")
        seen[id(leaves[i])] = i
