"""Dtype promotion and weak types, against real JAX as the oracle."""
import itertools

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.core import dtypes

jax = pytest.importorskip("jax")
jnp = jax.numpy

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("enable_x64", [False, True])
def test_promote_types_table_matches_jax(enable_x64):
    jax.config.update("jax_enable_x64", enable_x64)
    tracejit.config.update("jax_enable_x64", enable_x64)
    try:
        for a, b in itertools.product(NAMES, NAMES):
            assert tnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("enable_x64", [False, True])
def test_binary_result_dtype_and_weak_type_match_jax(enable_x64):
    jax.config.update("jax_enable_x64", enable_x64)
    tracejit.config.update("jax_enable_x64", enable_x64)
    try:
        names = [n for n in NAMES if enable_x64 or "64" not in n]
        for x, y in itertools.product(range(len(names) + 3), repeat=2):
            jx, jy = _jax_operand(x, names), _jax_operand(y, names)
            tx, ty = _tj_operand(x, names), _tj_operand(y, names)
            expected = jnp.result_type(jx, jy)
            got, weak = dtypes.result_type_and_weak(tx, ty)
            assert got == expected, (jx, jy)
            if not isinstance(jx, (int, float, bool)) or not isinstance(jy, (int, float, bool)):
                # JAX's abstract evaluation gives the weak type without compiling an add
                summed = jax.eval_shape(lambda a, b: jnp.asarray(a) + jnp.asarray(b), jx, jy)
                assert weak == summed.weak_type or jnp.asarray(jx).dtype == bool
    finally:
        jax.config.update("jax_enable_x64", False)


def _jax_operand(i, names):
    scalars = [1, 1.0, True]
    if i < 3:
        return scalars[i]
    return jnp.zeros(2, names[i - 3])


def _tj_operand(i, names):
    scalars = [1, 1.0, True]
    if i < 3:
        return scalars[i]
    return tracejit.core.array.Array.from_numpy(
        np.zeros(2, dtypes.canonicalize_dtype(np.dtype(names[i - 3]) if names[i - 3] != "bfloat16"
                                              else dtypes.bfloat16)),
        tracejit.ShapedArray((2,), dtypes.canonicalize_dtype(
            np.dtype(names[i - 3]) if names[i - 3] != "bfloat16" else dtypes.bfloat16)))


def test_canonicalization_without_x64():
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    assert dtypes.canonicalize_dtype(np.int64) == np.int32
    assert dtypes.canonicalize_dtype(np.uint64) == np.uint32


def test_canonicalization_with_x64(x64):
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    assert tnp.asarray(1.5).dtype == jnp.asarray(1.5).dtype == np.float64


def test_python_scalars_are_weak():
    for v in (1, 2.5):
        t, j = tnp.asarray(v), jnp.asarray(v)
        assert (t.dtype, t.weak_type) == (j.dtype, j.weak_type)
    assert tnp.asarray(True).weak_type == jnp.asarray(True).weak_type


def test_int_overflow_is_an_error():
    with pytest.raises(OverflowError):
        tnp.asarray(2 ** 40)


# --- jax_explicit_x64_dtypes: what a 64-bit dtype named explicitly gives with x64 off ----------
# Recorded from JAX 0.12.0.1 (JAX 0.10.2 gives the same): case -> {mode: dtype, or the
# exception's type and words' start}; WARN's warning names "dtype" for result_type.
_F64, _I64 = np.float64, np.int64
_EXPLICIT_CASES = {
    "result_type(np.float64)": lambda np_: np_.result_type(_F64),
    "result_type('float64')": lambda np_: np_.result_type("float64"),
    "result_type(np.dtype('int64'))": lambda np_: np_.result_type(np.dtype("int64")),
    "result_type(np.float32, np.float64)": lambda np_: np_.result_type(np.float32, _F64),
    "result_type(np.int64, 1.0)": lambda np_: np_.result_type(_I64, 1.0),
    "result_type(np.float64(1))": lambda np_: np_.result_type(np.float64(1)),
    "result_type(np.ones(2))": lambda np_: np_.result_type(np.ones(2)),
    "promote_types(np.float64, np.float32)": lambda np_: np_.promote_types(_F64, np.float32),
    "zeros(2, float64) + 1.0": lambda np_: (np_.zeros(2, _F64) + 1.0).dtype,
    "ones(2, int64) + 1": lambda np_: (np_.ones(2, _I64) + 1).dtype,
    "int32 + uint32 arrays": lambda np_: (np_.ones(2, "int32") + np_.ones(2, "uint32")).dtype,
    "sum of ones(2, int64)": lambda np_: np_.sum(np_.ones(2, _I64)).dtype,
    "mean(dtype=float64)": lambda np_: np_.mean(np_.ones(3), dtype=_F64).dtype,
    "ones(2, float64) @ ones(2)": lambda np_: (np_.ones((2, 2), _F64) @ np_.ones((2, 2))).dtype,
    "asarray(np.ones(2))": lambda np_: np_.asarray(np.ones(2)).dtype,
}
_TRUNCATED = "Explicitly requested dtype {} requested in {} is not available, and will be " \
    "truncated to dtype {}."
