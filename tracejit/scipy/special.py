"""jax.scipy.special: special functions as compositions of lax primitives, so each one traces,
differentiates, batches and compiles natively like any other jax.numpy code."""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from ..lax import lenient as lax
from .. import numpy as jnp
from ..core import dtypes
from ..core.trace import concrete_value, get_aval
from ..nn import log_softmax, logsumexp, softmax  # noqa: F401  (the same functions in JAX)
from ..numpy._util import promote_args_inexact
from ..transforms.api import custom_jvp


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = promote_args_inexact("expit", x)
    return lax.logistic(x)


def logit(x: Any) -> Any:
    """The inverse of expit: log(x / (1 - x))."""
    (x,) = promote_args_inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1), x)))


def erf(x: Any) -> Any:
    """The error function."""
    (x,) = promote_args_inexact("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
    (x,) = promote_args_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1)."""
    (x,) = promote_args_inexact("erfinv", x)
    return lax.erf_inv(x)


def erfcinv(y: Any) -> Any:
    """The inverse of erfc on [0, 2] (inf at 0, -inf at 2, NaN outside), JAX 0.12's name:
    -ndtri(y / 2) / sqrt(2). y / 2 is exact and ndtri keeps its relative accuracy in both
    tails (it works on min(p, 1 - p), exact for p > 1/2), so the result does too; its
    derivative, through ndtri's, is -sqrt(pi) / 2 exp(erfcinv(y)**2). Half types compute in
    float32, as JAX's."""
    (y,) = promote_args_inexact("erfcinv", y)
    dtype = np.dtype(get_aval(y).dtype)
    if dtype.kind == "c":
        raise ValueError("erfcinv does not support complex-valued inputs.")
    if dtype.itemsize < 4:
        return erfcinv(y.astype(np.float32)).astype(dtype)
    return lax.mul(ndtri(lax.mul(y, 0.5)), -math.sqrt(0.5))


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|."""
    (x,) = promote_args_inexact("gammaln", x)
    return lax.lgamma(x)


def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma."""
    (x,) = promote_args_inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma (n a non-negative integer)."""
    n, x = promote_args_inexact("polygamma", n, x)
    return lax.polygamma(n, x)


@custom_jvp
def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), and 0 where x == 0 (even where log(y) is -inf or NaN)."""
    x, y = promote_args_inexact("xlogy", x, y)
    x_ok = (x != 0.) | jnp.isnan(y)        # 0 * log(NaN) stays NaN, as in JAX
    return jnp.where(x_ok, lax.mul(x, lax.log(y)), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlogy(x, y)
    return result, (x_dot * lax.log(y) + y_dot * x / y).astype(get_aval(result).dtype)


@custom_jvp
def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), and 0 where x == 0."""
    x, y = promote_args_inexact("xlog1py", x, y)
    x_ok = (x != 0.) | jnp.isnan(y)
    return jnp.where(x_ok, lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlog1py(x, y)
    return result, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(get_aval(result).dtype)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, from erf near 0 and erfc in the tails (no cancellation)."""
    x = _real_float("ndtr", x)
    half_sqrt_2 = math.sqrt(0.5)
    w = x * half_sqrt_2
    z = lax.abs(w)
    y = jnp.where(z < half_sqrt_2, 1. + lax.erf(w),
                  jnp.where(w > 0., 2. - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def ndtri(p: Any) -> Any:
    """The inverse of ndtr: -inf at 0, inf at 1, NaN outside [0, 1].

    Float64: Cephes' algorithm (as SciPy's), within 2 ulps of SciPy's: with y = min(p, 1 - p)
    (exact for p > 1/2), a rational function of (p - 1/2)**2 where y > exp(-2), and in the
    tails z - log(z)/z - R(1/z) with z = sqrt(-2 log y), one rational function for y above
    exp(-32) and another below; the three share one division.
    Float32 (`_ndtri32`): (1 - 2 y) G(w) in Giles' variable w = -log(4 y (1 - y)) (as JAX
    0.12's erf_inv_core), G our polynomials (tools/fit_polynomials.py): within 3.5 ulps of the
    exact value over every float32 p, subnormal p included (Cephes' rationals in float32:
    4.1, their central one cancelling near y = exp(-2); JAX 0.12's is within 2.3, and -inf
    for subnormal p). One log, one rsqrt, no division: one kernel, 3.4 against Cephes' 5.0 ms
    of one thread's CPU for 2^20 float32. Half types raise JAX's TypeError (erfcinv computes
    them in float32)."""
    p = _real_float("ndtri", p)
    dtype = np.dtype(get_aval(p).dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={dtype} is not supported, see docstring for supported types. "
                        "ndtri takes float32 or float64: pass p.astype(jnp.float32)")
    return _ndtri(p)


# Cephes' ndtri coefficients, the highest power first; each Q has a leading 1 left out
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)

# float32: ndtri(1 - y) / (1 - 2 y), y = min(p, 1 - p), as a function of w = -log(4 y (1 - y))
# (Giles' variable for erfinv): a polynomial in w - 2.5 below w = 5 (y > 0.0017), and sqrt(w)
# times one in 1/sqrt(w) - 0.27 up to w = 105 (float32's least subnormal y); lowest degree
# first (tools/fit_polynomials.py)
_NDTRI32_HEAD = (
    2.1233134697380094, 0.34880204164778683, -0.005907644295985692, -0.0017716524488088732,
    0.00030869061015617003, -7.014914726597188e-06, -4.8537544690929575e-06,
    6.583815561298482e-07, 2.4851923715202978e-08, -1.2371782528492508e-08,
    5.171840765284346e-10)
_NDTRI32_TAIL = (
    1.3520148896643018, -0.2747759377507708, 0.16091201831199017, 0.7765443104792082,
    0.3386930272196212, 15.02680088932865, 51.81051528241583, -175.46441448572472,
    -1868.489830483044, 1045.2913257024954, 30981.75806400809, 491.4555121336047,
    -230042.5912050723)


def _horner(x: Any, coeffs: tuple[float, ...], monic: bool = False) -> Any:
    """The polynomial of `coeffs` (highest power first, after a leading 1 where `monic`) at x,
    by Horner's rule: one `polynomial` equation, so the three rational functions and the rest
    of ndtri fuse into one kernel."""
    coeffs = (1., *coeffs) if monic else coeffs
    return lax.polynomial(x, coeffs[::-1], unroll=len(coeffs))


def _log_of_tiny(t: Any, finfo: Any) -> Any:
    """log t for t >= tiny * eps: a subnormal t is scaled up first (a float32 log flushes it to
    zero, as XLA's does)."""
    subnormal = t < finfo.tiny
    return lax.log(jnp.where(subnormal, t * 2. ** 64, t)) \
        - jnp.where(subnormal, 64 * math.log(2.), 0.)


def _ndtri_core(w: Any, z: Any, central: Any, upper: Any) -> Any:
    """Cephes' ndtri from its variables: w = p - 1/2 where `central`, else the tails' z =
    sqrt(-2 log t) of the tail probability t (the lower tail's result negated)."""
    w2 = lax.square(w)
    r = 1. / z
    near = z < 8.                                            # t > exp(-32)
    # the three rational functions share one division
    ratio = (jnp.where(central, _horner(w2, _NDTRI_P0),
                       jnp.where(near, _horner(r, _NDTRI_P1), _horner(r, _NDTRI_P2)))
             / jnp.where(central, _horner(w2, _NDTRI_Q0, True),
                         jnp.where(near, _horner(r, _NDTRI_Q1, True),
                                   _horner(r, _NDTRI_Q2, True))))
    x_central = (w + w * (w2 * ratio)) * math.sqrt(2. * math.pi)
    x_tail = z - lax.log(z) * r - r * ratio
    return jnp.where(central, x_central, jnp.where(upper, x_tail, -x_tail))


def _ndtri32(p: Any, finfo: Any) -> Any:
    """Float32 ndtri on (0, 1): (1 - 2 y) G(w), y = min(p, 1 - p) (exact), w = -log(4 y (1 -
    y)) from 2 y and 2 - 2 y (exact, and within half an ulp: no cancellation anywhere, as w's
    absolute error moves G little where w is small), G one of two polynomials (one log, one
    rsqrt, no division); negated below 1/2."""
    upper = p >= 0.5
    two_y = 2. * jnp.where(upper, 1. - p, p)
    q = lax.fma(-two_y, two_y, 2. * two_y)              # 4 y (1 - y), rounded once
    w = -_log_of_tiny(jnp.maximum(q, finfo.smallest_subnormal), finfo)
    head = w < 5.
    r = lax.rsqrt(jnp.where(head, 5., w))
    g = jnp.where(head, _paired_horner(w - 2.5, _NDTRI32_HEAD),
                  (w * r) * _paired_horner(r - 0.27, _NDTRI32_TAIL))
    x = lax.fma(-two_y, g, g)                            # (1 - 2 y) G, rounded once
    return jnp.where(upper, x, -x)


@custom_jvp
def _ndtri(p: Any) -> Any:
    dtype = np.dtype(get_aval(p).dtype)
    finfo = dtypes.finfo_of(dtype)
    if dtype == np.float32:
        out = jnp.where(p == 0, -np.inf, jnp.where(p == 1, np.inf, _ndtri32(p, finfo)))
        return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), np.nan, out)
    exp_m2 = math.exp(-2.)
    upper = p > 1. - exp_m2
    y = jnp.where(upper, 1. - p, p)                          # exact for p > 1/2
    central = y > exp_m2
    w = jnp.where(central, p, 0.5) - 0.5
    # the tails: y in (0, exp(-2)], every branch kept finite so no NaN reaches a select
    tail_y = jnp.clip(y, finfo.tiny * finfo.eps, exp_m2)
    z = lax.sqrt(-2. * _log_of_tiny(tail_y, finfo))
    out = _ndtri_core(w, z, central, upper)
    out = jnp.where(p == 0, -np.inf, jnp.where(p == 1, np.inf, out))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), np.nan, out).astype(dtype)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    # dx/dp = 1 / pdf(x)
    (p,), (p_dot,) = primals, tangents
    x = _ndtri(p)
    return x, p_dot * math.sqrt(2. * np.pi) * lax.exp(0.5 * lax.square(x))


