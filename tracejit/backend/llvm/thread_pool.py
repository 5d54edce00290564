"""Our own thread pool for generated code (backend side): persistent worker pthreads written in
LLVM IR, and `parallel_for(body, ctx, n_chunks)`, which generated kernels call with an outlined
body `void body(i8* ctx, i64 chunk)`. No Python and no C compiler: the pool is IR like a kernel.

How a call runs: the caller publishes the job (body, ctx, chunk count) under a sequence number
`gen` (odd while it is being written, even once it is published), wakes sleeping workers with a
futex, and then takes chunks itself. Each of the T threads has a range of its own (thread s:
chunks [s*n/T, (s+1)*n/T), the caller's first) and claims its next chunk there with one atomic
add on a counter only it uses until it runs dry; then it claims from the others' ranges in turn
(a late or descheduled thread's chunks are run by the others). Which thread runs a chunk depends
on timing, what the chunk computes does not: each writes its own outputs. A range is run
forwards in one call and backwards in the next, so a thread starts on the data it touched last
(still in its own L2, and in L3 the part of an array larger than L3 that stayed). Each thread
counts the chunks it ran on its own line too, which the caller sums while it waits. Before, one
shared counter was claimed per chunk and one per chunk counted done: the two cache lines moved
between the cores with nearly every chunk (~0.2 us each way on the development VM), and which
core's cache held a chunk's data changed from call to call. The call returns when all chunks
are done. A worker that wakes late holds a
reference (`refs`) while it looks at the job, and the next publish waits for the references to
drop, so a late worker never reads a half-written job nor runs a finished one. Workers spin
briefly, then sleep in the kernel; at once when they find themselves on the CPU the caller
published from (the caller is then ready behind them: see _STACKED_CHECK).

Nested calls (a body that calls parallel_for) and calls from a second thread while the pool is
busy run inline on the calling thread (no oversubscription). A set interrupt flag
(interrupt.py) makes every thread skip its remaining chunks. Threads are created on the first
parallel call, sized by `tracejit_num_threads` (the caller is one of them), joined at exit, and
forgotten in a forked child (which creates its own on its next parallel call). A failed
pthread_create leaves fewer workers (with none, calls run inline); bodies are generated code
with no error exit, so every claimed chunk is counted done and no caller waits forever."""
from __future__ import annotations

import atexit
import ctypes
import functools
import os
import platform
import threading

from llvmlite import ir

from ...core.config import config
from .blas import POOL_BUSY_SYMBOL, _thread_cap
from .interrupt import _bind_flag
from .types import I8, I32, I64

SYMBOL = "tracejit_parallel_for"
_SHUTDOWN = "tracejit_pool_shutdown"
_MAX_WORKERS = 255
_SPINS = 4000          # pause-loop turns (~100 µs) a worker waits before sleeping
_YIELD_AFTER = 2000    # turns a waiting caller spins before it yields the core each turn
# A spinning worker checks every _STACKED_CHECK turns (~1.6 µs) whether it runs on the CPU the
# caller published the last job from, and if so sleeps at once. When another process holds one
# of two CPUs, the scheduler can stack the caller and the woken worker on the other: the worker
# then ran the whole job and spun its ~100 µs with the caller ready behind it (softmax 1000²:
# ~290 µs a call, one thread alone ~200). Yielding the core there instead (sched_yield) lost the
# worker's share of its CPU to the other processes whenever they were ready (calls it could
# have halved ran at one thread's speed).
_STACKED_CHECK = 64
_NEXT, _DONE = 0, 1    # a thread slot's words (job_slots)
# futex(2) through syscall(2): its number per architecture; FUTEX_*_PRIVATE operations
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine(), 202)
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129

