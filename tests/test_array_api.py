"""The Array API surface of tracejit.numpy against real JAX: scalar-type equality and hashing,
__array_namespace__ and its info object, isdtype, can_cast, astype, devices, DLPack and the
signatures of the logical functions — same answers, dtypes and error types for the same inputs."""
import inspect
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tests.jax_oracle import assert_matches

jax = pytest.importorskip("jax")
jnp = jax.numpy
# JAX warns when x64 is off and a 64-bit dtype is asked for (both libraries truncate alike);
# NumPy's can_cast (JAX's too) deprecates an array argument alike for both
pytestmark = [
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
    pytest.mark.filterwarnings("ignore:Implicit conversion of an array:DeprecationWarning"),
]

NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "complex64", "complex128", "bfloat16"]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """Both libraries in the same x64 mode (JAX's flag restored afterwards)."""
    saved = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    tracejit.config.update("jax_enable_x64", request.param)
    yield request.param
    jax.config.update("jax_enable_x64", saved)


def _answers(f, *args):
    """f(ns, *args) for both namespaces: the value, or the exception's class."""
    out = []
    for ns in (tnp, jnp):
        try:
            out.append(f(ns, *args))
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            out.append(type(e))
    return out


def _same(f, *args):
    got, expected = _answers(f, *args)
    assert got == expected, (got, expected)
    return got


# --- scalar types compare, hash and convert as JAX's ----------------------------------------

_EQUALITIES = {
    "type == array dtype": lambda ns, a, b: getattr(ns, a) == ns.zeros(2, getattr(ns, b)).dtype,
    "array dtype == type": lambda ns, a, b: ns.zeros(2, getattr(ns, b)).dtype == getattr(ns, a),
    "type != array dtype": lambda ns, a, b: getattr(ns, a) != ns.zeros(2, getattr(ns, b)).dtype,
    "type == np type": lambda ns, a, b: getattr(ns, a) == getattr(np, b.replace("bf", "f")),
    "np type == type": lambda ns, a, b: getattr(np, b.replace("bf", "f")) == getattr(ns, a),
    "type == np.dtype": lambda ns, a, b: getattr(ns, a) == np.dtype(getattr(ns, b)),
    "type == type": lambda ns, a, b: getattr(ns, a) == getattr(ns, b),
    "type in dtypes": lambda ns, a, b: getattr(ns, a) in [ns.zeros(1, getattr(ns, b)).dtype],
}


@pytest.mark.parametrize("check", list(_EQUALITIES), ids=list(_EQUALITIES))
def test_scalar_type_equality(check, x64):
    f = _EQUALITIES[check]
    for a in NAMES:
        for b in ["int32", "int64", "float32", "float64", "bool_", "uint8", "bfloat16", a]:
            got, expected = _answers(f, a, b)
            assert got == expected, (check, a, b, got, expected)


@pytest.mark.parametrize("name", NAMES)
def test_scalar_type_as_dtype(name):
    _same(lambda ns: np.dtype(getattr(ns, name)))
    _same(lambda ns: ns.dtype(getattr(ns, name)))
    _same(lambda ns: hash(getattr(ns, name)) == hash(np.dtype(getattr(ns, name)).type))
    _same(lambda ns: {getattr(ns, name): 1}.get(np.dtype(getattr(ns, name)).type))
    _same(lambda ns: getattr(ns, name) == np.dtype(getattr(ns, name)).name)  # a string: no
    _same(lambda ns: isinstance(np.zeros((), getattr(ns, name))[()], getattr(ns, name)))
    _same(lambda ns: np.zeros(2, getattr(ns, name)).dtype == getattr(ns, name))


@pytest.mark.parametrize("name", ["int32", "float32", "bool_", "complex64", "uint8"])
def test_scalar_type_call(name):
    assert_matches(getattr(tnp, name)(3), getattr(jnp, name)(3))
    assert_matches(getattr(tnp, name)([1, 0]), getattr(jnp, name)([1, 0]))
    _same(lambda ns: getattr(ns, name)())  # the value is required: TypeError in both


