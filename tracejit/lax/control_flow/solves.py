"""Solves with implicitly defined derivatives: the primitives `custom_linear_solve` and
`custom_root` with all their rules, and lax.custom_linear_solve / lax.custom_root on top (as
JAX's lax/control_flow/solves.py). Natively each runs its `solve` body inline
(backend/llvm/control_flow.py); only the derivatives use the other bodies."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ...core.batching import batch_jaxpr, move_to_front
from ...core.interpret import eval_jaxpr
from ...core.jaxpr import ClosedJaxpr
from ...core.jaxpr_util import eval_closed
from ...core.jvp_trace import jvp_flat
from ...core.primitive import Primitive
from ...core.pytree import PyTreeDef, tree_flatten, tree_leaves, tree_unflatten
from ...core.rules import (
    Zero,
    axis_size,
    instantiate,
    is_undefined,
    not_mapped,
)
from ...core.trace import get_aval
from ...core.transpose import transpose_jaxpr
from ..elementwise import neg, sub
from ..shape import broadcast_in_dim
from .common import _split, _trace

# --- shared -----------------------------------------------------------------------------------


def _run(closed: ClosedJaxpr, *args) -> list:
    """Reference evaluation of a body whose consts are its leading operands."""
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _check_tree(fun_name: str, expected: str, actual: PyTreeDef, tree: PyTreeDef,
                has_aux: bool) -> None:
    if has_aux:
        children = actual.children
        if len(children) != 2:
            raise ValueError(f"{fun_name}() produced a pytree with structure {actual}, but a "
                             "pytree tuple with auxiliary output was expected because has_aux "
                             "was set to True.")
        actual = children[0]
    if actual != tree:
        raise TypeError(f"{fun_name}() output pytree structure must match {expected}, got "
                        f"{actual} and {tree}.")


def _shape_checked(fun: Callable, name: str, leaves: list, has_aux: bool) -> Callable:
    """fun, raising JAX's ValueError when its (non-aux) output shapes differ from `leaves`."""
    expected = [np.shape(x) for x in leaves]

    def checked(x):
        out = fun(x)
        y = out
        if has_aux:
            y, _ = out  # (JAX's ValueError for an output that is not a pair)
        actual = [np.shape(v) for v in tree_leaves(y)]
        if actual != expected:
            raise ValueError(f"{name}() output shapes must match b, got {actual} and "
                             f"{expected}")
        return out
    return checked


def _broadcast_front(x: Any, size: int) -> Any:
    shape = get_aval(x).shape
    return broadcast_in_dim(x, (size,) + shape, tuple(range(1, len(shape) + 1)))


def _batched_operands(vals, dims, size: int, force: list[bool]) -> tuple[list, list[bool]]:
    """Operands with batch dimensions first; those `force`d batched are broadcast if not."""
    vals = move_to_front(vals, dims)
    batched = [d is not not_mapped for d in dims]
    out = [_broadcast_front(v, size) if f and not b else v
           for v, b, f in zip(vals, batched, force)]
    return out, [b or f for b, f in zip(batched, force)]


# --- custom_linear_solve -------------------------------------------------------------------
# operands: matvec consts, vecmat consts, solve consts, transpose_solve consts, b leaves.
# Each body takes its consts first; vecmat and transpose_solve are None when not given.

_BODIES = ("matvec", "vecmat", "solve", "transpose_solve")


def _split_solve_args(args, const_lengths):
    *consts, b = _split(args, *const_lengths)
    return dict(zip(_BODIES, consts)), b


def _linear_solve_abstract(*avals, const_lengths, matvec, vecmat, solve, transpose_solve):
    return solve.out_avals


def _linear_solve_impl(*args, const_lengths, solve, **_):
    consts, b = _split_solve_args(args, const_lengths)
    return _run(solve, *consts["solve"], *b)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.def_abstract_eval(_linear_solve_abstract)
linear_solve_p.def_impl(_linear_solve_impl)


def _linear_solve_jvp(primals, tangents, **params):
    # A x = b  =>  dA x + A dx = db  =>  dx = A^-1 (db - dA x); the solvers' own consts do not
    # change the solution, so their tangents are ignored (as JAX does)
    const_lengths = params["const_lengths"]
    x = linear_solve_p.bind(*primals, **params)
    consts, b = _split_solve_args(primals, const_lengths)
    consts_dot, b_dot = _split_solve_args(tangents, const_lengths)
    nb = len(b)
    x_leaves = x[:nb]
    rhs = list(b_dot)
    if any(type(t) is not Zero for t in consts_dot["matvec"]):
        zeros = [Zero.from_primal(v) for v in x_leaves]
        _, dA_x = jvp_flat(lambda *xs: eval_closed(params["matvec"], *xs),
                           consts["matvec"] + x_leaves, consts_dot["matvec"] + zeros)
        rhs = [neg(instantiate(m)) if type(r) is Zero else
               r if type(m) is Zero else sub(r, m) for r, m in zip(rhs, dA_x)]
    if all(type(r) is Zero for r in rhs):
        return x, [Zero.from_primal(o) for o in x]
    flat_consts = [c for name in _BODIES for c in consts[name]]
    x_dot = linear_solve_p.bind(*flat_consts, *[instantiate(r) for r in rhs], **params)
    return x, list(x_dot[:nb]) + [Zero.from_primal(a) for a in x[nb:]]