# the asymptotic series of log_ndtr takes over below these points (JAX's choice per dtype)
_LOG_NDTR_LOWER = {np.dtype(np.float32): -10., np.dtype(np.float64): -20.}
_LOG_NDTR_UPPER = {np.dtype(np.float32): 5., np.dtype(np.float64): 8.}


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log(ndtr(x)), accurate far into both tails: log1p(-ndtr(-x)) above the upper point,
    log(ndtr(x)) in the middle, and an asymptotic series below the lower point."""
    if not isinstance(series_order, int) or not 0 <= series_order <= 30:
        raise ValueError("series_order must be a non-negative integer at most 30, "
                         f"got {series_order!r}")
    return _log_ndtr(_real_float("log_ndtr", x), series_order)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x: Any, series_order: int) -> Any:
    dtype = np.dtype(get_aval(x).dtype)
    lower = _LOG_NDTR_LOWER.get(dtype, -10.)
    upper = _LOG_NDTR_UPPER.get(dtype, 5.)
    # each branch sees only inputs where it is accurate, so no branch makes a NaN or inf
    # that a gradient through the select would pick up; the upper tail's ndtr(-x) and the
    # middle's ndtr(x) are one ndtr of a selected argument (elementwise: the same bits)
    safe_low = jnp.minimum(x, lower)
    high = x > upper
    p = ndtr(jnp.where(high, -x, jnp.clip(x, lower, upper)))
    return jnp.where(high, -p, jnp.where(x > lower, lax.log(p),
                                         _log_ndtr_lower(safe_low, series_order)))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    # d/dx log ndtr(x) = pdf(x) / ndtr(x), taken in logs so neither tail over- or underflows
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    log_pdf = -0.5 * lax.square(x) - 0.5 * math.log(2. * np.pi)
    return ans, t * lax.exp(log_pdf - ans)


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """log(ndtr(x)) for x << 0: -x^2/2 - log(2 pi)/2 + log(S(1/x^2) / -x), S the asymptotic
    series 1 + sum_{k=1..order} (-1)^k (2k-1)!! / x^2k: one division (r = -1/x, whose square
    is the series' variable) and one log, where log(-x) and log(S) with a division a term took
    two and `order`. (x <= -10 in float32, -20 in float64: x^2/2 outweighs the log's part.)"""
    r = -1. / x
    t = lax.square(r)
    even_sum = jnp.zeros_like(t)
    odd_sum = jnp.zeros_like(t)
    t_n = t
    for n in range(1, series_order + 1):
        term = _double_factorial(2 * n - 1) * t_n
        if n % 2:
            odd_sum = odd_sum + term
        else:
            even_sum = even_sum + term
        t_n = t_n * t
    series = 1. + even_sum - odd_sum
    return -0.5 * lax.square(x) - 0.5 * math.log(2. * np.pi) + lax.log(series * r)


def _double_factorial(n: int) -> float:
    return float(np.prod(np.arange(n, 0, -2))) if n > 0 else 1.


def _real_float(name: str, x: Any) -> Any:
    """x as an array, which must already be of a real floating dtype (JAX does not promote
    integers here: a TypeError instead)."""
    x = jnp.asarray(x)
    dtype = np.dtype(get_aval(x).dtype)
    if not dtypes.issubdtype(dtype, np.floating):
        raise TypeError(f"{name}: x.dtype={dtype} is not supported; pass a floating-point "
                        "array, e.g. x.astype(jnp.float32)")
    return x


# --- the gamma family ---------------------------------------------------------------------

def _real_only(name: str, *args: Any) -> list:
    args = promote_args_inexact(name, *args)
    if dtypes.issubdtype(get_aval(args[0]).dtype, np.complexfloating):
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return args


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x): -1 or 1 (-1 at -0.0), NaN at the poles x = -1, -2, ... and NaN."""
    (x,) = _real_only("gammasgn", x)
    floor_x = lax.floor(x)
    neg = x < 0
    nan = (neg & (x == floor_x)) | jnp.isnan(x)
    minus = (neg & (lax.rem(floor_x, jnp.full_like(x, 2)) != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.where(nan, jnp.nan, jnp.where(minus, -1., 1.)).astype(get_aval(x).dtype)


def gamma(x: Any) -> Any:
    """The gamma function, as gammasgn(x) * exp(gammaln(x))."""
    (x,) = _real_only("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """log(Gamma(x)) for real x > 0 (NaN elsewhere; complex x is not supported yet)."""
    (x,) = promote_args_inexact("loggamma", x)
    if dtypes.issubdtype(get_aval(x).dtype, np.complexfloating):
        raise NotImplementedError("loggamma of complex numbers is not supported in tracejit yet")
    return jnp.where(x > 0, lax.lgamma(x), jnp.nan)


def _algdiv(a: Any, b: Any) -> Any:
    """lgamma(b) - lgamma(a + b) for b >= 8 and a <= b, without the cancellation of the
    difference: Stirling's series for both, the difference of their corrections summed as one
    series (cdflib's algdiv, which SciPy's betaln uses)."""
    h = a / b
    c = h / (1 + h)
    x2 = c * c
    s3 = 1. + (c + x2)
    s5 = 1. + (c + x2 * s3)
    s7 = 1. + (c + x2 * s5)
    s9 = 1. + (c + x2 * s7)
    s11 = 1. + (c + x2 * s9)
    t = lax.square(1. / b)
    coef = (0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03,
            -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02)
    w = ((((coef[5] * s11 * t + coef[4] * s9) * t + coef[3] * s7) * t + coef[2] * s5) * t
         + coef[1] * s3) * t + coef[0]
    w = w * (c / b)
    u = (b + (a - 0.5)) * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.)
    return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)|, accurate for large arguments (no cancellation of three lgammas)."""
    a, b = promote_args_inexact("betaln", a, b)
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _algdiv(a, jnp.maximum(b, 8.))
    return jnp.where(b < 8, small_b, large_b)


def beta(a: Any, b: Any) -> Any:
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = _real_only("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b) (differentiable in x only)."""
    a, b, x = jnp.broadcast_arrays(*_real_only("betainc", a, b, x))
    return lax.betainc(a, b, x)


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = jnp.broadcast_arrays(*_real_only("gammainc", a, x))
    return lax.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = jnp.broadcast_arrays(*_real_only("gammaincc", a, x))
    return lax.igammac(a, x)


def factorial(n: Any, exact: bool = False) -> Any:
    """n! as a float, exp(gammaln(n + 1)); 0 for n < 0 (exact=True is not supported, as in
    JAX: exact factorials past 20! overflow every integer dtype)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_args_inexact("factorial", n)
    return jnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:
    """The binomial coefficient N choose k as a float; 0 when k < 0, N < 0 or k > N."""
    N, k = promote_args_inexact("comb", N, k)
    if repetition:
        return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = jnp.where(ok, N, 0.), jnp.where(ok, k, 0.)
    out = lax.exp(gammaln(safe_n + 1) - gammaln(safe_k + 1) - gammaln(safe_n + 1 - safe_k))
    return jnp.where(ok, out, 0.)


@custom_jvp
def poch(z: Any, m: Any) -> Any:
    """The rising factorial Gamma(z + m) / Gamma(z) (1 at m = 0)."""
    z, m = _real_only("poch", z, m)
    return jnp.where(m == 0., jnp.ones_like(z), gamma(z + m) / gamma(z))


@poch.defjvp
def _poch_jvp(primals, tangents):
    (z, m), (z_dot, m_dot) = primals, tangents
    out = poch(z, m)
    psi_zm = digamma(z + m)
    return out, (psi_zm - digamma(z)) * out * z_dot + psi_zm * out * m_dot


def multigammaln(a: Any, d: int) -> Any:
    """log of the multivariate gamma function of dimension d (a concrete int)."""
    try:
        d = int(d)
    except TypeError:
        raise TypeError("multigammaln: d must be a concrete Python int (it sets how many "
                        "terms are summed); it cannot be traced") from None
    a, d_ = promote_args_inexact("multigammaln", a, d)
    dtype = get_aval(a).dtype
    constant = d * (d - 1) / 4 * math.log(np.pi)
    halves = jnp.asarray(np.arange(d) / 2, dtype=dtype)
    return jnp.sum(gammaln(jnp.expand_dims(a, -1) - halves), axis=-1) + \
        jnp.asarray(constant, dtype)


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function sum_k (q + k)**-x (differentiable in q)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    x, q = jnp.broadcast_arrays(*_real_only("zeta", x, q))
    return lax.zeta(x, q)


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), from exact rational arithmetic."""
    try:
        n = int(n)
    except TypeError:
        raise TypeError("bernoulli: n must be a concrete Python int") from None
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    from fractions import Fraction
    from math import comb as binom
    b = [Fraction(1)]
    for k in range(1, n + 1):     # sum_j C(k + 1, j) B_j = 0
        b.append(-sum(binom(k + 1, j) * b[j] for j in range(k)) / (k + 1))
    return jnp.asarray(np.array([float(v) for v in b]), dtype=dtypes.default_float())


# --- entropies ----------------------------------------------------------------------------

@custom_jvp
def _xlogx(x: Any) -> Any:
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x: Any) -> Any:
    """-x log x for x > 0, 0 at 0, -inf below."""
    (x,) = _real_only("entr", x)
    return jnp.where(x < 0, -np.inf, -_xlogx(x))


def rel_entr(p: Any, q: Any) -> Any:
    """p log(p / q) for p, q > 0; 0 at p = 0, q >= 0; inf otherwise."""
    p, q = _real_only("rel_entr", p, q)
    both = (p > 0) & (q > 0)
    zero_p = (p == 0) & (q >= 0)
    safe_p, safe_q = jnp.where(both, p, 1), jnp.where(both, q, 1)
    val = _xlogx(safe_p) - xlogy(safe_p, safe_q)
    return jnp.where(both, val, jnp.where(zero_p, 0., np.inf))


def kl_div(p: Any, q: Any) -> Any:
    """p log(p / q) - p + q (inf where undefined)."""
    p, q = _real_only("kl_div", p, q)
    return rel_entr(p, q) - p + q


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform (x**lmbda - 1) / lmbda, log(x) at lmbda = 0."""
    x, lmbda = promote_args_inexact("boxcox", x, lmbda)
    return _boxcox(lax.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
    return _boxcox(lax.log1p(x), lmbda)


def _boxcox(log_x: Any, lmbda: Any) -> Any:
    # expm1(lmbda log x) / lmbda keeps digits where lmbda log x is small
    zero = lmbda == 0
    safe = jnp.where(zero, 1, lmbda)
    return jnp.where(zero, log_x, lax.expm1(safe * log_x) / safe)


# --- Bessel functions ---------------------------------------------------------------------

def i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    (x,) = promote_args_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x: Any) -> Any:
    """The modified Bessel function of order 0."""
    (x,) = promote_args_inexact("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    (x,) = promote_args_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x: Any) -> Any:
    """The modified Bessel function of order 1."""
    (x,) = promote_args_inexact("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# --- exponential integrals ----------------------------------------------------------------
# Fixed-length series and continued fractions (lax.fori_loop, so the program stays small);
# each derivative is a closed form (custom_jvp), so no loop is ever differentiated. Measured
# against SciPy in float64 (tests/test_scipy_special.py): exp1 and expn within ~1e-13
# relative (the alternating series near x = 2 cancels a little), expi within ~1e-14.

_EULER_GAMMA = 0.5772156649015329
_SERIES_SPLIT = 2.0         # series below, continued fraction above (converges in 60 steps)
_CF_STEPS = 60
_SERIES_TERMS = 40
_EI_ASYMPTOTIC = 40.0       # above, Ei's asymptotic series (its smallest term is < 1 ulp)


def _expn_cf(n: Any, x: Any) -> Any:
    """E_n(x) = e**-x / (x + n - 1*n / (x + n + 2 - 2(n+1) / (x + n + 4 - ...))), modified
    Lentz, for x > _SERIES_SPLIT."""
    tiny = dtypes.finfo_of(get_aval(x).dtype).tiny

    def step(i, carry):
        b, c, d, h = carry
        a = -i * (n - 1 + i)
        b = b + 2
        d = 1 / (a * d + b)
        c = b + a / c
        return b, c, d, h * (c * d)

    b = x + n
    init = (b, jnp.full_like(x, 1 / tiny), 1 / b, 1 / b)
    h = lax.fori_loop(1, _CF_STEPS + 1, lambda i, c: step(i.astype(x.dtype), c), init)[3]
    return h * lax.exp(-x)


def _expn_series(n: Any, x: Any) -> Any:
    """E_n(x) = (-x)**(n-1)/(n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)**k / ((k-n+1) k!),
    for 0 < x <= _SERIES_SPLIT."""
    log_x = lax.log(x)
    ans = jnp.where(n == 1, -log_x - _EULER_GAMMA, 1 / jnp.where(n == 1, 1., n - 1))
    psi = lax.digamma(jnp.maximum(n, 1.))

    def step(i, carry):
        fact, ans = carry
        fact = fact * (-x / i)
        pole = i == n - 1
        term = jnp.where(pole, fact * (psi - log_x), -fact / jnp.where(pole, 1., i - n + 1))
        return fact, ans + term

    init = (jnp.ones_like(x), ans)
    return lax.fori_loop(1, _SERIES_TERMS + 1, lambda i, c: step(i.astype(x.dtype), c),
                         init)[1]


def _expn_positive(n: Any, x: Any) -> Any:
    small = x <= _SERIES_SPLIT
    return jnp.where(small, _expn_series(n, jnp.where(small, x, 1.)),
                     _expn_cf(n, jnp.where(small, _SERIES_SPLIT + 1, x)))


@custom_jvp
def _expn(n: Any, x: Any) -> Any:
    ok = (n >= 0) & (n == jnp.floor(n)) & (x >= 0)
    safe_x = jnp.where((x > 0) & jnp.isfinite(x), x, 1.)
    safe_n = jnp.where(ok, n, 1.)
    out = jnp.where(safe_n == 0, lax.exp(-safe_x) / safe_x, _expn_positive(safe_n, safe_x))
    # E_n(0) = 1 / (n - 1) for n > 1 and inf below; E_n(inf) = 0
    at_zero = jnp.where(safe_n > 1, 1 / jnp.where(safe_n > 1, safe_n - 1, 1.), np.inf)
    out = jnp.where(x == 0, at_zero, jnp.where(x == np.inf, 0., out))
    return jnp.where(ok, out, np.nan)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    # dE_n/dx = -E_{n-1}(x); n is an integer, with no derivative
    (n, x), (_, x_dot) = primals, tangents
    return _expn(n, x), -_expn(n - 1, x) * x_dot


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral E_n(x) = int_1^inf e**(-x t) / t**n dt for
    integer n >= 0 and x >= 0 (NaN elsewhere; E_n(0) = 1/(n - 1) for n > 1, inf below)."""
    n, x = jnp.broadcast_arrays(*_real_only("expn", n, x))
    return _expn(n, x)


@custom_jvp
def exp1(x: Any) -> Any:
    """E_1(x) = int_x^inf e**-t / t dt for x >= 0 (inf at 0; NaN for x < 0, as JAX)."""
    (x,) = _real_only("exp1", x)
    return jnp.where(x < 0, np.nan, _expn(jnp.ones_like(x), x))


@exp1.defjvp
def _exp1_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return exp1(x), -lax.exp(-x) / x * x_dot


def _ei_series(x: Any) -> Any:
    """Ei(x) = gamma + log x + sum_k x**k / (k k!) for 0 < x <= _EI_ASYMPTOTIC (positive
    terms: no cancellation)."""
    def step(k, carry):
        term, total = carry
        term = term * x / k
        return term, total + term / k

    terms = 3 * int(_EI_ASYMPTOTIC)      # the terms peak at k ~ x and fall below an ulp by 3x
    total = lax.fori_loop(1, terms + 1, lambda k, c: step(k.astype(x.dtype), c),
                          (jnp.ones_like(x), jnp.zeros_like(x)))[1]
    return _EULER_GAMMA + lax.log(x) + total


def _ei_asymptotic(x: Any) -> Any:
    """Ei(x) ~ e**x / x sum_k k! / x**k, for x > _EI_ASYMPTOTIC."""
    term, total = jnp.ones_like(x), jnp.ones_like(x)
    for k in range(1, int(_EI_ASYMPTOTIC)):
        term = term * k / x
        total = total + term
    # e**x / x * total, with e**x split so that x near the overflow point stays finite
    return lax.exp(x / 2) * (lax.exp(x / 2) / x * total)


@custom_jvp
def expi(x: Any) -> Any:
    """The exponential integral Ei(x) = -E_1(-x) for x < 0; NaN at 0 and at +-inf, as JAX."""
    (x,) = _real_only("expi", x)
    positive = x > 0
    big = x > _EI_ASYMPTOTIC
    series = _ei_series(jnp.where(positive & ~big, x, 1.))
    asym = _ei_asymptotic(jnp.where(big, x, 2 * _EI_ASYMPTOTIC))
    negative = -_expn(jnp.ones_like(x), jnp.where(positive, 1., -x))
    out = jnp.where(big, asym, jnp.where(positive, series, negative))
    return jnp.where((x == 0) | jnp.isinf(x), np.nan, out)


@expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return expi(x), lax.exp(x) / x * x_dot


# --- Spence's function ----------------------------------------------------------------------

# terms of sum u**k / k**2 for |u| <= 1/2: the last is below 2**-56 (float64), 2**-26 (float32
# and narrower)
_DILOG_TERMS_64, _DILOG_TERMS_32 = 50, 18


def _dilog_small(u: Any) -> Any:
    """Li2(u) for |u| <= 1/2: u times the series' polynomial, by Horner's rule (one equation;
    its terms at least halve with each power, so it is well conditioned for either sign)."""
    wide = np.dtype(get_aval(u).dtype).itemsize == 8
    terms = _DILOG_TERMS_64 if wide else _DILOG_TERMS_32
    return u * lax.polynomial(u, [1. / (k * k) for k in range(1, terms + 1)], unroll=terms)


def _dilog_minus(w: Any) -> Any:
    """Li2(w) for -1 <= w <= 0: the series, or Landen's identity to bring w/(w-1) into
    [1/3, 1/2] when w < -1/2."""
    near = w >= -0.5
    landen = -_dilog_small(jnp.where(near, -0.5, w / (w - 1))) - \
        0.5 * lax.square(lax.log1p(-jnp.where(near, -0.5, w)))
    return jnp.where(near, _dilog_small(jnp.where(near, w, 0.)), landen)


@custom_jvp
def spence(x: Any) -> Any:
    """Spence's function int_1^x log(t) / (t - 1) dt = Li2(1 - x) for x >= 0 (NaN below and at
    inf). Li2(y), y = 1 - x (exact near y = 0), by its series for |y| <= 1/2, the reflection
    Li2(y) = pi**2/6 - log(y) log(1 - y) - Li2(1 - y) above, and the inversion
    Li2(y) = -pi**2/6 - log(-y)**2 / 2 - Li2(1/y) below -1."""
    (x,) = _real_only("spence", x)
    y = 1 - x
    pi2_6 = np.pi ** 2 / 6
    small = jnp.abs(y) <= 0.5
    upper = y > 0.5
    lower = y < -1
    s = _dilog_small(jnp.where(small, y, 0.))
    x_up = jnp.where(upper & (x > 0), x, 0.5)            # 1 - y, exactly x
    reflect = pi2_6 - lax.log1p(-x_up) * lax.log(x_up) - _dilog_small(x_up)
    reflect = jnp.where(x == 0, pi2_6, reflect)
    y_mid = jnp.where(~small & ~upper & ~lower, y, -0.75)
    mid = _dilog_minus(y_mid)
    y_low = jnp.where(lower & jnp.isfinite(y), y, -2.)
    invert = -pi2_6 - 0.5 * lax.square(lax.log(-y_low)) - _dilog_minus(1 / y_low)
    out = jnp.where(small, s, jnp.where(upper, reflect, jnp.where(lower, invert, mid)))
    return jnp.where((x < 0) | (x == np.inf), np.nan, out)


@spence.defjvp
def _spence_jvp(primals, tangents):
    # d/dx Li2(1 - x) = log(x) / (1 - x), which tends to -1 at x = 1
    (x,), (x_dot,) = primals, tangents
    one = x == 1
    safe = jnp.where(one, 2., x)
    return spence(x), jnp.where(one, -1., lax.log(safe) / (1 - safe)) * x_dot


# --- the scaled complementary error function ------------------------------------------------

# float64: Laplace's continued fraction above this point, with enough terms: truncated at x = 2
# (its worst), 50 terms are 1.1e-15 off
_ERFCX_SPLIT = 2.0
_ERFCX_TERMS_64 = 50
# float32 (and the half types, computed in it): erfcx itself on [0, 1) and [1, 2) (polynomials
# in x - 0.5 and x - 1.5), x erfcx(x) on [2, 8) and [8, inf) (in 1/x - 0.3125 and 1/x**2), for
# x >= 0; fitted by tools/fit_polynomials.py, lowest degree first
_ERFCX32_0_1 = (
    0.6156903459517317, -0.5126888127087925, 0.35934556688252206, -0.2220110222027128,
    0.12418230509758528, -0.06396608274226286, 0.030592706446781668, -0.013882719218351231,
    0.006564617291104116, -0.002574276517436896)
_ERFCX32_1_2 = (
    0.32158541649862454, -0.16362291760049716, 0.07615103086737267, -0.03293091037610457,
    0.013377630717447549, -0.005145932753096962, 0.001882883728797036, -0.0006615449883045916,
    0.00023807755056640952, -7.607848462714154e-05)
_ERFCX32_2_8 = (
    0.5399299096908848, -0.13789373254062684, -0.12786040894212308, 0.20376071264556322,
    -0.09070170811607406, -0.13374007137475433, 0.3201908923136624, -0.28034496029335904,
    -0.18655468850677104, 0.7487398414859522)
_ERFCX32_8_INF = (
    0.5641895835472764, -0.28209478954667266, 0.4231405058831146, -1.0573880766342627,
    3.6430387171687424, -13.06551592805658)


@custom_jvp
def erfcx(x: Any) -> Any:
    """exp(x**2) erfc(x) without overflow or underflow. float64: exp(x**2) erfc(x) below 2 (x**2
    taken as hi + lo so its rounding does not reach the exponential), Laplace's continued
    fraction 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))) above. float32:
    four polynomials for |x| (`_erfcx32`), and 2 exp(x**2) - erfcx(-x) for x < 0: within 1.6
    ulps for x >= 0 and 2.5 below (exp's error) over every third float32 (the continued fraction
    of 18 terms before it: 4.7 ulps, 0 past x = 1.9e38, 18 divisions; 2^20 float32 on an AVX2
    machine 2.7 -> 1.2 ms, JAX 0.12 1.3-2.9 ms)."""
    (x,) = _real_only("erfcx", x)
    dtype = np.dtype(get_aval(x).dtype)
    if dtype == np.float64:
        out = _erfcx64(x)
    else:
        out = _erfcx32(x.astype(np.float32)).astype(dtype)
    return jnp.where(x == np.inf, 0., jnp.where(x == -np.inf, np.inf, out))


def _erfcx64(x: Any) -> Any:
    big = x >= _ERFCX_SPLIT
    xb = jnp.where(big & jnp.isfinite(x), x, _ERFCX_SPLIT)
    t = xb
    for k in range(_ERFCX_TERMS_64, 0, -1):  # from the tail in
        t = xb + (k / 2) / t
    cf = 1 / (math.sqrt(np.pi) * t)
    xs = jnp.where(big, 0., x)
    x2 = xs * xs
    lo = lax.fma(xs, xs, -x2)
    direct = lax.exp(x2) * (1 + lo) * lax.erfc(xs)
    return jnp.where(big, cf, direct)


def _erfcx32(x: Any) -> Any:
    """float32 erfcx (infinities aside): a polynomial of |x|'s piece, its constant term split
    into hi + lo, over 1 below 2 and over |x| from 2 up (one division for every piece), then
    for x < 0 the reflection 2 exp(x**2) - erfcx(|x|) (no cancellation: erfcx(|x|) <= 1 <
    2 exp(x**2)), with x**2 as hi + lo and exp(hi) (1 + lo) as one fma."""
    a = lax.abs(x)
    u = 1 / jnp.maximum(a, 2.)
    num = jnp.where(a < 1, _split_horner(a - 0.5, _ERFCX32_0_1),
                    jnp.where(a < 2, _split_horner(a - 1.5, _ERFCX32_1_2),
                              jnp.where(a < 8, _split_horner(u - 0.3125, _ERFCX32_2_8),
                                        _split_horner(u * u, _ERFCX32_8_INF))))
    y = num / jnp.where(a < 2, 1., a)   # (num * u: a second rounding, and no faster)
    hi = x * x
    lo = lax.fma(x, x, -hi)
    twice_exp = 2 * lax.exp(hi)
    # (past x = -9.38, exp(x**2) overflows: inf, where fma(inf, 0, inf) would be NaN)
    reflected = jnp.where(twice_exp == np.inf, np.inf, lax.fma(twice_exp, lo, twice_exp) - y)
    return jnp.where(x < 0, reflected, y)


def _split_horner(s: Any, coeffs: tuple[float, ...]) -> Any:
    """coeffs[0] + s (coeffs[1] + s (...)) in s's float type, by fma, with coeffs[0] rounded to
    hi + lo and lo added before hi: its own rounding (half an ulp) does not reach the result."""
    dtype = get_aval(s).dtype
    hi = dtype.type(coeffs[0])
    lo = float(coeffs[0] - float(hi))
    acc = jnp.full_like(s, coeffs[-1])
    for c in coeffs[-2:0:-1]:
        acc = lax.fma(acc, s, jnp.full_like(s, c))
    return hi + lax.fma(s, acc, jnp.full_like(s, lo))


def _paired_horner(s: Any, coeffs: tuple[float, ...]) -> Any:
    """_split_horner's polynomial with half its chain: the pairs c[2k] + c[2k+1] s (each one
    fma, side by side) by Horner's rule in s**2, coeffs[0] as hi + lo added last. Kernels are
    cut at a chain of fusion.MAX_KERNEL_DEPTH equations (ndtri's float32 polynomials in one
    kernel with its log and selects need this); the rounding is Horner's but for the pairs."""
    dtype = get_aval(s).dtype
    hi = dtype.type(coeffs[0])
    lo = float(coeffs[0] - float(hi))
    pairs = [lax.fma(jnp.full_like(s, coeffs[k + 1]), s, jnp.full_like(s, coeffs[k]))
             if k + 1 < len(coeffs) else jnp.full_like(s, coeffs[k])
             for k in range(2, len(coeffs), 2)]
    s2 = s * s
    acc = pairs[-1]
    for pair in pairs[-2::-1]:
        acc = lax.fma(acc, s2, pair)
    return hi + lax.fma(s2, acc, lax.fma(s, jnp.full_like(s, coeffs[1]), jnp.full_like(s, lo)))


@erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y = erfcx(x)
    return y, (2 * x * y - 2 / math.sqrt(np.pi)) * x_dot


# --- JAX 0.12's additions: ndtri_exp, gammaincinv / gammainccinv, iv, jn, kn, yn ---------

_LN2_HI = {np.dtype(np.float64): math.log(2.),
           np.dtype(np.float32): float(np.float32(math.log(2.)))}
_LOG1M_EXPM2 = math.log1p(-math.exp(-2.))      # y above this: p = exp(y) > 1 - exp(-2)


def ndtri_exp(y: Any) -> Any:
    """ndtri(exp(y)) for y <= 0 (JAX 0.12), with no underflow for y << 0 and no cancellation
    near y = -log 2 or y = 0: -inf at -inf, inf at 0, NaN above 0. The tails use ndtri's
    tail rational function of z = sqrt(-2 log t) for the tail probability t: log t = y itself
    below y = -2 (so y down to -max float works), log(-expm1(y)) above log(1 - exp(-2));
    between, ndtri's central rational function of w = exp(y) - 1/2 = expm1(y + log 2) / 2,
    with log 2 as hi + lo so w keeps its relative accuracy through 0. Float64 is within a few
    ulps of SciPy's; float32 within a few float32 ulps; half types compute in float32."""
    (y,) = _real_only("ndtri_exp", y)
    dtype = np.dtype(get_aval(y).dtype)
    if dtype.itemsize < 4:
        return _ndtri_exp(y.astype(np.float32)).astype(dtype)
    return _ndtri_exp(y)


def _ndtri_exp_value(y: Any) -> Any:
    dtype = np.dtype(get_aval(y).dtype)
    finfo = dtypes.finfo_of(dtype)
    ln2_hi = _LN2_HI[dtype]
    ln2_lo = math.log(2.) - ln2_hi if dtype == np.float32 else 2.3190468138462996e-17
    lower = y < -2.
    upper = y > _LOG1M_EXPM2
    central = ~lower & ~upper
    # the centre: w = exp(y) - 1/2, accurate through y = -log 2
    yc = jnp.where(central, y, -ln2_hi)
    w = 0.5 * lax.expm1((yc + ln2_hi) + ln2_lo)
    # the tails: the log of the tail probability t <= exp(-2), finite on every lane
    t_up = -lax.expm1(jnp.where(upper & (y < 0), y, -1.))
    log_up = _log_of_tiny(jnp.maximum(t_up, finfo.tiny * finfo.eps), finfo)
    log_t = jnp.where(lower & jnp.isfinite(y), y, jnp.where(upper, log_up, -2.))
    z = math.sqrt(2.) * lax.sqrt(-log_t)          # sqrt(-2 log t) without overflow
    out = _ndtri_core(w, z, central, upper)
    out = jnp.where(y == 0, np.inf, jnp.where(y == -np.inf, -np.inf, out))
    return jnp.where((y > 0) | jnp.isnan(y), np.nan, out).astype(dtype)


@custom_jvp
def _ndtri_exp(y: Any) -> Any:
    return _ndtri_exp_value(y)


@_ndtri_exp.defjvp
def _ndtri_exp_jvp(primals, tangents):
    # dx/dy = exp(y) / pdf(x) = sqrt(2 pi) exp(y + x**2 / 2); with exp(y) = ndtr(x) =
    # erfcx(-x / sqrt 2) exp(-x**2 / 2) / 2 (x <= 0) and 1 - exp(y) = erfcx(x / sqrt 2)
    # exp(-x**2 / 2) / 2 (x > 0) the exponentials cancel exactly: no overflow, no cancellation
    (y,), (y_dot,) = primals, tangents
    x = _ndtri_exp(y)
    pos = x > 0
    y_safe = jnp.where(pos & (y < 0), y, -1.)
    g = math.sqrt(0.5 * math.pi) * erfcx(lax.abs(x) * math.sqrt(0.5)) \
        / jnp.where(pos, lax.expm1(-y_safe), 1.)
    g = jnp.where(y == 0, np.inf, jnp.where(y == -np.inf, 0., g))
    return x, g * y_dot


# --- Bessel functions of integer order (real arguments) -------------------------------------
# Cephes' approximations (as SciPy's j0, j1, y0, y1, k0, k1): rational functions of x**2 on
# [0, 5] (J0 and J1 with their first two zeros factored out, so they keep relative accuracy
# there), and beyond the Hankel form sqrt(2 / (pi x)) (P cos(x - phase) - (5 / x) Q sin(...))
# with P, Q rational in 25 / x**2; K0 and K1 as Chebyshev series. Higher orders recur from
# these: forward for Y and K (stable), backward (Miller's method) for J below x < n and for I.

_J0_RP = (-4.79443220978201773821e9, 1.95617491946556577543e12, -2.49248344360967716204e14,
          9.70862251047306323952e15)
_J0_RQ = (4.99563147152651017219e2, 1.73785401676374683123e5, 4.84409658339962045305e7,
          1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
          3.18121955943204943306e16, 1.71086294081043136091e18)
_J0_DR1, _J0_DR2 = 5.78318596294678452118e0, 3.04712623436620863991e1
_J0_PP = (7.96936729297347051624e-4, 8.28352392107440799803e-2, 1.23953371646414299388e0,
          5.44725003058768775090e0, 8.74716500199817011941e0, 5.30324038235394892183e0,
          9.99999999999999997821e-1)
_J0_PQ = (9.24408810558863637013e-4, 8.56288474354474431428e-2, 1.25352743901058953537e0,
          5.47097740330417105182e0, 8.76190883237069594232e0, 5.30605288235394617618e0,
          1.00000000000000000218e0)
_J0_QP = (-1.13663838898469149931e-2, -1.28252718670509318512e0, -1.95539544257735972385e1,
          -9.32060152123768231369e1, -1.77681167980488050595e2, -1.47077505154951170175e2,
          -5.14105326766599330220e1, -6.05014350600728481186e0)
_J0_QQ = (6.43178256118178023184e1, 8.56430025976980587198e2, 3.88240183605401609683e3,
          7.24046774195652478189e3, 5.93072701187316984827e3, 2.06209331660327847417e3,
          2.42005740240291393179e2)
_Y0_YP = (1.55924367855235737965e4, -1.46639295903971606143e7, 5.43526477051876500413e9,
          -9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15,
          4.42733268572569800351e16, -1.84950800436986690637e16)
_Y0_YQ = (1.04128353664259848412e3, 6.26107330137134956842e5, 2.68919633393814121987e8,
          8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15,
          2.50596256172653059228e17)
_J1_RP = (-8.99971225705559398224e8, 4.52228297998194034323e11, -7.27494245221818276015e13,
          3.68295732863852883286e15)
_J1_RQ = (6.20836478118054335476e2, 2.56987256757748830383e5, 8.35146791431949253037e7,
          2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
          8.95222336184627338078e16, 5.32278620332680085395e18)
_J1_Z1, _J1_Z2 = 1.46819706421238932572e1, 4.92184563216946036703e1
_J1_PP = (7.62125616208173112003e-4, 7.31397056940917570436e-2, 1.12719608129684925192e0,
          5.11207951146807644818e0, 8.42404590141772420927e0, 5.21451598682361504063e0,
          1.00000000000000000254e0)
_J1_PQ = (5.71323128072548699714e-4, 6.88455908754495404082e-2, 1.10514232634061696926e0,
          5.07386386128601488557e0, 8.39985554327604159757e0, 5.20982848682361821619e0,
          9.99999999999999997461e-1)
_J1_QP = (5.10862594750176621635e-2, 4.98213872951233449420e0, 7.58238284132545283818e1,
          3.66779609360150777800e2, 7.10856304998926107277e2, 5.97489612400613639965e2,
          2.11688757100572135698e2, 2.52070205858023719784e1)
_J1_QQ = (7.42373277035675149943e1, 1.05644886038262816351e3, 4.98641058337653607651e3,
          9.56231892404756170795e3, 7.99704160447350683650e3, 2.82619278517639096600e3,
          3.36093607810698293419e2)
_Y1_YP = (1.26320474790178026440e9, -6.47355876379160291031e11, 1.14509511541823727583e14,
          -8.12770255501325109621e15, 2.02439475713594898196e17, -7.78877196265950026825e17)
_Y1_YQ = (5.94301592346128195359e2, 2.35564092943068577943e5, 7.34811944459721705660e7,
          1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14,
          6.87141087355300489866e16, 3.97270608116560655612e18)
_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
         1.90451637722020886025e-9, 2.53479107902614945675e-7, 2.28621210311945178607e-5,
         1.26461541144692592338e-3, 3.59799365153615016266e-2, 3.44289899924628486886e-1,
         -5.35327393233902768720e-1)
