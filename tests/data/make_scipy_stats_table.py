"""Records real JAX's jax.scipy.stats values on tests/test_scipy_stats.py's grids
(`scipy_stats_jax_outputs.npz`), for that file's test_matches_jax: JAX runs them op by op, as
eagerly (under jax.jit XLA rewrites some edge values), compiling each operation of a call, ~1 s
a function. Run it again after changing a grid:

    .venv/bin/python tests/data/make_scipy_stats_table.py
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np

PATH = pathlib.Path(__file__).with_name("scipy_stats_jax_outputs.npz")


def main() -> None:
    import jax
    import jax.scipy.stats as jst
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
    import test_scipy_stats
    values = {}
    for dist, fn, grid in test_scipy_stats.PARAMS:
        with np.errstate(all="ignore"):
            values[f"{dist}.{fn}"] = np.asarray(getattr(getattr(jst, dist), fn)(*grid(fn)))
    np.savez_compressed(PATH, jax_version=np.asarray(jax.__version__), **values)
    print(f"wrote {len(values)} recorded outputs to {PATH}")


if __name__ == "__main__":
    main()
