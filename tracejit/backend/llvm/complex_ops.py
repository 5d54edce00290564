"""Scalar LLVM emission of elementwise primitives on complex operands (scalar_ops dispatches
here when an operand or the result is complex). A complex value is a {re, im} struct
(types.reg_type); the real parts use math.py's float math.

Each emitter follows the reference (NumPy on this machine) formula for formula, so arithmetic
is bit-identical and transcendentals differ only by the float math's ulps:
- mul: re = fma(ar, br, -(ai*bi)), im = fma(ar, bi, ai*br) (NumPy's elementwise loop
  contracts; its reduce/accumulate loops do not: see `accumulating_mul`);
- div: Smith's method without fma (NumPy's loop); abs: NumPy's scaled hypot,
  max(|re|, |im|) * sqrt(fma(r, r, 1)), r = min/max; sign: z / hypot(z) (glibc's hypot);
- exp, log, sqrt: glibc's cexp/clog/csqrt (NumPy calls them), special values included;
- pow: NumPy's nc_pow (integer exponents below 100 by repeated plain multiplication, else
  glibc's cpow, exp(y * log x)); expm1, log1p, exp2: NumPy's nc_* formulas;
- sinh, cosh, tanh: glibc's formulas and C99 special values; sin, cos, tan through them
  (sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz));
- lt/le/gt/ge/max/min: NumPy's lexicographic order (re first; a NaN part makes re's order void).
complex64 transcendentals compute in float64 and round once, which is at least as accurate as
the float routines NumPy calls, except where NumPy's formula rounds an intermediate that
the result is sensitive to (log1p's 1 + z, exp2's z ln 2, pow's integer branch): those
intermediates round in the operand's precision as in NumPy.
asin, acos, atan, asinh, acosh, atanh follow JAX instead (its values at branch cuts and special
points differ from NumPy's): core/complex_inverse.py's CHLO formulas, in the part dtype, as is
cumlogsumexp's combine (`logaddexp`). erf, erfc, erf_inv and polygamma refuse complex operands
when traced, as JAX's do.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from llvmlite import ir

from ...core import complex_inverse as ci
from ...core import dtypes
from ...core.primitive import Primitive
from ...lax import elementwise as ew
from .math import _Emitter
from .types import F64, is_complex, reg_type

# --- struct helpers ----------------------------------------------------------------------

def parts(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    return b.extract_value(z, 0), b.extract_value(z, 1)


def pack(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> ir.Value:
    t = ir.LiteralStructType([re.type, re.type])
    return b.insert_value(b.insert_value(ir.Constant(t, ir.Undefined), re, 0), im, 1)


def _widened(e: _Emitter, fn: Callable, *args) -> tuple[ir.Value, ir.Value]:
    """fn on float64 copies of the float parts `args`, rounded back to their type once."""
    if e.f64:
        return fn(e, *args)
    b = e.b
    re, im = fn(_Emitter(b, F64), *(b.fpext(a, F64) for a in args))
    return b.fptrunc(re, e.ty), b.fptrunc(im, e.ty)


def _isinf(e: _Emitter, x) -> ir.Value:
    return e.eq(e.abs(x), float("inf"))


def _isfinite(e: _Emitter, x) -> ir.Value:
    return e.lt(e.abs(x), float("inf"))


def _f(e: _Emitter, name: str, *args) -> ir.Value:
    from .math import emit
    return emit(e.b, name, *[e.v(a) for a in args])


# --- arithmetic ----------------------------------------------------------------------------

def _mul_fma(e: _Emitter, ar, ai, br, bi):
    return e.fma(ar, br, e.neg(e.mul(ai, bi))), e.fma(ar, bi, e.mul(ai, br))


def _mul_plain(e: _Emitter, ar, ai, br, bi):
    return e.sub(e.mul(ar, br), e.mul(ai, bi)), e.add(e.mul(ar, bi), e.mul(ai, br))


def _mul_c99(e: _Emitter, a, b, c, d):
    """C's complex product (libgcc's __muldc3, which glibc's cpow uses for y * clog(x)):
    plain products, and where both parts come out NaN, C99 Annex G's recovery of infinities:
    an infinite operand becomes a unit-like box (±1, ±0), NaN parts of the other become ±0."""
    inf = float("inf")
    ac, bd, ad, bc = e.mul(a, c), e.mul(b, d), e.mul(a, d), e.mul(b, c)
    x, y = e.sub(ac, bd), e.add(ad, bc)

    def box(v):  # an infinite part becomes ±1, a finite one ±0
        return e.copysign(e.select(_isinf(e, v), 1.0, 0.0), v)

    def zero_nan(v):
        return e.select(e.isnan(v), e.copysign(0.0, v), v)
    inf_ab = e.or_(_isinf(e, a), _isinf(e, b))
    inf_cd = e.or_(_isinf(e, c), _isinf(e, d))
    a1, b1 = e.select(inf_ab, box(a), a), e.select(inf_ab, box(b), b)
    c1, d1 = e.select(inf_ab, zero_nan(c), c), e.select(inf_ab, zero_nan(d), d)
    c1, d1 = e.select(inf_cd, box(c1), c1), e.select(inf_cd, box(d1), d1)
    a1, b1 = e.select(inf_cd, zero_nan(a1), a1), e.select(inf_cd, zero_nan(b1), b1)
    overflowed = e.or_(e.or_(_isinf(e, ac), _isinf(e, bd)), e.or_(_isinf(e, ad), _isinf(e, bc)))
    by_products = e.and_(e.not_(e.or_(inf_ab, inf_cd)), overflowed)
    a1, b1, c1, d1 = (e.select(by_products, zero_nan(v), v) for v in (a1, b1, c1, d1))
    recalc = e.or_(e.or_(inf_ab, inf_cd), by_products)
    x1 = e.mul(inf, e.sub(e.mul(a1, c1), e.mul(b1, d1)))
    y1 = e.mul(inf, e.add(e.mul(a1, d1), e.mul(b1, c1)))
    both_nan = e.and_(e.and_(e.isnan(x), e.isnan(y)), recalc)
    return e.select(both_nan, x1, x), e.select(both_nan, y1, y)


def _div(e: _Emitter, ar, ai, br, bi):
    """NumPy's Smith division; 0 / 0 divides the parts by |br| (complex inf or NaN)."""
    abr, abi = e.abs(br), e.abs(bi)
    re_big = e.ge(abr, abi)  # false for NaN: the second branch, as in NumPy
    zero = e.and_(e.eq(abr, 0.0), e.eq(abi, 0.0))
    rat1 = e.div(bi, br)
    scl1 = e.div(1.0, e.add(br, e.mul(bi, rat1)))
    re1, im1 = e.mul(e.add(ar, e.mul(ai, rat1)), scl1), e.mul(e.sub(ai, e.mul(ar, rat1)), scl1)
    rat2 = e.div(br, bi)
    scl2 = e.div(1.0, e.add(bi, e.mul(br, rat2)))
    re2, im2 = e.mul(e.add(e.mul(ar, rat2), ai), scl2), e.mul(e.sub(e.mul(ai, rat2), ar), scl2)
    re = e.select(re_big, e.select(zero, e.div(ar, abr), re1), re2)
    im = e.select(re_big, e.select(zero, e.div(ai, abr), im1), im2)
    return re, im


