"""Transcendental functions as branch-free LLVM IR, for the kernels that codegen emits.

`emit(builder, name, *args)` calls the module's function for `name` on that type (defined at
its first use, inlined by LLVM before it optimises: `_math_function`), whose body is scalar
float32/float64 IR built only from arithmetic, `select`, integer bit operations and intrinsics
that have vector forms (fma, fabs, sqrt, floor, ceil, rint, copysign, minimum, maximum), so the
loop vectorizer widens a loop that calls it. `emit_function` does the same (one function per
module, inlined at each call) for bodies built elsewhere: special_math's loops.
libm calls would stay scalar and cost 5x or more. Every branch of a piecewise method is
computed and one result is chosen with `select`. No fast-math flags anywhere: NaN, infinities,
signed zeros and subnormals follow IEEE (and NumPy/SciPy) everywhere; float32 exp, log, log1p,
erf, erf_inv and tanh are XLA CPU's algorithms, bit for bit on normal numbers (XLA flushes
subnormal inputs and results to zero, tracejit keeps them), so native results equal JAX's there.
Polynomial coefficients are near-minimax fits (Lawson-weighted least squares in mpmath, then
rounded to the precision used) unless they come from a named source.

Max error in ulp (|result - exact| / spacing at the exact value), measured over the dense
sweeps of tests/test_llvm_math.py (100k-300k points per function covering every exponent
range) against float64 (for f32) and long-double (for f64) references, and against mpmath
where SciPy's float64 is the only reference (erf, erfc, lgamma, digamma):

    function   f32    f64    notes
    exp        4.65   1.01   f32 XLA's (0.97 below x = 80; 4.65 as 2**n nears overflow)
    exp2       0.96   1.02
    log        1.14   0.80   f32 XLA's
    log2       1.01   0.98
    log1p      2.44   0.86   f32 XLA's
    expm1      1.31   1.95
    tanh       4.36   1.85   f32 XLA's (a rational); f64 t/(t+2), t = expm1(2|x|)
    logistic   1.97   1.93
    sin        1.47   1.54   whole range: Payne-Hanek past 2**16 / 2**28, see _reduce_pio2
    cos        1.49   1.42   (f64 past 2**28, the hardest cases and multiples of pi/2 vs
    tan        0.50   2.95   mpmath: at most 1.48, 1.40, 2.85; f32 via the f64 code)
    atan       1.74   1.21
    atan2      1.81   2.05
    asin       2.22   2.16
    acos       1.08   1.15
    sinh       2.30   2.05
    cosh       1.50   1.52
    asinh      1.48   1.00
    acosh      1.94   1.68
    atanh      1.66   1.54
    erf        4.22   0.66   f32 XLA's; f64 vs mpmath (SciPy's own erf is ~1.5 ulp off)
    erfc       3.24   3.1    (f64 vs mpmath)
    erf_inv    -      -      XLA's Giles polynomials, not ours: see _erf_inv64
    pow        0.50   1.12   f32 through float64 log2/exp2; f64 through a double-double log
    cbrt       0.50   0.72
    lgamma     2.41   5.9    f32 float32 pieces; f64 worst in [0.5, 1.5] (lgamma(z+1) - log z
                             cancels a little); x < 0: f32 4.9, see below
    digamma    3.29   8.0    f32 float32 pieces; f64 worst at x < 0; x < 0: f32 7.3, see below
    bessel_i0e 1.77   4.0    f32 four polynomials; f64 vs mpmath, Cephes' ranges, our Chebyshev
    bessel_i1e 1.78   10.0   f64 vs mpmath: i1e(x)/x cancels in its series near x = 8
    polygamma  0.50   4.0    m = 1..30, x > 0, f64 vs mpmath; at x < 0 as digamma, below

float32 sin and cos over every float32 (not a sweep) in [0, pi/4] (the kernels alone): at most
0.69 and 1.24 ulp; in (pi/4, 64): 1.55 and 1.56.
f32 polygamma evaluates the float64 code and rounds. f32 lgamma, digamma, i0e and i1e are
float32 code (2^20 float32 on an AVX2 machine: lgamma 7.6 -> 3.0 ms, JAX 0.12 9.6 ms; digamma
5.9 -> 1.9 ms, JAX 0.12 5.8-6.8 ms; i0e 2.65 -> 0.71 ms, JAX 0.12 1.3 ms; the float64 code
rounded had been within 0.5 ulp).
The f64 target of 4 ulp is missed by lgamma on [0.5, 1.5] and by lgamma/digamma at x < 0:
there the reflection formula f(x) = g(x) -+ f(1 - x) cancels near the zeros and poles of f, so
the error is bounded in ulp of the larger term, max(|f(1 - x)|, 1) (at most 5.9 and 8.0 ulp of
it; float32 4.9 and 7.3: two float32 terms of ~2-3 ulps each), not of |f(x)|: relative error is
unbounded at the zeros of lgamma and digamma for x < 0, as with the usual methods (JAX 0.10's
float32 lgamma: 76 ulps on [2.5, 10], digamma 32 on [2, 8], and no relative accuracy at their
zeros for x > 0).
polygamma(m >= 1, x < 0) is likewise within 3 ulp of the larger term of its reflection,
m! * sum_k |x + k|**-(m+1) (SciPy, which sums every term from x upwards, is less accurate
there for large |x|: ~3 digits at x = -1e5 - 0.5).

Speed, 10M float32, one thread of an AMD EPYC (znver5, AVX-512), out[i] = f(x[i]), best of 5
(benchmarks/math_bench.py): exp 2.7 ms (NumPy 8.2 ms, LLVM calling libm expf 15 ms), log 2.8 ms
(NumPy 3.5), sin 2.5 ms (NumPy 22.6), tanh 2.5 ms (NumPy 2.2, which uses its own SIMD tanh).
At ~2.5 ms all four are bound by memory bandwidth (80 MB moved), not by the polynomials.
In vectorised loops sin/cos/tan call masked vector variants of the out-of-line Payne-Hanek
routine (`_vfabi_attribute`: one call per vector, returning at once when no lane is huge);
before, that path was inline and if-converted, paid on every element: sin float32 ~13 ms,
float64 ~60 ms for 10M where Cody-Waite alone took 2.6 and 6.8 ms (a busy shared machine, so
only the ratio means much); a fixed-point scan of cos over 1000 float32 for 10k steps went from
21.6 to 5-8 ms of CPU. Elsewhere that path is a call of the scalar routine (`_with_big_path`).
"""
from __future__ import annotations

import contextlib
import contextvars
import decimal
import itertools
import math
import re
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir

from ...lax import elementwise as _xla
from ...lax.elementwise import _GILES64, _GILES_LARGE, _GILES_SMALL

__all__ = ["BIG_TRIG_SYMBOLS", "NAMES", "OUT_OF_LINE", "VECTOR_WIDTHS", "big_trig_routine",
           "emit", "emit_function", "inline_slow_paths", "inlined_lines", "inlined_size",
           "interleaved_math",
           "repeated", "repetitions", "vector_variant_symbol"]


class _Emitter:
    """Scalar IR helpers for one float type; Python numbers become constants of that type."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type):
        self.b = builder
        self.ty = ty
        self.f64 = isinstance(ty, ir.DoubleType)
        self.ity = ir.IntType(64 if self.f64 else 32)
        self.mant = 52 if self.f64 else 23
        self.bias = 1023 if self.f64 else 127
        self.np = np.float64 if self.f64 else np.float32
        self.tiny = float(np.finfo(self.np).tiny)          # smallest normal

    # -- values --------------------------------------------------------------------------
    def v(self, x) -> ir.Value:
        if isinstance(x, ir.Value):
            return x
        return ir.Constant(self.ty, float(self.np(x)))

    def i(self, x) -> ir.Value:
        return x if isinstance(x, ir.Value) else ir.Constant(self.ity, int(x))

    def pick(self, f32, f64):
        return f64 if self.f64 else f32

    # -- float arithmetic ------------------------------------------------------------------
    def add(self, a, b): return self.b.fadd(self.v(a), self.v(b))
    def sub(self, a, b): return self.b.fsub(self.v(a), self.v(b))
    def mul(self, a, b): return self.b.fmul(self.v(a), self.v(b))
    def div(self, a, b): return self.b.fdiv(self.v(a), self.v(b))
    def neg(self, a): return self.b.fneg(self.v(a))

    def call(self, name: str, *args) -> ir.Value:
        return self.b.call(intrinsic(self.b.module, name, self.ty, len(args)),
                           [self.v(a) for a in args])

    def fma(self, a, b, c): return self.call("llvm.fma", a, b, c)
    def abs(self, a): return self.call("llvm.fabs", a)
    def sqrt(self, a): return self.call("llvm.sqrt", a)
    def floor(self, a): return self.call("llvm.floor", a)
    def rint(self, a): return self.call("llvm.rint", a)
    def copysign(self, mag, sign): return self.call("llvm.copysign", mag, sign)

    def poly(self, x, coeffs) -> ir.Value:
        """Horner with fma; coefficients from the highest degree down."""
        acc = self.v(coeffs[0])
        for c in coeffs[1:]:
            acc = self.fma(acc, x, c)
        return acc

    # -- predicates and choice -------------------------------------------------------------
    def lt(self, a, b): return self.b.fcmp_ordered("<", self.v(a), self.v(b))
    def le(self, a, b): return self.b.fcmp_ordered("<=", self.v(a), self.v(b))
    def gt(self, a, b): return self.b.fcmp_ordered(">", self.v(a), self.v(b))
    def ge(self, a, b): return self.b.fcmp_ordered(">=", self.v(a), self.v(b))
    def eq(self, a, b): return self.b.fcmp_ordered("==", self.v(a), self.v(b))
    def isnan(self, a): return self.b.fcmp_unordered("uno", self.v(a), self.v(a))
    def and_(self, a, b): return self.b.and_(a, b)
    def or_(self, a, b): return self.b.or_(a, b)
    def not_(self, a): return self.b.not_(a)

    def select(self, cond, a, b) -> ir.Value:
        return self.b.select(cond, self.v(a), self.v(b))

    def clamp(self, x, lo, hi) -> ir.Value:
        """Clamp with selects; NaN passes through (every comparison with it is false)."""
        x = self.select(self.lt(x, lo), lo, x)
        return self.select(self.gt(x, hi), hi, x)

    def signbit(self, x) -> ir.Value:
        return self.b.icmp_signed("<", self.bits(x), self.i(0))

    # -- bits ------------------------------------------------------------------------------
    def bits(self, x): return self.b.bitcast(self.v(x), self.ity)
    def from_bits(self, n): return self.b.bitcast(self.i(n), self.ty)
    def iadd(self, a, b): return self.b.add(self.i(a), self.i(b))
    def isub(self, a, b): return self.b.sub(self.i(a), self.i(b))
    def iand(self, a, b): return self.b.and_(self.i(a), self.i(b))
    def ishl(self, a, b): return self.b.shl(self.i(a), self.i(b))
    def iashr(self, a, b): return self.b.ashr(self.i(a), self.i(b))

    def const_bits(self, x) -> int:
        return int(np.array(x, self.np).view(np.int64 if self.f64 else np.int32))

    def pow2i(self, n) -> ir.Value:
        """2**n for an integer n in the normal exponent range."""
        return self.from_bits(self.ishl(self.iadd(n, self.bias), self.mant))

    def scale(self, y, n) -> ir.Value:
        """y * 2**n (n an integer of self.ity, in range or not) rounded once, through
        `llvm.ldexp`, which the loop vectorizer widens; call it only where scalef() holds."""
        name = f"llvm.ldexp.{'f64' if self.f64 else 'f32'}.{'i64' if self.f64 else 'i32'}"
        fn = self.b.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.b.module, ir.FunctionType(self.ty, [self.ty, self.ity]), name)
        return self.b.call(fn, [self.v(y), self.i(n)])

    def ldexp(self, y, n) -> ir.Value:
        """y * 2**n in two exact steps so that n may run one past either exponent limit
        (overflow to inf and subnormal results then round once, as IEEE does)."""
        n1 = self.iashr(n, 1)
        return self.mul(self.mul(y, self.pow2i(n1)), self.pow2i(self.isub(n, n1)))

    def round_to_int(self, x) -> tuple[ir.Value, ir.Value]:
        """(nearest integer as float, as int) for |x| < 2**(mant-1), poison-free: adding
        1.5*2**mant leaves the integer in the low mantissa bits (NaN gives junk, not poison)."""
        shift = 1.5 * 2.0 ** self.mant
        t = self.add(x, shift)
        return self.sub(t, shift), self.isub(self.bits(t), self.const_bits(shift))


def intrinsic(module: ir.Module, name: str, ty: ir.Type, nargs: int) -> ir.Function:
    """Declare (once per module) an overloaded LLVM intrinsic on `ty`."""
    full = f"{name}.{'f64' if isinstance(ty, ir.DoubleType) else 'f32'}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name=full)
    return fn


# LLVM 17 brought the `llvm.ldexp` intrinsic (`scale`) and x86's selection of llvm.minimum/
# maximum; LLVM 15's code generation (llvmlite 0.44's) stops at "Cannot select: fmaximum", so
# there they are compares and selects of the same values (`minmax`).
LLVM_17 = _llvm.llvm_version_info >= (17,)
_BITS_OF = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}


def minmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value, is_max: bool) -> ir.Value:
    """llvm.maximum (is_max) or llvm.minimum of two floats, or float vectors, of one type: NaN
    where either is NaN, and -0 < +0."""
    if LLVM_17:
        fn = b.module.declare_intrinsic("llvm.maximum" if is_max else "llvm.minimum", [x.type],
                                        ir.FunctionType(x.type, [x.type, x.type]))
        return b.call(fn, [x, y])
    if isinstance(y, ir.Constant) and isinstance(y.constant, float) and y.constant != 0.0 \
            and not math.isnan(y.constant):  # (a clamp: no tie of two zeros, x's NaN kept)
        return b.select(b.fcmp_ordered("<" if is_max else ">", x, y), y, x)
    ty = x.type
    ity = ir.IntType(_BITS_OF[type(getattr(ty, "element", ty))])
    if isinstance(ty, ir.VectorType):
        ity = ir.VectorType(ity, ty.count)
    pick = b.select(b.fcmp_ordered(">" if is_max else "<", x, y), x, y)
    # equal: the same bits, or zeros of two signs, whose and (or) is +0 (-0)
    xb, yb = b.bitcast(x, ity), b.bitcast(y, ity)
    tie = b.bitcast(b.and_(xb, yb) if is_max else b.or_(xb, yb), ty)
    pick = b.select(b.fcmp_ordered("==", x, y), tie, pick)
    return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), pick)


def _split(x: Fraction, bits: int) -> tuple[float, float]:
    """x as hi + lo with hi holding its leading `bits` bits (so small multiples stay exact)."""
    m, e = math.frexp(float(x))
    hi = math.ldexp(math.floor(m * 2.0 ** bits), e - bits)
    return hi, float(x - Fraction(hi))


def _dd(x: Fraction, np_type) -> tuple[float, float]:
    """x as hi + lo in `np_type`: the nearest value and the nearest value to the remainder."""
    hi = float(np_type(float(x)))
    return hi, float(np_type(float(x - Fraction(hi))))


# Exact to ~40 digits, for constants split into hi + lo parts.
_X_LN2 = Fraction("0.6931471805599453094172321214581765680755")
_X_LOG2E = Fraction("1.442695040888963407359924681001892137427")
_X_PI = Fraction("3.141592653589793238462643383279502884197")
_LN2 = float(_X_LN2)
_PI = float(_X_PI)
# Cody-Waite ln2: hi with few bits so n*hi is exact; lo the remainder (fdlibm's for f64).
_LN2_HI = {False: _dd(_X_LN2, np.float32)[0], True: 6.93147180369123816490e-01}
_LN2_LO = {False: _dd(_X_LN2, np.float32)[1], True: 1.90821492927058770002e-10}


# === exp family ==============================================================================

# e**r = 1 + r + r*r*P(r) on |r| <= ln2/2 (P also gives expm1(r) = r + r*r*P(r)).
_EXP_P = {
    False: (0.0013813140103593469, 0.00836941972374916, 0.04166845604777336,
            0.16666515171527863, 0.4999999403953552),
    True: (2.499900570201653e-08, 2.7631688502605945e-07, 2.7557597152506536e-06,
           2.480148934875698e-05, 0.00019841269486188371, 0.0013888888946923645,
           0.008333333333507657, 0.041666666666519137, 0.16666666666666385,
           0.5000000000000012),
}


def _exp_reduce(e: _Emitter, x, lo=None):
    """n, r with x + lo = n*ln2 + r, |r| <= ln2/2 (x already clamped to a finite range)."""
    nf, n = e.round_to_int(e.mul(x, 1.0 / _LN2))
    r = e.fma(nf, -_LN2_HI[e.f64], x)         # exact: n*hi has spare bits and r is small
    r = e.fma(nf, -_LN2_LO[e.f64], r)
    if lo is not None:
        r = e.add(r, lo)
    return n, r


def _expm1_reduced(e: _Emitter, r):
    """expm1(r) for |r| <= ln2/2, with relative accuracy near 0."""
    return e.fma(e.mul(r, r), e.poly(r, _EXP_P[e.f64]), r)


def _exp(e: _Emitter, x, lo=None, scale=None):
    """e**(x + lo) * scale, rounded once at the end (so subnormal results are right)."""
    # Past these bounds the result is inf or 0 anyway; clamping keeps n in ldexp's range.
    xc = e.clamp(x, e.pick(-104.0, -746.0), e.pick(90.0, 710.0))
    if lo is not None:   # a clamped x makes lo meaningless (and lo may be huge)
        lo = e.select(e.eq(xc, x), lo, 0.0)
    n, r = _exp_reduce(e, xc, lo)
    y = e.add(_expm1_reduced(e, r), 1.0)
    if scale is not None:
        y = e.mul(y, scale)
    return e.ldexp(y, n)


def _exp2(e: _Emitter, x):
    x = e.clamp(x, e.pick(-152.0, -1080.0), e.pick(130.0, 1030.0))
    nf, n = e.round_to_int(x)
    f = e.sub(x, nf)                           # exact, |f| <= 1/2
    # f*ln2 as hi + lo so that the reduced argument carries the product's rounding.
    ln2_hi, ln2_lo = _dd(_X_LN2, e.np)
    hi = e.mul(f, ln2_hi)
    lo = e.fma(f, ln2_lo, e.fma(f, ln2_hi, e.neg(hi)))
    y = e.add(_expm1_reduced(e, e.add(hi, lo)), 1.0)
    return e.ldexp(y, n)


def _expm1(e: _Emitter, x, big_path: bool = True):
    tiny = e.pick(2.0 ** -25, 2.0 ** -54)
    xc = e.clamp(x, e.pick(-30.0, -40.0), e.pick(89.0, 710.0))
    n, r = _exp_reduce(e, xc)
    em1 = _expm1_reduced(e, r)
    # 2**n * (em1 + 1) - 1 = s*em1 + (s - 1): exact-ish for moderate n, no cancellation.
    limit = e.bias
    n_s = e.b.select(e.b.icmp_signed(">", n, e.i(limit)), e.i(limit), n)
    s = e.pow2i(n_s)
    res = e.fma(s, em1, e.sub(s, 1.0))
    if big_path:   # near overflow 2**n itself is out of range; the -1 no longer matters
        big = e.ldexp(e.add(em1, 1.0), n)
        res = e.select(e.b.icmp_signed(">", n, e.i(limit - 27)), big, res)
    return e.select(e.lt(e.abs(x), tiny), x, res)


def _tanh(e: _Emitter, x):
    # tanh|x| = t / (t + 2), t = expm1(2|x|): relative accuracy everywhere, even near 0.
    a = e.select(e.gt(e.abs(x), e.pick(9.0, 20.0)), e.pick(9.0, 20.0), e.abs(x))
    t = _expm1(e, e.mul(a, 2.0), big_path=False)
    return e.copysign(e.div(t, e.add(t, 2.0)), x)


def _logistic(e: _Emitter, x):
    # 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below: no overflow, relative accuracy both ways.
    t = _exp(e, e.neg(e.abs(x)))
    num = e.select(e.ge(x, 0.0), 1.0, t)
    return e.div(num, e.add(t, 1.0))


def _half_exp(k: int) -> Fraction:
    """e**k / 2 to 45 digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = 45
        return Fraction(decimal.Decimal(k).exp()) / 2


