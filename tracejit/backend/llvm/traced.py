"""Structural rules that compile a lax program in place of an equation: for primitives whose
work lax already expresses (rng_bit_generator, reduce_precision, split) the program is traced
at the equation's types and emitted inline; optimization_barrier and the identities of
lax/processes.py (which only type or differentiate a value) forward their operands' buffers."""
from __future__ import annotations

from typing import Any, Callable

from ...core.trace import trace_to_jaxpr
from ...lax.composed import optimization_barrier_p, split_p, split_slices
from ...lax.processes import IDENTITIES as PROCESS_IDENTITIES
from .codegen import Emitter
from .rules import FORWARDING, STRUCTURAL


def _as_list(out: Any) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def traced(fun: Callable) -> Callable:
    """The structural rule running fun(*operands, **params)'s jaxpr in place."""
    def lower(em: Emitter, eqn, ins, dests):
        closed = trace_to_jaxpr(lambda *xs: _as_list(fun(*xs, **eqn.params)),
                                [v.aval for v in eqn.invars])
        consts = [em.const_value(c) for c in closed.consts]
        return em.emit_jaxpr(closed.jaxpr, consts, list(ins), dests)
    return lower


def _forward(em: Emitter, eqn, ins, dests):
    """The operands themselves (no copy), or copied where a destination is given."""
    return [x if d is None else em.materialize(x, d) for x, d in zip(ins, dests)]


STRUCTURAL[split_p] = traced(split_slices)
# the identities: optimization_barrier, and at shard_map's boundary over processes the values
# every process holds alike and their retyping (mpi_pvary, mpi_shared, mpi_vma: their
# transposes are what they are for)
for _prim in (optimization_barrier_p,) + PROCESS_IDENTITIES:
    STRUCTURAL[_prim] = _forward
    FORWARDING.add(_prim)
