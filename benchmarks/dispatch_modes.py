"""Why the dispatch row is bimodal (4 or 7-8 us a call): times `jit(x + 1)` calls, a plain
Python loop and a native multiply-add chain side by side, in windows of 100 calls each, so that
all three see the same moments of the machine. `python -m benchmarks.dispatch_modes [windows]`

On the shared 2-vCPU VM the Python loop slows by the same ~1.7x in the same windows as the
dispatch (their ratio stays put), while the native chain slows by a few percent only: the slow
mode is the machine's (another hardware thread on the core, contending for the front end and
caches), not tracejit's."""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

WINDOW = 100


def _plain_python(n: int = 60) -> int:
    s, d = 0, {"a": 1}
    for i in range(n):
        s += d["a"] * i
    return s


def main(windows: int = 30) -> None:
    import tracejit as jax
    from tracejit import lax
    x = jax.numpy.asarray(np.float32(1.0))
    add = jax.jit(lambda x: x + 1)
    chain = jax.jit(lambda x: lax.fori_loop(0, 20_000, lambda i, x: x * 0.999 + 0.001, x))
    add(x), chain(x)
    pc = time.perf_counter
    rows: dict[str, list[float]] = {"dispatch": [], "python": [], "native": []}
    for _ in range(windows):
        times: dict[str, list[float]] = {k: [] for k in rows}
        for _ in range(WINDOW):
            t0 = pc()
            add(x)
            t1 = pc()
            _plain_python()
            t2 = pc()
            chain(x)
            t3 = pc()
            times["dispatch"].append(t1 - t0)
            times["python"].append(t2 - t1)
            times["native"].append(t3 - t2)
        for k, v in times.items():
            rows[k].append(statistics.median(v) * 1e6)
    for k, v in rows.items():
        print(f"{k:9} us:", " ".join(f"{t:5.1f}" for t in v))
    ratio = [d / p for d, p in zip(rows["dispatch"], rows["python"])]
    print("dispatch / python:", " ".join(f"{r:5.2f}" for r in ratio))
    spread = {k: max(v) / min(v) for k, v in rows.items()}
    spread["dispatch / python"] = max(ratio) / min(ratio)
    print("spread (slowest / fastest window):",
          ", ".join(f"{k} {s:.2f}" for k, s in spread.items()))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
