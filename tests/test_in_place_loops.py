"""Programs where a loop's operand shares memory with its destination (donated inputs, loop
carries, in-place row rescaling) give NumPy's / the interpreter's values (written for element
loops marked parallel for LLVM, a marking since taken out: the scans ran 1.2-1.9x slower)."""
import numpy as np
import pytest

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


def _body_of(f, *args):
    """The body jaxpr of the one loop (scan or while) in f's jaxpr, where its carries start
    among the body's invars, and how many there are."""
    (eqn,) = [e for e in tracejit.make_jaxpr(f)(*args).jaxpr.eqns
              if e.primitive.name in ("scan", "while")]
    p = eqn.params
    if eqn.primitive.name == "scan":
        return p["jaxpr"].jaxpr, p["num_consts"], p["num_carry"]
    return p["body_jaxpr"].jaxpr, p["body_nconsts"], len(p["body_jaxpr"].jaxpr.outvars)


def test_which_carries_a_step_updates_in_its_own_buffer():
    """control_flow._updated_in_place: a carry whose new value is an in-place update
    (dynamic_update_slice, a scatter) of the old one, read by nothing else in the body, is
    written in place; one read elsewhere (or also the step's y) keeps its two buffers."""
    from tracejit.backend.llvm.control_flow import _updated_in_place
    x = np.zeros(100, np.float32)
    cases = [  # (loop, the carry positions updated in place)
        (lambda x: lax.fori_loop(0, 9, lambda i, a: a.at[i].set(x[i] + 1), x), [1]),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: a.at[i].add(1.0), x), [1]),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.dynamic_update_slice(
            a, x[:3] * 2, (i,)), x), [1]),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: a.at[i].set(a[i + 1]), x), []),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: a * 2, x), []),
        (lambda x: lax.scan(lambda a, i: (a.at[i].set(1.0), a[i]), x, tnp.arange(9)), []),
        (lambda x: lax.scan(lambda a, i: (a.at[i].set(1.0), i), x, tnp.arange(9)), [0]),
        (lambda x: lax.while_loop(lambda c: c[0] < 9, lambda c: (
            c[0] + 1, c[1].at[c[0]].set(2.0), c[2] + c[1]), (0, x, x)), []),
        # under a cond (control_flow._cond_in_place): each branch returns the carry as it is
        # or updated in place, and reads it nowhere else
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.cond(
            i % 2 == 0, lambda a: a.at[i].set(1.0), lambda a: a, a), x), [1]),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.cond(
            i % 2 == 0, lambda a: a.at[i].set(1.0), lambda a: a.at[i + 1].add(x[i]), a), x),
         [1]),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.cond(
            i % 2 == 0, lambda a: a.at[i].set(1.0), lambda a: a * 2, a), x), []),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.cond(
            i % 2 == 0, lambda a: a.at[i].set(a[0]), lambda a: a, a), x), []),
        (lambda x: lax.fori_loop(0, 9, lambda i, a: lax.cond(
            i % 2 == 0, lambda a: (a + 1).at[i].set(0.0), lambda a: a, a), x), [])]
    for f, want in cases:
        assert _updated_in_place(*_body_of(f, x)) == want


@pytest.mark.parametrize("steps", [9, 10])
def test_loops_updating_a_carry_in_place_as_numpy(steps):
    """fori_loop (as a scan), while_loop and a reversed scan writing into their array carry
    step by step (slices, single elements, scatter-adds with repeated indices, an update under
    a cond), with an odd and
    an even count of steps (the final value's buffer is the destination, or is copied there):
    NumPy's values exactly."""
    rng = np.random.default_rng(steps)
    x = rng.standard_normal(10 * steps).astype(np.float32)
    idx = rng.integers(0, 7, steps).astype(np.int32)

    def slices(x):
        return lax.fori_loop(0, steps, lambda i, a: lax.dynamic_update_slice(
            a, lax.dynamic_slice(x, (i * 10,), (10,)) * 2.0, (i * 10,)), tnp.zeros_like(x))

    def histogram(ix):
        return lax.fori_loop(0, steps, lambda i, h: h.at[ix[i]].add(1.5), tnp.zeros(7))

    def counted(x):
        return lax.while_loop(lambda c: c[0] < steps, lambda c: (
            c[0] + 1, c[1].at[c[0] * 3].set(x[c[0]] - 1.0)), (0, tnp.ones_like(x)))[1]

    def every_third(x):  # updated under a cond, kept in the other branch
        return lax.fori_loop(0, steps, lambda i, a: lax.cond(
            i % 3 == 0, lambda a: a.at[i].set(x[i] * 4), lambda a: a, a), tnp.zeros_like(x))

    def reversed_rows(x):
        def step(a, i):
            return lax.dynamic_update_slice(a, x[None, :4] * i.astype(np.float32), (i, 0)), i
        return lax.scan(step, tnp.zeros((steps, 4), np.float32), tnp.arange(steps),
                        reverse=True)[0]

    want_hist = np.zeros(7, np.float32)
    np.add.at(want_hist, idx, np.float32(1.5))
    want_counted = np.ones_like(x)
    want_counted[np.arange(steps) * 3] = x[:steps] - 1
    np.testing.assert_array_equal(np.asarray(tracejit.jit(slices)(x)), x * 2)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(histogram)(idx)), want_hist)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(counted)(x)), want_counted)
    want_third = np.zeros_like(x)
    want_third[:steps:3] = x[:steps:3] * 4
    np.testing.assert_array_equal(np.asarray(tracejit.jit(every_third)(x)), want_third)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(reversed_rows)(x)),
                                  x[None, :4] * np.arange(steps, dtype=np.float32)[:, None])
