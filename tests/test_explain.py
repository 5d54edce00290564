"""jax_explain_cache_misses and jax_log_compiles: the messages a user gets, compared with real
JAX's for the same calls."""
import logging

import jax
import numpy as np
import pytest

import tracejit


def _messages(api, caplog, calls, option="jax_explain_cache_misses"):
    def f(x, n=1):
        return x * n
    g = api.jit(f, static_argnames="n")
    api.config.update(option, True)
    try:
        with caplog.at_level(logging.WARNING):
            caplog.clear()
            for args, kwargs in calls:
                g(*args, **kwargs)
            return [r.getMessage() for r in caplog.records]
    finally:
        api.config.update(option, False)


def _detail_lines(messages):
    return [[line for line in m.splitlines() if line.startswith(("  * at", "  never", "  all"))]
            for m in messages if m.startswith("TRACING CACHE MISS")]


def test_explains_new_function_and_changed_argument_types(caplog):
    calls = [((np.ones(3, np.float32),), {}), ((np.ones(4, np.float32),), {}),
             ((np.ones(4, np.float32),), {}),              # a hit: nothing said
             ((np.ones(4, np.int32),), {}), ((1.0,), {})]
    ours = _detail_lines(_messages(tracejit, caplog, calls))
    theirs = _detail_lines(_messages(jax, caplog, calls))
    assert len(ours) == len(theirs) == 4
    assert ours[:3] == theirs[:3]                        # never seen; f32[4] vs f32[3]; i32[4]
    assert ours[3][-1].startswith("  * at x, now f32[]")  # weak Python float


def test_explains_changed_static_argument(caplog):
    calls = [((np.ones(3, np.float32),), {"n": 2}), ((np.ones(3, np.float32),), {"n": 3})]
    messages = _messages(tracejit, caplog, calls)
    assert "different static arguments:\n  * at n, now 3 and before 2" in messages[-1]


def test_logs_tracing_and_compiling(caplog):
    messages = _messages(tracejit, caplog, [((np.ones(3, np.float32),), {})],
                         option="jax_log_compiles")
    assert messages[0].startswith("Finished tracing f for jit in ")
    assert messages[1] == ("Compiling jit(f) with global shapes and types "
                           "(ShapedArray(float32[3]),).")
    assert messages[2].startswith("Finished native compilation of jit(f) in ")


def test_silent_by_default(caplog):
    with caplog.at_level(logging.WARNING):
        tracejit.jit(lambda x: x + 1)(np.ones(2, np.float32))
    assert not [r for r in caplog.records if r.name.startswith("tracejit")]


@pytest.mark.parametrize("option", ["jax_explain_cache_misses", "jax_log_compiles"])
def test_options_exist_in_both(option):
    assert getattr(tracejit.config, option) == getattr(jax.config, option) is False
