"""Control-flow primitives `cond`, `while` and `scan`, and the user functions on top of them:
cond/switch, while_loop/fori_loop, scan/map. A branch or body is traced to a closed jaxpr whose
constants (closed-over arrays and outer tracers) become explicit leading operands."""
from __future__ import annotations

import collections
import inspect
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.config import config
from ..core.errors import ConcretizationTypeError
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Jaxpr, JaxprTypeError, Var
from ..core.primitive import Primitive
from ..core.pytree import PyTreeDef, tree_flatten, tree_map, tree_unflatten
from ..core.trace import (Tracer, concrete_value, fun_debug_info, get_aval, is_concrete,
                          to_numpy, trace_to_jaxpr)
from ._base import canonicalize_axis
from .elementwise import add, bitwise_or, clamp, convert_element_type, lt, ne
from .shape import concatenate, expand_dims, index_in_dim, pad, rev, slice_in_dim

# --- tracing branches and bodies -----------------------------------------------------------


class _Traced(NamedTuple):
    jaxpr: ClosedJaxpr       # its constvars are now leading invars; no consts of its own
    consts: list             # the operands for those leading invars
    out_tree: PyTreeDef
    out_avals: list[ShapedArray]


def _trace(fun: Callable, args_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
           traced_for: str) -> _Traced:
    """Trace `fun(*args)` (args flattened by `args_tree`) to a jaxpr taking consts first."""
    def flat_fun(*leaves):
        out_leaves, flat_fun.out_tree = tree_flatten(fun(*tree_unflatten(args_tree, leaves)))
        return out_leaves

    debug = fun_debug_info(fun, _arg_names(fun, args_tree), traced_for)
    closed = trace_to_jaxpr(flat_fun, in_avals, debug)
    j = closed.jaxpr
    jaxpr = Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info)
    return _Traced(ClosedJaxpr(jaxpr, []), closed.consts, flat_fun.out_tree, j.out_avals)


def _join_consts(traced: Sequence[_Traced]) -> tuple[list[ClosedJaxpr], list]:
    """Give every branch the same leading const operands: the union of theirs, deduplicated."""
    consts: list = []
    seen: set[int] = set()
    for t in traced:
        for c in t.consts:
            if id(c) not in seen:
                seen.add(id(c))
                consts.append(c)
    jaxprs = []
    for t in traced:
        j, n = t.jaxpr.jaxpr, len(t.consts)
        own = {id(c): v for c, v in zip(t.consts, j.invars[:n])}
        constvars = [own[id(c)] if id(c) in own else Var(get_aval(c)) for c in consts]
        jaxprs.append(ClosedJaxpr(Jaxpr([], constvars + j.invars[n:], j.outvars, j.eqns,
                                        j.debug_info), []))
    return jaxprs, consts


# JAX drops outputs that merely return an input (a branch passing an operand through, a loop
# carry the body leaves unchanged) and hands back the input itself; these do the rewriting.

def _forwarding(jaxpr: Jaxpr) -> list[int | None]:
    """For each output, the index of the input it returns unchanged, else None."""
    index = {v: i for i, v in enumerate(jaxpr.invars)}
    return [index.get(v) for v in jaxpr.outvars]


def _rebuild(closed: ClosedJaxpr, invars: list | None = None, outvars: list | None = None,
             eqns: list | None = None) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars if invars is None else invars,
                             j.outvars if outvars is None else outvars,
                             j.eqns if eqns is None else eqns, j.debug_info), closed.consts)


def _keep_outputs(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    return _rebuild(closed, outvars=[v for v, k in zip(closed.jaxpr.outvars, keep) if k])


def _move_to_front(items: Sequence, move: Sequence[bool]) -> list:
    return [x for x, m in zip(items, move) if m] + [x for x, m in zip(items, move) if not m]


def _live(jaxpr: Jaxpr) -> tuple[list, list[bool]]:
    """Dead-code elimination: the equations the outputs need, and which inputs they read."""
    live = {v for v in jaxpr.outvars}
    eqns = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars):
            eqns.append(eqn)
            live.update(v for v in eqn.invars)
    return eqns[::-1], [v in live for v in jaxpr.invars]


