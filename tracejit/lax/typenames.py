"""lax's type names (DotAlgorithm, DotDimensionNumbers, PrecisionLike) and lax.dtype: the names
JAX programs annotate with or call beside the primitives; no primitive lives here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core import dtypes
from .composed import DotAlgorithmPreset
from .linalg import Precision


class DotAlgorithm(NamedTuple):
    """JAX's description of a dot product's algorithm: the types the operands are rounded to,
    the accumulation type, how many components each operand is split into and how many
    products that takes. tracejit's `precision=` takes None, a Precision or its strings; its
    CPU dot products compute in the operands' (or preferred_element_type's) own type."""
    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


PrecisionLike = (None | str | Precision | tuple[str, str] | tuple[Precision, Precision]
                 | DotAlgorithm | DotAlgorithmPreset)

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]

_PYTHON_SCALARS = {bool: dtypes.bool_, int: np.dtype(np.int64), float: np.dtype(np.float64),
                   complex: np.dtype(np.complex128)}


def _supported(dt: np.dtype, x: Any) -> np.dtype:
    if not dtypes.is_supported(dt) and not isinstance(dt, dtypes.ExtendedDType):
        raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. Only "
                        "arrays of numeric types are supported by JAX.")
    return dt


def dtype(x: Any) -> np.dtype:
    """lax.dtype: the dtype of a value or type as JAX would store it. Python scalars and their
    types get the default dtypes; NumPy values, dtypes, names and scalar types are canonicalised
    (a 64-bit one named explicitly warns, as JAX does, with x64 off); tracejit arrays and
    tracers keep the dtype they have."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type) and x in _PYTHON_SCALARS:
        return dtypes.canonicalize_dtype(_PYTHON_SCALARS[x])
    if isinstance(x, type) and issubclass(x, np.generic) or isinstance(x, (str, np.dtype)):
        return dtypes.check_user_dtype(x, "dtype", "dtype")
    if type(x) in _PYTHON_SCALARS:
        return dtypes.canonicalize_dtype(_PYTHON_SCALARS[type(x)])
    if hasattr(x, "aval"):  # our arrays and tracers: no canonicalisation
        return x.aval.dtype
    dt = getattr(x, "dtype", None)
    if not isinstance(dt, (np.dtype, dtypes.ExtendedDType)):
        try:
            dt = np.result_type(x)
        except TypeError as e:
            raise TypeError(f"Cannot determine dtype of {x}") from e
    return dtypes.canonicalize_dtype(_supported(dt, x))


__all__ = ["DotAlgorithm", "DotDimensionNumbers", "PrecisionLike", "dtype"]
