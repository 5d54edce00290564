"""The Python Array API's additions to tracejit.numpy (as JAX's jax.numpy has them): the
namespace's version and inspection object, dtype kinds (isdtype), can_cast, astype and DLPack
import. Array's side (__array_namespace__, to_device, __dlpack__) is in array_methods / core."""
from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.devices import check_device, devices
from ..lax import lenient as lax
from ._util import array, asarray, check_arraylike

__all__ = ["__array_api_version__", "__array_namespace_info__", "isdtype", "can_cast",
           "astype", "from_dlpack"]

__array_api_version__ = "2024.12"


def _kinds() -> dict[str, list[np.dtype]]:
    """The dtypes of each kind: with ml_dtypes' only once it is loaded (before that, no dtype
    of its can be asked about: core/dtypes.py loads it on meeting one)."""
    return _dtype_kinds(dtypes._ml_dtypes)


@functools.cache
def _dtype_kinds(ml: Any) -> dict[str, list[np.dtype]]:
    def _ml_dtypes(*names: str) -> list[np.dtype]:
        """The narrow ml_dtypes types JAX lists in its kinds (those this ml_dtypes provides)."""
        return [np.dtype(getattr(ml, n)) for n in names if ml is not None and hasattr(ml, n)]

    signed = _ml_dtypes("int1", "int2", "int4") + [dtypes.int8, dtypes.int16, dtypes.int32,
                                                   dtypes.int64]
    unsigned = _ml_dtypes("uint1", "uint2", "uint4") + [dtypes.uint8, dtypes.uint16,
                                                        dtypes.uint32, dtypes.uint64]
    real = _ml_dtypes("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                      "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                      "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "bfloat16") + \
        [dtypes.float16, dtypes.float32, dtypes.float64]
    complex_ = [dtypes.complex64, dtypes.complex128]
    return {"bool": [dtypes.bool_], "signed integer": signed, "unsigned integer": unsigned,
            "integral": signed + unsigned, "real floating": real, "complex floating": complex_,
            "numeric": signed + unsigned + real + complex_}



def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind`: a kind name ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating', 'complex floating', 'numeric'), a dtype, or a tuple of these."""
    the_dtype = dtypes.np_dtype(dtype)
    options: set[np.dtype] = set()
    kinds = _kinds()
    for k in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(k, str) and k in kinds:
            options.update(kinds[k])
            continue
        try:
            options.add(dtypes.np_dtype(k))
        except TypeError as e:
            if isinstance(k, str):
                raise ValueError(f"Unrecognized kind={k!r} expected one of {list(kinds)}, "
                                 "or a compatible input for jnp.dtype()") from None
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") \
                from e
    return the_dtype in options


can_cast = np.can_cast  # JAX's jnp.can_cast is NumPy's (dtypes and arrays, NEP 50 rules)


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """`x` converted to `dtype` (None: the default float). Complex to bool tests x != 0;
    complex to real keeps the real part with JAX's DeprecationWarning."""
    check_arraylike("astype", x)
    check_device(device, "astype")
    x = asarray(x)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype)
    if x.dtype.kind == "c":
        if isdtype(dtype, ("integral", "real floating")):
            warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. "
                          "Please first use jnp.real or jnp.imag to take the real/imaginary "
                          "component of your input.", DeprecationWarning, stacklevel=2)
            x = lax.real(x)
        elif dtype == dtypes.bool_:
            x = lax.ne(x, lax.full_like(x, 0))
    out = lax.convert_element_type(x, dtype)
    return array(out, copy=True) if copy and out is x else out


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """An Array of the DLPack-exporting `x` (a NumPy array, another library's tensor, an Array).
    The data is copied in unless copy=False."""
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        "__dlpack_device__ methods.")
    check_device(device, "from_dlpack")
    if copy is not False:
        return asarray(np.from_dlpack(x))
    # copy=False: a read-only view of the producer's buffer (writing to it afterwards is, as in
    # JAX, undefined behaviour); a value that needs converting cannot be shared
    v = np.from_dlpack(x, copy=False)
    if not (dtypes.is_supported(v.dtype) and dtypes.canonicalize_dtype(v.dtype) == v.dtype
            and v.flags.c_contiguous):
        raise ValueError(f"from_dlpack(copy=False): a {v.dtype} buffer of strides {v.strides} "
                         "needs a copy to become an array. Set copy=True or copy=None.")
    view = v.view()
    view.flags.writeable = False
    return Array(view, ShapedArray(view.shape, view.dtype, False))


class ArrayNamespaceInfo:
    """What `__array_namespace_info__()` answers: capabilities, devices and dtypes."""

    _capabilities = {"boolean indexing": False,  # within transformations
                     "data-dependent shapes": False,  # within transformations
                     "max dimensions": 64}

    def capabilities(self) -> dict:
        return self._capabilities

    def default_device(self) -> None:
        return None  # arrays are uncommitted by default, as JAX's

    def devices(self) -> list:
        return [None, *devices()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        del device  # the same on every device
        return {"real floating": dtypes.default_float(),
                "complex floating": dtypes.default_complex(),
                "integral": dtypes.default_int(), "indexing": dtypes.default_int()}

    def dtypes(self, *, device: Any = None, kind: str | tuple[str, ...] | None = None) -> dict:
        del device
        names = {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
                 "complex64"}
        if config.jax_enable_x64:
            names |= {"int64", "uint64", "float64", "complex128"}
        table = {k: {d.name: d for d in ds if d.name in names} for k, ds in _kinds().items()}
        if kind is None:
            return table["numeric"] | table["bool"]
        out: dict = {}
        for k in kind if isinstance(kind, tuple) else (kind,):
            out |= table[k]
        return out


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API's inspection object of this namespace."""
    return ArrayNamespaceInfo()
