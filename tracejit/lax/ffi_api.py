"""XLA's typed FFI (the C ABI of jaxlib's xla/ffi/api/c_api.h, API 0.3) implemented with ctypes:
the XLA_FFI_Api table a handler calls back into, call frames (buffers and attributes), the
handler registry and the execution stages. lax/ffi.py's primitive runs handlers through `call`.

Handlers compiled against XLA's header-only C++ binding (ffi.h) see what XLA's CPU runtime gives
them: no stream, no device allocator, an intra-op thread pool, device ordinal 0, a run id, state
made at instantiation. Every callback into Python catches everything (nothing may unwind through
C) and answers with an XLA_FFI_Error.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core.errors import JaxRuntimeError

API_MAJOR, API_MINOR = 0, 3

c_size_t, c_int64, c_int32, c_int, c_void_p = (ctypes.c_size_t, ctypes.c_int64, ctypes.c_int32,
                                              ctypes.c_int, ctypes.c_void_p)
_HEAD = [("struct_size", c_size_t), ("extension_start", c_void_p)]


def _struct(name: str, fields: list) -> type:
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def _size(cls: type, last: str) -> int:
    """XLA_FFI_STRUCT_SIZE: the bytes up to the end of `last` (a handler checks it)."""
    field = getattr(cls, last)
    return field.offset + field.size


# --- the C structs, field for field as c_api.h declares them ----------------------------------

ExtensionBase = _struct("XLA_FFI_Extension_Base", [("struct_size", c_size_t), ("type", c_int),
                                                  ("next", c_void_p)])
ApiVersion = _struct("XLA_FFI_Api_Version", _HEAD + [("major_version", c_int),
                                                     ("minor_version", c_int)])
ByteSpan = _struct("XLA_FFI_ByteSpan", [("ptr", c_void_p), ("len", c_size_t)])
Scalar = _struct("XLA_FFI_Scalar", [("dtype", c_int), ("value", c_void_p)])
ArrayAttr = _struct("XLA_FFI_Array", [("dtype", c_int), ("size", c_size_t), ("data", c_void_p)])
TypeId = _struct("XLA_FFI_TypeId", [("type_id", c_int64)])
Buffer = _struct("XLA_FFI_Buffer", _HEAD + [("dtype", c_int), ("data", c_void_p),
                                            ("rank", c_int64), ("dims", c_void_p)])
_LIST = [("size", c_int64), ("types", c_void_p)]
Args = _struct("XLA_FFI_Args", _HEAD + _LIST + [("args", c_void_p)])
Rets = _struct("XLA_FFI_Rets", _HEAD + _LIST + [("rets", c_void_p)])
Attrs = _struct("XLA_FFI_Attrs", _HEAD + _LIST + [("names", c_void_p), ("attrs", c_void_p)])
CallFrame = _struct("XLA_FFI_CallFrame", _HEAD + [
    ("api", c_void_p), ("ctx", c_void_p), ("stage", c_int), ("args", Args), ("rets", Rets),
    ("attrs", Attrs), ("future", c_void_p)])
Metadata = _struct("XLA_FFI_Metadata", [("struct_size", c_size_t), ("api_version", ApiVersion),
                                        ("traits", ctypes.c_uint32), ("state_type_id", TypeId)])
MetadataExtension = _struct("XLA_FFI_Metadata_Extension", [("extension_base", ExtensionBase),
                                                           ("metadata", c_void_p)])
Bundle = _struct("XLA_FFI_Handler_Bundle", [("instantiate", c_void_p), ("prepare", c_void_p),
                                            ("initialize", c_void_p), ("execute", c_void_p)])

# the arguments of each API function (after struct_size and extension_start)
_ARGS = {
    "Error_Create": [("message", c_void_p), ("errc", c_int)],
    "Error_GetMessage": [("error", c_void_p), ("message", c_void_p)],
    "Error_Destroy": [("error", c_void_p)],
    "Handler_Register": [("name", ByteSpan), ("platform", ByteSpan), ("bundle", Bundle),
                         ("traits", ctypes.c_uint32)],
    "Stream_Get": [("ctx", c_void_p), ("stream", c_void_p)],
    "Type_Register": [("name", ByteSpan), ("type_id", c_void_p), ("type_info", c_void_p)],
    "ExecutionContext_Get": [("ctx", c_void_p), ("type_id", c_void_p), ("data", c_void_p)],
    "State_Set": [("ctx", c_void_p), ("stage", c_int), ("type_id", c_void_p),
                  ("state", c_void_p)],
    "State_Get": [("ctx", c_void_p), ("stage", c_int), ("type_id", c_void_p),
                  ("state", c_void_p)],
    "DeviceMemory_Allocate": [("ctx", c_void_p), ("size", c_size_t), ("alignment", c_size_t),
                              ("data", c_void_p)],
    "DeviceMemory_Free": [("ctx", c_void_p), ("size", c_size_t), ("data", c_void_p)],
    "ThreadPool_Schedule": [("ctx", c_void_p), ("task", c_void_p), ("data", c_void_p)],
    "ThreadPool_NumThreads": [("ctx", c_void_p), ("num_threads", c_void_p)],
    "Future_Create": [("future", c_void_p)],
    "Future_SetAvailable": [("future", c_void_p)],
    "Future_SetError": [("future", c_void_p), ("error", c_void_p)],
    "RunId_Get": [("ctx", c_void_p), ("run_id", c_int64)],
    "DeviceOrdinal_Get": [("ctx", c_void_p), ("device_ordinal", c_int32)],
}
_ARG_STRUCTS = {name: _struct(f"XLA_FFI_{name}_Args", _HEAD + fields)
                for name, fields in _ARGS.items()}
_VOID = ("Error_GetMessage", "Error_Destroy")  # the two that return nothing
# the field c_api.h ends an argument struct's declared size at, where not its last one
_SIZED_TO = {"Future_Create": "extension_start", "Type_Register": "type_id"}
Api = _struct("XLA_FFI_Api", _HEAD + [("api_version", ApiVersion), ("internal_api", c_void_p)]
              + [(f"XLA_FFI_{name}", c_void_p) for name in _ARGS])

CALL_FRAME_SIZE = _size(CallFrame, "attrs")
BUFFER_SIZE = _size(Buffer, "dims")

# --- data types, error codes, stages ----------------------------------------------------------

_DTYPES = {"bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
           "uint32": 8, "uint64": 9, "float16": 10, "float32": 11, "float64": 12, "bfloat16": 16,
           "complex64": 15, "complex128": 18, "float8_e5m2": 19, "float8_e4m3fn": 20,
           "int4": 21, "uint4": 22, "float8_e4m3b11fnuz": 23, "float8_e5m2fnuz": 24,
           "float8_e4m3fnuz": 25, "int2": 26, "uint2": 27, "float8_e4m3": 28,
           "float8_e3m4": 29, "float4_e2m1fn": 32, "float8_e8m0fnu": 33}
ERROR_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
               "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
               "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
               "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")
INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, UNIMPLEMENTED = 3, 5, 9, 12
STAGES = ("instantiate", "prepare", "initialize", "execute")
INSTANTIATE, PREPARE, INITIALIZE, EXECUTE = range(4)
ATTR_ARRAY, ATTR_DICTIONARY, ATTR_SCALAR, ATTR_STRING = 1, 2, 3, 4


def ffi_dtype(dtype: np.dtype) -> int:
    """XLA_FFI_DataType of a NumPy dtype (0, INVALID, for one XLA has no name for)."""
    return _DTYPES.get(np.dtype(dtype).name, 0)


def runtime_error(code: int, message: str) -> JaxRuntimeError:
    """JAX's error for a failed FFI call: the status code's name, then the message."""
    err = JaxRuntimeError(f"{ERROR_CODES[code] if 0 <= code < len(ERROR_CODES) else 'UNKNOWN'}: "
                          f"{message}")
    err.raised_as_is = True  # (from a compiled program too: not wrapped as a callback's error)
    return err


# --- errors: XLA_FFI_Error* is the address of its message's buffer ----------------------------

_errors: dict[int, tuple[int, ctypes.Array]] = {}


def _new_error(code: int, message: str) -> int:
    buf = ctypes.create_string_buffer(message.encode("utf-8", "replace"))
    _errors[ctypes.addressof(buf)] = (code, buf)
    return ctypes.addressof(buf)


def take_error(address: int) -> JaxRuntimeError:
    """The Python error for an XLA_FFI_Error* a handler returned (which it hands over to us)."""
    code, buf = _errors.pop(address, (2, None))
    if buf is None:
        return runtime_error(2, "an FFI handler returned an error that was not made by "
                             "XLA_FFI_Error_Create")
    return runtime_error(code, buf.value.decode("utf-8", "replace"))


# --- per-call context (XLA_FFI_ExecutionContext*), per-instance state, futures, types ---------

class Instance:
    """One ffi_call in one program (XLA's custom-call thunk): the state its instantiate stage
    made, freed with it by the deleters registered with the state's types. Contexts name it by
    `key` (native code holds no Python object)."""

    def __init__(self):
        self.states: dict[int, tuple[int, int]] = {}  # stage -> (type id, pointer)
        self.lock = threading.RLock()  # (held through instantiation, whose State_Set takes it)
        self.instantiated = False
        self.frame: Frame | None = None  # (an eager call's, made at its first call)
        self.key = next(_instance_keys)
        _live[self.key] = self

    def __del__(self):
        if _types is None:  # (the interpreter's exit cleared this module: the memory goes too)
            return
        for type_id, state in self.states.values():
            deleter = _types.deleters.get(type_id)
            if deleter:
                ctypes.CFUNCTYPE(None, c_void_p)(deleter)(state)


_live: weakref.WeakValueDictionary[int, Instance] = weakref.WeakValueDictionary()
_instance_keys = itertools.count(1)

# An XLA_FFI_ExecutionContext* is the address of a Context, written for each call: on the
# native stack by a jitted program (backend/llvm/ffi_call.py), in its Frame by an eager call.
# `tag` is CONTEXT_TAG while the call runs (0 after: a handler keeping the pointer gets an
# error, not another call's state). Run ids: a jitted call's from RUN_IDS (an atomic add of 2,
# in native code: even), an eager call's odd, so no two calls share one.
Context = _struct("Context", [("tag", c_int64), ("instance", c_int64), ("run_id", c_int64)])
CONTEXT_TAG = 0x7472_6163_656A_6974  # ("tracejit")
RUN_IDS = c_int64(0)
_run_ids = itertools.count(1, 2)


class _Context(NamedTuple):
    instance: Instance
    run_id: int


class _Types:
    """XLA_FFI_TypeId registry: a name gets one id for the process; the deleter of its
    XLA_FFI_TypeInfo frees the states of that type."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.deleters: dict[int, int] = {}
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def register(self, name: str, type_id: int, type_info: int) -> int:
        with self._lock:
            if name in self.ids:
                if type_id not in (0, self.ids[name]):
                    raise _Fail(INVALID_ARGUMENT, f"Type name {name} already registered with "
                                f"type id {self.ids[name]} vs {type_id})")
                return self.ids[name]
            if type_id == 0:
                type_id = next(self._next)
                while type_id in self.deleters:
                    type_id = next(self._next)
            elif type_id in self.deleters:
                raise _Fail(INVALID_ARGUMENT, f"Type id {type_id} already registered")
            self.ids[name] = type_id
            if type_info:
                info = _struct("XLA_FFI_TypeInfo", _HEAD + [("deleter", c_void_p)]) \
                    .from_address(type_info)
                self.deleters[type_id] = info.deleter or 0
            else:
                self.deleters[type_id] = 0
            return type_id


_types = _Types()


class _Future:
    __slots__ = ("done", "error")

    def __init__(self):
        self.done = threading.Event()
        self.error: int | None = None


_futures: dict[int, tuple[_Future, ctypes.Array]] = {}
_pool = None  # a concurrent.futures.ThreadPoolExecutor, made on first use
_POOL_THREADS = max(1, os.cpu_count() or 1)
_TASK = ctypes.CFUNCTYPE(None, c_void_p)


def _thread_pool():
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor
        _pool = ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="tracejit-ffi")
    return _pool