_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-9, 8.57403401741422608519e-9, -4.66048989768794782956e-8,
         2.76681363944501510342e-7, -1.83175552271911948767e-6, 1.39498137188764993662e-5,
         -1.28495495816278026384e-4, 1.56988388573005337491e-3, -3.14481013119645005427e-2,
         2.44030308206595545468e0)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-8, -2.43340614156596823496e-6,
         -1.73028895751305206302e-4, -6.97572385963986435018e-3, -1.22611180822657148235e-1,
         -3.53155960776544875667e-1, 1.52530022733894777053e0)
_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-9, -1.03457624656780970260e-8, 5.74108412545004946722e-8,
         -3.50196060308781257119e-7, 2.40648494783721712015e-6, -1.93619797416608296024e-5,
         1.95215518471351631108e-4, -2.85781685962277938680e-3, 1.03923736576817238437e-1,
         2.72062619048444266945e0)
_SQ2OPI = math.sqrt(2. / math.pi)


def _chebyshev(x: Any, coeffs: tuple[float, ...]) -> Any:
    """Cephes' chbevl: the Chebyshev series sum' coeffs[k] T_k(x / 2), highest order first."""
    b0, b1, b2 = jnp.full_like(x, coeffs[0]), jnp.zeros_like(x), jnp.zeros_like(x)
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _hankel(x: Any, pp, pq, qp, qq, phase: float) -> tuple[Any, Any, Any]:
    """sqrt(2 / (pi x)) * (P, (5 / x) Q) and x - phase, for x > 5 (Cephes' asymptotic form)."""
    w = 5. / x
    q = lax.square(w)
    p = _horner(q, pp) / _horner(q, pq)
    qv = w * (_horner(q, qp) / _horner(q, qq, True))
    scale = _SQ2OPI / lax.sqrt(x)
    return scale * p, scale * qv, x - phase


