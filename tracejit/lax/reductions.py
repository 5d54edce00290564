"""Reduction primitives (reduce_sum/prod/max/min/and/or/xor, argmax/argmin) with their rules."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.primitive import REDUCTION, Primitive
from ..core.rules import Zero, aval_of, def_linear, def_reducer_batching, defjvp2, full_like_aval
from ..core.trace import concrete_value, get_aval
from ._base import ANY, INTBOOL, NUM, ORDERED, as_lax_operands, check_dtype, normalize_axes
from .elementwise import add, convert_element_type, div, eq, mul
from .shape import broadcast_in_dim, concatenate, reshape, slice_in_dim, transpose
from .strict import lenient_of


def _reduce_abstract(name: str, kinds: str):
    def abstract(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        check_dtype(name, x, kinds)
        if any(not 0 <= a < x.ndim for a in axes):
            raise ValueError(f"{name}: axes {axes} out of range for rank {x.ndim}")
        if name == "reduce_sum" and x.dtype in (dtypes.float16, dtypes.bfloat16) and \
                not config.jax_allow_f16_reductions and any(x.shape[a] != 1 for a in axes):
            # (jnp.sum and friends sum half floats in float32: only lax's own sums, and
            # transposes of broadcasts, meet this)
            raise ValueError(f"reduce_sum on operand {x.str_short()} is not allowed when "
                             "jax_allow_f16_reductions=False.")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype,
                           x.weak_type)
    return abstract


def _minmax_impl(fn, identity_fn):
    def impl(x, *, axes):
        if x.size == 0 or any(x.shape[a] == 0 for a in axes):
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
            return np.full(shape, identity_fn(x.dtype), dtype=x.dtype)
        return fn(x, axis=axes)
    return impl


def _lowest(dtype):
    if dtype == dtypes.bool_:
        return False
    return -np.inf if dtypes.is_inexact(dtype) else np.iinfo(dtype).min


def _highest(dtype):
    if dtype == dtypes.bool_:
        return True
    return np.inf if dtypes.is_inexact(dtype) else np.iinfo(dtype).max


def monoid(computation: Any, init: Any) -> str | None:
    """The reduction JAX recognises in `computation` started from `init` — "sum", "prod",
    "max", "min", "or", "and" or "xor" — when `computation` is that lax op (public or the
    package's own) and `init` a concrete scalar equal to its identity; else None. lax.reduce
    and lax.reduce_window take their reduce_* fast paths by it."""
    from . import elementwise as ew
    value = concrete_value(init)
    if value is None or np.ndim(value) != 0:
        return None
    dtype = np.dtype(get_aval(init).dtype)
    identities = {ew.add: ("sum", 0), ew.mul: ("prod", 1), ew.max: ("max", _lowest(dtype)),
                  ew.min: ("min", _highest(dtype))}
    if dtype == np.bool_ or np.issubdtype(dtype, np.integer):  # bitwise ones: ints, bools
        identities.update({ew.bitwise_or: ("or", 0), ew.bitwise_xor: ("xor", 0),
                           ew.bitwise_and: ("and", ~np.zeros((), dtype))})  # all bits set
    kind, identity = identities.get(lenient_of(computation), (None, None))
    return kind if kind is not None and np.equal(value, identity) else None


def reducer(name: str, impl, kinds: str) -> Primitive:
    p = Primitive(name, fusion=REDUCTION)
    p.monoid = True
    p.def_abstract_eval(_reduce_abstract(name, kinds))
    p.def_impl(impl)
    return p


def _sum_impl(x, *, axes):
    # half floats accumulate in float32 and round once, as XLA's CPU reductions do
    acc = np.float32 if x.dtype in (dtypes.float16, dtypes.bfloat16) else x.dtype
    with np.errstate(all="ignore"):
        return np.sum(x, axis=axes, dtype=acc).astype(x.dtype)


def _prod_impl(x, *, axes):
    with np.errstate(all="ignore"):
        return np.prod(x, axis=axes, dtype=x.dtype)


reduce_sum_p = reducer("reduce_sum", _sum_impl, NUM)
reduce_prod_p = reducer("reduce_prod", _prod_impl, NUM)
reduce_max_p = reducer("reduce_max", _minmax_impl(np.max, _lowest), ANY)
reduce_min_p = reducer("reduce_min", _minmax_impl(np.min, _highest), ANY)
reduce_and_p = reducer("reduce_and", lambda x, *, axes: np.bitwise_and.reduce(
    x, axis=axes) if x.dtype != dtypes.bool_ else np.all(x, axis=axes), INTBOOL)
reduce_or_p = reducer("reduce_or", lambda x, *, axes: np.bitwise_or.reduce(
    x, axis=axes) if x.dtype != dtypes.bool_ else np.any(x, axis=axes), INTBOOL)
reduce_xor_p = reducer("reduce_xor", lambda x, *, axes: np.bitwise_xor.reduce(
    x, axis=axes) if x.dtype != dtypes.bool_ else (np.sum(x, axis=axes) % 2).astype(bool),
    INTBOOL)


def _reduce(name: str, prim: Primitive, operand: Any, axes: Sequence[int]):
    (operand,) = as_lax_operands(name, operand)
    axes_ = normalize_axes(tuple(axes), get_aval(operand).ndim, "axes")
    return prim.bind(operand, axes=tuple(sorted(axes_)))


def reduce_sum(operand: Any, axes: Sequence[int]):
    """The sum of `operand` over `axes`."""
    return _reduce("reduce_sum", reduce_sum_p, operand, axes)


def reduce_prod(operand: Any, axes: Sequence[int]):
    """The product of `operand` over `axes`."""
    return _reduce("reduce_prod", reduce_prod_p, operand, axes)


def reduce_max(operand: Any, axes: Sequence[int]):
    """The maximum of `operand` over `axes`."""
    return _reduce("reduce_max", reduce_max_p, operand, axes)


def reduce_min(operand: Any, axes: Sequence[int]):
    """The minimum of `operand` over `axes`."""
    return _reduce("reduce_min", reduce_min_p, operand, axes)


def reduce_and(operand: Any, axes: Sequence[int]):
    """The bitwise (logical) and of `operand` over `axes`."""
    return _reduce("reduce_and", reduce_and_p, operand, axes)


def reduce_or(operand: Any, axes: Sequence[int]):
    """The bitwise (logical) or of `operand` over `axes`."""
    return _reduce("reduce_or", reduce_or_p, operand, axes)


def reduce_xor(operand: Any, axes: Sequence[int]):
    """The bitwise (logical) exclusive or of `operand` over `axes`."""
    return _reduce("reduce_xor", reduce_xor_p, operand, axes)


# --- argmax / argmin: NaN counts as the extreme (first NaN wins), first index on ties -------


def _arg_abstract(name: str):
    def abstract(x: ShapedArray, *, axes: tuple[int, ...], index_dtype) -> ShapedArray:
        # complex numbers have no order: JAX's rule fails in the comparison it makes
        check_dtype("gt" if name == "argmax" else "lt", x, ORDERED)
        (axis,) = axes
        if x.shape[axis] == 0:
            raise ValueError(f"{name}: cannot compute over an empty axis (shape {x.shape})")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)
    return abstract


def _arg_impl(fn):
    def impl(x, *, axes, index_dtype):
        (axis,) = axes
        if dtypes.is_inexact(x.dtype):
            nan = np.isnan(x)
            has_nan = nan.any(axis=axis)
            idx = np.where(has_nan, np.argmax(nan, axis=axis), fn(np.where(nan, 0, x), axis=axis))
        else:
            idx = fn(x, axis=axis)
        return np.asarray(idx).astype(index_dtype)
    return impl


argmax_p = Primitive("argmax", fusion=REDUCTION)
argmax_p.def_abstract_eval(_arg_abstract("argmax"))
argmax_p.def_impl(_arg_impl(np.argmax))
argmin_p = Primitive("argmin", fusion=REDUCTION)
argmin_p.def_abstract_eval(_arg_abstract("argmin"))
argmin_p.def_impl(_arg_impl(np.argmin))


def argmax(operand: Any, axis: int, index_dtype: Any):
    (operand,) = as_lax_operands("argmax", operand)
    axes = normalize_axes(axis, get_aval(operand).ndim)
    return argmax_p.bind(operand, axes=axes, index_dtype=dtypes.check_user_dtype(index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any):
    (operand,) = as_lax_operands("argmin", operand)
    axes = normalize_axes(axis, get_aval(operand).ndim)
    return argmin_p.bind(operand, axes=axes, index_dtype=dtypes.check_user_dtype(index_dtype))


# --- transformation rules: JVP, transpose (reduce_sum), batching -----------------------------

def _kept_dims(ndim: int, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = aval_of(x).shape
    return [broadcast_in_dim(ct, shape, _kept_dims(len(shape), axes))]


def _reduce_prod_jvp(primals, tangents, *, axes):
    """The JVP of a pairwise product tree over the reduced elements: no division, so zeros in
    the operand are handled exactly (as in JAX)."""
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
        if n % 2:  # one more factor 1 (with tangent 0)
            one = get_aval(x).update(shape=(1,) + rest)
            x = concatenate([x, full_like_aval(one, 1)], 0)
            t = concatenate([t, full_like_aval(one, 0)], 0)
            n += 1
        a, b = slice_in_dim(x, 0, n, 2), slice_in_dim(x, 1, n, 2)
        ta, tb = slice_in_dim(t, 0, n, 2), slice_in_dim(t, 1, n, 2)
        x, t = mul(a, b), add(mul(ta, b), mul(a, tb))
        n //= 2
    return out, reshape(t, rest)


def _reduce_chooser_jvp(g, ans, x, *, axes):
    """Ties share the tangent equally (JAX's rule for max and min reductions)."""
    aval = get_aval(x)
    at_extreme = eq(x, broadcast_in_dim(ans, aval.shape, _kept_dims(aval.ndim, axes)))
    where = convert_element_type(at_extreme, aval.dtype)
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


__all__ = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
           "reduce_xor", "argmax", "argmin"]