def _abs(e: _Emitter, re, im):
    """NumPy's complex absolute: an infinite part wins over NaN, then NaN propagates."""
    inf = float("inf")
    re, im = e.abs(re), e.abs(im)
    re, im = e.select(_isinf(e, im), inf, re), e.select(_isinf(e, re), inf, im)
    nan = e.or_(e.isnan(re), e.isnan(im))
    re, im = e.select(nan, float("nan"), re), e.select(nan, float("nan"), im)
    larger, smaller = _f(e, "maximum", re, im), _f(e, "minimum", re, im)
    usable = e.not_(e.or_(e.eq(larger, 0.0), e.eq(smaller, inf)))
    ratio = e.select(usable, e.div(smaller, e.select(usable, larger, 1.0)), 0.0)
    return e.mul(e.sqrt(e.fma(ratio, ratio, 1.0)), larger)


def _hypot(e: _Emitter, x, y):
    """sqrt(x² + y²) within about half an ulp, as glibc's hypot (which NumPy's sign and log1p
    call): scaled by a power of two so nothing overflows or underflows, then one Newton step
    on the exact residual h² - x² - y² (fma products)."""
    inf = float("inf")
    ax, ay = e.abs(x), e.abs(y)
    larger, smaller = _f(e, "maximum", ax, ay), _f(e, "minimum", ax, ay)
    half = e.bias // 2  # squares of scaled values stay normal: u in [2**-half, 2**half]
    scale = e.select(e.gt(larger, 2.0 ** half), 2.0 ** -(half + 2),
                     e.select(e.lt(larger, 2.0 ** -half), 2.0 ** (half + e.mant), 1.0))
    u, v = e.mul(larger, scale), e.mul(smaller, scale)
    h = e.sqrt(e.fma(u, u, e.mul(v, v)))
    uu, vv, hh = e.mul(u, u), e.mul(v, v), e.mul(h, h)
    residual = e.add(e.sub(e.sub(hh, uu), vv),
                     e.sub(e.sub(e.fma(h, h, e.neg(hh)), e.fma(u, u, e.neg(uu))),
                           e.fma(v, v, e.neg(vv))))
    h = e.sub(h, e.div(residual, e.mul(2.0, e.select(e.eq(h, 0.0), 1.0, h))))
    out = e.div(h, scale)
    return e.select(e.or_(e.eq(ax, inf), e.eq(ay, inf)), inf, out)


