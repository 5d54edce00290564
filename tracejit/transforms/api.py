"""The user API of the transformations: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, jacobian, hessian, vmap, linear_transpose (and, re-exported, custom_jvp, custom_vjp,
checkpoint). Pytrees are flattened here; the interpreters work on flat lists."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes, key_reuse
from ..core.array import Array
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.axis_env import AxisFrame
from ..core.batching import batch_flat
from ..core.devices import process_count
from ..core.global_array import GlobalArray
from ..core.jaxpr_util import eval_jaxpr_bind
from ..core.jvp_trace import jvp_flat
from ..core.linearize import Linearized, linearize_flat
from ..core.pytree import (
    PyTreeDef,
    PytreeLeaf,
    leaf_names,
    prefix_errors,
    register_pytree_node,
    tree_flatten,
    tree_unflatten,
)
from ..core.rules import (
    UndefinedPrimal,
    Zero,
    bdim_at_front,
    differentiable,
    instantiate,
    moveaxis,
    not_mapped,
    tangent_aval,
    zeros_like_aval,
)
from ..core.trace import Tracer, fun_debug_info, get_aval, to_numpy
from ..core.refs import Ref, addupdate
from ..core.transpose import backward_pass
from .custom import checkpoint, custom_jvp, custom_vjp, remat  # noqa: F401


# --- arrays spanning processes -------------------------------------------------------------
# A transformation called on arrays split over processes (GlobalArrays) runs as one jit of
# the transformed function (jit(grad(f)) for grad(f)): each process then runs its block of
# the partitioned program, as jit over such arrays does. Eagerly the transformation would
# need every intermediate value, which no process holds whole. (Arrays every process holds
# whole stay eager, as in JAX: Python may read their values.) Set by shard_map_processes.py
# (user-facing: it runs jit across processes).
_OVER_PROCESSES: list = []


def _spans_processes(tree: Any) -> bool:
    if process_count() == 1 or not _OVER_PROCESSES:
        return False
    return any(isinstance(x, GlobalArray) for x in tree_flatten(tree)[0])


def _over_processes(key: tuple, transformed: Callable) -> Callable:
    """`transformed` (the function a transformation returned), run as one jit when its
    arguments span processes; `key` names the transformation and its options, so that each
    call of e.g. `jax.grad(f)` in a training loop reuses one compiled program."""
    @functools.wraps(transformed)
    def call(*args, **kwargs):
        if _spans_processes((args, kwargs)):
            return _OVER_PROCESSES[0](key, transformed, args, kwargs)
        return transformed(*args, **kwargs)
    return call


def run_over_processes(run: Callable) -> None:
    """Set `run(key, transformed, args, kwargs)`: a transformed function's call on arrays
    spanning processes."""
    _OVER_PROCESSES[:] = [run]


# --- helpers -------------------------------------------------------------------------------


def _as_value(x: Any) -> Any:
    """An argument leaf as an Array (or the tracer it is), checking it is a JAX type."""
    if isinstance(x, (Array, Tracer)):
        return x
    aval = get_aval(x)
    return Array.from_numpy(to_numpy(x, aval), aval)


def _flatten_fun(fun: Callable, in_tree: PyTreeDef, has_aux: bool = False):
    """fun on pytrees -> a function on flat leaves; `.out_tree` (and `.aux_tree`) after a call.
    With has_aux the flat outputs are the output leaves followed by the aux leaves."""
    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("expected function with aux output to return a two-element "
                                f"tuple, but got type {type(out)} with value {out!r}")
            out, aux = out
            aux_leaves, flat_fun.aux_tree = tree_flatten(aux)
        out_leaves, flat_fun.out_tree = tree_flatten(out)
        flat_fun.n_out = len(out_leaves)
        return out_leaves + (aux_leaves if has_aux else [])
    return flat_fun


def _split_aux(outs: list, flat_fun) -> tuple[list, Any]:
    n = flat_fun.n_out
    if not hasattr(flat_fun, "aux_tree"):
        return outs, None
    return outs[:n], tree_unflatten(flat_fun.aux_tree, [_as_value(a) for a in outs[n:]])


def _check_callable(fun: Any, api: str) -> None:
    if not callable(fun):
        raise TypeError(f"{api} expected a callable value, got {fun!r}")


def _float0_zeros(aval: ShapedArray) -> np.ndarray:
    return np.zeros(aval.shape, dtypes.float0)


def _cast_cotangent(ct: Any, aval: ShapedArray) -> Any:
    """A cotangent with exactly its primal's dtype and weak type (as JAX returns them)."""
    if type(ct) is Zero:
        ct = instantiate(ct)
    ct_aval = get_aval(ct)
    if ct_aval.dtype == aval.dtype and ct_aval.weak_type == aval.weak_type:
        return ct
    from ..lax import convert_element_type
    return convert_element_type(ct, aval.dtype, aval.weak_type)


