"""Fusion: decide which values are computed inside their consumers' loops instead of being
written to memory. Elementwise ops, broadcasts, iota and index-remapping shape ops fuse into
consumers that are themselves fusible or reductions; a value used more than once is
materialised once (unless it is a cheap broadcast/iota of something already in memory).
Row regions (softmax and the like) arrive here as `row_map` equations (compiler.rows): one
kernel each, whose body is planned like any jaxpr when codegen emits it per row."""
from __future__ import annotations

from ..core.jaxpr import Jaxpr, Var

ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "rem", "max", "min", "pow", "atan2", "nextafter", "neg", "sign",
    "abs", "square", "floor", "ceil", "round", "is_finite", "integer_pow", "exp", "exp2", "log",
    "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv",
    "lgamma", "digamma", "polygamma", "bessel_i0e", "bessel_i1e",
    "eq", "ne", "lt", "le", "gt", "ge", "not", "and", "or", "xor",
    "shift_left", "shift_right_logical", "shift_right_arithmetic", "population_count", "clz",
    "convert_element_type", "bitcast_convert_type", "select_n", "clamp", "fma",
    "stop_gradient", "real", "imag", "conj", "complex",
})
INDEX_MAPS = frozenset({"broadcast_in_dim", "iota", "transpose", "reshape", "squeeze", "rev",
                        "slice", "concatenate", "pad", "dynamic_slice", "gather"})
FUSIBLE = ELEMENTWISE | INDEX_MAPS
REDUCTIONS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                        "reduce_or", "reduce_xor", "argmax", "argmin"})
_CHEAP = frozenset({"broadcast_in_dim", "iota"})


def fusible(eqn) -> bool:
    """Computable element by element inside a consumer's loop nest."""
    name = eqn.primitive.name
    if name not in FUSIBLE or len(eqn.outvars) != 1:
        return False
    if name == "bitcast_convert_type":  # between widths the element counts differ
        return eqn.invars[0].aval.dtype.itemsize == eqn.outvars[0].aval.dtype.itemsize
    return True



def def_use(eqns) -> tuple[dict[Var, int], dict[Var, list[int]]]:
    """Index maps of a list of equations: var -> the equation defining it, and var -> the
    equations reading it (in order, once per operand position)."""
    producer = {v: k for k, e in enumerate(eqns) for v in e.outvars}
    users: dict[Var, list[int]] = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(v, []).append(k)
    return producer, users

class FusionPlan:
    """`lazy`: the vars computed inside their consumers; `kernels`: the groups, for printing."""

    def __init__(self, lazy: set[Var], kernels: list[list]):
        self.lazy = lazy
        self.kernels = kernels


def plan_fusion(jaxpr: Jaxpr) -> FusionPlan:
    consumers: dict[Var, list] = {}
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if isinstance(v, Var):
                consumers.setdefault(v, []).append(eqn)
    outs = set(jaxpr.outvars)
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    lazy: set[Var] = set()
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if not fusible(eqn):
            continue
        v = eqn.outvars[0]
        if v.aval.ndim == 0 or v in outs:
            continue
        users = consumers.get(v, [])
        if not users or not all(fusible(u) or u.primitive.name in REDUCTIONS for u in users):
            continue
        if len(users) == 1 and sum(1 for x in users[0].invars if x is v) == 1:
            lazy.add(v)
        elif name in _CHEAP and not any(x in lazy for x in eqn.invars):
            lazy.add(v)
    # kernels for printing: each materialised fusible/reduction eqn with its lazy producers;
    # a row kernel (compiler.rows) with the equations of its row body
    kernels = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "row_map":
            kernels.append([eqn, *eqn.params["body"].jaxpr.eqns])
            continue
        if not (fusible(eqn) or eqn.primitive.name in REDUCTIONS) or \
                any(v in lazy for v in eqn.outvars):
            continue
        group, stack = [], [eqn]
        while stack:
            e = stack.pop()
            group.append(e)
            stack.extend(producer[x] for x in e.invars
                         if isinstance(x, Var) and x in lazy and x in producer)
        kernels.append(group[::-1])
    return FusionPlan(lazy, kernels)