def _bessel_01(x: Any) -> tuple[Any, Any, Any, Any]:
    """(J0, J1, Y0, Y1) at x >= 0 (Y at x > 0; x finite)."""
    small = x <= 5.
    xs = jnp.where(small, x, 1.)
    z = lax.square(xs)
    j0_s = (z - _J0_DR1) * (z - _J0_DR2) * _horner(z, _J0_RP) / _horner(z, _J0_RQ, True)
    j1_s = xs * (z - _J1_Z1) * (z - _J1_Z2) * _horner(z, _J1_RP) / _horner(z, _J1_RQ, True)
    xs_pos = jnp.where(xs > 0, xs, 1.)
    log_x = lax.log(xs_pos)
    y0_s = _horner(z, _Y0_YP) / _horner(z, _Y0_YQ, True) + (2. / math.pi) * log_x * j0_s
    y1_s = xs * (_horner(z, _Y1_YP) / _horner(z, _Y1_YQ, True)) \
        + (2. / math.pi) * (j1_s * log_x - 1. / xs_pos)
    xl = jnp.where(small, 6., x)
    p0, q0, xn0 = _hankel(xl, _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, math.pi / 4)
    p1, q1, xn1 = _hankel(xl, _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, 3 * math.pi / 4)
    s0, c0, s1, c1 = lax.sin(xn0), lax.cos(xn0), lax.sin(xn1), lax.cos(xn1)
    return (jnp.where(small, j0_s, p0 * c0 - q0 * s0), jnp.where(small, j1_s, p1 * c1 - q1 * s1),
            jnp.where(small, y0_s, p0 * s0 + q0 * c0), jnp.where(small, y1_s, p1 * s1 + q1 * c1))


