"""Sharding propagation, the pass jit runs when its arguments are laid out over a mesh (before
the usual passes, on the traced jaxpr): `propagate_shardings` decides, in one forward walk, how
each value is split over the mesh axes, as GSPMD does for the common cases, and which
collectives the per-shard program needs; `eval_partitioned` runs the jaxpr on one shard's
pieces with those collectives (under transforms/spmd.py's per-axis batch traces).

The rules, as data flowing one way (a layout is `Dims`: per dimension, its mesh axes):
- elementwise: the first operand's layout, with the others' axes on dimensions it leaves
  whole;
- broadcast_in_dim / reshape / transpose / squeeze: the operand's layout mapped to the result;
- reductions (sum, max, min) over a split dimension: a partial reduction per shard, then
  psum / pmax / pmin over its axes; other reductions gather the reduced dimensions first;
- dot_general: batch and free dimensions keep their axes (data parallel); a split contracting
  dimension (model parallel) gives partial products, summed with psum;
- scans, sorts, reversals: gathered along their dimensions, the result cut back to the
  operands' layout; a slice keeping every split dimension whole: per shard; other slices,
  pads, concatenations: computed gathered, the result cut back to the first operand's layout
  where its axes divide the result;
- while / scan / cond: run gathered, results cut back to the layouts their bodies give them
  (a carry keeps its initial value's layout plus the axes the body splits it over; a scan's
  stacked outputs get the body's layout under a whole leading dimension; cond: the branches'
  agreeing layout);
- convolutions: the lhs batch dimension keeps its axes;
- gather: the indices' batch dimensions (and the operand's batching dimensions paired with
  them) and the operand's whole dimensions keep their axes; scatters: computed gathered, the
  result cut back to the operand's layout;
- calls (jit, custom_jvp/vjp, checkpoint): their bodies, planned for the operands' layouts;
- anything else: its operands gathered (replicated) first, its results replicated.
An operand whose layout differs from the one its rule wants is resharded first: all_gather of
the dimensions losing axes, then a slice (at the shard's axis_index) of those gaining them.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..core import dtypes
from ..core.global_array import carry_notes, is_own_block_cut
from ..core.jaxpr import Jaxpr, Literal
from ..core.primitive import ELEMENTWISE
from ..core.sharding import NamedSharding
from ..core.trace import get_aval
from ..lax import (all_gather, axis_index, convert_element_type, dynamic_slice_in_dim, pmax,
                   pmin, psum)
from ..lax.call import pjit_p
from ..lax.linalg import dot_general_p
from ..lax.reductions import (argmax_p, argmin_p, reduce_and_p, reduce_max_p, reduce_min_p,
                          reduce_or_p, reduce_prod_p, reduce_sum_p, reduce_xor_p)
from ..lax.control_flow import cond_p, scan_p, while_p
from ..lax.convolution import conv_general_dilated_p
from ..lax.cumulative import cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p
from ..lax.random_bits import philox4x32_p, threefry2x32_p
from ..lax.indexing import (dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_add_p,
                            scatter_apply_p, scatter_max_p, scatter_min_p, scatter_mul_p,
                            scatter_p, scatter_sub_p)
from ..lax.shape import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p,
                         squeeze_p, transpose_p)
from ..lax.sorting import sort_p, top_k_p
from ..lax.sharding import sharding_constraint_p
from ..transforms.custom import checkpoint_p, custom_jvp_call_p, custom_vjp_call_p
from ..transforms.custom_batching import custom_vmap_call_p
from ..transforms.spmd import Dims, dims_axes, local_shape, replicated


@dataclass(frozen=True)
class EqnPlan:
    """How one equation runs per shard: each operand resharded to `in_dims` first (None: a
    rank-0 operand, taken as it is), results laid out as `out_dims`, partial results combined
    over the mesh axes `combine` (by `combine_with`: psum/pmax/pmin), or a call's body run as
    the `inner` plan says."""
    in_dims: tuple
    out_dims: tuple
    combine: tuple = ()
    combine_with: Callable | None = None
    inner: Plan | None = None
    computed: tuple | None = None  # the results' layout as computed, when it is not out_dims


@dataclass(frozen=True)
class Plan:
    """A jaxpr's partitioning: its inputs' layouts, one EqnPlan per equation (in order) and its
    outputs' layouts."""
    in_dims: tuple
    eqns: tuple
    out_dims: tuple


