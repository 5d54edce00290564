"""The LLVM JIT: host target machine, O3 through the new pass builder (O1 for huge functions:
llvm_setup.optimize), and an MCJIT engine per compiled program (`Code`), so that a program's
machine code is freed when nothing uses it; the support routines every program links to live
in one engine kept for the process."""
from __future__ import annotations

import contextvars
import functools
import re
import threading
from collections.abc import Callable

import llvmlite.binding as llvm
from llvmlite import ir

from .. import llvm_setup
# (optimize and parse live there: the compile helper process loads that file alone)
from ..llvm_setup import (  # noqa: F401  (host_cpu, optimize, parse)
    create_loading_target_machine, create_target_machine, host_cpu, optimize, parse,
    run_always_inliner, run_passes, run_pipeline)
from . import math as ourmath
from . import special_loops, support

# Serialises engine creation and code generation (the object-cache hooks below are shared).
# runtime/native.py compiles one program at a time (its cache fill holds a lock of its own).
_lock = threading.Lock()


class Code:
    """The machine code of one program, in an MCJIT engine of its own: when the last reference
    goes, the engine is disposed of and LLVM's memory manager gives its pages back."""
    __slots__ = ("_engine",)

    def __init__(self, engine: llvm.ExecutionEngine):
        self._engine = engine

    def address(self, name: str) -> int:
        """Address of the function `name` in this code."""
        address = self._engine.get_function_address(name)
        if not address:
            raise KeyError(f"no JIT-compiled function named {name!r}")
        return address

    def global_address(self, name: str) -> int:
        """Address of the global variable `name` in this code."""
        address = self._engine.get_global_value_address(name)
        if not address:
            raise KeyError(f"no JIT-compiled global named {name!r}")
        return address


# The runtime's own code (the thread pool, the support routines, math's slow paths) is the same
# in every process: runtime/disk_cache.py installs a compile that keeps its object code on disk
# (the backend may not import the runtime); until then it is compiled here.
_library_compiler = None


def set_library_compiler(compile_fn) -> None:
    """Make `compile_fn(name, ir_text, speed_level) -> Code` what compile_library runs
    (`ir_text()` gives the module's IR; a cache hit need not call it)."""
    global _library_compiler
    _library_compiler = compile_fn


def compile_library(name: str, build: Callable[[], ir.Module], speed_level: int = 3) -> Code:
    """The machine code of a module of the runtime's own (not a user's program) that `build()`
    makes, named `name` (one name, one builder), optimised by optimize_library at
    `speed_level`; the caller keeps it for the process. The module is built only when compiled
    (a library cache hit loads it by name), in a fresh context: no setting a caller's emission
    holds (math.repetitions, inline_slow_paths) may shape the same-in-every-process code. So
    `build` must do nothing else: a symbol its code needs bound is bound by the caller."""
    def ir_text() -> str:
        return str(contextvars.Context().run(build))
    if _library_compiler is not None:
        return _library_compiler(name, ir_text, speed_level)
    module = optimize_library(parse(ir_text()), speed_level)
    return load(module, library=True)[0]


def optimize_library(module: llvm.ModuleRef, speed_level: int) -> llvm.ModuleRef:
    """`optimize` at O3; O1 without vectorisers at 1; nothing at 0 (code generation's own
    optimisation only)."""
    if speed_level >= 3:
        return optimize(module)
    if speed_level > 0:
        run_pipeline(module, speed_level=speed_level, vectorize=False)
    return module


_library_lock = threading.Lock()  # (the support routines and slow paths are made once)


def _support_engine() -> Code:
    with _library_lock:
        return _make_support_engine()


@functools.cache
def _make_support_engine() -> Code:
    """The code of the support routines, made once and kept: every program links to them."""
    code = compile_library("tracejit_support", support.module, speed_level=0)
    for libcall, (symbol, *_) in support.ROUTINES.items():
        llvm.add_symbol(libcall, code.address(symbol))
    return code


def needs_support(ir_text: str) -> bool:
    """Whether code generated from `ir_text` may call the support routines: only float16
    values (LLVM's `half`, or its fp16 conversion intrinsics) lead LLVM to those libcalls."""
    return "half" in ir_text or "fp16" in ir_text


@functools.cache
def _routine_engine(symbol: str) -> Code:
    """The code of one of the out-of-line routines programs call by name (math's cold paths:
    sin/cos/tan of huge arguments, zeta's terms below 0; special_loops' loops), made the first
    time a program calls it and kept; binds its name and its vector variants' for programs'
    linker."""
    if symbol in special_loops.VARIANTS:
        # O3: the variants' loops are where betainc and igamma spend their time
        code = compile_library(symbol, lambda: special_loops.routine_module(symbol))
    else:
        # O1: a cold path (huge arguments, negative ones), and O3 took 30 ms of the first
        # program that calls the trig one (no fast-math flags: the same bits at every level)
        code = compile_library(symbol, lambda: ourmath.OUT_OF_LINE[symbol](symbol),
                               speed_level=1)
    for name in (symbol, *_VARIANTS_OF[symbol]):
        llvm.add_symbol(name, code.address(name))
    return code


