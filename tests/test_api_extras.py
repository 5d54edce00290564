"""Small public functions of the `jax` namespace (typeof, device_get, ensure_compile_time_eval,
named_scope), each compared with real JAX on the same inputs."""
import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp_tj

API = [(tracejit, jnp_tj), (jax, jnp_jax)]


@pytest.mark.parametrize("value", [1.0, 3, True, np.int32(3), np.ones((2, 3), np.float16)])
def test_typeof(value):
    ours, theirs = tracejit.typeof(value), jax.typeof(value)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                         theirs.weak_type)


def test_typeof_of_a_tracer_is_its_abstract_value():
    def f(api):
        seen = []
        api.jit(lambda x: seen.append(api.typeof(x)) or x)(np.ones(3, np.float32))
        return seen[0]
    ours, theirs = f(tracejit), f(jax)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                         theirs.weak_type)


def test_device_get():
    def f(api, jnp):
        return api.device_get({"a": jnp.ones(2), "b": 3, "c": np.ones(1), "d": (jnp.arange(3),)})
    ours, theirs = f(*API[0]), f(*API[1])
    assert ours.keys() == theirs.keys() and ours["b"] == theirs["b"] == 3
    for k in ("a", "c"):
        assert type(ours[k]) is type(theirs[k]) is np.ndarray
        np.testing.assert_array_equal(ours[k], theirs[k])
        assert ours[k].dtype == theirs[k].dtype
    np.testing.assert_array_equal(ours["d"][0], theirs["d"][0])


def test_ensure_compile_time_eval_inside_jit():
    def run(api, jnp):
        kinds = []

        @api.jit
        def f(x):
            with api.ensure_compile_time_eval():
                y = jnp.sin(2.0)               # concrete: computed now, usable in Python
                kinds.append(float(y) > 0)
                z = jnp.sin(x)                 # depends on the argument: still staged
                kinds.append(type(z).__name__.endswith("Tracer"))
            return x + y + z
        return np.asarray(f(1.0)), kinds
    (ours, our_kinds), (theirs, their_kinds) = run(*API[0]), run(*API[1])
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert our_kinds == their_kinds == [True, True]


def test_named_scope():
    for api, _ in API:
        with api.named_scope("block"):
            text = str(api.make_jaxpr(lambda x: x * 2)(1.0))
        assert "mul" in text
        with pytest.raises(TypeError, match="must be a string"):
            with api.named_scope(3):
                pass


def test_tracers_are_instances_of_the_array_type():
    """`isinstance(x, jax.Array)` (and jnp.ndarray) holds for concrete arrays and inside jit,
    vmap and grad (equinox's `is_array` relies on it); not for Python scalars or NumPy arrays."""
    def run(api, jnp):
        seen = []

        def probe(x):
            seen.append((isinstance(x, api.Array), isinstance(x, jnp.ndarray)))
            return x * 2
        api.jit(probe)(1.0)
        api.vmap(probe)(jnp.ones(2))
        api.grad(probe)(1.0)
        seen.append((isinstance(jnp.ones(2), api.Array), jnp.ndarray is api.Array))
        seen.append((isinstance(1.0, api.Array), isinstance(np.ones(2), api.Array)))
        return seen
    assert run(*API[0]) == run(*API[1])


def test_device_type():
    for api, _ in API:
        assert isinstance(api.devices()[0], api.Device)
        assert not isinstance("cpu", api.Device)


@pytest.mark.parametrize("name,option,value", [
    ("numpy_rank_promotion", "jax_numpy_rank_promotion", "raise"),
    ("default_matmul_precision", "jax_default_matmul_precision", "highest"),
    ("threefry_partitionable", "jax_threefry_partitionable", False),
    ("log_compiles", "jax_log_compiles", True),
    ("explain_cache_misses", "jax_explain_cache_misses", True)])