def _k01_scaled(x: Any) -> tuple[Any, Any]:
    """(e**x K0(x), e**x K1(x)) for x > 0 (finite)."""
    small = x <= 2.
    xs = jnp.where(small, x, 1.)
    e = lax.exp(xs)
    log_half = lax.log(0.5 * xs)
    y = lax.square(xs) - 2.
    k0_s = _chebyshev(y, _K0_A) - log_half * (e * lax.bessel_i0e(xs))
    k1_s = log_half * (e * lax.bessel_i1e(xs)) + _chebyshev(y, _K1_A) / xs
    xl = jnp.where(small, 4., x)
    t = 8. / xl - 2.
    root = lax.sqrt(xl)
    return (jnp.where(small, k0_s * e, _chebyshev(t, _K0_B) / root),
            jnp.where(small, k1_s * e, _chebyshev(t, _K1_B) / root))


def _forward(n: int, x: Any, f0: Any, f1: Any, sign: float) -> Any:
    """f_n from f_0, f_1 by f_{k+1} = (2k / x) f_k + sign f_{k-1} (n >= 2)."""
    two_over_x = 2. / x

    def step(k, carry):
        prev, cur = carry
        return cur, (k.astype(get_aval(x).dtype) * two_over_x) * cur + sign * prev

    return lax.fori_loop(1, n, step, (f0, f1))[1]