def _hyperbolic_argument(e: _Emitter, a):
    """sinh's and cosh's one exponential of a = |x|: (whether a is beyond the cut, past which
    e^-a is below half an ulp; the exponential's argument, a below the cut and a - cut above it
    (exact); `scale`, which takes e^(a - cut) to e^a/2). The scaling multiplies by e^cut/2 as hi
    + lo in one fma: no rounding of the constant, no overflow before the end. a - cut is capped
    where e^(cap + cut)/2 is past the largest float already (an infinite a)."""
    cut, cap = e.pick((20, 70.0), (22, 689.0))
    beyond = e.gt(a, float(cut))
    arg = e.select(beyond, minmax(e.b, e.sub(a, float(cut)), e.v(cap), False), a)
    hi, lo = _dd(_half_exp(cut), e.np)
    return beyond, arg, lambda w: e.fma(w, hi, e.mul(w, lo))


def _sinh(e: _Emitter, x):
    # (t + t/(t+1))/2 of t = expm1(a) below the cut; above it e^a/2 from the same expm1
    beyond, arg, scale = _hyperbolic_argument(e, e.abs(x))
    t = _expm1(e, arg, big_path=False)
    small = e.mul(e.add(t, e.div(t, e.add(t, 1.0))), 0.5)
    return e.copysign(e.select(beyond, scale(e.add(t, 1.0)), small), x)


def _cosh(e: _Emitter, x):
    # t/2 + 1/(2t) of t = e^a below the cut; above it e^a/2 from the same exp
    beyond, arg, scale = _hyperbolic_argument(e, e.abs(x))
    t = _exp(e, arg)
    small = e.add(e.mul(t, 0.5), e.div(0.5, t))
    return e.select(beyond, scale(t), small)


# === log family ==============================================================================

# log(1+f) = f - f*f/2 + f**3 * P(f) for f in [sqrt(1/2)-1, sqrt(2)-1] (float32).
_LOG_P32 = (-0.07633429765701294, 0.12800292670726776, -0.1317857801914215,
            0.14197808504104614, -0.16621187329292297, 0.2000131905078888,
            -0.25000879168510437, 0.3333333134651184)
# log(1+f) = 2s + s*R(s*s), s = f/(2+f) (fdlibm's form; R = sum of Lg_k z**k, k = 1..7).
_LOG_R64 = (0.14827310986262376, 0.15311056966053513, 0.18183675406219416,
            0.22222196559475177, 0.2857142876069396, 0.39999999999338914,
            0.6666666666666745)


def _log_split(e: _Emitter, x):
    """x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)); valid for finite x > 0 (also
    subnormal). Returns (k as float, f); f is exact."""
    small = e.lt(x, e.tiny)
    xs = e.select(small, e.mul(x, 2.0 ** e.mant), x)
    sqrt_half = e.const_bits(np.sqrt(e.np(0.5)))
    ix = e.iadd(e.bits(xs), e.const_bits(1.0) - sqrt_half)
    k = e.isub(e.iashr(ix, e.mant), e.bias)
    k = e.isub(k, e.b.select(small, e.i(e.mant), e.i(0)))
    m = e.from_bits(e.iadd(e.iand(ix, (1 << e.mant) - 1), sqrt_half))
    return e.b.sitofp(k, e.ty), e.sub(m, 1.0)


def _log1pf_parts(e: _Emitter, f):
    """log(1+f) for f in the reduced range, as hi + lo (hi = f exactly)."""
    if e.f64:
        s = e.div(f, e.add(f, 2.0))
        z = e.mul(s, s)
        r = e.mul(z, e.poly(z, _LOG_R64))
        hfsq = e.mul(e.mul(f, f), 0.5)
        # fdlibm: log(1+f) = f - (hfsq - s*(hfsq + R))
        return f, e.neg(e.sub(hfsq, e.mul(s, e.add(hfsq, r))))
    z = e.mul(f, f)
    y = e.mul(e.mul(f, z), e.poly(f, _LOG_P32))
    return f, e.fma(z, -0.5, y)


def _log_special(e: _Emitter, x, res):
    """log-like result for x in (0, inf); -inf at 0, inf at inf, NaN below 0 or for NaN."""
    ok = e.and_(e.gt(x, 0.0), e.lt(x, math.inf))
    special = e.select(e.eq(x, 0.0), -math.inf, e.select(e.eq(x, math.inf), math.inf, math.nan))
    return e.select(ok, res, special)


def _log(e: _Emitter, x):
    k, f = _log_split(e, x)
    hi, lo = _log1pf_parts(e, f)
    ln2_hi, ln2_lo = _dd(_X_LN2, e.np)
    res = e.fma(k, ln2_hi, e.add(hi, e.fma(k, ln2_lo, lo)))
    return _log_special(e, x, res)


def _log2(e: _Emitter, x):
    k, f = _log_split(e, x)
    hi, lo = _log1pf_parts(e, f)
    log2e_hi, log2e_lo = _dd(_X_LOG2E, e.np)
    # (hi + lo) * log2(e) with hi's product kept to double the working precision.
    t = e.fma(lo, 1.0 / _LN2, e.mul(hi, log2e_lo))
    t = e.fma(hi, log2e_hi, t)
    return _log_special(e, x, e.add(k, t))


def _log1p(e: _Emitter, x):
    u = e.add(x, 1.0)
    k, f = _log_split(e, u)
    hi, lo = _log1pf_parts(e, f)
    # 1 + x = u + c*u exactly (to first order): add c, the rounding lost in forming u.
    c = e.div(e.sub(x, e.sub(u, 1.0)), u)
    ln2_hi, ln2_lo = _dd(_X_LN2, e.np)
    res = e.fma(k, ln2_hi, e.add(hi, e.fma(k, ln2_lo, e.add(lo, c))))
    tiny = e.pick(2.0 ** -25, 2.0 ** -54)
    res = e.select(e.lt(e.abs(x), tiny), x, res)
    ok = e.and_(e.gt(x, -1.0), e.lt(x, math.inf))
    special = e.select(e.eq(x, -1.0), -math.inf, e.select(e.eq(x, math.inf), math.inf,
                                                             math.nan))
    return e.select(ok, res, special)


def _asinh(e: _Emitter, x):
    a = e.abs(x)
    # Past 2**(mant+1) asinh(a) = log(2a) to within an ulp; log1p(a) is log(a) there.
    huge = e.gt(a, e.pick(2.0 ** 24, 2.0 ** 53))
    z = e.mul(a, a)
    arg = e.add(a, e.div(z, e.add(e.sqrt(e.add(z, 1.0)), 1.0)))
    res = e.add(_log1p(e, e.select(huge, a, arg)), e.select(huge, _LN2, 0.0))
    return e.copysign(res, x)


def _acosh(e: _Emitter, x):
    huge = e.gt(x, e.pick(2.0 ** 24, 2.0 ** 53))
    t = e.sub(x, 1.0)
    arg = e.add(t, e.sqrt(e.fma(t, t, e.mul(t, 2.0))))
    res = e.add(_log1p(e, e.select(huge, x, arg)), e.select(huge, _LN2, 0.0))
    return e.select(e.lt(x, 1.0), math.nan, res)


def _atanh(e: _Emitter, x):
    a = e.abs(x)
    t = e.add(a, a)
    # fdlibm: atanh(a) = log1p(2a + 2a*a/(1-a)) / 2; 1 - a is exact where it matters.
    res = e.mul(_log1p(e, e.add(t, e.div(e.mul(t, a), e.sub(1.0, a)))), 0.5)
    # beyond 1 the log1p argument 2a/(1-a) cancels to about 0 once a*a dwarfs a: say NaN
    return e.select(e.gt(a, 1.0), math.nan, e.copysign(res, x))


# === trigonometric =========================================================================

# sin(r) = r + r**3 * S(r*r), cos(r) = 1 - r*r/2 + r**4 * C(r*r) on |r| <= pi/4.
_SIN_S = {
    False: (-0.0001950874284375459, 0.008332112804055214, -0.16666653752326965),
    True: (1.5892962336528372e-10, -2.5050692488268038e-08, 2.7557313276121236e-06,
           -0.00019841269828619143, 0.00833333333332094, -0.16666666666666627),
}
_COS_C = {
    False: (2.4425678930128925e-05, -0.0013887251261621714, 0.04166664555668831),
    True: (-1.1356265467267913e-11, 2.087565755129915e-09, -2.7557313865403096e-07,
           2.4801587287782504e-05, -0.0013888888888871375, 0.04166666666666658),
}


# C(z) = c0 z**2 + c1 z + c2 = c0 ((z + h)**2 + g) for float32 cos (_cos_kernel): h and g
# in float32 move c1 and c2 by ~1e-8 of themselves, far below the fit's error; g is then one
# float32 step below its nearest, the lowest maximum over every float32 in [0, pi/4] among h and
# g within 3 steps (1.239 ulp; nearest 1.244, Horner's order 1.243).
_COS_H = _COS_C[False][1] / (2 * _COS_C[False][0])
_COS_SQUARE = (float(np.float32(_COS_C[False][0])), float(np.float32(_COS_H)),
               float(np.nextafter(np.float32(_COS_C[False][2] / _COS_C[False][0] - _COS_H ** 2),
                                  np.float32(0))))


def _pio2_parts(np_type) -> tuple[float, float, float]:
    """pi/2 as three constants of `np_type` (Cody-Waite), high to low."""
    rest, parts = _X_PI / 2, []
    for _ in range(3):
        parts.append(float(np_type(float(rest))))
        rest -= Fraction(parts[-1])
    return tuple(parts)


def _sin_kernel(e: _Emitter, r, z):
    return e.fma(e.mul(r, z), e.poly(z, _SIN_S[e.f64]), r)


def _cos_kernel(e: _Emitter, r, z):
    if e.f64:
        return e.fma(e.mul(z, z), e.poly(z, _COS_C[True]), e.fma(z, -0.5, 1.0))
    # float32: z**2 * C(z) as (c0 * z**2) * ((z + h)**2 + g), the quadratic's square completed
    # (_COS_SQUARE), with z + h one fma from r: the product's three multiplies (9 cycles after
    # r) and the square's two fma (8) run side by side and one fma ends it, 13 cycles after r
    # where Horner's took 15 (a scan of x = cos(a * x): 18 -> 16 cycles a step; four orders of
    # the same sum are timed in benchmarks/latency.py). g > 0, so the sum does not cancel.
    c0, h, g = _COS_SQUARE
    u = e.fma(r, r, h)
    return e.fma(e.mul(z, e.mul(z, c0)), e.fma(u, u, g), e.fma(z, -0.5, 1.0))


