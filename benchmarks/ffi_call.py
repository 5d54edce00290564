"""A jitted jax.ffi call's cost per call: the tutorial's rms_norm handler (tests/data/
ffi_handlers.cc) on float32[8] (the call's fixed cost) and float32[1000,1000] (the handler's
work), tracejit vs JAX, alternating. `python -m benchmarks.ffi_call [runs]`

Each side runs in its own process with the handler compiled against its own jaxlib's FFI
headers (JAX 0.12's API is 0.5, tracejit's 0.3). Prints, per shape and side, the median over
the runs of each run's median wall and CPU microseconds per call (a batch of calls timed
together: a float32[8] call is a few microseconds)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import ROOT, jax_python, side_env

SHAPES = {"[8]": (8,), "[1000,1000]": (1000, 1000)}
BATCH = {"[8]": 2000, "[1000,1000]": 5}
BATCHES = {"[8]": 15, "[1000,1000]": 15}


def _compile(python: str, folder: str) -> str:
    """The test handlers' library, built against `python`'s jaxlib headers."""
    include = subprocess.run([python, "-c", "import jax.ffi; print(jax.ffi.include_dir())"],
                             capture_output=True, text=True, check=True,
                             env=side_env()).stdout.strip()
    out = os.path.join(folder, f"libffi_{abs(hash(include))}.so")
    subprocess.run(["g++", "-std=c++17", "-O2", "-w", "-shared", "-fPIC", "-pthread",
                    "-I", include, str(ROOT / "tests" / "data" / "ffi_handlers.cc"), "-o", out],
                   check=True, timeout=600)
    return out


def _side(impl: str, so: str) -> None:
    import ctypes

    import numpy as np
    if impl == "tracejit":
        import tracejit as jax
    else:
        import jax
    lib = ctypes.cdll.LoadLibrary(so)
    jax.ffi.register_ffi_target("rms_norm", jax.ffi.pycapsule(lib.RmsNorm), platform="cpu")
    rows = {}
    for name, shape in SHAPES.items():
        x = jax.numpy.asarray(np.random.default_rng(0).standard_normal(shape)
                              .astype(np.float32))
        f = jax.jit(lambda a: jax.ffi.ffi_call("rms_norm", jax.ShapeDtypeStruct(
            a.shape, a.dtype))(a, eps=np.float32(1e-5)))
        for _ in range(3):
            f(x).block_until_ready()
        walls, cpus = [], []
        for _ in range(BATCHES[name]):
            w, c = time.perf_counter(), time.process_time()
            for _ in range(BATCH[name]):
                y = f(x)
            y.block_until_ready()
            walls.append((time.perf_counter() - w) / BATCH[name] * 1e6)
            cpus.append((time.process_time() - c) / BATCH[name] * 1e6)
        rows[name] = {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}
    print(json.dumps({"version": jax.__version__, "rows": rows}))


def main(runs: int = 5) -> None:
    with tempfile.TemporaryDirectory() as folder:
        pythons = {"tracejit": sys.executable, "jax": jax_python()}
        libs = {impl: _compile(py, folder) for impl, py in pythons.items()}
        results: dict[str, list[dict]] = {impl: [] for impl in pythons}
        versions = {}
        for _ in range(runs):  # alternating: a change of load hits both sides alike
            for impl, py in pythons.items():
                proc = subprocess.run([py, "-m", "benchmarks.ffi_call", "--side", impl,
                                       libs[impl]], cwd=ROOT, env=side_env(),
                                      capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise RuntimeError(f"{impl}: {proc.stderr[-2000:]}")
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                versions[impl] = out["version"]
                results[impl].append(out["rows"])
    print(f"rms_norm under jit, µs per call (median of {runs} alternating runs; "
          f"tracejit {versions['tracejit']}, JAX {versions['jax']}; load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'shape':14} {'side':9} {'wall':>9} {'CPU':>9} {'runs (CPU)':>30}")
    for name in SHAPES:
        for impl in pythons:
            rows = [r[name] for r in results[impl]]
            wall = statistics.median(r["wall"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            each = " ".join(f"{r['cpu']:.1f}" for r in rows)
            print(f"{name:14} {impl:9} {wall:9.1f} {cpu:9.1f}   {each}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--side"]:
        _side(sys.argv[2], sys.argv[3])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
