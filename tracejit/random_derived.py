"""jax.random's samplers derived from the base ones in `random.py` (normal, uniform, gamma,
exponential, bernoulli) by transformation or rejection, each following JAX's algorithm step by
step (same key splits, same draws, same arithmetic), so their bits match JAX's for a key."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import prng
from .lax import lenient as lax
from . import numpy as jnp
from .core import dtypes
from .core.avals import check_shape
from .core.trace import concrete_value, get_aval
from .numpy._util import broadcast_shapes, check_arraylike, promote_dtypes_inexact
from .prng import PRNGKeyArray
from .random import (_by_lane, _check_all_safe_to_cast, _check_broadcast_shapes,
                     _check_prng_key, _check_shape, _const, _exponential, _float_dtype, _gamma,
                     _impl_arg, _int_dtype, _normal_real, _shape_of, _split2, _split_n,
                     _uniform, rademacher)

__all__ = ["ball", "binomial", "chisquare", "clone", "double_sided_maxwell", "f",
           "generalized_normal", "geometric", "key_dtype", "lognormal", "maxwell", "multinomial",
           "pareto", "rayleigh", "t", "triangular", "wald", "weibull_min"]


def _checked(name: str, key: Any, dtype: Any, kinds: str = "float") -> tuple[Any, np.dtype]:
    data, _ = _check_prng_key(name, key)
    return data, _float_dtype(name, dtype, kinds)


def _with_shape(x: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    return jnp.broadcast_to(lax.convert_element_type(x, dtype), shape)


# --- from gamma and chi-square -------------------------------------------------------------------

def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t with `df` degrees of freedom: normal * sqrt((df/2) / Gamma(df/2))."""
    data, dtype = _checked("t", key, dtype)
    shape = _check_broadcast_shapes("t", shape, df)
    _check_all_safe_to_cast("t", dtype, df)
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = _split2(data)
    n = _normal_real(key_n, shape, dtype)
    half_df = lax.div(df, _const(dtype, 2))
    g = _gamma(key_g, half_df, shape, dtype, False)
    return jnp.multiply(n, jnp.sqrt(jnp.divide(half_df, g)))


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square with `df` degrees of freedom: 2 * exp(loggamma(df / 2))."""
    data, dtype = _checked("chisquare", key, dtype)
    shape = _check_broadcast_shapes("chisquare", shape, df)
    _check_all_safe_to_cast("chisquare", dtype, df)
    return _chisquare(data, df, shape, dtype)


def _chisquare(keys: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    half_df = lax.div(lax.convert_element_type(df, dtype), _const(dtype, 2))
    return lax.mul(lax.exp(_gamma(keys, half_df, shape, dtype, True)), _const(dtype, 2))


def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None,
      dtype: Any = None) -> Any:
    """Fisher's F: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden), from two subkeys."""
    data, dtype = _checked("f", key, dtype)
    shape = _check_broadcast_shapes("f", shape, dfnum, dfden)
    _check_all_safe_to_cast("f", dtype, dfnum, dfden)
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = _split2(data)
    num = lax.div(_chisquare(key_dfn, dfnum, shape, dtype), dfnum)
    den = lax.div(_chisquare(key_dfd, dfden, shape, dtype), dfden)
    return lax.div(num, den)


# --- by inverting a CDF --------------------------------------------------------------------------

