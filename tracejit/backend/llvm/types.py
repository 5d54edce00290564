"""LLVM types for tracejit dtypes: register types (bool is i1) and memory types (bool is i8).
A complex value is a struct {re, im} of its real type in registers and in memory: NumPy's
layout, so complex buffers pass between NumPy and generated code unchanged. bfloat16 (which
llvmlite's ir cannot name) is its 16 bits (i16) in memory and, in registers, a float32 holding
a bfloat16 value: codegen widens on load and narrows on store, scalar_ops rounds each result."""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes

I1, I8, I16, I32, I64 = (ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32),
                          ir.IntType(64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
C64, C128 = ir.LiteralStructType([F32, F32]), ir.LiteralStructType([F64, F64])


def reg_type(dtype: np.dtype) -> ir.Type:
    if dtype == dtypes.bool_:
        return I1
    if dtypes.is_int(dtype):
        return ir.IntType(dtype.itemsize * 8)
    if dtype == dtypes.float16:
        return F16
    if dtype == dtypes.float32 or dtype == dtypes.bfloat16:
        return F32
    if dtype == dtypes.float64:
        return F64
    if dtype == dtypes.complex64:
        return C64
    if dtype == dtypes.complex128:
        return C128
    raise NotImplementedError(f"the native backend does not support dtype {dtype} yet")


def mem_type(dtype: np.dtype) -> ir.Type:
    if dtype == dtypes.bfloat16:
        return I16
    return I8 if dtype == dtypes.bool_ else reg_type(dtype)


def reg_bits(dtype: np.dtype) -> int:
    """Width of a float's register value (bfloat16: the 32 of its float32 register)."""
    return 32 if dtype == dtypes.bfloat16 else dtype.itemsize * 8


def const(dtype: np.dtype, value) -> ir.Constant:
    """A constant of `dtype` from a Python/NumPy scalar (exact for floats)."""
    t = reg_type(dtype)
    if dtype == dtypes.bool_:
        return ir.Constant(I1, int(bool(value)))
    if dtypes.is_int(dtype):
        v = int(np.asarray(value, dtype=dtype))
        return ir.Constant(t, v & ((1 << (dtype.itemsize * 8)) - 1))
    v = np.asarray(value, dtype=dtype)
    if dtype.kind == "c":
        part = reg_type(dtype).elements[0]
        return ir.Constant(t, [ir.Constant(part, float(v.real)), ir.Constant(part, float(v.imag))])
    # llvmlite wants a Python float: half and bfloat16 values are exact in it (and in float32)
    return ir.Constant(t, float(v))


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_signed(dtype: np.dtype) -> bool:
    return dtype.kind == "i"
