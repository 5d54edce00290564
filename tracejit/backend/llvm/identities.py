"""Structural rules for the identities: optimization_barrier, and those of lax/processes.py
(which only type or differentiate a value) forward their operands' buffers."""
from __future__ import annotations

from ...lax.composed import optimization_barrier_p
from ...lax.processes import IDENTITIES as PROCESS_IDENTITIES
from .codegen import Emitter
from .rules import FORWARDING, STRUCTURAL


def _forward(em: Emitter, eqn, ins, dests):
    """The operands themselves (no copy), or copied where a destination is given."""
    return [x if d is None else em.materialize(x, d) for x, d in zip(ins, dests)]


# the identities: optimization_barrier, and at shard_map's boundary over processes the values
# every process holds alike and their retyping (mpi_pvary, mpi_shared, mpi_vma: their
# transposes are what they are for)
for _prim in (optimization_barrier_p,) + PROCESS_IDENTITIES:
    STRUCTURAL[_prim] = _forward
    FORWARDING.add(_prim)