_EXPLICIT_EXPECTED = {  # case: (warn, allow, error); warn: (dtype, warning's start or None)
    "result_type(np.float64)": (("float32", ("float64", "dtype", "float32")), "float64",
                                ("ValueError: Explicitly requested dtype float64 requested in "
                                 "dtype is not available. To enable more dtypes, set the "
                                 "jax_enable_x64 or allow_explicit_x64_dtypes configuration "
                                 "options.See")),
    "result_type('float64')": (("float32", ("float64", "dtype", "float32")), "float64",
                               "ValueError: Explicitly requested dtype float64"),
    "result_type(np.dtype('int64'))": (("int32", ("int64", "dtype", "int32")), "int64",
                                       "ValueError: Explicitly requested dtype int64"),
    "result_type(np.float32, np.float64)": (("float32", ("float64", "dtype", "float32")),
                                            "float64", "ValueError: Explicitly requested dtype"),
    "result_type(np.int64, 1.0)": (("float32", ("int64", "dtype", "int32")), "float32",
                                   "ValueError: Explicitly requested dtype int64"),
    "result_type(np.float64(1))": (("float32", None), "float32", "float32"),
    "result_type(np.ones(2))": (("float32", None), "float32", "float32"),
    "promote_types(np.float64, np.float32)": (("float64", None), "float64", "float64"),
    "zeros(2, float64) + 1.0": (("float32", ("float64", "zeros", "float32")), "float64",
                                "ValueError: Explicitly requested dtype float64 requested in z"),
    "ones(2, int64) + 1": (("int32", ("int64", "ones", "int32")), "int64",
                           "ValueError: Explicitly requested dtype int64 requested in ones"),
    "int32 + uint32 arrays": (("int32", None), "int32", "int32"),
    "sum of ones(2, int64)": (("int32", ("int64", "ones", "int32")), "int64",
                              "ValueError: Explicitly requested dtype int64 requested in ones"),
    "mean(dtype=float64)": (("float32", ("float64", "mean", "float32")), "float64",
                            "ValueError: Explicitly requested dtype float64 requested in mean"),
    "ones(2, float64) @ ones(2)": (("float32", ("float64", "ones", "float32")), "float64",
                                  "ValueError: Explicitly requested dtype float64 requested in o"),
    "asarray(np.ones(2))": (("float32", None), "float32", "float32"),
}


@pytest.mark.parametrize("mode", ["warn", "allow", "error"])
@pytest.mark.parametrize("case", sorted(_EXPLICIT_CASES))
def test_explicit_x64_dtypes_as_jax_0_12(case, mode):
    import warnings
    expected = _EXPLICIT_EXPECTED[case][("warn", "allow", "error").index(mode)]
    tracejit.config.update("jax_explicit_x64_dtypes", mode)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                got = str(_EXPLICIT_CASES[case](tnp))
            except ValueError as e:
                got = f"ValueError: {e}"
    finally:
        tracejit.config.update("jax_explicit_x64_dtypes", "warn")
    messages = [w for w in caught if "Explicitly requested" in str(w.message)]
    if mode == "warn":
        expected, warning = expected
        assert len(messages) == (warning is not None)
        if warning is not None:
            assert str(messages[0].message).startswith(_TRUNCATED.format(*warning))
            # (at the user's line: JAX 0.12's stacklevel points into its dtypes.py here)
            assert messages[0].filename == __file__ and messages[0].category is UserWarning
    else:
        assert messages == []
    assert got.startswith(expected) if expected.startswith("ValueError") else got == expected


def test_explicit_x64_dtypes_option_values_and_jit_key():
    """JAX's ExplicitX64Mode values (strings naming them accepted), a with-block in one thread,
    and jit's key: a function traced under "warn" traces again under "allow"."""
    from tracejit.core.config import ExplicitX64Mode, explicit_x64_dtypes
    assert tracejit.config.jax_explicit_x64_dtypes is ExplicitX64Mode.WARN
    assert str(jax.config.jax_explicit_x64_dtypes) == str(ExplicitX64Mode.WARN)
    with pytest.raises(ValueError, match="'sometimes' is not a valid ExplicitX64Mode"):
        tracejit.config.update("jax_explicit_x64_dtypes", "sometimes")
    f = tracejit.jit(lambda: tnp.zeros(2, _F64))
    with pytest.warns(UserWarning, match="requested in zeros"):
        assert f().dtype == np.float32
    with explicit_x64_dtypes("allow"):
        assert explicit_x64_dtypes.value is ExplicitX64Mode.ALLOW
        out = f()
        assert out.dtype == np.float64 and tnp.sum(out + 0.1).dtype == np.float64
        assert float(tnp.sum(tnp.full(3, 0.1, _F64))) == 0.30000000000000004  # (float64's sum)
    assert explicit_x64_dtypes.value is ExplicitX64Mode.WARN
    assert f().dtype == np.float32


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_promote_types_of_python_types_as_jax(x64):
    """Python's int, float and complex are weak in promote_types (JAX's, not NumPy's); a dtype
    outside the lattice raises JAX's ValueError."""
    specs = [int, float, complex, bool, "bool", "int8", "uint64", "int32", "float16", "bfloat16",
             "float32", "float64", "complex64", "complex128"]
    jax.config.update("jax_enable_x64", x64)
    tracejit.config.update("jax_enable_x64", x64)
    try:
        for a, b in itertools.product(specs, specs):
            assert tnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)
    finally:
        jax.config.update("jax_enable_x64", False)
        tracejit.config.update("jax_enable_x64", False)
    for api in (tnp, jnp):
        with pytest.raises(ValueError, match=r"dtype=dtype\('O'\) is not a valid dtype for JAX "
                                             "type promotion"):
            api.promote_types(np.dtype("O"), np.float32)


