"""Each benchmark program's first call at each first tier, forced (runtime/tiering.py): one fresh
process per row and tier, which compiles `x + 1` first (the backend's start-up), then times the
row's first call (wall and this process's CPU, ms; the compile helper's work is another
process's) with the tier forced: "unopt" (tiering.unoptimised_pays: IR O3 has not optimised, O0
code generation), "o0" (o0_pays: O3's optimised IR, O0 code generation), "o3" (O3 throughout),
or "model" (what the cost model picks). Each process also reports the model's inputs for each
program it compiled (run_elements, run_ops, IR lines) and the tier the model picks for it. The
tiers alternate in order round by round; medians and ranges are printed, and `--json PATH`
keeps every sample (the constants in tiering.py are fitted to them).

    python -m benchmarks.first_tiers [--rounds 3] [--tiers unopt,o0,o3] [--json PATH]
                                     ["row substring" ...]

Rows: benchmarks/workloads.py's and compile_scaling's chains ("chain sin 100",
"chain cumsum 500").
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import side_env

ROOT = Path(__file__).resolve().parent.parent
TIERS = ("unopt", "o0", "o3")


def _rows() -> list[str]:
    from benchmarks.compile_scaling import SIZES
    from benchmarks.workloads import WORKLOADS
    return [name for name, _ in WORKLOADS] + [f"chain {kind} {n}" for kind, sizes in
                                              SIZES.items() for n in sizes]


def _model_tier(jaxpr, lines: int, unoptimised_pays, o0_pays) -> str:
    if unoptimised_pays(jaxpr, lines):
        return "unopt"
    return "o0" if o0_pays(jaxpr, lines) else "o3"


def _one(row: str, tier: str) -> dict:
    """In this process: start-up, then the row's first call at `tier`."""
    import numpy as np

    import tracejit as jax
    import tracejit.numpy as jnp
    from benchmarks.compile_profile import STAGES, _patch, chains, other
    from benchmarks.workloads import WORKLOADS
    from tracejit import lax, random
    from tracejit.backend.llvm import jit_engine
    from tracejit.runtime import tiering
    jax.config.update("tracejit_persistent_cache", False)
    jax.jit(lambda x: x + 1)(np.float32(1)).block_until_ready()
    tiering.wait()  # (x + 1's final code: not in the row's first call)
    if row.startswith("chain "):
        _, kind, n = row.split()
        fn = jax.jit(chains(jnp)[kind](int(n)))
        args = (np.linspace(0, 1, 1000, dtype=np.float32),)
    else:
        build = next(b for name, b in WORKLOADS if name == row)
        fn, args = build(jax, jnp, lax, random)
    unoptimised_pays, o0_pays = tiering.unoptimised_pays, tiering.o0_pays
    programs = []

    def decide(jaxpr, lines):
        programs.append({"elements": tiering.run_elements(jaxpr), "ops": tiering.run_ops(jaxpr),
                         "lines": lines,
                         "model": _model_tier(jaxpr, lines, unoptimised_pays, o0_pays)})
        return tier if tier != "model" else programs[-1]["model"]
    tiering.unoptimised_pays = lambda jaxpr, lines: decide(jaxpr, lines) == "unopt"
    # (native.py asks o0_pays only where unoptimised_pays said no, of the same program)
    tiering.o0_pays = lambda jaxpr, lines: (programs[-1]["model"] if tier == "model"
                                            else tier) == "o0"
    modules = {"fast": 0, "o3": 0, "unopt": 0}
    load, first_tier = jit_engine.load, jit_engine.optimize_first_tier

    def counted_load(*a, fast=False, **k):
        modules["fast" if fast else "o3"] += 1
        return load(*a, fast=fast, **k)

    def counted_first_tier(*a, **k):
        modules["unopt"] += 1
        return first_tier(*a, **k)
    jit_engine.load, jit_engine.optimize_first_tier = counted_load, counted_first_tier
    timers: dict[str, float] = {}
    _patch(timers)  # (after the counters: its wrappers call them)
    w, t = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn(*args))
    timers["total"] = time.process_time() - t
    wall = time.perf_counter() - w
    timers["other"] = other(timers, timers["total"])
    return {"wall": wall, "cpu": timers["total"], "timers": timers, "programs": programs,
            "modules": modules, "stages": [s[0] for s in STAGES] + ["other"]}


def _run(row: str, tier: str) -> dict | None:
    env = side_env(TRACEJIT_PERSISTENT_CACHE="0")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.first_tiers", "--one", row, tier],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"{row} {tier}: failed\n{proc.stderr[-1500:]}", flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _range(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 1e3:.1f} ({min(values) * 1e3:.1f}-" \
           f"{max(values) * 1e3:.1f})"


def main(rows: list[str], rounds: int, tiers: tuple[str, ...], json_path: str | None) -> None:
    names = _rows()
    picked = [n for n in names if any(r in n for r in rows)] if rows else names
    samples: dict = {row: {tier: [] for tier in tiers} for row in picked}
    for r in range(rounds):
        for row in picked:
            order = tiers[r % len(tiers):] + tiers[:r % len(tiers)]
            for tier in order:
                result = _run(row, tier)
                if result is not None:
                    result["load"] = os.getloadavg()[0]
                    samples[row][tier].append(result)
        print(f"round {r + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print(f"{'program':>40} {'programs: elements/ops/lines -> model':>44} " +
          " ".join(f"{t + ' wall':>22} {t + ' cpu':>22}" for t in tiers))
    for row in picked:
        some = next((s for t in tiers for s in samples[row][t]), None)
        if some is None:
            continue
        inputs = "; ".join(f"{p['elements']:.3g}/{p['ops']:.3g}/{p['lines']}->{p['model']}"
                           for p in some["programs"])
        print(f"{row[:40]:>40} {inputs[:44]:>44} " + " ".join(
            f"{_range([s['wall'] for s in samples[row][t]]):>22} "
            f"{_range([s['cpu'] for s in samples[row][t]]):>22}" for t in tiers), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(samples, f)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        print(json.dumps(_one(args[1], args[2])))
        sys.exit()
    rounds, tiers, json_path = 3, TIERS, None
    while args and args[0].startswith("--"):
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--rounds":
            rounds = int(value)
        elif flag == "--tiers":
            tiers = tuple(value.split(","))
        elif flag == "--json":
            json_path = value
    main(args, rounds, tiers, json_path)
