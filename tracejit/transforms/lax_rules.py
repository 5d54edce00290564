"""STAGING: transformation rules for lax primitives, to be moved beside each primitive."""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.trace import get_aval
from ..lax._base import ANY, unop
from ..lax.elementwise import (abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p,
                               atan2_p, atan_p, atanh_p, bessel_i0e_p, bitcast_convert_type_p,
                               cbrt_p, ceil_p, clamp_p, clz_p, complex_p, conj_p,
                               convert_element_type_p, cos_p, cosh_p, digamma_p, div_p, eq_p,
                               erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, floor_p, fma_p,
                               ge_p, gt_p, imag_p, integer_pow_p, is_finite_p, le_p, lgamma_p,
                               log1p_p, log_p, logistic_p, lt_p, max_p, min_p, mul_p, ne_p,
                               neg_p, nextafter_p, not_p, or_p, population_count_p, pow_p,
                               real_p, rem_p, round_p, rsqrt_p, select_n_p, shift_left_p,
                               shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p,
                               sinh_p, sqrt_p, square_p, sub_p, tan_p, tanh_p, xor_p)
from ..lax.elementwise import (add, bitwise_and, complex, conj, convert_element_type,  # noqa: A004
                               cos, cosh, digamma, div, eq, exp, floor, ge, gt, imag,
                               integer_pow, log, lt, mul, neg, pow, real, rsqrt, select_n,
                               sign, sin, sinh, square, sub)
from ..lax.shape import broadcast_in_dim
from .rules import (Zero, aval_of, def_broadcasting, def_linear, def_vectorized, defjvp,
                    defjvp2, instantiate, is_undefined, moveaxis, unbroadcast)

# ============================================================================================
# elementwise.py
# ============================================================================================


def _full_like(x, value):
    """An array of x's shape and dtype filled with `value` (weak like x)."""
    return _full(get_aval(x), value)


def _full(aval, value):
    fill = Array.from_numpy(np.asarray(value, aval.dtype), ShapedArray((), aval.dtype,
                                                                       aval.weak_type))
    return broadcast_in_dim(fill, aval.shape, ()) if aval.shape else fill


def _bcast(x, ref):
    """x (rank 0, or of ref's shape) broadcast to ref's shape."""
    shape = get_aval(ref).shape
    return x if get_aval(x).shape == shape else broadcast_in_dim(x, shape, ())


def _unary_transpose(fn):
    return lambda ct, x, **params: [fn(ct, **params)]


# arithmetic: linear ones transpose; each cotangent sums over the broadcast of a rank-0 operand
def _add_transpose(ct, x, y):
    return [unbroadcast(aval_of(x), ct) if is_undefined(x) else None,
            unbroadcast(aval_of(y), ct) if is_undefined(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(aval_of(x), ct) if is_undefined(x) else None,
            unbroadcast(aval_of(y), neg(ct)) if is_undefined(y) else None]


def _mul_transpose(ct, x, y):
    if is_undefined(x):  # a linear jaxpr multiplies a tangent by a residual, never two tangents
        return [unbroadcast(aval_of(x), mul(ct, y)), None]
    return [None, unbroadcast(aval_of(y), mul(x, ct))]


def _div_transpose(ct, x, y):
    return [unbroadcast(aval_of(x), div(ct, y)), None]


def _balanced_eq(x, z, y):
    """1 where x attains z alone, 1/2 where y ties with it, 0 elsewhere (JAX's max/min JVP)."""
    return div(select_n(eq(x, z), _full_like(z, 0), _full_like(z, 1)),
               select_n(eq(y, z), _full_like(z, 1), _full_like(z, 2)))


defjvp(add_p, lambda g, x, y: g, lambda g, x, y: g)
add_p.def_transpose(_add_transpose)
defjvp(sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))
sub_p.def_transpose(_sub_transpose)
defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
mul_p.def_transpose(_mul_transpose)
defjvp(div_p, lambda g, x, y: div(g, y),
       lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
div_p.def_transpose(_div_transpose)
defjvp(rem_p, lambda g, x, y: g,
       lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs_p.bind(div(x, y))))))
defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
        lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
       lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))
defjvp(fma_p, lambda g, x, y, z: mul(g, y), lambda g, x, y, z: mul(x, g), lambda g, x, y, z: g)
def_linear(neg_p, _unary_transpose(neg))
defjvp(square_p, lambda g, x: mul(g, mul(x, 2)))


def _pow_jvp_base(g, ans, x, y):
    if dtypes.is_int(get_aval(y).dtype):  # x ** 0 has derivative 0, even at x == 0
        y = _bcast(convert_element_type(y, get_aval(x).dtype), ans)
        jac = select_n(eq(y, 0), mul(y, pow(_bcast(x, ans), sub(y, 1))), _full_like(ans, 0))
    else:
        jac = mul(y, pow(x, sub(y, 1)))
    return mul(g, jac)


def _replace_zero(x):
    return select_n(eq(x, 0), x, _full_like(x, 1))


defjvp2(pow_p, _pow_jvp_base, lambda g, ans, x, y: mul(g, mul(log(_replace_zero(x)), ans)))


def _abs_jvp(g, ans, x):
    if get_aval(x).dtype.kind == "c":
        return div(real(mul(conj(x), g)), _replace_zero(ans))
    return select_n(ge(x, 0), neg(g), g)  # the derivative at 0 is 1, as in JAX


defjvp2(abs_p, _abs_jvp)


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return Zero.from_primal(x)
    return g if y == 1 else mul(g, mul(integer_pow(x, y - 1), y))


defjvp(integer_pow_p, _integer_pow_jvp)

# transcendental functions
defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, math.log(2))))
defjvp(log_p, lambda g, x: div(g, x))
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
defjvp(acosh_p, lambda g, x: mul(g, rsqrt(mul(sub(x, 1), add(x, 1)))))
defjvp(atanh_p, lambda g, x: mul(div(1, add(x, 1)), div(g, sub(1, x))))
defjvp2(sqrt_p, lambda g, ans, x: div(g, mul(ans, 2)))
defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(div(ans, x), -0.5)))
defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(integer_pow(ans, -2), 1 / 3)))
defjvp(erf_p, lambda g, x: mul(g, mul(exp(neg(square(x))), 2 / math.sqrt(math.pi))))
defjvp(erfc_p, lambda g, x: mul(g, mul(exp(neg(square(x))), -2 / math.sqrt(math.pi))))
defjvp2(erf_inv_p, lambda g, ans, x: mul(g, mul(exp(square(ans)), math.sqrt(math.pi) / 2)))
defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))

# piecewise-constant and integer/boolean-valued ops have zero derivatives
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, nextafter_p, eq_p, ne_p, lt_p, le_p,
           gt_p, ge_p, not_p, and_p, or_p, xor_p, shift_left_p, shift_right_logical_p,
           shift_right_arithmetic_p, population_count_p, clz_p, bitcast_convert_type_p):
    _p.def_not_differentiable()

# complex parts
def_linear(real_p, lambda ct, x: [complex(ct, _full_like(ct, 0))])
def_linear(imag_p, lambda ct, x: [complex(_full_like(ct, 0), neg(ct))])
def_linear(complex_p, lambda ct, x, y: [real(ct) if is_undefined(x) else None,
                                        imag(neg(ct)) if is_undefined(y) else None])
def_linear(conj_p, lambda ct, x: [conj(ct) if aval_of(x).dtype.kind == "c" else real(ct)])


# conversions: float -> float is linear; to an integer type the derivative is zero
def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(np.dtype(new_dtype)):
        return out, Zero.from_primal(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    aval = aval_of(x)
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)