def propagate_shardings(jaxpr: Jaxpr, in_dims: Sequence[Dims], sizes: dict,
                        known: dict | None = None) -> Plan:
    """The layout of every value of `jaxpr` given its inputs' (constants are replicated), and
    the resharding and collectives each equation needs. `sizes`: mesh axis -> size. `known`:
    Var -> Dims of values whose layout is decided where they are made (shard_map's results,
    laid out as its out_specs say), taken over whatever their equation's rule gives."""
    env: dict = {v: tuple(d) for v, d in zip(jaxpr.invars, in_dims)}

    def read(v) -> Dims:
        if isinstance(v, Literal):
            return replicated(v.aval.ndim)
        return env.get(v, replicated(v.aval.ndim))

    plans = []
    for eqn in jaxpr.eqns:
        if known and eqn.primitive in _BODY:  # (a known value may be made inside the call)
            inner = propagate_shardings(eqn.params[_BODY[eqn.primitive]].jaxpr,
                                        [read(v) for v in eqn.invars], sizes, known)
            ep = EqnPlan(tuple(read(v) for v in eqn.invars), inner.out_dims, inner=inner)
        elif eqn.primitive in _CONTROL:
            ep = _CONTROL[eqn.primitive](eqn, [read(v) for v in eqn.invars], sizes, known)
        else:
            ep = _plan_eqn(eqn, [read(v) for v in eqn.invars], sizes)
        plans.append(ep)
        env.update(zip(eqn.outvars, ep.out_dims))
        if known:
            env.update((v, known[v]) for v in eqn.outvars if v in known)
    return Plan(tuple(read(v) for v in jaxpr.invars), tuple(plans),
                tuple(read(v) for v in jaxpr.outvars))


def _plan_eqn(eqn, dims: list, sizes: dict) -> EqnPlan:
    rule = _RULES.get(eqn.primitive)
    if rule is None and eqn.primitive.fusion == ELEMENTWISE:
        rule = _elementwise
    if rule is not None:
        plan = rule(eqn, dims, sizes)
        if plan is not None:
            return plan
    return _gathered(eqn)


def _gathered(eqn) -> EqnPlan:
    """The fallback: every operand whole on every shard, the equation run as it is."""
    return EqnPlan(tuple(replicated(v.aval.ndim) for v in eqn.invars),
                   tuple(replicated(v.aval.ndim) for v in eqn.outvars))


def _free(entry: tuple, used: set) -> tuple:
    """`entry`'s axes if none of them is taken yet (then they are), else unsplit."""
    if not entry or used.intersection(entry):
        return ()
    used.update(entry)
    return entry


def _elementwise(eqn, dims: list, sizes: dict) -> EqnPlan | None:
    shape = eqn.outvars[0].aval.shape
    if any(v.aval.ndim and v.aval.shape != shape for v in eqn.invars) or \
            any(v.aval.shape != shape for v in eqn.outvars):
        return None
    # the first operand's layout, and the others' axes where it leaves a dimension whole
    ranked = [d for v, d in zip(eqn.invars, dims) if v.aval.ndim]
    used: set = set()
    out = [_free(axes, used) for axes in ranked[0]] if ranked else [()] * len(shape)
    for d in ranked[1:]:
        out = [axes or _free(d[k], used) for k, axes in enumerate(out)]
    out = tuple(out)
    return EqnPlan(tuple(out if v.aval.ndim else None for v in eqn.invars),
                   (out,) * len(eqn.outvars))