def _two_over_pi_words(nwords: int) -> tuple[int, ...]:
    """2/pi in binary as 32-bit words, most significant first, word k holding the bits of
    weight 2**-(32k + 1) .. 2**-(32k + 32); pi by Machin's formula in integer arithmetic
    (64 guard bits, so every kept bit is exact)."""
    prec = 32 * nwords + 64

    def atan_inv(k: int) -> int:      # atan(1/k) * 2**prec, each term truncated
        total, power, n = 0, (1 << prec) // k, 1
        while power:
            total += power // n if n % 4 == 1 else -(power // n)
            power //= k * k
            n += 2
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    bits = (1 << (2 * prec + 1)) // pi >> 64          # 2/pi * 2**(32 * nwords)
    return tuple((bits >> (32 * (nwords - 1 - k))) & 0xFFFFFFFF for k in range(nwords))


# Payne-Hanek (below): x*2/pi mod 4 = (m * W mod 2**(32n)) * 2**(2 - 32n) for x = m*2**e and
# W the 32n bits of 2/pi starting at weight 2**-(e - 1) (the bits above only add multiples
# of 4). n = 3 limbs for float32 (24-bit m: 70 bits of the fraction survive the truncation
# of 2/pi, against at most ~32 lost to cancellation next to a multiple of pi/2), 6 for
# float64 (53-bit m: 137 bits, against ~62 lost at the worst double, 6381956970095103 *
# 2**797). _PH_PAIRS[k] = word k-1 : word k as one 64-bit integer (word -1 is 0: the window
# of the smallest reduced exponents starts left of the binary point), so one load and a shift
# give a limb at any bit offset; signed, as LLVM's i64 constants are.
_PH_LIMBS = {False: 3, True: 6}
_PH_MIN = {False: 2.0 ** 16, True: 2.0 ** 28}     # below, Cody-Waite is accurate
_PH_WORDS = (0,) + _two_over_pi_words((1023 - 52 + 30 >> 5) + _PH_LIMBS[True] + 1)
_PH_PAIRS = tuple(((hi << 32 | lo) ^ (1 << 63)) - (1 << 63)
                  for hi, lo in itertools.pairwise(_PH_WORDS))


def _ph_table(module: ir.Module) -> ir.GlobalVariable:
    table = module.globals.get("tracejit.two_over_pi")
    if table is None:
        ty = ir.ArrayType(ir.IntType(64), len(_PH_PAIRS))
        table = ir.GlobalVariable(module, ty, name="tracejit.two_over_pi")
        table.initializer = ir.Constant(ty, list(_PH_PAIRS))
        table.global_constant = True
        table.linkage = "internal"
    return table


def _reduce_pio2_big(e: _Emitter, x):
    """x = j*pi/2 + r, |r| <= pi/4, for finite |x| >= 2**(mant - 30) (Payne-Hanek in 64-bit
    integers with 32x32-bit products, so the loop still vectorises); r is rounded once, from
    a double (f32) or a double-double (f64). Returns (r, j mod 4 as a float)."""
    b, i64 = e.b, ir.IntType(64)

    def c(v: int) -> ir.Constant:
        return ir.Constant(i64, v)

    bits = e.bits(e.abs(x))
    bits = bits if e.f64 else b.zext(bits, i64)
    m = b.or_(b.and_(bits, c((1 << e.mant) - 1)), c(1 << e.mant))
    # x = m * 2**k, k = exponent - bias - mant; the window starts at weight 2**-(k - 1),
    # bit g = k - 2 + 32 of _PH_WORDS (g is clamped only where this path is not taken)
    g = b.sub(b.lshr(bits, c(e.mant)), c(e.bias + e.mant - 30))
    g_max = e.bias - e.mant + 30                    # the largest finite x
    g = b.select(b.icmp_signed("<", g, c(0)), c(0), g)
    g = b.select(b.icmp_signed(">", g, c(g_max)), c(g_max), g)
    first, shift = b.lshr(g, c(5)), b.sub(c(32), b.and_(g, c(31)))
    mask, n = c(0xFFFFFFFF), _PH_LIMBS[e.f64]
    if e.f64:
        table = _ph_table(b.module)
        pairs = [b.load(b.gep(table, [c(0), b.add(first, c(k))], inbounds=True))
                 for k in range(n)]
    else:       # first is 0..4: selects are much cheaper than vector gathers
        pairs = []
        for k in range(n):
            pair = c(_PH_PAIRS[k])
            for f in range(1, (g_max >> 5) + 1):
                pair = b.select(b.icmp_unsigned("==", first, c(f)), c(_PH_PAIRS[f + k]), pair)
            pairs.append(pair)
    w = [b.and_(b.lshr(pair, shift), mask) for pair in reversed(pairs)]   # least significant first
    ms = [m] if not e.f64 else [b.and_(m, mask), b.lshr(m, c(32))]
    # m * W mod 2**(32n): each 64-bit partial product split over two columns, then carried
    cols = [[] for _ in range(n)]
    for i, mi in enumerate(ms):
        for k, wk in enumerate(w[:n - i]):
            p = b.mul(mi, wk)
            cols[i + k].append(b.and_(p, mask))
            if i + k + 1 < n:
                cols[i + k + 1].append(b.lshr(p, c(32)))
    limbs, carry = [], c(0)
    for col in cols:
        acc = carry
        for t in col:
            acc = b.add(acc, t)
        limbs.append(b.and_(acc, mask))
        carry = b.lshr(acc, c(32))
    # top 64 bits: 2 integer bits, then 62 of the fraction; round j to nearest, keep the
    # signed fraction f = frac * 2**-62 + lower limbs (in quarter turns)
    top = b.add(b.or_(b.shl(limbs[-1], c(32)), limbs[-2]), c(1 << 61))
    j = b.lshr(top, c(62))
    frac = b.sub(b.and_(top, c((1 << 62) - 1)), c(1 << 61))
    d = _Emitter(b, ir.DoubleType())

    def limb(k: int, scale: int) -> ir.Value:
        return d.mul(b.uitofp(limbs[k], d.ty), 2.0 ** scale)

    hi = b.sitofp(frac, d.ty)
    if e.f64:   # f as a double-double: hi exactly, then the 96 bits below it
        lo = d.add(b.sitofp(b.sub(frac, b.fptosi(hi, i64)), d.ty), limb(n - 3, -32))
        lo, lo_err = _two_sum(d, lo, d.add(limb(n - 4, -64), limb(n - 5, -96)))
        hi, lo = _fast_two_sum(d, hi, lo)
        hi, lo = d.mul(hi, 2.0 ** -62), d.mul(d.add(lo, lo_err), 2.0 ** -62)
        pio2_hi, pio2_lo = _dd(_X_PI / 2, np.float64)
        r = d.mul(hi, pio2_hi)
        r_err = d.fma(hi, pio2_hi, d.neg(r))
        r = d.add(r, d.add(r_err, d.fma(hi, pio2_lo, d.mul(lo, pio2_hi))))
    else:       # 53 bits of f are plenty for a float32 r
        f = d.fma(hi, 2.0 ** -62, limb(n - 3, -94))
        r = b.fptrunc(d.mul(f, _PI / 2), e.ty)
    neg = e.signbit(x)   # x < 0: -x = -j*pi/2 - r
    r = e.select(neg, e.neg(r), r)
    j = b.select(neg, b.sub(c(0), j), j)
    return r, b.uitofp(b.and_(j, c(3)), e.ty)


def _reduce_pio2(e: _Emitter, x):
    """x = j*pi/2 + r, |r| <= pi/4, returns (r, j mod 4 as a float in {0, 1, 2, 3}), by
    Cody-Waite (pi/2 in three parts and fma): accurate while |x| < 2**16 (f32) / 2**28 (f64),
    where its three parts hold enough bits of pi/2 for the cancellation. Larger arguments are
    `_with_big_path`'s. Infinities and NaN give NaN."""
    c1, c2, c3 = _pio2_parts(e.np)
    j = e.rint(e.mul(x, 2.0 / _PI))
    r = e.fma(j, -c1, x)
    r = e.fma(j, -c2, r)
    r = e.fma(j, -c3, r)
    return r, e.sub(j, e.mul(e.floor(e.mul(j, 0.25)), 4.0))


# Whether the math being emitted sits in a loop over enough elements for LLVM to vectorise
# (its slow paths then name their vector variants, which a plain call would prevent) or in
# scalar code; set by codegen around each loop body (`inline_slow_paths`).
_INLINE_SLOW_PATHS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "inline_slow_paths", default=False)


@contextlib.contextmanager
def inline_slow_paths(inline: bool):
    """Within the block, emit math for a loop LLVM vectorises (True: slow paths as calls that
    name their masked vector variants, no scalar shortcuts) or for scalar code (False, the
    default: calls of the scalar routines `big_trig_routine` defines, behind a branch for
    small arguments)."""
    token = _INLINE_SLOW_PATHS.set(inline)
    try:
        yield
    finally:
        _INLINE_SLOW_PATHS.reset(token)


# How many times the code being emitted runs per call beyond the loops codegen counts (a
# while_loop's body: unknown, so many); codegen's loops multiply it into their element count.
_REPEATS: contextvars.ContextVar[int] = contextvars.ContextVar("repeats", default=1)


@contextlib.contextmanager
def repeated(times: int):
    """Within the block, code runs `times` times more often (a while_loop body)."""
    token = _REPEATS.set(_REPEATS.get() * times)
    try:
        yield
    finally:
        _REPEATS.reset(token)


def repetitions() -> int:
    """The factor `repeated` blocks around the code being emitted give."""
    return _REPEATS.get()


def _with_big_path(e: _Emitter, x, small_result, name: str):
    """`small_result` (computed through Cody-Waite), or for finite |x| past _PH_MIN the
    result through a Payne-Hanek reduction, behind an unlikely branch: a scalar loop (a
    fixed-point iteration in a scan) skips its integer work. The branch calls a routine
    compiled once per process: LLVM then compiles ~30 instructions per sin instead of ~130.
    In a loop LLVM vectorises (`inline_slow_paths` on), the call carries the names of masked
    vector variants of the routine (`_vfabi_attribute`), so the vectoriser turns the branch
    into one call per vector that returns at once when no lane is big; before those variants,
    the path was inline and if-converted, paying for Payne-Hanek on every element (5x the
    time of Cody-Waite alone)."""
    b = e.b
    big = e.and_(e.ge(e.abs(x), _PH_MIN[e.f64]), e.lt(e.abs(x), math.inf))
    small_block = b.block
    with b.if_then(big, likely=False):
        big_result = b.call(_routine_decl(b.module, _big_trig_symbol(name, e.ty), e.ty, 1,
                                          _INLINE_SLOW_PATHS.get()), [x])
        big_block = b.block
    out = b.phi(e.ty)
    out.add_incoming(small_result, small_block)
    out.add_incoming(big_result, big_block)
    return out


def _big_trig_symbol(name: str, ty: ir.Type) -> str:
    return f"tracejit_{name}_big_{'f64' if isinstance(ty, ir.DoubleType) else 'f32'}"


class _PureAttributes(ir.values.FunctionAttributes):
    # llvmlite's list lacks `willreturn`; with it and readnone LLVM may drop an unused call
    _known = ir.values.FunctionAttributes._known | {"willreturn"}

    def add(self, name):  # (and a string attribute naming vector variants, `_vfabi_attribute`)
        if name.startswith(f'"{_VFABI}"='):
            return set.add(self, name)
        return super().add(name)


# Vector widths (lanes) of the masked variants of each slow-path routine: AVX-512's 16 float32
# lanes down to SSE's 2 float64 lanes, whichever the vectoriser picks.
VECTOR_WIDTHS = (2, 4, 8, 16)
_VFABI = "vector-function-abi-variant"


# LLVM 15's loop vectoriser calls a readnone function of a conditional block on every lane,
# unmasked (LLVM 17's calls its masked variant under the block's mask): there the variants are
# unmasked ones (`_n<lanes>`) that find the lanes needing the slow path themselves, else
# Payne-Hanek ran on every element (~20x the time of a sin loop).
_MASKED_VARIANTS = LLVM_17


def vector_variant_symbol(symbol: str, lanes: int) -> str:
    """The vector variant of slow-path routine `symbol` over `lanes` lanes: masked, or, for
    LLVM 15, unmasked (`_MASKED_VARIANTS`)."""
    return f"{symbol}_{'m' if _MASKED_VARIANTS else 'n'}{lanes}"


def _vfabi_attribute(symbol: str, nargs: int) -> str:
    """LLVM's vector-function ABI names of `symbol`'s vector variants (`_ZGV_LLVM_M<n>v_`:
    LLVM's own calling convention, masked, n lanes, a `v` per vector argument; `N`:
    unmasked), which the loop vectoriser calls in place of the scalar routine."""
    kind = "M" if _MASKED_VARIANTS else "N"
    names = ",".join(f"_ZGV_LLVM_{kind}{n}{'v' * nargs}_{symbol}"
                     f"({vector_variant_symbol(symbol, n)})" for n in VECTOR_WIDTHS)
    return f'"{_VFABI}"="{names}"'


def _routine_decl(module: ir.Module, symbol: str, ty: ir.Type, nargs: int,
                  vectorizable: bool = False) -> ir.Function:
    """The declaration of out-of-line routine `symbol` (OUT_OF_LINE's) of `nargs` operands of
    type `ty`; `vectorizable`: with its vector variants declared (and kept, through
    llvm.compiler.used, until the vectoriser has looked for them)."""
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name=symbol)
        fn.attributes = _PureAttributes(("readnone", "nounwind", "willreturn", "cold"))
    if vectorizable and _vfabi_attribute(symbol, nargs) not in fn.attributes:
        fn.attributes.add(_vfabi_attribute(symbol, nargs))
        _keep(module, [_vector_variant_decl(module, symbol, ty, nargs, n)
                       for n in VECTOR_WIDTHS])
    return fn


def _vector_variant_type(ty: ir.Type, nargs: int, lanes: int) -> ir.FunctionType:
    mask = [ir.VectorType(ir.IntType(1), lanes)] if _MASKED_VARIANTS else []
    return ir.FunctionType(ir.VectorType(ty, lanes), [ir.VectorType(ty, lanes)] * nargs + mask)


def _vector_variant_decl(module: ir.Module, symbol: str, ty: ir.Type, nargs: int, lanes: int
                         ) -> ir.Function:
    name = vector_variant_symbol(symbol, lanes)
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, _vector_variant_type(ty, nargs, lanes), name=name)
        fn.attributes = _PureAttributes(("readnone", "nounwind", "willreturn"))
    return fn


def _keep(module: ir.Module, fns: list) -> None:
    """Add functions to llvm.compiler.used: optimisation keeps their declarations."""
    i8p = ir.IntType(8).as_pointer()
    old = module.globals.get("llvm.compiler.used")
    items = list(old.initializer.constant) if old is not None else []
    items += [f.bitcast(i8p) for f in fns]
    if old is not None:
        del module.globals["llvm.compiler.used"]
        module.scope._useset.discard("llvm.compiler.used")
    g = ir.GlobalVariable(module, ir.ArrayType(i8p, len(items)), "llvm.compiler.used")
    g.linkage = "appending"
    g.section = "llvm.metadata"
    g.initializer = ir.Constant(ir.ArrayType(i8p, len(items)), items)


