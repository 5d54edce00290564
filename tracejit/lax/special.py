"""Special-function primitives (lax layer): the incomplete gamma and beta functions, the Hurwitz
zeta function and the gamma sampler's implicit derivative. Each is an elementwise primitive;
the native code (backend/llvm/special_math.py) runs the same series and continued fractions as
the NumPy references below, per element, as loops that stop when the element has converged.

The algorithms are JAX's (XLA's math.cc, ported to jax/_src/lax/special.py), so results agree
with JAX (to ~1e-10 in float64, where the two lgammas inside the exponent differ by an ulp),
including its edge values (igamma(0, x) is NaN for x < 1, zeta(s, inf)
is NaN) and its limits (the continued fraction stops after 2000 steps, so huge a ~ x lose
digits there as in JAX). Float64 accuracy, as tests/test_scipy_special.py checks it:

    function                     vs SciPy (float64)               domain tested
    igamma / igammac             rel. 1e-12 (results > 1e-300)    a, x in [1e-3, 1e3] and [0, 5]
    regularized_incomplete_beta  16 ulp per unit of the exponent  a, b in [1e-2, 1e3], x in [0, 1]
                                 a log x + b log1p(-x) - lbeta
    zeta                         rel. 1e-14                       s in [1, 12], q in [0.01, 20]

The exponent a log x - x - lgamma(a) (and betainc's) is rounded before exp, so the relative
error of a tiny result grows with its size (as in every implementation of this method).
float32 computes in float32, as JAX does: a few hundred ulp where that exponent is large.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.rules import defjvp
from ._base import REAL_FLOAT, as_lax_operands, binop, sp
from .elementwise import _quiet, add, exp, lgamma, log, log1p, mul, neg, sub

# a cap the loops never reach for a, x below ~1e9 (JAX's series has none; ours must end)
SERIES_MAX_STEPS = 100_000
CF_MAX_STEPS = 2000                    # the continued fraction's cap, JAX's
VALUE, DERIVATIVE, SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


# --- NumPy references: JAX's loops, elementwise, every element stopping on its own ---------

def _igamma_series(ax, x, a, enabled, mode):
    eps = np.finfo(x.dtype).eps
    r, c, ans = a.copy(), np.ones_like(a), np.ones_like(a)
    dc_da, dans_da = np.zeros_like(a), np.zeros_like(a)
    on = enabled.copy()
    steps = 0
    while on.any() and steps < SERIES_MAX_STEPS:
        steps += 1
        r_n = r + 1
        dc_n = dc_da * (x / r_n) - (c * x) / (r_n * r_n)
        dans_n = dans_da + dc_n
        c_n = c * (x / r_n)
        ans_n = ans + c_n
        more = c_n / ans_n > eps if mode == VALUE else np.abs(dc_n / dans_n) > eps
        r, c, ans = np.where(on, r_n, r), np.where(on, c_n, c), np.where(on, ans_n, ans)
        dc_da, dans_da = np.where(on, dc_n, dc_da), np.where(on, dans_n, dans_da)
        on = on & more
    if mode == VALUE:
        return ans * ax / a
    dlogax_da = np.log(x) - sp.digamma(a + 1).astype(a.dtype)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _igammac_cf(ax, x, a, enabled, mode):
    eps = np.finfo(x.dtype).eps
    one = np.ones_like(x)
    y = one - a
    z = x + y + one
    pkm2, qkm2, pkm1, qkm1 = one, x, x + one, z * x
    ans = pkm1 / qkm1
    dpkm2, dqkm2, dpkm1, dqkm1 = 0 * one, 0 * one, 0 * one, -x
    dans = (dpkm1 - ans * dqkm1) / qkm1
    on = enabled.copy()
    c = 0
    while on.any() and c < CF_MAX_STEPS:
        c += 1
        y_n, z_n = y + 1, z + 2
        yc = y_n * c
        pk = pkm1 * z_n - pkm2 * yc
        qk = qkm1 * z_n - qkm2 * yc
        nz = qk != 0
        r = pk / qk
        t = np.where(nz, np.abs((ans - r) / r), one)
        ans_n = np.where(nz, r, ans)
        dpk = dpkm1 * z_n - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z_n - qkm1 - dqkm2 * yc + qkm2 * c
        dans_n = np.where(nz, (dpk - ans_n * dqk) / qk, dans)
        grad_t = np.where(nz, np.abs(dans_n - dans), one)
        rescale = np.abs(pk) > 1 / eps
        s = np.where(rescale, eps, 1).astype(x.dtype)
        new = (pkm1 * s, qkm1 * s, pk * s, qk * s, dpkm1 * s, dqkm1 * s, dpk * s, dqk * s)
        old = (pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1)
        pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1 = (
            np.where(on, n, o) for n, o in zip(new, old))
        y, z = np.where(on, y_n, y), np.where(on, z_n, z)
        ans, dans = np.where(on, ans_n, ans), np.where(on, dans_n, dans)
        on = on & ((t > eps) if mode == VALUE else (grad_t > eps))
    if mode == VALUE:
        return ans * ax
    dlogax_da = np.log(x) - sp.digamma(a).astype(a.dtype)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans)
    return -(dans + ans * dlogax_da) * x


def _log_ax(a, x):
    """(exp(a log x - x - lgamma a), whether that underflowed)."""
    log_ax = a * np.log(x) - x - sp.gammaln(a).astype(a.dtype)
    return np.exp(log_ax), log_ax < -np.log(np.finfo(a.dtype).max)


def _igamma_impl(a, x):
    nan = np.isnan(a) | np.isnan(x)
    x_inf, x_zero = x == np.inf, x == 0
    domain = (x < 0) | (a < 0) | ((a == 0) & x_zero) | nan
    use_cf = (x >= 1) & (x > a)
    ax, underflow = _log_ax(a, x)
    enabled = ~(x_zero | domain | underflow | x_inf)
    out = np.where(use_cf, 1 - _igammac_cf(ax, x, a, enabled & use_cf, VALUE),
                   _igamma_series(ax, x, a, enabled & ~use_cf, VALUE))
    out = np.where(x_zero, 0, out)
    out = np.where(x_inf, 1, out)
    return np.where(domain, np.nan, out).astype(a.dtype)


def _igammac_impl(a, x):
    nan = np.isnan(a) | np.isnan(x)
    a_zero, x_zero, x_inf = a == 0, x == 0, x == np.inf
    domain = (x < 0) | (a < 0) | (a_zero & x_zero) | nan
    use_series = (x < 1) | (x < a)
    ax, underflow = _log_ax(a, x)
    enabled = ~(domain | underflow | x_inf | a_zero)
    out = np.where(use_series, 1 - _igamma_series(ax, x, a, enabled & use_series, VALUE),
                   _igammac_cf(ax, x, a, enabled & ~use_series, VALUE))
    out = np.where(x_inf | a_zero, 0, out)
    return np.where(domain, np.nan, out).astype(a.dtype)


def _igamma_derivative_impl(mode):
    def impl(a, x):
        nan = np.isnan(a) | np.isnan(x)
        x_zero = x == 0
        domain = (x < 0) | (a <= 0)
        use_cf = (x > 1) & (x > a)
        ax, underflow = _log_ax(a, x)
        enabled = ~(x_zero | domain | underflow | nan)
        out = np.where(use_cf, -_igammac_cf(ax, x, a, enabled & use_cf, mode),
                       _igamma_series(ax, x, a, enabled & ~use_cf, mode))
        out = np.where(x_zero, 0, out)
        return np.where(domain | nan, np.nan, out).astype(a.dtype)
    return impl


def _betainc_impl(a, b, x):
    """The modified Lentz continued fraction of DLMF 8.17.22, on the side of x where it
    converges fast (DLMF 8.17.4's symmetry otherwise)."""
    dtype = a.dtype
    a, b, x = np.broadcast_arrays(a, b, x)
    a_zero = (a == 0) | (b == np.inf)
    b_zero = (b == 0) | (a == np.inf)
    x_zero, x_one = x == 0, x == 1
    nan = np.isnan(a) | np.isnan(b) | np.isnan(x)
    is_zero = (b_zero & ~x_one) | (a_zero & x_zero)
    is_one = (a_zero & ~x_zero) | (b_zero & x_one)
    is_nan = (a < 0) | (b < 0) | (x < 0) | (x > 1) | (a_zero & b_zero) | nan
    fast = x < (a + 1) / (a + b + 2)
    a, b, x = np.where(fast, a, b), np.where(fast, b, a), np.where(fast, x, 1 - x)
    tiny = np.finfo(dtype).eps / 2
    steps = 200 if dtype == np.float32 else 600
    h = np.full_like(x, tiny)                 # the 0th partial denominator is 0
    c, d = h.copy(), np.zeros_like(x)
    on = np.ones(x.shape, bool)
    for n in range(1, steps):
        if not on.any():
            break
        num = _betainc_numerator(n, a, b, x)
        c_n = 1 + num / c
        c_n = np.where(np.abs(c_n) < tiny, tiny, c_n)
        d_n = 1 + num * d
        d_n = 1 / np.where(np.abs(d_n) < tiny, tiny, d_n)
        delta = c_n * d_n
        c, d, h = np.where(on, c_n, c), np.where(on, d_n, d), np.where(on, h * delta, h)
        on = on & (np.abs(delta - 1) >= tiny)
    lbeta_small_a = sp.gammaln(b) - sp.gammaln(a + b)
    lbeta = sp.gammaln(a) + lbeta_small_a
    factor = np.where(a < np.finfo(dtype).tiny * 2, np.exp(np.log1p(-x) * b - lbeta_small_a),
                      np.exp(np.log(x) * a + np.log1p(-x) * b - lbeta) / a)
    out = (h * factor).astype(dtype)
    out = np.where(fast, out, 1 - out)
    out = np.where(is_zero, 0, out)
    out = np.where(is_one, 1, out)
    return np.where(is_nan, np.nan, out).astype(dtype)


def _betainc_numerator(n, a, b, x):
    """The n-th partial numerator of DLMF 8.17.22 (1 for n = 1)."""
    if n == 1:
        return np.ones_like(x)
    m = (n - 1) // 2
    if n % 2:
        return m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
    if m == 0:   # (the general form with m = 0, written so tiny a loses nothing)
        return -(a + b) * x / (a + 1)
    return -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))


