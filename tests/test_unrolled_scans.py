"""Scans asked to unroll whole run as their steps' equations (compiler/unrolled_scans.py): the
same values as the scan run as a loop, NumPy's within rounding."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax


def _scan(unroll, reverse):
    def f(c0, xs):
        def step(c, x):
            a, b = c
            return (a * x + b, tnp.sin(b) - x), a * b
        return lax.scan(step, c0, xs, unroll=unroll, reverse=reverse)
    return f


@pytest.mark.parametrize("reverse", [False, True])
def test_unrolled_steps_give_the_loops_bits(reverse):
    """Two carries, xs and ys, forward and reversed: unroll=True and unroll >= length leave no
    scan and give the bits of the scan run as a loop (unroll=1); a longer scan stays a scan."""
    rng = np.random.default_rng(0)
    c0 = (rng.standard_normal(1000).astype(np.float32),
          rng.standard_normal(1000).astype(np.float32))
    xs = rng.standard_normal((6, 1000)).astype(np.float32)
    loop = tracejit.jit(_scan(1, reverse))
    assert "scan[" in loop.lower(c0, xs).compile().as_text()
    want = loop(c0, xs)
    for unroll in (True, 6, 16):
        f = tracejit.jit(_scan(unroll, reverse))
        assert "scan[" not in f.lower(c0, xs).compile().as_text()
        for g, w in zip(tracejit.tree_util.tree_leaves(f(c0, xs)),
                        tracejit.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert "scan[" in tracejit.jit(_scan(5, reverse)).lower(c0, xs).compile().as_text()


def test_polyval_is_one_kernel_of_multiply_adds():
    """jnp.polyval's scan (unroll=16 by default) of 9 coefficients: no scan left, NumPy's
    values within float32's rounding of Horner's rule."""
    rng = np.random.default_rng(1)
    p = rng.standard_normal(9).astype(np.float32)
    x = rng.standard_normal(100_000).astype(np.float32)
    f = tracejit.jit(tnp.polyval)
    assert "scan[" not in f.lower(p, x).compile().as_text()
    want = np.polyval(p.astype(np.float64), x.astype(np.float64))
    bound = 20 * np.finfo(np.float32).eps * np.polyval(np.abs(p), np.abs(x))
    assert np.all(np.abs(np.asarray(f(p, x)) - want) <= bound)


def test_a_scan_with_effects_stays_a_scan(capsys):
    """A body that prints is not unrolled: its effects keep their order in the loop."""
    def f(xs):
        def step(c, x):
            tracejit.debug.print("x={x}", x=x)
            return c + x, None
        return lax.scan(step, 0.0, xs, unroll=True)[0]
    xs = np.arange(3, dtype=np.float32)
    g = tracejit.jit(f)
    assert "scan[" in g.lower(xs).compile().as_text()
    assert float(g(xs)) == 3.0
    tracejit.effects_barrier()
    assert capsys.readouterr().out.split() == ["x=0.0", "x=1.0", "x=2.0"]
