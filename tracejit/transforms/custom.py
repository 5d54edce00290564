"""User-defined differentiation: custom_jvp, custom_vjp, and checkpoint (rematerialisation).

Each stages its function into a call primitive carrying the user's rules as params, so the
rules apply wherever the call is later transformed (also after jit has staged it).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

from ..core import errors
from ..core.batching import batch_flat, batch_jaxpr, current_axis
from ..core.interpret import eval_jaxpr
from ..core.avals import ShapedArray
from ..core.dce import compress, dce, dce_closed, keep_invars
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Var
from ..core.jaxpr_util import closure_convert, eval_closed, trace_closed
from ..core.jvp_trace import JVPTrace, jvp_jaxpr
from ..core.linearize import LinearizeTrace, linearize_jaxpr
from ..core.primitive import Primitive
from ..core.pytree import (keystr, register_pytree_node, tree_flatten,
                           tree_flatten_with_path, tree_leaves, tree_map, tree_unflatten)
from ..core.rules import (
    Zero,
    axis_size,
    bdim_at_front,
    differentiable,
    instantiate,
    is_undefined,
    not_mapped,
    tangent_aval,
)
from ..core.trace import (EvalTrace, Tracer, find_top_trace, full_raise, fun_debug_info,
                          get_aval, trace_to_jaxpr)
from ..core.transpose import call_transpose
from .checkpoint_policies import is_saved


def _call_impl(*args, call_jaxpr: ClosedJaxpr, **_):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _call_abstract(*avals, call_jaxpr: ClosedJaxpr, **_):
    return call_jaxpr.out_avals


def _stage(fun: Callable, args: Sequence[Any], kind: str) -> tuple[ClosedJaxpr, list, Any, list]:
    """Trace fun(*args) to a jaxpr; returns (jaxpr, its closure operands, out tree, arg leaves)."""
    leaves, in_tree = tree_flatten(args)
    out_tree = []

    def flat_fun(*xs):
        out, tree = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        out_tree.append(tree)
        return out

    debug = fun_debug_info(fun, [f"args[{i}]" for i in range(len(leaves))], kind)
    closed, consts = closure_convert(trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves],
                                                    debug))
    return closed, consts, out_tree[0], leaves


def _resolve_nondiff(argnums: Sequence[int], args: tuple) -> tuple[tuple, tuple]:
    nondiff = tuple(args[i] for i in argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in argnums)
    return nondiff, diff


def _closure_error(kind: str, rule: str) -> TypeError:
    return TypeError(f"Detected differentiation of a {kind} function with respect to a "
                     f"closed-over value. That isn't supported because the custom {rule} "
                     f"rule only specifies how to differentiate the {kind} function with "
                     "respect to explicit input parameters. Pass the value as an explicit "
                     "argument instead.")


class SymbolicZero:
    """A zero tangent or cotangent as custom rules with `symbolic_zeros=True` see it: no array,
    only its type (shape, dtype, ... are read from `aval`). A rule may also return one."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return "SymbolicZero"

    def __getattr__(self, name: str):
        if name == "aval":  # (not yet set: unpickling, copying)
            raise AttributeError(name)
        try:
            return getattr(self.aval, name)
        except AttributeError:
            raise AttributeError(f"SymbolicZero has no attribute {name}") from None

    @staticmethod
    def from_primal_value(val: Any) -> SymbolicZero:
        return SymbolicZero(tangent_aval(get_aval(val)))


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """Zero tangents for the pytree `val`: SymbolicZeros, or arrays of zeros."""
    def zero(x):
        aval = tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else instantiate(Zero(aval))
    return tree_map(zero, val)


@dataclasses.dataclass
class CustomVJPPrimal:
    """An argument of a custom_vjp fwd rule defined with `symbolic_zeros=True`: the primal
    value, and whether it is perturbed (has a nonzero tangent)."""
    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """The values of a tree of CustomVJPPrimal records (the fwd rule's arguments under
    symbolic_zeros), without their perturbation flags."""
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value
    return tree_map(value, tree)


