"""Benchmarks: tracejit vs JAX (newest runnable: a Python 3.12 venv at .venv-jax312 if present,
else the test venv's JAX) vs NumPy where it applies, in one run. Prints medians and ratios.

    python -m benchmarks [--runs N] [substring ...]    (`compile`: the compile-scaling table
                                              only; `scaling`: 1 -> 2 devices and processes only)

With --runs N (N >= 2) both sides run N times, alternating, and the table shows the median of
each side's medians, the ratio of those, and the range of the N per-run ratios.

Then the compile-scaling table (benchmarks/compile_scaling.py); benchmarks/compile_profile.py
splits our compile time by stage.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from . import ROOT, jax_python, side_env


def _side(python: str, impl: str, only: list[str], module: str = "benchmarks.run_side") -> dict:
    env = side_env()
    # first calls are cold compiles on both sides (JAX's persistent cache is off by default)
    env["TRACEJIT_PERSISTENT_CACHE"] = "0"
    proc = subprocess.run([python, "-m", module, impl, *only], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"version": "unavailable", "rows": {}, "error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.2f} s "


def main(only: list[str], runs: int = 1) -> None:
    ours_runs, theirs_runs = [], []
    for _ in range(runs):   # alternating, so that a load change hits both sides alike
        ours_runs.append(_side(sys.executable, "tracejit", only))
        theirs_runs.append(_side(jax_python(), "jax", only))
    ours, theirs = ours_runs[-1], theirs_runs[-1]
    plain = _side(sys.executable, "numpy", only)
    print(f"tracejit {ours.get('version')} (Python {ours.get('python')}) vs "
          f"JAX {theirs.get('version')} (Python {theirs.get('python')}); "
          f"and NumPy {plain.get('version')}; ratios = other's time / tracejit's time "
          f"(>1: tracejit faster); OpenBLAS kernel (tracejit's BLAS): {ours.get('blas')}; "
          f"tracejit threads: {ours.get('threads')}; runs: {runs}; load average now: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    header = f"{'workload':38} {'tracejit':>11} {'JAX':>11} {'vs JAX':>7} " \
             f"{'range':>11} {'NumPy':>11} {'vs NumPy':>8} {'1st call tj':>12} " \
             f"{'1st call JAX':>12}"
    print(header)
    print("-" * len(header))
    for name in ours["rows"] | theirs["rows"]:
        a = [r["rows"].get(name, {}) for r in ours_runs]
        b = [r["rows"].get(name, {}) for r in theirs_runs]
        pairs = [(x, y) for x, y in zip(a, b) if "median" in x and "median" in y]
        if not pairs:
            err = a[-1].get("error") or b[-1].get("error") or ours.get("error") or \
                theirs.get("error") or "missing"
            print(f"{name:38} {'—':>11} {'—':>11} {'':>7}  ({err.strip()[-60:]})")
            continue
        ours_t = statistics.median(x["median"] for x, _ in pairs)
        theirs_t = statistics.median(y["median"] for _, y in pairs)
        ratios = [y["median"] / x["median"] for x, y in pairs]
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}" if len(ratios) > 1 else ""
        c = plain["rows"].get(name)
        np_cols = f"{_fmt(c['median'])} {c['median'] / ours_t:8.2f}" if c else \
            f"{'—':>11} {'':>8}"
        x, y = pairs[-1]
        print(f"{name:38} {_fmt(ours_t)} {_fmt(theirs_t)} {theirs_t / ours_t:7.2f} "
              f"{spread:>11} {np_cols} {_fmt(x['first']):>12} {_fmt(y['first']):>12}"
              f"{_busy([r for pair in pairs for r in pair])}")


def _busy(rows: list[dict]) -> str:
    """The warning for a row whose timing competed with other work: the load average above
    the CPUs, or the process getting under 3/4 of a CPU-second per wall-second (it waited for
    a core; every workload computes without sleeping)."""
    load = max(r.get("load", 0.0) for r in rows)
    cpus = min(r.get("cpus", 1) for r in rows)
    share = min(r.get("cpu_share", 1.0) for r in rows)
    reasons = ([f"load up to {load:.1f} on {cpus} CPUs"] if load > cpus + 0.5 else []) + \
        ([f"CPU down to {share:.0%} of wall"] if share < 0.75 else [])
    return f"  (machine busy: {', '.join(reasons)})" if reasons else ""


def compile_table() -> None:
    """First call (trace + compile) of growing unrolled chains, both sides: CPU seconds (the
    wall time counts other processes' load too)."""
    ours = _side(sys.executable, "tracejit", [], "benchmarks.compile_scaling")
    theirs = _side(jax_python(), "jax", [], "benchmarks.compile_scaling")
    print(f"\n{'compile scaling (first call)':38} {'tracejit CPU':>12} {'JAX CPU':>12} "
          f"{'ratio':>7} {'tracejit wall':>14} {'JAX wall':>12}")
    for name in ours["rows"] | theirs["rows"]:
        a, b = ours["rows"].get(name), theirs["rows"].get(name)
        if not a or not b:
            print(f"{name:38} {'—':>12} {'—':>12}  "
                  f"({(ours.get('error') or theirs.get('error') or 'missing')[-60:]})")
            continue
        print(f"{name:38} {_fmt(a['cpu']):>12} {_fmt(b['cpu']):>12} {a['cpu'] / b['cpu']:7.2f} "
              f"{_fmt(a['wall']):>14} {_fmt(b['wall']):>12}")


def _args(argv: list[str]) -> tuple[list[str], int]:
    if "--runs" not in argv:
        return argv, 1
    k = argv.index("--runs")
    try:
        runs = int(argv[k + 1])
    except (IndexError, ValueError):
        raise SystemExit("usage: python -m benchmarks [--runs N] [substring ...]") from None
    return argv[:k] + argv[k + 2:], max(runs, 1)


if __name__ == "__main__":
    if sys.argv[1:] == ["scaling"]:  # (1 -> 2 devices and processes: benchmarks/scaling.py)
        from benchmarks import scaling
        scaling.main()
        sys.exit()
    only, runs = _args(sys.argv[1:])
    if only != ["compile"]:
        main(only, runs)
    if not only or "compile" in only:
        compile_table()
