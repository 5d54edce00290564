"""Benchmarks against JAX (`python -m benchmarks`); the environment every measured subprocess
runs in is made here, so that every table measures the same set-up."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jax_python() -> str:
    """The Python JAX's side runs under: the Python 3.12 venv's (the newest JAX) when present,
    else this one (the test venv's JAX)."""
    jax312 = ROOT / ".venv-jax312" / "bin" / "python"
    return str(jax312) if jax312.exists() else sys.executable


def side_env(**extra: str) -> dict:
    """os.environ for a measured subprocess (either library's), plus `extra`."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT), **extra)
    # JAX's modules come precompiled from pip; let ours be cached too, or every first call
    # would include compiling tracejit's sources (this environment sets the variable)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # This environment pins OpenBLAS to its Haswell kernels (older builds crash on newer cores);
    # the current SciPy/NumPy builds run their own kernel for this CPU, as a user's would (on
    # AVX-512 cores, twice Haswell's speed). Only the benchmarks' subprocesses drop the pin; the
    # tests keep the environment's settings.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return env
