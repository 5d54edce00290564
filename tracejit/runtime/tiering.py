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
pending when that cache is on, for up to `tracejit_exit_compile_seconds` (what is left then is
not stored: the next process compiles it again, and stores what it finishes).

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
import time
import warnings
import weakref

import numpy as np

from ..compiler.fusion import fused_p
from ..compiler.rows import row_map_p
from ..core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from ..lax.control_flow import cond_p, scan_p, while_p
from . import compile_helper

_pending: collections.deque = collections.deque()  # (weak ref, finish, orphan), oldest first
_held: dict = {}  # weak ref -> its item, until the program's first call returns (release)
_ready = threading.Condition()  # guards _pending, _held, _outstanding, _closed, _thread
_busy = threading.Lock()  # held while a program's final code is made
_outstanding = 0  # submitted and not yet finished or skipped
_thread: threading.Thread | None = None
_closed = False


# The first tier a program's first call gets is the one of three whose estimate, against O3
# throughout, is least (`unoptimised_pays`, else `o0_pays`, else O3): each tier's run costs so
# much more and its compile so much less. All measured by `python -m benchmarks.first_tiers`
# (every benchmark row and compile-scaling chain, each tier forced, fresh processes, CPU ms,
# medians of 3, tiers alternating, load 2-3.6).
#
# O0's code generation of O3's optimised IR (`o0_pays`): its run costs O0_NS_PER_ELEMENT more
# for each element it reads or writes (`run_elements`), its code generation SAVED_NS_PER_LINE
# less for each line of the program's IR (its kernels' included). Measured: runs longer by
# 0.06-0.2 ns such an element where runs are long (softmax 4096^2 +9.5 ms of 1.0e8 elements,
# logsumexp 4096^2 rows +6.9 of 3.4e7, scan with xs/ys +3.3 of 3.0e7, the fixed-point
# 1000-vector scan +1.7 of 2.1e7, the elementwise chain 10M +3.6 of 2e7, SDE 100k +1.8 of 1.9e7,
# sum 10M +0.7 of 1e7; random.normal 0.58, softmax 1000^2 0.36), ~0.1 the median; code
# generation saved 11-156 us a line, ~30 the median (softmax 4096^2 12.3 ms of 388 lines,
# logsumexp 11.3 of 437, scan with xs/ys 10.1 of 176, Newton 9.8 of 190, sum 10M 6.4 of 427,
# random.normal 54 of 344, the chains of 500-2000 sin/cumsum 11-13, CNN 88 of 3197). Not seen by
# it: a long chain in registers (3000 `sin` over 1000 elements ran +16 ms at O0 for 1.9e5
# elements: that row gets the unoptimised tier) and a cumsum's serial loop (~4 ns an element).
# A loop's trip costs as much as TRIP_ELEMENTS elements more: a 10k-step scalar scan ran 6.4 ns
# a step longer (its few elements alone would say 0.8), a scalar fori_loop 2.7.
O0_NS_PER_ELEMENT = 0.1
SAVED_NS_PER_LINE = 30_000
TRIP_ELEMENTS = 40


def o0_pays(jaxpr: Jaxpr, ir_lines: int) -> bool:
    """Whether a first call of `jaxpr`, compiled from `ir_lines` lines of IR, is likely sooner
    with O0's code generation of O3's optimised IR (its later calls get O3's either way)."""
    return _o0_estimate(jaxpr, ir_lines) <= 0


def _o0_estimate(jaxpr: Jaxpr, ir_lines: int) -> float:
    """O0 code generation's first call against O3's, ns (less is sooner)."""
    return O0_NS_PER_ELEMENT * run_elements(jaxpr) - SAVED_NS_PER_LINE * ir_lines


# Code generated at O0 from IR that O3 has not optimised either (`unoptimised_pays`;
# jit_engine.optimize_first_tier: scalar, unvectorised, inlined math kept in memory): its run
# costs UNOPTIMISED_NS_PER_OP more for each element of each operation it computes (`run_ops`),
# its compile SAVED_UNOPTIMISED_NS_PER_LINE less a line of IR than O3's optimisation and code
# generation. Measured (as above): runs longer by 0.2-0.4 ns an operation where runs are long
# (softmax 4096^2 +108 ms of 5.0e8, logsumexp +102 of 2.4e8, the elementwise chain +200 of
# 7.4e8, random.normal +360 of 9.9e8, the 1000-vector scans +81 of 2.2e8 and +82 of 4.2e8, the
# chains of 1000 and 3000 `sin` +4.5 of 2e7 and +13 of 6e7, the MLP step +8.7 of 2.8e7,
# softmax 1000^2 +6.9 of 3.0e7), ~0.25 the median; SDE 100k 0.06, sum 10M 0.13; a cumsum's
# serial loop ~5 (its saving is the larger there); its compile saved 11-347 us a line, ~70
# the median (softmax 1000^2 35 ms of 388 lines, the MLP step 54 of 745, Newton 21 of 190,
# logsumexp 29 of 437, sum 10M 20 of 427, the 3000 `sin` 19 of 595, SDE 100k 37 of 611, the
# chains of 500-2000 cumsum 11-15, random.normal 119 of 344). A transcendental function
# (COSTLY_OPS) counts as some ten simple operations.
UNOPTIMISED_NS_PER_OP = 0.25
SAVED_UNOPTIMISED_NS_PER_LINE = 70_000
COSTLY_OPS = dict.fromkeys(
    ("exp", "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "logistic", "erf",
     "erfc", "erf_inv", "pow", "atan2", "asin", "acos", "atan", "sinh", "cosh", "asinh",
     "acosh", "atanh", "lgamma", "digamma", "cbrt", "rsqrt", "sqrt", "div", "rem"), 10)
