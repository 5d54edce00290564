"""Host callbacks in native code: a callback equation lowers to one call of a single ctypes
trampoline, `int32 tracejit_host_callback(i64 id, i8** inputs, i8** outputs)`, bound by symbol
name (as blas.py binds BLAS), so the IR and the on-disk cache key hold no address.

The id is not in the IR either: a program's callbacks are numbered by slot in emission order
(`Emitter.callbacks`), and the entry reads the ids from an int64 array the executable passes
after its inputs (runtime/native.py registers the callbacks in `TABLE` when it is built and
drops them when it is collected, `bind`). So machine code is shared and cached on disk like any
other, and a cached program can never call a stale id: the ids are run-time data. A slot may
instead hold other run-time data of the program's (an ffi_call's record, ffi_call.py).

ctypes takes the GIL for the trampoline. An exception must not unwind through native code: the
trampoline records it for the thread and returns 1, the entry then returns at once, and the
executable re-raises it (JAX's JaxRuntimeError naming it) after the call.
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import threading
from typing import Callable, NamedTuple, Sequence

import llvmlite.ir as ir
import numpy as np

from ...core.avals import ShapedArray
from ...core.primitive import Primitive
from ...lax.callback import CALLBACK_PRIMITIVES, call_host, call_impl
from ...lax.processes import PRIMITIVES as PROCESS_COLLECTIVES
from ...lax.processes import pvary_p, shared_p
from .codegen import I8P, Buf, Emitter
from .rules import IMPL_ON_HOST, STRUCTURAL
from .types import I32, I64

SYMBOL = "tracejit_host_callback"


class HostCall(NamedTuple):
    """What the trampoline runs for one callback id: `run(inputs) -> outputs` on NumPy
    arrays."""
    run: Callable[..., list[np.ndarray] | None]
    in_avals: tuple[ShapedArray, ...]
    out_avals: tuple[ShapedArray, ...]


class _Table:
    """The process-wide id -> HostCall table the trampoline reads (ids are never reused)."""

    def __init__(self):
        self._calls: dict[int, HostCall] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def register(self, calls: Sequence[HostCall]) -> list[int]:
        with self._lock:
            ids = [next(self._ids) for _ in calls]
            self._calls.update(zip(ids, calls))
        return ids

    def unregister(self, ids: Sequence[int]) -> None:
        with self._lock:
            for i in ids:
                self._calls.pop(i, None)

    def __getitem__(self, i: int) -> HostCall:
        return self._calls[i]

    def __len__(self) -> int:
        return len(self._calls)


TABLE = _Table()
_errors = threading.local()  # .pending: the exception of this thread's last failed callback


def record_error(exc: BaseException) -> None:
    """Make `exc` what this thread's native call raises when it returns (its code returns at
    once after calling this), unless an earlier one is: the function that failed returns, but
    its caller (a program cut into outlined functions) carries on and may fail again."""
    if getattr(_errors, "pending", None) is None:
        _errors.pending = exc


def bind(calls: Sequence) -> tuple[np.ndarray, list[int]]:
    """The int64 words native code reads by slot for a program's `calls` (Emitter.callbacks):
    a HostCall's id, registered in TABLE now, or the `word()` of other run-time data (made now,
    owned by the object). Returns the words and the ids to unregister when the program goes."""
    words = [0 if isinstance(c, HostCall) else c.word() for c in calls]  # (first: may raise)
    ids = TABLE.register([c for c in calls if isinstance(c, HostCall)])
    it = iter(ids)
    words = [next(it) if isinstance(c, HostCall) else w for c, w in zip(calls, words)]
    return np.array(words, np.int64), ids


def take_error() -> BaseException | None:
    """The exception a callback raised during this thread's last native call (then cleared)."""
    exc = getattr(_errors, "pending", None)
    _errors.pending = None
    return exc


def _view(address: int, aval: ShapedArray) -> np.ndarray:
    nbytes = aval.size * aval.dtype.itemsize
    if nbytes == 0:
        return np.empty(aval.shape, aval.dtype)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=aval.dtype).reshape(aval.shape)