def _define_vector_variant(module: ir.Module, scalar: ir.Function, lanes: int,
                           needs: Callable) -> None:
    """`scalar(x[k], ...)` on the lanes the mask selects (the others keep the first operand),
    returning at once when it selects none: the vectorised loop calls it for every vector.
    The lanes are a loop over stack copies (small code, compiled once per process). Unmasked
    variants select the lanes `needs(builder, emitter, vector operands)` says the caller's
    branch sends to the routine."""
    ty = scalar.function_type.return_type
    nargs = len(scalar.args)
    vec = ir.VectorType(ty, lanes)
    fn = ir.Function(module, _vector_variant_type(ty, nargs, lanes),
                     name=vector_variant_symbol(scalar.name, lanes))
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")  # (nothing to optimise: this saves most of its compile time)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    xs = fn.args[:nargs]
    # (an unmasked variant's emitter: its scalar bit patterns, put in every lane)
    mask = fn.args[nargs] if _MASKED_VARIANTS else needs(b, _Emitter(b, ty), xs)
    bits = b.bitcast(mask, ir.IntType(lanes))
    with b.if_then(b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0)), likely=False):
        i32 = ir.IntType(32)
        slots = []
        for x in xs:
            slot = b.alloca(ir.ArrayType(ty, lanes))
            slot.align = 64  # (the vector stores and loads below assume their own alignment)
            b.store(x, b.bitcast(slot, vec.as_pointer()))
            slots.append(slot)
        out = b.alloca(ir.ArrayType(ty, lanes))
        out.align = 64
        b.store(xs[0], b.bitcast(out, vec.as_pointer()))
        pre = b.block
        head = b.append_basic_block("lane")
        done = b.append_basic_block("lanes.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(i32)
        k.add_incoming(ir.Constant(i32, 0), pre)
        with b.if_then(b.extract_element(mask, k)):
            lane = [b.load(b.gep(slot, [ir.Constant(i32, 0), k], inbounds=True))
                    for slot in slots]
            b.store(b.call(scalar, lane), b.gep(out, [ir.Constant(i32, 0), k], inbounds=True))
        nxt = b.add(k, ir.Constant(i32, 1))
        k.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_unsigned("<", nxt, ir.Constant(i32, lanes)), head, done)
        b.position_at_end(done)
        b.ret(b.load(b.bitcast(out, vec.as_pointer())))
    b.ret(xs[0])


def _needs_big_trig(b: ir.IRBuilder, e: _Emitter, xs) -> ir.Value:
    """The lanes `_with_big_path` sends to the trig routine: finite |x| >= _PH_MIN."""
    (x,) = xs
    lanes = x.type.count
    ivec = ir.VectorType(e.ity, lanes)

    def splat(bits: int) -> ir.Constant:
        return ir.Constant(ivec, [bits] * lanes)
    # |x| as bits (sign cleared): finite and past _PH_MIN is an unsigned range of them
    magnitude = b.and_(b.bitcast(x, ivec), splat((1 << (e.ity.width - 1)) - 1))
    return b.and_(b.icmp_unsigned(">=", magnitude, splat(e.const_bits(_PH_MIN[e.f64]))),
                  b.icmp_unsigned("<", magnitude, splat(e.const_bits(math.inf))))


def _sin_cos_reduced(e: _Emitter, x, r, q, want_cos: bool):
    z = e.mul(r, r)
    s = _sin_kernel(e, r, z)
    c = _cos_kernel(e, r, z)
    odd = e.or_(e.eq(q, 1.0), e.eq(q, 3.0))
    if want_cos:
        val = e.select(odd, s, c)
        negate = e.or_(e.eq(q, 1.0), e.eq(q, 2.0))
    else:
        val = e.select(odd, c, s)
        negate = e.ge(q, 2.0)
    res = e.select(negate, e.neg(val), val)
    if not want_cos:
        res = e.select(e.lt(e.abs(x), e.pick(2.0 ** -12, 2.0 ** -26)), x, res)
    return res


def _tan_reduced(e: _Emitter, x, r, q):
    z = e.mul(r, r)
    s = _sin_kernel(e, r, z)
    c = _cos_kernel(e, r, z)
    odd = e.or_(e.eq(q, 1.0), e.eq(q, 3.0))
    res = e.div(e.select(odd, e.neg(c), s), e.select(odd, s, c))
    return e.select(e.lt(e.abs(x), e.pick(2.0 ** -12, 2.0 ** -26)), x, res)


_TRIG_REDUCED = {"sin": lambda e, x, r, q: _sin_cos_reduced(e, x, r, q, False),
                 "cos": lambda e, x, r, q: _sin_cos_reduced(e, x, r, q, True),
                 "tan": _tan_reduced}


def _trig(e: _Emitter, x, name: str):
    """sin/cos/tan of x. Outside vectorised loops (`inline_slow_paths` off: scalar code, a
    fixed-point iteration in a scan, short loops) |x| < 0.78 < pi/4 first takes a branch
    straight to the kernels: there Cody-Waite gives j = 0 and r = x exactly, so the result is
    the same bits, without the reduction's dependency chain (rint, three fma, the quadrant
    selects) on the loop-carried value."""
    if _INLINE_SLOW_PATHS.get():
        return _full_trig(e, x, name)
    b = e.b
    small = e.lt(e.abs(x), 0.78)
    with b.if_else(small, likely=True) as (then, otherwise):
        with then:
            near = _TRIG_REDUCED[name](e, x, x, e.v(0.0))
            near_block = b.block
        with otherwise:
            far = b.call(_far_trig(b.module, name, e.ty), [x])
            far_block = b.block
    out = b.phi(e.ty)
    out.add_incoming(near, near_block)
    out.add_incoming(far, far_block)
    return out


def _full_trig(e: _Emitter, x, name: str):
    """sin/cos/tan of any x: Cody-Waite, the kernels, and the slow path past _PH_MIN."""
    r, q = _reduce_pio2(e, x)
    return _with_big_path(e, x, _TRIG_REDUCED[name](e, x, r, q), name)


def _far_trig(module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
    """The module's function for sin/cos/tan of |x| >= 0.78 in scalar code (the reduction, both
    kernels, the slow path's branch), emitted once per module and type and called from each use: out
    of line (noinline) from a second use on, so Python emits and LLVM optimises and compiles it
    once, not once per use (over half of a scalar sin's instructions). The call sits behind the
    branch for small arguments, so a fixed-point iteration near its limit (|x| < 0.78) never takes
    it; the same instructions as inline, so the same bits."""
    symbol = f"tracejit.{name}.far.{'f64' if isinstance(ty, ir.DoubleType) else 'f32'}"
    fn = module.globals.get(symbol)
    if fn is not None:
        _used_again(fn)
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name=symbol)
    fn.linkage = "internal"
    # (a module's only use is inlined: as before, where a call cost ~1-2 ms more to compile)
    fn.attributes = _PureAttributes(("readnone", "nounwind", "willreturn", "alwaysinline"))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with inline_slow_paths(False):  # (scalar code: the slow path is a plain call)
        b.ret(_full_trig(_Emitter(b, ty), fn.args[0], name))
    return fn


def _used_again(far: ir.Function) -> None:
    """A second use of a `_far_trig` function (or of scalar code's sin/cos/tan): out of line
    from now on."""
    far.attributes.discard("alwaysinline")
    far.attributes.add("noinline")


def _sin_cos(e: _Emitter, x, want_cos: bool):
    return _trig(e, x, "cos" if want_cos else "sin")


def _tan(e: _Emitter, x):
    if not e.f64:
        # float32 through the float64 code, rounded once: 0.5 ulp where the float32 quotient
        # of two rounded kernels reached 3.5 (tan's condition number near pi/4 doubles them)
        d = _Emitter(e.b, ir.DoubleType())
        return e.b.fptrunc(_tan(d, e.b.fpext(x, d.ty)), e.ty)
    return _trig(e, x, "tan")


BIG_TRIG_SYMBOLS = tuple(_big_trig_symbol(name, ty) for name, ty in itertools.product(
    _TRIG_REDUCED, (ir.FloatType(), ir.DoubleType())) if name != "tan" or ty == ir.DoubleType())


def big_trig_routine(symbol: str) -> ir.Module:
    """A module defining the routine `symbol` (one of BIG_TRIG_SYMBOLS, which programs call
    by name from `_with_big_path`): sin/cos/tan for finite |x| >= _PH_MIN through a
    Payne-Hanek reduction, then the same kernels as the inline path; and its masked vector
    variants (`vector_variant_symbol`), calling it lane by lane."""
    module = ir.Module(name=symbol)
    for name, ty in itertools.product(_TRIG_REDUCED, (ir.FloatType(), ir.DoubleType())):
        if _big_trig_symbol(name, ty) == symbol:
            fn = ir.Function(module, ir.FunctionType(ty, [ty]), name=symbol)
            e = _Emitter(ir.IRBuilder(fn.append_basic_block("entry")), ty)
            r, q = _reduce_pio2_big(e, fn.args[0])
            e.b.ret(_TRIG_REDUCED[name](e, fn.args[0], r, q))
            fn.attributes.add("noinline")  # (one copy, not one per lane of each variant)
            for lanes in VECTOR_WIDTHS:
                _define_vector_variant(module, fn, lanes, _needs_big_trig)
            return module
    raise KeyError(f"no out-of-line math routine {symbol!r}; known: {BIG_TRIG_SYMBOLS}")


def _sincospi(e: _Emitter, r):
    """(sin(pi*r), cos(pi*r)) for |r| <= 1/2, r exact (used by lgamma/digamma reflection)."""
    u = e.abs(r)
    swap = e.gt(u, 0.25)
    v = e.select(swap, e.sub(0.5, u), u)
    pi_hi, pi_lo = _dd(_X_PI, e.np)
    t = e.fma(v, pi_hi, e.mul(v, pi_lo))
    z = e.mul(t, t)
    s, c = _sin_kernel(e, t, z), _cos_kernel(e, t, z)
    return e.copysign(e.select(swap, c, s), r), e.select(swap, s, c)


# atan(t) = t + t**3 * A(t*t) on [0, tan(pi/8)].
_ATAN_A = {
    False: (-0.060321155935525894, 0.1057630404829979, -0.1424126923084259,
            0.19998358190059662, -0.3333331346511841),
    True: (-0.017607105591652086, 0.037792606052360844, -0.050286964335297286,
           0.05845559683314755, -0.06662787839603657, 0.07692032804015925,
           -0.09090896243705796, 0.11111110731923428, -0.14285714279192643,
           0.1999999999994395, -0.33333333333333165),
}


def _atan_ratio(e: _Emitter, n, d):
    """atan(n/d) for n, d >= 0 (not both 0 or inf): Cephes' three ranges, one division, with
    the range shifts formed from n and d (not from a rounded n/d)."""
    big = e.gt(n, e.mul(d, 2.414213562373095))       # tan(3pi/8)
    mid = e.gt(n, e.mul(d, 0.41421356237309503))     # tan(pi/8)
    num = e.select(big, e.neg(d), e.select(mid, e.sub(n, d), n))
    den = e.select(big, n, e.select(mid, e.add(n, d), d))
    t = e.div(num, den)
    z = e.mul(t, t)
    p = e.fma(e.mul(t, z), e.poly(z, _ATAN_A[e.f64]), t)
    pio2_hi, pio2_lo = _dd(_X_PI / 2, e.np)
    pio4_hi, pio4_lo = _dd(_X_PI / 4, e.np)
    base_hi = e.select(big, pio2_hi, e.select(mid, pio4_hi, 0.0))
    base_lo = e.select(big, pio2_lo, e.select(mid, pio4_lo, 0.0))
    return e.add(base_hi, e.add(p, base_lo))


def _atan(e: _Emitter, x):
    return e.copysign(_atan_ratio(e, e.abs(x), 1.0), x)


def _atan2(e: _Emitter, y, x):
    ax, ay = e.abs(x), e.abs(y)
    swap = e.gt(ay, ax)
    n, d = e.select(swap, ax, ay), e.select(swap, ay, ax)
    # 0/0 and inf/inf take the limits atan(0) and atan(1).
    zero = e.and_(e.eq(ax, 0.0), e.eq(ay, 0.0))
    inf = e.and_(e.eq(ax, math.inf), e.eq(ay, math.inf))
    n = e.select(inf, 1.0, n)
    d = e.select(e.or_(zero, inf), 1.0, d)
    # Exact rescaling: n + d must stay finite, and subnormals would spoil the range tests.
    scale = e.select(e.gt(d, 1.0), 0.5, 2.0 ** (e.mant + 1))
    r = _atan_ratio(e, e.mul(n, scale), e.mul(d, scale))
    pio2_hi, pio2_lo = _dd(_X_PI / 2, e.np)
    pi_hi, pi_lo = _dd(_X_PI, e.np)
    r = e.select(swap, e.add(e.sub(pio2_hi, r), pio2_lo), r)
    r = e.select(e.signbit(x), e.add(e.sub(pi_hi, r), pi_lo), r)
    res = e.copysign(r, y)
    return e.select(e.or_(e.isnan(x), e.isnan(y)), e.add(x, y), res)


# asin(s) = s + s**3 * B(s*s) on [0, 1/2].
_ASIN_B = {
    False: (0.04216598719358444, 0.024179713800549507, 0.045470334589481354,
            0.07495298236608505, 0.16666752099990845),
    True: (0.031911499250808224, -0.01622311874968723, 0.019527535508440136,
           0.0065282447656141085, 0.012169148574558034, 0.013885245209863055,
           0.017359703758714887, 0.022371758118658422, 0.03038195913403136,
           0.044642856828402556, 0.07500000000336919, 0.16666666666665408),
}


def _asin_parts(e: _Emitter, x):
    """(p, big): p = asin(s) where s = |x| (|x| <= 1/2) or sqrt((1-|x|)/2) (big)."""
    a = e.abs(x)
    big = e.gt(a, 0.5)
    z = e.select(big, e.mul(e.sub(1.0, a), 0.5), e.mul(a, a))
    s = e.select(big, e.sqrt(z), a)
    return e.fma(e.mul(s, z), e.poly(z, _ASIN_B[e.f64]), s), big


def _asin(e: _Emitter, x):
    p, big = _asin_parts(e, x)
    pio2_hi, pio2_lo = _dd(_X_PI / 2, e.np)
    res = e.select(big, e.sub(pio2_hi, e.sub(e.add(p, p), pio2_lo)), p)
    return e.copysign(res, x)


def _acos(e: _Emitter, x):
    p, big = _asin_parts(e, x)
    pio2_hi, pio2_lo = _dd(_X_PI / 2, e.np)
    pi_hi, pi_lo = _dd(_X_PI, e.np)
    small = e.sub(pio2_hi, e.sub(e.copysign(p, x), pio2_lo))     # pi/2 - asin(x)
    two_p = e.add(p, p)
    big_res = e.select(e.lt(x, 0.0), e.sub(pi_hi, e.sub(two_p, pi_lo)), two_p)
    return e.select(big, big_res, small)


# === error function =========================================================================

