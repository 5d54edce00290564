"""jax.profiler on tracejit's runtime. User-facing; loaded on first use (`jax.profiler`).

A trace (start_trace/stop_trace, `trace`, ProfileSession) records, from every thread:
- each compile stage of each jitted function, under tracejit's stage names ("trace",
  "optimize" = passes and fusion, "codegen" = LLVM IR, "LLVM compile" = O3 and machine code or
  the disk cache's object code), from the events the compiler fires (core/monitoring.py);
- each call of a jitted function ("execute", with its name);
- TraceAnnotation / StepTraceAnnotation / annotate_function spans, with their keyword args.
It writes a Chrome trace-event JSON (gzipped) where JAX's writes its trace:
log_dir/plugins/profile/<date_time>/<host>.trace.json.gz, which Perfetto (ui.perfetto.dev) and
chrome://tracing open; with create_perfetto_trace (or _link) also perfetto_trace.json.gz there,
as JAX writes it. What differs from JAX: no XPlane (`.xplane.pb`) and so no ProfileData, no
per-kernel device events (a program runs as one native call), no profiler server, and
create_perfetto_link prints where the file is instead of serving it.

device_memory_profile is a pprof profile (gzipped protobuf, as JAX's) of the live arrays:
samples of (count, bytes) per array type (dtype[shape]) rather than per Python allocation
site, which tracejit does not record.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import pathlib
import socket
import threading
import time
from typing import Any, Callable, Iterator

from .core import monitoring as _events
from .core.global_array import GlobalArray
from .runtime import jit as _jit
from .runtime.devices import live_arrays
from .version import __version__

# the compile events' stages, as the timeline names them
_STAGES = {
    _events.JAXPR_TRACE_EVENT: "trace",
    _events.OPTIMIZE_EVENT: "optimize",
    _events.CODEGEN_EVENT: "codegen",
    _events.BACKEND_COMPILE_EVENT: "LLVM compile",
}


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.session: ProfileSession | None = None


_state = _State()


class ProfileOptions:
    """Accepted for JAX's signatures; tracejit's trace has no options to set (host and Python
    tracer levels, device tracing: all of what it records is always on)."""

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.enable_hlo_proto = False
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.repository_path = ""


class ProfileSession:
    """A profiling session: start()/stop(), or a with-block (as JAX's). On stop, the trace is
    written under `log_dir` when one is given; `events` holds it (Chrome trace events)."""

    def __init__(self, log_dir: os.PathLike | str | None = None,
                 create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                 profiler_options: ProfileOptions | None = None):
        self.log_dir = str(log_dir) if log_dir is not None else None
        self.create_perfetto_link = create_perfetto_link
        self.create_perfetto_trace = create_perfetto_trace or create_perfetto_link
        self.profiler_options = profiler_options
        self.events: list[dict] = []
        self.trace_file: pathlib.Path | None = None  # where stop() wrote it
        self._is_running = False
        self._lock = threading.Lock()
        self._threads: dict[int, str] = {}

    @property
    def is_running(self) -> bool:
        return self._is_running

    @property
    def profile_data(self) -> None:
        """JAX's XPlane data: tracejit has none (its trace is `events`)."""
        return None

    def start(self) -> ProfileSession:
        with _state.lock:
            if _state.session is not None or self._is_running:
                raise RuntimeError("Profile has already been started. Only one profile may be "
                                   "run at a time.")
            self.events = []
            self._is_running = True
            _state.session = self
            _events.profiler_spans.append(self._compile_span)
            _jit.Jitted._call = _traced_call  # (off the dispatch path while no trace runs)
            _jit.Jitted.__call__ = _jit.Jitted._call_unshortened  # (its shortcut skips _call)
        return self

    def stop(self) -> None:
        with _state.lock:
            if not self._is_running:
                raise RuntimeError("No profile started")
            _jit.Jitted._call = _untraced_call
            _jit.Jitted.__call__ = _shortcut_call
            _events.profiler_spans.remove(self._compile_span)
            self._is_running = False
            _state.session = None
        if self.log_dir is not None:
            self.export(self.log_dir)

    def __enter__(self) -> ProfileSession:
        return self.start()

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        if self.is_running:
            self.stop()

    # -- recording (any thread)
    def add_span(self, name: str, start: float, end: float, cat: str, args: dict) -> None:
        """A complete event from `start` to `end` (seconds since the epoch, time.time())."""
        thread = threading.current_thread()
        event = {"name": name, "cat": cat, "ph": "X", "ts": start * 1e6,
                 "dur": max(end - start, 0.0) * 1e6, "pid": os.getpid(), "tid": thread.ident,
                 "args": args}
        with self._lock:
            self._threads.setdefault(thread.ident, thread.name)
            self.events.append(event)

    def _compile_span(self, event: str, start: float, end: float, *, fun_name: str) -> None:
        stage = _STAGES.get(event)
        if stage is not None:
            self.add_span(stage, start, end, "compile", {"fun_name": fun_name, "event": event})

    # -- writing
    def trace_json(self, metadata: bool = True) -> dict:
        """The Chrome trace-event document (JAX's perfetto file has no "metadata" field)."""
        pid = os.getpid()
        with self._lock:
            names = [{"name": "process_name", "ph": "M", "pid": pid,
                      "args": {"name": f"tracejit host ({socket.gethostname()})"}}]
            names += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}} for tid, name in self._threads.items()]
            doc: dict[str, Any] = {"displayTimeUnit": "ns",
                                   "traceEvents": names + sorted(self.events,
                                                                 key=lambda e: e["ts"])}
        if metadata:
            doc["metadata"] = {"jax_version": __version__, "backend": "tracejit (LLVM, cpu)"}
        return doc

    def export(self, log_dir: os.PathLike | str) -> pathlib.Path:
        """Writes the trace where JAX writes its own; returns the folder."""
        folder = pathlib.Path(log_dir).absolute() / "plugins" / "profile" / \
            time.strftime("%Y_%m_%d_%H_%M_%S")
        folder.mkdir(parents=True, exist_ok=True)
        self.trace_file = folder / f"{socket.gethostname()}.trace.json.gz"
        with gzip.open(self.trace_file, "wt", encoding="utf-8") as f:
            json.dump(self.trace_json(), f)
        if self.create_perfetto_trace:
            perfetto = folder / "perfetto_trace.json.gz"
            with gzip.open(perfetto, "wt", encoding="utf-8") as f:
                json.dump(self.trace_json(metadata=False), f)
            if self.create_perfetto_link:
                print(f"Perfetto trace written to {perfetto}: open https://ui.perfetto.dev and "
                      "load it (tracejit does not serve it to the UI as JAX does).")
        return folder


