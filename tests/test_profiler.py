"""jax.monitoring and jax.profiler: listeners and the compile events JAX fires (real JAX 0.10 the
oracle for names and order), the trace a profiler session writes (read back as Chrome trace
JSON), annotations, and the pprof memory profile (decoded here, checked against the live
arrays and against the layout of JAX's own)."""
import gc
import gzip
import json
import pathlib

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.runtime import tiering

jax = pytest.importorskip("jax")
jnp = jax.numpy
LIBS = [(tracejit, tnp), (jax, jnp)]


def _recorder(lib):
    """Listeners of every kind, appending (kind, event, payload, kwargs) to the returned list;
    and a function that unregisters them."""
    got = []
    listeners = [
        (lib.monitoring.register_event_listener, lib.monitoring.unregister_event_listener,
         lambda e, **k: got.append(("event", e, None, k))),
        (lib.monitoring.register_event_duration_secs_listener,
         lib.monitoring.unregister_event_duration_listener,
         lambda e, d, **k: got.append(("duration", e, d, k))),
        (lib.monitoring.register_event_time_span_listener,
         lib.monitoring.unregister_event_time_span_listener,
         lambda e, s, t, **k: got.append(("span", e, (s, t), k))),
        (lib.monitoring.register_scalar_listener, lib.monitoring.unregister_scalar_listener,
         lambda e, v, **k: got.append(("scalar", e, v, k))),
    ]
    for register, _, fn in listeners:
        register(fn)

    def remove():
        for _, unregister, fn in listeners:
            unregister(fn)
    return got, remove


@pytest.mark.parametrize("lib,_", LIBS)
def test_record_functions_reach_their_listeners(lib, _):
    """Each record_* call reaches the listeners of its kind only, with its keyword args; an
    unregistered listener hears nothing; unregistering an unknown one fails as in JAX."""
    got, remove = _recorder(lib)
    try:
        lib.monitoring.record_event("/test/e", k="v")
        lib.monitoring.record_event_duration_secs("/test/d", 0.5, n=3)
        lib.monitoring.record_event_time_span("/test/s", 1.0, 2.5)
        lib.monitoring.record_scalar("/test/x", 7, fun_name="g")
    finally:
        remove()
    lib.monitoring.record_event("/test/after")
    assert got == [("event", "/test/e", None, {"k": "v"}),
                   ("duration", "/test/d", 0.5, {"n": 3}),
                   ("span", "/test/s", (1.0, 2.5), {}),
                   ("scalar", "/test/x", 7, {"fun_name": "g"})]
    with pytest.raises(AssertionError):
        lib.monitoring.unregister_event_listener(lambda e: None)


def _compile_events(lib, jnp_, name):
    """The /jax/core/compile/ durations (event, fun_name) and scalars a first and a second call
    of a fresh jitted function fire."""
    exec_ns = {}
    exec(f"def {name}(x):\n    return jnp.sin(x) * 2 + 1", {"jnp": jnp_}, exec_ns)
    f = lib.jit(exec_ns[name])
    x = jnp_.ones(3)
    got, remove = _recorder(lib)
    try:
        f(x).block_until_ready()
        first = list(got)
        got.clear()
        f(x).block_until_ready()
        second = list(got)
    finally:
        remove()

    def compile_durations(events):
        return [(e, k["fun_name"]) for kind, e, _, k in events
                if kind == "duration" and e.startswith("/jax/core/compile/")]
    return compile_durations(first), compile_durations(second), first


def test_compile_events_are_jaxs():
    """A first call fires JAX's three compile stage durations, in JAX's order and with its
    function names ("f" for tracing, "jit(f)" after); a cached call fires none. Each stage
    also fires its start time as a scalar and its span (start <= end), as JAX's do."""
    ours, ours_again, raw = _compile_events(tracejit, tnp, "stage_events_fn")
    theirs, theirs_again, _ = _compile_events(jax, jnp, "stage_events_fn")
    assert ours == theirs == [
        ("/jax/core/compile/jaxpr_trace_duration", "stage_events_fn"),
        ("/jax/core/compile/jaxpr_to_mlir_module_duration", "jit(stage_events_fn)"),
        ("/jax/core/compile/backend_compile_duration", "jit(stage_events_fn)")]
    assert ours_again == theirs_again == []
    spans = {(e, k["fun_name"]): p for kind, e, p, k in raw if kind == "span"}
    scalars = {(e, k["fun_name"]): v for kind, e, v, k in raw if kind == "scalar"}
    for key in ours:
        start, end = spans[key]
        assert scalars[key] == start <= end


