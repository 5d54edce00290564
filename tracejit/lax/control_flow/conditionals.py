"""`cond` (and lax.cond/switch on top of it) with all of its rules: abstract eval, reference
impl, jvp, linearize, transpose, batching and DCE; its native lowering is in
backend/llvm/control_flow.py."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.batching import batch_jaxpr, move_to_front
from ...core.config import config
from ...core.dce import compress, dce_closed, keep_invars
from ...core.interpret import eval_jaxpr
from ...core.jaxpr import ClosedJaxpr, Eqn, JaxprTypeError
from ...core.jaxpr_util import eval_closed, trace_closed
from ...core.jvp_trace import jvp_jaxpr
from ...core.linearize import linearize_jaxpr
from ...core.primitive import Primitive
from ...core.pytree import tree_flatten, tree_leaves, tree_unflatten
from ...core.refs import check_no_refs, current_values, ref_scope, refs_in_use, thread_refs
from ...core.rules import (
    axis_size,
    batch_dims,
    is_undefined,
    moveaxis,
    nonzero_mask,
    nonzero_tangents,
    not_mapped,
    with_zeros,
    zeros_like_aval,
)
from ...core.trace import fun_debug_info, get_aval, is_concrete
from ...core.transpose import transpose_jaxpr
from ..elementwise import clamp, convert_element_type, ne, select_n
from ..processes import vma_p  # (a retyping identity: no copy, no call)
from ..shape import broadcast_in_dim
from .common import (
    _asarray,
    _check_branch_outputs,
    _check_types,
    _flat_avals,
    _forwarding,
    _join_consts,
    _keep_outputs,
    _or,
    _trace,
    _Traced,
    _unalias,
)

# --- cond ----------------------------------------------------------------------------------

def _cond_abstract(index, *args, branches):
    if index.shape != () or index.dtype != dtypes.int32:
        raise JaxprTypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    out = branches[0].out_avals
    for b in branches:
        _check_types("cond branch operands", b.in_avals, args)
        _check_types("cond branch outputs", out, b.out_avals)
    return out


def _cond_impl(index, *args, branches):
    branch = branches[int(np.clip(index, 0, len(branches) - 1))]
    return _unalias(eval_jaxpr(branch.jaxpr, branch.consts, *args), args)


cond_p = Primitive("cond", multiple_results=True)
cond_p.def_abstract_eval(_cond_abstract)
cond_p.def_impl(_cond_impl)

_NO_OPERAND = object()


def _legacy_operand(operands: tuple, operand: Any) -> tuple:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def _cond_branches(api: str, index: Any, funs: Sequence[Callable], names: Sequence[str],
                   operands: tuple, order: Sequence[int]) -> Any:
    if not refs_in_use():
        return _staged_cond(api, index, funs, names, operands, order)
    owner = object()

    def run(plan):  # the Refs the branches touch: extra operands, and results of every branch
        def with_refs(fun):
            @functools.wraps(fun)
            def branch(*ops):
                values = ops[-1] if plan else ()
                with ref_scope(owner, plan, values) as scope:
                    out = fun(*(ops[:-1] if plan else ops))
                    debug = fun_debug_info(fun, [], api)
                    check_no_refs(tree_leaves(out), debug.fun_name, debug.fun_source, api)
                    return (out, [scope.values[r] for r in plan]) if plan else out
            return branch
        if not plan:  # (until a branch touches a Ref, the cond is staged as it is)
            return _staged_cond(api, index, [with_refs(f) for f in funs], names, operands,
                                order), []
        return _staged_cond(api, index, [with_refs(f) for f in funs], names,
                            (*operands, current_values(plan)), order)
    return thread_refs(owner, run)


def _staged_cond(api: str, index: Any, funs: Sequence[Callable], names: Sequence[str],
                 operands: tuple, order: Sequence[int]) -> Any:
    """Trace each branch (in `order`, as JAX does), check outputs against the first, bind."""
    leaves, args_tree = tree_flatten(operands)
    avals = _flat_avals(leaves)
    traced: list[_Traced | None] = [None] * len(funs)
    for i in order:
        traced[i] = _trace(funs[i], args_tree, avals, api)
    first = order[0]
    for i in order[1:]:
        _check_branch_outputs(api, names[first], names[i], funs[first], funs[i], traced[first],
                              traced[i])
    jaxprs, consts = _join_consts(traced)
    # an output every branch takes from the same input is that input, not a cond output
    fwds = [_forwarding(j.jaxpr) for j in jaxprs]
    in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
    jaxprs = [_keep_outputs(j, [f is None for f in in_fwd]) for j in jaxprs]
    outs = iter(cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs)))
    inputs = [*consts, *leaves]
    outs = [next(outs) if f is None else _asarray(inputs[f]) for f in in_fwd]
    return tree_unflatten(traced[first].out_tree, outs)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _NO_OPERAND) -> Any:
    """`true_fun(*operands)` if pred else `false_fun(*operands)`; both branches are traced.
    The legacy form `cond(pred, true_operand, true_fun, false_operand, false_fun)` still works
    (as in JAX): each branch gets its own operand."""
    if not callable(true_fun) and callable(false_fun) and len(operands) == 2 and \
            callable(operands[1]):
        true_operand, true_fun, (false_operand, false_fun) = true_fun, false_fun, operands
        return cond(pred, lambda ops: true_fun(ops[0]), lambda ops: false_fun(ops[1]),
                    (true_operand, false_operand))
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _legacy_operand(operands, operand)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of "
                        + (f"type {type(pred)}" if isinstance(pred, Sequence)
                           else f"shape {np.shape(pred)}."))
    try:
        pred_dtype = dtypes.result_type(pred)
    except TypeError:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from None
    if pred_dtype != dtypes.bool_:
        if pred_dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        pred = ne(pred, 0)
    if config.jax_disable_jit and is_concrete(pred):
        return true_fun(*operands) if pred else false_fun(*operands)
    index = convert_element_type(pred, dtypes.int32)
    # branch 0 is false_fun (JAX's order), but true_fun is traced and reported first
    return _cond_branches("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"),
                          operands, order=(1, 0))


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """`branches[clamp(0, index, len(branches) - 1)](*operands)`; all branches are traced."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _legacy_operand(operands, operand)
    if len(np.shape(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        index_dtype = dtypes.result_type(index)
    except TypeError:
        raise TypeError(f"Index type must be an integer, got {index}.") from None
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = convert_element_type(index, dtypes.int32)
    index = clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
    if config.jax_disable_jit and is_concrete(index):
        return branches[int(index)](*operands)
    names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]
    return _cond_branches("switch", index, branches, names, operands,
                          order=range(len(branches)))


# --- transformation rules ---------------------------------------------------------------

def _union_out(rule, branches, nz, n_out):
    """Run rule(branch, nz, instantiate) -> (..., out_nonzero) on every branch with the union
    of their nonzero outputs instantiated, so all branches agree."""
    first = [rule(b, nz, [False] * n_out) for b in branches]
    union = [False] * n_out
    for r in first:
        union = _or(union, r[-1])
    return [r if r[-1] == union else rule(b, nz, union) for b, r in zip(branches, first)], union


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nz = nonzero_mask(tangents[1:])
    n_out = len(branches[0].out_avals)
    results, out_nz = _union_out(jvp_jaxpr, branches, nz, n_out)
    outs = cond_p.bind(index, *ops, *nonzero_tangents(tangents[1:]),
                       branches=tuple(r[0] for r in results))
    return outs[:n_out], with_zeros(outs[n_out:], out_nz, branches[0].out_avals)


def _residual_slots(res_avals: list[list[ShapedArray]]) -> tuple[list, list[list[int]]]:
    """Shared residual slots for cond branches: a slot per aval and per-branch occurrence;
    returns the slot avals and, per branch, the slot of each of its residuals."""
    slots: list[ShapedArray] = []
    assignment = []
    for avals in res_avals:
        used: set[int] = set()
        mine = []
        for a in avals:
            k = next((i for i, s in enumerate(slots) if s == a and i not in used), None)
            if k is None:
                slots.append(a)
                k = len(slots) - 1
            used.add(k)
            mine.append(k)
        assignment.append(mine)
    return slots, assignment


def _cond_linearize(primals, tangents, *, branches):
    index, *ops = primals
    nz = nonzero_mask(tangents[1:])
    n_out = len(branches[0].out_avals)
    results, out_nz = _union_out(linearize_jaxpr, branches, nz, n_out)
    slots, assignment = _residual_slots([k.out_avals[n_out:] for k, *_ in results])
    op_avals = [get_aval(o) for o in ops]
    known, lin = [], []
    for (k, linear, _, _), mine in zip(results, assignment):
        known.append(trace_closed(_fill_slots(k, n_out, mine, slots), op_avals))
        lin.append(trace_closed(_read_slots(linear, mine, len(slots)),
                                slots + linear.in_avals[len(mine):]))
    outs = cond_p.bind(index, *ops, branches=tuple(known))
    t_out = []
    if any(out_nz):
        t_out = cond_p.bind(index, *outs[n_out:], *nonzero_tangents(tangents[1:]),
                            branches=tuple(lin))
    return outs[:n_out], with_zeros(t_out, out_nz, branches[0].out_avals)


def _fill_slots(known: ClosedJaxpr, n_out: int, mine: list[int], slots: list[ShapedArray]):
    def fun(*ops):
        outs = eval_closed(known, *ops)
        filled: list[Any] = [None] * len(slots)
        for k, r in zip(mine, outs[n_out:]):
            filled[k] = r
        return outs[:n_out] + [zeros_like_aval(a) if f is None else f
                               for f, a in zip(filled, slots)]
    return fun


def _read_slots(lin: ClosedJaxpr, mine: list[int], n_slots: int):
    def fun(*args):
        slots, tangents = args[:n_slots], args[n_slots:]
        return eval_closed(lin, *[slots[k] for k in mine], *tangents)
    return fun


def _cond_transpose(cts, index, *ops, branches):
    linear = [is_undefined(o) for o in ops]
    ct_nz = nonzero_mask(cts)
    t_branches = tuple(transpose_jaxpr(b, linear, ct_nz) for b in branches)
    outs = iter(cond_p.bind(index, *[o for o in ops if not is_undefined(o)],
                            *nonzero_tangents(cts), branches=t_branches))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batch(vals, dims, *, branches):
    size = axis_size(vals, dims)
    (index, *ops), (d_index, *d_ops) = vals, dims
    in_b = [d is not not_mapped for d in d_ops]
    ops = move_to_front(ops, d_ops)
    if d_index is not_mapped:
        out_b = _batched_outputs(branches, size, in_b)
        batched = tuple(batch_jaxpr(b, size, in_b, out_b)[0] for b in branches)
        return cond_p.bind(index, *ops, branches=batched), batch_dims(out_b)
    # a batched predicate: run every branch on all lanes, then pick each lane's result
    index = clamp(np.int32(0), moveaxis(index, d_index, 0), np.int32(len(branches) - 1))
    outs = [eval_closed(batch_jaxpr(b, size, in_b, True)[0], *ops) for b in branches]
    picked = []
    for k, cases in enumerate(zip(*outs)):
        shape = get_aval(cases[0]).shape
        out = select_n(broadcast_in_dim(index, shape, (0,)), *cases)
        picked.append(_typed_as_branches(out, [b.out_avals[k] for b in branches]))
    # (an output no branch makes vary is typed invariant, as JAX's, though each lane holds its
    # own branch's value: core/batching.py marks it spread from cond's type rule)
    return picked, [0] * len(picked)


def _typed_as_branches(out: Any, avals: list) -> Any:
    """`out` (the lanes' picked values) typed as the branches' output, as JAX types a cond's:
    the axes the predicate alone varies over taken from its type (the other axes' batch traces
    then hold it spread, core/batching.py; a process axis's type is the value's own)."""
    extra = getattr(get_aval(out), "vma", frozenset()).difference(*[a.vma for a in avals])
    if not extra:
        return out
    return vma_p.bind(out, add=(), remove=tuple(sorted(extra, key=str)))


def _batched_outputs(branches, size: int, in_b: list[bool]) -> list[bool]:
    """The outputs some branch batches, given which operands are batched."""
    out_b = [False] * len(branches[0].out_avals)
    for b in branches:
        out_b = _or(out_b, batch_jaxpr(b, size, in_b, False)[1])
    return out_b


cond_p.def_jvp(_cond_jvp)
cond_p.def_linearize(_cond_linearize)
cond_p.def_transpose(_cond_transpose)
cond_p.def_batch(_cond_batch)


def _dce_cond(eqn: Eqn, used: list[bool]) -> Eqn:
    results = [dce_closed(b, used) for b in eqn.params["branches"]]
    reads = [any(col) for col in zip(*(r for _, r in results))]
    branches = tuple(keep_invars(b, reads) for b, _ in results)
    index, *ops = eqn.invars
    return eqn.replace(invars=[index] + compress(ops, reads), outvars=compress(eqn.outvars, used),
                       params={**eqn.params, "branches": branches})


cond_p.def_dce(_dce_cond)
