"""Ctrl-C inside native loops (backend side): every while/scan back-edge of a program polls one
process-wide flag and returns from the program when it is set; a native SIGINT handler, which the
runtime installs around calls of such programs (runtime/interrupts.py), sets it."""
from __future__ import annotations

import ctypes
import functools
import math

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ...compiler.rows import row_map_p
from ...core.jaxpr import ClosedJaxpr, Jaxpr
from ...core.primitive import ELEMENTWISE, INDEX_MAP
from ...lax.callback import CALLBACK_PRIMITIVES
from ...lax.control_flow import cond_p, scan_p, while_p
from . import jit_engine
from .types import I32

FLAG_SYMBOL = "tracejit_interrupt_flag"
_flag = ctypes.c_int32(0)  # (module-level: every program's code refers to its address)
# The handler's state, written by the runtime: how many native calls on the main thread want
# SIGINT now (then it sets the flag), and the handler it displaced (called otherwise).
_DEPTH, _CHAIN = "tracejit_sigint_depth", "tracejit_sigint_chain"
depth = ctypes.c_int32(0)
chain = ctypes.c_void_p(0)


@functools.cache
def _bind_flag() -> str:
    llvm.add_symbol(FLAG_SYMBOL, ctypes.addressof(_flag))
    return FLAG_SYMBOL


def is_set() -> bool:
    return bool(_flag.value)


def clear() -> None:
    _flag.value = 0


# A program whose whole run is bounded below this many element operations (`bounded_work`: no
# while_loop, static scan lengths) ends within milliseconds: its scans do not poll, and where
# nothing else polls its calls skip the SIGINT handler's set-up around them
# (runtime/interrupts.py, ~2.5 us a call: an eighth of a 10k-step scalar fori_loop's call).
SCAN_POLL_MIN_WORK = 1 << 20


def bounded_work(jaxpr: Jaxpr) -> int | None:
    """An upper bound on the element operations of one run of `jaxpr`, or None where it has a
    while_loop or a host callback (no static bound). An equation without a body counts its largest
    operand or result, times its largest dimension unless it is elementwise or an index map (one
    element read per element written: iota, slices, concatenation, gathers) (this bounds a matmul,
    sort, FFT or factorisation); a scan its length times its body; a cond its costliest branch; a
    row_map its rows times its row body; any other equation with bodies, the sum of them."""
    total = 0
    for eqn in jaxpr.eqns:
        n = _eqn_work(eqn)
        if n is None:
            return None
        total += n
    return total


def _eqn_work(eqn) -> int | None:
    if eqn.primitive is while_p or eqn.primitive in CALLBACK_PRIMITIVES:
        return None
    shapes = [getattr(v.aval, "shape", ()) for v in (*eqn.invars, *eqn.outvars)]
    size = max([math.prod(s) for s in shapes] + [1])
    bodies = [x.jaxpr for value in eqn.params.values()
              for x in (value if isinstance(value, tuple) else (value,))
              if isinstance(x, ClosedJaxpr)]
    if not bodies:
        if eqn.primitive.fusion in (ELEMENTWISE, INDEX_MAP):
            return size
        return size * max([d for s in shapes for d in s] + [1])
    works = [bounded_work(body) for body in bodies]
    if None in works:
        return None
    if eqn.primitive is scan_p:
        return size + eqn.params["length"] * sum(works)
    if eqn.primitive is cond_p:
        return size + max(works)
    if eqn.primitive is row_map_p:
        return size + math.prod(eqn.params["rows"]) * max(works)
    return size + sum(works)


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
    llvm.add_symbol(_DEPTH, ctypes.addressof(depth))
    llvm.add_symbol(_CHAIN, ctypes.addressof(chain))
    _bind_flag()  # (here, not only by the module's build: a cache hit builds no IR)
    # (cached: the handler's code lives as long as the process; compiled once per machine)
    return jit_engine.compile_library("tracejit_sigint", _handler_module, speed_level=0)


def _handler_module() -> ir.Module:
    module = ir.Module(name="tracejit_sigint")
    handler_ty = ir.FunctionType(ir.VoidType(), [I32])
    fn = ir.Function(module, handler_ty, name="tracejit_sigint")
    words = {}
    for name, ty in ((_DEPTH, I32), (_CHAIN, handler_ty.as_pointer())):
        words[name] = ir.GlobalVariable(module, ty, name)
        words[name].linkage = "external"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    busy = b.load_atomic(words[_DEPTH], "monotonic", 4)
    with b.if_else(b.icmp_unsigned("!=", busy, ir.Constant(I32, 0))) as (native, python):
        with native:
            b.store_atomic(ir.Constant(I32, 1), _flag_global(module), "monotonic", 4)
        with python:
            previous = b.load_atomic(words[_CHAIN], "monotonic", 8)
            with b.if_then(b.icmp_unsigned("!=", previous, ir.Constant(previous.type, None))):
                b.call(previous, [fn.args[0]])
    b.ret_void()
    return module


@functools.cache  # (looked up around every native call)
def handler_address() -> int:
    """A native `void handler(int signum)` (async-signal-safe): while `depth` is non-zero it
    sets the flag; otherwise it calls the handler in `chain` (Python's own), if any."""
    return _handler_code().address("tracejit_sigint")
