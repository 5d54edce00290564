"""Elementwise primitives: arithmetic, comparisons, bitwise ops, the math set, conversions,
select. Each primitive's rules sit in its registration line (families from _base).

Integer semantics are XLA's (JAX's): division truncates, x/0 == -1, x%0 == x, shifts by
out-of-range amounts give 0 (or the sign), float->int conversion saturates and maps NaN to 0.
"""
from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from ..core import complex_inverse as ci
from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.primitive import ELEMENTWISE, Primitive
from ..core.pytree import tree_map
from ..core.rules import (Zero, aval_of, broadcast_to_aval, def_broadcasting, def_linear,
                          def_vectorized, defjvp, defjvp2, full_like_aval, instantiate,
                          is_undefined, moveaxis, unbroadcast)
from ..core.trace import Tracer, get_aval
from ._base import (ANY, FLOAT, INT, INTBOOL, NUM, ORDERED, REAL, REAL_FLOAT, as_lax_operands,
                    binop, check_dtype, sp, unop)


def _quiet(f):
    """NumPy reference impls must not warn on the IEEE cases (log(0), 0/0, overflow)."""
    def g(*args, **kw):
        with np.errstate(all="ignore"):
            return f(*args, **kw)
    g.__name__ = getattr(f, "__name__", "impl")
    return g


def _chlo_for_complex(chlo_fn, real_impl):
    """A complex operand takes JAX's CHLO formula (core/complex_inverse.py), whose values at
    branch cuts, infinities and NaN differ from NumPy's C99 ones; a real one `real_impl`."""
    def impl(x):
        return ci.evaluate(chlo_fn, x) if np.iscomplexobj(x) else real_impl(x)
    impl.__name__ = getattr(real_impl, "__name__", "impl")
    return impl


def _bool_dtype(_):
    return dtypes.bool_


# --- arithmetic ----------------------------------------------------------------------------

def _int_div(x, y):
    if not dtypes.is_int(x.dtype):
        return x / y
    zero = y == 0
    safe_y = np.where(zero, 1, y)
    if x.dtype.kind == "i":  # INT_MIN / -1 overflows: XLA gives INT_MIN
        overflow = (x == np.iinfo(x.dtype).min) & (safe_y == -1)
        safe_y = np.where(overflow, 1, safe_y)
    q = x // safe_y  # floors; XLA truncates toward zero (exact at every width, no floats)
    q = q + ((x % safe_y != 0) & ((x < 0) != (safe_y < 0))).astype(x.dtype)
    return np.where(zero, np.array(-1).astype(x.dtype), q)


def _int_rem(x, y):
    if not dtypes.is_int(x.dtype):
        return np.fmod(x, y)
    zero = y == 0
    safe_y = np.where(zero, 1, y)
    if x.dtype.kind == "i":
        safe_y = np.where((x == np.iinfo(x.dtype).min) & (safe_y == -1), 1, safe_y)
    r = np.fmod(x, safe_y)
    return np.where(zero, x, r)


def _max_impl(x, y):
    out = np.maximum(x, y)  # NaN-propagating, like XLA
    if dtypes.is_float(x.dtype):  # XLA orders -0.0 below +0.0
        out = np.where((x == 0) & (y == 0), np.where(np.signbit(x), y, x), out)
    return out


def _min_impl(x, y):
    out = np.minimum(x, y)
    if dtypes.is_float(x.dtype):
        out = np.where((x == 0) & (y == 0), np.where(np.signbit(x), x, y), out)
    return out


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


add_p = binop("add", _quiet(np.add), NUM)
sub_p = binop("sub", _quiet(np.subtract), NUM)
mul_p = binop("mul", _quiet(np.multiply), NUM)
# the simplifier's algebra: op(x, c) == x bit for bit for these c (for an integer x, a float x).
# Not x + 0.0 (-0.0 + 0.0 is 0.0), nor x * 0 (NaN, Inf)
add_p.identities = {0: (0, -0.0), 1: (0, -0.0)}
sub_p.identities = {1: (0, 0.0)}
mul_p.identities = {0: (1, 1.0), 1: (1, 1.0)}
div_p = binop("div", _quiet(_int_div), NUM)
div_p.identities = {1: (1, 1.0)}  # (x / 1.0 is exact; pmean over one device divides by it)
rem_p = binop("rem", _quiet(_int_rem), REAL)
max_p = binop("max", _max_impl, ANY)
min_p = binop("min", _min_impl, ANY)
def _atan2_impl(x, y):
    """Real: NumPy's arctan2. Complex (StableHLO's atan2, as JAX): -i log((y + ix) / sqrt(x^2 +
    y^2)), the analytic continuation of atan(x / y)."""
    if np.iscomplexobj(x) or np.iscomplexobj(y):
        dtype = np.result_type(x, y)
        wide = np.complex128
        x, y = np.asarray(x, wide), np.asarray(y, wide)
        return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(dtype)
    return np.arctan2(x, y)


atan2_p = binop("atan2", _quiet(_atan2_impl), FLOAT, transcendental=True)


def _polygamma_impl(m, x):
    """polygamma(m, x) for integer-valued m (NaN elsewhere, as JAX); m = 0 is digamma."""
    m_int = np.where(np.isfinite(m), m, -1).astype(np.int64)
    valid = (m == m_int) & (m_int >= 0)
    out = sp.polygamma(np.where(valid, m_int, 0), x.astype(np.float64))
    return np.where(valid, out, np.nan).astype(x.dtype)


polygamma_p = binop("polygamma", _quiet(_polygamma_impl), REAL_FLOAT, transcendental=True)
# x == y gives y (±0.0 included; NumPy's float16 nextafter gives x)
nextafter_p = binop("nextafter", _quiet(lambda x, y: np.where(x == y, y, np.nextafter(x, y))),
                    REAL_FLOAT)


def _two_sum(a, b):
    """a + b = s + err exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """a * b = p + err exactly for float64 (Dekker; Veltkamp splitting at 2**27 + 1)."""
    p = a * b
    ca, cb = a * 134217729.0, b * 134217729.0
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd(s, err):
    """The float64 pair s + err rounded to odd: where inexact with s's last bit even, s steps
    one ulp towards err, so a later rounding to fewer bits rounds the exact value only once."""
    nudge = (err != 0) & ((s.view(np.int64) & 1) == 0) & np.isfinite(s)
    return np.where(nudge, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fma_impl(x, y, z):
    """x*y + z rounded once. XLA's CPU backend contracts mul+add into FMA, so samplers such as
    random.uniform need it to reproduce JAX's bits. float16/32: the exact float64 product plus
    z rounded to odd, then to the type; float64: Boldo and Melquiond's correctly rounded sum of
    the product's two halves and z (plain x*y + z where splitting would overflow)."""
    if x.dtype in (np.float16, np.float32):
        a, b, c = (np.asarray(v, np.float64) for v in (x, y, z))
        return _round_to_odd(*_two_sum(a * b, c)).astype(x.dtype)
    if x.dtype != np.float64:
        return x * y + z
    ph, pl = _two_prod(x, y)
    uh, ul = _two_sum(pl, z)
    th, tl = _two_sum(ph, uh)
    out = th + _round_to_odd(*_two_sum(tl, ul))
    # a zero sum takes IEEE's sign from x*y + z itself (exact there: the product cancels z)
    return np.where(np.isfinite(out) & (np.abs(ph) < 1e300) & (out != 0), out, x * y + z)


