"""lax.reduce (JAX's generic reduction) against real JAX: the monoids it recognises, a generic
computation over a pytree of operands, under jit, grad and vmap, and its errors."""
import numpy as np
import pytest

import tracejit
from tracejit import lax as tl

jax = pytest.importorskip("jax")

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


@pytest.mark.parametrize("name,init", [("add", 0.), ("mul", 1.), ("max", -np.inf),
                                       ("min", np.inf), ("add", 2.)])
@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 1, 2), ()])
def test_monoids_and_non_identities_match_jax(name, init, dims):
    ours = tl.reduce(X, np.float32(init), getattr(tl, name), dims)
    theirs = jax.lax.reduce(X, np.float32(init), getattr(jax.lax, name), dims)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype


def test_bitwise_monoids_and_weak_types_match_jax():
    ints = np.array([[6, 3, 7], [5, 1, 4]], np.int32)
    for name, init in [("bitwise_and", -1), ("bitwise_or", 0), ("bitwise_xor", 0)]:
        ours = tl.reduce(ints, np.int32(init), getattr(tl, name), (1,))
        np.testing.assert_array_equal(
            ours, jax.lax.reduce(ints, np.int32(init), getattr(jax.lax, name), (1,)))
    assert tl.reduce(2., 0., tl.add, ()).weak_type == jax.lax.reduce(2., 0., jax.lax.add,
                                                                    ()).weak_type


def test_generic_computation_over_a_pytree_natively_and_under_vmap():
    def ours_fn(a, b):
        return tl.add(a[0], b[0]), tl.max(a[1], b[1])

    def jax_fn(a, b):
        return jax.lax.add(a[0], b[0]), jax.lax.max(a[1], b[1])

    inits = (np.float32(1.), np.float32(-100.))
    theirs = jax.lax.reduce((X, X * 2), inits, jax_fn, (1,))
    for got in (tl.reduce((X, X * 2), inits, ours_fn, (1,)),
                tracejit.jit(lambda x: tl.reduce((x, x * 2), inits, ours_fn, (1,)))(X)):
        for u, v in zip(got, theirs):
            np.testing.assert_allclose(u, v, rtol=1e-6)
    mapped = tracejit.vmap(lambda r: tl.reduce(r, np.float32(0), lambda p, q: p * 0.5 + q,
                                               (1,)))(X)
    want = jax.vmap(lambda r: jax.lax.reduce(r, np.float32(0), lambda p, q: p * 0.5 + q,
                                             (1,)))(X)
    np.testing.assert_allclose(mapped, want, rtol=1e-6)


def test_gradient_of_a_generic_reduction_matches_jax():
    x = np.array([-7., -6., -5.], np.float32)
    ours = tracejit.grad(lambda x: tl.reduce(x, np.float32(1.), lambda p, q: p * q + 0.,
                                             (0,)))(x)
    theirs = jax.grad(lambda x: jax.lax.reduce(x, np.float32(1.), lambda p, q: p * q + 0.,
                                               (0,)))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_mismatched_operands_and_inits_raise_jaxs_error():
    for ours, theirs in [(tl, jax.lax)]:
        with pytest.raises(ValueError, match="same tree structure") as got:
            ours.reduce((X, X), (0.,), ours.add, (0,))
        with pytest.raises(ValueError, match="same tree structure") as want:
            theirs.reduce((X, X), (0.,), theirs.add, (0,))
        assert str(got.value).split(":")[0] == str(want.value).split(":")[0]