# erf(x) = x + x * E(x*x) on [0, 1] (the leading 2/sqrt(pi) - 1 keeps its rounding small).
_ERF_E = {
    False: (7.854119758121669e-05, -0.0008010278106667101, 0.005188338458538055,
            -0.02685381844639778, 0.1128358542919159, -0.3761262595653534,
            0.1283791670955126),
    True: (-7.779559962635031e-10, 1.3711033376226763e-08, -1.6206327110830927e-07,
           1.6447133491229667e-06, -1.4924712475512087e-05, 0.00012055293587132005,
           -0.0008548325929710283, 0.005223977606128312, -0.02686617064311296,
           0.11283791670944197, -0.3761263890318352, 0.1283791670955126),
}
# (1 + 2a) * exp(a*a) * erfc(a) = G(q), q = (a-2)/(a+2), a in [0, ERFC_MAX] (as Juffa's erfcf).
_ERFC_G = {
    False: (-0.0004005831142421812, -0.0012299350928515196, 0.0013135287445038557,
            0.008631688542664051, -0.008059876970946789, -0.0542043000459671,
            0.16405534744262695, -0.16603142023086548, -0.0927639827132225,
            1.2769783735275269),
    True: (-1.0983053135671284e-08, -1.8263737835882536e-08, 7.965671003971447e-08,
           2.043219097590797e-07, -1.1348150021419448e-07, -8.901311037500134e-07,
           -8.552937525606498e-07, 1.5307963584403857e-06, 5.334417266726201e-06,
           3.7041810213687987e-06, -1.3544095895806149e-05, -3.6423438337865334e-05,
           -1.4938210385520964e-06, 0.00015103973241038332, 0.0002063638702803169,
           -0.0004543409955277637, -0.001456813500185933, 0.0012713389888364271,
           0.008722653840070208, -0.008034015084010426, -0.05422000099055442,
           0.16405128003348945, -0.16603039761531374, -0.0927638265857464,
           1.2769783815525289),
}


def _erfc_nonneg(e: _Emitter, a):
    """erfc(a) for a >= 0 (or NaN); 0 past the point where the result rounds to zero."""
    a = e.select(e.gt(a, e.pick(10.1, 27.3)), e.pick(10.1, 27.3), a)
    q = e.div(e.sub(a, 2.0), e.add(a, 2.0))
    g = e.poly(q, _ERFC_G[e.f64])
    # exp(-a*a) with a*a split exactly into hi + lo (its rounding would cost up to 100 ulp).
    hi = e.mul(a, a)
    lo = e.fma(a, a, e.neg(hi))
    return _exp(e, e.neg(hi), e.neg(lo), scale=e.div(g, e.fma(a, 2.0, 1.0)))


def _erf_small(e: _Emitter, x):
    """erf(x) for |x| <= 1."""
    return e.fma(x, e.poly(e.mul(x, x), _ERF_E[e.f64]), x)


def _erf(e: _Emitter, x):
    a = e.abs(x)
    res = e.select(e.lt(a, 1.0), _erf_small(e, a), e.sub(1.0, _erfc_nonneg(e, a)))
    return e.copysign(res, x)


def _erfc(e: _Emitter, x):
    r = _erfc_nonneg(e, e.abs(x))
    r = e.select(e.lt(x, 0.0), e.sub(2.0, r), r)
    # Near 0, 1 - erf(x) is the more accurate (erf's error shrinks with x there).
    return e.select(e.lt(e.abs(x), 0.5), e.sub(1.0, _erf_small(e, x)), r)


# XLA's ErfInv32 / ErfInv64 (Giles, "Approximating the erfinv function"), constants and
# evaluation order as in xla/client/lib/math.cc, so that results match XLA's.
# the coefficient tables are the reference implementation's (one source for both)
_ERF_INV32 = (_GILES_SMALL, _GILES_LARGE)
_ERF_INV64 = _GILES64


def _erf_inv64(e: _Emitter, x):
    """XLA's ErfInv64: w = -log1p(-x*x); a polynomial in w - 3.125 (w < 6.25), sqrt(w) - 3.25
    (w < 16) or sqrt(w) - 5, times x; +-inf at +-1. Multiply and add stay separate (no fma);
    only log1p is ours, so results equal JAX's bits for ~91% of inputs (near |x| = 1 the
    difference is amplified). Float32 is XLA's code throughout (_xla_erf_inv32)."""
    w = e.neg(_log1p(e, e.mul(e.neg(x), x)))
    sqrt_w = e.sqrt(w)
    c625, c16, cbig = _ERF_INV64
    lt625, lt16 = e.lt(w, 6.25), e.lt(w, 16.0)
    w = e.select(lt625, e.sub(w, 3.125), e.sub(sqrt_w, e.select(lt16, 3.25, 5.0)))

    def coefficient(i):
        c = e.v(c625[i])
        if i < 19:
            c = e.select(lt625, c, c16[i])
        if i < 17:
            c = e.select(lt16, c, cbig[i])
        return c
    p = coefficient(0)
    for i in range(1, 17):
        p = e.add(coefficient(i), e.mul(p, w))
    for i in range(17, 19):
        p = e.select(lt16, e.add(coefficient(i), e.mul(p, w)), p)
    for i in range(19, 23):
        p = e.select(lt625, e.add(coefficient(i), e.mul(p, w)), p)
    return e.select(e.eq(e.abs(x), 1.0), e.mul(x, math.inf), e.mul(p, x))


# === pow, cbrt ===============================================================================

def _two_sum(e: _Emitter, a, b):
    s = e.add(a, b)
    bb = e.sub(s, a)
    return s, e.add(e.sub(a, e.sub(s, bb)), e.sub(b, bb))


def _fast_two_sum(e: _Emitter, a, b):
    s = e.add(a, b)
    return s, e.sub(b, e.sub(s, a))


# log(m) = 2s + 2s**3/3 + s**5 * T(s*s), s = (m-1)/(m+1): the tail for double-double log.
_LOG_T64 = (0.12938224378263122, 0.1328394445078157, 0.15385636046507012,
            0.18181807397026478, 0.22222222276375792, 0.28571428571326735,
            0.4000000000000003)


def _log_dd(e: _Emitter, x):
    """log(x) as hi + lo with ~2**-64 relative error, for finite x > 0 (float64 pow)."""
    k, f = _log_split(e, x)
    m = e.add(f, 1.0)                          # exact: m in [sqrt(1/2), sqrt(2))
    p_hi, p_lo = _two_sum(e, m, 1.0)
    s = e.div(f, p_hi)
    s_lo = e.div(e.sub(e.fma(e.neg(s), p_hi, f), e.mul(s, p_lo)), p_hi)
    z_hi = e.mul(s, s)
    z_lo = e.fma(s, s, e.neg(z_hi))
    z_lo = e.fma(e.add(s, s), s_lo, z_lo)
    c_hi = e.mul(s, z_hi)                      # s**3 as hi + lo
    c_lo = e.fma(s, z_hi, e.neg(c_hi))
    c_lo = e.fma(s, z_lo, e.fma(s_lo, z_hi, c_lo))
    tt_hi, tt_lo = _dd(Fraction(2, 3), np.float64)
    t_hi = e.mul(c_hi, tt_hi)
    t_lo = e.fma(c_hi, tt_hi, e.neg(t_hi))
    t_lo = e.fma(c_lo, tt_hi, e.fma(c_hi, tt_lo, t_lo))
    tail = e.mul(e.mul(c_hi, z_hi), e.poly(z_hi, _LOG_T64))
    hi, lo = _two_sum(e, e.add(s, s), t_hi)
    lo = e.add(lo, e.add(e.add(s_lo, s_lo), e.add(t_lo, tail)))
    ln2_hi, ln2_lo = _split(_X_LN2, 32)
    hi, lo2 = _two_sum(e, e.mul(k, ln2_hi), hi)
    lo = e.add(lo2, e.fma(k, ln2_lo, lo))
    return _fast_two_sum(e, hi, lo)


def _pow_abs64(e: _Emitter, ax, y, rel=None):
    """|x|**y in float64 through a double-double log and an exp that takes a low part;
    `rel` (|rel| < 2**-50) makes it (|x| * (1 + rel))**y, for a base known as hi + lo."""
    l_hi, l_lo = _log_dd(e, ax)
    l_hi = _log_special(e, ax, l_hi)
    if rel is not None:      # log(|x| (1 + rel)) = log|x| + rel to well below an ulp
        l_lo = e.add(l_lo, rel)
    t_hi = e.mul(y, l_hi)
    t_lo = e.fma(y, l_hi, e.neg(t_hi))
    t_lo = e.fma(y, l_lo, t_lo)
    finite = e.lt(e.abs(t_hi), math.inf)
    return _exp(e, t_hi, e.select(finite, t_lo, 0.0))


def _pow(e: _Emitter, x, y):
    ax = e.abs(x)
    if e.f64:
        r = _pow_abs64(e, ax, y)
    else:   # float32: the float64 log2/exp2 leave ~2**-45 error, far below a float32 ulp
        d = _Emitter(e.b, ir.DoubleType())
        l2 = _log2(d, e.b.fpext(ax, d.ty))
        r = e.b.fptrunc(_exp2(d, d.mul(e.b.fpext(y, d.ty), l2)), e.ty)
    y_int = e.eq(e.floor(y), y)
    y_odd = e.and_(y_int, e.eq(e.sub(y, e.mul(e.floor(e.mul(y, 0.5)), 2.0)), 1.0))
    r = e.select(e.and_(e.signbit(x), y_odd), e.neg(r), r)
    neg_finite = e.and_(e.lt(x, 0.0), e.gt(x, -math.inf))
    r = e.select(e.and_(neg_finite, e.not_(y_int)), math.nan, r)
    one = e.or_(e.or_(e.eq(y, 0.0), e.eq(x, 1.0)),
                e.and_(e.eq(x, -1.0), e.eq(e.abs(y), math.inf)))
    return e.select(one, 1.0, r)


def _cbrt(e: _Emitter, x):
    # Work in float64 (float32 inputs are then never subnormal): a bit-trick estimate
    # (~5 bits), Halley steps (cubic), and for float64 a last Newton step with its
    # residual computed accurately (fdlibm).
    d = e if e.f64 else _Emitter(e.b, ir.DoubleType())
    a = e.abs(x)
    ad = a if e.f64 else e.b.fpext(a, d.ty)
    # Scale subnormals up and huge values down (t**3 must not overflow): 2**54 = (2**18)**3.
    small, huge = d.lt(ad, d.tiny), d.gt(ad, 2.0 ** 900)
    ad_s = d.mul(ad, d.select(small, 2.0 ** 54, d.select(huge, 2.0 ** -900, 1.0)))
    third = d.mul(e.b.sitofp(d.bits(ad_s), d.ty), 1.0 / 3.0)
    t = d.from_bits(d.iadd(e.b.fptosi(third, d.ity), 715094163 << 32))
    for _ in range(2):
        t3 = d.mul(d.mul(t, t), t)
        t = d.mul(t, d.div(d.fma(ad_s, 2.0, t3), d.fma(t3, 2.0, ad_s)))
    if e.f64:
        r = d.div(ad_s, d.mul(t, t))
        r = d.div(d.sub(r, t), d.add(d.add(t, t), r))
        t = d.fma(t, r, t)
    t = d.mul(t, d.select(small, 2.0 ** -18, d.select(huge, 2.0 ** 300, 1.0)))
    res = t if e.f64 else e.b.fptrunc(t, e.ty)
    trivial = e.or_(e.eq(a, 0.0), e.not_(e.lt(a, math.inf)))      # 0, inf, NaN
    return e.select(trivial, x, e.copysign(res, x))


# === gamma family (float64 code; float32 rounds its result) ==============================

# lgamma(2 + y) = y * P(y) on |y| <= 1/2.
_LGAMMA_P = (6.916259778517178e-08, -1.340017661792911e-07, 1.9666921932145244e-07,
             -4.304983296321284e-07, 9.61055447227987e-07, -2.044853263382536e-06,
             4.373502996005372e-06, -9.438475650018123e-06, 2.050740908159862e-05,
             -4.49263486056015e-05, 9.945749518827346e-05, -0.00022315475096159286,
             0.0005096695256875933, -0.001192753911990505, 0.0028905103307136776,
             -0.007385551028668409, 0.020580808427784925, -0.06735230105319814,
             0.3224670334241132, 0.42278433509846713)
# Stirling: lgamma(z) = (z - 1/2)(log z - 1) + (log(2pi) - 1)/2 + S(1/z**2)/z, z >= 10.
_STIRLING_S = (-3617 / 122400, 1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260,
               -1 / 360, 1 / 12)
_GAMMA_T = 10.0


def _lgamma_pos(e: _Emitter, z):
    """lgamma(z) for z >= 0 (or NaN, inf), float64."""
    i = e.floor(e.add(z, 0.5))
    y = e.sub(z, i)                           # exact, |y| <= 1/2
    poly = e.mul(y, e.poly(y, _LGAMMA_P))     # lgamma(2 + y)
    prod = e.v(1.0)
    for k in range(2, int(_GAMMA_T)):         # lgamma(y + i) = lgamma(y + 2) + log(prod)
        prod = e.mul(prod, e.select(e.gt(i, float(k)), e.add(y, float(k)), 1.0))
    up = e.ge(i, 2.0)
    # i = 1: lgamma(z) = lgamma(z + 1) - log z; i = 0: ... - log(z (z + 1)).
    below = e.select(e.eq(i, 1.0), z, e.mul(z, e.add(z, 1.0)))
    stirling = e.ge(z, _GAMMA_T)
    log_arg = _log(e, e.select(stirling, z, e.select(up, prod, below)))
    recur = e.add(poly, e.select(up, log_arg, e.neg(log_arg)))
    w = e.div(1.0, z)
    series = e.mul(w, e.poly(e.mul(w, w), _STIRLING_S))
    big = e.add(e.mul(e.sub(z, 0.5), e.sub(log_arg, 1.0)),
                e.add(0.5 * (math.log(2 * _PI) - 1.0), series))
    return e.select(stirling, big, recur)


# float32 lgamma, fitted by tools/fit_polynomials.py (lowest degree first): lgamma(1 + y) / y
# and lgamma(2 + y) / y on [-1/2, 1/2]; around the minimum x0 (float32), lgamma(x0) (the first
# entry) and (lgamma(x0 + d) - lgamma(x0)) / d**2 on [1.25 - x0, 1.75 - x0].
_LGAMMA32_1 = (
    -0.5772156648398266, 0.8224670343661865, -0.4006856672813709, 0.27058069063068385,
    -0.20738272488225185, 0.16956091794240238, -0.1441409706575676, 0.12547398504969945,
    -0.10991661162902987, 0.09994625651498067, -0.10267570674473232, 0.08824235906803443,
    -0.025244160268510122, 0.039004571801185425, -0.17500874028035815, 0.14750769820299733)
_LGAMMA32_2 = (
    0.42278433509978364, 0.32246703340687555, -0.06735230143310965, 0.020580809933779757,
    -0.007385533335093151, 0.002890472337158574, -0.0011930538773359141, 0.0005100810192785009,
    -0.00022087361614252557, 9.730981656311195e-05, -5.2781144274256965e-05, 2.5735586847938693e-05)
_LGAMMA32_MIN = (
    -0.12148629053584953, 0.4838363691538614, -0.14759551893218847, 0.06459170011159505,
    -0.03197280353712846, 0.018483836493404134, -0.038302926058439164, 0.03710871583657748,
    0.30119452997019186, -0.6454879271534884)
_LGAMMA32_X0 = 1.4616321325302124
_GAMMA_T32 = 8.0