fma_p = binop("fma", _quiet(_fma_impl), FLOAT)
neg_p = unop("neg", np.negative, NUM)
neg_p.involution = True
# sign(±0.0) is ±0.0 and sign(NaN) is NaN, as in XLA
sign_p = unop("sign", lambda x: np.where(x == 0, x, np.sign(x)).astype(x.dtype), NUM)
square_p = unop("square", _quiet(np.square), NUM)
floor_p = unop("floor", np.floor, REAL_FLOAT)
ceil_p = unop("ceil", np.ceil, REAL_FLOAT)
is_finite_p = unop("is_finite", np.isfinite, FLOAT, _bool_dtype)

# pow: an integer exponent is allowed beside a float base (XLA converts it to the base's dtype)
pow_p = binop("pow", _quiet(lambda x, y: np.power(x, y.astype(x.dtype))), FLOAT,
              transcendental=True)
_pow_same_dtype_abstract = pow_p._abstract_eval


def _pow_abstract(x, y):
    if dtypes.is_int(y.dtype) and dtypes.is_inexact(x.dtype):
        y = ShapedArray(y.shape, x.dtype, y.weak_type)
    return _pow_same_dtype_abstract(x, y)


pow_p.def_abstract_eval(_pow_abstract)


def _abs_abstract(x):
    check_dtype("abs", x, NUM)
    if x.dtype.kind == "u":
        raise TypeError(f"abs does not accept dtype {x.dtype.name}. It requires a signed integer, "
                        "floating-point or complex type.")
    return ShapedArray(x.shape, _real_dtype(x.dtype), x.weak_type)


abs_p = Primitive("abs", fusion=ELEMENTWISE)
abs_p.def_abstract_eval(_abs_abstract)
abs_p.def_impl(np.abs)

# round: rounding_method 0 = away from zero (lax default), 1 = to nearest even (jnp.round)
def _round_impl(x, *, rounding_method):
    if rounding_method == 1:
        return np.round(x)
    r = np.trunc(x)  # away from zero: x - trunc(x) is exact, so the comparison is too
    return np.copysign(r + (np.abs(x - r) >= 0.5) * np.sign(x), x).astype(x.dtype)


round_p = Primitive("round", fusion=ELEMENTWISE)
round_p.def_abstract_eval(lambda x, *, rounding_method: (check_dtype("round", x, REAL_FLOAT, None),
                                                          x)[1])
round_p.def_impl(_quiet(_round_impl))


def _integer_pow_impl(x, *, y: int):
    if y == 0:
        return np.ones_like(x)
    acc = None
    base, n = x, -y if y < 0 else y  # (this module's `abs` is lax.abs)
    with np.errstate(all="ignore"):
        while n:  # repeated squaring, as XLA expands it
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
        return (1 / acc).astype(x.dtype) if y < 0 else acc


def _integer_pow_abstract(x, *, y: int):
    check_dtype("integer_pow", x, NUM)
    if y < 0 and dtypes.is_int(x.dtype):
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({x.str_short()}, {y})")
    return x


integer_pow_p = Primitive("integer_pow", fusion=ELEMENTWISE)
integer_pow_p.def_abstract_eval(_integer_pow_abstract)
integer_pow_p.def_impl(_integer_pow_impl)

# XLA's float32 log: Cephes' polynomial for log(1+f), f in [sqrt(1/2) - 1, sqrt(2) - 1), as
# float32 bit patterns; ln 2 = _LN2_HI + _LN2_LO
_LOG_P = tuple(np.array(_b, np.uint32).view(np.float32) for _b in (
    0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50, 0x3E4CCEAC,
    0xBE7FFFFC, 0x3EAAAAAA))
_LN2_LO, _LN2_HI = (np.array(_b, np.uint32).view(np.float32) for _b in (0xB95E8083, 0x3F318000))
# XLA's float32 log1p below |x| = sqrt(2) - 1: x - x²/2 + x³ P(x)/Q(x) (Cephes)
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1,
            2.2176239823732856465394e2, 3.0909872225312059774938e2, 2.1642788614495947685003e2,
            6.0118660497603843919306e1)


def _fma32(a, b, c):
    return _fma_impl(*(np.asarray(v, np.float32) for v in (a, b, c)))


def _xla_log_f32(u):
    """XLA CPU's float32 log (frexp, then Cephes' polynomial with XLA's FMA contractions)."""
    f32 = np.float32
    tiny = np.finfo(f32).tiny
    # subnormals (which XLA's CPU code reads as 0) are scaled into the normal range; e corrects
    sub = (u > 0) & (u < tiny)
    m = np.maximum(np.where(sub, u * f32(2 ** 23), u), tiny)  # NaN, u <= 0: patched at the end
    bits = m.view(np.int32)
    mant = ((bits & np.int32(-2139095041)) | np.int32(0x3F000000)).view(f32)  # in [1/2, 1)
    small = mant < f32(np.sqrt(0.5))
    e = ((bits >> 23) - 127).astype(f32) + f32(1) - small.astype(f32) - f32(23) * sub
    x = (mant - f32(1)) + np.where(small, mant, f32(0))
    x2 = x * x
    x3 = x2 * x
    y1, y2, y3 = (_fma32(x, _LOG_P[i], _LOG_P[i + 1]) for i in (0, 3, 6))
    y1, y2, y3 = (_fma32(y, x, _LOG_P[i]) for y, i in ((y1, 2), (y2, 5), (y3, 8)))
    y = _fma32(_fma32(_fma32(y1, x3, y2), x3, y3), x3, e * _LN2_LO)
    out = _fma32(e, _LN2_HI, _fma32(x2, f32(-0.5), x) + y)
    out = np.where(u == np.inf, f32(np.inf), np.where(u == 0, f32(-np.inf), out))
    return np.where((u < 0) | np.isnan(u), f32(np.nan), out)


def _xla_log1p(x):
    """XLA CPU's log1p: a rational approximation below |x| = sqrt(2) - 1, else log(1 + x) (XLA's
    float32 log; for float64 the C library's, for which NumPy's stands in); multiply-adds are
    contracted to FMA as XLA's code generator does."""
    t = x.dtype.type
    num, den = np.asarray(_LOG1P_P[0], x.dtype), np.asarray(_LOG1P_Q[0], x.dtype)
    for p, q in zip(_LOG1P_P[1:], _LOG1P_Q[1:]):
        num, den = _fma_impl(num, x, t(p)), _fma_impl(den, x, t(q))
    x2 = x * x
    small = x + _fma_impl(x2, np.asarray(-0.5, x.dtype), (x * x2) * (num / den))
    large = _xla_log_f32(x + t(1)) if x.dtype == np.float32 else np.log(x + t(1))
    return np.where(np.abs(x) < t(np.sqrt(2) - 1), small, large)


# XLA's float32 exp: 2**n * (1 + r + r² P(r)), r = x - n ln 2 (ln 2 = _LN2_HI + _LN2_LO)
_EXP_P = tuple(np.array(_b, np.uint32).view(np.float32) for _b in (
    0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA, 0x3F000000))