def test_compile_events_name_tracejits_own_stages():
    """Inside JAX's jaxpr -> MLIR stage, tracejit's passes and codegen fire their own durations,
    which together take no longer than it."""
    _, _, raw = _compile_events(tracejit, tnp, "own_stages_fn")
    durations = {e: d for kind, e, d, _ in raw if kind == "duration"}
    inner = durations["/tracejit/compile/optimize_duration"] + \
        durations["/tracejit/compile/codegen_duration"]
    assert 0 <= inner <= durations["/jax/core/compile/jaxpr_to_mlir_module_duration"]


@pytest.mark.usefixtures("second_tier")
def test_persistent_cache_events(tmp_path):
    """With the on-disk cache on, a program's compile requests it, and misses once it is new
    (JAX's event names); the same program compiled again in a fresh process state (the
    in-process cache cleared) is a hit, with the time it took to load."""
    from tracejit.core.config import config
    old = config.tracejit_cache_dir
    config.update("tracejit_cache_dir", str(tmp_path))
    got, remove = _recorder(tracejit)
    try:
        tracejit.jit(lambda x: tnp.cos(x) * 3 - 0.25)(tnp.ones(5))
        first = [e for kind, e, _, _ in got if e.startswith("/jax/compilation_cache/")]
        got.clear()
        tiering.wait()  # (its final code stored: clear_caches does not wait for it)
        tracejit.clear_caches()
        tracejit.jit(lambda x: tnp.cos(x) * 3 - 0.25)(tnp.ones(5))
        second = [(kind, e) for kind, e, _, _ in got if e.startswith("/jax/compilation_cache/")]
    finally:
        remove()
        config.update("tracejit_cache_dir", old)
    assert first[-2:] == ["/jax/compilation_cache/compile_requests_use_cache",
                          "/jax/compilation_cache/cache_misses"]
    assert second == [("event", "/jax/compilation_cache/compile_requests_use_cache"),
                      ("event", "/jax/compilation_cache/cache_hits"),
                      ("duration", "/jax/compilation_cache/cache_retrieval_time_sec")]


def test_clear_event_listeners():
    got = []
    tracejit.monitoring.register_event_listener(lambda e, **k: got.append(e))
    tracejit.monitoring.register_scalar_listener(lambda e, v, **k: got.append(e))
    tracejit.monitoring.clear_event_listeners()
    tracejit.monitoring.record_event("/test/cleared")
    tracejit.monitoring.record_scalar("/test/cleared", 1)
    assert got == []


# --- the profiler ------------------------------------------------------------------------------

