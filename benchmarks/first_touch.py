"""The cost of the first touch of large fresh buffers (runtime/buffers.py): five 40 MB buffers
(random.normal 10M's output and workspace) written once in a fresh process, by page policy.

    python -m benchmarks.first_touch [rounds]

Policies, each in its own fresh process, alternated round by round (the machine is shared):
`pool`: the BufferPool as it is (NumPy advises MADV_HUGEPAGE on blocks of 4 MiB or more, from
their first page boundary); `4k`: NumPy's advice off (XLA's CPU allocator gives plain aligned
malloc memory: 4 KiB pages under THP `madvise`); `huge2m`: blocks 2 MiB-aligned and advised
over their whole length (one more huge page each); `pool2t`: pool buffers first written by two
threads, half each (parallel pre-faulting). Prints wall and system milliseconds of the first
write (quartiles over the rounds) and of a second write of the same memory.
"""
from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

_N, _COUNT = 40_000_000, 5
_HUGE = 2 << 20
POLICIES = ("pool", "4k", "huge2m", "pool2t")


def _buffer(policy: str) -> np.ndarray:
    if policy in ("pool", "pool2t"):
        from tracejit.runtime.buffers import pool
        return pool.empty((_N,), np.dtype(np.uint8), _N)[0]
    if policy == "4k":
        was = np._core.multiarray._set_madvise_hugepage(False)
        try:
            return np.empty(_N, np.uint8)
        finally:
            np._core.multiarray._set_madvise_hugepage(was)
    owner = np.empty(_N + _HUGE, np.uint8)
    start = -owner.ctypes.data % _HUGE
    madvise = ctypes.CDLL(None).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise(owner.ctypes.data + start, _N & ~4095, 14)  # MADV_HUGEPAGE
    return owner[start:start + _N]


def _write(buf: np.ndarray, threads: int, value: int) -> None:
    if threads == 1:
        buf[:] = value
        return
    workers = [threading.Thread(target=np.copyto, args=(part, value))
               for part in np.array_split(buf, threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _child(policy: str) -> None:
    threads = 2 if policy == "pool2t" else 1
    bufs = [_buffer(policy) for _ in range(_COUNT)]
    t0, w0 = os.times(), time.perf_counter()
    for b in bufs:
        _write(b, threads, 1)
    t1, w1 = os.times(), time.perf_counter()
    for b in bufs:
        _write(b, threads, 2)
    w2 = time.perf_counter()
    print(1e3 * (w1 - w0), 1e3 * (t1.system - t0.system), 1e3 * (w2 - w1))


def main(rounds: int) -> None:
    results: dict[str, list[list[float]]] = {p: [] for p in POLICIES}
    for _ in range(rounds):
        for p in POLICIES:
            out = subprocess.run([sys.executable, "-m", "benchmarks.first_touch", "--child", p],
                                 capture_output=True, text=True, check=True).stdout
            results[p].append([float(v) for v in out.split()])
    print(f"{_COUNT} x {_N // 10**6} MB fresh, {rounds} rounds, load average "
          f"{os.getloadavg()[0]:.1f}; first write wall q25/median/q75, its system time "
          "(median), second write (median), ms")
    for p, rows in results.items():
        wall = sorted(r[0] for r in rows)
        q = statistics.quantiles(wall, n=4) if len(wall) > 1 else wall * 3
        print(f"{p:8s} {q[0]:7.0f} {q[1]:7.0f} {q[2]:7.0f}   sys "
              f"{statistics.median(r[1] for r in rows):5.0f}   again "
              f"{statistics.median(r[2] for r in rows):5.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
