"""jit: caching keyed like JAX's, static and donated arguments, nesting, AOT stages, config —
values compared with eager execution and with real JAX."""
import functools

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _f(x, y):
    return lax.exp(x) * y + 1.0


def test_jit_matches_eager_and_jax():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    y = np.float32(2.5)
    got = tracejit.jit(_f)(x, y)
    eager = _f(tnp.asarray(x), tnp.asarray(y))
    want = jax.jit(lambda x, y: jnp.exp(x) * y + 1.0)(x, y)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got.dtype == want.dtype and got.shape == want.shape


def test_side_effect_runs_once_per_trace():
    calls = []

    @tracejit.jit
    def f(x):
        calls.append(1)
        return x * 2

    for v in (1.0, 2.0, 3.0):
        assert float(f(np.float32(v))) == 2 * v
    assert len(calls) == 1
    f(np.ones(3, np.float32))  # new shape: new trace
    assert len(calls) == 2
    f(np.ones(3, np.int32))  # new dtype: new trace
    assert len(calls) == 3
    f(3.0)  # Python float: weakly typed f32[] differs from strong f32[]
    assert len(calls) == 4
    f(4.0)
    assert len(calls) == 4


def test_cache_keys_on_static_values_and_pytree_structure():
    traces = []

    @functools.partial(tracejit.jit, static_argnums=(1,))
    def f(x, n):
        traces.append(n)
        out = x
        for _ in range(n):
            out = out * x
        return out

    x = np.float32(2.0)
    assert float(f(x, 2)) == 8.0
    assert float(f(x, 3)) == 16.0
    assert float(f(x, 2)) == 8.0
    assert traces == [2, 3]

    seen = []

    @tracejit.jit
    def g(tree):
        seen.append(1)
        return tree["a"] + tree["b"]

    g({"a": 1.0, "b": 2.0})
    g({"a": 3.0, "b": 4.0})
    assert len(seen) == 1
    g({"a": np.ones(2, np.float32), "b": 2.0})
    assert len(seen) == 2


def test_decorator_factory_and_defaults_as_in_the_seed():
    @tracejit.jit(static_argnums=(1, 2))
    def apply(x, name, n=2):
        if name == "poly":
            out = x
            for _ in range(n - 1):
                out = out * x
            return out
        return x

    x = np.array([-2.0, 0.0, 2.0], np.float32)
    np.testing.assert_array_equal(np.asarray(apply(x, "poly", 3)), x ** 3)
    np.testing.assert_array_equal(np.asarray(apply(x, "poly")), x ** 2)
    np.testing.assert_array_equal(np.asarray(apply(x, "id")), x)


def test_static_argnames_resolve_to_positions():
    @functools.partial(tracejit.jit, static_argnames=("n",))
    def f(x, n):
        return x * n

    assert float(f(np.float32(2), 3)) == 6.0
    assert float(f(np.float32(2), n=4)) == 8.0


def test_unhashable_static_argument_is_a_value_error_like_jax():
    f = tracejit.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        f(1.0, [1, 2])
    with pytest.raises(ValueError):
        jax.jit(lambda x, n: x, static_argnums=1)(1.0, [1, 2])


def test_static_argnums_out_of_range_is_a_value_error_like_jax():
    def f(x, n):
        return x
    with pytest.raises(ValueError, match="static_argnums"):
        tracejit.jit(f, static_argnums=5)
    with pytest.raises(ValueError):
        jax.jit(f, static_argnums=5)


def test_non_array_argument_names_the_argument():
    def f(x, mode):
        return x
    with pytest.raises(TypeError, match="mode") as e:
        tracejit.jit(f)(1.0, "fast")
    assert "static_argnames" in str(e.value)
    with pytest.raises(TypeError):
        jax.jit(f)(1.0, "fast")


def test_non_array_output_is_a_type_error():
    with pytest.raises(TypeError, match="not a valid JAX type"):
        tracejit.jit(lambda x: "s")(1.0)


def test_nested_jit_stages_a_call_and_gives_same_values():
    inner = tracejit.jit(lambda x: lax.sin(x) * 2.0)

    @tracejit.jit
    def outer(x):
        return inner(x) + inner(x * 3.0)

    x = np.linspace(0, 1, 5, dtype=np.float32)
    jaxpr = tracejit.make_jaxpr(outer)(x)
    (call,) = jaxpr.eqns  # make_jaxpr of a jitted function: one call, as in JAX
    assert call.primitive.name == "jit" and call.params["name"] == "outer"
    inner_names = [e.primitive.name for e in call.params["jaxpr"].eqns]
    assert inner_names == ["jit", "mul", "jit", "add"]
    want = np.sin(x) * 2 + np.sin(x * 3) * 2
    np.testing.assert_allclose(np.asarray(outer(x)), want, rtol=1e-6)