def test_option_context_managers(name, option, value):
    """`with jax.<option>(value):` sets the option inside the block and puts it back after, as
    JAX's (both sides read through config)."""
    for lib in (tracejit, jax):
        before = getattr(lib.config, option)
        with getattr(lib, name)(value):
            assert getattr(lib.config, option) == value, (lib.__name__, name)
        assert getattr(lib.config, option) == before, (lib.__name__, name)


def test_rank_promotion_context_refuses_inside_only():
    x, y = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    for lib, jnp in API:
        with lib.numpy_rank_promotion("raise"):
            with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
                jnp.add(x, y)
        np.testing.assert_array_equal(np.asarray(jnp.add(x, y)), x + y)


def test_top_level_sharding_names_are_jaxs():
    """jax.NamedSharding, jax.Shard, jax.reshard and jax.process_indices exist at the top level
    (libraries write them so) and are the sharding module's."""
    assert tracejit.NamedSharding is tracejit.sharding.NamedSharding
    assert tracejit.reshard is tracejit.sharding.reshard
    assert isinstance(tracejit.device_put(np.ones(3)).addressable_shards[0], tracejit.Shard)
    assert tracejit.process_indices() == jax.process_indices() == [0]


# --- ShapeDtypeStruct keeps the dtype it is given (JAX's): its uses decide ----------------------
def _struct_cases(api, jnp):
    S = api.ShapeDtypeStruct
    f64, i64 = S((3,), np.float64), S((3,), np.int64)

    def callback(kind):
        if kind == "pure":
            return api.pure_callback(lambda: np.ones(3), f64)
        return api.experimental.io_callback(lambda: np.ones(3), f64)
    return {
        "dtypes": lambda: [S((2,), d).dtype for d in (np.float64, np.int64, np.complex128,
                                                      np.uint64, "float64", float, int, bool)],
        "none": lambda: S((2,), None),
        "not a dtype": lambda: S((2,), "foo"),
        "equality": lambda: (f64 == S((3,), np.float32), f64 == S((3,), np.float64)),
        "repr": lambda: repr(S((3,), np.float64, weak_type=True)),
        "update": lambda: f64.update(shape=(4,)),
        "like": lambda: S.like(np.ones(3)),
        "typeof": lambda: (api.typeof(i64), api.typeof(S((3,), np.float64, weak_type=True))),
        "eval_shape": lambda: (api.eval_shape(lambda x: x * 2, f64),
                               api.eval_shape(lambda x: x + 1, i64),
                               api.eval_shape(api.vmap(jnp.sum), S((2, 3), np.int64))),
        "lower": lambda: (api.jit(lambda x: x * 2).lower(f64).in_avals,
                          api.jit(lambda x: x * 2).lower(f64).out_info),
        "compiled call": lambda: api.jit(lambda x: x * 2).lower(f64).compile()(
            np.ones(3, np.float64 if api.config.jax_enable_x64 else np.float32)).dtype,
        "make_jaxpr": lambda: str(api.make_jaxpr(lambda x: x * 2)(f64)),
        "pure_callback": lambda: callback("pure").dtype,
        "io_callback": lambda: callback("io").dtype,
        "pure_callback eval_shape": lambda: api.eval_shape(lambda: callback("pure")),
        "ffi_call eval_shape": lambda: api.eval_shape(
            lambda x: api.ffi.ffi_call("never_called", f64)(x), S((3,), np.float32)),
        "zeros_like": lambda: (jnp.zeros_like(f64).dtype, jnp.ones_like(i64).dtype),
    }


