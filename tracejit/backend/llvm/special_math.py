"""Special functions that need loops, as scalar LLVM IR for the kernels codegen emits: the
incomplete gamma and beta functions (series and continued fractions that run per element until
that element converges); the Hurwitz zeta function is math.py's ("zeta").

Unlike math.py's polynomials these are real loops (basic blocks with phi nodes), so the loop
vectorizer leaves a kernel that calls them scalar; each element stops as soon as it converges,
which costs less than lanes that wait for the slowest one. The algorithms and their stopping
rules are the NumPy references' in lax/special.py (JAX's), computed in the operand's type as
JAX does (float16 in float32)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from llvmlite import ir

from ...lax import special as lsp
from . import math as m
from .math import _Emitter

__all__ = ["EMITTERS"]


def _do_while(e: _Emitter, init: list, step: Callable) -> list:
    """Loop `vals = step(vals)` until `step` says stop; step(vals) -> (new vals, go on: i1).
    Returns the values after the last step (the loop runs at least once)."""
    b = e.b
    pre = b.block
    body = b.function.append_basic_block("special.loop")
    done = b.function.append_basic_block("special.done")
    b.branch(body)
    b.position_at_end(body)
    init = [v if isinstance(v, ir.Value) else e.v(v) for v in init]
    phis = [b.phi(v.type) for v in init]
    for phi, v in zip(phis, init):
        phi.add_incoming(v, pre)
    new, again = step(phis)
    end = b.block
    for phi, v in zip(phis, new):
        phi.add_incoming(v, end)
    b.cbranch(again, body, done)
    b.position_at_end(done)
    return new


def _count(e: _Emitter, n, limit: int):
    """(n + 1, n + 1 < limit) for an i32 step counter."""
    n1 = e.b.add(n, ir.Constant(ir.IntType(32), 1))
    return n1, e.b.icmp_signed("<", n1, ir.Constant(ir.IntType(32), limit))


def _fn(e: _Emitter, name: str, *args):
    return m.emit(e.b, name, *[e.v(a) for a in args])


def _eps(e: _Emitter) -> float:
    return float(np.finfo(e.np).eps)


def _igamma_series(e: _Emitter, ax, x, a, enabled, mode: str):
    """P(a, x) = x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a + 1)...(a + n)) (or its a- or
    sample-derivative), for x < 1 or x <= a."""
    eps = _eps(e)

    def step(vals):
        on, n, r, c, ans, dc_da, dans_da = vals
        r_n = e.add(r, 1.0)
        x_r = e.div(x, r_n)
        dc_n = e.sub(e.mul(dc_da, x_r), e.div(e.mul(c, x), e.mul(r_n, r_n)))
        dans_n = e.add(dans_da, dc_n)
        c_n = e.mul(c, x_r)
        ans_n = e.add(ans, c_n)
        more = (e.gt(e.div(c_n, ans_n), eps) if mode == lsp.VALUE else
                e.gt(e.abs(e.div(dc_n, dans_n)), eps))
        n1, below = _count(e, n, lsp.SERIES_MAX_STEPS)
        new = [e.select(on, nv, ov) for nv, ov in
               zip((r_n, c_n, ans_n, dc_n, dans_n), (r, c, ans, dc_da, dans_da))]
        go = e.and_(e.and_(on, more), below)
        return [go, n1, *new], go

    zero32 = ir.Constant(ir.IntType(32), 0)
    _, _, _, _, ans, _, dans_da = _do_while(e, [enabled, zero32, a, 1.0, 1.0, 0.0, 0.0], step)
    if mode == lsp.VALUE:
        return e.div(e.mul(ans, ax), a)
    dlogax_da = e.sub(_fn(e, "log", x), _fn(e, "digamma", e.add(a, 1.0)))
    if mode == lsp.DERIVATIVE:
        return e.div(e.mul(ax, e.add(e.mul(ans, dlogax_da), dans_da)), a)
    return e.div(e.mul(e.neg(e.add(dans_da, e.mul(ans, dlogax_da))), x), a)


def _igammac_cf(e: _Emitter, ax, x, a, enabled, mode: str):
    """Q(a, x) by Legendre's continued fraction (Cephes' igamc), for x > 1 and x > a."""
    eps = _eps(e)
    y = e.sub(1.0, a)
    z = e.add(e.add(x, y), 1.0)
    pkm1, qkm1 = e.add(x, 1.0), e.mul(z, x)
    ans = e.div(pkm1, qkm1)
    dqkm1 = e.neg(x)
    dans = e.div(e.sub(0.0, e.mul(ans, dqkm1)), qkm1)

    def step(vals):
        on, c, y, z, ans, dans, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1 = vals
        c_n = e.add(c, 1.0)
        y_n, z_n = e.add(y, 1.0), e.add(z, 2.0)
        yc = e.mul(y_n, c_n)
        pk = e.sub(e.mul(pkm1, z_n), e.mul(pkm2, yc))
        qk = e.sub(e.mul(qkm1, z_n), e.mul(qkm2, yc))
        nz = e.b.fcmp_unordered("!=", qk, e.v(0.0))
        r = e.div(pk, qk)
        t = e.select(nz, e.abs(e.div(e.sub(ans, r), r)), 1.0)
        ans_n = e.select(nz, r, ans)
        dpk = e.add(e.sub(e.sub(e.mul(dpkm1, z_n), pkm1), e.mul(dpkm2, yc)), e.mul(pkm2, c_n))
        dqk = e.add(e.sub(e.sub(e.mul(dqkm1, z_n), qkm1), e.mul(dqkm2, yc)), e.mul(qkm2, c_n))
        dans_n = e.select(nz, e.div(e.sub(dpk, e.mul(ans_n, dqk)), qk), dans)
        grad_t = e.select(nz, e.abs(e.sub(dans_n, dans)), 1.0)
        s = e.select(e.gt(e.abs(pk), 1.0 / eps), eps, 1.0)
        shifted = [e.mul(v, s) for v in (pkm1, qkm1, pk, qk, dpkm1, dqkm1, dpk, dqk)]
        old = (y, z, ans, dans, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1)
        new = [e.select(on, nv, ov) for nv, ov in zip((y_n, z_n, ans_n, dans_n, *shifted), old)]
        more = e.gt(t, eps) if mode == lsp.VALUE else e.gt(grad_t, eps)
        go = e.and_(on, more)
        return [go, c_n, *new], e.and_(go, e.lt(c_n, float(lsp.CF_MAX_STEPS)))

    out = _do_while(e, [enabled, 0.0, y, z, ans, dans, 1.0, x, pkm1, qkm1, 0.0, 0.0, 0.0,
                        dqkm1], step)
    ans, dans = out[4], out[5]
    if mode == lsp.VALUE:
        return e.mul(ans, ax)
    dlogax_da = e.sub(_fn(e, "log", x), _fn(e, "digamma", a))
    if mode == lsp.DERIVATIVE:
        return e.mul(ax, e.add(e.mul(ans, dlogax_da), dans))
    return e.mul(e.neg(e.add(dans, e.mul(ans, dlogax_da))), x)


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


def _betainc_numerator(e: _Emitter, n, a, b, x):
    """The n-th partial numerator of DLMF 8.17.22 for a float step n >= 1 (1 at n = 1)."""
    mm = e.floor(e.mul(e.sub(n, 1.0), 0.5))
    a2m = e.add(a, e.mul(mm, 2.0))
    odd = e.div(e.mul(e.mul(mm, e.sub(b, mm)), x), e.mul(e.sub(a2m, 1.0), a2m))
    even = e.div(e.mul(e.neg(e.mul(e.add(a, mm), e.add(e.add(a, b), mm))), x),
                 e.mul(a2m, e.add(a2m, 1.0)))
    even0 = e.div(e.mul(e.neg(e.add(a, b)), x), e.add(a, 1.0))
    even = e.select(e.eq(mm, 0.0), even0, even)
    is_even = e.eq(e.sub(n, e.mul(e.floor(e.mul(n, 0.5)), 2.0)), 0.0)
    return e.select(e.eq(n, 1.0), 1.0, e.select(is_even, even, odd))


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
    tiny = _eps(e) / 2
    steps = 200 if not e.f64 else 600

    def step(vals):
        n, c, d, h = vals
        num = _betainc_numerator(e, n, a, b, x)
        c_n = e.add(1.0, e.div(num, c))
        c_n = e.select(e.lt(e.abs(c_n), tiny), tiny, c_n)
        d_n = e.add(1.0, e.mul(num, d))
        d_n = e.div(1.0, e.select(e.lt(e.abs(d_n), tiny), tiny, d_n))
        delta = e.mul(c_n, d_n)
        n1 = e.add(n, 1.0)
        go = e.and_(e.ge(e.abs(e.sub(delta, 1.0)), tiny), e.lt(n1, float(steps)))
        return [n1, c_n, d_n, e.mul(h, delta)], go

    h = _do_while(e, [1.0, tiny, 0.0, tiny], step)[3]
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
