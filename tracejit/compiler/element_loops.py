"""Element loops, a jaxpr pass after the simplifying passes and before row fusion (compiler.rows)
and fusion: a while or scan loop that updates its array carries element by element runs as one
`row_map` over blocks of the arrays, with the whole loop inside each block.

Such a loop (Newton's iteration on a vector, a fixed-point scan, an integrator saving its
trajectory) otherwise makes one pass over memory per iteration. Here its carries split into
uniform ones (rank 0: counters, the same for every element) and array ones of one shape S, a
scan's xs and ys into uniform ones (shape (steps,): a scalar per step) and array ones (shape
(steps,) + S), and every equation of its body and condition is elementwise on values of shape
S or rank 0 (broadcasts of rank-0 values included), or computes rank-0 values only. Then
element i of each array carry and y depends on element i of the array operands and on the
uniform values alone, and the condition reads only uniform values: every element runs the same
iterations. The pass cuts S into rows of B elements and runs the loop on each row while the
row sits in cache; a scan's array xs and ys are read and written as column blocks (row i of
every step: the row_map's axis 1), where its carries are too large for the cache
(COLUMN_MIN_CARRY_BYTES). B divides S's size where a divisor in [MIN_BLOCK, MAX_BLOCK]
exists; otherwise the last row is shorter and runs a body of its own (the row_map's `tail`).
The row loop runs on the thread pool (backend/llvm/parallel_loops.py counts the loop's trips
as work). Each element goes through the same operations in the same order as before, so
results are bit-identical. The uniform results, where they are used, come from the loop pruned
to its uniform parts (core.dce), a scalar loop beside the row_map."""
from __future__ import annotations

import math

import numpy as np

from ..core.avals import ShapedArray
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, has_effects, map_subjaxprs
from ..lax.control_flow import scan_p, while_p
from ..lax.call import pjit_p
from ..lax.shape import broadcast_in_dim_p
from ..transforms.custom import checkpoint_p, custom_jvp_call_p, custom_vjp_call_p
from ..transforms.custom_batching import custom_vmap_call_p
from .fusion import is_elementwise
from .rows import row_map_p

# Arrays below this many elements keep the loop as it is (one row would be the whole array).
MIN_ELEMENTS = 128
# Rows of at most MAX_BLOCK elements (a few carries double-buffered stay in the L1 cache), and
# at least two rows where the array allows it, so that two threads can share the work.
MAX_BLOCK = 1024
MIN_BLOCK = 64
# A size without such a divisor runs in rows of a multiple of VECTOR elements (whole vectors of
# AVX-512 float32) and a shorter last row, which codegen emits from a body of its own.
VECTOR = 16
# A scan reading or writing array xs/ys (column blocks, a short run per step at the array's row
# length apart) runs as rows only when its array carries hold at least this many bytes: then
# the per-step lowering streams the carries through memory every step and the rows keep them in
# cache (3 float32 carries of 10^6 elements, 20 steps of one forcing xs: 15 ms, per step 30 ms,
# one thread). Smaller carries stay in cache either way, and the per-step lowering, which reads
# xs and writes ys in one sequential stream, was faster (an Euler integrator of a 1000-vector
# saving its path, 10k steps: 6.2 ms per step, 12.7 ms in rows; 5 transcendental ops per step:
# 35 vs 42 ms).
COLUMN_MIN_CARRY_BYTES = 2 << 20
# Calls whose bodies the pass looks into: codegen emits their bodies inline (they only differ
# under differentiation, which is over by now)
_CALLS = (pjit_p, checkpoint_p, custom_jvp_call_p, custom_vjp_call_p, custom_vmap_call_p)
# A while loop's trip count is unknown: the work estimate of its row_map (parallel_loops)
# counts this many iterations per element.
WHILE_TRIPS_GUESS = 16