# --- forward mode --------------------------------------------------------------------------

def _check_tangent(p: Any, t: Any) -> Any:
    p_aval = get_aval(p)
    if isinstance(t, np.ndarray) and t.dtype == dtypes.float0:
        t_aval = ShapedArray(t.shape, dtypes.float0)
    else:
        t_aval = get_aval(t)
    expected = tangent_aval(p_aval).dtype
    if t_aval.dtype != expected:
        extra = ("" if differentiable(p_aval) else
                 ", or in case of int/bool primal dtype the tangent dtype must be float0")
        raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                        f"equal{extra}.Got primal dtype {p_aval.dtype} and so expected tangent "
                        f"dtype {expected}, but got tangent dtype {t_aval.dtype} instead.")
    if t_aval.shape != p_aval.shape:
        raise ValueError("jvp called with different primal and tangent shapes;Got primal shape "
                         f"{p_aval.shape} and tangent shape as {t_aval.shape}")
    if not differentiable(p_aval):
        return Zero(t_aval)
    return _as_value(t)


def _tangent_out(t: Any) -> Any:
    if type(t) is Zero:
        return _float0_zeros(t.aval) if t.aval.dtype == dtypes.float0 else instantiate(t)
    return t


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple:
    """(fun(*primals), the directional derivative of fun at primals along tangents)."""
    _check_callable(fun, "jvp")
    if not (isinstance(primals, (tuple, list)) and isinstance(tangents, (tuple, list))):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    if _spans_processes((primals, tangents)):
        return _OVER_PROCESSES[0](("jvp", fun, has_aux),
                                  lambda p, t: jvp(fun, p, t, has_aux=has_aux),
                                  (tuple(primals), tuple(tangents)), {})
    p_flat, p_tree = tree_flatten(tuple(primals))
    t_flat, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents have "
                        f"tree structure {t_tree}.")
    p_flat = [_as_value(p) for p in p_flat]
    t_flat = [_check_tangent(p, t) for p, t in zip(p_flat, t_flat)]
    flat_fun = _flatten_fun(lambda *a: fun(*a), p_tree, has_aux)
    outs, t_outs = jvp_flat(flat_fun, p_flat, t_flat)
    outs, aux = _split_aux(outs, flat_fun)
    n = flat_fun.n_out
    out = tree_unflatten(flat_fun.out_tree, [_as_value(o) for o in outs])
    t_out = tree_unflatten(flat_fun.out_tree, [_tangent_out(t) for t in t_outs[:n]])
    return (out, t_out, aux) if has_aux else (out, t_out)


# --- reverse mode --------------------------------------------------------------------------