def _to_rule(t: Any, symbolic_zeros: bool) -> Any:
    """An internal (co)tangent as a user rule receives it."""
    if type(t) is Zero:
        return SymbolicZero(t.aval) if symbolic_zeros else instantiate(t)
    return t


def _from_rule(t: Any) -> Any:
    """A (co)tangent a user rule returned, as the interpreters take it."""
    return Zero(t.aval) if type(t) is SymbolicZero else t


def forward_attr(self: Any, name: str) -> Any:
    """A custom_* wrapper's missing `def*` attribute is its wrapped function's: the rules of
    custom_vjp(custom_vmap(f)) are defined through the outer object (JAX's custom_api_util)."""
    if name.startswith("def"):
        return getattr(self.fun, name)
    raise AttributeError(name)


def _instantiate_all(f: Callable) -> Callable:
    return lambda *args: [instantiate(o) for o in f(*args)]


# --- custom_jvp ----------------------------------------------------------------------------

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(_call_abstract)
custom_jvp_call_p.def_impl(_call_impl)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise _closure_error("custom_jvp", "JVP")
    args = primals[num_consts:]
    outs = jvp(*args, *tangents[num_consts:])
    n = len(call_jaxpr.out_avals)
    return outs[:n], outs[n:]


def _custom_jvp_call_batch(vals, dims, *, call_jaxpr, jvp, num_consts, name):
    size = axis_size(vals, dims)
    vals = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    batched, _ = batch_jaxpr(call_jaxpr, size, [True] * len(vals), True)
    axis = current_axis()  # (the rule runs later, outside this batch rule)

    def batched_jvp(*args):  # primals and tangents, all batched first
        outs, out_dims = batch_flat(_instantiate_all(jvp), args, [0] * len(args), axis)
        return [bdim_at_front(o, d, size) for o, d in zip(outs, out_dims)]

    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched, jvp=batched_jvp,
                                  num_consts=num_consts, name=name)
    return outs, [0] * len(outs)


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)
custom_jvp_call_p.def_batch(_custom_jvp_call_batch)


