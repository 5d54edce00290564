"""LLVM IR text of an llvmlite module, the text codegen hands LLVM: `module_text(m)` is `str(m)`,
byte for byte, with the instructions codegen emits most formatted here in one f-string each
(llvmlite's own `descr` methods go through ~7 `str.format` calls an instruction: printing was
~40% of codegen.generate's CPU). Anything else is printed by llvmlite itself.
"""
from __future__ import annotations

import llvmlite.ir as ir
from llvmlite.ir import instructions as ins

_VOID = ir.VoidType


def _meta(instr) -> str:
    return instr._stringify_metadata(leading_comma=True) if instr.metadata else ""


def _typed(op) -> str:
    return f"{op.type} {op.get_reference()}"


# Each formatter returns what the class's `descr` appends to its buffer (trailing whitespace
# included: NamedValue._to_string strips it, and so does `_instruction`).

def _plain(i) -> str:
    opname = " ".join([i.opname] + i.flags) if i.flags else i.opname
    return f"{opname} {i.type} {', '.join([op.get_reference() for op in i.operands])}{_meta(i)}\n"


def _gep(i) -> str:
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    return (f"{op} {i.source_etype}, {_typed(i.pointer)}, "
            f"{', '.join([_typed(x) for x in i.indices])} {_meta(i)}\n")


def _load(i) -> str:
    align = "" if i.align is None else ", align %d" % i.align
    return f"load {i.type}, {_typed(i.operands[0])}{align}{_meta(i)}\n"


def _store(i) -> str:
    val, ptr = i.operands
    align = "" if i.align is None else ", align %d" % i.align
    return f"store {_typed(val)}, {_typed(ptr)}{align}{_meta(i)}\n"


def _cast(i) -> str:
    return f"{i.opname} {_typed(i.operands[0])} to {i.type} {_meta(i)}\n"


def _compare(i) -> str:
    flags = "".join([" " + f for f in i.flags])
    lhs, rhs = i.operands
    return (f"{i.opname}{flags} {i.op} {lhs.type} {lhs.get_reference()}, "
            f"{rhs.get_reference()} {_meta(i)}\n")


def _select(i) -> str:
    cond, lhs, rhs = i.operands
    return (f"select {' '.join(i.flags)} {_typed(cond)}, {_typed(lhs)}, {_typed(rhs)} "
            f"{_meta(i)}\n")


def _phi(i) -> str:
    incs = ", ".join([f"[{v.get_reference()}, {b.get_reference()}]" for v, b in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incs} {_meta(i)}\n"


def _terminator(i) -> str:
    return f"{i.opname} {', '.join([_typed(op) for op in i.operands])}{_meta(i)}"


def _ret(i) -> str:
    if i.operands:
        return f"{i.opname} {_typed(i.operands[0])}{_meta(i)}\n"
    return f"{i.opname}{_meta(i)}\n"


def _alloca(i) -> str:
    out = f"{i.opname} {i.allocated_type}"
    if i.operands:
        out += f", {_typed(i.operands[0])}"
    if i.align is not None:
        out += f", align {i.align}"
    return out + _meta(i)


def _elements(i) -> str:  # extractelement, insertelement
    return f"{i.opname} {', '.join([_typed(op) for op in i.operands])}\n"


def _shuffle(i) -> str:
    return f"shufflevector {', '.join([_typed(op) for op in i.operands])} {_meta(i)}\n"


def _call(i) -> str | None:
    if i.arg_attributes:
        return None
    fnty = i.callee.function_type
    ty = fnty if fnty.var_arg else fnty.return_type
    callee = f"{ty} {i.callee.get_reference()}"
    if i.cconv:
        callee = f"{i.cconv} {callee}"
    tail = f"{i.tail} " if i.tail else ""
    attrs = " " + " ".join(i.attributes._to_list(fnty.return_type)) if i.attributes else ""
    fastmath = " " + " ".join(i.fastmath._to_list(fnty.return_type)) if i.fastmath else ""
    args = ", ".join([_typed(a) for a in i.operands[1:]])
    return f"{tail}{i.opname}{fastmath} {callee}({args}){attrs}{_meta(i)}\n"


# by exact class: a subclass (llvmlite's or ours) may describe itself differently
_FORMATTERS = {
    ins.Instruction: _plain, ins.GEPInstr: _gep, ins.LoadInstr: _load,
    ins.StoreInstr: _store, ins.CastInstr: _cast, ins.ICMPInstr: _compare,
    ins.FCMPInstr: _compare, ins.SelectInstr: _select, ins.PhiInstr: _phi,
    ins.Branch: _terminator, ins.ConditionalBranch: _terminator, ins.Ret: _ret,
    ins.AllocaInstr: _alloca, ins.ExtractElement: _elements, ins.InsertElement: _elements,
    ins.ShuffleVector: _shuffle, ins.CallInstr: _call,
}
# where llvmlite keeps an instruction's text once printed (_utils._StrCaching): a text cached
# before the instruction changed is what str(module) prints, so it is what we print
_CACHED = "_StrCaching__cached_str"


def _instruction(i) -> str:
    cached = i.__dict__.get(_CACHED)
    if cached is not None:
        return cached
    fmt = _FORMATTERS.get(type(i))
    descr = fmt(i) if fmt is not None else None
    if descr is None:
        return str(i)
    if isinstance(i.type, _VOID):
        return descr.rstrip()
    return f"{i.get_reference()} = {descr}".rstrip()


def _function(fn: ir.Function) -> str:
    buf: list[str] = []
    fn.descr_prototype(buf)
    if fn.blocks:
        buf.append("{\n")
        for blk in fn.blocks:
            buf.append(f"{blk._format_name()}:\n")
            buf += [f"  {_instruction(i)}\n" for i in blk.instructions]
        buf.append("}\n")
    return "".join(buf)


def module_text(module: ir.Module) -> str:
    """`str(module)` (llvmlite's Module.__repr__), faster for the instructions we emit."""
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [it.get_declaration() for it in module.get_identified_types().values()]
    lines += [_function(v) if type(v) is ir.Function else str(v) for v in module.globals.values()]
    lines += module._get_metadata_lines()
    return "\n".join(lines)