def _linearize(fun: Callable, primals: Sequence[Any], has_aux: bool, api: str):
    p_flat, in_tree = tree_flatten(tuple(primals))
    p_flat = [_as_value(p) for p in p_flat]
    flat_fun = _flatten_fun(lambda *a: fun(*a), in_tree, has_aux)
    debug = fun_debug_info(fun, [f"primals[{i}]" for i in range(len(p_flat))], api)
    outs, lin = linearize_flat(flat_fun, p_flat, debug)
    outs, aux = _split_aux(outs, flat_fun)
    n = flat_fun.n_out
    lin = Linearized(lin.jaxpr, lin.in_nonzero, lin.out_nonzero[:n], lin.in_avals,
                     lin.out_avals[:n])
    return [_as_value(o) for o in outs], lin, in_tree, flat_fun.out_tree, aux, p_flat


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(fun(*primals), f_jvp) where f_jvp(*tangents) evaluates the JVP at primals (linear)."""
    _check_callable(fun, "linearize")
    if _spans_processes(primals):
        return _split_over_processes("linearize", fun, primals, has_aux)
    outs, lin, in_tree, out_tree, aux, p_flat = _linearize(fun, primals, has_aux, "linearize")

    def f_jvp(*tangents):
        t_flat, t_tree = tree_flatten(tuple(tangents))
        if t_tree != in_tree:
            raise TypeError(f"linearized function called on tangent values inconsistent with "
                            f"the original primal values: got tangent structure {t_tree} for "
                            f"primal structure {in_tree}.")
        t_flat = [_check_tangent(p, t) for p, t in zip(p_flat, t_flat)]
        nz_in = [t for t, nz in zip(t_flat, lin.in_nonzero) if nz]
        t_out = iter(eval_jaxpr_bind(lin.jaxpr.jaxpr, lin.jaxpr.consts, *nz_in))
        return tree_unflatten(out_tree, [next(t_out) if nz else _tangent_out(Zero(a))
                                         for nz, a in zip(lin.out_nonzero, lin.out_avals)])

    out = tree_unflatten(out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# jax.ad: what VJPFunction.with_refs takes per primal (GradValue: return the gradient, the
# default; DontWant: skip it; a Ref: add the gradient into it) and puts in its results in place
# of a gradient (DidntWant, GradRef). The two result markers are empty pytrees, as JAX's.
# (Field-less, equal by type: what JAX's frozen dataclasses are, without their import cost.)
class _Marker:
    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class GradValue(_Marker):
    __slots__ = ()


class GradRef(_Marker):
    __slots__ = ()


class DontWant(_Marker):
    __slots__ = ()


class DidntWant(_Marker):
    __slots__ = ()


for _marker in (GradRef, DidntWant):
    register_pytree_node(_marker, lambda m: ((), None), lambda _, __, cls=_marker: cls())


class VJPFunction:
    """vjp's pullback: called on a cotangent, it returns the cotangents of the primals. It is a
    pytree whose leaves are the residuals (JAX's is a Partial so), so it passes into and out of
    jit: `jax.fwd_and_bwd` returns it from one jitted function and calls it in another."""
    __slots__ = ("residuals", "static")

    def __init__(self, residuals: Sequence[Any], static: tuple):
        # static: (linear jaxpr, its in/out nonzero flags, tangent in/out avals, output tree,
        # output avals, primal avals, primal tree, the function's name), hashable for jit
        self.residuals, self.static = list(residuals), static

    def __call__(self, ct: Any) -> tuple:
        jaxpr, in_nonzero, out_nonzero, in_avals, out_tree, out_avals, p_avals, in_tree, \
            name = self.static
        ct_flat, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(
                "unexpected tree structure.\n\nThe argument to a VJP function returned by "
                "`jax.vjp` must match the pytree structure of the differentiated function "
                f"{name}: got a cotangent of structure {ct_tree} for "
                f"an output of structure {out_tree}.")
        cts = []
        for c, aval, nz in zip(ct_flat, out_avals, out_nonzero):
            c_aval = ShapedArray(np.shape(c), dtypes.float0) if \
                isinstance(c, np.ndarray) and c.dtype == dtypes.float0 else get_aval(c)
            expected = tangent_aval(aval)
            if c_aval.shape != expected.shape or c_aval.dtype != expected.dtype:
                raise ValueError(
                    "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
                    f"{c_aval.str_short()}, but expected {expected.str_short()} because the "
                    "corresponding output of the differentiated function had JAX type "
                    f"{aval.str_short()}")
            if nz:
                cts.append(_as_value(c))
        args = [UndefinedPrimal(a) for a, nz in zip(in_avals, in_nonzero) if nz]
        ct_in = iter(backward_pass(jaxpr, self.residuals, args, cts))
        grads = [_cast_cotangent(next(ct_in), a) if nz else _float0_zeros(a)
                 for a, nz in zip(p_avals, in_nonzero)]
        return tuple(tree_unflatten(in_tree, grads))

    def with_refs(self, *maybe_ct_refs: Any) -> Callable:
        """The pullback with, per primal leaf, a Ref to add its gradient into (GradRef() in
        the results), DontWant() (DidntWant() in the results) or GradValue() (the gradient, as
        a plain call returns it); the entries have the primals' tree structure."""
        in_tree, name = self.static[7], self.static[8]
        wants, tree = tree_flatten(maybe_ct_refs)
        if tree != in_tree:
            raise ValueError(
                "unexpected tree structure in the arguments to a VJP function's `with_refs` "
                f"method: the arguments to `with_refs` must match the pytree structure of the "
                f"primal arguments of the differentiated function {name} ({in_tree}), with one "
                f"entry per array argument, but got {tree}.")
        for w in wants:
            if not isinstance(w, (Ref, GradValue, DontWant)):
                raise TypeError(f"with_refs takes a Ref, jax.ad.GradValue() or "
                                f"jax.ad.DontWant() per primal argument, got {w!r}")

        def pullback(ct: Any) -> Any:
            grads, _ = tree_flatten(self(ct))
            out = []
            for w, g in zip(wants, grads):
                if isinstance(w, Ref):
                    addupdate(w, None, g)
                    out.append(GradRef())
                else:
                    out.append(DidntWant() if isinstance(w, DontWant) else g)
            return tree_unflatten(in_tree, out)
        return pullback


register_pytree_node(VJPFunction, lambda f: (f.residuals, f.static),
                     lambda static, residuals: VJPFunction(residuals, static))


def _vjp_fun(lin: Linearized, out_tree: PyTreeDef, outs: list, p_flat: list, in_tree: PyTreeDef,
             fun: Callable) -> VJPFunction:
    static = (lin.jaxpr.jaxpr, tuple(lin.in_nonzero), tuple(lin.out_nonzero),
              tuple(lin.in_avals), out_tree, tuple(get_aval(o) for o in outs),
              tuple(get_aval(p) for p in p_flat), in_tree, str(getattr(fun, "__name__", fun)))
    return VJPFunction(lin.jaxpr.consts, static)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(fun(*primals), vjp_fun) where vjp_fun(ct) is the cotangent pulled back to primals."""
    _check_callable(fun, "vjp")
    if _spans_processes(primals):
        return _split_over_processes("vjp", fun, primals, has_aux)
    outs, lin, in_tree, out_tree, aux, p_flat = _linearize(fun, primals, has_aux, "vjp")
    vjp_fun = _vjp_fun(lin, out_tree, outs, p_flat, in_tree, fun)
    out = tree_unflatten(out_tree, outs)
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def _split_over_processes(api: str, fun: Callable, primals: tuple, has_aux: bool) -> tuple:
    """vjp / linearize on arrays split over processes: the forward pass as one jit, and the
    returned linear function as another, which recomputes the forward pass (no residuals
    cross between the two programs) then applies the linear map."""
    run = _OVER_PROCESSES[0]
    res = run((api, fun, has_aux), lambda *p: fun(*p), tuple(primals), {})
    out, aux = res if has_aux else (res, None)
    if api == "vjp":
        def linear(ct):
            return run(("vjp pullback", fun, has_aux),
                       lambda p, c: vjp(fun, *p, has_aux=has_aux)[1](c),
                       (tuple(primals), ct), {})
    else:
        def linear(*tangents):
            return run(("linearize jvp", fun, has_aux),
                       lambda p, t: jvp(fun, p, t, has_aux=has_aux)[1],
                       (tuple(primals), tuple(tangents)), {})
    return (out, linear, aux) if has_aux else (out, linear)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: tuple = ()) -> Callable:
    """The transpose of the linear function fun, for inputs of primals' types."""
    _check_callable(fun, "linear_transpose")
    p_flat, in_tree = tree_flatten(tuple(primals))
    avals = [p.aval if isinstance(p, ShapeDtypeStruct) else get_aval(p) for p in p_flat]
    for a in avals:
        if not differentiable(a):
            raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                            f"complex], and integer -> integer functions, but got {a.dtype}.")
    zeros = [zeros_like_aval(a) for a in avals]
    outs, lin, _, out_tree, _, _ = _linearize(fun, tree_unflatten(in_tree, zeros), False,
                                              "linear_transpose")
    vjp_fun = _vjp_fun(lin, out_tree, outs, zeros, in_tree, fun)

    def transposed(*cts):
        ct = cts[0] if len(cts) == 1 else cts
        return vjp_fun(ct)
    return transposed


