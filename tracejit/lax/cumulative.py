"""Cumulative primitives (cumsum, cumprod, cummax, cummin, cumlogsumexp) with their rules.

Each scans one axis, forwards or (`reverse=True`) backwards; shape, dtype and weak type are kept.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.jvp_trace import jvp_flat
from ..core.primitive import Primitive
from ..core.rules import def_axis_batching, def_linear
from ._base import FLOAT, NUM, as_lax_operands, check_dtype
from .control_flow import associative_scan
from .elementwise import add, exp, log, max, min, mul, stop_gradient, sub  # noqa: A004


def _cumulative_abstract(name: str, kinds: str):
    def abstract(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        check_dtype(name, x, kinds)
        # as jax.lax: the axis is not normalised, so a negative one is an error
        if axis < 0:
            raise ValueError("XLA operations do not allow negative axes")
        if axis >= x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
        return x
    return abstract


def _cumulative_impl(accumulate: Callable):
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        # float16 accumulates in float32, as XLA on CPU does (a running f16 sum stalls at 2048)
        work = np.float32 if x.dtype in (np.float16, dtypes.bfloat16) else x.dtype
        src = np.flip(x, axis) if reverse else x
        with np.errstate(all="ignore"):
            out = accumulate(src.astype(work), axis=axis, dtype=work).astype(x.dtype)
        return np.flip(out, axis) if reverse else out
    return impl


def cumulative(name: str, accumulate: Callable, kinds: str = NUM) -> Primitive:
    p = Primitive(name)
    p.def_abstract_eval(_cumulative_abstract(name, kinds))
    p.def_impl(_cumulative_impl(accumulate))
    return p


# np.maximum/np.minimum propagate NaN, so once a NaN is seen every later entry is NaN (as XLA)
cumsum_p = cumulative("cumsum", np.cumsum)
cumprod_p = cumulative("cumprod", np.cumprod)
cummax_p = cumulative("cummax", np.maximum.accumulate)
cummin_p = cumulative("cummin", np.minimum.accumulate)


def _complex_logaddexp(acc: np.ndarray, x: np.ndarray) -> np.ndarray:
    """JAX's complex logaddexp, cumlogsumexp's combine (backend/llvm/complex_ops.logaddexp has
    the same steps): the larger of acc, x in (re, im) order as m, m + log1p(exp(acc + x - 2m))
    with 2m as XLA's product by (2, 0), the imaginary part wrapped into [-π, π)."""
    part = acc.real.dtype.type
    first = np.where(acc.real == x.real, acc.imag > x.imag, acc.real > x.real)
    m = np.where(first, acc, x)
    two_m = np.empty_like(m)
    two_m.real = m.real * part(2) - m.imag * part(0)
    two_m.imag = m.real * part(0) + m.imag * part(2)
    r = m + np.log1p(np.exp((acc + x) - two_m))
    pi, two_pi = part(np.pi), part(2 * np.pi)
    w = np.fmod(r.imag + pi, two_pi)
    out = np.empty_like(r)
    out.real, out.imag = r.real, np.where(w < 0, w + two_pi, w) - pi
    return out


def _logaddexp_accumulate(x: np.ndarray, axis: int, dtype) -> np.ndarray:
    """np.logaddexp.accumulate; complex operands fold JAX's combine from -inf + 0j."""
    if not np.iscomplexobj(x):
        return np.logaddexp.accumulate(x, axis=axis, dtype=dtype)
    acc = np.full(np.delete(x.shape, axis), complex(-np.inf, 0.0), x.dtype)
    out = np.empty_like(x)
    for i in range(x.shape[axis]):
        acc = _complex_logaddexp(acc, np.take(x, i, axis))
        out[(slice(None),) * axis + (i,)] = acc
    return out


cumlogsumexp_p = cumulative("cumlogsumexp", _logaddexp_accumulate, FLOAT)


def _cumulative(name: str, prim: Primitive, operand: Any, axis: int, reverse: bool):
    (operand,) = as_lax_operands(name, operand)
    return prim.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False):
    """The running sums of `operand` along `axis` (non-negative);
    `reverse=True` scans from the end."""
    return _cumulative("cumsum", cumsum_p, operand, axis, reverse)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False):
    """The running products of `operand` along `axis` (non-negative);
    `reverse=True` scans from the end."""
    return _cumulative("cumprod", cumprod_p, operand, axis, reverse)


def cummax(operand: Any, axis: int = 0, reverse: bool = False):
    """The running maxima of `operand` along `axis` (non-negative);
    `reverse=True` scans from the end."""
    return _cumulative("cummax", cummax_p, operand, axis, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False):
    """The running minima of `operand` along `axis` (non-negative);
    `reverse=True` scans from the end."""
    return _cumulative("cummin", cummin_p, operand, axis, reverse)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False):
    """The running log(sum(exp(...))) of `operand` along `axis` (non-negative);
    `reverse=True` scans from the end."""
    return _cumulative("cumlogsumexp", cumlogsumexp_p, operand, axis, reverse)

# --- transformation rules: JVP, transpose (cumsum), batching ---------------------------------

def _logaddexp(a, b):
    m = stop_gradient(max(a, b))  # only shifts the exponents: it needs no derivative
    return add(m, log(add(exp(sub(a, m)), exp(sub(b, m)))))


def _cumulative_jvp(prim: Primitive, combine: Callable):
    """The tangent of the same prefix combination written as an associative scan (as JAX)."""
    def jvp(primals, tangents, *, axis, reverse):
        out = prim.bind(*primals, axis=axis, reverse=reverse)
        _, (t_out,) = jvp_flat(lambda x: [associative_scan(combine, x, reverse, axis)],
                               primals, tangents)
        return out, t_out
    return jvp


def_linear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])
for _p, _combine in ((cumprod_p, mul), (cummax_p, max), (cummin_p, min),
                     (cumlogsumexp_p, _logaddexp)):
    _p.def_jvp(_cumulative_jvp(_p, _combine))
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
    def_axis_batching(_p)


__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
