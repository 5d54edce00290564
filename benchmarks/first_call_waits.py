"""First calls back to back, as a user's program makes them: every benchmark row's program built
and called once, one after another in one process, with no wait for final code in between
(benchmarks.run_side waits after each first call, so there no earlier row's work runs beside the
next). Per row, medians over fresh processes: the first call's wall time, its CPU time (this
process's, less tiering's thread's: the final code of the rows before), and the time its compile
waited for llvmlite's lock (which every LLVM call holds: tiering's O3 code generation among
them), with the compile helper (runtime/compile_helper.py) on and off, alternating.

    python -m benchmarks.first_call_waits [--rounds N] [--settle] ["row substring" ...]

--settle: wait for each row's final code after its first call, as run_side does (the benchmark
table's order: there no first call waits).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time

from . import ROOT, side_env


class _TimedLock:
    """A lock that adds the time callers other than tiering's thread wait for it to `waited`."""

    def __init__(self, lock):
        self._lock, self.waited = lock, 0.0

    def acquire(self, blocking=True, timeout=-1):
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        start = time.perf_counter()
        got = self._lock.acquire(True, timeout)
        if threading.current_thread().name != "tracejit-tiering":
            self.waited += time.perf_counter() - start
        return got

    def release(self):
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self._lock.release()


def _child(only: list[str], settle: bool) -> None:
    import llvmlite.binding.ffi as ffi
    lock = ffi.lib._lock._lock = _TimedLock(ffi.lib._lock._lock)
    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.run_side import _block
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.runtime import tiering
    rows = {}
    for name, build in WORKLOADS:
        if only and not any(o in name for o in only):
            continue
        fn, args = build(jax, jnp, lax, random)
        lock.waited, start = 0.0, time.perf_counter()
        cpu = time.process_time() - _thread_cpu(tiering._thread)
        _block(fn(*args))
        cpu = time.process_time() - _thread_cpu(tiering._thread) - cpu
        rows[name] = (time.perf_counter() - start, lock.waited, cpu)
        if settle:
            tiering.wait()
    print(json.dumps(rows))


def _thread_cpu(thread) -> float:
    """CPU seconds `thread` has run (0 before it starts; Linux's schedstat)."""
    try:
        with open(f"/proc/self/task/{thread.native_id}/schedstat") as f:
            return int(f.read().split()[0]) * 1e-9
    except (AttributeError, OSError):
        return 0.0


def main(only: list[str], rounds: int, settle: bool) -> None:
    runs: dict[str, list[dict]] = {"1": [], "0": []}
    loads = [os.getloadavg()[0]]
    for _ in range(rounds):
        for helper in runs:
            env = side_env(TRACEJIT_PERSISTENT_CACHE="0", TRACEJIT_COMPILE_HELPER=helper)
            proc = subprocess.run([sys.executable, "-m", "benchmarks.first_call_waits",
                                   "--child", *(["--settle"] if settle else []), *only], cwd=ROOT, env=env, capture_output=True,
                                  text=True, check=True)
            runs[helper].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    print(f"first calls {'each after the final code before' if settle else 'back to back'}, medians of {rounds} processes a side, alternating; "
          f"ms; load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs")
    print(f"{'':38} {'helper: wall':>12} {'CPU':>7} {'lock wait':>9}   "
          f"{'in process: wall':>16} {'CPU':>7} {'lock wait':>9}")
    total = {h: [0.0, 0.0, 0.0] for h in runs}
    for name in runs["1"][0]:
        cols = []
        for helper in runs:
            col = [statistics.median(r[name][k] for r in runs[helper]) * 1e3 for k in range(3)]
            total[helper] = [t + c for t, c in zip(total[helper], col)]
            cols.append(col)
        (a, b, c), (d, e, f) = cols
        print(f"{name[:38]:38} {a:12.1f} {c:7.1f} {b:9.1f}   {d:16.1f} {f:7.1f} {e:9.1f}")
    (a, b, c), (d, e, f) = total["1"], total["0"]
    print(f"{'sum':38} {a:12.1f} {c:7.1f} {b:9.1f}   {d:16.1f} {f:7.1f} {e:9.1f}")


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", action="store_true")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("rows", nargs="*")
    options = parser.parse_args()
    if options.child:
        _child(options.rows, options.settle)
    else:
        main(options.rows, options.rounds, options.settle)
