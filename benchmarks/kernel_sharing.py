"""First calls of programs that share kernels (runtime/kernel_cache.py), in one fresh process:
twenty wrappers around one 24-layer MLP (each layer its own widths, so its own kernels), each
wrapper with a head of its own, then a training step's programs (loss, grad, value_and_grad, an
SGD step). Prints wall and CPU seconds of each group's first calls and the kernel counters.

    python -m benchmarks.kernel_sharing     (the on-disk cache is off for the run)
"""
from __future__ import annotations

import os
import time

os.environ["TRACEJIT_PERSISTENT_CACHE"] = "0"

import numpy as np  # noqa: E402

import tracejit as jax  # noqa: E402
import tracejit.numpy as jnp  # noqa: E402

WIDTHS = [32 + 8 * i for i in range(25)]  # 24 layers, every one of another shape
BATCH = 16


def _params(rng):
    return [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
             rng.standard_normal(b).astype(np.float32) * 0.1)
            for a, b in zip(WIDTHS[:-1], WIDTHS[1:])]


def _mlp(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return x


def _timed(label: str, calls) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    for call in calls:
        out = call()
        for leaf in jax.tree_util.tree_leaves(out):
            leaf.block_until_ready()
    print(f"{label:46} wall {time.perf_counter() - wall:7.3f} s   "
          f"CPU {time.process_time() - cpu:7.3f} s")


def main() -> None:
    rng = np.random.default_rng(0)
    params = _params(rng)
    x = rng.standard_normal((BATCH, WIDTHS[0])).astype(np.float32)
    heads = [rng.standard_normal((WIDTHS[-1], k + 1)).astype(np.float32) for k in range(20)]

    def wrapper(head):
        return jax.jit(lambda params, x: jnp.sum(_mlp(params, x) @ head))
    _timed("first wrapper", [lambda: wrapper(heads[0])(params, x)])
    _timed("19 more wrappers (same MLP, own heads)",
           [lambda h=h: wrapper(h)(params, x) for h in heads[1:]])

    y = rng.standard_normal((BATCH, WIDTHS[-1])).astype(np.float32)

    def loss(params, x):
        return jnp.mean((_mlp(params, x) - y) ** 2)

    def step(params, x):
        grads = jax.grad(loss)(params, x)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    programs = [jax.jit(loss), jax.jit(jax.grad(loss)), jax.jit(jax.value_and_grad(loss)),
                jax.jit(step)]
    _timed("training: loss, grad, value_and_grad, step",
           [lambda f=f: f(params, x) for f in programs])
    import resource
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    try:
        from tracejit.runtime import kernel_cache
        print("kernels:", dict(kernel_cache.stats))
    except ImportError:
        print("kernels: (no kernel cache in this tree)")


if __name__ == "__main__":
    main()
