"""The small modules libraries import at load time — tracejit.typing, tracejit.dtypes,
tracejit.flatten_util, tracejit.test_util, __version_info__ — against real JAX with the same
inputs: values, dtypes, weak types and errors."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


def public_names(module) -> set:
    return {n for n in dir(module) if not n.startswith("_")}


def outcome(f, *args, **kwargs):
    """f's result, or the class and message of what it raised."""
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the oracle compares any exception
        return type(e).__name__, str(e)


# --- typing ----------------------------------------------------------------------------------

def test_typing_names_are_jaxs():
    assert public_names(jax.typing) <= public_names(tracejit.typing)


@pytest.mark.parametrize("value", [1, 1.5, True, 2j, np.float32(1), np.int8(3), np.zeros(2),
                                   [1, 2], (1,), "a", None, b"x"],
                         ids=repr)
def test_arraylike_isinstance(value):
    assert isinstance(value, tracejit.typing.ArrayLike) == isinstance(value, jax.typing.ArrayLike)


def test_arraylike_accepts_our_arrays():
    assert isinstance(tnp.ones(3), tracejit.typing.ArrayLike)
    assert not isinstance(tnp.ones(3), jax.typing.ArrayLike)  # and the oracle is not fooled


def test_dtypelike_members():
    """The same union, member by member (names of the members, since the Array types differ)."""
    ours = [getattr(a, "__name__", str(a)) for a in tracejit.typing.DTypeLike.__args__]
    theirs = [getattr(a, "__name__", str(a)) for a in jax.typing.DTypeLike.__args__]
    assert ours == theirs
    for value in ["float32", np.float32, float, np.dtype("int8"), jnp.float32]:
        assert isinstance(value, tracejit.typing.SupportsDType) == hasattr(value, "dtype")


# --- dtypes ----------------------------------------------------------------------------------

def test_dtypes_names_are_jaxs():
    assert public_names(jax.dtypes) <= public_names(tracejit.dtypes)


def test_dtypes_constants():
    assert tracejit.dtypes.bfloat16 is jax.dtypes.bfloat16 is ml_dtypes.bfloat16
    assert tracejit.dtypes.float0 == jax.dtypes.float0
    assert tracejit.dtypes.finfo is jax.dtypes.finfo and tracejit.dtypes.iinfo is jax.dtypes.iinfo
    assert tracejit.dtypes.finfo(tracejit.dtypes.bfloat16).eps == 2.0 ** -7
    assert issubclass(tracejit.dtypes.prng_key, tracejit.dtypes.extended)
    assert issubclass(tracejit.dtypes.extended, np.generic)
    assert issubclass(tracejit.dtypes.TypePromotionError, ValueError)


_DTYPE_LIKES = ["float32", "int8", "uint16", "float64", "int64", "complex64", "bool", "float16",
                np.float32, np.int64, np.bool_, np.complex128, float, int, complex, bool, None,
                np.dtype("uint8"), ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16),
                ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint4, "float0"]
_CLASSES = [np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
            np.signedinteger, np.unsignedinteger, np.bool_, np.void, np.float32, np.int64,
            "float16", ml_dtypes.bfloat16]


@pytest.mark.parametrize("a", _DTYPE_LIKES, ids=repr)
def test_issubdtype(a):
    a_ = jax.dtypes.float0 if a == "float0" else a
    for b in _CLASSES + ["jax.extended", "jax.prng_key"]:
        ours_b = getattr(tracejit.dtypes, b[4:]) if str(b).startswith("jax.") else b
        jax_b = getattr(jax.dtypes, b[4:]) if str(b).startswith("jax.") else b
        assert tracejit.dtypes.issubdtype(a_, ours_b) == jax.dtypes.issubdtype(a_, jax_b), (a, b)
        assert tnp.issubdtype(a_, ours_b) == jnp.issubdtype(a_, jax_b), (a, b)


def test_issubdtype_of_typed_keys():
    ours, theirs = tracejit.random.key(0).dtype, jax.random.key(0).dtype
    for cls in ["prng_key", "extended"]:
        assert tnp.issubdtype(ours, getattr(tracejit.dtypes, cls))
        assert jnp.issubdtype(theirs, getattr(jax.dtypes, cls))
    for b in [np.generic, np.floating, np.integer, np.void]:
        assert tnp.issubdtype(ours, b) == jnp.issubdtype(theirs, b), b
    assert tnp.issubdtype(ours, ours) and jnp.issubdtype(theirs, theirs)
    assert not tnp.issubdtype(np.uint32, ours) and not jnp.issubdtype(np.uint32, theirs)
    assert not tnp.issubdtype(np.float32, tracejit.dtypes.prng_key)
    assert not tnp.issubdtype(tracejit.random.PRNGKey(0).dtype, tracejit.dtypes.prng_key)