class _Fail(Exception):
    """An API function's answer as an XLA_FFI_Error (code, message)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _context(ctx: int | None) -> _Context:
    context = Context.from_address(ctx) if ctx else None
    instance = _live.get(context.instance) if context and context.tag == CONTEXT_TAG else None
    if instance is None:
        raise _Fail(INVALID_ARGUMENT, "XLA FFI execution context is not valid (used after "
                    "its call returned?)")
    return _Context(instance, context.run_id)


# --- the API functions ------------------------------------------------------------------------

def _error_create(a):
    return _new_error(a.errc, ctypes.string_at(a.message).decode("utf-8", "replace")
                      if a.message else "")


def _error_get_message(a):
    entry = _errors.get(a.error)
    a.message = ctypes.addressof(entry[1]) if entry else None


def _error_destroy(a):
    _errors.pop(a.error, None)


def _handler_register(a):
    name = ctypes.string_at(a.name.ptr, a.name.len).decode()
    platform = ctypes.string_at(a.platform.ptr, a.platform.len).decode()
    register(name, Bundle(a.bundle.instantiate, a.bundle.prepare, a.bundle.initialize,
                          a.bundle.execute), platform, a.traits)


def _stream_get(a):
    raise _Fail(UNIMPLEMENTED, "XLA FFI GPU context is not available")


def _type_register(a):
    type_id = TypeId.from_address(a.type_id)
    name = ctypes.string_at(a.name.ptr, a.name.len).decode()
    type_id.type_id = _types.register(name, type_id.type_id, a.type_info or 0)


def _execution_context_get(a):
    # (JAX's Python API gives no way to attach user data to a call)
    raise _Fail(NOT_FOUND, f"User data with type id {TypeId.from_address(a.type_id).type_id} "
                "not found in execution context")


def _state_set(a):
    instance = _context(a.ctx).instance
    type_id = TypeId.from_address(a.type_id).type_id
    with instance.lock:
        if a.stage in instance.states:
            raise _Fail(FAILED_PRECONDITION, f"State for stage {STAGES[a.stage]} is already set")
        instance.states[a.stage] = (type_id, a.state or 0)


def _state_get(a):
    instance = _context(a.ctx).instance
    type_id = TypeId.from_address(a.type_id).type_id
    with instance.lock:
        found = instance.states.get(a.stage)
    if found is None:
        raise _Fail(NOT_FOUND, f"State for stage {STAGES[a.stage] if 0 <= a.stage < 4 else a.stage}"
                    " is not set")
    if found[0] != type_id:
        raise _Fail(INVALID_ARGUMENT, f"Set state type id {found[0]} does not match the "
                    f"requested one {type_id}")
    a.state = found[1]


def _device_memory_allocate(a):
    raise _Fail(INVALID_ARGUMENT, "XLA FFI GPU context is not available")


def _device_memory_free(a):
    raise _Fail(UNIMPLEMENTED, "XLA FFI GPU context is not available")


def _thread_pool_schedule(a):
    _context(a.ctx)
    task = _TASK(a.task)
    _thread_pool().submit(task, a.data)  # (ctypes lets go of the GIL while the task runs)


def _thread_pool_num_threads(a):
    _context(a.ctx)
    c_int64.from_address(a.num_threads).value = _POOL_THREADS


def _future_create(a):
    handle = ctypes.create_string_buffer(1)
    _futures[ctypes.addressof(handle)] = (_Future(), handle)
    a.future = ctypes.addressof(handle)


def _future(address: int) -> _Future:
    try:
        return _futures[address][0]
    except KeyError:
        raise _Fail(INVALID_ARGUMENT, "XLA_FFI_Future is not valid") from None


def _future_set_available(a):
    _future(a.future).done.set()


def _future_set_error(a):
    future = _future(a.future)
    if not a.error or a.error not in _errors:
        raise _Fail(INVALID_ARGUMENT, "Error must not be null or OK")
    future.error = a.error
    future.done.set()


def _run_id_get(a):
    a.run_id = _context(a.ctx).run_id


def _device_ordinal_get(a):
    _context(a.ctx)
    a.device_ordinal = 0


_IMPLS = {"Error_Create": _error_create, "Error_GetMessage": _error_get_message,
          "Error_Destroy": _error_destroy, "Handler_Register": _handler_register,
          "Stream_Get": _stream_get, "Type_Register": _type_register,
          "ExecutionContext_Get": _execution_context_get, "State_Set": _state_set,
          "State_Get": _state_get, "DeviceMemory_Allocate": _device_memory_allocate,
          "DeviceMemory_Free": _device_memory_free,
          "ThreadPool_Schedule": _thread_pool_schedule,
          "ThreadPool_NumThreads": _thread_pool_num_threads, "Future_Create": _future_create,
          "Future_SetAvailable": _future_set_available, "Future_SetError": _future_set_error,
          "RunId_Get": _run_id_get, "DeviceOrdinal_Get": _device_ordinal_get}


def _entry(name: str, impl: Callable) -> Any:
    """The C function pointer of one API function: checks the argument struct's size as XLA
    does, runs `impl` on it, and turns any Python exception into an XLA_FFI_Error."""
    args_type = _ARG_STRUCTS[name]
    expected = _size(args_type, _SIZED_TO.get(name, _ARGS[name][-1][0]))

    def entry(address):
        try:
            a = args_type.from_address(address)
            if a.struct_size < expected:
                raise _Fail(INVALID_ARGUMENT, f"Unexpected XLA_FFI_{name} size: expected "
                            f"{expected}, got {a.struct_size}. Check installed software "
                            f"versions. The framework XLA FFI API version is "
                            f"{API_MAJOR}.{API_MINOR}.")
            return impl(a)  # (None: success; Error_Create's answer is its error)
        except _Fail as e:
            return None if name in _VOID else _new_error(e.code, str(e))
        except BaseException as e:  # noqa: BLE001 - nothing may unwind into a handler
            return None if name in _VOID else _new_error(13, f"{type(e).__name__}: {e}")

    restype = None if name in _VOID else c_void_p
    return ctypes.CFUNCTYPE(restype, c_void_p)(entry)


_ENTRIES = {name: _entry(name, impl) for name, impl in _IMPLS.items()}  # (kept alive: C holds)
API = Api(struct_size=_size(Api, "XLA_FFI_DeviceOrdinal_Get"), extension_start=None,
          api_version=ApiVersion(_size(ApiVersion, "minor_version"), None, API_MAJOR, API_MINOR),
          internal_api=None,
          **{f"XLA_FFI_{name}": ctypes.cast(fn, c_void_p).value for name, fn in _ENTRIES.items()})
API_ADDRESS = ctypes.addressof(API)

# --- handlers: the registry and the metadata query --------------------------------------------

_HANDLER = ctypes.CFUNCTYPE(c_void_p, c_void_p)


class Registration(NamedTuple):
    bundle: tuple[int, int, int, int]  # instantiate, prepare, initialize, execute (0: none)
    traits: int
    handlers: tuple  # the ctypes callables of the four (None where absent)


_registry: dict[tuple[str, str], Registration] = {}
_registry_lock = threading.Lock()


def canonical_platform(platform: str) -> str:
    """XLA's canonical platform name ("cpu" and "host" are one)."""
    p = platform.lower()
    return {"cpu": "host", "gpu": "cuda"}.get(p, p)