def _linear_solve_transpose(cts, *args, const_lengths, matvec, vecmat, solve,
                            transpose_solve):
    if transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    consts, b = _split_solve_args(args, const_lengths)
    if any(is_undefined(c) for cs in consts.values() for c in cs):
        raise TypeError("custom_linear_solve is linear in b only: the values matvec and the "
                        "solvers close over cannot be transposed (stop_gradient them).")
    nb = len(b)
    ct_x = [instantiate(ct) for ct in cts[:nb]]
    lengths = const_lengths
    t_lengths = (lengths[1], lengths[0], lengths[3], lengths[2])
    t_consts = (consts["vecmat"] + consts["matvec"] + consts["transpose_solve"]
                + consts["solve"])
    ct_b = linear_solve_p.bind(*t_consts, *ct_x, const_lengths=t_lengths, matvec=vecmat,
                               vecmat=matvec, solve=transpose_solve, transpose_solve=solve)
    return [None] * sum(lengths) + list(ct_b[:nb])


def _linear_solve_batch(vals, dims, *, const_lengths, **bodies):
    """b and x batched first always (the consts keep their own batching): every body then
    maps batched vectors to batched vectors, with no fixpoint over which parts are."""
    size = axis_size(vals, dims)
    nconst = sum(const_lengths)
    force = [False] * nconst + [True] * (len(vals) - nconst)
    vals, batched = _batched_operands(vals, dims, size, force)
    consts_bat, _ = _split_solve_args(batched, const_lengths)
    new = {}
    for name in _BODIES:
        body = bodies[name]
        if body is None:
            new[name] = None
            continue
        n_vec = len(body.in_avals) - len(consts_bat[name])
        new[name], _ = batch_jaxpr(body, size, consts_bat[name] + [True] * n_vec, True)
    outs = linear_solve_p.bind(*vals, const_lengths=const_lengths, **new)
    return outs, [0] * len(outs)


