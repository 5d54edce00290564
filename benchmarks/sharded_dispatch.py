"""Per-call cost of jit on arguments laid out over a mesh in one process, ours vs JAX: a
shard_map step and a plain elementwise jit on two arrays `device_put` with NamedSharding(mesh,
P('x')) over 2 CPU devices (TRACEJIT_NUM_CPU_DEVICES=2; JAX: XLA_FLAGS=
--xla_force_host_platform_device_count=2), and the same jit on the same values unsharded. Tiny
arrays (16 float32): the time is the dispatch. Each call waits for its result, or (pipelined)
only the last of a window does: JAX's dispatch then overlaps the execution of earlier calls.

    python -m benchmarks.sharded_dispatch [--runs N] [windows]

Each side runs in its own process (JAX in .venv-jax312 when present, else the test venv's),
the sides alternating N times; in a side the rows alternate window by window (100 calls
each), so that all rows see the same moments of the machine. Prints the median over windows
of the wall time per call and the process's CPU time per call, the median over runs."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from . import ROOT, jax_python, side_env

WINDOW = 100
CALLS = ("shard_map step, sharded args", "jit x*y+1, sharded args", "jit x*y+1, unsharded args")
# each call waited for, or only the window's last (JAX then overlaps dispatch with execution)
ROWS = tuple(f"{c} ({mode})" for c in CALLS for mode in ("each waited", "pipelined"))


def side(impl: str, windows: int) -> dict:
    """One implementation's rows: {row: {"wall": s/call, "cpu": s/call}}."""
    import numpy as np
    if impl == "jax":
        import jax
    else:
        import tracejit as jax
    NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
    mesh = jax.make_mesh((2,), ("x",))
    s = NamedSharding(mesh, P("x"))
    a, b = np.arange(16, dtype=np.float32), np.linspace(0, 1, 16, dtype=np.float32)
    x, y = jax.device_put(a, s), jax.device_put(b, s)
    xu, yu = jax.numpy.asarray(a), jax.numpy.asarray(b)
    step = jax.jit(jax.shard_map(lambda p, q: p * q + 1, mesh=mesh, in_specs=(P("x"), P("x")),
                                 out_specs=P("x")))
    plain = jax.jit(lambda p, q: p * q + 1)
    calls = dict(zip(CALLS, [(step, (x, y)), (plain, (x, y)), (plain, (xu, yu))]))
    for fn, args in calls.values():  # (compiled, and checked to lay out as expected)
        for _ in range(200):
            out = fn(*args).block_until_ready()
        np.testing.assert_allclose(np.asarray(out), a * b + 1, rtol=1e-6)
    assert step(x, y).sharding == s and plain(x, y).sharding == s
    walls: dict[str, list] = {r: [] for r in ROWS}
    cpu = dict.fromkeys(ROWS, 0.0)
    pc, pt = time.perf_counter, time.process_time
    for _ in range(windows):
        for call, (fn, args) in calls.items():
            row = f"{call} (each waited)"
            t, c = pc(), pt()
            for _ in range(WINDOW):
                fn(*args).block_until_ready()
            cpu[row] += pt() - c
            walls[row].append((pc() - t) / WINDOW)
            row = f"{call} (pipelined)"
            t, c = pc(), pt()
            for _ in range(WINDOW):
                out = fn(*args)
            out.block_until_ready()
            cpu[row] += pt() - c
            walls[row].append((pc() - t) / WINDOW)
    version = jax.__version__ if impl == "jax" else getattr(jax, "__version__", "?")
    return {"version": version, "python": sys.version.split()[0],
            "rows": {r: {"wall": statistics.median(walls[r]),
                         "cpu": cpu[r] / (windows * WINDOW)} for r in ROWS}}


def _run_side(python: str, impl: str, windows: int) -> dict:
    env = side_env(TRACEJIT_NUM_CPU_DEVICES="2",
                   XLA_FLAGS="--xla_force_host_platform_device_count=2")
    proc = subprocess.run([python, "-m", "benchmarks.sharded_dispatch", "--side", impl,
                           str(windows)], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} side failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(windows: int = 50, runs: int = 1) -> None:
    python = jax_python()
    ours, theirs = [], []
    for _ in range(runs):  # alternating, so that a load change hits both sides alike
        ours.append(_run_side(sys.executable, "tracejit", windows))
        theirs.append(_run_side(python, "jax", windows))
    print(f"tracejit (Python {ours[0]['python']}) vs JAX {theirs[0]['version']} (Python "
          f"{theirs[0]['python']}); 2 CPU devices; {windows} windows of {WINDOW} calls; "
          f"runs: {runs}; load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'per call, µs':48} {'ours wall':>10} {'ours CPU':>9} {'JAX wall':>9} "
          f"{'JAX CPU':>8} {'JAX/ours CPU':>13}")
    for row in ROWS:
        med = {k: [statistics.median(r["rows"][row][k] for r in side_runs) * 1e6
                   for side_runs in (ours, theirs)] for k in ("wall", "cpu")}
        print(f"{row:48} {med['wall'][0]:10.2f} {med['cpu'][0]:9.2f} {med['wall'][1]:9.2f} "
              f"{med['cpu'][1]:8.2f} {med['cpu'][1] / med['cpu'][0]:13.2f}")


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--side"]:
        print(json.dumps(side(argv[1], int(argv[2]) if len(argv) > 2 else 50)))
        sys.exit()
    n_runs = 1
    if "--runs" in argv:
        k = argv.index("--runs")
        n_runs, argv = int(argv[k + 1]), argv[:k] + argv[k + 2:]
    main(int(argv[0]) if argv else 50, n_runs)
