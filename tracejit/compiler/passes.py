"""Jaxpr -> Jaxpr passes run before code generation: expansion of composite and user primitives
into the operations that compute them (lowerings.py), inlining of nested jit calls, scans
asked to unroll whole as their steps (unrolled_scans.py), transposed
convolutions as sub-pixel convolutions of the undilated input (conv_phases.py), algebraic
simplification, constant folding, common-subexpression elimination, forwarding of unchanged loop
carries, loop-invariant code motion and dead-code elimination. `optimize` runs them all, then
key-chain fission (compiler.key_chains), element loops (compiler.element_loops), row fusion
(compiler.rows) and fusion (compiler.fusion). Each pass returns a new Jaxpr (the input is never
mutated) and also rewrites the sub-jaxprs of control flow; the jaxpr checker accepts every
result."""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.dce import dce
from ..core.global_array import is_own_block_cut
from ..core.jaxpr import (ClosedJaxpr, Eqn, Jaxpr, JaxprTypeError, Literal, Var, check_jaxpr,
                          copy_eqns, has_effects, has_subjaxprs, inline_equations,
                          map_subjaxprs)
from ..core.primitive import ELEMENTWISE, Primitive
from ..lax.call import pjit_p
from ..lax.control_flow import cond_p, scan_p, while_p
from ..lax.elementwise import add_p, convert_element_type_p, mul_p, select_n_p
from ..lax.indexing import GatherScatterMode, gather_p
from ..lax.linalg import dot_general_p
from ..lax.processes import IDENTITIES as PROCESS_IDENTITIES
from ..lax.processes import allgather_p
from ..lax.reductions import (reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p,
                              reduce_prod_p, reduce_sum_p, reduce_xor_p)
from ..lax.shape import (broadcast_in_dim_p, concatenate_p, reshape_p, slice_p, squeeze_p,
                         transpose_p)
from ..transforms.custom import custom_jvp_call_p, custom_vjp_call_p
from ..transforms.custom_batching import custom_vmap_call_p
from .block_maps import selects_source
from .conv_layouts import channels_last_convs
from .conv_phases import split_dilated_convs
from .element_loops import element_loops
from .fusion import MAX_LOOP_PIECES, fuse
from .key_chains import split_key_chains
from .rows import fuse_rows
from .lowerings import expand_lowerings
from .unrolled_scans import unroll_scans

# Primitives whose bodies the passes may reshape: drop or add operands, outputs and consts
# (every consumer evaluates these bodies with their consts). Any other primitive's sub-jaxprs
# are rewritten with their signature and consts kept.
_CONTROL_FLOW = (cond_p, while_p, scan_p, pjit_p)

FOLD_MAX_SIZE = 1024  # larger folded results stay computed at run time, not stored as consts


