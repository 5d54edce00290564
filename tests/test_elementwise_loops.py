"""Element loops (compiler.element_loops -> codegen's row_map with the loop inside each row):
while/fori/scan loops whose array carries are updated elementwise under a uniform condition
(scans with per-step xs and ys included, read and written as column blocks; sizes without a
row length in ragged rows) give the same bits as the lowering that makes one pass over the
arrays per iteration, and agree with the reference interpreter; loops the pass must leave
alone (a condition reading an array carry, a reduction in the body, xs read by a gather) are
left alone and still compute the right thing; vmap and differentiation of such loops stay
correct."""
import re
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backend.llvm import codegen, parallel_loops
from tracejit.compiler import element_loops as el
from tracejit.compiler import passes
from tracejit.compiler.rows import row_map_p
from tracejit.core.interpret import eval_jaxpr
from tracejit.lax.control_flow import scan_p, while_p
from tracejit.runtime.jit import make_jaxpr

F32 = np.float32
RNG = np.random.default_rng(0)


def _newton(y):
    def body(s):
        x, i = s
        return 0.5 * (x + y / x), i + 1
    return lax.while_loop(lambda s: s[1] < 20, body, (y, 0))[0]


def _newton_with_count(y):  # the uniform carry's result is used too
    return lax.while_loop(lambda s: s[1] < 7, lambda s: (0.5 * (s[0] + y / s[0]), s[1] + 1),
                          (y, 0))


def _fixed_point(x0, c):
    return lax.scan(lambda x, _: (jnp.cos(c * x), None), x0, xs=None, length=40)[0]


def _fori_mixed(x, k):
    """Float and int array carries, the counter read elementwise, broadcasts of scalars."""
    def body(i, s):
        a, n = s
        step = jnp.sin(a) * (i.astype(F32) + k) * F32(0.05)
        a = a * F32(0.5) + step + jnp.full(a.shape, 0.25, F32)
        n = n * 3 + jnp.where(a > 0, i, -i)
        return a, n
    return lax.fori_loop(0, 9, body, (x, jnp.zeros(x.shape, jnp.int32)))


def _while_float_counter(x):
    """A float uniform carry drives the condition; a closed-over array is read each step."""
    w = x * F32(0.25)
    def body(s):
        a, t = s
        return jnp.tanh(a + w * t), t + F32(0.5)
    return lax.while_loop(lambda s: s[1] < F32(3.0), body, (x, F32(0.0)))


def _custom_jvp_calls(x):  # relu and logaddexp are custom_jvp functions (a jit inside one)
    return lax.fori_loop(0, 5, lambda i, a: tracejit.nn.relu(a - F32(0.1))
                         + jnp.logaddexp(a, F32(0.5)) * F32(0.1), x)


def _cond_reads_array(x):  # the trip count depends on the elements: not uniform
    return lax.while_loop(lambda a: jnp.max(a) > F32(1.0), lambda a: a * F32(0.5), x)


def _reduction_in_body(x):
    return lax.fori_loop(0, 5, lambda i, a: a - jnp.mean(a) * F32(0.1), x)


def _xs_gathered(x):  # step t reads xs[t] at permuted positions: not elementwise
    perm = (jnp.arange(x.shape[0]) * 7) % x.shape[0]
    xs = jnp.stack([x * F32(k) for k in range(4)])
    return lax.scan(lambda a, r: (a * F32(0.5) + r[perm], None), x, xs)[0]


def _ys_from_a_slice(x):  # a y reads one element of the carry: not elementwise
    return lax.scan(lambda a, f: (a + f, a[0] * F32(2)), x, jnp.stack([x, x, x]))

def _old_lowering(monkeypatch):
    """Run the pipeline without the pass (a fresh function object: a fresh trace)."""
    monkeypatch.setattr(passes, "element_loops", lambda jaxpr: jaxpr)


def _optimized(f, *args):
    closed = make_jaxpr(f)(*args)
    return passes.optimize(closed.jaxpr, list(closed.consts))[0]


def _row_loops(jaxpr) -> list:
    """The loops the pass put inside row_maps."""
    return [e for eqn in jaxpr.eqns if eqn.primitive is row_map_p
            for e in eqn.params["body"].jaxpr.eqns if e.primitive in (while_p, scan_p)]