# each routine's vector variants, defined in its module (math.OUT_OF_LINE's builders,
# special_loops.routine_module)
_VARIANTS_OF = {**{s: [ourmath.vector_variant_symbol(s, n) for n in ourmath.VECTOR_WIDTHS]
                   for s in ourmath.OUT_OF_LINE}, **special_loops.VARIANTS}
_ROUTINE_OF = {**{s: s for s in _VARIANTS_OF},
               **{v: s for s, vs in _VARIANTS_OF.items() for v in vs}}


def _link_slow_paths(module: llvm.ModuleRef) -> None:
    for fn in module.functions:
        if fn.is_declaration and fn.name in _ROUTINE_OF:
            with _library_lock:
                _routine_engine(_ROUTINE_OF[fn.name])


# MCJIT's object-cache hooks for the one module `load` is finalising (under `_lock`): the
# object code to load instead of generating it, and the object code it generated.
_object_slot: dict[str, bytes | None] = {"cached": None, "generated": None}


def _cached_object(module: llvm.ModuleRef) -> bytes | None:
    return _object_slot["cached"]


def _object_compiled(module: llvm.ModuleRef, obj: bytes) -> None:
    _object_slot["generated"] = obj


def target_data() -> llvm.TargetData:
    """The host's data layout, to stamp on modules before they are optimised."""
    return llvm_setup.pipeline_target_machine().target_data


def inlined_lines(ir_text: str) -> int:
    """The lines of `ir_text` once its calls of math functions are inlined (`optimize`)."""
    return ourmath.inlined_lines(ir_text)


def _inline_math(module: llvm.ModuleRef) -> None:
    """Inline the module's `alwaysinline` functions (math.py's, one per math function and type,
    called from each use), as `optimize` does first."""
    run_always_inliner(module)


def empty_module() -> llvm.ModuleRef:
    """A module with nothing in it, for an engine to load cached object code for (MCJIT's object
    cache hands the code over before anything reads the module; code generation would need the
    host's triple and data layout, which `parse` stamps: ~0.1-0.2 ms of a first call's library
    load, against ~0.01)."""
    llvm_setup.init_native()
    return llvm.parse_assembly("")


def load(module: llvm.ModuleRef, cached_object: bytes | None = None,
         ir_text: str | None = None, library: bool = False,
         fast: bool = False) -> tuple[Code, bytes | None]:
    """Generate the machine code of an optimised module in an engine of its own (which takes
    the module), or load `cached_object` (object code an earlier `load` of the same module
    returned) instead. Returns the code and the object code generated (None when loaded).
    Whether it needs the support routines (compiling them was half of the first program's
    compile) is read from `ir_text`, the module's text, where the caller has it. A `library`
    module (compile_library's) links to neither them nor the slow paths."""
    llvm_setup.init_native()
    if not library:
        if needs_support(ir_text if ir_text is not None else str(module)):
            _support_engine()
        _link_slow_paths(module)
    with _lock:
        _object_slot["cached"], _object_slot["generated"] = cached_object, None
        try:
            # (loading needs no CPU's features: create_loading_target_machine)
            machine = (create_target_machine(0 if fast else 3) if cached_object is None
                       else create_loading_target_machine())
            engine = llvm.create_mcjit_compiler(module, machine)
            engine.set_object_cache(_object_compiled, _cached_object)
            engine.finalize_object()
            if cached_object is not None and _object_slot["generated"] is not None:
                raise RuntimeError("MCJIT generated code for a module given its object code")
            return Code(engine), _object_slot["generated"]
        finally:
            _object_slot["cached"] = _object_slot["generated"] = None


def load_object(obj: bytes) -> Code:
    """The code of object code generated elsewhere (runtime/compile_helper.py) from an optimised
    module whose O0 code this process already `load`ed: the support routines and slow paths it
    links to are in place, so the engine is given an empty module and MCJIT's object-cache
    hook hands it `obj`, as for a library cache entry (~0.5 ms against 5-100 ms of generating
    it here)."""
    return load(parse(""), cached_object=obj, library=True)[0]


def codegen_target() -> tuple[str, str, str, str]:
    """(triple, data layout, CPU name, features): what `parse` and O3's target machine
    (llvm_setup.create_target_machine) give a module, for a helper process to do the same."""
    return (llvm.get_process_triple(), str(target_data()), *host_cpu())


