"""Ctrl-C during native code (runtime side): while the main thread runs a program that polls the
interrupt flag (backend/llvm/interrupt.py), SIGINT goes to a native handler that sets the flag;
the program returns at its next loop iteration and the call raises KeyboardInterrupt through
Python's own handler. Compiles run on a worker thread so that the main thread stays free to
take the signal."""
from __future__ import annotations

import _signal  # (not `signal`: its enums are ~0.5 ms of the first compile's CPU)
import atexit
import ctypes
import sys
import threading
from typing import Callable, TypeVar

from ..backend.llvm import interrupt

T = TypeVar("T")


class _SigAction(ctypes.Structure):  # glibc's struct sigaction on Linux
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


_SA_SIGINFO = 4
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_current = _SigAction()  # (the main thread's scratch for reading SIGINT's action)
_current_ref = ctypes.byref(_current)


def _chain_in_front() -> bool:
    """Make sure the native handler is SIGINT's, in front of the C handler Python installed: it
    calls that one whenever no native call is running (interrupt.depth is 0). It stays there
    between calls; `signal.signal` puts Python's back (also when it sets the same handler
    again), so every call reads SIGINT's action (one sigaction) and chains again when it is not
    ours: one system call a call, where installing and restoring took two (~7 us here). False
    where the handler is not chainable (a three-argument one, SIG_DFL, SIG_IGN)."""
    if _libc.sigaction(_signal.SIGINT, None, _current_ref) != 0:
        return False
    native = interrupt.handler_address()
    if _current.handler == native:
        return True
    if _current.flags & _SA_SIGINFO or _current.handler in (None, 0, 1):
        return False
    interrupt.chain.value = _current.handler
    _displaced[:] = [_current.handler, _current.mask[:], _current.flags]
    new = _SigAction()
    new.handler, new.mask, new.flags = native, _current.mask, _current.flags
    return _libc.sigaction(_signal.SIGINT, ctypes.byref(new), None) == 0


_displaced: list = []  # (handler, mask, flags) of the action the native handler went in front of


@atexit.register
def _unchain() -> None:
    """Put the displaced handler back at exit, before the native handler's code is freed."""
    if _libc is None or not _displaced or \
            _libc.sigaction(_signal.SIGINT, None, _current_ref) != 0 or \
            _current.handler != interrupt.handler_address():
        return
    old = _SigAction()
    old.handler, old.flags = _displaced[0], _displaced[2]
    old.mask[:] = _displaced[1]
    _libc.sigaction(_signal.SIGINT, ctypes.byref(old), None)


class NativeSigint:
    """`with NativeSigint() as s:` around a native call; afterwards `s.interrupted` says whether
    the program returned early. Outside the main thread, or where SIGINT is not handled by
    Python (ignored, default), or off Linux, it does nothing (the call runs to its end)."""
    __slots__ = ("_active", "interrupted")

    def __enter__(self) -> "NativeSigint":
        self._active = False
        self.interrupted = False
        # (_signal.getsignal: signal.getsignal converts the handler to its enum by raising and
        # catching a ValueError, ~4 us of every call of a polling program; 0.05 us without)
        if _libc is None or threading.current_thread() is not threading.main_thread():
            return self
        if not callable(_signal.getsignal(_signal.SIGINT)) or not _chain_in_front():
            return self
        if interrupt.depth.value == 0:
            interrupt.clear()
        interrupt.depth.value += 1  # (nested: a callback may run a polling program inside)
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        if not self._active:
            return
        interrupt.depth.value -= 1
        self.interrupted = interrupt.is_set()
        interrupt.clear()


def deliver_interrupt() -> None:
    """After a program left early: hand the SIGINT to Python's handler (KeyboardInterrupt by
    default); the computation was abandoned, so a handler that returns still ends the call."""
    _signal.raise_signal(_signal.SIGINT)
    raise KeyboardInterrupt


def run_interruptibly(work: Callable[[], T]) -> T:
    """work() on a worker thread while the main thread waits in short, interruptible joins (a
    long LLVM compile then yields to Ctrl-C within ~0.05 s; the worker finishes on its own and
    its result may serve a later call). Off the main thread: work() directly."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    box: dict = {}

    def run():
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread)
            box["error"] = e
    t = threading.Thread(target=run, name="tracejit-compile", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.05)
    if "error" in box:
        raise box["error"]
    return box["value"]
