"""User-defined batching: custom_vmap (a function whose vmap is the user's rule) and
sequential_vmap (one that vmap runs as a loop over the batch).

As custom_jvp does, the function is staged into a call primitive carrying the rule as a param,
so the rule applies wherever the call is later batched (also inside a jit's jaxpr); otherwise
the call runs its body (inlined by the compiler). Forward mode differentiates the body and the
rule together (JAX's jvp-of-rule); reverse mode is refused, as in JAX.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from ..core.batching import batch_flat, move_to_front
from ..core.jvp_trace import jvp_flat, jvp_jaxpr
from ..core.pytree import tree_flatten, tree_map, tree_structure, tree_unflatten
from ..core.primitive import Primitive
from ..core.rules import (Zero, axis_size, bdim_at_front, differentiable, instantiate,
                          not_mapped, tangent_aval)
from ..core.trace import get_aval
from ..lax.control_flow.loops import map as lax_map
from .custom import _call_abstract, _call_impl, _stage, forward_attr

# --- the call primitive -------------------------------------------------------------------
#
# params: call_jaxpr (the function), rule(axis_size, in_batched, *args) -> (outs, out_batched)
# on flat lists, the batched arguments (and outputs) with their batch dimension first

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.def_abstract_eval(_call_abstract)
custom_vmap_call_p.def_impl(_call_impl)


def _custom_vmap_call_batch(vals, dims, *, call_jaxpr, rule):
    size = axis_size(vals, dims)
    outs, out_batched = rule(size, [d is not not_mapped for d in dims],
                             *move_to_front(vals, dims))
    for k, (o, b, aval) in enumerate(zip(outs, out_batched, call_jaxpr.out_avals)):
        want = (size, *aval.shape) if b else aval.shape
        if tuple(get_aval(o).shape) != tuple(want):  # (JAX fails later, as an IndexError)
            said = f"batched (axis of length {size} first)" if b else "not batched"
            raise ValueError(
                f"custom vmap rule ({_rule_name(rule)}) output {k} has shape "
                f"{tuple(get_aval(o).shape)} where {tuple(want)} was expected: the function's "
                f"output {k} has shape {tuple(aval.shape)} and the rule says it is {said}.")
    return list(outs), [0 if b else not_mapped for b in out_batched]


def _custom_vmap_call_jvp(primals, tangents, *, call_jaxpr, rule):
    """Forward mode: a custom_vmap call of the body's JVP, whose rule is the JVP of the rule —
    JAX's construction: the rule sees a value as batched where its primal and tangent both
    are, and the rest of the batch (primals or tangents batched alone) is vmapped over it."""
    n = len(primals)
    nz = [type(t) is not Zero and differentiable(get_aval(p)) for p, t in zip(primals, tangents)]
    jvp_call, out_nz = jvp_jaxpr(call_jaxpr, nz, [True] * len(call_jaxpr.out_avals))
    t_in = [instantiate(t) for t, z in zip(tangents, nz) if z]

    def jvp_rule(size, in_batched, *vals):
        p_batched = in_batched[:n]
        it = iter(in_batched[n:])
        t_batched = [next(it) if z else False for z in nz]
        mutual = [p and t for p, t in zip(p_batched, t_batched)]
        extra = [not_mapped if m or not b else 0 for m, b in zip(mutual, in_batched[:n])]
        extra += [not_mapped if m or not b else 0
                  for m, b, z in zip(mutual, t_batched, nz) if z]
        rule_batched: list = []

        def to_jvp(*xs):
            outs, out_b = rule(size, mutual, *xs)
            rule_batched[:] = out_b
            return outs

        def both(*xs):
            ts = iter(xs[n:])
            p_out, t_out = jvp_flat(to_jvp, xs[:n],
                                    [next(ts) if z else Zero(tangent_aval(get_aval(p)))
                                     for p, z in zip(xs[:n], nz)])
            return p_out + [instantiate(t) for t, z in zip(t_out, out_nz) if z]

        outs, out_dims = batch_flat(both, vals, extra, axis=None)
        outs = [o if d is not_mapped else bdim_at_front(o, d, size)
                for o, d in zip(outs, out_dims)]
        # (a tangent output is batched where its primal output is, by the rule's word)
        b_nz = [b for b, z in zip(rule_batched, out_nz) if z]
        out_batched = [b or d is not not_mapped
                       for b, d in zip(rule_batched + b_nz, out_dims)]
        return outs, out_batched

    jvp_rule.__name__ = f"jvp of {_rule_name(rule)}"
    outs = custom_vmap_call_p.bind(*primals, *t_in, call_jaxpr=jvp_call, rule=jvp_rule)
    n_out = len(call_jaxpr.out_avals)
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if z else Zero(tangent_aval(a))
                          for z, a in zip(out_nz, call_jaxpr.out_avals)]


def _custom_vmap_call_linearize(primals, tangents, **params):
    raise ValueError(  # (JAX's words: its custom_vmap has no partial-evaluation rule)
        "Linearization failed to produce known values for all output primals. This is "
        "typically caused by attempting to differentiate a function uses an operation that "
        "does not support reverse-mode autodiff.")


custom_vmap_call_p.def_jvp(_custom_vmap_call_jvp)
custom_vmap_call_p.def_linearize(_custom_vmap_call_linearize)
custom_vmap_call_p.def_batch(_custom_vmap_call_batch)


# --- the user's API ---------------------------------------------------------------------

def _rule_name(rule: Callable) -> str:
    return getattr(rule, "__name__", "<unnamed rule>")


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments as positional ones, by fun's signature (JAX's api_util rule)."""
    if isinstance(fun, functools.partial):
        fun = lambda *args, **kwargs: None  # noqa: E731  (a partial's signature is opaque)
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    passed = [k for k in bound.kwargs if k in kwargs]
    if passed:
        raise TypeError("The following keyword arguments could not be resolved to positions: "
                        f"{', '.join(passed)}")
    return bound.args