def _trampoline(call_id: int, inputs: int, outputs: int) -> int:
    try:
        call = TABLE[call_id]
        ins = ctypes.cast(inputs, ctypes.POINTER(ctypes.c_void_p))
        outs = ctypes.cast(outputs, ctypes.POINTER(ctypes.c_void_p))
        # views of the program's buffers (`call_host` hands the callback copies: it may keep
        # its arguments, and the buffers are reused after it)
        args = [_view(ins[k] or 0, a) for k, a in enumerate(call.in_avals)]
        results = call.run(args)
        for k, (r, a) in enumerate(zip(results, call.out_avals)):
            if a.size:
                np.copyto(_view(outs[k], a), r, casting="no")
        return 0
    except BaseException as e:  # noqa: BLE001 - nothing may unwind into native code
        record_error(e)
        return 1


_TRAMPOLINE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p,
                                    ctypes.c_void_p)
_TRAMPOLINE = _TRAMPOLINE_TYPE(_trampoline)  # (module-level: it must outlive all code)


@functools.cache
def _bind_symbol() -> str:
    import llvmlite.binding as llvm
    llvm.add_symbol(SYMBOL, ctypes.cast(_TRAMPOLINE, ctypes.c_void_p).value)
    return SYMBOL


def _callee(em: Emitter) -> ir.Function:
    name = _bind_symbol()
    fn = em.module.globals.get(name)
    if fn is None:
        fnty = ir.FunctionType(I32, [I64, I8P.as_pointer(), I8P.as_pointer()])
        fn = ir.Function(em.module, fnty, name=name)
    return fn


def _pointer_array(em: Emitter, bufs: Sequence[Buf]) -> ir.Value:
    b = em.b
    arr = em._entry_alloca(ir.ArrayType(I8P, max(len(bufs), 1)))
    for k, buf in enumerate(bufs):
        slot = b.gep(arr, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True)
        b.store(b.bitcast(buf.ptr, I8P), slot)
    return b.bitcast(arr, I8P.as_pointer())


def emit_host_call(em: Emitter, eqn, ins, dests, run: Callable) -> list[Buf]:
    """Lower `eqn` to a call back into Python running `run(inputs) -> outputs` (NumPy arrays of
    the equation's avals); its results are written to `dests` where given."""
    slot = len(em.callbacks)
    em.callbacks.append(HostCall(run, tuple(v.aval for v in eqn.invars),
                                 tuple(v.aval for v in eqn.outvars)))
    temps = [x for x in ins if not isinstance(x, Buf)]
    in_bufs = [em.materialize(x) for x in ins]
    out_bufs = [d if d is not None else em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    b = em.b
    call_id = b.load(b.gep(em.callback_ids(), [ir.Constant(I64, slot)], inbounds=True))
    failed = b.call(_callee(em), [call_id, _pointer_array(em, in_bufs),
                                  _pointer_array(em, out_bufs)])
    with b.if_then(b.icmp_signed("!=", failed, ir.Constant(I32, 0)), likely=False):
        b.ret_void()  # the executable raises the recorded exception
    for x, buf in zip(ins, in_bufs):
        if any(x is t for t in temps):
            em.release(buf)
    return out_bufs


def _lower_callback(em: Emitter, eqn, ins, dests):
    return emit_host_call(em, eqn, ins, dests,
                          functools.partial(call_host, eqn.primitive, eqn.params))


def _lower_impl(em: Emitter, eqn, ins, dests):
    out_avals = tuple(v.aval for v in eqn.outvars)
    return emit_host_call(em, eqn, ins, dests,
                          functools.partial(call_impl, eqn.primitive, eqn.params, out_avals))


def lower_with_impl(prim: Primitive) -> None:
    """Compile `prim` natively as a call of its impl rule on the host (Arrays in, arrays out;
    results checked against the equation's avals): the lowering of a primitive that has no
    native lowering of its own, such as a user-defined one."""
    STRUCTURAL[prim] = _lower_impl


for _prim in CALLBACK_PRIMITIVES:
    STRUCTURAL[_prim] = _lower_callback
IMPL_ON_HOST.append(_lower_impl)

# collectives between processes (lax/processes.py): native code calls back into their impl,
# which calls MPI through mpi4py
for _prim in PROCESS_COLLECTIVES:
    if _prim not in (pvary_p, shared_p):  # (the identities: forwarded, identities.py)
        lower_with_impl(_prim)
