"""LLVM's process-wide set-up, through llvmlite alone (no module of our backend, so `import
tracejit` can import this one): the native target, the host CPU, the pass builder's target
machine, and the tables and options LLVM's pass pipeline and code generation set up the first
time each runs. The start-up thread (runtime/backend_start.py) runs `start` while the rest of
`import tracejit` goes on, and `warm_up` once the program leaves it time; the compiles of
backend/llvm/jit_engine.py then find them done. Also the pipelines themselves, O3's `optimize`
among them: the compile helper process (runtime/compile_helper.py) loads this file by path,
with llvmlite alone, and optimises as this process does."""
from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm

try:
    from llvmlite.binding.newpassmanagers import NewPassManager as _NewPassManager
except ImportError:  # llvmlite 0.44: each pass manager's class has its own _dispose
    _NewPassManager = None


@functools.cache
def init_native() -> None:
    # llvm.initialize() raises in llvmlite 0.50; these two are all the native JIT needs.
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.cache
def host_cpu() -> tuple[str, str]:
    """(CPU name, feature string) of the host; part of every on-disk cache key."""
    init_native()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@functools.cache
def host_has(feature: str) -> bool:
    """Whether the host CPU has `feature`, in LLVM's spelling ("avx512f", "avx2", "fma")."""
    return f"+{feature}" in host_cpu()[1].split(",")


def create_target_machine(opt: int = 3) -> llvm.TargetMachine:
    """A target machine for the host CPU with all of its features, generating code at `opt`
    (3; 0 is LLVM's fast instruction selection and register allocation)."""
    name, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=name, features=features, opt=opt, jit=True)


def create_loading_target_machine() -> llvm.TargetMachine:
    """A target machine for an engine that only loads object code generated before (MCJIT's
    object cache hands it over; no code is generated): the host's triple with no CPU name or
    features, ~0.02 ms to make against ~0.14-0.3 for the host's (its ~940 characters of
    features parsed). Loading reads nothing of it but the data layout, the same as the
    host's (tests/test_disk_cache.py)."""
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(opt=3, jit=True)


@functools.cache
def pipeline_target_machine() -> llvm.TargetMachine:
    """The target machine the pass builder optimises for: one for the process (an engine takes
    ownership of the one it generates code with, so each engine is given one of its own)."""
    return create_target_machine()


def run_pipeline(ir: llvm.ModuleRef | llvm.ValueRef, speed_level: int, vectorize: bool) -> None:
    """Run LLVM's default module pipeline over a module, or its function simplification
    pipeline over a function, at `speed_level`, with a pass builder of its own."""
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = pto.slp_vectorization = vectorize
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(pipeline_target_machine(), pto)
    is_module = isinstance(ir, llvm.ModuleRef)
    _run_and_free(pb.getModulePassManager() if is_module else pb.getFunctionPassManager(), ir, pb)


