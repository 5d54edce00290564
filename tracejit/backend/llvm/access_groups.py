"""Loop metadata for codegen's element loops (Emitter.loop(parallel=True)): the loop's loads and
stores carry no dependence from one turn to another (LLVM's `llvm.loop.parallel_accesses`), so
its vectoriser needs no run-time overlap checks, nor the scalar copy of the body it falls back
to when they fail."""
from __future__ import annotations

import llvmlite.ir as ir


class _AccessGroup(ir.values.MDValue):
    """An access group: a distinct metadata node without operands (llvmlite's add_metadata
    makes uniqued nodes only)."""

    def descr(self, buf):
        buf += ("distinct !{}", "\n")


# what a store's pointer may be computed from, walking back from it: a pointer argument, global
# or pointer loaded from memory is a root; an alloca (a stack slot, which the body may write on
# every turn: a scalar temporary) or anything else ends the walk unproven
_THROUGH = (ir.GEPInstr, ir.CastInstr)


def _roots_proven(ptr: ir.Value) -> bool:
    stack = [ptr]
    while stack:
        p = stack.pop()
        if isinstance(p, _THROUGH):
            stack.append(p.operands[0])
        elif isinstance(p, ir.SelectInstr):
            stack.extend(p.operands[1:])
        elif not isinstance(p, (ir.Argument, ir.LoadInstr, ir.GlobalVariable)):
            return False
    return True


def tag(block: ir.Block) -> ir.values.MDValue | None:
    """Put every load and store of `block` (a loop's one body block) in a new access group of
    its module, if each store writes memory outside the function's stack slots: the group, or
    None. The caller vouches that the accesses of different turns never touch one location
    where one of them writes: an element loop writes each element of its destination once,
    and reads its operands, which never overlap the destination except at the element written
    (codegen's in-place updates read only there; anywhere else the program would read a value
    already overwritten). A load from a stack slot no store of the body writes is the same on
    every turn."""
    loads = [i for i in block.instructions if isinstance(i, ir.LoadInstr)]
    stores = [i for i in block.instructions if isinstance(i, ir.StoreInstr)]
    if not stores or not all(_roots_proven(i.operands[1]) for i in stores):
        return None
    module = block.function.module
    group = _AccessGroup(module, [], name=str(len(module.metadata)))
    for i in loads + stores:
        i.set_metadata("llvm.access.group", group)
    return group
