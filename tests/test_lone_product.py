"""A program that is one float32 product on our gemm runs the runtime's entry for it
(backend/llvm/lone_product.py) instead of generated code. Oracles: the generated code of the same
program (forced by making `params` refuse), bit for bit, on one thread and two, every operand
layout; NumPy's float64 product within a float32 sum's bound; and which programs take the entry."""
import numpy as np
import pytest
from tolerance import native

import tracejit
from tracejit import lax
from tracejit.backend.llvm import gemm, linalg, lone_product

EPS = np.finfo(np.float32).eps
pytestmark = [pytest.mark.skipif(not native(), reason="the entry is the native backend's"),
              pytest.mark.skipif((gemm.host_lanes() or 0) < 16,
                                 reason="our gemm runs products on AVX-512 hosts only")]


@pytest.fixture
def threads():
    old = tracejit.config.read("tracejit_num_threads")
    yield lambda n: tracejit.config.update("tracejit_num_threads", n)
    tracejit.config.update("tracejit_num_threads", old)


def _params(f, *args):
    return tracejit.jit(f).lower(*args).compile()._executable._params


def _draw(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("m,k,n", [(1024, 1024, 1024),   # column tiles
                                   (2000, 1500, 700),     # row tiles, a short last one
                                   (128, 128, 128),       # one call
                                   (300, 200, 500),       # tiles or one call, timed
                                   (512, 512, 512)])
@pytest.mark.parametrize("lhs_t,rhs_t", [(False, False), (True, False), (False, True),
                                         (True, True)])
def test_the_same_bits_as_generated_code(threads, monkeypatch, m, k, n, lhs_t, rhs_t):
    rng = np.random.default_rng(m + 3 * n + 7 * k + lhs_t + 2 * rhs_t)
    x = _draw(rng, (k, m) if lhs_t else (m, k))
    y = _draw(rng, (n, k) if rhs_t else (k, n))

    def f(a, b):
        return (a.T if lhs_t else a) @ (b.T if rhs_t else b)
    want = (x.T if lhs_t else x).astype(np.float64) @ (y.T if rhs_t else y)
    bound = np.abs(x.T if lhs_t else x).astype(np.float64) @ np.abs(y.T if rhs_t else y)
    runs = []
    for count in (1, 2):
        threads(count)
        lone = tracejit.jit(f)
        runs += [np.asarray(lone(x, y)) for _ in range(3)]  # (a timed one: both modes)
        with monkeypatch.context() as patch:
            patch.setattr(lone_product, "params", lambda jaxpr, donated: None)
            runs.append(np.asarray(tracejit.jit(f)(x, y)))
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])
    assert np.all(np.abs(runs[0] - want) <= k * EPS * bound + 1e-30)


def test_which_programs_take_the_entry(monkeypatch):
    rng = np.random.default_rng(0)
    a, b = _draw(rng, (1024, 1024)), _draw(rng, (1024, 1024))
    p = _params(lambda x, y: x @ y, a, b)
    assert p is not None and list(p[:5]) == [0, 1, 1024, 1024, 1024]
    assert list(_params(lambda x, y: y @ x, a, b)[:2]) == [1, 0]  # (operands by input)
    assert list(_params(lambda x: x @ x, a)[:2]) == [0, 0]
    assert _params(lambda x: x @ b, a) is not None  # a closure's constant operand
    assert _params(lambda x, y: x @ y + 1, a, b) is None  # more than the product
    assert _params(lambda x, y: (x @ y, x), a, b) is None
    assert _params(lambda x, y: x @ y, a.astype(np.float16), b.astype(np.float16)) is None
    batch = a.reshape(4, 256, 1024)
    assert _params(lambda x, y: lax.batch_matmul(x, y), batch, batch.transpose(0, 2, 1)) is None
    assert _params(lambda x, y: x @ y, a[:100, :100], b[:100, :100]) is None  # BLAS's
    assert _params(lambda x, y: x @ y[:, :1], a, b) is None  # a gemv
    assert tracejit.jit(lambda x, y: x @ y, donate_argnums=0).lower(a, b).compile() \
        ._executable._params is None
    monkeypatch.setattr(linalg, "GEMM_MODE", "tiles")  # (tests that force a mode get codegen)
    assert _params(lambda x, y: x @ y, a, b) is None


def test_as_text_and_a_closure_constant():
    """The program prints its jaxpr and the entry's IR; a constant operand is read from the
    constants' slots, which come before the inputs."""
    rng = np.random.default_rng(1)
    a, c = _draw(rng, (256, 128)), _draw(rng, (128, 384))  # (one call)
    compiled = tracejit.jit(lambda x: x @ c).lower(a).compile()
    assert "dot_general" in compiled.as_text()
    assert lone_product.symbol(gemm.host_lanes()) in compiled.as_text("llvm")
    got = np.asarray(compiled(a))
    want = a.astype(np.float64) @ c
    assert np.all(np.abs(got - want) <= 128 * EPS * (np.abs(a).astype(np.float64) @ np.abs(c)))


def test_a_mid_size_product_times_both_modes(threads):
    """As linalg's code: the first calls alternate one call and tiles, each timed (the block's
    site words), then the mode faster lately; a large product is not timed."""
    threads(2)
    rng = np.random.default_rng(2)
    x, y = _draw(rng, (512, 512)), _draw(rng, (512, 512))
    compiled = tracejit.jit(lambda a, b: a @ b).lower(x, y).compile()
    block = compiled._executable._params
    assert block[lone_product.TIMED] == 1 and block[lone_product.TILES] == 2
    outs = [np.asarray(compiled(x, y)) for _ in range(6)]
    one, tiles, calls = block[lone_product.SITE:]
    assert calls == 6 and one > 0 and tiles > 0
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    a = _draw(rng, (1024, 1024))
    assert _params(lambda u, v: u @ v, a, a)[lone_product.TIMED] == 0
