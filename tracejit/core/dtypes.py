"""Dtypes: JAX's canonicalisation (32-bit unless x64), weak types and type-promotion lattice.

Everything that decides a result dtype asks this module; nothing else hard-codes promotion.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from typing import Any

import numpy as np

from .config import ExplicitX64Mode, config

# ml_dtypes (bfloat16, float8_*, int4, ...) is imported on first need, not with tracejit: its
# import takes ~0.4 s of CPU with NumPy < 2.5 (ml_dtypes 0.7 registers ~40,000 ufunc loops and
# NumPy < 2.5 checks each against every loop registered before it), most of `import tracejit`.
# A dtype of ml_dtypes' can reach us only once ml_dtypes is imported (by the user, or by us for
# a name like "bfloat16" or an attribute like jnp.bfloat16): `np_dtype` and the slow paths of
# the checks below see such a dtype (a user-defined one, isbuiltin == 2) and call
# `load_ml_dtypes`, which adds bfloat16 to the tables. Until then `bfloat16` is a stand-in dtype
# that equals no array's dtype, so `dtype == dtypes.bfloat16` needs no import to say False.
_ml_dtypes = None
bfloat16 = np.dtype([("bfloat16 (ml_dtypes not imported yet)", np.void, 0)])
_load_lock = threading.Lock()

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# float0: the dtype of tangents of integer values (used by the autodiff issue).
float0 = np.dtype([("float0", np.void, 0)])


class TypePromotionError(ValueError):
    """Raised when JAX type promotion fails (jax.dtypes.TypePromotionError)."""


# --- extended dtypes (typed PRNG keys): not NumPy dtypes, but their scalar classes sit in
# NumPy's scalar hierarchy, so issubdtype(key.dtype, prng_key) works as in JAX.

class extended(np.generic):  # lower case: JAX's name
    """Abstract scalar class of extended dtypes; exists for `issubdtype`, never instantiated."""


class prng_key(extended):  # lower case: JAX's name
    """Abstract scalar class of PRNG key dtypes: `issubdtype(key.dtype, prng_key)` is True."""


class ExtendedDType:
    """Base of extended dtype objects (a typed key's `key<fry>`): `type` is its scalar class."""
    type: type = extended

_supported = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, float32, float64, complex64, complex128}

_x64_to_x32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def load_ml_dtypes():
    """Import ml_dtypes (once) and add its bfloat16 to the tables; returns the module."""
    global _ml_dtypes, bfloat16
    with _load_lock:
        if _ml_dtypes is None:
            import ml_dtypes

            bfloat16 = np.dtype(ml_dtypes.bfloat16)
            _supported.add(bfloat16)
            _CUSTOM_KINDS.update(_custom_kinds(ml_dtypes))
            _ml_dtypes = ml_dtypes
    return _ml_dtypes


def _new_to_us(dtype: np.dtype) -> bool:
    """Whether `dtype` is a user-defined one (ml_dtypes') met before ml_dtypes was loaded here;
    then it is loaded, so the caller can look `dtype` up again."""
    if _ml_dtypes is None and dtype.isbuiltin == 2:
        load_ml_dtypes()
        return True
    return False


def np_dtype(x: Any) -> np.dtype:
    """np.dtype(x), where x may also name or be one of ml_dtypes' types ("bfloat16")."""
    try:
        dtype = np.dtype(x)
    except TypeError:
        if _ml_dtypes is not None or not isinstance(x, str):
            raise
        load_ml_dtypes()
        return np.dtype(x)
    _new_to_us(dtype)
    return dtype