def _struct_outcome(fn):
    try:
        return ("ok", repr(fn()))
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return ("raise", type(e).__name__, str(e))


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("case", sorted(_struct_cases(tracejit, jnp_tj)))
def test_shape_dtype_struct_keeps_its_dtype(case, x64):
    """`ShapeDtypeStruct((n,), float64)` is float64 with x64 off too, as in JAX: an argument of
    its type is float32 then (eval_shape, lower, typeof), a pure_callback/io_callback result of
    it is refused, an ffi_call result is float64 — JAX's answers and errors, case by case."""
    import warnings
    got = []
    for api, jnp in API:
        with api.enable_x64(x64), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (JAX's truncation warnings: not compared here)
            got.append(_struct_outcome(_struct_cases(api, jnp)[case]))
    assert got[0] == got[1]


# --- a 64-bit dtype named explicitly with x64 off: truncated, with JAX's warning ----------------
_F64, _I64 = np.float64, np.int64
_EXPLICIT_DTYPES = {
    "astype": lambda api, jnp: jnp.ones(3).astype(_F64),
    "jnp.astype": lambda api, jnp: jnp.astype(jnp.ones(3), "float64"),
    "zeros": lambda api, jnp: jnp.zeros(3, _F64),
    "ones": lambda api, jnp: jnp.ones(3, _I64),
    "empty": lambda api, jnp: jnp.empty(3, _F64),
    "full": lambda api, jnp: jnp.full(3, 1, _F64),
    "zeros_like": lambda api, jnp: jnp.zeros_like(jnp.ones(3), dtype=_F64),
    "full_like": lambda api, jnp: jnp.full_like(jnp.ones(3), 2, dtype=_F64),
    "arange": lambda api, jnp: jnp.arange(3, dtype=_F64),
    "linspace": lambda api, jnp: jnp.linspace(0, 1, 3, dtype=_F64),
    "eye": lambda api, jnp: jnp.eye(2, dtype=_I64),
    "tri": lambda api, jnp: jnp.tri(2, dtype=_F64),
    "asarray": lambda api, jnp: jnp.asarray(np.ones(3), dtype=_F64),
    "array of a list": lambda api, jnp: jnp.array([1, 2], dtype=_I64),
    "scalar type": lambda api, jnp: jnp.float64(1),
    "complex128": lambda api, jnp: jnp.zeros(2, np.complex128),
    "uint64": lambda api, jnp: jnp.zeros(2, np.uint64),
    "view": lambda api, jnp: jnp.ones(4, np.float32).view(_F64),
    "cumsum": lambda api, jnp: jnp.cumsum(jnp.ones(3), dtype=_F64),
    "mean": lambda api, jnp: jnp.mean(jnp.ones(3), dtype=_F64),
    "matmul": lambda api, jnp: jnp.matmul(jnp.ones((2, 2)), jnp.ones((2, 2)),
                                          preferred_element_type=_F64),
    "lax.convert_element_type": lambda api, jnp: api.lax.convert_element_type(jnp.ones(3), _F64),
    "lax.full": lambda api, jnp: api.lax.full((3,), 1, _F64),
    "lax.iota": lambda api, jnp: api.lax.iota(_F64, 3),
    "lax.argmax": lambda api, jnp: api.lax.argmax(jnp.ones(3), 0, _I64),
    "lax.dot": lambda api, jnp: api.lax.dot(jnp.ones((2, 2)), jnp.ones((2, 2)),
                                            preferred_element_type=_F64),
    "random.uniform": lambda api, jnp: api.random.uniform(api.random.PRNGKey(0), (2,), _F64),
    "random.randint": lambda api, jnp: api.random.randint(api.random.PRNGKey(0), (2,), 0, 5,
                                                          _I64),
    "random.bits": lambda api, jnp: api.random.bits(api.random.PRNGKey(0), (2,), np.uint64),
    "inside jit": lambda api, jnp: api.jit(lambda: jnp.zeros(2, _F64))(),
    # (_NO_WARNING:) Python types and values are canonical without one, 32-bit dtypes are kept
    "Python float": lambda api, jnp: jnp.zeros(2, float),
    "Python int": lambda api, jnp: jnp.ones(2, int),
    "float32": lambda api, jnp: jnp.zeros(2, np.float32),
    "a float64 value": lambda api, jnp: jnp.asarray(np.ones(2)),
    "zeros_like of a struct": lambda api, jnp: jnp.zeros_like(api.ShapeDtypeStruct((2,), _F64)),
}
_NO_WARNING = {"Python float", "Python int", "float32", "a float64 value", "zeros_like of a struct"}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("case", sorted(_EXPLICIT_DTYPES))
def test_explicit_64_bit_dtype_warns_as_jax(case, x64):
    """The result's dtype and JAX's "Explicitly requested dtype float64 requested in zeros is
    not available, and will be truncated ..." UserWarnings, compared with JAX's; tracejit's
    points at the caller's line."""
    import warnings
    got = []
    for api, jnp in API:
        with api.enable_x64(x64), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dtype = str(_EXPLICIT_DTYPES[case](api, jnp).dtype)
        explicit = [w for w in caught if "Explicitly requested dtype" in str(w.message)]
        got.append((dtype, sorted({str(w.message) for w in explicit})))
        if api is tracejit:
            assert all(w.filename == __file__ and w.category is UserWarning for w in explicit)
    assert got[0] == got[1]
    assert bool(got[0][1]) == (not x64 and case not in _NO_WARNING)


_JAX_FAILS_KEEPING_64_BIT = {("lax.argmax", "allow"): ("int64", [])}


def _explicit_outcome(api, case):
    """(dtype or the error's words, the truncation warnings' words) of one case."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = str(_EXPLICIT_DTYPES[case](api, API[api is jax][1]).dtype)
        except (ValueError, TypeError) as e:
            out = f"{type(e).__name__}: {e}"
    return out, sorted({str(w.message) for w in caught if "Explicitly requested" in str(w.message)})


@pytest.mark.parametrize("mode", ["allow", "error"])
@pytest.mark.parametrize("case", sorted(_EXPLICIT_DTYPES))
def test_explicit_x64_dtypes_option_as_jax(case, mode):
    """jax_explicit_x64_dtypes="allow" keeps a 64-bit dtype named explicitly with x64 off (the
    value is 64-bit), "error" raises JAX's ValueError; beside JAX, the same cases as above."""
    got = []
    for api, _ in API:
        api.config.update("jax_explicit_x64_dtypes", mode)
        try:
            got.append(_explicit_outcome(api, case))
        finally:
            api.config.update("jax_explicit_x64_dtypes", "warn")
    if (case, mode) in _JAX_FAILS_KEEPING_64_BIT:
        # JAX's argmax reduces with a canonical (32-bit) initial index against the kept 64-bit
        # one and raises (JAX 0.10 and 0.12); ours gives the dtype asked for
        assert got[1][0].startswith("TypeError: reduce operand dtypes should match")
        got[1] = _JAX_FAILS_KEEPING_64_BIT[case, mode]
    assert got[0] == got[1]
    assert got[0][1] == []  # (no warnings in either mode)
    if case not in _NO_WARNING:
        assert got[0][0].startswith("ValueError: Explicitly requested dtype") == (mode == "error")


@pytest.mark.parametrize("value,dtype", [
    (np.arange(4, dtype=np.float32), np.float64), (np.arange(3, dtype=np.int16), np.int8),
    (np.arange(8, dtype=np.int8).reshape(2, 4), np.int16), (np.arange(3, dtype=np.int8), np.int16),
    (np.float32(1.5), np.int32), (np.float32(1.5), np.int64),
    (np.arange(2, dtype=np.float64), np.uint8)], ids=str)
def test_view_to_another_itemsize(x64, value, dtype):
    """Array.view to a wider or narrower dtype resizes the last axis (JAX's, NumPy's), with
    JAX's errors for a 0-d array and a last axis the new size does not divide."""
    got = []
    for _, jnp in API:
        try:
            out = jnp.asarray(value).view(dtype)
            got.append((out.shape, str(out.dtype), np.asarray(out).tobytes()))
        except ValueError as e:
            got.append(("raise", str(e)))
    assert got[0] == got[1]
    if got[0][0] != "raise":
        assert got[0][2] == np.asarray(value).view(dtype).tobytes()