def _lgamma32_pos(e: _Emitter, z):
    """lgamma(z) for z >= 0 (or NaN, inf), float32: z (lgamma(1 + z) / z) - log z below 1/2;
    y lgamma(1 + y) / y and y lgamma(2 + y) / y around the zeros 1 and 2 (y = z - 1, z - 2:
    relative accuracy there); lgamma(x0) + d**2 S(d) around the minimum (no cancellation);
    lgamma(2 + y) + log((y + 2) ... (y + i - 1)) up to 8, Stirling's series from there. One log
    and one division for every piece."""
    i = e.floor(e.add(z, 0.5))
    y = e.sub(z, i)                           # exact, |y| <= 1/2
    low = e.lt(z, 0.5)
    near1 = e.lt(z, 1.25)
    near_min = e.lt(z, 1.75)
    s1 = e.select(low, z, e.sub(z, 1.0))
    d = e.sub(z, _LGAMMA32_X0)
    at_min, *around_min = _LGAMMA32_MIN
    hi = e.np(at_min)                         # lgamma(x0) as hi + lo, lo added first
    minimum = e.add(hi, e.fma(e.mul(d, d), e.poly(d, around_min[::-1]), at_min - float(hi)))
    poly = e.select(near1, e.mul(s1, e.poly(s1, _LGAMMA32_1[::-1])), e.select(
        near_min, minimum, e.mul(y, e.poly(y, _LGAMMA32_2[::-1]))))
    prod = e.v(1.0)
    for k in range(2, int(_GAMMA_T32)):       # lgamma(y + i) = lgamma(y + 2) + log(prod)
        prod = e.mul(prod, e.select(e.gt(i, float(k)), e.add(y, float(k)), 1.0))
    stirling = e.ge(z, _GAMMA_T32)
    log_arg = _log(e, e.select(stirling, z, e.select(e.ge(i, 3.0), prod,
                                                      e.select(low, z, 1.0))))
    recur = e.add(poly, e.select(low, e.neg(log_arg), log_arg))
    w = e.div(1.0, z)
    series = e.mul(w, e.poly(e.mul(w, w), _STIRLING_S[-4:]))
    big = e.add(e.mul(e.sub(z, 0.5), e.sub(log_arg, 1.0)),
                e.add(0.5 * (math.log(2 * _PI) - 1.0), series))
    return e.select(stirling, big, recur)


def _lgamma_reflect(e: _Emitter, x, pos: Callable):
    neg = e.lt(x, 0.0)
    core = pos(e, e.select(neg, e.sub(1.0, x), x))
    # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x).
    s, _ = _sincospi(e, e.sub(x, e.rint(x)))
    refl = e.sub(e.neg(_log(e, e.div(e.abs(s), _PI))), core)
    refl = e.select(e.eq(s, 0.0), math.inf, refl)          # poles (core may be inf too)
    res = e.select(neg, refl, core)
    return e.select(e.eq(e.abs(x), math.inf), math.inf, res)


def _lgamma(e: _Emitter, x):
    if e.f64:
        return _lgamma_reflect(e, x, _lgamma_pos)
    return _lgamma_reflect(e, x, _lgamma32_pos)


# digamma(y) = (y - x0) * R(y - 3/2) on [1, 2], x0 the positive zero (hi + lo).
_DIGAMMA_X0 = (1.4616321449683622, 9.549995429965697e-17)
_DIGAMMA_R = (-8.315741248366466e-05, 0.0001223883039809053, -5.883353238773438e-05,
              9.162607756821215e-05, -0.00021931703968077477, 0.00032687068873443395,
              -0.0004594472966344608, 0.0006899503807383504, -0.0010423765731217356,
              0.0015635724257127292, -0.0023446333463679886, 0.0035180794808351975,
              -0.005280019416669481, 0.007927024118911006, -0.011908215074905979,
              0.017907248193247117, -0.026975796847926375, 0.040760833944711354,
              -0.06192213327158131, 0.09498872445282866, -0.14840492305391834,
              0.24054248424078736, -0.42362742128146047, 0.9510558760318328)
# digamma(z) = log z - 1/(2z) - w * A(w), w = 1/z**2, z >= 10.
_DIGAMMA_A = (-3617 / 8160, 1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120,
              1 / 12)
# float32: R(y - 3/2) fitted by tools/fit_polynomials.py (lowest degree first), the asymptotic
# series from 5 (its next term at 5, 43867/798/18 w**9, is 2e-13): fewer rounded steps of the
# recurrence (y + k and the fraction num/den), each ~half an ulp of the sum.
_DIGAMMA32_R = (
    0.9510558754482131, -0.4236274216363848, 0.24054265293072272, -0.14840497564834984,
    0.09498088578203162, -0.06191825444918108, 0.04089278954403552, -0.027051405197863133,
    0.016918772874165572, -0.011298876317294992, 0.011217447587335849, -0.007400942299807086)
_DIGAMMA_T32 = 5.0


def _digamma_pos(e: _Emitter, z):
    """digamma(z) for z > 0 (or NaN, inf): float64, or float32 with its own R and fewer steps
    of the recurrence before the series."""
    if e.f64:
        r_coeffs, steps_to, a_coeffs = _DIGAMMA_R, _GAMMA_T, _DIGAMMA_A
    else:
        r_coeffs, steps_to, a_coeffs = _DIGAMMA32_R[::-1], _DIGAMMA_T32, _DIGAMMA_A
    lt1 = e.lt(z, 1.0)
    fl = e.floor(z)
    y = e.add(e.sub(z, fl), 1.0)              # in [1, 2), exact from 1 up
    steps = e.sub(fl, 1.0)                    # digamma(z) = digamma(y) + sum 1/(y + k)
    num, den = e.v(0.0), e.v(1.0)
    for k in range(int(steps_to)):
        use = e.gt(steps, float(k))
        yk = e.add(y, float(k))
        num = e.select(use, e.fma(num, yk, den), num)
        den = e.select(use, e.mul(den, yk), den)
    x0_hi = e.np(_DIGAMMA_X0[0])              # (y - x0_hi is exact on [1, 2])
    x0_lo = _DIGAMMA_X0[0] - float(x0_hi) + _DIGAMMA_X0[1]
    # below 1 (no steps), digamma(z) = digamma(z + 1) - 1/z, and z + 1 would round: its
    # y - 3/2 and y - x0_hi from z itself
    s = e.select(lt1, e.sub(z, 0.5), e.sub(y, 1.5))
    d = e.select(lt1, e.sub(z, float(x0_hi) - 1.0), e.sub(y, x0_hi))
    base = e.mul(e.sub(d, x0_lo), e.poly(s, r_coeffs))
    recur = e.add(base, e.div(num, den))
    recur = e.select(lt1, e.sub(recur, e.div(1.0, z)), recur)
    w = e.div(1.0, e.mul(z, z))
    asym = e.sub(e.sub(_log(e, z), e.div(0.5, z)), e.mul(w, e.poly(w, a_coeffs)))
    return e.select(e.ge(z, steps_to), asym, recur)


def _digamma(e: _Emitter, x):
    neg = e.lt(x, 0.0)
    core = _digamma_pos(e, e.select(neg, e.sub(1.0, x), x))
    # Reflection: digamma(x) = digamma(1 - x) - pi * cot(pi x).
    s, c = _sincospi(e, e.sub(x, e.rint(x)))
    refl = e.sub(core, e.div(e.mul(c, _PI), s))
    res = e.select(neg, refl, core)
    pole = e.and_(e.le(x, 0.0), e.eq(e.floor(x), x))   # JAX gives NaN at 0, -1, -2, ...
    return e.select(pole, math.nan, res)


# === float32 exp, log, log1p, erf, erf_inv, tanh: XLA's CPU algorithms ====================
# JAX's samplers (random.normal is erf_inv of uniform bits) are specified by XLA's float32
# code, so these primitives follow it operation for operation (tanh too, an activation whose
# bits users compare with JAX's): the same constants (read from the reference implementation,
# lax/elementwise.py) and the same fma contractions. Native results then equal the reference's,
# and JAX's, bit for bit on normal numbers; subnormals are kept (IEEE, as everywhere in
# tracejit) where XLA's CPU code flushes them to zero. float64 keeps our own code above.

def _has_scalef() -> bool:
    """Whether the host has AVX-512's vscalef, to which LLVM lowers `llvm.ldexp` (scalar and
    vector), from LLVM 17 on; elsewhere a vector ldexp becomes a libm call per lane (or, in
    LLVM 15, a call of an undefined function), so two multiplies it is."""
    from ..llvm_setup import host_has
    return LLVM_17 and host_has("avx512f")


def _xla_exp32(e: _Emitter, x):
    # clamp x to [-104, 88.8], NaN passing through: llvm.maximum/minimum against a constant
    # are one vmaxps/vminps each (the select pair became a vminps, a compare and a blend)
    x = minmax(e.b, minmax(e.b, x, e.v(-104.0), True), e.v(88.8), False)
    n = e.floor(e.fma(x, float(np.float32(1 / np.log(2))), 0.5))
    # A NaN n (x NaN) becomes 127 here, not later: one vminps either way, and fptosi below
    # needs no NaN select (y is NaN through r, and stays the same NaN whatever its scale).
    n = e.select(e.b.fcmp_unordered(">", n, e.v(127.0)), 127.0, n)
    r = e.fma(e.neg(n), _xla._LN2_LO, e.fma(e.neg(n), _xla._LN2_HI, x))
    p = _xla._EXP_P
    y = e.fma(r, p[0], p[1])
    for c in p[2:]:
        y = e.fma(y, r, c)
    y = e.add(1.0, e.fma(y, e.mul(r, r), r))
    if _has_scalef():  # y * 2**n in one vscalefps (subnormal results rounded once, as below):
        # 9 vector operations fewer than the two multiplies, where softmax spends its time
        return e.scale(y, e.b.fptosi(n, e.ity))
    low = e.lt(n, -100.0)  # a subnormal result: 2**n in two steps, one rounding
    n = e.select(low, e.add(n, 64.0), n)
    ni = e.b.fptosi(n, e.ity)   # n is not NaN (the n <= 127 select above)
    out = e.mul(y, e.from_bits(e.ishl(e.iadd(ni, 127), 23)))
    return e.select(low, e.mul(out, 2.0 ** -64), out)


def _xla_tanh32(e: _Emitter, x):
    # NaN passes the clamp's selects; +-inf clamp to where the quotient is exactly +-1
    c = e.clamp(x, -_xla._TANH_CLAMP, _xla._TANH_CLAMP)
    x2 = e.mul(c, c)
    p = e.poly(x2, _xla._TANH_P)
    q = e.poly(x2, _xla._TANH_Q)
    return e.select(e.lt(e.abs(x), _xla._TANH_SMALL), x, e.div(e.mul(c, p), q))


def _xla_log32(e: _Emitter, u, subnormal: bool = True):
    """(`subnormal` False: u is never subnormal, as log1p's 1 + x, whose least positive value
    is 2**-24: the scaling below is left out, the same bits.)"""
    us = u
    if subnormal:
        sub = e.and_(e.gt(u, 0.0), e.lt(u, e.tiny))  # subnormal: scaled up, k corrected
        us = e.select(sub, e.mul(u, 2.0 ** 23), u)
    m = e.select(e.gt(us, e.tiny), us, e.tiny)  # u <= 0 and NaN are patched at the end
    bits = e.bits(m)
    mant = e.from_bits(e.b.or_(e.iand(bits, -2139095041), e.i(0x3F000000)))   # in [1/2, 1)
    small = e.lt(mant, float(np.sqrt(np.float32(0.5))))
    k = e.b.sitofp(e.isub(e.iashr(bits, 23), 127), e.ty)
    k = e.sub(e.add(k, 1.0), e.select(small, 1.0, 0.0))
    if subnormal:
        k = e.sub(k, e.select(sub, 23.0, 0.0))
    x = e.add(e.sub(mant, 1.0), e.select(small, mant, 0.0))
    x2 = e.mul(x, x)
    x3 = e.mul(x2, x)
    p = _xla._LOG_P
    y1, y2, y3 = (e.fma(x, p[i], p[i + 1]) for i in (0, 3, 6))
    y1, y2, y3 = (e.fma(y, x, p[i]) for y, i in ((y1, 2), (y2, 5), (y3, 8)))
    y = e.fma(e.fma(e.fma(y1, x3, y2), x3, y3), x3, e.mul(k, _xla._LN2_LO))
    out = e.fma(k, _xla._LN2_HI, e.add(e.fma(x2, -0.5, x), y))
    out = e.select(e.eq(u, math.inf), math.inf, e.select(e.eq(u, 0.0), -math.inf, out))
    return e.select(e.or_(e.lt(u, 0.0), e.isnan(u)), math.nan, out)


def _xla_log1p32(e: _Emitter, x):
    num, den = e.v(_xla._LOG1P_P[0]), e.v(_xla._LOG1P_Q[0])
    for p, q in zip(_xla._LOG1P_P[1:], _xla._LOG1P_Q[1:]):
        num, den = e.fma(num, x, p), e.fma(den, x, q)
    x2 = e.mul(x, x)
    small = e.add(x, e.fma(x2, -0.5, e.mul(e.mul(x, x2), e.div(num, den))))
    large = _xla_log32(e, e.add(x, 1.0), subnormal=False)
    return e.select(e.lt(e.abs(x), float(np.float32(np.sqrt(2) - 1))), small, large)


def _xla_erf32(e: _Emitter, x):
    x2 = e.mul(x, x)
    p, q = e.v(_xla._ERF_P[0]), e.v(_xla._ERF_Q[0])
    for c in _xla._ERF_P[1:]:
        p = e.fma(x2, p, c)
    for c in _xla._ERF_Q[1:]:
        q = e.fma(x2, q, c)
    big = e.ge(e.abs(x), float(np.array(0x407547CB, np.uint32).view(np.float32)))
    return e.select(big, e.copysign(1.0, x), e.div(e.mul(x, p), q))


def _xla_erf_inv32(e: _Emitter, x):
    """XLA's ErfInv32 (Giles): w = -log1p(-x*x), a polynomial in w - 2.5 (w < 5) or
    sqrt(w) - 3, times x; +-inf at +-1."""
    w = e.neg(_xla_log1p32(e, e.mul(x, e.neg(x))))
    lt = e.lt(w, 5.0)
    w = e.select(lt, e.sub(w, 2.5), e.sub(e.sqrt(w), 3.0))
    small, large = _ERF_INV32
    p = e.select(lt, small[0], large[0])
    for cs, cl in zip(small[1:], large[1:]):
        p = e.fma(p, w, e.select(lt, cs, cl))
    return e.select(e.eq(e.abs(x), 1.0), e.mul(x, math.inf), e.mul(p, x))


def _xla_f32(xla32: Callable, ours64: Callable) -> Callable:
    return lambda e, x: ours64(e, x) if e.f64 else xla32(e, x)


# === polygamma: digamma for m = 0, Hurwitz zeta above (float64 code; float32 rounds) =========

# B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta function, j = 1..12.
_BERNOULLI_2J = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
                 Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
                 Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
                 Fraction(-236364091, 2730))
_EULER_MACLAURIN = tuple(float(b / math.factorial(2 * j))
                         for j, b in enumerate(_BERNOULLI_2J, 1))
# Terms summed directly before the tail: at w >= 6 the tail's smallest term is below 2**-55
# of the sum for every order s (measured against mpmath for s = 2..171).
_ZETA_SHIFT = 6
_FACTORIALS = tuple(float(math.factorial(n)) for n in range(171))   # 171! overflows float64


