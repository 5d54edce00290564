"""The second tier of a compile, beneath native.py: a program whose first call runs code from
LLVM's O0 code generation (disk_cache.compile_ir's `tiered`: of O3's optimised IR, or of IR O3
has not optimised, its `unoptimised`) gets O3's code (O3's optimisation first, where skipped)
generated on this module's one thread, and runs it from the call after it is in place. The same
bits either way (jit_engine.fast_codegen_exact, unoptimised_exact); what changes is when the
time goes, never what is computed. Which first tier a program gets is weighed here
(unoptimised_pays, o0_pays). The code generation, and a skipped optimisation, run in a
helper process where one runs (compile_helper.py, by way of disk_cache.finish): here they would
hold llvmlite's one lock, and the next program's compile with it.
The on-disk cache stores final code only (disk_cache.finish), so the exit finishes what is
pending when that cache is on.

A program is `held` until its first call has returned (`release`): O3's code generation would
otherwise take a core from that call, which on two cores runs on both (logsumexp 4096^2's
rows). A program dropped, or anyone waiting (`wait`, the exit), releases it too.
The thread holds a program only while it works on it: one dropped before its turn is freed with
its code at once, and only its final code's disk entry is made then (with that cache on).
One program at a time: a fork waits for the one in hand (a child must not inherit LLVM inside
a compile or a held lock; the child starts a thread of its own for what is left), and so does
the interpreter's exit, after which nothing more is begun (nothing may be inside LLVM while
its static objects are destroyed)."""
from __future__ import annotations

import atexit
import collections
import contextlib
import math
import os
import threading
import warnings
import weakref

from ..compiler.fusion import fused_p
from ..compiler.rows import row_map_p
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..lax.control_flow import cond_p, scan_p, while_p
from . import compile_helper

_pending: collections.deque = collections.deque()  # (weak ref, finish, orphan), oldest first
_held: dict = {}  # weak ref -> its item, until the program's first call returns (release)
_ready = threading.Condition()  # guards _pending, _held, _outstanding, _closed, _thread
_busy = threading.Lock()  # held while a program's final code is made
_outstanding = 0  # submitted and not yet finished or skipped
_thread: threading.Thread | None = None
_closed = False


# Whether a first call runs O0 code: when what that may cost, O0_NS_PER_ELEMENT for each element
# its run reads or writes (`run_elements`), is at most what it saves, SAVED_NS_PER_LINE for each
# line of the program's IR (its kernels' included). Measured (CPU, one process, load ~2): O0 code
# ran 0.11 (sum 10M), 0.12 (softmax 4096^2), 0.17 (logsumexp 4096^2 rows), 0.03 (a 1000-vector
# scan) ns longer per such element, and its code generation saved 9-123 us a line, a median
# of ~20 (logsumexp 6.7 ms of 436 lines, softmax 4096^2 7.9 of 465, sum 10M 4.3 of 248, Newton
# 5.7 of 190, random.normal 42 of 337, a 10k-step 1000-vector scan 8.5 of 235). A loop's trip
# costs as much as TRIP_ELEMENTS elements more: a 10k-step scalar scan ran 6.4 ns a step longer
# (its few elements alone would say 0.8), a scalar fori_loop 2.7.
O0_NS_PER_ELEMENT = 0.15
SAVED_NS_PER_LINE = 20_000
TRIP_ELEMENTS = 40


def o0_pays(jaxpr: Jaxpr, ir_lines: int) -> bool:
    """Whether a first call of `jaxpr`, compiled from `ir_lines` lines of IR, is likely sooner
    with O0's code generation (its later calls get O3's either way)."""
    return O0_NS_PER_ELEMENT * run_elements(jaxpr) <= SAVED_NS_PER_LINE * ir_lines


