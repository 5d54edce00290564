"""Which stack frames are the user's: files of tracejit and of registered libraries are not.
Core (no dependencies): staging (trace.user_source_info) names the innermost user frame as an
equation's source, skipping the paths registered here. It also answers as JAX's internal
`jax._src.traceback_util`, where libraries built on JAX register their own directories."""
from __future__ import annotations

import functools
import os
import types
from typing import Any, Callable

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Frames from files under `path` are not user code (source info skips them)."""
    _exclude_paths.append(path)


# filename -> include_filename's answer under the exclusions in _answered_for: staging asks for
# every frame between each bound primitive and the user's code (~9 of tracejit's a primitive,
# ~1.5 us each to test afresh: ~13 us of each equation's trace)
_answers: dict[str, bool] = {}
_answered_for: list[tuple[str, ...]] = [()]


def include_filename(filename: str) -> bool:
    """Whether a frame of `filename` is user code (under no registered exclusion)."""
    paths = tuple(_exclude_paths)
    if paths != _answered_for[0]:  # (an exclusion registered, or removed, since)
        _answers.clear()
        _answered_for[0] = paths
    answer = _answers.get(filename)
    if answer is None:
        answer = not any(filename == p or filename.startswith(p.rstrip(os.sep) + os.sep)
                         for p in paths)
        if _answered_for[0] == paths:  # (not kept if another thread changed them meanwhile)
            _answers[filename] = answer
    return answer


def include_frame(f: types.FrameType) -> bool:
    return include_filename(f.f_code.co_filename)


def api_boundary(fun: Callable | None = None, *, repro_api_name: str | None = None,
                 repro_user_func: bool = False) -> Any:
    """Marks `fun` as an entry point of the API. JAX trims the library's frames from the
    tracebacks of exceptions raised through it; tracejit keeps whole tracebacks (JAX's
    behaviour with jax_traceback_filtering='off'), so `fun` is returned wrapped unchanged."""
    del repro_api_name, repro_user_func
    if fun is None:
        return api_boundary

    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        return fun(*args, **kwargs)
    return boundary


register_exclusion(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