def _read_trace(log_dir: pathlib.Path) -> tuple[dict, list[pathlib.Path]]:
    files = sorted(log_dir.glob("plugins/profile/*/*.trace.json.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0], "rt") as f:
        return json.load(f), sorted(files[0].parent.iterdir())


def test_trace_writes_chrome_trace_of_compile_and_execute(tmp_path):
    """jax.profiler.trace writes a gzipped Chrome trace (where JAX writes its trace.json.gz,
    and perfetto_trace.json.gz on request, without "metadata" as JAX's): the compile stages
    under tracejit's names and each call of the jitted function, nested as they ran."""
    def traced_fn(x):
        return tnp.tanh(x) @ x.T

    f = tracejit.jit(traced_fn)
    x = tnp.ones((8, 8))
    with tracejit.profiler.trace(tmp_path, create_perfetto_trace=True) as session:
        assert session.is_running
        f(x).block_until_ready()
        f(x).block_until_ready()
    assert not session.is_running
    doc, folder = _read_trace(tmp_path)
    assert [p.name for p in folder] == ["perfetto_trace.json.gz",
                                        f"{session.trace_file.name}"]
    with gzip.open(folder[0], "rt") as fp:
        perfetto = json.load(fp)
    assert "metadata" in doc and "metadata" not in perfetto
    assert perfetto["traceEvents"] == doc["traceEvents"]
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = [e["name"] for e in spans]
    assert names == ["execute", "trace", "optimize", "codegen", "LLVM compile", "execute"]
    assert {e["args"]["fun_name"] for e in spans} == {"traced_fn", "jit(traced_fn)"}
    first_call = spans[0]
    for e in spans[1:5]:  # the compile happened inside the first call
        assert first_call["ts"] <= e["ts"] and \
            e["ts"] + e["dur"] <= first_call["ts"] + first_call["dur"] + 1
    assert spans[5]["ts"] >= spans[0]["ts"] + spans[0]["dur"]
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in doc["traceEvents"])


def test_annotations(tmp_path):
    """TraceAnnotation / StepTraceAnnotation / annotate_function spans carry their names and
    keyword args; outside a trace they record nothing and change no result."""
    @tracejit.profiler.annotate_function
    def annotated(a):
        return a + 1

    def named(a):
        return a * 2
    named = tracejit.profiler.annotate_function(named, name="renamed", extra=5)
    assert annotated(1) == 2 and named(2) == 4  # (no trace running)
    tracejit.profiler.start_trace(tmp_path)
    try:
        with tracejit.profiler.StepTraceAnnotation("train", step_num=7):
            with tracejit.profiler.TraceAnnotation("inner", size=3):
                assert annotated(1) == 2
            assert named(3) == 6
    finally:
        tracejit.profiler.stop_trace()
    doc, _ = _read_trace(tmp_path)
    spans = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X"}
    assert sorted(spans) == ["inner", "renamed",
                             "test_annotations.<locals>.annotated", "train"]
    assert spans["train"]["args"] == {"step_num": "7", "_r": "1"}
    assert spans["inner"]["args"] == {"size": "3"}
    assert spans["renamed"]["args"] == {"extra": "5"}
    outer = spans["train"]
    for e in spans.values():
        assert outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1


@pytest.mark.parametrize("lib,_", LIBS)
def test_trace_errors_are_jaxs(lib, _, tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        lib.profiler.stop_trace()
    if lib is tracejit:  # (starting JAX's profiler twice is the same error, not run here)
        lib.profiler.start_trace(tmp_path)
        try:
            with pytest.raises(RuntimeError, match="Profile has already been started"):
                lib.profiler.start_trace(tmp_path)
        finally:
            lib.profiler.stop_trace()


def test_no_trace_leaves_dispatch_as_it_was():
    """Outside a trace the jitted call is the plain one (the profiler's wrapper is gone)."""
    from tracejit.runtime.jit import Jitted
    from tracejit.profiler import _untraced_call
    with tracejit.profiler.trace(None):
        assert Jitted._call is not _untraced_call
    assert Jitted._call is _untraced_call


# --- the memory profile: pprof, decoded by hand --------------------------------------------

def _varint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def _fields(b: bytes) -> list[tuple[int, object]]:
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        if key & 7 == 0:
            v, i = _varint(b, i)
        elif key & 7 == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"wire type {key & 7}")
        out.append((key >> 3, v))
    return out


def _packed(b: bytes) -> list[int]:
    i, out = 0, []
    while i < len(b):
        v, i = _varint(b, i)
        out.append(v)
    return out


def _profile(lib) -> tuple[list[str], list[tuple[list[int], dict]]]:
    """(sample types as strings, [(values, labels)]) of lib's device memory profile."""
    raw = _fields(gzip.decompress(lib.profiler.device_memory_profile()))
    strings = [v.decode() for n, v in raw if n == 6]
    types = [strings[dict(_fields(v))[1]] + "/" + strings[dict(_fields(v))[2]]
             for n, v in raw if n == 1]
    samples = []
    for n, v in raw:
        if n == 2:
            sample = _fields(v)
            values = next(_packed(x) for k, x in sample if k == 2)
            labels = {strings[dict(_fields(x))[1]]: strings[dict(_fields(x))[2]]
                      for k, x in sample if k == 3}
            samples.append((values, labels))
    return types, samples


def test_device_memory_profile_counts_the_live_arrays(tmp_path):
    """The profile is pprof as JAX's (sample types, a sample per buffer labelled kind=buffer
    and device=cpu:0), and its buffer bytes are those of the live arrays; an array made
    after it is one more sample of its bytes in the next one."""
    held = tracejit.device_put(np.ones(5, np.float32)), jnp.ones(5)  # noqa: F841 (alive)
    gc.disable()  # (nothing collected between the profile and the list of live arrays)
    try:
        ours_types, ours = _profile(tracejit)
        live = sum(x.nbytes for x in tracejit.live_arrays())
    finally:
        gc.enable()
    jax_types, theirs = _profile(jax)
    assert ours_types == jax_types == ["allocations/count", "space/bytes"]
    assert {tuple(sorted(s[1].items())) for s in theirs if s[1]["kind"] == "buffer"} == \
        {tuple(sorted(s[1].items())) for s in ours} == {(("device", "cpu:0"),
                                                          ("kind", "buffer"))}
    assert sum(v[1] for v, _ in ours) == live
    assert all(v[0] == 1 for v, _ in ours)
    keep = tracejit.device_put(np.zeros((123, 7), np.float32))  # noqa: F841 (kept alive)
    _, after = _profile(tracejit)
    assert [v[1] for v, _ in after].count(123 * 7 * 4) == \
        [v[1] for v, _ in ours].count(123 * 7 * 4) + 1
    path = tmp_path / "memory.prof"
    tracejit.profiler.save_device_memory_profile(path)
    assert _fields(gzip.decompress(path.read_bytes()))  # a gzipped protobuf, as JAX's
