"""Thread pool measurements (backend/llvm/thread_pool.py, parallel_loops.py): the size from which
a parallel kernel beats the serial one, and the speedup of 2 threads over 1 on the large rows.

    python -m benchmarks.thread_threshold [threshold|speedup|latency]

`threshold`: a cheap elementwise kernel (x * 2 + 1) and a row sum at sizes 4k..1M, compiled
with the parallel path forced on (eight chunks or more at every size), run with
tracejit_num_threads 1 and 2 (interleaved, best of several rounds: the machine is shared). The
ratio t1/t2 crosses 1 at the break-even size; PARALLEL_MIN_ELEMENTS is set above it. `speedup`:
the elementwise chain 10M, softmax 4096^2, row sums and a whole sum of 10M elements, t1/t2 with
the default threshold. `latency`: where a mid-size call's time goes: the dispatch floor (a scalar
program), relu at 16K..4M elements serial and on the pool with 1 and 2 threads (the pool's
fixed cost is the chunked 1-thread time less the serial one), and the one-core read and copy
bandwidth of NumPy's max and copy next to our sum's. Prints the load average too: on a loaded
machine the second thread often gets no core at all, and the ratios say little.
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


def latency() -> None:
    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit.backend.llvm import parallel_loops
    print(f"load average {os.getloadavg()}")
    one = jnp.asarray(np.float32(1))
    floor = _best(jax.jit(lambda x: x + 1), one, 2000)
    print(f"dispatch floor (x + 1, a scalar): {floor * 1e6:.1f}µs")
    print(f"{'relu elements':>13} {'serial':>10} {'pool, 1t':>10} {'pool, 2t':>10}")
    kept, chunk = parallel_loops.PARALLEL_MIN_ELEMENTS, parallel_loops.CHUNK_ELEMENTS
    for n in (1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22):
        x = jnp.asarray(np.linspace(-1, 1, n, dtype=np.float32))
        reps = max(10, 4_000_000 // n)
        parallel_loops.PARALLEL_MIN_ELEMENTS = 1 << 62
        serial = jax.jit(lambda x: jnp.maximum(x, 0.0))
        jax.config.update("tracejit_num_threads", 1)
        ts = _best(serial, x, reps)
        # on the pool in at least four chunks (compiled at _compare's first call)
        parallel_loops.PARALLEL_MIN_ELEMENTS = 0
        parallel_loops.CHUNK_ELEMENTS = min(chunk, n // 4)
        pooled = jax.jit(lambda x: jnp.maximum(x, 0.0) + 0.0)
        t1, t2 = _compare(pooled, x, reps)
        print(f"{n:13d} {ts * 1e6:8.1f}µs {t1 * 1e6:8.1f}µs {t2 * 1e6:8.1f}µs")
    parallel_loops.PARALLEL_MIN_ELEMENTS, parallel_loops.CHUNK_ELEMENTS = kept, chunk
    big = np.random.default_rng(0).standard_normal(10_000_000).astype(np.float32)
    out = np.empty_like(big)
    jax.config.update("tracejit_num_threads", 1)
    ours = _best(jax.jit(jnp.sum), jnp.asarray(big), 20)
    jax.config.update("tracejit_num_threads", None)
    best = {k: float("inf") for k in ("max", "copy")}
    for _ in range(20):
        for k, fn in (("max", big.max), ("copy", lambda: np.copyto(out, big))):
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    print(f"40 MB on one core: NumPy max {big.nbytes / best['max'] / 1e9:.1f} GB/s read, copy "
          f"{2 * big.nbytes / best['copy'] / 1e9:.1f} GB/s read + write; our sum "
          f"{big.nbytes / ours / 1e9:.1f} GB/s")


if __name__ == "__main__":
    which = sys.argv[1:] or ["threshold", "speedup"]
    for name in which:
        {"threshold": threshold, "speedup": speedup, "latency": latency}[name]()
