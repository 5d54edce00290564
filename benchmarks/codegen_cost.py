"""Our own Python's part of a first call's code generation, per benchmark row and chain: the CPU
of `codegen.generate` (building the LLVM IR with llvmlite.ir) and, inside it, of printing the
modules (`printer.module_text`, the "ir text" stage; llvmlite's `Module.__repr__` in a tree from
before the printer, for A/B), best of several runs of the program each row's first call
generated (kernels remembered from earlier programs forgotten before each), thread CPU.

    python -m benchmarks.codegen_cost [--runs N] [--dump FILE] [--check FILE] ["row" ...]

--dump writes each program's IR text and its kernels' (JSON: row -> texts), the oracle for a
change to the emitters that must not change one byte of what LLVM is handed; --check compares
this tree's texts with such a dump (made by another tree) and names the programs that differ.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

CHAINS = [("sin", 10), ("sin", 100), ("cumsum", 100), ("mixed", 100), ("mixed", 1000)]


def programs(rows: list[str]) -> list[tuple[str, tuple]]:
    """(row, generate's arguments) of every program each row's first call generates."""
    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.compile_profile import chains
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.backend.llvm import codegen
    from tracejit.runtime import tiering
    jax.config.update("tracejit_persistent_cache", False)
    captured: list[tuple[str, tuple]] = []
    generate = codegen.generate
    row = ""

    def capture(*a):
        captured.append((row, a))
        return generate(*a)
    codegen.generate = capture
    try:
        x = np.linspace(0, 1, 1000, dtype=np.float32)
        todo = [(f"{kind} chain {n}", lambda kind=kind, n=n: (jax.jit(chains(jnp)[kind](n)), (x,)))
                for kind, n in CHAINS]
        todo += [(name, lambda build=build: build(jax, jnp, lax, random))
                 for name, build in WORKLOADS]
        for row, build in todo:
            if rows and not any(r in row for r in rows):
                continue
            fn, args = build()
            jax.block_until_ready(fn(*args))
            tiering.wait()
    finally:
        codegen.generate = generate
    return captured


def measure(args: tuple, runs: int) -> tuple[float, float, object]:
    """(best CPU s of generate, its printing's CPU s in that run, the last Program)."""
    import llvmlite.ir.module as irmodule

    from tracejit.backend.llvm import codegen
    try:  # (what prints codegen's modules: our printer, or llvmlite's before there was one)
        from tracejit.backend.llvm import printer
        owner, attr = printer, "module_text"
    except ImportError:
        owner, attr = irmodule.Module, "__repr__"
    printing = [0.0]
    to_text = getattr(owner, attr)

    def timed(module):
        t = time.thread_time()
        try:
            return to_text(module)
        finally:
            printing[0] += time.thread_time() - t
    best = (float("inf"), 0.0)
    setattr(owner, attr, timed)
    try:
        for _ in range(runs):
            codegen.forget_emitted_kernels()
            printing[0] = 0.0
            t = time.thread_time()
            program = codegen.generate(*args)
            best = min(best, (time.thread_time() - t, printing[0]))
    finally:
        setattr(owner, attr, to_text)
    return best[0], best[1], program


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dump")
    parser.add_argument("--check")
    parser.add_argument("rows", nargs="*")
    opts = parser.parse_args()
    texts: dict[str, list] = {}
    print(f"{'program':>40} {'codegen ms':>11} {'ir text ms':>11} {'lines':>7}")
    total = [0.0, 0.0]
    for k, (row, args) in enumerate(programs(opts.rows)):
        gen, text, program = measure(args, opts.runs)
        lines = program.ir_text.count("\n") + sum(t.count("\n") for t in program.kernels.values())
        name = row if k == 0 or row not in texts else f"{row} #{k}"
        texts[name] = [program.ir_text, sorted(program.kernels.items())]
        total[0] += gen
        total[1] += text
        print(f"{name[:40]:>40} {1e3 * gen:11.2f} {1e3 * text:11.2f} {lines:7d}", flush=True)
    print(f"{'total':>40} {1e3 * total[0]:11.2f} {1e3 * total[1]:11.2f}")
    if opts.dump:
        with open(opts.dump, "w") as f:
            json.dump(texts, f)
    if opts.check:
        with open(opts.check) as f:
            before = json.load(f)
        differ = sorted(set(before) ^ set(texts)) + [k for k in texts if k in before and
                                                      before[k] != json.loads(json.dumps(texts[k]))]
        print(f"IR text against {opts.check}: " +
              (f"differs for {differ}" if differ else f"identical, {len(texts)} programs"))


if __name__ == "__main__":
    main()
