"""Names new in JAX 0.12 (jnp.minmax, jnp.top_k, jax.random.Key), beside outputs recorded from
JAX 0.12.0.1 (the test oracle, JAX 0.10, has none of them): values, dtypes and error words."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp

_X = [[2, 5, 1, 6], [3, -7, -2, 4], [8, -4, 1, -3]]
_F = [[0.5, np.nan, -1.0], [2.0, 0.0, -0.0]]
_CASES = {
    "minmax(x)": lambda x, f: jnp.minmax(x),
    "minmax(x,0)": lambda x, f: jnp.minmax(x, axis=0),
    "minmax(x,1,keepdims)": lambda x, f: jnp.minmax(x, axis=1, keepdims=True),
    "minmax(x,initial)": lambda x, f: jnp.minmax(x, axis=1, initial=(0, 3)),
    "minmax(x,initial scalar)": lambda x, f: jnp.minmax(x, initial=0),
    "minmax(x,where,initial)": lambda x, f: jnp.minmax(x, axis=0, where=x > 0,
                                                       initial=(100, -100)),
    "minmax(f)": lambda x, f: jnp.minmax(f, axis=1),
    "minmax(where no initial)": lambda x, f: jnp.minmax(x, where=x > 0),
    "minmax(empty)": lambda x, f: jnp.minmax(jnp.zeros((0, 3)), axis=0),
    "minmax(empty,1)": lambda x, f: jnp.minmax(jnp.zeros((0, 3)), axis=1),
    "top_k(x,2)": lambda x, f: jnp.top_k(x, 2),
    "top_k(x,2,axis0,smallest)": lambda x, f: jnp.top_k(x, 2, axis=0, mode="smallest"),
    "top_k(f,2,smallest)": lambda x, f: jnp.top_k(f, 2, mode="smallest"),
    "top_k(f,3)": lambda x, f: jnp.top_k(f, 3),
    "top_k(bool)": lambda x, f: jnp.top_k(x > 0, 2, mode="smallest"),
    "top_k(mode bad)": lambda x, f: jnp.top_k(x, 2, mode="mid"),
    "top_k(complex)": lambda x, f: jnp.top_k(x + 1j, 2),
    "top_k(u8 smallest)": lambda x, f: jnp.top_k(jnp.array([3, 0, 255, 7], "uint8"), 2,
                                                 mode="smallest"),
    "jit minmax": lambda x, f: tracejit.jit(jnp.minmax, static_argnames="axis")(x, axis=1),
}
_RECORDED = {  # case -> str of [(dtype, values), ...] or 'Error words': JAX 0.12.0.1's output
    'minmax(x)':
        "[('int32', -7), ('int32', 8)]",
    'minmax(x,0)':
        "[('int32', [2, -7, -2, -3]), ('int32', [8, 5, 1, 6])]",
    'minmax(x,1,keepdims)':
        "[('int32', [[1], [-7], [-4]]), ('int32', [[6], [4], [8]])]",
    'minmax(x,initial)':
        "[('int32', [0, -7, -4]), ('int32', [6, 4, 8])]",
    'minmax(x,initial scalar)':
        "[('int32', -7), ('int32', 8)]",
    'minmax(x,where,initial)':
        "[('int32', [2, 5, 1, 4]), ('int32', [8, 5, 1, 6])]",
    'minmax(f)':
        "[('float32', [nan, -0.0]), ('float32', [nan, 2.0])]",
    'minmax(where no initial)':
        ("ValueError reduction operation minmax does not have an identity, so to use a where "
         "mask one has to specify 'initial'"),
    'minmax(empty)':
        'ValueError zero-size array to reduction operation minmax which has no identity',
    'minmax(empty,1)':
        "[('float32', []), ('float32', [])]",
    'top_k(x,2)':
        "[('int32', [[6, 5], [4, 3], [8, 1]]), ('int32', [[3, 1], [3, 0], [0, 2]])]",
    'top_k(x,2,axis0,smallest)':
        "[('int32', [[2, -7, -2, -3], [3, -4, 1, 4]]), ('int32', [[0, 1, 1, 2], [1, 2, 0, 1]])]",
    'top_k(f,2,smallest)':
        "[('float32', [[-1.0, 0.5], [-0.0, 0.0]]), ('int32', [[2, 0], [2, 1]])]",
    'top_k(f,3)':
        "[('float32', [[nan, 0.5, -1.0], [2.0, 0.0, -0.0]]), ('int32', [[1, 0, 2], [0, 1, 2]])]",
    'top_k(bool)':
        ("[('bool', [[True, True], [False, False], [False, False]]), "
         "('int32', [[0, 1], [1, 2], [1, 3]])]"),
    'top_k(mode bad)':
        "ValueError mode must be 'largest' or 'smallest', got 'mid'",
    'top_k(complex)':
        'ValueError top_k is not compatible with complex inputs.',
    'top_k(u8 smallest)':
        "[('uint8', [0, 3]), ('int32', [1, 0])]",
    'jit minmax':
        "[('int32', [1, -7, -4]), ('int32', [6, 4, 8])]",
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_as_recorded_from_jax_0_12(case):
    try:
        out = _CASES[case](jnp.array(_X), jnp.array(_F))
        got = str([(str(a.dtype), np.asarray(a).tolist()) for a in out])
    except ValueError as e:
        got = f"ValueError {e}"
    assert got == _RECORDED[case]


def test_random_key_annotation():
    """JAX 0.12's jax.random.Key: typing.NewType("Key", jax.Array), for annotations."""
    key = tracejit.random.Key
    assert key.__name__ == "Key" and key.__supertype__ is tracejit.Array
    assert key(tracejit.random.key(0)).dtype == tracejit.random.key(0).dtype
