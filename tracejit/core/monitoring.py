"""Events: the listener lists of `jax.monitoring` and the names of the events the compiler fires
(JAX's names where tracejit has the same stage). Core, so the runtime can fire them; the public
module (tracejit/monitoring.py) and the profiler (tracejit/profiler.py) are built on it."""
from __future__ import annotations

import time
from typing import Callable

# JAX's names (jax/_src/dispatch.py, compiler.py, compilation_cache.py), each fired where
# tracejit does the same work: tracing to a jaxpr; jaxpr -> LLVM IR (passes, fusion, codegen;
# JAX's jaxpr -> MLIR); LLVM IR -> machine code (O3 and code generation, or the disk cache's
# object code; JAX's XLA compile)
JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
CACHE_MISS_EVENT = "/jax/compilation_cache/cache_misses"
CACHE_RETRIEVAL_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"
TASK_USING_CACHE_EVENT = "/jax/compilation_cache/tasks_using_cache"
TASK_DISABLED_CACHE_EVENT = "/jax/compilation_cache/task_disabled_cache"
# tracejit's own stages inside JAX's jaxpr -> MLIR one, for the profiler's timeline
OPTIMIZE_EVENT = "/tracejit/compile/optimize_duration"   # passes and fusion
CODEGEN_EVENT = "/tracejit/compile/codegen_duration"     # kernel plan -> LLVM IR

event_listeners: list[Callable] = []
event_duration_secs_listeners: list[Callable] = []
event_time_span_listeners: list[Callable] = []
scalar_listeners: list[Callable] = []
# the profiler's, apart from the user's lists (clear_event_listeners leaves a trace running):
# each called as a time span listener for the stages log_elapsed_time times
profiler_spans: list[Callable] = []


def record_event(event: str, **kwargs: str | int) -> None:
    """Record an event."""
    for callback in list(event_listeners):
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Record an event duration in seconds (float)."""
    for callback in list(event_duration_secs_listeners):
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
    """Record an event start and end time in seconds (float)."""
    for callback in list(event_time_span_listeners):
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Record a scalar summary value."""
    for callback in list(scalar_listeners):
        callback(event, value, **kwargs)


class log_elapsed_time:  # noqa: N801  (a context manager, as JAX's dispatch.log_elapsed_time)
    """Times a compile stage as JAX does: its start time as a scalar on entry, then its duration
    and its time span (wall-clock seconds since the epoch) on a normal exit, each with
    `fun_name` (a stage that raised too, as in JAX)."""
    __slots__ = ("event", "fun_name", "start")

    def __init__(self, event: str, fun_name: str):
        self.event, self.fun_name = event, fun_name

    def __enter__(self) -> None:
        self.start = time.time()
        if scalar_listeners:
            record_scalar(self.event, self.start, fun_name=self.fun_name)

    def __exit__(self, exc_type, exc, tb) -> None:
        end = time.time()
        if event_duration_secs_listeners:
            record_event_duration_secs(self.event, end - self.start, fun_name=self.fun_name)
        if event_time_span_listeners:
            record_event_time_span(self.event, self.start, end, fun_name=self.fun_name)
        for callback in list(profiler_spans):
            callback(self.event, self.start, end, fun_name=self.fun_name)
