"""The native sort and top_k (backend/llvm/sorting.py) against the reference interpreter, bit for
bit: the radix sort of one-key rows and the merge sort of the rest, top_k's selection and its
radix fallback, rows either side of each threshold, each dtype's keys with ties, NaNs of both
signs, signed zeros and infinities, serial and on the thread pool."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.backend.llvm import parallel_loops, sorting

RNG = np.random.default_rng(7)
R = sorting.RADIX_MIN_ROW
K = sorting.TOP_K_SELECT_MAX_K
DTYPES = [np.float32, np.float64, np.float16, tnp.bfloat16, np.int8, np.int16, np.int32,
          np.int64, np.uint8, np.uint32, np.uint64, np.bool_]


def _values(shape, dtype) -> np.ndarray:
    """Few distinct values (ties), and for floats NaNs of both signs, -0.0 beside 0.0 and
    infinities; for integers both ends of the range."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = RNG.integers(max(info.min, -40), min(info.max, 40), shape).astype(dtype)
        flat = x.reshape(-1)
        flat[::29], flat[::31] = info.min, info.max
        return x
    x = np.round(RNG.standard_normal(shape) * 4, 1).astype(np.float32)
    flat = x.reshape(-1)
    flat[::11], flat[::13], flat[::17] = np.nan, -0.0, 0.0
    flat[::19], flat[::23], flat[::37] = -np.nan, np.inf, -np.inf
    return x.astype(dtype)


def _same(native, reference) -> None:
    for a, b in zip(native, reference):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _both(f, *args):
    native, reference = tracejit.jit(f)(*args), tracejit.jit(f, backend="interpret")(*args)
    _same(*((r if isinstance(r, tuple) else (r,)) for r in (native, reference)))


@pytest.mark.parametrize("keys", [(np.int32, np.float32), (np.float32, np.int32),
                                  (np.bool_, np.int8, np.float16), (np.uint32, np.int32),
                                  (np.int16, tnp.bfloat16, np.uint8), (np.float64, np.int32)],
                         ids=lambda ks: "-".join(np.dtype(k).name for k in ks))
@pytest.mark.parametrize("n", [R - 1, 1000])
def test_several_keys_as_the_reference_sorts_them(keys, n):
    """Keys of up to 64 bits together are one radix key of theirs side by side (the first
    highest); wider ones and short rows the merge sort: both the reference's stable
    lexicographic order, a payload carried, NaNs, signed zeros and ties included."""
    operands = [_values((3, n), k) for k in keys]
    payload = np.arange(3 * n, dtype=np.int32).reshape(3, n)
    for axis in (1, 0):
        _both(lambda *xs, axis=axis: lax.sort(xs, dimension=axis, num_keys=len(keys)),
              *operands, payload)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [R - 1, R, 1000])
def test_sort_argsort_key_val(dtype, n):
    x = _values((3, n), dtype)
    for axis in (1, 0):
        _both(lambda a, axis=axis: lax.sort(a, dimension=axis), x)
        _both(lambda a, axis=axis: tnp.argsort(a, axis=axis), x)
        _both(lambda a, axis=axis: lax.sort_key_val(a, -a.astype(np.float32), dimension=axis),
              x)


def test_sort_of_fused_values_and_several_keys():
    x = _values((4, 300), np.float32)
    _both(lambda a: tnp.sort(a * 2 - 1, axis=1), x)
    ints = RNG.integers(0, 3, (4, 300)).astype(np.int32)
    _both(lambda a, b: lax.sort((a, b), dimension=1, num_keys=2), ints, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_top_k(dtype):
    x = _values((3, 700), dtype)
    for k in (1, 5, K, K + 1, 700):
        _both(lambda a, k=k: lax.top_k(a, k), x)
    _both(lambda a: lax.top_k(a, 3), x[:, :R - 1])  # a fallback below the radix sort's rows


@pytest.mark.parametrize("k", [1, K, K + 1])
def test_top_k_orders_and_axes(k):
    up = np.tile(np.arange(500, dtype=np.float32), (2, 1))  # every element enters the buffer
    for x in (up, -up, np.zeros_like(up), up % 7):
        _both(lambda a, k=k: lax.top_k(a, k), x)
    _both(lambda a: lax.top_k(a, k, axis=0), _values((300, 4), np.int32))
    _both(lambda a: lax.top_k(a * 3, k), _values((2, 300), np.float32))  # fused: no vectors


@pytest.mark.parametrize("dtype", [np.float32, np.int64, tnp.bfloat16], ids=str)
def test_rows_on_the_thread_pool_as_serial(dtype):
    x = _values((300, 600), dtype)
    assert x.size >= parallel_loops.PARALLEL_MIN_ELEMENTS
    for f in (lambda a: lax.sort(a, dimension=1), lambda a: tnp.argsort(a, axis=0),
              lambda a: lax.top_k(a, 8), lambda a: lax.top_k(a, K + 5)):
        text = tracejit.jit(f).lower(x).compile().as_text("llvm")
        assert "@chunks" in text  # a chunk body, run on the pool
        _both(f, x)


def test_the_algorithm_each_row_gets():
    def loops(f, x):
        text = tracejit.jit(f).lower(x).compile().as_text("llvm")
        return {name for name in ("move", "merge", "lanes") if re.search(rf"\b{name}\.", text)}
    x = _values((2, R), np.float32)
    assert loops(lambda a: lax.sort(a, dimension=1), x) == {"move"}
    assert loops(lambda a: lax.sort(a, dimension=1), x[:, :-1]) == {"merge"}
    assert loops(lambda a: lax.sort((a, a), dimension=1, num_keys=2), x) == {"move"}
    assert loops(lambda a: lax.sort((a, a, a), dimension=1, num_keys=3),
                 x) == {"merge"}  # (96 bits of keys)
    wide = _values((2, 200), np.float32)
    assert loops(lambda a: lax.top_k(a, 4), wide) == {"lanes"}
    assert loops(lambda a: lax.top_k(a, K + 1), wide) == {"move"}