class custom_jvp:  # noqa: N801 - JAX's name
    """A function with a user-defined JVP rule: `f.defjvp(rule)` with
    rule(primals, tangents) -> (primal_out, tangent_out), or `f.defjvps(*per_arg_rules)`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    __getattr__ = forward_attr

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule jvp(primals, tangents) -> (primal_out, tangent_out). With
        symbolic_zeros, tangents known to be zero arrive as SymbolicZero objects (and the rule
        may return SymbolicZero for an output tangent)."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: jvps[i](tangent_i, primal_out, *primals) -> tangent part."""
        def jvp(primals, tangents):
            out = self(*primals)
            parts = [rule(t, out, *primals) for rule, t in zip(jvps, tangents)
                     if rule is not None]
            total = parts[0]
            for p in parts[1:]:
                total = tree_map(lambda a, b: a + b, total, p)
            return out, total
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"custom_jvp function {self.__name__} takes positional arguments "
                            f"only (keyword arguments {sorted(kwargs)} given).")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 "using defjvp.")
        nondiff, diff = _resolve_nondiff(self.nondiff_argnums, args)
        fun, rule, sz = self.fun, self.jvp, self.symbolic_zeros

        def full_args(diff_args):
            it = iter(diff_args)
            return [nondiff[self.nondiff_argnums.index(i)] if i in self.nondiff_argnums
                    else next(it) for i in range(len(args))]

        leaves, in_tree = tree_flatten(diff)
        n_in = len(leaves)
        out_tree = None  # the function's output structure, once it has been traced
        rule_trees = []  # the structure of the rule's primal outputs, per call of the rule

        def flat_jvp(*xs):  # tangents among xs may be Zero; output tangents may be too
            primals = tree_unflatten(in_tree, xs[:n_in])
            tangents = tree_unflatten(in_tree, [_to_rule(t, sz) for t in xs[n_in:]])
            out, t_out = rule(*nondiff, primals, tangents) if nondiff else rule(primals,
                                                                                tangents)
            out_flat, tree = tree_flatten(out)
            t_flat, t_tree = tree_flatten(t_out)
            rule_trees.append(tree)
            if t_tree != tree or (out_tree is not None and tree != out_tree):
                raise TypeError(
                    "Custom JVP rule must produce primal and tangent outputs with equal "
                    f"container (pytree) structures, but got {tree} and {t_tree} respectively "
                    f"(the function's output structure is {out_tree or tree}).")
            t_flat = [_from_rule(t) for t in t_flat]
            for p, t in zip(out_flat, t_flat):
                pa, ta = get_aval(p), (t.aval if type(t) is Zero else get_aval(t))
                want = pa.to_tangent_aval()
                if pa.shape != ta.shape or (type(t) is not Zero and ta.dtype != want.dtype):
                    raise TypeError(  # (JAX's words and class)
                        "Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {want.str_short()} (tangent "
                        f"type of {pa.str_short()}) but got {ta.str_short()}.")
            return out_flat + t_flat

        # As JAX does, the function itself runs only where its value is needed: on concrete
        # values it runs as is (so Python control flow in it works), and under forward or
        # reverse differentiation its rule replaces it; it is traced only to be staged.
        trace = find_top_trace(leaves)
        if type(trace) is EvalTrace:
            out = fun(*args)
            if not any(isinstance(o, Tracer) for o in tree_leaves(out)):
                return out  # (else it closed over a traced value: staged below, which says so)
        elif isinstance(trace, (JVPTrace, LinearizeTrace)):
            return self._differentiate(trace, leaves, in_tree, full_args, flat_jvp, rule_trees)
        closed, consts, out_tree, leaves = _stage(lambda *d: fun(*full_args(d)), diff,
                                                   "custom_jvp")
        outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=closed, jvp=flat_jvp,
                                      num_consts=len(consts), name=self.__name__)
        return tree_unflatten(out_tree, outs)

    def _differentiate(self, trace, leaves, in_tree, full_args, flat_jvp, rule_trees):
        """The call on the tracers of a JVP (or linearize) trace: the rule gives primal and
        tangent outputs; with all input tangents zero the call runs on the primals alone."""
        tracers = [full_raise(trace, x) for x in leaves]
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            out = self(*full_args(tree_unflatten(in_tree, primals)))
            out_flat, out_tree = tree_flatten(out)
            return tree_unflatten(out_tree, [trace.tracer_type(trace, o, Zero.from_primal(o))
                                             for o in out_flat])
        outs = flat_jvp(*primals, *tangents)
        if any(isinstance(o, Tracer) and o._trace.main is trace.main for o in outs):
            raise _closure_error("custom_jvp", "JVP")  # the rule read a closed-over tracer
        n = len(outs) // 2
        wrapped = [trace.tracer_type(trace, p, t) for p, t in zip(outs[:n], outs[n:])]
        return tree_unflatten(rule_trees[-1], wrapped)


# --- custom_vjp ----------------------------------------------------------------------------

_PY_SCALARS = (bool, int, float, complex)
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(_call_abstract)
custom_vjp_call_p.def_impl(_call_impl)

def _custom_vjp_call_jvp(primals, tangents, **params):
    raise errors.custom_vjp_jvp_error()


def _custom_vjp_call_linearize(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise _closure_error("custom_vjp", "VJP")
    args = primals[num_consts:]
    n_out = len(call_jaxpr.out_avals)
    outs = fwd(tuple(type(t) is not Zero for t in tangents[num_consts:]), *args)
    out, res = outs[:n_out], outs[n_out:]
    diff = [differentiable(get_aval(a)) for a in args]
    t_in = [instantiate(t) for t, d in zip(tangents[num_consts:], diff) if d]
    t_out = custom_lin_p.bind(*res, *t_in, bwd=bwd, num_res=len(res), diff=tuple(diff),
                              in_avals=tuple(get_aval(a) for a in args),
                              out_avals=tuple(tangent_aval(get_aval(o)) for o in out))
    return out, t_out


def _custom_vjp_call_batch(vals, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
    size = axis_size(vals, dims)
    vals = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    batched, _ = batch_jaxpr(call_jaxpr, size, [True] * len(vals), True)
    axis = current_axis()  # (fwd and bwd run later, outside this batch rule)

    def batched_all(f):  # every input and output batched first
        def g(*args):
            outs, out_dims = batch_flat(f, args, [0] * len(args), axis)
            return [bdim_at_front(o, d, size) for o, d in zip(outs, out_dims)]
        return g

    def batched_fwd(perturbed, *args):
        return batched_all(functools.partial(fwd, perturbed))(*args)

    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched, fwd=batched_fwd,
                                  bwd=batched_all(_instantiate_all(bwd)),
                                  num_consts=num_consts, name=name)
    return outs, [0] * len(outs)


custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)
custom_vjp_call_p.def_linearize(_custom_vjp_call_linearize)
custom_vjp_call_p.def_batch(_custom_vjp_call_batch)