def test_iinfo_of_ml_dtypes_ints_as_jax():
    for name in ("int4", "uint4", "int8", "uint64"):
        ours, theirs = tnp.iinfo(name), jnp.iinfo(name)
        assert (ours.bits, ours.min, ours.max, str(ours.dtype)) == \
            (theirs.bits, theirs.min, theirs.max, str(theirs.dtype))


# float64/int64 values under jax_explicit_x64_dtypes="allow" with x64 off: beside JAX 0.10
# (0.12 gives the same). Left out where JAX differs from itself: an eager weak Python scalar
# with a float64 array is rounded to float32 first in JAX's eager path but not under its jit
# (`jnp.clip(x, 0.1)`: ours is 0.1 in both), argmax's 64-bit index raises in JAX.
_ALLOW_CASES = {
    "x": lambda jx, np_, x: x,
    "jit(x * 2)": lambda jx, np_, x: jx.jit(lambda a: a * 2)(x),
    "scan": lambda jx, np_, x: jx.lax.scan(lambda c, a: (c + a, c * a), np_.zeros((), _F64),
                                           x)[0],
    "cond": lambda jx, np_, x: jx.lax.cond(True, lambda a: a + 1, lambda a: a - 1, x),
    "concatenate with float32": lambda jx, np_, x: np_.concatenate([x, np_.ones(2)]),
    "cumsum": lambda jx, np_, x: np_.cumsum(x),
    "linalg.inv": lambda jx, np_, x: np_.linalg.inv(np_.eye(2, dtype=_F64) * 3),
    "fft": lambda jx, np_, x: np_.fft.fft(x),
    "vmap": lambda jx, np_, x: jx.vmap(lambda a: a ** 2)(x),
    "grad": lambda jx, np_, x: jx.grad(lambda a: np_.sum(np_.sin(a)))(x),
    "full(2**40, int64) * 3": lambda jx, np_, x: np_.full(4, 2 ** 40, _I64) * 3,
    "at[].set": lambda jx, np_, x: x.at[0].set(5.0),
    "std": lambda jx, np_, x: np_.std(x),
    "matmul": lambda jx, np_, x: x @ x,
    "softmax": lambda jx, np_, x: jx.nn.softmax(x),
    "random.uniform": lambda jx, np_, x: jx.random.uniform(jx.random.PRNGKey(0), (3,), _F64),
    "full(2**40 + 3, uint64)": lambda jx, np_, x: np_.full((), 2 ** 40 + 3, np.uint64),
}


@pytest.mark.parametrize("case", sorted(_ALLOW_CASES))
def test_explicit_x64_allow_values_as_jax(case):
    got = []
    for jx, np_ in ((tracejit, tnp), (jax, jnp)):
        jx.config.update("jax_explicit_x64_dtypes", "allow")
        try:
            out = _ALLOW_CASES[case](jx, np_, np_.arange(4, dtype=_F64) / 3)
            got.append((str(out.dtype), np.asarray(out)))
        finally:
            jx.config.update("jax_explicit_x64_dtypes", "warn")
    assert got[0][0] == got[1][0] and got[0][0] in ("float64", "int64", "uint64", "complex128")
    # (a product's sum in another order: one float64 ulp)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=4e-16, atol=0)


def test_explicit_x64_allow_converts_host_values_whole():
    """lax.convert_element_type of a NumPy uint64/float64 to its own dtype keeps every bit (JAX
    0.12's 1099511627779 and 0.1; JAX 0.10 canonicalised the operand first: 3)."""
    tracejit.config.update("jax_explicit_x64_dtypes", "allow")
    try:
        big = tracejit.lax.convert_element_type(np.array(2 ** 40 + 3, np.uint64), np.uint64)
        tenth = tracejit.jit(lambda: tracejit.lax.convert_element_type(np.float64(0.1), _F64))()
    finally:
        tracejit.config.update("jax_explicit_x64_dtypes", "warn")
    assert (big.dtype, int(big)) == (np.uint64, 1099511627779)
    assert (tenth.dtype, float(tenth)) == (np.float64, 0.1)