def test_inline_true_leaves_no_call_equation():
    inner = tracejit.jit(lambda x: x + 1.0, inline=True)
    jaxpr = tracejit.make_jaxpr(lambda x: inner(x) * 2.0)(np.float32(1))
    assert [e.primitive.name for e in jaxpr.eqns] == ["add", "mul"]


def test_closure_over_array_becomes_constvar_and_scalars_literals():
    c = np.arange(3, dtype=np.float32)
    jaxpr = tracejit.make_jaxpr(lambda x: x * c + 2.0)(np.ones(3, np.float32))
    assert len(jaxpr.jaxpr.constvars) == 1
    text = str(jaxpr)
    assert "2.0:f32[]" in text
    assert text.startswith("{ lambda a:f32[3]; b:f32[3]. let")


def test_make_jaxpr_prints_like_jax():
    def f(x):
        return lax.exp(x) * 2.0

    ours = str(tracejit.make_jaxpr(f)(np.ones((3, 5), np.float32)))
    theirs = str(jax.make_jaxpr(lambda x: jnp.exp(x) * 2.0)(np.ones((3, 5), np.float32)))
    assert ours == theirs


def test_make_jaxpr_static_argnums():
    jaxpr = tracejit.make_jaxpr(lambda x, n: x * n, static_argnums=(1,))(np.float32(1), 3)
    assert len(jaxpr.jaxpr.invars) == 1


def test_disable_jit_runs_python_eagerly():
    calls = []

    @tracejit.jit
    def f(x):
        calls.append(type(x).__name__)
        return x + 1

    tracejit.config.update("jax_disable_jit", True)
    f(tnp.asarray(1.0))
    f(tnp.asarray(1.0))
    assert calls == ["Array", "Array"]


def test_donated_argument_is_invalid_afterwards():
    f = tracejit.jit(lambda x: x * 2.0, donate_argnums=0)
    x = tnp.asarray(np.ones(4, np.float32))
    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), 2 * np.ones(4))
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_aot_stages():
    def softmax_like(x):
        return lax.exp(x) * 0.5

    spec = tracejit.ShapeDtypeStruct((3, 5), tnp.float32)
    lowered = tracejit.jit(softmax_like).lower(spec)
    assert "exp" in lowered.as_text()
    compiled = lowered.compile()
    assert isinstance(compiled.as_text(), str) and "exp" in compiled.as_text()
    x = np.ones((3, 5), np.float32)
    np.testing.assert_allclose(np.asarray(compiled(x)), np.exp(x) * 0.5, rtol=1e-6)
    cost = compiled.cost_analysis()
    assert cost["flops"] == 30 and cost["transcendentals"] == 15
    mem = compiled.memory_analysis()
    assert mem.argument_size_in_bytes == 60 and mem.output_size_in_bytes == 60
    info = compiled.args_info
    assert info[0][0].shape == (3, 5) and not info[0][0].donated
    assert compiled.out_info.shape == (3, 5)
    with pytest.raises(TypeError, match="compiled with float32"):
        compiled(np.ones((4, 5), np.float32))
    traced = tracejit.jit(softmax_like).trace(x)
    assert str(traced.jaxpr) == str(tracejit.make_jaxpr(softmax_like)(x))


def test_compiled_takes_only_dynamic_arguments_like_jax():
    def f(x, n):
        return x * n
    c = tracejit.jit(f, static_argnums=1).lower(np.ones(3, np.float32), 2).compile()
    np.testing.assert_array_equal(np.asarray(c(np.ones(3, np.float32))), 2 * np.ones(3))
    with pytest.raises(TypeError):
        c(np.ones(3, np.float32), 2)


def test_x64_changes_the_cache_key(x64):
    f = tracejit.jit(lambda x: x + 1)
    assert f(1.5).dtype == np.float64
    tracejit.config.update("jax_enable_x64", False)
    assert f(1.5).dtype == np.float32


