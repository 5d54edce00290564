"""Summarises tools/array_api.sh runs: passed/failed/skipped per test file, and for two runs
the tests that pass in one and not the other (a test id is "file::test[params]")."""
import json
import sys
from pathlib import Path


def outcomes(run_dir: str) -> dict:
    """Maps each test id of a run to its outcome ('passed', 'failed', 'skipped', ...)."""
    result = {}
    for report in sorted(Path(run_dir).glob("test_*.json")):
        for test in json.loads(report.read_text())["tests"]:
            result[test["nodeid"]] = test["outcome"]
    return result


def counts(run: dict) -> dict:
    """Counts of each outcome."""
    total = {}
    for outcome in run.values():
        total[outcome] = total.get(outcome, 0) + 1
    return total


def main(dirs: list) -> None:
    runs = [outcomes(d) for d in dirs]
    for d, run in zip(dirs, runs):
        print(d, counts(run))
    if len(runs) == 2:
        a, b = runs
        only_a = sorted(t for t in a if a[t] == "passed" and b.get(t) != "passed")
        only_b = sorted(t for t in b if b[t] == "passed" and a.get(t) != "passed")
        print(f"passed only in {dirs[0]}: {len(only_a)}")
        print("\n".join("  " + t for t in only_a))
        print(f"passed only in {dirs[1]}: {len(only_b)}")
        print("\n".join("  " + t for t in only_b))


if __name__ == "__main__":
    main(sys.argv[1:])
