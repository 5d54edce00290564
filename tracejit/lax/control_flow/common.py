"""What cond, while and scan share: tracing branches and bodies to closed jaxprs (their
constants become explicit leading operands), JAX's error messages for mismatched
branches and carries, and small pieces of the primitives' transformation and DCE rules."""
from __future__ import annotations

import collections
import inspect
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from ...core import dtypes
from ...core.array import Array
from ...core.avals import ShapedArray, ShapeDtypeStruct
from ...core.jaxpr import ClosedJaxpr, Jaxpr, JaxprTypeError, Var
from ...core.pytree import PyTreeDef, tree_flatten, tree_unflatten
from ...core.trace import Tracer, fun_debug_info, get_aval, to_numpy, trace_to_jaxpr
from ..elementwise import convert_element_type

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

def _vma(aval: ShapedArray) -> frozenset:
    return getattr(aval, "vma", frozenset())


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """JAX's typematch for a user's carries and branch outputs: also the manual mesh axes the
    values vary over (shard_map's check_vma=True; empty elsewhere)."""
    return _typematch(a, b) and _vma(a) == _vma(b)


def _type_str(aval: ShapedArray) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]{aval._vma_str()}"


def _mismatch(a: ShapedArray, b: ShapedArray) -> str:
    what = [w for w, bad in (("the dtypes do not match", a.dtype != b.dtype),
                             ("the shapes do not match", a.shape != b.shape),
                             ("the manual axis types do not match", _vma(a) != _vma(b)))
            if bad]
    return ", so " + ", and ".join(what) if what else ""


def _pcast_hint(fixes: list[str], sep: str = "\n") -> str:
    """JAX's suggestion of the pcasts that would make the varying axes agree."""
    if not fixes:
        return ""
    if len(fixes) == 1:
        hint = f"This might be fixed by {fixes[0]}.\n"
    else:
        hint = ("This might be fixed by:\n" + sep.join(f"  * {d};" + ("\n" if sep == "\n"
                                                                    else "")
                                                      for d in fixes[:-1])
                + ("" if sep == "\n" else "\n") + f"  * {fixes[-1]}.\n")
    return hint + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for "
                   "more information.\n\n")


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
             for p, a, b in zip(paths, t1.out_avals, t2.out_avals) if not _same_type(a, b)]
    # (JAX's words: the axes one branch's output varies over and the other's does not)
    fixes = [f"applying `jax.lax.pcast(..., {tuple(sorted(_vma(a1) - _vma(a2)))}, "
             f"to='varying')` to the output of {n}{' at path ' + p if p else ''}"
             for p, av1, av2 in zip(paths, t1.out_avals, t2.out_avals)
             for n, a1, a2 in [(name1, av2, av1), (name2, av1, av2)]
             if not _same_type(a1, a2) and _vma(a1) != _vma(a2) and _vma(a2) - _vma(a1)]
    if diffs:
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                        f"{heading}{_itemize(diffs)}\n{_pcast_hint(fixes, sep='')}Revise "
                        f"{name1} and/or {name2} so that all output types match.")


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
             if not _same_type(a, b)]
    fixes = [f"applying `jax.lax.pcast(..., {tuple(sorted(_vma(b) - _vma(a)))}, "
             f"to='varying')`, to the initial carry value corresponding to {component(p)}"
             for p, a, b in zip(_leaf_paths(in_tree), in_avals, out_avals)
             if not _same_type(a, b) and _vma(b) - _vma(a)]
    if diffs:
        raise TypeError(f"{name} function carry input and carry output must have equal types, "
                        f"but they differ:\n\n{_itemize(diffs)}\n{_pcast_hint(fixes)}Revise the "
                        "function so that all output types match the corresponding input types.")


# --- pieces of the transformation and DCE rules ---------------------------------------------

def _split(xs: Sequence[Any], *sizes: int) -> list[list]:
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _or(a: Sequence[bool], b: Sequence[bool]) -> list[bool]:
    return [x or y for x, y in zip(a, b)]