def test_devices_and_helpers():
    assert tracejit.default_backend() == "cpu"
    assert len(tracejit.devices()) == 1
    x = tracejit.device_put(np.arange(3))
    assert isinstance(x, tracejit.Array) and x.dtype == np.int32
    assert tracejit.block_until_ready({"a": x})["a"] is x


def test_jitted_method():
    class Model:
        scale = 3.0

        @functools.partial(tracejit.jit, static_argnums=0)
        def __call__(self, x):
            return x * self.scale

        def __hash__(self):
            return 0

        def __eq__(self, other):
            return isinstance(other, Model)

    assert float(Model()(np.float32(2))) == 6.0


# --- the trace cache lives on the underlying function, as in JAX ------------------------------

def _count_traces(lib, calls) -> int:
    """How many times `calls(jit, f)` traces f (a Python side effect runs once per trace)."""
    count = []

    def f(x, n=2):
        count.append(1)
        return x * n

    calls(lib, f)
    return len(count)


@pytest.mark.parametrize("name, calls", [
    ("two wrappers", lambda lib, f: (lib.jit(f)(4.0), lib.jit(f)(5.0))),
    ("make_jaxpr then jit", lambda lib, f: (lib.make_jaxpr(f)(4.0), lib.jit(f)(5.0))),
    ("other static_argnums", lambda lib, f: (lib.jit(f)(4.0, 3), lib.jit(f, static_argnums=1)(
        4.0, 3))),
    ("other shape", lambda lib, f: (lib.jit(f)(np.ones(2)), lib.jit(f)(np.ones(3)))),
    ("clear_cache", lambda lib, f: (lib.jit(f)(4.0), lib.jit(f).clear_cache(), lib.jit(f)(4.0))),
    ("clear_caches", lambda lib, f: (lib.jit(f)(4.0), lib.clear_caches(), lib.jit(f)(4.0))),
])
def test_traces_are_cached_on_the_function_like_jax(name, calls):
    assert _count_traces(tracejit, calls) == _count_traces(jax, calls)


def test_jit_options_that_change_the_program_have_their_own_traces():
    count = []

    def f(x, y):
        count.append(1)
        return x + 1.0

    x, y = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)
    want = x + 1.0
    for kw in [{}, {}, dict(donate_argnums=1), dict(keep_unused=True),
               dict(backend="interpret"), dict(static_argnums=1)]:
        args = (x, 7) if kw.get("static_argnums") else (x, y)
        np.testing.assert_array_equal(np.asarray(tracejit.jit(f, **kw)(*args)), want)
    assert len(count) == 5  # the second plain jit(f) found the first's trace


def test_unreferenceable_callables_get_their_own_cache():
    class Scale:  # no __weakref__ slot: cannot key a weak dictionary
        __slots__ = ("k",)

        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k

    x = np.arange(4.0, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(Scale(3.0))(x)), x * 3)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(Scale(5.0))(x)), x * 5)


def test_traces_do_not_keep_their_function_alive():
    import gc
    import weakref

    def make():
        def f(x):
            return x * 2.0
        return f

    f = make()
    ref = weakref.ref(f)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(np.ones(3, np.float32))),
                                  np.full(3, 2.0, np.float32))
    del f
    gc.collect()
    assert ref() is None


def test_disable_jit_after_a_compiled_call_runs_python():
    count = []

    def f(x):
        count.append(1)
        return x + 1

    g = tracejit.jit(f)
    x = tnp.asarray(np.ones(3, np.float32))
    g(x)
    g(x)  # the fast path
    with tracejit.disable_jit():
        g(x)
        g(x)
    g(x)
    assert len(count) == 3  # one trace, two Python runs


# --- jit options: device, abstracted_axes, keep_unused -------------------------------------

def test_jit_device_option_like_jax():
    x = np.arange(3.0, dtype=np.float32)
    with pytest.warns(DeprecationWarning):
        got = tracejit.jit(lambda x: x + 1, device=tracejit.devices()[0])(x)
    np.testing.assert_array_equal(np.asarray(got), x + 1)
    assert got.devices() == {tracejit.devices()[0]}
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda x: x + 1, device=None)(x)),
                                  x + 1)
    with pytest.warns(DeprecationWarning):  # JAX: both at once is an error
        with pytest.raises(ValueError, match="both a device and a backend"):
            tracejit.jit(lambda x: x, device=tracejit.devices()[0], backend="cpu")
    with pytest.warns(DeprecationWarning):
        with pytest.raises(ValueError, match="not a device"):
            tracejit.jit(lambda x: x, device="gpu:0")


