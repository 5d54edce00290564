"""Kernels over small trailing dimensions: an elementwise kernel reading only its own element of
buffers of its shape runs as one flat loop (codegen.Emitter.element_nest), column slices of a
stored array are loads in their readers (fusion._picks_from_stored), and rows shorter than
rows.MIN_ROW_ELEMENTS are left to plain fusion. Each against NumPy, with the structure that
made them fast asserted: every assertion on structure fails on the code before."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp


def _vector_ir(compiled) -> bool:
    """Whether the optimised LLVM IR computes on float vectors."""
    return re.search(r"<\d+ x float>", compiled.as_text(dialect="llvm")) is not None


def test_image_normalisation_runs_as_one_vector_loop():
    rng = np.random.default_rng(0)
    im = rng.integers(0, 256, (64, 50, 3)).astype(np.uint8)
    f = lambda x: (x.astype(jnp.float32) / 255.0 - 0.5) / 0.25
    compiled = tracejit.jit(f).lower(im).compile()
    assert _vector_ir(compiled)  # (as (64, 50) loops of 3: scalar code)
    want = (im.astype(np.float32) / np.float32(255) - np.float32(0.5)) / np.float32(0.25)
    np.testing.assert_array_equal(np.asarray(compiled(im)), want)


@pytest.mark.parametrize("threads", [1, 2])
def test_flat_loops_on_the_pool_give_the_serial_bits(threads, rng):
    """Above the pool's threshold the flat loop is cut into chunks of elements: the same bits
    as NumPy's for each thread count (operations of one element each)."""
    tracejit.config.update("tracejit_num_threads", threads)
    a = rng.standard_normal((300, 500, 3)).astype(np.float32)
    b = rng.standard_normal((300, 500, 3)).astype(np.float32)
    got = tracejit.jit(lambda a, b: jnp.maximum(a * 2.0, b) - jnp.float32(1.5))(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.maximum(a * np.float32(2), b) - 1.5)


def test_kernels_with_broadcast_rows_keep_their_nest(rng):
    """A row broadcast down the columns reads other offsets than the element's: the nest stays,
    the values are NumPy's."""
    a = rng.standard_normal((40, 30, 3)).astype(np.float32)
    row = rng.standard_normal((30, 3)).astype(np.float32)
    got = tracejit.jit(lambda a, r: jnp.maximum(a, r) + 1.0)(a, row)
    np.testing.assert_array_equal(np.asarray(got), np.maximum(a, row) + np.float32(1))


def test_cross_product_is_one_kernel_of_column_loads(rng):
    a = rng.standard_normal((5000, 3)).astype(np.float32)
    b = rng.standard_normal((5000, 3)).astype(np.float32)
    compiled = tracejit.jit(jnp.cross).lower(a, b).compile()
    # the six column slices were each stored by a kernel of their own before the product's
    assert "1 fused kernels at top level" in compiled.as_text()
    assert compiled.memory_analysis().temp_size_in_bytes == 0
    np.testing.assert_allclose(np.asarray(compiled(a, b)),
                               np.cross(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


def test_short_rows_are_left_to_plain_fusion(rng):
    """An n-body step's rows of 3 (pairwise differences): no row kernel, and no stored
    broadcast of the positions (36 MB for 1000 bodies before); NumPy's forces in float64."""
    x = rng.standard_normal((300, 3)).astype(np.float32)

    def forces(x):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d * d, -1) + 1e-3
        return jnp.sum(d * (r2 ** -1.5)[..., None], 1)
    compiled = tracejit.jit(forces).lower(x).compile()
    assert "row_map" not in compiled.as_text()
    assert compiled.memory_analysis().temp_size_in_bytes < 300 * 300 * 3 * 4
    x64 = x.astype(np.float64)
    d = x64[:, None, :] - x64[None, :, :]
    want = np.sum(d * ((d * d).sum(-1) + 1e-3)[..., None] ** -1.5, 1)
    np.testing.assert_allclose(np.asarray(compiled(x)), want, rtol=2e-4, atol=2e-4)


def test_loops_of_a_few_trips_unroll_inside_a_loop_body(monkeypatch):
    """An ODE step on a 3-vector: each small kernel's loop of 3 (codegen.UNROLLED_TRIPS) is
    marked for unrolling, so its stores reach the next kernel's loads in registers (Lorenz
    0.34 -> 0.18 ms); the values are the steps' in NumPy (float32, fused multiply-adds)."""
    def f(s):
        x, y, z = s[0], s[1], s[2]
        return jnp.stack([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z])

    def steps(s):
        def body(i, s):
            k1 = f(s)
            k2 = f(s + 0.0005 * k1)
            return s + 0.0005 * (k1 + k2)
        return tracejit.lax.fori_loop(0, 2000, body, s)
    s0 = np.array([1.0, 1.0, 1.0], np.float32)
    from tracejit.backend.llvm import codegen
    unrolled = []
    mark = codegen.Emitter._unrolled
    monkeypatch.setattr(codegen.Emitter, "_unrolled", lambda em: unrolled.append(1) or mark(em))
    compiled = tracejit.jit(steps).lower(s0).compile()
    assert unrolled  # (the kernels' loops of 3; O3 left them loops, the stores in memory)

    def f64(s):
        x, y, z = s
        return np.array([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z])
    s = s0.astype(np.float64)
    for _ in range(2000):
        k1 = f64(s)
        s = s + 0.0005 * (k1 + f64(s + 0.0005 * k1))
    np.testing.assert_allclose(np.asarray(compiled(s0)), s, rtol=1e-5)


def test_short_rows_inner_loops_unroll_into_vector_code(rng):
    """exp(x - max) over rows of 8: the kernel's inner loop of 8 (codegen.UNROLLED_TRIPS_MAX,
    which LLVM's loop vectoriser leaves alone) is unrolled and its 8 exps become vector code
    (before: a scalar exp an element); NumPy's values within float32's exp error."""
    x = rng.standard_normal((16384, 8)).astype(np.float32)  # (UNROLLED_MIN_ELEMENTS and more)
    f = lambda a: jnp.exp(a - jnp.max(a, -1, keepdims=True))
    compiled = tracejit.jit(f).lower(x).compile()
    assert len(re.findall(r"<\d+ x float>", compiled.as_text(dialect="llvm"))) > 100
    want = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(compiled(x)), want, rtol=4e-7, atol=0)