def _sign(e: _Emitter, re, im):
    """NumPy 2's z / hypot(z), and its branches where hypot(z) is infinite: ±1 along an
    infinite part, (0, ±1) when only the modulus overflows, NaN for two infinite parts;
    NaN for NaN parts; zero is kept with its signs (the reference's where(x == 0, x, ...))."""
    mag = _hypot(e, re, im)
    inf_re, inf_im = _isinf(e, re), _isinf(e, im)
    one_re = e.select(e.gt(re, 0.0), 1.0, -1.0)
    one_im = e.select(e.gt(im, 0.0), 1.0, -1.0)
    mag_inf = _isinf(e, mag)
    out_re = e.select(mag_inf, e.select(inf_re, one_re, 0.0), e.div(re, mag))
    out_im = e.select(mag_inf, e.select(inf_re, 0.0, one_im), e.div(im, mag))
    void = e.or_(e.isnan(mag), e.and_(inf_re, inf_im))
    zero = e.eq(mag, 0.0)
    return (e.select(void, float("nan"), e.select(zero, re, out_re)),
            e.select(void, float("nan"), e.select(zero, im, out_im)))


# --- exp, log, sqrt (glibc's cexp, clog, csqrt) --------------------------------------------

def _exp(e: _Emitter, a, b):
    inf = float("inf")
    c, s = _f(e, "cos", b), _f(e, "sin", b)
    # exp(a) overflows before exp(a) * cos(b) does: split the factor past the threshold
    big = e.gt(a, 700.0)
    h = _f(e, "exp", e.select(big, e.mul(a, 0.5), a))
    scale = e.select(big, h, 1.0)
    re, im = e.mul(e.mul(h, c), scale), e.mul(e.mul(h, s), scale)
    b_finite = _isfinite(e, b)
    re = e.select(e.eq(a, inf), e.select(b_finite, re, inf), re)
    im = e.select(e.eq(a, inf), e.select(b_finite, im, float("nan")), im)
    re = e.select(e.eq(a, -inf), e.select(b_finite, re, 0.0), re)
    im = e.select(e.eq(a, -inf), e.select(b_finite, im, e.copysign(0.0, b)), im)
    b_zero = e.eq(b, 0.0)  # exp(a ± 0i) = exp(a) ± 0i, NaN and infinities included
    return e.select(b_zero, _f(e, "exp", a), re), e.select(b_zero, b, im)


def _log_abs(e: _Emitter, a, b):
    """log|z|, accurate near |z| = 1 and without overflow or underflow elsewhere."""
    inf = float("inf")
    x, y = e.abs(a), e.abs(b)
    larger, smaller = _f(e, "maximum", x, y), _f(e, "minimum", x, y)
    ratio = e.div(smaller, e.select(e.eq(larger, 0.0), 1.0, larger))
    far = e.add(_f(e, "log", larger), e.mul(0.5, _f(e, "log1p", e.mul(ratio, ratio))))
    near = e.mul(0.5, _f(e, "log1p", e.add(e.fma(larger, larger, -1.0), e.mul(smaller, smaller))))
    close = e.and_(e.ge(larger, 0.5), e.le(larger, 2.0))
    out = e.select(close, near, far)
    out = e.select(e.eq(larger, 0.0), -inf, out)
    return e.select(e.or_(e.eq(x, inf), e.eq(y, inf)), inf, out)


def _log(e: _Emitter, a, b):
    return _log_abs(e, a, b), _f(e, "atan2", b, a)


def _log2(e: _Emitter, a, b):
    """log z times log2(e), part by part (NumPy's nc_log2; JAX's lowering of log2)."""
    lr, li = _log(e, a, b)
    return e.mul(lr, 1 / math.log(2)), e.mul(li, 1 / math.log(2))


def _sqrt(e: _Emitter, a, b):
    inf, nan = float("inf"), float("nan")
    # scale into range so that |a| + |z| neither overflows nor loses subnormal bits
    m = _f(e, "maximum", e.abs(a), e.abs(b))
    big, tiny = e.gt(m, 2.0 ** 1000), e.lt(m, 2.0 ** -1000)
    k = e.select(big, 2.0 ** -4, e.select(tiny, 2.0 ** 100, 1.0))
    back = e.select(big, 2.0 ** 2, e.select(tiny, 2.0 ** -50, 1.0))
    sa, sb = e.mul(a, k), e.mul(b, k)
    d = _abs(e, sa, sb)
    t = e.sqrt(e.mul(0.5, e.add(d, e.abs(sa))))
    half = e.mul(0.5, e.div(e.abs(sb), e.select(e.eq(t, 0.0), 1.0, t)))
    pos = e.ge(a, 0.0)
    re = e.mul(e.select(pos, t, half), back)
    im = e.mul(e.select(pos, half, t), back)
    re = e.select(e.eq(t, 0.0), 0.0, re)  # z = 0
    im = e.copysign(e.select(e.eq(t, 0.0), 0.0, im), b)
    # infinities: an infinite imaginary part wins, then an infinite real part
    b_nan = e.isnan(b)
    re = e.select(e.eq(a, inf), inf, e.select(e.eq(a, -inf), e.select(b_nan, nan, 0.0), re))
    im = e.select(e.eq(a, inf), e.select(b_nan, nan, e.copysign(0.0, b)),
                  e.select(e.eq(a, -inf), e.copysign(inf, b), im))
    b_inf = _isinf(e, b)
    return e.select(b_inf, inf, re), e.select(b_inf, b, im)