def test_abstracted_axes_is_refused():
    with pytest.raises(NotImplementedError, match="abstracted_axes"):
        tracejit.jit(lambda x: x, abstracted_axes=("n",))
    with pytest.raises(NotImplementedError, match="abstracted_axes"):
        tracejit.make_jaxpr(lambda x: x, abstracted_axes=("n",))


@pytest.mark.parametrize("keep_unused", [False, True])
@pytest.mark.parametrize("backend", [None, "interpret"])
def test_keep_unused_decides_whether_an_unused_argument_is_donated_like_jax(keep_unused,
                                                                            backend):
    import warnings

    def f(x, y, z):
        return x * 2.0 + z

    data = [np.arange(3.0, dtype=np.float32), np.ones(3, np.float32), np.full(3, 5.0, np.float32)]
    want = data[0] * 2 + data[2]
    deleted = []
    for lib, kw in [(jax, {}), (tracejit, dict(backend=backend))]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            args = [lib.numpy.asarray(d) for d in data]
            g = lib.jit(f, donate_argnums=1, keep_unused=keep_unused, **kw)
            got = g(*args)
            again = g(args[0], lib.numpy.asarray(data[1]), args[2])  # tracejit's fast path
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.asarray(again), want)
        deleted.append((args[1].is_deleted(), args[0].is_deleted(),
                        [str(w.message)[:30] for w in caught if "donated" in str(w.message)]))
    assert deleted[0] == deleted[1]
    lowered = tracejit.jit(f, keep_unused=keep_unused).lower(*data)
    assert lowered.as_text().splitlines()[0].count("f32[3]") == (4 if keep_unused else 3)
    compiled = lowered.compile()
    np.testing.assert_array_equal(np.asarray(compiled(*data)), want)


def test_dispatch_fast_path_with_static_arguments_and_python_floats():
    """Repeated calls with static arguments (by position or keyword) and Python floats take the
    dispatch fast path: each still gets the program of its own static values and types (True
    is not 1, as for jit's cache) and its own float value; against NumPy."""
    def f(x, scale, n, mode="add"):
        factor = 10 if isinstance(n, bool) else n
        return x * factor + scale if mode == "add" else x * factor - scale

    g = tracejit.jit(f, static_argnums=(2,), static_argnames=("mode",))
    x = np.arange(3, dtype=np.float32)
    tx = tnp.asarray(x)
    for _ in range(2):  # the second round finds every signature in the fast path's index
        for scale in (0.5, 1.5):
            for n in (1, True, 2):
                for kwargs in ({}, {"mode": "add"}, {"mode": "sub"}):
                    got = np.asarray(g(tx, scale, n, **kwargs))
                    np.testing.assert_array_equal(got, f(x, np.float32(scale), n, **kwargs))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        g(tx, 0.5, [1])


def test_dispatch_fast_path_with_numpy_arguments_like_jax():
    """NumPy arrays and scalars take the dispatch fast path by dtype and shape (scalars by
    type): each call still gets the program of its own canonical dtype and shape, under x64
    and without it, and results (values, dtypes) are JAX's."""
    def f(x, y):
        return x * 2 + y

    args = [(np.arange(3, dtype=np.float32), np.float32(1.5)),
            (np.arange(3, dtype=np.float64), np.float64(1.5)),
            (np.arange(3, dtype=np.float64), np.float32(1.5)),  # (only x's dtype differs)
            (np.arange(3, dtype=np.int32), np.float32(1.5)),
            (np.arange(4, dtype=np.int64), np.int32(2)),
            (np.arange(6, dtype=np.int32).reshape(2, 3), np.float16(0.5)),
            (np.array(2.0, np.float32), np.array([1.0, 2.0], np.float64))]
    g, h = tracejit.jit(f), jax.jit(f)  # (one cache across the flag: its stamp tells them apart)
    try:
        for x64 in (False, True, False):
            tracejit.config.update("jax_enable_x64", x64)
            jax.config.update("jax_enable_x64", x64)
            for _ in range(2):  # the second round is served by the fast path's index
                for x, y in args:
                    ours, want = g(x, y), h(x, y)
                    assert ours.dtype == want.dtype and ours.shape == want.shape, (x64, x, y)
                    np.testing.assert_array_equal(np.asarray(ours), np.asarray(want))
    finally:
        tracejit.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)
