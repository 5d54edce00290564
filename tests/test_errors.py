"""JAX's error classes and messages: same class as real JAX raises for the same program, and a
message naming the traced function, the argument, the user's line and the fix."""
import functools

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import errors, lax

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _both(make):
    """Run the same program on tracejit and on JAX; return both exceptions."""
    out = []
    for mod, np_mod, lax_mod in ((tracejit, tnp, lax), (jax, jnp, jax.lax)):
        with pytest.raises(Exception) as e:
            make(mod, np_mod, lax_mod)
        out.append(e.value)
    return out


def _class_names(exc):
    return [c.__name__ for c in type(exc).__mro__ if c.__name__ not in ("_JAXErrorMixin",)]


def test_hierarchy_matches_jax():
    pairs = [("ConcretizationTypeError", TypeError), ("TracerBoolConversionError", TypeError),
             ("TracerIntegerConversionError", TypeError), ("TracerArrayConversionError", TypeError),
             ("NonConcreteBooleanIndexError", IndexError), ("UnexpectedTracerError", TypeError)]
    for name, base in pairs:
        ours, theirs = getattr(errors, name), getattr(jax.errors, name)
        assert issubclass(ours, base) and issubclass(theirs, base)
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)


def test_python_if_on_traced_value():
    def make(mod, np_mod, lax_mod):
        @mod.jit
        def relu_branch(x):
            if x > 0:
                return x
            return -x
        relu_branch(1.0)

    ours, theirs = _both(make)
    assert type(ours).__name__ == type(theirs).__name__ == "TracerBoolConversionError"
    msg = str(ours)
    assert "relu_branch" in msg and "argument x" in msg
    assert "lax.cond" in msg and "jnp.where" in msg
    assert __file__ in msg  # the user's line


def test_int_of_traced_value_names_the_argument_and_static_fix():
    def make(mod, np_mod, lax_mod):
        @mod.jit
        def take_first(x, n):
            return x * int(n)
        take_first(np.ones(3, np.float32), 2)

    ours, theirs = _both(make)
    assert type(ours).__name__ == type(theirs).__name__ == "ConcretizationTypeError"
    msg = str(ours)
    assert "argument n" in msg and "static_argnames=('n',)" in msg and "take_first" in msg


def test_index_of_traced_value():
    def make(mod, np_mod, lax_mod):
        @mod.jit
        def f(x, n):
            return [x, x][n]
        f(1.0, 1)

    ours, theirs = _both(make)
    assert type(ours).__name__ == type(theirs).__name__ == "TracerIntegerConversionError"
    assert "argument n" in str(ours)


def test_numpy_on_traced_value():
    def make(mod, np_mod, lax_mod):
        mod.jit(lambda x: np.sin(np.asarray(x)))(1.0)

    ours, theirs = _both(make)
    assert type(ours).__name__ == type(theirs).__name__ == "TracerArrayConversionError"
    assert "jax.numpy" in str(ours)


def test_leaked_tracer():
    def make(mod, np_mod, lax_mod):
        leaked = []

        @mod.jit
        def f(x):
            leaked.append(x)
            return x
        f(1.0)
        return leaked[0] + 1

    ours, theirs = _both(make)
    assert type(ours).__name__ == type(theirs).__name__ == "UnexpectedTracerError"
    assert "f " in str(ours) or "function f" in str(ours)


def test_leaked_tracer_used_in_another_trace():
    leaked = []

    @tracejit.jit
    def f(x):
        leaked.append(x)
        return x

    f(1.0)
    with pytest.raises(errors.UnexpectedTracerError):
        tracejit.jit(lambda y: y + leaked[0])(2.0)


def test_intermediate_value_error_mentions_no_argument_dependence():
    @tracejit.jit
    def f(x):
        c = lax.exp(tnp.asarray(1.0)) + x * 0.0
        return bool(c)

    with pytest.raises(errors.TracerBoolConversionError, match="argument x"):
        f(1.0)


def test_errors_only_for_traced_values():
    # the same Python `if` works eagerly, as in JAX
    def g(x):
        return x if x > 0 else -x
    assert float(g(tnp.asarray(-2.0))) == 2.0


def test_static_argument_makes_python_control_flow_legal():
    @functools.partial(tracejit.jit, static_argnames=("n",))
    def f(x, n):
        for _ in range(n):
            x = x * 2.0
        return x
    assert float(f(1.0, n=3)) == 8.0
