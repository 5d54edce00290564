"""The vocabulary of transformation rules, and the rule families lax primitives register with.

JVP rule:       jvp(primals, tangents, **params) -> (primal_out, tangent_out); tangents may be
                symbolic `Zero`s. Families: `defjvp`, `defjvp2`, `def_linear`.
Transpose rule: transpose(ct, *args, **params) -> one cotangent per arg (None where the arg is
                not linear); linear args arrive as `UndefinedPrimal`, ct is never Zero (a list
                with possible Zeros for multiple-result primitives).
Batch rule:     batch(vals, dims, **params) -> (out, out_dim); a dim is an int or `not_mapped`.
                Families: `def_vectorized`, `def_broadcasting`, `def_reducer_batching`,
                `def_axis_batching`.

It sits in core, below lax: lax registers its primitives' rules with these families. The rules
build values with four lax primitives (add, broadcast_in_dim, reduce_sum, transpose), which lax
hands over with `use_lax_primitives` once it has defined them; no rule runs before that.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .array import Array
from .avals import ShapedArray
from .primitive import Primitive
from .trace import get_aval


class _LaxPrimitives:
    """The lax primitives the rules below bind (set by `use_lax_primitives`)."""
    add_p: Primitive
    broadcast_in_dim_p: Primitive
    reduce_sum_p: Primitive
    transpose_p: Primitive


_lax = _LaxPrimitives()


def use_lax_primitives(*, add_p: Primitive, broadcast_in_dim_p: Primitive,
                       reduce_sum_p: Primitive, transpose_p: Primitive) -> None:
    _lax.add_p = add_p
    _lax.broadcast_in_dim_p = broadcast_in_dim_p
    _lax.reduce_sum_p = reduce_sum_p
    _lax.transpose_p = transpose_p


def _broadcast(x: Any, sizes: tuple[int, ...]) -> Any:
    """lax.broadcast: x with leading dimensions `sizes` (never the identity where used here)."""
    shape = get_aval(x).shape
    dims = tuple(range(len(sizes), len(sizes) + len(shape)))
    return _lax.broadcast_in_dim_p.bind(x, shape=sizes + shape, broadcast_dimensions=dims)


# --- symbolic zeros and undefined primals --------------------------------------------------

class Zero:
    """A tangent or cotangent known to be zero: no array is built for it."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal(x: Any) -> Zero:
        return Zero(tangent_aval(get_aval(x)))

    from_primal_value = from_primal  # JAX's name (jax.interpreters.ad.Zero)

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear input of an equation being transposed: only its type is known."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


not_mapped = None  # the batch dimension of an unbatched value