def _metadata(execute: int) -> Metadata:
    """Ask a handler for its API version and traits (XLA's metadata call frame)."""
    metadata = Metadata(struct_size=_size(Metadata, "traits"))
    metadata.api_version.struct_size = _size(ApiVersion, "minor_version")
    ext = MetadataExtension(ExtensionBase(_size(MetadataExtension, "metadata"), 1, None),
                            ctypes.addressof(metadata))
    frame = CallFrame(struct_size=CALL_FRAME_SIZE, extension_start=ctypes.addressof(ext),
                      api=API_ADDRESS, ctx=None, stage=EXECUTE)
    frame.args.struct_size = _size(Args, "args")
    frame.rets.struct_size = _size(Rets, "rets")
    frame.attrs.struct_size = _size(Attrs, "attrs")
    err = _HANDLER(execute)(ctypes.addressof(frame))
    if err:
        raise take_error(err)
    return metadata


def register(name: str, bundle: Bundle, platform: str, traits: int = 0) -> None:
    """Register a handler bundle under (name, platform), as XLA does: an execute stage is
    required, the handler's API version must be ours, and a second registration must be the
    same one."""
    canonical = canonical_platform(platform)
    stages = (bundle.instantiate or 0, bundle.prepare or 0, bundle.initialize or 0,
              bundle.execute or 0)
    if not stages[EXECUTE]:
        raise runtime_error(INVALID_ARGUMENT, f"FFI handler for {name} on a platform "
                            f"{_display(platform)} must provide an execute implementation")
    if canonical == "host":  # (a handler for another platform is never called here)
        metadata = _metadata(stages[EXECUTE])
        version = metadata.api_version
        if (version.major_version, version.minor_version) != (API_MAJOR, API_MINOR):
            raise runtime_error(
                INVALID_ARGUMENT, f"FFI handler registration for {name} on platform {platform} "
                f"(canonical {canonical}) failed because the hander's API version "
                f"({version.major_version}.{version.minor_version}) is incompatible with the "
                f"framework's API version ({API_MAJOR}.{API_MINOR})")
        traits |= metadata.traits
    reg = Registration(stages, traits, tuple(_HANDLER(p) if p else None for p in stages))
    with _registry_lock:
        old = _registry.setdefault((name, canonical), reg)
    if old is not reg and (old.bundle != reg.bundle or old.traits != reg.traits):
        what = "traits" if old.traits != reg.traits else "bundle addresses"
        raise runtime_error(INVALID_ARGUMENT, f"Duplicate FFI handler registration for {name} "
                            f"on platform {platform} (canonical {canonical}) with different "
                            f"{what}")


