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
         "float16", "bfloat16", "float32", "float64"]


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
