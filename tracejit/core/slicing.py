"""jax.ds (pl.ds, dslice): a slice given by a start, which may be traced, and a static size,
for x[...] (numpy/_indexing.py lowers one with a traced start to a dynamic_slice, or with a
stride to a gather). Core: the indexing of arrays and of Refs reads it."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .pytree import register_pytree_node


def _is_static(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


class Slice:
    """A slice with a start index and a size (each static or traced) and a static stride:
    elements start, start + stride, ... (size of them). (JAX's is a dataclass: the same
    fields, repr and equality, unhashable.)"""
    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: Any, stride: int = 1):
        if stride < 0:
            raise ValueError("`stride` must be >= 0.")
        self.start, self.size, self.stride = start, size, stride

    def __repr__(self) -> str:
        return f"Slice(start={self.start!r}, size={self.size!r}, stride={self.stride!r})"

    def __eq__(self, other: Any) -> Any:
        if type(other) is not Slice:
            return NotImplemented
        return (self.start, self.size, self.stride) == (other.start, other.size, other.stride)

    __hash__ = None  # type: ignore[assignment]

    @property
    def is_dynamic_start(self) -> bool:
        return not _is_static(self.start)

    @property
    def is_dynamic_size(self) -> bool:
        return not _is_static(self.size)

    def tree_flatten(self):
        # a static start or size is part of the structure, as in JAX
        return ((self.start if self.is_dynamic_start else None,
                 self.size if self.is_dynamic_size else None),
                (None if self.is_dynamic_start else self.start,
                 None if self.is_dynamic_size else self.size, self.stride))

    @classmethod
    def tree_unflatten(cls, aux_data, children) -> Slice:
        start, size = (a if a is not None else b for a, b in zip(children, aux_data[:2]))
        return cls(start, size, aux_data[2])

    @classmethod
    def from_slice(cls, slc: slice, size: int) -> Slice:
        start, stop, step = slc.indices(size)
        if step < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {step})")
        return cls(start, len(range(start, stop, step)), step)


register_pytree_node(Slice, Slice.tree_flatten, Slice.tree_unflatten)


class _NotSpecified:
    pass


_NOT_SPECIFIED = _NotSpecified()


def ds(start: Any, size: Any = _NOT_SPECIFIED, stride: int | None = None) -> slice | Slice:
    """A slice with a start (static or traced) and a static size, as the builtin slice reads:
    ds(None) is `:`, ds(j) is `:j`, ds(i, j) is `i:i+j`, ds(i, j, stride) is `i:i+j:stride`;
    `x[jax.ds(i, n)]` with a traced `i` is a dynamic slice of n elements."""
    if start is None:
        if isinstance(size, _NotSpecified):
            return slice(None, None, stride)
        start = 0
    if stride is None:
        stride = 1
    if not isinstance(stride, int):
        raise ValueError("Non-static stride in `dslice`")
    if isinstance(size, _NotSpecified):
        start, size = 0, start
    if _is_static(size):
        size = operator.index(size)
    return Slice(start, size, stride)


dslice = ds
