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
    ("ir text", "llvmlite.ir.module", "Module.__repr__"),
    ("llvm parse", "tracejit.backend.llvm.jit_engine", "parse"),
    ("llvm opt", "tracejit.backend.llvm.jit_engine", "optimize"),
    ("llvm codegen", "tracejit.backend.llvm.jit_engine", "load"),
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
    """Wrap each stage's function to add its CPU time to timers[label] (outermost call only)."""
    import importlib
    active = set()
    for label, modname, qual in STAGES:
        owner = importlib.import_module(modname)
        *path, attr = qual.split(".")
        for p in path:
            owner = getattr(owner, p)
        fn = getattr(owner, attr)

        def wrapped(*a, __fn=fn, __label=label, **k):
            if __label in active:
                return __fn(*a, **k)
            active.add(__label)
            t = time.process_time()
            try:
                return __fn(*a, **k)
            finally:
                timers[__label] = timers.get(__label, 0.0) + time.process_time() - t
                active.discard(__label)
        setattr(owner, attr, wrapped)


def main(kind: str, sizes: list[int]) -> None:
    import tracejit as jax
    import tracejit.numpy as jnp
    jax.config.update("tracejit_persistent_cache", False)
    timers: dict[str, float] = {}
    _patch(timers)
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    labels = [s[0] for s in STAGES]
    print(f"{kind + ' chain':>14} " + " ".join(f"{s:>12}" for s in labels) + f"{'total':>9}")
    for n in sizes:
        timers.clear()
        t = time.process_time()
        jax.jit(chains(jnp)[kind](n))(x).block_until_ready()
        total = time.process_time() - t
        print(f"{n:>14} " + " ".join(f"{timers.get(s, 0.0):12.3f}" for s in labels)
              + f"{total:9.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sin",
         [int(s) for s in sys.argv[2:]] or [10, 100])