def _zeta_impl(s, q):
    """SciPy's Hurwitz zeta with JAX's edges: NaN at q = inf and at s = inf."""
    out = sp.zeta(s.astype(np.float64), q.astype(np.float64))
    return np.where((q == np.inf) | (s == np.inf), np.nan, out).astype(s.dtype)


def _upcast(impl):
    """float16 and bfloat16 compute in float32, as JAX does."""
    def up(*args):
        dtype = args[0].dtype
        if dtype.itemsize >= 4:
            return impl(*args)
        return impl(*(a.astype(np.float32) for a in args)).astype(dtype)
    return _quiet(up)


# --- the primitives -----------------------------------------------------------------------

# (iterative: each element's loop runs until it converges; zeta's sum has a fixed length)
igamma_p = binop("igamma", _upcast(_igamma_impl), REAL_FLOAT, transcendental=True,
                 iterative=True)
igammac_p = binop("igammac", _upcast(_igammac_impl), REAL_FLOAT, transcendental=True,
                  iterative=True)
igamma_grad_a_p = binop("igamma_grad_a", _upcast(_igamma_derivative_impl(DERIVATIVE)),
                        REAL_FLOAT, transcendental=True, iterative=True)
random_gamma_grad_p = binop("random_gamma_grad",
                            _upcast(_igamma_derivative_impl(SAMPLE_DERIVATIVE)), REAL_FLOAT,
                            transcendental=True, iterative=True)
