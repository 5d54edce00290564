"""Programs where a loop's operand shares memory with its destination (donated inputs, loop
carries, in-place row rescaling) give NumPy's / the interpreter's values (written for element
loops marked parallel for LLVM, a marking since taken out: the scans ran 1.2-1.9x slower)."""
import numpy as np

import tracejit
import tracejit.numpy as tnp
from tracejit import lax


def test_a_donated_input_updated_in_place_as_a_fresh_output():
    """The same bits written into the donated input's memory as into a fresh output, and
    NumPy's values within exp's error."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_007).astype(np.float32)

    def f(x):
        return tnp.exp(x) * 0.5 + x
    fresh = np.asarray(tracejit.jit(f)(x))
    compiled = tracejit.jit(f, donate_argnums=0).lower(x).compile()
    assert compiled._executable.program.aliases == {0: 0}  # (written into the input)
    donated = tracejit.device_put(x)
    in_place = np.asarray(tracejit.jit(f, donate_argnums=0)(donated))
    assert donated.is_deleted()
    assert in_place.tobytes() == fresh.tobytes()
    np.testing.assert_allclose(in_place, np.exp(x) * np.float32(0.5) + x, rtol=1e-6, atol=1e-6)
    # a shifted read of the donated input: not written in place, the input's old values read
    g = tracejit.jit(lambda x: x * 2.0 + tnp.roll(x, 1), donate_argnums=0)
    assert g.lower(x).compile()._executable.program.aliases == {}
    shifted = np.asarray(g(tracejit.device_put(x)))
    np.testing.assert_array_equal(shifted, x * 2 + np.roll(x, 1))


def test_loop_carries_and_row_kernels_as_the_interpreter():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4096).astype(np.float32)
    rows = rng.standard_normal((64, 1000)).astype(np.float32)

    def scan(x):  # carries double-buffered, a roll read each step
        return lax.scan(lambda c, _: (tnp.roll(c, 1) * 0.5 + c * c, c[0]), x, None, length=9)

    def newton(a):
        return lax.while_loop(lambda s: s[1] < 12,
                              lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))[0]
    for f, arg in ((scan, x), (newton, np.abs(x) + 1), (tracejit.nn.softmax, rows),
                   (tracejit.nn.log_softmax, rows)):
        got = tracejit.jit(f)(arg)
        want = tracejit.jit(f, backend="interpret")(arg)
        for g, w in zip(tracejit.tree_util.tree_leaves(got),
                        tracejit.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)
