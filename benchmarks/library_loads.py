"""The runtime's library loads in a row's first call, one by one (thread CPU ms): which routines
a fresh process loads (from the library cache, or compiled) after its start-up program `x + 1`,
and where each load's time goes. Each part is inclusive of the parts it calls ("digest" holds
the sources' digest, "load" the engine's parts); "total" is compile_library's own.

    python -m benchmarks.library_loads ["row substring" ...]      (sin N: a chain of N sines)
    TRACEJIT_LIBRARY_CACHE=0 python -m benchmarks.library_loads ...  (every routine compiled)
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from . import ROOT, side_env

ROWS = ["sin 10", "softmax 1000x1000", "while_loop Newton", "rfft 2^20"]
# (label, module, attribute): what each load's time is split into
PARTS = [("digest", "tracejit.runtime.disk_cache", "source_digest"),
         ("folder", "tracejit.runtime.disk_cache", "_secret"),
         ("read", "tracejit.runtime.disk_cache", "_read_own_file"),
         ("hmac", "tracejit.runtime.disk_cache", "_tag"),
         ("check", "tracejit.runtime.disk_cache", "check"),
         ("parse", "tracejit.backend.llvm.jit_engine", "parse"),
         ("optimise", "tracejit.backend.llvm.jit_engine", "optimize_library"),
         ("load", "tracejit.backend.llvm.jit_engine", "load"),
         ("machine", "tracejit.backend.llvm.jit_engine", "create_target_machine"),
         ("machine", "tracejit.backend.llvm.jit_engine", "create_loading_target_machine")]


def _one(row: str) -> list[dict]:
    import importlib

    import numpy as np

    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.compile_profile import chains
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.backend.llvm import jit_engine
    from tracejit.runtime import disk_cache, tiering
    jax.config.update("tracejit_persistent_cache", False)
    jax.jit(lambda x: x + 1)(np.float32(1)).block_until_ready()
    tiering.wait()
    loads: list[dict] = []
    current: list[dict] = []

    def timed(fn, label):
        def wrapped(*a, **k):
            if not current:
                return fn(*a, **k)
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                current[-1][label] = current[-1].get(label, 0.0) + time.thread_time() - t
        return wrapped
    for label, modname, attr in PARTS:
        owner = importlib.import_module(modname)
        if hasattr(owner, attr):
            setattr(owner, attr, timed(getattr(owner, attr), label))
    compile_library = disk_cache.compile_library

    def traced(routine, ir_text, speed_level):
        current.append({"routine": routine})
        t = time.thread_time()
        try:
            return compile_library(routine, ir_text, speed_level)
        finally:
            current[-1]["total"] = time.thread_time() - t
            loads.append(current.pop())
    jit_engine.set_library_compiler(traced)
    if row.startswith("sin "):
        fn = jax.jit(chains(jnp)["sin"](int(row.split()[1])))
        args = (np.linspace(0, 1, 1000, dtype=np.float32),)
    else:
        fn, args = next(b for name, b in WORKLOADS if row in name)(jax, jnp, lax, random)
    jax.block_until_ready(fn(*args))
    return loads


def main(rows: list[str]) -> None:
    labels = list(dict.fromkeys(label for label, *_ in PARTS)) + ["total"]
    print(f"{'row / routine':>40} " + " ".join(f"{s:>8}" for s in labels))
    for row in rows:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.library_loads", "--one", row],
                              cwd=ROOT, env=side_env(TRACEJIT_PERSISTENT_CACHE="0"),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{row}: failed\n{proc.stderr[-1500:]}")
            continue
        print(row)
        for load in json.loads(proc.stdout.strip().splitlines()[-1]):
            print(f"{load['routine'][-40:]:>40} "
                  + " ".join(f"{1e3 * load.get(s, 0.0):8.3f}" for s in labels), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(_one(sys.argv[2])))
    else:
        main(sys.argv[1:] or ROWS)
