"""Strong scaling (`python -m benchmarks scaling`): a data-parallel training step and a
row-sharded matmul at a fixed total size, on 1 device, on 2 devices of one process and on 2
processes (one device each), tracejit against JAX with the same device counts. Ours runs two
processes under `mpiexec -n 2` (MPI); JAX's two processes join through
jax.distributed.initialize on a localhost coordinator, and its devices in one process come
from XLA_FLAGS=--xla_force_host_platform_device_count. Prints one table of medians.

    python -m benchmarks.scaling worker IMPL {devices,processes} N   (one side's timings, JSON)
    python -m benchmarks.scaling alternate [CALLS]

`alternate` compares 1 and 2 devices inside one process of each library (2 CPU devices; the
1-device programs on a mesh of the first): calls alternate between the two, so both see the
same load, and it prints medians of wall and CPU time per call (CPU: all of the process's
threads). Separate processes, as in the table, differ by more than the programs do on a
shared machine.
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import side_env

ROOT = Path(__file__).resolve().parent.parent
BATCH, WIDTH, MATMUL, REPS = 4096, 256, 1024, 7
WARM_UP = 8  # (`alternate`: uncounted calls first; tracejit's product sites time both modes
# in their first calls, linalg.WARM_UP_CALLS)


def _inputs(jax, mesh, P):
    """The batch, weights and matmul operands as global arrays (each process builds only its
    part), the same in both libraries."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, WIDTH)).astype(np.float32)
    y = rng.normal(size=(BATCH, 1)).astype(np.float32)
    params = {"w1": rng.normal(size=(WIDTH, WIDTH)).astype(np.float32) / 16,
              "w2": rng.normal(size=(WIDTH, 1)).astype(np.float32) / 16}
    a = rng.normal(size=(MATMUL, MATMUL)).astype(np.float32)
    b = rng.normal(size=(MATMUL, MATMUL)).astype(np.float32)
    rows = jax.sharding.NamedSharding(mesh, P("x"))
    whole = jax.sharding.NamedSharding(mesh, P())

    def put(v, s):
        return jax.make_array_from_callback(v.shape, s, lambda index: v[index])
    return (put(x, rows), put(y, rows), {k: put(v, whole) for k, v in params.items()},
            put(a, rows), put(b, whole))


def _median(f, *args) -> tuple[float, float]:
    """(first call, median of the next REPS) in seconds."""
    t = time.perf_counter()
    out = f(*args)
    first = time.perf_counter() - t
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        out = f(*args)
        for leaf in (out.values() if isinstance(out, dict) else [out]):
            leaf.block_until_ready()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def _library(impl: str):
    if impl == "tracejit":
        import tracejit as jax
        import tracejit.numpy as jnp
        from tracejit import lax
    else:
        import jax
        import jax.numpy as jnp
        from jax import lax
    return jax, jnp, lax


def _programs(jax, jnp, lax, devices) -> dict:
    """The two workloads over a mesh of `devices`: name -> (jitted function, arguments)."""
    P = jax.sharding.PartitionSpec
    mesh = jax.sharding.Mesh(np.array(devices), ("x",))
    x, y, params, a, b = _inputs(jax, mesh, P)

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    def step(p, x, y):
        g = lax.pmean(jax.grad(loss)(p, x, y), "x")
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g)

    train = jax.jit(jax.shard_map(step, mesh=mesh, in_specs=(P(), P("x"), P("x")),
                                  out_specs=P()))
    matmul = jax.jit(jax.shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P("x"), P()),
                                   out_specs=P("x")))
    return {"data-parallel MLP step": (train, (params, x, y)),
            "row-sharded matmul": (matmul, (a, b))}


def worker(impl: str, mode: str, n: int) -> None:
    jax, jnp, lax = _library(impl)
    if mode == "processes" and n > 1:
        if impl == "tracejit":
            jax.distributed.initialize()
        else:
            jax.distributed.initialize(os.environ["BENCH_COORDINATOR"], num_processes=n,
                                       process_id=int(os.environ["BENCH_PROCESS"]))
    rows = {k: _median(f, *args) for k, (f, args) in _programs(jax, jnp, lax,
                                                               jax.devices()).items()}
    if jax.process_index() == 0:
        print(json.dumps({k: {"first": f, "median": m} for k, (f, m) in rows.items()}))