# --- NumPy's nc_* formulas -----------------------------------------------------------------

def _expm1(e: _Emitter, a, b):
    s = _f(e, "sin", e.mul(b, 0.5))
    re = e.sub(e.mul(_f(e, "expm1", a), _f(e, "cos", b)), e.mul(e.mul(2.0, s), s))
    # a real argument stays real, as in JAX: expm1(inf + 0j) = inf + 0j (not inf * sin(0) =
    # NaN), expm1(NaN + 0j) = NaN + 0j
    im = e.select(e.eq(b, 0.0), 0.0, e.mul(_f(e, "exp", a), _f(e, "sin", b)))
    return re, im


def _log1p(e: _Emitter, a, b):
    """log(hypot(1 + a, b)) in the operand's precision, as NumPy: near |1 + z| = 1 the log
    amplifies the rounding of 1 + a, so a wider computation would not match it."""
    a1 = e.add(a, 1.0)
    return _f(e, "log", _hypot(e, a1, b)), _f(e, "atan2", b, a1)


def _exp2(e: _Emitter, a, b):
    """exp(z ln 2) with z ln 2 rounded in the operand's precision, as NumPy's nc_exp2."""
    ln2 = float(np.log(2.0))
    return _widened(e, _exp, e.mul(a, ln2), e.mul(b, ln2))


def _sinh(e: _Emitter, a, b):
    """glibc's csinh: (sinh a cos b, cosh a sin b), with C99's values at infinities/NaN."""
    inf, nan = float("inf"), float("nan")
    c, s = _f(e, "cos", b), _f(e, "sin", b)
    re, im = e.mul(_f(e, "sinh", a), c), e.mul(_f(e, "cosh", a), s)
    a_fin, b_fin = _isfinite(e, a), _isfinite(e, b)
    b_zero = e.eq(b, 0.0)
    # finite a, non-finite b: (±0, NaN) from a = ±0, else NaN
    re = e.select(a_fin, e.select(b_fin, re, e.select(e.eq(a, 0.0), a, nan)), re)
    im = e.select(a_fin, e.select(b_fin, im, nan), im)
    # infinite a: ±inf·cis(b) for finite b != 0; (±inf, b) for b = 0; (inf, NaN) otherwise
    a_inf = _isinf(e, a)
    inf_re = e.select(b_fin, e.select(b_zero, a, e.mul(a, e.copysign(1.0, c))), inf)
    inf_im = e.select(b_fin, e.select(b_zero, b, e.copysign(inf, s)), nan)
    re, im = e.select(a_inf, inf_re, re), e.select(a_inf, inf_im, im)
    # NaN a: (NaN, b) for b = 0, else NaN
    a_nan = e.isnan(a)
    return (e.select(a_nan, nan, re), e.select(a_nan, e.select(b_zero, b, nan), im))


def _cosh(e: _Emitter, a, b):
    """glibc's ccosh: (cosh a cos b, sinh a sin b), with C99's values at infinities/NaN."""
    inf, nan = float("inf"), float("nan")
    c, s = _f(e, "cos", b), _f(e, "sin", b)
    re, im = e.mul(_f(e, "cosh", a), c), e.mul(_f(e, "sinh", a), s)
    a_fin, b_fin = _isfinite(e, a), _isfinite(e, b)
    b_zero = e.eq(b, 0.0)
    sign_a = e.copysign(1.0, a)
    # finite a, non-finite b: (NaN, 0) from a = 0, else NaN
    re = e.select(a_fin, e.select(b_fin, re, nan), re)
    im = e.select(a_fin, e.select(b_fin, im, e.select(e.eq(a, 0.0), 0.0, nan)), im)
    a_inf = _isinf(e, a)
    inf_re = e.select(b_fin, e.select(b_zero, inf, e.copysign(inf, c)), inf)
    inf_im = e.select(b_fin, e.mul(e.select(b_zero, b, e.copysign(inf, s)), sign_a), nan)
    re, im = e.select(a_inf, inf_re, re), e.select(a_inf, inf_im, im)
    a_nan = e.isnan(a)
    return (e.select(a_nan, nan, re), e.select(a_nan, e.select(b_zero, b, nan), im))