# the tangent side of a custom_vjp call: linear in its tangents, transposed by the bwd rule
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_impl(*args, **params):
    raise errors.custom_vjp_jvp_error()


def _custom_lin_transpose(cts, *args, bwd, num_res, diff, in_avals, out_avals):
    res = args[:num_res]
    cts_in = bwd(*res, *cts)
    return [None] * num_res + [ct for ct, d in zip(cts_in, diff) if d]


custom_lin_p.def_impl(_custom_lin_impl)
custom_lin_p.def_jvp(_custom_vjp_call_jvp)
custom_lin_p.def_transpose(_custom_lin_transpose)


class custom_vjp:  # noqa: N801 - JAX's name
    """A function with a user-defined VJP: `f.defvjp(fwd, bwd)` with fwd(*args) ->
    (out, residuals) and bwd(residuals, out_cotangent) -> one cotangent per argument."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    __getattr__ = forward_attr

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """Set fwd(*args) -> (out, residuals) and bwd(residuals, out_ct) -> arg cotangents.
        With symbolic_zeros, fwd's arguments are CustomVJPPrimal records (value, perturbed),
        zero output cotangents reach bwd as SymbolicZero, and bwd may return SymbolicZero."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = symbolic_zeros

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"custom_vjp function {self.__name__} takes positional arguments "
                            f"only (keyword arguments {sorted(kwargs)} given).")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 "using defvjp.")
        nums = self.nondiff_argnums
        nondiff, diff = _resolve_nondiff(nums, args)

        def full_args(diff_args):
            it = iter(diff_args)
            return [nondiff[nums.index(i)] if i in nums else next(it) for i in range(len(args))]

        fun, fwd, bwd, sz = self.fun, self.fwd, self.bwd, self.symbolic_zeros
        closed, consts, out_tree, leaves = _stage(lambda *d: fun(*full_args(d)), diff,
                                                   "custom_vjp")
        in_tree = tree_flatten(diff)[1]
        res_tree: list = []

        def flat_fwd(perturbed, *xs):
            if sz:
                xs = [CustomVJPPrimal(x, p) for x, p in zip(xs, perturbed)]
            out, res = fwd(*full_args(tree_unflatten(in_tree, xs)))
            out_flat, tree = tree_flatten(out)
            if tree != out_tree:
                raise TypeError(f"Custom VJP fwd rule {getattr(fwd, '__name__', fwd)} must "
                                "produce a pair (list or tuple of length two) where the first "
                                "element represents the primal output (equal to the output of "
                                f"the custom_vjp-decorated function {self.__name__}), but the "
                                f"output structures differ: {tree} and {out_tree}.")
            res_flat, tree = tree_flatten(res)
            # Python scalars among the residuals reach bwd as they are (JAX keeps them as
            # literals): equinox passes its `perturbed` flags to bwd this way and branches on
            # them in Python
            static = {i: r for i, r in enumerate(res_flat) if type(r) in _PY_SCALARS}
            res_tree[:] = [(tree, static)]
            return out_flat + [r for i, r in enumerate(res_flat) if i not in static]

        def flat_bwd(*xs):  # output cotangents among xs may be Zero
            tree, static = res_tree[0]
            n_res = tree.num_leaves - len(static)
            traced = iter(xs[:n_res])
            res = tree_unflatten(tree, [static[i] if i in static else next(traced)
                                        for i in range(tree.num_leaves)])
            ct = tree_unflatten(out_tree, [_to_rule(t, sz) for t in xs[n_res:]])
            cts = bwd(*nondiff, res, ct)
            if not isinstance(cts, (tuple, list)) or len(cts) != len(diff):
                raise TypeError(
                    "Custom VJP bwd rule must produce an output with the same container "
                    "(pytree) structure as the args tuple of the primal function, and in "
                    "particular must produce a tuple of length equal to the number of "
                    f"arguments to the primal function, but got bwd output structure "
                    f"{tree_flatten(cts)[1]} for primal input structure {in_tree}.")
            flat = []
            for ct_arg, arg in zip(cts, diff):
                arg_leaves, arg_tree = tree_flatten(arg)
                if ct_arg is None:  # no cotangent: zeros
                    flat += [instantiate(Zero(tangent_aval(get_aval(a)))) for a in arg_leaves]
                    continue
                ct_leaves, ct_tree = tree_flatten(ct_arg)
                if ct_tree != arg_tree:
                    raise TypeError(f"Custom VJP bwd rule produced a cotangent of structure "
                                    f"{ct_tree} for an argument of structure {arg_tree}.")
                flat += [instantiate(_from_rule(t)) for t in ct_leaves]
            for k, (ct_arg, arg) in enumerate(zip(cts, diff)):
                if ct_arg is not None:
                    _check_bwd_shapes(k, ct_arg, arg)
            return flat

        outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=closed, fwd=flat_fwd,
                                      bwd=flat_bwd, num_consts=len(consts), name=self.__name__)
        return tree_unflatten(out_tree, outs)