def _xla_exp_f32(x):
    """XLA CPU's float32 exp (Cephes' expf with FMAs); results below 2**-126 are subnormal
    (XLA's CPU code flushes them to 0), scaled by 2**n in two steps so as to round once."""
    f32 = np.float32
    x = np.where(x < f32(-104), f32(-104), np.where(x > f32(88.8), f32(88.8), x))
    n = np.floor(_fma32(x, f32(1 / np.log(2)), f32(0.5)))
    n = np.where(n > f32(127), f32(127), n)
    r = _fma32(-n, _LN2_LO, _fma32(-n, _LN2_HI, x))
    y = _fma32(r, _EXP_P[0], _EXP_P[1])
    for c in _EXP_P[2:]:
        y = _fma32(y, r, c)
    y = f32(1) + _fma32(y, r * r, r)
    low = n < f32(-100)
    scale = ((np.nan_to_num(np.where(low, n + f32(64), n)).astype(np.int32) + 127) << 23)
    out = y * scale.view(f32)
    return np.where(low, out * f32(2.0 ** -64), out)


# XLA's float32 erf: x P(x²) / Q(x²), ±1 beyond |x| = 3.8325067 (float32 bit patterns)
_ERF_P, _ERF_Q = ((np.array(_b, np.uint32).view(np.float32) for _b in bits) for bits in (
    (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA),
    (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000)))
_ERF_P, _ERF_Q = tuple(_ERF_P), tuple(_ERF_Q)


def _xla_erf_f32(x):
    """XLA CPU's float32 erf: a rational approximation evaluated with FMAs."""
    x2 = x * x
    p, q = _ERF_P[0], _ERF_Q[0]
    for c in _ERF_P[1:]:
        p = _fma32(x2, p, c)
    for c in _ERF_Q[1:]:
        q = _fma32(x2, q, c)
    big = np.abs(x) >= np.array(0x407547CB, np.uint32).view(np.float32)
    return np.where(big, np.copysign(np.float32(1), x), (x * p) / q)


# XLA's float32 tanh (Eigen's): x P(x²) / Q(x²) on x clamped to +-_TANH_CLAMP (where it is
# exactly +-1), x itself below |x| = 0.0004; the decimal constants rounded to float32
_TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
           5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
           4.89352455891786e-03)
_TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
           4.89352518554385e-03)
_TANH_CLAMP, _TANH_SMALL = 7.99881172180175781, 0.0004


def _xla_tanh_f32(x):
    """XLA CPU's float32 tanh: the rational approximation evaluated with FMAs, JAX's bits (4.4
    ulp at most; the expm1 form native float64 keeps had 2.1 in float32)."""
    f32 = np.float32
    c = np.clip(x, f32(-_TANH_CLAMP), f32(_TANH_CLAMP))
    x2 = c * c
    p, q = f32(_TANH_P[0]), f32(_TANH_Q[0])
    for k in _TANH_P[1:]:
        p = _fma32(x2, p, f32(k))
    for k in _TANH_Q[1:]:
        q = _fma32(x2, q, f32(k))
    return np.where(np.abs(x) < f32(_TANH_SMALL), x, (c * p) / q)


def _xla_f32(xla_impl, f64_impl):
    """float16/32 by XLA CPU's float32 algorithm (half types compute in float32 and round, as
    in XLA), so results match JAX's bits; float64 by `f64_impl`."""
    def impl(x):
        if x.dtype == np.float64 or x.dtype.kind == "c":  # complex: NumPy's, never truncated
            return f64_impl(x)
        return xla_impl(x.astype(np.float32)).astype(x.dtype)
    return _quiet(impl)


# --- transcendental math (float only) --------------------------------------------------------
exp_p = unop("exp", _xla_f32(_xla_exp_f32, np.exp), FLOAT, transcendental=True)
exp2_p = unop("exp2", _quiet(np.exp2), FLOAT, transcendental=True)
log_p = unop("log", _xla_f32(_xla_log_f32, np.log), FLOAT, transcendental=True)
log2_p = unop("log2", _quiet(np.log2), FLOAT, transcendental=True)  # JAX 0.12's primitive
log1p_p = unop("log1p", _xla_f32(_xla_log1p, lambda x: np.log1p(x) if x.dtype.kind == "c"
                                  else _xla_log1p(x)), FLOAT, transcendental=True)
def _expm1_impl(x: np.ndarray) -> np.ndarray:
    out = np.expm1(x)
    if x.dtype.kind == "c":  # a real argument stays real, as in JAX: expm1(inf + 0j) = inf + 0j
        real = x.imag == 0
        out = np.where(real, (np.expm1(x.real) + 0j).astype(x.dtype), out)
    return out


expm1_p = unop("expm1", _quiet(_expm1_impl), FLOAT, transcendental=True)
tanh_p = unop("tanh", _xla_f32(_xla_tanh_f32, np.tanh), FLOAT, transcendental=True)
def _logistic_impl(x):
    if np.iscomplexobj(x):  # JAX's (XLA's) 1 / (1 + exp(-x)); SciPy's expit takes no complex
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    return sp.expit(x).astype(x.dtype)


logistic_p = unop("logistic", _quiet(_logistic_impl), FLOAT, transcendental=True)
sin_p = unop("sin", _quiet(np.sin), FLOAT, transcendental=True)
cos_p = unop("cos", _quiet(np.cos), FLOAT, transcendental=True)
tan_p = unop("tan", _quiet(np.tan), FLOAT, transcendental=True)
asin_p = unop("asin", _chlo_for_complex(ci.asin, _quiet(np.arcsin)), FLOAT, transcendental=True)
acos_p = unop("acos", _chlo_for_complex(ci.acos, _quiet(np.arccos)), FLOAT, transcendental=True)
atan_p = unop("atan", _chlo_for_complex(ci.atan, np.arctan), FLOAT, transcendental=True)
sinh_p = unop("sinh", _quiet(np.sinh), FLOAT, transcendental=True)
cosh_p = unop("cosh", _quiet(np.cosh), FLOAT, transcendental=True)
asinh_p = unop("asinh", _chlo_for_complex(ci.asinh, np.arcsinh), FLOAT, transcendental=True)
acosh_p = unop("acosh", _chlo_for_complex(ci.acosh, _quiet(np.arccosh)), FLOAT,
               transcendental=True)
atanh_p = unop("atanh", _chlo_for_complex(ci.atanh, _quiet(np.arctanh)), FLOAT,
               transcendental=True)
sqrt_p = unop("sqrt", _quiet(np.sqrt), FLOAT, transcendental=True)
rsqrt_p = unop("rsqrt", _quiet(lambda x: (1 / np.sqrt(x)).astype(x.dtype)), FLOAT,
               transcendental=True)
cbrt_p = unop("cbrt", np.cbrt, REAL_FLOAT, transcendental=True)
erf_p = unop("erf", _xla_f32(_xla_erf_f32, lambda x: sp.erf(x).astype(x.dtype)), REAL_FLOAT,
             transcendental=True)
erfc_p = unop("erfc", lambda x: sp.erfc(x).astype(x.dtype), REAL_FLOAT,
              transcendental=True)
# XLA's erf_inv (Giles' polynomials in w = -log1p(-x²)); JAX's normal sampler is built on it,
# so the reference follows XLA's CPU code (log1p and FMA contractions included) rather than the
# correctly rounded SciPy value. float32: w < 5 and w >= 5; float64: w < 6.25, w < 16, w >= 16.
_GILES_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_GILES64 = (
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221),
)