def _miller(n: int, start: int, x: Any, sign: float, even_sum: bool) -> tuple[Any, Any]:
    """(f_n, norm) from the backward recurrence f_{k-1} = (2k / x) f_k + sign f_{k+1} run from
    f_start = tiny, f_{start+1} = 0 down to f_0: norm is f_0 + 2 sum f_2k where `even_sum`
    (J: that sum is 1), else f_0. Whenever a value passes 2**+-(big) all of them are rescaled
    (the ratio f_n / norm is all that matters), so no order or argument overflows."""
    dtype = get_aval(x).dtype
    big = 2. ** (400 if dtype == np.float64 else 50)
    two_over_x = 2. / x

    def step(i, carry):
        nxt, cur, fn, norm = carry              # f_{k+1}, f_k
        k = (start - i).astype(dtype)           # k = start .. 1
        prev = (k * two_over_x) * cur + sign * nxt
        fn = jnp.where(k - 1 == n, prev, fn)
        if even_sum:
            norm = norm + jnp.where(lax.rem(k - 1, 2.) == 0,
                                    jnp.where(k - 1 == 0, prev, 2. * prev), 0.)
        rescale = lax.abs(prev) > big
        s = jnp.where(rescale, 1. / big, 1.)
        return cur * s, prev * s, fn * s, norm * s

    zero = jnp.zeros_like(x)
    init = (zero, jnp.full_like(x, 1. / big), zero if n != start else jnp.full_like(x, 1. / big),
            zero)
    _, f0, fn, norm = lax.fori_loop(0, start, step, init)
    return fn, (norm if even_sum else f0)


def _bessel_order(name: str, n: Any) -> int:
    return operator.index(concrete_value(
        n, f"The '{name[0] if name != 'iv' else 'v'}' argument of jax.scipy.special.{name} "
        "must be a static integer."))


def _bessel_arg(name: str, z: Any) -> Any:
    (z,) = promote_args_inexact(name, z)
    if dtypes.issubdtype(get_aval(z).dtype, np.complexfloating):
        raise NotImplementedError(
            f"{name} of complex arguments is not supported in tracejit yet (JAX 0.12 evaluates "
            "it on the complex plane); pass a real array")
    return z


def _in_float32_or_wider(impl, n: int, z: Any) -> Any:
    """impl(n, z), computed in float32 for half types; never weakly typed (as JAX 0.12's)."""
    dtype = np.dtype(get_aval(z).dtype)
    if dtype.itemsize < 4:
        return impl(n, z.astype(np.float32)).astype(dtype)
    return lax.convert_element_type(impl(n, z), dtype)


def jn(n: int, z: Any) -> Any:
    """The Bessel function of the first kind J_n(z) of integer order n (a static int, as in
    JAX 0.12; J_{-n} = (-1)**n J_n) and real z: Cephes' J0, J1; for n >= 2 the forward
    recurrence where |z| > n and Miller's backward recurrence (normalised by
    J0 + 2 sum J_2k = 1) below. Float64 within ~1e-15 absolute of SciPy (relative away from
    the zeros); complex z is not supported yet."""
    n = _bessel_order("jn", n)
    return _in_float32_or_wider(_jn, n, _bessel_arg("jn", z))