# --- grad ----------------------------------------------------------------------------------

def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)):
        return (int(argnums),)
    nums = tuple(argnums)
    if not all(isinstance(i, (int, np.integer)) for i in nums):
        raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    return tuple(int(i) for i in nums)


def _check_argnums(argnums: tuple[int, ...], args: tuple, spec: Any) -> tuple[int, ...]:
    n = len(args)
    for i in argnums:
        if not -n <= i < n:
            raise TypeError(f"differentiating with respect to argnums={spec} requires at least "
                            f"{max(argnums) + 1} positional arguments to be passed by the "
                            f"caller, but got only {n} positional arguments.")
    return tuple(i % n for i in argnums)


def _check_input_dtypes(args: Sequence[Any], api: str, allow_int: bool, holomorphic: bool
                        ) -> None:
    for leaf in tree_flatten(tuple(args))[0]:
        dtype = get_aval(leaf).dtype
        if holomorphic and dtype.kind != "c":
            raise TypeError(f"{api} with holomorphic=True requires inputs with complex dtype, "
                            f"but got {dtype.name}.")
        if not dtypes.is_inexact(dtype) and not allow_int:
            if api == "grad":
                raise TypeError(
                    "grad requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dtype.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
            raise TypeError(
                f"{api} requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving "
                f"complex inputs or integer inputs, use jax.jvp directly.")


def _check_scalar_output(out: Any, holomorphic: bool) -> None:
    if not isinstance(out, (Array, Tracer)) or get_aval(out).shape != ():
        what = f"had shape: {get_aval(out).shape}" if isinstance(out, (Array, Tracer)) else \
            f"was {out!r}"
        raise TypeError(f"Gradient only defined for scalar-output functions. Output {what}.")
    dtype = get_aval(out).dtype
    if holomorphic:
        if dtype.kind != "c":
            raise TypeError("grad with holomorphic=True requires outputs with complex dtype, "
                            f"but got {dtype.name}.")
        return
    if not dtypes.is_float(dtype):
        hint = ("For holomorphic differentiation, pass holomorphic=True. For differentiation "
                "of non-holomorphic functions involving complex outputs, use jax.vjp directly."
                if dtype.kind == "c" else
                "For differentiation of functions with integer outputs, use jax.vjp directly.")
        raise TypeError("grad requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dtype.name}. {hint}")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: tuple = ()) -> Callable:
    """f -> (f(*args), the gradient of f with respect to args[argnums])."""
    _check_callable(fun, "value_and_grad")
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        positions = _check_argnums(nums, args, argnums)
        diff_args = [args[i] for i in positions]
        _check_input_dtypes(diff_args, "grad", allow_int, holomorphic)

        def partial_fun(*diff):
            full = list(args)
            for i, d in zip(positions, diff):
                full[i] = d
            return fun(*full, **kwargs)

        outs, lin, in_tree, out_tree, aux, p_flat = _linearize(partial_fun, diff_args, has_aux,
                                                               "grad")
        out = tree_unflatten(out_tree, outs)
        _check_scalar_output(out, holomorphic)
        one = Array.from_numpy(np.ones((), get_aval(out).dtype), get_aval(out))
        grads = _vjp_fun(lin, out_tree, outs, p_flat, in_tree, fun)(one)
        g = grads[0] if isinstance(argnums, (int, np.integer)) else tuple(grads)
        return ((out, aux), g) if has_aux else (out, g)
    return _over_processes(("value_and_grad", fun, argnums, has_aux, holomorphic, allow_int),
                           value_and_grad_f)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False, reduce_axes: tuple = ()
         ) -> Callable:
    """f -> the gradient of the scalar function f with respect to args[argnums]."""
    _check_callable(fun, "grad")
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return grad_f


