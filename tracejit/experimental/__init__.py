"""jax.experimental: the experimental APIs that tracejit provides (a package: modules join it)."""
from ..callback import io_callback  # noqa: F401
from . import multihost_utils  # noqa: F401

# modules imported on first use (`jax.experimental.mesh_utils` with no import of its own), so
# that `import tracejit` does not load them
_LAZY_MODULES = frozenset({"compilation_cache", "mesh_utils", "pjit", "shard_map"})


def __getattr__(name: str):
    # `from .X import __name__` loads the submodule X, which the import system then sets as an
    # attribute here (`from . import X` would look X up here first, calling this again)
    if name == "compilation_cache":
        from .compilation_cache import __name__ as _
    elif name == "mesh_utils":
        from .mesh_utils import __name__ as _
    elif name == "pjit":
        from .pjit import __name__ as _
    elif name == "shard_map":
        from .shard_map import __name__ as _  # noqa: F401
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_MODULES)
