"""Tiles or one call, chosen per call (backend/llvm/linalg.py `_pick_tiles`): where this
process's BLAS gives a row- or column-tiled product the same bits as one call
(blas.splits_agree), a site may switch between them with the machine's load; split-k tiles
keep a fixed plan. Each mode is forced and compared bit for bit with the others and with
NumPy's float64 product. A BLAS whose cuts change the bits (OpenBLAS's Haswell kernels on a
Zen 5 core) always runs the tiles, with any thread count."""
import numpy as np
import pytest

import tracejit
from tracejit.backend.llvm import blas, gemm, linalg

_OURS = (gemm.host_lanes() or 0) >= 16  # (float32 products of 128^3 and more on our gemm)


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
    (1024, 1024, 1024, "n", False),  # the matmul row: column tiles (always tiled: no site)
    (64, 16384, 64, "k", True),     # partial products of the contracted dimension
    # the MLP step's weight gradient: split-k on BLAS by its traffic, column tiles on our gemm
    # (linalg.product_plan) where the host runs ours
    (256, 4096, 256, "n" if _OURS else "k", True),
    (128, 16384, 128, "k", True),   # (rows or columns would make one tile: split-k, BLAS)
])
def test_every_mode_gives_the_same_bits(monkeypatch, two_threads, m, k, n, axis, lhs_t):
    plan, routine = linalg.product_plan(np.dtype(np.float32), m, n, k)
    assert plan is not None and plan[0] == axis
    assert (routine == "ours") == (_OURS and axis != "k" and min(m, n, k) >= 128)
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


def test_rows_or_columns_by_the_repacking_they_cost(monkeypatch):
    """Row tiles repack the rhs (k*n elements each), column tiles the lhs (m*k), an rhs element
    weighing RHS_REPACK_WEIGHT: a square product, and one up to 1.5x taller than wide, is cut
    into columns, a taller one into rows. The weight only moves products from rows to columns
    that make as many tiles: none onto or off split-k tiles (their sums are not one call's),
    none into or out of tiling."""
    f32 = np.dtype(np.float32)
    assert linalg.tile_plan(f32, 1024, 1024, 1024) == ("n", 512, 2)
    assert linalg.tile_plan(f32, 1536 - 16, 1024, 1024)[0] == "n"
    assert linalg.tile_plan(f32, 1536 + 16, 1024, 1024)[0] == "m"
    assert linalg.tile_plan(f32, 2048, 1024, 1024)[0] == "m"
    sizes = [64, 128, 256, 512, 784, 1024, 1536, 2048, 4096, 16384]
    shapes = [(m, n, k) for m in sizes for n in sizes for k in sizes]
    weighted = {s: linalg.tile_plan(f32, *s) for s in shapes}
    monkeypatch.setattr(linalg, "RHS_REPACK_WEIGHT", 0.999)  # (ties to rows, as before)
    moved = 0
    for s in shapes:
        plain, now = linalg.tile_plan(f32, *s), weighted[s]
        assert (plain is None) == (now is None), s
        if plain is None or plain == now:
            continue
        assert (plain[0], now[0], plain[2]) == ("m", "n", now[2]), (s, plain, now)
        moved += 1
    assert moved


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_splits_agree_only_where_cuts_keep_the_bits(dtype):
    """Where the probe trusts this BLAS (splits_agree), products of the shapes linalg tiles
    give one call's bits when cut into row or column calls; the probe's products are right;
    complex products are never trusted (OpenBLAS's complex kernels sum otherwise for some
    shapes)."""
    dtype = np.dtype(dtype)
    gemm = blas._fortran_gemm(dtype)
    rng = np.random.default_rng(5)

    def draw(*shape):
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                          if dtype.kind == "c" else 0)
        return np.asfortranarray(x.astype(dtype))
    agree = blas.splits_agree(dtype)
    assert not (agree and dtype.kind == "c")
    for m, n, k, axis, at in [(1024, 256, 512, "m", 512), (1024, 256, 512, "n", 128),
                              (512, 128, 784, "m", 256), (256, 4096, 256, "n", 2048)]:
        a, b = draw(m, k), draw(k, n)
        whole, cut = (np.zeros((m, n), dtype, order="F") for _ in range(2))
        gemm(a, b, whole, 0, m, 0, n)
        for lo, hi in ((0, at), (at, m if axis == "m" else n)):
            gemm(a, b, cut, *((lo, hi, 0, n) if axis == "m" else (0, m, lo, hi)))
        want = a.astype(np.complex128) @ b.astype(np.complex128)
        tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(whole, want, rtol=0, atol=tol * np.abs(want).max())
        np.testing.assert_allclose(cut, want, rtol=0, atol=tol * np.abs(want).max())
        if agree:
            assert whole.tobytes() == cut.tobytes(), (m, n, k, axis)


def test_splits_that_disagree_always_run_tiles(monkeypatch):
    """Told that this BLAS's cuts change the bits, a row/column-tiled product runs its tiles
    on every call and thread count (no timed site, no one-call branch): 1 and 2 threads and
    a forced "one" mode give the tiles' bits."""
    monkeypatch.setattr(blas, "splits_agree", lambda dtype: False)
    monkeypatch.setattr(linalg, "GEMM_KERNEL", "blas")  # (our own gemm's splits always agree)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.standard_normal((784, 512)).astype(np.float32)
    assert linalg.tile_plan(np.dtype(np.float32), 128, 512, 784)[0] == "n"
    text = tracejit.jit(lambda a, b: a @ b).lower(x, y).compile().as_text("llvm")
    assert "gemm_site" not in text and "gemm_tiles" in text
    assert text.count("call void @tracejit_scipy_sgemm(") == 1   # (the tile body's only)
    old = tracejit.config.read("tracejit_num_threads")
    try:
        got = {}
        for threads, mode in ((1, None), (2, None), (2, "one"), (1, "tiles")):
            tracejit.config.update("tracejit_num_threads", threads)
            got[threads, mode] = _run(monkeypatch, mode, lambda a, b: a @ b, x, y, 3)
    finally:
        tracejit.config.update("tracejit_num_threads", old)
    for outs in got.values():
        for out in outs:
            np.testing.assert_array_equal(out, got[1, "tiles"][0])
    want = x.astype(np.float64) @ y
    np.testing.assert_allclose(got[1, None][0], want, rtol=0, atol=2e-5 * np.abs(want).max())
