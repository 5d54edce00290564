"""Programs for several processes, run by tests/test_mpi.py (harness.py says how). Real JAX's
results of those it also runs under JAX (one process, `JAX_SCRIPTS`) are recorded as
tests/libraries' are, harness.py in their fingerprint, and used while it matches:
`python -m tests.mpi [NAME ...]` records them again (all of them when no NAME is given) after
changing a script or upgrading JAX."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.libraries import keep

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
HARNESS = (HERE / "harness.py",)  # what every script's results depend on besides its own text
JAX_SCRIPTS = ("broadcast", "context_mesh", "grads", "half_sums", "lanes_after_local",
               "routing", "several_axes", "vma")


def start_jax(script: Path, out: Path) -> subprocess.Popen:
    """Real JAX running `script` (mode `jax`): its results to OUT.0.npz."""
    return subprocess.Popen([sys.executable, str(script), str(out), "jax"],
                            env=dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def record(name: str, tmp_path: Path) -> Path:
    """Run tests/mpi/`name`.py under real JAX and keep its results as the recording."""
    script = HERE / f"{name}.py"
    run = start_jax(script, tmp_path / name)
    log = run.communicate(timeout=600)[0]
    assert run.returncode == 0, f"{script.name} under real JAX failed:\n{log[-4000:]}"
    with np.load(tmp_path / f"{name}.0.npz") as saved:
        return keep(script, dict(saved), HARNESS)