def _call(f, args) -> tuple[float, float]:
    """(wall, CPU) seconds of one call, waited for."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = f(*args)
    for leaf in (out.values() if isinstance(out, dict) else [out]):
        leaf.block_until_ready()
    return time.perf_counter() - wall, time.process_time() - cpu


def alternate_worker(impl: str, calls: int) -> None:
    """1 device against 2 in this process (2 CPU devices): for each workload, WARM_UP calls
    of each program, then `calls` calls of each, alternating (which goes first alternates
    too); prints medians of wall and CPU per call as JSON."""
    jax, jnp, lax = _library(impl)
    programs = {n: _programs(jax, jnp, lax, jax.devices()[:n]) for n in (1, 2)}
    result = {}
    for work in programs[1]:
        for n in (1, 2):
            for _ in range(WARM_UP):
                _call(*programs[n][work])
        times = {1: [], 2: []}
        for i in range(calls):
            for n in ((1, 2) if i % 2 else (2, 1)):
                times[n].append(_call(*programs[n][work]))
        result[work] = {str(n): [statistics.median(t[j] for t in times[n]) for j in (0, 1)]
                        for n in (1, 2)}
    print(json.dumps(result))


def alternate(calls: int) -> None:
    print(f"1 vs 2 devices in one process, calls alternating: medians of {calls} calls each "
          f"(wall / CPU of all threads, ms); load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'workload':24} {'library':9} {'1 device':>17} {'2 devices':>17} {'speed-up':>9}")
    for impl in ("tracejit", "jax"):
        out = subprocess.run([sys.executable, "-m", "benchmarks.scaling", "alternate-worker",
                              impl, str(calls)], check=False, cwd=ROOT, env=_env(impl, 2),
                             capture_output=True, text=True, timeout=900)
        if out.returncode:
            print(f"{impl}: {out.stderr[-300:]}")
            continue
        for work, r in json.loads(out.stdout.strip().splitlines()[-1]).items():
            (w1, c1), (w2, c2) = r["1"], r["2"]
            print(f"{work:24} {impl:9} {w1 * 1e3:7.2f} / {c1 * 1e3:6.2f} "
                  f"{w2 * 1e3:7.2f} / {c2 * 1e3:6.2f} {w1 / w2:9.2f}")


def _env(impl: str, devices: int) -> dict:
    env = side_env()
    if impl == "tracejit":
        env["TRACEJIT_NUM_CPU_DEVICES"] = str(devices)
    else:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return env


def _worker_cmd(impl: str, mode: str, n: int) -> list[str]:
    return [sys.executable, "-m", "benchmarks.scaling", "worker", impl, mode, str(n)]


def _run(impl: str, mode: str, n: int) -> dict:
    """One configuration's timings (rank 0's), or {"error": ...}."""
    if mode == "devices" or n == 1:
        procs = [subprocess.Popen(_worker_cmd(impl, "devices", n), cwd=ROOT,
                                  env=_env(impl, n), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)]
    elif impl == "tracejit":
        from tracejit.distributed import mpiexec
        procs = [subprocess.Popen([mpiexec(), "-n", str(n), *_worker_cmd(impl, mode, n)],
                                  cwd=ROOT, env=_env(impl, 1), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)]
    else:
        with socket.socket() as s:  # (a free port for JAX's coordinator)
            s.bind(("localhost", 0))
            port = s.getsockname()[1]
        procs = [subprocess.Popen(_worker_cmd(impl, mode, n), cwd=ROOT,
                                  env=dict(_env(impl, 1), BENCH_COORDINATOR=f"localhost:{port}",
                                           BENCH_PROCESS=str(k)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for k in range(n)]
    outs = [p.communicate(timeout=900) for p in procs]
    if any(p.returncode for p in procs):
        return {"error": " | ".join(err[-300:] for _, err in outs)}
    return json.loads(outs[0][0].strip().splitlines()[-1])


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def main() -> None:
    configs = [("1 device", "devices", 1), ("2 devices, 1 process", "devices", 2),
               ("2 processes", "processes", 2)]
    results = {(impl, label): _run(impl, mode, n) for label, mode, n in configs
               for impl in ("tracejit", "jax")}
    load = os.getloadavg()[0]
    print(f"strong scaling: MLP step on a batch of {BATCH}x{WIDTH}, matmul {MATMUL}^2 "
          f"(rows split over the devices); medians of {REPS}; load average {load:.1f} on "
          f"{os.cpu_count()} CPUs (timings are only meaningful on an idle machine)")
    header = f"{'workload':24} {'configuration':22} {'tracejit':>12} {'JAX':>12} " \
             f"{'speed-up tj':>11} {'speed-up JAX':>12}"
    print(header)
    print("-" * len(header))
    for work in ("data-parallel MLP step", "row-sharded matmul"):
        base = {impl: results[(impl, "1 device")].get(work, {}).get("median")
                for impl in ("tracejit", "jax")}
        for label, _, _ in configs:
            cols = []
            for impl in ("tracejit", "jax"):
                r = results[(impl, label)]
                cols.append(r[work]["median"] if work in r else None)
            text = [(_fmt(c) if c else f"{'failed':>12}") for c in cols]
            ups = [(f"{base[i] / c:11.2f}" if c and base[i] else f"{'—':>11}")
                   for i, c in zip(("tracejit", "jax"), cols)]
            print(f"{work:24} {label:22} {text[0]} {text[1]} {ups[0]} {ups[1]:>12}")
    for key, r in results.items():
        if "error" in r:
            print(f"{key}: {r['error'][-300:]}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["alternate-worker"]:
        alternate_worker(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["alternate"]:
        alternate(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
    else:
        main()
