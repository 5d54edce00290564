"""Bad input across the public API, table-driven (issue 13 item 7): each case runs against real
JAX and tracejit, and both must raise the same error class, and tracejit's message must hold
the key words JAX's does."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp

JAX = (jax, jnp, jax.lax)
TJ = (tracejit, tnp, tracejit.lax)
F = np.float32

# name -> (call(jax, jnp, lax), key words that both messages contain)
CASES = {
    "add_shapes": (lambda j, np_, lax: np_.add(np.ones(3, F), np.ones(4, F)), ["shapes"]),
    "lax_add_dtypes": (lambda j, np_, lax: lax.add(np.ones(3, F), np.ones(3, np.int32)),
                       ["add", "dtypes"]),
    "lax_add_ranks": (lambda j, np_, lax: lax.add(np.ones(3, F), np.ones((1, 3), F)),
                      ["add"]),
    "reshape_size": (lambda j, np_, lax: np_.ones(6, F).reshape((4,)), ["cannot reshape"]),
    "sum_axis": (lambda j, np_, lax: np_.sum(np.ones(3, F), axis=2), ["axis 2", "out of bounds"]),
    "matmul_shapes": (lambda j, np_, lax: np_.matmul(np.ones((2, 3), F), np.ones((4, 2), F)),
                      []),
    "dot_general_contract": (lambda j, np_, lax: lax.dot_general(
        np.ones((2, 3), F), np.ones((4, 2), F), (((1,), (0,)), ((), ()))), ["dot_general"]),
    "concatenate_ranks": (lambda j, np_, lax: np_.concatenate([np.ones(3, F),
                                                                np.ones((1, 3), F)]), []),
    "grad_of_int": (lambda j, np_, lax: j.grad(lambda x: x * 2)(3), ["grad", "int"]),
    "grad_of_vector_output": (lambda j, np_, lax: j.grad(lambda x: x * 2)(np.ones(2, F)),
                              ["scalar"]),
    "vmap_axis_sizes": (lambda j, np_, lax: j.vmap(lambda a, b: a + b)(np.ones(2, F),
                                                                       np.ones(3, F)),
                        ["vmap", "sizes"]),
    "vmap_out_of_range_axis": (lambda j, np_, lax: j.vmap(lambda a: a, in_axes=2)(
        np.ones(3, F)), ["vmap", "axis 2"]),
    "cond_branch_types": (lambda j, np_, lax: lax.cond(True, lambda x: x, lambda x: x * 1.0,
                                                        np.int32(1)), ["branch"]),
    "scan_carry_type": (lambda j, np_, lax: lax.scan(lambda c, x: (c * 1.5, x), np.int32(1),
                                                      np.ones(3, F)), ["carry"]),
    "while_carry_type": (lambda j, np_, lax: lax.while_loop(lambda c: c < 3, lambda c: c + 1.5,
                                                             np.int32(1)),
                         ["body function", "carry"]),
    "traced_shape": (lambda j, np_, lax: j.jit(lambda n: np_.zeros(n))(3), ["concrete"]),
    "traced_bool": (lambda j, np_, lax: j.jit(lambda x: 1 if x > 0 else 2)(1.0),
                    ["concrete"]),
    "static_unhashable": (lambda j, np_, lax: j.jit(lambda x, s: x, static_argnums=1)(
        1.0, np.ones(2)), ["hashable"]),
    "tree_map_structure": (lambda j, np_, lax: j.tree_util.tree_map(
        lambda a, b: a + b, {"a": 1, "b": 2}, {"a": 1, "c": 2}), ["pytree structure"]),
    "float_index": (lambda j, np_, lax: np_.ones(3)[1.5], ["indexer", "integer"]),
    "random_key_shape": (lambda j, np_, lax: j.random.normal(np.ones(3, np.float32)),
                         []),
    "astype_bad_dtype": (lambda j, np_, lax: np_.ones(2).astype("notadtype"), []),
}


def _raise(lib, call):
    with pytest.raises(Exception) as info:
        call(*lib)
    return info.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_class_and_words_match_jax(name):
    call, words = CASES[name]
    theirs = _raise(JAX, call)
    ours = _raise(TJ, call)
    their_classes = [c.__name__ for c in type(theirs).__mro__ if c.__module__ == "builtins"]
    our_classes = [c.__name__ for c in type(ours).__mro__ if c.__module__ == "builtins"]
    assert our_classes[0] == their_classes[0], (type(ours), ours, type(theirs), theirs)
    for word in words:
        assert word.lower() in str(theirs).lower(), (word, theirs)  # (the table is JAX's)
        assert word.lower() in str(ours).lower(), (word, ours, theirs)
