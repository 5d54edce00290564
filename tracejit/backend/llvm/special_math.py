"""Special functions that need loops, as scalar LLVM IR for the kernels codegen emits: the
incomplete gamma and beta functions (series and continued fractions that run per element until
that element converges); the Hurwitz zeta function is math.py's ("zeta").

The loops themselves are special_loops.py's routines, called from the code around them here
(the argument reduction, lgamma, exp and log): a loop LLVM vectorises calls their vector
variants. The algorithms and their stopping rules are the NumPy references' in
lax/special.py (JAX's), computed in the operand's type as JAX does (float16 in float32)."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from llvmlite import ir

from ...lax import special as lsp
from . import math as m
from . import special_loops
from .math import _Emitter

__all__ = ["EMITTERS"]


def _fn(e: _Emitter, name: str, *args):
    return m.emit(e.b, name, *[e.v(a) for a in args])


def _loop_flag(e: _Emitter, enabled):
    return e.select(enabled, 1.0, 0.0)


def _igamma_series(e: _Emitter, ax, x, a, enabled, mode: str):
    """P(a, x) = x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a + 1)...(a + n)) (or its a- or
    sample-derivative), for x < 1 or x <= a."""
    if mode == lsp.VALUE:
        ans = special_loops.call(e, "igamma_series", x, a, _loop_flag(e, enabled))
        return e.div(e.mul(ans, ax), a)
    dlogax_da = e.sub(_fn(e, "log", x), _fn(e, "digamma", e.add(a, 1.0)))
    total = special_loops.call(e, "igamma_series_da", x, a, _loop_flag(e, enabled), dlogax_da)
    if mode == lsp.DERIVATIVE:
        return e.div(e.mul(ax, total), a)
    return e.div(e.mul(e.neg(total), x), a)


def _igammac_cf(e: _Emitter, ax, x, a, enabled, mode: str):
    """Q(a, x) by Legendre's continued fraction (Cephes' igamc), for x > 1 and x > a."""
    if mode == lsp.VALUE:
        return e.mul(special_loops.call(e, "igammac_cf", x, a, _loop_flag(e, enabled)), ax)
    dlogax_da = e.sub(_fn(e, "log", x), _fn(e, "digamma", a))
    total = special_loops.call(e, "igammac_cf_da", x, a, _loop_flag(e, enabled), dlogax_da)
    if mode == lsp.DERIVATIVE:
        return e.mul(ax, total)
    return e.mul(e.neg(total), x)


def _log_ax(e: _Emitter, a, x):
    """(exp(a log x - x - lgamma a), whether it underflowed)."""
    log_ax = e.sub(e.sub(e.mul(a, _fn(e, "log", x)), x), _fn(e, "lgamma", a))
    underflow = e.lt(log_ax, -math.log(float(np.finfo(e.np).max)))
    return _fn(e, "exp", log_ax), underflow


def _isnan2(e: _Emitter, a, x):
    return e.or_(e.isnan(a), e.isnan(x))


def _igamma(e: _Emitter, a, x):
    nan = _isnan2(e, a, x)
    x_inf, x_zero = e.eq(x, math.inf), e.eq(x, 0.0)
    domain = e.or_(e.or_(e.lt(x, 0.0), e.lt(a, 0.0)),
                   e.or_(e.and_(e.eq(a, 0.0), x_zero), nan))
    use_cf = e.and_(e.ge(x, 1.0), e.gt(x, a))
    ax, underflow = _log_ax(e, a, x)
    enabled = e.not_(e.or_(e.or_(x_zero, domain), e.or_(underflow, x_inf)))
    cf = e.sub(1.0, _igammac_cf(e, ax, x, a, e.and_(enabled, use_cf), lsp.VALUE))
    series = _igamma_series(e, ax, x, a, e.and_(enabled, e.not_(use_cf)), lsp.VALUE)
    out = e.select(use_cf, cf, series)
    out = e.select(x_zero, 0.0, out)
    out = e.select(x_inf, 1.0, out)
    return e.select(domain, math.nan, out)


def _igammac(e: _Emitter, a, x):
    nan = _isnan2(e, a, x)
    a_zero, x_zero, x_inf = e.eq(a, 0.0), e.eq(x, 0.0), e.eq(x, math.inf)
    domain = e.or_(e.or_(e.lt(x, 0.0), e.lt(a, 0.0)), e.or_(e.and_(a_zero, x_zero), nan))
    use_series = e.or_(e.lt(x, 1.0), e.lt(x, a))
    ax, underflow = _log_ax(e, a, x)
    enabled = e.not_(e.or_(e.or_(domain, underflow), e.or_(x_inf, a_zero)))
    series = e.sub(1.0, _igamma_series(e, ax, x, a, e.and_(enabled, use_series), lsp.VALUE))
    cf = _igammac_cf(e, ax, x, a, e.and_(enabled, e.not_(use_series)), lsp.VALUE)
    out = e.select(use_series, series, cf)
    out = e.select(e.or_(x_inf, a_zero), 0.0, out)
    return e.select(domain, math.nan, out)


def _igamma_derivative(mode: str):
    def fn(e: _Emitter, a, x):
        nan = _isnan2(e, a, x)
        x_zero = e.eq(x, 0.0)
        domain = e.or_(e.lt(x, 0.0), e.le(a, 0.0))
        use_cf = e.and_(e.gt(x, 1.0), e.gt(x, a))
        ax, underflow = _log_ax(e, a, x)
        enabled = e.not_(e.or_(e.or_(x_zero, domain), e.or_(underflow, nan)))
        cf = e.neg(_igammac_cf(e, ax, x, a, e.and_(enabled, use_cf), mode))
        series = _igamma_series(e, ax, x, a, e.and_(enabled, e.not_(use_cf)), mode)
        out = e.select(x_zero, 0.0, e.select(use_cf, cf, series))
        return e.select(e.or_(domain, nan), math.nan, out)
    return fn


def _betainc(e: _Emitter, a, b, x):
    a_zero = e.or_(e.eq(a, 0.0), e.eq(b, math.inf))
    b_zero = e.or_(e.eq(b, 0.0), e.eq(a, math.inf))
    x_zero, x_one = e.eq(x, 0.0), e.eq(x, 1.0)
    nan = e.or_(_isnan2(e, a, b), e.isnan(x))
    is_zero = e.or_(e.and_(b_zero, e.not_(x_one)), e.and_(a_zero, x_zero))
    is_one = e.or_(e.and_(a_zero, e.not_(x_zero)), e.and_(b_zero, x_one))
    is_nan = e.or_(e.or_(e.or_(e.lt(a, 0.0), e.lt(b, 0.0)), e.or_(e.lt(x, 0.0), e.gt(x, 1.0))),
                   e.or_(e.and_(a_zero, b_zero), nan))
    fast = e.lt(x, e.div(e.add(a, 1.0), e.add(e.add(a, b), 2.0)))
    a, b, x = e.select(fast, a, b), e.select(fast, b, a), e.select(fast, x, e.sub(1.0, x))
    h = special_loops.call(e, "betainc_cf", a, b, x)
    lb, la, lab = _fn(e, "lgamma", b), _fn(e, "lgamma", a), _fn(e, "lgamma", e.add(a, b))
    lbeta_small_a = e.sub(lb, lab)
    lbeta = e.add(la, lbeta_small_a)
    log1m_x = _fn(e, "log1p", e.neg(x))
    small_a = _fn(e, "exp", e.sub(e.mul(log1m_x, b), lbeta_small_a))
    general = e.div(_fn(e, "exp", e.sub(e.add(e.mul(_fn(e, "log", x), a), e.mul(log1m_x, b)),
                                      lbeta)), a)
    out = e.mul(h, e.select(e.lt(a, float(np.finfo(e.np).tiny) * 2), small_a, general))
    out = e.select(fast, out, e.sub(1.0, out))
    out = e.select(is_zero, 0.0, out)
    out = e.select(is_one, 1.0, out)
    return e.select(is_nan, math.nan, out)


def _emitter(call: Callable):
    """An EMITTERS entry computing `call(builder, *operands)`: float16 computes in float32
    (bfloat16 already is float32)."""
    def emit(b: ir.IRBuilder, in_dtypes, out_dtype, args, params):
        if isinstance(args[0].type, ir.HalfType):
            f32 = ir.FloatType()
            return b.fptrunc(call(b, *[b.fpext(v, f32) for v in args]), args[0].type)
        return call(b, *args)
    return emit


def _looped(name: str, body: Callable):
    """An EMITTERS entry calling the module's one function for `name` (its loops built once
    per module and type, inlined by LLVM at each call: math.emit_function)."""
    return _emitter(lambda b, *args: m.emit_function(b, name, body, *args))


EMITTERS = {
    lsp.igamma_p: _looped("igamma", _igamma), lsp.igammac_p: _looped("igammac", _igammac),
    lsp.igamma_grad_a_p: _looped("igamma_grad_a", _igamma_derivative(lsp.DERIVATIVE)),
    lsp.random_gamma_grad_p: _looped("random_gamma_grad",
                                     _igamma_derivative(lsp.SAMPLE_DERIVATIVE)),
    lsp.regularized_incomplete_beta_p: _looped("betainc", _betainc),
    # (no loops: a fixed number of terms, so one of math.py's own functions)
    lsp.zeta_p: _emitter(lambda b, s, q: m.emit(b, "zeta", s, q)),
}