regularized_incomplete_beta_p = binop("regularized_incomplete_beta", _upcast(_betainc_impl),
                                      REAL_FLOAT, transcendental=True, iterative=True)
zeta_p = binop("zeta", _upcast(_zeta_impl), REAL_FLOAT, transcendental=True)


def _igamma_grad_x(g, a, x):
    return mul(g, exp(sub(sub(mul(sub(a, 1), log(x)), x), lgamma(a))))


def _no_derivative(message: str):
    def rule(g, *args):
        raise ValueError(message)
    return rule


def _betainc_grad_x(g, a, b, x):
    lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    log_dens = add(mul(sub(b, 1), log1p(neg(x))), mul(sub(a, 1), log(x)))
    return mul(g, exp(sub(log_dens, lbeta)))


defjvp(igamma_p, lambda g, a, x: mul(g, igamma_grad_a(a, x)), _igamma_grad_x)
defjvp(igammac_p, lambda g, a, x: neg(mul(g, igamma_grad_a(a, x))),
       lambda g, a, x: neg(_igamma_grad_x(g, a, x)))
_NO_GRAD_A = "igamma_grad_a is not differentiable (JAX defines no derivative for it)"
defjvp(igamma_grad_a_p, _no_derivative(_NO_GRAD_A), _no_derivative(_NO_GRAD_A))
_NO_GAMMA_GRAD = "random_gamma_grad is not differentiable in tracejit (second derivatives of " \
                 "random.gamma samples are not supported)"
