"""Programs written for real JAX, run unmodified: once with `python` (real JAX, the oracle) and
once with `python -m tracejit` (`jax` resolved to tracejit). Each script takes the path of an
.npz file as its only argument and saves the numbers it computed there; `run_both` runs it both
ways and returns the two sets of results for the test to compare.

Real JAX's side is the slow half (XLA compiles every optimizer and sampler afresh), so its results
may be recorded: tests/libraries/recorded/NAME.npz holds them with a fingerprint of the script's
text and of the versions of JAX, its libraries, NumPy and the machine. A recording is used only
while its fingerprint matches; otherwise real JAX runs live, as it always did. Refresh them with
`python -m tests.libraries [NAME ...]` after changing a script or upgrading JAX. The scripts of
tests/mpi/ keep theirs the same way (`recorded`, `keep`), in tests/mpi/recorded/."""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import pickle
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# what real JAX's numbers depend on besides the script itself
_ORACLE_PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "ml_dtypes", "optax", "equinox", "flax",
                    "numpyro", "blackjax")
_FINGERPRINT = "__fingerprint__"


def _run(script: Path, out: Path, *, alias: bool) -> dict[str, np.ndarray]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    cmd = [sys.executable, *(["-m", "tracejit"] if alias else []), str(script), str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    who = "tracejit" if alias else "real JAX"
    assert done.returncode == 0, f"{script.name} under {who} failed:\n{done.stderr[-4000:]}"
    with np.load(out) as saved:
        return {k: saved[k] for k in saved.files}


def _fingerprint(script: Path, inputs: tuple[Path, ...]) -> str:
    digest = hashlib.sha256(script.read_bytes())
    for path in inputs:
        digest.update(path.read_bytes())
    for package in _ORACLE_PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{package}={version};".encode())
    digest.update(f"{platform.machine()};{platform.python_version()}".encode())
    return digest.hexdigest()


def _recording(script: Path) -> Path:
    return script.parent / "recorded" / f"{script.stem}.npz"


def recorded(script: Path, inputs: tuple[Path, ...] = ()) -> dict[str, np.ndarray] | None:
    """Real JAX's recorded results of `script`, if recorded under the same fingerprint (of the
    script, the files it reads, `inputs`, and the versions and machine)."""
    path = _recording(script)
    if not path.exists():
        return None
    with np.load(path) as saved:
        if str(saved[_FINGERPRINT]) != _fingerprint(script, inputs):
            return None
        return {k: saved[k] for k in saved.files if k != _FINGERPRINT}


def keep(script: Path, theirs: dict[str, np.ndarray], inputs: tuple[Path, ...] = ()) -> Path:
    """`theirs`, real JAX's results of `script` just run, as its recording."""
    path = _recording(script)
    path.parent.mkdir(exist_ok=True)
    np.savez_compressed(path, **theirs,
                        **{_FINGERPRINT: np.array(_fingerprint(script, inputs))})
    return path


def record(name: str, tmp_path: Path) -> Path:
    """Run tests/libraries/`name`.py under real JAX and keep its results as the recording."""
    script = HERE / f"{name}.py"
    return keep(script, _run(script, tmp_path / f"{name}.npz", alias=False))


def run_both(name: str, tmp_path: Path) -> tuple[dict, dict]:
    """(tracejit's results, real JAX's results) of tests/libraries/`name`.py."""
    script = HERE / f"{name}.py"
    ours = _run(script, tmp_path / "tracejit.npz", alias=True)
    theirs = recorded(script)
    if theirs is None:
        theirs = _run(script, tmp_path / "jax.npz", alias=False)
    assert sorted(ours) == sorted(theirs)
    return ours, theirs


def run_both_once(name: str, tmp_path_factory) -> tuple[dict, dict]:
    """run_both for a module fixture: under pytest-xdist each worker runs a module's fixture
    of its own, so the first worker to get here runs the script and the others read its
    results (a file lock in the session's directory, which the workers share; test_collectives_
    several_axes' compiles took 37-61 s in each worker). Without workers, run_both."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return run_both(name, tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent     # this session's, not an earlier one's
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)               # (released when the file closes)
        done = shared / f"{name}.pickle"
        if done.exists():
            return pickle.loads(done.read_bytes())
        result = run_both(name, tmp_path_factory.mktemp(name))
        done.write_bytes(pickle.dumps(result))
        return result


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
