"""Flat indices taken apart inside kernels (codegen.Emitter.divmod_index / unravel): a reshape
that splits or merges dimensions, or a sum over several axes of fused values, divides the loop
index by constants. Those quotients are multiplies and shifts (codegen._magic) in 32-bit
arithmetic below 2**15 and 64-bit below 2**31: every quotient checked against Python's, and
programs that take them against NumPy and against the same values summed from memory."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.backend.llvm import codegen


@pytest.mark.parametrize("bits", [1, 2, 5, 11, 15, 16, 20, 31])
def test_magic_quotients_are_exact(bits):
    """(i * m) >> s == i // c for every i < 2**bits (exhaustively to 2**16, else the ends of
    each quotient's run and random ones), and the product stays inside the arithmetic used."""
    rng = np.random.default_rng(bits)
    n = 2 ** bits
    divisors = [c for c in [3, 5, 6, 7, 10, 11, 100, 127, 1000, 65535, n - 1, n // 3]
                if 2 < c < n and c & (c - 1)]
    for c in divisors:
        m, s = codegen._magic(c, bits)
        assert (n - 1) * m < (2 ** 31 if bits <= 15 else 2 ** 63)
        if bits <= 16:
            i = np.arange(n, dtype=np.uint64)
        else:
            q = rng.integers(0, (n - 1) // c + 1, 2000, dtype=np.uint64)
            i = np.concatenate([q * np.uint64(c), q * np.uint64(c) - np.uint64(1),
                                rng.integers(0, n, 2000, dtype=np.uint64),
                                np.array([n - 1], np.uint64)])
            i = i[(i > 0) & (i < n)]
        np.testing.assert_array_equal((i * np.uint64(m)) >> np.uint64(s), i // np.uint64(c))


def _outer_sq_sum(a, b):
    # (B, n) x (B, c) -> a transposed outer product (B, n * c), squared and summed per row:
    # the per-example gradient norms of a dense layer; the sum's flat index is split by c
    return tnp.sum(((b[:, :, None] * a[:, None, :]).transpose(0, 2, 1)
                    .reshape(a.shape[0], -1)) ** 2, axis=1)


@pytest.mark.parametrize("n, c", [(128, 10), (300, 70), (300, 170), (7, 3)])
def test_split_reshape_in_a_fused_sum(n, c):
    """Row length n * c of 1,280 and 21,000 (32-bit quotients) and 51,000 (64-bit): the fused
    sum equals the same values summed from memory bit for bit, and NumPy's within rounding."""
    rng = np.random.default_rng(n + c)
    a = rng.standard_normal((3, n)).astype(np.float32)
    b = rng.standard_normal((3, c)).astype(np.float32)
    fused = np.asarray(tracejit.jit(_outer_sq_sum)(a, b))
    stored = tracejit.jit(lambda a, b: ((b[:, :, None] * a[:, None, :]).transpose(0, 2, 1)
                                        .reshape(a.shape[0], -1)) ** 2)(a, b)
    np.testing.assert_array_equal(fused, np.asarray(tracejit.jit(
        lambda y: tnp.sum(y, axis=1))(stored)))
    want = (np.einsum("bj,bi->bij", b.astype(np.float64), a.astype(np.float64)) ** 2).sum((1, 2))
    np.testing.assert_allclose(fused, want, rtol=1e-5)


def test_the_quotient_is_no_64_bit_division():
    """The fused sum of a (128, 10) split has no `udiv i64` left in its optimised IR (LLVM's
    expansion of one has no vector form on x86: a scalar multiply per lane)."""
    a = np.ones((4, 128), np.float32)
    b = np.ones((4, 10), np.float32)
    text = tracejit.jit(_outer_sq_sum).lower(a, b).compile().as_text(dialect="llvm")
    assert not re.search(r"\b[us](div|rem) i64 [^,]+, 10\b", text)
    assert re.search(r"mul nuw <\d+ x i32>", text)  # the quotient's multiply, vectorised


@pytest.mark.parametrize("shape, axes", [((4, 3, 5), (1, 2)), ((2, 6, 7, 9), (1, 2, 3)),
                                         ((3, 300, 170), (1, 2)), ((5, 6, 10), (0, 2))])
def test_sum_over_several_axes_of_fused_values(shape, axes):
    """A sum over several axes of computed values unravels its flat index (Emitter.unravel):
    the same bits as the values summed from memory, NumPy's within rounding."""
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    fused = np.asarray(tracejit.jit(lambda x: tnp.sum(tnp.sin(x) * x, axis=axes))(x))
    stored = tracejit.jit(lambda x: tnp.sin(x) * x)(x)
    np.testing.assert_array_equal(fused, np.asarray(tracejit.jit(
        lambda y: tnp.sum(y, axis=axes))(stored)))
    want = (np.sin(x.astype(np.float64)) * x).sum(axes)
    np.testing.assert_allclose(fused, want, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("src, dst", [((6, 10), (4, 15)), ((35, 9), (7, 45)),
                                      ((330, 210), (210, 330)), ((3, 5, 7), (7, 15))])
def test_general_reshape_of_fused_values(src, dst):
    """A reshape that neither splits nor merges one dimension reads through the flat index
    unravelled over the source shape: NumPy's values exactly (adds and a transpose)."""
    x = np.arange(np.prod(src), dtype=np.float32).reshape(src)
    got = tracejit.jit(lambda x: ((x + 1).T.reshape(dst) * 2).T)(x)
    np.testing.assert_array_equal(np.asarray(got), ((x + 1).T.reshape(dst) * 2).T)


@pytest.mark.parametrize("src, dst", [((2, 3, 4, 5), (2, 12, 5)), ((6, 4, 5), (2, 3, 20)),
                                      ((4, 6, 5), (24, 5)), ((2, 1, 6), (2, 2, 3)),
                                      ((3, 10, 7), (3, 7, 10)), ((5, 2, 9), (10, 9)),
                                      ((4, 3, 1, 5), (2, 6, 5))])
def test_reshape_keeping_shared_leading_and_trailing_dimensions(src, dst):
    """Dimensions a reshape keeps at either end keep their indices (index_maps._reshape_at);
    those between are unravelled: NumPy's values exactly, both ways."""
    x = np.arange(np.prod(src), dtype=np.float32).reshape(src)
    got = tracejit.jit(lambda x: (x * 3 - 1).reshape(dst) + 0.5)(x)
    np.testing.assert_array_equal(np.asarray(got), (x * 3 - 1).reshape(dst) + 0.5)
    y = np.arange(np.prod(dst), dtype=np.float32).reshape(dst)
    back = tracejit.jit(lambda y: tnp.sin(y).reshape(src))(y)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(tracejit.jit(tnp.sin)(y))
                                  .reshape(src))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_repeat_and_tile_of_fused_values(axis):
    """jnp.repeat (a broadcast reshaped: the repeated axis merged with the new one) and
    jnp.tile: NumPy's values exactly."""
    x = np.random.default_rng(axis).standard_normal((7, 5, 3)).astype(np.float32)
    got = tracejit.jit(lambda x: tnp.repeat(x + 1, 3, axis=axis))(x)
    np.testing.assert_array_equal(np.asarray(got), np.repeat(x + 1, 3, axis=axis))
    reps = [1, 1, 1]
    reps[axis] = 2
    got = tracejit.jit(lambda x: tnp.tile(x * 2, reps))(x)
    np.testing.assert_array_equal(np.asarray(got), np.tile(x * 2, reps))
