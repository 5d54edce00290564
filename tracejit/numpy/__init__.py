"""tracejit.numpy: NumPy's API on traced and concrete arrays (JAX's `jax.numpy`), built on lax."""
import threading as _threading

import numpy as _np

from ..core import dtypes as _dtypes
from ..core.array import BaseArray as ndarray  # noqa: F401  (jnp.ndarray is jax.Array)
from . import array_methods as _array_methods
from . import fft, linalg  # noqa: F401
from ._array_api import *  # noqa: F401,F403
from ._convolve import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._linalg import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403
from ._util import array, asarray, broadcast_shapes, broadcast_to  # noqa: F401
from ._vectorize import vectorize  # noqa: F401
from ._calculus import *  # noqa: F401,F403
from ._functional import *  # noqa: F401,F403
from ._histogram import *  # noqa: F401,F403
from ._index_tricks import *  # noqa: F401,F403
from ._io import *  # noqa: F401,F403
from ._polynomial import *  # noqa: F401,F403
from ._setops import *  # noqa: F401,F403
from ._windows import *  # noqa: F401,F403
from ._ufunc_api import *  # noqa: F401,F403  (last: jnp.add & co. become jnp.ufunc objects)


class _ScalarMeta(type):
    """jnp.float32 & co: usable as dtypes (np.dtype(jnp.float32)) and callable like
    `jnp.float32(x)`, which makes an Array (and works on tracers)."""

    @property
    def __numpy_dtype__(cls) -> _np.dtype:  # NumPy >= 2.4 asks this when comparing dtypes
        return cls.dtype

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        # by value, as JAX: jnp.int32 == x.dtype == np.int32 == "int32" is False (a string
        # is no scalar type), and np.int32 == np.dtype("int32") is NumPy's own answer
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type) -> type:
    return _ScalarMeta(np_type.__name__, (object,), {"dtype": _np.dtype(np_type)})


bool_ = _scalar_type(_np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t) for t in (_np.uint8, _np.uint16, _np.uint32,
                                                           _np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
# ml_dtypes' types, which JAX names: bfloat16, and the narrow formats libraries refer to (flax's
# fp8 layers), though tracejit computes in none of them (an array of one is refused with a
# TypeError). They are made on first use (__getattr__ below), as ml_dtypes is imported then
# (core/dtypes.py: its import was most of `import tracejit`); so is `dtype` (np.dtype), which
# reads "bfloat16" only once ml_dtypes is imported.
_ML_DTYPES = ("bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
              "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
              "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1",
              "uint2", "uint4")
_lazy_lock = _threading.Lock()


def __getattr__(name: str):
    if name not in _ML_DTYPES and name != "dtype":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    ml = _dtypes.load_ml_dtypes()
    with _lazy_lock:  # one scalar type per name, whichever thread asks first
        if name not in globals():
            globals()[name] = _np.dtype if name == "dtype" else _scalar_type(getattr(ml, name))
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_ML_DTYPES, "dtype"})


bool = bool_  # noqa: A001 - NumPy 2's name
single, double, csingle, cdouble = float32, float64, complex64, complex128
character, flexible, object_ = _np.character, _np.flexible, _np.object_
ComplexWarning = _np.exceptions.ComplexWarning
float_ = float64
int_ = int64
uint = uint64
complex_ = complex128
inf, nan, pi, e, euler_gamma = _np.inf, _np.nan, _np.pi, _np.e, _np.euler_gamma
newaxis = None
generic, number, inexact, floating, integer = (_np.generic, _np.number, _np.inexact,
                                               _np.floating, _np.integer)
signedinteger, unsignedinteger, complexfloating = (_np.signedinteger, _np.unsignedinteger,
                                                   _np.complexfloating)
promote_types = _dtypes.promote_types
result_type = _dtypes.user_result_type
issubdtype = _dtypes.issubdtype
finfo = _dtypes.finfo_of
iinfo = _dtypes.iinfo_of

from ._ufunc_api import ufunc as _ufunc  # noqa: E402

# operators bind the plain functions under jnp's ufunc objects (a ufunc is no method descriptor)
_MISSING_METHODS = _array_methods.install(
    {**globals(), **{n: f._func for n, f in globals().items() if isinstance(f, _ufunc)}})
