"""tracejit.dtypes: JAX's public `jax.dtypes` module, a user-facing face over core.dtypes (where
promotion and canonicalisation live) plus ml_dtypes' bfloat16, finfo and iinfo, as in JAX (these
three on first use: ml_dtypes is imported then, core/dtypes.py says why).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import dtypes as _core
from .core.dtypes import ExtendedDType, TypePromotionError, extended, float0, issubdtype, prng_key

# (bfloat16, finfo and iinfo come from __getattr__ below)
__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",  # noqa: F822
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]

DType = np.dtype  # the type of dtypes (JAX's internal jax._src.dtypes, which maps here, has it)


def __getattr__(name: str) -> Any:
    # JAX's bfloat16 is the scalar type (not a np.dtype): np.dtype(bfloat16) is the dtype.
    # finfo and iinfo are ml_dtypes' (NumPy's, extended to its types).
    if name in ("bfloat16", "finfo", "iinfo"):
        return getattr(_core.load_ml_dtypes(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "bfloat16", "finfo", "iinfo"})


# (by name: ml_dtypes' dtypes are named after their types)
_NO_INF_FLOAT8 = {"float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"}


def supports_inf(dtype: Any) -> bool:
    """Whether `dtype` has an infinity: inexact types do, except float8 formats without one."""
    return _core.np_dtype(dtype).name not in _NO_INF_FLOAT8 and issubdtype(dtype, np.inexact)

_PYTHON_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64),
                         float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> Any:
    """The dtype values of `dtype` really get: 64-bit types become 32-bit ones unless x64 is
    enabled. Extended dtypes (typed keys) pass through only with `allow_extended_dtype`."""
    if issubdtype(dtype, extended):
        if not allow_extended_dtype:
            raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} "
                             "with allow_extended_dtype=False")
        return dtype
    try:
        dt = _core.np_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype {dtype!r} not understood") from e
    if _core.config.jax_enable_x64:
        return dt
    return _core._x64_to_x32.get(dt, dt)


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """JAX's dtype promotion of arrays, scalars and dtypes (None counts as the default float);
    with `return_weak_type_flag`, the pair (dtype, weak_type)."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    args = tuple(_core.default_float() if a is None else a for a in args)
    ext = [getattr(a, "dtype", a) for a in args]
    if any(isinstance(e, ExtendedDType) for e in ext):
        # typed keys promote only with themselves (JAX's "trivial promotion" case)
        if len(set(ext)) != 1:
            bad = next(e for e in ext if isinstance(e, ExtendedDType))
            raise ValueError(f"dtype={bad} is not a valid dtype for JAX type promotion.")
        return (ext[0], False) if return_weak_type_flag else ext[0]
    return _core.user_result_type(*args, return_weak_type_flag=return_weak_type_flag)


def _dtype_of(x: Any) -> np.dtype:
    """JAX's dtypes.dtype for a value: Python scalars get the canonical default dtypes (strong),
    NumPy values are canonicalised, our arrays and tracers keep the dtype they have."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if type(x) in _PYTHON_SCALAR_DTYPES:
        return canonicalize_dtype(_PYTHON_SCALAR_DTYPES[type(x)])
    if hasattr(x, "aval"):
        return x.aval.dtype
    dt = getattr(x, "dtype", None)
    if not isinstance(dt, np.dtype):
        dt = np.result_type(x)
    if not _core.is_supported(dt) and dt != float0:
        raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. Only "
                        "arrays of numeric types are supported by JAX.")
    return canonicalize_dtype(dt)


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of a value's dtype."""
    dt = _dtype_of(x)
    if issubdtype(dt, np.bool_):
        return bool
    if issubdtype(dt, np.integer):
        return int
    if issubdtype(dt, np.floating):
        return float
    if issubdtype(dt, np.complexfloating):
        return complex
    raise TypeError(f"Invalid scalar value {x}")


def itemsize_bits(dtype: Any) -> int:
    """Bits per element of `dtype` (4 for int4: dtype.itemsize cannot say that)."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    if dtype == np.dtype(bool):
        return 8  # bools are stored a byte each
    if issubdtype(dtype, np.integer):
        return _info(dtype, "iinfo").bits
    if issubdtype(dtype, np.floating):
        return _info(dtype, "finfo").bits
    if issubdtype(dtype, np.complexfloating):
        return 2 * _info(dtype, "finfo").bits
    raise ValueError(f"unexpected input: {dtype=}")


def _info(dtype: Any, which: str) -> Any:
    """ml_dtypes' finfo / iinfo once it is loaded (issubdtype loads it on meeting one of its
    types); before that NumPy's, which answer the same for NumPy's types."""
    return getattr(_core._ml_dtypes or np, which)(dtype)
