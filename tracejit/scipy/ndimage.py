"""jax.scipy.ndimage.map_coordinates: interpolation of an array at given coordinates, nearest
(order 0) or linear (order 1), with SciPy's boundary modes (user-facing layer)."""
from __future__ import annotations

import functools
import itertools
import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..lax import lenient as lax


def _mirror(index: Any, size: int) -> Any:
    """Reflect about the edge samples: ... 2 1 | 0 1 2 ... n-1 | n-2 ..."""
    s = size - 1
    return jnp.abs((index + s) % (2 * s) - s) if s > 0 else jnp.zeros_like(index)


def _reflect(index: Any, size: int) -> Any:
    """Reflect about the edges themselves: ... 1 0 | 0 1 ... n-1 | n-1 n-2 ..."""
    return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(a: Any) -> Any:
    return a if dtypes.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest(coordinate: Any) -> list:
    return [(_round_half_away(coordinate).astype(np.int32), 1.)]


def _linear(coordinate: Any) -> list:
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant",
                    cval: Any = 0.0) -> Any:
    """input interpolated at the points coordinates[d] (one array per input axis)."""
    x = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, x.dtype)
    if len(coords) != x.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {x.ndim}")
    fixer = _INDEX_FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode "
                                  f"{mode}. Currently supported modes are {set(_INDEX_FIXERS)}.")
    if order not in (0, 1):
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires "
                                  "order<=1")
    nodes_of = _nearest if order == 0 else _linear
    per_axis = []
    for coordinate, size in zip(coords, x.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            valid = (index >= 0) & (index < size) if mode == "constant" else None
            nodes.append((fixer(index, size), valid, weight))
        per_axis.append(nodes)
    terms = []
    for combo in itertools.product(*per_axis):
        indices = tuple(i for i, _, _ in combo)
        # an index outside the array is masked below; clip it so the gather stays in bounds
        safe = tuple(jnp.clip(i, 0, s - 1) for i, s in zip(indices, x.shape))
        value = x[safe]
        masks = [v for _, v, _ in combo if v is not None]
        if masks:
            value = jnp.where(functools.reduce(operator.and_, masks), value, cval)
        terms.append(functools.reduce(operator.mul, [w for _, _, w in combo]) * value)
    result = functools.reduce(operator.add, terms)
    if dtypes.issubdtype(x.dtype, np.integer):
        result = _round_half_away(result)
    return result.astype(x.dtype)
