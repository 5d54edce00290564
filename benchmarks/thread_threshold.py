"""Thread pool measurements (backend/llvm/thread_pool.py, parallel_loops.py): the size from which
a parallel kernel beats the serial one, and the speedup of 2 threads over 1 on the large rows.

    python -m benchmarks.thread_threshold [threshold|speedup]

`threshold`: a cheap elementwise kernel (x * 2 + 1) and a row sum at sizes 4k..1M, compiled
with the parallel path forced on (eight chunks or more at every size), run with
tracejit_num_threads 1 and 2 (interleaved, best of several rounds: the machine is shared). The
ratio t1/t2 crosses 1 at the break-even size; PARALLEL_MIN_ELEMENTS is set above it. `speedup`:
the elementwise chain 10M, softmax 4096^2, row sums and a whole sum of 10M elements, t1/t2 with
the default threshold. Prints the load average too: on a loaded machine the second thread often
gets no core at all, and the ratios say little.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np


def _best(fn, arg, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(arg).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return best


def _compare(fn, arg, reps: int, rounds: int = 5) -> tuple[float, float]:
    """Best times with 1 and with 2 threads, rounds interleaved so load shifts hit both."""
    import tracejit
    times = {1: float("inf"), 2: float("inf")}
    fn(arg).block_until_ready()
    for _ in range(rounds):
        for n in (1, 2):
            tracejit.config.update("tracejit_num_threads", n)
            times[n] = min(times[n], _best(fn, arg, reps))
    tracejit.config.update("tracejit_num_threads", None)
    return times[1], times[2]


def threshold() -> None:
    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit.backend.llvm import parallel_loops
    parallel_loops.PARALLEL_MIN_ELEMENTS = 0  # every kernel on the pool, to find break-even
    print(f"load average {os.getloadavg()}")
    print(f"{'kernel':14} {'elements':>9} {'1 thread':>10} {'2 threads':>10} {'t1/t2':>6}")
    for n in (1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20):
        parallel_loops.CHUNK_ELEMENTS = max(1024, n // 8)  # several chunks at every size
        x = jnp.asarray(np.linspace(-1, 1, n, dtype=np.float32))
        rows = jnp.asarray(np.linspace(-1, 1, n, dtype=np.float32).reshape(-1, 256))
        for name, fn, arg in (("x*2+1", jax.jit(lambda x: x * 2 + 1), x),
                              ("row sum", jax.jit(lambda x: jnp.sum(x, axis=1)), rows)):
            reps = max(5, 2_000_000 // n)
            t1, t2 = _compare(fn, arg, reps)
            print(f"{name:14} {n:9d} {t1 * 1e6:8.1f}µs {t2 * 1e6:8.1f}µs {t1 / t2:6.2f}")


def speedup() -> None:
    import tracejit as jax
    import tracejit.numpy as jnp

    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)
    rng = np.random.default_rng(0)
    chain_x = jnp.asarray(np.linspace(-3, 3, 10_000_000, dtype=np.float32))
    rows = [
        ("elementwise chain 10M",
         jax.jit(lambda x: jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(3 * x) - 1), chain_x),
        ("softmax 4096x4096", jax.jit(softmax),
         jnp.asarray(rng.standard_normal((4096, 4096)).astype(np.float32))),
        ("row sums 10M (10k x 1000)", jax.jit(lambda x: jnp.sum(x, axis=1)),
         jnp.asarray(rng.standard_normal((10_000, 1000)).astype(np.float32))),
        ("sum 10M", jax.jit(jnp.sum),
         jnp.asarray(rng.standard_normal(10_000_000).astype(np.float32))),
    ]
    print(f"load average {os.getloadavg()} on {len(os.sched_getaffinity(0))} cores")
    print(f"{'workload':28} {'1 thread':>10} {'2 threads':>10} {'t1/t2':>6}")
    for name, fn, arg in rows:
        t1, t2 = _compare(fn, arg, reps=5)
        print(f"{name:28} {t1 * 1e3:8.2f}ms {t2 * 1e3:8.2f}ms {t1 / t2:6.2f}")


if __name__ == "__main__":
    which = sys.argv[1:] or ["threshold", "speedup"]
    for name in which:
        {"threshold": threshold, "speedup": speedup}[name]()
