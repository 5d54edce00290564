"""BLAS threads: every gemm sets the thread count of SciPy's OpenBLAS for its size (one thread
for small and mid-size products; large ones run as tiles on our pool, one BLAS thread each;
LAPACK calls get more threads for large sizes, never above tracejit_num_threads). The count is
read back from OpenBLAS; products are checked against NumPy, exactly where the inputs make
every sum exact, and 1 and N threads must agree bit for bit."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tracejit
from tracejit.backend.llvm import blas, linalg, thread_pool


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


@pytest.mark.parametrize("m,k,n,dtype", [
    (128, 784, 512, np.float32),      # the MLP's product: stalled on 2 OpenBLAS threads
    (512, 512, 512, np.float32),
    (1024, 1024, 1024, np.float32),   # tiled on our pool, one BLAS thread per tile
    (64, 64, 64, np.float64),
    (512, 1024, 1024, np.float64),
])
def test_thread_count_set_per_call(cap, monkeypatch, m, k, n, dtype):
    """A product that is not tiled (below linalg.POOL_GEMM_WORK, or too little work per
    element a tile would repack) gets blas.threads_for its work (one thread at these sizes);
    a tiled one runs on our pool, each tile on one BLAS thread. (float32 products this large
    run our own gemm by default, which calls no BLAS: BLAS is forced here.)"""
    monkeypatch.setattr(linalg, "GEMM_KERNEL", "blas")
    cap(4)
    get = _openblas_get()
    a, b = _exact((m, k), dtype, 0), _exact((k, n), dtype, 1)
    with tracejit.enable_x64(dtype == np.float64):
        out = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, b))
    assert out.dtype == dtype
    tiled = linalg.tile_plan(np.dtype(dtype), m, n, k) is not None
    work = blas.gemm_work(np.dtype(dtype), m, n, k)
    assert work >= linalg.POOL_GEMM_WORK or not tiled
    assert get() == (1 if tiled else blas.threads_for(work)) == 1
    np.testing.assert_array_equal(out, a @ b)


def test_cap_bounds_threads_and_results_match(cap, monkeypatch):
    """The tiles depend on the shapes only: 1 and 2 threads give the same bits, also for
    inexact inputs (each output element is one tile's, or tile 0's sum plus the partials in
    a fixed order). (BLAS forced: tests/test_gemm.py holds our own gemm to the same.)"""
    monkeypatch.setattr(linalg, "GEMM_KERNEL", "blas")
    get = _openblas_get()
    a, b = _exact((1024, 1024), np.float32, 2), _exact((1024, 1024), np.float32, 3)
    f = tracejit.jit(lambda x, y: x @ y)
    cap(1)
    one = np.asarray(f(a, b))
    assert get() == 1
    cap(2)   # the same compiled program: the pool's thread count is read at each call
    two = np.asarray(f(a, b))
    assert get() == 1 and thread_pool.workers_alive() >= 1
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, a @ b)
    x = np.random.default_rng(4).standard_normal((1024, 1024)).astype(np.float32)
    g = tracejit.jit(lambda x, y: x.T @ y)   # transposed lhs, column tiles
    assert linalg.tile_plan(np.dtype(np.float32), 1024, 1024, 1024)[0] == "n"
    for fn in (f, g):
        cap(1)
        one = np.asarray(fn(x, x))
        cap(2)
        np.testing.assert_array_equal(np.asarray(fn(x, x)), one)
    y = x[:, :64].copy()
    h = tracejit.jit(lambda x, y: x.T @ y)   # 64 x 1024 x 64: the contracted dim is tiled
    assert linalg.tile_plan(np.dtype(np.float32), 64, 64, 1024 * 16) is not None
    cap(1)
    one = np.asarray(h(np.tile(y, (16, 1)), np.tile(y, (16, 1))))
    cap(2)
    np.testing.assert_array_equal(np.asarray(h(np.tile(y, (16, 1)), np.tile(y, (16, 1)))), one)
    np.testing.assert_allclose(one, 16 * (y.T.astype(np.float64) @ y), rtol=1e-4, atol=1e-3)


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
            "from tracejit.backend.llvm import blas, linalg\n"
            "linalg.GEMM_KERNEL = 'blas'  # (our own gemm would call no BLAS)\n"
            "a = np.ones((1024, 1024), np.float32)\n"
            "tracejit.jit(lambda x: x @ x)(a).block_until_ready()\n"
            "print(blas.max_threads(), blas.openblas_threads_api()[1]())\n")
    env = dict(os.environ, TRACEJIT_NUM_THREADS="1", TRACEJIT_PERSISTENT_CACHE="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(__file__)), check=True)
    assert out.stdout.split() == ["1", "1"]


@pytest.mark.parametrize("environ,usable,online,want", [
    ({}, 8, 8, 8),                                        # no launcher: every usable CPU
    ({"MPI_LOCALNRANKS": "2"}, 8, 8, 4),                  # MPICH/Intel Hydra: a share each
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, 8, 8, 2),       # Open MPI
    ({"MV2_COMM_WORLD_LOCAL_SIZE": "4"}, 8, 8, 2),        # MVAPICH2
    ({"MPI_LOCALNRANKS": "4"}, 2, 2, 1),                  # more processes than CPUs: one each
    ({"MPI_LOCALNRANKS": "2"}, 4, 8, 4),                  # bound by the launcher: shared already
    ({"MPI_LOCALNRANKS": ""}, 6, 6, 6),                   # (set but empty: not a launcher's)
])
def test_default_threads_share_the_cpus_among_local_processes(environ, usable, online, want):
    assert blas.default_threads(environ, usable, online) == want


def test_default_threads_under_mpiexec_and_explicit_count_wins():
    from tracejit.distributed import mpiexec
    # (one write(2) per rank, a few bytes: atomic on mpiexec's pipe, so the two ranks' reports
    # never interleave — two prints could, and once read "33")
    code = ("import os; from tracejit.backend.llvm import blas; "
            "os.write(1, f'<{blas.max_threads()}>'.encode())")
    env = {k: v for k, v in os.environ.items() if k != "TRACEJIT_NUM_THREADS"}
    usable = len(os.sched_getaffinity(0))
    for extra, want in (({}, max(1, usable // 2)), ({"TRACEJIT_NUM_THREADS": "3"}, 3)):
        out = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-c", code],
                             capture_output=True, text=True, env=dict(env, **extra),
                             cwd=os.path.dirname(os.path.dirname(__file__)), check=True)
        assert re.findall(r"<(\d+)>", out.stdout) == [str(want)] * 2, out


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
