"""The backend's lowering tables, keyed by the primitive object: elementwise primitives lower
through scalar_ops' (and complex_ops') EMITTERS, the rest through the tables below, which the
family modules (index_maps, reductions, control_flow, linalg, indexing, sorting, bits) fill when
the package imports them; they import codegen, never the other way round."""
from __future__ import annotations

from typing import Callable

from ...compiler.lowerings import is_user_primitive
from ...core.primitive import Primitive

# shape ops fused as index arithmetic: (em, ins, eqn, idx) -> the element at multi-index idx,
# as a generator yielding the (operand, index) pairs it reads (see index_maps)
INDEX_MAPS: dict[Primitive, Callable] = {}
# index maps that keep some of their result's dimensions whole in an operand (broadcast,
# transpose, a reshape of unit dimensions, concatenate): (eqn, dims) -> (per operand, the loop
# dimension each of its dimensions follows or None, where `dims` are the result's; the loop
# dimension a concatenate cuts and the offsets it cuts it at, or None) -- codegen.loop_pieces
LOOP_DIMS: dict[Primitive, Callable] = {}
# element ops with several results (threefry2x32, iota_2x32_shape), fused like INDEX_MAPS but
# returning every result's element at idx together (codegen memoises them all at once)
ELEMENT_TUPLES: dict[Primitive, Callable] = {}
# primitives that emit their own loops, branches or calls: (em, eqn, ins, dests) -> outputs
STRUCTURAL: dict[Primitive, Callable] = {}
# structural rules that may hand an operand's buffer back as a result (an inlined call returning
# its argument); every other rule's results are fresh memory (a destination or workspace slot)
FORWARDING: set[Primitive] = set()
# structural rules that write result j over one operand's buffer: (eqn, j) -> that operand's
# position, or None. The rule copies the operand into the result's destination (a no-op when
# they coincide) before anything else touches it and never reads it again (loop carries,
# updated arrays); donation planning (aliasing) relies on that.
IN_PLACE: dict[Primitive, Callable] = {}
# the lowering of a primitive that user code defined with an impl rule and no lowering of its
# own: a call back into Python running the impl (host_callback fills it)
IMPL_ON_HOST: list[Callable] = []


def structural_rule(prim: Primitive) -> Callable | None:
    """The structural lowering of `prim`: its own, else (for a user-defined primitive with an
    impl rule) a host call of the impl; None if it has neither."""
    rule = STRUCTURAL.get(prim)
    if rule is None and prim.impl is not None and IMPL_ON_HOST and is_user_primitive(prim):
        return IMPL_ON_HOST[0]
    return rule
