"""Runtime support routines that LLVM's code generator calls by name: conversions to and from
float16 that x86 has no instruction for (double -> half always; float <-> half without F16C).
They normally come from compiler-rt, which a JIT process does not have, so we define them here
in LLVM IR and the engine binds the names to them before compiling any program."""
from __future__ import annotations

import llvmlite.ir as ir

from .types import F16, F32, F64, I16, I32, I64


def _c(t: ir.IntType, v: int) -> ir.Constant:
    return ir.Constant(t, v)


def _trunc_double_to_half(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round-to-nearest-even double -> half from the bits: NaN stays a (quiet) NaN, overflow
    goes to ±inf, small values to subnormals or ±0."""
    bits = b.bitcast(x, I64)
    sign = b.trunc(b.and_(b.lshr(bits, _c(I64, 48)), _c(I64, 0x8000)), I16)
    mag = b.and_(bits, _c(I64, 0x7FFF_FFFF_FFFF_FFFF))
    exp = b.sub(b.lshr(mag, _c(I64, 52)), _c(I64, 1023))            # unbiased exponent
    frac = b.or_(b.and_(mag, _c(I64, (1 << 52) - 1)), _c(I64, 1 << 52))
    # normal halves keep 11 significant bits (shift 42); subnormals fewer (exponent < -14)
    extra = b.sub(_c(I64, -14), exp)
    shift = b.select(b.icmp_signed(">", extra, _c(I64, 0)), b.add(extra, _c(I64, 42)),
                     _c(I64, 42))
    shift = b.select(b.icmp_signed(">", shift, _c(I64, 63)), _c(I64, 63), shift)
    kept = b.lshr(frac, shift)
    rest = b.and_(frac, b.sub(b.shl(_c(I64, 1), shift), _c(I64, 1)))
    half_way = b.shl(_c(I64, 1), b.sub(shift, _c(I64, 1)))
    up = b.or_(b.icmp_unsigned(">", rest, half_way),
               b.and_(b.icmp_unsigned("==", rest, half_way),
                      b.icmp_unsigned("!=", b.and_(kept, _c(I64, 1)), _c(I64, 0))))
    # a normal half is (biased exponent << 10) + mantissa; the implicit bit is added by the sum
    normal = b.icmp_signed(">=", exp, _c(I64, -14))
    biased = b.select(normal, b.shl(b.add(exp, _c(I64, 14)), _c(I64, 10)), _c(I64, 0))
    body = b.add(b.add(biased, kept), b.zext(up, I64))               # carries round up to inf
    body = b.select(b.icmp_unsigned(">", body, _c(I64, 0x7C00)), _c(I64, 0x7C00), body)
    body = b.select(b.icmp_signed(">=", exp, _c(I64, 16)), _c(I64, 0x7C00), body)
    body = b.select(b.icmp_unsigned("==", mag, _c(I64, 0)), _c(I64, 0), body)
    nan = b.icmp_unsigned(">", mag, _c(I64, 0x7FF0_0000_0000_0000))
    body = b.select(nan, _c(I64, 0x7E00), body)
    return b.bitcast(b.or_(sign, b.trunc(body, I16)), F16)


def _extend_half_to_float(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """Exact half -> float from the bits."""
    bits = b.zext(b.bitcast(h, I16), I32)
    sign = b.shl(b.and_(bits, _c(I32, 0x8000)), _c(I32, 16))
    exp = b.and_(b.lshr(bits, _c(I32, 10)), _c(I32, 0x1F))
    mant = b.and_(bits, _c(I32, 0x3FF))
    normal = b.or_(b.shl(b.add(exp, _c(I32, 112)), _c(I32, 23)), b.shl(mant, _c(I32, 13)))
    special = b.or_(_c(I32, 0x7F80_0000), b.shl(mant, _c(I32, 13)))
    tiny = b.bitcast(b.fmul(b.uitofp(mant, F32), ir.Constant(F32, 2.0 ** -24)), I32)
    out = b.select(b.icmp_unsigned("==", exp, _c(I32, 0x1F)), special,
                   b.select(b.icmp_unsigned("==", exp, _c(I32, 0)), tiny, normal))
    return b.bitcast(b.or_(out, sign), F32)


# libcall name -> (our symbol, return type, argument type, body)
ROUTINES = {
    "__truncdfhf2": ("tracejit_truncdfhf2", F16, F64, _trunc_double_to_half),
    "__truncsfhf2": ("tracejit_truncsfhf2", F16, F32,
                     lambda b, x: _trunc_double_to_half(b, b.fpext(x, F64))),
    "__extendhfsf2": ("tracejit_extendhfsf2", F32, F16, _extend_half_to_float),
    "__gnu_h2f_ieee": ("tracejit_gnu_h2f_ieee", F32, F16, _extend_half_to_float),
}


def module() -> ir.Module:
    """One module defining every routine under our own symbol names."""
    mod = ir.Module(name="tracejit_support")
    for symbol, ret, arg, body in ROUTINES.values():
        fn = ir.Function(mod, ir.FunctionType(ret, [arg]), name=symbol)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(body(b, fn.args[0]))
    return mod