def _broadcast_in_dim(eqn, dims: list, sizes: dict) -> EqnPlan:
    (x,), (out_v,) = eqn.invars, eqn.outvars
    bdims = eqn.params["broadcast_dimensions"]
    src = [d if x.aval.shape[k] == out_v.aval.shape[bdims[k]] else ()
           for k, d in enumerate(dims[0])]
    out = [()] * out_v.aval.ndim
    for k, b in enumerate(bdims):
        out[b] = src[k]
    return EqnPlan((tuple(src),), (tuple(out),))


def _transpose(eqn, dims: list, sizes: dict) -> EqnPlan:
    perm = eqn.params["permutation"]
    return EqnPlan((dims[0],), (tuple(dims[0][p] for p in perm),))


def _squeeze(eqn, dims: list, sizes: dict) -> EqnPlan:
    gone = set(eqn.params["dimensions"])
    src = tuple(() if k in gone else d for k, d in enumerate(dims[0]))
    return EqnPlan((src,), (tuple(d for k, d in enumerate(src) if k not in gone),))


def _reshape(eqn, dims: list, sizes: dict) -> EqnPlan | None:
    """Dimensions are matched in groups of equal size product (a split or a merge: the
    boundaries are the products both shapes reach); in each group the most major dimension of
    size > 1 keeps its axes if the group's most major result dimension divides by them (each
    shard is then one contiguous block of the group); the other dimensions gather."""
    if eqn.params.get("dimensions") is not None:
        return None
    in_shape, out_shape = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    if 0 in in_shape:
        return None
    in_prods = list(itertools.accumulate(in_shape, operator.mul))
    out_prods = list(itertools.accumulate(out_shape, operator.mul))
    bounds = sorted(set(in_prods) & set(out_prods))
    major_out: dict = {}
    for k, p in enumerate(out_prods):
        if out_shape[k] > 1:
            major_out.setdefault(bisect.bisect_left(bounds, p), k)
    src, out, seen = [()] * len(in_shape), [()] * len(out_shape), set()
    for k, p in enumerate(in_prods):
        group = bisect.bisect_left(bounds, p)
        if in_shape[k] == 1 or group in seen:
            continue
        seen.add(group)
        axes, o = dims[0][k], major_out[group]
        if axes and out_shape[o] % math.prod(sizes[a] for a in axes) == 0:
            src[k] = out[o] = axes
    return EqnPlan((tuple(src),), (tuple(out),))


_COMBINE = {reduce_sum_p: psum, reduce_max_p: pmax, reduce_min_p: pmin}


def _reduction(eqn, dims: list, sizes: dict) -> EqnPlan:
    """Kept dimensions keep their axes; a split reduced dimension is reduced per shard and
    the partial results combined (sum/max/min), or gathered first (other reductions)."""
    axes = set(eqn.params["axes"])
    combine_with = _COMBINE.get(eqn.primitive)
    if eqn.invars[0].aval.dtype == bool:
        combine_with = None
    src = tuple(() if k in axes and combine_with is None else d
                for k, d in enumerate(dims[0]))
    out = tuple(d for k, d in enumerate(src) if k not in axes)
    combine = tuple(a for k, d in enumerate(src) if k in axes for a in d)
    return EqnPlan((src,), (out,) * len(eqn.outvars), combine,
                   combine_with if combine else None)