def _flat_avals(leaves: Sequence[Any]) -> list[ShapedArray]:
    return [get_aval(x) for x in leaves]


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """JAX's typematch: shape and dtype agree; weak types may differ."""
    return a.shape == b.shape and a.dtype == b.dtype


def _promote_weak_init(vals: list, in_avals: list[ShapedArray],
                       out_avals: list[ShapedArray]) -> tuple[list, bool]:
    """JAX's rule for loop carries: a weakly typed initial value whose type differs from the
    body's output is converted to the promoted dtype (`fori_loop(0, 3, f, 0)` with a float
    body gives a float32 carry); the body is then traced again."""
    changed = False
    out = []
    for x, a_in, a_out in zip(vals, in_avals, out_avals):
        if a_in.weak_type and not _typematch(a_in, a_out):
            dtype = dtypes.result_type(x, ShapeDtypeStruct(a_out.shape, a_out.dtype,
                                                           weak_type=a_out.weak_type))
            x = _convert(x, a_in, dtype)
            changed = True
        out.append(x)
    return out, changed


def _convert(x: Any, aval: ShapedArray, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer):
        return convert_element_type(x, dtype)
    # a concrete value converts now, so a jaxpr shows the promoted literal (`0.0:f32[]`)
    with np.errstate(all="ignore"):
        value = np.asarray(to_numpy(x, aval), dtype=dtype)
    return Array.from_numpy(value, ShapedArray(aval.shape, dtype, False))


def _check_types(what: str, expected: Sequence[ShapedArray],
                 given: Sequence[ShapedArray]) -> None:
    """The jaxpr checker's rule for control-flow operands and results (weak types may differ)."""
    if len(expected) != len(given) or not all(_typematch(a, b) for a, b in zip(expected, given)):
        raise JaxprTypeError(f"{what}: expected {_avals_short(expected)}, "
                             f"got {_avals_short(given)}")


def _avals_short(avals: Sequence[ShapedArray]) -> str:
    return " ".join(a.str_short() for a in avals)