# --- __array_namespace__ and __array_namespace_info__ ---------------------------------------

def test_array_namespace():
    assert tnp.__array_api_version__ == jnp.__array_api_version__
    assert tnp.arange(3).__array_namespace__() is tnp
    assert tnp.arange(3).__array_namespace__(api_version=None) is tnp
    for version in ["2021.12", "2023.12", "2024.12", "2025.12", "foo"]:
        got, expected = _answers(lambda ns: ns.arange(3).__array_namespace__(api_version=version)
                                 .__name__.rsplit(".", 1)[-1])
        assert got == expected, (version, got, expected)
    with pytest.raises(ValueError, match="available versions are"):
        tnp.arange(3).__array_namespace__(api_version="2021.12")
    with pytest.raises(TypeError):  # keyword-only, as JAX's
        tnp.arange(3).__array_namespace__("2024.12")
    with pytest.raises(TypeError):
        jnp.arange(3).__array_namespace__("2024.12")


def test_array_namespace_under_jit():
    seen = []

    def f(x):
        seen.append(x.__array_namespace__())
        return x.astype(tnp.float32, device=tracejit.devices()[0]).to_device(None)
    assert_matches(tracejit.jit(f)(tnp.arange(3)), jnp.arange(3).astype(jnp.float32))
    assert seen == [tnp]


def test_namespace_info(x64):
    ours, theirs = tnp.__array_namespace_info__(), jnp.__array_namespace_info__()
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_device() == theirs.default_device()
    assert [repr(d) for d in ours.devices()] == [repr(d) for d in theirs.devices()]
    assert ours.default_dtypes() == theirs.default_dtypes()
    assert ours.default_dtypes(device=None) == theirs.default_dtypes(device=None)
    kinds = [None, "bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric", ("bool", "integral"), ("real floating",
                                                                  "complex floating")]
    for kind in kinds:
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
    assert ours.dtypes(device=tracejit.devices()[0]) == theirs.dtypes(device=jax.devices()[0])
    got, expected = _answers(lambda ns: ns.__array_namespace_info__().dtypes(kind="foo"))
    assert got is expected is KeyError
    for name in ["capabilities", "default_device", "devices", "dtypes", "default_dtypes"]:
        ours_sig = inspect.signature(getattr(ours, name))
        theirs_sig = inspect.signature(getattr(theirs, name))
        assert [(p.name, p.kind, p.default) for p in ours_sig.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs_sig.parameters.values()], name


# --- isdtype and can_cast --------------------------------------------------------------------

KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", ("bool", "integral"), ("real floating", "float32"),
         "float32", "int64", ("complex floating",), ()]


@pytest.mark.parametrize("name", NAMES)
def test_isdtype(name):
    for kind in KINDS:
        for dtype in (name, np.dtype(getattr(jnp, name)).name):  # scalar type and string
            got, expected = _answers(
                lambda ns: ns.isdtype(getattr(ns, dtype, dtype),
                                      tuple(getattr(ns, k, k) for k in kind)
                                      if isinstance(kind, tuple) else getattr(ns, kind, kind)))
            assert got == expected, (name, dtype, kind, got, expected)


def test_isdtype_other_inputs():
    for dtype in [int, float, bool, complex, np.int8, "uint4", "float8_e4m3fn", "int4"]:
        for kind in KINDS[:7]:
            assert tnp.isdtype(dtype, kind) == jnp.isdtype(dtype, kind), (dtype, kind)
    for bad in ["foo", 3, [np.int32], ("integral", "foo"), None]:
        got, expected = _answers(lambda ns: ns.isdtype(np.int32, bad))
        assert got == expected, (bad, got, expected)
    with pytest.raises(ValueError, match="Unrecognized kind"):
        tnp.isdtype(np.int32, "foo")


