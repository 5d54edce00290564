"""`python -m tests.mpi [NAME ...]`: record real JAX's results of the scripts tests/test_mpi.py
also runs under JAX (all of them when no NAME is given)."""
import sys
import tempfile
from pathlib import Path

from tests.mpi import JAX_SCRIPTS, record


def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or JAX_SCRIPTS:
            print(f"recorded {record(name, Path(tmp))}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
