"""jax.export on tracejit: a jitted function's traced program, kept as an `Exported` that can be
called (natively, under jit, grad and vmap), serialized to bytes and loaded again. User-facing;
loaded on first use (`jax.export`). The serialized module is tracejit's own IR (the jaxpr), not
StableHLO: blobs move between tracejit processes, not to or from JAX."""
from ._export import (
    DisabledSafetyCheck,
    Exported,
    default_export_platform,
    deserialize,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from .shape_poly import (
    SymbolicScope,
    is_symbolic_dim,
    symbolic_args_specs,
    symbolic_dim_bounds,
    symbolic_shape,
)

__all__ = ["DisabledSafetyCheck", "Exported", "SymbolicScope", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_dim_bounds",
           "symbolic_shape"]