# --- Jacobians -----------------------------------------------------------------------------

def _std_basis(leaves: list) -> list:
    """Rows of the identity over all input elements, shaped like each input: (N,) + shape."""
    sizes = [get_aval(x).size for x in leaves]
    total = sum(sizes)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        aval = get_aval(x)
        rows = np.zeros((total, n), aval.dtype)
        rows[start:start + n] = np.eye(n, dtype=aval.dtype)
        out.append(Array.from_numpy(rows.reshape((total,) + aval.shape),
                                    ShapedArray((total,) + aval.shape, aval.dtype)))
        start += n
    return out


def _jac_blocks(jac: Any, out_shape: tuple, in_leaves: list, in_tree: PyTreeDef) -> Any:
    """Split a Jacobian whose last axis runs over all input elements into a tree (like the
    inputs) of blocks shaped out_shape + input shape."""
    from ..lax import reshape, slice_in_dim
    blocks, start = [], 0
    for x in in_leaves:
        aval = get_aval(x)
        block = slice_in_dim(jac, start, start + aval.size, 1, len(out_shape))
        blocks.append(reshape(block, out_shape + aval.shape))
        start += aval.size
    return tree_unflatten(in_tree, blocks)


def _diff_args(args: tuple, argnums: int | Sequence[int]):
    positions = _check_argnums(_argnums_tuple(argnums), args, argnums)
    diff = tuple(args[i] for i in positions)
    return positions, diff[0] if isinstance(argnums, (int, np.integer)) else diff


