"""Our float32 GEMM (backend/llvm/gemm.py) against OpenBLAS's sgemm, alternating in one process:
each program compiled twice (linalg.GEMM_KERNEL forced to "ours" and to "blas"), the two run in
turn, round after round, so that the machine's load hits both alike. Prints the best and median
wall time and the best CPU time (the process's: both threads) of each, and their ratio.

    python -m benchmarks.gemm_kernels [--rounds N] [--threads T] [row substring ...]

Rows: the benchmark table's matmul and MLP rows, each MLP product on its own (the forward product
and the transposes grad makes), 4096x256x256, 256^2 and 64^2. Run through `python -m benchmarks`'
environment (OpenBLAS's own kernel for this CPU, not the tests' Haswell pin): this module sets it
up itself when run directly.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np


def _products():
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def row(lhs, rhs, f):
        return lambda jax, jnp, lax, random: (jax.jit(f), (rand(*lhs), rand(*rhs)))
    return [
        ("64x64x64", row((64, 64), (64, 64), lambda a, b: a @ b)),
        ("256x256x256", row((256, 256), (256, 256), lambda a, b: a @ b)),
        ("128x784x512 x@w", row((128, 784), (784, 512), lambda a, b: a @ b)),
        ("784x128x512 x.T@dy", row((128, 784), (128, 512), lambda a, b: a.T @ b)),
        ("128x512x784 dy@w.T", row((128, 512), (784, 512), lambda a, b: a @ b.T)),
        ("4096x256x256", row((4096, 256), (256, 256), lambda a, b: a @ b)),
        ("1024x1024x1024 a@b.T", row((1024, 1024), (1024, 1024), lambda a, b: a @ b.T)),
    ]


def _rows():
    from benchmarks.workloads import WORKLOADS
    table = [(name, build) for name, build in WORKLOADS if "matmul" in name or "MLP" in name]
    return table + _products()


def _call(fn, args):
    import tracejit
    out = fn(*args)
    tracejit.tree_util.tree_map(lambda x: x.block_until_ready(), out)


def measure(build, rounds: int, reps: int) -> dict:
    import tracejit
    import tracejit.numpy as jnp
    from tracejit import lax, random
    from tracejit.backend.llvm import linalg
    programs = {}
    for kernel in ("ours", "blas"):
        linalg.GEMM_KERNEL = kernel
        fn, args = build(tracejit, jnp, lax, random)
        for _ in range(3):
            _call(fn, args)  # (compiled at the first call: the kernel is read then)
        programs[kernel] = (fn, args)
    linalg.GEMM_KERNEL = None
    wall = {k: [] for k in programs}
    cpu = {k: [] for k in programs}
    for _ in range(rounds):
        for kernel, (fn, args) in programs.items():
            for _ in range(reps):
                t, c = time.perf_counter(), time.process_time()
                _call(fn, args)
                wall[kernel].append(time.perf_counter() - t)
                cpu[kernel].append(time.process_time() - c)
    return {k: (min(wall[k]), statistics.median(wall[k]), min(cpu[k])) for k in programs}


def main(argv: list[str]) -> None:
    rounds, threads, wanted = 5, None, []
    it = iter(argv)
    for a in it:
        if a == "--rounds":
            rounds = int(next(it))
        elif a == "--threads":
            threads = int(next(it))
        else:
            wanted.append(a)
    import tracejit
    if threads is not None:
        tracejit.config.update("tracejit_num_threads", threads)
    print(f"load average {os.getloadavg()[0]:.2f}, threads "
          f"{tracejit.config.read('tracejit_num_threads') or 'default'}, {rounds} rounds")
    print(f"{'row':48s} {'ours best/med ms':>18s} {'BLAS best/med ms':>18s} {'ratio':>6s} "
          f"{'CPU ours/BLAS ms':>18s}")
    for name, build in _rows():
        if wanted and not any(w in name for w in wanted):
            continue
        r = measure(build, rounds, reps=5)
        (ob, om, oc), (bb, bm, bc) = r["ours"], r["blas"]
        print(f"{name:48s} {ob * 1e3:8.3f}/{om * 1e3:<9.3f} {bb * 1e3:8.3f}/{bm * 1e3:<9.3f} "
              f"{ob / bb:6.3f} {oc * 1e3:8.3f}/{bc * 1e3:<9.3f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    from benchmarks import side_env
    if os.environ.get("OPENBLAS_CORETYPE"):  # (the benchmarks' environment: see side_env)
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.gemm_kernels", *sys.argv[1:]],
                  side_env())
    main(sys.argv[1:])
