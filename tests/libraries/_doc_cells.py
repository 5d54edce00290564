"""Runs the code cells of a JAX documentation page as a notebook would (one namespace, plots
drawn off-screen) and saves what each cell shows: the value of its last expression and the
numbers it prints (texts differ in float formatting only), to the .npz path in argv[1]."""
from __future__ import annotations

import ast
import contextlib
import io
import re
import sys

import numpy as np

_NUMBER = re.compile(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?")
# IPython's `%timeit [options] statement`: the statement, run once (timings are not compared)
_TIMEIT = re.compile(r"^(\s*)%timeit(?:\s+-\S+)*\s+(.*)$", re.MULTILINE)


def _arrays(value, key: str, out: dict) -> None:
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _arrays(v, f"{key}_{i}", out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _arrays(v, f"{key}_{k}", out)
    elif hasattr(value, "shape") and hasattr(value, "dtype") or isinstance(value, (int, float)):
        try:
            out[key] = np.asarray(value)
        except TypeError:  # (a typed PRNG key: its data is compared by the cells using it)
            pass


def run_cells(cells: list[str], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    env: dict = {"__name__": "__main__"}
    saved: dict = {}
    for i, cell in enumerate(cells):
        tree = ast.parse(_TIMEIT.sub(r"\1\2", cell))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        printed = io.StringIO()
        value = None
        with contextlib.redirect_stdout(printed):
            try:
                exec(compile(tree, f"<cell {i}>", "exec"), env)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), f"<cell {i}>", "eval"),
                                 env)
            except Exception as e:  # a cell the page shows raising: the same error class
                saved[f"cell{i}_raises"] = np.array(type(e).__name__)
        _arrays(value, f"cell{i}", saved)
        saved[f"cell{i}_printed"] = np.array(
            [float(v) for v in _NUMBER.findall(printed.getvalue())], np.float64)
    np.savez(path, **saved)
    sys.stdout.flush()