def _partial(fun: Callable, args: tuple, kwargs: dict, positions: tuple, single: bool):
    def f(d):
        full = list(args)
        for i, x in zip(positions, (d,) if single else d):
            full[i] = x
        return fun(*full, **kwargs)
    return f


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of fun by forward mode: one JVP per input element (vectorised)."""
    _check_callable(fun, "jacfwd")

    def jacfun(*args, **kwargs):
        positions, diff = _diff_args(args, argnums)
        single = isinstance(argnums, (int, np.integer))
        _check_input_dtypes(diff if not single else (diff,), "jacfwd", False, holomorphic)
        f = _partial(fun, args, kwargs, positions, single)
        in_leaves, in_tree = tree_flatten(diff)
        in_leaves = [_as_value(x) for x in in_leaves]
        primals = (tree_unflatten(in_tree, in_leaves),)

        def push(*t):
            return jvp(f, primals, (tree_unflatten(in_tree, t),), has_aux=has_aux)

        res = vmap(push, out_axes=(None, -1, None) if has_aux else (None, -1))(
            *_std_basis(in_leaves))
        y_leaves, y_tree = tree_flatten(res[0])
        out = tree_unflatten(y_tree, [_jac_blocks(j, get_aval(y).shape, in_leaves, in_tree)
                                      for j, y in zip(y_tree.flatten_up_to(res[1]), y_leaves)])
        return (out, res[2]) if has_aux else out
    return _over_processes(("jacfwd", fun, argnums, has_aux, holomorphic), jacfun)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of fun by reverse mode: one VJP per output element (vectorised)."""
    _check_callable(fun, "jacrev")

    def jacfun(*args, **kwargs):
        positions, diff = _diff_args(args, argnums)
        single = isinstance(argnums, (int, np.integer))
        _check_input_dtypes(diff if not single else (diff,), "jacrev", allow_int, holomorphic)
        f = _partial(fun, args, kwargs, positions, single)
        res = vjp(f, diff, has_aux=has_aux)
        y, pullback = res[0], res[1]
        y_leaves, y_tree = tree_flatten(y)
        in_leaves, in_tree = tree_flatten(diff)
        basis = _std_basis([_as_value(leaf) for leaf in y_leaves])
        cts = vmap(lambda *b: pullback(tree_unflatten(y_tree, b))[0])(*basis)
        ct_leaves = tree_flatten(cts)[0]
        # ct_leaves[i]: (M,) + input shape, M over all output elements
        out, start = [], 0
        from ..lax import reshape, slice_in_dim
        for yl in y_leaves:
            shape = get_aval(yl).shape
            m = get_aval(yl).size
            blocks = [reshape(slice_in_dim(c, start, start + m, 1, 0),
                              shape + get_aval(x).shape) for c, x in zip(ct_leaves, in_leaves)]
            out.append(tree_unflatten(in_tree, blocks))
            start += m
        jac = tree_unflatten(y_tree, out)
        return (jac, res[2]) if has_aux else jac
    return _over_processes(("jacrev", fun, argnums, has_aux, holomorphic, allow_int), jacfun)


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar function: jacfwd of jacrev."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# --- vmap ----------------------------------------------------------------------------------