def _display(platform: str) -> str:
    return "Host" if canonical_platform(platform) == "host" else platform


def find(name: str) -> Registration:
    """The CPU handler registered as `name`, or XLA's NOT_FOUND error."""
    reg = _registry.get((name, "host"))
    if reg is None:
        raise runtime_error(NOT_FOUND, f"No FFI handler registered for {name} on a platform "
                            "Host (canonical host)")
    return reg


def register_type(name: str, type_id: int, type_info: int) -> None:
    """Fill the XLA_FFI_TypeId at `type_id` with the id of type `name` (register_ffi_type)."""
    try:
        TypeId.from_address(type_id).type_id = _types.register(
            name, TypeId.from_address(type_id).type_id, type_info)
    except _Fail as e:
        raise runtime_error(e.code, str(e)) from None


# --- attributes -------------------------------------------------------------------------------

class EncodedAttrs:
    """A call frame's attributes (XLA_FFI_Attrs), sorted by name as the C++ binding expects,
    with every buffer they point into kept alive as long as this object."""

    def __init__(self, attrs: Sequence[tuple[str, Any]]):
        self.keep: list = []
        self.attrs = self._encode(sorted(attrs, key=lambda kv: kv[0].encode()))

    def _encode(self, items: Sequence[tuple[str, Any]]) -> Attrs:
        n = len(items)
        types = (c_int * max(n, 1))()
        names = (c_void_p * max(n, 1))()
        values = (c_void_p * max(n, 1))()
        for i, (name, value) in enumerate(items):
            span = self._bytes(name.encode())
            names[i] = ctypes.addressof(span)
            types[i], obj = self._value(name, value)
            values[i] = ctypes.addressof(obj)
        self.keep += [types, names, values]
        return Attrs(_size(Attrs, "attrs"), None, n, ctypes.addressof(types),
                     ctypes.addressof(names), ctypes.addressof(values))

    def _bytes(self, data: bytes) -> ByteSpan:
        buf = ctypes.create_string_buffer(data, len(data) + 1)
        span = ByteSpan(ctypes.addressof(buf), len(data))
        self.keep += [buf, span]
        return span

    def _value(self, name: str, value: Any) -> tuple[int, Any]:
        if isinstance(value, dict):
            attrs = self._encode(sorted(value.items(), key=lambda kv: kv[0].encode()))
            self.keep.append(attrs)
            return ATTR_DICTIONARY, attrs
        if isinstance(value, str):
            return ATTR_STRING, self._bytes(value.encode())
        if isinstance(value, bytes):
            return ATTR_STRING, self._bytes(value)
        if isinstance(value, np.ndarray):  # a dense array, flattened (any rank, as XLA does)
            data = np.ascontiguousarray(value).reshape(-1)
            if data.dtype.name not in _ARRAY_DTYPES:
                raise _Fail(INVALID_ARGUMENT,
                            f"Unsupported array element type for attribute: {name}")
            self.keep.append(data)
            arr = ArrayAttr(ffi_dtype(data.dtype), data.size, data.ctypes.data if data.size
                            else None)
            self.keep.append(arr)
            return ATTR_ARRAY, arr
        scalar = _scalar(name, value)
        holder = np.array([scalar])
        sc = Scalar(ffi_dtype(holder.dtype), holder.ctypes.data)
        self.keep += [holder, sc]
        return ATTR_SCALAR, sc


