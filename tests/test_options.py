"""JAX's configuration options (numpy_dtype_promotion, transfer_guard, default_device,
check_tracer_leaks, debug_key_reuse, default_prng_impl, ...): each one's config key, context
manager and behaviour, run beside real JAX on the same program wherever JAX runs it on CPU."""
import re

import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp_tj

API = [(tracejit, jnp_tj), (jax, jnp_jax)]


def outcome(fn):
    """("ok", dtype, weak type) of fn's result, or ("raise", exception class name, message)."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        return ("raise", type(e).__name__, str(e))
    return ("ok", str(r.dtype), bool(getattr(r, "weak_type", False)))


# --- numpy_dtype_promotion ---------------------------------------------------------------------
_PROMOTIONS = {
    "f32+i32": lambda api, jnp: jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.int32),
    "f32+f16": lambda api, jnp: jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.float16),
    "i8*i32": lambda api, jnp: jnp.ones(2, jnp.int8) * jnp.ones(2, jnp.int32),
    "u8+i8": lambda api, jnp: jnp.ones(2, jnp.uint8) + jnp.ones(2, jnp.int8),
    "f32+int": lambda api, jnp: jnp.ones(2, jnp.float32) + 1,
    "f16+float": lambda api, jnp: jnp.ones(2, jnp.float16) + 1.0,
    "i32+float": lambda api, jnp: jnp.ones(2, jnp.int32) + 1.0,
    "bool+int": lambda api, jnp: jnp.ones(2, bool) + 1,
    "f32+complex": lambda api, jnp: jnp.ones(2, jnp.float32) + 1j,
    "weak int+weak float": lambda api, jnp: jnp.asarray(1) + 1.0,
    "f32+np f64": lambda api, jnp: jnp.ones(2, jnp.float32) + np.ones(2),
    "f32 same": lambda api, jnp: jnp.ones(2, jnp.float32) * jnp.ones(2, jnp.float32),
    "sin(i32)": lambda api, jnp: jnp.sin(jnp.ones(2, jnp.int32)),
    "astype": lambda api, jnp: jnp.ones(2, jnp.int32).astype(jnp.float32),
    "promote_types": lambda api, jnp: jnp.zeros((), jnp.promote_types(jnp.float32, jnp.int8)),
    "result_type": lambda api, jnp: jnp.zeros((), jnp.result_type(jnp.int16, jnp.uint8)),
    "where": lambda api, jnp: jnp.where(True, jnp.ones(2, jnp.float32), jnp.ones(2, jnp.int32)),
    "concatenate": lambda api, jnp: jnp.concatenate([jnp.ones(2), jnp.ones(2, jnp.int32)]),
    "dot": lambda api, jnp: jnp.dot(jnp.ones(2, jnp.float32), jnp.ones(2, jnp.int32)),
    "at.set": lambda api, jnp: jnp.ones(2).at[0].set(jnp.ones((), jnp.int32)),
    "jit": lambda api, jnp: api.jit(lambda a, b: a * b)(jnp.ones(2), jnp.ones(2, jnp.int32)),
}


@pytest.mark.parametrize("mode", ["standard", "strict"])
@pytest.mark.parametrize("case", sorted(_PROMOTIONS))
def test_numpy_dtype_promotion(case, mode):
    def run(api, jnp):
        with api.numpy_dtype_promotion(mode):
            return outcome(lambda: _PROMOTIONS[case](api, jnp))
    ours, theirs = run(*API[0]), run(*API[1])
    if theirs[0] == "raise" and "strict" in theirs[2]:
        # the two dtypes are named in a set's order, which for Python's scalar types follows
        # their addresses: compare the names as a set
        names = [sorted(re.findall(r"'[^' ]+'", r[2].split(" have ")[0])) for r in (ours, theirs)]
        assert names[0] == names[1], (ours, theirs)
        ours, theirs = ours[:2] + (ours[2].split(" have ")[1],), \
            theirs[:2] + (theirs[2].split(" have ")[1],)
    assert ours == theirs


def test_numpy_dtype_promotion_config_key_and_jit_cache():
    f = tracejit.jit(lambda a, b: a + b)
    a, b = jnp_tj.ones(2), jnp_tj.ones(2, jnp_tj.int32)
    assert f(a, b).dtype == np.float32  # compiled under "standard" ...
    tracejit.config.update("jax_numpy_dtype_promotion", "strict")
    try:
        assert tracejit.config.jax_numpy_dtype_promotion == "strict"
        with pytest.raises(tracejit.dtypes.TypePromotionError):
            f(a, b)  # ... and not reused under "strict": the option is part of jit's key
    finally:
        tracejit.config.update("jax_numpy_dtype_promotion", "standard")
    # (JAX 0.10's and 0.12's words: the option holds a NumpyDtypePromotion enum member)
    with pytest.raises(ValueError, match="'loose' is not a valid NumpyDtypePromotion"):
        tracejit.config.update("jax_numpy_dtype_promotion", "loose")


# --- transfer_guard ----------------------------------------------------------------------------
# On CPU JAX guards host-to-device transfers only (reading an array back shares host memory).
# Cases where JAX moves a scalar of its own making (x[1]'s index, jnp.ones's fill value) are
# left out: tracejit makes no such transfer.
_TRANSFERS = {
    "jit(numpy)": lambda api, jnp, x: api.jit(lambda a: a * 2)(np.ones(3, np.float32)),
    "jit(python scalar)": lambda api, jnp, x: api.jit(lambda a: a * 2)(1.0),
    "jit(numpy scalar)": lambda api, jnp, x: api.jit(lambda a: a * 2)(np.float32(2)),
    "jit(array)": lambda api, jnp, x: api.jit(lambda a: a * 2)(x),
    "jit closing over numpy": lambda api, jnp, x: api.jit(lambda a: a + np.ones(3, np.float32))(x),
    "array op numpy": lambda api, jnp, x: x + np.ones(3, np.float32),
    "array op python scalar": lambda api, jnp, x: x * 2.0,
    "array op array": lambda api, jnp, x: x * x,
    "jnp.sin(numpy)": lambda api, jnp, x: jnp.sin(np.ones(3)),
    "jnp.asarray(numpy)": lambda api, jnp, x: jnp.asarray(np.ones(3)),
    "jnp.array(list)": lambda api, jnp, x: jnp.array([1.0, 2.0]),
    "jnp.asarray(array)": lambda api, jnp, x: jnp.asarray(x),
    "x[numpy index]": lambda api, jnp, x: x[np.array([0, 1])],
    "x.at[0].set(numpy)": lambda api, jnp, x: x.at[0].set(np.float32(1)),
    "vmap": lambda api, jnp, x: api.vmap(lambda a: a * a)(x),
    "random.key(0)": lambda api, jnp, x: api.random.key(0),
    "device_put(numpy)": lambda api, jnp, x: api.device_put(np.ones(3)),
    "device_put(numpy, device)": lambda api, jnp, x: api.device_put(np.ones(3), api.devices()[0]),
    "device_put(array, device)": lambda api, jnp, x: api.device_put(x, api.devices()[0]),
    "np.asarray(array)": lambda api, jnp, x: np.asarray(x),
    "array.tolist()": lambda api, jnp, x: x.tolist(),
    "str(array)": lambda api, jnp, x: str(x),
    "device_get(array)": lambda api, jnp, x: api.device_get(x),
    "copy": lambda api, jnp, x: x.copy(),
}


def _transfer_outcome(api, jnp, level, case):
    x = jnp.arange(3.0)
    with api.transfer_guard(level):
        try:
            _TRANSFERS[case](api, jnp, x)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).split(": aval=")[0]
    return "ok"


@pytest.mark.parametrize("level", ["allow", "log", "disallow", "log_explicit",
                                   "disallow_explicit"])
@pytest.mark.parametrize("case", sorted(_TRANSFERS))
def test_transfer_guard(case, level):
    assert _transfer_outcome(*API[0], level, case) == _transfer_outcome(*API[1], level, case)


@pytest.mark.parametrize("level,implicit,explicit", [("log", True, False),
                                                     ("log_explicit", True, True)])
def test_transfer_guard_log(caplog, level, implicit, explicit):
    with tracejit.transfer_guard_host_to_device(level), caplog.at_level("WARNING", "tracejit"):
        tracejit.jit(lambda a: a + 1)(np.ones(2, np.float32))
        logged_implicit = "host-to-device transfer: aval=" in caplog.text
        caplog.clear()
        tracejit.device_put(np.ones(2, np.float32))
        logged_explicit = "host-to-device transfer: aval=" in caplog.text
    assert (logged_implicit, logged_explicit) == (implicit, explicit)


def test_transfer_guard_reaches_jit_fast_path_and_config_keys():
    f = tracejit.jit(lambda a: a + 1)
    for _ in range(3):  # compiled and on the dispatch fast path
        f(np.ones(2, np.float32))
    tracejit.config.update("jax_transfer_guard", "disallow")  # sets all three directions
    try:
        assert tracejit.config.jax_transfer_guard_host_to_device == "disallow"
        assert tracejit.config.jax_transfer_guard_device_to_host == "disallow"
        with pytest.raises(tracejit.errors.JaxRuntimeError, match="Disallowed host-to-device"):
            f(np.ones(2, np.float32))
        with pytest.raises(tracejit.errors.JaxRuntimeError):
            f(np.ones(2, np.float32))  # (not re-entered on the fast path meanwhile)
        f(tracejit.device_put(np.ones(2, np.float32)))
        with tracejit.transfer_guard("allow"):
            f(np.ones(2, np.float32))
        assert tracejit.config.jax_transfer_guard_host_to_device == "disallow"
    finally:
        tracejit.config.update("jax_transfer_guard", None)
    f(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        tracejit.config.update("jax_transfer_guard_host_to_device", "sometimes")


# --- no_tracing, no_execution ------------------------------------------------------------------
# JAX runs an eager operation as a jitted program of its own, traced once per signature: under
# no_tracing such an operation raises in JAX where its signature is new, and under
# no_execution always. tracejit evaluates eager operations without tracing them, so only
# no_execution stops them (naming the operation as JAX does: "jit(sin)").
def _double(a):
    return a * 2


_GUARDED_CALLS = {
    "cached jit": lambda api, jnp, f, x: f(x),
    "new jit": lambda api, jnp, f, x: api.jit(_double)(x),
    "new signature": lambda api, jnp, f, x: f(np.ones(2, np.float32)),
    "lower": lambda api, jnp, f, x: api.jit(lambda a: a - 1).lower(x),
    "make_jaxpr": lambda api, jnp, f, x: api.make_jaxpr(_double)(x),
    "eval_shape": lambda api, jnp, f, x: api.eval_shape(_double, x),
    "device_put": lambda api, jnp, f, x: api.device_put(np.ones(3)),
    "eager sin": lambda api, jnp, f, x: jnp.sin(x),
    "eager grad": lambda api, jnp, f, x: api.grad(lambda a: (a * a).sum())(x),
}


@pytest.mark.parametrize("option", ["no_tracing", "no_execution"])
@pytest.mark.parametrize("case", sorted(_GUARDED_CALLS))
def test_no_tracing_no_execution(option, case):
    def run(api, jnp):
        # (JAX runs an eager operation as a jit it caches: one of float32[3] that an earlier
        # test in this process ran would be found, not traced)
        api.clear_caches()
        x = jnp.arange(3.0)
        f = api.jit(_double)
        f(x)
        with getattr(api, option)(True):
            try:
                _GUARDED_CALLS[case](api, jnp, f, x)
            except RuntimeError as e:
                return re.sub(r" at \S+:\d+ for", " at ... for", str(e))
        return "ok"
    ours, theirs = run(*API[0]), run(*API[1])
    if option == "no_tracing" and case.startswith("eager"):
        assert ours == "ok" and "'no_tracing' is set" in theirs  # (see above)
    elif case == "lower" and option == "no_tracing":  # (JAX names the function by its repr)
        assert ours.endswith(" for `jit`, but 'no_tracing' is set") and \
            theirs.endswith(" for `jit`, but 'no_tracing' is set")
    elif case == "eager grad":  # (the first operation JAX's grad runs is its own)
        assert ours.startswith("JAX tried to execute function jit(") and \
            theirs.startswith("JAX tried to execute function jit(")
    else:
        assert ours == theirs


def test_no_tracing_config_key():
    f = tracejit.jit(lambda a: a + 1)
    tracejit.config.update("jax_no_tracing", True)
    try:
        with pytest.raises(RuntimeError, match="'no_tracing' is set"):
            f(jnp_tj.ones(2))
    finally:
        tracejit.config.update("jax_no_tracing", False)
    assert float(f(jnp_tj.ones(2))[0]) == 2.0


# --- allow_f16_reductions ----------------------------------------------------------------------
_F16_SUMS = {
    "jnp.sum float16": lambda api, jnp, x: jnp.sum(x),  # (jnp sums half floats in float32)
    "jnp.sum bfloat16": lambda api, jnp, x: jnp.sum(x.astype(jnp.bfloat16)),
    "mean": lambda api, jnp, x: jnp.mean(x, axis=0),
    "lax.reduce_sum": lambda api, jnp, x: api.lax.reduce_sum(x, (1,)),
    "lax.reduce_sum bfloat16": lambda api, jnp, x: api.lax.reduce_sum(
        x.astype(jnp.bfloat16), (0,)),
    "lax.reduce_sum over size 1": lambda api, jnp, x: api.lax.reduce_sum(x[:1], (0,)),
    "lax.reduce_max": lambda api, jnp, x: api.lax.reduce_max(x, (1,)),
    "jit(lax.reduce_sum)": lambda api, jnp, x: api.jit(
        lambda a: api.lax.reduce_sum(a, (0, 1)))(x),
    "grad through a broadcast": lambda api, jnp, x: api.grad(
        lambda a: (a * x).astype(jnp.float32).sum())(jnp.float16(1)),
    "softmax": lambda api, jnp, x: api.nn.softmax(x),
}


@pytest.mark.parametrize("allow", [True, False])
@pytest.mark.parametrize("case", sorted(_F16_SUMS))
def test_allow_f16_reductions(case, allow):
    def run(api, jnp):
        x = jnp.ones((2, 3), jnp.float16)
        with api.allow_f16_reductions(allow):
            return outcome(lambda: _F16_SUMS[case](api, jnp, x))
    ours, theirs = run(*API[0]), run(*API[1])
    assert ours == theirs
    refused = {"lax.reduce_sum", "lax.reduce_sum bfloat16", "jit(lax.reduce_sum)",
               "grad through a broadcast"}
    assert (ours[0] == "raise") == (not allow and case in refused)


# --- legacy_prng_key, enable_custom_prng, default_prng_impl ------------------------------------
_RAW = np.array([0, 42], np.uint32)
_KEY_CALLS = {
    "normal(raw)": lambda api: api.random.normal(_RAW, (2,)),
    "split(raw)": lambda api: api.random.split(_RAW),
    "fold_in(raw)": lambda api: api.random.fold_in(_RAW, 3),
    "key_data(raw)": lambda api: api.random.key_data(_RAW),
    "jit(split)(raw)": lambda api: api.jit(lambda k: api.random.split(k))(_RAW),
    "normal(key)": lambda api: api.random.normal(api.random.key(42), (2,)),
    "split(key)": lambda api: api.random.split(api.random.key(42)),
    "PRNGKey": lambda api: api.random.PRNGKey(42),
}


def _key_outcome(api, option, value, case):
    import warnings
    with warnings.catch_warnings(record=True) as caught, getattr(api, option)(value):
        warnings.simplefilter("always")
        try:
            r = _KEY_CALLS[case](api)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        if str(r.dtype).startswith("key"):
            bits = np.asarray(api.random.key_data(r))
        else:
            bits = np.asarray(r)
    return str(r.dtype), bits.tolist(), [(w.category.__name__, str(w.message)) for w in caught]


@pytest.mark.parametrize("option,value", [("legacy_prng_key", "allow"),
                                          ("legacy_prng_key", "warn"),
                                          ("legacy_prng_key", "error"),
                                          ("enable_custom_prng", True)])
@pytest.mark.parametrize("case", sorted(_KEY_CALLS))
def test_prng_key_options(case, option, value):
    assert _key_outcome(tracejit, option, value, case) == _key_outcome(jax, option, value, case)


_RAW4 = np.array([0, 42, 0, 42], np.uint32)


def _default_impl_outcome(api, impl):
    """Keys made without `impl`, raw uint32[4] data read as the default implementation's, and
    samples from them, under jax_default_prng_impl."""
    with api.default_prng_impl(impl):
        raw, typed = api.random.PRNGKey(7), api.random.key(7)
        return (np.asarray(raw).tolist(), str(typed.dtype), str(api.random.key_impl(raw)),
                str(api.random.key_dtype()),
                np.asarray(api.random.uniform(raw, (3,))).tolist(),
                np.asarray(api.random.normal(_RAW4, (2,))).tolist(),
                np.asarray(api.random.split(raw)).tolist(),
                np.asarray(api.random.key_data(api.random.fold_in(typed, 5))).tolist())


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_default_prng_impl(impl):
    # keys made without `impl` follow the option, bit for bit with JAX's (tests/
    # test_random_rbg.py has every sampler); other keys keep their implementation
    assert _default_impl_outcome(tracejit, impl) == _default_impl_outcome(jax, impl)
    with tracejit.default_prng_impl(impl):
        ours = tracejit.random.uniform(tracejit.random.key(7, impl="threefry2x32"), (4,))
    with jax.default_prng_impl(impl):
        theirs = jax.random.uniform(jax.random.key(7, impl="threefry2x32"), (4,))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert str(tracejit.random.key_impl(tracejit.random.key(0))) == \
        str(jax.random.key_impl(jax.random.key(0))) == "threefry2x32"


@pytest.mark.parametrize("impl", ["threefry4x32", "philox2x32", "philox4x32"])
def test_default_prng_impl_not_implemented(impl):
    # the implementations tracejit does not have are refused rather than misnamed
    with tracejit.default_prng_impl(impl):
        for make in (tracejit.random.key, tracejit.random.PRNGKey):
            with pytest.raises(NotImplementedError, match=f'"{impl}" PRNG implementation'):
                make(0)
        with pytest.raises(NotImplementedError, match=f'"{impl}" PRNG implementation'):
            tracejit.random.normal(_RAW)  # (raw data is read as the default implementation's)
        ours = tracejit.random.uniform(tracejit.random.key(7, impl="threefry2x32"), (4,))
    with pytest.raises(NotImplementedError, match=f'"{impl}" PRNG implementation'):
        tracejit.random.key(0, impl=impl)
    with jax.default_prng_impl(impl):
        theirs = jax.random.uniform(jax.random.key(7, impl="threefry2x32"), (4,))
        assert jax.random.key(0).dtype != jax.random.key(0, impl="threefry2x32").dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert str(tracejit.random.key_impl(tracejit.random.key(0))) == \
        str(jax.random.key_impl(jax.random.key(0)))


# --- softmax_custom_jvp ------------------------------------------------------------------------
@pytest.mark.parametrize("flag", [False, True])
def test_softmax_custom_jvp(flag):
    # the same values and gradients either way (within rounding); the option decides whether
    # softmax is one custom_jvp function (its JVP written out) or its formula differentiated
    x = np.array([[1.0, 2.0, -1.0], [0.5, 4.0, 3.0]], np.float32)
    mask = np.array([[True, True, False], [True, False, True]])

    def run(api):
        with api.softmax_custom_jvp(flag):
            grad = api.grad(lambda a: (api.nn.softmax(a, where=mask) * np.arange(3.0)).sum())(x)
            _, tangent = api.jvp(lambda a: api.nn.softmax(a, axis=0), (x,), (np.ones_like(x),))
            eqns = api.make_jaxpr(api.nn.softmax)(x).jaxpr.eqns
            return np.asarray(grad), np.asarray(tangent), [str(e.primitive) for e in eqns]
    ours, theirs = run(tracejit), run(jax)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    assert (ours[2] == ["custom_jvp_call"]) == (theirs[2] == ["custom_jvp_call"]) == flag


# --- check_tracer_leaks / checking_leaks -------------------------------------------------------
LEAKED = None


def _leak_to_list(api, jnp, box):
    api.jit(lambda x: box.append(x) or x * 2)(1.0)


def _leak_to_global(api, jnp, box):
    def f(x):
        global LEAKED
        LEAKED = x + 1
        return x
    api.jit(f)(2.0)


_LEAKS = {
    "jit, appended to a list": _leak_to_list,
    "jit, a module global": _leak_to_global,
    "jit, no leak": lambda api, jnp, box: api.jit(lambda x: (x * 2) + 1)(1.0),
    "make_jaxpr": lambda api, jnp, box: api.make_jaxpr(lambda x: box.append(x) or x)(1.0),
    "eval_shape": lambda api, jnp, box: api.eval_shape(lambda x: box.append(x) or x, 1.0),
    "scan body": lambda api, jnp, box: api.lax.scan(
        lambda c, x: (box.append(c) or c + x, x), 0.0, jnp.ones(3)),
    "scan, no leak": lambda api, jnp, box: api.lax.scan(lambda c, x: (c + x, x), 0.0,
                                                         jnp.ones(3)),
    "vmap": lambda api, jnp, box: api.vmap(lambda x: box.append(x) or x * 2)(jnp.ones(3)),
    "grad": lambda api, jnp, box: api.grad(lambda x: box.append(x) or x * 2)(1.0),
    "cond": lambda api, jnp, box: api.jit(lambda p, x: api.lax.cond(
        p, lambda y: box.append(y) or y, lambda y: -y, x))(True, 1.0),
}


def _leak_reports(api, jnp) -> dict:
    """Each case of _LEAKS run by `api` under checking_leaks: "ok", or the exception's type,
    its text's head and what it names as the leaked tracer's holder."""
    global LEAKED

    def run(case):
        global LEAKED
        box = []
        with api.checking_leaks():
            try:
                _LEAKS[case](api, jnp, box)
            except Exception as e:  # noqa: BLE001
                text = str(e)
                holder = "module global" if f"{__name__}.LEAKED" in text else \
                    "list" if "is referred to by <list " in text else "?"
                return [type(e).__name__, text.split(" Leaked tracer(s):")[0], holder]
            finally:
                LEAKED = None
        return "ok"
    return {case: run(case) for case in _LEAKS}


@pytest.fixture(scope="module")
def leak_reports():
    """_leak_reports of both libraries, each in a fresh process: the check walks the heap
    (gc.collect, gc.get_referrers: JAX's as ours), and the test process's heap after the
    suite's other files made each case take 5-20 s of both sides' time, 0.1-0.5 s here."""
    return _each_in_a_process("leaks", devices=1)


@pytest.mark.parametrize("case", sorted(_LEAKS))
def test_check_tracer_leaks(case, leak_reports):
    global LEAKED
    ours, theirs = (report[case] for report in leak_reports)
    if case == "jit, a module global" and theirs != "ok":
        # the leaked tracer has two referrers in JAX: the module global and a list inside
        # JAX's trace; JAX's _why_alive names the first that gc.get_referrers returns ("just
        # pick one parent"), whose order varies from process to process (once in a CI run:
        # the list)
        assert theirs[2] in ("module global", "list"), theirs
        theirs = [*theirs[:2], "module global"]
    assert ours == theirs
    # the leaked tracers are found only under the option: off, each case runs (its leak shows
    # when the tracer is used later: UnexpectedTracerError)
    box = []
    _LEAKS[case](tracejit, jnp_tj, box)
    LEAKED = None


# --- array_garbage_collection_guard ------------------------------------------------------------
class _Cycle:
    pass


def _drop_array_in_a_cycle(jnp):
    import gc
    node = _Cycle()
    node.itself, node.array = node, jnp.ones(3)
    del node
    gc.collect()


@pytest.mark.parametrize("level", [None, "allow", "log"])
def test_array_garbage_collection_guard(caplog, level):
    message = "`jax.Array` was deleted by the Python garbage collector instead of reference " \
              "counting."
    with tracejit.array_garbage_collection_guard(level), caplog.at_level("ERROR", "tracejit"):
        y = jnp_tj.ones(2)
        del y  # (freed by reference counting: never reported)
        assert message not in caplog.text
        _drop_array_in_a_cycle(jnp_tj)
    assert (message in caplog.text) == (level == "log")
    caplog.clear()
    _drop_array_in_a_cycle(jnp_tj)  # (the guard is off again after the block)
    assert message not in caplog.text


def test_array_garbage_collection_guard_fatal():
    import subprocess
    import sys
    from tests.in_devices import ROOT
    # (automatic collections off: while one runs in a background thread — start-up, tiering —
    # and a finalizer releases the GIL, the main thread's gc.collect() returns at once, as
    # CPython's does during a collection, and "not reached" is printed before the abort)
    script = ("import gc, tracejit, tracejit.numpy as jnp\n"
              "gc.disable()\n"
              "tracejit.config.update('jax_array_garbage_collection_guard', 'fatal')\n"
              "class C: pass\n"
              "y = jnp.ones(2); del y\n"
              "print('refcount ok', flush=True)\n"
              "c = C(); c.c, c.x = c, jnp.ones(3); del c; gc.collect()\n"
              "print('not reached', flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, check=False)
    assert done.returncode != 0 and "refcount ok" in done.stdout
    assert "not reached" not in done.stdout and "garbage collector" in done.stderr


# --- debug_key_reuse ---------------------------------------------------------------------------
def _twice(fn):
    return lambda r, api, k: (fn(r, api, k), fn(r, api, k))


_REUSES = {
    "normal twice": _twice(lambda r, api, k: r.normal(k)),
    "uniform then randint": lambda r, api, k: (r.uniform(k), r.randint(k, (), 0, 3)),
    "split twice": _twice(lambda r, api, k: r.split(k)),
    "bits twice": _twice(lambda r, api, k: r.bits(k)),
    "split then normal": lambda r, api, k: (r.split(k), r.normal(k)),
    "split, each half once": lambda r, api, k: [r.normal(h) for h in r.split(k)],
    "fold_in twice": _twice(lambda r, api, k: r.fold_in(k, 1)),
    "normal then key_data": lambda r, api, k: (r.normal(k), r.key_data(k)),
    "clone": _twice(lambda r, api, k: r.normal(r.clone(k))),
    "slice twice": lambda r, api, k: (lambda ks: (ks[0], ks[0]))(r.split(k, 3)),
    "slice, rest of the array": lambda r, api, k: (lambda ks: (r.normal(ks[0]),
                                                               r.normal(ks[1:][0])))(r.split(k, 3)),
    "jit consuming, called twice": lambda r, api, k: (lambda f: (f(k), f(k)))(
        api.jit(lambda a: r.normal(a))),
    "jit consuming its 2nd argument": lambda r, api, k: (lambda f: (f(r.key(1), k),
                                                                    f(r.key(2), k)))(
        api.jit(lambda a, b: r.normal(b))),
    "jit not consuming, consumed key": lambda r, api, k: (r.normal(k), api.jit(lambda a: a)(k)),
    "jit consuming twice inside": lambda r, api, k: api.jit(
        lambda a: (r.normal(a), r.uniform(a)))(k),
    "jit split twice inside": lambda r, api, k: api.jit(lambda a: (r.split(a), r.split(a)))(k),
    "jit bits twice inside": lambda r, api, k: api.jit(lambda a: (r.bits(a), r.bits(a)))(k),
    "jit returns its consumed key": lambda r, api, k: r.normal(
        api.jit(lambda a: (r.normal(a), a))(k)[1]),
    "jit returns fresh keys": lambda r, api, k: [r.normal(h) for h in api.jit(r.split)(k)],
    "jit passes a key through": _twice(lambda r, api, k: r.normal(api.jit(lambda a: a)(k))),
    "key made inside jit": lambda r, api, k: api.jit(
        lambda s: (lambda q: (r.normal(q), r.normal(q)))(r.key(s)))(0),
    "vmap consuming a key array twice": lambda r, api, k: (lambda ks: (
        api.vmap(r.normal)(ks), api.vmap(r.normal)(ks)))(r.split(k, 3)),
    "vmap after a slice": lambda r, api, k: (lambda ks: (r.normal(ks[0]),
                                                         api.vmap(r.normal)(ks)))(r.split(k, 3)),
    "vmap of fold_in, then vmap of normal": lambda r, api, k: (lambda ks: (
        api.vmap(lambda q: r.fold_in(q, 1))(ks), api.vmap(r.normal)(ks)))(r.split(k, 3)),
    "raw keys are not tracked": lambda r, api, k: _twice(
        lambda r, api, k: r.normal(k))(r, api, r.PRNGKey(0)),
}


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg", "unsafe_rbg"])
@pytest.mark.parametrize("case", sorted(_REUSES))
def test_debug_key_reuse(case, impl):
    def run(api, flag):
        with api.debug_key_reuse(flag):
            try:
                _REUSES[case](api.random, api, api.random.key(0, impl=impl))
            except Exception as e:  # noqa: BLE001
                return type(e).__name__, str(e)
        return "ok"
    ours, theirs = run(tracejit, True), run(jax, True)
    assert ours == theirs
    assert run(tracejit, False) == "ok"  # (off: nothing is tracked)


def test_debug_key_reuse_refuses_before_running():
    def run(api):
        ran = []

        def body(k):
            api.debug.callback(lambda: ran.append(1))
            return api.random.normal(k)
        f, k = api.jit(body), api.random.key(0)
        with api.debug_key_reuse(True):
            f(k)
            with pytest.raises(api.errors.KeyReuseError, match="Previously-consumed key"):
                f(k)
        api.effects_barrier()
        return ran
    assert run(tracejit) == run(jax) == [1]  # (the refused call never ran its program)


# --- thread_guard ------------------------------------------------------------------------------
def test_thread_guard_across_processes(tmp_path):
    """tests/mpi/thread_guard.py under mpiexec -n 2: the cases of JAX's own multiprocess test
    (jax/tests/multiprocess/thread_guard_test.py), each process saying what happened."""
    import json
    import os
    import subprocess
    import sys
    from tests.in_devices import ROOT
    from tracejit.distributed import mpiexec
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRACEJIT_NUM_CPU_DEVICES="2")
    done = subprocess.run([mpiexec(), "-n", "2", sys.executable,
                           str(ROOT / "tests" / "mpi" / "thread_guard.py"), str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    raised = {"other thread, spanning": "thread guard was set",
              "other thread, spanning, cached": "thread guard was set",
              "nested in another thread": "Nested thread guards in different threads"}
    for rank in (0, 1):
        said = json.loads((tmp_path / f"out.{rank}.json").read_text())
        assert sorted(said) == sorted([
            "other thread, spanning", "other thread, spanning, cached", "same thread, spanning",
            "other thread, within the process", "nested in the same thread",
            "guard off inside", "after the guard", "nested in another thread"])
        for name, what in said.items():
            if name in raised:
                assert what.startswith("raised: ") and raised[name] in what, (rank, name, what)
            else:
                assert what == "ok", (rank, name, what)

# --- the names, the environment, enable_checks, jax2tf_associative_scan_reductions -------------
_OPTION_NAMES = [
    "numpy_dtype_promotion", "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device", "default_device", "check_tracer_leaks", "enable_checks",
    "debug_key_reuse", "default_prng_impl", "enable_custom_prng", "legacy_prng_key",
    "allow_f16_reductions", "array_garbage_collection_guard", "softmax_custom_jvp", "no_tracing",
    "no_execution", "thread_guard", "remove_size_one_mesh_axis_from_type", "auto_pcast"]


def test_option_names_and_defaults():
    for name in _OPTION_NAMES + ["transfer_guard", "checking_leaks",
                                 "jax2tf_associative_scan_reductions"]:
        assert callable(getattr(tracejit, name)), name
    for name in _OPTION_NAMES:
        key = f"jax_{name}"
        if key != "jax_enable_checks":  # (tests/conftest.py turns the checks on)
            assert str(getattr(tracejit.config, key)) == str(getattr(jax.config, key)), key
    assert tracejit.config.jax2tf_associative_scan_reductions is False


_ENVIRONMENT = {
    "JAX_NUMPY_DTYPE_PROMOTION": "strict", "JAX_TRANSFER_GUARD_HOST_TO_DEVICE": "disallow",
    "JAX_TRANSFER_GUARD": "log", "JAX_DEBUG_KEY_REUSE": "1", "JAX_DEFAULT_PRNG_IMPL": "rbg",
    "JAX_CHECK_TRACER_LEAKS": "true", "JAX_ENABLE_CHECKS": "1", "JAX_LEGACY_PRNG_KEY": "warn",
    "JAX_ALLOW_F16_REDUCTIONS": "0", "JAX_SOFTMAX_CUSTOM_JVP": "1", "JAX_NO_TRACING": "0",
    "JAX_ARRAY_GARBAGE_COLLECTION_GUARD": "log", "JAX_AUTO_PCAST": "false",
    "JAX_ENABLE_CUSTOM_PRNG": "1", "JAX_REMOVE_SIZE_ONE_MESH_AXIS_FROM_TYPE": "1",
    "JAX2TF_ASSOCIATIVE_SCAN_REDUCTIONS": "1"}


def test_options_from_the_environment():
    """Each option's JAX_... variable sets its starting value, as in JAX ($JAX_TRANSFER_GUARD
    over the three directions)."""
    import json
    import os
    import subprocess
    import sys
    from tests.in_devices import ROOT
    keys = [f"jax_{n}" for n in _OPTION_NAMES] + ["jax_transfer_guard",
                                                   "jax2tf_associative_scan_reductions"]
    script = ("import importlib, json, sys\n"
              "api = importlib.import_module(sys.argv[1])\n"
              f"print(json.dumps({{k: str(getattr(api.config, k)) for k in {keys!r}}}))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **_ENVIRONMENT)
    answers = []
    for module in ("tracejit", "jax"):
        done = subprocess.run([sys.executable, "-c", script, module], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert answers[0] == answers[1]
    assert answers[0]["jax_numpy_dtype_promotion"] == "strict"
    assert answers[0]["jax_transfer_guard_host_to_device"] == "log"


def test_enable_checks(monkeypatch):
    # jax_enable_checks (JAX's option for checking its internals) runs the jaxpr checker on
    # every traced jaxpr and after every compiler pass: a pass that breaks a jaxpr is named
    from tracejit.compiler import passes
    from tracejit.core.jaxpr import Jaxpr, JaxprTypeError

    def cse(jaxpr):  # a broken pass: drops the first equation, whose output is still read
        return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns[1:])
    monkeypatch.setattr(passes, "cse", cse)
    closed = tracejit.make_jaxpr(lambda x: jnp_tj.sin(x) * 2.0)(np.zeros(3, np.float32))
    with tracejit.enable_checks(False):
        passes.optimize(closed.jaxpr, closed.consts)  # unchecked: nothing notices
    with tracejit.enable_checks(True), pytest.raises(JaxprTypeError, match="after the cse"):
        passes.optimize(closed.jaxpr, closed.consts)


@pytest.mark.parametrize("flag", [False, True])
def test_jax2tf_associative_scan_reductions(flag):
    # In JAX the option picks jax2tf's lowering of cumsum/cumprod/cummax/cummin for TensorFlow
    # (associative scan or reduce-window); it changes no result of JAX's own, and tracejit has
    # no jax2tf: the option exists, is set and read back, and the results stay JAX's
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    for api, jnp in API:
        with api.jax2tf_associative_scan_reductions(flag):
            assert api.config.jax2tf_associative_scan_reductions is flag
            got = [np.asarray(f(x, axis=1)) for f in (jnp.cumsum, jnp.cumprod)]
            got.append(np.asarray(api.lax.cummax(x, axis=0)))
        np.testing.assert_array_equal(got[0], np.cumsum(x, axis=1))
        np.testing.assert_array_equal(got[1], np.cumprod(x, axis=1))
        np.testing.assert_array_equal(got[2], np.maximum.accumulate(x, axis=0))


# --- default_device ----------------------------------------------------------------------------
def _placements(api, jnp) -> dict:
    """Where each value goes (device ids, committed) with device 1 as the default device, in a
    process of two CPU devices."""
    d0, d1 = api.devices()[:2]

    def where(a):
        return sorted(d.id for d in a.devices()), a.committed
    x = jnp.ones(3)
    c0 = api.device_put(jnp.ones(3), d0)
    f = api.jit(lambda a: a * 2)
    out = {}
    with api.default_device(d1):
        out["jnp.ones"] = where(jnp.ones(3))
        out["jnp.asarray(numpy)"] = where(jnp.asarray(np.ones(3)))
        out["uncommitted made before * 2"] = where(x * 2)
        out["jit(numpy)"] = where(f(np.ones(3)))
        out["jit(uncommitted)"] = where(f(x))
        out["jit(committed to 0)"] = where(f(c0))
        out["committed to 0 * 2"] = where(c0 * 2)
        out["committed to 0 + uncommitted"] = where(c0 + jnp.ones(3))
        out["device_put(numpy)"] = where(api.device_put(np.ones(3)))
        out["device_put(uncommitted made before)"] = where(api.device_put(x))
        out["uncommitted made before"] = where(x)
        out["copy"] = where(jnp.ones(3).copy())
        out["random.key"] = where(api.random.key_data(api.random.key(0)))
        out["config read"] = api.config.jax_default_device.id
    with api.default_device("cpu"):
        out["'cpu'"] = where(jnp.ones(3))
    api.config.update("jax_default_device", d1)
    out["config.update"] = where(jnp.ones(3)), where(f(np.ones(3)))
    api.config.update("jax_default_device", None)
    out["after"] = where(jnp.ones(3))
    try:
        api.config.update("jax_default_device", "tpu0")
    except ValueError as e:
        out["bad value"] = str(e)
    return out


def _each_in_a_process(scenario: str, devices: int = 2) -> list:
    """`scenario`'s answers from tracejit and from JAX, each in a fresh process of `devices`
    CPU devices (this file run as a script)."""
    import json
    import os
    import subprocess
    import sys
    from tests.in_devices import ROOT
    env = dict(os.environ, TRACEJIT_NUM_CPU_DEVICES=str(devices), PYTHONPATH=str(ROOT),
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    answers = []
    for module in ("tracejit", "jax"):
        done = subprocess.run([sys.executable, __file__, scenario, module], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return answers


def test_default_device():
    ours, theirs = _each_in_a_process("placements")
    assert ours == theirs


# --- auto_pcast, remove_size_one_mesh_axis_from_type (shard_map's typing) ----------------------
def _pcasts(api, jnp) -> dict:
    """Under shard_map(check_vma=True), operands varying over different manual axes: made to
    agree by an implicit pvary (auto_pcast=True), or JAX's error (False)."""
    P, Auto = api.sharding.PartitionSpec, api.sharding.AxisType.Auto
    mesh = api.make_mesh((2,), ("i",), axis_types=(Auto,))
    programs = {"varying * invariant": lambda x: x * api.lax.psum(x, "i"),
                "varying + constant": lambda x: x + jnp.ones(2),
                "varying * Python scalar": lambda x: x * 2.0,
                "varying * varying": lambda x: x * x}
    out = {}
    for flag in (True, False):
        with api.auto_pcast(flag):
            for name, body in programs.items():
                for check in (True, False):
                    f = api.jit(api.shard_map(body, mesh=mesh, in_specs=P("i"),
                                              out_specs=P("i"), check_vma=check))
                    try:
                        out[f"{flag} {name} {check}"] = np.asarray(f(np.arange(4.0))).tolist()
                    except ValueError as e:
                        out[f"{flag} {name} {check}"] = str(e)
    return out


