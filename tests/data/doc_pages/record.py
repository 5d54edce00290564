"""Records real JAX's results for the documentation pages in tests/libraries/doc_*.py (the
tests replay them: running the pages under JAX takes ~10-30 s each). Run from the repository
root with JAX installed:  python tests/data/doc_pages/record.py"""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
PAGES = sorted((HERE.parent.parent / "libraries").glob("doc_*.py"))

for page in PAGES:
    subprocess.run([sys.executable, str(page), str(HERE / f"{page.stem}.npz")], check=True,
                   env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    print("recorded", page.stem)