def _sin(e: _Emitter, a, b):
    u, v = _sinh(e, e.neg(b), a)  # sin z = -i sinh(iz)
    # glibc's csin gives +inf (not -sinh's sign) for an infinite b beside a non-finite a
    unsigned = e.and_(e.not_(_isfinite(e, a)), _isinf(e, b))
    return v, e.select(unsigned, float("inf"), e.neg(u))


def _cos(e: _Emitter, a, b):
    return _cosh(e, e.neg(b), a)  # cos z = cosh(iz)


def _tanh(e: _Emitter, a, b):
    """glibc's ctanh: (sinh a cosh a, sin b cos b) / (sinh² a + cos² b); past |a| = 40 the
    real part is ±1 and the imaginary part 4 sin b cos b exp(-2|a|); C99's special values."""
    nan = float("nan")
    sh, ch = _f(e, "sinh", a), _f(e, "cosh", a)
    s, c = _f(e, "sin", b), _f(e, "cos", b)
    den = e.fma(sh, sh, e.mul(c, c))
    sc = e.mul(s, c)
    big = e.gt(e.abs(a), 40.0)
    re = e.select(big, e.copysign(1.0, a), e.div(e.mul(sh, ch), den))
    tail = e.mul(e.mul(4.0, sc), _f(e, "exp", e.mul(-2.0, e.abs(a))))
    im = e.select(big, tail, e.div(sc, den))
    b_fin = _isfinite(e, b)
    # infinite a: ±1 + 0i, the zero signed like sin b cos b for finite |b| > 1, else like b
    inf_im = e.copysign(0.0, e.select(e.and_(b_fin, e.gt(e.abs(b), 1.0)), sc, b))
    a_inf = _isinf(e, a)
    im = e.select(a_inf, inf_im, im)
    # finite or NaN a with non-finite b: (a, NaN) for a = 0, else NaN; NaN a with b = 0: a + bi
    void = e.and_(e.not_(a_inf), e.not_(b_fin))
    re = e.select(void, e.select(e.eq(a, 0.0), a, nan), re)
    im = e.select(void, nan, im)
    keep = e.and_(e.isnan(a), e.eq(b, 0.0))
    return e.select(keep, a, re), e.select(keep, b, im)


def _tan(e: _Emitter, a, b):
    re, im = _tanh(e, e.neg(b), a)  # tan z = -i tanh(iz)
    return im, e.neg(re)


def _atan2(e: _Emitter, xr, xi, yr, yi):
    """StableHLO's complex atan2 (JAX's): -i log((y + ix) / sqrt(x^2 + y^2))."""
    sr, si = _mul_fma(e, xr, xi, xr, xi)
    tr, ti = _mul_fma(e, yr, yi, yr, yi)
    lr, li = _log(e, *_div(e, e.sub(yr, xi), e.add(yi, xr), *_sqrt(e, e.add(sr, tr),
                                                                  e.add(si, ti))))
    return li, e.neg(lr)


def _pow(e: _Emitter, ar, ai, br, bi):
    """NumPy's nc_pow: x**0 = 1, 0**y = 0 (Re y > 0) or NaN, an integer y with |y| < 100 by
    repeated squaring with plain products (1 / the power for y < 0), else exp(y log x)
    with C's complex product (infinities recovered from NaN results as C99 specifies)."""
    nan = float("nan")

    def general(w: _Emitter, ar, ai, br, bi):  # glibc's cpow: cexp(y * clog(x))
        return _exp(w, *_mul_c99(w, br, bi, *_log(w, ar, ai)))
    er, ei = _widened(e, general, ar, ai, br, bi)
    n_f = _f(e, "minimum", e.abs(br), 127.0)  # NaN stays NaN; |y| >= 100 is not used below
    is_int = e.and_(e.eq(bi, 0.0), e.and_(e.eq(e.floor(br), br), e.lt(e.abs(br), 100.0)))
    n = e.b.fptosi(e.select(is_int, n_f, 0.0), e.ity)
    # n == 1: x itself; n == 2, 3: x*x and x*(x*x); otherwise the binary method from 1
    sq = _mul_plain(e, ar, ai, ar, ai)
    cube = _mul_plain(e, ar, ai, *sq)
    acc, p = (e.v(1.0), e.v(0.0)), (ar, ai)
    for bit in range(7):
        has = e.b.icmp_unsigned("!=", e.iand(n, 1 << bit), e.i(0))
        prod = _mul_plain(e, *acc, *p)
        acc = (e.select(has, prod[0], acc[0]), e.select(has, prod[1], acc[1]))
        if bit < 6:
            p = _mul_plain(e, *p, *p)
    for k, val in ((1, (ar, ai)), (2, sq), (3, cube)):
        hit = e.b.icmp_signed("==", n, e.i(k))
        acc = (e.select(hit, val[0], acc[0]), e.select(hit, val[1], acc[1]))
    inv = _div(e, e.v(1.0), e.v(0.0), *acc)
    neg = e.lt(br, 0.0)
    ir_, ii = e.select(neg, inv[0], acc[0]), e.select(neg, inv[1], acc[1])
    re, im = e.select(is_int, ir_, er), e.select(is_int, ii, ei)
    x_zero = e.and_(e.eq(ar, 0.0), e.eq(ai, 0.0))
    zero_ok = e.gt(br, 0.0)
    re = e.select(x_zero, e.select(zero_ok, 0.0, nan), re)
    im = e.select(x_zero, e.select(zero_ok, 0.0, nan), im)
    y_zero = e.and_(e.eq(br, 0.0), e.eq(bi, 0.0))
    return e.select(y_zero, 1.0, re), e.select(y_zero, 0.0, im)



