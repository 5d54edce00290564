"""A process's first call: the start-up it pays (SciPy's BLAS/LAPACK loaded without importing
scipy.linalg; the cold trig slow paths compiled at O1), with values checked against NumPy/SciPy
and the O1 code against O3's bit for bit."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _python(source: str, **environ: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_blas_and_lapack_without_scipy_linalg():
    """A matmul and a Cholesky factorisation load SciPy's cython_blas/cython_lapack but not
    the scipy.linalg package (~0.2 s), nor the scipy package itself (~15 ms); a later
    `import scipy.linalg.cython_blas` gets the same module objects as attributes, SciPy's
    other Cython modules imported later share their Cython types (one utility module
    `scipy._cyutility`), and SciPy's own solvers and special functions still work."""
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
        print(sorted(k for k in sys.modules if k == "scipy" or k.startswith("scipy.")))
        from tracejit.backend.llvm import blas
        import scipy.linalg.cython_blas
        import scipy.linalg
        import scipy.special
        print(scipy.linalg.cython_blas is blas.scipy_extension("cython_blas"),
              scipy.linalg.cython_lapack is blas.scipy_extension("cython_lapack"),
              sys.modules["scipy.linalg.cython_blas"] is scipy.linalg.cython_blas)
        # (Cython's function type lives in the utility module: one type, one module)
        print(type(scipy.linalg.cython_blas._test_dgemm)
              is type(scipy.linalg._decomp_update._form_qTu)
              is type(scipy._lib._ccallback_c.check_capsule))
        ref = a.astype(np.float64) @ a.astype(np.float64)
        print(np.abs(got - ref).max() <= 1e-5 * np.abs(a).sum(1).max() ** 2)
        print(np.allclose(chol, scipy.linalg.cholesky(spd, lower=True), rtol=1e-4, atol=1e-4),
              scipy.special.gamma(5.0) == 24.0)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:6] == ["[]", "[]", "True True True", "True", "True",
                                          "True True"], out.stdout