def element_loops(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each loop that runs elementwise over its array carries replaced by a
    row_map over blocks of them (bodies included)."""
    return _element_loops(jaxpr, {})


def _element_loops(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    eqns: list[Eqn] = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(eqn, lambda c: ClosedJaxpr(_element_loops(c.jaxpr, memo),
                                                       c.consts), memo)
        eqns.extend(_rewrite(eqn) or [eqn])
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def trips(jaxpr: Jaxpr) -> int:
    """Iterations per element of the loops in a row_map body (1 without loops): its work per
    element, relative to an elementwise op's."""
    n = 1
    for eqn in jaxpr.eqns:
        if eqn.primitive is scan_p:
            n = max(n, eqn.params["length"])
        elif eqn.primitive is while_p:
            n = max(n, WHILE_TRIPS_GUESS)
    return n


def _bodies(eqn: Eqn) -> list[ClosedJaxpr] | None:
    """The bodies of a loop the pass may rewrite: a while or a scan."""
    p = eqn.params
    if eqn.primitive is while_p:
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    if eqn.primitive is scan_p:
        return [p["jaxpr"]]
    return None


def _per_step(eqn: Eqn) -> tuple[list[bool], list[bool]]:
    """Which operands and results hold one value per step along a leading axis: a scan's xs
    and ys."""
    if eqn.primitive is not scan_p:
        return [False] * len(eqn.invars), [False] * len(eqn.outvars)
    first_x, first_y = eqn.params["num_consts"] + eqn.params["num_carry"], eqn.params["num_carry"]
    return ([k >= first_x for k in range(len(eqn.invars))],
            [k >= first_y for k in range(len(eqn.outvars))])


def _cores(eqn: Eqn) -> tuple[list[tuple], list[tuple]]:
    """The shape of each operand and result as one step sees it (xs and ys without their
    leading axis)."""
    steps_in, steps_out = _per_step(eqn)
    return ([v.aval.shape[1:] if s else v.aval.shape for v, s in zip(eqn.invars, steps_in)],
            [v.aval.shape[1:] if s else v.aval.shape for v, s in zip(eqn.outvars, steps_out)])


def blocks(n: int) -> tuple[int, int, int]:
    """(row length B, row count, last row's length) for an array of n elements: its largest
    divisor in [MIN_BLOCK, MAX_BLOCK] that leaves at least two rows, a multiple of VECTOR if
    there is one (whole vectors: Newton on 10^6 float32, one thread, best of 60 calls in three
    runs: 2.37-2.63 ms in rows of 800, 2.44-2.76 ms in rows of 1000); without a divisor, rows
    of a multiple of VECTOR elements as even as that allows, the last one shorter (ragged)."""
    divisors = [b for b in range(min(MAX_BLOCK, n // 2), MIN_BLOCK - 1, -1) if n % b == 0]
    if divisors:
        b = ([b for b in divisors if b % VECTOR == 0] or divisors)[0]
        return b, n // b, b
    b = _round_up(-(-n // max(2, -(-n // MAX_BLOCK))), VECTOR)
    rows = -(-n // b)
    return b, rows, n - (rows - 1) * b


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _array_shape(eqn: Eqn) -> tuple[int, ...] | None:
    """S: the shape of the loop's array carries (xs and ys: (steps,) + S), when the loop runs
    elementwise over them; every other operand and result is uniform (rank 0 per step)."""
    bodies = _bodies(eqn)
    if bodies is None or has_effects(eqn):
        return None
    cores_in, cores_out = _cores(eqn)
    shapes = {s for s in (*cores_in, *cores_out) if s}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    if not any(cores_out) or math.prod(shape) < MIN_ELEMENTS:
        return None
    steps_in, steps_out = _per_step(eqn)
    columns = any(c and s for c, s in zip((*cores_in, *cores_out), (*steps_in, *steps_out)))
    carry_bytes = sum(v.aval.size * v.aval.dtype.itemsize
                      for v, c, s in zip(eqn.outvars, cores_out, steps_out) if c and not s)
    if columns and carry_bytes < COLUMN_MIN_CARRY_BYTES:
        return None
    if all(_elementwise_over(b, shape) for b in bodies):
        return shape
    return None


def _elementwise_over(closed: ClosedJaxpr, shape: tuple[int, ...]) -> bool:
    """Every value of the body has shape S or rank 0, and every equation either maps arrays
    of shape S element by element (rank-0 operands broadcast) or reads and makes rank-0 values
    only. Then no rank-0 value depends on an array element."""
    jaxpr = closed.jaxpr
    if any(np.ndim(c) for c in closed.consts):
        return False
    if any(v.aval.shape not in (shape, ()) for v in (*jaxpr.constvars, *jaxpr.invars)):
        return False
    for eqn in jaxpr.eqns:
        avals = [v.aval for v in (*eqn.invars, *eqn.outvars)]
        if any(a.shape not in (shape, ()) for a in avals):
            return False
        if all(a.ndim == 0 for a in avals):
            continue  # uniform: the same in every element's loop (effects were ruled out)
        if is_elementwise(eqn) and not _bodies_of(eqn):
            continue
        if eqn.primitive is broadcast_in_dim_p and eqn.invars[0].aval.ndim == 0:
            continue
        if eqn.primitive in _CALLS and all(  # (jnp's relu, logaddexp: custom_jvp calls)
                isinstance(b, ClosedJaxpr) and _elementwise_over(b, shape)
                for b in _bodies_of(eqn)):
            continue
        return False
    return True


def _bodies_of(eqn: Eqn) -> list:
    return [x for value in eqn.params.values()
            for x in (value if isinstance(value, tuple) else (value,))
            if isinstance(x, (ClosedJaxpr, Jaxpr))]


def _rewrite(eqn: Eqn) -> list[Eqn] | None:
    """The row_map (and the uniform loop, for uniform results) replacing a loop; None when the
    loop is not one the pass handles."""
    shape = _array_shape(eqn)
    if shape is None:
        return None
    n = math.prod(shape)
    block, rows, last = blocks(n)
    array_out = [bool(s) for s in _cores(eqn)[1]]
    uniform = None
    if not all(array_out):
        uniform = eqn.primitive.dce(eqn, [not a for a in array_out])
        if any(_cores(uniform)[0] + _cores(uniform)[1]):
            return None
        if eqn.primitive is scan_p:  # (uniform ys: the uniform loop's alone)
            eqn = eqn.primitive.dce(eqn, array_out)
    steps_in, steps_out = _per_step(eqn)
    cores_in, cores_out = _cores(eqn)
    operands = [v for v in eqn.invars if isinstance(v, Var)]
    in_axes = tuple(None if not c else 1 if s else 0
                    for v, c, s in zip(eqn.invars, cores_in, steps_in) if isinstance(v, Var))
    arrays = [k for k, c in enumerate(cores_out) if c]
    out_axes = tuple(1 if steps_out[k] else 0 for k in arrays)
    row_eqn = Eqn(row_map_p, operands, [eqn.outvars[k] for k in arrays],
                  {"body": _row_body(eqn, shape, block), "rows": (rows,),
                   "out_shapes": tuple(eqn.outvars[k].aval.shape for k in arrays),
                   "in_axes": in_axes, "out_axes": out_axes,
                   "tail": None if last == block else _row_body(eqn, shape, last)},
                  eqn.source_info)
    return [row_eqn] if uniform is None else [row_eqn, uniform]


def _row_body(eqn: Eqn, shape: tuple[int, ...], block: int) -> ClosedJaxpr:
    """A row_map body running `eqn` on one row of `block` elements of its arrays (and on the
    matching column block of its xs and ys)."""
    row = (block,)
    steps_in, steps_out = _per_step(eqn)
    # one body invar per operand position (a value passed twice is two invars)
    body_in = [v if isinstance(v, Literal) else Var(_row_aval(v.aval, shape, row, s))
               for v, s in zip(eqn.invars, steps_in)]
    inner_out = [Var(_row_aval(v.aval, shape, row, s)) for v, s in zip(eqn.outvars, steps_out)]
    params = {k: _reblocked(v, shape, row) for k, v in eqn.params.items()}
    inner = Eqn(eqn.primitive, body_in, inner_out, params, eqn.source_info)
    arrays = [v for v, c in zip(inner_out, _cores(eqn)[1]) if c]
    return ClosedJaxpr(Jaxpr([], [v for v in body_in if isinstance(v, Var)], arrays, [inner]),
                       [])


def _row_aval(aval: ShapedArray, shape, row, per_step: bool = False) -> ShapedArray:
    if per_step and aval.shape[1:] == shape:
        return aval.update(shape=aval.shape[:1] + row)
    return aval.update(shape=row) if aval.shape == shape and aval.ndim else aval


def _renamed(v, shape, row, rename: dict):
    """The atom standing for `v` inside a row: arrays of shape S become rows."""
    if isinstance(v, Literal):
        return v
    if v not in rename:  # (fresh rank-0 vars too: no var is bound in two jaxprs)
        rename[v] = Var(_row_aval(v.aval, shape, row))
    return rename[v]


def _reblocked(value, shape, row):
    """A loop param with its bodies working on rows instead of arrays of shape S."""
    if isinstance(value, ClosedJaxpr):
        return ClosedJaxpr(_reblocked_jaxpr(value.jaxpr, shape, row), value.consts)
    return value


def _reblocked_jaxpr(jaxpr: Jaxpr, shape, row) -> Jaxpr:
    rename: dict[Var, Var] = {}

    def atom(v):
        return _renamed(v, shape, row, rename)
    eqns = []
    for eqn in jaxpr.eqns:
        params = eqn.params
        if eqn.primitive is broadcast_in_dim_p and eqn.outvars[0].aval.ndim:
            params = {**params, "shape": row}
        elif eqn.primitive in _CALLS:  # (bodies of rank-0 equations stay as they are)
            params = {k: _reblocked(v, shape, row) for k, v in params.items()}
        eqns.append(Eqn(eqn.primitive, [atom(v) for v in eqn.invars],
                        [atom(v) for v in eqn.outvars], params, eqn.source_info))
    return Jaxpr([atom(v) for v in jaxpr.constvars], [atom(v) for v in jaxpr.invars],
                 [atom(v) for v in jaxpr.outvars], eqns, jaxpr.debug_info)