# --- inverse trig and hyperbolic functions (core/complex_inverse.py: JAX's CHLO formulas) -----

class _ChloOps(_Emitter):
    """The ops interface core/complex_inverse.py's formulas are written against."""

    def max(self, a, b): return _f(self, "maximum", a, b)
    def min(self, a, b): return _f(self, "minimum", a, b)
    def log(self, a): return _f(self, "log", a)
    def log1p(self, a): return _f(self, "log1p", a)
    def atan2(self, a, b): return _f(self, "atan2", a, b)


def _chlo(fn: Callable) -> Callable:
    """An emitter of `fn`, computed in the part dtype as XLA does (not widened: its cut-over
    thresholds, and so its values at huge, tiny and special inputs, are the dtype's)."""
    return _parts_op(lambda e, a, b: fn(_ChloOps(e.b, e.ty), a, b))

# --- ordering (NumPy's CLT/CLE/CGT/CGE) ----------------------------------------------------

def _order(op: str):
    def cmp(e: _Emitter, ar, ai, br, bi) -> ir.Value:
        strict = {"<": e.lt, "<=": e.lt, ">": e.gt, ">=": e.gt}[op]
        tie = {"<": e.lt, "<=": e.le, ">": e.gt, ">=": e.ge}[op]
        ordered = e.and_(e.not_(e.isnan(ai)), e.not_(e.isnan(bi)))
        return e.or_(e.and_(strict(ar, br), ordered), e.and_(e.eq(ar, br), tie(ai, bi)))
    return cmp


def _pick(e: _Emitter, cond, x, y):
    return e.select(cond, x[0], y[0]), e.select(cond, x[1], y[1])


def _minmax(is_max: bool):
    def f(e: _Emitter, ar, ai, br, bi):
        keep = e.or_(e.or_(e.isnan(ar), e.isnan(ai)),
                     _order(">=" if is_max else "<=")(e, ar, ai, br, bi))
        return _pick(e, keep, (ar, ai), (br, bi))
    return f


# --- the emitters ----------------------------------------------------------------------------

def _emitter(b: ir.IRBuilder, z: ir.Value) -> _Emitter:
    return _Emitter(b, z.type.elements[0])


def _parts_op(fn: Callable, wide: bool = False):
    """An op whose complex result `fn` builds from its operands' parts; `wide`: complex64
    computes in float64 and rounds once."""
    def emit(b, in_dtypes, out_dtype, args, params):
        e = _emitter(b, args[0])
        ops = [v for z in args for v in parts(b, z)]
        return pack(b, *(_widened(e, fn, *ops) if wide else fn(e, *ops)))
    return emit


def _compare(op: str):
    """== and != (lax's ordered comparisons refuse complex operands, as JAX's do)."""
    def emit(b, in_dtypes, out_dtype, args, params):
        x, y = args
        e = _emitter(b, x)
        ar, ai = parts(b, x)
        br, bi = parts(b, y)
        eq = e.and_(e.eq(ar, br), e.eq(ai, bi))
        return eq if op == "==" else e.not_(eq)
    return emit


def _real_result(fn: Callable):
    def emit(b, in_dtypes, out_dtype, args, params):
        (z,) = args
        return fn(_emitter(b, z), *parts(b, z))
    return emit


def _integer_pow(b, in_dtypes, out_dtype, args, params):
    """The reference's repeated squaring with NumPy's (fma) products, 1 / acc for y < 0."""
    (z,) = args
    y = params["y"]
    e = _emitter(b, z)
    if y == 0:
        return pack(b, e.v(1.0), e.v(0.0))
    acc, base, n = None, parts(b, z), abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else _mul_fma(e, *acc, *base)
        n >>= 1
        if n:
            base = _mul_fma(e, *base, *base)
    if y < 0:
        acc = _div(e, e.v(1.0), e.v(0.0), *acc)
    return pack(b, *acc)


