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