# selection
def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    if all(type(t) is Zero for t in tangents[1:]):
        return out, Zero.from_primal(out)
    return out, select_n_p.bind(which, *[instantiate(t) for t in tangents[1:]])


def _select_n_transpose(ct, which, *cases):
    zeros = _full_like(ct, 0)
    return [None] + [select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
                     if is_undefined(c) else None for i, c in enumerate(cases)]


select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)


def _clamp_jvp_lo(g, lo, x, hi):
    return select_n(bitwise_and(gt(lo, x), lt(lo, hi)), _full_like(x, 0), _bcast(g, x))


def _clamp_jvp_x(g, lo, x, hi):
    return select_n(bitwise_and(gt(x, lo), lt(x, hi)), _full_like(x, 0), g)


def _clamp_jvp_hi(g, lo, x, hi):
    return select_n(lt(hi, x), _full_like(x, 0), _bcast(g, x))


defjvp(clamp_p, _clamp_jvp_lo, _clamp_jvp_x, _clamp_jvp_hi)

# batching: unary ops keep the batch dimension; n-ary ones align it and broadcast
_UNARY = (neg_p, sign_p, square_p, floor_p, ceil_p, is_finite_p, abs_p, round_p, integer_pow_p,
          exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p, sin_p, cos_p, tan_p,
          asin_p, acos_p, atan_p, sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p,
          cbrt_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, bessel_i0e_p, not_p,
          population_count_p, clz_p, real_p, imag_p, conj_p, convert_element_type_p)
_NARY = (add_p, sub_p, mul_p, div_p, rem_p, max_p, min_p, atan2_p, nextafter_p, fma_p, pow_p,
         eq_p, ne_p, lt_p, le_p, gt_p, ge_p, and_p, or_p, xor_p, shift_left_p,
         shift_right_logical_p, shift_right_arithmetic_p, complex_p)
for _p in _UNARY:
    def_vectorized(_p)
for _p in _NARY:
    def_broadcasting(_p)
def_broadcasting(select_n_p, lambda i, n: i == 0)      # the selector may stay rank 0
def_broadcasting(clamp_p, lambda i, n: i != 1)          # the bounds may stay rank 0


