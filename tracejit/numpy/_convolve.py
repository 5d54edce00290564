"""jnp.convolve and jnp.correlate (user-facing layer): one-dimensional convolutions as
lax.conv_general_dilated with one batch element and one feature, with JAX's promotion,
flipping and conjugation rules."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..lax import lenient as lax
from ._util import check_arraylike, promote_dtypes, promote_dtypes_inexact

def _conv(x: Any, y: Any, mode: str, op: str, precision: Any, preferred_element_type: Any):
    check_arraylike(op, x, y)
    if np.ndim(x) != 1 or np.ndim(y) != 1:
        raise ValueError(f"{op}() only support 1-dimensional inputs.")
    # NumPy's convolutions are inexact; with preferred_element_type the inputs keep their kind
    promote = promote_dtypes_inexact if preferred_element_type is None else promote_dtypes
    x, y = promote(x, y)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    reverse = False
    if op == "correlate":
        y = lax.conj(y) if y.dtype.kind == "c" else y
        if x.shape[0] < y.shape[0]:  # the longer input slides; the output comes out reversed
            x, y, reverse = y, x, True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = lax.rev(y, (0,))
    n = y.shape[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(n // 2, n - n // 2 - 1)]
    elif mode == "full":
        padding = [(n - 1, n - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lax.conv_general_dilated(x[None, None, :], y[None, None, :], (1,), padding,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type)[0, 0]
    return lax.rev(out, (0,)) if reverse else out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None):
    """The discrete linear convolution of two 1-d arrays ('full', 'same' or 'valid')."""
    return _conv(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None):
    """The cross-correlation of two 1-d arrays: sum_n a[n + k] * conj(v[n])."""
    return _conv(a, v, mode, "correlate", precision, preferred_element_type)


__all__ = ["convolve", "correlate"]
