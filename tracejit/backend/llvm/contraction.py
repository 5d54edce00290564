"""Floating-point contraction decided in our IR (codegen runs `contract_products` on each module
before printing it): a product and the sum or difference reading it become one `llvm.fma` here,
and no `contract` flag is left for LLVM's code generation to act on.

Why not leave it to the flags: LLVM's instruction selection contracts one basic block at a time,
after the optimiser has split and moved blocks, so the same sum could contract its first
product in one lowering and its other one in another (a math function's range-reduction branch,
inlined in the scalar remainder loop but branch-free in the vector body, left a product before
the branch; O0's code generation contracts nothing). Here the choice is made once, on the
straight-line code the emitter wrote (math functions still calls), by the rule instruction
selection follows within one block (DAGCombiner's visitFADDForFMACombine and
visitFSUBForFMACombine on targets without aggressive fusion, as XLA's CPU code gets): a sum's
first operand if it is a `contract` product with no other reader, else its second; a
difference likewise, the subtrahend's product negated."""
from __future__ import annotations

import llvmlite.ir as ir

_FLAG = "contract"


def _contractable(v, uses: dict, block) -> bool:
    """A `contract` product whose only reader is in `block` (the reader's own)."""
    return isinstance(v, ir.Instruction) and v.opname == "fmul" and _FLAG in v.flags and \
        uses.get(id(v), 0) == 1 and v.parent is block


def _operands(inst) -> list:
    if isinstance(inst, ir.PhiInstr):
        return [v for v, _ in inst.incomings]
    return list(inst.operands)


def _contract_block(block, uses: dict, fma, replaced: dict) -> None:
    """Rewrite `block`'s contracted sums and differences to fma calls (new instructions in the
    old ones' places; `replaced` maps each old one's id to its value for the readers)."""
    out = []
    for inst in block.instructions:
        if inst.opname in ("fadd", "fsub") and _FLAG in inst.flags:
            ops = [replaced.get(id(v), v) for v in inst.operands]
            x, y = ops
            pick = 0 if _contractable(x, uses, block) else 1 if _contractable(y, uses, block) \
                else None
            if pick is not None:
                product, other = (x, y) if pick == 0 else (y, x)
                a, b = product.operands
                if inst.opname == "fsub":  # x*y - z: fma(x, y, -z); z - x*y: fma(-x, y, z)
                    neg = ir.Instruction(block, other.type, "fneg", [other if pick == 0 else a],
                                         name="neg")
                    out.append(neg)
                    other, a = (neg, a) if pick == 0 else (other, neg)
                call = ir.CallInstr(block, fma(inst.type), [a, b, other], name="fma")
                out.append(call)
                replaced[id(inst)] = call
                replaced[id(product)] = None  # no reader left: dropped below
                continue
        out.append(inst)
    block.instructions[:] = out


def contract_products(module: ir.Module) -> None:
    """Decide every `contract` product's fate in `module` (in place): fused into its one reader
    as an `llvm.fma`, or left a rounded product; then no instruction keeps the flag, so LLVM's
    optimiser and code generation, at any level, compute what is written here."""
    for fn in module.functions:
        if not fn.blocks:
            continue
        uses: dict[int, int] = {}
        candidates = False
        for block in fn.blocks:
            for inst in block.instructions:
                for v in _operands(inst):
                    if isinstance(v, ir.Instruction):
                        uses[id(v)] = uses.get(id(v), 0) + 1
                candidates = candidates or (inst.opname == "fmul" and _FLAG in inst.flags)
        if not candidates:
            _drop_flags(fn)
            continue
        def fma(ty: ir.Type, module=module) -> ir.Function:
            return module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty] * 3))
        replaced: dict[int, ir.Value | None] = {}
        for block in fn.blocks:
            _contract_block(block, uses, fma, replaced)
        for block in fn.blocks:
            block.instructions[:] = [i for i in block.instructions
                                     if replaced.get(id(i), i) is not None]
            for inst in block.instructions:
                if isinstance(inst, ir.PhiInstr):
                    inst.incomings = [(replaced.get(id(v)) or v, blk) for v, blk in inst.incomings]
                elif any(id(v) in replaced for v in inst.operands):
                    inst.operands = type(inst.operands)(replaced.get(id(v)) or v
                                                        for v in inst.operands)
        _drop_flags(fn)


def _drop_flags(fn: ir.Function) -> None:
    for block in fn.blocks:
        for inst in block.instructions:
            flags = getattr(inst, "flags", None)
            if flags and _FLAG in flags:
                flags.remove(_FLAG)