def _dot_general(eqn, dims: list, sizes: dict) -> EqnPlan:
    """Batch dimensions, then the lhs's free ones, the rhs's free ones and the contracting
    ones, each keep the axes their operand gives them unless an earlier one took them; split
    contracting dimensions make partial products, summed over their axes."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ld, rd = dims
    lhs, rhs = [()] * len(ld), [()] * len(rd)
    used: set = set()
    batch = []
    for i, j in zip(lb, rb):
        lhs[i] = rhs[j] = _free(ld[i] or rd[j], used)
        batch.append(lhs[i])
    lfree = [k for k in range(len(ld)) if k not in lb and k not in lc]
    rfree = [k for k in range(len(rd)) if k not in rb and k not in rc]
    for k in lfree:
        lhs[k] = _free(ld[k], used)
    for k in rfree:
        rhs[k] = _free(rd[k], used)
    combine = []
    for i, j in zip(lc, rc):
        lhs[i] = rhs[j] = _free(ld[i] or rd[j], used)
        combine += list(lhs[i])
    out = tuple(batch) + tuple(lhs[k] for k in lfree) + tuple(rhs[k] for k in rfree)
    return EqnPlan((tuple(lhs), tuple(rhs)), (out,), tuple(combine),
                   psum if combine else None)


def _along(param: str) -> Callable:
    """Scans, sorts and reversals along the dimensions `param` names: those are gathered for
    the operation, the others keep the operands' layout (as elementwise), and the results are
    cut back to that layout afterwards, as GSPMD reports them."""
    def rule(eqn, dims: list, sizes: dict) -> EqnPlan | None:
        plan = _elementwise(eqn, dims, sizes)
        if plan is None:
            return None
        along = eqn.params[param]
        along = {along} if isinstance(along, int) else set(along)
        layout = plan.out_dims[0]
        work = tuple(() if k in along else axes for k, axes in enumerate(layout))
        if work == layout:
            return plan
        return EqnPlan((work,) * len(eqn.invars), plan.out_dims,
                       computed=(work,) * len(eqn.outvars))
    return rule


def _cut_back(eqn, dims: list, sizes: dict) -> EqnPlan | None:
    """Slices, pads, concatenations: computed on gathered operands, the result then cut to
    the first operand's layout on each dimension its axes divide (GSPMD keeps it there)."""
    first, out_shape = dims[0], eqn.outvars[0].aval.shape
    if len(first) != len(out_shape) or is_own_block_cut(eqn.outvars[0]):
        return None  # (shard_map's cut of this process's block: whole on its every shard)
    if eqn.primitive is slice_p and all(
            not axes or (a == 0 and b == n and k in (None, 1)) for axes, a, b, k, n in zip(
                first, eqn.params["start_indices"], eqn.params["limit_indices"],
                eqn.params["strides"] or (None,) * len(first), eqn.invars[0].aval.shape)):
        return EqnPlan((first,), (first,))  # (it keeps every split dimension whole: per shard)
    want = tuple(axes if n % math.prod(sizes[a] for a in axes) == 0 else ()
                 for n, axes in zip(out_shape, first))
    plan = _gathered(eqn)
    return plan if want == plan.out_dims[0] else \
        EqnPlan(plan.in_dims, (want,), computed=plan.out_dims)


def _gather(eqn, dims: list, sizes: dict) -> EqnPlan:
    """Indexing (an embedding lookup, `x[:, idx]`, take_along_axis): batching dimensions
    (operand's and indices' paired) and the indices' other batch dimensions keep their axes
    (data parallel), and so do operand dimensions taken whole (passed through to the result);
    the indexed operand dimensions are gathered."""
    dn, slice_sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
    operand, out_v = eqn.invars[0], eqn.outvars[0]
    used: set = set()
    src, idx = [()] * operand.aval.ndim, [()] * eqn.invars[1].aval.ndim
    for d, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        src[d] = idx[i] = _free(dims[0][d] or dims[1][i], used)
    for d, axes in enumerate(dims[0]):
        if d not in dn.start_index_map and d not in dn.collapsed_slice_dims and \
                d not in dn.operand_batching_dims and slice_sizes[d] == operand.aval.shape[d]:
            src[d] = _free(axes, used)
    for i, axes in enumerate(dims[1][:-1]):  # (the last: the index vector, whole)
        if i not in dn.start_indices_batching_dims:
            idx[i] = _free(axes, used)
    src, idx = tuple(src), tuple(idx)
    kept = iter(src[d] for d in range(operand.aval.ndim) if d not in dn.collapsed_slice_dims)
    batch = iter(idx[:-1])
    out = tuple(next(kept) if k in dn.offset_dims else next(batch)
                for k in range(out_v.aval.ndim))
    return EqnPlan((src, idx), (out,))


