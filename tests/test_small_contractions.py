"""Matrix-vector products over a few contracted elements (passes._small_contraction): a chain
of elementwise multiply-adds fused into one kernel, with XLA's bits -- against JAX itself."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.compiler import passes

CASES = [(spec, k) for spec in ("nij,nj->ni", "nj,nji->ni", "nji,nj->ni")
         for k in range(2, passes.SMALL_CONTRACTION + 1)]


def _operands(spec: str, k: int, dtype, rng):
    m = 5
    shapes = {"nij,nj->ni": ((300, m, k), (300, k)), "nj,nji->ni": ((300, k), (300, k, m)),
              "nji,nj->ni": ((300, k, m), (300, k))}[spec]
    return [(rng.standard_normal(s) * 10).astype(dtype) for s in shapes]


@pytest.mark.parametrize("spec,k", CASES)
def test_bits_of_jax(spec, k, jax, rng):
    a, b = _operands(spec, k, np.float32, rng)
    f = lambda a, b: jnp.einsum(spec, a, b)
    compiled = tracejit.jit(f).lower(a, b).compile()
    assert "dot_general" not in compiled.as_text()  # (a loop nest of its own before)
    want = np.asarray(jax.jit(lambda a, b: jax.numpy.einsum(spec, a, b))(a, b))
    np.testing.assert_array_equal(np.asarray(compiled(a, b)), want)


def test_float64_and_integers(jax, rng, x64):
    a, b = _operands("nij,nj->ni", 3, np.float64, rng)
    got = tracejit.jit(lambda a, b: jnp.einsum("nij,nj->ni", a, b))(a, b)
    want = jax.jit(lambda a, b: jax.numpy.einsum("nij,nj->ni", a, b))(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    i, j = (rng.integers(-2**31, 2**31, s, dtype=np.int64).astype(np.int32)
            for s in ((40, 4, 6), (40, 6)))
    got = tracejit.jit(lambda a, b: jnp.einsum("nij,nj->ni", a, b))(i, j)
    np.testing.assert_array_equal(np.asarray(got), np.einsum("nij,nj->ni", i, j))  # (wrapping)


def test_negative_zero_products_keep_their_sign(jax):
    a = np.array([[[-0.0, 0.0], [1.0, 2.0]]], np.float32)
    b = np.array([[1.0, -0.0]], np.float32)
    got = np.asarray(tracejit.jit(lambda a, b: jnp.einsum("nij,nj->ni", a, b))(a, b))
    want = np.asarray(jax.jit(lambda a, b: jax.numpy.einsum("nij,nj->ni", a, b))(a, b))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


def test_longer_or_two_sided_products_stay_products(rng):
    """Eight contracted elements, or free dimensions on both sides (a batch of 4x4 matmuls),
    keep dot_general: XLA sums those in other orders."""
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((50, 5, 8), (50, 8)))
    text = tracejit.jit(lambda a, b: jnp.einsum("nij,nj->ni", a, b)).lower(a, b).compile()
    assert "dot_general" in text.as_text()
    c = rng.standard_normal((50, 4, 4)).astype(np.float32)
    text = tracejit.jit(lambda a, b: a @ b).lower(c, c).compile().as_text()
    assert "dot_general" in text
