"""Compile scaling: first call (trace + compile + run) of unrolled chains that grow, for one
implementation, as JSON (wall and CPU seconds). `python -m benchmarks.compile_scaling tracejit|jax`
`python -m benchmarks` runs it for both sides and prints the table."""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from benchmarks.compile_profile import chains

SIZES = {"sin": (10, 100, 1000, 3000), "cumsum": (500, 1000, 2000)}
LABELS = {"sin": "chain of {} sin ops", "cumsum": "sin/cumsum chain, {} eqns"}


def main(impl: str) -> None:
    if impl == "tracejit":
        import tracejit as jax
        import tracejit.numpy as jnp
    else:
        import jax
        import jax.numpy as jnp
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    rows = {}
    for kind, sizes in SIZES.items():
        for n in sizes:
            f = jax.jit(chains(jnp)[kind](n))
            t, c = time.perf_counter(), time.process_time()
            f(x).block_until_ready()
            rows[LABELS[kind].format(n)] = {"wall": time.perf_counter() - t,
                                            "cpu": time.process_time() - c}
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1])
