"""The process-wide LLVM JIT: host target machine, O3 through the new pass builder, and one MCJIT
engine that every compiled module is added to (an engine owns its target machine, so there is
exactly one)."""
from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm

from . import support

# Serialises what touches the engine: its creation and adding modules (MCJIT is not thread-safe).
# runtime/native.py compiles one program at a time (its cache fill holds a lock of its own).
_lock = threading.Lock()


@functools.cache
def _init_native() -> None:
    # llvm.initialize() raises in llvmlite 0.50; these two are all the native JIT needs.
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.cache
def host_cpu() -> tuple[str, str]:
    """(CPU name, feature string) of the host; part of every on-disk cache key."""
    _init_native()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def create_target_machine() -> llvm.TargetMachine:
    """A target machine for the host CPU with all of its features, optimising at O3."""
    name, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=name, features=features, opt=3, jit=True)


def _engine() -> llvm.ExecutionEngine:
    """The one engine, made by the first caller in any thread (two would each own a copy of
    every symbol bound to them)."""
    if not _the_engine:
        with _lock:
            if not _the_engine:
                _the_engine.append(_new_engine())
    return _the_engine[0]


_the_engine: list[llvm.ExecutionEngine] = []


def _new_engine() -> llvm.ExecutionEngine:
    _init_native()
    backing = llvm.parse_assembly("")
    backing.triple = llvm.get_process_triple()
    engine = llvm.create_mcjit_compiler(backing, create_target_machine())
    _bind_support_routines(engine)
    engine.set_object_cache(_object_compiled, _cached_object)
    return engine


# MCJIT's object-cache hooks for the one module `add_module` is finalising (under `_lock`): the
# object code to load instead of generating it, and the object code it generated.
_object_slot: dict[str, bytes | None] = {"cached": None, "generated": None}


def _cached_object(module: llvm.ModuleRef) -> bytes | None:
    return _object_slot["cached"]


def _object_compiled(module: llvm.ModuleRef, obj: bytes) -> None:
    _object_slot["generated"] = obj


def _bind_support_routines(engine: llvm.ExecutionEngine) -> None:
    """Compile backend/llvm/support.py's routines and bind the libcall names LLVM emits (for
    float16 conversions) to them: unbound, such a call would jump to address 0."""
    module = llvm.parse_assembly(str(support.module()))
    module.triple = llvm.get_process_triple()
    module.data_layout = str(engine.target_data)
    module.verify()
    engine.add_module(module)
    engine.finalize_object()
    for libcall, (symbol, *_) in support.ROUTINES.items():
        llvm.add_symbol(libcall, engine.get_function_address(symbol))


def target_data() -> llvm.TargetData:
    """The engine's data layout, to stamp on modules before they are optimised."""
    return _engine().target_data


def optimize(module: llvm.ModuleRef) -> None:
    """Run the O3 pipeline (loop and SLP vectorisation on) over `module` in place."""
    tm = _engine_target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


@functools.cache
def _engine_target_machine() -> llvm.TargetMachine:
    # A second target machine for the pass builder: the engine's own belongs to the engine.
    return create_target_machine()


def parse(ir_text: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text into a module for the host."""
    _init_native()
    module = llvm.parse_assembly(ir_text)
    module.triple = llvm.get_process_triple()
    module.data_layout = str(target_data())
    module.verify()
    return module


def add_module(module: llvm.ModuleRef, cached_object: bytes | None = None) -> bytes | None:
    """Hand an optimised module to the engine and generate its machine code, or load
    `cached_object` (object code an earlier `add_module` of the same module returned) instead.
    Returns the object code generated, None when `cached_object` was loaded."""
    engine = _engine()
    with _lock:
        _object_slot["cached"], _object_slot["generated"] = cached_object, None
        try:
            engine.add_module(module)
            engine.finalize_object()
            return _object_slot["generated"]
        finally:
            _object_slot["cached"] = _object_slot["generated"] = None


def function_address(name: str) -> int:
    """Address of a JIT-compiled function (after `add_module`)."""
    address = _engine().get_function_address(name)
    if not address:
        raise KeyError(f"no JIT-compiled function named {name!r}")
    return address


def compile_ir(ir_text: str) -> llvm.ModuleRef:
    """Parse, verify, optimise at O3 and add to the engine; returns the optimised module."""
    module = parse(ir_text)
    optimize(module)
    add_module(module)
    return module