def _bitcast_batch(vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    if d == get_aval(x).ndim - 1:  # a trailing dimension may appear or vanish
        x, d = moveaxis(x, d, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p.def_batch(_bitcast_batch)

# stop_gradient: the identity whose derivative is zero
stop_gradient_p = unop("stop_gradient", lambda x: x, ANY)
stop_gradient_p.def_not_differentiable()
def_vectorized(stop_gradient_p)

# ============================================================================================
# reduce.py
# ============================================================================================
from ..lax.reduce import (argmax_p, argmin_p, reduce_and_p, reduce_max_p, reduce_min_p,  # noqa: E402
                          reduce_or_p, reduce_prod_p, reduce_sum_p, reduce_xor_p)
from ..lax.reduce import reduce_sum  # noqa: E402
from ..lax.shape import concatenate, reshape, slice_in_dim, transpose  # noqa: E402
from .rules import def_reducer_batching  # noqa: E402


def _kept_dims(ndim: int, axes) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = aval_of(x).shape
    return [broadcast_in_dim(ct, shape, _kept_dims(len(shape), axes))]


def _reduce_prod_jvp(primals, tangents, *, axes):
    """The JVP of a pairwise product tree over the reduced elements: no division, so zeros in
    the operand are handled exactly (as JAX does)."""
    (x,), (t,) = primals, tangents
    out = reduce_prod_p.bind(x, axes=axes)
    shape = get_aval(x).shape
    kept = _kept_dims(len(shape), axes)
    n = math.prod(shape[a] for a in axes)
    if n == 0:
        return out, Zero.from_primal(out)
    rest = tuple(shape[i] for i in kept)
    x, t = (reshape(transpose(v, tuple(axes) + kept), (n,) + rest) for v in (x, t))
    while n > 1:
        if n % 2:  # pad with a factor 1 (tangent 0)
            one = get_aval(x).update(shape=(1,) + rest)
            x = concatenate([x, _full(one, 1)], 0)
            t = concatenate([t, _full(one, 0)], 0)
            n += 1
        a, b = slice_in_dim(x, 0, n, 2), slice_in_dim(x, 1, n, 2)
        ta, tb = slice_in_dim(t, 0, n, 2), slice_in_dim(t, 1, n, 2)
        x, t = mul(a, b), add(mul(ta, b), mul(a, tb))
        n //= 2
    return out, reshape(t, rest)


def _reduce_chooser_jvp(g, ans, x, *, axes):
    """Ties share the tangent equally (JAX's rule for max and min reductions)."""
    aval = get_aval(x)
    where = convert_element_type(eq(x, broadcast_in_dim(ans, aval.shape,
                                                        _kept_dims(aval.ndim, axes))),
                                 aval.dtype)
    return div(reduce_sum(mul(g, where), axes), reduce_sum(where, axes))


def_linear(reduce_sum_p, _reduce_sum_transpose)
reduce_prod_p.def_jvp(_reduce_prod_jvp)
defjvp2(reduce_max_p, _reduce_chooser_jvp)
defjvp2(reduce_min_p, _reduce_chooser_jvp)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
    _p.def_not_differentiable()
for _p in (reduce_sum_p, reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
           reduce_xor_p, argmax_p, argmin_p):
    def_reducer_batching(_p)

# ============================================================================================
# shape.py
# ============================================================================================
from ..lax.shape import (broadcast_in_dim_p, concatenate_p, iota_p, pad, pad_p,  # noqa: E402
                         reshape_p, rev, rev_p, slice, slice_p, squeeze_p, transpose_p)
from .rules import axis_size, bdim_at_front  # noqa: E402


def _zero_scalar(x):
    aval = get_aval(x)
    return Array.from_numpy(np.zeros((), aval.dtype), ShapedArray((), aval.dtype))


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = aval_of(x).shape
    bdims = broadcast_dimensions
    unit = {i for i, d in enumerate(in_shape) if d == 1 and shape[bdims[i]] != 1}
    kept = [i for i in range(len(in_shape)) if i not in unit]
    summed = sorted(set(range(len(shape))) - {bdims[i] for i in kept})
    out = reduce_sum(ct, summed) if summed else ct
    order = sorted(kept, key=lambda i: bdims[i])  # out's axes: kept dims by output position
    if order != kept:
        out = transpose(out, [order.index(i) for i in kept])
    return [reshape(out, in_shape)]


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = moveaxis(x, d, 0)
    return broadcast_in_dim_p.bind(x, shape=(get_aval(x).shape[0],) + shape,
                                   broadcast_dimensions=(0,) + tuple(b + 1 for b in
                                                                     broadcast_dimensions)), 0


def _reshape_transpose(ct, x, *, new_sizes, dimensions):
    shape = aval_of(x).shape
    if dimensions is None:
        return [reshape(ct, shape)]
    permuted = reshape(ct, tuple(shape[d] for d in dimensions))
    return [transpose(permuted, tuple(int(i) for i in np.argsort(dimensions)))]


def _reshape_batch(vals, dims, *, new_sizes, dimensions):
    (x,), (d,) = vals, dims
    x = moveaxis(x, d, 0)
    dims_b = None if dimensions is None else (0,) + tuple(i + 1 for i in dimensions)
    return reshape_p.bind(x, new_sizes=(get_aval(x).shape[0],) + new_sizes,
                          dimensions=dims_b), 0


def _transpose_batch(vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    perm = (d,) + tuple(p + (p >= d) for p in permutation)
    return transpose_p.bind(x, permutation=perm), 0


def _squeeze_batch(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return squeeze_p.bind(moveaxis(x, d, 0), dimensions=tuple(i + 1 for i in dimensions)), 0


def _concatenate_transpose(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        n = aval_of(x).shape[dimension]
        out.append(slice_in_dim(ct, start, start + n, 1, dimension) if is_undefined(x) else None)
        start += n
    return out


def _concatenate_batch(vals, dims, *, dimension):
    size = axis_size(vals, dims)
    xs = [bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


def _pad_transpose(ct, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config)
    unpadded = pad(ct, _zero_scalar(ct), [(-a, -b, 0) for a, b in zip(lo, hi)])
    ndim = len(lo)
    t_x = slice(unpadded, (0,) * ndim, get_aval(unpadded).shape, [i + 1 for i in interior])
    t_pad = None
    if is_undefined(padding_value):
        everything = tuple(range(ndim))
        t_pad = sub(reduce_sum(ct, everything), reduce_sum(t_x, everything))
    return [t_x if is_undefined(x) else None, t_pad]


def _pad_batch(vals, dims, *, padding_config):
    (x, pad_value), (dx, dv) = vals, dims
    config = ((0, 0, 0),) + padding_config
    if dv is None:
        return pad_p.bind(moveaxis(x, dx, 0), pad_value, padding_config=config), 0
    # a batched padding value: pad with zeros, then select it where a mask says "padding"
    x = bdim_at_front(x, dx, axis_size(vals, dims))
    unbatched = get_aval(x).update(shape=get_aval(x).shape[1:])
    padded = pad_p.bind(x, _zero_scalar(x), padding_config=config)
    inside = Array.from_numpy(np.ones(unbatched.shape, bool), ShapedArray(unbatched.shape, bool))
    outside = Array.from_numpy(np.zeros((), bool), ShapedArray((), bool))
    mask = pad_p.bind(inside, outside, padding_config=padding_config)
    out_shape = get_aval(padded).shape
    mask = broadcast_in_dim(mask, out_shape, tuple(range(1, len(out_shape))))
    fill = broadcast_in_dim(moveaxis(pad_value, dv, 0), out_shape, (0,))
    return select_n(mask, fill, padded), 0


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = aval_of(x).shape
    ct_shape = get_aval(ct).shape
    if strides is None:
        config = [(s, n - lim, 0) for s, lim, n in zip(start_indices, limit_indices, shape)]
    else:
        real_limits = [s + (0 if m == 0 else 1 + (m - 1) * st)
                       for s, m, st in zip(start_indices, ct_shape, strides)]
        config = [(s, n - lim, st - 1)
                  for s, lim, n, st in zip(start_indices, real_limits, shape, strides)]
    return [pad(ct, _zero_scalar(ct), config)]


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    start = start_indices[:d] + (0,) + start_indices[d:]
    limit = limit_indices[:d] + (size,) + limit_indices[d:]
    strides = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides), d


def_linear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.def_batch(_broadcast_in_dim_batch)
def_linear(reshape_p, _reshape_transpose)
reshape_p.def_batch(_reshape_batch)
def_linear(transpose_p, lambda ct, x, *, permutation: [
    transpose(ct, tuple(int(i) for i in np.argsort(permutation)))])
transpose_p.def_batch(_transpose_batch)
def_linear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, aval_of(x).shape)])
squeeze_p.def_batch(_squeeze_batch)
def_linear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.def_batch(lambda vals, dims, *, dimensions: (rev_p.bind(
    vals[0], dimensions=tuple(a + (a >= dims[0]) for a in dimensions)), dims[0]))
def_linear(concatenate_p, _concatenate_transpose)
concatenate_p.def_batch(_concatenate_batch)
def_linear(pad_p, _pad_transpose)
pad_p.def_batch(_pad_batch)
def_linear(slice_p, _slice_transpose)
slice_p.def_batch(_slice_batch)
iota_p.def_not_differentiable()

# ============================================================================================
# cumulative.py
# ============================================================================================
from ..lax.control_flow import associative_scan  # noqa: E402
from ..lax.cumulative import (cumlogsumexp_p, cummax_p, cummin_p, cumprod_p,  # noqa: E402
                              cumsum, cumsum_p)
from ..lax.elementwise import max as lax_max  # noqa: E402
from ..lax.elementwise import min as lax_min  # noqa: E402
from .jvp import jvp_flat  # noqa: E402
from .rules import def_axis_batching  # noqa: E402


def _logaddexp(a, b):
    m = stop_gradient_p.bind(lax_max(a, b))  # only shifts the exponents: no derivative needed
    return add(m, log(add(exp(sub(a, m)), exp(sub(b, m)))))


def _cumulative_jvp(prim, combine):
    """The tangent is that of the same prefix combination written as an associative scan."""
    def jvp(primals, tangents, *, axis, reverse):
        out = prim.bind(*primals, axis=axis, reverse=reverse)
        _, (t_out,) = jvp_flat(lambda x: [associative_scan(combine, x, reverse, axis)],
                               primals, tangents)
        return out, t_out
    return jvp


def_linear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])
for _p, _combine in ((cumprod_p, mul), (cummax_p, lax_max), (cummin_p, lax_min),
                     (cumlogsumexp_p, _logaddexp)):
    _p.def_jvp(_cumulative_jvp(_p, _combine))
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    def_axis_batching(_p)