I8P = I8.as_pointer()
BODY_TYPE = ir.FunctionType(ir.VoidType(), [I8P, I64])
# the globals Python writes: threads wanted (caller included), and state a forked child resets
_WANTED, _WORKERS, _BUSY, _REFS, _SLEEPERS = ("tracejit_pool_wanted", "tracejit_pool_workers",
                                              POOL_BUSY_SYMBOL, "tracejit_pool_refs",
                                              "tracejit_pool_sleepers")


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _c64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


class _Pool:
    """The pool's module while it is being built: its globals and libc declarations."""

    def __init__(self):
        m = self.module = ir.Module(name="tracejit_thread_pool")

        def glob(name, ty, value=0, linkage=""):
            g = ir.GlobalVariable(m, ty, name)
            g.initializer = ir.Constant(ty, value)
            g.linkage = linkage
            g.align = 64  # each on a cache line of its own: the counters are contended
            return g
        self.wanted = glob(_WANTED, I64, 1)
        self.workers = glob(_WORKERS, I32)
        self.busy = glob(_BUSY, I32)
        self.refs = glob(_REFS, I32)
        self.sleepers = glob(_SLEEPERS, I32)
        self.gen = glob("gen", I32, 0, "internal")
        self.shutdown = glob("shutdown", I32, 0, "internal")
        self.job_fn = glob("job_fn", I8P, None, "internal")
        self.job_ctx = glob("job_ctx", I8P, None, "internal")
        self.job_n = glob("job_n", I64, 0, "internal")
        # a cache line per thread slot s: [_NEXT] claims range s's chunks, [_DONE] counts the
        # chunks thread s ran (written by it alone)
        self.job_slots = glob("job_slots", ir.ArrayType(ir.ArrayType(I64, 8), _MAX_WORKERS + 1),
                              None, "internal")
        self.job_threads = glob("job_threads", I64, 0, "internal")
        self.job_backward = glob("job_backward", I64, 0, "internal")
        self.job_limit = glob("job_limit", I32, 0, "internal")
        self.job_cpu = glob("job_cpu", I32, -1, "internal")  # the caller's CPU at publish
        self.tids = glob("tids", ir.ArrayType(I64, _MAX_WORKERS), None, "internal")
        flag = ir.GlobalVariable(m, I32, _bind_flag())
        flag.linkage = "external"
        self.flag = flag
        worker_ty = ir.FunctionType(I8P, [I8P])
        self.pthread_create = ir.Function(m, ir.FunctionType(
            I32, [I64.as_pointer(), I8P, worker_ty.as_pointer(), I8P]), "pthread_create")
        self.pthread_join = ir.Function(m, ir.FunctionType(I32, [I64, I8P.as_pointer()]),
                                        "pthread_join")
        self.sched_yield = ir.Function(m, ir.FunctionType(I32, []), "sched_yield")
        self.getcpu = ir.Function(m, ir.FunctionType(I32, []), "sched_getcpu")
        self.sigmask = ir.Function(m, ir.FunctionType(I32, [I32, I8P, I8P]), "pthread_sigmask")
        self.all_signals = glob("all_signals", ir.ArrayType(I64, 16), [-1] * 16, "internal")
        self.syscall = ir.Function(m, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        if platform.machine() in ("x86_64", "AMD64"):
            self.pause_fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []),
                                        "llvm.x86.sse2.pause")
        else:
            self.pause_fn = None
        self.worker_ty = worker_ty

    # --- small helpers ----------------------------------------------------------------------
    @staticmethod
    def load(b, g, order="seq_cst", align=None):
        return b.load_atomic(g, order, align or (8 if g.type.pointee == I64 else 4))

    @staticmethod
    def store(b, v, g, order="seq_cst"):
        b.store_atomic(v, g, order, 8 if g.type.pointee in (I64, I8P) else 4)

    @staticmethod
    def add(b, g, v):
        return b.atomic_rmw("add", g, v, "seq_cst")

    def pause(self, b):
        if self.pause_fn is not None:
            b.call(self.pause_fn, [])

    def futex(self, b, op, word, value):
        b.call(self.syscall, [_c64(_SYS_FUTEX), word, _c64(op), b.zext(value, I64),
                              ir.Constant(I8P, None)])

    @staticmethod
    def while_loop(b, name, cond, body):
        """Emit `while cond(): body()` (cond and body emit code at the builder)."""
        head, loop, done = (b.append_basic_block(f"{name}.{s}") for s in ("head", "body", "end"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(cond(), loop, done)
        b.position_at_end(loop)
        body()
        b.branch(head)
        b.position_at_end(done)

    def wait_until(self, b, name, ready):
        """Spin until ready() (pause each turn, and yield the core after _YIELD_AFTER turns)."""
        turns = b.alloca(I64)
        b.store(_c64(0), turns)

        def body():
            t = b.load(turns)
            with b.if_else(b.icmp_unsigned("<", t, _c64(_YIELD_AFTER))) as (spin, give_up):
                with spin:
                    self.pause(b)
                with give_up:
                    b.call(self.sched_yield, [])
            b.store(b.add(t, _c64(1)), turns)
        self.while_loop(b, name, lambda: b.not_(ready()), body)

    # --- the functions ----------------------------------------------------------------------
    def slot_word(self, b, slot, word: int):
        return b.gep(self.job_slots, [_c32(0), slot, _c32(word)], inbounds=True)

    def run_chunks(self) -> ir.Function:
        """`void run_chunks(i64 slot)`: claim and run chunks of the published job, first from
        this thread's own range (slot s of T threads: chunks [s*n/T, (s+1)*n/T)), then from
        the others' in turn, until none is left (skipping their bodies once the interrupt
        flag is set), counting each one done on the slot's own line."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64]), "run_chunks")
        fn.linkage = "internal"
        slot = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        body = b.bitcast(self.load(b, self.job_fn), BODY_TYPE.as_pointer())
        ctx, n = self.load(b, self.job_ctx), self.load(b, self.job_n)
        threads = self.load(b, self.job_threads)
        backward = b.icmp_unsigned("!=", self.load(b, self.job_backward), _c64(0))
        done_word = self.slot_word(b, slot, _DONE)
        k = b.alloca(I64)
        b.store(_c64(0), k)
        ranges, claim, run, exhausted, done = (
            fn.append_basic_block(s) for s in ("ranges", "claim", "run", "exhausted", "done"))
        b.branch(ranges)
        b.position_at_end(ranges)
        r = b.add(slot, b.load(k))
        r = b.select(b.icmp_unsigned(">=", r, threads), b.sub(r, threads), r)
        lo = b.udiv(b.mul(r, n), threads)
        hi = b.udiv(b.mul(b.add(r, _c64(1)), n), threads)
        counter = self.slot_word(b, r, _NEXT)
        b.branch(claim)
        b.position_at_end(claim)
        i = self.add(b, counter, _c64(1))
        b.cbranch(b.icmp_signed("<", i, b.sub(hi, lo)), run, exhausted)
        b.position_at_end(run)
        c = b.select(backward, b.sub(b.sub(hi, _c64(1)), i), b.add(lo, i))
        with b.if_then(b.icmp_unsigned("==", self.load(b, self.flag, "monotonic"), _c32(0))):
            b.call(body, [ctx, c])
        # (release: the chunk's writes are seen by the caller that reads the count)
        self.store(b, b.add(self.load(b, done_word, "monotonic"), _c64(1)), done_word,
                   "release")
        b.branch(claim)
        b.position_at_end(exhausted)
        nk = b.add(b.load(k), _c64(1))
        b.store(nk, k)
        b.cbranch(b.icmp_unsigned("<", nk, threads), ranges, done)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def worker(self, run_chunks: ir.Function) -> ir.Function:
        """A worker thread's main: wait for a new job (spin, then sleep on the futex), join it
        if it is still the published one, run chunks; leave when `shutdown` is set."""
        fn = ir.Function(self.module, self.worker_ty, "worker_main")
        fn.linkage = "internal"
        entry = fn.append_basic_block("entry")
        b = ir.IRBuilder(entry)
        index = b.trunc(b.ptrtoint(fn.args[0], I64), I32)
        # signals go to the Python threads (SIGINT to the main one), never to a worker
        b.call(self.sigmask, [_c32(0), b.bitcast(self.all_signals, I8P), ir.Constant(I8P, None)])
        seen, turns = b.alloca(I32), b.alloca(I32)
        b.store(_c32(0), seen)
        wait, check, idle, sleep, spin, join, joined, work, leave, out = (
            fn.append_basic_block(s) for s in ("wait", "check", "idle", "sleep", "spin", "join",
                                               "joined", "work", "leave", "out"))
        b.branch(wait)
        b.position_at_end(wait)
        b.store(_c32(0), turns)
        b.branch(check)
        b.position_at_end(check)
        g = self.load(b, self.gen)
        b.cbranch(b.icmp_unsigned("!=", self.load(b, self.shutdown), _c32(0)), out, idle)
        b.position_at_end(idle)
        fresh = b.and_(b.icmp_unsigned("!=", g, b.load(seen)),
                       b.icmp_unsigned("==", b.and_(g, _c32(1)), _c32(0)))
        t = b.load(turns)
        b.cbranch(fresh, join, spin)
        b.position_at_end(spin)
        b.store(b.add(t, _c32(1)), turns)
        with b.if_else(b.icmp_unsigned("<", t, _c32(_SPINS))) as (go_on, give_up):
            with go_on:
                self.pause(b)
            with give_up:
                b.branch(sleep)
        last = _c32(_STACKED_CHECK - 1)
        with b.if_then(b.icmp_unsigned("==", b.and_(t, last), last)):
            here = b.call(self.getcpu, [])
            with b.if_then(b.icmp_unsigned("==", here, self.load(b, self.job_cpu, "monotonic"))):
                b.branch(sleep)
        b.branch(check)
        b.position_at_end(sleep)
        self.add(b, self.sleepers, _c32(1))
        self.futex(b, _FUTEX_WAIT, self.gen, g)  # returns at once if gen is no longer g
        self.add(b, self.sleepers, _c32(-1))
        b.branch(check)
        # join: hold a reference, then check the job is still the one we saw
        b.position_at_end(join)
        self.add(b, self.refs, _c32(1))
        b.cbranch(b.icmp_unsigned("==", self.load(b, self.gen), g), joined, leave)
        b.position_at_end(joined)
        b.store(g, seen)
        b.cbranch(b.icmp_unsigned("<", index, self.load(b, self.job_limit)), work, leave)
        b.position_at_end(work)
        b.call(run_chunks, [b.add(b.zext(index, I64), _c64(1))])  # (slot 0 is the caller's)
        b.branch(leave)
        b.position_at_end(leave)
        self.add(b, self.refs, _c32(-1))
        b.branch(wait)
        b.position_at_end(out)
        b.ret(ir.Constant(I8P, None))
        return fn

    def parallel_for(self, run_chunks: ir.Function, worker: ir.Function) -> ir.Function:
        """`void tracejit_parallel_for(i8* body, i8* ctx, i64 n)`: body(ctx, c) for every chunk
        c in [0, n), on the pool when it is free and more than one thread is wanted, else
        inline (in order)."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]), SYMBOL)
        body_p, ctx, n = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        inline, grow, grown, publish = (
            fn.append_basic_block(s) for s in ("inline", "grow", "grown", "publish"))
        wanted = self.load(b, self.wanted, "monotonic")
        want_workers = b.trunc(b.sub(wanted, _c64(1)), I32)
        want_workers = b.select(b.icmp_signed(">", want_workers, _c32(_MAX_WORKERS)),
                                _c32(_MAX_WORKERS), want_workers)
        few = b.or_(b.icmp_signed("<", want_workers, _c32(1)), b.icmp_signed("<", n, _c64(2)))
        with b.if_then(few):
            b.branch(inline)
        claim = b.cmpxchg(self.busy, _c32(0), _c32(1), "acquire", "monotonic")
        b.cbranch(b.extract_value(claim, 1), grow, inline)
        # inline: every chunk in order on this thread
        b.position_at_end(inline)
        body = b.bitcast(body_p, BODY_TYPE.as_pointer())
        i = b.alloca(I64)
        b.store(_c64(0), i)

        def step():
            c = b.load(i)
            with b.if_then(b.icmp_unsigned("==", self.load(b, self.flag, "monotonic"),
                                           _c32(0))):
                b.call(body, [ctx, c])
            b.store(b.add(c, _c64(1)), i)
        self.while_loop(b, "inline", lambda: b.icmp_signed("<", b.load(i), n), step)
        b.ret_void()
        # grow: create workers up to the number wanted (a failed create: fewer workers)
        b.position_at_end(grow)

        def create():
            k = self.load(b, self.workers)
            slot = b.gep(self.tids, [_c32(0), k], inbounds=True)
            rc = b.call(self.pthread_create, [slot, ir.Constant(I8P, None), worker,
                                              b.inttoptr(b.zext(k, I64), I8P)])
            with b.if_else(b.icmp_unsigned("==", rc, _c32(0))) as (ok, failed):
                with ok:
                    self.store(b, b.add(k, _c32(1)), self.workers)
                with failed:
                    b.branch(grown)
        self.while_loop(b, "grow", lambda: b.icmp_signed("<", self.load(b, self.workers),
                                                         want_workers), create)
        b.branch(grown)
        b.position_at_end(grown)
        have = self.load(b, self.workers)
        with b.if_then(b.icmp_unsigned("==", have, _c32(0))):
            self.store(b, _c32(0), self.busy, "release")
            b.branch(inline)
        b.branch(publish)
        # publish: gen odd, wait for late workers to let go of the old job, write, gen even
        b.position_at_end(publish)
        self.add(b, self.gen, _c32(1))
        self.wait_until(b, "refs", lambda: b.icmp_unsigned(
            "==", self.load(b, self.refs), _c32(0)))
        self.store(b, body_p, self.job_fn)
        self.store(b, ctx, self.job_ctx)
        self.store(b, n, self.job_n)
        limit = b.select(b.icmp_signed("<", want_workers, have), want_workers, have)
        self.store(b, limit, self.job_limit)
        self.store(b, b.call(self.getcpu, []), self.job_cpu, "monotonic")
        threads = b.add(b.zext(limit, I64), _c64(1))
        self.store(b, threads, self.job_threads)
        self.store(b, b.xor(self.load(b, self.job_backward), _c64(1)), self.job_backward)
        r = b.alloca(I64)
        b.store(_c64(0), r)

        def reset():
            for word in (_NEXT, _DONE):
                self.store(b, _c64(0), self.slot_word(b, b.load(r), word), "monotonic")
            b.store(b.add(b.load(r), _c64(1)), r)
        self.while_loop(b, "reset", lambda: b.icmp_unsigned("<", b.load(r), threads), reset)
        self.add(b, self.gen, _c32(1))
        with b.if_then(b.icmp_unsigned("!=", self.load(b, self.sleepers), _c32(0))):
            self.futex(b, _FUTEX_WAKE, self.gen, _c32(0x7FFFFFFF))
        b.call(run_chunks, [_c64(0)])
        total = b.alloca(I64)

        def all_done():
            b.store(_c64(0), total)
            b.store(_c64(0), r)

            def count():
                word = self.slot_word(b, b.load(r), _DONE)
                b.store(b.add(b.load(total), self.load(b, word, "acquire")), total)
                b.store(b.add(b.load(r), _c64(1)), r)
            self.while_loop(b, "count", lambda: b.icmp_unsigned("<", b.load(r), threads), count)
            return b.icmp_signed(">=", b.load(total), n)
        self.wait_until(b, "done", all_done)
        self.store(b, _c32(0), self.busy, "release")
        b.ret_void()
        return fn

    def shutdown_fn(self) -> ir.Function:
        """`void tracejit_pool_shutdown()`: wake every worker to leave, and join them."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), []), _SHUTDOWN)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.store(b, _c32(1), self.shutdown)
        self.add(b, self.gen, _c32(2))
        self.futex(b, _FUTEX_WAKE, self.gen, _c32(0x7FFFFFFF))
        k = b.alloca(I32)
        b.store(_c32(0), k)

        def join():
            i = b.load(k)
            tid = b.load(b.gep(self.tids, [_c32(0), i], inbounds=True))
            b.call(self.pthread_join, [tid, ir.Constant(I8P.as_pointer(), None)])
            b.store(b.add(i, _c32(1)), k)
        self.while_loop(b, "join", lambda: b.icmp_signed("<", b.load(k),
                                                         self.load(b, self.workers)), join)
        self.store(b, _c32(0), self.workers)
        self.store(b, _c32(0), self.shutdown)
        b.ret_void()
        return fn


def module() -> ir.Module:
    """The pool's LLVM module."""
    pool = _Pool()
    run_chunks = pool.run_chunks()
    worker = pool.worker(run_chunks)
    pool.parallel_for(run_chunks, worker)
    pool.shutdown_fn()
    return pool.module


_lock = threading.Lock()


def _code():
    """The pool's machine code (made once, even when threads compile their first programs at
    the same time: there is one pool per process)."""
    with _lock:
        return _make_code()


@functools.cache
def _make_code():
    """The pool's machine code, kept for the process; binds SYMBOL for generated programs and
    registers the exit and fork hooks."""
    import llvmlite.binding as llvm

    from . import jit_engine
    # the same in every process: compiled once per machine, then loaded from the disk cache
    # (the pool reads the interrupt flag: bound here, as a cache hit builds no IR)
    _bind_flag()
    code = jit_engine.compile_library(SYMBOL, module)
    llvm.add_symbol(SYMBOL, code.address(SYMBOL))
    llvm.add_symbol(_BUSY, code.global_address(_BUSY))  # (blas.py gives 1 thread while set)
    llvm.add_symbol(_WANTED, code.global_address(_WANTED))  # (linalg.py: tile or not)
    _write_wanted(code, config.read("tracejit_num_threads"))
    config.watch("tracejit_num_threads", lambda value: _write_wanted(code, value))
    shutdown = ctypes.CFUNCTYPE(None)(code.address(_SHUTDOWN))
    atexit.register(shutdown)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _forget_threads(code))
    return code


def _word(code, name: str, ctype=ctypes.c_int32):
    return ctype.from_address(code.global_address(name))


def _write_wanted(code, value) -> None:
    _word(code, _WANTED, ctypes.c_int64).value = _thread_cap(value)


def _forget_threads(code) -> None:
    """In a forked child: the parent's workers do not exist here; the next parallel call
    creates new ones (and a call the parent had in flight is not this process's)."""
    for name in (_WORKERS, _BUSY, _REFS, _SLEEPERS):
        _word(code, name).value = 0


WANTED_SYMBOL = _WANTED  # i64: the threads a parallel call uses now, the caller included


def symbol() -> str:
    """The name generated code calls: `void(i8* body, i8* ctx, i64 n_chunks)`."""
    _code()
    return SYMBOL


def threads() -> int:
    """The threads a parallel call uses now (the caller included)."""
    return _word(_code(), _WANTED, ctypes.c_int64).value


def workers_alive() -> int:
    """Worker threads this process has created and not joined (0 before the first call)."""
    return _word(_code(), _WORKERS).value


def shutdown() -> None:
    """Join the workers now (the next parallel call creates them again)."""
    ctypes.CFUNCTYPE(None)(_code().address(_SHUTDOWN))()
