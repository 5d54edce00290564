"""jax.monitoring: listeners for named events. User-facing; the lists live in core/monitoring.py,
where the compiler fires JAX's event names for the stages it shares with JAX: tracing
('/jax/core/compile/jaxpr_trace_duration'), jaxpr -> LLVM IR ('.../jaxpr_to_mlir_module_duration'),
LLVM -> machine code ('.../backend_compile_duration') and the on-disk cache
('/jax/compilation_cache/...'). Loaded on first use (`jax.monitoring`), as in JAX."""
from __future__ import annotations

from .core import monitoring as _events
from .core.monitoring import (record_event, record_event_duration_secs,  # noqa: F401
                              record_event_time_span, record_scalar)


def register_event_listener(callback) -> None:
    """Register a callback to be invoked during record_event()."""
    _events.event_listeners.append(callback)


def register_event_duration_secs_listener(callback) -> None:
    """Register a callback to be invoked during record_event_duration_secs()."""
    _events.event_duration_secs_listeners.append(callback)


def register_event_time_span_listener(callback) -> None:
    """Register a callback to be invoked during record_event_time_span()."""
    _events.event_time_span_listeners.append(callback)


def register_scalar_listener(callback) -> None:
    """Register a callback to be invoked during record_scalar()."""
    _events.scalar_listeners.append(callback)


def _unregister(listeners: list, callback) -> None:
    assert callback in listeners  # (JAX's check: an AssertionError for an unknown one)
    listeners.remove(callback)


def unregister_event_listener(callback) -> None:
    """Unregister an event listener by callback."""
    _unregister(_events.event_listeners, callback)


def unregister_event_duration_listener(callback) -> None:
    """Unregister an event duration listener by callback."""
    _unregister(_events.event_duration_secs_listeners, callback)


def unregister_event_time_span_listener(callback) -> None:
    """Unregister an event time span listener by callback."""
    _unregister(_events.event_time_span_listeners, callback)


def unregister_scalar_listener(callback) -> None:
    """Unregister a scalar event listener by callback."""
    _unregister(_events.scalar_listeners, callback)


def clear_event_listeners() -> None:
    """Clear event listeners (all four kinds; JAX 0.12's leaves the scalar ones by a slip)."""
    for listeners in (_events.event_listeners, _events.event_duration_secs_listeners,
                      _events.event_time_span_listeners, _events.scalar_listeners):
        listeners.clear()


__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]
