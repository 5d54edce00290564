"""The small modules libraries import at load time — tracejit.typing, tracejit.dtypes,
tracejit.flatten_util, tracejit.test_util, __version_info__ — against real JAX with the same
inputs: values, dtypes, weak types and errors."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import tracejit
import tracejit.flatten_util
import tracejit.numpy as tnp
import tracejit.test_util

jax = pytest.importorskip("jax")
jnp = jax.numpy
# JAX loads these submodules only when they are imported
import jax.dtypes
import jax.flatten_util
import jax.test_util
import jax.typing


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


@pytest.mark.parametrize("args", [(np.float64,), ("int64", 1), (np.dtype("uint64"),),
                                  (np.ones(2),), (float,), (np.float64(1),),
                                  (np.dtype("float64"), np.int64), ("complex128", "float32")],
                         ids=repr)
def test_result_type_warns_of_truncated_dtypes(args):
    """Under x32, explicitly named 64-bit dtypes warn (one warning each) as in JAX."""
    caught = []
    for f in (tracejit.dtypes.result_type, jax.dtypes.result_type):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            f(*args)
        caught.append([str(x.message) for x in w])
    assert caught[0] == caught[1]


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


# --- flatten_util ----------------------------------------------------------------------------

def assert_same_array(got, expected, weak: bool = True):
    """Same shape, dtype, weak type (unless `weak` is False) and values."""
    assert isinstance(got, tracejit.Array), type(got)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype), (got, expected)
    if weak:
        assert got.weak_type == expected.weak_type, (got, expected)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def assert_same_tree(got, expected, weak: bool = True):
    g_leaves, g_tree = tracejit.tree_util.tree_flatten(got)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert str(g_tree).replace("PyTreeDef", "") == str(e_tree).replace("PyTreeDef", "")
    for g, e in zip(g_leaves, e_leaves):
        assert_same_array(g, e, weak)


def _tree(lib, case):
    """The same pytree built from `lib` (tracejit.numpy or jax.numpy)."""
    a = lambda x: lib.asarray(x)
    return {
        "empty": [],
        "empty_dict": {"a": [], "b": ()},
        "scalar": 1.0,
        "int_scalar": 3,
        "mixed_scalars": [1.0, 2, True],
        "f32_i32_f16": {"w": a(np.arange(6, dtype=np.float32).reshape(2, 3)),
                        "i": a(np.arange(3, dtype=np.int32)),
                        "h": a(np.array([0.5, -1.5], np.float16))},
        "f16_i8": (a(np.array([1.5, 2.5], np.float16)), a(np.array([-3, 4], np.int8))),
        "bf16_f16": [a(np.array([1, 2], ml_dtypes.bfloat16)), a(np.array([3.5], np.float16))],
        "bool_int8": [True, a(np.array([1, 2], np.int8))],
        "weak_and_strong": [lib.asarray(1.0), a(np.ones(2, np.float32))],
        "all_weak": (lib.asarray(1.0), lib.asarray(2.0) * 3),
        "numpy_leaves": [np.float64(1.5), np.arange(3)],
        "zero_size": [a(np.zeros((0, 3), np.float32)), a(np.ones(2, np.float32))],
        "complex": [a(np.array([1 + 2j], np.complex64)), 1.0],
        "nested": {"layers": [(a(np.ones((2, 2), np.float32)), a(np.zeros(2, np.float32)))] * 2,
                   "step": a(np.array(7, np.int32))},
    }[case]


_CASES = ["empty", "empty_dict", "scalar", "int_scalar", "mixed_scalars", "f32_i32_f16",
          "f16_i8", "bf16_f16", "bool_int8", "weak_and_strong", "all_weak", "numpy_leaves",
          "zero_size", "complex", "nested"]


@pytest.mark.filterwarnings("error::numpy.exceptions.ComplexWarning")  # JAX does not warn
@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("case", _CASES)
def test_ravel_pytree(case, x64):
    from jax.flatten_util import ravel_pytree as jax_ravel
    with tracejit.enable_x64(x64), jax.enable_x64(x64):
        flat, unravel = tracejit.flatten_util.ravel_pytree(_tree(tnp, case))
        j_flat, j_unravel = jax_ravel(_tree(jnp, case))
        assert_same_array(flat, j_flat)
        assert_same_tree(unravel(flat), j_unravel(j_flat))
        doubled = np.asarray(j_flat) * 2  # unravel of a new vector of the same dtype
        assert_same_tree(unravel(tnp.asarray(doubled)), j_unravel(jnp.asarray(doubled)))


def test_unravel_dtype_rules():
    from jax.flatten_util import ravel_pytree as jax_ravel
    ours = tracejit.flatten_util.ravel_pytree
    # one dtype: unravel is dtype-polymorphic
    _, u = ours([tnp.ones(2), tnp.ones(3)])
    _, ju = jax_ravel([jnp.ones(2), jnp.ones(3)])
    assert_same_tree(u(tnp.arange(5)), ju(jnp.arange(5)))
    # several dtypes: unravel insists on the promoted dtype; wrong sizes fail in split
    _, u = ours({"a": tnp.ones(2, "float16"), "b": tnp.arange(3)})
    _, ju = jax_ravel({"a": jnp.ones(2, "float16"), "b": jnp.arange(3)})
    assert outcome(u, tnp.ones(5)) == outcome(ju, jnp.ones(5))
    assert outcome(u, tnp.ones(4, "float16")) == outcome(ju, jnp.ones(4, "float16"))
    _, u = ours([tnp.ones(2), tnp.ones(3)])
    _, ju = jax_ravel([jnp.ones(2), jnp.ones(3)])
    assert outcome(u, tnp.ones(4)) == outcome(ju, jnp.ones(4))


def test_unravel_functions_compare_by_structure():
    """Equal structures give equal (and equally hashed) unravel functions, so they can be
    static jit arguments; JAX's do the same."""
    for lib, ravel in [(tnp, tracejit.flatten_util.ravel_pytree),
                       (jnp, jax.flatten_util.ravel_pytree)]:
        u1, u2, u3 = (ravel(t)[1] for t in ([lib.ones(2)], [lib.zeros(2)], [lib.zeros(3)]))
        assert u1 == u2 and hash(u1) == hash(u2) and u1 != u3
        m1, m2 = (ravel([lib.ones(2), lib.ones(1, "int32")])[1] for _ in range(2))
        assert m1 == m2 and hash(m1) == hash(m2)


