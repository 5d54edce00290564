"""The native backend's start-up on a thread begun by `import tracejit` (runtime/backend_start.py):
it imports what the first compile would have and changes no result or compiled code; it is off
for the interpreter and by the environment; a broken llvmlite raises at the first compile as
without it; and forks, exits, the user's own imports of llvmlite and imports under way neither
deadlock nor fail. Each case runs in a fresh process (the thread starts at the import)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _python(source: str, path: list[str] = (), **env: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT)]), **env)
    source = textwrap.dedent(source).replace("WAIT_FOR_START_UP\n", _WAIT)
    return subprocess.run([sys.executable, "-c", source], env=environ,
                          capture_output=True, text=True, timeout=240, check=False)


def _last_json(done: subprocess.CompletedProcess):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


_WAIT = """
from tracejit.runtime import backend_start
if backend_start._thread is not None:
    backend_start._thread.join()  # (not backend_start.join(), which would call it off)
"""


def test_the_thread_imports_the_backend_and_starts_llvm():
    out = _last_json(_python("""
        import json, sys
        import numpy as np
        import tracejit
        WAIT_FOR_START_UP
        from tracejit.backend import llvm_setup
        from tracejit.backend.llvm import jit_engine
        llvm_setup.warm_up()  # (the thread's errors are swallowed: this one would show)
        started = {"native": "tracejit.runtime.native" in sys.modules,
                   "host": llvm_setup.host_cpu.cache_info().currsize,
                   "target": llvm_setup.pipeline_target_machine.cache_info().currsize,
                   "support": jit_engine._make_support_engine.cache_info().currsize}
        x = np.linspace(-3, 3, 1001, dtype=np.float32)
        got = np.asarray(tracejit.jit(lambda x: x * 2 + 1)(x))
        print(json.dumps({**started, "right": bool((got == x * 2 + 1).all())}))
    """))
    # (nothing a program links to is made early: the support routines wait for float16)
    assert out == {"native": True, "host": 1, "target": 1, "support": 0, "right": True}


def test_the_import_brings_llvmlite_only_with_the_thread():
    """`import tracejit` imports llvmlite and llvm_setup (for the thread's LLVM set-up) when the
    thread runs, and neither llvmlite nor any module of our backend otherwise."""
    source = """
        import json, sys
        import tracejit
        print(json.dumps(["llvmlite.binding" in sys.modules,
                          "tracejit.backend.llvm_setup" in sys.modules,
                          any(m.startswith("tracejit.backend.llvm") for m in sys.modules)]))
    """
    assert _last_json(_python(source)) == [True, True, True]
    assert _last_json(_python(source, TRACEJIT_BACKGROUND_START="0")) == [False, False, False]
    assert _last_json(_python(source, TRACEJIT_BACKEND="interpret")) == [False, False, False]


def test_off_for_the_interpreter_and_by_the_environment():
    source = """
        import json, sys, time
        import numpy as np
        import tracejit
        from tracejit.runtime import backend_start
        time.sleep(0.2)
        got = float(tracejit.jit(lambda x: x + 1)(np.float32(1)))
        print(json.dumps([backend_start._thread is None, "llvmlite" in sys.modules, got]))
    """
    assert _last_json(_python(source, TRACEJIT_BACKEND="interpret")) == [True, False, 2.0]
    assert _last_json(_python(source, TRACEJIT_BACKGROUND_START="0")) == [True, True, 2.0]


def test_a_broken_llvmlite_raises_at_the_first_compile_as_without_the_thread(tmp_path):
    fake = tmp_path / "llvmlite"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('llvmlite broken for the test')\n")
    source = """
        import json, time
        import numpy as np
        import tracejit
        time.sleep(0.2)  # (the thread's import fails meanwhile)
        try:
            tracejit.jit(lambda x: x + 1)(np.float32(1))
        except Exception as e:
            print(json.dumps([type(e).__name__, str(e)]))
    """
    runs = [_last_json(_python(source, [str(tmp_path)], TRACEJIT_BACKGROUND_START=on))
            for on in ("1", "0")]
    assert runs[0] == runs[1] == ["ImportError", "llvmlite broken for the test"]


def test_the_same_code_and_cache_entries_with_and_without_the_thread(tmp_path):
    """Programs compiled after the start-up (and its warm-up compile) and without it: the same
    optimised IR, the same results to the bit, and on-disk cache entries of the same names
    holding the same IR and object code (after each entry's header: its own folder's tag)."""
    source = """
        import json, sys
        import numpy as np
        import tracejit, tracejit.numpy as jnp
        WAIT_FOR_START_UP
        rng = np.random.default_rng(0)
        x = rng.standard_normal((64, 100)).astype(np.float32)
        out = {}
        for name, fn in [("plus", lambda x: x + 1),
                         ("softmax", lambda x: tracejit.nn.softmax(x, axis=-1)),
                         ("sum", jnp.sum), ("sin", lambda x: jnp.sin(x) * jnp.exp(-x))]:
            f = tracejit.jit(fn)
            out[name] = [np.asarray(f(x)).tobytes().hex(), f.lower(x).compile().as_text("llvm")]
        print(json.dumps(out))
    """
    runs = {}
    for on in ("1", "0"):
        folder = tmp_path / on
        runs[on] = _last_json(_python(source, TRACEJIT_BACKGROUND_START=on,
                                      TRACEJIT_CACHE_DIR=str(folder)))
        runs[on, "entries"] = {p.name: p.read_bytes()[52:] for p in folder.glob("*.o")}
    assert runs["1"] == runs["0"]
    assert runs["1", "entries"] and runs["1", "entries"] == runs["0", "entries"]


def test_fork_exit_and_the_users_own_imports_meanwhile():
    """At several moments after the import (the thread loading LLVM's library, importing, or
    done): the user's thread importing llvmlite and our backend's modules itself, a fork after
    it (parent and child each compile; a fork while another thread imports can leave the child
    a module lock that no thread will release, with or without this thread), and the
    interpreter's exit all finish, with right results."""
    source = """
        import os, sys, threading, time
        import numpy as np
        import tracejit
        time.sleep(float(sys.argv[1]))
        def importer():
            import llvmlite.binding  # noqa: F401
            from tracejit.backend.llvm import codegen, jit_engine  # noqa: F401
        user = threading.Thread(target=importer)
        user.start()
        user.join()
        pid = os.fork()
        ok = float(tracejit.jit(lambda x: x * 3)(np.float32(2))) == 6.0
        if pid == 0:
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(ok, status)
    """
    for delay in ("0", "0.003", "0.02", "0.3"):
        environ = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(source), delay],
                              env=environ, capture_output=True, text=True, timeout=240,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["True", "0"], (delay, done.stdout, done.stderr)
    for _ in range(3):  # an exit while the thread may be inside LLVM
        done = _python("import tracejit")
        assert done.returncode == 0 and not done.stderr, done.stderr


def test_imported_during_another_import(tmp_path):
    """`import tracejit` inside a module's import, which compiles at its top level: the thread
    waits while that import is under way, the compile calls it off and imports the backend
    itself; later compiles are right."""
    (tmp_path / "compiles_at_import.py").write_text(textwrap.dedent("""
        import numpy as np
        import tracejit
        value = float(tracejit.jit(lambda x: x - 1)(np.float32(5)))
    """))
    out = _last_json(_python("""
        import json
        import numpy as np
        import compiles_at_import as m
        import tracejit
        print(json.dumps([m.value, np.asarray(tracejit.jit(lambda x: x * x)(np.arange(4.0,
                          dtype=np.float32))).tolist()]))
    """, [str(tmp_path)]))
    assert out == [4.0, [0.0, 1.0, 4.0, 9.0]]
    np.testing.assert_array_equal(out[1], np.arange(4.0) ** 2)
