"""Floating-point contraction decided in our IR (codegen runs `contract_products` on each module
before printing it): a product and the sum or difference reading it become one `llvm.fma` here,
and no `contract` flag is left for LLVM's code generation to act on.

Why not leave it to the flags: LLVM's instruction selection contracts one basic block at a time,
after the optimiser has split and moved blocks, so the same sum could contract its first
product in one lowering and its other one in another (a math function's range-reduction branch,
inlined in the scalar remainder loop but branch-free in the vector body, left a product before
the branch; O0's code generation contracts nothing). Here the choice is made once, on the
straight-line code the emitter wrote (math functions still calls), by the rule instruction
selection follows within one block on x86 (DAGCombiner's visitFADDForFMACombine and
visitFSUBForFMACombine, no aggressive fusion): a sum's first operand if it is a `contract`
product with no other reader, else its second; a difference likewise, the subtrahend's product
negated; an fneg between a product and its sum folded first, as there. One form goes beyond
it, as XLA's code does: -(x*y) - z is fma(-x, y, -z). Cost: one walk over each function's
instructions, 0.15-2.2 ms of CPU a benchmark program (CNN's the most)."""
from __future__ import annotations

from llvmlite import ir

_FLAG = "contract"


def _product(v, uses: dict, block):
    """`v` if it is a `contract` product in `block` with one reader, else None."""
    if isinstance(v, ir.Instruction) and v.opname == "fmul" and _FLAG in v.flags and \
            uses.get(id(v), 0) == 1 and v.parent is block:
        return v
    return None


def _is_fneg(v) -> bool:
    return isinstance(v, ir.Instruction) and v.opname == "fneg"


def _negated_product(v, uses: dict, block):
    """The product under `v` = fneg(product), both with one reader, in `block`; else None."""
    if _is_fneg(v) and uses.get(id(v), 0) == 1 and v.parent is block:
        return _product(v.operands[0], uses, block)
    return None


def _fused(op: str, x, y, uses: dict, block):
    """((a, b, c, negate a?, negate c?), the product fused, an fneg no longer read or None)
    for `x op y` contracted to fma(±a, b, ±c), or None: instruction selection's rule,
    negations first (-A + B is B - A, A + -B is A - B, A - -B is A + B; the product under
    such an fneg contracts if the fneg has no other reader)."""
    stripped = None
    if op == "fadd" and _is_fneg(x):
        op, x, y, stripped = "fsub", y, x.operands[0], x
    elif op == "fadd" and _is_fneg(y):
        op, y, stripped = "fsub", y.operands[0], y
    elif op == "fsub" and _is_fneg(y):
        op, y, stripped = "fadd", y.operands[0], y
    alone = stripped is not None and uses.get(id(stripped), 0) == 1
    dead = stripped if alone else None

    def product(v):
        if stripped is not None and v is stripped.operands[0]:
            return _product(v, uses, block) if alone and stripped.parent is block else None
        return _product(v, uses, block)

    px, py = product(x), product(y)
    if op == "fadd":
        if px is not None:
            return (x.operands[0], x.operands[1], y, False, False), px, dead
        if py is not None:
            return (y.operands[0], y.operands[1], x, False, False), py, dead
        return None
    if px is not None:  # x*y - z: fma(x, y, -z)
        return (x.operands[0], x.operands[1], y, False, True), px, dead
    if py is not None:  # z - x*y: fma(-x, y, z)
        return (y.operands[0], y.operands[1], x, True, False), py, dead
    inner = _negated_product(x, uses, block) if stripped is None else None
    if inner is not None:  # -(x*y) - z: fma(-x, y, -z)
        return (inner.operands[0], inner.operands[1], y, True, True), inner, x
    return None


def _operands(inst) -> list:
    if isinstance(inst, ir.PhiInstr):
        return [v for v, _ in inst.incomings]
    return list(inst.operands)


def _fma(block, ty: ir.Type) -> ir.Function:
    return block.parent.module.declare_intrinsic("llvm.fma", [ty],
                                                 ir.FunctionType(ty, [ty] * 3))


def _contract_block(block, uses: dict, replaced: dict) -> None:
    """Rewrite `block`'s contracted sums and differences to fma calls (new instructions in the
    old ones' places; `replaced` maps each old one's id to its value for the readers, None for
    a product or fneg that no longer has any)."""
    out = []
    for inst in block.instructions:
        if inst.opname in ("fadd", "fsub") and _FLAG in inst.flags:
            x, y = (replaced.get(id(v), v) for v in inst.operands)
            fused = _fused(inst.opname, x, y, uses, block)
            if fused is not None:
                (a, b, c, neg_a, neg_c), product, dead = fused
                if neg_a:
                    a = ir.Instruction(block, a.type, "fneg", [a], name="neg")
                    out.append(a)
                if neg_c:
                    c = ir.Instruction(block, c.type, "fneg", [c], name="neg")
                    out.append(c)
                call = ir.CallInstr(block, _fma(block, inst.type), [a, b, c], name="fma")
                out.append(call)
                replaced[id(inst)] = call
                replaced[id(product)] = None
                if dead is not None:
                    replaced[id(dead)] = None
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
        # (most functions have no contracted product: one look at the flags, no count of uses;
        # contracting makes no instruction with the flag, so these are all that carry it)
        flagged = [inst for block in fn.blocks for inst in block.instructions
                   if _FLAG in getattr(inst, "flags", ())]
        if any(inst.opname == "fmul" for inst in flagged):
            _contract_function(fn)
        for inst in flagged:
            inst.flags.remove(_FLAG)


def _contract_function(fn: ir.Function) -> None:
    """contract_products' fusing in one function that has a contracted product (its flags
    are left for the caller to drop)."""
    uses: dict[int, int] = {}
    for block in fn.blocks:
        for inst in block.instructions:
            for v in _operands(inst):
                if isinstance(v, ir.Instruction):
                    uses[id(v)] = uses.get(id(v), 0) + 1
    replaced: dict[int, ir.Value | None] = {}
    for block in fn.blocks:
        _contract_block(block, uses, replaced)
    for block in fn.blocks:
        block.instructions[:] = [i for i in block.instructions
                                 if replaced.get(id(i), i) is not None]
        for inst in block.instructions:
            if isinstance(inst, ir.PhiInstr):
                inst.incomings = [(replaced.get(id(v)) or v, blk) for v, blk in inst.incomings]
            elif any(id(v) in replaced for v in inst.operands):
                inst.operands = type(inst.operands)(replaced.get(id(v)) or v
                                                    for v in inst.operands)