def is_supported(dtype: np.dtype) -> bool:
    return dtype in _supported or (_new_to_us(dtype) and dtype in _supported)


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype values of `dtype` really get: 64-bit types shrink unless x64 is enabled."""
    try:  # (np.dtype first: this is on every operation's path)
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = np_dtype(dtype)
    if dtype not in _supported and not is_supported(dtype):
        raise TypeError(f"JAX only supports number and bool dtypes, got {dtype}")
    if not config.jax_enable_x64:
        return _x64_to_x32.get(dtype, dtype)
    return dtype


def default_int() -> np.dtype:
    return int64 if config.jax_enable_x64 else int32


def default_uint() -> np.dtype:
    return uint64 if config.jax_enable_x64 else uint32


def default_float() -> np.dtype:
    return float64 if config.jax_enable_x64 else float32


def default_complex() -> np.dtype:
    return complex128 if config.jax_enable_x64 else complex64


def default_for_kind(kind: str) -> np.dtype:
    return {"b": bool_, "i": default_int(), "u": default_uint(), "f": default_float(),
            "c": default_complex()}[kind]


def _issubclass(a: Any, b: Any) -> bool:
    try:
        return issubclass(a, b)
    except TypeError:
        return False


def _scalar_class(x: Any) -> type:
    """The scalar class of a dtype-like (np.float32 for 'float32', jnp.int8, dtype('i1'), ...)."""
    if isinstance(x, type) and _issubclass(x, np.generic):
        if _ml_dtypes is None and x.__module__ == "ml_dtypes":
            load_ml_dtypes()
        return x
    return np_dtype(x).type


# ml_dtypes' scalar classes JAX knows (bfloat16, float8_*, int4, ...) -> the NumPy abstract
# class they belong under: they do not subclass np.floating / np.integer themselves.
_CUSTOM_FLOATS = ("bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                  "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn",
                  "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def _custom_kinds(ml) -> dict:
    kinds = {getattr(ml, n): np.floating for n in _CUSTOM_FLOATS}
    kinds.update({ml.int2: np.signedinteger, ml.int4: np.signedinteger,
                  ml.uint2: np.unsignedinteger, ml.uint4: np.unsignedinteger})
    return kinds


_CUSTOM_KINDS: dict = {}  # filled by load_ml_dtypes


def issubdtype(a: Any, b: Any) -> bool:
    """JAX's issubdtype: NumPy's, extended to typed-key dtypes (`prng_key`, `extended`) and to
    ml_dtypes' types (bfloat16 is a floating type, int4 a signed integer one)."""
    if isinstance(b, type) and _issubclass(b, extended):
        if isinstance(a, ExtendedDType):
            return _issubclass(a.type, b)
        return _issubclass(_scalar_class(a), b)
    if isinstance(b, ExtendedDType):
        return isinstance(a, ExtendedDType) and a == b
    if isinstance(a, ExtendedDType):
        a = a.type
    a_sc, b_sc = _scalar_class(a), _scalar_class(b)
    kind = _CUSTOM_KINDS.get(a_sc)
    if kind is not None:
        parents = {np.floating: (np.inexact,), np.signedinteger: (np.integer,),
                   np.unsignedinteger: (np.integer,)}[kind]
        return b_sc in {a_sc, kind, *parents, np.number, np.generic}
    return bool(np.issubdtype(a_sc, b_sc))


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or (dtype.kind == "V" and (  # (bfloat16's kind is "V")
        dtype == bfloat16 or (_new_to_us(dtype) and dtype == bfloat16)))


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_inexact(dtype: np.dtype) -> bool:
    return is_float(dtype) or dtype.kind == "c"


def to_inexact(dtype: np.dtype) -> np.dtype:
    """JAX's float for a bool/int dtype: float32 up to 32-bit ints, float64 for 64-bit ones
    (so with x64 on, jnp.mean(int32) is still float32)."""
    if is_inexact(dtype):
        return dtype
    return canonicalize_dtype(float64 if dtype.itemsize == 8 else float32)


# --- the promotion lattice -------------------------------------------------------------------
# Nodes are concrete dtypes plus the three weak kinds of Python scalars. JAX's lattice:
# bool < i* < {u8, i8}; u8 < {u16, i16}; ...; {u64, i64} < f* < {f16, bf16, c*}; ... < c128.
_I, _F, _C = "i*", "f*", "c*"
_weak_kinds = {_I: "i", _F: "f", _C: "c"}


