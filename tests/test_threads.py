"""Threads: tracing state is per thread and the jit caches take concurrent compiles. Every result
is compared exactly with NumPy (the functions use only operations exact on small integers)."""
import sys
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.core.array import Array


def _run_threads(target, n: int) -> list:
    """Run target(i) in n threads started together; re-raise the first exception."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: traces interleave mid-way
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def test_call_while_another_thread_is_mid_trace():
    entered, release = threading.Event(), threading.Event()
    result: dict = {}

    def slow(x):
        entered.set()
        assert release.wait(60)  # holds thread 1 inside its trace
        return x * 2.0 + 1.0

    def trace_in_thread():
        try:
            result["slow"] = tracejit.jit(slow)(np.arange(4.0, dtype=np.float32))
        except BaseException as e:  # noqa: BLE001 - checked below
            result["error"] = e

    warm = tracejit.jit(lambda x: x - 1.0)
    x = jnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    warm(x)  # compiled before: its call takes the dispatch fast path
    thread = threading.Thread(target=trace_in_thread)
    thread.start()
    try:
        assert entered.wait(60)
        fresh = tracejit.jit(lambda x: (x * x).sum(axis=0))(x)  # traced and compiled now
        fast = warm(x)
        eager = jnp.add(x, 3.0)  # no jit: an eager primitive
        static = tracejit.jit(lambda x, n: x * n, static_argnums=1)(x, 4)
    finally:
        release.set()
        thread.join(60)
    xn = np.asarray(x)
    for got, want in [(fresh, (xn * xn).sum(axis=0)), (fast, xn - 1), (eager, xn + 3),
                      (static, xn * 4)]:
        assert type(got) is Array
        np.testing.assert_array_equal(np.asarray(got), want)
    assert "error" not in result, result.get("error")
    assert type(result["slow"]) is Array
    np.testing.assert_array_equal(np.asarray(result["slow"]), np.arange(4.0) * 2 + 1)


def _double_plus_one(x):
    return x * 2 + 1


def _square_sum(x):
    return (x * x).sum(axis=0)


def _abs_where(x):
    return jnp.where(x > 2, x, -x)


def _pytree(x):
    return {"a": x + x, "b": (x - 1, x.T)}


_SHARED = [(_double_plus_one, lambda x: x * 2 + 1),
           (_square_sum, lambda x: (x * x).sum(0, dtype=x.dtype)),
           (_abs_where, lambda x: np.where(x > 2, x, -x)),
           (_pytree, lambda x: {"a": x + x, "b": (x - 1, x.T)})]  # (function, NumPy oracle)


@pytest.mark.parametrize("backend", [None, "interpret"])
def test_concurrent_compiles_and_calls(backend):
    n_threads, n_calls = 8, 40

    def work(t):
        rng = np.random.default_rng(t)
        for i in range(n_calls):
            shape = ((t + i) % 4 + 1, i % 3 + 2)
            dtype = np.float32 if i % 2 else np.int32
            x = rng.integers(-5, 6, size=shape).astype(dtype)
            if i % 5 == 4:  # a fresh closure: a new function with a captured array constant
                c = np.full(shape[1:], t * 100 + i, dtype)
                fun, want = (lambda y, c=c: y * 3 - c), x * 3 - c
            else:  # shared functions, a new jit wrapper for every call
                fun, ref = _SHARED[(t + i) % len(_SHARED)]
                want = ref(x)
            arg = jnp.asarray(x) if i % 3 else x
            got = tracejit.jit(fun, backend=backend)(arg)
            got_leaves, got_tree = tracejit.tree_util.tree_flatten(got)
            want_leaves, want_tree = tracejit.tree_util.tree_flatten(want)
            assert got_tree == want_tree
            for g, w in zip(got_leaves, want_leaves):
                assert type(g) is Array
                assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
                np.testing.assert_array_equal(np.asarray(g), w)

    _run_threads(work, n_threads)


def test_a_tracer_passed_to_another_thread_raises():
    from tracejit.errors import UnexpectedTracerError
    entered, release = threading.Event(), threading.Event()
    leaked: list = []

    def f(x):
        leaked.append(x)
        entered.set()
        assert release.wait(60)
        return x + 1.0

    thread = threading.Thread(target=lambda: tracejit.jit(f)(np.float32(1.0)))
    thread.start()
    try:
        assert entered.wait(60)
        with pytest.raises(UnexpectedTracerError, match="another thread"):
            jnp.sin(leaked[0])  # while its trace is still running, in the other thread
    finally:
        release.set()
        thread.join(60)