def _merged(first: Dims, other: Dims) -> Dims:
    """`first`'s layout, with `other`'s axes on the dimensions it leaves whole (those axes not
    used elsewhere): the layout GSPMD settles on for a value two places define."""
    used = {a for axes in first for a in axes}
    return tuple(axes or _free(o, used) for axes, o in zip(first, other))


def _carried(body: Jaxpr, consts: list, init: list, xs: list, sizes: dict,
             known: dict | None) -> tuple[list, Plan]:
    """A loop's carries' layouts: their initial values', with the axes the body gives them on
    dimensions those leave whole (a carry made split in the body stays split), to a fixed
    point; and the body's plan for them. `xs`: the layouts of the body's other inputs."""
    carry = [tuple(d) for d in init]
    for _ in range(sum(len(d) for d in carry) + 1):  # (each round splits one more dimension)
        inner = propagate_shardings(body, [*consts, *carry, *xs], sizes, known)
        new = [_merged(c, o) for c, o in zip(carry, inner.out_dims)]
        if new == carry:
            break
        carry = new
    return carry, inner


def _run_gathered(eqn, want: tuple) -> EqnPlan:
    """Control flow runs on gathered operands (its bodies are not partitioned); its results
    are then cut to the layouts `want` GSPMD reports for them."""
    plan = _gathered(eqn)
    want = tuple(tuple(d) for d in want)
    return plan if want == plan.out_dims else \
        EqnPlan(plan.in_dims, want, computed=plan.out_dims)


def _scan(eqn, dims: list, sizes: dict, known: dict | None) -> EqnPlan:
    """scan: the carries keep their layout through the steps (gaining the axes the body
    splits them over), and each stacked output is laid out as the body makes it, its leading
    (stacking) dimension whole; the scanned operands' slices lose their leading dimension's
    axes."""
    p = eqn.params
    nc, ncarry = p["num_consts"], p["num_carry"]
    xs = [tuple(d[1:]) for d in dims[nc + ncarry:]]
    carry, inner = _carried(p["jaxpr"].jaxpr, dims[:nc], dims[nc:nc + ncarry], xs, sizes,
                            known)
    ys = [((),) + tuple(d) for d in inner.out_dims[ncarry:]]
    return _run_gathered(eqn, tuple(carry) + tuple(ys))


def _while(eqn, dims: list, sizes: dict, known: dict | None) -> EqnPlan:
    """while: each carry keeps its initial value's layout, with the axes the body splits it
    over where that leaves a dimension whole."""
    p = eqn.params
    first = p["cond_nconsts"] + p["body_nconsts"]
    carry, _ = _carried(p["body_jaxpr"].jaxpr, dims[p["cond_nconsts"]:first], dims[first:],
                        [], sizes, known)
    return _run_gathered(eqn, tuple(carry))


def _cond(eqn, dims: list, sizes: dict, known: dict | None) -> EqnPlan:
    """cond / switch: each result laid out as the branches make it (the first branch's
    layout, with the others' axes where it leaves a dimension whole)."""
    outs = [propagate_shardings(b.jaxpr, dims[1:], sizes, known).out_dims
            for b in eqn.params["branches"]]
    return _run_gathered(eqn, tuple(functools.reduce(_merged, per_branch)
                                    for per_branch in zip(*outs)))


def _conv(eqn, dims: list, sizes: dict) -> EqnPlan | None:
    """A convolution keeps the lhs batch dimension's axes (data parallel); the kernel and the
    other dimensions are gathered."""
    dn = eqn.params["dimension_numbers"]
    if eqn.params["batch_group_count"] != 1:
        return None
    axes, ndim = dims[0][dn.lhs_spec[0]], eqn.outvars[0].aval.ndim
    lhs, out = [()] * ndim, [()] * ndim
    lhs[dn.lhs_spec[0]] = out[dn.out_spec[0]] = axes
    return EqnPlan((tuple(lhs), replicated(ndim)), (tuple(out),))


