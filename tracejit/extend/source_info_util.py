"""`jax.extend.source_info_util`: the user source line staged equations record, and the
registry of library paths that are not user code. User-facing layer over
tracejit.core.trace and tracejit.core.traceback_util."""
from __future__ import annotations

from ..core.jaxpr import SourceInfo  # noqa: F401
from ..core.trace import user_source_info
from ..core.traceback_util import register_exclusion  # noqa: F401


def current() -> SourceInfo | None:
    """The innermost frame of user code calling (skipping tracejit and registered paths)."""
    return user_source_info()


def summarize(source_info: SourceInfo | None) -> str:
    """'file:line (function)' for a source info; 'unknown' without one."""
    return "unknown" if source_info is None else str(source_info)
