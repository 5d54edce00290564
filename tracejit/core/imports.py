"""The import system's state, for code that imports under the interpreter's import lock: the
native backend's start-up thread (runtime/backend_start.py) and SciPy's BLAS loader
(backend/llvm/blas.py)."""
from __future__ import annotations

import importlib._bootstrap


def imports_in_flight() -> bool:
    """Whether any thread is importing a module now: importlib keeps a lock per module being
    imported, and drops it when the import ends (a Python without that table counts as yes).
    Under the import lock (`_imp.acquire_lock()`) the answer holds until it is released: no
    thread can begin an import meanwhile."""
    locks = getattr(importlib._bootstrap, "_module_locks", None)
    return locks is None or any(ref() is not None for ref in list(locks.values()))