def _erf_inv_f64(x, w):
    """XLA's float64 polynomial: 23, 19 or 17 Horner steps by range; shorter polynomials
    keep their value through the extra steps."""
    c625, c16, cbig = _GILES64
    lt625, lt16 = w < 6.25, w < 16.0
    z = np.where(lt625, w - 3.125, np.sqrt(w) - np.where(lt16, 3.25, 5.0))

    def coefficient(i):
        c = np.float64(c625[i])
        if i < 19:
            c = np.where(lt625, c, c16[i])
        if i < 17:
            c = np.where(lt16, c, cbig[i])
        return c
    p = coefficient(0) * np.ones_like(z)
    for i in range(1, 23):
        step = _fma_impl(p, z, coefficient(i))
        p = step if i < 17 else np.where(lt16 if i < 19 else lt625, step, p)
    return p


def _erf_inv_impl(x):
    if x.dtype == np.float64:
        p = _erf_inv_f64(x, -_xla_log1p(x * -x))
        return np.where(np.abs(x) == 1, x * np.inf, p * x)
    x32 = x.astype(np.float32)
    w = -_xla_log1p(x32 * -x32)
    small = w < np.float32(5.0)
    w = np.where(small, w - np.float32(2.5), np.sqrt(w) - np.float32(3.0)).astype(np.float32)
    p = np.where(small, np.float32(_GILES_SMALL[0]), np.float32(_GILES_LARGE[0]))
    for a, b in zip(_GILES_SMALL[1:], _GILES_LARGE[1:]):  # Horner steps contract to FMA in XLA
        p = _fma32(p, w, np.where(small, np.float32(a), np.float32(b)))
    out = np.where(np.abs(x32) == 1, x32 * np.float32(np.inf), p * x32)
    return out.astype(x.dtype)


erf_inv_p = unop("erf_inv", _quiet(_erf_inv_impl), REAL_FLOAT, transcendental=True)
# XLA: lgamma(-inf) = +inf (scipy says -inf); digamma has poles (NaN) at 0, -1, -2, ...
lgamma_p = unop("lgamma", _quiet(lambda x: np.where(x == -np.inf, np.inf, sp.gammaln(x))
                                 .astype(x.dtype)), REAL_FLOAT, transcendental=True)
digamma_p = unop("digamma", _quiet(lambda x: np.where((x <= 0) & (x == np.floor(x)), np.nan,
                                                      sp.psi(x)).astype(x.dtype)),
                 REAL_FLOAT, transcendental=True)
bessel_i0e_p = unop("bessel_i0e", _quiet(lambda x: sp.i0e(x).astype(x.dtype)), REAL_FLOAT,
                    transcendental=True)
bessel_i1e_p = unop("bessel_i1e", _quiet(lambda x: sp.i1e(x).astype(x.dtype)), REAL_FLOAT,
                    transcendental=True)

# --- comparisons and logic -----------------------------------------------------------------
eq_p = binop("eq", np.equal, ANY, _bool_dtype)
ne_p = binop("ne", np.not_equal, ANY, _bool_dtype)
lt_p = binop("lt", np.less, ORDERED, _bool_dtype)
le_p = binop("le", np.less_equal, ORDERED, _bool_dtype)
gt_p = binop("gt", np.greater, ORDERED, _bool_dtype)
ge_p = binop("ge", np.greater_equal, ORDERED, _bool_dtype)
not_p = unop("not", np.invert, INTBOOL)
not_p.involution = True
and_p = binop("and", np.bitwise_and, INTBOOL)
or_p = binop("or", np.bitwise_or, INTBOOL)
xor_p = binop("xor", np.bitwise_xor, INTBOOL)


def _shift(kind: str):
    def impl(x, y):
        bits = x.dtype.itemsize * 8
        unsigned = np.dtype(f"u{x.dtype.itemsize}")
        amount = y.astype(unsigned)  # negative shift amounts count as huge, as in XLA
        in_range = amount < bits
        s = np.where(in_range, amount, 0).astype(unsigned)
        if kind == "left":
            out = (x.astype(unsigned) << s).astype(x.dtype)
            return np.where(in_range, out, np.zeros_like(x))
        if kind == "right_logical":
            out = (x.astype(unsigned) >> s).astype(x.dtype)
            return np.where(in_range, out, np.zeros_like(x))
        signed = x.astype(np.dtype(f"i{x.dtype.itemsize}"))  # unsigned ints shift as signed
        fill = np.where(signed < 0, -1, 0).astype(signed.dtype)
        return np.where(in_range, signed >> s.astype(signed.dtype), fill).astype(x.dtype)
    return impl


shift_left_p = binop("shift_left", _shift("left"), INT)
shift_right_logical_p = binop("shift_right_logical", _shift("right_logical"), INT)
shift_right_arithmetic_p = binop("shift_right_arithmetic", _shift("right_arithmetic"), INT)


def _popcount(x):
    u = x.astype(np.dtype(f"u{x.dtype.itemsize}"))
    return np.bitwise_count(u).astype(x.dtype)


def _clz(x):
    bits = x.dtype.itemsize * 8
    u = x.astype(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    out = np.full(u.shape, bits, dtype=np.int64)
    nz = u != 0
    # position of the highest set bit, exactly (no float rounding)
    hi = np.zeros(u.shape, dtype=np.int64)
    v = u.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= (np.uint64(1) << np.uint64(step))
        hi = np.where(big, hi + step, hi)
        v = np.where(big, v >> np.uint64(step), v)
    out = np.where(nz, bits - 1 - hi, out)
    return out.astype(x.dtype)


population_count_p = unop("population_count", _popcount, INT)


def _mulhi(x, y):
    """The high half of the double-width product (Python integers for 64-bit operands)."""
    bits = x.dtype.itemsize * 8
    if bits < 64:
        wide = np.dtype(f"{x.dtype.kind}{2 * x.dtype.itemsize}")
        return ((x.astype(wide) * y.astype(wide)) >> bits).astype(x.dtype)
    x, y = np.broadcast_arrays(x, y)
    out = [(int(a) * int(b)) >> 64 for a, b in zip(x.ravel().tolist(), y.ravel().tolist())]
    return np.array(out, dtype=object).astype(x.dtype).reshape(x.shape)


mulhi_p = binop("mulhi", _mulhi, INT)
clz_p = unop("clz", _clz, INT)

# --- complex numbers -----------------------------------------------------------------------
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def _complex_dtype(name: str):
    def result_dtype(dtype: np.dtype) -> np.dtype:
        if dtype.kind == "c" and name == "conj":
            return dtype
        if dtype not in _COMPLEX_OF:
            raise TypeError(f"{name} does not accept dtype {dtype.name}. It requires float32, "
                            f"float64{' or complex' if name == 'conj' else ''} operands.")
        return _COMPLEX_OF[dtype]
    return result_dtype


def _complex_part_dtype(name: str):
    def result_dtype(dtype: np.dtype) -> np.dtype:
        if dtype.kind != "c":
            raise TypeError(f"{name} does not accept dtype {dtype.name}. It requires a complex "
                            "type.")
        return _real_dtype(dtype)
    return result_dtype


def _complex_impl(x, y):
    # built from parts: x + 1j * y would turn an infinite y into a NaN real part
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _COMPLEX_OF[x.dtype])
    out.real, out.imag = x, y
    return out