COSTLY_OPS["threefry2x32"] = 80
# Heavier still, and weighed where their equation stands alone too (a kernel of one
# operation): polygamma and zeta, seven float64 powers an element (the unoptimised tier's first
# call of polygamma(1, x) over 2^20 float32 took 360 ms of CPU, O0's code generation of O3's
# IR 216), and an iterative op (Primitive.iterative: ITERATIVE_OPS), whose loops the unoptimised
# tier runs one element at a time (the vectoriser's variants unused: gammainc of 2^20 335
# against 110 ms; betainc of 2^16 46 against 134, where O3's optimisation of lgamma, log and
# exp costs more than the loops save). (Other lone operations count as one: weighing them too
# moved SDE 100k to O0's tier, 50 -> 70 ms of CPU.)
HEAVY_OPS = {"polygamma": 400, "zeta": 400}
ITERATIVE_OPS = 250


def unoptimised_pays(jaxpr: Jaxpr, ir_lines: int) -> bool:
    """Whether a first call of `jaxpr`, compiled from `ir_lines` lines of IR, is likely sooner
    with neither O3's optimisation nor its code generation than with both, and than with O0's
    code generation of O3's IR (later calls get O3's code either way)."""
    estimate = UNOPTIMISED_NS_PER_OP * run_ops(jaxpr) - SAVED_UNOPTIMISED_NS_PER_LINE * ir_lines
    return estimate <= min(0.0, _o0_estimate(jaxpr, ir_lines))


def run_ops(jaxpr: Jaxpr) -> float:
    """An estimate of the element operations one run of `jaxpr` computes: as run_elements, but
    a fused kernel's elements each weighed by the operations of its body (COSTLY_OPS count as
    more than one)."""
    return _walk(jaxpr, _body_ops)


def _body_ops(eqn) -> float:
    if eqn.primitive is not fused_p:
        return _heavy(eqn) or 1
    return max(1, sum(_op_weight(e) for x in _bodies(eqn) for e in x.jaxpr.eqns))


def _heavy(eqn) -> float:
    """A HEAVY_OPS or iterative operation's weight, else 0."""
    return ITERATIVE_OPS if eqn.primitive.iterative else HEAVY_OPS.get(eqn.primitive.name, 0)


def _op_weight(eqn) -> float:
    if eqn.primitive is fused_p:
        return _body_ops(eqn)
    return _heavy(eqn) or COSTLY_OPS.get(eqn.primitive.name, 1)


def _bodies(eqn) -> list[ClosedJaxpr]:
    return [x for value in eqn.params.values()
            for x in (value if isinstance(value, tuple) else (value,))
            if isinstance(x, ClosedJaxpr)]


def run_elements(jaxpr: Jaxpr) -> float:
    """An estimate of the elements one run of `jaxpr` reads and writes: each equation's
    operands and results (a fused kernel's, not its body's: those stay in registers -- unless
    its body's values are larger, `_elements`); an
    equation with bodies, by its bodies alone, whose equations read its operands and write its
    results (counting them at it as well counted softmax 4096^2's 6 reads and writes an element
    as 8): a scan's body its length times and a row_map's its rows times (each trip
    TRIP_ELEMENTS more), a while_loop's (body and condition) as many times as while_trips
    bounds its trips, a cond's costliest branch. Unbounded (inf) for a while_loop whose trips
    have no bound before it runs: a long simulation in one first call would run 1-3x slower
    at O0 (6.4 ns a step more for a scalar loop) with no O3 code to move to until it
    returns."""
    return _walk(jaxpr, lambda eqn: 1)