class custom_vmap:  # noqa: N801 - JAX's name
    """A function with a user-defined vmap rule: `f.def_vmap(rule)` with
    rule(axis_size, in_batched, *args) -> (out, out_batched), where in_batched is a list (one
    pytree of bools per argument) saying which argument leaves are batched (those have the
    batch axis, of length axis_size, first) and out_batched is a pytree of bools of the
    output's structure. Forward-mode differentiation works; reverse mode raises (wrap the
    function in custom_vjp for it)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    __getattr__ = forward_attr

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Set the rule (returned unchanged, so it can be used as a decorator)."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "<unnamed function>")
        try:
            args = _resolve_kwargs(self.fun, args, kwargs)
        except TypeError as e:
            raise TypeError("The input arguments to the custom_vmap-decorated function "
                            f"{name} could not be resolved to positional-only arguments. "
                            f"Binding failed with the error:\n{e}") from e
        if not self.vmap_rule:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        closed, consts, out_tree, leaves = _stage(self.fun, args, "custom_vmap")
        in_tree = tree_structure(args)
        rule, num_consts = self.vmap_rule, len(consts)

        def flat_rule(size, in_batched, *vals):
            if any(in_batched[:num_consts]):
                raise ValueError(
                    f"custom_vmap function {name} closes over a value that vmap batches; "
                    "pass it to the function as an argument, where its rule sees it.")
            user_args = tree_unflatten(in_tree, vals[num_consts:])
            batched = tree_unflatten(in_tree, list(in_batched[num_consts:]))
            out, out_batched = rule(size, list(batched), *user_args)
            flat_out, tree = tree_flatten(out)
            flat_batched, b_tree = tree_flatten(out_batched)
            if tree != b_tree:
                raise ValueError(
                    "structure of output value and output batching specification returned "
                    f"by custom vmap rule ({_rule_name(rule)}) do not match.\n"
                    f"Output values: {tree}\nBatching spec: {b_tree}")
            if tree != out_tree:
                raise ValueError(
                    f"structure of output returned by custom vmap rule ({_rule_name(rule)}) "
                    "does not match that of original custom-vmapped function.\n"
                    f"Original output: {out_tree}\nRule output: {tree}")
            return flat_out, [bool(b) for b in flat_batched]

        flat_rule.__name__ = _rule_name(rule)
        outs = custom_vmap_call_p.bind(*consts, *leaves, call_jaxpr=closed, rule=flat_rule)
        return tree_unflatten(out_tree, outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """f as a custom_vmap whose vmap runs f once per batch element, in a loop (lax.map over the
    batched arguments; the unbatched ones are passed as they are): for functions that do not
    batch, or should not."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        del axis_size
        args = list(args)
        mapped = tree_map(lambda b, x: x if b else None, in_batched, args)
        fixed = tree_map(lambda b, x: None if b else x, in_batched, args)

        def one(mapped_args):
            return f(*tree_map(lambda b, m, x: m if b else x, in_batched, mapped_args, fixed))

        out = lax_map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return f