real_p = unop("real", np.real, FLOAT, _complex_part_dtype("real"))
imag_p = unop("imag", np.imag, FLOAT, _complex_part_dtype("imag"))
# a real operand becomes x + 0j (XLA builds complex(x, 0), so conj(nan) is nan+0j)
conj_p = unop("conj", lambda x: np.conj(x) if x.dtype.kind == "c" else
              x.astype(_complex_dtype("conj")(x.dtype)), FLOAT, _complex_dtype("conj"))
complex_p = binop("complex", _complex_impl, FLOAT, _complex_dtype("complex"))

# --- conversions ---------------------------------------------------------------------------


def _convert_impl(x, *, new_dtype, weak_type):
    new_dtype = np.dtype(new_dtype)
    if x.dtype == new_dtype:
        return x
    if new_dtype == dtypes.bool_:
        return x != 0
    if dtypes.is_inexact(x.dtype) and dtypes.is_int(new_dtype):
        # XLA: saturate to the target range, NaN -> 0
        info = np.iinfo(new_dtype)
        with np.errstate(invalid="ignore"):
            y = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            out = np.where(y <= info.min, info.min, np.where(y >= float(info.max), info.max, 0))
            inside = (y > info.min) & (y < float(info.max))
            return np.where(inside, np.where(inside, y, 0).astype(new_dtype),
                            out.astype(new_dtype))
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