_untraced_call, _shortcut_call = _jit.Jitted._call, _jit.Jitted.__call__


def _traced_call(self, args: tuple, kwargs: dict):
    """Jitted._call while a trace runs: the call as an "execute" span (compiles inside it show
    as their own spans, nested)."""
    start = time.time()
    try:
        return _untraced_call(self, args, kwargs)
    finally:
        session = _state.session
        if session is not None:
            session.add_span("execute", start, time.time(), "execute",
                             {"fun_name": f"jit({self.fun_name})"})


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> ProfileSession:
    """Starts a profiler trace (one at a time: RuntimeError while another runs); stop_trace
    writes it under `log_dir`."""
    return ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                          profiler_options).start()


def stop_trace() -> None:
    """Stops the running trace and writes it to the log_dir of its start_trace (RuntimeError if
    none runs). JAX returns its ProfileData; tracejit has none (None)."""
    with _state.lock:
        session = _state.session
    if session is None:
        raise RuntimeError("No profile started")
    session.stop()


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str | None = None, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[ProfileSession]:
    """Context manager taking a profiler trace, written under `log_dir` (if given) on exit."""
    with ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                        profiler_options) as session:
        yield session


class TraceAnnotation:
    """Context manager that generates a trace event spanning the enclosed code, with its
    keyword arguments as the event's args, when a trace runs (else it costs a lookup)."""

    def __init__(self, name: str, **kwargs):
        self.name, self.kwargs = name, kwargs

    def __enter__(self) -> TraceAnnotation:
        self._start = time.time()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        session = _state.session
        if session is not None:
            session.add_span(self.name, self._start, time.time(), "annotation",
                             {k: str(v) for k, v in self.kwargs.items()})


class StepTraceAnnotation(TraceAnnotation):
    """A trace event marking a step (`step_num=` the step's number), as JAX's."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
    """Decorator generating a trace event for each execution of `func`."""
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def start_server(port: int):
    raise NotImplementedError("jax.profiler.start_server: tracejit has no profiler server to "
                              "connect TensorBoard or XProf to; use jax.profiler.trace(log_dir) "
                              "and open the trace file it writes in https://ui.perfetto.dev")


def stop_server():
    raise RuntimeError("No active profiler server.")


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """JAX's hook to profile a subprocess through the profiler server it runs (start_server
    there). tracejit has no profiler server, so no process has one to connect to: registering
    fails as JAX's does when it cannot connect, with JaxRuntimeError (a RuntimeError)."""
    from .core.errors import JaxRuntimeError
    raise JaxRuntimeError(
        f"UNAVAILABLE: cannot register subprocess {pid} at localhost:{port}: tracejit has no "
        f"profiler server, in this process or another; profile each process with "
        f"jax.profiler.trace(log_dir) and open the trace files it writes in "
        f"https://ui.perfetto.dev")