def parse(ir_text: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text into a module for the host."""
    init_native()
    module = llvm.parse_assembly(ir_text)
    module.triple = llvm.get_process_triple()
    module.data_layout = str(pipeline_target_machine().target_data)
    module.verify()
    return module


# A function longer than this many lines of IR (the main function of a program of thousands of
# equations; kernels are outlined and stay far smaller) is optimised at O1 without vectorisers:
# LLVM's O3 loop vectoriser and GVN grow faster than linearly with a function's size (21 s of
# O3 against 3 s of O1 for a 20,000-line function of 12,000 equations).
HUGE_FUNCTION_LINES = 4000


def optimize(module: llvm.ModuleRef, text_lines: int | None = None,
             huge_lines: int | None = None) -> llvm.ModuleRef:
    """The optimised module: O3 (loop and SLP vectorisation on) over every function, but huge
    ones (longer than `huge_lines`, HUGE_FUNCTION_LINES where None) get O1's function pipeline
    instead, with O3's module pipeline skipping them. Small modules are optimised in place; for
    those with a huge function a new module is returned (the IR goes through text once each
    way). `text_lines`: the lines of the text the module was parsed from with its math calls
    inlined (backend/llvm/math.py's inlined_lines), where the caller has it: LLVM prints a
    function in at most twice the lines of ours (a blank line before each block), so a short
    text has no huge function, and printing each function to count (~0.6 ms of a first call)
    is skipped."""
    if huge_lines is None:
        huge_lines = HUGE_FUNCTION_LINES
    # math's functions (`alwaysinline`, one per math function and type, called from each use)
    # inlined first: every function, huge ones too, is then optimised as it was when that code
    # was emitted inline at each use, and a huge function is judged by its size with that code
    # in it
    run_always_inliner(module)
    if text_lines is not None and 2 * text_lines + 1 <= huge_lines:
        huge = []
    else:
        # (not an alwaysinline one: O3 inlines it into its callers, and optnone's noinline
        # beside alwaysinline fails the verifier; math's far trig routines carry it)
        huge = [f.name for f in module.functions
                if not f.is_declaration and str(f).count("\n") > huge_lines
                and not any(b"alwaysinline" in a for a in f.attributes)]
    if not huge:
        run_pipeline(module, speed_level=3, vectorize=True)
        return module
    for f in module.functions:
        if f.name in huge:
            run_pipeline(f, speed_level=1, vectorize=False)
    # optnone makes O3's module pipeline leave them as O1 left them (and inline nothing into
    # them); it comes off again before code generation, which would otherwise be O0's for them
    module = parse(_mark_optnone(str(module), huge))
    run_pipeline(module, speed_level=3, vectorize=True)
    return parse(_ATTRIBUTE_OPTNONE.sub(r"\1", str(module)))


# (" optnone" inside an attribute group; only the functions _mark_optnone marked have it)
_ATTRIBUTE_OPTNONE = re.compile(r"^(attributes #\d+ = \{.*?) optnone\b", re.M)


def _mark_optnone(ir_text: str, names: list[str]) -> str:
    wanted = {f"@{n}(" for n in names} | {f'@"{n}"(' for n in names}
    lines = ir_text.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("define ") and line.endswith("{") and any(w in line for w in wanted):
            lines[k] = line[:-1] + "noinline optnone {"
    return "\n".join(lines)


def run_passes(module: llvm.ModuleRef, passes: tuple[str, ...]) -> None:
    """Run the named passes of llvmlite's new pass manager (`add_<name>_pass`), in order, over
    a module, and nothing else (those this llvmlite lacks left out)."""
    pb = llvm.create_pass_builder(pipeline_target_machine(),
                                  llvm.create_pipeline_tuning_options(speed_level=0))
    pm = llvm.create_new_module_pass_manager()
    for name in passes:
        add = getattr(pm, f"add_{name}_pass", None)
        if add is not None:
            add()
    _run_and_free(pm, module, pb)


def run_always_inliner(module: llvm.ModuleRef) -> None:
    """Inline the module's `alwaysinline` functions, and nothing else."""
    if _NewPassManager is None:  # llvmlite 0.44's new pass manager has no inliner: the legacy's
        pm = llvm.create_module_pass_manager()
        pm.add_always_inliner_pass()
        pm.run(module)
        pm.close()
        return
    pb = llvm.create_pass_builder(pipeline_target_machine(),
                                  llvm.create_pipeline_tuning_options(speed_level=0))
    pm = llvm.create_new_module_pass_manager()
    pm.add_always_inliner_pass()
    _run_and_free(pm, module, pb)


def _run_and_free(pm, ir: llvm.ModuleRef | llvm.ValueRef, pb) -> None:
    try:
        pm.run(ir, pb)
    finally:
        # llvmlite 0.50 never frees a pass manager (its _dispose resolves to ObjectRef's no-op,
        # ahead of NewPassManager's in the MRO): ~70 KiB of LLVM memory per compile. Free it
        # here; detach() stops the Python object from touching it again. (0.44's frees.)
        if _NewPassManager is None:
            pm.close()
        else:
            _NewPassManager._dispose(pm)
            pm.detach()


def start() -> None:
    """What every compile needs first: LLVM's native target, the host CPU's name and features
    and the pass builder's target machine (~1 ms of CPU)."""
    host_cpu()
    pipeline_target_machine()


def warm_up() -> None:
    """An empty function put through O3's pipeline and code generation, then dropped: LLVM sets
    up tables and options the first time each runs (~1-3 ms of the first program's compile,
    for ~7 ms of CPU here: worth it only where the program leaves the thread time). A function
    with a vectorisable loop instead set up no more of it and cost twice as much. It leaves
    nothing that a compile reads (no symbol bound, no engine kept): the same code after it as
    without it (tests/test_backend_start.py)."""
    module = llvm.parse_assembly("define void @tracejit_warm_up() {\n  ret void\n}\n")
    module.triple = llvm.get_process_triple()
    module.data_layout = str(pipeline_target_machine().target_data)
    run_pipeline(module, speed_level=3, vectorize=True)
    engine = llvm.create_mcjit_compiler(module, create_target_machine())  # (it owns its own)
    engine.finalize_object()
    engine.close()
