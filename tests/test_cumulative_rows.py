"""Cumulative ops along an axis that is not the last run a row at a time, each row combined
elementwise with the one before it (backend/llvm/reductions._cumulative): the same bits as the
walk along the last axis, which the rest of the suite checks against NumPy and JAX."""
import numpy as np
import pytest

import tracejit
from tracejit import lax

# (lax's cummax and cummin take no complex numbers, cumlogsumexp no integers, as JAX's)
CASES = [(op, dtype) for op in ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
         for dtype in [np.float32, np.complex64, np.int32]
         if not (dtype == np.complex64 and op in ("cummax", "cummin"))
         and not (dtype == np.int32 and op == "cumlogsumexp")]


@pytest.mark.parametrize("op, dtype", CASES)
@pytest.mark.parametrize("reverse", [False, True])
def test_rows_give_the_bits_of_the_walk_along_the_last_axis(op, dtype, reverse):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (4, 37, 9))
    if dtype == np.complex64:
        x = x + 1j * rng.uniform(-1, 1, x.shape)
    x = (x * 3 if dtype == np.int32 else x).astype(dtype)
    fn = getattr(lax, op)
    rows = tracejit.jit(lambda x: fn(x, axis=1, reverse=reverse))
    walk = tracejit.jit(lambda x: fn(x, axis=2, reverse=reverse))
    got = np.asarray(rows(x))
    want = np.moveaxis(np.asarray(walk(np.moveaxis(x, 1, 2))), 2, 1)
    np.testing.assert_array_equal(got, want)
    if op == "cumsum":
        ref = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
        np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_a_cumsum_over_rows_vectorises():
    """(The walk down each column was scalar, and read the rows' lines column by column.)"""
    x = np.ones((256, 256), np.float32)
    text = tracejit.jit(lambda x: lax.cumsum(x, axis=0)).lower(x).compile().as_text(
        dialect="llvm")
    assert "fadd <" in text
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda x: lax.cumsum(x, axis=0))(x)),
                                  np.cumsum(x, 0))