def is_undefined(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def aval_of(x: Any) -> ShapedArray:
    """The type of a transpose rule's argument, defined or not."""
    return x.aval if type(x) is UndefinedPrimal else get_aval(x)


def differentiable(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of integer and boolean values have JAX's empty dtype float0."""
    if differentiable(aval):
        return aval
    return ShapedArray(aval.shape, dtypes.float0)


def full_like_aval(aval: ShapedArray, value: Any) -> Any:
    """An array of aval's type filled with the scalar `value`."""
    fill = Array.from_numpy(np.asarray(value, aval.dtype),
                            ShapedArray((), aval.dtype, aval.weak_type))
    return _broadcast(fill, aval.shape) if aval.shape else fill


def zeros_like_aval(aval: ShapedArray) -> Any:
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    return full_like_aval(aval, 0)


def instantiate(t: Any) -> Any:
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(x: Any, y: Any) -> Any:
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return _lax.add_p.bind(x, y)


def broadcast_to_aval(x: Any, aval: ShapedArray) -> Any:
    """A rank-0 contribution to an elementwise op's tangent, broadcast to the output's shape."""
    if get_aval(x).shape == aval.shape:
        return x
    return _broadcast(x, aval.shape)


def sum_over(x: Any, axes: Sequence[int]) -> Any:
    """lax.reduce_sum, for rules of modules that lax.reductions itself imports."""
    return _lax.reduce_sum_p.bind(x, axes=tuple(sorted(axes)))


def unbroadcast(aval: ShapedArray, ct: Any) -> Any:
    """The cotangent of a rank-0 operand that an elementwise op broadcast."""
    if get_aval(ct).shape == aval.shape:
        return ct
    return sum_over(ct, range(get_aval(ct).ndim))


def _sum_parts(parts: list, aval: ShapedArray) -> Any:
    out: Any = Zero(tangent_aval(aval))
    for p in parts:
        if type(p) is not Zero:
            out = add_tangents(out, broadcast_to_aval(p, aval))
    return out


# --- JVP families --------------------------------------------------------------------------

def defjvp(prim: Primitive, *rules: Callable | None) -> None:
    """A JVP summed over arguments: rules[i](t_i, *primals, **params) is the output tangent's part
    due to argument i (None: no derivative with respect to that argument)."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        parts = [rule(t, *primals, **params) for rule, t in zip(rules, tangents)
                 if rule is not None and type(t) is not Zero]
        return out, _sum_parts(parts, get_aval(out))
    prim.def_jvp(jvp)


def defjvp2(prim: Primitive, *rules: Callable | None) -> None:
    """As defjvp, for rules that reuse the primal output: rules[i](t_i, out, *primals)."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        parts = [rule(t, out, *primals, **params) for rule, t in zip(rules, tangents)
                 if rule is not None and type(t) is not Zero]
        return out, _sum_parts(parts, get_aval(out))
    prim.def_jvp(jvp)


def def_linear(prim: Primitive, transpose: Callable) -> None:
    """A primitive linear in all its operands: its tangent is itself applied to the tangents."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return out, Zero.from_primal(out)
        return out, prim.bind(*[instantiate(t) for t in tangents], **params)
    prim.def_jvp(jvp)
    prim.def_transpose(transpose)


# --- batching families ---------------------------------------------------------------------

def axis_size(vals: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)


def moveaxis(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    perm = [i for i in range(get_aval(x).ndim) if i != src]
    perm.insert(dst, src)
    return _lax.transpose_p.bind(x, permutation=tuple(perm))


def bdim_at_front(x: Any, bdim: int | None, size: int) -> Any:
    """x with its batch dimension first (an unbatched x is broadcast along a new one)."""
    if bdim is not_mapped:
        return _broadcast(x, (size,))
    return moveaxis(x, bdim, 0)


def unbatched_aval(x: Any, bdim: int | None) -> ShapedArray:
    aval = get_aval(x)
    if bdim is not_mapped:
        return aval
    return aval.update(shape=aval.shape[:bdim] + aval.shape[bdim + 1:])


def def_vectorized(prim: Primitive) -> None:
    """A unary elementwise primitive: the batch dimension passes through."""
    def batch(vals, dims, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, **params), d
    prim.def_batch(batch)


def def_broadcasting(prim: Primitive, scalar_ok: Callable[[int, int], bool] = lambda i, n: True
                     ) -> None:
    """An n-ary elementwise primitive whose rank-0 operands broadcast. `scalar_ok(i, n)` says
    whether operand i of n may stay rank-0 beside full-rank ones (select_n's cases may not)."""
    def batch(vals, dims, **params):
        avals = [unbatched_aval(v, d) for v, d in zip(vals, dims)]
        shape = max((a.shape for a in avals), key=len)
        n = len(vals)
        keep = [d is not_mapped and a.ndim == 0 and scalar_ok(i, n)
                for i, (a, d) in enumerate(zip(avals, dims))]
        batched = {d for d, k in zip(dims, keep) if not k}
        if len(batched) == 1 and None not in batched and \
                all(k or a.shape == shape for a, k in zip(avals, keep)):
            return prim.bind(*vals, **params), batched.pop()
        size = axis_size(vals, dims)
        out = []
        for x, d, a, k in zip(vals, dims, avals, keep):
            if not k:
                x = bdim_at_front(x, d, size)
                if a.shape != shape:
                    x = _lax.broadcast_in_dim_p.bind(x, shape=(size,) + shape,
                                                     broadcast_dimensions=(0,))
            out.append(x)
        return prim.bind(*out, **params), 0
    prim.def_batch(batch)


def def_reducer_batching(prim: Primitive) -> None:
    """A primitive reducing its operand over `axes` (reductions, argmax/argmin)."""
    def batch(vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        return prim.bind(x, axes=new_axes, **params), d - sum(a < d for a in axes)
    prim.def_batch(batch)


def def_axis_batching(prim: Primitive) -> None:
    """A shape-preserving primitive working along one `axis` (cumulative ops)."""
    def batch(vals, dims, *, axis, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + (axis >= d), **params), d
    prim.def_batch(batch)


# --- helpers of the rules of primitives with bodies (calls, control flow) ------------------

def nonzero_mask(tangents: Sequence[Any]) -> list[bool]:
    """Which tangents are not symbolic zeros."""
    return [type(t) is not Zero for t in tangents]


def nonzero_tangents(tangents: Sequence[Any]) -> list:
    return [t for t in tangents if type(t) is not Zero]


def with_zeros(vals: Sequence[Any], mask: Sequence[bool], avals: Sequence[ShapedArray]) -> list:
    """`vals` where `mask` is set, symbolic zeros of `avals` elsewhere."""
    it = iter(vals)
    return [next(it) if nz else Zero(tangent_aval(a)) for nz, a in zip(mask, avals)]


def batch_dims(batched: Sequence[bool], dim: int = 0) -> list[int | None]:
    return [dim if b else not_mapped for b in batched]