# ============================================================================================
# linalg.py
# ============================================================================================
from ..lax.linalg import dot_general_p  # noqa: E402


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _free(ndim, *removed):
    gone = {d for r in removed for d in r}
    return tuple(d for d in range(ndim) if d not in gone)


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, swap_ans=False):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_aval = aval_of(x)
    x_kept = _free(x_aval.ndim, x_contract, x_batch)
    y_kept = _free(aval_of(y).ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + list(x_kept) + x_contract_by_y))
    out = transpose(dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                                       preferred_element_type=preferred_element_type), out_axes)
    return convert_element_type(out, x_aval.dtype)


def _dot_general_transpose(ct, x, y, *, dimension_numbers, precision, preferred_element_type):
    if is_undefined(x):
        return [_dot_general_transpose_lhs(ct, x, y, dimension_numbers=dimension_numbers,
                                           precision=precision,
                                           preferred_element_type=preferred_element_type), None]
    (xc, yc), (xb, yb) = dimension_numbers
    return [None, _dot_general_transpose_lhs(ct, y, x, dimension_numbers=((yc, xc), (yb, xb)),
                                             precision=precision,
                                             preferred_element_type=preferred_element_type,
                                             swap_ans=True)]


def _dot_general_batch(vals, dims, *, dimension_numbers, precision, preferred_element_type):
    (x, y), (dx, dy) = vals, dims
    (xc, yc), (xb, yb) = dimension_numbers
    x = x if dx is None else moveaxis(x, dx, 0)
    y = y if dy is None else moveaxis(y, dy, 0)

    def shift(ds, batched):
        return tuple(d + batched for d in ds)

    xc, xb = shift(xc, dx is not None), shift(xb, dx is not None)
    yc, yb = shift(yc, dy is not None), shift(yb, dy is not None)
    if dx is not None and dy is not None:  # a new batch dimension, first in the output
        xb, yb, out_dim = (0,) + xb, (0,) + yb, 0
    elif dx is not None:  # the first free dimension of lhs
        out_dim = len(xb)
    else:  # the first free dimension of rhs
        out_dim = len(xb) + get_aval(x).ndim - len(xc) - len(xb)
    out = dot_general_p.bind(x, y, dimension_numbers=((xc, yc), (xb, yb)), precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


defjvp(dot_general_p,
       lambda g, x, y, **params: dot_general_p.bind(g, y, **params),
       lambda g, x, y, **params: dot_general_p.bind(x, g, **params))
dot_general_p.def_transpose(_dot_general_transpose)
dot_general_p.def_batch(_dot_general_batch)
