"""The tables codegen's Emitter dispatches on, primitive name -> rule. The family modules
(index_maps, reductions, control_flow, linalg, indexing, sorting, bits) fill them when the
package imports them; they import codegen, never the other way round."""
from __future__ import annotations

from typing import Callable

# shape ops fused as index arithmetic: (em, ins, eqn, idx) -> the element at multi-index idx,
# as a generator yielding the (operand, index) pairs it reads (see index_maps)
INDEX_MAPS: dict[str, Callable] = {}
# primitives that emit their own loops, branches or calls: (em, eqn, ins, dests) -> outputs
STRUCTURAL: dict[str, Callable] = {}