def _unalias(outs: Sequence[np.ndarray], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Copy outputs that are a caller's writable input buffer: results get frozen as Arrays."""
    ids = {id(a) for a in args}
    return [np.array(o) if id(o) in ids and o.flags.writeable else o for o in outs]


def _asarray(x: Any) -> Any:
    if isinstance(x, (Array, Tracer)):
        return x
    aval = get_aval(x)
    return Array.from_numpy(np.array(to_numpy(x, aval)), aval)  # a copy: x stays the caller's


# --- error messages (JAX's wording) --------------------------------------------------------

def _type_str(aval: ShapedArray) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _mismatch(a: ShapedArray, b: ShapedArray) -> str:
    what = [w for w, bad in (("the dtypes do not match", a.dtype != b.dtype),
                             ("the shapes do not match", a.shape != b.shape)) if bad]
    return ", so " + ", and ".join(what) if what else ""


def _itemize(diffs: list[str], capitalize: bool = True) -> str:
    if len(diffs) == 1:
        d = diffs[0]
        return f"{d[0].upper() if capitalize else d[0]}{d[1:]}.\n"
    return "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


_DICTS = (dict, collections.OrderedDict)


def _child_keys(td: PyTreeDef) -> list:
    if td.node_type in _DICTS:
        return list(td.node_data)
    if td.node_type is collections.defaultdict:
        return list(td.node_data[1])
    return list(range(len(td.children)))


def _key_str(td: PyTreeDef, i: int) -> str:
    fields = getattr(td.node_type, "_fields", None)
    if td.node_type in _DICTS or td.node_type is collections.defaultdict:
        return f"[{_child_keys(td)[i]!r}]"
    if isinstance(td.node_type, type) and issubclass(td.node_type, tuple) and fields:
        return f".{fields[i]}"
    return f"[{i}]"


def _leaf_paths(td: PyTreeDef, prefix: str = "") -> list[str]:
    if td.node_type is None:
        return [prefix]
    return [p for i, c in enumerate(td.children) for p in _leaf_paths(c, prefix + _key_str(td, i))]


def _arg_names(fun: Callable, args_tree: PyTreeDef) -> list[str]:
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    return [p for i, c in enumerate(args_tree.children)
            for p in _leaf_paths(c, params[i] if i < len(params) else f"args[{i}]")]


def _structure_diffs(td1: PyTreeDef, td2: PyTreeDef, leaf: str,
                     path: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(path, thing1, thing2, why) for each place two pytree structures differ (JAX's
    `equality_errors`)."""
    def thing(td):
        return leaf if td.node_type is None else str(td.node_type)

    if td1.node_type is None and td2.node_type is None:
        return
    if td1.node_type is not td2.node_type:
        yield path, thing(td1), thing(td2), "their Python types differ"
        return
    n1, n2 = len(td1.children), len(td2.children)
    if td1.node_type in (list, tuple) and n1 != n2:
        name = td1.node_type.__name__
        yield path, f"{name} of length {n1}", f"{name} of length {n2}", "the lengths do not match"
        return
    if n1 != n2:
        diff = " ".join(repr(k) for k in set(_child_keys(td1)) ^ set(_child_keys(td2)))
        yield (path, f"{thing(td1)} with {n1} child{'ren' if n1 > 1 else ''}",
               f"{thing(td2)} with {n2} child{'ren' if n2 > 1 else ''}",
               "the numbers of children do not match"
               + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))
        return
    if td1.node_data != td2.node_data:
        yield (path, f"{thing(td1)} with pytree metadata {td1.node_data}",
               f"{thing(td2)} with pytree metadata {td2.node_data}",
               "the pytree node metadata does not match")
        return
    for i, (c1, c2) in enumerate(zip(td1.children, td2.children)):
        yield from _structure_diffs(c1, c2, leaf, path + _key_str(td1, i))


def _fun_info(fun: Callable) -> str:
    d = fun_debug_info(fun, [], "")
    return f"{d.fun_name} at {d.fun_source}"


def _check_branch_outputs(api: str, name1: str, name2: str, f1: Callable, f2: Callable,
                          t1: _Traced, t2: _Traced) -> None:
    heading = f"{name1} is {_fun_info(f1)}\n{name2} is {_fun_info(f2)}\n\n"
    if t1.out_tree != t2.out_tree:
        diffs = [f"{name1} output{' at path ' + p if p else ''} is a {a} but {name2} output"
                 f"{' at path ' + p if p else ''} is a {b}, so {why}"
                 for p, a, b, why in _structure_diffs(t1.out_tree, t2.out_tree, "pytree leaf")]
        raise TypeError(f"{api} branch outputs must have the same pytree structure, but they "
                        f"differ:\n\n{heading}{_itemize(diffs, capitalize=False)}\nRevise "
                        f"{name1} and/or {name2} so that they have the same pytree structure.")
    paths = _leaf_paths(t1.out_tree)
    diffs = [f"the output of {name1}{' at path ' + p if p else ''} has type {_type_str(a)} but "
             f"the corresponding output of {name2} has type {_type_str(b)}{_mismatch(a, b)}"
             for p, a, b in zip(paths, t1.out_avals, t2.out_avals) if not _typematch(a, b)]
    if diffs:
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                        f"{heading}{_itemize(diffs)}\nRevise {name1} and/or {name2} so that all "
                        "output types match.")


def _check_carry(name: str, body_fun: Callable, in_tree: PyTreeDef,
                 in_avals: Sequence[ShapedArray], out_tree: PyTreeDef,
                 out_avals: Sequence[ShapedArray]) -> None:
    try:
        carry_name = next(iter(inspect.signature(body_fun).parameters), None)
    except (TypeError, ValueError):
        carry_name = None

    def component(p: str) -> str:
        if carry_name:
            return f"the input carry component {carry_name}{p}" if p else \
                f"the input carry {carry_name}"
        return f"the input carry at path {p}" if p else "the input carry"

    if in_tree != out_tree:
        diffs = [f"{component(p)} is a {a} but the corresponding component of the carry output "
                 f"is a {b}, so {why}"
                 for p, a, b, why in _structure_diffs(in_tree, out_tree, str(ShapedArray))]
        raise TypeError(f"{name} function carry input and carry output must have the same "
                        f"pytree structure, but they differ:\n\n{_itemize(diffs)}\nRevise the "
                        "function so that the carry output has the same pytree structure as the "
                        "carry input.")
    diffs = [f"{component(p)} has type {_type_str(a)} but the corresponding output carry "
             f"component has type {_type_str(b)}{_mismatch(a, b)}"
             for p, a, b in zip(_leaf_paths(in_tree), in_avals, out_avals)
             if not _typematch(a, b)]
    if diffs:
        raise TypeError(f"{name} function carry input and carry output must have equal types, "
                        f"but they differ:\n\n{_itemize(diffs)}\nRevise the function so that all "
                        "output types match the corresponding input types.")


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
    """`true_fun(*operands)` if pred else `false_fun(*operands)`; both branches are traced."""
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


# --- while ---------------------------------------------------------------------------------

def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = avals[:cond_nconsts]
    body_consts = avals[cond_nconsts:cond_nconsts + body_nconsts]
    carry = avals[cond_nconsts + body_nconsts:]
    _check_types("while cond_jaxpr", cond_jaxpr.in_avals, cond_consts + carry)
    _check_types("while body_jaxpr", body_jaxpr.in_avals, body_consts + carry)
    _check_types("while carry", body_jaxpr.out_avals, carry)
    _check_types("while cond_jaxpr output", [ShapedArray((), dtypes.bool_)],
                 cond_jaxpr.out_avals)
    return body_jaxpr.out_avals


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts:]
    while eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cond_consts, *carry)[0]:
        carry = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *body_consts, *carry)
    return _unalias(carry, args)


while_p = Primitive("while", multiple_results=True)
while_p.def_abstract_eval(_while_abstract)
while_p.def_impl(_while_impl)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """`val = init_val; while cond_fun(val): val = body_fun(val)`, as one primitive."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if config.jax_disable_jit:
        try:
            val = tree_map(_asarray, init_val)
            while cond_fun(val):
                val = tree_map(_asarray, body_fun(val))
            return val
        except ConcretizationTypeError:
            pass  # a traced value decides the loop: stage the primitive after all
    init_flat, args_tree = tree_flatten((init_val,))
    init_tree = args_tree.children[0]

    def trace_both(avals):
        cond_t = _trace(cond_fun, args_tree, avals, "while_cond")
        body_t = _trace(body_fun, args_tree, avals, "while_body")
        if cond_t.out_tree.node_type is not None or len(cond_t.out_avals) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree "
                            f"{cond_t.out_tree}.")
        pred = cond_t.out_avals[0]
        if pred.shape != () or pred.dtype != dtypes.bool_:
            raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                            f"{cond_t.out_avals}.")
        return cond_t, body_t

    init_avals = _flat_avals(init_flat)
    cond_t, body_t = trace_both(init_avals)
    if len(body_t.out_avals) == len(init_avals):
        init_flat, changed = _promote_weak_init(init_flat, init_avals, body_t.out_avals)
        if changed:
            init_avals = _flat_avals(init_flat)
            cond_t, body_t = trace_both(init_avals)
    _check_carry("while_loop body", body_fun, init_tree, init_avals, body_t.out_tree,
                 body_t.out_avals)
    # a carry the body leaves unchanged and cond_fun does not read becomes a body constant
    cond_jaxpr, body_jaxpr = cond_t.jaxpr, body_t.jaxpr
    cond_consts, body_consts = cond_t.consts, body_t.consts
    nc, nb = len(cond_consts), len(body_consts)
    live_eqns, cond_reads = _live(cond_jaxpr.jaxpr)
    move = [f == nb + i and not cond_reads[nc + i]
            for i, f in enumerate(_forwarding(body_jaxpr.jaxpr))]
    init_vals = [x for x, m in zip(init_flat, move) if not m]
    moved = [x for x, m in zip(init_flat, move) if m]
    if moved:
        cond_jaxpr = _rebuild(cond_jaxpr, eqns=live_eqns, invars=[
            v for v, m in zip(cond_jaxpr.jaxpr.invars, [False] * nc + move) if not m])
        body_jaxpr = _keep_outputs(body_jaxpr, [not m for m in move])
        body_jaxpr = _rebuild(body_jaxpr, invars=_move_to_front(body_jaxpr.jaxpr.invars,
                                                                [False] * nb + move))
        body_consts = moved + body_consts
    outs = iter(while_p.bind(*cond_consts, *body_consts, *init_vals,
                             cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                             cond_nconsts=nc, body_nconsts=len(body_consts)))
    kept = iter(moved)
    outs = [next(kept) if m else next(outs) for m in move]
    return tree_unflatten(body_t.out_tree, outs)