def _is_none(x: Any) -> bool:
    return x is None


def _broadcast_prefix(prefix: Any, tree: Any, what: str, shown: tuple | None = None) -> list:
    """One entry of `prefix` (a pytree prefix of tree, None leaves allowed) per leaf of tree.
    On a mismatch every place is named by key path, as JAX does, within `shown` (the
    (prefix, tree) the user wrote, e.g. in_axes against the positional arguments)."""
    p_leaves, p_tree = tree_flatten(prefix, is_leaf=_is_none)
    try:
        subtrees = p_tree.flatten_up_to(tree)
    except ValueError:
        shown_prefix, shown_tree = shown or (prefix, tree)
        shape = tree_flatten(shown_tree)[1]
        dummy = tree_unflatten(shape, [PytreeLeaf() for _ in range(shape.num_leaves)])
        errors = prefix_errors(shown_prefix, dummy, is_leaf=_is_none)
        details = "\n  ".join(str(e(what)) for e in errors)
        raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                         f"value; \n  Mismatch details ({len(errors)} found):\n  {details}"
                         ) from None
    return [p for p, sub in zip(p_leaves, subtrees) for _ in tree_flatten(sub)[0]]


def _check_axis_spec(spec: Any, what: str) -> None:
    for leaf in tree_flatten(spec, is_leaf=_is_none)[0]:
        if leaf is not None and not isinstance(leaf, (int, np.integer)):
            raise TypeError(f"vmap {what} must be an int, None, or a tuple of entries "
                            "corresponding to the positional arguments passed to the function, "
                            f"but got {spec}.")


