"""Loads at outer loop indices only are made once per outer turn (codegen's `hoisting`): a
gather's rows and a vmapped dynamic_slice's windows vectorise; a scatter into zeros that a
program returns is computed in the output's own memory (aliasing.in_place_temporaries) --
against NumPy."""
import re

import numpy as np

import tracejit
import tracejit.numpy as tnp
from tracejit import lax


def _vectorised(f, *args) -> bool:
    text = tracejit.jit(f).lower(*args).compile().as_text(dialect="llvm")
    return re.search(r"<\d+ x float>", text) is not None


def test_a_gather_of_rows_and_an_op_on_them_vectorise():
    """Before, each element reloaded its row's index and its address was no affine function
    of the inner loop: the kernel ran scalar."""
    rng = np.random.default_rng(0)
    table = rng.standard_normal((5000, 64)).astype(np.float32)
    ids = rng.integers(-5000, 5000, 700).astype(np.int32)  # (negative: from the end)

    def f(t, i):
        return t[i] * 3.0 + 1.0
    assert _vectorised(f, table, ids)
    # (a multiply-add: one rounding of the exact t * 3 + 1, which float64 holds)
    want = (table[ids].astype(np.float64) * 3 + 1).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(table, ids)), want)


def test_vmapped_dynamic_slices_vectorise_and_clamp():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(3000).astype(np.float32)
    starts = rng.integers(-50, 3050, 500).astype(np.int32)

    def f(x, s):
        return tracejit.vmap(lambda x, s: lax.dynamic_slice(x, (s,), (16,)) * 2.0,
                             in_axes=(None, 0))(x, s)
    assert _vectorised(f, x, starts)
    # (as JAX: a negative start counts from the end, then every start is clamped)
    clamped = np.clip(np.where(starts < 0, starts + 3000, starts), 0, 3000 - 16)
    want = np.stack([x[s:s + 16] for s in clamped]) * np.float32(2)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(x, starts)), want)


def test_a_returned_scatter_into_zeros_updates_the_output_in_place():
    """An embedding table's gradient: the zeros are written into the result's memory and the
    adds land there (the workspace holds no copy of the table), as np.add.at adds."""
    rng = np.random.default_rng(2)
    table = rng.standard_normal((20_000, 32)).astype(np.float32)
    ids = rng.integers(0, 20_000, 3000).astype(np.int32)

    def grad(t, i):
        return tracejit.grad(lambda t: tnp.sum(t[i] * t[i]))(t)
    text = tracejit.jit(grad).lower(table, ids).compile().as_text()
    workspace = int(re.search(r"workspace (\d+) bytes", text).group(1))
    assert workspace < table.nbytes
    want = np.zeros_like(table)
    np.add.at(want, ids, 2 * table[ids])
    np.testing.assert_allclose(np.asarray(tracejit.jit(grad)(table, ids)), want, rtol=1e-6,
                               atol=1e-6)


def test_a_donated_input_read_by_row_and_written_in_place():
    """x donated and returned as x * 2 + its first column broadcast: the column is read at
    outer indices only, from the buffer the result is not written into (the program keeps a
    fresh output where a read is not at the element written)."""
    x = np.arange(40 * 70, dtype=np.float32).reshape(40, 70)
    f = tracejit.jit(lambda x: x * 2 + x[:, :1], donate_argnums=0)
    np.testing.assert_array_equal(np.asarray(f(tnp.asarray(x))), x * 2 + x[:, :1])
