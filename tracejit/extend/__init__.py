"""`jax.extend`: access to the machinery below the public API, for code that defines its own
primitives (extend.core.Primitive) and traces functions itself (extend.linear_util).
User-facing layer."""
from . import core, linear_util, source_info_util  # noqa: F401