def accumulating_mul(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x * y as NumPy's reduce and accumulate loops compute it (np.prod, np.cumprod): with
    plain products, unlike its elementwise loop, which contracts to fma."""
    return pack(b, *_mul_plain(_emitter(b, x), *parts(b, x), *parts(b, y)))


def logaddexp(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """JAX's complex logaddexp (cumlogsumexp's combine, x the running value): m = the larger of
    x, y in (re, im) order, m + log1p(exp(x + y - 2m)) with 2m as XLA's complex product by
    (2, 0) (so an infinite part makes the other NaN), the imaginary part wrapped into
    [-π, π) by fmod with the dtype's π and 2π. exp and log1p are this module's (NumPy's)."""
    e = _emitter(b, x)
    ar, ai = parts(b, x)
    br, bi = parts(b, y)
    first = b.select(e.eq(ar, br), e.gt(ai, bi), e.gt(ar, br))
    mr, mi = e.select(first, ar, br), e.select(first, ai, bi)
    tr = e.sub(e.add(ar, br), e.sub(e.mul(mr, 2.0), e.mul(mi, 0.0)))
    ti = e.sub(e.add(ai, bi), e.add(e.mul(mr, 0.0), e.mul(mi, 2.0)))
    lr, li = _log1p(e, *_widened(e, _exp, tr, ti))
    pi, two_pi = float(e.np(np.pi)), float(e.np(2 * np.pi))
    w = b.frem(e.add(e.add(mi, li), pi), e.v(two_pi))
    w = e.sub(e.select(e.lt(w, 0.0), e.add(w, two_pi), w), pi)
    return pack(b, e.add(mr, lr), w)

def _pow_emitter(b, in_dtypes, out_dtype, args, params):
    from .scalar_ops import convert as real_convert
    x, y = args
    if in_dtypes[1] != in_dtypes[0]:  # an integer exponent counts as y + 0i (XLA, reference)
        y = convert(b, y, in_dtypes[1], in_dtypes[0], real_convert)
    return pack(b, *_pow(_emitter(b, x), *parts(b, x), *parts(b, y)))


def _rsqrt(b, in_dtypes, out_dtype, args, params):
    (z,) = args
    e = _emitter(b, z)
    root = _widened(e, _sqrt, *parts(b, z))
    return pack(b, *_div(e, e.v(1.0), e.v(0.0), *root))


def _logistic(b, in_dtypes, out_dtype, args, params):
    """XLA's complex logistic 1 / (1 + exp(-z)) (the reference's formula, NumPy's division)."""
    (z,) = args
    e = _emitter(b, z)
    re, im = parts(b, z)
    er, ei = _widened(e, _exp, e.neg(re), e.neg(im))
    return pack(b, *_div(e, e.v(1.0), e.v(0.0), e.add(1.0, er), e.add(0.0, ei)))


def _select_n(b, in_dtypes, out_dtype, args, params):
    from .scalar_ops import EMITTERS
    return EMITTERS[ew.select_n_p](b, in_dtypes, out_dtype, args, params)


def _clamp(b, in_dtypes, out_dtype, args, params):
    lo, x, hi = args
    mx, mn = _parts_op(_minmax(True)), _parts_op(_minmax(False))
    return mn(b, in_dtypes, out_dtype, [mx(b, in_dtypes, out_dtype, [x, lo], {}), hi], {})


def _fma(b, in_dtypes, out_dtype, args, params):
    x, y, z = args  # the reference computes x * y + z with NumPy's complex product
    e = _emitter(b, x)
    re, im = _mul_fma(e, *parts(b, x), *parts(b, y))
    zr, zi = parts(b, z)
    return pack(b, e.add(re, zr), e.add(im, zi))


def _is_finite(b, in_dtypes, out_dtype, args, params):
    (z,) = args
    e = _emitter(b, z)
    re, im = parts(b, z)
    return e.and_(_isfinite(e, re), _isfinite(e, im))


def convert(b: ir.IRBuilder, x: ir.Value, src: np.dtype, dst: np.dtype,
            real_convert: Callable) -> ir.Value:
    """convert_element_type where src or dst is complex: a real value gets a +0 imaginary
    part; complex to real keeps the real part (as NumPy and XLA); complex to bool tests both
    parts; `real_convert` converts between real dtypes."""
    if is_complex(src) and is_complex(dst):
        re, im = parts(b, x)
        part = np.dtype(dtypes.finfo_of(dst).dtype)
        src_part = np.dtype(dtypes.finfo_of(src).dtype)
        return pack(b, real_convert(b, re, src_part, part), real_convert(b, im, src_part, part))
    if is_complex(dst):
        part = np.dtype(dtypes.finfo_of(dst).dtype)
        re = real_convert(b, x, src, part)
        return pack(b, re, ir.Constant(re.type, 0.0))
    re, im = parts(b, x)
    src_part = np.dtype(dtypes.finfo_of(src).dtype)
    if dst == dtypes.bool_:
        return b.or_(real_convert(b, re, src_part, dst), real_convert(b, im, src_part, dst))
    return real_convert(b, re, src_part, dst)


def _convert(b, in_dtypes, out_dtype, args, params):
    from .scalar_ops import convert as real_convert
    return convert(b, args[0], in_dtypes[0], out_dtype, real_convert)


def _bitcast(b, in_dtypes, out_dtype, args, params):
    """Same-width bitcast to or from complex: the parts' bits side by side (re first)."""
    (x,) = args
    src, dst = in_dtypes[0], out_dtype
    if is_complex(src):
        re, im = parts(b, x)
        half = ir.IntType(src.itemsize * 4)
        whole = ir.IntType(src.itemsize * 8)
        lo, hi = b.zext(b.bitcast(re, half), whole), b.zext(b.bitcast(im, half), whole)
        bits = b.or_(lo, b.shl(hi, ir.Constant(whole, src.itemsize * 4)))
        return bits if dtypes.is_int(dst) else b.bitcast(bits, reg_type(dst))
    whole = ir.IntType(dst.itemsize * 8)
    half = ir.IntType(dst.itemsize * 4)
    bits = x if dtypes.is_int(src) else b.bitcast(x, whole)
    part = reg_type(dst).elements[0]
    re = b.bitcast(b.trunc(bits, half), part)
    im = b.bitcast(b.trunc(b.lshr(bits, ir.Constant(whole, dst.itemsize * 4)), half), part)
    return pack(b, re, im)


def _real(b, in_dtypes, out_dtype, args, params):
    return b.extract_value(args[0], 0)


def _imag(b, in_dtypes, out_dtype, args, params):
    return b.extract_value(args[0], 1)


def _conj(b, in_dtypes, out_dtype, args, params):
    (x,) = args
    if not is_complex(in_dtypes[0]):  # a real operand becomes x + 0i
        return pack(b, x, ir.Constant(x.type, 0.0))
    re, im = parts(b, x)
    return pack(b, re, b.fneg(im))


def _complex(b, in_dtypes, out_dtype, args, params):
    return pack(b, *args)


EMITTERS: dict[Primitive, Callable] = {
    ew.add_p: _parts_op(lambda e, ar, ai, br, bi: (e.add(ar, br), e.add(ai, bi))),
    ew.sub_p: _parts_op(lambda e, ar, ai, br, bi: (e.sub(ar, br), e.sub(ai, bi))),
    ew.mul_p: _parts_op(_mul_fma), ew.div_p: _parts_op(_div),
    ew.neg_p: _parts_op(lambda e, re, im: (e.neg(re), e.neg(im))),
    ew.square_p: _parts_op(lambda e, re, im: _mul_fma(e, re, im, re, im)),
    ew.sign_p: _parts_op(_sign), ew.abs_p: _real_result(_abs), ew.is_finite_p: _is_finite,
    ew.integer_pow_p: _integer_pow, ew.pow_p: _pow_emitter, ew.eq_p: _compare("=="),
    ew.ne_p: _compare("!="), ew.max_p: _parts_op(_minmax(True)),
    ew.min_p: _parts_op(_minmax(False)), ew.clamp_p: _clamp, ew.fma_p: _fma,
    ew.select_n_p: _select_n, ew.convert_element_type_p: _convert,
    ew.bitcast_convert_type_p: _bitcast, ew.real_p: _real, ew.imag_p: _imag, ew.conj_p: _conj,
    ew.complex_p: _complex,
    ew.stop_gradient_p: lambda b, in_dtypes, out_dtype, args, params: args[0],
    ew.copy_p: lambda b, in_dtypes, out_dtype, args, params: args[0],
    ew.name_p: lambda b, in_dtypes, out_dtype, args, params: args[0],
    ew.sqrt_p: _parts_op(_sqrt, wide=True), ew.rsqrt_p: _rsqrt, ew.logistic_p: _logistic,
    ew.exp_p: _parts_op(_exp, wide=True), ew.log_p: _parts_op(_log, wide=True),
    ew.log2_p: _parts_op(_log2, wide=True),
    ew.expm1_p: _parts_op(_expm1, wide=True), ew.log1p_p: _parts_op(_log1p),
    ew.exp2_p: _parts_op(_exp2), ew.sin_p: _parts_op(_sin, wide=True),
    ew.cos_p: _parts_op(_cos, wide=True), ew.tan_p: _parts_op(_tan, wide=True),
    ew.sinh_p: _parts_op(_sinh, wide=True), ew.cosh_p: _parts_op(_cosh, wide=True),
    ew.tanh_p: _parts_op(_tanh, wide=True), ew.atan2_p: _parts_op(_atan2, wide=True),
    ew.asin_p: _chlo(ci.asin), ew.acos_p: _chlo(ci.acos), ew.atan_p: _chlo(ci.atan),
    ew.asinh_p: _chlo(ci.asinh), ew.acosh_p: _chlo(ci.acosh), ew.atanh_p: _chlo(ci.atanh),
}

__all__ = ["EMITTERS", "accumulating_mul", "convert", "logaddexp", "pack", "parts"]