# Whether a first call runs code generated at O0 from IR that O3 has not optimised either
# (jit_engine.optimize_first_tier: scalar, unvectorised, inlined math kept in memory): when its
# run's extra time, UNOPTIMISED_NS_PER_OP for each element of each operation it computes
# (`run_ops`), is at most what skipping O3's optimisation saves, SAVED_UNOPTIMISED_NS_PER_LINE
# a line of IR. Measured (first_call_profile, CPU, fresh processes, load ~4): O3's optimisation
# took 29-55 us a line (sin 10: 4.4 ms of 136 lines; softmax 1000^2 21 of 388; Newton 11 of
# 190; logsumexp 20 of 438); the unoptimised code ran longer by 0.5-1 ns an operation
# (elementwise chain 10M +204 ms for 37 weighted operations an element, softmax 1000^2 +4 ms,
# the MLP step +25 ms, relu 1M +6 ms), a transcendental function (COSTLY_OPS) some ten
# simple operations.
UNOPTIMISED_NS_PER_OP = 0.4
SAVED_UNOPTIMISED_NS_PER_LINE = 40_000
COSTLY_OPS = dict.fromkeys(
    ("exp", "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "logistic", "erf",
     "erfc", "erf_inv", "pow", "atan2", "asin", "acos", "atan", "sinh", "cosh", "asinh",
     "acosh", "atanh", "lgamma", "digamma", "cbrt", "rsqrt", "sqrt", "div", "rem"), 10)
COSTLY_OPS["threefry2x32"] = 80


def unoptimised_pays(jaxpr: Jaxpr, ir_lines: int) -> bool:
    """Whether a first call of `jaxpr`, compiled from `ir_lines` lines of IR, is likely sooner
    with neither O3's optimisation nor its code generation (later calls get O3's either
    way)."""
    return UNOPTIMISED_NS_PER_OP * run_ops(jaxpr) <= SAVED_UNOPTIMISED_NS_PER_LINE * ir_lines


def run_ops(jaxpr: Jaxpr) -> float:
    """An estimate of the element operations one run of `jaxpr` computes: as run_elements, but
    a fused kernel's elements each weighed by the operations of its body (COSTLY_OPS count as
    more than one)."""
    return _walk(jaxpr, _body_ops)


def _body_ops(eqn) -> float:
    if eqn.primitive is not fused_p:
        return 1
    return max(1, sum(_op_weight(e) for x in _bodies(eqn) for e in x.jaxpr.eqns))


def _op_weight(eqn) -> float:
    if eqn.primitive is fused_p:
        return _body_ops(eqn)
    return COSTLY_OPS.get(eqn.primitive.name, 1)


def _bodies(eqn) -> list[ClosedJaxpr]:
    return [x for value in eqn.params.values()
            for x in (value if isinstance(value, tuple) else (value,))
            if isinstance(x, ClosedJaxpr)]


def run_elements(jaxpr: Jaxpr) -> float:
    """An estimate of the elements one run of `jaxpr` reads and writes: each equation's
    operands and results (a fused kernel's, not its body's: those stay in registers), a scan's
    body its length times and a row_map's its rows times (each trip TRIP_ELEMENTS more), a
    cond's costliest branch; unbounded (inf) for a while_loop: its trips are unknown, and a
    long simulation in one first call would run 1-3x slower at O0 (6.4 ns a step more for a
    scalar loop) with no O3 code to move to until it returns."""
    return _walk(jaxpr, lambda eqn: 1)


def _walk(jaxpr: Jaxpr, weight) -> float:
    """run_elements' walk, each equation's elements times `weight(eqn)`."""
    total = 0
    for eqn in jaxpr.eqns:
        total += weight(eqn) * sum(math.prod(getattr(v.aval, "shape", ()))
                                   for v in (*eqn.invars, *eqn.outvars))
        if eqn.primitive is fused_p:
            continue
        bodies = [_walk(x.jaxpr, weight) for x in _bodies(eqn)]
        if not bodies:
            continue
        if eqn.primitive is while_p:
            return math.inf
        if eqn.primitive is scan_p:
            total += eqn.params["length"] * (sum(bodies) + TRIP_ELEMENTS)
        elif eqn.primitive is row_map_p:
            total += math.prod(eqn.params["rows"]) * (max(bodies) + TRIP_ELEMENTS)
        elif eqn.primitive is cond_p:
            total += max(bodies)
        else:
            total += sum(bodies)
    return total


