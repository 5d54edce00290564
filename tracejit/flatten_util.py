"""tracejit.flatten_util: `ravel_pytree` (jax.flatten_util), a user-facing module built from lax
shape ops and pytrees, so it works eagerly and under jit, grad and vmap.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .dtypes import _dtype_of, result_type
from .lax import lenient as lax
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


class _HashablePartial:
    """functools.partial that compares (and hashes) by function and arguments, as JAX's
    HashablePartial: unravel functions of equal structure are equal, so they can be static
    arguments of jit without recompiling."""

    def __init__(self, f: Callable, *args: Any):
        self.f, self.args = f, args

    def __eq__(self, other: object) -> bool:
        return (type(other) is _HashablePartial and self.f.__code__ == other.f.__code__
                and self.args == other.args)

    def __hash__(self) -> int:
        return hash((self.f.__code__, self.args))

    def __call__(self, *args: Any) -> Any:
        return self.f(*self.args, *args)


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Ravel a pytree of arrays and scalars into one 1-D array: (flat, unravel).

    `flat` concatenates the raveled leaves, promoted to the result type of their dtypes (Python
    scalars count as their default dtypes, not weakly); `unravel(flat)` rebuilds the tree,
    casting each piece back to its leaf's dtype. A tree without leaves gives float32[0]."""
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_list = _ravel_list(leaves)
    return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef: Any, unravel_list: Callable, flat: Any) -> Any:
    return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves: list) -> tuple[Any, Callable[[Any], list]]:
    if not leaves:
        return lax.full([0], 0, "float32"), _HashablePartial(_unravel_nothing)
    from_dtypes = tuple(_dtype_of(x) for x in leaves)
    to_dtype = result_type(*from_dtypes)
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    if all(dt == to_dtype for dt in from_dtypes):
        # no conversion: the unravel function then accepts any dtype (JAX issue #7809)
        flat = lax.concatenate([lax.reshape(x, (size,)) for x, size in zip(leaves, sizes)], 0)
        return flat, _HashablePartial(_unravel_list_single_dtype, sizes, shapes)
    flat = lax.concatenate([lax.reshape(lax.convert_element_type(x, to_dtype), (size,))
                            for x, size in zip(leaves, sizes)], 0)
    return flat, _HashablePartial(_unravel_list, sizes, shapes, from_dtypes, to_dtype)


def _unravel_nothing(flat: Any) -> list:
    return []


def _unravel_list_single_dtype(sizes: tuple, shapes: tuple, flat: Any) -> list:
    chunks = lax.split(flat, sizes)
    return [lax.reshape(chunk, shape) for chunk, shape in zip(chunks, shapes)]


def _unravel_list(sizes: tuple, shapes: tuple, from_dtypes: tuple, to_dtype: np.dtype,
                  flat: Any) -> list:
    flat_dtype = _dtype_of(flat)
    if flat_dtype != to_dtype:
        raise TypeError(f"unravel function given array of dtype {flat_dtype}, "
                        f"but expected dtype {to_dtype}")
    chunks = lax.split(flat, sizes)
    with warnings.catch_warnings():  # a real leaf of a complex vector drops the imaginary part
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)  # as JAX: silently
        return [lax.convert_element_type(lax.reshape(chunk, shape), dtype)
                for chunk, shape, dtype in zip(chunks, shapes, from_dtypes)]