linear_solve_p.def_jvp(_linear_solve_jvp)
linear_solve_p.def_transpose(_linear_solve_transpose)
linear_solve_p.def_batch(_linear_solve_batch)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False) -> Any:
    """Solve matvec(x) == b with `solve(matvec, b)`, differentiated implicitly: the tangent
    and cotangent are further solves (with `transpose_solve(vecmat, ct)` for reverse mode,
    `solve` itself when symmetric), never derivatives through the solver."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = tree_flatten(b)
    b_avals = [get_aval(x) for x in b_leaves]
    arg_tree = tree_flatten((b,))[1]

    def trace(fun, what):
        return _trace(fun, arg_tree, b_avals, what)

    mv = trace(_shape_checked(matvec, "matvec", b_leaves, False), "custom_linear_solve")
    _check_tree("matvec", "b", mv.out_tree, tree, False)
    sv = trace(_shape_checked(functools.partial(solve, matvec), "solve", b_leaves, has_aux),
               "custom_linear_solve solve")
    _check_tree("solve", "b", sv.out_tree, tree, has_aux)
    vecmat_jaxpr = tsolve = None
    vecmat_consts: list = []
    tsolve_consts: list = []
    if transpose_solve is not None:
        if symmetric:
            vecmat_jaxpr, vecmat_consts = mv.jaxpr, mv.consts
        else:
            nc = len(mv.consts)
            vecmat_jaxpr = transpose_jaxpr(mv.jaxpr, [False] * nc + [True] * len(b_leaves),
                                           [True] * len(b_leaves))
            vecmat_consts = mv.consts
        vm_jaxpr, vm_consts = vecmat_jaxpr, vecmat_consts

        def vecmat(y):
            ys = tree_leaves(y)
            return tree_unflatten(tree, eval_closed(vm_jaxpr, *vm_consts, *ys))

        ts = trace(_shape_checked(functools.partial(transpose_solve, vecmat),
                                  "transpose_solve", b_leaves, has_aux),
                   "custom_linear_solve transpose_solve")
        _check_tree("transpose_solve", "b", ts.out_tree, tree, has_aux)
        tsolve, tsolve_consts = ts.jaxpr, ts.consts
    all_consts = [mv.consts, vecmat_consts, sv.consts, tsolve_consts]
    outs = linear_solve_p.bind(*[c for cs in all_consts for c in cs], *b_leaves,
                               const_lengths=tuple(len(cs) for cs in all_consts),
                               matvec=mv.jaxpr, vecmat=vecmat_jaxpr, solve=sv.jaxpr,
                               transpose_solve=tsolve)
    return tree_unflatten(sv.out_tree, outs)


# --- custom_root -----------------------------------------------------------------------------
# operands: f consts, solve consts, tangent-solve consts, initial guess leaves. Bodies: f
# (consts, x -> f(x)), solve (consts, guess -> solution [+ aux]) and l_and_s (consts, x, rhs ->
# the solution dx of f'(x) dx = rhs, by the user's tangent_solve).

def _split_root_args(args, const_lengths):
    f, s, ls, guess = _split(args, *const_lengths)
    return f, s, ls, guess


def _root_abstract(*avals, const_lengths, f, solve, l_and_s):
    return solve.out_avals


def _root_impl(*args, const_lengths, solve, **_):
    _, s, _, guess = _split_root_args(args, const_lengths)
    return _run(solve, *s, *guess)


root_p = Primitive("custom_root", multiple_results=True)
root_p.def_abstract_eval(_root_abstract)
root_p.def_impl(_root_impl)


def _root_jvp(primals, tangents, *, const_lengths, f, solve, l_and_s):
    # F(m, u*(m)) = 0 near the solution, so du* = -(d_u F)^-1 (d_m F dm): only the tangents
    # of f's consts (the parameters m) matter, not those of the guess or of the solvers
    params = {"const_lengths": const_lengths, "f": f, "solve": solve, "l_and_s": l_and_s}
    sol = root_p.bind(*primals, **params)
    f_consts, _, ls_consts, guess = _split_root_args(primals, const_lengths)
    f_dots = _split_root_args(tangents, const_lengths)[0]
    n = len(guess)
    solution = list(sol[:n])
    zero_out = [Zero.from_primal(o) for o in sol]
    if all(type(t) is Zero for t in f_dots):
        return sol, zero_out
    _, rhs = jvp_flat(lambda *xs: eval_closed(f, *xs), f_consts + solution,
                      f_dots + [Zero.from_primal(x) for x in solution])
    rhs = [instantiate(r) for r in rhs]
    dx = eval_closed(l_and_s, *ls_consts, *solution, *rhs)
    return sol, [neg(d) for d in dx] + zero_out[n:]


def _root_batch(vals, dims, *, const_lengths, f, solve, l_and_s):
    """The guess, solution and tangent vectors batched first always (consts keep theirs)."""
    size = axis_size(vals, dims)
    nconst = sum(const_lengths)
    force = [False] * nconst + [True] * (len(vals) - nconst)
    vals, batched = _batched_operands(vals, dims, size, force)
    fb, sb, lb, gb = _split_root_args(batched, const_lengths)
    f_b, _ = batch_jaxpr(f, size, fb + gb, True)
    solve_b, _ = batch_jaxpr(solve, size, sb + gb, True)
    ls_b, _ = batch_jaxpr(l_and_s, size, lb + gb + gb, True)
    outs = root_p.bind(*vals, const_lengths=const_lengths, f=f_b, solve=solve_b, l_and_s=ls_b)
    return outs, [0] * len(outs)


root_p.def_jvp(_root_jvp)
root_p.def_batch(_root_batch)


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False) -> Any:
    """solve(f, initial_guess), a root of f, differentiated by the implicit function theorem
    with respect to the values f closes over: tangent_solve(g, y) solves the linear g(x) = y
    for g, f linearized at the root."""
    g_leaves, tree = tree_flatten(initial_guess)
    avals = [get_aval(x) for x in g_leaves]
    arg_tree = tree_flatten((initial_guess,))[1]
    ft = _trace(f, arg_tree, avals, "custom_root")
    _check_tree("f", "initial_guess", ft.out_tree, tree, False)
    st = _trace(functools.partial(solve, f), arg_tree, avals, "custom_root solve")
    _check_tree("solve", "initial_guess", st.out_tree, tree, has_aux)
    f_jaxpr = ft.jaxpr

    def linearize_and_solve(x, rhs):
        xs = tree_leaves(x)

        def f_lin(t):
            _, out = jvp_flat(lambda *v: eval_closed(f_jaxpr, *ft.consts, *v), xs,
                              tree_leaves(t))
            return tree_unflatten(tree, [instantiate(o) for o in out])
        return tangent_solve(f_lin, rhs)

    pair_tree = tree_flatten((initial_guess, initial_guess))[1]
    lt = _trace(linearize_and_solve, pair_tree, avals + avals, "custom_root tangent_solve")
    _check_tree("tangent_solve", "x", lt.out_tree, tree, False)
    all_consts = [ft.consts, st.consts, lt.consts]
    outs = root_p.bind(*[c for cs in all_consts for c in cs], *g_leaves,
                       const_lengths=tuple(len(cs) for cs in all_consts), f=ft.jaxpr,
                       solve=st.jaxpr, l_and_s=lt.jaxpr)
    return tree_unflatten(st.out_tree, outs)


__all__ = ["custom_linear_solve", "custom_root"]
