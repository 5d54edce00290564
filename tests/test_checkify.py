"""jax.experimental.checkify (functional checks) and the hijax vocabulary flax.nnx builds on,
against real JAX: messages, jit around checkify, eager checks, JAX's errors; typed keys as
jax.Arrays with a typeof."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify as jcheckify

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.experimental import checkify as tcheckify
from tracejit.experimental import hijax

APIS = {"ours": (tj, tnp, tcheckify), "jax": (jax, jnp, jcheckify)}


def _program(api, np_mod, checkify):
    def f(x):
        checkify.check(x > 0, "x must be positive, got {}", x)
        checkify.check(x < 10, "too big {y}", y=x)
        return np_mod.log(x)
    found = {}
    for name, fun in [("eager", checkify.checkify(f)), ("jit", api.jit(checkify.checkify(f)))]:
        for x in [2.0, -1.0, 20.0, -30.0]:
            err, out = fun(np_mod.asarray(x, np.float32))
            found[name, x] = (err.get(), float(out))
    return found


def test_checkify_messages_match_jax():
    ours, theirs = (_program(*APIS[k]) for k in ("ours", "jax"))
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert ours[key][0] == theirs[key][0], key
        np.testing.assert_allclose(ours[key][1], theirs[key][1], rtol=1e-6)


@pytest.mark.parametrize("which", ["ours", "jax"])
def test_checkify_throw_and_eager_check(which):
    api, np_mod, checkify = APIS[which]
    err, _ = checkify.checkify(lambda x: checkify.check(x > 0, "bad {}", x))(
        np_mod.float32(-2.0))
    with pytest.raises(checkify.JaxRuntimeError, match=r"bad -2.0 \(`check` failed\)"):
        err.throw()
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    with pytest.raises(checkify.JaxRuntimeError, match="nope"):
        checkify.check(np_mod.asarray(False), "nope")
    with pytest.raises(ValueError, match="not functionalized"):
        api.jit(lambda x: checkify.check(x > 0, "bad"))(1.0)
    with pytest.raises(TypeError, match="PyTrees of arrays"):
        checkify.checkify(lambda x: checkify.check(x > 0, "{}", 1.0))(np_mod.float32(1.0))
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.checkify(lambda x: checkify.check(x > 0, "bad"))(np_mod.ones(2))
    assert len(checkify.user_checks) == 1


def test_checkify_nested_trace_is_refused_clearly():
    def f(x):
        return tj.jit(lambda y: tcheckify.check(y > 0, "bad"))(x)
    with pytest.raises(NotImplementedError, match="put jax.jit around checkify"):
        tcheckify.checkify(f)(1.0)


def test_typed_key_is_array_with_typeof():
    for api in (tj, jax):
        key = api.random.key(0)
        keys = api.random.split(key, 3)
        assert isinstance(key, api.Array)
        assert str(api.typeof(key)) == "key<fry>[]"
        assert str(api.typeof(keys)) == "key<fry>[3]"
        assert api.typeof(keys).shape == (3,)


def test_hijax_vocabulary():
    # what flax.nnx does with it at import: subclass, register a type, allow an effect
    class Box:
        pass

    class BoxTy(hijax.MutableHiType):
        def __eq__(self, other):
            return isinstance(other, BoxTy)

        def __hash__(self):
            return hash(BoxTy)

    hijax.register_hitype(Box, lambda box: BoxTy())
    assert tj.typeof(Box()) == BoxTy()

    class Effect:
        pass
    hijax.control_flow_allowed_effects.add_type(Effect)
    assert hijax.control_flow_allowed_effects.contains(Effect())

    class Get(hijax.HiPrimitive):
        pass
    with pytest.raises(NotImplementedError, match="flax_hijax_variable"):
        Get("get").bind(1.0)
    method = hijax.aval_method(lambda self: 1)
    assert method.fun(None) == 1 and hijax.aval_property(fget=len).fget("ab") == 2
    assert hijax.is_undefined_primal(1.0) is False