def test_can_cast():
    casts = ["no", "equiv", "safe", "same_kind", "unsafe"]
    for a in NAMES:
        for b in NAMES:
            for casting in casts:
                got, expected = _answers(
                    lambda ns: ns.can_cast(getattr(ns, a), getattr(ns, b), casting=casting))
                assert got == expected, (a, b, casting, got, expected)
    for value in [np.arange(3, dtype=np.int16), 1, 1.0]:
        _same(lambda ns: ns.can_cast(ns.asarray(value), ns.float32))
        _same(lambda ns: ns.can_cast(value, ns.float32))


# --- astype ------------------------------------------------------------------------------

ASTYPE_INPUTS = [np.arange(-2, 3, dtype=np.int32), np.array([-1.5, 0.0, 2.7], np.float32),
                 np.array([True, False]), np.array([0, 255], np.uint8), 3, 2.5, True]


@pytest.mark.parametrize("value", ASTYPE_INPUTS, ids=lambda v: type(v).__name__ +
                         str(getattr(v, "dtype", "")))
def test_astype(value, x64):
    for dtype in [None, "float32", "int8", "uint32", "bool", "float16", "int64", "complex64",
                  int, float, bool, "bfloat16"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # JAX warns when x64 is off and int64 asked for
            expected = jnp.astype(jnp.asarray(value), dtype)
            expected_method = jnp.asarray(value).astype(dtype)
        got = tnp.astype(tnp.asarray(value), dtype)
        assert_matches(got, expected)
        assert_matches(tnp.asarray(value).astype(dtype), expected_method)
        assert_matches(tnp.astype(value, dtype), jnp.astype(value, dtype))


def test_astype_complex():
    z = np.array([1.5 + 2j, 0j, -3j], np.complex64)
    assert_matches(tnp.astype(tnp.asarray(z), bool), jnp.astype(jnp.asarray(z), bool))
    for dtype in ["float32", "int32"]:
        with pytest.warns(DeprecationWarning, match="complex to real"):
            expected = jnp.astype(jnp.asarray(z), dtype)
        with pytest.warns(DeprecationWarning, match="complex to real"):
            got = tnp.astype(tnp.asarray(z), dtype)
        assert_matches(got, expected)


def test_astype_copy_and_errors():
    for lib in (tnp, jnp):
        x = lib.arange(3)
        assert lib.astype(x, x.dtype) is x
        y = lib.astype(x, x.dtype, copy=True)
        assert y is not x
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    _same(lambda ns: ns.astype(ns.arange(3), "foo"))
    _same(lambda ns: ns.astype([1, 2], "float32"))
    _same(lambda ns: ns.astype(ns.arange(3), "float32", device=object()))
    _same(lambda ns: ns.astype(ns.arange(3), "float32", device="cpu"))
    assert_matches(tnp.astype(tnp.arange(3), "float32", device=tracejit.devices()[0]),
                   jnp.astype(jnp.arange(3), "float32", device=jax.devices()[0]))


# --- devices ------------------------------------------------------------------------------

CREATION = {
    "zeros": lambda ns, d: ns.zeros((2, 3), device=d),
    "ones": lambda ns, d: ns.ones(3, ns.int32, device=d),
    "full": lambda ns, d: ns.full((2,), 7, device=d),
    "empty": lambda ns, d: ns.empty((0, 2), device=d).shape,
    "arange": lambda ns, d: ns.arange(1, 7, 2, device=d),
    "linspace": lambda ns, d: ns.linspace(0, 1, 5, device=d),
    "eye": lambda ns, d: ns.eye(3, 4, 1, device=d),
    "asarray": lambda ns, d: ns.asarray([1, 2], device=d),
    "array": lambda ns, d: ns.array([1.5, 2], device=d),
    "zeros_like": lambda ns, d: ns.zeros_like(ns.arange(3), device=d),
    "ones_like": lambda ns, d: ns.ones_like(ns.arange(3.0), device=d),
    "full_like": lambda ns, d: ns.full_like(ns.arange(3), 4, device=d),
    "empty_like": lambda ns, d: ns.empty_like(ns.arange(3), device=d).shape,
    # weakly typed inputs: JAX commits full/*_like results as strong types, asarray keeps weak
    "full weak": lambda ns, d: ns.full((2,), ns.asarray(3.0), device=d),
    "full_like weak": lambda ns, d: ns.full_like(ns.asarray(3.0), 4, device=d),
    "zeros_like weak": lambda ns, d: ns.zeros_like(ns.asarray(3), device=d),
    "ones_like weak": lambda ns, d: ns.ones_like(ns.asarray(3.0), shape=(2,), device=d),
    "asarray weak": lambda ns, d: ns.asarray(3, device=d),
    "array weak": lambda ns, d: ns.array(2.5, device=d),
    "astype": lambda ns, d: ns.astype(ns.arange(3), "float32", device=d),
    "to_device": lambda ns, d: ns.arange(3).to_device(d),
}


@pytest.mark.parametrize("name", list(CREATION))
def test_device_arguments(name):
    f = CREATION[name]
    for ours_dev, jax_dev in [(None, None), (tracejit.devices()[0], jax.devices()[0])]:
        got, expected = f(tnp, ours_dev), f(jnp, jax_dev)
        assert_matches(got, expected)
        if not isinstance(expected, tuple):
            assert repr(got.device) == repr(expected.device)
            assert {repr(d) for d in got.devices()} == {repr(d) for d in expected.devices()}
    for bad in ["cpu", "gpu", 1, object()]:
        # JAX raises for each (a ValueError where it checks the argument, an AttributeError
        # where it trips over it); tracejit checks every one: a ValueError
        with pytest.raises(Exception):
            f(jnp, bad)
        with pytest.raises(ValueError, match="not a device of tracejit"):
            f(tnp, bad)


def test_device_errors_match_where_jax_checks():
    for f in [CREATION["asarray"], CREATION["astype"], CREATION["to_device"]]:
        for bad in ["cpu", 1, object()]:
            got, expected = _answers(f, bad)
            assert got is expected is ValueError
    _same(lambda ns: ns.arange(3).to_device(None, stream=1))


# --- DLPack ------------------------------------------------------------------------------

DLPACK_INPUTS = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int8),
                 np.array([True, False]), np.array(2.5), np.zeros((0, 3), np.uint16),
                 np.arange(4, dtype=np.int64), np.array([1 + 2j], np.complex64)]


