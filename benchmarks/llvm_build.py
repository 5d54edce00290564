"""What llvmlite's own build of LLVM costs: the benchmark programs' modules (opt_pipeline.capture)
optimised at O3 by llvmlite and by another shared libLLVM of the same version through LLVM-C
(`LLVMRunPasses("default<O3>")`, via ctypes), each in a process of its own, alternating; the
optimised IR compared (the same text: the same work done) and the CPU times of the pipeline.

    python -m benchmarks.llvm_build /path/to/libLLVM.so [--runs N] ["row substring" ...]

(Rust's toolchains ship one: ~/.rustup/toolchains/*/lib/libLLVM.so.*.) x86-64 hosts only.
"""
from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import ROOT, side_env


def _llvmlite(texts: list[str], runs: int) -> list[tuple[float, str]]:
    import llvmlite.binding as llvm

    from tracejit.backend import llvm_setup
    from tracejit.backend.llvm import jit_engine
    out = []
    for text in texts:
        best = float("inf")
        for _ in range(runs):
            module = jit_engine.parse(text)
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pto.loop_vectorization = pto.slp_vectorization = True
            pto.loop_unrolling = False  # (as llvm_setup.run_pipeline)
            pb = llvm.create_pass_builder(llvm_setup.pipeline_target_machine(), pto)
            pm = pb.getModulePassManager()
            start = time.process_time()
            pm.run(module, pb)
            best = min(best, time.process_time() - start)
        out.append((best, str(module).split("\n", 1)[1]))  # (past the ModuleID line)
    return out


def _libllvm(path: str, texts: list[str], runs: int) -> list[tuple[float, str]]:
    lib = ctypes.CDLL(path)
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    for name in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
        getattr(lib, f"LLVMInitializeX86{name}")()
    signatures = {  # name: (result, arguments)
        "LLVMContextCreate": (vp, []),
        "LLVMCreateMemoryBufferWithMemoryRangeCopy": (vp, [cp, ctypes.c_size_t, cp]),
        "LLVMParseIRInContext": (ctypes.c_int, [vp, vp, ctypes.POINTER(vp), ctypes.POINTER(cp)]),
        "LLVMGetHostCPUName": (cp, []), "LLVMGetHostCPUFeatures": (cp, []),
        "LLVMGetTargetFromTriple": (ctypes.c_int, [cp, ctypes.POINTER(vp), ctypes.POINTER(cp)]),
        "LLVMCreateTargetMachine": (vp, [vp, cp, cp, cp, ctypes.c_int, ctypes.c_int,
                                         ctypes.c_int]),
        "LLVMCreatePassBuilderOptions": (vp, []),
        "LLVMPassBuilderOptionsSetLoopVectorization": (None, [vp, ctypes.c_int]),
        "LLVMPassBuilderOptionsSetSLPVectorization": (None, [vp, ctypes.c_int]),
        "LLVMPassBuilderOptionsSetLoopUnrolling": (None, [vp, ctypes.c_int]),
        "LLVMDisposePassBuilderOptions": (None, [vp]),
        "LLVMRunPasses": (vp, [vp, cp, vp, vp]),
        "LLVMPrintModuleToString": (vp, [vp]), "LLVMDisposeMessage": (None, [vp]),
        "LLVMDisposeModule": (None, [vp]),
    }
    for name, (res, args) in signatures.items():
        getattr(lib, name).restype, getattr(lib, name).argtypes = res, args
    ctx = lib.LLVMContextCreate()
    triple, target, err = b"x86_64-unknown-linux-gnu", vp(), cp()
    if lib.LLVMGetTargetFromTriple(triple, ctypes.byref(target), ctypes.byref(err)):
        raise RuntimeError(err.value)
    tm = lib.LLVMCreateTargetMachine(target, triple, lib.LLVMGetHostCPUName(),
                                     lib.LLVMGetHostCPUFeatures(), 3, 0, 0)
    out = []
    for text in texts:
        best, raw = float("inf"), text.encode()
        for _ in range(runs):
            buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(raw, len(raw), b"module")
            module = vp()
            if lib.LLVMParseIRInContext(ctx, buf, ctypes.byref(module), ctypes.byref(err)):
                raise RuntimeError(err.value)
            options = lib.LLVMCreatePassBuilderOptions()
            lib.LLVMPassBuilderOptionsSetLoopVectorization(options, 1)
            lib.LLVMPassBuilderOptionsSetSLPVectorization(options, 1)
            lib.LLVMPassBuilderOptionsSetLoopUnrolling(options, 0)
            start = time.process_time()
            if lib.LLVMRunPasses(module, b"default<O3>", tm, options):
                raise RuntimeError("LLVMRunPasses failed")
            best = min(best, time.process_time() - start)
            lib.LLVMDisposePassBuilderOptions(options)
            printed = lib.LLVMPrintModuleToString(module)
            optimised = ctypes.string_at(printed).decode()
            lib.LLVMDisposeMessage(printed)
            lib.LLVMDisposeModule(module)
        out.append((best, optimised.split("\n", 1)[1]))
    return out


def _side(which: str, modules: Path, runs: int) -> list[tuple[float, str]]:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.llvm_build", "--side", which,
                           str(modules), str(runs)], cwd=ROOT, env=side_env(),
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main(path: str, rows: list[str], runs: int) -> None:
    from .opt_pipeline import capture
    modules = capture(rows)
    sides = {"llvmlite": [], path: []}
    with tempfile.TemporaryDirectory() as folder:
        texts = Path(folder) / "modules.json"
        texts.write_text(json.dumps([text for _, text in modules]))
        for _ in range(2):  # (alternating: the machine's load moves)
            for which, results in sides.items():
                results.append(_side(which, texts, runs))
    totals = dict.fromkeys(sides, 0.0)
    same = 0
    print(f"{'program (module)':>36} {'llvmlite':>9} {'other':>9}   (ms of CPU, best of "
          f"{2 * runs}; '=': the same optimised IR)")
    for k, (row, _) in enumerate(modules):
        best = {which: min(run[k][0] for run in results) for which, results in sides.items()}
        ir_same = sides["llvmlite"][0][k][1] == sides[path][0][k][1]
        same += ir_same
        for which in sides:
            totals[which] += best[which]
        print(f"{row[:36]:>36} {best['llvmlite'] * 1e3:9.2f} {best[path] * 1e3:8.2f}"
              f"{'=' if ir_same else '*'}")
    print(f"{'all':>36} {totals['llvmlite'] * 1e3:9.1f} {totals[path] * 1e3:8.1f}  "
          f"(x{totals['llvmlite'] / totals[path]:.2f}; the same IR in {same} of {len(modules)})")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--side":
        which, texts, runs = args[1], json.loads(Path(args[2]).read_text()), int(args[3])
        print(json.dumps(_llvmlite(texts, runs) if which == "llvmlite"
                         else _libllvm(which, texts, runs)))
    else:
        path, args = args[0], args[1:]
        runs = 3
        if args[:1] == ["--runs"]:
            runs, args = int(args[1]), args[2:]
        main(path, args, runs)
