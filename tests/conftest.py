"""Shared test fixtures: config isolation, the jaxpr checker after every trace, and the JAX
oracle."""
import atexit
import os
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The on-disk object cache goes to a fresh folder per test session (and to test subprocesses,
# which inherit it): tests never write into the user's home, nor depend on an earlier run's cache.
os.environ["TRACEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracejit-test-cache-")
atexit.register(shutil.rmtree, os.environ["TRACEJIT_CACHE_DIR"], ignore_errors=True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tracejit  # noqa: E402
from tracejit.core import jaxpr as _jaxpr_mod  # noqa: E402
from tracejit.core import trace as _trace_mod  # noqa: E402

_original_trace_to_jaxpr = _trace_mod.trace_to_jaxpr


def _checked_trace_to_jaxpr(*args, **kwargs):
    closed = _original_trace_to_jaxpr(*args, **kwargs)
    _jaxpr_mod.check_jaxpr(closed.jaxpr)
    return closed


@pytest.fixture(autouse=True)
def _check_every_jaxpr(monkeypatch):
    """Every jaxpr traced during a test goes through the type checker."""
    import tracejit.runtime.jit as jit_mod
    monkeypatch.setattr(jit_mod, "trace_to_jaxpr", _checked_trace_to_jaxpr)
    yield


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(tracejit.config._values)
    yield
    for k, v in saved.items():
        if tracejit.config._values[k] != v:
            tracejit.config.update(k, v)


@pytest.fixture
def x64():
    tracejit.config.update("jax_enable_x64", True)
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        pass
    yield
    tracejit.config.update("jax_enable_x64", False)
    try:
        import jax
        jax.config.update("jax_enable_x64", False)
    except ImportError:
        pass


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def jax_or_skip():
    return pytest.importorskip("jax")