def _check_bwd_shapes(k: int, ct_arg, arg) -> None:
    """JAX's ValueError for a bwd rule's cotangent whose shape is not its argument's."""
    for (path, ct), a in zip(tree_flatten_with_path(ct_arg)[0], tree_flatten(arg)[0]):
        if isinstance(ct, (Zero, SymbolicZero)) or ct is None:
            continue
        want, got = tangent_aval(get_aval(a)), get_aval(ct)
        if tuple(got.shape) != tuple(want.shape):
            raise ValueError(
                "Custom VJP bwd rule must produce an output with the same type as the args "
                f"tuple of the primal function, but at output[{k}]{keystr(path)} the bwd rule "
                f"produced an output of type {_type_text(got)} corresponding to an input of "
                f"type {_type_text(get_aval(a))}, so the shapes do not match")


def _type_text(aval) -> str:  # JAX's wording: float32[3]
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


# --- custom_gradient, closure conversion -------------------------------------------------

class _GradRule:
    """custom_gradient's residuals: the traced gradient function, with the values it closes
    over as the pytree's leaves (so they cross from the forward to the backward pass)."""

    def __init__(self, jaxpr: ClosedJaxpr, consts: list, in_tree: Any, out_tree: Any):
        self.jaxpr, self.consts, self.in_tree, self.out_tree = jaxpr, consts, in_tree, out_tree


register_pytree_node(_GradRule, lambda r: (r.consts, (r.jaxpr, r.in_tree, r.out_tree)),
                     lambda aux, consts: _GradRule(aux[0], list(consts), aux[1], aux[2]))


def custom_gradient(fun: Callable) -> Callable:
    """A function with its gradient given TensorFlow-style: fun(*args) returns (out, vjp) with
    vjp(out_cotangent) -> one cotangent per argument (a tuple)."""
    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, rule = fun(*args)
        out_flat, out_tree = tree_flatten((out,))

        def flat_rule(*cts):
            ct_in, in_tree = tree_flatten(rule(*tree_unflatten(out_tree, cts)))
            in_trees.append(in_tree)
            return ct_in

        in_trees: list = []
        debug = fun_debug_info(rule, ["ct"], "custom_gradient")
        traced = trace_to_jaxpr(flat_rule, [tangent_aval(get_aval(o)) for o in out_flat], debug)
        jaxpr, consts = closure_convert(traced)
        return out, _GradRule(jaxpr, consts, in_trees[0], out_tree)

    def bwd(res: _GradRule, ct):
        cts_flat, out_tree = tree_flatten((ct,))
        if out_tree != res.out_tree:
            raise TypeError(f"custom_gradient: cotangent structure {out_tree} differs from the "
                            f"output structure {res.out_tree}")
        cts = tree_unflatten(res.in_tree, eval_closed(res.jaxpr, *res.consts, *cts_flat))
        leaf = res.in_tree.num_nodes == 1 and res.in_tree.num_leaves == 1
        return (cts,) if leaf else cts

    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