@pytest.mark.parametrize("value", DLPACK_INPUTS, ids=lambda v: f"{v.dtype}{v.shape}")
def test_dlpack_export(value):
    ours, theirs = tnp.asarray(value), jnp.asarray(value)
    assert ours.__dlpack_device__() == theirs.__dlpack_device__()
    assert type(ours.__dlpack_device__()[0]).__name__ == "DLDeviceType"
    got, expected = np.from_dlpack(ours), np.from_dlpack(theirs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert got.flags.writeable == expected.flags.writeable
    for kwargs in [{}, {"max_version": (1, 0)}, {"max_version": (1, 0), "copy": True},
                   {"dl_device": (1, 0), "max_version": (1, 0)}]:
        _same(lambda ns: type(ns.asarray(value).__dlpack__(**kwargs)).__name__)


@pytest.mark.parametrize("value", DLPACK_INPUTS, ids=lambda v: f"{v.dtype}{v.shape}")
def test_from_dlpack(value, x64):
    assert_matches(tnp.from_dlpack(value), jnp.from_dlpack(value))
    assert_matches(tnp.from_dlpack(tnp.asarray(value)), jnp.from_dlpack(jnp.asarray(value)))
    assert_matches(tnp.from_dlpack(value, device=tracejit.devices()[0]),
                   jnp.from_dlpack(value, device=jax.devices()[0]))
    with pytest.raises(ValueError):
        tnp.from_dlpack(value, device="cpu")


def test_from_dlpack_errors():
    for bad in [3, [1, 2], np.arange(3, dtype=object)]:
        got, expected = _answers(lambda ns: ns.from_dlpack(bad))
        assert got is expected, (bad, got, expected)
    # copy=False with a buffer that must be converted (int64 without x64): JAX's answer depends
    # on the buffer's address (a ValueError when it is not 64-byte aligned, else a silent
    # int32 copy); tracejit's is always its ValueError
    with pytest.raises(ValueError, match="needs a copy"):
        tnp.from_dlpack(np.arange(3, dtype=np.int64), copy=False)
    got, expected = _answers(lambda ns: ns.arange(3.0).__dlpack__(stream=1))
    assert issubclass(expected, RuntimeError) and issubclass(got, RuntimeError)


def test_from_dlpack_copies():
    source = np.arange(4, dtype=np.float32)
    x = tnp.from_dlpack(source)
    source[0] = 99.0  # the default import copied, so the Array keeps its value (as JAX's)
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])
    # copy=False shares the buffer (JAX too, when its alignment allows)
    shared = tnp.from_dlpack(source, copy=False)
    assert np.shares_memory(np.asarray(shared), source)
    assert_matches(shared, jnp.asarray(source))
    assert_matches(shared + 1, jnp.asarray(source) + 1)
    assert_matches(tracejit.jit(lambda a: a * 2)(shared), jnp.asarray(source) * 2)


