"""tracejit.typing: JAX's static type annotations (`jax.typing`), a user-facing module over
core's Array type; runtime `isinstance(x, ArrayLike)` works as in JAX (Python 3.10+ unions).
"""
from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from .core.array import Array

__all__ = ["ArrayLike", "DTypeLike"]


@runtime_checkable
class SupportsDType(Protocol):
    """Anything with a `dtype` attribute (jnp.float32, arrays, ShapeDtypeStruct)."""

    @property
    def dtype(self, /) -> np.dtype: ...


# Scalars that convert to JAX arrays and may be static arguments.
# typing.Union, not X | Y, as JAX: the docstrings below need a typing.Union object
StaticScalar = Union[np.bool_, np.number, bool, int, float, complex]  # noqa: UP007
StaticScalar.__doc__ = "Type annotation for JAX-compatible static scalars."

# Values that convert implicitly to a JAX array: unlike np.typing.ArrayLike, no sequences and
# no strings.
ArrayLike = Union[Array, np.ndarray, StaticScalar]  # noqa: UP007
ArrayLike.__doc__ = "Type annotation for JAX array-like objects."

DTypeLike = Union[  # noqa: UP007
    str,            # 'float32', 'int32'
    type[Any],      # np.float32, float
    np.dtype,       # np.dtype('float32')
    SupportsDType,  # jnp.float32
]
