"""Rematerialisation policies for `checkpoint` (jax.checkpoint_policies), `checkpoint_name`, and
`saved_residuals`, which lists what reverse mode keeps from the forward pass. A policy is
called as policy(primitive, *input_avals, **params) for each equation of the forward pass; its
outputs are saved where it answers True (or Saveable / Offloadable), recomputed otherwise.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, Callable, NamedTuple

from ..core.avals import ShapedArray
from ..core.jaxpr import Literal
from ..core.linearize import linearize_flat
from ..core.pytree import leaf_names, tree_flatten, tree_leaves, tree_map, tree_unflatten
from ..core.trace import fun_debug_info, get_aval, trace_to_jaxpr
from ..lax.elementwise import name_p
from ..lax.linalg import dot_general_p


class RecomputeType:
    """A policy's answer: recompute this value in the backward pass."""

    def __repr__(self) -> str:
        return "Recompute"


class SaveableType:
    """A policy's answer: save this value from the forward pass."""

    def __repr__(self) -> str:
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A policy's answer: save this value in another memory (on one CPU device: saved)."""
    src: str
    dst: str


def is_saved(answer: Any) -> bool:
    """Whether a policy's answer (a bool, Saveable, Recompute or Offloadable) saves."""
    if isinstance(answer, bool):
        return answer
    if answer is Saveable or isinstance(answer, Offloadable):
        return True
    if answer is Recompute:
        return False
    raise TypeError(f"A checkpoint policy must return a bool, Saveable, Recompute or "
                    f"Offloadable, got {answer!r}")


# --- the policies --------------------------------------------------------------------------

def everything_saveable(*_, **__) -> bool:
    """Save everything: reverse mode as without checkpoint."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Recompute everything (checkpoint's behaviour without a policy)."""
    return False


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Save the results of matrix products (only those without batch dimensions if asked)."""
    only_if_no_batch_dims: bool

    def __call__(self, prim, *avals, **params) -> bool:
        if prim is not dot_general_p:
            return False
        if not self.only_if_no_batch_dims:
            return True
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = DotsSaveable(True)


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable:
    """dots_with_no_batch_dims_saveable, the saved values offloaded to another memory."""
    def policy(prim, *_, **params):
        if DotsSaveable(True)(prim, **params):
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    saveable_names: frozenset

    def __call__(self, prim, *_, **params) -> bool:
        return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    names: frozenset

    def __call__(self, prim, *_, **params) -> bool:
        return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names_which_can_be_saved: str) -> Callable:
    """Save only values named (checkpoint_name) with one of these names."""
    return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save: str) -> Callable:
    """Save only named values, but not those with one of these names."""
    return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_anything_except_these_names(*names_not_to_save: str) -> Callable:
    """(As JAX 0.10 implements it: saves everything, these names included.)"""
    return lambda *_, **__: True


def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                      offload_src: str, offload_dst: str) -> Callable:
    """save_only_these_names, with a second set of names offloaded to another memory."""
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    if saved & offloaded:
        raise ValueError(
            "The names should be exclusive and should not intersect in "
            "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
            f"names_which_can_be_saved={saved}, names_which_can_be_offloaded={offloaded} and "
            f"the intersection={saved & offloaded}")

    def policy(prim, *_, **params):
        if prim is name_p and params["name"] in saved:
            return Saveable
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Save what either policy saves (both must answer with bools)."""
    def policy(prim, *args, **params):
        out1, out2 = policy_1(prim, *args, **params), policy_2(prim, *args, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError(
                "The return value of the policies should be a boolean. Got: "
                f"{out1} and {out2}. Please write a custom policy function directly, rather "
                "than using this helper function.")
        return out1 or out2
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=checkpoint_dots_with_no_batch_dims,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)


def checkpoint_name(x: Any, name: str) -> Any:
    """x (a pytree), its leaves marked with `name` for the policies that save by name."""
    return tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# --- what reverse mode saves ---------------------------------------------------------------

def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[ShapedArray, str]]:
    """The values reverse mode of f at args saves for its backward pass, each with where it
    comes from (an argument, a constant, or an equation and its source line), as JAX lists
    them: arguments in order, then equations' outputs in program order."""
    leaves, in_tree = tree_flatten((args, kwargs))
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names = [n for i, a in enumerate(args)
             for n in leaf_names(params[i] if i < len(params) else f"args[{i}]", a)]
    names += [n for k in sorted(kwargs) for n in leaf_names(k, kwargs[k])]

    def flat_f(*xs):
        a, kw = tree_unflatten(in_tree, xs)
        return tree_leaves(f(*a, **kw))

    def residuals(*xs):
        _, lin = linearize_flat(flat_f, xs)
        return list(lin.jaxpr.consts)

    closed = trace_to_jaxpr(residuals, [get_aval(x) for x in leaves],
                            fun_debug_info(f, names, "saved_residuals"))
    jaxpr = closed.jaxpr
    res = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    out: list[tuple[ShapedArray, str]] = [(v.aval, "from a literal") for v in jaxpr.outvars
                                          if isinstance(v, Literal)]
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res]
    out += [(v.aval, f"from the argument {names[i]}" if i < len(names) and names[i]
             else f"from the argument at flattened index {i}")
            for i, v in enumerate(jaxpr.invars) if v in res]
    for eqn in jaxpr.eqns:
        src = eqn.source_info.summary() if eqn.source_info is not None else "<unknown>"
        for v in eqn.outvars:
            if v not in res:
                continue
            if eqn.primitive is name_p:
                out.append((v.aval, f"named '{eqn.params['name']}' from {src}"))
            elif eqn.primitive.name == "jit":
                out.append((v.aval, f"output of jitted function '{eqn.params['name']}' from "
                                    f"{src}"))
            else:
                out.append((v.aval, f"output of {eqn.primitive.name} from {src}"))
    return out


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Print saved_residuals(f, *args, **kwargs), one `type source` line each, as JAX does."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")
