"""Histograms of tracejit.numpy (histogram, histogram2d, histogramdd, histogram_bin_edges):
bins found by searchsorted on the edges and counted by scatter-add, so the number of bins is
static (an int or an edges array) while the data, range and weights may be traced."""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.trace import concrete_value, get_aval
from ._creation import linspace, ones_like, zeros
from ._indexing import ix_, ravel_multi_index, where
from ._sorting import bincount, searchsorted
from ._calculus import diff
from ._shape import transpose
from ._util import asarray, check_arraylike, promote_dtypes_inexact

_builtin_range = range  # the functions below take a `range` argument, as NumPy's

__all__ = ["histogram_bin_edges", "histogram", "histogram2d", "histogramdd"]


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,  # noqa: A002
                        weights: Any = None):
    """The bin edges histogram would use: `bins` itself if an array, else bins + 1 equal steps
    over range (a's min and max by default; widened by 0.5 each way when empty)."""
    del weights  # NumPy uses them only for string bins, which JAX does not support
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = asarray(a)
    dtype = dtypes.to_inexact(get_aval(arr).dtype)
    if np.ndim(bins) == 1:
        return asarray(bins, dtype=dtype)
    n = operator.index(concrete_value(bins, "bins argument of histogram_bin_edges"))
    if range is None:
        range = [arr.min(), arr.max()]  # noqa: A001
    r = asarray(range, dtype=dtype)
    if get_aval(r).shape != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    empty = r[1] == r[0]
    lo, hi = where(empty, r[0] - 0.5, r[0]), where(empty, r[1] + 0.5, r[1])
    return linspace(lo, hi, n + 1, dtype=dtype)


def histogram(a: Any, bins: Any = 10, range: Sequence | None = None,  # noqa: A002
              weights: Any = None, density: bool | None = None) -> tuple:
    """(counts, bin_edges) of a's values; the last bin includes its right edge, values outside
    the edges are not counted; density divides by the total and the bin widths."""
    if weights is None:
        check_arraylike("histogram", a, bins)
        (a,) = promote_dtypes_inexact(asarray(a))
        weights = ones_like(a)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, weights = promote_dtypes_inexact(asarray(a), asarray(weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    n_edges = get_aval(edges).shape[0]
    # bin 0 collects values below the first edge and is dropped; values past the last edge
    # land at index n_edges and are dropped by the scatter
    idx = searchsorted(edges, a, side="right")
    idx = where(a == edges[-1], n_edges - 1, idx)
    counts = zeros(n_edges, get_aval(weights).dtype).at[idx].add(weights)[1:]
    if density:
        counts = counts / diff(edges) / counts.sum()
    return counts, edges


def histogramdd(sample: Any, bins: Any = 10, range: Sequence | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple:
    """(hist, [edges per dimension]) of N points in D dimensions (sample of shape (N, D))."""
    if weights is None:
        check_arraylike("histogramdd", sample)
        (sample,) = promote_dtypes_inexact(asarray(sample))
    else:
        check_arraylike("histogramdd", sample, weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = promote_dtypes_inexact(asarray(sample), asarray(weights))
    N, D = get_aval(sample).shape
    if range is not None and (len(range) != D or any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                         f"Nones; got range={range!r}")
    try:
        bins_per_dim = list(bins)
    except TypeError:
        bins_per_dim = D * [bins]
    else:
        if len(bins_per_dim) != D:
            raise ValueError("should be a bin for each dimension.")
    indices, edges = [], []
    for i in _builtin_range(D):
        e = histogram_bin_edges(sample[:, i], bins_per_dim[i],
                                None if range is None else range[i], weights)
        idx = searchsorted(e, sample[:, i], side="right")
        indices.append(where(sample[:, i] == e[-1], idx - 1, idx))
        edges.append(e)
    # one outlier bin each side of every dimension, counted then cut away
    nbins = tuple(get_aval(e).shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(indices), nbins, mode="clip")
    hist = bincount(flat, weights, length=math.prod(nbins)).reshape(nbins)
    hist = hist[D * (slice(1, -1),)]
    if density:
        hist = hist.astype(get_aval(sample).dtype)
        hist = hist / hist.sum()
        for width in ix_(*(diff(e) for e in edges)):
            hist = hist / width
    return hist, edges



def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple:
    """(hist, x_edges, y_edges) of the points (x[i], y[i])."""
    check_arraylike("histogram2d", x, y)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:  # one edges array shared by both axes
        bins = [asarray(bins), asarray(bins)]
    sample = transpose(asarray([asarray(x), asarray(y)]))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]