def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto with shape b (support x >= 1): exp(exponential / b)."""
    data, dtype = _checked("pareto", key, dtype)
    shape = _check_broadcast_shapes("pareto", shape, b)
    _check_all_safe_to_cast("pareto", dtype, b)
    b = lax.convert_element_type(b, dtype)
    return lax.exp(jnp.divide(_exponential(data, shape, dtype), b))


def lognormal(key: Any, sigma: Any = np.float32(1),  # noqa: B008 - JAX's default
              shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """exp(sigma * normal); complex dtypes take a complex normal."""
    from .random import normal
    data, dtype = _checked("lognormal", key, dtype, "inexact")
    shape = _check_broadcast_shapes("lognormal", shape, sigma)
    _check_all_safe_to_cast("lognormal", dtype, sigma)
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(jnp.multiply(normal(data, shape, dtype), sigma))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (),
                dtype: Any = None) -> Any:
    """Weibull by the inverse CDF: (-log1p(-u)) ** (1 / concentration) * scale."""
    data, dtype = _checked("weibull_min", key, dtype)
    u = _uniform(data, 0, 1, check_shape(shape), dtype)
    return jnp.multiply(jnp.power(lax.neg(lax.log1p(lax.neg(u))),
                                  jnp.divide(1.0, concentration)), scale)


def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh: scale * sqrt(-2 log u)."""
    data, dtype = _checked("rayleigh", key, dtype)
    shape = _check_broadcast_shapes("rayleigh", shape, scale)
    _check_all_safe_to_cast("rayleigh", dtype, scale)
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    scale = _with_shape(jnp.asarray(scale), dtype, shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _const(dtype, -2))))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Sequence[int] | None = None,
               dtype: Any = None) -> Any:
    """Triangular on [left, right] peaking at mode, by inverting its piecewise CDF."""
    data, dtype = _checked("triangular", key, dtype)
    shape = _check_broadcast_shapes("triangular", shape, left, mode, right)
    _check_all_safe_to_cast("triangular", dtype, left, mode, right)
    left, mode, right = (_with_shape(x, dtype, shape) for x in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) by Michael, Schucany and Haas's transformation of a normal,
    choosing between the two roots with a uniform."""
    data, dtype = _checked("wald", key, dtype)
    shape = _check_broadcast_shapes("wald", shape, mean)
    _check_all_safe_to_cast("wald", dtype, mean)
    k1, k2 = _split2(data)
    mean = _with_shape(jnp.asarray(mean), dtype, shape)
    v = _normal_real(k1, shape, dtype)
    z = _uniform(k2, 0.0, 1.0, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


# --- from normals --------------------------------------------------------------------------------

def maxwell(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Maxwell: the length of a standard normal 3-vector."""
    data, dtype = _checked("maxwell", key, dtype)
    return _maxwell(data, check_shape(shape), dtype)


