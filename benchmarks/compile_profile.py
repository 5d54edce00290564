"""Compile time by stage (CPU seconds): trace -> passes -> codegen (IR built, IR printed) ->
LLVM (parse, optimise, machine code) on chains that grow, to show which stage stops scaling.

    python -m benchmarks.compile_profile [sin|cumsum|mixed] [sizes...]
"""
from __future__ import annotations

import sys
import time

import numpy as np

STAGES = [  # (label, module, function name): each timed where it is called from
    ("trace", "tracejit.runtime.jit", "Jitted._stage"),
    ("passes", "tracejit.runtime.native", "optimize"),
    ("codegen", "tracejit.backend.llvm.codegen", "generate"),
    ("ir text", "tracejit.backend.llvm.printer", "module_text"),
    # the runtime's own routines (thread pool, BLAS threads, SIGINT handler, math's slow paths):
    # loaded from the library cache, or compiled, where a program first needs one
    ("libraries", "tracejit.backend.llvm.jit_engine", "compile_library"),
    ("llvm parse", "tracejit.backend.llvm.jit_engine", "parse"),
    ("llvm opt", "tracejit.backend.llvm.jit_engine", "optimize"),
    # (a first tier's few passes in place of O3's: jit_engine.optimize_first_tier)
    ("llvm tier0", "tracejit.backend.llvm.jit_engine", "optimize_first_tier"),
    ("llvm codegen", "tracejit.backend.llvm.jit_engine", "load"),
    ("run", "tracejit.runtime.native", "NativeExecutable.__call__"),  # (the program's run)
]


def chains(jnp):
    def sin_chain(n):
        def f(x):
            for _ in range(n):
                x = jnp.sin(x)
            return x
        return f

    def sin_cumsum(n):  # n equations: sin and cumsum alternate (cumsum ends each kernel)
        def f(x):
            for _ in range(n // 2):
                x = jnp.cumsum(jnp.sin(x))
            return x
        return f
    def mixed(n):  # about n equations: cumsum/sin/reverse/tanh/mean, 7 equations a step
        def f(x):
            for _ in range(max(n // 7, 1)):
                x = jnp.tanh(jnp.sin(jnp.cumsum(x))[::-1])
                x = x - jnp.mean(x)
            return x
        return f
    return {"sin": sin_chain, "cumsum": sin_cumsum, "mixed": mixed}


def _patch(timers: dict):
    """Wrap each stage's function to add its CPU time to timers[label], exclusive of the stages
    called inside it (a library load inside codegen counts as "libraries", its LLVM parse as
    "llvm parse"), so the columns add up to what the stages took; `total - sum` is the rest.
    One stack for all threads: CPU time is the process's, and a compile on run_interruptibly's
    thread runs while the caller waits, inside no stage of its own."""
    import importlib
    stack: list[str] = []  # the stages under way, innermost last
    mark = [time.process_time()]

    def charge() -> None:  # the CPU time since the last mark to the innermost stage
        now = time.process_time()
        if stack:
            timers[stack[-1]] = timers.get(stack[-1], 0.0) + now - mark[0]
        mark[0] = now
    for label, modname, qual in STAGES:
        owner = importlib.import_module(modname)
        *path, attr = qual.split(".")
        for p in path:
            owner = getattr(owner, p)
        fn = getattr(owner, attr)

        def wrapped(*a, __fn=fn, __label=label, **k):
            charge()
            stack.append(__label)
            try:
                return __fn(*a, **k)
            finally:
                charge()
                # (the last of its label: another thread's stage may have begun inside it)
                del stack[len(stack) - 1 - stack[::-1].index(__label)]
        setattr(owner, attr, wrapped)


def main(kind: str, sizes: list[int]) -> None:
    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit.runtime import tiering
    jax.config.update("tracejit_persistent_cache", False)
    timers: dict[str, float] = {}
    _patch(timers)
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    labels = [s[0] for s in STAGES]
    print(f"{kind + ' chain':>14} " + " ".join(f"{s:>12}" for s in labels)
          + f"{'other':>9}{'total':>9}")
    for n in sizes:
        tiering.wait()  # (the row before's final code, made after its first call: not counted)
        timers.clear()
        t = time.process_time()
        jax.jit(chains(jnp)[kind](n))(x).block_until_ready()
        total = time.process_time() - t
        print(f"{n:>14} " + " ".join(f"{timers.get(s, 0.0):12.3f}" for s in labels)
              + f"{other(timers, total):9.3f}{total:9.3f}", flush=True)


def other(timers: dict, total: float) -> float:
    """What the first call took outside every stage: dispatch, the compile's caches and
    threads, output buffers."""
    return total - sum(timers.get(s[0], 0.0) for s in STAGES)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sin",
         [int(s) for s in sys.argv[2:]] or [10, 100])