def _top_k(eqn, dims: list, sizes: dict) -> EqnPlan:
    """top_k works along the last dimension: that one gathered, the others keep their axes."""
    src = tuple(dims[0][:-1]) + ((),)
    return EqnPlan((src,), (src,) * len(eqn.outvars))


def _constraint(eqn, dims: list, sizes: dict) -> EqnPlan:
    """with_sharding_constraint / reshard: the value resharded to the layout asked for."""
    sharding, shape = eqn.params["sharding"], eqn.invars[0].aval.shape
    if not isinstance(sharding, NamedSharding):
        return EqnPlan((replicated(len(shape)),), (replicated(len(shape)),))
    # a dimension its axes do not divide stays whole (JAX would pad the last shard)
    want = tuple(axes if n % math.prod(sizes[a] for a in axes) == 0 else ()
                 for n, axes in zip(shape, sharding._parts(len(shape))))
    return EqnPlan((want,), (want,))


def _call(body_param: str) -> Callable:
    """A call's body planned for its operands' layouts (no resharding at the boundary)."""
    def rule(eqn, dims: list, sizes: dict) -> EqnPlan:
        inner = propagate_shardings(eqn.params[body_param].jaxpr, dims, sizes)
        return EqnPlan(tuple(dims), inner.out_dims, inner=inner)
    return rule


_RULES: dict = {
    broadcast_in_dim_p: _broadcast_in_dim, reshape_p: _reshape, transpose_p: _transpose,
    squeeze_p: _squeeze, dot_general_p: _dot_general,
    **{p: _reduction for p in (reduce_sum_p, reduce_max_p, reduce_min_p, reduce_prod_p,
                               reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p)},
    **{p: _along("axis") for p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p)},
    rev_p: _along("dimensions"), sort_p: _along("dimension"), top_k_p: _top_k,
    gather_p: _gather,
    threefry2x32_p: _elementwise, philox4x32_p: _elementwise,  # (elementwise, several results)
    conv_general_dilated_p: _conv,
    **{p: _cut_back for p in (slice_p, pad_p, concatenate_p, dynamic_slice_p,
                              dynamic_update_slice_p, scatter_p, scatter_add_p, scatter_sub_p,
                              scatter_mul_p, scatter_min_p, scatter_max_p, scatter_apply_p)},
    sharding_constraint_p: _constraint, pjit_p: _call("jaxpr"),
    custom_jvp_call_p: _call("call_jaxpr"), custom_vjp_call_p: _call("call_jaxpr"),
    custom_vmap_call_p: _call("call_jaxpr"), checkpoint_p: _call("jaxpr"),
}
_CONTROL: dict = {scan_p: _scan, while_p: _while, cond_p: _cond}  # (given `known` too)
_BODY = {pjit_p: "jaxpr", custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr",
         custom_vmap_call_p: "call_jaxpr", checkpoint_p: "jaxpr"}


def constraints(jaxpr: Jaxpr) -> list:
    """The shardings of the sharding_constraint equations the pass plans (those of the
    program and of the calls in it, outermost first)."""
    found, todo = [], [jaxpr]
    while todo:
        for eqn in todo.pop(0).eqns:
            if eqn.primitive is sharding_constraint_p and \
                    isinstance(eqn.params["sharding"], NamedSharding):
                found.append(eqn.params["sharding"])
            elif eqn.primitive in _BODY:
                todo.append(eqn.params[_BODY[eqn.primitive]].jaxpr)
    return found


def values_made(jaxpr: Jaxpr):
    """The Vars `jaxpr` binds: its inputs and its equations' results, and those of the
    bodies it plans through (jit, custom_jvp/vjp, checkpoint, scan/while/cond), outermost
    first."""
    todo = [jaxpr]
    while todo:
        j = todo.pop(0)
        yield from j.invars
        for eqn in j.eqns:
            yield from eqn.outvars
            todo.extend(_bodies(eqn))