def _maxwell(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return jnp.linalg.norm(_normal_real(keys, (*shape, 3), dtype), axis=-1)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Sequence[int] = (),
                         dtype: Any = None) -> Any:
    """A Maxwell sample with a random sign, scaled and shifted; as in JAX the result has shape
    (*shape, *broadcast(loc, scale).shape), where shape () stands for the parameters' shape."""
    data, dtype = _checked("double_sided_maxwell", key, dtype)
    shape = check_shape(shape)
    params_shape = broadcast_shapes(_shape_of(loc), _shape_of(scale))
    shape = (*(shape or params_shape), *params_shape)
    maxwell_key, rademacher_key = _split2(data)
    maxwell_rvs = _maxwell(maxwell_key, shape, dtype)
    random_sign = rademacher(rademacher_key, shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


def generalized_normal(key: Any, p: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Density ∝ exp(-|x|^p): a random sign times Gamma(1/p) ** (1/p)."""
    shape = check_shape(shape)
    data, _ = _check_prng_key("generalized_normal", key)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    return _generalized_normal(data, p, shape, dtype)


def _generalized_normal(keys: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    from .random import gamma
    key_g, key_r = _split2(keys)
    g = gamma(key_g, jnp.divide(1, p), shape, dtype)
    r = rademacher(key_r, shape, dtype)
    return r * jnp.power(g, jnp.divide(1, p))


def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """A point uniform in the d-dimensional unit Lp ball (Barthe, Guédon, Mendelson and Naor):
    generalized normals divided by (sum |g|^p + exponential) ** (1/p)."""
    shape = check_shape(shape)
    data, _ = _check_prng_key("ball", key)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    d = operator.index(concrete_value(d, "The error occurred in jax.random.ball()"))
    k1, k2 = _split2(data)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    norm = jnp.power(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1) + e, jnp.divide(1, p))
    return g / norm[..., None]


# --- discrete ------------------------------------------------------------------------------------

def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Trials up to the first success: floor(log u / log1p(-p)) + 1, u drawn in p's dtype."""
    data, _ = _check_prng_key("geometric", key)
    dtype = _int_dtype(dtype)
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = _check_broadcast_shapes("geometric", shape, p)
    check_arraylike("geometric", p)
    p, = promote_dtypes_inexact(p)
    u = _uniform(data, 0.0, 1.0, shape, get_aval(p).dtype)
    u = jnp.where(u == 0, 1, u)
    log_one_minus_p = jnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
    return g.astype(dtype)


def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None,
             dtype: Any = None) -> Any:
    """Binomial(n, p) counts as floats: inversion by geometric waiting times where n * q <= 10
    (q = min(p, 1 - p)), Hormann's BTRS rejection otherwise; NaN for invalid n or p."""
    data, _ = _check_prng_key("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = _float_dtype("binomial", dtype)
    shape = None if shape is None else check_shape(shape)
    return _binomial(data, n, p, shape, dtype)


def _binomial(keys: Any, count: Any, prob: Any, shape: tuple[int, ...] | None,
              dtype: np.dtype) -> Any:
    if shape is None:
        shape = broadcast_shapes(_shape_of(count), _shape_of(prob))
    else:
        _check_shape("binomial", shape, _shape_of(count), _shape_of(prob))
    prob, = promote_dtypes_inexact(prob)
    count = jnp.broadcast_to(lax.convert_element_type(count, get_aval(prob).dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    # each method runs over every lane; lanes it does not own get parameters it handles fast
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 10000.0), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = dtype.type(dtypes.finfo_of(dtype).max)
    samples = _by_lane(use_inversion, dtype,
                       lambda: _binomial_inversion(keys, count_inv, q, shape, dtype, max_iters),
                       lambda: _btrs(keys, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def _binomial_inversion(keys, count, prob, shape, dtype, max_iters):
    """Counts geometric waiting times until their sum passes count."""
    log1minusprob = jnp.log1p(-prob)
    fdtype = get_aval(prob).dtype

    def body(carry):
        i, num_geom, geom_sum, keys_ = carry
        subkey, keys_ = _split2(keys_)  # JAX keeps the second key, draws with the first
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(subkey, 0.0, 1.0, shape, fdtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, keys_

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return jnp.any(geom_sum <= count) & (i < max_iters)

    zeros = lax.full_like(prob, 0, fdtype, shape)
    k = lax.while_loop(cond, body, (_const(dtype, 0), zeros, zeros, keys))[1]
    return (k - 1).astype(dtype)


def _btrs(keys, count, prob, shape, dtype, max_iters):
    """Hormann's transformed rejection with squeeze (BTRS), JAX's constants."""
    fdtype = get_aval(prob).dtype
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, keys_ = carry
        keys_, subkey_0, subkey_1 = _split_n(keys_, 3)
        u = _uniform(subkey_0, 0.0, 1.0, shape, fdtype)
        v = _uniform(subkey_1, 0.0, 1.0, shape, fdtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, keys_

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return jnp.any(~accepted) & (i < max_iters)

    k_init = lax.full_like(prob, -1, fdtype, shape)
    accepted = jnp.full(shape, False, bool)
    k = lax.while_loop(cond, body, (_const(dtype, 0), k_init, accepted, keys))[1]
    return k.astype(dtype)


# log k! - Stirling's approximation of it, tabulated for k <= 9 (JAX's table)
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.010411265261972, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    dtype = get_aval(k).dtype
    table = jnp.array(_STIRLING_TAIL, dtype=dtype)
    use_table = k <= 9
    k = lax.clamp(_const(dtype, 0.0), k, _const(dtype, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return lax.select(use_table, table[jnp.asarray(jnp.floor(k), dtype="int32")], approx)


def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None,
                dtype: Any = None, unroll: int | bool = 1) -> Any:
    """Counts of n draws over the categories of p's last axis: a scan over categories drawing
    binomial(remaining, p_i / remaining probability) with one subkey per category."""
    data, _ = _check_prng_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    n, p = promote_dtypes_inexact(n, p)
    shape = get_aval(p).shape if shape is None else check_shape(shape)
    if not shape:
        raise ValueError("multinomial needs p (or shape) with at least one axis of categories")
    dtype = get_aval(n).dtype if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = prng.random_split(data, (get_aval(ratios).shape[0],))

    def step(remainder, ratio_key):
        ratio, key_ = ratio_key
        rdtype = get_aval(remainder).dtype
        count = _binomial(key_, remainder, jnp.clip(ratio, 0, 1), None, rdtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dtype)


# --- keys ----------------------------------------------------------------------------------------

def clone(key: Any) -> Any:
    """A key equal to `key` that may be consumed again (JAX's key-reuse checker treats it as
    fresh; outside that checker, and always here, it is the identity)."""
    if isinstance(key, PRNGKeyArray):
        return PRNGKeyArray(key._base_array, key.impl)
    return key


def key_dtype(impl_spec: Any = None) -> prng.KeyTy:
    """The dtype of typed keys of a PRNG implementation (the default one without a spec)."""
    return prng.KEY_DTYPES[_impl_arg("jax.random.key_dtype", impl_spec)]
