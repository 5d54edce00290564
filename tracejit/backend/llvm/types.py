"""LLVM types for tracejit dtypes: register types (bool is i1) and memory types (bool is i8)."""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()


def reg_type(dtype: np.dtype) -> ir.Type:
    if dtype == dtypes.bool_:
        return I1
    if dtypes.is_int(dtype):
        return ir.IntType(dtype.itemsize * 8)
    if dtype == dtypes.float16:
        return F16
    if dtype == dtypes.float32:
        return F32
    if dtype == dtypes.float64:
        return F64
    raise NotImplementedError(f"the native backend does not support dtype {dtype} yet")


def mem_type(dtype: np.dtype) -> ir.Type:
    return I8 if dtype == dtypes.bool_ else reg_type(dtype)


def const(dtype: np.dtype, value) -> ir.Constant:
    """A constant of `dtype` from a Python/NumPy scalar (exact for floats)."""
    t = reg_type(dtype)
    if dtype == dtypes.bool_:
        return ir.Constant(I1, int(bool(value)))
    if dtypes.is_int(dtype):
        v = int(np.asarray(value, dtype=dtype))
        return ir.Constant(t, v & ((1 << (dtype.itemsize * 8)) - 1))
    v = np.asarray(value, dtype=dtype)
    if dtype == dtypes.float16:  # llvmlite wants a Python float; half values are exact in it
        return ir.Constant(t, float(v))
    return ir.Constant(t, float(v))


def is_signed(dtype: np.dtype) -> bool:
    return dtype.kind == "i"
