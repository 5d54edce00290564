"""JAX 0.12's two polynomial primitives, with their rules: one_minus_square (1 - x², evaluated
as (1 + x)(1 - x)) and polynomial (Horner's rule). Both are elementwise; their native emitters
(backend/llvm/scalar_ops.py) chain add/sub/mul's, so native bits equal the reference's."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.rules import Zero, add_tangents, broadcast_to_aval, defjvp
from ..core.trace import Tracer, get_aval
from ._base import NUM, as_lax_operands, binop, unop
from .elementwise import add, convert_element_type, mul
from .shape import broadcast_in_dim, full


def _one_minus_square_impl(x: np.ndarray) -> np.ndarray:
    one = np.ones((), x.dtype)
    with np.errstate(all="ignore"):
        return np.multiply(np.add(one, x), np.subtract(one, x))


# (1 + x)(1 - x) keeps the bits that 1 - x·x rounds away near |x| = 1; the derivative is -2x
# itself, not the product rule's (1 - x) - (1 + x), which cancels to 0 for |x| < eps.
one_minus_square_p = unop("one_minus_square", _one_minus_square_impl, NUM)
defjvp(one_minus_square_p, lambda g, x: mul(g, mul(x, -2)))


def one_minus_square(x: Any) -> Any:
    """Elementwise 1 - x², as (1 + x)(1 - x) (JAX 0.12's lax.one_minus_square)."""
    (x,) = as_lax_operands("one_minus_square", x)
    return one_minus_square_p.bind(x)


def _unroll_threshold(unroll: int | None) -> int:
    return 8 if unroll is None else unroll


def _polynomial_impl(x: np.ndarray, *coeffs: np.ndarray, unroll: int | None = None
                     ) -> np.ndarray:
    # Past the unroll threshold JAX's lowering is a scan from 0 (0·x + a_N: NaN at x = ±inf)
    with np.errstate(all="ignore"):
        if len(coeffs) <= _unroll_threshold(unroll):
            acc = coeffs[-1]
            rest = coeffs[-2::-1]
        else:
            acc = np.zeros((), x.dtype)
            rest = coeffs[::-1]
        for c in rest:
            acc = np.add(np.multiply(acc, x), c)
    shape = np.broadcast_shapes(np.shape(x), *(np.shape(c) for c in coeffs))
    return np.broadcast_to(np.asarray(acc, x.dtype), shape)


polynomial_p = binop("polynomial", _polynomial_impl, NUM)
_broadcast_aval = polynomial_p._abstract_eval  # binop's rule, which knows no params
polynomial_p.def_abstract_eval(lambda *avals, unroll=None: _broadcast_aval(*avals))


def _polynomial_jvp(primals, tangents, *, unroll=None):
    x, *coeffs = primals
    x_dot, *coeff_dots = tangents
    y = polynomial_p.bind(x, *coeffs, unroll=unroll)
    y_aval = get_aval(y)
    y_dot: Any = Zero(y_aval)
    if type(x_dot) is not Zero:
        # p'(x) is the polynomial sum k a_k x^(k-1): differentiable again, as JAX's rule
        deriv = [mul(c, k) for k, c in enumerate(coeffs[1:], 1)]
        dy_dx = (polynomial_p.bind(x, *deriv, unroll=unroll) if len(deriv) > 1
                 else deriv[0] if deriv else mul(x, 0))
        y_dot = broadcast_to_aval(mul(x_dot, dy_dx), y_aval)
    if any(type(t) is not Zero for t in coeff_dots):
        # linear in the coefficients' tangents: Horner's rule over them by mul and add, which
        # transpose with their own rules (x is never an undefined primal here)
        acc = None
        for k in reversed(range(len(coeff_dots))):
            t = coeff_dots[k]
            acc = acc if type(t) is Zero else (t if acc is None else add(acc, t))
            if k and acc is not None:
                acc = mul(acc, x)
        y_dot = add_tangents(y_dot, broadcast_to_aval(acc, y_aval))
    return y, y_dot


polynomial_p.def_jvp(_polynomial_jvp)


def polynomial(x: Any, coeffs: Sequence[Any], *, unroll: int | None = None) -> Any:
    """a_0 + x (a_1 + x (a_2 + ... + x a_N)) for coeffs = (a_0, ..., a_N), lowest degree first
    (JAX 0.12's lax.polynomial). Scalar coefficients take x's dtype; arrays are converted to
    it; non-scalar operands of x's rank broadcast their size-1 dimensions. `unroll`: JAX
    unrolls up to that many terms (8 by default) and scans past it, starting from 0 (so 0·x
    enters: NaN at an infinite x); the result follows that arithmetic here too."""
    coeffs = tuple(coeffs)
    python_x = isinstance(x, (bool, int, float, complex))
    (x,) = as_lax_operands("polynomial", x)
    x_aval = get_aval(x)
    dtype = x_aval.dtype
    args = []
    for c in coeffs:
        if not isinstance(c, Tracer) and np.ndim(c) == 0:
            # JAX's _const(x, c): x's dtype, weak only where x is a Python scalar
            c = np.asarray(c, dtype)
            args.append(as_lax_operands("polynomial", x, c.item())[1] if python_x
                        else full((), c, dtype))
        else:
            args.append(convert_element_type(c, dtype))
    if not args:
        return full(x_aval.shape, 0, dtype)
    shapes = [get_aval(a).shape for a in (x, *args)]
    ranks = {len(s) for s in shapes if s != ()}
    if len(ranks) > 1:
        raise TypeError(f"polynomial: arrays must have the same number of dimensions, got {ranks}")
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise TypeError("polynomial got incompatible shapes for broadcasting: "
                        f"{', '.join(str(s) for s in shapes)}.") from None
    x, *args = [a if get_aval(a).shape in ((), shape)
                else broadcast_in_dim(a, shape, tuple(range(len(shape))))
                for a in (x, *args)]
    if len(args) == 1:
        return broadcast_in_dim(args[0], shape, ()) if get_aval(args[0]).shape != shape \
            else args[0]
    return polynomial_p.bind(x, *args, unroll=unroll)


__all__ = ["one_minus_square", "polynomial"]
