"""Ctrl-C inside native loops (backend side): every while/scan back-edge of a program polls one
process-wide flag and returns from the program when it is set; a native SIGINT handler, which the
runtime installs around calls of such programs (runtime/interrupts.py), sets it."""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
import llvmlite.ir as ir

from . import jit_engine
from .types import I32

FLAG_SYMBOL = "tracejit_interrupt_flag"
_flag = ctypes.c_int32(0)  # (module-level: every program's code refers to its address)


@functools.cache
def _bind_flag() -> str:
    llvm.add_symbol(FLAG_SYMBOL, ctypes.addressof(_flag))
    return FLAG_SYMBOL


def is_set() -> bool:
    return bool(_flag.value)


def clear() -> None:
    _flag.value = 0


def _flag_global(module: ir.Module) -> ir.GlobalVariable:
    name = _bind_flag()
    g = module.globals.get(name)
    if g is None:  # a declaration: resolved (to _flag) when the object code is linked
        g = ir.GlobalVariable(module, I32, name)
        g.linkage = "external"
    return g


def emit_poll(em) -> None:
    """At a loop's back-edge: leave the program (`ret void`) when the interrupt flag is set. The
    caller discards the outputs. A relaxed atomic load: LLVM neither hoists nor merges it."""
    b = em.b
    fn = b.function
    flag = b.load_atomic(_flag_global(fn.module), "monotonic", 4)
    leave = fn.append_basic_block("interrupted")
    go_on = fn.append_basic_block("not_interrupted")
    b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(I32, 0)), leave, go_on)
    with b.goto_block(leave):
        b.ret_void()
    b.position_at_end(go_on)
    em.polls = True


@functools.cache
def _handler_code() -> jit_engine.Code:
    module = ir.Module(name="tracejit_sigint")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32]), name="tracejit_sigint")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.store_atomic(ir.Constant(I32, 1), _flag_global(module), "monotonic", 4)
    b.ret_void()
    parsed = jit_engine.parse(str(module))
    code, _ = jit_engine.load(parsed)
    return code  # (cached: the handler's code lives as long as the process)


@functools.cache  # (looked up around every native call)
def handler_address() -> int:
    """A native `void handler(int signum)` that only sets the flag (async-signal-safe)."""
    return _handler_code().address("tracejit_sigint")