def _convert_abstract(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = Primitive("convert_element_type", fusion=ELEMENTWISE)
convert_element_type_p.def_abstract_eval(_convert_abstract)
convert_element_type_p.def_impl(_convert_impl)


def _bitcast_abstract(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    if x.dtype != new_dtype and dtypes.bool_ in (x.dtype, new_dtype):
        raise TypeError(f"lax.bitcast_convert_type does not support bool values unless the "
                        f"operand and destination types match. Got operand dtype={x.dtype}, "
                        f"new_dtype={new_dtype}. Consider using the arr.view() method instead.")
    a, b = x.dtype.itemsize, new_dtype.itemsize
    if a == b:
        return ShapedArray(x.shape, new_dtype)
    if a > b:
        if a % b:
            raise TypeError(f"bitcast_convert_type: {x.dtype} -> {new_dtype} sizes incompatible")
        return ShapedArray(x.shape + (a // b,), new_dtype)
    if not x.shape or x.shape[-1] != b // a:
        raise ValueError(f"bitcast_convert_type from {x.dtype} to {new_dtype} needs a trailing "
                         f"dimension of size {b // a}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


def _bitcast_impl(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    a, b = x.dtype.itemsize, new_dtype.itemsize
    x = np.ascontiguousarray(x).reshape(x.shape)  # ascontiguousarray makes 0-d arrays 1-d
    if a == b:
        return x.view(new_dtype)
    if a > b:
        return x.view(new_dtype).reshape(x.shape + (a // b,))
    return x.view(new_dtype).reshape(x.shape[:-1])


bitcast_convert_type_p = Primitive("bitcast_convert_type", fusion=ELEMENTWISE)
bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract)
bitcast_convert_type_p.def_impl(_bitcast_impl)

# --- selection -----------------------------------------------------------------------------


def _select_n_abstract(which, *cases):
    if not cases:
        raise ValueError("select_n requires at least one case")
    c0 = cases[0]
    for c in cases[1:]:
        if c.shape != c0.shape or c.dtype != c0.dtype:
            raise TypeError(f"select_n cases must have the same shapes and dtypes, got "
                            f"{[c.str_short() for c in cases]}")
    if which.dtype != dtypes.bool_ and which.dtype.kind not in "iu":
        raise TypeError(f"select_n selector must be bool or integer, got {which.dtype}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise TypeError("select_n with a boolean selector takes at most two cases")
    if which.shape not in ((), c0.shape):
        raise TypeError(f"select_n selector shape {which.shape} must be scalar or equal to the "
                        f"case shape {c0.shape}")
    return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return cases[0]
    idx = np.clip(which.astype(np.int64), 0, len(cases) - 1)
    return np.choose(np.broadcast_to(idx, cases[0].shape), cases)


select_n_p = Primitive("select_n", fusion=ELEMENTWISE)
select_n_p.def_abstract_eval(_select_n_abstract)
select_n_p.def_impl(_select_n_impl)


def _clamp_abstract(lo, x, hi):
    for b in (lo, hi):
        if b.dtype != x.dtype:
            raise TypeError(f"clamp requires min, operand and max of one dtype, got "
                            f"{lo.dtype}, {x.dtype}, {hi.dtype}")
        if b.shape not in ((), x.shape):
            raise TypeError(f"clamp bounds must be scalars or of the operand's shape {x.shape}, "
                            f"got {b.shape}")
    return x


clamp_p = Primitive("clamp", fusion=ELEMENTWISE)
clamp_p.def_abstract_eval(_clamp_abstract)
clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))

# --- user functions ------------------------------------------------------------------------

def _unary(name: str, prim: Primitive, x: Any):
    (x,) = as_lax_operands(name, x)
    return prim.bind(x)


def _binary(name: str, prim: Primitive, x: Any, y: Any):
    # The package's own entry (lenient): a Python scalar takes the other operand's dtype, so
    # rules and jnp write lax.mul(x, 2) for x of any dtype. Users call lax/strict.py's.
    x, y = as_lax_operands(name, x, y)
    return prim.bind(x, y)


def neg(x: Any):
    """Elementwise: -x."""
    return _unary("neg", neg_p, x)


def sign(x: Any):
    """Elementwise: the sign of x: -1, 0 or 1 (NaN for NaN; x / |x| for complex x)."""
    return _unary("sign", sign_p, x)


def abs(x: Any):  # noqa: A001 - lax's name
    """Elementwise: |x| (the modulus, a real number, for complex x)."""
    return _unary("abs", abs_p, x)


def square(x: Any):
    """Elementwise: x * x."""
    return _unary("square", square_p, x)


def floor(x: Any):
    """Elementwise: the largest integer <= x."""
    return _unary("floor", floor_p, x)


def ceil(x: Any):
    """Elementwise: the smallest integer >= x."""
    return _unary("ceil", ceil_p, x)


def is_finite(x: Any):
    """Elementwise: Whether x is neither infinite nor NaN."""
    return _unary("is_finite", is_finite_p, x)


class Tolerance:
    """lax.Tolerance: the error a transcendental op's `accuracy=` may allow (at most two of
    atol, rtol, ulps). XLA picks among implementations by it; tracejit has one of each op."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps


class AccuracyMode(enum.Enum):
    """lax.AccuracyMode: the other kind of `accuracy=` request (see Tolerance)."""
    HIGHEST = 1
    DEFAULT = 2


def _check_accuracy(accuracy: Any) -> None:
    """`accuracy=` of exp, log, tanh, ...: JAX on CPU accepts a Tolerance or AccuracyMode and
    keeps its one implementation (so does tracejit); anything else is an error there too."""
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported; pass a lax.Tolerance or "
                                  "a lax.AccuracyMode")


def exp(x: Any, *, accuracy: Any = None):
    """Elementwise: E ** x."""
    _check_accuracy(accuracy)
    return _unary("exp", exp_p, x)


def exp2(x: Any, *, accuracy: Any = None):
    """Elementwise: 2 ** x."""
    _check_accuracy(accuracy)
    return _unary("exp2", exp2_p, x)


def log(x: Any, *, accuracy: Any = None):
    """Elementwise: the natural logarithm of x."""
    _check_accuracy(accuracy)
    return _unary("log", log_p, x)


def log2(x: Any, *, accuracy: Any = None):
    """Elementwise: the base-2 logarithm of x."""
    _check_accuracy(accuracy)
    return _unary("log2", log2_p, x)


def log1p(x: Any, *, accuracy: Any = None):
    """Elementwise: Log(1 + x), accurate near 0."""
    _check_accuracy(accuracy)
    return _unary("log1p", log1p_p, x)


def expm1(x: Any, *, accuracy: Any = None):
    """Elementwise: Exp(x) - 1, accurate near 0."""
    _check_accuracy(accuracy)
    return _unary("expm1", expm1_p, x)


def tanh(x: Any, *, accuracy: Any = None):
    """Elementwise: the hyperbolic tangent of x."""
    _check_accuracy(accuracy)
    return _unary("tanh", tanh_p, x)


def logistic(x: Any, *, accuracy: Any = None):
    """Elementwise: the logistic sigmoid 1 / (1 + exp(-x))."""
    _check_accuracy(accuracy)
    return _unary("logistic", logistic_p, x)


def sin(x: Any, *, accuracy: Any = None):
    """Elementwise: the sine of x."""
    _check_accuracy(accuracy)
    return _unary("sin", sin_p, x)


def cos(x: Any, *, accuracy: Any = None):
    """Elementwise: the cosine of x."""
    _check_accuracy(accuracy)
    return _unary("cos", cos_p, x)


def tan(x: Any, *, accuracy: Any = None):
    """Elementwise: the tangent of x."""
    _check_accuracy(accuracy)
    return _unary("tan", tan_p, x)


def asin(x: Any):
    """Elementwise: the inverse sine of x."""
    return _unary("asin", asin_p, x)


def acos(x: Any):
    """Elementwise: the inverse cosine of x."""
    return _unary("acos", acos_p, x)


def atan(x: Any):
    """Elementwise: the inverse tangent of x."""
    return _unary("atan", atan_p, x)


def sinh(x: Any):
    """Elementwise: the hyperbolic sine of x."""
    return _unary("sinh", sinh_p, x)


def cosh(x: Any):
    """Elementwise: the hyperbolic cosine of x."""
    return _unary("cosh", cosh_p, x)


def asinh(x: Any):
    """Elementwise: the inverse hyperbolic sine of x."""
    return _unary("asinh", asinh_p, x)


def acosh(x: Any):
    """Elementwise: the inverse hyperbolic cosine of x."""
    return _unary("acosh", acosh_p, x)


def atanh(x: Any):
    """Elementwise: the inverse hyperbolic tangent of x."""
    return _unary("atanh", atanh_p, x)


def sqrt(x: Any, *, accuracy: Any = None):
    """Elementwise: the square root of x."""
    _check_accuracy(accuracy)
    return _unary("sqrt", sqrt_p, x)


def rsqrt(x: Any, *, accuracy: Any = None):
    """Elementwise: 1 / sqrt(x)."""
    _check_accuracy(accuracy)
    return _unary("rsqrt", rsqrt_p, x)


def cbrt(x: Any, *, accuracy: Any = None):
    """Elementwise: the cube root of x."""
    _check_accuracy(accuracy)
    return _unary("cbrt", cbrt_p, x)


def erf(x: Any):
    """Elementwise: the error function of x."""
    return _unary("erf", erf_p, x)


def erfc(x: Any, *, accuracy: Any = None):
    """Elementwise: the complementary error function 1 - erf(x)."""
    _check_accuracy(accuracy)
    return _unary("erfc", erfc_p, x)


def erf_inv(x: Any):
    """Elementwise: the inverse error function of x."""
    return _unary("erf_inv", erf_inv_p, x)


def lgamma(x: Any):
    """Elementwise: the log of the absolute value of the gamma function of x."""
    return _unary("lgamma", lgamma_p, x)


def digamma(x: Any):
    """Elementwise: the digamma function (the derivative of lgamma) of x."""
    return _unary("digamma", digamma_p, x)


def bessel_i0e(x: Any):
    """Elementwise: the exponentially scaled modified Bessel function of order 0 of x."""
    return _unary("bessel_i0e", bessel_i0e_p, x)


def bessel_i1e(x: Any):
    """Elementwise: the exponentially scaled modified Bessel function of order 1 of x."""
    return _unary("bessel_i1e", bessel_i1e_p, x)


def bitwise_not(x: Any):
    """Elementwise: the bitwise (for booleans: logical) negation of x."""
    return _unary("bitwise_not", not_p, x)


def population_count(x: Any):
    """Elementwise: the number of set bits of x."""
    return _unary("population_count", population_count_p, x)


def clz(x: Any):
    """Elementwise: the number of leading zero bits of x."""
    return _unary("clz", clz_p, x)


def real(x: Any):
    """Elementwise: the real part of x."""
    return _unary("real", real_p, x)


def imag(x: Any):
    """Elementwise: the imaginary part of x."""
    return _unary("imag", imag_p, x)


def conj(x: Any):
    """Elementwise: the complex conjugate of x."""
    return _unary("conj", conj_p, x)


def add(x: Any, y: Any):
    """Elementwise: x + y."""
    return _binary("add", add_p, x, y)


def sub(x: Any, y: Any):
    """Elementwise: x - y."""
    return _binary("sub", sub_p, x, y)


def mul(x: Any, y: Any):
    """Elementwise: x * y."""
    return _binary("mul", mul_p, x, y)


def div(x: Any, y: Any):
    """Elementwise: x / y (integers: truncated toward zero; x / 0 is -1)."""
    return _binary("div", div_p, x, y)


def rem(x: Any, y: Any):
    """Elementwise: the remainder of x / y, with the sign of x (integers: x % 0 is x)."""
    return _binary("rem", rem_p, x, y)


def max(x: Any, y: Any):  # noqa: A001 - lax's name
    """Elementwise: the larger of x and y (NaN if either is NaN)."""
    return _binary("max", max_p, x, y)


def min(x: Any, y: Any):  # noqa: A001 - lax's name
    """Elementwise: the smaller of x and y (NaN if either is NaN)."""
    return _binary("min", min_p, x, y)


def pow(x: Any, y: Any):  # noqa: A001 - lax's name
    """Elementwise: x ** y."""
    x, y = as_lax_operands("pow", x, y)  # (a Python int exponent is welcome: not strict)
    return pow_p.bind(x, y)


def atan2(x: Any, y: Any):
    """Elementwise: the angle of the point (y, x): atan(x / y) in the right quadrant."""
    return _binary("atan2", atan2_p, x, y)


def nextafter(x: Any, y: Any):
    """Elementwise: the next floating-point value after x towards y."""
    return _binary("nextafter", nextafter_p, x, y)


def eq(x: Any, y: Any):
    """Elementwise: x == y."""
    return _binary("eq", eq_p, x, y)


def ne(x: Any, y: Any):
    """Elementwise: x != y."""
    return _binary("ne", ne_p, x, y)


def lt(x: Any, y: Any):
    """Elementwise: x < y."""
    return _binary("lt", lt_p, x, y)


def le(x: Any, y: Any):
    """Elementwise: x <= y."""
    return _binary("le", le_p, x, y)


def gt(x: Any, y: Any):
    """Elementwise: x > y."""
    return _binary("gt", gt_p, x, y)


def ge(x: Any, y: Any):
    """Elementwise: x >= y."""
    return _binary("ge", ge_p, x, y)


def bitwise_and(x: Any, y: Any):
    """Elementwise: Bitwise (for booleans: logical) and."""
    return _binary("bitwise_and", and_p, x, y)


def bitwise_or(x: Any, y: Any):
    """Elementwise: Bitwise (for booleans: logical) or."""
    return _binary("bitwise_or", or_p, x, y)


def bitwise_xor(x: Any, y: Any):
    """Elementwise: Bitwise (for booleans: logical) exclusive or."""
    return _binary("bitwise_xor", xor_p, x, y)


def shift_left(x: Any, y: Any):
    """Elementwise: x << y (0 when y is out of range)."""
    return _binary("shift_left", shift_left_p, x, y)


def mulhi(x: Any, y: Any, /):
    """Elementwise: the high half of the double-width product x * y (integers of one dtype)."""
    return _binary("mulhi", mulhi_p, x, y)


def shift_right_logical(x: Any, y: Any):
    """Elementwise: x >> y, shifting in zeros (0 when y is out of range)."""
    return _binary("shift_right_logical", shift_right_logical_p, x, y)


def shift_right_arithmetic(x: Any, y: Any):
    """Elementwise: x >> y, shifting in the sign bit."""
    return _binary("shift_right_arithmetic", shift_right_arithmetic_p, x, y)


def complex(x: Any, y: Any):  # noqa: A001 - lax's name
    """Elementwise: the complex number x + i*y."""
    return _binary("complex", complex_p, x, y)


# lax's name for logical not on bools and ints
not_ = bitwise_not


def round(x: Any, rounding_method: int = 0):  # noqa: A001 - lax's name
    """lax.round: rounding_method 0 (AWAY_FROM_ZERO, default) or 1 (TO_NEAREST_EVEN)."""
    (x,) = as_lax_operands("round", x)
    return round_p.bind(x, rounding_method=int(rounding_method))


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def integer_pow(x: Any, y: int):
    (x,) = as_lax_operands("integer_pow", x)
    if not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow exponent must be a Python int, got {y!r}")
    return integer_pow_p.bind(x, y=int(y))


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False):
    new_dtype = dtypes.check_user_dtype(new_dtype, "new_dtype")
    if isinstance(operand, (np.ndarray, np.generic)) and \
            dtypes.canonicalize_dtype(new_dtype) != new_dtype:
        # a host value to a 64-bit dtype jax_explicit_x64_dtypes="allow" kept with x64 off:
        # converted on the host, as JAX 0.12 does (canonicalised first, it would lose bits)
        value = np.asarray(operand).astype(new_dtype)
        operand = Array.from_numpy(value, ShapedArray(value.shape, new_dtype))
    (operand,) = as_lax_operands("convert_element_type", operand)
    from ..core.trace import get_aval
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and \
            isinstance(operand, (Array, Tracer)):
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def bitcast_convert_type(operand: Any, new_dtype: Any):
    (operand,) = as_lax_operands("bitcast_convert_type", operand)
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.check_user_dtype(new_dtype))


def polygamma(m: Any, x: Any):
    """lax.polygamma: the m-th derivative of digamma (m integer-valued, same dtype as x)."""
    m, x = as_lax_operands("polygamma", m, x)
    return polygamma_p.bind(m, x)


def fma(x: Any, y: Any, z: Any):
    """x * y + z with a single rounding (XLA's CPU contraction of mul+add)."""
    x, y, z = as_lax_operands("fma", x, y, z)
    return fma_p.bind(x, y, z)


def select_n(which: Any, *cases: Any):
    cases = as_lax_operands("select_n", *cases)
    (which,) = as_lax_operands("select_n", which)
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any):
    """lax.select: pred ? on_true : on_false, elementwise (pred is bool)."""
    return select_n(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any):  # noqa: A002 - lax's names
    lo, x, hi = as_lax_operands("clamp", min, x, max)
    return clamp_p.bind(lo, x, hi)



# --- transformation rules: JVP, transpose (linear ops), batching -----------------------------
_complex, _pow = complex, pow  # (the rules below also use Python's builtins of these names)


def _zeros_like(x):
    return full_like_aval(get_aval(x), 0)


def _add_transpose(ct, x, y):  # a rank-0 operand's cotangent sums over its broadcast
    return [unbroadcast(aval_of(x), ct) if is_undefined(x) else None,
            unbroadcast(aval_of(y), ct) if is_undefined(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(aval_of(x), ct) if is_undefined(x) else None,
            unbroadcast(aval_of(y), neg(ct)) if is_undefined(y) else None]


def _mul_transpose(ct, x, y):
    if is_undefined(x):  # linear jaxprs multiply a tangent by a residual, never two tangents
        return [unbroadcast(aval_of(x), mul(ct, y)), None]
    return [None, unbroadcast(aval_of(y), mul(x, ct))]


def _balanced_eq(x, z, y):
    """1 where x alone attains z, 1/2 where y ties with it, else 0 (JAX's max/min JVP)."""
    aval = get_aval(z)
    return div(select_n(eq(x, z), full_like_aval(aval, 0), full_like_aval(aval, 1)),
               select_n(eq(y, z), full_like_aval(aval, 1), full_like_aval(aval, 2)))


def _replace_zero(x):
    return select_n(eq(x, 0), x, full_like_aval(get_aval(x), 1))


def _pow_jvp_base(g, ans, x, y):
    if dtypes.is_int(get_aval(y).dtype):  # x ** 0 has derivative 0, even at x == 0
        aval = get_aval(ans)
        y = broadcast_to_aval(convert_element_type(y, aval.dtype), aval)
        jac = mul(y, _pow(broadcast_to_aval(x, aval), sub(y, 1)))
        return mul(g, select_n(eq(y, 0), jac, full_like_aval(aval, 0)))
    return mul(g, mul(y, _pow(x, sub(y, 1))))


def _abs_jvp(g, ans, x):
    if get_aval(x).dtype.kind == "c":
        return div(real(mul(conj(x), g)), _replace_zero(ans))
    return select_n(ge(x, 0), neg(g), g)  # the derivative at 0 is 1, as in JAX


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return Zero.from_primal(x)
    return g if y == 1 else mul(g, mul(integer_pow(x, y - 1), y))


def _bessel_i1e_jvp(g, ans, x):
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), which tends to 1/2 at 0: x is kept off 0
    aval = get_aval(x)
    eps = full_like_aval(aval, dtypes.finfo_of(aval.dtype).eps)
    not_tiny = gt(abs_p.bind(x), eps)
    safe_x = select_n(not_tiny, eps, x)
    dy_dx = sub(bessel_i0e_p.bind(safe_x), mul(ans, add(sign(safe_x), div(1, safe_x))))
    return mul(g, select_n(not_tiny, full_like_aval(aval, 0.5), dy_dx))


def _clamp_jvp(which):
    def rule(g, lo, x, hi):
        zeros, g = _zeros_like(x), broadcast_to_aval(g, get_aval(x))
        if which == "lo":
            return select_n(bitwise_and(gt(lo, x), lt(lo, hi)), zeros, g)
        if which == "x":
            return select_n(bitwise_and(gt(x, lo), lt(x, hi)), zeros, g)
        return select_n(lt(hi, x), zeros, g)
    return rule


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if not dtypes.is_inexact(np.dtype(new_dtype)):  # to an integer type: derivative zero
        return out, Zero.from_primal(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    aval = aval_of(x)
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    if all(type(t) is Zero for t in tangents[1:]):
        return out, Zero.from_primal(out)
    return out, select_n_p.bind(which, *[instantiate(t) for t in tangents[1:]])


def _select_n_transpose(ct, which, *cases):
    zeros = _zeros_like(ct)
    return [None] + [select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
                     if is_undefined(c) else None for i, c in enumerate(cases)]


def _bitcast_batch(vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    if d == get_aval(x).ndim - 1:  # the trailing dimension may appear or vanish
        x, d = moveaxis(x, d, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


defjvp(add_p, lambda g, x, y: g, lambda g, x, y: g)
add_p.def_transpose(_add_transpose)
defjvp(sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))
sub_p.def_transpose(_sub_transpose)
defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
mul_p.def_transpose(_mul_transpose)
defjvp(div_p, lambda g, x, y: div(g, y),
       lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
div_p.def_transpose(lambda ct, x, y: [unbroadcast(aval_of(x), div(ct, y)), None])
defjvp(rem_p, lambda g, x, y: g,
       lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs_p.bind(div(x, y))))))
defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
       lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))
defjvp(fma_p, lambda g, x, y, z: mul(g, y), lambda g, x, y, z: mul(x, g), lambda g, x, y, z: g)
def_linear(neg_p, lambda ct, x: [neg(ct)])
defjvp(square_p, lambda g, x: mul(g, mul(x, 2)))
defjvp2(pow_p, _pow_jvp_base, lambda g, ans, x, y: mul(g, mul(log(_replace_zero(x)), ans)))
defjvp2(abs_p, _abs_jvp)
defjvp(integer_pow_p, _integer_pow_jvp)
defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, math.log(2))))
defjvp(log_p, lambda g, x: div(g, x))
defjvp(log2_p, lambda g, x: div(g, mul(x, math.log(2))))
defjvp(log1p_p, lambda g, x: div(g, add(x, 1)))
defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, 1)))
defjvp2(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(1, ans)))
defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(1, ans))))
defjvp(sin_p, lambda g, x: mul(g, cos(x)))
defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
defjvp2(tan_p, lambda g, ans, x: mul(g, add(square(ans), 1)))
defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(1, square(x)))))
defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(1, square(x))))))
defjvp(atan_p, lambda g, x: div(g, add(square(x), 1)))
defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), 1))))
# JAX's form: rsqrt(x - 1) rsqrt(x + 1), not rsqrt((x - 1)(x + 1)), which takes the other
# square root's sign for complex x with Re x < 0
defjvp(acosh_p, lambda g, x: mul(g, mul(rsqrt(sub(x, 1)), rsqrt(add(x, 1)))))
defjvp(atanh_p, lambda g, x: mul(div(1, add(x, 1)), div(g, sub(1, x))))
defjvp2(sqrt_p, lambda g, ans, x: div(g, mul(ans, 2)))
defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(div(ans, x), -0.5)))
defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(integer_pow(ans, -2), 1 / 3)))
defjvp(erf_p, lambda g, x: mul(g, mul(exp(neg(square(x))), 2 / math.sqrt(math.pi))))
defjvp(erfc_p, lambda g, x: mul(g, mul(exp(neg(square(x))), -2 / math.sqrt(math.pi))))
defjvp2(erf_inv_p, lambda g, ans, x: mul(g, mul(exp(square(ans)), math.sqrt(math.pi) / 2)))
defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
defjvp(digamma_p, lambda g, x: mul(g, polygamma(1.0, x)))
defjvp(polygamma_p, None, lambda g, m, x: mul(g, polygamma(add(m, 1.0), x)))
def_broadcasting(polygamma_p)
defjvp2(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e_p.bind(x), mul(sign(x), ans))))
defjvp2(bessel_i1e_p, _bessel_i1e_jvp)
def_linear(real_p, lambda ct, x: [_complex(ct, _zeros_like(ct))])
def_linear(imag_p, lambda ct, x: [_complex(_zeros_like(ct), neg(ct))])
def_linear(complex_p, lambda ct, x, y: [real(ct) if is_undefined(x) else None,
                                        imag(neg(ct)) if is_undefined(y) else None])