_ARRAY_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64"}
_SCALAR_DTYPES = _ARRAY_DTYPES | {"bool"}


def _scalar(name: str, value: Any) -> np.generic:
    """A scalar attribute as JAX passes it: Python bool/int/float as bool/int64/float64 (an
    int that does not fit raises, as in JAX), NumPy scalars as their own dtype."""
    if isinstance(value, (bool, np.bool_)):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, np.generic) and value.dtype.name in _SCALAR_DTYPES:
        return value
    if isinstance(value, np.floating):
        raise _Fail(INVALID_ARGUMENT, f"Unsupported float attribute bit width for attribute: "
                    f"{name}")
    raise _Fail(INVALID_ARGUMENT, f"Unsupported attribute type for attribute: {name}")


def check_attribute(name: str, value: Any) -> None:
    """JAX's errors at the call for a value that cannot be an attribute at all (its MLIR
    conversion fails there; XLA's own refusals come when the call runs)."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_attribute(k, v)
    elif isinstance(value, (np.complexfloating, complex)):
        raise TypeError(f"Unsupported scalar attribute type: {type(value)}")
    elif isinstance(value, int) and not isinstance(value, bool) and not (
            -2**63 <= value < 2**63):
        raise OverflowError("Python int too large to convert to C long")
    elif isinstance(value, (tuple, list)):
        for v in value:
            check_attribute(name, v)
    elif not isinstance(value, (bool, int, float, str, bytes, np.ndarray, np.generic,
                                np.dtype)):
        raise TypeError(f"No attribute handler defined for type: {type(value)}")


# --- calling a handler ------------------------------------------------------------------------

def wait(address: int) -> None:
    """Wait for the XLA_FFI_Future at `address` (then free it); raise the error it carries."""
    entry = _futures.get(address)
    if entry is None:
        raise runtime_error(INVALID_ARGUMENT, "an FFI handler returned a future that was not "
                            "made by XLA_FFI_Future_Create")
    entry[0].done.wait()  # (the GIL is let go: the thread completing it may need it)
    del _futures[address]
    if entry[0].error:
        raise take_error(entry[0].error)


class Frame:
    """An XLA_FFI_CallFrame for one call signature (buffer shapes and dtypes, attributes),
    built once: a call only writes its buffers' data pointers, the stage and its context (an
    eager call's; native code builds its own frame on its stack, backend/llvm/ffi_call.py)."""

    def __init__(self, args: Sequence[np.ndarray], rets: Sequence[np.ndarray],
                 attrs: EncodedAttrs):
        self.keep: list = [attrs]
        self.arg_bufs, arg_types, arg_ptrs = self._buffers(args)
        self.ret_bufs, ret_types, ret_ptrs = self._buffers(rets)
        self.ctx = Context()
        self.frame = CallFrame(
            struct_size=CALL_FRAME_SIZE, extension_start=None, api=API_ADDRESS,
            ctx=ctypes.addressof(self.ctx), stage=EXECUTE,
            args=Args(_size(Args, "args"), None, len(args), arg_types, arg_ptrs),
            rets=Rets(_size(Rets, "rets"), None, len(rets), ret_types, ret_ptrs),
            attrs=attrs.attrs, future=None)
        self.address = ctypes.addressof(self.frame)
        self.lock = threading.Lock()  # (one call at a time: another thread builds its own)

    def _buffers(self, arrays: Sequence[np.ndarray]) -> tuple[list, int, int]:
        n = len(arrays)
        types = (c_int * max(n, 1))(*([1] * n))  # XLA_FFI_ArgType/RetType_BUFFER
        ptrs = (c_void_p * max(n, 1))()
        bufs = []
        for i, x in enumerate(arrays):
            dims = (c_int64 * max(x.ndim, 1))(*x.shape)
            buf = Buffer(BUFFER_SIZE, None, ffi_dtype(x.dtype), None, x.ndim,
                         ctypes.addressof(dims))
            ptrs[i] = ctypes.addressof(buf)
            bufs.append(buf)
            self.keep.append(dims)
        self.keep += [types, ptrs]
        return bufs, ctypes.addressof(types), ctypes.addressof(ptrs)

    def run(self, handler, stage: int, instance: Instance, args: Sequence[np.ndarray],
            rets: Sequence[np.ndarray]) -> None:
        for buf, x in zip(self.arg_bufs, args):
            buf.data = x.ctypes.data if x.size else None
        for buf, x in zip(self.ret_bufs, rets):
            buf.data = x.ctypes.data if x.size else None
        self.frame.stage = stage
        self.frame.future = None
        self.ctx.instance, self.ctx.run_id, self.ctx.tag = instance.key, next(_run_ids), \
            CONTEXT_TAG
        try:
            err = handler(self.address)
            if err:
                raise take_error(err)
            if self.frame.future:  # an asynchronous handler: done when its future is
                wait(self.frame.future)
        finally:
            self.ctx.tag = 0


