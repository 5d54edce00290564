"""Transformation rules of the call and control-flow primitives: jit (pjit), cond, while, scan.

Each rule transforms the primitive's bodies with the jaxpr-level transforms (`jvp_jaxpr`,
`linearize_jaxpr`, `transpose_jaxpr`, `batch_jaxpr`) and binds the primitive again. Loops find
which carries have nonzero tangents (or are batched) by iterating to a fixed point.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core.avals import ShapedArray
from ..core.dce import dce
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.rules import (UndefinedPrimal, Zero, add_tangents, axis_size, bdim_at_front,
                          instantiate, is_undefined, moveaxis, not_mapped, tangent_aval,
                          zeros_like_aval)
from ..core.trace import get_aval
from ..lax.call import pjit_p
from ..lax.control_flow import cond_p, scan_p, while_p
from ..lax.elementwise import clamp, select_n
from ..lax.reduce import reduce_or
from ..lax.shape import broadcast_in_dim
from .batching import batch_jaxpr, move_to_front
from .jaxpr_util import add_unused_invars, eval_closed, permute_invars, permute_outvars, \
    trace_closed
from .jvp import jvp_jaxpr
from .linearize import linearize_jaxpr
from .transpose import backward_pass, call_transpose, transpose_jaxpr


def _nonzero(tangents: Sequence[Any]) -> list[bool]:
    return [type(t) is not Zero for t in tangents]


def _nonzeros_only(tangents: Sequence[Any]) -> list:
    return [t for t in tangents if type(t) is not Zero]


def _with_zeros(vals: Sequence[Any], nonzero: Sequence[bool], avals: Sequence[ShapedArray]
                ) -> list:
    it = iter(vals)
    return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzero, avals)]


def _split(xs: Sequence[Any], *sizes: int) -> list[list]:
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _or(a: Sequence[bool], b: Sequence[bool]) -> list[bool]:
    return [x or y for x, y in zip(a, b)]


def _dims(batched: Sequence[bool], dim: int = 0) -> list[int | None]:
    return [dim if b else not_mapped for b in batched]


def _keep_outvars(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    j = closed.jaxpr
    outvars = [v for v, k in zip(j.outvars, keep) if k]
    return ClosedJaxpr(dce(Jaxpr(j.constvars, j.invars, outvars, j.eqns, j.debug_info)),
                       closed.consts)


# --- jit -----------------------------------------------------------------------------------

def _pjit_jvp(primals, tangents, *, jaxpr, name):
    n_out = len(jaxpr.out_avals)
    jvp, out_nz = jvp_jaxpr(jaxpr, _nonzero(tangents), [False] * n_out)
    outs = pjit_p.bind(*primals, *_nonzeros_only(tangents), jaxpr=jvp, name=f"jvp({name})")
    return outs[:n_out], _with_zeros(outs[n_out:], out_nz, jaxpr.out_avals)


def _pjit_linearize(primals, tangents, *, jaxpr, name):
    n_out = len(jaxpr.out_avals)
    known, lin, _, out_nz = linearize_jaxpr(jaxpr, _nonzero(tangents), [False] * n_out)
    # a residual that is an input of the call is passed on directly, not returned by it
    kj = known.jaxpr
    input_of = {v: i for i, v in enumerate(kj.invars)}
    forwarded = [input_of.get(v) for v in kj.outvars[n_out:]]
    known = _keep_outvars(known, [True] * n_out + [f is None for f in forwarded])
    outs = pjit_p.bind(*primals, jaxpr=known, name=name)
    computed = iter(outs[n_out:])
    residuals = [next(computed) if f is None else primals[f] for f in forwarded]
    t_out = []
    if any(out_nz):
        t_out = pjit_p.bind(*residuals, *_nonzeros_only(tangents), jaxpr=lin,
                            name=f"jvp({name})")
    return outs[:n_out], _with_zeros(t_out, out_nz, jaxpr.out_avals)


def _pjit_batch(vals, dims, *, jaxpr, name):
    batched, out_b = batch_jaxpr(jaxpr, axis_size(vals, dims),
                                 [d is not not_mapped for d in dims], False)
    return pjit_p.bind(*move_to_front(vals, dims), jaxpr=batched, name=name), _dims(out_b)


pjit_p.def_jvp(_pjit_jvp)
pjit_p.def_linearize(_pjit_linearize)
pjit_p.def_transpose(call_transpose(pjit_p, "name"))
pjit_p.def_batch(_pjit_batch)


# --- cond ----------------------------------------------------------------------------------

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
    nz = _nonzero(tangents[1:])
    n_out = len(branches[0].out_avals)
    results, out_nz = _union_out(jvp_jaxpr, branches, nz, n_out)
    outs = cond_p.bind(index, *ops, *_nonzeros_only(tangents[1:]),
                       branches=tuple(r[0] for r in results))
    return outs[:n_out], _with_zeros(outs[n_out:], out_nz, branches[0].out_avals)


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
    nz = _nonzero(tangents[1:])
    n_out = len(branches[0].out_avals)
    results, out_nz = _union_out(linearize_jaxpr, branches, nz, n_out)
    slots, assignment = _residual_slots([k.out_avals[n_out:] for k, *_ in results])
    op_avals = [get_aval(o) for o in ops]
    known, lin = [], []
    for (k, l, _, _), mine in zip(results, assignment):
        known.append(trace_closed(_fill_slots(k, n_out, mine, slots), op_avals))
        lin.append(trace_closed(_read_slots(l, mine, len(slots)),
                                slots + l.in_avals[len(mine):]))
    outs = cond_p.bind(index, *ops, branches=tuple(known))
    t_out = []
    if any(out_nz):
        t_out = cond_p.bind(index, *outs[n_out:], *_nonzeros_only(tangents[1:]),
                            branches=tuple(lin))
    return outs[:n_out], _with_zeros(t_out, out_nz, branches[0].out_avals)


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
    ct_nz = _nonzero(cts)
    t_branches = tuple(transpose_jaxpr(b, linear, ct_nz) for b in branches)
    outs = iter(cond_p.bind(index, *[o for o in ops if not is_undefined(o)],
                            *_nonzeros_only(cts), branches=t_branches))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batch(vals, dims, *, branches):
    size = axis_size(vals, dims)
    (index, *ops), (d_index, *d_ops) = vals, dims
    in_b = [d is not not_mapped for d in d_ops]
    ops = move_to_front(ops, d_ops)
    if d_index is not_mapped:
        out_b = [False] * len(branches[0].out_avals)
        for b in branches:
            out_b = _or(out_b, batch_jaxpr(b, size, in_b, False)[1])
        batched = tuple(batch_jaxpr(b, size, in_b, out_b)[0] for b in branches)
        return cond_p.bind(index, *ops, branches=batched), _dims(out_b)
    # a batched predicate: run every branch on all lanes, then pick each lane's result
    index = clamp(np.int32(0), moveaxis(index, d_index, 0), np.int32(len(branches) - 1))
    outs = [eval_closed(batch_jaxpr(b, size, in_b, True)[0], *ops) for b in branches]
    picked = []
    for cases in zip(*outs):
        shape = get_aval(cases[0]).shape
        picked.append(select_n(broadcast_in_dim(index, shape, (0,)), *cases))
    return picked, [0] * len(picked)


cond_p.def_jvp(_cond_jvp)
cond_p.def_linearize(_cond_linearize)
cond_p.def_transpose(_cond_transpose)
cond_p.def_batch(_cond_batch)


# --- while ---------------------------------------------------------------------------------

_WHILE_REVERSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = _split(primals, nc, nb)
    _, bconst_t, carry_t = _split(tangents, nc, nb)
    bconst_nz, carry_nz = _nonzero(bconst_t), _nonzero(carry_t)
    while True:  # a carry's tangent is nonzero if it starts so or the body makes it so
        body, out_nz = jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, carry_nz)
        if out_nz == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz)
    n, nbt, nct = len(carry), sum(bconst_nz), sum(carry_nz)
    # jvp body binders: (bconsts, carry, bconst tangents, carry tangents); while wants the
    # body consts first: (bconsts, bconst tangents, carry, carry tangents)
    body = permute_invars(body, [*range(nb), *range(nb + n, nb + n + nbt), *range(nb, nb + n),
                                 *range(nb + n + nbt, nb + n + nbt + nct)])
    carry_avals = [get_aval(c) for c in carry]
    cond = add_unused_invars(cond_jaxpr, [a for a, z in zip(carry_avals, carry_nz) if z])
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = while_p.bind(*cconsts, *bconsts, *_nonzeros_only(bconst_t), *carry, *carry_t,
                        cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc,
                        body_nconsts=nb + nbt)
    return outs[:n], _with_zeros(outs[n:], carry_nz, carry_avals)


def _while_linearize(primals, tangents, **params):
    """The primal loop runs now; the tangents come from the whole JVP loop (which recomputes
    the primal) staged into the linear jaxpr: forward mode works, transposing it cannot."""
    outs = while_p.bind(*primals, **params)
    _, t_out = _while_jvp(primals, tangents, **params)
    return outs, t_out


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_ERROR)


def _while_batch(vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = axis_size(vals, dims)
    nc, nb = cond_nconsts, body_nconsts
    batched = [d is not not_mapped for d in dims]
    cc_b, bc_b, carry_b = _split(batched, nc, nb)
    while True:
        _, out_b = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)
        if out_b == carry_b:
            break
        carry_b = _or(carry_b, out_b)
    _, (pred_b,) = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False)
    if pred_b:  # lanes finish at different steps: every carry is selected per lane
        carry_b = [True] * len(carry_b)
    body, _ = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)
    cond, _ = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False)
    cconsts, bconsts, carry = _split(move_to_front(vals, dims), nc, nb)
    carry = [bdim_at_front(c, d, size) if b and d is not_mapped else c
             for c, d, b in zip(carry, dims[nc + nb:], carry_b)]
    if not pred_b:
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond, body_jaxpr=body,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, _dims(carry_b)
    carry_avals = [get_aval(c) for c in carry]

    def any_lane(*args):
        (pred,) = eval_closed(cond, *args)
        return [reduce_or(pred, (0,))]

    def step_live_lanes(*args):
        cc, bc, old = _split(args, nc, nb)
        (pred,) = eval_closed(cond, *cc, *old)
        new = eval_closed(body, *bc, *old)
        return [select_n(broadcast_in_dim(pred, get_aval(o).shape, (0,)), o, x)
                for o, x in zip(old, new)]

    cc_avals = [get_aval(c) for c in cconsts]
    any_cond = trace_closed(any_lane, cc_avals + carry_avals)
    step = trace_closed(step_live_lanes, cc_avals + [get_aval(c) for c in bconsts] + carry_avals)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_jaxpr=any_cond,
                        body_jaxpr=step, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, [0] * len(outs)


while_p.def_jvp(_while_jvp)
while_p.def_linearize(_while_linearize)
while_p.def_transpose(_while_transpose)
while_p.def_batch(_while_batch)


# --- scan ----------------------------------------------------------------------------------

def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(primals, nc, ncar)
    const_t, carry_t, xs_t = _split(tangents, nc, ncar)
    const_nz, carry_nz, xs_nz = _nonzero(const_t), _nonzero(carry_t), _nonzero(xs_t)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        body, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * n_ys)
        if out_nz[:ncar] == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:ncar])
    ys_nz = out_nz[ncar:]
    nx, nct, ncart, nxt, nyt = len(xs), sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    p = nc + ncar + nx
    # jvp binders (consts, carry, xs, their tangents) -> (consts, tangents, carry, ...) for scan
    body = permute_invars(body, [*range(nc), *range(p, p + nct), *range(nc, nc + ncar),
                                 *range(p + nct, p + nct + ncart), *range(nc + ncar, p),
                                 *range(p + nct + ncart, p + nct + ncart + nxt)])
    q = ncar + n_ys
    body = permute_outvars(body, [*range(ncar), *range(q, q + ncart), *range(ncar, q),
                                  *range(q + ncart, q + ncart + nyt)])
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = scan_p.bind(*consts, *_nonzeros_only(const_t), *carry, *carry_t, *xs,
                       *_nonzeros_only(xs_t), jaxpr=body, num_consts=nc + nct,
                       num_carry=ncar + ncart, length=length, reverse=reverse, unroll=unroll)
    carry_out, carry_t_out, ys, ys_t = _split(outs, ncar, ncart, n_ys)
    out_avals = [get_aval(o) for o in carry_out + ys]
    return carry_out + ys, (_with_zeros(carry_t_out, carry_nz, out_avals[:ncar])
                            + _with_zeros(ys_t, ys_nz, out_avals[ncar:]))


def _scan_linearize(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse,
                    unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(primals, nc, ncar)
    const_t, carry_t, xs_t = _split(tangents, nc, ncar)
    const_nz, carry_nz, xs_nz = _nonzero(const_t), _nonzero(carry_t), _nonzero(xs_t)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        known, lin, num_res, out_nz = linearize_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                                      carry_nz + [False] * n_ys)
        if out_nz[:ncar] == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:ncar])
    n_out = ncar + n_ys
    # residuals that are consts or xs of the loop are passed as they are; the others are
    # stacked per iteration as extra ys of the known loop
    kj = known.jaxpr
    const_of = {v: i for i, v in enumerate(kj.invars[:nc])}
    xs_of = {v: i for i, v in enumerate(kj.invars[nc + ncar:])}
    res_vars = kj.outvars[n_out:]
    invariant = [i for i, v in enumerate(res_vars) if v in const_of]
    sliced = [i for i, v in enumerate(res_vars) if v in xs_of and v not in const_of]
    stacked = [i for i in range(num_res) if i not in invariant and i not in sliced]
    known = _keep_outvars(known, [True] * n_out + [i in stacked for i in range(num_res)])
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=known, num_consts=nc, num_carry=ncar,
                       length=length, reverse=reverse, unroll=unroll)
    primal_out, res_stacked = outs[:n_out], outs[n_out:]
    ys_nz = out_nz[ncar:]
    out_avals = [get_aval(o) for o in primal_out]
    if not any(out_nz):
        return primal_out, _with_zeros([], out_nz, out_avals)
    nct, ncart, nxt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    r = num_res
    lin = permute_invars(lin, [*invariant, *range(r, r + nct), *range(r + nct, r + nct + ncart),
                               *stacked, *sliced, *range(r + nct + ncart, r + nct + ncart + nxt)])
    res_consts = [consts[const_of[res_vars[i]]] for i in invariant]
    res_xs = [xs[xs_of[res_vars[i]]] for i in sliced]
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    t_out = scan_p.bind(*res_consts, *_nonzeros_only(const_t), *carry_t, *res_stacked, *res_xs,
                        *_nonzeros_only(xs_t), jaxpr=lin, num_consts=len(res_consts) + nct,
                        num_carry=ncart, length=length, reverse=reverse, unroll=unroll)
    carry_t_out, ys_t = t_out[:ncart], t_out[ncart:]
    return primal_out, (_with_zeros(carry_t_out, carry_nz, out_avals[:ncar])
                        + _with_zeros(ys_t, ys_nz, out_avals[ncar:]))


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """The reverse loop: cotangents of the carries flow backwards as its carry, those of the
    linear consts accumulate in extra carries, and those of the linear xs come out as ys.
    Every carry of a linear loop is linear (a constant zero init is treated so too)."""
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(args, nc, ncar)
    ct_carry, ct_ys = cts[:ncar], cts[ncar:]
    const_lin = [is_undefined(c) for c in consts]
    xs_lin = [is_undefined(x) for x in xs]
    ires = [c for c, lin in zip(consts, const_lin) if not lin]
    eres = [x for x, lin in zip(xs, xs_lin) if not lin]
    in_avals = jaxpr.in_avals
    const_avals, carry_avals, x_avals = _split(in_avals, nc, ncar)
    lin_const_avals = [a for a, lin in zip(const_avals, const_lin) if lin]
    ys_nz = _nonzero(ct_ys)
    y_avals = jaxpr.out_avals[ncar:]

    def body_t(*args):
        ires_, acc, ct_c, rest = _split(args, len(ires), len(lin_const_avals), ncar)
        ct_y, eres_ = rest[:sum(ys_nz)], iter(rest[sum(ys_nz):])
        ires_ = iter(ires_)
        ins = ([UndefinedPrimal(a) if lin else next(ires_)
                for a, lin in zip(const_avals, const_lin)]
               + [UndefinedPrimal(a) for a in carry_avals]
               + [UndefinedPrimal(a) if lin else next(eres_) for a, lin in zip(x_avals, xs_lin)])
        cts_out = list(ct_c) + _with_zeros(ct_y, ys_nz, y_avals)
        cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, ins, cts_out)
        ct_consts, ct_carry_in, ct_xs = _split(cts_in, nc, ncar)
        acc = [instantiate(add_tangents(a, c))
               for a, c in zip(acc, [c for c, lin in zip(ct_consts, const_lin) if lin])]
        return (acc + [instantiate(c) for c in ct_carry_in]
                + [instantiate(c) for c, lin in zip(ct_xs, xs_lin) if lin])

    t_avals = ([get_aval(c) for c in ires] + lin_const_avals + carry_avals
               + [a for a, nz in zip(y_avals, ys_nz) if nz]
               + [a for a, lin in zip(x_avals, xs_lin) if not lin])
    body = trace_closed(body_t, t_avals)
    n_acc = len(lin_const_avals)
    outs = scan_p.bind(*ires, *[zeros_like_aval(a) for a in lin_const_avals],
                       *[instantiate(c) for c in ct_carry], *_nonzeros_only(ct_ys), *eres,
                       jaxpr=body, num_consts=len(ires), num_carry=n_acc + ncar, length=length,
                       reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = _split(outs, n_acc, ncar)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return ([next(ct_consts) if lin else None for lin in const_lin]
            + [ct if is_undefined(c) else None for c, ct in zip(carry, ct_init)]
            + [next(ct_xs) if lin else None for lin in xs_lin])


def _scan_batch(vals, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = axis_size(vals, dims)
    nc, ncar = num_consts, num_carry
    const_b, carry_b, xs_b = _split([d is not not_mapped for d in dims], nc, ncar)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        body, out_b = batch_jaxpr(jaxpr, size, const_b + carry_b + xs_b,
                                  carry_b + [False] * n_ys)
        if out_b[:ncar] == carry_b:
            break
        carry_b = _or(carry_b, out_b[:ncar])
    (consts, carry, xs), (_, carry_d, xs_d) = _split(vals, nc, ncar), _split(dims, nc, ncar)
    consts = move_to_front(consts, dims[:nc])
    carry = [bdim_at_front(c, d, size) if b else c for c, d, b in zip(carry, carry_d, carry_b)]
    xs = [x if d is not_mapped else moveaxis(x, d, 1) for x, d in zip(xs, xs_d)]
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=body, num_consts=nc, num_carry=ncar,
                       length=length, reverse=reverse, unroll=unroll)
    return outs, _dims(carry_b) + _dims(out_b[ncar:], 1)


scan_p.def_jvp(_scan_jvp)
scan_p.def_linearize(_scan_linearize)
scan_p.def_transpose(_scan_transpose)
scan_p.def_batch(_scan_batch)
