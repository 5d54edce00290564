"""Fusion: decide which values are computed inside their consumers' loops instead of being
written to memory. Elementwise ops, broadcasts, iota and index-remapping shape ops fuse into
consumers that are themselves fusible or reductions; a value used more than once is
materialised once (unless it is a cheap broadcast/iota of something already in memory).
Row regions (softmax and the like) arrive here as `row_map` equations (compiler.rows): one
kernel each, whose body is planned like any jaxpr when codegen emits it per row."""
from __future__ import annotations

from ..core.jaxpr import Jaxpr, Var
from ..core.primitive import ELEMENTWISE, INDEX_MAP, REDUCTION
from ..lax.elementwise import bitcast_convert_type_p


def fusible(eqn) -> bool:
    """Computable element by element inside a consumer's loop nest (the primitive's declared
    fusion class is elementwise or an index map)."""
    if eqn.primitive.fusion not in (ELEMENTWISE, INDEX_MAP) or len(eqn.outvars) != 1:
        return False
    if eqn.primitive is bitcast_convert_type_p:  # between widths the element counts differ
        return eqn.invars[0].aval.dtype.itemsize == eqn.outvars[0].aval.dtype.itemsize
    return True


def is_elementwise(eqn) -> bool:
    return eqn.primitive.fusion == ELEMENTWISE


def is_reduction(eqn) -> bool:
    """A kernel root that reads fused operands."""
    return eqn.primitive.fusion == REDUCTION



def def_use(eqns) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Index maps of a list of equations: var id -> the equation defining it, and var id -> the
    equations reading it (in order, once per operand position)."""
    producer = {id(v): k for k, e in enumerate(eqns) for v in e.outvars}
    users: dict[int, list[int]] = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(id(v), []).append(k)
    return producer, users

class FusionPlan:
    """`lazy`: ids of vars computed inside their consumers; `kernels`: the groups, for printing."""

    def __init__(self, lazy: set[int], kernels: list[list]):
        self.lazy = lazy
        self.kernels = kernels


def plan_fusion(jaxpr: Jaxpr) -> FusionPlan:
    consumers: dict[int, list] = {}
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if isinstance(v, Var):
                consumers.setdefault(id(v), []).append(eqn)
    outs = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    producer = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    lazy: set[int] = set()
    for eqn in jaxpr.eqns:
        if not fusible(eqn):
            continue
        v = eqn.outvars[0]
        if v.aval.ndim == 0 or id(v) in outs:
            continue
        users = consumers.get(id(v), [])
        if not users or not all(fusible(u) or is_reduction(u) for u in users):
            continue
        if len(users) == 1 and sum(1 for x in users[0].invars if x is v) == 1:
            lazy.add(id(v))
        elif eqn.primitive.cheap and not any(id(x) in lazy for x in eqn.invars):
            lazy.add(id(v))
    # kernels for printing: each materialised fusible/reduction eqn with its lazy producers;
    # a row kernel (compiler.rows) with the equations of its row body
    kernels = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "row_map":
            kernels.append([eqn, *eqn.params["body"].jaxpr.eqns])
            continue
        if not (fusible(eqn) or is_reduction(eqn)) or \
                any(id(v) in lazy for v in eqn.outvars):
            continue
        group, stack = [], [eqn]
        while stack:
            e = stack.pop()
            group.append(e)
            stack.extend(producer[id(x)] for x in e.invars
                         if isinstance(x, Var) and id(x) in lazy and id(x) in producer)
        kernels.append(group[::-1])
    return FusionPlan(lazy, kernels)