def _jn_positive(n: int, x: Any) -> Any:
    """J_n(x) for n >= 0 and x >= 0 finite."""
    j0, j1, _, _ = _bessel_01(x)
    if n == 0:
        return j0
    if n == 1:
        return j1
    dtype = np.dtype(get_aval(x).dtype)
    forward = x > n
    xf = jnp.where(forward, x, float(n + 1))
    up = _forward(n, xf, jnp.where(forward, j0, 0.), jnp.where(forward, j1, 0.), -1.)
    # x <= n: below 1e-3 the series' first two terms; else Miller from well above n
    tiny = x < 1e-3
    xm = jnp.where(forward | tiny, 1., x)
    start = n + 20 + int(8 * n ** (1 / 3)) + (20 if dtype == np.float64 else 0)
    fn, norm = _miller(n, start, xm, -1., True)
    half = 0.5 * x
    series = lax.integer_pow(half, n) * (1. / math.factorial(n) if n <= 170 else 0.) \
        * (1. - lax.square(half) / (n + 1))
    return jnp.where(forward, up, jnp.where(tiny, series, fn / norm))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _jn(n: int, z: Any) -> Any:
    x = lax.abs(z)
    finite = jnp.isfinite(x)
    out = _jn_positive(abs(n), jnp.where(finite, x, 1.))
    odd = abs(n) % 2 == 1
    sign = ((z < 0) if odd else jnp.zeros_like(z, dtype=bool))
    if n < 0 and odd:
        sign = ~sign
    out = jnp.where(sign, -out, out)
    return jnp.where(jnp.isinf(z), 0., jnp.where(jnp.isnan(z), np.nan, out))


def _order_derivative(family, m: int, z: Any, f_m: Any, sign: float) -> Any:
    """d/dz f_m = sign f_{m-1} - (m / z) f_m for m >= 1 (-f_1 times sign' at m = 0): one more
    order rather than the two of (f_{m-1} -+ f_{m+1}) / 2; at z = 0 the NaN of inf * 0 is
    left for the callers to replace."""
    if m == 0:
        return (-1. if sign > 0 else 1.) * family(1, z)
    z_safe = jnp.where(z == 0, 1., z)
    return sign * family(m - 1, z) - (m / z_safe) * f_m


def _reflection(n: int) -> float:
    """(-1)**n for negative odd n (J_{-n} = (-1)**n J_n, and Y's), else 1."""
    return -1. if (n < 0 and n % 2) else 1.


@_jn.defjvp
def _jn_jvp(n, primals, tangents):
    # J_m' = J_{m-1} - (m/z) J_m for m = |n|; J_m'(0) = 1/2 for m = 1 and 0 above
    (z,), (z_dot,) = primals, tangents
    m, s = abs(n), _reflection(n)
    out = _jn(n, z)
    d = _order_derivative(_jn, m, z, s * out, 1.)
    if m >= 1:
        d = jnp.where(z == 0, 0.5 if m == 1 else 0., d)
    return out, s * d * z_dot


def yn(n: int, z: Any) -> Any:
    """The Bessel function of the second kind Y_n(z) of integer order n (a static int;
    Y_{-n} = (-1)**n Y_n) for real z: Cephes' Y0, Y1 and the forward recurrence (stable for
    Y). -inf at 0 (times (-1)**n for negative n), 0 at inf, NaN below 0. Complex z is not
    supported yet."""
    n = _bessel_order("yn", n)
    return _in_float32_or_wider(_yn, n, _bessel_arg("yn", z))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _yn(n: int, z: Any) -> Any:
    m = abs(n)
    ok = (z > 0) & (z < np.inf)
    x = jnp.where(ok, z, 1.)
    _, _, y0, y1 = _bessel_01(x)
    out = y0 if m == 0 else y1 if m == 1 else _forward(m, x, y0, y1, -1.)
    neg = n < 0 and m % 2 == 1
    out = -out if neg else out
    at_zero = np.inf if neg else -np.inf
    out = jnp.where(z == 0, at_zero, jnp.where(z == np.inf, 0., out))
    return jnp.where((z < 0) | jnp.isnan(z), np.nan, out)


@_yn.defjvp
def _yn_jvp(n, primals, tangents):
    # Y_m' = Y_{m-1} - (m/z) Y_m for m = |n|; +inf at z = 0 (times (-1)**n for negative odd n)
    (z,), (z_dot,) = primals, tangents
    m, s = abs(n), _reflection(n)
    out = _yn(n, z)
    d = _order_derivative(_yn, m, z, s * out, 1.)
    return out, s * jnp.where(z == 0, np.inf, d) * z_dot


def iv(v: int, z: Any) -> Any:
    """The modified Bessel function of the first kind I_v(z) of integer order v (a static int;
    I_{-v} = I_v) for real z: I0, I1 from i0e, i1e, and for v >= 2 Miller's backward
    recurrence normalised by I0 (e**|z| applied last, in two halves, so it overflows only
    where I_v does). Complex z is not supported yet."""
    v = abs(_bessel_order("iv", v))
    return _in_float32_or_wider(_iv, v, _bessel_arg("iv", z))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _iv(v: int, z: Any) -> Any:
    v = abs(v)
    dtype = np.dtype(get_aval(z).dtype)
    x = lax.abs(z)
    finite = jnp.isfinite(x)
    xs = jnp.where(finite & (x > 0), x, 1.)
    if v == 0:
        scaled = lax.bessel_i0e(xs)
    elif v == 1:
        scaled = lax.bessel_i1e(xs)
    else:
        # the recurrence from `start` has converged once the product of the ratios
        # I_{k+1} / I_k ~ exp(-k**2 / 2x) from v up is below eps, up to the overflow point
        x_max = 720. if dtype == np.float64 else 100.
        start = v + 20 + int(math.sqrt(80. * x_max))
        fn, f0 = _miller(v, start, xs, 1., False)
        scaled = lax.bessel_i0e(xs) * (fn / f0)
    half = lax.exp(0.5 * xs)
    out = half * (half * scaled)
    out = jnp.where(x == 0, 1. if v == 0 else 0., out)
    out = jnp.where(x == np.inf, np.inf, out)
    if v % 2:
        out = jnp.where(z < 0, -out, out)
    return jnp.where(jnp.isnan(z), np.nan, out)


@_iv.defjvp
def _iv_jvp(v, primals, tangents):
    # I_m' = I_{m-1} - (m/z) I_m (I_0' = I_1); 1/2 at z = 0 for m = 1, 0 above
    (z,), (z_dot,) = primals, tangents
    m = abs(v)
    out = _iv(m, z)
    d = _order_derivative(_iv, m, z, out, 1.) if m else _iv(1, z)
    if m >= 1:
        d = jnp.where(z == 0, 0.5 if m == 1 else 0., d)
    return out, d * z_dot


def kn(n: int, z: Any) -> Any:
    """The modified Bessel function of the second kind K_n(z) of integer order n (a static int;
    K_{-n} = K_n) for real z: Cephes' K0, K1 (Chebyshev series) scaled by e**z, the forward
    recurrence on the scaled values, and e**-z applied last (in two halves, so it underflows
    only where K_n does). inf at 0, 0 at inf, NaN below 0. Complex z is not supported yet."""
    n = abs(_bessel_order("kn", n))
    return _in_float32_or_wider(_kn, n, _bessel_arg("kn", z))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _kn(n: int, z: Any) -> Any:
    n = abs(n)
    ok = (z > 0) & (z < np.inf)
    x = jnp.where(ok, z, 1.)
    k0, k1 = _k01_scaled(x)
    scaled = k0 if n == 0 else k1 if n == 1 else _forward(n, x, k0, k1, 1.)
    half = lax.exp(-0.5 * x)
    out = half * (half * scaled)
    out = jnp.where(z == 0, np.inf, jnp.where(z == np.inf, 0., out))
    return jnp.where((z < 0) | jnp.isnan(z), np.nan, out)


@_kn.defjvp
def _kn_jvp(n, primals, tangents):
    # K_m' = -K_{m-1} - (m/z) K_m (K_0' = -K_1): terms of one sign; -inf at z = 0
    (z,), (z_dot,) = primals, tangents
    m = abs(n)
    out = _kn(m, z)
    d = _order_derivative(_kn, m, z, out, -1.) if m else -_kn(1, z)
    return out, jnp.where(z == 0, -np.inf, d) * z_dot


# --- inverses of the regularized incomplete gamma functions ---------------------------------

_GAMMAINCINV_STEPS = 10


def gammaincinv(a: Any, y: Any) -> Any:
    """The x >= 0 with gammainc(a, x) = y (JAX 0.12): 0 at y = 0, inf at y = 1, NaN for y
    outside [0, 1], a < 0, NaN inputs, or a in {0, inf} with 0 < y < 1. A guess
    (`_gammaincinv_guess`) refined by ten Newton steps on log P(a, x) in one program
    (`_gammaincinv`); differentiable in a and y (implicitly, closed forms). Float64 agrees
    with SciPy to 1e-12 relative for a in [1e-3, 1e3] and y down to 1e-300 (to igamma's
    accuracy beyond, 1e-9 at a = 1e7); float32 to a few ulps for a <= 10, growing to ~2e-5
    at a ~ 1e3 (igamma's float32 rounding; Wilson-Hilferty above a = 5e3) and by 1/a for
    a < 1, where x ~ (p Gamma(a + 1))**(1/a) magnifies any rounding of p. Half types
    compute in float32."""
    return _gammaincinv_dispatch("gammaincinv", a, y, False)