# A product marked `contract` and an instruction reading it that code generation at O1-O3 may
# fold into one fma with it (DAGCombiner: an fadd or fsub marked `contract`, also through an
# fneg or fpext). O0 folds none, so it would round the product. (codegen's modules carry no
# such flag: contraction.py makes their fmas explicit; the check guards any other IR.)
_CONTRACT_PRODUCT = re.compile(r"^\s*(%[-\w.$]+|%\"[^\"]*\") = fmul\b[^=\n]*\bcontract\b", re.MULTILINE)
_PRODUCT_READER = re.compile(
    r"^\s*(?:%[-\w.$]+|%\"[^\"]*\") = (?:fadd|fsub|fneg|fpext|fptrunc|select|phi|shufflevector"
    r"|extractelement|insertelement|bitcast|freeze|call)\b(.*)$", re.MULTILINE)
_VALUE = re.compile(r"%[-\w.$]+|%\"[^\"]*\"")


def fast_codegen_exact(optimised_ir: str) -> bool:
    """Whether `load(fast=True)` of this optimised IR computes the same bits as O3's code
    generation: every IEEE operation is selected as itself at both levels; what differs is
    contraction, which O0 never does. So: no `contract` product, in any function, that an
    instruction which could lead it into an fadd/fsub reads (conservatively: any of those
    above, calls included; value names are the function's own)."""
    for body in optimised_ir.split("\ndefine ")[1:]:
        products = set(_CONTRACT_PRODUCT.findall(body))
        if products and any(v in products for rest in _PRODUCT_READER.findall(body)
                            for v in _VALUE.findall(rest)):
            return False
    return True


# A first tier's passes (optimize_first_tier): values out of memory into registers, each
# instruction simplified, the control flow tidied; each keeps every operation's bits. Its code
# (O0's code generation included) ran ~25% faster than with the inliner alone (softmax 1000^2
# 12 -> 9 ms, random.normal 10M 436 -> 379 ms) for ~1 ms more of a module of ~300 lines.
FIRST_TIER_PASSES = ("sroa", "instruction_combine", "simplify_cfg")


def optimize_first_tier(module: llvm.ModuleRef) -> llvm.ModuleRef:
    """The module as a first tier generates its code at O0 from, in place of `optimize`'s:
    math's functions inlined (as `optimize` does first), then FIRST_TIER_PASSES."""
    _inline_math(module)
    run_passes(module, FIRST_TIER_PASSES)
    return module


# Fast-math flags by which O3 may reorder, approximate or rewrite a floating-point operation
# (the loop vectoriser splits a `reassoc` sum into partial sums; nsz lets x + 0 fold to x, -0
# kept; nnan folds x != x to false): without them every rewrite O3 makes keeps each operation's
# bits, as O0 computes them. (`contract` is fast_codegen_exact's: a product fused at code
# generation.)
_FLAGS = re.compile(r"\b(?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call|select|phi)"
                    r"((?: (?:nnan|ninf|nsz|arcp|contract|afn|reassoc|fast)\b)+)")


def unoptimised_exact(ir_text: str) -> bool:
    """Whether O0's code generation of `ir_text` as optimize_first_tier leaves it computes the
    same bits as O3's optimisation and code generation: no flag that lets O3 reorder or
    rewrite a floating-point operation (_FLAGS but `contract`), and no `contract` product O3's
    code generation could fuse (fast_codegen_exact)."""
    return all(flags == " contract" for flags in _FLAGS.findall(ir_text)) and \
        fast_codegen_exact(ir_text)


def compile_ir(ir_text: str) -> tuple[llvm.ModuleRef, Code]:
    """Parse, verify, optimise (see `optimize`) and generate machine code. Returns the optimised
    module (parsed back: the engine owns the one it compiled) and the code."""
    module = optimize(parse(ir_text), inlined_lines(ir_text))
    optimised_ir = str(module)
    code, _ = load(module, ir_text=optimised_ir)
    return parse(optimised_ir), code


def link_text(ir_texts: list[str]) -> str:
    """The IR of one module linking several (outlined kernels compiled together): LLVM's linker
    renames the modules' internal helpers and constants where two use one name."""
    if len(ir_texts) == 1:
        return ir_texts[0]
    module = parse(ir_texts[0])
    for text in ir_texts[1:]:
        module.link_in(parse(text))
    return str(module)


def bind(code: Code, symbols: list[str]) -> None:
    """Make `symbols`, defined in `code`, what later programs' undefined references to them
    resolve to (LLVM's process-wide symbol table: a later binding of a name replaces one)."""
    for symbol in symbols:
        llvm.add_symbol(symbol, code.address(symbol))