@pytest.mark.parametrize("x64", [False, True])
def test_canonicalize_dtype(x64):
    with tracejit.enable_x64(x64), jax.enable_x64(x64):
        for d in ["float64", "int64", "uint64", "complex128", "float32", "int8", "bool",
                  float, int, complex, np.float16, ml_dtypes.bfloat16, "float0", object]:
            d_ = jax.dtypes.float0 if d == "float0" else d
            assert tracejit.dtypes.canonicalize_dtype(d_) == jax.dtypes.canonicalize_dtype(d_), d
    assert outcome(tracejit.dtypes.canonicalize_dtype, "string") == \
        outcome(jax.dtypes.canonicalize_dtype, "string")
    assert outcome(tracejit.dtypes.canonicalize_dtype, tracejit.random.key(0).dtype) == \
        outcome(jax.dtypes.canonicalize_dtype, jax.random.key(0).dtype)
    key_dtype = tracejit.random.key(0).dtype
    assert tracejit.dtypes.canonicalize_dtype(key_dtype, allow_extended_dtype=True) is key_dtype


_RESULT_ARGS = [
    (1,), (1.0,), (True,), (1j,), (None,), (np.float64,), ("int8",), (1, 2.0), (True, 1),
    (np.dtype("int8"), 1), (np.dtype("uint8"), np.dtype("int8")), ("float16", 1.0),
    (ml_dtypes.bfloat16, np.float16), (ml_dtypes.bfloat16, 1.0), ("int32", "uint32"),
    ("int64", 1.0), ("uint64", "int64"), ("complex64", np.float64), (None, "int8"),
    (np.ones(2, "int16"), 3), (np.float32(1), 2), (int, float), (bool, "uint8"),
]


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("args", _RESULT_ARGS, ids=repr)
def test_result_type(args, x64):
    with tracejit.enable_x64(x64), jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX warns of float64 requested under x32
        for flag in (False, True):
            got = tracejit.dtypes.result_type(*args, return_weak_type_flag=flag)
            expected = jax.dtypes.result_type(*args, return_weak_type_flag=flag)
            assert got == expected, (got, expected)


def test_result_type_of_arrays_keeps_weak_types():
    for make_t, make_j in [(lambda: tnp.asarray(1.0), lambda: jnp.asarray(1.0)),
                           (lambda: tnp.ones(2, "bfloat16"), lambda: jnp.ones(2, "bfloat16")),
                           (lambda: tnp.ones(2, "int8") + 1, lambda: jnp.ones(2, "int8") + 1)]:
        for other in [1, 2.5, np.float16]:
            got = tracejit.dtypes.result_type(make_t(), other, return_weak_type_flag=True)
            assert got == jax.dtypes.result_type(make_j(), other, return_weak_type_flag=True)


def test_result_type_errors_and_keys():
    assert outcome(tracejit.dtypes.result_type) == outcome(jax.dtypes.result_type)
    tk, jk = tracejit.random.key(0), jax.random.key(0)
    assert str(tracejit.dtypes.result_type(tk, tk)) == str(jax.dtypes.result_type(jk, jk))
    assert outcome(tracejit.dtypes.result_type, tk, 1.0) == \
        outcome(jax.dtypes.result_type, jk, 1.0)


@pytest.mark.parametrize("value", [1, 1.5, True, 1j, np.uint8(3), np.float16(2), np.zeros(2),
                                   np.zeros(2, ml_dtypes.bfloat16), np.ones(2, bool), "a"],
                         ids=repr)
def test_scalar_type_of(value):
    assert outcome(tracejit.dtypes.scalar_type_of, value) == \
        outcome(jax.dtypes.scalar_type_of, value)


def test_scalar_type_of_arrays():
    for dt in ["int8", "float32", "bfloat16", "bool", "complex64", "uint32"]:
        assert tracejit.dtypes.scalar_type_of(tnp.ones(2, dt)) == \
            jax.dtypes.scalar_type_of(jnp.ones(2, dt))


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float64", "complex64", "bool",
                                   bool, np.int32, ml_dtypes.bfloat16, ml_dtypes.int4,
                                   ml_dtypes.float8_e4m3fn, None, "float0"], ids=repr)
def test_itemsize_bits(dtype):
    d = jax.dtypes.float0 if dtype == "float0" else dtype
    assert outcome(tracejit.dtypes.itemsize_bits, d) == outcome(jax.dtypes.itemsize_bits, d)


def test_version_info():
    assert isinstance(tracejit.__version_info__, tuple)
    assert all(isinstance(p, int) for p in tracejit.__version_info__)
    assert ".".join(map(str, tracejit.__version_info__)) == tracejit.__version__
    assert ".".join(map(str, jax.__version_info__)) == jax.__version__  # the same convention
