"""Tiles or one call, chosen per call (backend/llvm/linalg.py `_pick_tiles`): a row- or
column-tiled product gives the same bits as one call, so a site may switch between them with
the machine's load; split-k tiles keep a fixed plan. Each mode is forced and compared bit for
bit with the others and with NumPy's float64 product."""
import numpy as np
import pytest

import tracejit
from tracejit.backend.llvm import linalg


@pytest.fixture
def two_threads():
    old = tracejit.config.read("tracejit_num_threads")
    tracejit.config.update("tracejit_num_threads", 2)
    yield
    tracejit.config.update("tracejit_num_threads", old)


def _run(monkeypatch, mode, f, x, y, calls):
    monkeypatch.setattr(linalg, "GEMM_MODE", mode)
    g = tracejit.jit(f)  # (a fresh trace: the mode is read when the product is compiled)
    return [np.asarray(g(x, y)) for _ in range(calls)]


@pytest.mark.parametrize("m,k,n,axis,lhs_t", [
    (128, 784, 512, "n", False),    # the MLP's forward product: two column tiles
    (784, 128, 512, "m", True),     # its weight gradient x.T @ dy: row tiles
    (64, 16384, 64, "k", True),     # partial products of the contracted dimension
])
def test_every_mode_gives_the_same_bits(monkeypatch, two_threads, m, k, n, axis, lhs_t):
    plan = linalg.tile_plan(np.dtype(np.float32), m, n, k)
    assert plan is not None and plan[0] == axis
    rng = np.random.default_rng(0)
    x = rng.standard_normal((k, m) if lhs_t else (m, k)).astype(np.float32)
    y = rng.standard_normal((k, n)).astype(np.float32)

    def f(a, b):
        return (a.T if lhs_t else a) @ b
    # online: the first call is one call, the second tiles, then the faster (or a probe)
    online = _run(monkeypatch, None, f, x, y, linalg.PROBE_EVERY + 2)
    tiles = _run(monkeypatch, "tiles", f, x, y, 1)[0]
    one = _run(monkeypatch, "one", f, x, y, 1)[0]
    np.testing.assert_array_equal(tiles, one)
    for got in online:
        np.testing.assert_array_equal(got, tiles)
    want = (x.T.astype(np.float64) if lhs_t else x.astype(np.float64)) @ y
    np.testing.assert_allclose(tiles, want, rtol=0, atol=2e-5 * np.abs(want).max() + 1e-4)


def test_online_choice_keeps_gradients_bitwise(monkeypatch, two_threads):
    """The MLP's jit(grad): its products switch modes between calls, the gradient's bits
    never change (and match the forced modes')."""
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((784, 512)) * 0.05).astype(np.float32)
    x = rng.standard_normal((128, 784)).astype(np.float32)

    def loss(w, x):
        return tracejit.numpy.sum(tracejit.numpy.tanh(x @ w) ** 2)
    grads = {}
    for mode in (None, "tiles", "one"):
        monkeypatch.setattr(linalg, "GEMM_MODE", mode)
        g = tracejit.jit(tracejit.grad(loss))
        grads[mode] = [np.asarray(g(w, x)) for _ in range(4 if mode is None else 1)]
    for got in grads[None] + grads["one"]:
        np.testing.assert_array_equal(got, grads["tiles"][0])