def _bodies(eqn) -> list:
    """The jaxprs propagation plans through inside `eqn` (a call's, a loop's body, cond's
    branches)."""
    p = eqn.params
    if eqn.primitive in _BODY:
        return [p[_BODY[eqn.primitive]].jaxpr]
    if eqn.primitive is scan_p:
        return [p["jaxpr"].jaxpr]
    if eqn.primitive is while_p:
        return [p["body_jaxpr"].jaxpr]
    if eqn.primitive is cond_p:
        return [b.jaxpr for b in p["branches"]]
    return []


# --- running the plan on one shard ----------------------------------------------------------

def eval_partitioned(jaxpr: Jaxpr, consts: Sequence, plan: Plan, sizes: dict,
                     args: Sequence) -> list:
    """`jaxpr` run on one shard's pieces of its inputs (laid out as the plan's inputs), under
    batch traces bound to the mesh axes: each equation on its operands' shards (resharded as
    planned) with shape parameters made local, then the planned collectives."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    layout: dict = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    def dims_of(v) -> Dims:
        return replicated(v.aval.ndim) if isinstance(v, Literal) else \
            layout.get(v, replicated(v.aval.ndim))

    layout.update(zip(jaxpr.invars, plan.in_dims))
    for eqn, ep in zip(jaxpr.eqns, plan.eqns):
        vals = [read(v) if want is None else reshard(read(v), dims_of(v), want, sizes)
                for v, want in zip(eqn.invars, ep.in_dims)]
        narrow = None
        if eqn.primitive is sharding_constraint_p:  # done by the resharding
            outs = vals
        elif ep.inner is not None:
            body = eqn.params[_BODY[eqn.primitive]]
            outs = eval_partitioned(body.jaxpr, body.consts, ep.inner, sizes, vals)
        else:
            params = _local_params(eqn, ep, sizes)
            if ep.combine_with is psum:
                narrow = _summed_wider(eqn)
            if narrow is not None:  # (each shard's partial sum kept in float32 for the psum)
                vals, params = _widened(eqn, vals, params)
            outs = eqn.primitive.bind(*vals, **params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
            if params == eqn.params and not ep.combine and ep.computed is None and \
                    is_own_block_cut(eqn.outvars[0]):  # (the same cut, staged again)
                carry_notes(eqn.outvars[0], outs[0])
        if ep.combine:
            outs = [ep.combine_with(o, ep.combine) for o in outs]
            if narrow is not None:  # (rounded once, after the whole sum: as one device's)
                outs = [convert_element_type(o, narrow) for o in outs]
        if ep.computed is not None:
            outs = [reshard(o, c, d, sizes) for o, c, d in zip(outs, ep.computed, ep.out_dims)]
        env.update(zip(eqn.outvars, outs))
        layout.update(zip(eqn.outvars, ep.out_dims))
    return [reshard(read(v), dims_of(v), d, sizes) for v, d in zip(jaxpr.outvars, plan.out_dims)]


def reshards(jaxpr: Jaxpr, plan: Plan) -> bool:
    """Whether running `plan` (`eval_partitioned`) reshards a value: gathers it along a mesh
    axis or cuts it at the shard's position there. A plan that does not (elementwise work,
    reductions combined by psum / pmax / pmin) computes each shard from that shard's pieces
    alone, so it never reads which position a shard holds. Conservative: the checks mirror
    eval_partitioned's, and the program's literals count as replicated."""
    todo = [(jaxpr, plan)]
    while todo:
        j, p = todo.pop()
        layout: dict = dict(zip(j.invars, p.in_dims))

        def dims_of(v, layout=layout) -> Dims:
            return replicated(v.aval.ndim) if isinstance(v, Literal) else \
                layout.get(v, replicated(v.aval.ndim))
        for eqn, ep in zip(j.eqns, p.eqns):
            if any(want is not None and tuple(dims_of(v)) != tuple(want)
                   for v, want in zip(eqn.invars, ep.in_dims)):
                return True
            if ep.computed is not None and any(tuple(c) != tuple(d) for c, d in
                                               zip(ep.computed, ep.out_dims)):
                return True
            if ep.inner is not None:
                todo.append((eqn.params[_BODY[eqn.primitive]].jaxpr, ep.inner))
            layout.update(zip(eqn.outvars, ep.out_dims))
        if any(tuple(dims_of(v)) != tuple(d) for v, d in zip(j.outvars, p.out_dims)):
            return True
    return False


def summed_in(dtype: Any) -> Any:
    """Where one device sums `dtype` (a reduce_sum, a dot_general's products): half floats in
    float32, rounded once at the end (backend/llvm/reductions.py, the NumPy reference)."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _summed_wider(eqn) -> Any:
    """The half-float dtype of a sum or product whose partial results (per shard, then a psum)
    are to be kept in float32, or None. Rounded per shard, the total would be rounded twice
    (or more) and could differ from one device's sum, which rounds once."""
    if eqn.primitive not in (reduce_sum_p, dot_general_p):
        return None
    dtype = eqn.outvars[0].aval.dtype
    return dtype if summed_in(dtype) != dtype else None


def _widened(eqn, vals: list, params: dict) -> tuple[list, dict]:
    """`eqn`'s operands and parameters for its result in float32 (`_summed_wider`): a sum of
    its operand converted (exact), a product asking for float32 (half-float products are exact
    there, and one device accumulates them there too)."""
    if eqn.primitive is reduce_sum_p:
        return [convert_element_type(v, dtypes.float32) for v in vals], params
    return vals, dict(params, preferred_element_type=dtypes.float32)


def _local_params(eqn, ep: EqnPlan, sizes: dict) -> dict:
    """The equation's parameters for one shard: an output shape parameter made local."""
    out_v, out_d = eqn.outvars[0], ep.out_dims[0] if ep.out_dims else ()
    if eqn.primitive is broadcast_in_dim_p:
        return dict(eqn.params, shape=local_shape(out_v.aval.shape, out_d, sizes))
    if eqn.primitive is reshape_p:
        return dict(eqn.params, new_sizes=local_shape(out_v.aval.shape, out_d, sizes))
    if eqn.primitive is slice_p:  # (split dimensions kept whole: the shard's whole)
        return dict(eqn.params, limit_indices=tuple(
            m if not d else n for m, d, n in zip(
                eqn.params["limit_indices"], ep.in_dims[0],
                local_shape(eqn.invars[0].aval.shape, ep.in_dims[0], sizes))))
    if eqn.primitive is gather_p:  # operand dimensions taken whole: the shard's whole
        return dict(eqn.params, slice_sizes=local_shape(eqn.params["slice_sizes"],
                                                        ep.in_dims[0], sizes))
    return eqn.params


def reshard(x: Any, src: Dims, dst: Dims, sizes: dict) -> Any:
    """One shard of a value laid out as `src`, as its shard laid out as `dst`: dimensions
    losing axes are gathered (minor axis first, so pieces land in order), then dimensions
    gaining axes keep the slice at this shard's position along them."""
    if src is None or tuple(src) == tuple(dst):
        return x
    for k, (s, d) in enumerate(zip(src, dst)):
        if s != d:
            for a in reversed(s):
                x = all_gather(x, a, axis=k, tiled=True)
    for k, (s, d) in enumerate(zip(src, dst)):
        if s != d and d:
            n = get_aval(x).shape[k] // math.prod(sizes[a] for a in d)
            at = 0
            for a in d:
                at = at * sizes[a] + axis_index(a)
            x = dynamic_slice_in_dim(x, at * n, n, axis=k)
    return x


__all__ = ["EqnPlan", "Plan", "Dims", "constraints", "dims_axes", "eval_partitioned",
           "propagate_shardings", "reshard", "reshards", "values_made"]