def closure_convert_fun(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """jax.closure_convert: fun specialised to example_args' types, with the closed-over values
    that may be differentiated (tracers with a float tangent space) hoisted out as extra
    trailing arguments; returns (converted, hoisted values)."""
    leaves, in_tree = tree_flatten(example_args)
    out_trees: list = []

    def flat_fun(*xs):
        out, tree = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        out_trees.append(tree)
        return out

    closed = trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves],
                            fun_debug_info(fun, [], "closure_convert"))
    jaxpr = closed.jaxpr
    hoist = [isinstance(c, Tracer) and differentiable(get_aval(c)) for c in closed.consts]
    hoisted = [c for c, h in zip(closed.consts, hoist) if h]
    kept = ClosedJaxpr(type(jaxpr)([v for v, h in zip(jaxpr.constvars, hoist) if not h],
                                   [v for v, h in zip(jaxpr.constvars, hoist) if h]
                                   + jaxpr.invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info),
                       [c for c, h in zip(closed.consts, hoist) if not h])

    def converted(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        args, consts = args_and_consts[:n], args_and_consts[n:]
        flat, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError("The inputs to the closure produced by closure_convert must have "
                            "the same Pytree structure as the example arguments passed when "
                            f"closure_convert was called. Expected {in_tree}, but got {tree}")
        return tree_unflatten(out_trees[0], eval_closed(kept, *consts, *flat))
    return converted, hoisted


# --- linear_call ---------------------------------------------------------------------------

linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.def_abstract_eval(_call_abstract)
linear_call_p.def_impl(_call_impl)


def _linear_call_jvp(primals, tangents, *, call_jaxpr, transpose, num_consts, num_res):
    if any(type(t) is not Zero for t in tangents[:num_consts + num_res]):
        raise TypeError("linear_call: the residual arguments (and values the linear function "
                        "closes over) cannot be differentiated; pass values to differentiate "
                        "as linear arguments, or stop_gradient them.")
    fixed = primals[:num_consts + num_res]
    params = dict(call_jaxpr=call_jaxpr, transpose=transpose, num_consts=num_consts,
                  num_res=num_res)
    outs = linear_call_p.bind(*primals, **params)
    t_out = linear_call_p.bind(*fixed, *[instantiate(t) for t in tangents[len(fixed):]],
                               **params)
    return outs, t_out


def _linear_call_transpose(cts, *args, call_jaxpr, transpose, num_consts, num_res):
    if any(is_undefined(a) for a in args[:num_consts + num_res]):
        raise TypeError("linear_call: the function is linear in its linear arguments only, "
                        "not in its residual arguments or the values it closes over.")
    consts, res = args[:num_consts], args[num_consts:num_consts + num_res]
    t_jaxpr, t_consts = transpose()
    t_cts = [instantiate(ct) for ct in cts]
    outs = linear_call_p.bind(*t_consts, *res, *t_cts, call_jaxpr=t_jaxpr,
                              transpose=lambda: (call_jaxpr, list(consts)),
                              num_consts=len(t_consts), num_res=num_res)
    return [None] * (num_consts + num_res) + list(outs)


def _linear_call_batch(vals, dims, *, call_jaxpr, transpose, num_consts, num_res):
    """Every operand batched first; the transpose, traced later, is batched the same way (its
    own closed-over values stay unbatched)."""
    size = axis_size(vals, dims)
    vals = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    batched, _ = batch_jaxpr(call_jaxpr, size, [True] * len(vals), True)

    def batched_transpose():
        t_jaxpr, t_consts = transpose()
        n = len(t_jaxpr.in_avals) - len(t_consts)
        t_batched, _ = batch_jaxpr(t_jaxpr, size, [False] * len(t_consts) + [True] * n, True)
        return t_batched, t_consts

    outs = linear_call_p.bind(*vals, call_jaxpr=batched, transpose=batched_transpose,
                              num_consts=num_consts, num_res=num_res)
    return outs, [0] * len(outs)


linear_call_p.def_jvp(_linear_call_jvp)
linear_call_p.def_transpose(_linear_call_transpose)
linear_call_p.def_batch(_linear_call_batch)


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any,
                linear_args: Any) -> Any:
    """fun(residual_args, linear_args), where fun is linear in linear_args and transposes to
    fun_transpose(residual_args, out_cotangent) (used by linear_transpose, vjp and grad)."""
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    res_avals = [get_aval(x) for x in res_leaves]
    out_trees: list = []

    def flat_fun(*xs):
        r = tree_unflatten(res_tree, xs[:len(res_leaves)])
        out, tree = tree_flatten(fun(r, tree_unflatten(lin_tree, xs[len(res_leaves):])))
        out_trees.append(tree)
        return out

    traced = trace_to_jaxpr(flat_fun, res_avals + [get_aval(x) for x in lin_leaves],
                            fun_debug_info(fun, ["residual_args", "linear_args"], "linear_call"))
    callee, consts = closure_convert(traced)
    out_tree = out_trees[0]

    @functools.lru_cache(maxsize=None)
    def transpose() -> tuple[ClosedJaxpr, list]:
        t_trees: list = []

        def flat_t(*xs):
            r = tree_unflatten(res_tree, xs[:len(res_leaves)])
            ct, tree = tree_flatten(fun_transpose(r, tree_unflatten(out_tree,
                                                                     xs[len(res_leaves):])))
            t_trees.append(tree)
            return ct

        t_traced = trace_to_jaxpr(flat_t, res_avals + callee.out_avals,
                                  fun_debug_info(fun_transpose, [], "linear_call transpose"))
        if t_trees[0] != lin_tree:
            raise TypeError("transpose output pytree structure must match that of linear "
                            f"inputs, got output structure {t_trees[0]} and input structure "
                            f"{lin_tree}.")
        return closure_convert(t_traced)

    outs = linear_call_p.bind(*consts, *res_leaves, *lin_leaves, call_jaxpr=callee,
                              transpose=transpose, num_consts=len(consts),
                              num_res=len(res_leaves))
    return tree_unflatten(out_tree, outs)


