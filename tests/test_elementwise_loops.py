"""Element loops (compiler.element_loops -> codegen's row_map with the loop inside each row):
while/fori/scan loops whose array carries are updated elementwise under a uniform condition
give the same bits as the lowering that makes one pass over the arrays per iteration, and
agree with the reference interpreter; loops the pass must leave alone (a condition reading an
array carry, a reduction in the body, xs, a size without a row length) are left alone and
still compute the right thing; vmap and differentiation of such loops stay correct."""
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


def _scan_with_xs(x):
    return lax.scan(lambda a, t: (a * t + F32(1), None), x, jnp.arange(6, dtype=F32))[0]


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


@pytest.mark.parametrize("name,f,make", CASES, ids=[c[0] for c in CASES])
def test_same_bits_as_one_pass_per_iteration_and_close_to_the_interpreter(monkeypatch, name, f,
                                                                           make):
    args = make(1000)
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
    ("scan_with_xs", _scan_with_xs, lambda: (RNG.standard_normal(512).astype(F32),)),
    ("no_row_length", _newton, lambda: (_positive(1009),)),  # 1009 is prime
    ("too_small", _newton, lambda: (_positive(100),)),
]


@pytest.mark.parametrize("name,f,make", FALLBACKS, ids=[c[0] for c in FALLBACKS])
def test_loops_the_pass_leaves_alone(monkeypatch, name, f, make):
    args = make()
    jaxpr = _optimized(f, *args)
    assert not _row_loops(jaxpr)
    assert any(e.primitive in (while_p, scan_p) for e in jaxpr.eqns)
    new = np.asarray(tracejit.jit(f)(*args))
    ref = np.asarray(tracejit.jit(f, backend="interpret")(*args))
    np.testing.assert_allclose(new, ref, rtol=1e-5, atol=1e-6)


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
        h = 1e-6
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
        assert re.search(r"call <\d+ x (float|double)> @tracejit_(sin|cos)_big_f(32|64)_m\d+\(",
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