# --- signatures ----------------------------------------------------------------------------

def _params(f):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor", "logical_not"])
def test_logical_signatures(name):
    ours, theirs = getattr(tnp, name), getattr(jnp, name)
    # JAX's binary logical functions are ufunc objects, and so are ours: compare the function
    # each wraps, as JAX documents it (x, y)
    assert isinstance(ours, tnp.ufunc) == isinstance(theirs, jnp.ufunc)
    params = inspect.signature(getattr(ours, "_func", ours)).parameters.values()
    assert all(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params)
    # JAX's binary logical functions are ufunc objects (documented as (x, y)): their arity
    arity = theirs.nin if hasattr(theirs, "nin") else len(inspect.signature(theirs).parameters)
    assert len(params) == arity
    for args in [(np.array([0, 1, 2]), np.array([1.5, 0.0, 2.0])),
                 (np.array([True, False]), True), (np.array([3, 0], np.uint8), 0.0)]:
        args = args[:arity]
        assert_matches(getattr(tnp, name)(*[tnp.asarray(a) if isinstance(a, np.ndarray) else a
                                            for a in args]),
                       theirs(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                for a in args]))
        _same(lambda ns: getattr(ns, name)(*args, 1))  # one operand too many: TypeError


@pytest.mark.parametrize("name", ["astype", "from_dlpack", "isdtype"])
def test_function_signatures(name):
    assert _params(getattr(tnp, name)) == _params(getattr(jnp, name))


def test_method_signatures():
    ours, theirs = tnp.arange(3), jnp.arange(3)
    for name in ["astype", "to_device", "__array_namespace__", "__dlpack__"]:
        assert _params(getattr(ours, name)) == _params(getattr(theirs, name)), name
    for name in ["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "asarray",
                 "zeros_like", "ones_like", "full_like", "empty_like"]:
        theirs_params = [p for p in _params(getattr(jnp, name)) if p[0] != "out_sharding"]
        assert _params(getattr(tnp, name)) == theirs_params, name


COPIES = {
    "asarray": lambda ns, x: ns.asarray(x) is x,
    "asarray copy": lambda ns, x: ns.asarray(x, copy=True) is x,
    "asarray no copy": lambda ns, x: ns.asarray(x, copy=False) is x,
    "asarray dtype copy": lambda ns, x: ns.asarray(x, "int32", copy=True) is x,
    "array": lambda ns, x: ns.array(x) is x,
    "array no copy": lambda ns, x: ns.array(x, copy=False) is x,
}


@pytest.mark.parametrize("name", list(COPIES))
def test_copy_arguments(name):
    assert _same(lambda ns: COPIES[name](ns, ns.arange(3))) in (True, False)
    assert_matches(tnp.asarray(tnp.asarray(2.0), copy=True), jnp.asarray(jnp.asarray(2.0),
                                                                          copy=True))
    assert_matches(tnp.array(tnp.arange(3), copy=True), jnp.array(jnp.arange(3), copy=True))
