"""Host-side helpers of tracejit.numpy: printing, files and buffers (thin wrappers of NumPy's,
as in JAX), and the constructors JAX refuses because they may be impure."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from ._util import asarray

__all__ = ["array_repr", "array_str", "get_printoptions", "set_printoptions", "printoptions",
           "frombuffer", "fromstring", "fromfile", "fromiter", "load", "save", "savez",
           "iterable"]

# NumPy's own: they print/serialise the concrete value (our Array converts with np.asarray)
array_repr, array_str = np.array_repr, np.array_str
get_printoptions, set_printoptions, printoptions = (
    np.get_printoptions, np.set_printoptions, np.printoptions)
save, savez, iterable = np.save, np.savez, np.iterable

_IMPURE = ("jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
           "with JIT and other JAX transformations. Consider using jnp.asarray(np.{name}(...)) "
           "instead, although care should be taken if np.{name} is used within a jax "
           "transformations because of its potential side-effect of consuming the {what} "
           "object; for more information see "
           "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions")


def fromfile(*args: Any, **kwargs: Any):
    """Refused as in JAX: reading a file is a side effect; use jnp.asarray(np.fromfile(...))."""
    raise NotImplementedError(_IMPURE.format(name="fromfile", what="file"))


def fromiter(*args: Any, **kwargs: Any):
    """Refused as in JAX: consuming an iterator is a side effect; use
    jnp.asarray(np.fromiter(...))."""
    raise NotImplementedError(_IMPURE.format(name="fromiter", what="iterable"))


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0):
    """An Array holding a copy of a buffer's bytes read as `dtype` (numpy.frombuffer)."""
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str):
    """An Array of the numbers in a text string separated by `sep` (numpy.fromstring)."""
    return asarray(np.fromstring(string=string, dtype=dtype, count=count, sep=sep))


def load(file: Any, *args: Any, **kwargs: Any):
    """numpy.load, returning an Array for a .npy array (bfloat16, saved by NumPy as two-byte
    voids, recovered as JAX does); other contents (npz archives, objects) come back as is."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":
            out = out.view(np.dtype(dtypes.load_ml_dtypes().bfloat16))
        try:
            out = asarray(out)
        except (TypeError, ValueError):  # a dtype Arrays cannot hold: NumPy's array
            pass
    return out