def _zeta_pos(e: _Emitter, s, q_hi, q_lo):
    """Hurwitz zeta(s, q) = sum_k (q + k)**-s for integer-valued s >= 2 and q = q_hi + q_lo
    >= 0 finite (inf at q = 0), float64: _ZETA_SHIFT terms, then the Euler-Maclaurin tail at
    w = q + _ZETA_SHIFT cut at its smallest term. Every base carries its rounding into the
    power (an error of one ulp in q + k would cost s ulp in (q + k)**-s)."""
    def term(k, power):
        y, lo = _two_sum(e, q_hi, float(k))
        lo = e.add(lo, q_lo)
        ok = e.and_(e.gt(y, 0.0), e.lt(y, math.inf))
        # (seven powers a sum, three sums a zeta: one function of the module, inlined at each)
        return y, emit_function(e.b, "pow_abs_rel", _pow_abs64, y, power,
                                e.select(ok, e.div(lo, y), 0.0))
    # w**(1 - s), not w**-s * w: the tail ~ w**(1 - s)/(s - 1) must not underflow early
    w, ws1 = term(_ZETA_SHIFT, e.sub(1.0, s))
    ratio = e.div(s, w)                       # (s)_(2j-1) / w**(2j-1), built up term by term
    em = e.mul(ratio, _EULER_MACLAURIN[0])
    last = e.abs(em)
    w2 = e.mul(w, w)
    for j, c in enumerate(_EULER_MACLAURIN[1:], 2):
        ratio = e.div(e.mul(ratio, e.mul(e.add(s, 2 * j - 3), e.add(s, 2 * j - 2))), w2)
        t = e.mul(ratio, c)
        smaller = e.lt(e.abs(t), last)        # an asymptotic series: stop where it turns
        em = e.select(smaller, e.add(em, t), em)
        last = e.select(smaller, e.abs(t), e.v(-1.0))
    bracket = e.add(e.div(1.0, e.sub(s, 1.0)), e.div(e.add(0.5, em), w))
    acc = e.select(e.eq(ws1, 0.0), 0.0, e.mul(ws1, bracket))   # no 0 * inf for huge s
    for k in reversed(range(_ZETA_SHIFT)):    # smallest terms first
        acc = e.add(acc, term(k, e.neg(s))[1])
    return acc


_ZETA_REFLECTION = "tracejit_zeta_reflection_f64"


def _zeta_reflection(e: _Emitter, s, q):
    """zeta(s, g) - zeta(s, 1 - q) for q < 0, g = ceil(q) - q (exact): the terms q + k < 0 of
    zeta(s, q)'s sum, as the difference of two zetas (each shifted only _ZETA_SHIFT times)."""
    g = e.sub(e.neg(q), e.floor(e.neg(q)))
    one_q, one_q_lo = _two_sum(e, 1.0, e.neg(q))
    return e.sub(_zeta_pos(e, s, g, e.v(0.0)), _zeta_pos(e, s, one_q, one_q_lo))


def _zeta_reflection_routine(symbol: str) -> ir.Module:
    """A module defining `_zeta_reflection` as the routine _ZETA_REFLECTION and its vector
    variants (calling it on the lanes with q < 0)."""
    module = ir.Module(name=symbol)
    ty = ir.DoubleType()
    fn = ir.Function(module, ir.FunctionType(ty, [ty, ty]), name=symbol)
    e = _Emitter(ir.IRBuilder(fn.append_basic_block("entry")), ty)
    e.b.ret(_zeta_reflection(e, *fn.args))
    fn.attributes.add("noinline")
    for lanes in VECTOR_WIDTHS:
        _define_vector_variant(module, fn, lanes, lambda b, e, xs: b.fcmp_ordered(
            "<", xs[1], ir.Constant(xs[1].type, [0.0] * xs[1].type.count)))
    return module


# The out-of-line routines programs call by name (cold paths: compiled at O1), with the
# builders of their modules
OUT_OF_LINE: dict[str, Callable[[str], ir.Module]] = {
    **{symbol: big_trig_routine for symbol in BIG_TRIG_SYMBOLS},
    _ZETA_REFLECTION: _zeta_reflection_routine}


def _zeta(e: _Emitter, s, q):
    """zeta(s, q) for integer-valued s >= 2 and any q, float64, as SciPy (inf at the poles
    q = 0, -1, -2, ... and at q = -inf, 0 at q = inf). For q < 0, with f = q - floor(q)
    (exact): zeta(s, q) = zeta(s, f) + (-1)**s _zeta_reflection(s, q), which runs out of line
    behind an unlikely branch: a loop LLVM vectorises calls its masked variants, which return
    at once when no lane has q < 0 (a polygamma of 1M float32 took 54 ms computing all three
    zetas for every lane; JAX 0.12 33)."""
    b = e.b
    neg = e.lt(q, 0.0)
    z_f = _zeta_pos(e, s, e.select(neg, e.sub(q, e.floor(q)), q), e.v(0.0))
    positive_block = b.block
    with b.if_then(neg, likely=False):
        reflected = b.call(_routine_decl(b.module, _ZETA_REFLECTION, e.ty, 2,
                                         _INLINE_SLOW_PATHS.get()), [s, q])
        odd = e.eq(e.sub(s, e.mul(e.floor(e.mul(s, 0.5)), 2.0)), 1.0)
        negative = e.add(z_f, e.select(odd, e.neg(reflected), reflected))
        negative_block = b.block
    res = b.phi(e.ty)
    res.add_incoming(z_f, positive_block)
    res.add_incoming(negative, negative_block)
    pole = e.and_(e.le(q, 0.0), e.eq(e.floor(q), q))        # -inf included (f is NaN there)
    return e.select(e.eq(q, math.inf), 0.0, e.select(pole, math.inf, res))


def _hurwitz_zeta(e: _Emitter, s, q):
    """Hurwitz zeta for real s (lax.zeta): _zeta's sum (float64, rounded for float32) where it
    converges (s > 1); inf at s = 1, NaN below, at s = inf or q = inf, and for q < 0 unless s
    is an integer (the sum is complex there)."""
    if not e.f64:
        d = _Emitter(e.b, ir.DoubleType())
        return e.b.fptrunc(_hurwitz_zeta(d, e.b.fpext(s, d.ty), e.b.fpext(q, d.ty)), e.ty)
    s_int = e.eq(e.floor(s), s)
    ok = e.and_(e.gt(s, 1.0), e.lt(s, math.inf))
    ok = e.and_(ok, e.or_(e.ge(q, 0.0), s_int))
    res = _zeta(e, e.select(ok, s, 2.0), q)
    res = e.select(ok, res, math.nan)
    res = e.select(e.and_(e.eq(s, 1.0), e.not_(e.isnan(q))), math.inf, res)
    return e.select(e.eq(q, math.inf), math.nan, res)


def _factorial(e: _Emitter, n):
    """n! for integer-valued 0 <= n (inf past 170) from a constant table."""
    module = e.b.module
    table = module.globals.get("tracejit.factorials")
    if table is None:
        ty = ir.ArrayType(ir.DoubleType(), len(_FACTORIALS))
        table = ir.GlobalVariable(module, ty, name="tracejit.factorials")
        table.initializer = ir.Constant(ty, list(_FACTORIALS))
        table.global_constant = True
        table.linkage = "internal"
    in_table = e.le(n, float(len(_FACTORIALS) - 1))
    index = e.b.fptosi(e.select(in_table, n, 0.0), ir.IntType(32))   # in range, never poison
    ptr = e.b.gep(table, [ir.Constant(ir.IntType(32), 0), index], inbounds=True)
    return e.select(in_table, e.b.load(ptr), math.inf)


def _polygamma64(e: _Emitter, m, x):
    """SciPy's polygamma(m, x): digamma (SciPy's poles: -inf at +0, inf at -0, NaN below) for
    m = 0, else (-1)**(m+1) * m! * zeta(m + 1, x) in that order (so huge m gives inf or
    NaN as SciPy does); NaN unless m is a non-negative integer."""
    valid = e.and_(e.and_(e.ge(m, 0.0), e.eq(e.floor(m), m)), e.lt(m, math.inf))
    m = e.select(valid, m, 0.0)
    odd = e.eq(e.sub(m, e.mul(e.floor(e.mul(m, 0.5)), 2.0)), 1.0)
    fac = _factorial(e, m)
    res = e.mul(e.select(odd, fac, e.neg(fac)), _zeta(e, e.add(m, 1.0), x))
    psi = _digamma(e, x)
    psi = e.select(e.eq(x, 0.0), e.copysign(math.inf, e.neg(x)), psi)
    res = e.select(e.eq(m, 0.0), psi, res)
    return e.select(valid, res, math.nan)


def _polygamma(e: _Emitter, m, x):
    if e.f64:
        return _polygamma64(e, m, x)
    d = _Emitter(e.b, ir.DoubleType())
    return e.b.fptrunc(_polygamma64(d, e.b.fpext(m, d.ty), e.b.fpext(x, d.ty)), e.ty)


# === exponentially scaled Bessel functions i0e, i1e ==========================================

# float64: Chebyshev series sum a_k T_k(t) (coefficients ours, interpolated in mpmath at 60
# Chebyshev nodes; lowest degree first) on Cephes' two ranges: i0e(x) and i1e(x)/x on [0, 8]
# with t = x/4 - 1; sqrt(x) i0e(x) and sqrt(x) i1e(x) on [8, inf) with t = 16/x - 1. Cut where
# the terms fall below 2**-62 of the first.
_I0E_SMALL = (
    0.33839763720473803, -0.3046826723431984, 0.17162090152220877, -0.09490109704804764,
    0.04930528423967071, -0.02373741480589947, 0.010546460394594998, -0.004324309995050576,
    0.0016394756169413357, -0.0005763755745385824, 0.00018850288509584165,
    -5.754195010082104e-05, 1.6448448070728896e-05, -4.4167383584587505e-06,
    1.1173875391201037e-06, -2.670793853940612e-07, 6.046995022541919e-08,
    -1.300025009986248e-08, 2.6598237246823866e-09, -5.189795601635263e-10,
    9.675809035373237e-11, -1.726826291441556e-11, 2.95505266312964e-12,
    -4.856446783111929e-13, 7.676185498604936e-14, -1.1685332877993451e-14,
    1.715391285555133e-15, -2.431279846547955e-16, 3.3307945188222384e-17,
    -4.4153416464793395e-18, 5.669178006921496e-19)
_I1E_SMALL = (
    0.12629359322181682, -0.17641651835783406, 0.1026436586898471, -0.05294598120809499,
    0.024726449030626516, -0.010564084894626197, 0.004156422944312888,
    -0.0015135724506312532, 0.0005122859561685758, -0.00016176081582589674,
    4.781565107550054e-05, -1.3273163656039436e-05, 3.4702513081376785e-06,
    -8.568720264695455e-07, 2.0032947535521353e-07, -4.445059128796328e-08,
    9.381537386495773e-09, -1.8872497517228294e-09, 3.625590281552117e-10,
    -6.663489723502027e-11, 1.1736186298890901e-11, -1.9839743977649436e-12,
    3.223793365945575e-13, -5.042185504727912e-14, 7.600684294735408e-15,
    -1.1055969477353862e-15, 1.5536319577362005e-16, -2.111421214358166e-17,
    2.7779141127610464e-18, -3.541581772542136e-19, 4.379302756655071e-20)
_I0E_LARGE = (
    0.4022452055070544, 0.0033691164782556943, 6.889758346916825e-05, 2.8913705208347567e-06,
    2.0489185894690638e-07, 2.266668990498178e-08, 3.3962320257083865e-09,
    4.94060238822497e-10, 1.1889147107846439e-11, -3.1499165279632416e-11,
    -1.3215811840447713e-11, -1.7941785315068062e-12, 7.180124451383666e-13,
    3.8527783827421426e-13, 1.54008621752141e-14, -4.150569347287222e-14,
    -9.554846698828307e-15, 3.8116806693526224e-15, 1.7725601330565263e-15,
    -3.425485619677219e-16, -2.8276239805165836e-16, 3.461222867697461e-17,
    4.46562142029676e-17, -4.830504485944182e-18, -7.233180487874754e-18,
    9.921475412173699e-19, 1.193650890845982e-18, -2.4887098371508075e-19,
    -1.938426454160906e-19)
_I1E_LARGE = (
    0.38928811750914005, -0.009761097491361469, -0.00011058893876262371,
    -3.882564808877691e-06, -2.512236237870209e-07, -2.6314688468895196e-08,
    -3.835380385964237e-09, -5.589743462196584e-10, -1.8974958123505413e-11,
    3.2526035830154884e-11, 1.4125807436613782e-11, 2.0356285441470896e-12,
    -7.198551776245908e-13, -4.0835511110921974e-13, -2.1015418427726643e-14,
    4.272440016711951e-14, 1.0420276984128802e-14, -3.8144030724370075e-15,
    -1.8803547755107825e-15, 3.3082023109209285e-16, 2.96262899764595e-16,
    -3.209525921993424e-17, -4.6503053684893586e-17, 4.414348323071708e-18,
    7.517296310842105e-18, -9.314178867326884e-19, -1.242193275194891e-18,
    2.4142767194548486e-19, 2.0269443840532852e-19)
# float32: polynomials of z = |x| on four pieces, fitted by tools/fit_polynomials.py (lowest
# degree first): on [0, 0.5] (i0e(z) - 1) / z and (i1e(z) / z - 1/2) / z; on (0.5, 2.625] and
# (2.625, 8] the functions themselves in z - 1.5 and z - 5.25 (exact subtractions); on (8, inf)
# sqrt(z) times them in 1/z.
_I0E32_0_05 = (
    -0.9999999991038372, 0.7499998227484046, -0.41666107660812735, 0.18222507897799636,
    -0.06524289085049177, 0.01890517314399939, -0.0035419983619181697)
_I0E32_05_2625 = (
    0.3674336097627836, -0.14839422671473612, 0.07538105613422301, -0.03429192420666923,
    0.013353126347644203, -0.004461772059672874, 0.0012941411882179243, -0.0003296114981180018,
    7.621775230616522e-05, -1.687893054121346e-05, 2.7042478784254665e-06)
_I0E32_2625_8 = (
    0.17883823735222162, -0.01808503119160831, 0.002775212486506778, -0.0004801825706381051,
    8.841353407409594e-05, -1.680706149705984e-05, 3.2327180016849705e-06, -6.218844754260721e-07,
    1.11076150117495e-07, -1.6746601093280125e-08, 3.1189732405693364e-09, -7.866776640867169e-10,
    9.708991691836931e-11)
_I0E32_8_INF = (
    0.39894228085909866, 0.04986743614323965, 0.02809345913467733, 0.027290044923971933,
    0.08461950953344996, -0.3026361174018318, 1.8211160146705414)
_I1E32_0_05 = (
    -0.4999999930333169, 0.3124990330429201, -0.14581118566199244, 0.05449911075565197,
    -0.016449045527412356, 0.0032693476223381213)
_I1E32_05_2625 = (
    0.2190393869932414, 0.002367971455541397, -0.027494972596604682, 0.01911917459101285,
    -0.008953202223711064, 0.003309065210522483, -0.0010216204452964575, 0.0002709317412738845,
    -6.435781578091185e-05, 1.4779586440287075e-05, -2.507442974555367e-06)
