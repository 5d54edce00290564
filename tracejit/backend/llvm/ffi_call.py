"""ffi_call in native code: a direct call of the registered XLA FFI handler (lax/ffi_api.py's
ABI), with no trip through Python. The XLA_FFI_CallFrame is built on the native stack at each
call (so two threads running one program share nothing mutable): constants for the buffers'
dtypes, ranks and dimensions, the data pointers of this call (of this iteration, in a loop),
and, from the call's run-time record (`Site`), the handler's address, the API table and the
attributes, which the executable makes when it is built and keeps while it lives.

Neither the record's address nor the handler's is in the IR: the record is the program's
callback slot (host_callback.py's run-time words), so the machine code is shared and cached on
disk like any other. A handler's XLA_FFI_Error* goes to Python (`tracejit_ffi_error`, bound by
symbol) which records JAX's error for the thread and frees it; the program returns at once and
the executable raises it, as for a host callback's exception. An asynchronous handler's future
is waited for the same way (`tracejit_ffi_wait`).
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir

from ...core.jaxpr import Var
from ...lax import ffi
from . import host_callback
from .codegen import Buf, Emitter
from .rules import IN_PLACE, STRUCTURAL
from .types import I32, I64

_I64P = I64.as_pointer()


class FfiSite:
    """One ffi_call equation of a program: XLA's custom-call thunk. Made by the lowering (which
    may be thrown away: a discarded parallel body); `word()`, when the executable is built,
    runs the bundle's instantiate stage and returns the address of the record native code
    reads (a `Site`), both owned by this object."""

    def __init__(self, params: dict):
        from ...lax import ffi_api  # (its ctypes structures: loaded by the first ffi_call)
        self.name = params["target_name"]
        ffi_api.find(self.name)  # (an unknown target: XLA's error, at compile time)
        self.attrs = ffi.encode_attributes(params["attributes"])  # (and a bad attribute's)
        self.instance = None  # (its state: freed with this object, so with the program)
        self.site = None

    def word(self) -> int:
        if self.site is None:
            from ...lax import ffi_api
            instance = ffi_api.Instance()
            ffi_api.instantiate(self.name, instance, lambda: self.attrs)
            self.site = _layout().site(
                execute=ffi_api.find(self.name).bundle[ffi_api.EXECUTE],
                api=ffi_api.API_ADDRESS, attrs=self.attrs.attrs, instance=instance.key,
                run_ids=ctypes.addressof(ffi_api.RUN_IDS))
            self.instance = instance
        return ctypes.addressof(self.site)


class _Layout:
    """Word offsets (8 bytes each) of the C structs native code writes, from ffi_api's ctypes
    declarations of them (c_api.h's), and the run-time record."""

    def __init__(self):
        from ...lax import ffi_api as A
        c_void_p, c_int64 = ctypes.c_void_p, ctypes.c_int64
        self.site = type("Site", (ctypes.Structure,), {"_fields_": [
            ("execute", c_void_p), ("api", c_void_p), ("attrs", A.Attrs),
            ("instance", c_int64), ("run_ids", c_void_p)]})

        def words(cls: type) -> dict[str, int]:
            return {name: getattr(cls, name).offset // 8 for name, _ in cls._fields_}
        self.site_at, self.frame_at, self.buffer_at = (words(self.site), words(A.CallFrame),
                                                       words(A.Buffer))
        self.list_at = words(A.Args)  # (XLA_FFI_Rets: the same words)
        assert words(A.Rets) == {k if k != "args" else "rets": v
                                 for k, v in self.list_at.items()}
        self.frame_words = ctypes.sizeof(A.CallFrame) // 8
        self.buffer_words = ctypes.sizeof(A.Buffer) // 8
        self.attrs_words = ctypes.sizeof(A.Attrs) // 8
        self.frame_size, self.buffer_size = A.CALL_FRAME_SIZE, A.BUFFER_SIZE
        self.list_size = A._size(A.Args, "args")
        self.context_words = ctypes.sizeof(A.Context) // 8
        self.context_at = words(A.Context)
        self.tag, self.execute = A.CONTEXT_TAG, A.EXECUTE
        self.dtype = A.ffi_dtype


@functools.cache
def _layout() -> _Layout:
    return _Layout()


# --- the two ways back into Python (errors only: not on a successful call's path) -------------

def _report_error(address: int) -> None:
    from ...lax import ffi_api
    try:
        host_callback.record_error(ffi_api.take_error(address))
    except BaseException as e:  # noqa: BLE001 - nothing may unwind into native code
        host_callback.record_error(e)


def _wait(address: int) -> int:
    from ...lax import ffi_api
    try:
        ffi_api.wait(address)
        return 0
    except BaseException as e:  # noqa: BLE001 - nothing may unwind into native code
        host_callback.record_error(e)
        return 1


_REPORT = ctypes.CFUNCTYPE(None, ctypes.c_int64)(_report_error)  # (module-level: they must
_WAIT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)(_wait)  # outlive all code)


@functools.cache
def _bind_symbols() -> None:
    import llvmlite.binding as llvm
    llvm.add_symbol("tracejit_ffi_error", ctypes.cast(_REPORT, ctypes.c_void_p).value)
    llvm.add_symbol("tracejit_ffi_wait", ctypes.cast(_WAIT, ctypes.c_void_p).value)


def _declare(em: Emitter, name: str, ret: ir.Type) -> ir.Function:
    _bind_symbols()
    fn = em.module.globals.get(name)
    if fn is None:
        fn = ir.Function(em.module, ir.FunctionType(ret, [I64]), name=name)
    return fn


# --- the lowering -----------------------------------------------------------------------------

def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _words(em: Emitter, n: int) -> ir.Value:
    return em._entry_alloca(ir.ArrayType(I64, max(n, 1)))


def _put(b: ir.IRBuilder, words: ir.Value, k: int, value: ir.Value | int) -> None:
    if isinstance(value, int):
        value = _c(value)
    elif value.type != I64:
        value = b.ptrtoint(value, I64)
    b.store(value, b.gep(words, [_c(0), _c(k)], inbounds=True))


def _move(em: Emitter, dest: ir.Value, src: ir.Value, nbytes: int) -> None:
    """memmove, skipped when the two are one buffer at run time (a carry that is its own
    operand)."""
    b = em.b
    move = em.module.declare_intrinsic("llvm.memmove", [ir.IntType(8).as_pointer()] * 2 + [I64])
    i8p = ir.IntType(8).as_pointer()
    with b.if_then(b.icmp_unsigned("!=", b.bitcast(dest, i8p), b.bitcast(src, i8p))):
        b.call(move, [b.bitcast(dest, i8p), b.bitcast(src, i8p), _c(nbytes),
                      ir.Constant(ir.IntType(1), 0)])


def _nbytes(buf: Buf) -> int:
    return buf.aval.size * buf.aval.dtype.itemsize


def _results(em: Emitter, eqn, in_bufs: list[Buf], owned: set[int], dests: list
             ) -> list[Buf]:
    """Where each result is written: its destination, or a workspace slot. A destination never
    shares memory with an operand (loops double-buffer their carries; donation planning,
    aliasing.py, hands a result an operand's buffer only as IN_PLACE declares, below). An
    aliased result starts as its operand's copy (none when they are one buffer, or when the
    operand is a temporary dying here: then that buffer is the result) and is handed to the
    handler for that operand too, as XLA does."""
    aliased = {o: i for i, o in eqn.params["input_output_aliases"]}
    outs = []
    for o, (v, d) in enumerate(zip(eqn.outvars, dests)):
        i = aliased.get(o)
        if i is not None and d is None and v.aval.ndim > 0 and _dies_here(em, eqn, i, in_bufs,
                                                                          owned):
            owned.discard(id(in_bufs[i].ptr))
            outs.append(em.take_over(in_bufs[i]))
            continue
        out = d if d is not None else em.alloc(v.aval)
        if i is not None and _nbytes(out):
            _move(em, out.ptr, in_bufs[i].ptr, _nbytes(out))
        outs.append(out)
    return outs


def _dies_here(em: Emitter, eqn, i: int, in_bufs: list[Buf], owned: set[int]) -> bool:
    """Operand `i` is a workspace temporary nothing reads after this equation (nor another
    operand of it)."""
    buf, v = in_bufs[i], eqn.invars[i]
    if sum(x.ptr is buf.ptr for x in in_bufs) > 1 or buf.ptr not in em._slot_of:
        return False
    return id(buf.ptr) in owned or (isinstance(v, Var) and v in em._dying)


def _lower_ffi_call(em: Emitter, eqn, ins, dests):
    layout = _layout()
    b = em.b
    slot = len(em.callbacks)
    em.callbacks.append(FfiSite(eqn.params))
    in_bufs = [em.materialize(x) for x in ins]
    owned = {id(buf.ptr) for x, buf in zip(ins, in_bufs) if not isinstance(x, Buf)}
    outs = _results(em, eqn, in_bufs, owned, dests)
    aliased = {i: o for i, o in eqn.params["input_output_aliases"]}
    args = [outs[aliased[k]] if k in aliased else x for k, x in enumerate(in_bufs)]

    # the run-time record, and the frame's parts on the stack (entry-block allocas)
    site = b.inttoptr(b.load(b.gep(em.callback_ids(), [_c(slot)], inbounds=True)), _I64P)

    def site_word(name: str, k: int = 0) -> ir.Value:
        return b.load(b.gep(site, [_c(layout.site_at[name] + k)], inbounds=True))
    n_bufs = len(args) + len(outs)
    bufs = _words(em, n_bufs * layout.buffer_words)
    ptrs = _words(em, n_bufs)
    dims = _words(em, sum(x.aval.ndim for x in args + outs))
    types = em._entry_alloca(ir.ArrayType(I32, max(len(args), len(outs), 1)))
    frame = _words(em, layout.frame_words)
    ctx = _words(em, layout.context_words)
    for k in range(max(len(args), len(outs), 1)):  # XLA_FFI_ArgType/RetType_BUFFER
        b.store(ir.Constant(I32, 1), b.gep(types, [_c(0), _c(k)], inbounds=True))
    at = layout.buffer_at
    d = 0
    for k, x in enumerate(args + outs):
        base = k * layout.buffer_words
        _put(b, bufs, base + at["struct_size"], layout.buffer_size)
        _put(b, bufs, base + at["extension_start"], 0)
        _put(b, bufs, base + at["dtype"], layout.dtype(x.aval.dtype))
        _put(b, bufs, base + at["data"], x.ptr if _nbytes(x) else 0)
        _put(b, bufs, base + at["rank"], x.aval.ndim)
        _put(b, bufs, base + at["dims"], b.gep(dims, [_c(0), _c(d)], inbounds=True))
        for n in x.aval.shape:
            _put(b, dims, d, n)
            d += 1
        _put(b, ptrs, k, b.gep(bufs, [_c(0), _c(base)], inbounds=True))
    fa = layout.frame_at
    for name, value in (("struct_size", layout.frame_size), ("extension_start", 0),
                        ("api", site_word("api")), ("ctx", ctx),
                        ("stage", layout.execute), ("future", 0)):
        _put(b, frame, fa[name], value)
    for name, count, first in (("args", len(args), 0), ("rets", len(outs), len(args))):
        la = layout.list_at
        _put(b, frame, fa[name] + la["struct_size"], layout.list_size)
        _put(b, frame, fa[name] + la["extension_start"], 0)
        _put(b, frame, fa[name] + la["size"], count)
        _put(b, frame, fa[name] + la["types"], types)
        _put(b, frame, fa[name] + la["args"], b.gep(ptrs, [_c(0), _c(first)], inbounds=True))
    for k in range(layout.attrs_words):
        _put(b, frame, fa["attrs"] + k, site_word("attrs", k))
    # the context: this call's run id (even: eager calls' are odd), the instance's key
    ca = layout.context_at
    run_ids = b.inttoptr(site_word("run_ids"), _I64P)
    run_id = b.add(b.atomic_rmw("add", run_ids, _c(2), "monotonic"), _c(2))
    _put(b, ctx, ca["instance"], site_word("instance"))
    _put(b, ctx, ca["run_id"], run_id)
    _put(b, ctx, ca["tag"], layout.tag)

    i8p = ir.IntType(8).as_pointer()
    handler = b.inttoptr(site_word("execute"), ir.FunctionType(i8p, [i8p]).as_pointer())
    err = b.call(handler, [b.bitcast(frame, i8p)])
    with b.if_then(b.icmp_unsigned("!=", err, ir.Constant(i8p, None)), likely=False):
        _put(b, ctx, ca["tag"], 0)
        b.call(_declare(em, "tracejit_ffi_error", ir.VoidType()), [b.ptrtoint(err, I64)])
        b.ret_void()  # the executable raises the recorded error
    future = b.load(b.gep(frame, [_c(0), _c(fa["future"])], inbounds=True))
    with b.if_then(b.icmp_unsigned("!=", future, _c(0)), likely=False):
        failed = b.call(_declare(em, "tracejit_ffi_wait", I32), [future])
        with b.if_then(b.icmp_signed("!=", failed, ir.Constant(I32, 0)), likely=False):
            _put(b, ctx, ca["tag"], 0)
            b.ret_void()
    _put(b, ctx, ca["tag"], 0)
    for buf in in_bufs:
        if id(buf.ptr) in owned:
            em.release(buf)
    return outs


def _aliased_operand(eqn, j: int) -> int | None:
    return next((i for i, o in eqn.params["input_output_aliases"] if o == j), None)


STRUCTURAL[ffi.ffi_call_p] = _lower_ffi_call
# a donated operand aliased to a result is that result's buffer (no copy), as in XLA
IN_PLACE[ffi.ffi_call_p] = _aliased_operand