defjvp(random_gamma_grad_p, _no_derivative(_NO_GAMMA_GRAD), _no_derivative(_NO_GAMMA_GRAD))
_NO_BETAINC_AB = "Betainc gradient with respect to a and b not supported."
defjvp(regularized_incomplete_beta_p, _no_derivative(_NO_BETAINC_AB),
       _no_derivative(_NO_BETAINC_AB), _betainc_grad_x)
defjvp(zeta_p, _no_derivative("zeta's derivative with respect to x is not supported (as in "
                              "JAX)"),
       lambda g, s, q: neg(mul(g, mul(s, zeta(add(s, 1), q)))))


# --- user functions (jax.lax names) -------------------------------------------------------

def igamma(a: Any, x: Any):
    """The regularized lower incomplete gamma function P(a, x)."""
    return igamma_p.bind(*as_lax_operands("igamma", a, x))


def igammac(a: Any, x: Any):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return igammac_p.bind(*as_lax_operands("igammac", a, x))


def igamma_grad_a(a: Any, x: Any):
    """d/da of igamma(a, x)."""
    return igamma_grad_a_p.bind(*as_lax_operands("igamma_grad_a", a, x))


def random_gamma_grad(a: Any, x: Any, *, dtype: Any = None):
    """d x / d a for a Gamma(a, 1) sample x held at fixed CDF value (the implicit
    reparameterisation gradient of random.gamma)."""
    a, x = as_lax_operands("random_gamma_grad", a, x)
    return random_gamma_grad_p.bind(a, x)


def betainc(a: Any, b: Any, x: Any):
    """The regularized incomplete beta function I_x(a, b)."""
    return regularized_incomplete_beta_p.bind(*as_lax_operands("betainc", a, b, x))


def zeta(x: Any, q: Any):
    """The Hurwitz zeta function sum_k (q + k)**-x."""
    return zeta_p.bind(*as_lax_operands("zeta", x, q))


__all__ = ["betainc", "igamma", "igamma_grad_a", "igammac", "random_gamma_grad", "zeta",
           "igamma_p", "igammac_p", "igamma_grad_a_p", "regularized_incomplete_beta_p",
           "zeta_p"]