_I1E32_2625_8 = (
    0.16075320169325735, -0.012534625617217162, 0.0013347202412152947, -0.00012646044674816155,
    4.269788583503371e-06, 2.5242878333793597e-06, -1.0445314374802663e-06, 2.915461186637349e-07,
    -6.331245048160981e-08, 1.035978236108356e-08, -2.174899188747922e-09, 6.195212647622097e-10,
    -8.004006078364829e-11)
_I1E32_8_INF = (
    0.3989422798682664, -0.14960295250639905, -0.04680011413826719, -0.03870978908528905,
    -0.10273128703948813, 0.33350096943847163, -2.0666383355707354)


def _chebyshev(e: _Emitter, t, coeffs):
    """sum a_k T_k(t) for |t| <= 1 by Clenshaw's recurrence (stable where the monomial form
    of a degree-30 series would cancel)."""
    t2 = e.add(t, t)
    b1, b2 = e.v(0.0), e.v(0.0)
    for a in reversed(coeffs[1:]):
        b1, b2 = e.fma(t2, b1, e.sub(a, b2)), b1
    return e.fma(t, b1, e.sub(coeffs[0], b2))


def _bessel_ie64(e: _Emitter, x, order: int):
    a = e.abs(x)
    small_c, large_c = (_I0E_SMALL, _I0E_LARGE) if order == 0 else (_I1E_SMALL, _I1E_LARGE)
    small = _chebyshev(e, e.sub(e.mul(a, 0.25), 1.0), small_c)
    if order == 1:
        small = e.mul(small, a)
    # a = inf: t = -1 and the division gives 0; a <= 8 (or NaN) never uses this branch's value
    large = e.div(_chebyshev(e, e.sub(e.div(16.0, a), 1.0), large_c), e.sqrt(a))
    return e.select(e.gt(a, 8.0), large, small)


def _bessel_ie32(e: _Emitter, x, order: int):
    """Every piece computed, one chosen (NaN takes the first); (8, inf)'s divides by sqrt(z),
    with z = 8 on the other pieces' lanes (inf: 0)."""
    z = e.abs(x)
    if order == 0:
        small_c, mid_c, high_c, tail_c = _I0E32_0_05, _I0E32_05_2625, _I0E32_2625_8, _I0E32_8_INF
        first = e.fma(z, e.poly(z, small_c[::-1]), 1.0)
    else:
        small_c, mid_c, high_c, tail_c = _I1E32_0_05, _I1E32_05_2625, _I1E32_2625_8, _I1E32_8_INF
        # z/2 exact, the rest a small correction to it: one rounding of the sum
        first = e.fma(z, e.mul(z, e.poly(z, small_c[::-1])), e.mul(z, 0.5))
    big = e.select(e.gt(z, 8.0), z, 8.0)
    tail = e.div(_split_poly(e, e.div(1.0, big), tail_c), e.sqrt(big))
    return e.select(e.gt(z, 8.0), tail, e.select(
        e.gt(z, 2.625), _split_poly(e, e.sub(z, 5.25), high_c),
        e.select(e.gt(z, 0.5), _split_poly(e, e.sub(z, 1.5), mid_c), first)))


def _split_poly(e: _Emitter, s, coeffs):
    """coeffs[0] + s (coeffs[1] + s (...)), lowest degree first, by fma, with coeffs[0] as hi +
    lo and lo added first: its own rounding (half an ulp) does not reach the result."""
    hi = e.np(coeffs[0])
    return e.add(hi, e.fma(s, e.poly(s, coeffs[:0:-1]), coeffs[0] - float(hi)))


def _bessel_ie(order: int):
    def fn(e: _Emitter, x):
        res = _bessel_ie64(e, x, order) if e.f64 else _bessel_ie32(e, x, order)
        if order == 1:   # odd, but +0 at -0 as SciPy's (the reference's) i1e
            res = e.select(e.eq(x, 0.0), 0.0, e.copysign(res, x))
        return res
    return fn


# === the public entry point =================================================================

def _intrinsic_fn(name: str):
    return lambda e, *args: e.call(name, *args)


_FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "exp": (1, _xla_f32(_xla_exp32, _exp)), "exp2": (1, _exp2), "expm1": (1, _expm1),
    "log": (1, _xla_f32(_xla_log32, _log)), "log2": (1, _log2),
    "log1p": (1, _xla_f32(_xla_log1p32, _log1p)),
    "tanh": (1, _xla_f32(_xla_tanh32, _tanh)), "logistic": (1, _logistic),
    "sinh": (1, _sinh), "cosh": (1, _cosh),
    "asinh": (1, _asinh), "acosh": (1, _acosh), "atanh": (1, _atanh),
    "sin": (1, lambda e, x: _sin_cos(e, x, False)), "cos": (1, lambda e, x: _sin_cos(e, x, True)),
    "tan": (1, _tan), "atan": (1, _atan), "atan2": (2, _atan2), "asin": (1, _asin),
    "acos": (1, _acos), "erf": (1, _xla_f32(_xla_erf32, _erf)), "erfc": (1, _erfc),
    "erf_inv": (1, _xla_f32(_xla_erf_inv32, _erf_inv64)),
    "pow": (2, _pow), "cbrt": (1, _cbrt), "lgamma": (1, _lgamma), "digamma": (1, _digamma),
    "polygamma": (2, _polygamma), "zeta": (2, _hurwitz_zeta), "bessel_i0e": (1, _bessel_ie(0)),
    "bessel_i1e": (1, _bessel_ie(1)),
    "sqrt": (1, _intrinsic_fn("llvm.sqrt")), "fabs": (1, _intrinsic_fn("llvm.fabs")),
    "floor": (1, _intrinsic_fn("llvm.floor")), "ceil": (1, _intrinsic_fn("llvm.ceil")),
    "fma": (3, _intrinsic_fn("llvm.fma")),
    # minimum/maximum propagate NaN as JAX does (minnum/maxnum would drop it).
    "minimum": (2, lambda e, x, y: minmax(e.b, e.v(x), e.v(y), False)),
    "maximum": (2, lambda e, x, y: minmax(e.b, e.v(x), e.v(y), True)),
}
NAMES: tuple[str, ...] = tuple(_FUNCTIONS)


class _MathFunction(ir.Function):
    """A module's function for one math function, type and variant (`_math_function`): its
    size in instructions (what a call of it stands for once inlined) and the `_far_trig`
    functions it calls (each call of it is a use of those)."""

    def __init__(self, module: ir.Module, fnty: ir.FunctionType, name: str):
        super().__init__(module, fnty, name=name)
        self.size = 0
        self.far: list[ir.Function] = []
        self.interleaved = False  # (INTERLEAVED: a loop calling it gains from interleaving)
        self.calls_out = False    # (whether it may call a function not inlined: a slow path)


# Functions whose body depends on `inline_slow_paths` (their variant is part of the symbol):
# sin/cos/tan's slow path is a call of masked vector variants in vectorised loops and a branch
# to `_far_trig` in scalar code. No other function reads it (nor anything else that varies).
_PATH_VARIANTS = frozenset({"sin", "cos", "tan"})
# LLVM's own intrinsics: one instruction each, nothing to define
_INTRINSICS = frozenset({"sqrt", "fabs", "floor", "ceil", "fma", "minimum", "maximum"})


def _math_function(module: ir.Module, name: str, ty: ir.Type, nargs: int,
                   body: Callable) -> _MathFunction:
    """The module's function computing `name` on `ty` (defined at its first use): internal and
    `alwaysinline`, so LLVM's inliner puts the body at each call before any other pass
    (jit_engine.optimize): LLVM optimises, vectorises and compiles the same code as when
    Python emitted it at each use, the same bits. Python builds and prints each function's
    ~30-150 instructions once per module, not once per use (~10 us of CPU per instruction:
    most of a chain of 100 sin's first call). A body may call other math functions (special
    functions call log, lgamma, ...): the inliner inlines those into it first."""
    vector = name in _PATH_VARIANTS and _INLINE_SLOW_PATHS.get()
    symbol = (f"tracejit.math.{name}.{'f64' if isinstance(ty, ir.DoubleType) else 'f32'}"
              f"{'.vector' if vector else ''}")
    fn = module.globals.get(symbol)
    if fn is not None:
        for far in fn.far:
            _used_again(far)
        if name in _PATH_VARIANTS and not vector:
            # scalar code's sin/cos/tan (no loop LLVM vectorises calls it: its far path is a
            # call) used again: out of line too, as _far_trig (LLVM optimised and compiled a
            # chain of 10 sin's ~300 inlined lines in 13.7 ms, 7.0 as one function; CPU per
            # call of the chain, 1,000 elements, within noise: 24-25 us both)
            _used_again(fn)
        return fn
    fn = _MathFunction(module, ir.FunctionType(ty, [ty] * nargs), symbol)
    fn.linkage = "internal"
    fn.attributes = _PureAttributes(("readnone", "nounwind", "willreturn", "alwaysinline"))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(body(_Emitter(b, ty), *fn.args))
    calls = [i for bb in fn.blocks for i in bb.instructions if isinstance(i, ir.CallInstr)]
    fn.far = [i.callee for i in calls if i.callee.name.endswith(_FAR_SUFFIXES)]
    fn.far += [far for i in calls if isinstance(i.callee, _MathFunction) for far in i.callee.far]
    fn.size = inlined_size(fn.blocks) - 1   # (less the ret)
    fn.calls_out = any(_calls_out(i.callee) for i in calls)
    fn.interleaved = name in INTERLEAVED
    return fn


_FAR_SUFFIXES = (".far.f32", ".far.f64")


# Math functions whose vectorised loops run faster with several vectors a turn
# (codegen.CHAIN_INTERLEAVE): each is a long dependency chain of a few dozen operations, and
# with one vector a turn out-of-order execution overlaps too few turns to keep the FP pipes
# busy. CPU cycles per element, one thread, 2**18 float32 (2**17 float64) in L2, an AVX2
# core (Zen 3), one vector a turn -> four, float32: exp 1.78 -> 1.42, exp2 1.71 -> 1.40, expm1
# 2.22 -> 1.74, log 2.53 -> 2.33, log2 2.84 -> 2.50, logistic 2.25 -> 1.73, sinh 3.02 ->
# 2.42, cosh 2.62 -> 2.03, asinh 5.25 -> 4.53, acosh 4.84 -> 4.41, atanh 4.46 -> 4.04, atan2
# 3.94 -> 3.55, pow 17.8 -> 13.2, cbrt 12.0 -> 8.7, lgamma 17.3 -> 15.5, erf_inv 7.1 -> 6.0
# (softplus, log1p of exp, 8.2 -> 5.6; silu 2.4 -> 1.8); float64 10-30% fewer for each. Not
# those that lost or stayed: tanh 1.31 -> 1.43 and erf 1.30 -> 1.43 float32 (short rational
# functions, a division each), log1p 3.35 -> 3.59 (both of its paths live: the extra vectors
# spill), atan (float32 -6%, float64 +3%), erfc, digamma and i0e (within noise or worse), and
# sin/cos/tan, whose slow path is a call in vectorised loops (interleaved_math: around a call
# every vector register is spilled).
INTERLEAVED = frozenset({"exp", "exp2", "expm1", "log", "log2", "logistic", "sinh", "cosh",
                         "asinh", "acosh", "atanh", "atan2", "pow", "cbrt", "lgamma",
                         "erf_inv"})


def _calls_out(fn: ir.Function) -> bool:
    """Whether a call of `fn` may leave the inlined code: neither an LLVM intrinsic nor a
    math function without slow paths out of line."""
    if isinstance(fn, _MathFunction):
        return fn.calls_out
    return not fn.name.startswith("llvm.")


def interleaved_math(blocks) -> bool:
    """Whether a loop with these blocks calls a math function of INTERLEAVED, and nothing
    that may leave the inlined code (sin's slow path, a routine): around such a call every
    vector register would be spilled."""
    found = False
    for bb in blocks:
        for instr in bb.instructions:
            if isinstance(instr, ir.CallInstr):
                if _calls_out(instr.callee):
                    return False
                found = found or getattr(instr.callee, "interleaved", False)
    return found


def inlined_size(blocks) -> int:
    """The instructions in `blocks` once LLVM has inlined the math functions they call: the
    size codegen's heuristics were measured in, when the math was emitted inline."""
    size = 0
    for bb in blocks:
        size += len(bb.instructions)
        for instr in bb.instructions:
            if isinstance(instr, ir.CallInstr) and isinstance(instr.callee, _MathFunction):
                size += instr.callee.size - 1
    return size


# (llvmlite quotes every name; LLVM's printer, as in kernel_cache's linked modules, only those
# it must, and renames a second module's copy `tracejit.math.exp.f32.1`)
_DEFINITION = re.compile(r'^define internal [^@\n]*@"?(tracejit\.math\.[\w.$]+)"?\(',
                         re.MULTILINE)


def inlined_lines(ir_text: str) -> int:
    """The lines of a module's IR text once LLVM has inlined its math functions (each body at
    each call, a body's own calls of math functions inlined into each copy of it): the size
    jit_engine.optimize judges functions by (huge ones get O1)."""
    lines = ir_text.count("\n")
    if "tracejit.math." not in ir_text:
        return lines
    spans = {m.group(1): (m.start(), ir_text.index("\n}\n", m.start()))
             for m in _DEFINITION.finditer(ir_text)}

    def calls(name: str, start: int = 0, end: int = len(ir_text)) -> int:
        return (ir_text.count(f'@"{name}"(', start, end) +
                ir_text.count(f"@{name}(", start, end))
    # uses[name]: its calls once every math function is inlined; a caller's calls come first
    # (a body calls only functions defined before it was finished, so there is no cycle)
    inner = {f: {name: calls(name, *span) for name in spans} for f, span in spans.items()}
    uses: dict[str, int] = {}

    def uses_of(name: str) -> int:
        if name not in uses:
            outside = calls(name) - sum(inner[f][name] for f in spans)  # (less the definition)
            uses[name] = outside + sum(inner[f][name] * uses_of(f) for f in spans
                                       if f != name and inner[f][name])
        return uses[name]
    for name, (start, end) in spans.items():
        body = ir_text.count("\n", start, end)
        lines += body * (uses_of(name) - 1)  # (the definition goes; each call becomes the body)
    return lines


def emit(builder: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Emit `name(*args)` for float32 or float64 scalar operands of one type: a call of the
    module's function for it (`_math_function`), or the intrinsic."""
    try:
        nargs, fn = _FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"no LLVM math implementation for {name!r}; known: {NAMES}") from None
    if len(args) != nargs:
        raise TypeError(f"{name} takes {nargs} operand(s), got {len(args)}")
    ty = args[0].type
    if not isinstance(ty, (ir.FloatType, ir.DoubleType)) or any(a.type != ty for a in args):
        raise TypeError(f"{name} needs float32 or float64 operands of one type, got "
                        f"{[str(a.type) for a in args]}")
    if name in _INTRINSICS:
        return fn(_Emitter(builder, ty), *args)
    return builder.call(_math_function(builder.module, name, ty, nargs, fn), args)


def emit_function(builder: ir.IRBuilder, name: str, body: Callable, *args: ir.Value
                  ) -> ir.Value:
    """Emit a call of the module's function `name` on the operands' type whose body is
    `body(emitter, *params)` (defined at its first use and inlined at each call, as emit's
    own: `_math_function`), for scalar code built elsewhere (special_math's loops). `name`
    must be the same body wherever it is used, and none of emit's."""
    if name in _FUNCTIONS:
        raise ValueError(f"{name!r} is one of emit's own math functions")
    return builder.call(_math_function(builder.module, name, args[0].type, len(args), body),
                        args)