def _run_three_ways(monkeypatch, f, *args):
    """(new lowering, old lowering, interpreter) results as lists of NumPy arrays."""
    new = tracejit.jit(lambda *a: f(*a))(*args)
    ref = tracejit.jit(lambda *a: f(*a), backend="interpret")(*args)
    with monkeypatch.context() as m:
        _old_lowering(m)
        old = tracejit.jit(lambda *a: f(*a))(*args)
    flat = [tracejit.tree_util.tree_leaves(r) for r in (new, old, ref)]
    return [[np.asarray(v) for v in leaves] for leaves in flat]


def _positive(n):
    return RNG.uniform(0.5, 100.0, n).astype(F32)


CASES = [
    ("newton", _newton, lambda n: (_positive(n),)),
    ("newton_with_count", _newton_with_count, lambda n: (_positive(n),)),
    ("fixed_point", _fixed_point, lambda n: (RNG.uniform(-4, 4, n).astype(F32), F32(0.9))),
    ("fori_mixed", _fori_mixed, lambda n: (RNG.standard_normal(n).astype(F32), F32(0.5))),
    ("custom_jvp_calls", _custom_jvp_calls, lambda n: (RNG.standard_normal(n).astype(F32),)),
    ("while_float_counter", _while_float_counter,
     lambda n: (RNG.standard_normal((n // 8, 8)).astype(F32),)),
]


@pytest.mark.parametrize("n", [1000, 1001, 2001, 4096, 4099])  # 1001, 2001, 4099: a remainder
@pytest.mark.parametrize("name,f,make", CASES, ids=[c[0] for c in CASES])
def test_same_bits_as_one_pass_per_iteration_and_close_to_the_interpreter(monkeypatch, name, f,
                                                                           make, n):
    """(fori_mixed's sum `a * 0.5 + step` reads two products, one of them before sin's branch
    in scalar code: at 1001 and 2001 its remainder once contracted the other one.)"""
    args = make(n)
    assert len(_row_loops(_optimized(f, *args))) == 1  # the fast path is taken
    new, old, ref = _run_three_ways(monkeypatch, f, *args)
    for a, b, r in zip(new, old, ref):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("n", [8190, 8192])  # a while's work: 16 x n, the pool from 2^17
def test_sizes_around_the_thread_pool_threshold(monkeypatch, n):
    (y,) = (_positive(n),)
    jaxpr = _optimized(_newton, y)
    (row,) = [e for e in jaxpr.eqns if e.primitive is row_map_p]
    assert parallel_loops.worth(row) == (n * el.WHILE_TRIPS_GUESS >=
                                         parallel_loops.PARALLEL_MIN_ELEMENTS)
    new, old, ref = _run_three_ways(monkeypatch, _newton, y)
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_allclose(new[0], np.sqrt(y), rtol=1e-6)
    f = tracejit.jit(_newton)
    f(y)
    tracejit.config.update("tracejit_num_threads", 1)  # (conftest restores it)
    np.testing.assert_array_equal(np.asarray(f(y)), new[0])


# 9 trips over rows of 502 (29 of them) and 976 (15, the last short): 131,022 and 131,760
# elements of work, either side of 2^17
@pytest.mark.parametrize("n,pooled", [(14558, False), (14561, True)])
def test_fori_mixed_around_the_thread_pool_threshold(monkeypatch, n, pooled):
    """Rows of an odd length on one thread and on the pool end in scalar remainders too: the
    same bits as the old lowering."""
    args = (RNG.standard_normal(n).astype(F32), F32(0.5))
    jaxpr = _optimized(_fori_mixed, *args)
    (row,) = [e for e in jaxpr.eqns if e.primitive is row_map_p]
    assert parallel_loops.worth(row) == pooled
    assert pooled == (parallel_loops.work(row) >= parallel_loops.PARALLEL_MIN_ELEMENTS)
    new, old, ref = _run_three_ways(monkeypatch, _fori_mixed, *args)
    for a, b, r in zip(new, old, ref):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, r, rtol=2e-5, atol=2e-5)


def test_a_long_scan_over_a_short_vector_runs_on_the_pool():
    x0 = np.full(1000, 0.5, F32)
    closed = make_jaxpr(lambda x, c: lax.scan(lambda x, _: (jnp.cos(c * x), None), x, None,
                                              length=10_000)[0])(x0, F32(0.9))
    jaxpr = passes.optimize(closed.jaxpr, list(closed.consts))[0]
    (row,) = [e for e in jaxpr.eqns if e.primitive is row_map_p]
    assert row.params["rows"] == (2,) and parallel_loops.work(row) == 1000 * 10_000
    assert parallel_loops.worth(row)


FALLBACKS = [
    ("cond_reads_array", _cond_reads_array, lambda: (RNG.uniform(0, 50, 512).astype(F32),)),
    ("reduction_in_body", _reduction_in_body, lambda: (RNG.standard_normal(512).astype(F32),)),
    ("xs_gathered", _xs_gathered, lambda: (RNG.standard_normal(512).astype(F32),)),
    ("ys_from_a_slice", _ys_from_a_slice, lambda: (RNG.standard_normal(512).astype(F32),)),
    ("too_small", _newton, lambda: (_positive(100),)),
]


@pytest.mark.parametrize("name,f,make", FALLBACKS, ids=[c[0] for c in FALLBACKS])
def test_loops_the_pass_leaves_alone(monkeypatch, name, f, make):
    args = make()
    jaxpr = _optimized(f, *args)
    assert not _row_loops(jaxpr)
    assert any(e.primitive in (while_p, scan_p) for e in jaxpr.eqns)
    new = tracejit.tree_util.tree_leaves(tracejit.jit(f)(*args))
    ref = tracejit.tree_util.tree_leaves(tracejit.jit(f, backend="interpret")(*args))
    for a, r in zip(new, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(r), rtol=1e-5, atol=1e-6)


# --- scans with xs and ys: column blocks of the (steps, ...) arrays, ragged rows -----------

def _euler(x0, forcing):
    """The benchmark's integrator: the carry is also the step's y (one value, two outputs)."""
    def step(x, f):
        x = x + F32(0.01) * (jnp.sin(x) - x + f)
        return x, x
    return lax.scan(step, x0, forcing)


def _reverse_two_ys(x0, xs):
    def step(x, f):
        x = jnp.tanh(x * F32(0.9) + f)
        return x, (x * F32(2) + f, jnp.exp(-x))
    return lax.scan(step, x0, xs, reverse=True)


def _unrolled(x0, xs):
    return lax.scan(lambda x, f: (jnp.cos(x) * f + x * F32(0.5), x - f), x0, xs, unroll=3)


def _scalar_xs(x0, xs):
    """Per-step scalars (shape (steps,)) broadcast to every element; a uniform carry and a
    uniform y beside the array ones; an array const."""
    w = x0 * F32(0.25) + F32(1)
    def step(carry, t):
        x, k = carry
        x = x * F32(0.5) + w * t + k
        return (x, k + t), (x - t, k * t)
    return lax.scan(step, (x0, F32(0.0)), xs[:, 0])


def _int_carry(x0, xs):
    def step(c, f):
        n, a = c
        n = n * 3 + jnp.where(f > 0, 1, -2) + (a > 0).astype(jnp.int32)
        a = a * F32(0.5) + f
        return (n, a), n % 7
    return lax.scan(step, (jnp.zeros(x0.shape, jnp.int32), x0), xs)


def _no_array_carry(x0, xs):  # a map over steps: only xs and ys have the array shape
    return lax.scan(lambda c, f: (c + F32(1), jnp.sin(f) * c + x0), F32(0.5), xs)


def _matrix_shaped(x0, xs):  # S = (4, n / 4): rows cut through its flattening
    x0, xs = x0.reshape(4, -1), xs.reshape(xs.shape[0], 4, -1)
    return lax.scan(lambda x, f: (x * F32(0.75) + jnp.sqrt(jnp.abs(f)), x), x0, xs)


@pytest.fixture
def columns_at_any_size(monkeypatch):
    """Column blocks for small carries too (by default only carries of 2 MiB and more take
    them), so that small, fast cases exercise them."""
    monkeypatch.setattr(el, "COLUMN_MIN_CARRY_BYTES", 0)


XS_CASES = [("euler", _euler), ("reverse_two_ys", _reverse_two_ys), ("unrolled", _unrolled),
            ("scalar_xs", _scalar_xs), ("int_carry", _int_carry),
            ("no_array_carry", _no_array_carry), ("matrix_shaped", _matrix_shaped)]


def _xs_args(n, steps=9):
    return RNG.standard_normal(n).astype(F32), RNG.standard_normal((steps, n)).astype(F32)


def _column_loops(jaxpr) -> list:
    """The row_maps whose loop reads or writes column blocks (xs, ys)."""
    return [eqn for eqn in jaxpr.eqns if eqn.primitive is row_map_p
            and 1 in eqn.params["in_axes"] + eqn.params["out_axes"]]


@pytest.mark.parametrize("name,f", XS_CASES, ids=[c[0] for c in XS_CASES])
def test_scans_with_xs_and_ys_run_as_element_loops_with_the_same_bits(monkeypatch, name, f,
                                                                   columns_at_any_size):
    args = _xs_args(1000)
    jaxpr = _optimized(f, *args)
    assert len(_row_loops(jaxpr)) == 1  # the fast path is taken
    if name != "scalar_xs":  # (its only xs is per-step scalars: read whole by every row)
        assert _column_loops(jaxpr)
    new, old, ref = _run_three_ways(monkeypatch, f, *args)
    for a, b, r in zip(new, old, ref):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("n", [1, 63, 1000, 1025, 4099])
def test_sizes_with_and_without_a_row_length(monkeypatch, n, columns_at_any_size):
    """4099 is prime: rows of a multiple of 16 and a shorter last one (ragged); 1 and 63 are
    too small for rows and keep the loop. The row_map's reference rule (the interpreter on the
    optimised program) agrees too."""
    args = _xs_args(n, steps=5)
    closed = make_jaxpr(_reverse_two_ys)(*args)
    jaxpr, consts = passes.optimize(closed.jaxpr, list(closed.consts))
    rows = [e for e in jaxpr.eqns if e.primitive is row_map_p]
    assert bool(rows) == (n >= el.MIN_ELEMENTS)
    if rows:
        block, count, last = el.blocks(n)
        assert rows[0].params["rows"] == (count,) and (count - 1) * block + last == n
        assert (rows[0].params["tail"] is not None) == (n == 4099) and 0 < last <= block
    new, old, ref = _run_three_ways(monkeypatch, _reverse_two_ys, *args)
    for a, b, r, p in zip(new, old, ref, eval_jaxpr(jaxpr, consts, *args)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.asarray(p), r)
        np.testing.assert_allclose(a, r, rtol=2e-5, atol=2e-5)


def test_a_ragged_while_loop_on_the_pool_and_on_one_thread(monkeypatch):
    """A while over a prime size (before: no row length, left alone) on the pool: the same bits
    as the old lowering and as one thread."""
    y = _positive(9973)
    jaxpr = _optimized(_newton, y)
    (row,) = [e for e in jaxpr.eqns if e.primitive is row_map_p]
    assert row.params["tail"] is not None and parallel_loops.worth(row)
    new, old, _ = _run_three_ways(monkeypatch, _newton, y)
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_allclose(new[0], np.sqrt(y), rtol=1e-6)
    tracejit.config.update("tracejit_num_threads", 1)  # (conftest restores it)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda y: _newton(y))(y)), new[0])


def test_a_long_scan_with_xs_and_ys_on_the_pool_matches_one_thread(columns_at_any_size):
    x0, forcing = _xs_args(4099, steps=64)
    jaxpr = _optimized(_euler, x0, forcing)
    (row,) = _column_loops(jaxpr)
    assert parallel_loops.work(row) == row.params["rows"][0] * el.blocks(4099)[0] * 64
    assert parallel_loops.worth(row)
    pooled = [np.asarray(v) for v in tracejit.jit(_euler)(x0, forcing)]
    tracejit.config.update("tracejit_num_threads", 1)
    for got, want in zip(tracejit.jit(lambda *a: _euler(*a))(x0, forcing), pooled):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_column_blocks_only_for_carries_too_large_for_the_cache(monkeypatch):
    """The benchmark's integrator (a 1000-vector) keeps the per-step lowering, which streams
    xs and ys in order; three carries just over the threshold together, with a forcing input,
    run as rows (same bits)."""
    assert not _row_loops(_optimized(_euler, *_xs_args(1000)))

    def three(a0, xs):
        def step(c, f):
            a, b, d = c
            return (a + F32(0.01) * (b - a + f), b * F32(0.99) + d * a, d * F32(0.5)), None
        return lax.scan(step, (a0, a0 * F32(0.5), a0 + F32(1)), xs)[0]
    n = el.COLUMN_MIN_CARRY_BYTES // (3 * 4) + 16  # (float32)
    args = _xs_args(n, steps=2)
    (row,) = _column_loops(_optimized(three, *args))
    assert row.params["in_axes"].count(1) == 1
    new, old, _ = _run_three_ways(monkeypatch, three, *args)
    for a, b in zip(new, old):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [7, 300])
@pytest.mark.parametrize("steps", [1, 2, 5])
def test_a_carry_saved_as_its_y_is_read_back_from_the_y_row(n, steps):
    """codegen writes such a carry into the y row only (no carry copy per step): exact float
    arithmetic against NumPy, either trip-count parity, reversed, with the carry donated."""
    def f(x0, xs):
        return lax.scan(lambda x, f: ((y := x * F32(0.5) + f), y), x0, xs, reverse=True)
    x0, xs = _xs_args(n, steps)
    want_path = np.empty_like(xs)
    x = x0
    for t in reversed(range(steps)):
        x = want_path[t] = x * F32(0.5) + xs[t]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (donation may be declined: no error either way)
        final, path = tracejit.jit(f, donate_argnums=0)(jnp.asarray(x0), xs)
    np.testing.assert_array_equal(np.asarray(path), want_path)
    np.testing.assert_array_equal(np.asarray(final), x)


def test_grad_and_vmap_of_a_scan_with_xs_and_ys(columns_at_any_size):
    """Gradients through the integrator against central differences (float64), and vmap over
    a batch of forcings against a Python loop."""
    x0, forcing = (np.asarray(a, np.float64) for a in _xs_args(256, steps=6))
    with tracejit.enable_x64():
        def loss(x0, forcing):
            final, traj = _euler(x0, forcing)
            return jnp.sum(final ** 2) + jnp.sum(jnp.sin(traj) * forcing)
        assert _column_loops(_optimized(loss, x0, forcing))
        gx, gf = (np.asarray(g) for g in tracejit.jit(tracejit.grad(loss, (0, 1)))(x0, forcing))
        h = 1e-6
        for g, arg in ((gx, 0), (gf, 1)):
            for k in (0, 77, 255):
                e = np.zeros_like((x0, forcing)[arg])
                e.reshape(-1)[k] = h
                plus = [x0, forcing]
                minus = [x0, forcing]
                plus[arg], minus[arg] = plus[arg] + e, minus[arg] - e
                fd = (float(loss(*plus)) - float(loss(*minus))) / (2 * h)
                np.testing.assert_allclose(g.reshape(-1)[k], fd, rtol=1e-6, atol=1e-9)
    batch = RNG.standard_normal((3, 6, 256)).astype(F32)
    x0 = x0.astype(F32)
    batched = tracejit.jit(tracejit.vmap(_euler, in_axes=(None, 0)))(x0, batch)
    for k in range(3):
        for got, want in zip(batched, tracejit.jit(_euler)(x0, batch[k])):
            np.testing.assert_array_equal(np.asarray(got)[k], np.asarray(want))


def test_vmap_of_an_element_loop_matches_a_python_loop():
    ys = _positive(4 * 300).reshape(4, 300)
    batched = tracejit.jit(tracejit.vmap(_newton))
    assert _row_loops(_optimized(tracejit.vmap(_newton), ys))
    want = np.stack([np.asarray(tracejit.jit(_newton)(y)) for y in ys])
    np.testing.assert_array_equal(np.asarray(batched(ys)), want)


def test_jvp_of_a_while_and_grad_of_a_fori_loop_against_finite_differences():
    y = RNG.uniform(1.0, 9.0, 256)
    t = RNG.standard_normal(256)
    with tracejit.enable_x64():
        y64, t64 = np.asarray(y, np.float64), np.asarray(t, np.float64)
        f = tracejit.jit(lambda y, t: tracejit.jvp(_newton, (y,), (t,)))
        assert _row_loops(_optimized(lambda y, t: tracejit.jvp(_newton, (y,), (t,)), y64, t64))
        value, tangent = (np.asarray(v) for v in f(y64, t64))
        np.testing.assert_allclose(value, np.sqrt(y64), rtol=1e-12)
        np.testing.assert_allclose(tangent, t64 / (2 * np.sqrt(y64)), rtol=1e-9)

        def loss(x):
            return jnp.sum(lax.fori_loop(0, 6, lambda i, a: jnp.sin(a) * F32(1.5) + x, x))
        g = np.asarray(tracejit.jit(tracejit.grad(loss))(y64))
        # the difference of two sums of 256 terms (~2,000) carries their rounding, ~5e-13,
        # over 2h: at h = 1e-6 up to ~3e-7 of the gradient, and the draws of the module's
        # generator (which xdist's order decides) once went past rtol; h = 3e-5 leaves ~2e-8
        # of rounding and ~1e-9 of truncation (h**2 times the third derivative, over 6)
        h = 3e-5
        fd = [(float(loss(y64 + h * e)) - float(loss(y64 - h * e))) / (2 * h)
              for e in np.eye(256)[:5]]
        np.testing.assert_allclose(g[:5], fd, rtol=1e-6)


@pytest.mark.parametrize("n", [codegen.INLINE_SLOW_PATH_MIN_ELEMENTS, 1 << 14])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vectorised_sin_cos_call_the_masked_slow_path_and_match_scalar_code(dtype, n):
    """In a vectorised loop, huge arguments go through the masked vector variants of the
    Payne-Hanek routine (math._vfabi_attribute): the same bits as scalar code, which calls the
    scalar routine, and close to NumPy."""
    with tracejit.enable_x64(dtype == np.float64):
        big = np.concatenate([RNG.uniform(-1, 1, 200) * 10.0 ** RNG.integers(4, 30, 200),
                              [np.inf, -np.inf, np.nan, 0.0, 1e4, 7e4]]).astype(dtype)
        x = RNG.uniform(-3, 3, n).astype(dtype)
        x[:len(big) * 13:13] = big[:len(x[:len(big) * 13:13])]
        f = tracejit.jit(lambda x: (jnp.sin(x), jnp.cos(x)))
        llvm_ir = f.lower(x).compile().as_text(dialect="llvm")
        assert re.search(r"call <\d+ x (float|double)> @tracejit_(sin|cos)_big_f(32|64)_[mn]\d+\(",
                         llvm_ir)
        sin, cos = (np.asarray(v) for v in f(x))
        one_sin = tracejit.jit(jnp.sin)
        one_cos = tracejit.jit(jnp.cos)
        for k in range(0, min(len(big) * 13, n), 13):
            np.testing.assert_array_equal(sin[k], np.asarray(one_sin(x[k])))
            np.testing.assert_array_equal(cos[k], np.asarray(one_cos(x[k])))
        tol = 4 * np.finfo(dtype).eps
        with np.errstate(invalid="ignore"):  # (NumPy's sin/cos of inf: NaN, as ours)
            np.testing.assert_allclose(sin, np.sin(x), rtol=0, atol=tol)
            np.testing.assert_allclose(cos, np.cos(x), rtol=0, atol=tol)


@pytest.mark.parametrize("donate", [(0,), (1,), (0, 1)])
def test_donated_carry_is_updated_in_place_row_by_row(donate):
    """A donated carry's buffer holds the row_map's result (IN_PLACE through the loop); a
    donated array the loop only reads never does (each iteration reads it again)."""
    def f(x, y):
        return lax.fori_loop(0, 7, lambda i, c: c * 0.5 + y, x)
    rng = np.random.default_rng(3)
    xn, yn = rng.standard_normal((2, 4096)).astype(np.float32)
    want = xn.copy()
    for _ in range(7):
        want = want * np.float32(0.5) + yn
    x, y = jnp.asarray(xn), jnp.asarray(yn)
    x_address = x.unsafe_buffer_pointer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (y alone: "Some donated buffers were not usable")
        out = tracejit.jit(f, donate_argnums=donate)(x, y)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert (out.unsafe_buffer_pointer() == x_address) == (0 in donate)
