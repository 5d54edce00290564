"""jax.scipy.interpolate: RegularGridInterpolator (user-facing layer), built from jnp's
searchsorted, gathers and where, so it lowers natively under jit and maps under vmap/grad."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..core.pytree import register_pytree_node
from ..numpy._util import check_arraylike, promote_dtypes_inexact

_METHODS = ("linear", "nearest")


def _check_method(method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined")


def _points_array(xi: Any, ndim: int) -> Any:
    """The sample points as one (..., ndim) array, from an array or a tuple of coordinates."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        coords = jnp.broadcast_arrays(*xi)
        # JAX stacks coordinate tuples as the default float dtype
        return jnp.stack([jnp.asarray(c, dtype=float) for c in coords], axis=-1)
    check_arraylike("RegularGridInterpolator", xi)
    xi = jnp.asarray(xi)
    if xi.ndim == 1:
        xi = xi.reshape(-1, ndim)
    return xi


class RegularGridInterpolator:
    """Interpolate on a regular rectangular grid (`scipy.interpolate.RegularGridInterpolator`).

    points: N strictly increasing 1-D grid axes; values: array whose first N axes match them;
    method: "linear" or "nearest"; fill_value: returned outside the grid (NaN by default,
    None extrapolates). bounds_error=True is refused: a data-dependent error cannot be raised
    under jit. Like JAX, a decreasing axis is not supported.
    """

    def __init__(self, points: Any, values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        _check_method(method)
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        check_arraylike("RegularGridInterpolator", values)
        if len(points) > jnp.ndim(values):
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{jnp.ndim(values)} dimensions")
        values, = promote_dtypes_inexact(values)
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 "with values")
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        lead = xi.shape[:-1]
        flat = xi.reshape(-1, ndim)
        indices, fractions, outside = self._locate(flat)
        if method == "linear":
            result = self._linear(indices, fractions)
        else:
            result = self._nearest(indices, fractions)
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = jnp.where(mask, self.fill_value, result)
        return result.reshape(lead + self.values.shape[ndim:])

    def _locate(self, flat: Any) -> tuple[list, list, Any]:
        """Per axis: the cell's left index, the fraction of the way across it, and whether
        the point lies outside the grid (points outside use the edge cell, extrapolating)."""
        indices, fractions = [], []
        outside = jnp.zeros((flat.shape[0],), dtype=bool)
        for axis, g in enumerate(self.grid):
            x = flat[:, axis]
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            lo, hi = g[i], g[i + 1]
            indices.append(i)
            fractions.append((x - lo) / (hi - lo))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, fractions, outside

    def _linear(self, indices: list, fractions: list) -> Any:
        # weights broadcast over the trailing (non-grid) axes of values
        tail = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        total = None
        for corner in itertools.product((0, 1), repeat=len(indices)):
            weight = None
            for upper, t in zip(corner, fractions):
                w = t if upper else 1 - t
                weight = w if weight is None else weight * w
            idx = tuple(i + upper for upper, i in zip(corner, indices))
            term = self.values[idx] * weight[tail]
            total = term if total is None else total + term
        return total

    def _nearest(self, indices: list, fractions: list) -> Any:
        idx = tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(indices, fractions))
        return self.values[idx]


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(children[0], children[1], aux[0], aux[1],
                                                  children[2]),
)
