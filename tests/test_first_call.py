"""A process's first call: the start-up it pays (SciPy's BLAS/LAPACK loaded without importing
scipy.linalg), with values checked against NumPy/SciPy."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(source: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_blas_and_lapack_without_scipy_linalg():
    """A matmul and a Cholesky factorisation load SciPy's cython_blas/cython_lapack but not
    the scipy.linalg package (~0.2 s); a later `import scipy.linalg.cython_blas` gets the same
    module object as an attribute, and SciPy's own solvers still work."""
    out = _python("""
        import sys
        import numpy as np
        import tracejit, tracejit.numpy as jnp
        rng = np.random.default_rng(0)
        a = rng.standard_normal((64, 64)).astype(np.float32)
        spd = (a @ a.T + 64 * np.eye(64)).astype(np.float32)
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        chol = np.asarray(tracejit.jit(jnp.linalg.cholesky)(spd))
        print(sorted(k for k in sys.modules if k.startswith("scipy.linalg")))
        from tracejit.backend.llvm import blas
        import scipy.linalg.cython_blas
        import scipy.linalg
        print(scipy.linalg.cython_blas is blas.scipy_extension("cython_blas"))
        ref = a.astype(np.float64) @ a.astype(np.float64)
        print(np.abs(got - ref).max() <= 1e-5 * np.abs(a).sum(1).max() ** 2)
        print(np.allclose(chol, scipy.linalg.cholesky(spd, lower=True), rtol=1e-4, atol=1e-4))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["[]", "True", "True", "True"], out.stdout

