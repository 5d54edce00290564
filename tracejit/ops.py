"""jax.ops: segment reductions (segment_sum, _prod, _min, _max), each one scatter into an array
of `num_segments` rows filled with the reduction's identity (JAX's construction; compiled like
any scatter). User-facing; loaded on first use (`jax.ops`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import dtypes
from .core.trace import concrete_value
from .numpy import _util as _np_util
from . import numpy as jnp


def _identity(op: str, dtype: np.dtype) -> Any:
    if op == "add":
        return 0
    if op == "multiply":
        return 1
    low = op == "max"  # (the identity of max is the lowest value, of min the highest)
    if dtype == np.bool_:
        return not low
    if dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        return info.min if low else info.max
    return -np.inf if low else np.inf


def _segment_update(name: str, op: str, data: Any, segment_ids: Any, num_segments: Any,
                    indices_are_sorted: bool, unique_indices: bool, bucket_size: int | None,
                    reducer: Any, mode: Any) -> Any:
    _np_util.check_arraylike(name, data, segment_ids)
    mode = "drop" if mode is None else mode  # (FILL_OR_DROP: ids out of range are dropped)
    data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
    dtype = data.dtype
    if num_segments is None:
        num_segments = np.max(np.asarray(segment_ids)) + 1  # (needs concrete ids, as in JAX)
    num_segments = int(concrete_value(
        num_segments, f"{name}() `num_segments` argument must be concrete (a Python int)."))
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
              wrap_negative_indices=False)
    if bucket_size is None:
        out = jnp.full((num_segments,) + data.shape[1:], _identity(op, dtype), dtype=dtype)
        return getattr(out.at[segment_ids], op)(data, **kw)
    # per bucket of bucket_size ids, then reduced over the buckets (steadier sums, JAX's reason)
    num_buckets = -(-segment_ids.size // bucket_size)
    out = jnp.full((num_buckets, num_segments) + data.shape[1:], _identity(op, dtype),
                   dtype=dtype)
    idx = (jnp.arange(segment_ids.shape[0]) // bucket_size, segment_ids[None, :])
    return reducer(getattr(out.at[idx], op)(data, **kw), axis=0).astype(dtype)


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None, out_sharding: Any = None):
    """The sum of `data`'s rows per segment id (ids outside [0, num_segments) dropped)."""
    return _segment_update("segment_sum", "add", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jnp.sum, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: Any = None, out_sharding: Any = None):
    """The product of `data`'s rows per segment id (1 for an empty segment)."""
    return _segment_update("segment_prod", "multiply", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jnp.prod, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None, out_sharding: Any = None):
    """The maximum of `data`'s rows per segment id (-inf, or the lowest int, when empty)."""
    return _segment_update("segment_max", "max", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jnp.max, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None, out_sharding: Any = None):
    """The minimum of `data`'s rows per segment id (inf, or the highest int, when empty)."""
    return _segment_update("segment_min", "min", data, segment_ids, num_segments,
                           indices_are_sorted, unique_indices, bucket_size, jnp.min, mode)


__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