def _loss(lib, ravel, params):
    flat, unravel = ravel(params)
    tree = unravel(flat * 2)
    return lib.sum(flat ** 2) + lib.sum(tree["w"] * 3) + lib.sum(tree["b"])


def _params(lib):
    return {"w": lib.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) / 7),
            "b": lib.asarray(np.array([0.5, -2.0], np.float32))}


def test_ravel_pytree_under_jit_grad_vmap():
    ours, theirs = tracejit.flatten_util.ravel_pytree, jax.flatten_util.ravel_pytree
    # jit: flat vector and round trip
    got = tracejit.jit(lambda p: ours(p)[0])(_params(tnp))
    assert_same_array(got, theirs(_params(jnp))[0])
    got = tracejit.jit(lambda p: ours(p)[1](ours(p)[0] + 1))(_params(tnp))
    assert_same_tree(got, jax.jit(lambda p: theirs(p)[1](theirs(p)[0] + 1))(_params(jnp)))
    # grad through ravel and unravel
    got = tracejit.grad(lambda p: _loss(tnp, ours, p))(_params(tnp))
    expected = jax.grad(lambda p: _loss(jnp, theirs, p))(_params(jnp))
    assert_same_tree(got, expected)
    # vmap over a batch of trees, mixed dtypes
    batch = {"a": np.arange(6, dtype=np.float32).reshape(3, 2),
             "b": np.arange(3, dtype=np.int32)}
    got = tracejit.vmap(lambda t: ours(t)[0])({k: tnp.asarray(v) for k, v in batch.items()})
    expected = jax.vmap(lambda t: theirs(t)[0])({k: jnp.asarray(v) for k, v in batch.items()})
    assert_same_array(got, expected)
    # the unravel function of a closed-over tree, vmapped over flat vectors
    _, u = ours(_params(tnp))
    _, ju = theirs(_params(jnp))
    flats = np.arange(16, dtype=np.float32).reshape(2, 8)
    assert_same_tree(tracejit.vmap(u)(tnp.asarray(flats)), jax.vmap(ju)(jnp.asarray(flats)))


# --- test_util -------------------------------------------------------------------------------

