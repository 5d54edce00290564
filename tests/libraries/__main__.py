"""`python -m tests.libraries [NAME ...]`: record real JAX's results of the library programs
(all of them when no NAME is given) for tests/libraries/__init__.py's run_both to reuse."""
import sys
import tempfile
from pathlib import Path

from tests.libraries import HERE, record


def main(names: list[str]) -> None:
    names = names or sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"recorded {record(name, Path(tmp))}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
