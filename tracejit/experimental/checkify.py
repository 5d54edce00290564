"""jax.experimental.checkify: `check` assertions made functional by `checkify`, which returns
an Error value beside the function's output. User-facing layer, built from jax.numpy.

The error state is threaded as ordinary arrays (a flag, the failing check's code and each
check's formatted arguments) through the function checkify traces, so `jit(checkify(f))`
compiles it natively. Checks must be made at checkify's own level: one inside a jit, vmap or
loop body nested in the checkified function raises NotImplementedError (put the jit around
checkify instead).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

import numpy as np

from .. import numpy as jnp
from ..core import trace as _trace
from ..core.array import BaseArray
from ..core.pytree import register_pytree_node, tree_flatten
from ..core.trace import Tracer

Out = TypeVar("Out")


class JaxException(Exception):
    """The base class of the error kinds checkify can find."""


class FailedCheckError(JaxException):
    """A `checkify.check` whose predicate was False."""


class JaxRuntimeError(ValueError):
    """Raised by `Error.throw()` and by an eager `check` that fails."""


user_checks = frozenset({FailedCheckError})
all_checks = user_checks  # (tracejit finds only user checks: no NaN, index or div checks)


class Error:
    """What a checkified function found: `get()` is the first failed check's message (None if
    none failed), `throw()` raises it. A pytree of arrays, so it can leave jit."""

    def __init__(self, failed, code, payloads: tuple, messages: tuple):
        self._failed = failed            # bool scalar: some check failed
        self._code = code                # int32 scalar: which (index into messages)
        self._payloads = payloads        # per check: the pytree of its format arguments
        self._messages = messages        # per check: its message template (static)

    def get(self) -> str | None:
        if not bool(self._failed):
            return None
        code = int(self._code)
        args, kwargs = self._payloads[code]
        return self._messages[code].format(*args, **kwargs) + " (`check` failed)"

    def get_exception(self) -> JaxException | None:
        return FailedCheckError() if bool(self._failed) else None

    def throw(self) -> None:
        message = self.get()
        if message is not None:
            raise JaxRuntimeError(message)

    def __str__(self) -> str:
        return f"Error({self.get()})"

    __repr__ = __str__


register_pytree_node(
    Error, lambda e: ((e._failed, e._code, e._payloads), e._messages),
    lambda messages, children: Error(*children, messages))


class _Collector(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict] = []


_collector = _Collector()


def _trace_level() -> tuple:
    return len(_trace._state.trace_stack), _trace._state.dynamic_trace


def _check_payload(tree: Any) -> None:
    for leaf in tree_flatten(tree)[0]:
        if not isinstance(leaf, (BaseArray, np.ndarray, np.generic)):
            raise TypeError(f"Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {leaf!r} of type {type(leaf)}.")


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Assert `pred` (a boolean scalar). Under `checkify` the failure becomes part of the
    returned Error; called eagerly outside it, a False `pred` raises JaxRuntimeError."""
    if not (isinstance(pred, bool) or isinstance(pred, BaseArray) and pred.shape == ()
            and pred.dtype == np.dtype(bool)):
        raise TypeError(f"check takes a scalar pred as argument, got {pred}")
    _check_payload((fmt_args, fmt_kwargs))
    if not _collector.stack:
        if isinstance(pred, Tracer) and not _trace.is_concrete(pred):
            raise ValueError(
                "Cannot abstractly evaluate a checkify.check which was not functionalized. "
                "This probably means you tried to stage (jit/scan/pmap/...) a `check` without "
                "functionalizing it through `checkify.checkify`.")
        if not bool(pred):
            raise JaxRuntimeError(msg.format(*fmt_args, **fmt_kwargs) + " (`check` failed)")
        return
    frame = _collector.stack[-1]
    if _trace_level() != frame["level"]:
        raise NotImplementedError(
            "tracejit's checkify takes checks made directly in the checkified function, not "
            "inside a jit, vmap or loop body nested in it: put jax.jit around checkify instead")
    failed_here = jnp.logical_not(jnp.asarray(pred, dtype=bool))
    code = len(frame["messages"])
    first = jnp.logical_and(failed_here, jnp.logical_not(frame["failed"]))
    frame["code"] = jnp.where(first, jnp.int32(code), frame["code"])
    frame["failed"] = jnp.logical_or(frame["failed"], failed_here)
    frame["messages"].append(msg)
    frame["payloads"].append((fmt_args, fmt_kwargs))


def checkify(f: Callable[..., Out], errors: frozenset = user_checks
             ) -> Callable[..., tuple[Error, Out]]:
    """`f` returning (Error, its output): the first failed `check` made while it ran."""
    unknown = set(errors) - set(all_checks)
    if unknown:
        raise NotImplementedError(f"tracejit's checkify finds only user checks, not {unknown}")

    def checked(*args, **kwargs):
        frame = {"level": _trace_level(), "failed": jnp.asarray(False),
                 "code": jnp.asarray(0, jnp.int32), "messages": [], "payloads": []}
        _collector.stack.append(frame)
        try:
            out = f(*args, **kwargs)
        finally:
            _collector.stack.pop()
        error = Error(frame["failed"], frame["code"], tuple(frame["payloads"]),
                      tuple(frame["messages"]))
        return error, out

    return checked


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """`check` under checkify; outside it, nothing (JAX's debug_check)."""
    if _collector.stack:
        check(pred, msg, *fmt_args, **fmt_kwargs)


init_error = Error(np.bool_(False), np.int32(0), (), ())  # no check failed


def check_error(error: Error) -> None:
    """Raise the error's failure when it holds one (as `error.throw()`)."""
    error.throw()


__all__ = ["Error", "FailedCheckError", "JaxException", "JaxRuntimeError", "all_checks",
           "check", "check_error", "checkify", "debug_check", "init_error", "user_checks"]
