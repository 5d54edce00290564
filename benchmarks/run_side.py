"""Run every workload with one implementation and print JSON: first-call (trace + compile) and
median steady-state seconds. `python -m benchmarks.run_side tracejit|jax`"""
from __future__ import annotations

import json
import statistics
import sys
import time


def _block(out):
    # (a dict too: JAX dispatches a large program asynchronously, and a gradient's dict of
    # arrays left unwaited timed only the dispatch -- 15 us for the 4096x256 MLP step)
    leaves = list(out.values()) if isinstance(out, dict) else \
        out if isinstance(out, (tuple, list)) else [out]
    for leaf in leaves:
        if isinstance(leaf, (tuple, list, dict)):
            _block(leaf)
        elif hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def measure(fn, args, budget: float = 1.5, max_runs: int = 200,
            settle=None) -> tuple[float, float, float]:
    """(first call, median of the timed calls, this process's CPU seconds per wall second
    over the timed calls). `settle`, called between the first call and the timed ones: for
    tracejit, waiting for the program's final (O3) code, which a first call run on O0 code
    leaves to a thread (runtime/tiering.py): a fast row's 200 calls would otherwise time the
    O0 code (fori_loop 10k 12.5 -> 35 us)."""
    t0 = time.perf_counter()
    _block(fn(*args))
    first = time.perf_counter() - t0
    if settle is not None:
        settle()
    times: list[float] = []
    deadline = time.perf_counter() + budget
    wall, cpu = time.perf_counter(), time.process_time()
    while len(times) < max_runs and (len(times) < 3 or time.perf_counter() < deadline):
        t = time.perf_counter()
        _block(fn(*args))
        times.append(time.perf_counter() - t)
    cpu_share = (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9)
    return first, statistics.median(times), cpu_share


def _load() -> tuple[float, int]:
    """The 1-minute load average and the CPUs this process may use."""
    import os
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return os.getloadavg()[0], cpus or 1


def _blas_kernel() -> str:
    """The OpenBLAS kernel SciPy's BLAS (ours for dot_general) runs, when threadpoolctl says."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (loads SciPy's OpenBLAS)
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (pip install threadpoolctl)"
    return ", ".join(f"{i.get('architecture')} x{i['num_threads']}" for i in threadpool_info()
                     if "scipy_openblas-" in i["filepath"]) or "unknown"


def main(impl: str) -> None:
    if impl == "numpy":
        return _main_numpy()
    if impl == "tracejit":
        import tracejit as jax
        import tracejit.numpy as jnp
        from tracejit import lax, random
        jax.config.update("tracejit_backend", "native")
    else:
        import jax
        import jax.numpy as jnp
        from jax import lax, random
    from benchmarks.workloads import WORKLOADS
    results = {"version": getattr(jax, "__version__", "?"),
               "python": sys.version.split()[0], "blas": _blas_kernel(), "rows": {}}
    if impl == "tracejit":
        from tracejit.backend.llvm import blas
        results["threads"] = (f"at most {blas.max_threads()}; BLAS: 1 thread per "
                              f"{blas.WORK_PER_THREAD:.2e} float32 multiply-adds")
    settle = None
    if impl == "tracejit":
        from tracejit.runtime import tiering
        settle = tiering.wait
    only = sys.argv[2:] or None
    for name, build in WORKLOADS:
        if only and not any(o in name for o in only):
            continue
        try:
            fn, args = build(jax, jnp, lax, random)
            first, median, cpu_share = measure(fn, args, settle=settle)
            load, cpus = _load()
            results["rows"][name] = {"first": first, "median": median, "load": load,
                                     "cpus": cpus, "cpu_share": cpu_share}
        except Exception as e:  # report, keep going: the table shows what failed
            results["rows"][name] = {"error": f"{type(e).__name__}: {e}"[:200]}
    print(json.dumps(results))


def _main_numpy() -> None:
    import numpy as np

    from benchmarks.workloads import NUMPY
    only = sys.argv[2:] or None
    results = {"version": np.__version__, "python": sys.version.split()[0], "rows": {}}
    for name, build in NUMPY.items():
        if only and not any(o in name for o in only):
            continue
        fn, args = build()
        first, median, _ = measure(fn, args, budget=1.0, max_runs=20)
        results["rows"][name] = {"first": first, "median": median}
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
