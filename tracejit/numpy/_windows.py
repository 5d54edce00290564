"""Window functions of tracejit.numpy (bartlett, blackman, hamming, hanning, kaiser): JAX's
formulas over an iota of the default float dtype, so jit compiles them to one small kernel."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.trace import concrete_value
from ..lax import lenient as lax
from ._creation import full
from ._elementwise import i0
from ._ufuncs import abs as _abs
from ._ufuncs import cos, sqrt

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _length(M: Any, name: str) -> int:
    return operator.index(concrete_value(M, f"M argument of jnp.{name}"))


def _iota(M: int):
    """(n, None) for n = 0..M-1 in the default float dtype, or (None, ones) when M <= 1."""
    dtype = dtypes.default_float()
    if M <= 1:
        return None, full((max(M, 0),), 1, dtype)
    return lax.iota(dtype, M), None


def bartlett(M: int):
    """The Bartlett (triangular) window of M points."""
    n, short = _iota(_length(M, "bartlett"))
    return short if n is None else 1 - _abs(2 * n + 1 - M) / (M - 1)


def blackman(M: int):
    """The Blackman window of M points."""
    n, short = _iota(_length(M, "blackman"))
    if n is None:
        return short
    return 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1))


def hamming(M: int):
    """The Hamming window of M points."""
    n, short = _iota(_length(M, "hamming"))
    return short if n is None else 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1))


def hanning(M: int):
    """The Hann window of M points."""
    n, short = _iota(_length(M, "hanning"))
    return short if n is None else 0.5 * (1 - cos(2 * np.pi * n / (M - 1)))


def kaiser(M: int, beta: Any):
    """The Kaiser window of M points with shape parameter beta (may be traced)."""
    n, short = _iota(_length(M, "kaiser"))
    if n is None:
        return short
    alpha = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
