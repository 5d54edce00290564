"""Checks that need several CPU devices run in a process of their own: the test process has one
(TRACEJIT_NUM_CPU_DEVICES is read at start-up). The test file runs itself as a script there,
naming the check; the check prints "<check> ok" when it passed."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_check(test_file: str, check: str, devices: int = 4) -> None:
    """Run `check` of `test_file` (its __main__) in a process of `devices` CPU devices."""
    env = dict(os.environ, TRACEJIT_NUM_CPU_DEVICES=str(devices), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, test_file, check], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip().endswith(f"{check} ok")
