"""`python -m tracejit SCRIPT.py [args]` and `python -m tracejit -m MODULE [args]`: run a JAX
program or library unchanged, as `python` would, with `jax` resolved to tracejit (alias.py).
Part of the package face: it only calls alias_jax and then Python's own runpy.
"""
from __future__ import annotations

import os
import runpy
import sys
import zipfile

from .alias import alias_jax

USAGE = """\
usage: python -m tracejit SCRIPT.py [args ...]
       python -m tracejit -m MODULE [args ...]

Runs the script or module as `python` would, with `import jax` and `import jax.X` giving
tracejit and tracejit.X (even where real JAX is installed)."""


def run_script(path: str, args: list[str]) -> None:
    """`python PATH args` with jax aliased: the script's argv, its directory first on sys.path
    (for a directory or zip file with a __main__.py, runpy puts the path itself there)."""
    if not os.path.exists(path):
        print(f"{sys.executable}: can't open file {os.path.abspath(path)!r}: "
              f"[Errno 2] No such file or directory", file=sys.stderr)
        raise SystemExit(2)
    alias_jax()
    sys.argv = [path, *args]
    if not sys.flags.safe_path:  # under `python -P` neither the cwd nor the script's dir is there
        if os.path.isfile(path) and not zipfile.is_zipfile(path):
            sys.path[0] = os.path.dirname(os.path.realpath(path))
        else:
            del sys.path[0]
    runpy.run_path(path, run_name="__main__")


def run_module(name: str, args: list[str]) -> None:
    """`python -m NAME args` with jax aliased; sys.path[0] stays the working directory, as
    under `python -m`, and runpy sets argv[0] to the module's file."""
    alias_jax()
    sys.argv = [name, *args]
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def main(argv: list[str]) -> int:
    """The command line after `python -m tracejit`; returns the exit status when the program
    itself did not exit."""
    if not argv or argv[0] == "-m" and len(argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "-m":
        run_module(argv[1], argv[2:])
    else:
        run_script(argv[0], argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