def_linear(conj_p, lambda ct, x: [conj(ct) if aval_of(x).dtype.kind == "c" else real(ct)])
convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)
select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)
defjvp(clamp_p, _clamp_jvp("lo"), _clamp_jvp("x"), _clamp_jvp("hi"))
# piecewise-constant, integer- and boolean-valued ops have zero derivatives
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, nextafter_p, eq_p, ne_p, lt_p, le_p,
           gt_p, ge_p, not_p, and_p, or_p, xor_p, shift_left_p, shift_right_logical_p,
           shift_right_arithmetic_p, population_count_p, clz_p, bitcast_convert_type_p, mulhi_p):
    _p.def_not_differentiable()

# (the unop/binop families batch their primitives themselves)
for _p in (abs_p, round_p, integer_pow_p, convert_element_type_p):
    def_vectorized(_p)
def_broadcasting(select_n_p, lambda i, n: i == 0)  # only the selector may stay rank 0
def_broadcasting(clamp_p, lambda i, n: i != 1)     # the bounds may stay rank 0
bitcast_convert_type_p.def_batch(_bitcast_batch)

# --- stop_gradient: the identity, with a zero derivative ----------------------------------
stop_gradient_p = unop("stop_gradient", lambda x: x, ANY)
# a fresh buffer holding x (jnp.array(x, copy=True) in JAX); linear
copy_p = unop("copy", lambda x: np.array(x, copy=True), ANY)
def_linear(copy_p, lambda ct, x: [copy_p.bind(ct)])
stop_gradient_p.def_not_differentiable()