def _upper_bounds(bf16: np.dtype) -> dict:
    ub: dict = {
        bool_: [_I],
        _I: [uint8, int8],
        uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_F],
        int8: [int16], int16: [int32], int32: [int64], int64: [_F],
        _F: [float16, _C, bf16],
        float16: [float32], float32: [float64, complex64], float64: [complex128],
        _C: [complex64], complex64: [complex128], complex128: [],
        bf16: [float32],
    }
    return ub


def _closures() -> dict:
    return _closures_with(bfloat16)


@functools.cache
def _closures_with(bf16: np.dtype) -> dict:
    """The lattice's upward closures, for the `bfloat16` of the moment (a stand-in until
    ml_dtypes is loaded; nodes without it have the same bounds either way)."""
    ub = _upper_bounds(bf16)
    out = {}
    for node in ub:
        seen, stack = {node}, [node]
        while stack:
            for nxt in ub[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        out[node] = frozenset(seen)
    return out


@functools.cache
def _least_upper_bound(*nodes) -> Any:
    closures = _closures()
    common = frozenset.intersection(*(closures[n] for n in nodes))
    for candidate in common:
        if closures[candidate] >= common:
            return candidate
    raise TypeError(f"no common type for {nodes}")  # unreachable: c128 bounds everything


# jax_numpy_dtype_promotion="strict": JAX's strict lattice, where two different strong dtypes
# have no bound at all; only a weak Python scalar joins a dtype of its kind or above (an int
# scalar any int, float or complex; a float scalar any float or complex; a complex one a complex)
def _strict_closures() -> dict:
    return _strict_closures_with(bfloat16)


@functools.cache
def _strict_closures_with(bf16: np.dtype) -> dict:
    ints = [uint8, uint16, uint32, uint64, int8, int16, int32, int64]
    floats = [float16, float32, float64, bf16]
    out: dict = {node: frozenset([node]) for node in _upper_bounds(bf16)}
    out[_C] = frozenset([_C, complex64, complex128])
    out[_F] = out[_C] | {_F, *floats}
    out[_I] = out[_F] | {_I, *ints}
    return out


def _strict_bound(nodes: list) -> Any:
    """The least upper bound of `nodes` on the strict lattice, or JAX's TypePromotionError
    naming the input dtypes (Python's scalar types for weak ones, in JAX's set order)."""
    closures = _strict_closures()
    common = frozenset.intersection(*(closures[n] for n in nodes))
    for candidate in common:
        if closures[candidate] >= common:
            return candidate
    pytypes = {_I: int, _F: float, _C: complex}
    names = tuple(str(pytypes.get(n, n)) for n in {pytypes.get(n, n) for n in nodes})
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
        "type, or set jax_numpy_dtype_promotion=standard.")


def _node(dtype: np.dtype, weak: bool):
    if weak and dtype != bool_:
        return {"i": _I, "u": _I, "f": _F, "c": _C}[dtype.kind if dtype != bfloat16 else "f"]
    return dtype


def dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak_type) of an operand: Python scalars are weak, arrays carry their flag."""
    if isinstance(x, np.generic):  # np.float64 subclasses float but is strongly typed
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, bool):
        return bool_, False
    if isinstance(x, int):
        return default_int(), True
    if isinstance(x, float):
        return default_float(), True
    if isinstance(x, complex):
        return default_complex(), True
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if x is int:
        return default_int(), True
    if x is float:
        return default_float(), True
    if x is complex:
        return default_complex(), True
    if x is bool:
        return bool_, False
    dtype = canonicalize_dtype(x)
    if dtype.itemsize != np_dtype(x).itemsize and \
            config.jax_explicit_x64_dtypes == ExplicitX64Mode.ALLOW:
        return np_dtype(x), False  # (a 64-bit dtype named explicitly, kept: JAX's dtype())
    return dtype, False


def result_type_and_weak(*args: Any) -> tuple[np.dtype, bool]:
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = [dtype_and_weak(a) for a in args]
    dts = [d for d, _ in pairs]
    weaks = [w for _, w in pairs]
    if len(pairs) == 1:
        dtype, weak = pairs[0]
    elif len(set(dts)) == 1 and not all(weaks):
        dtype, weak = dts[0], False
    elif all(weaks):
        # bound of the strong counterparts, weak at the end (avoids weak int16 and the like)
        node = _least_upper_bound(*{_node(d, True) for d in dts})
        dtype, weak = node, True
    elif config.jax_numpy_dtype_promotion == "strict":
        node = _strict_bound([_node(d, w) for d, w in zip(dts, weaks)])
        dtype, weak = node, node in _weak_kinds
    else:
        node = _least_upper_bound(*{_node(d, w) for d, w in zip(dts, weaks)})
        dtype, weak = node, node in _weak_kinds
    if isinstance(dtype, str):
        return default_for_kind(_weak_kinds[dtype]), weak
    if weak:
        return default_for_kind("f" if is_float(dtype) else dtype.kind), True
    canonical = canonicalize_dtype(dtype)
    if canonical != dtype and dtype in dts and \
            config.jax_explicit_x64_dtypes == ExplicitX64Mode.ALLOW:
        return dtype, False  # (an operand's 64-bit dtype survives; one promotion invents not)
    return canonical, False


def result_type(*args: Any, return_weak_type_flag: bool = False):
    dtype, weak = result_type_and_weak(*args)
    return (dtype, weak) if return_weak_type_flag else dtype


def promote_types(a: Any, b: Any) -> np.dtype:
    """jnp.promote_types: promotion of two dtypes, both taken as strong."""
    # Python's int, float and complex are weak, as in JAX: promote_types(float, "float16") is
    # float16 (NumPy's is float64)
    na, nb = _weak_or_dtype(a), _weak_or_dtype(b)
    strict = config.jax_numpy_dtype_promotion == "strict"
    node = _strict_bound([na, nb]) if strict else _least_upper_bound(na, nb)
    if isinstance(node, str):  # JAX answers the 64-bit default here, x64 or not
        return {"i": int64, "f": float64, "c": complex128}[_weak_kinds[node]]
    # A 64-bit input's promotions survive (JAX's x32 lattice keeps float64 + complex64 =
    # complex128, int64 + uint64 = float64); a 64-bit type promoting 32-bit ones invents (int32
    # + uint32) does not.
    return node if na in _x64_to_x32 or nb in _x64_to_x32 else canonicalize_dtype(node)


_PYTHON_WEAK = {int: _I, float: _F, complex: _C}


def _weak_or_dtype(x: Any) -> Any:
    """promote_types' lattice node of x: a Python scalar type's weak node, else x's dtype (JAX's
    ValueError for one outside the lattice)."""
    if isinstance(x, type) and x in _PYTHON_WEAK:
        return _PYTHON_WEAK[x]
    dtype = np_dtype(x)
    if not is_supported(dtype):
        raise ValueError(f"dtype={dtype!r} is not a valid dtype for JAX type promotion.")
    return dtype


def check_user_dtype(dtype: Any, name: str = "dtype", fun_name: str | None = None) -> np.dtype:
    """Parse a user-given dtype argument; a clear TypeError if it is not one. A 64-bit dtype
    named explicitly (not a Python type) with x64 off is what `jax_explicit_x64_dtypes` says:
    truncated with JAX's UserWarning naming the tracejit function the user called (`fun_name`:
    that name; "": none), refused, or kept."""
    if dtype is None:
        raise TypeError(f"{name} must not be None here")
    if dtype is int:
        return default_int()
    if dtype is float:
        return default_float()
    if dtype is complex:
        return default_complex()
    if dtype is bool:
        return bool_
    try:
        parsed = np_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{name}={dtype!r} is not a valid dtype") from e
    if parsed not in _supported:
        raise TypeError(f"JAX only supports number and bool dtypes, got {name}={parsed}")
    return explicit_dtype(parsed, fun_name)


def explicit_dtype(dtype: np.dtype, fun_name: str | None = None) -> np.dtype:
    """`dtype`, named explicitly by the user, as JAX's jax_explicit_x64_dtypes has it with x64
    off: WARN truncates a 64-bit one with JAX's UserWarning, ERROR raises JAX's ValueError,
    ALLOW keeps it (values made from it are 64-bit)."""
    canonical = canonicalize_dtype(dtype)
    if canonical == dtype:
        return dtype
    mode = config.jax_explicit_x64_dtypes
    if mode == ExplicitX64Mode.ALLOW:
        return dtype
    if fun_name is None:
        fun_name = _outermost_public_name()
    where = f" requested in {fun_name}" if fun_name else ""
    if mode == ExplicitX64Mode.ERROR:
        # (JAX's words, its missing space after "options." included)
        raise ValueError(f"Explicitly requested dtype {dtype}{where} is not available. To enable "
                         "more dtypes, set the jax_enable_x64 or allow_explicit_x64_dtypes "
                         "configuration options.See https://github.com/jax-ml/jax#current-gotchas "
                         "for more.")
    _warn_at_user_line(
        f"Explicitly requested dtype {dtype}{where} is not available, and will be truncated to "
        f"dtype {canonical.name}. To enable more dtypes, set the jax_enable_x64 configuration "
        "option or the JAX_ENABLE_X64 shell environment variable. See "
        "https://github.com/jax-ml/jax#current-gotchas for more.")
    return canonical


def _is_dtype_spec(x: Any) -> bool:
    """Whether x names a dtype (a string, a np.dtype, a NumPy scalar type), as JAX's dtype()
    tells them from values and Python types, which are canonical without a word."""
    return isinstance(x, (str, np.dtype)) or (isinstance(x, type) and issubclass(x, np.generic))


def user_result_type(*args: Any, return_weak_type_flag: bool = False):
    """jnp.result_type and jax.dtypes.result_type: `result_type`, where a 64-bit dtype named
    explicitly is first what jax_explicit_x64_dtypes says (JAX's dtype(): "requested in
    dtype"), at the user's line; None counts as the default float."""
    if not config.jax_enable_x64:
        for a in args:
            if _is_dtype_spec(a) and (dtype := np_dtype(a)) in _x64_to_x32:
                explicit_dtype(dtype, "dtype")
        if any(a is None for a in args):  # (np.dtype(None): float64, which "allow" keeps)
            args = tuple(default_float() if a is None else a for a in args)
    return result_type(*args, return_weak_type_flag=return_weak_type_flag)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outermost_public_name() -> str:
    """The outermost public function among the tracejit frames of this call (what the user
    called: `zeros`, `astype`, `convert_element_type`), "" if none."""
    frame, outermost = sys._getframe(1), ""
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        if not frame.f_code.co_name.startswith(("_", "<")):
            outermost = frame.f_code.co_name
        frame = frame.f_back
    return outermost


def _warn_at_user_line(message: str) -> None:
    """A UserWarning located at the user's line: the first frame outside tracejit (JAX's own
    stacklevel points into JAX for some entry points, result_type's among them)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, UserWarning, stacklevel=3)
        return
    module = frame.f_globals.get("__name__", "")
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           module, registry, frame.f_globals)


def short_name(dtype: np.dtype) -> str:
    """JAX's short dtype names for printing avals: f32, i32, u8, bool, bf16."""
    if dtype == bfloat16:
        return "bf16"
    if dtype == bool_:
        return "bool"
    if dtype == float0:
        return "float0"
    return f"{dtype.kind}{dtype.itemsize * 8}"


def finfo_of(dtype: Any):
    dtype = np_dtype(dtype)
    if dtype == bfloat16:
        return _ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def iinfo_of(dtype: Any):
    dtype = np_dtype(dtype)
    if dtype.isbuiltin == 2:  # ml_dtypes' (int4, uint4, ...): NumPy's iinfo does not know them
        return load_ml_dtypes().iinfo(dtype)
    return np.iinfo(dtype)