def instantiate(name: str, instance: Instance, attrs: Callable[[], EncodedAttrs]) -> None:
    """Run the instantiate stage of the bundle registered as `name` for `instance`, once (again
    after a failure), as XLA's CPU runtime does when it builds the program: with the call's
    attributes (`attrs()`) and no buffers. Raises JAX's JaxRuntimeError on the handler's
    error."""
    if instance.instantiated:
        return
    handler = find(name).handlers[INSTANTIATE]
    with instance.lock:  # (another thread's first call waits for the state)
        if not instance.instantiated:
            if handler is not None:
                Frame([], [], attrs()).run(handler, INSTANTIATE, instance, [], [])
            instance.instantiated = True


def call(name: str, instance: Instance, args: Sequence[np.ndarray],
         rets: Sequence[np.ndarray], attrs: Callable[[], EncodedAttrs]) -> None:
    """Run the handler registered as `name` on `args`, writing `rets` (C-contiguous arrays of
    the shapes and dtypes `instance` is always called with; `attrs()` its attributes): its
    instantiate stage the first time `instance` runs (`instantiate`), then execute. (XLA's CPU
    runtime never runs the prepare and initialize stages, GPU-only: nor do we.) Raises JAX's
    JaxRuntimeError on the handler's error."""
    handlers = find(name).handlers
    instantiate(name, instance, attrs)
    frame = instance.frame
    if frame is None:
        frame = instance.frame = Frame(args, rets, attrs())
    if not frame.lock.acquire(blocking=False):  # (the same program on two threads at once)
        frame = Frame(args, rets, attrs())
        frame.lock.acquire()
    try:
        frame.run(handlers[EXECUTE], EXECUTE, instance, args, rets)
    finally:
        frame.lock.release()


def capsule_pointer(obj: Any) -> int | None:
    """The pointer a PyCapsule holds (None if `obj` is not one)."""
    if type(obj).__name__ != "PyCapsule":
        return None
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(obj, get_name(obj))