def stop_gradient(x: Any) -> Any:
    """x with a zero derivative, for every inexact leaf of the pytree x (others pass)."""
    def stop(leaf):
        (leaf,) = as_lax_operands("stop_gradient", leaf)
        return stop_gradient_p.bind(leaf) if dtypes.is_inexact(get_aval(leaf).dtype) else leaf
    return tree_map(stop, x)


# --- name: checkpoint_name's marker, the identity (checkpoint policies read its `name`) ----
name_p = Primitive("name", fusion=ELEMENTWISE)
name_p.def_abstract_eval(lambda x, *, name: x)
name_p.def_impl(lambda x, *, name: x)
name_p.def_jvp(lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name),
                                                   tangents[0]))  # the tangent stays unnamed
def_vectorized(name_p)


__all__ = [
    "AccuracyMode", "RoundingMethod", "Tolerance",
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
    "bessel_i0e", "bessel_i1e", "bitcast_convert_type", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clamp", "clz", "complex", "conj",
    "convert_element_type", "cos", "cosh", "digamma", "div", "eq", "erf", "erf_inv", "erfc",
    "exp", "exp2", "expm1", "floor", "fma", "ge", "gt", "imag", "integer_pow", "is_finite",
    "le", "lgamma", "log", "log1p", "log2", "logistic", "lt", "max", "min", "mul", "mulhi", "ne",
    "neg",
    "nextafter", "not_", "polygamma", "population_count", "pow", "real", "rem", "round",
    "rsqrt", "select", "select_n", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "sign", "sin", "sinh", "sqrt", "square", "stop_gradient", "sub",
    "tan", "tanh"
]
