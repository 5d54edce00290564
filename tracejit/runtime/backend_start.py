"""The native backend's start-up, begun by `import tracejit` on a thread of its own and joined by
the first compile (executable.compile_jaxpr): loading LLVM's library, starting LLVM
(backend/llvm_setup.py: its native target, the host CPU, the pass builder's target machine),
importing our backend, LLVM's first-use set-up (llvm_setup.warm_up) and reading the library
cache's key (disk_cache's source_digest). `import jax` pays its backend's start-up in the
import; tracejit paid it in the first call. The first two run while `import tracejit` goes on,
and without the GIL (ctypes releases it), so a second core does them beside the import; the
rest waits for the import's end and takes turns with the user's program (and takes no time from
a program that is waiting: for input, for a file, or for the next notebook cell).
Off for the `interpret` backend and with `tracejit_background_start` off
($TRACEJIT_BACKGROUND_START=0).

What it changes is when, never what: the thread does what the first compile would have, and
swallows any error, so a missing or broken llvmlite raises at the first compile as it did (the
failed import is retried there). llvmlite itself is imported by `import tracejit`, in the
importing thread, once NumPy is (`import_llvmlite`; the thread's start of LLVM waits for it): a
thread's import beside another's can deadlock where the two need each other's modules. Our
backend's modules the thread imports only after `import tracejit` has ended, under the
interpreter's import lock, begun only while no thread is importing anything: no thread then
holds a module's lock that it could wait for (a cycle of two threads' imports raises a deadlock
error in either), and another thread's import waits for it (without the GIL: no CPU spent).
While imports are under way it waits its turn; a join before it has begun calls it off, and the
joining thread imports as it would have. A fork joins it first (a child must not inherit a
half-done import or a held lock), and so does the interpreter's exit (nothing may be inside LLVM
while its static objects are destroyed)."""
from __future__ import annotations

import _imp
import atexit
import contextlib
import ctypes
import importlib.util
import os
import sys
import threading

_thread: threading.Thread | None = None
_go = threading.Event()  # `import tracejit` has ended, or a join called the start-up off
_stop = threading.Event()  # a join called it off
_llvmlite = threading.Event()  # `import tracejit` has imported llvmlite (or will not)
_setup = None  # backend/llvm_setup.py, once `import tracejit` has imported it
_MAX_PAUSE_S = 0.01  # the longest pause between two looks for a moment without imports


def start() -> None:
    """Begin the start-up on its thread (tracejit/__init__.py, first thing), unless the
    environment turns it off: this early there is no other configuration to read (the same
    variables set core/config.py's options, which the thread reads again before importing)."""
    global _thread
    if (_thread is not None or os.environ.get("TRACEJIT_BACKEND", "native") != "native"
            or os.environ.get("TRACEJIT_BACKGROUND_START", "1").lower()
            not in ("1", "true", "yes", "on")):
        return
    _thread = threading.Thread(target=_run, name="tracejit-backend-start", daemon=True)
    _thread.start()


def import_llvmlite() -> None:
    """Import llvmlite and backend/llvm_setup.py (tracejit/__init__.py, once NumPy is imported;
    ~10 ms of CPU, which the first call paid), so that the thread can start LLVM
    (llvm_setup.start) while the rest of the import goes on. Only with the thread; a failed
    import is left for the first compile to raise."""
    global _setup
    if _thread is not None:
        with contextlib.suppress(Exception):  # (out of sys.modules again: the compile retries)
            from ..backend import llvm_setup
            _setup = llvm_setup
        # and what the first compile's library cache reads its entries with (hmac, OpenSSL's
        # hashlib: ~3 ms of CPU), which the import had from NumPy's random package before
        import secrets  # noqa: F401
    _llvmlite.set()


def imported() -> None:
    """`import tracejit` has ended (tracejit/__init__.py, last thing): the thread may import."""
    _go.set()


def join() -> None:
    """Wait for the start-up to end, calling it off if it has not begun its imports: after
    this, the backend's modules are fully imported or not imported by that thread at all."""
    thread = _thread
    if thread is None or thread is threading.current_thread():
        return
    _stop.set()
    _go.set()
    _llvmlite.set()
    thread.join()


def _run() -> None:
    _load_llvm_library()
    _llvmlite.wait()
    if _setup is not None and not _stop.is_set():  # (a join waiting would pay it all the same)
        with contextlib.suppress(Exception):
            _setup.start()
    _go.wait()
    if _stop.is_set():
        return
    from ..core.config import config
    from ..core.imports import imports_in_flight  # (tracejit is imported by now)
    pause = 0.001
    while not _stop.is_set():
        if config.tracejit_backend != "native" or not config.tracejit_background_start:
            return
        _imp.acquire_lock()
        try:
            if not imports_in_flight():
                imported = _import_backend()
                break
        finally:
            _imp.release_lock()
        _stop.wait(pause)
        pause = min(2 * pause, _MAX_PAUSE_S)
    else:
        return
    if imported:
        with contextlib.suppress(Exception):  # (the first compile raises it again, as it did)
            from ..backend import llvm_setup
            llvm_setup.start()  # (done already, unless the import's llvmlite failed)
            if not _stop.is_set():  # (a compile waiting for it would pay more than it saves)
                llvm_setup.warm_up()
            if not _stop.is_set():  # the library cache's key (~1.5 ms; ~5 reading the sources)
                from .disk_cache import source_digest
                source_digest()


def _import_backend() -> bool:
    try:
        from . import native  # noqa: F401  (llvmlite, LLVM's library, our backend's modules)
    except Exception:  # noqa: BLE001  (out of sys.modules: the first compile retries, raises)
        return False
    return True


_llvm_library = None  # (held: llvmlite's own load of the library then finds it loaded)


def _load_llvm_library() -> None:
    """Load llvmlite's LLVM library (~180 MB: relocations and LLVM's static constructors, ~6 ms
    of CPU and more waiting for the disk) without importing llvmlite: no import lock is taken,
    and ctypes releases the GIL while the dynamic loader works, so this overlaps the rest of
    `import tracejit`."""
    global _llvm_library
    with contextlib.suppress(Exception):  # (llvmlite's import loads it, or says why not)
        spec = importlib.util.find_spec("llvmlite")
        if spec is None or not spec.submodule_search_locations:
            return
        name = {"darwin": "libllvmlite.dylib", "win32": "llvmlite.dll"}.get(sys.platform,
                                                                            "libllvmlite.so")
        path = os.path.join(spec.submodule_search_locations[0], "binding", name)
        if os.path.exists(path):
            _llvm_library = ctypes.CDLL(path)


# (register_at_fork runs `before` in the forking thread, before the fork takes the import lock)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=join)
atexit.register(join)