def submit(program, finish, orphan=None, held: bool = False) -> None:
    """Have `finish(program)` run on the thread; if `program` is gone by its turn, `orphan()`
    instead where given (it stores the final code on disk: it must not hold the program).
    `held`: not before `release(program)` (or the program's end, or a `wait`)."""
    global _outstanding
    with _ready:
        if _closed or not _start():
            return
        if held:
            ref = weakref.ref(program, _release_ref)
            _held[ref] = (ref, finish, orphan)
        else:
            _pending.append((weakref.ref(program), finish, orphan))
        _outstanding += 1
        _ready.notify_all()


def release(program) -> None:
    """Let the thread begin a held program's final code (its first call has returned)."""
    _release_ref(weakref.ref(program))


def _release_ref(ref) -> None:
    # (also the held ref's callback: the program went first; `_ready` is reentrant)
    with _ready:
        item = _held.pop(ref, None)
        if item is not None:
            _queue([item])


def _queue(items: list) -> None:
    """(Under `_ready`.) Released items onto the queue, for the thread: started here if need be
    (a forked child has none until then); a process out of threads keeps their O0 code."""
    global _outstanding
    if _closed or not _start():
        _outstanding = max(_outstanding - len(items), 0)
        _ready.notify_all()
        return
    _pending.extend(items)
    _ready.notify_all()


def wait() -> None:
    """Return when every program submitted so far is finished (or gone), held ones included:
    for tests, and for a caller that wants final code everywhere."""
    with _ready:
        if _held:
            items = list(_held.values())
            _held.clear()
            _queue(items)
        while _outstanding:
            _ready.wait()


def settle() -> None:
    """Return when the thread holds no program (clear_caches: what it dropped is freed)."""
    with _busy:
        pass


def _start() -> bool:
    """Whether the thread runs (started now if not; a process out of threads keeps O0 code)."""
    global _thread
    if _thread is None:
        thread = threading.Thread(target=_run, name="tracejit-tiering", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            return False
        _thread = thread
    return True


def _run() -> None:
    global _outstanding
    while True:
        with _ready:
            while not _pending:
                _ready.wait()
            item = _pending.popleft()
        try:
            with _busy:
                _finish(*item)
        finally:
            del item
            with _ready:
                _outstanding = max(_outstanding - 1, 0)
                _ready.notify_all()


def _finish(ref, finish, orphan) -> None:
    if _closed:
        return
    program = ref()
    try:
        if program is not None:
            finish(program)
        elif orphan is not None:
            orphan()
    except Exception as err:  # noqa: BLE001  (its O0 code stays: the same bits)
        _warn_once(err)


@contextlib.contextmanager
def paused():
    """Hold the thread before its next program (tests: calls meanwhile run the O0 code). Not
    across a fork, `wait`, `settle` or clear_caches, which wait for the thread."""
    with _busy:
        yield


_warned = False


def _warn_once(err: Exception) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"tracejit could not make a program's final code, which keeps running its "
                      f"first tier's (the same results, slower): {err!r}", RuntimeWarning,
                      stacklevel=2)


def _close() -> None:
    """The interpreter's exit: with the persistent cache on, finish what is pending first (its
    entries are stored then, for the next process to load, as without tiers; the same time as
    compiling it at O3 at once would have taken; no compile helper is started for it); then
    begin nothing more, and end the helper."""
    global _closed, _outstanding
    from ..core.config import config
    compile_helper.start_none()
    if config.tracejit_persistent_cache:
        wait()
    with _ready:
        _closed = True
        _pending.clear()
        _held.clear()
        _outstanding = 0
        _ready.notify_all()
    _busy.acquire()  # (never released: the thread, a daemon, stops here until the end)
    compile_helper.close()  # (idle now: it exits at once)


def _before_fork() -> None:
    _busy.acquire()  # (the program in hand is finished first)
    _ready.acquire()


def _after_fork_parent() -> None:
    _ready.release()
    _busy.release()


def _after_fork_child() -> None:
    global _busy, _ready, _thread, _outstanding
    # the parent's thread is not in the child; one it had taken off the queue and not begun
    # keeps its O0 code here
    _busy, _ready, _thread = threading.Lock(), threading.Condition(), None
    compile_helper.after_fork_child()
    _outstanding = len(_pending) + len(_held)
    if _pending and not _closed:
        _start()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                        after_in_child=_after_fork_child)
atexit.register(_close)