# --- the memory profile: pprof's protobuf, written by hand (no protobuf dependency) ----------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # (int64 fields: two's complement, as protobuf encodes negatives)
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):  # length-delimited
        return _varint(number << 3 | 2) + _varint(len(value)) + value
    return _varint(number << 3) + _varint(value)


def device_memory_profile(backend: str | None = None) -> bytes:
    """A pprof-format profile (gzipped protobuf) of the arrays alive in this process: a sample
    per array of ("allocations", "count") 1 and ("space", "bytes"), labelled kind=buffer and
    device=cpu:0, as JAX's. tracejit keeps no Python stack per allocation, so a sample's
    location is its type (dtype[shape]) rather than the line that made it, and there are no
    samples for executables (JAX's are of 0 bytes on CPU)."""
    strings = ["", "allocations", "count", "space", "bytes", "kind", "buffer", "device",
               "cpu:0"]
    index = {s: i for i, s in enumerate(strings)}

    def intern(s: str) -> int:
        if s not in index:
            index[s] = len(strings)
            strings.append(s)
        return index[s]

    body = b"".join(_field(1, _field(1, index[t]) + _field(2, index[u]))
                    for t, u in (("allocations", "count"), ("space", "bytes")))
    labels = (_field(3, _field(1, index["kind"]) + _field(2, index["buffer"])) +
              _field(3, _field(1, index["device"]) + _field(2, index["cpu:0"])))
    functions = locations = samples = b""
    where: dict[str, int] = {}  # array type -> its location (and function) id
    for x in live_arrays():  # one sample per buffer, as JAX's
        local = x.local if type(x) is GlobalArray else x
        key = f"{x.dtype.name}[{','.join(map(str, x.shape))}]"
        if key not in where:
            i = where[key] = len(where) + 1
            name = intern(key)
            functions += _field(5, _field(1, i) + _field(2, name) + _field(3, name))
            locations += _field(4, _field(1, i) + _field(4, _field(1, i)))
        nbytes = int(local.size) * x.dtype.itemsize
        values = _field(2, _varint(1) + _varint(nbytes))  # (packed repeated int64)
        samples += _field(2, _field(1, _varint(where[key])) + values + labels)
    table = b"".join(_field(6, s.encode()) for s in strings)
    return gzip.compress(body + samples + locations + functions + table +
                         _field(9, time.time_ns()))


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Writes device_memory_profile() to `filename`."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)


_NO_XSPACE = ("tracejit's profiler records no XSpace (XPlane protobuf), which these read and "
              "write: its trace is a Chrome trace-event JSON (start_trace/stop_trace write it "
              "under log_dir/plugins/profile/, and create_perfetto_trace=True adds "
              "perfetto_trace.json.gz); read that file, or a ProfileSession's .events, instead")


class _XSpaceView:
    """JAX 0.12's views of a captured XSpace (ProfileData and its planes, lines, events)."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(f"jax.profiler.{type(self).__name__}: {_NO_XSPACE}.")

    @classmethod
    def from_file(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"jax.profiler.{cls.__name__}.from_file: {_NO_XSPACE}.")

    @classmethod
    def from_serialized_xspace(cls, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"jax.profiler.{cls.__name__}.from_serialized_xspace: {_NO_XSPACE}.")


class ProfileData(_XSpaceView):
    """A captured XSpace (JAX 0.12): not recorded here."""


class ProfilePlane(_XSpaceView):
    """One XPlane of a ProfileData (JAX 0.12): not recorded here."""


class ProfileLine(_XSpaceView):
    """One XLine of a ProfilePlane (JAX 0.12): not recorded here."""


class ProfileEvent(_XSpaceView):
    """One XEvent of a ProfileLine (JAX 0.12): not recorded here."""


def export_profile_data(profile_data: Any, log_dir: Any, create_perfetto_link: bool = False,
                        create_perfetto_trace: bool = False, session_id: str | None = None
                        ) -> None:
    """JAX 0.12: write a ProfileData / ProfileSession's XSpace under log_dir. There is none."""
    raise NotImplementedError(f"jax.profiler.export_profile_data: {_NO_XSPACE}.")


__all__ = ["ProfileData", "ProfileEvent", "ProfileLine", "ProfileOptions", "ProfilePlane",
           "ProfileSession", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "export_profile_data", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]
