"""BLAS threads: every gemm sets the thread count of SciPy's OpenBLAS for its size (one thread
for small and mid-size products, more only for large ones, never above tracejit_num_threads).
The count is read back from OpenBLAS; products are checked against NumPy, exactly where the
inputs make every sum exact, so 1 and N threads must agree bit for bit."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tracejit
from tracejit.backend.llvm import blas


@pytest.fixture
def cap():
    """Set tracejit_num_threads for one test, restoring it after."""
    old = tracejit.config.read("tracejit_num_threads")
    yield lambda n: tracejit.config.update("tracejit_num_threads", n)
    tracejit.config.update("tracejit_num_threads", old)


def _openblas_get():
    api = blas.openblas_threads_api()
    assert api is not None, "SciPy's BLAS here is OpenBLAS: its thread API must be found"
    return api[1]


def _exact(shape, dtype, seed):
    # small integers: every product and partial sum is exact in float32 for k <= 1024
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(dtype)


@pytest.mark.parametrize("m,k,n,dtype,threads", [
    (128, 784, 512, np.float32, 1),      # the MLP's product: stalled on 2 threads
    (512, 512, 512, np.float32, 1),
    (1024, 1024, 1024, np.float32, 2),   # 2**30 multiply-adds: two threads' worth
    (64, 64, 64, np.float64, 1),
    (512, 1024, 1024, np.float64, 2),
])
def test_thread_count_set_per_call(cap, m, k, n, dtype, threads):
    cap(4)
    get = _openblas_get()
    a, b = _exact((m, k), dtype, 0), _exact((k, n), dtype, 1)
    with tracejit.enable_x64(dtype == np.float64):
        out = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, b))
    assert out.dtype == dtype
    assert get() == threads == blas.threads_for(blas.gemm_work(np.dtype(dtype), m, n, k))
    np.testing.assert_array_equal(out, a @ b)


def test_cap_bounds_threads_and_results_match(cap):
    get = _openblas_get()
    a, b = _exact((1024, 1024), np.float32, 2), _exact((1024, 1024), np.float32, 3)
    f = tracejit.jit(lambda x, y: x @ y)
    cap(1)
    one = np.asarray(f(a, b))
    assert get() == 1
    cap(2)   # the same compiled program: the cap is read by native code at each call
    two = np.asarray(f(a, b))
    assert get() == 2
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, a @ b)
    # inexact inputs: the split over rows/columns leaves each dot product's order alone
    x = np.random.default_rng(4).standard_normal((1024, 1024)).astype(np.float32)
    cap(1)
    one = np.asarray(f(x, x))
    cap(2)
    np.testing.assert_allclose(np.asarray(f(x, x)), one, rtol=1e-5, atol=1e-4)


def test_batched_small_products_stay_single_threaded(cap):
    cap(4)
    get = _openblas_get()
    a, b = _exact((64, 96, 96), np.float32, 5), _exact((64, 96, 96), np.float32, 6)
    out = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, b))
    assert get() == 1
    np.testing.assert_array_equal(out, a @ b)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "many"])
def test_bad_thread_count_names_the_fix(cap, bad):
    blas.threads_symbol()   # the routine exists: updates are checked against it
    with pytest.raises(ValueError, match="tracejit_num_threads must be a positive integer"):
        cap(bad)
    assert blas.max_threads() >= 1   # the bad value was not kept


def test_environment_variable_sets_the_cap():
    code = ("import numpy as np, tracejit\n"
            "from tracejit.backend.llvm import blas\n"
            "a = np.ones((1024, 1024), np.float32)\n"
            "tracejit.jit(lambda x: x @ x)(a).block_until_ready()\n"
            "print(blas.max_threads(), blas.openblas_threads_api()[1]())\n")
    env = dict(os.environ, TRACEJIT_NUM_THREADS="1", TRACEJIT_PERSISTENT_CACHE="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(__file__)), check=True)
    assert out.stdout.split() == ["1", "1"]


@pytest.mark.parametrize("n,threads", [(256, 1), (1024, 2)])
def test_lapack_calls_set_the_thread_count(cap, n, threads):
    """OpenBLAS's LAPACK threads inside: a Cholesky factorisation states its count too."""
    cap(4)
    get = _openblas_get()
    a = np.random.default_rng(7).standard_normal((n, n)).astype(np.float32)
    spd = a @ a.T / n + np.eye(n, dtype=np.float32)
    out = np.asarray(tracejit.jit(tracejit.numpy.linalg.cholesky)(spd))
    assert get() == threads
    np.testing.assert_allclose(out, np.linalg.cholesky(spd.astype(np.float64)), rtol=2e-3,
                               atol=2e-3)