def _type_name(aval: ShapedArray) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _leaf_paths(args: tuple, names: list[str]) -> list[str]:
    return [p for i, a in enumerate(args)
            for p in leaf_names(names[i] if i < len(names) else f"args[{i}]", a)]


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorise fun over the axes in_axes of its arguments; results stacked on out_axes."""
    return _over_processes(("vmap", fun, in_axes, out_axes, axis_name, axis_size,
                            spmd_axis_name),
                           map_over_axis(fun, in_axes, out_axes, axis_name, axis_size))


def map_over_axis(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
                  axis_size: int | None = None, *, devices: bool = False) -> Callable:
    """vmap; with devices=True the named axis is one over devices (pmap's), whose collectives
    take axis_index_groups."""
    _check_callable(fun, "vmap")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axis_spec(in_axes, "in_axes")
    _check_axis_spec(out_axes, "out_axes")
    try:
        names = [p.name for p in inspect.signature(fun).parameters.values()]
    except (TypeError, ValueError):
        names = []

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        leaves, in_tree = tree_flatten((args, kwargs))
        per_arg = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        axes = _broadcast_prefix((per_arg, {k: 0 for k in kwargs}), (args, kwargs),
                                 "vmap in_axes", shown=(per_arg, args))
        leaves = [_as_value(x) for x in leaves]
        dims, sizes = [], []
        for x, ax in zip(leaves, axes):
            if ax is None:
                dims.append(not_mapped)
                continue
            shape = get_aval(x).shape
            if not -len(shape) <= ax < len(shape):
                raise ValueError(f"vmap was requested to map its argument along axis {ax}, "
                                 f"which implies that its rank should be at least "
                                 f"{(ax + 1) if ax >= 0 else -ax}, but is only {len(shape)} "
                                 f"(its shape is {shape})")
            d = ax % len(shape)
            dims.append(d)
            sizes.append(shape[d])
        if axis_size is not None:
            sizes.append(axis_size)
        if not sizes:
            raise ValueError("vmap must have at least one non-None value in in_axes or "
                             "axis_size must be specified")
        if len(set(sizes)) > 1:
            paths = _leaf_paths(args, names) + [f"{k}" for k in sorted(kwargs)]
            lines = [f"  * one axis had size {get_aval(x).shape[d]}: axis {d} of argument "
                     f"{paths[i] if i < len(paths) else i} of type {_type_name(get_aval(x))}"
                     for i, (x, d) in enumerate(zip(leaves, dims)) if d is not not_mapped]
            if axis_size is not None:
                lines.append(f"  * the axis_size argument was {axis_size}")
            raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                             + ";\n".join(lines))
        size = sizes[0]

        def call(*flat):
            a, kw = tree_unflatten(in_tree, flat)
            out = fun(*a, **kw)
            if key_reuse.enabled():  # (what the body did to its keys: applied to the caller's)
                call.key_reuse = key_reuse.signature((a, kw), out)
            out_leaves, call.out_tree = tree_flatten(out)
            return out_leaves

        # a named axis is bound while fun runs: collectives over it (lax.psum, ...) act
        # across the lanes
        axis = AxisFrame(axis_name, size, None, devices=devices) if axis_name is not None \
            else None
        outs, out_dims = batch_flat(call, leaves, dims, axis)
        o_axes = _broadcast_prefix(out_axes, tree_unflatten(call.out_tree, outs),
                                   "vmap out_axes")
        result = []
        for x, d, ax in zip(outs, out_dims, o_axes):
            if ax is None:
                if d is not not_mapped:
                    raise ValueError(f"at vmap out_axes, got axis spec None but output was "
                                     f"batched on axis {d}")
                result.append(_as_value(x))
                continue
            ndim = get_aval(x).ndim + (d is not_mapped)
            if not -ndim <= ax < ndim:
                raise ValueError(f"axis {ax} is out of bounds for array of dimension {ndim}")
            result.append(moveaxis(bdim_at_front(_as_value(x), d, size), 0, ax % ndim))
        result = tree_unflatten(call.out_tree, result)
        if getattr(call, "key_reuse", None) is not None:
            key_reuse.call(call.key_reuse, (args, kwargs), result)
        return result
    return vmapped


__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian",
           "hessian", "vmap", "linear_transpose", "custom_jvp", "custom_vjp", "checkpoint",
           "remat"]
