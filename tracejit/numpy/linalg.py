"""tracejit.numpy.linalg (jax.numpy.linalg): norms, and the array-API spellings of the tensor
contractions in _linalg. Decompositions (svd, qr, eig, det, inv, solve) are not implemented."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from ..lax._base import canonicalize_axis, const_like
from . import _linalg
from ._reductions import max as _max
from ._reductions import min as _min
from ._reductions import sum as _sum
from ._ufuncs import absolute, conjugate, multiply, not_equal, power, real, sqrt
from ._util import asarray, check_arraylike, promote_dtypes_inexact

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "tensordot", "vecdot", "outer",
           "cross"]


def _sum_of_squares(x: Any, axis: Any, keepdims: bool) -> Any:
    return _sum(real(multiply(x, conjugate(x))), axis=axis, keepdims=keepdims)


def vector_norm(x: Any, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: float | str = 2) -> Any:
    """jnp.linalg.vector_norm: the `ord`-norm of x over `axis` (all axes by default). As in
    JAX, the input's dtype is kept (no promotion to float)."""
    check_arraylike("jnp.linalg.vector_norm", x)
    x = asarray(x)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return sqrt(_sum_of_squares(x, axis, keepdims))
    if isinstance(ord, str):
        hint = {"inf": "Use 'jax.numpy.inf' instead.", "-inf": "Use '-jax.numpy.inf' instead."}
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint.get(ord, '')}")
    if ord == np.inf:
        return _max(absolute(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _min(absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return _sum(not_equal(x, 0), dtype=dtypes.finfo_of(get_aval(x).dtype).dtype, axis=axis,
                    keepdims=keepdims)
    if ord == 1:
        return _sum(absolute(x), axis=axis, keepdims=keepdims)
    abs_x = absolute(x)
    aval = get_aval(abs_x).strip_weak_type()
    # ord and 1/ord take abs(x)'s dtype, as JAX's lax._const does
    out = _sum(power(abs_x, const_like(aval, ord)), axis=axis, keepdims=keepdims)
    return power(out, const_like(aval, 1.0 / ord))


def norm(x: Any, ord: float | str | None = None, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Any:
    """jnp.linalg.norm: a vector norm over one axis or a matrix norm over two ('fro', 1, -1,
    inf, -inf); with axis=None and ord=None the 2-norm of all elements."""
    check_arraylike("jnp.linalg.norm", x)
    (x,) = promote_dtypes_inexact(x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return sqrt(_sum_of_squares(x, None, keepdims))
        axis = tuple(range(ndim))
    elif isinstance(axis, tuple):
        axis = tuple(canonicalize_axis(a, ndim) for a in axis)
    else:
        axis = (canonicalize_axis(axis, ndim),)
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                         "compute a vector-norm, or two axes to compute a matrix-norm.")
    row, col = axis
    if ord is None or ord in ("f", "fro"):
        return sqrt(_sum_of_squares(x, axis, keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if ord in (1, -1):  # max/min over columns of the column sums
        reduce_axis, outer_axis = row, col
    elif ord in (np.inf, -np.inf):  # max/min over rows of the row sums
        reduce_axis, outer_axis = col, row
    elif ord in ("nuc", 2, -2):
        raise NotImplementedError(f"jnp.linalg.norm with ord={ord!r} for matrices needs "
                                  "singular values (SVD), which tracejit does not implement; use "
                                  "ord='fro', 1, -1, inf or -inf.")
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if not keepdims and outer_axis > reduce_axis:
        outer_axis -= 1
    sums = _sum(absolute(x), axis=reduce_axis, keepdims=keepdims)
    if ord > 0:
        return _max(sums, axis=outer_axis, keepdims=keepdims, initial=0)
    return _min(sums, axis=outer_axis, keepdims=keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: float | str = "fro") -> Any:
    """jnp.linalg.matrix_norm: norm over the last two axes."""
    check_arraylike("jnp.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """jnp.linalg.matmul: jnp.matmul with positional-only operands."""
    return _linalg.matmul(x1, x2, precision=precision,
                          preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """jnp.linalg.tensordot: jnp.tensordot with keyword-only `axes`."""
    return _linalg.tensordot(x1, x2, axes, precision=precision,
                             preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """jnp.linalg.vecdot: conj(x1) . x2 along `axis`."""
    return _linalg.vecdot(x1, x2, axis=axis, precision=precision,
                          preferred_element_type=preferred_element_type)


def outer(x1: Any, x2: Any, /) -> Any:
    """jnp.linalg.outer: outer product of two 1-D arrays."""
    check_arraylike("jnp.linalg.outer", x1, x2)
    n1, n2 = get_aval(asarray(x1)).ndim, get_aval(asarray(x2)).ndim
    if n1 != 1 or n2 != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} "
                         f"x2.ndim={n2}")
    return _linalg.outer(x1, x2)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """jnp.linalg.cross: cross product of 3-vectors along `axis`."""
    check_arraylike("jnp.linalg.cross", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    n1 = s1[canonicalize_axis(axis, len(s1))]
    n2 = s2[canonicalize_axis(axis, len(s2))]
    if n1 != 3 or n2 != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={n1} and x2.shape[axis]={n2}")
    return _linalg.cross(x1, x2, axis=axis)