def _size_one_axes(api, jnp) -> dict:
    """Types over a mesh whose axes have size 1: with the option, those axes leave the types
    (the `{V:i}` of shard_map's values, an Explicit layout's `@i`)."""
    P, AT = api.sharding.PartitionSpec, api.sharding.AxisType
    out = {}
    for flag in (False, True):
        seen = []
        with api.remove_size_one_mesh_axis_from_type(flag):
            mesh = api.make_mesh((1, 1), ("i", "j"), axis_types=(AT.Auto, AT.Auto))

            def body(x):
                seen.append(str(api.typeof(x)))
                seen.append(str(api.typeof(api.lax.psum(x * 2, "i"))))
                return x
            api.jit(api.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(
                np.ones((4, 2), np.float32))
            explicit = api.make_mesh((1, 1), ("i", "j"), axis_types=(AT.Explicit, AT.Explicit))
            with api.set_mesh(explicit):
                a = api.device_put(np.ones((4, 2), np.float32), P("i", "j"))
                seen.append(str(api.typeof(a)))
                seen.append(str(a.sharding.spec))
        out[str(flag)] = seen
    return out


def test_auto_pcast():
    ours, theirs = _each_in_a_process("pcasts")
    assert ours == theirs
    assert "requires varying manual axes to match" in ours["False varying * invariant True"]


def test_remove_size_one_mesh_axis_from_type():
    ours, theirs = _each_in_a_process("size_one_axes")
    assert ours == theirs
    assert ours["True"] != ours["False"]


if __name__ == "__main__":
    import importlib
    import json
    import sys
    scenario = {"placements": _placements, "pcasts": _pcasts, "size_one_axes": _size_one_axes,
                "leaks": _leak_reports}
    module = importlib.import_module(sys.argv[2])
    print(json.dumps(scenario[sys.argv[1]](module, importlib.import_module(sys.argv[2] +
                                                                            ".numpy"))))