def optimize(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """The whole pipeline, as the native backend runs it before code generation. With the
    `jax_enable_checks` option on, the jaxpr checker runs after every pass."""
    jaxpr, consts = _checked(expand_lowerings, jaxpr, consts)
    jaxpr, consts = _checked(inline_calls, jaxpr, consts)
    jaxpr, consts = _checked(unroll_scans, jaxpr, consts)
    jaxpr, consts = _checked(split_dilated_convs, jaxpr, consts)
    jaxpr, consts = _checked(channels_last_convs, jaxpr, consts)
    # with loops a second round catches what the first exposes: equations that read forwarded
    # carries become invariant, hoisted ones may fold, ...
    for _ in range(2 if _has_loops(jaxpr) else 1):
        jaxpr = _checked(simplify, jaxpr)
        jaxpr, consts = _checked(fold_constants, jaxpr, consts)
        jaxpr = _checked(cse, jaxpr)
        jaxpr = _checked(dce, jaxpr)  # (a product's dead readers would keep it from swapping)
        jaxpr = _checked(transposed_products, jaxpr)
        jaxpr = _checked(forward_carries, jaxpr)
        jaxpr = _checked(licm, jaxpr)
        jaxpr = _checked(dce, jaxpr)
    jaxpr = _checked(split_key_chains, jaxpr)
    jaxpr = _checked(dce, jaxpr)  # (the consts and xs each half of a split scan does not read)
    # last: the other passes need not know row_map or fused
    jaxpr = _checked(element_loops, jaxpr)
    jaxpr = _checked(dce, jaxpr)  # (the uniform loops whose results go unused)
    jaxpr = _checked(fuse_rows, jaxpr)
    jaxpr = _checked(dce, jaxpr)  # (full-size iotas a row body now makes itself)
    jaxpr = _checked(fuse, jaxpr)
    return _drop_unused_consts(jaxpr, consts)


def _checked(pass_: Callable, jaxpr: Jaxpr, *consts: list):
    """Run one pass; with checks enabled, type-check its result, naming the pass on failure."""
    out = pass_(jaxpr, *consts)
    if config.jax_enable_checks:
        try:
            check_jaxpr(out[0] if consts else out)
        except JaxprTypeError as e:
            raise JaxprTypeError(f"after the {pass_.__name__} pass: {e}") from e
    return out


# --- inline_calls ----------------------------------------------------------------------------

# calls whose body is all there is to run: custom_jvp/vjp functions left after differentiation
# compute their primal body (inlined, relu's max fuses with the bias add before it, as in XLA),
# and custom_vmap ones left after batching theirs
_INLINED = {pjit_p: "jaxpr", custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr",
            custom_vmap_call_p: "call_jaxpr"}


def inline_calls(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """Replace `jit` equations (and custom_jvp/vjp/vmap calls) by their bodies (their consts become
    constvars of the result)."""
    if not any(e.primitive in _INLINED for e in jaxpr.eqns):
        return jaxpr, consts

    def expand(eqn: Eqn):
        if eqn.primitive not in _INLINED:
            return eqn
        closed: ClosedJaxpr = eqn.params[_INLINED[eqn.primitive]]
        return inline_calls(closed.jaxpr, closed.consts)
    return inline_equations(jaxpr, consts, expand)


# --- shared helpers ------------------------------------------------------------------------

def _select(items: Sequence, keep: Sequence[bool]) -> list:
    return [x for x, k in zip(items, keep) if k]


def _reader(subst: dict[Var, Any]) -> Callable:
    """Reads an atom through a substitution of vars by atoms."""
    return lambda v: v if isinstance(v, Literal) else subst.get(v, v)


def _substitute(eqn: Eqn, read: Callable) -> Eqn:
    """`eqn` reading its operands through `read` (the same Eqn when none changes)."""
    invars = [read(v) for v in eqn.invars]
    if all(a is b for a, b in zip(invars, eqn.invars)):
        return eqn
    return Eqn(eqn.primitive, invars, eqn.outvars, eqn.params, eqn.source_info)


def _has_loops(jaxpr: Jaxpr) -> bool:
    return any(eqn.primitive in (scan_p, while_p) or any(
        _has_loops(closed.jaxpr) for value in eqn.params.values()
        for closed in (value if isinstance(value, tuple) else (value,))
        if isinstance(closed, ClosedJaxpr)) for eqn in jaxpr.eqns)


def _on_body(pass_: Callable[[Jaxpr], Jaxpr]) -> Callable[[ClosedJaxpr], ClosedJaxpr]:
    return lambda closed: ClosedJaxpr(pass_(closed.jaxpr), closed.consts)


def _rebuild(j: Jaxpr, *, constvars=None, invars=None, outvars=None, eqns=None) -> Jaxpr:
    return Jaxpr(j.constvars if constvars is None else constvars,
                 j.invars if invars is None else invars,
                 j.outvars if outvars is None else outvars,
                 j.eqns if eqns is None else eqns, j.debug_info)


def _with_invars(closed: ClosedJaxpr, invars: list) -> ClosedJaxpr:
    return ClosedJaxpr(_rebuild(closed.jaxpr, invars=invars), closed.consts)


def _size(aval: ShapedArray) -> int:
    return math.prod(aval.shape)


# (dce: the walk is core.dce, which the transformations use too; primitives with bodies declare
# their DCE rules beside their definitions, in lax/control_flow and lax/call.py)


# --- cse -------------------------------------------------------------------------------------

def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Common-subexpression elimination: an equation with the same primitive, operands and
    params as an earlier one reuses that one's outputs."""
    return _cse(jaxpr, {})


def _cse(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    subst: dict[Var, Any] = {}
    read = _reader(subst)
    seen: dict[tuple, list[Var]] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(_substitute(eqn, read),
                             _on_body(lambda j: _cse(j, memo)), memo)
        key = _cse_key(eqn)
        try:
            prev = eqn.outvars if key is None else seen.setdefault(key, eqn.outvars)
        except TypeError:  # an unhashable param: never merged
            prev = eqn.outvars
        if prev is not eqn.outvars:
            subst.update((v, p) for v, p in zip(eqn.outvars, prev))
            continue
        eqns.append(eqn)
    return _rebuild(jaxpr, outvars=[read(v) for v in jaxpr.outvars], eqns=eqns)


def _atom_key(v) -> tuple:
    if isinstance(v, Literal):  # by bits: -0.0 and 0.0 differ, a NaN equals itself
        return ("lit", v.aval, v.val.tobytes())
    return ("var", v)


def _cse_key(eqn: Eqn) -> tuple | None:
    # two prints of one value print twice
    if (not eqn.outvars or eqn.params.get("prevent_cse") or has_effects(eqn)
            or eqn.primitive.foreign):
        return None
    # the param's type is part of the key: 1 == 1.0 == True, but they mean different things
    params = tuple(sorted((k, type(v), v) for k, v in eqn.params.items()))
    return eqn.primitive, tuple(_atom_key(v) for v in eqn.invars), params


# --- fold_constants --------------------------------------------------------------------------

def fold_constants(jaxpr: Jaxpr, consts: list, max_size: int = FOLD_MAX_SIZE
                   ) -> tuple[Jaxpr, list]:
    """Evaluate equations whose operands are all known (literals and consts) with their
    reference impl, when no result has more than `max_size` elements: scalar results become
    literals, others new consts. Consts nothing reads any more are dropped."""
    return _fold(jaxpr, consts, max_size, True, {})


def _is_concrete(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, Array, bool, int, float, complex))


def _fold(jaxpr: Jaxpr, consts: list, max_size: int, new_consts: bool,
          memo: dict) -> tuple[Jaxpr, list]:
    known = {v: np.asarray(c) for v, c in zip(jaxpr.constvars, consts) if _is_concrete(c)}
    constvars, consts = list(jaxpr.constvars), list(consts)
    subst: dict[Var, Any] = {}
    read = _reader(subst)

    def fold_body(allow: bool) -> Callable[[ClosedJaxpr], ClosedJaxpr]:
        return lambda closed: ClosedJaxpr(*_fold(closed.jaxpr, closed.consts, max_size, allow,
                                                 memo))

    eqns = []
    for eqn in jaxpr.eqns:
        eqn = _substitute(eqn, read)
        allow = eqn.primitive in _CONTROL_FLOW
        eqn = map_subjaxprs(eqn, fold_body(allow), memo.setdefault(allow, {}))
        outs = _evaluate(eqn, known, max_size, new_consts)
        if outs is None:
            eqns.append(eqn)
            continue
        for v, out in zip(eqn.outvars, outs):
            if v.aval.shape == ():
                subst[v] = Literal(out, v.aval)
            else:
                constvars.append(v)
                consts.append(out)
                known[v] = out
    jaxpr = Jaxpr(constvars, jaxpr.invars, [read(v) for v in jaxpr.outvars], eqns,
                  jaxpr.debug_info)
    return _drop_unused_consts(jaxpr, consts) if new_consts else (jaxpr, consts)


def _drop_unused_consts(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    used = {v for e in jaxpr.eqns for v in e.invars} | set(jaxpr.outvars)
    keep = [v in used for v in jaxpr.constvars]
    return _rebuild(jaxpr, constvars=_select(jaxpr.constvars, keep)), _select(consts, keep)


def _evaluate(eqn: Eqn, known: dict[Var, np.ndarray], max_size: int,
              new_consts: bool) -> list[np.ndarray] | None:
    """The outputs of `eqn` when it can be folded, else None."""
    if not all(isinstance(v, Literal) or v in known for v in eqn.invars):
        return None
    if any(_size(v.aval) > max_size or (v.aval.shape and not new_consts) for v in eqn.outvars):
        return None
    # calls and control flow (possibly long loops) run at run time; so does anything holding
    # a callable, such as a custom rule
    if has_subjaxprs(eqn) or has_effects(eqn) or eqn.primitive.foreign or any(
            callable(p) for p in eqn.params.values()):
        return None
    # a broadcast scalar costs nothing inside a fused kernel, and simplify's rules read it
    if _broadcast_scalar(eqn) is not None:
        return None
    args = [v.val if isinstance(v, Literal) else known[v] for v in eqn.invars]
    with np.errstate(all="ignore"):
        outs = eqn.primitive.impl(*args, **eqn.params)
    outs = outs if eqn.primitive.multiple_results else (outs,)
    return [np.asarray(o, dtype=v.aval.dtype) for o, v in zip(outs, eqn.outvars)]


# --- simplify --------------------------------------------------------------------------------

def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Algebraic rewrites (`_rules`: from each primitive's declared algebra and fusion class,
    and the rules of particular shape ops). Each keeps the exact value, dtype and weak
    type: x*1, x+(-0.0) and x-0.0 are identities for floats, but x+0.0 (-0.0 + 0.0 is 0.0) and
    x*0 (NaN, Inf) are not. (One chooses a summation order: a small matrix-vector product's,
    `_small_contraction`, which sums as XLA does.)"""
    return _simplify(jaxpr, {})


def _simplify(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    subst: dict[Var, Any] = {}
    read = _reader(subst)
    producers: dict[Var, Eqn] = {}

    def producer(v) -> Eqn | None:
        return None if isinstance(v, Literal) else producers.get(v)
    producer.bypassed = []  # (Allgathers a rule read around: `_own_block_of_gather`)

    eqns = []
    for eqn in jaxpr.eqns:
        pending = [map_subjaxprs(eqn, _on_body(lambda j: _simplify(j, memo)), memo)]
        while pending:  # rewritten eqns go through the rules again
            eqn = pending.pop()
            eqn = _substitute(eqn, read)
            out = _rewrite(eqn, producer)
            if isinstance(out, list):
                pending.extend(reversed(out))
            elif out is not None:
                subst[eqn.outvars[0]] = read(out)
            else:
                eqns.append(eqn)
                producers.update((v, eqn) for v in eqn.outvars)
    outvars = [read(v) for v in jaxpr.outvars]
    if producer.bypassed:
        eqns = _without_unread_gathers(eqns, outvars, producer.bypassed)
    return _rebuild(jaxpr, outvars=outvars, eqns=eqns)


def _without_unread_gathers(eqns: list, outvars: list, bypassed: list) -> list:
    """`eqns` less the bypassed Allgathers nothing reads any more. A collective is otherwise
    never dropped (effectful); these go on every process alike, as each bypasses its own."""
    candidates = {id(e) for e in bypassed}
    live = {v for v in outvars if isinstance(v, Var)}
    dropped = set()
    for e in reversed(eqns):  # (what reads them may itself be unread: dce drops it later)
        if any(v in live for v in e.outvars) or (has_effects(e) and id(e) not in candidates):
            live.update(v for v in e.invars if isinstance(v, Var))
        elif id(e) in candidates:
            dropped.add(id(e))
    return [e for e in eqns if id(e) not in dropped]


def _rewrite(eqn: Eqn, producer: Callable) -> list[Eqn] | Var | Literal | None:
    """The first rule's rewrite of `eqn`: equations computing its outputs, or the atom its
    output equals."""
    for rule in _rules(eqn.primitive):
        out = rule(eqn, producer)
        if isinstance(out, Eqn):
            return [out]
        if out is not None:
            if not isinstance(out, list) and out.aval != eqn.outvars[0].aval:
                continue  # not an exact identity (shape, dtype or weak type differs)
            return out
    return None


def _drop_identity_operand(eqn: Eqn, producer: Callable):
    """op(x, c) with c one of the primitive's declared identities (`Primitive.identities`); none
    for a complex x, where (inf + 0j) * (1 + 0j) has a NaN part."""
    for i, v in enumerate(eqn.invars):
        ident = eqn.primitive.identities.get(i)
        dtype = v.aval.dtype
        if ident is None or not isinstance(v, Literal) or \
                not (dtypes.is_int(dtype) or dtypes.is_float(dtype)):
            continue
        if v.val.tobytes() == np.asarray(ident[dtypes.is_float(dtype)], dtype).tobytes():
            return eqn.invars[1 - i]
    return None


def _cancel_involution(eqn: Eqn, producer: Callable):
    """neg(neg x), not(not x), rev(rev x) over the same dimensions: x."""
    p = producer(eqn.invars[0])
    if p is not None and p.primitive is eqn.primitive and p.params == eqn.params:
        return p.invars[0]
    return None


def _drop_same_type_convert(eqn: Eqn, producer: Callable):
    x = eqn.invars[0]
    same = x.aval.dtype == eqn.params["new_dtype"] and x.aval.weak_type == eqn.params["weak_type"]
    return x if same else None


def _is_plain_reshape(eqn: Eqn) -> bool:
    """Ops that keep the row-major element order, changing only the shape."""
    name = eqn.primitive.name
    if name == "reshape":
        return eqn.params["dimensions"] is None
    if name == "broadcast_in_dim":  # inserting unit dimensions
        bdims = eqn.params["broadcast_dimensions"]
        (x,), (out,) = eqn.invars, eqn.outvars
        return _size(x.aval) == _size(out.aval) and list(bdims) == sorted(bdims)
    return name == "squeeze"


def _merge_reshapes(eqn: Eqn, producer: Callable):
    """A reshape-like op of a reshape-like op is one reshape, or nothing at all."""
    if not _is_plain_reshape(eqn):
        return None
    x, shape = eqn.invars[0], eqn.outvars[0].aval.shape
    if x.aval.shape == shape:
        return x
    p = producer(x)
    if p is None or (p.primitive is not reshape_p and not _is_plain_reshape(p)):
        return None
    dims = p.params["dimensions"] if p.primitive is reshape_p else None
    base = p.invars[0]
    if dims is None and base.aval.shape == shape:
        return base
    return Eqn(reshape_p, [base], eqn.outvars, {"new_sizes": tuple(shape), "dimensions": dims},
               eqn.source_info)


def _unit_transpose(eqn: Eqn, producer: Callable):
    """A transpose that moves only dimensions of size 1 keeps the row-major element order: a
    reshape (shard_map's split over one device gives these), which merges with its
    neighbours and is no copy where the shape stays. Not of a product: `transposed_products`
    swaps its operands instead, which costs no reshape of the product either."""
    perm, x = eqn.params["permutation"], eqn.invars[0]
    p = producer(x)
    if p is not None and p.primitive is dot_general_p:
        return None
    sized = [d for d in perm if x.aval.shape[d] != 1]
    if sized != sorted(sized):
        return None
    if x.aval.shape == eqn.outvars[0].aval.shape:
        return x
    return Eqn(reshape_p, [x], eqn.outvars, {"new_sizes": eqn.outvars[0].aval.shape,
                                             "dimensions": None}, eqn.source_info)


def _transpose_before_unit_reshape(eqn: Eqn, producer: Callable):
    """transpose(reshape(product)) whose reshape only adds or drops dimensions of size 1 (a
    sum over one device's axis, `_unit_reduction`) is reshape(transpose(product)): the
    transpose then meets the product, which `transposed_products` writes in that order
    instead of a transposed read of it (the weight gradient x^T dy under shard_map)."""
    r = producer(eqn.invars[0])
    plus = r if _plus_zero(r) else None  # (a float sum over one device: through its + 0.0)
    if plus is not None:
        r = producer(plus.invars[0])
    if r is None or r.primitive is not reshape_p or r.params["dimensions"] is not None:
        return None
    (y,), (x,), (out,) = r.invars, r.outvars, eqn.outvars
    p = producer(y)
    if p is None or p.primitive is not dot_general_p:
        return None
    sized_x = [d for d in range(x.aval.ndim) if x.aval.shape[d] != 1]
    sized_y = [d for d in range(y.aval.ndim) if y.aval.shape[d] != 1]
    if [x.aval.shape[d] for d in sized_x] != [y.aval.shape[d] for d in sized_y]:
        return None
    at = dict(zip(sized_x, sized_y))
    order = iter([at[d] for d in eqn.params["permutation"] if d in at])
    perm = tuple(next(order) if y.aval.shape[d] != 1 else d for d in range(y.aval.ndim))
    if perm == tuple(range(y.aval.ndim)):
        return None
    t = Var(y.aval.update(shape=tuple(y.aval.shape[d] for d in perm)))
    moved = Var(out.aval) if plus is not None else out
    eqns = [Eqn(transpose_p, [y], [t], {"permutation": perm}, eqn.source_info),
            Eqn(reshape_p, [t], [moved], {"new_sizes": out.aval.shape, "dimensions": None},
                eqn.source_info)]
    if plus is not None:  # (elementwise: the same + 0.0 after the transpose)
        eqns.append(Eqn(add_p, [moved, plus.invars[1]], [out], {}, eqn.source_info))
    return eqns


def _merge_transposes(eqn: Eqn, producer: Callable):
    perm = eqn.params["permutation"]
    if perm == tuple(range(len(perm))):
        return eqn.invars[0]
    p = producer(eqn.invars[0])
    if p is None or p.primitive is not transpose_p:
        return None
    inner = p.params["permutation"]
    composed = tuple(inner[j] for j in perm)
    if composed == tuple(range(len(composed))):
        return p.invars[0]
    return Eqn(transpose_p, p.invars, eqn.outvars, {"permutation": composed}, eqn.source_info)


def _merge_broadcasts(eqn: Eqn, producer: Callable):
    """A broadcast of a broadcast is one broadcast of the first one's operand (batching over
    shard_map's devices broadcasts a constant to [devices], then to each value's shape; as
    one broadcast of a scalar, `_scalar_operands` reads the scalar itself)."""
    p = producer(eqn.invars[0])
    if p is None or p.primitive is not broadcast_in_dim_p:
        return None
    outer = eqn.params["broadcast_dimensions"]
    dims = tuple(outer[d] for d in p.params["broadcast_dimensions"])
    return Eqn(broadcast_in_dim_p, p.invars, eqn.outvars,
               dict(eqn.params, broadcast_dimensions=dims), eqn.source_info)


def _unit_reduction(eqn: Eqn, producer: Callable):
    """A reduction over dimensions of size 1 only is a reshape: each result is its one element
    with the reducer's init (its identity, but for a float sum: 0.0 + -0.0 is 0.0, so that
    sum stays an add of 0.0, which fuses). shard_map's gradient sums over one device's axis
    give these. Not a complex product: (1 + 0j) * (inf + 0j) has a NaN part."""
    x, (out,) = eqn.invars[0], eqn.outvars
    if any(x.aval.shape[a] != 1 for a in eqn.params["axes"]) or \
            (eqn.primitive is reduce_prod_p and x.aval.dtype.kind == "c"):
        return None
    params = {"new_sizes": out.aval.shape, "dimensions": None}
    if eqn.primitive is not reduce_sum_p or x.aval.dtype.kind not in "fc":
        return Eqn(reshape_p, [x], eqn.outvars, params, eqn.source_info)
    y = Var(out.aval)
    zero = Literal(0, ShapedArray((), x.aval.dtype, x.aval.weak_type))
    return [Eqn(reshape_p, [x], [y], params, eqn.source_info),
            Eqn(add_p, [y, zero], eqn.outvars, {}, eqn.source_info)]


def _plus_zero(eqn: Eqn | None) -> bool:
    """Whether `eqn` is x + 0.0 (`_unit_reduction`'s float sum)."""
    return eqn is not None and eqn.primitive is add_p and isinstance(eqn.invars[1], Literal) \
        and not eqn.invars[1].aval.shape and eqn.invars[1].val == 0 \
        and not np.signbit(eqn.invars[1].val.real)


def _broadcast_scalar(eqn: Eqn | None) -> Var | Literal | None:
    """The rank-0 value `eqn` broadcasts, if it is one."""
    if eqn is None or eqn.primitive is not broadcast_in_dim_p or eqn.invars[0].aval.shape:
        return None
    return eqn.invars[0]


def _scalar_operands(eqn: Eqn, producer: Callable):
    """An elementwise op reading a broadcast rank-0 value reads the rank-0 value itself (lax
    elementwise ops broadcast rank-0 operands), when the result keeps its type."""
    for i, v in enumerate(eqn.invars):
        scalar = _broadcast_scalar(producer(v))
        if scalar is None:
            continue
        invars = eqn.invars[:i] + [scalar] + eqn.invars[i + 1:]
        try:
            avals = eqn.primitive.abstract_eval(*[x.aval for x in invars], **eqn.params)
        except (TypeError, ValueError):  # this op does not broadcast that operand
            continue
        if avals == [v.aval for v in eqn.outvars]:
            return eqn.replace(invars=invars)
    return None


def _broadcast_last(eqn: Eqn, producer: Callable):
    """An elementwise op whose operands are all broadcasts of values of one shape along the
    same dimensions (or rank-0 values, or broadcasts of them) is computed once at that shape
    and then broadcast: at rank 0 so that constant folding and `_scalar_operands` see the
    scalar, at other shapes as XLA's simplifier sinks broadcasts (sin of meshgrid's (2000,
    2000) X is sin of its 2,000 values, broadcast). The same operations on the same values."""
    if len(eqn.outvars) != 1:  # (threefry2x32's two words)
        return None
    (out,) = eqn.outvars
    if not out.aval.shape:
        return None
    small, source = [], None  # (the broadcast values' shape, and the dimensions they take)
    for v in eqn.invars:
        made = None if not v.aval.shape else producer(v)
        if made is not None and made.primitive is not broadcast_in_dim_p:
            return None
        x = v if made is None else made.invars[0]
        if x.aval.shape:
            if made is None:
                return None
            at = (x.aval.shape, tuple(made.params["broadcast_dimensions"]))
            if source not in (None, at):
                return None
            source = at
        small.append(x)
    shape, dims = source or ((), ())
    if source is not None and math.prod(shape) >= out.aval.size:
        return None
    aval = ShapedArray(shape, out.aval.dtype, out.aval.weak_type)
    try:
        if eqn.primitive.abstract_eval(*[x.aval for x in small], **eqn.params) != [aval]:
            return None
    except (TypeError, ValueError):
        return None
    value = Var(aval)
    return [eqn.replace(invars=small, outvars=[value]),
            Eqn(broadcast_in_dim_p, [value], [out],
                {"shape": out.aval.shape, "broadcast_dimensions": dims}, eqn.source_info)]


def _outer_product(eqn: Eqn, producer: Callable):
    """A dot_general whose contracted dimensions all have size 1 (an outer product: x[:, None]
    @ y[None, :], the rank-1 gradients of a one-unit layer) is an elementwise product of the
    two operands broadcast to the output, which fuses into its consumers; BLAS would pack both
    operands and write the whole product. XLA rewrites it the same way. For operands and
    output of one dtype (not bool): the one product is the value either way, and a -0.0
    product keeps its sign as in JAX (a matmul adds it to +0.0: NumPy's, the interpreter's)."""
    lhs, rhs = eqn.invars
    if not _same_type_product(eqn) or any(lhs.aval.shape[d] != 1 for d in _roles(eqn)[0][1]):
        return None
    eqns: list[Eqn] = []
    x, y = _spread_operands(eqn, lhs, rhs, eqns)
    if not _product_typed(eqn, x, y):
        return None
    return eqns + [Eqn(mul_p, [x, y], list(eqn.outvars), {}, eqn.source_info)]


# A matrix-vector product (one operand without free dimensions) contracting one dimension of at
# most this many elements, of at most SMALL_PRODUCT_WORK multiply-adds per batch element (the
# native backend's loops, under BLAS's 32^3), is a chain of elementwise multiply-adds, as XLA
# computes it: jnp.einsum("nij,nj->ni") rotating 1M points by their own 3x3 matrices was a
# serial loop nest, 7.4 ms against JAX 0.12's 3.8. XLA's bits are that chain's for 2 to 7
# elements either way round; from 8 a contiguous contraction is its vectorised reduction's
# tree, which the loops kept (and products with free dimensions on both sides another order).
SMALL_CONTRACTION = 7
SMALL_PRODUCT_WORK = 32 ** 3


def _small_contraction(eqn: Eqn, producer: Callable):
    """A matrix-vector dot_general over one contracted dimension of a few elements c
    (SMALL_CONTRACTION): the operands' slices at each c, broadcast to the output and multiplied,
    summed in order from 0 with each product the sum's first operand -- fma(x0, y0, 0), then
    fma(x1, y1, that), ..., once codegen contracts them: XLA's order and bits, a sum of -0.0
    products +0.0 as there (the loops before summed in another order, which matched JAX's in
    37-75% of elements). Real and integer types of one dtype."""
    (_, lc, lf), (_, rc, rf) = _roles(eqn)
    lhs, rhs = eqn.invars
    (out,) = eqn.outvars
    sizes = [lhs.aval.shape[d] for d in lc]
    k = math.prod(sizes)
    m = math.prod(lhs.aval.shape[d] for d in lf)
    n = math.prod(rhs.aval.shape[d] for d in rf)
    dtype = out.aval.dtype
    if not _same_type_product(eqn) or not (dtype in (np.float32, np.float64) or
                                           dtypes.is_int(dtype)) or \
            not 1 < k <= SMALL_CONTRACTION or m * n * k >= SMALL_PRODUCT_WORK or \
            len(lc) != 1 or (lf and rf):
        return None
    eqns: list[Eqn] = []

    def picked(x: Var, contract: Sequence[int], at: Sequence[int]) -> Var:
        start = [0] * x.aval.ndim
        limit = list(x.aval.shape)
        for d, i in zip(contract, at):
            start[d], limit[d] = i, i + 1
        v = Var(ShapedArray(tuple(h - lo for lo, h in zip(start, limit)), x.aval.dtype,
                            x.aval.weak_type))
        eqns.append(Eqn(slice_p, [x], [v], {"start_indices": tuple(start),
                                            "limit_indices": tuple(limit), "strides": None},
                        eqn.source_info))
        return v
    total: Var | Literal = Literal(0, ShapedArray((), dtype, weak_type=True))
    for j, at in enumerate(itertools.product(*map(range, sizes))):
        x, y = _spread_operands(eqn, picked(lhs, lc, at), picked(rhs, rc, at), eqns)
        if not _product_typed(eqn, x, y):
            return None
        term, summed = Var(out.aval), out if j == k - 1 else Var(out.aval)
        eqns.append(Eqn(mul_p, [x, y], [term], {}, eqn.source_info))
        eqns.append(Eqn(add_p, [term, total], [summed], {}, eqn.source_info))
        total = summed
    return eqns


def _roles(eqn: Eqn) -> tuple[tuple, tuple]:
    """A dot_general's (batch, contracted, free) dimensions of each operand."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    return (tuple(lb), tuple(lc), lf), (tuple(rb), tuple(rc), rf)


def _product_typed(eqn: Eqn, x: Var, y: Var) -> bool:
    """Whether x * y has the dot_general's result type (its weak type included)."""
    try:
        return mul_p.abstract_eval(x.aval, y.aval) == [eqn.outvars[0].aval]
    except (TypeError, ValueError):
        return False


def _same_type_product(eqn: Eqn) -> bool:
    """Operands and result of one dtype (not bool): an elementwise product computes it."""
    dtype = eqn.outvars[0].aval.dtype
    return all(v.aval.dtype == dtype for v in eqn.invars) and dtype != np.bool_


def _spread_operands(eqn: Eqn, lhs: Var, rhs: Var, eqns: list[Eqn]) -> tuple[Var, Var]:
    """A dot_general's operands (or their slices at one contracted index: every contracted
    dimension of size 1) broadcast to its output's shape, the equations doing it appended to
    `eqns`: their product is the output's terms at that index."""
    (lb, lc, lf), (rb, rc, rf) = _roles(eqn)
    out = eqn.outvars[0]
    nb = len(lb)

    def spread(x, batch, free, contract, first):
        """x with its batch then free dimensions in order, broadcast to the output's shape
        (its free dimensions at the output's positions `first`...)."""
        perm = (*batch, *free, *contract)
        if perm != tuple(range(x.aval.ndim)):
            t = Var(ShapedArray(tuple(x.aval.shape[d] for d in perm), x.aval.dtype,
                                x.aval.weak_type))
            eqns.append(Eqn(transpose_p, [x], [t], {"permutation": perm}, eqn.source_info))
            x = t
        kept = tuple(x.aval.shape[:nb + len(free)])
        if kept != x.aval.shape:
            r = Var(ShapedArray(kept, x.aval.dtype, x.aval.weak_type))
            eqns.append(Eqn(reshape_p, [x], [r], {"new_sizes": kept, "dimensions": None},
                            eqn.source_info))
            x = r
        dims = (*range(nb), *range(first, first + len(free)))
        if x.aval.shape == out.aval.shape:
            return x
        b = Var(ShapedArray(out.aval.shape, x.aval.dtype, x.aval.weak_type))
        eqns.append(Eqn(broadcast_in_dim_p, [x], [b], {
            "shape": out.aval.shape, "broadcast_dimensions": dims}, eqn.source_info))
        return b
    return spread(lhs, lb, lf, lc, nb), spread(rhs, rb, rf, rc, nb + len(lf))


def _gemm_order(ndim: int, batch: Sequence[int], contract: Sequence[int], free: Sequence[int]
                ) -> bool:
    """Whether an operand with these dimension roles is a row-major stack of matrices BLAS
    reads as it is (the native lowering's test): batch dimensions leading and in order, then
    the free and the contracted dimensions as two groups, either group first."""
    nb = len(batch)
    rest = list(range(nb, ndim))
    return list(batch) == list(range(nb)) and rest in (
        sorted(free) + list(contract), list(contract) + sorted(free))


def _fold_transposed_operands(eqn: Eqn, producer: Callable):
    """dot_general(transpose(x), y) reads x with its dimension numbers renamed, when that makes
    x an operand BLAS takes as it is (a transposed one is a flag of gemm): XLA passes layouts,
    we would otherwise copy x first. The free dimensions must keep their order (they set the
    output's)."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dims = [[lc, lb], [rc, rb]]
    invars = list(eqn.invars)
    changed = False
    for i, v in enumerate(eqn.invars):
        p = producer(v)
        if p is None or p.primitive is not transpose_p:
            continue
        perm = p.params["permutation"]
        contract, batch = dims[i]
        free = [d for d in range(len(perm)) if d not in contract and d not in batch]
        moved_free = [perm[d] for d in free]
        moved = ([perm[d] for d in contract], [perm[d] for d in batch])
        if moved_free != sorted(moved_free) or not _gemm_order(len(perm), moved[1], moved[0],
                                                               moved_free):
            continue
        dims[i] = [tuple(moved[0]), tuple(moved[1])]
        invars[i] = p.invars[0]
        changed = True
    if not changed:
        return None
    (lc, lb), (rc, rb) = dims
    params = dict(eqn.params, dimension_numbers=((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    return Eqn(dot_general_p, invars, eqn.outvars, params, eqn.source_info)


def _unbroadcast_batch_operand(eqn: Eqn, producer: Callable):
    """dot_general(x, broadcast(y)) whose broadcast only adds the batch dimensions of y (an
    invariant operand made varying by shard_map's pvary, its lanes materialised by batching)
    is one product of x's stacked matrices with y: no copy of y per lane, one gemm. x's batch
    dimensions become free ones; the output's dimensions keep their order when x's batch
    dimensions lead in order, up to dimensions of size 1 (shard_map's split over one
    device puts one before them), which a reshape of the product moves."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars
    (out,) = eqn.outvars
    p = producer(rhs)
    if not lb or p is None or p.primitive is not broadcast_in_dim_p:
        return None
    (y,) = p.invars
    dims = p.params["broadcast_dimensions"]
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]

    def sized(order):
        return [d for d in order if lhs.aval.shape[d] != 1]
    if sorted(set(range(rhs.aval.ndim)) - set(dims)) != sorted(rb) or \
            any(y.aval.shape[i] != rhs.aval.shape[d] for i, d in enumerate(dims)) or \
            sized([*lb, *lf]) != sized(sorted([*lb, *lf])) or list(dims) != sorted(dims):
        return None
    params = dict(eqn.params, dimension_numbers=((tuple(lc), tuple(dims.index(d) for d in rc)),
                                                 ((), ())))
    shape = tuple(dot_general_p.abstract_eval(lhs.aval, y.aval, **params)[0].shape)
    if shape == out.aval.shape:
        return Eqn(dot_general_p, [lhs, y], eqn.outvars, params, eqn.source_info)
    product = Var(out.aval.update(shape=shape))
    return [Eqn(dot_general_p, [lhs, y], [product], params, eqn.source_info),
            Eqn(reshape_p, [product], eqn.outvars, {"new_sizes": out.aval.shape,
                                                    "dimensions": None}, eqn.source_info)]


def _unreshaped_dims(shape: tuple, base: tuple, kept: Sequence[int]) -> dict | None:
    """Where the dimensions `kept` (an operand's contracted and batch ones) of a reshape of
    `base` to `shape` lie in `base`, when the reshape leaves them and the order of everything
    else alone: it only adds or drops dimensions of size 1 (none of `kept`), or it only splits
    or merges the block of the other (free) dimensions, contiguous in both shapes."""
    sized, base_sized = ([d for d in range(len(sh)) if sh[d] != 1] for sh in (shape, base))
    if [shape[d] for d in sized] == [base[d] for d in base_sized] and \
            all(shape[d] != 1 for d in kept):
        at = dict(zip(sized, base_sized))
        return {d: at[d] for d in kept}
    free = [d for d in range(len(shape)) if d not in kept]
    if not free or free != list(range(free[0], free[-1] + 1)):
        return None
    f0, f1 = free[0], free[-1] + 1
    shift = len(base) - len(shape)
    if f1 - f0 + shift < 0 or base[:f0] != shape[:f0] or base[f1 + shift:] != shape[f1:]:
        return None
    return {d: d if d < f0 else d + shift for d in kept}


def _unreshape_operand(eqn: Eqn, producer: Callable):
    """dot_general(reshape(x), y) whose reshape keeps the operand's contracted and batch
    dimensions (it adds or drops size-1 ones, or splits or merges the free ones) reads x
    itself, its dimension numbers renamed, and the product is reshaped instead: the operand's
    copy goes (shard_map's split over devices reshapes each operand so), and a reshape of the
    product merges with the ones that follow it. The free dimensions keep their row-major
    order, so the product's elements are in the same order."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dims = [[lc, lb], [rc, rb]]
    (out,) = eqn.outvars
    for i, v in enumerate(eqn.invars):
        p = producer(v)
        if p is None or not (p.primitive is squeeze_p or (
                p.primitive is reshape_p and p.params["dimensions"] is None)):
            continue
        at = _unreshaped_dims(v.aval.shape, p.invars[0].aval.shape, [*dims[i][0], *dims[i][1]])
        if at is None:
            continue
        dims[i] = [tuple(at[d] for d in dims[i][0]), tuple(at[d] for d in dims[i][1])]
        invars = list(eqn.invars)
        invars[i] = p.invars[0]
        (lc, lb), (rc, rb) = dims
        params = dict(eqn.params, dimension_numbers=((lc, rc), (lb, rb)))
        new_shape = tuple(dot_general_p.abstract_eval(*[x.aval for x in invars],
                                                      **params)[0].shape)
        if new_shape == out.aval.shape:
            return Eqn(dot_general_p, invars, eqn.outvars, params, eqn.source_info)
        product = Var(out.aval.update(shape=new_shape))
        return [Eqn(dot_general_p, invars, [product], params, eqn.source_info),
                Eqn(reshape_p, [product], eqn.outvars, {"new_sizes": out.aval.shape,
                                                        "dimensions": None}, eqn.source_info)]
    return None


def _gather_of_broadcast(eqn: Eqn, producer: Callable):
    """gather(broadcast(g), i) whose windows are whole along g's dimensions (so clamping puts
    them at 0) and start anywhere along the dimensions the broadcast added (every start reads
    the same values) is broadcast(g): shard_map over devices of one process picks each
    device's copy of a replicated operand so, and a product then reads g itself (no copy per
    device; _unbroadcast_batch_operand). Not with FILL_OR_DROP (an index out of range fills)."""
    p = producer(eqn.invars[0])
    if p is None or p.primitive is not broadcast_in_dim_p:
        return None
    (g,), operand, (out,) = p.invars, eqn.invars[0], eqn.outvars
    dn, sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
    dims = p.params["broadcast_dimensions"]
    if eqn.params["mode"] is GatherScatterMode.FILL_OR_DROP or dn.operand_batching_dims or \
            any(g.aval.shape[i] != operand.aval.shape[d] or sizes[d] != operand.aval.shape[d]
                or d in dn.collapsed_slice_dims for i, d in enumerate(dims)):
        return None
    kept = [d for d in range(operand.aval.ndim) if d not in dn.collapsed_slice_dims]
    return Eqn(broadcast_in_dim_p, [g], eqn.outvars,
               dict(p.params, shape=out.aval.shape,
                    broadcast_dimensions=tuple(dn.offset_dims[kept.index(d)] for d in dims)),
               eqn.source_info)


def transposed_products(jaxpr: Jaxpr) -> Jaxpr:
    """transpose(dot_general(x, y)) that only swaps the two operands' free dimensions (JAX's
    transpose rule of a product gives these: the weight gradient x^T dy, then .T) becomes
    dot_general(y, x): the product written in the order wanted instead of a transposing copy.
    Only for a product read nowhere else (else it would be computed twice), so this runs after
    cse has merged equal products; dce then drops the old product."""
    return _transposed_products(jaxpr, {})


def _transposed_products(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    uses: dict[Var, int] = {}
    for v in [x for eqn in jaxpr.eqns for x in eqn.invars] + list(jaxpr.outvars):
        if isinstance(v, Var):
            uses[v] = uses.get(v, 0) + 1
    producers: dict[Var, Eqn] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(eqn, _on_body(lambda j: _transposed_products(j, memo)), memo)
        p = producers.get(eqn.invars[0]) if eqn.primitive is transpose_p else None
        if p is not None and p.primitive is dot_general_p and uses[eqn.invars[0]] == 1:
            eqn = _swapped_product(eqn, p) or eqn
        eqns.append(eqn)
        producers.update((v, eqn) for v in eqn.outvars)
    return _rebuild(jaxpr, eqns=eqns)


def _swapped_product(eqn: Eqn, p: Eqn) -> Eqn | None:
    """The product `p` with its operands swapped, computing the transpose `eqn`'s result; None
    when the transpose is not the swap of the two free groups."""
    (lc, rc), (lb, rb) = p.params["dimension_numbers"]
    lhs, rhs = p.invars
    nb = len(lb)
    nl = lhs.aval.ndim - len(lc) - nb
    nr = rhs.aval.ndim - len(rc) - nb
    if eqn.params["permutation"] != (*range(nb), *range(nb + nl, nb + nl + nr),
                                     *range(nb, nb + nl)):
        return None
    params = dict(p.params, dimension_numbers=((rc, lc), (rb, lb)))
    try:
        if dot_general_p.abstract_eval(rhs.aval, lhs.aval, **params) != [eqn.outvars[0].aval]:
            return None
    except (TypeError, ValueError):
        return None
    return Eqn(dot_general_p, [rhs, lhs], eqn.outvars, params, eqn.source_info)


# rewrites of particular primitives (keyed by the primitive object)
def _own_block_of_gather(eqn: Eqn, producer: Callable):
    """shard_map's cut of this process's own block out of an Allgather of every process's block
    (the per-process program of a jit over arrays split over processes gathers a split operand
    for shard_map to cut its block back out): the block itself, so no data crosses processes
    for it. Read through the reshapes and transposes on either side of the gather (the
    layout of a process's devices, a mesh interleaving the processes) when their composition
    provably selects exactly this process's block in its own order (compiler/block_maps.py).
    Only cuts shard_map noted (core/global_array.py `note_own_block_cut`): every process
    makes the same one at its own position, so all bypass the gather and their collectives
    still match; a slice the user wrote may be one process's own block only."""
    if not is_own_block_cut(eqn.outvars[0]) or \
            any(s not in (None, 1) for s in (eqn.params["strides"] or ())):
        return None
    moves, gathered = _moves_into(eqn.invars[0], producer)
    if gathered is None or gathered.primitive is not allgather_p:
        return None
    from ..core import mpi
    ranks, rank = gathered.params["ranks"], mpi.world().Get_rank()
    if rank not in ranks:
        return None
    after = [_move_step(e) for e in reversed(moves)] + [
        ("slice", tuple(eqn.params["start_indices"]), tuple(eqn.params["limit_indices"]))]
    # the gathered block and, before it, what its own moves started from: the earliest one
    # the cut is (its moves then go unread, as the gather does)
    before, _ = _moves_into(gathered.invars[0], producer)
    sources = [gathered.invars[0]] + [e.invars[0] for e in before]
    out = eqn.outvars[0].aval.shape
    for i in reversed(range(len(sources))):
        steps = [_move_step(e) for e in reversed(before[:i])] + [("gather", len(ranks))] + after
        if selects_source(sources[i].aval.shape, steps, ranks.index(rank), out):
            producer.bypassed.append(gathered)
            if sources[i].aval.shape == out:
                return sources[i]
            return [Eqn(reshape_p, [sources[i]], eqn.outvars,
                        {"new_sizes": out, "dimensions": None}, eqn.source_info)]
    return None


def _slice_of_concatenate(eqn: Eqn, producer: Callable):
    """A slice of a concatenate lying within one of its operands along the concatenated
    dimension: that slice of the operand. The concatenate then has one reader fewer, so
    fusion can compute it inside its other reader (jnp.pad's reflect and symmetric modes
    concatenate an edge reversed, then slice the next edge out of that: 1000^2 reflect-padded
    by 16 was four kernels, each storing its whole result)."""
    cat = producer(eqn.invars[0])
    if cat is None or cat.primitive is not concatenate_p or \
            any(s not in (None, 1) for s in (eqn.params["strides"] or ())):
        return None
    d = cat.params["dimension"]
    start, limit = list(eqn.params["start_indices"]), list(eqn.params["limit_indices"])
    offset = 0
    for x in cat.invars:
        size = x.aval.shape[d]
        if offset <= start[d] and limit[d] <= offset + size:
            out = eqn.outvars[0].aval
            if not isinstance(x, Var) or (x.aval.dtype, x.aval.weak_type) != (out.dtype,
                                                                               out.weak_type):
                return None
            start[d], limit[d] = start[d] - offset, limit[d] - offset
            if tuple(start) == (0,) * len(start) and tuple(limit) == x.aval.shape:
                return x
            return Eqn(slice_p, [x], eqn.outvars, {**eqn.params, "start_indices": tuple(start),
                                                   "limit_indices": tuple(limit)},
                       eqn.source_info)
        offset += size
    return None


def _flatten_concatenates(eqn: Eqn, producer: Callable):
    """A concatenate of concatenates along its own dimension: one concatenate of all their
    operands (up to fusion's MAX_LOOP_PIECES), so that code generation cuts its loop at every
    operand (a nested one, computed inside the outer one's loop, selected among its operands'
    clamped reads at each element: jnp.pad's reflect mode)."""
    d = eqn.params["dimension"]
    flat, nested = [], False
    for x in eqn.invars:
        inner = producer(x)
        if inner is not None and inner.primitive is concatenate_p and \
                inner.params["dimension"] == d:
            flat.extend(inner.invars)
            nested = True
        else:
            flat.append(x)
    if not nested or len(flat) > MAX_LOOP_PIECES:
        return None
    return Eqn(concatenate_p, flat, eqn.outvars, eqn.params, eqn.source_info)


def _moves_into(v: Any, producer: Callable) -> tuple[list[Eqn], Eqn | None]:
    """The reshapes and transposes producing `v` (latest first), and the equation producing
    what they start from (None: an input)."""
    moves = []
    while (e := producer(v)) is not None and (e.primitive is transpose_p or
                                              _is_plain_reshape(e)):
        moves.append(e)
        v = e.invars[0]
    return moves, e


def _move_step(e: Eqn) -> tuple:
    """A reshape or transpose as a step of compiler/block_maps.py `selects_source`."""
    if e.primitive is transpose_p:
        return ("transpose", tuple(e.params["permutation"]))
    return ("reshape", tuple(e.outvars[0].aval.shape))


def _known_choice(eqn: Eqn, producer: Callable):
    """select_n with a literal predicate (a comparison of constants folded: random.binomial's
    `p < 0.5` for a Python p), or with every case the same value: that case."""
    which, *cases = eqn.invars
    if isinstance(which, Literal) and np.ndim(which.val) == 0:
        return cases[min(max(int(which.val), 0), len(cases) - 1)]
    if all(c is cases[0] for c in cases[1:]) and isinstance(cases[0], Var):
        return cases[0]
    return None


_SPECIFIC_RULES: dict[Primitive, tuple[Callable, ...]] = {
    convert_element_type_p: (_drop_same_type_convert,), select_n_p: (_known_choice,),
    reshape_p: (_merge_reshapes,), squeeze_p: (_merge_reshapes,),
    broadcast_in_dim_p: (_merge_reshapes, _merge_broadcasts),
    **{p: (_unit_reduction,) for p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p,
                                        reduce_and_p, reduce_or_p, reduce_xor_p)},
    transpose_p: (_unit_transpose, _merge_transposes, _transpose_before_unit_reshape),
    gather_p: (_gather_of_broadcast,),
    slice_p: (_own_block_of_gather, _slice_of_concatenate),
    concatenate_p: (_flatten_concatenates,),
    dot_general_p: (_outer_product, _small_contraction, _fold_transposed_operands,
                    _unbroadcast_batch_operand,
                    _unreshape_operand),
}
# (across processes: identities that only type a value or say how it is differentiated)
_SPECIFIC_RULES.update({p: (lambda eqn, producer: eqn.invars[0],) for p in PROCESS_IDENTITIES})


def _rules(prim: Primitive) -> tuple[Callable, ...]:
    """The rewrites tried, in order, on an equation of `prim`: its declared algebra, its own
    rules, and for every elementwise op the broadcast rules."""
    return (((_drop_identity_operand,) if prim.identities else ())
            + ((_cancel_involution,) if prim.involution else ())
            + _SPECIFIC_RULES.get(prim, ())
            + ((_broadcast_last, _scalar_operands) if prim.fusion == ELEMENTWISE else ()))


# --- licm ------------------------------------------------------------------------------------

def licm(jaxpr: Jaxpr) -> Jaxpr:
    """Loop-invariant code motion: an equation of a scan/while body (or while condition) that
    reads only the body's const operands moves out in front of the loop; its results become new
    const operands. Size-growing ops (broadcasts, iota) stay: fused in the body they cost no
    memory traffic. An inner while stays too, as the loop might run zero times."""
    return _licm(jaxpr, {})


def _licm(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(eqn, _on_body(lambda j: _licm(j, memo)), memo)
        if eqn.primitive is scan_p:
            eqn = _licm_scan(eqn, eqns)
        elif eqn.primitive is while_p:
            eqn = _licm_while(eqn, eqns)
        eqns.append(eqn)
    return _rebuild(jaxpr, eqns=eqns)


def _hoistable(eqn: Eqn, invariant: set[Var]) -> bool:
    if eqn.primitive is while_p or not any(isinstance(v, Var) for v in eqn.invars):
        return False
    # a print in a loop body prints every iteration; a foreign handler runs in every one
    if has_effects(eqn) or eqn.primitive.foreign:
        return False
    if not all(isinstance(v, Literal) or v in invariant for v in eqn.invars):
        return False
    return sum(_size(v.aval) for v in eqn.outvars) <= sum(_size(v.aval) for v in eqn.invars)


def _hoist(body: ClosedJaxpr, nconsts: int, operands: list, out: list[Eqn]
           ) -> tuple[ClosedJaxpr, list]:
    """Move the invariant eqns of `body` (whose first `nconsts` invars are `operands`) into
    `out`; returns the body taking their results as extra consts after its own, and the outer
    values of those extra consts."""
    j = body.jaxpr
    invariant = set(j.invars[:nconsts])
    moved, kept = [], []
    for eqn in j.eqns:
        if _hoistable(eqn, invariant):
            moved.append(eqn)
            invariant.update(v for v in eqn.outvars)
        else:
            kept.append(eqn)
    if not moved:
        return body, []
    subst: dict[Var, Any] = {v: x for v, x in zip(j.invars[:nconsts], operands)}
    copy_eqns(moved, subst, out)
    used = {v for e in kept for v in e.invars} | set(j.outvars)
    extra = [v for e in moved for v in e.outvars if v in used]
    invars = j.invars[:nconsts] + extra + j.invars[nconsts:]
    return (ClosedJaxpr(_rebuild(j, invars=invars, eqns=kept), body.consts),
            [subst[v] for v in extra])


def _licm_scan(eqn: Eqn, out: list[Eqn]) -> Eqn:
    p, nc = eqn.params, eqn.params["num_consts"]
    body, extra = _hoist(p["jaxpr"], nc, eqn.invars[:nc], out)
    if not extra:
        return eqn
    return eqn.replace(invars=eqn.invars[:nc] + extra + eqn.invars[nc:],
                       params={**p, "jaxpr": body, "num_consts": nc + len(extra)})


def _licm_while(eqn: Eqn, out: list[Eqn]) -> Eqn:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts = eqn.invars[:cn], eqn.invars[cn:cn + bn]
    cond, cond_extra = _hoist(p["cond_jaxpr"], cn, cond_consts, out)
    body, body_extra = _hoist(p["body_jaxpr"], bn, body_consts, out)
    if not cond_extra and not body_extra:
        return eqn
    invars = cond_consts + cond_extra + body_consts + body_extra + eqn.invars[cn + bn:]
    return eqn.replace(invars=invars, params={
        **p, "cond_jaxpr": cond, "body_jaxpr": body, "cond_nconsts": cn + len(cond_extra),
        "body_nconsts": bn + len(body_extra)})


# --- forward_carries -------------------------------------------------------------------------

def forward_carries(jaxpr: Jaxpr) -> Jaxpr:
    """A scan/while carry that the body returns unchanged becomes a const operand of the loop,
    and the loop's result for it is the initial value."""
    return _forward(jaxpr, {})


def _forward(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    subst: dict[Var, Any] = {}
    read = _reader(subst)
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(_substitute(eqn, read),
                             _on_body(lambda j: _forward(j, memo)), memo)
        rule = {scan_p: _forward_scan, while_p: _forward_while}.get(eqn.primitive)
        if rule is not None:
            eqn, results = rule(eqn)
            subst.update(results)
        eqns.append(eqn)
    return _rebuild(jaxpr, outvars=[read(v) for v in jaxpr.outvars], eqns=eqns)


def _unchanged(body: Jaxpr, first_carry: int, num_carry: int) -> list[bool]:
    carry_in = body.invars[first_carry:first_carry + num_carry]
    return [out is v for out, v in zip(body.outvars[:num_carry], carry_in)]


def _carries_to_consts(body: ClosedJaxpr, nconsts: int, move: list[bool]) -> ClosedJaxpr:
    """Body invars reordered: consts, then the moved carries, then the remaining carries."""
    j, n = body.jaxpr, len(move)
    carry = j.invars[nconsts:nconsts + n]
    invars = (j.invars[:nconsts] + _select(carry, move)
              + _select(carry, [not m for m in move]) + j.invars[nconsts + n:])
    return _with_invars(body, invars)


def _forward_scan(eqn: Eqn) -> tuple[Eqn, dict[Var, Any]]:
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    move = _unchanged(p["jaxpr"].jaxpr, nc, nk)
    if not any(move):
        return eqn, {}
    stay = [not m for m in move]
    body = _carries_to_consts(p["jaxpr"], nc, move)
    j = body.jaxpr
    body = ClosedJaxpr(_rebuild(j, outvars=_select(j.outvars[:nk], stay) + j.outvars[nk:]),
                       body.consts)
    init = eqn.invars[nc:nc + nk]
    invars = eqn.invars[:nc] + _select(init, move) + _select(init, stay) + eqn.invars[nc + nk:]
    outvars = _select(eqn.outvars[:nk], stay) + eqn.outvars[nk:]
    results = {v: x for v, x, m in zip(eqn.outvars, init, move) if m}
    return eqn.replace(invars=invars, outvars=outvars, params={
        **p, "jaxpr": body, "num_consts": nc + sum(move), "num_carry": nk - sum(move)}), results


def _forward_while(eqn: Eqn) -> tuple[Eqn, dict[Var, Any]]:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    nk = len(eqn.outvars)
    move = _unchanged(p["body_jaxpr"].jaxpr, bn, nk)
    if not any(move):
        return eqn, {}
    stay = [not m for m in move]
    body = _carries_to_consts(p["body_jaxpr"], bn, move)
    body = ClosedJaxpr(_rebuild(body.jaxpr, outvars=_select(body.jaxpr.outvars, stay)),
                       body.consts)
    cond = _carries_to_consts(p["cond_jaxpr"], cn, move)  # the condition still reads them
    init = eqn.invars[cn + bn:]
    moved = _select(init, move)
    invars = (eqn.invars[:cn] + moved + eqn.invars[cn:cn + bn] + moved + _select(init, stay))
    results = {v: x for v, x, m in zip(eqn.outvars, init, move) if m}
    return eqn.replace(invars=invars, outvars=_select(eqn.outvars, stay), params={
        **p, "cond_jaxpr": cond, "body_jaxpr": body, "cond_nconsts": cn + sum(move),
        "body_nconsts": bn + sum(move)}), results