# --- checkpoint (remat) --------------------------------------------------------------------

checkpoint_p = Primitive("checkpoint", multiple_results=True)
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)
checkpoint_p.def_impl(lambda *args, jaxpr, **_: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))


def _checkpoint_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    n_out = len(jaxpr.out_avals)
    nz = [type(t) is not Zero for t in tangents]
    jvp, out_nz = jvp_jaxpr(jaxpr, nz, [False] * n_out)
    outs = checkpoint_p.bind(*primals, *[t for t in tangents if type(t) is not Zero], jaxpr=jvp,
                             prevent_cse=prevent_cse, differentiated=True, policy=policy)
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if z else Zero(tangent_aval(a))
                          for z, a in zip(out_nz, jaxpr.out_avals)]


def _checkpoint_linearize(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    """The forward pass runs inline and keeps what the policy saves (without a policy: nothing
    but the inputs); the tangent side is a checkpoint call that recomputes the other residuals
    from the inputs and the saved values."""
    n_in, n_out = len(primals), len(jaxpr.out_avals)
    nz = [type(t) is not Zero for t in tangents]
    known, lin, _, out_nz = linearize_jaxpr(jaxpr, nz, [False] * n_out)
    fwd, recompute = _split_by_policy(known, n_out, policy)
    outs = eval_closed(fwd, *primals)
    outs, saved = outs[:n_out], outs[n_out:]
    nz_tangents = [t for t in tangents if type(t) is not Zero]

    def remat(*args):
        res = eval_closed(recompute, *args[:n_in + len(saved)])
        return eval_closed(lin, *res, *args[n_in + len(saved):])

    t_out = []
    if any(out_nz):
        args = [*primals, *saved, *nz_tangents]
        remat_jaxpr = trace_closed(remat, [get_aval(x) for x in args])
        remat_jaxpr, reads = dce_closed(remat_jaxpr, [True] * len(remat_jaxpr.out_avals))
        t_out = checkpoint_p.bind(*compress(args, reads), jaxpr=keep_invars(remat_jaxpr, reads),
                                  prevent_cse=prevent_cse, differentiated=True, policy=policy)
    it = iter(t_out)
    return outs, [next(it) if z else Zero(tangent_aval(a))
                  for z, a in zip(out_nz, jaxpr.out_avals)]


def _split_by_policy(known: ClosedJaxpr, n_out: int, policy: Callable | None
                     ) -> tuple[ClosedJaxpr, ClosedJaxpr]:
    """Split `known` (inputs -> n_out outputs + residuals) into the forward pass (inputs ->
    outputs + saved values) and the recomputation (inputs + saved values -> residuals).
    Walking back from the residuals, a value is saved where the policy saves the equation
    making it, and otherwise recomputed from that equation's inputs."""
    j = known.jaxpr
    producer = {v: (k, eqn) for k, eqn in enumerate(j.eqns) for v in eqn.outvars}
    verdict: dict[int, bool] = {}
    saved: set[Var] = set()
    seen: set[Var] = set()
    stack = [v for v in j.outvars[n_out:] if isinstance(v, Var)]
    while stack:
        v = stack.pop()
        if v in seen or v not in producer:
            continue  # (inputs and constants are there in both passes)
        seen.add(v)
        k, eqn = producer[v]
        if k not in verdict:
            verdict[k] = policy is not None and is_saved(
                policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))
        if verdict[k]:
            saved.add(v)
        else:
            stack.extend(x for x in eqn.invars if isinstance(x, Var))
    saved_vars = [v for eqn in j.eqns for v in eqn.outvars if v in saved]
    fwd = Jaxpr(j.constvars, j.invars, j.outvars[:n_out] + saved_vars, j.eqns, j.debug_info)
    recompute = Jaxpr(j.constvars, j.invars + saved_vars, j.outvars[n_out:],
                      [e for e in j.eqns if not any(v in saved for v in e.outvars)],
                      j.debug_info)
    return (ClosedJaxpr(dce(fwd), known.consts), ClosedJaxpr(dce(recompute), known.consts))