def while_trips(eqn) -> float:
    """A bound of a while_loop's trips, known before it runs (inf where there is none): its
    condition is a counter's comparison with a constant (`i < n`, `i <= n`, `n > i`, ...),
    or a conjunction (`&`) of conditions one of which is such, where the counter is a carry
    that starts at a constant and that the body steps by a constant towards the bound (`i + 1`,
    `i - 2`): the counted loops users write with a `while_loop` (`i < max_iter & err > tol`).
    A constant is a literal, or a carry that starts at one and the body passes on unchanged."""
    cond, body = eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    init = eqn.invars[cn + bn:]
    carry_in, carry_out = body.jaxpr.invars[bn:], body.jaxpr.outvars
    cond_carry = {v: k for k, v in enumerate(cond.jaxpr.invars[cn:])}
    made = {v: e for e in cond.jaxpr.eqns for v in e.outvars}

    def constant(v):  # a number known before the loop runs, or None
        if isinstance(v, Literal):
            return v.val.item()
        k = cond_carry.get(v)
        if k is not None and carry_out[k] is carry_in[k] and isinstance(init[k], Literal):
            return init[k].val.item()
        return None

    def step(k):  # what the body adds to carry k each trip, or None
        e = next((e for e in body.jaxpr.eqns if carry_out[k] in e.outvars), None)
        if e is None or e.primitive.name not in ("add", "sub") or \
                not isinstance(init[k], Literal) or not np.issubdtype(init[k].aval.dtype,
                                                                       np.integer):
            return None
        a, b = e.invars
        if e.primitive.name == "add" and b is carry_in[k]:
            a, b = b, a
        if a is not carry_in[k] or not isinstance(b, Literal):
            return None
        return b.val.item() * (1 if e.primitive.name == "add" else -1)

    def bound(v) -> float:
        e = made.get(v)
        if e is None:
            return math.inf
        name = e.primitive.name
        if name == "and":
            return min(bound(x) for x in e.invars)
        if name == "convert_element_type" and e.invars[0].aval.dtype == np.bool_:
            return bound(e.invars[0])
        if name not in _FLIPPED:
            return math.inf
        a, b = e.invars
        return min(counted(a, name, b), counted(b, _FLIPPED[name], a))  # (n > i: i < n)

    def counted(counter, name: str, limit) -> float:  # the trips of `counter name limit`
        k, limit = cond_carry.get(counter), constant(limit)
        s = None if k is None or limit is None else step(k)
        if not s or (s > 0) != (name in ("lt", "le")):
            return math.inf
        span = (limit - init[k].val.item()) * (1 if s > 0 else -1) + (name in ("le", "ge"))
        return max(0, -(-span // abs(s)))

    return bound(cond.jaxpr.outvars[0])


_FLIPPED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}


def _walk(jaxpr: Jaxpr, weight) -> float:
    """run_elements' walk, each equation's elements times `weight(eqn)`."""
    total = 0
    for eqn in jaxpr.eqns:
        bodies = [] if eqn.primitive is fused_p else [_walk(x.jaxpr, weight)
                                                     for x in _bodies(eqn)]
        if not bodies:
            total += weight(eqn) * _elements(eqn)
            continue
        if eqn.primitive is while_p:
            trips = while_trips(eqn)
            if trips == math.inf:
                return math.inf
            total += trips * (sum(bodies) + TRIP_ELEMENTS)
        elif eqn.primitive is scan_p:
            total += eqn.params["length"] * (sum(bodies) + TRIP_ELEMENTS)
        elif eqn.primitive is row_map_p:
            total += math.prod(eqn.params["rows"]) * (max(bodies) + TRIP_ELEMENTS)
        elif eqn.primitive is cond_p:
            total += max(bodies)
        else:
            total += sum(bodies)
    return total


def _elements(eqn) -> int:
    """The elements an equation reads and writes -- or, for a kernel whose body computes larger
    values in registers (a reduction of a broadcast comparison: jnp.isin of 100,000 values in
    1,000, whose first call ran 100M comparisons in unoptimised code, 0.53 s against 5 ms at
    O3), its largest such value's."""
    def size(v) -> int:
        return math.prod(getattr(v.aval, "shape", ()))
    io = sum(size(v) for v in (*eqn.invars, *eqn.outvars))
    if eqn.primitive is not fused_p:
        return io
    return max([io] + [size(v) for x in _bodies(eqn) for e in x.jaxpr.eqns for v in e.outvars])


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


def wait(deadline: float | None = None) -> None:
    """Return when every program submitted so far is finished (or gone), held ones included:
    for tests, and for a caller that wants final code everywhere; or at `deadline`
    (time.monotonic's) if that comes first."""
    with _ready:
        if _held:
            items = list(_held.values())
            _held.clear()
            _queue(items)
        while _outstanding:
            if deadline is None:
                _ready.wait()
            elif (left := deadline - time.monotonic()) > 0:
                _ready.wait(left)
            else:
                return


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
    """The interpreter's exit: with the persistent cache on, finish what is pending first, for
    up to `tracejit_exit_compile_seconds` (its entries are stored then, for the next process to
    load, as without tiers; no compile helper is started for it); then begin nothing more,
    finish the program in hand, and end the helper. A script of hundreds of programs each
    called once would otherwise wait at its exit for all their O3 code (tests/libraries/
    several_axes.py: 26 s of run, then 17 s of exit)."""
    global _closed, _outstanding
    from ..core.config import config
    compile_helper.start_none()
    if config.tracejit_persistent_cache:
        wait(time.monotonic() + float(config.tracejit_exit_compile_seconds))
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
