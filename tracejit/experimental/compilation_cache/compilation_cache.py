"""jax.experimental.compilation_cache.compilation_cache (user-facing): where compiled programs
are kept between processes. tracejit's persistent cache holds the object code of each program
(runtime/disk_cache.py), in `tracejit_cache_dir`, else JAX's `jax_compilation_cache_dir`."""
from __future__ import annotations

import os

from ...core.config import config
from ...runtime import disk_cache

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Keep compiled programs in the folder `path` from now on (JAX's option
    `jax_compilation_cache_dir`; it also replaces a `tracejit_cache_dir` set before, such as
    $TRACEJIT_CACHE_DIR's, which would otherwise win). The folder is trusted: whoever can
    write to it can make this process run their code, so keep it your own."""
    folder = None if path is None else os.fspath(path)
    config.update("jax_compilation_cache_dir", folder)
    config.update("tracejit_cache_dir", folder)


def reset_cache() -> None:
    """Back to the state before the first compile: the next program checks its cache folder
    again (a folder refused before, now fixed, is used) and reports whether the cache is in
    use again (jax.monitoring's '/jax/compilation_cache/tasks_using_cache' events)."""
    disk_cache.reset()