def test_blas_with_scipy_imported_first():
    """A user who imported scipy before the first BLAS program: the extensions load beside
    it (no stand-in replaces the user's package), and scipy.linalg later has them."""
    out = _python("""
        import sys
        import numpy as np
        import scipy
        import tracejit, tracejit.numpy as jnp
        from tracejit.backend.llvm import blas
        a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
        spd = (a @ a.T + 64 * np.eye(64)).astype(np.float32)
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        chol = np.asarray(tracejit.jit(jnp.linalg.cholesky)(spd))
        print(sys.modules["scipy"] is scipy, "scipy.linalg" in sys.modules)
        import scipy.linalg.cython_blas, scipy.linalg.cython_lapack
        print(scipy.linalg.cython_blas is blas.scipy_extension("cython_blas"),
              scipy.linalg.cython_lapack is blas.scipy_extension("cython_lapack"))
        print((got == a.astype(np.float64) @ a.astype(np.float64)).all(),
              np.allclose(chol, np.linalg.cholesky(spd.astype(np.float64)), rtol=1e-4,
                          atol=1e-4))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["True False", "True True", "True True"], out.stdout


def test_blas_load_leaves_no_idle_openblas_threads():
    """Loading SciPy's BLAS starts OpenBLAS's thread pool (OPENBLAS_NUM_THREADS=2 here), whose
    thread would spin ~0.1 s beside the first product's run: the load ends it, and products
    wanting one thread do not start it again (setting a count would), so a first program's
    products leave no thread behind. A call wanting two threads starts it again (SciPy's own
    sgemm), and the products are right throughout."""
    out = _python("""
        import os
        import threading
        import numpy as np
        import tracejit
        from tracejit.backend.llvm import blas, linalg
        linalg.GEMM_KERNEL = "blas"  # (this test's subject: SciPy's OpenBLAS loaded for a product)

        def threads():  # (not Python's: the tiering thread starts with a first tiered program)
            python = {str(t.native_id) for t in threading.enumerate()}
            return set(os.listdir("/proc/self/task")) - python

        def none_new(before):  # (a Python thread that has just ended, the tiering thread's
            import time        # work done, stays in /proc a moment after threading drops it;
            for _ in range(100):  # OpenBLAS's idle pool threads stay)
                if threads() <= before:
                    return True
                time.sleep(0.01)
            return False
        tracejit.config.update("tracejit_num_threads", 1)
        before = threads()
        rng = np.random.default_rng(0)
        a = rng.standard_normal((512, 512)).astype(np.float32)
        ref = a.astype(np.float64) @ a.astype(np.float64)
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        print(none_new(before), np.abs(got - ref).max() < 1e-3)
        set_threads, get_threads = blas.openblas_threads_api()
        set_threads(2)
        from scipy.linalg import blas as scipy_blas
        print(get_threads() == 2, not threads() <= before,
              np.abs(scipy_blas.sgemm(1.0, a, a) - ref).max() < 1e-3)
        tracejit.config.update("tracejit_num_threads", 2)
        b = rng.standard_normal((1024, 1024)).astype(np.float32)
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(b, b))
        ref = b.astype(np.float64) @ b.astype(np.float64)
        print(np.abs(got - ref).max() < 1e-2)
    """, OPENBLAS_NUM_THREADS="2", TRACEJIT_PERSISTENT_CACHE="0")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 6, out.stdout


def test_blas_loaded_while_another_thread_imports_scipy():
    """Another thread's `import scipy` at the moment the extensions load gets SciPy itself
    (it waits for the load), not a bare stand-in package without SciPy's attributes (it once
    got one: `import scipy` finds whatever sys.modules holds without taking a lock)."""
    out = _python("""
        import sys
        import threading
        import numpy as np
        import tracejit
        seen, started = {}, []

        def other_thread():
            import scipy
            seen["scipy"], seen["version"] = scipy, getattr(scipy, "__version__", None)

        def during_the_load(event, args):  # (cython_blas's loader reports its file here)
            if event == "import" and args[0] == "scipy.linalg.cython_blas" and not started:
                started.append(threading.Thread(target=other_thread))
                started[0].start()
                started[0].join(0.5)  # (it may have to wait for the load: joined again below)

        sys.addaudithook(during_the_load)
        a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        started[0].join()
        import scipy
        print(seen["scipy"] is scipy, seen["version"] == scipy.version.version,
              (got == a.astype(np.float64) @ a.astype(np.float64)).all())
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"], out.stdout