# --- scan ----------------------------------------------------------------------------------

def _scan_abstract(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry = avals[:num_consts], avals[num_consts:num_consts + num_carry]
    xs = avals[num_consts + num_carry:]
    if any(not x.shape or x.shape[0] != length for x in xs):
        raise JaxprTypeError(f"scan of length {length} got xs {_avals_short(xs)}")
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    _check_types("scan jaxpr", jaxpr.in_avals, consts + carry + tuple(x_avals))
    carry_out, ys = jaxpr.out_avals[:num_carry], jaxpr.out_avals[num_carry:]
    _check_types("scan carry", carry_out, carry)
    return carry_out + [ShapedArray((length,) + y.shape, y.dtype, y.weak_type) for y in ys]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry = args[:num_consts], args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in jaxpr.out_avals[num_carry:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *[x[i, ...] for x in xs])
        carry = outs[:num_carry]
        for y, out in zip(ys, outs[num_carry:]):
            y[i] = out
    return _unalias(carry, args) + ys


scan_p = Primitive("scan", multiple_results=True)
scan_p.def_abstract_eval(_scan_abstract)
scan_p.def_impl(_scan_impl)


def _scan_length(xs_flat: list, length: Any) -> int:
    for x in xs_flat:
        if not hasattr(x, "shape"):
            raise ValueError("scan got value with no leading axis to scan over: "
                             f"{', '.join(str(x) for x in xs_flat if not hasattr(x, 'shape'))}.")
        if not np.shape(x):
            raise IndexError(f"scan got a scalar (shape ()) in xs, which has no leading axis to "
                             f"scan over: {x}.")
    lengths = [np.shape(x)[0] for x in xs_flat]
    if length is not None:
        if isinstance(length, Tracer):
            length = concrete_value(
                length, "The `length` argument to `scan` expects a concrete `int` value. For "
                        "scan-like iteration with a dynamic length, use `while_loop` or "
                        "`fori_loop`.")
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _stack(ys: Sequence[Any]) -> Any:
    return concatenate([expand_dims(y, (0,)) for y in ys], 0)


def _scan_python(f: Callable, init: Any, xs_flat: list, xs_tree: PyTreeDef, length: int,
                 reverse: bool) -> tuple[Any, Any]:
    """scan under `disable_jit`: a plain Python loop over slices, as JAX does."""
    if length == 0:
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                         "output type is unknown.")
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x = tree_unflatten(xs_tree, [index_in_dim(x, i, keepdims=False) for x in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, tree_map(lambda *leaves: _stack(leaves), *ys)


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of xs; returns (carry, stacked ys)."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_flat, init_tree = tree_flatten(init)
    xs_flat, xs_tree = tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    if config.jax_disable_jit:
        return _scan_python(f, init, xs_flat, xs_tree, length, reverse)
    _, args_tree = tree_flatten((init, xs))
    x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in _flat_avals(xs_flat)]

    def trace_body(carry_avals):
        t = _trace(f, args_tree, carry_avals + x_avals, "scan")
        if t.out_tree.node_type not in (tuple, list) or len(t.out_tree.children) != 2:
            raise TypeError(f"scan body output must be a pair, got "
                            f"{tree_unflatten(t.out_tree, t.out_avals)}.")
        return t, t.out_tree.children[0]

    init_avals = _flat_avals(init_flat)
    body, carry_tree = trace_body(init_avals)
    num_carry = len(init_flat)
    if carry_tree.num_leaves == num_carry:
        init_flat, changed = _promote_weak_init(init_flat, init_avals, body.out_avals[:num_carry])
        if changed:
            init_avals = _flat_avals(init_flat)
            body, carry_tree = trace_body(init_avals)
    _check_carry("scan body", f, init_tree, init_avals, carry_tree,
                 body.out_avals[:carry_tree.num_leaves])
    if isinstance(unroll, Tracer):
        unroll = concrete_value(unroll, "The `unroll` argument to `scan` expects a concrete "
                                        "`int` or `bool` value.")
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    if int(unroll) < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    jaxpr, consts, nc = body.jaxpr, body.consts, len(body.consts)
    fwd = _forwarding(jaxpr.jaxpr)
    # a carry the body leaves unchanged becomes a constant; it comes back as init gave it
    move = [f == nc + i for i, f in enumerate(fwd[:num_carry])]
    moved = [x for x, m in zip(init_flat, move) if m]
    args = [x for x, m in zip(init_flat, move) if not m] + xs_flat
    # a y that is just the x slice is xs itself
    y_fwd = [f - nc - len(moved) if f is not None and f >= nc + num_carry else None
             for f in fwd[num_carry:]]
    jaxpr = _keep_outputs(jaxpr, [not m for m in move] + [f is None for f in y_fwd])
    jaxpr = _rebuild(jaxpr, invars=_move_to_front(jaxpr.jaxpr.invars,
                                                  [False] * nc + move + [False] * len(xs_flat)))
    outs = iter(scan_p.bind(*moved, *consts, *args, jaxpr=jaxpr, num_consts=len(moved) + nc,
                            num_carry=num_carry - len(moved), length=length,
                            reverse=bool(reverse), unroll=int(unroll)))
    kept = iter(moved)
    carry = [next(kept) if m else next(outs) for m in move]
    ys = [next(outs) if f is None else _asarray(args[f]) for f in y_fwd]
    return tree_unflatten(body.out_tree, carry + ys)


def map(f: Callable, xs: Any) -> Any:  # noqa: A001 - lax's name
    """`stack([f(x) for x in xs])` over the leading axis of (pytree) xs, via scan."""
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """Prefix combination `[a, fn(a, b), fn(fn(a, b), c), ...]` of an associative `fn` along
    `axis`, in O(log n) rounds of elementwise work (Blelloch's algorithm, as JAX builds it)."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    elems_flat, tree = tree_flatten(elems)
    axis = canonicalize_axis(axis, np.ndim(elems_flat[0]))
    if reverse:
        elems_flat = [rev(e, [axis]) for e in elems_flat]
    num_elems = np.shape(elems_flat[0])[axis]
    if any(np.shape(e)[axis] != num_elems for e in elems_flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[np.shape(e) for e in elems_flat]})")

    def combine(a_flat, b_flat):
        return tree_flatten(fn(tree_unflatten(tree, a_flat), tree_unflatten(tree, b_flat)))[0]

    def slices(elems, start, stop, stride=1):
        return [slice_in_dim(e, start, stop, stride, axis) for e in elems]

    def interleave(a, b):
        a_n, b_n = np.shape(a)[axis], np.shape(b)[axis]
        a_pad, b_pad = [(0, 0, 0)] * np.ndim(a), [(0, 0, 0)] * np.ndim(b)
        a_pad[axis] = (0, 1 if a_n == b_n else 0, 1)
        b_pad[axis] = (1, 0 if a_n == b_n else 1, 1)
        zero = np.array(0, get_aval(a).dtype)
        op = bitwise_or if get_aval(a).dtype == dtypes.bool_ else add
        return op(pad(a, zero, a_pad), pad(b, zero, b_pad))

    def scan_rec(elems):
        # odd outputs: the scan of adjacent pairs combined (recursively); even outputs: an odd
        # output combined with the next element; then interleave the two
        n = np.shape(elems[0])[axis]
        if n < 2:
            return elems
        odd = scan_rec(combine(slices(elems, 0, -1, 2), slices(elems, 1, None, 2)))
        even = combine(slices(odd, 0, -1) if n % 2 == 0 else odd, slices(elems, 2, None, 2))
        even = [concatenate([slice_in_dim(e, 0, 1, 1, axis), r], axis)
                for e, r in zip(elems, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    scans = scan_rec(elems_flat)
    if reverse:
        scans = [rev(s, [axis]) for s in scans]
    return tree_unflatten(tree, scans)


# --- fori_loop -----------------------------------------------------------------------------

def _fori_scan_body(body_fun: Callable) -> Callable:
    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        # `+`, not lax.add: under disable_jit the index stays a Python int, as in JAX
        return (i + 1, body_fun(i, x)), None
    return scanned_fun


def _fori_while_body(body_fun: Callable) -> Callable:
    def while_body_fun(loop_carry):
        i, upper, x = loop_carry
        return add(i, 1), upper, body_fun(i, x)
    return while_body_fun


def _fori_cond(loop_carry):
    i, upper, _ = loop_carry
    return lt(i, upper)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`. Concrete bounds lower to scan
    (the index is a weak Python int), traced bounds to while_loop."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lower_dtype, lower_weak = dtypes.dtype_and_weak(lower)
    upper_dtype, upper_weak = dtypes.dtype_and_weak(upper)
    dtype = lower_dtype if lower_dtype == upper_dtype else None
    if dtype is None and lower_dtype.kind == "i" and upper_dtype.kind == "i":
        # one weakly typed bound (a Python int) takes the other's type
        if lower_weak and not upper_weak:
            dtype = upper_dtype
        elif upper_weak and not lower_weak:
            dtype = lower_dtype
    if dtype is None:
        raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                        f"{lower_dtype.name} and {upper_dtype.name}")
    use_scan = is_concrete(lower) and is_concrete(upper)
    if use_scan:
        try:
            lower_, upper_ = int(lower), int(upper)
        except TypeError:
            use_scan = False
    if use_scan:
        length = max(upper_ - lower_, 0)
        if config.jax_disable_jit and length == 0:
            return init_val
        (_, result), _ = scan(_fori_scan_body(body_fun), (lower_, init_val), None,
                              length=length, unroll=False if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if lower_dtype != dtype:
        lower = convert_element_type(lower, dtype)
    if upper_dtype != dtype:
        upper = convert_element_type(upper, dtype)
    _, _, result = while_loop(_fori_cond, _fori_while_body(body_fun), (lower, upper, init_val))
    return result


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan"]
