"""jax.scipy.stats' sample statistics: mode, rankdata and sem (user-facing layer). Ranks and
counts come from one sort and binary searches in it, so they trace with static shapes."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ... import numpy as jnp
from ...core import dtypes
from ...lax._base import canonicalize_axis
from ...numpy._util import check_arraylike, promote_args_inexact
from ...transforms.api import vmap


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(f"In order to best JIT compile `{name}`, we cannot know "
                                  "whether `x` contains nans. Please check if nans exist in "
                                  f"`x` outside of the `{name}` function.")


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most common value along `axis` (the smallest of equally common ones) and its
    count."""
    check_arraylike("mode", a)
    x = jnp.atleast_1d(a)
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        axis = canonicalize_axis(axis, x.ndim)
    shape = x.shape
    if keepdims:
        out_shape = tuple(1 if axis is None or i == axis else s for i, s in enumerate(shape))
    else:
        out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
    if axis is None:
        axis, x = 0, x.ravel()
    x = jnp.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))

    def one(column):
        if column.size == 0:
            nan = jnp.array(np.nan, dtype=dtypes.default_float())
            return nan, jnp.array(0, dtype=dtypes.default_float())
        s = jnp.sort(column)
        counts = jnp.searchsorted(s, s, side="right") - jnp.searchsorted(s, s, side="left")
        best = jnp.argmax(counts)         # the first maximum in sorted order: the smallest
        return s[best], counts[best].astype(dtypes.default_int())
    vals, counts = vmap(one, in_axes=1)(x)
    return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Any:
    """Ranks 1..n of the data ("average", "min", "max", "dense" or "ordinal" for ties); NaN
    everywhere if any element is NaN."""
    check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    a = jnp.asarray(a)
    if axis is not None:
        axis = canonicalize_axis(axis, a.ndim)
        moved = jnp.moveaxis(a, axis, -1)
        flat = moved.reshape(-1, moved.shape[-1])
        ranks = vmap(lambda row: rankdata(row, method))(flat)
        return jnp.moveaxis(ranks.reshape(moved.shape), -1, axis)
    a = jnp.ravel(a)
    out_dtype = dtypes.default_float()
    s = jnp.sort(a)
    if method == "ordinal":
        ranks = jnp.argsort(jnp.argsort(a, stable=True), stable=True) + 1
    elif method == "dense":
        first = jnp.concatenate([jnp.array([True]), s[1:] != s[:-1]])
        ranks = jnp.cumsum(first)[jnp.searchsorted(s, a, side="left")]
    else:
        low = jnp.searchsorted(s, a, side="left") + 1        # the "min" rank
        high = jnp.searchsorted(s, a, side="right")          # the "max" rank
        ranks = {"min": low, "max": high}.get(method, (low + high) / 2)
    ranks = jnp.asarray(ranks).astype(out_dtype)
    return jnp.where(jnp.any(jnp.isnan(a)), np.nan, ranks).astype(out_dtype)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
    """The standard error of the mean: std(ddof) / sqrt(n)."""
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
        return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / \
            jnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