def _checkpoint_batch(vals, dims, *, jaxpr, prevent_cse, differentiated, policy):
    size = axis_size(vals, dims)
    batched, out_b = batch_jaxpr(jaxpr, size, [d is not not_mapped for d in dims], False)
    vals = [v if d is not_mapped else bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    outs = checkpoint_p.bind(*vals, jaxpr=batched, prevent_cse=prevent_cse,
                             differentiated=differentiated, policy=policy)
    return outs, [0 if b else not_mapped for b in out_b]


checkpoint_p.def_jvp(_checkpoint_jvp)
checkpoint_p.def_linearize(_checkpoint_linearize)
checkpoint_p.def_transpose(call_transpose(checkpoint_p))
checkpoint_p.def_batch(_checkpoint_batch)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
    """fun, but reverse mode saves only its inputs and recomputes the rest in the backward
    pass (jax.checkpoint / jax.remat)."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        static_vals, dyn = _resolve_nondiff(static, args)

        def full(dyn_args):
            it = iter(dyn_args)
            return [static_vals[static.index(i)] if i in static else next(it)
                    for i in range(len(args))]

        closed, consts, out_tree, leaves = _stage(lambda *d: fun(*full(d), **kwargs), dyn,
                                                   "checkpoint")
        outs = checkpoint_p.bind(*consts, *leaves, jaxpr=closed, prevent_cse=prevent_cse,
                                 differentiated=False, policy=policy)
        return tree_unflatten(out_tree, outs)
    return remat_fun


remat = checkpoint
