"""LLVM's IR optimisation of the benchmark programs, pipeline by pipeline: each row's (and the
compile-scaling chains') modules as llvm_setup.optimize hands them to LLVM's pass pipeline, then
each put through other pipelines, timed (CPU, best of --runs) and their O3 machine code compared
with that of the pipeline the compiler runs (O3 with both vectorisers, no unrolling).

    python -m benchmarks.opt_pipeline [--runs N] ["row substring" ...]

A pipeline is worth taking only where its machine code is the same (`=`): then the steady state
and every output bit are unchanged by construction (tiering's O0 code is generated from the same
optimised IR, so it follows).
"""
from __future__ import annotations

import hashlib
import sys
import time

import numpy as np

# (label, speed level, loop vectoriser, SLP vectoriser); the first is the compiler's own
PIPELINES = [("O3", 3, True, True), ("O2", 2, True, True), ("O3-slp", 3, True, False),
             ("O1+vec", 1, True, True), ("O1-slp", 1, True, False)]


def capture(rows: list[str]) -> list[tuple[str, str]]:
    """(row, module text) for each program module the rows compile, as the pipeline gets it
    (math already inlined). The runtime's own modules (compile_library's) are left out: a
    process loads them from the library cache."""
    import llvmlite.binding as llvm

    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.compile_profile import chains
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.backend import llvm_setup
    from tracejit.runtime import disk_cache
    # every module compiled here, none loaded: no on-disk entry, no live program's kernels; and
    # optimised inside compile_ir (an unoptimised first tier leaves O3 to the tiering thread)
    persistent = jax.config.tracejit_persistent_cache
    tiered = jax.config.tracejit_tiered_compile
    jax.config.update("tracejit_persistent_cache", False)
    jax.config.update("tracejit_tiered_compile", False)
    jax.clear_caches()
    modules: list[tuple[str, str]] = []
    state = {"row": None, "program": False}
    run_pipeline, compile_ir = llvm_setup.run_pipeline, disk_cache.compile_ir

    def recording_pipeline(ir, speed_level, vectorize):
        if state["program"] and speed_level == 3 and vectorize and isinstance(ir, llvm.ModuleRef):
            modules.append((state["row"], str(ir)))
        return run_pipeline(ir, speed_level, vectorize)

    def program_compile(*args, **kwargs):
        state["program"] = True
        try:
            return compile_ir(*args, **kwargs)
        finally:
            state["program"] = False

    llvm_setup.run_pipeline, disk_cache.compile_ir = recording_pipeline, program_compile
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    programs = [(name, build) for name, build in WORKLOADS]
    programs += [(f"chain of {n} sin", lambda *_, n=n: (jax.jit(chains(jnp)["sin"](n)), (x,)))
                 for n in (10, 100, 1000, 3000)]
    programs += [(f"sin/cumsum chain {n}",
                  lambda *_, n=n: (jax.jit(chains(jnp)["cumsum"](n)), (x,)))
                 for n in (500, 1000, 2000)]
    try:
        for name, build in programs:
            if rows and not any(r in name for r in rows):
                continue
            state["row"] = name
            fn, args = build(jax, jnp, lax, random)
            jax.block_until_ready(fn(*args))
    finally:
        llvm_setup.run_pipeline, disk_cache.compile_ir = run_pipeline, compile_ir
        jax.config.update("tracejit_persistent_cache", persistent)
        jax.config.update("tracejit_tiered_compile", tiered)
    return modules


def optimise(text: str, speed_level: int, loop_vectorize: bool, slp: bool) -> tuple[float, str]:
    """(CPU seconds of the pipeline alone, digest of the module's O3 object code)."""
    import llvmlite.binding as llvm

    from tracejit.backend import llvm_setup
    from tracejit.backend.llvm import jit_engine
    module = jit_engine.parse(text)
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization, pto.slp_vectorization = loop_vectorize, slp
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(llvm_setup.pipeline_target_machine(), pto)
    pm = pb.getModulePassManager()
    start = time.process_time()
    pm.run(module, pb)
    seconds = time.process_time() - start
    obj = llvm_setup.pipeline_target_machine().emit_object(module)
    return seconds, hashlib.sha256(obj).hexdigest()


def main(rows: list[str], runs: int) -> None:
    modules = capture(rows)
    labels = [p[0] for p in PIPELINES]
    print(f"{'program (module)':>36} {'lines':>6} " + " ".join(f"{s:>9}" for s in labels)
          + f"   (ms of CPU, best of {runs}; '*': other machine code than O3's)")
    totals = dict.fromkeys(labels, 0.0)
    for row, text in modules:
        cells = []
        for label, level, loop_vectorize, slp in PIPELINES:
            seconds, digest = min(optimise(text, level, loop_vectorize, slp) for _ in range(runs))
            if label == "O3":
                reference = digest
            totals[label] += seconds
            cells.append(f"{seconds * 1e3:8.2f}{'=' if digest == reference else '*'}")
        print(f"{row[:36]:>36} {text.count(chr(10)):6d} " + " ".join(cells), flush=True)
    print(f"{'all':>36} {'':6} " + " ".join(f"{totals[s] * 1e3:8.1f} " for s in labels))


if __name__ == "__main__":
    args = sys.argv[1:]
    runs = 3
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    main(args, runs)
