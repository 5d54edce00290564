"""Programs written for real JAX, run unmodified: once with `python` (real JAX, the oracle) and
once with `python -m tracejit` (`jax` resolved to tracejit). Each script takes the path of an
.npz file as its only argument and saves the numbers it computed there; `run_both` runs it both
ways and returns the two sets of results for the test to compare."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _run(script: Path, out: Path, *, alias: bool) -> dict[str, np.ndarray]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    cmd = [sys.executable, *(["-m", "tracejit"] if alias else []), str(script), str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    who = "tracejit" if alias else "real JAX"
    assert done.returncode == 0, f"{script.name} under {who} failed:\n{done.stderr[-4000:]}"
    with np.load(out) as saved:
        return {k: saved[k] for k in saved.files}


def run_both(name: str, tmp_path: Path) -> tuple[dict, dict]:
    """(tracejit's results, real JAX's results) of tests/libraries/`name`.py."""
    script = HERE / f"{name}.py"
    ours = _run(script, tmp_path / "tracejit.npz", alias=True)
    theirs = _run(script, tmp_path / "jax.npz", alias=False)
    assert sorted(ours) == sorted(theirs)
    return ours, theirs


def assert_close(ours: dict, theirs: dict, rtol: float, atol: float = 0.0) -> None:
    """Every saved array equal in shape and dtype and close in value (texts equal)."""
    for key in sorted(theirs):
        a, b = ours[key], theirs[key]
        assert a.shape == b.shape and a.dtype == b.dtype, (key, a.shape, a.dtype, b.shape,
                                                             b.dtype)
        if a.dtype.kind in "USb":  # texts (error messages) and flags: equal
            np.testing.assert_array_equal(a, b, err_msg=key)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=key)
