"""Bad input gets JAX's exception class and a message naming the problem — never a traceback
from deep inside the package without context."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.mark.parametrize("bad", ["abc", object(), {"a": 1}])
def test_non_numeric_values(bad):
    for mod in (tnp, jnp):
        with pytest.raises(TypeError):
            mod.asarray(bad)
    with pytest.raises(TypeError):
        tnp.sin(bad)
    with pytest.raises(TypeError):
        jnp.sin(bad)


def test_ragged_lists():
    with pytest.raises(ValueError, match="inhomogeneous"):
        tnp.asarray([[1, 2], [3]])
    with pytest.raises(ValueError):
        jnp.asarray([[1, 2], [3]])


def test_mismatched_shapes():
    a, b = np.ones(3, np.float32), np.ones(4, np.float32)
    with pytest.raises(TypeError, match="incompatible shapes"):
        tnp.add(a, b)
    with pytest.raises(TypeError):
        jnp.add(a, b)
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.add(a, b)
    with pytest.raises(TypeError):
        jax.lax.add(a, b)


def test_lax_requires_equal_dtypes():
    with pytest.raises(TypeError, match="same dtypes"):
        lax.add(np.ones(2, np.float32), np.ones(2, np.int32))
    with pytest.raises(TypeError):
        jax.lax.add(np.ones(2, np.float32), np.ones(2, np.int32))


@pytest.mark.parametrize("axis", [2, -3, 5])
def test_out_of_range_axes(axis):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="out of bounds"):
        tnp.sum(x, axis=axis)
    with pytest.raises(ValueError):
        jnp.sum(x, axis=axis)


def test_bad_dtype_argument():
    with pytest.raises(TypeError):
        tnp.zeros(3, dtype="not_a_dtype")
    with pytest.raises(TypeError):
        jnp.zeros(3, dtype="not_a_dtype")


def test_bad_shapes():
    for mod in (tnp, jnp):
        with pytest.raises(TypeError):
            mod.zeros((2, "a"))
        with pytest.raises(TypeError, match="nonnegative"):
            mod.zeros((-1, 2))
    for mod in (tnp, jnp):  # JAX: TypeError for its own arrays (NumPy inputs differ)
        with pytest.raises(TypeError, match="reshape"):
            mod.reshape(mod.ones(6), (4, 2))


def test_traced_shape_is_a_concretization_error():
    f = tracejit.jit(lambda n: tnp.zeros(n))
    with pytest.raises(tracejit.errors.ConcretizationTypeError, match="argument n"):
        f(3)
    with pytest.raises(TypeError):  # JAX: also a TypeError subclass
        jax.jit(lambda n: jnp.zeros(n))(3)


def test_jit_of_non_callable():
    with pytest.raises(TypeError, match="callable"):
        tracejit.jit(3)
    with pytest.raises(TypeError):
        jax.jit(3)


def test_jit_unknown_static_argname():
    def f(x, n):
        return x
    with pytest.raises(ValueError, match="not a parameter"):
        tracejit.jit(f, static_argnames=("m",))


def test_immutable_arrays():
    x = tnp.asarray(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="at\\[idx\\].set"):
        x[0] = 2.0
    with pytest.raises(TypeError):
        jnp.ones(3).__setitem__(0, 2.0)


def test_unhashable_array_as_static():
    f = tracejit.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable"):
        f(1.0, tnp.asarray(np.ones(2)))
