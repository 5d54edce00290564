"""Shared test fixtures: config isolation, the jaxpr checker after every trace and every
compiler pass, and the JAX oracle."""
import atexit
import os
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The on-disk object cache goes to a fresh folder per test session (and to test subprocesses,
# which inherit it): tests never write into the user's home, nor depend on an earlier run's cache.
os.environ["TRACEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracejit-test-cache-")
atexit.register(shutil.rmtree, os.environ["TRACEJIT_CACHE_DIR"], ignore_errors=True)

import signal  # noqa: E402

# The Ctrl-C tests send SIGINT. A test run started with it ignored (in the background of a
# script without job control, or under nohup) holds SIG_IGN, which Python keeps at start-up:
# give it Python's handler back, before tracejit looks at it (subprocesses then start with it).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tracejit  # noqa: E402

# every jaxpr traced during the tests (by jit, control flow, transformations) and every
# compiler pass's result goes through the type checker
tracejit.config.update("jax_enable_checks", True)
# A program runs its first tier's code for good (tracejit_second_tier: the same bits), not O3's
# made on tiering's thread as well: most programs here run once or twice, and O3's code for all
# of them, never run, was ~430 s of the ~3,100 s of CPU of its 30 slowest files. Tests of the
# second tier, and of what it stores on disk, take the `second_tier` fixture.
tracejit.config.update("tracejit_second_tier", False)


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(tracejit.config._values)
    yield
    for k, v in saved.items():
        if tracejit.config._values[k] != v:
            tracejit.config.update(k, v)


@pytest.fixture
def second_tier():
    """O3's code made on tiering's thread, as outside the tests (restored after the test)."""
    tracejit.config.update("tracejit_second_tier", True)


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


@pytest.fixture
def threads():
    """threads(n) sets tracejit_num_threads within a test; restored after."""
    old = tracejit.config.read("tracejit_num_threads")
    yield lambda n: tracejit.config.update("tracejit_num_threads", n)
    tracejit.config.update("tracejit_num_threads", old)


@pytest.fixture(scope="session")
def jax():
    """Real JAX, the oracle: a test that takes it skips where JAX is not installed."""
    return pytest.importorskip("jax")


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def threefry_mode(request, jax):
    """Runs the test in both of JAX's threefry modes (jax_threefry_partitionable), set alike
    in JAX and tracejit, then back to the default in both."""
    jax.config.update("jax_threefry_partitionable", request.param)
    tracejit.config.update("jax_threefry_partitionable", request.param)
    yield request.param
    jax.config.update("jax_threefry_partitionable", True)
    tracejit.config.update("jax_threefry_partitionable", True)