def test_test_util_names_are_jaxs():
    assert public_names(jax.test_util) <= public_names(tracejit.test_util)


def _grads_outcome(check_grads, f, args, *a, **kw):
    """None when check_grads passes, else (exception class, the check that failed)."""
    try:
        check_grads(f, args, *a, **kw)
    except AssertionError as e:
        # the first message line names the check ("JVP of VJP tangent"); numbers may differ
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        return "AssertionError", lines[1].strip() if len(lines) > 1 else lines[0]
    return None


def _broken_sin(lib, jax_mod):
    """sin with a derivative 10% too large: every check of order >= 1 must catch it."""
    @jax_mod.custom_jvp
    def f(x):
        return lib.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 1.1 * lib.cos(x) * t
    return f


_GRAD_FUNS = {
    "sin": lambda lib, jm: lib.sin,
    "poly": lambda lib, jm: lambda x, y: x ** 2 * y + lib.sin(y),
    "tree": lambda lib, jm: lambda p: {"s": lib.sum(p["w"] ** 2), "t": lib.tanh(p["b"]) * 3},
    "complex": lambda lib, jm: lambda z: lib.sin(z) * z,
    "broken": _broken_sin,
}
_GRAD_ARGS = {
    "sin": lambda lib: (lib.asarray(np.array([0.3, -1.2, 2.0])),),
    "poly": lambda lib: (lib.asarray(np.array([0.5, 0.25])),
                         lib.asarray(np.array([0.75, -0.5]))),
    "tree": lambda lib: ({"w": lib.asarray(np.array([[0.2, 0.4]])),
                          "b": lib.asarray(np.array([0.1, -0.7]))},),
    "complex": lambda lib: (lib.asarray(np.array([0.3 + 0.4j, -1.0 + 0.2j])),),
    "broken": lambda lib: (lib.asarray(np.array([0.3, 1.1])),),
}


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("modes", [("fwd", "rev"), ("fwd",), ("rev",), ("lin",)])
@pytest.mark.parametrize("fun", list(_GRAD_FUNS))
def test_check_grads(fun, modes, x64):
    order = 1 if fun == "complex" and "rev" in modes else 2
    with tracejit.enable_x64(x64), jax.enable_x64(x64):
        got = _grads_outcome(tracejit.test_util.check_grads, _GRAD_FUNS[fun](tnp, tracejit),
                             _GRAD_ARGS[fun](tnp), order, modes=modes)
        expected = _grads_outcome(jax.test_util.check_grads, _GRAD_FUNS[fun](jnp, jax),
                                  _GRAD_ARGS[fun](jnp), order, modes=modes)
    assert got == expected
    assert (expected is None) == (fun != "broken")  # the oracle itself tells them apart


def test_check_grads_tolerances_and_eps():
    """atol/rtol as numbers or per-dtype dicts, and eps, are honoured as JAX does: a loose
    tolerance accepts the broken derivative, a huge eps makes the finite differences fail."""
    for kw in [{"atol": 0.5, "rtol": 0.5}, {"atol": {np.float32: 0.5}, "rtol": {np.float32: 0.5}},
               {"eps": 0.5}, {"eps": 1e-3, "atol": 1e-4, "rtol": 1e-4}]:
        for fun in ["broken", "sin"]:
            got = _grads_outcome(tracejit.test_util.check_grads, _GRAD_FUNS[fun](tnp, tracejit),
                                 _GRAD_ARGS[fun](tnp), 1, **kw)
            expected = _grads_outcome(jax.test_util.check_grads, _GRAD_FUNS[fun](jnp, jax),
                                      _GRAD_ARGS[fun](jnp), 1, **kw)
            assert got == expected, (fun, kw)


def test_check_jvp_and_vjp_directly():
    from functools import partial
    for lib, mod in [(tnp, tracejit), (jnp, jax)]:
        def f(x, lib=lib):
            return lib.sin(x) * x
        x = (lib.asarray(np.array([0.5, 1.5, -0.3])),)
        mod.test_util.check_jvp(f, partial(mod.jvp, f), x)
        mod.test_util.check_vjp(f, partial(mod.vjp, f), x)
        bad = partial(mod.jvp, lambda x, lib=lib: lib.sin(x) * x * 1.5)
        with pytest.raises(AssertionError, match="my fn primal"):
            mod.test_util.check_jvp(f, bad, x, err_msg="my fn")