def test_blas_load_that_fails_leaves_no_trace():
    """An extension whose initialisation raises (here after it entered sys.modules, as
    Cython's does early on): the error reaches the caller, sys.modules and __import__ are as
    they were, the import lock is free, and the next call loads it."""
    out = _python("""
        import _imp
        import builtins
        import importlib.machinery
        import sys
        import numpy as np
        import tracejit
        from tracejit.backend.llvm import blas
        from tracejit.runtime import backend_start
        backend_start.join()  # (its imports hold the import lock a while: not this test's)
        exec_module, failed = importlib.machinery.ExtensionFileLoader.exec_module, []

        def failing(self, module):
            exec_module(self, module)
            if module.__name__ == "scipy.linalg.cython_blas" and not failed:
                failed.append(module)
                raise RuntimeError("interrupted")

        importlib.machinery.ExtensionFileLoader.exec_module = failing
        import_before = builtins.__import__
        try:
            blas.scipy_extension("cython_blas")
            print("no error")
        except RuntimeError as e:
            print(e)
        print(sorted(k for k in sys.modules if k == "scipy" or k.startswith("scipy.")),
              _imp.lock_held(), builtins.__import__ is import_before)
        a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        import scipy.linalg.cython_blas
        print(scipy.linalg.cython_blas is blas.scipy_extension("cython_blas"),
              (got == a.astype(np.float64) @ a.astype(np.float64)).all())
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["interrupted", "[] False True", "True True"], \
        out.stdout



def test_blas_loaded_while_a_module_is_imported(tmp_path):
    """A first BLAS program compiled at a module's top level, while that module is being
    imported: with an import in flight the bare `scipy` package is not used (an import lock
    held meanwhile could deadlock with it), SciPy is imported as usual, and the product is
    right."""
    (tmp_path / "imports_a_product.py").write_text(textwrap.dedent("""
        import numpy as np
        import tracejit
        a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
        got = np.asarray(tracejit.jit(lambda x, y: x @ y)(a, a))
        want = a.astype(np.float64) @ a.astype(np.float64)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import imports_a_product as m
        print((m.got == m.want).all(), "scipy" in sys.modules)
    """)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"], out.stdout


def test_trig_slow_path_at_o1_gives_o3s_bits():
    """The out-of-line Payne-Hanek routines are compiled at O1 (cold: huge arguments only);
    the same IR at O3 gives the same bits, and both agree with NumPy to a few ulp."""
    import ctypes

    import llvmlite.binding as llvm

    from tracejit.backend.llvm import jit_engine
    from tracejit.backend.llvm import math as ourmath
    rng = np.random.default_rng(0)
    for symbol in ourmath.BIG_TRIG_SYMBOLS:
        f64 = symbol.endswith("f64")
        ctype, dtype = (ctypes.c_double, np.float64) if f64 else (ctypes.c_float, np.float32)
        # (programs call it for |x| >= _PH_MIN only)
        scale = ourmath._PH_MIN[f64] * 10.0 ** rng.integers(0, 25 if f64 else 20, 64)
        x = (rng.uniform(1, 10, 64) * scale).astype(dtype)
        o1 = jit_engine._routine_engine(symbol)
        o3_module = jit_engine.optimize(jit_engine.parse(str(ourmath.big_trig_routine(symbol))))
        o3 = llvm.create_mcjit_compiler(o3_module, jit_engine.create_target_machine())
        o3.finalize_object()
        fns = [ctypes.CFUNCTYPE(ctype, ctype)(address) for address in
               (o1.address(symbol), o3.get_function_address(symbol))]
        got = [np.array([fn(v) for v in x.tolist()], dtype) for fn in fns]
        np.testing.assert_array_equal(got[0], got[1])
        name = next(n for n in ("sin", "cos", "tan") if n in symbol)
        want = getattr(np, name)(x.astype(np.float64))
        eps = float(np.finfo(dtype).eps)
        np.testing.assert_allclose(got[0], want, rtol=4 * eps, atol=4 * eps, err_msg=symbol)


def test_fft_steps_are_library_routines():
    """A transform's Stockham steps are the runtime's routines, one per radix variant with the
    sizes as arguments: a program declares them and defines none (four radix-8 steps for 2^12
    points; one line (its first step in the s == 1 variant) and 8 lines (every step with
    s > 1)), against NumPy's FFT."""
    import re

    import tracejit
    import tracejit.numpy as jnp
    rng = np.random.default_rng(0)
    for shape in [(4096,), (8, 4096)]:
        x = rng.standard_normal(shape).astype(np.float32)
        f = tracejit.jit(jnp.fft.fft)
        got = np.asarray(f(x))
        want = np.fft.fft(x.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
        text = f.lower(x).compile().as_text("llvm")
        assert not re.findall(r"define [^@]*@\"?(tracejit_fft_\w+radix\w+)", text)
        steps = set(re.findall(r"declare [^@]*@\"?(tracejit_fft_\w+radix\w+)", text))
        # radix 8's step, its one-line variant (s == 1, chosen at run time), the last step's
        assert steps == {f"tracejit_fft_complex64_radix8{v}_fwd"
                         for v in ("", "_unit", "_last")}, steps
