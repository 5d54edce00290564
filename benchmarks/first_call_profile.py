"""First call of each benchmark program by stage (CPU seconds), one fresh process per program:
the process first compiles `x + 1` (the backend's start-up, not the program's), then times the
program's first call with compile_profile's stage timers (each stage's own time, the stages it
calls left out; "run" is the program's first run, "other" what lies outside every stage: the
columns add up to "total").

    python -m benchmarks.first_call_profile ["row substring" ...]
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from . import side_env

ROOT = Path(__file__).resolve().parent.parent
ROWS = ["sin 10", "sin 100", "softmax 1000x1000", "random.normal 10M",
        "while_loop Newton", "rfft 2^20", "logsumexp", "sum 10M"]


def _one(row: str) -> dict:
    """In this process: start-up, then the row's first call by stage."""
    import numpy as np

    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.compile_profile import STAGES, _patch, chains, other
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.runtime import tiering
    jax.config.update("tracejit_persistent_cache", False)
    jax.jit(lambda x: x + 1)(np.float32(1)).block_until_ready()
    # (x + 1's final code, made on the tiering thread after its first call, would otherwise be
    # made during the row's first call and counted in it)
    tiering.wait()
    if row.startswith("sin "):
        fn = jax.jit(chains(jnp)["sin"](int(row.split()[1])))
        args = (np.linspace(0, 1, 1000, dtype=np.float32),)
    else:
        build = next(b for name, b in WORKLOADS if row in name)
        fn, args = build(jax, jnp, lax, random)
    timers: dict[str, float] = {}
    _patch(timers)
    t = time.process_time()
    jax.block_until_ready(fn(*args))  # (any pytree of results: the MLP and CNN rows' dicts)
    timers["total"] = time.process_time() - t
    timers["other"] = other(timers, timers["total"])
    return {"stages": [s[0] for s in STAGES] + ["other"], "timers": timers}


def main(rows: list[str]) -> None:
    env = side_env(TRACEJIT_PERSISTENT_CACHE="0")
    labels = None
    for row in rows:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.first_call_profile", "--one",
                               row], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            print(f"{row}: failed\n{proc.stderr[-1500:]}")
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        if labels is None:
            labels = result["stages"] + ["total"]
            print(f"{'program':>20} " + " ".join(f"{s:>12}" for s in labels), flush=True)
        print(f"{row[:20]:>20} " + " ".join(f"{result['timers'].get(s, 0.0):12.3f}"
                                             for s in labels), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(_one(sys.argv[2])))
    else:
        main(sys.argv[1:] or ROWS)