def gammainccinv(a: Any, y: Any) -> Any:
    """The x >= 0 with gammaincc(a, x) = y (JAX 0.12): inf at y = 0, 0 at y = 1, NaN as
    gammaincinv; accurate for tiny y, where gammaincinv(a, 1 - y) is not (the same method
    and accuracy as gammaincinv)."""
    return _gammaincinv_dispatch("gammainccinv", a, y, True)


def _gammaincinv_dispatch(name: str, a: Any, y: Any, complement: bool) -> Any:
    a, y = jnp.broadcast_arrays(*_real_only(name, a, y))
    dtype = np.dtype(get_aval(a).dtype)
    if dtype.itemsize < 4:
        return _gammaincinv(a.astype(np.float32), y.astype(np.float32),
                            complement).astype(dtype)
    return _gammaincinv(a, y, complement)


def _gammaincinv_guess(a: Any, p: Any, q: Any, log_p: Any, log_q: Any) -> Any:
    """A starting point within a few per cent (p = P(a, x) and q = Q(a, x) = 1 - p, both
    exact, with their logs): for a > 1 the Wilson-Hilferty cube a (1 - 1/(9a) + s/(3 sqrt a))**3
    of the normal quantile s of p, and where that is small or not positive the lower tail's
    leading term (p Gamma(a + 1))**(1/a); for a <= 1 the same term below p = t =
    1 - a (0.253 + 0.12 a) and the upper tail's 1 - log(q / (1 - t)) above (the split of
    Numerical Recipes' gammpinv)."""
    lower = p <= 0.5
    s = jnp.where(lower, ndtri(jnp.where(lower, p, 0.5)), -ndtri(jnp.where(lower, 0.5, q)))
    big_a = jnp.maximum(a, 1.)
    c = 1. - 1. / (9. * big_a) + s / (3. * lax.sqrt(big_a))
    wilson = big_a * (c * c * c)
    lower_term = lax.exp((log_p + lax.lgamma(a + 1.)) / a)
    x_big = jnp.where((c > 0) & (wilson > 0.1 * big_a), wilson, lower_term)
    t = 1. - a * (0.253 + 0.12 * a)
    x_small = jnp.where(p < t, lax.exp((log_p - lax.log(t)) / a),
                        1. - (log_q - lax.log1p(-jnp.minimum(t, 0.9))))
    return jnp.where(a <= 1., x_small, x_big)


@functools.partial(custom_jvp, nondiff_argnums=(2,))
def _gammaincinv(a: Any, y: Any, complement: bool) -> Any:
    """From the guess, a fixed number of Newton steps in log x on log P(a, x) = log p where
    p <= 1/2 and log Q(a, x) = log q above (each compares against the exact input: no 1 - y
    rounding; steps clipped to a factor e**4)."""
    if complement:
        q, p = y, 1. - y
    else:
        p, q = y, 1. - y
    lower_edge = (q == 1.) if complement else (p == 0.)
    upper_edge = (q == 0.) if complement else (p == 1.)
    nan = jnp.isnan(a) | jnp.isnan(y) | (a < 0) | (y < 0) | (y > 1)
    edge = ~nan & (lower_edge | upper_edge)
    nan = nan | (~edge & ((a == 0) | (a == np.inf)))
    safe = ~(nan | edge)
    a = jnp.where(safe, a, 1.)
    p = jnp.where(safe, p, 0.5)
    q = jnp.where(safe, q, 0.5)
    log_p = lax.log1p(-q) if complement else lax.log(p)
    log_q = lax.log(q) if complement else lax.log1p(-p)
    x0 = _gammaincinv_guess(a, p, q, log_p, log_q)
    # Newton on t = log x for log P(a, x) = log p (p <= 1/2; log Q = log q above): in the
    # tails log P ~ a t + c and log Q ~ -e**t + (a - 1) t + c, nearly linear in t, so the steps
    # stay sane from a guess that is off by orders of magnitude where p or q is tiny
    t0 = lax.log(jnp.where(x0 > 0, x0, dtypes.finfo_of(get_aval(a).dtype).tiny))
    # float32's igamma loses digits as a grows (a log x - x - lgamma(a) cancels): past
    # a = 5e3 the Wilson-Hilferty guess (relative error ~0.15 / a**1.5) is kept as it is
    if np.dtype(get_aval(a).dtype) == np.float32:
        refine = a < 5e3
        a = jnp.where(refine, a, 1.)
    else:
        refine = None
    lgamma_a = lax.lgamma(a)
    use_lower = p <= 0.5
    log_target = jnp.where(use_lower, log_p, log_q)

    def newton(_, t):
        x = lax.exp(t)
        tail = jnp.where(use_lower, lax.igamma(a, jnp.where(use_lower, x, 0.)),
                         lax.igammac(a, jnp.where(use_lower, 1., x)))
        live = tail > 0
        # where the tail underflowed, its leading term: x**a e**-x / Gamma(a + 1) for P,
        # x**(a-1) e**-x / Gamma(a) for Q (the slope below is then a, or -x)
        approx = jnp.where(use_lower, a * t - lax.lgamma(a + 1.), (a - 1.) * t - lgamma_a) - x
        log_tail = jnp.where(live, lax.log(jnp.where(live, tail, 1.)), approx)
        # d log P / dt = x P'(x) / P = exp(a t - x - lgamma(a) - log P), negated for Q
        slope = lax.exp(a * t - x - lgamma_a - log_tail)
        step = (log_tail - log_target) / jnp.where(use_lower, slope, -slope)
        # far in Q's tail (x > a + 1) log Q is nearly linear in x, not in t: a step in x
        in_x = ~use_lower & (x > a + 1.)
        x_new = x - step * x
        step = jnp.where(in_x & (x_new > 0), t - lax.log(jnp.where(x_new > 0, x_new, 1.)),
                         step)
        step = jnp.clip(jnp.where(jnp.isfinite(step), step, 0.), -4., 4.)
        return t - step

    x = lax.exp(lax.fori_loop(0, _GAMMAINCINV_STEPS, newton, t0))
    if refine is not None:
        x = jnp.where(refine, x, x0)
    x = jnp.where(lower_edge, 0., jnp.where(upper_edge, np.inf, x))
    return jnp.where(nan, np.nan, x)


def _log_gamma_density(a: Any, x: Any) -> Any:
    """log(x**(a-1) e**-x / Gamma(a)) for x > 0. Above a = 10 through Stirling's series, as
    a (log1p(u) - u) - log1p(u) - log(2 pi a) / 2 - (1/(12a) - 1/(360a**3) + 1/(1260a**5))
    with u = x/a - 1: the terms of (a - 1) log x - x - lgamma(a), each ~a log a, cancel to
    O(1) near the mode; these do not (float32 keeps ~sqrt(a) eps instead of a log(a) eps)."""
    big = a > 10.
    ab = jnp.where(big, a, 11.)
    u = x / ab - 1.
    l1 = lax.log1p(u)
    inv = 1. / ab
    inv2 = lax.square(inv)
    remainder = inv * (1. / 12. - inv2 * (1. / 360. - inv2 * (1. / 1260.)))
    stirling = ab * (l1 - u) - l1 - 0.5 * lax.log(ab) - 0.5 * math.log(2. * math.pi) \
        - remainder
    return jnp.where(big, stirling, (a - 1.) * lax.log(x) - x - lax.lgamma(a))


@_gammaincinv.defjvp
def _gammaincinv_jvp(complement, primals, tangents):
    # implicit differentiation of P(a, x) = p: dx/dp = 1 / P_x = Gamma(a) x**(1-a) e**x
    # (negated for Q), dx/da = -P_a / P_x, the gamma sampler's implicit derivative
    # (lax.random_gamma_grad); x = 0 or inf (y at an end) has no a-dependence
    (a, y), (a_dot, y_dot) = primals, tangents
    x = _gammaincinv(a, y, complement)
    inner = (x > 0) & (x < np.inf)
    ai = jnp.where(inner, a, 1.)
    xi = jnp.where(inner, x, 1.)
    dx_dy = lax.exp(-_log_gamma_density(ai, xi))
    dx_dy = jnp.where(x == 0, jnp.where(a > 1, np.inf, jnp.where(a == 1, 1., 0.)), dx_dy)
    dx_dy = jnp.where(x == np.inf, np.inf, dx_dy)
    dx_da = jnp.where(inner, lax.random_gamma_grad(ai, xi), 0.)
    dx = (-dx_dy if complement else dx_dy) * y_dot + dx_da * a_dot
    return x, jnp.where(jnp.isnan(x), np.nan, dx)


# functions built from rational approximations, series and quadrature (imported last: that
# module uses gamma and digamma from this one)
from .special_approx import (  # noqa: E402,F401
    bessel_jn, dawsn, fresnel, hyp1f1, hyp2f1, owens_t, sici, wofz)
from ._harmonics import sph_harm_y  # noqa: E402,F401
