"""The compile helper process (runtime/compile_helper.py) that makes tiered programs' final code:
oracles are the object code this process's own MCJIT generates from the same optimised IR (byte
for byte), a program's outputs from final code made in this process (tracejit_compile_helper
off), and /proc for the helper's life: it serves a forked child's parent only, survives a SIGINT,
ends with its parent however that ends, and a helper that cannot start, dies or answers garbage
leaves the process on in-process code generation with the same bits."""
import gc
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from tolerance import native

import tracejit
import tracejit.numpy as tnp
from tracejit import lax, random
from tracejit.backend import llvm_setup
from tracejit.backend.llvm import jit_engine
from tracejit.runtime import compile_helper, disk_cache, tiering
from tracejit.runtime import native as native_rt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.workloads import WORKLOADS

# (the second tier, O3's code made on tiering's thread, is what these test)
pytestmark = [pytest.mark.skipif(not native(), reason="the helper is the native backend's"),
              pytest.mark.usefixtures("second_tier")]


def _row_modules(row: str) -> list:
    """Every module of the programs the row's first call compiles. The jit caches are cleared
    and what an earlier test left unreachable collected first: a program still in native's
    cache (a jitted function of an earlier test on this worker, or reference cycles not yet
    collected) would be found there, not compiled, and the row would show none."""
    tracejit.clear_caches()
    gc.collect()
    build = next(b for name, b in WORKLOADS if row in name)
    before = set(native_rt._compiled.values())
    fn, args = build(tracejit, tnp, lax, random)
    fn(*args)
    tiering.wait()
    modules = [m for p in set(native_rt._compiled.values()) - before for m in (p, *p.kernels)]
    assert modules
    return modules


@pytest.mark.parametrize("row", ["softmax 1000x1000", "SDE 1,000 steps", "rfft 2^20",
                                 "logsumexp", "fixed-point scan 1000", "MLP 784"])
def test_the_helper_gives_the_object_code_mcjit_makes_here(row):
    modules = _row_modules(row)
    for m in modules:
        text = m._optimised_ir
        _, here = jit_engine.load(jit_engine.parse(text), ir_text=text)
        assert compile_helper.object_code(text, jit_engine.codegen_target()) == here


@pytest.mark.parametrize("row", ["softmax 1000x1000", "SDE 1,000 steps", "random.normal",
                                 "while_loop Newton", "logsumexp", "MLP 784"])
def test_the_helper_optimises_as_this_process_does(row):
    """A skipped first tier's final code (optimised_code): the optimised IR disk_cache makes
    here (O3's optimisation, jit_engine.optimize) and the object code MCJIT makes of it, byte
    for byte, for every module of the row's programs."""
    modules = _row_modules(row)
    optimised = compile_helper.stats["optimised"]
    for m in modules:
        text = disk_cache.optimised_text(m.ir_text)
        _, here = jit_engine.load(jit_engine.parse(text), ir_text=text)
        got = compile_helper.optimised_code(m.ir_text, jit_engine.inlined_lines(m.ir_text),
                                            jit_engine.codegen_target())
        assert got == (text, here)
    assert compile_helper.stats["optimised"] == optimised + len(modules)


def test_the_helper_optimises_huge_functions_at_this_process_s_limit(monkeypatch):
    """The limit on a function's lines (llvm_setup.HUGE_FUNCTION_LINES) goes with the request:
    the helper's O1 of "huge" functions and its optnone round trip give this process's text."""
    fn = tracejit.jit(lambda x: tnp.cumsum(tnp.sin(x)) * 0.5 + tnp.exp(x[::-1]))
    ir_text = fn.lower(np.ones(37, np.float32)).compile()._executable.program.ir_text
    lines = jit_engine.inlined_lines(ir_text)
    texts = []
    for limit in (llvm_setup.HUGE_FUNCTION_LINES, 20):
        monkeypatch.setattr(llvm_setup, "HUGE_FUNCTION_LINES", limit)
        texts.append(disk_cache.optimised_text(ir_text))
        _, here = jit_engine.load(jit_engine.parse(texts[-1]), ir_text=texts[-1])
        assert compile_helper.optimised_code(ir_text, lines, jit_engine.codegen_target()) == \
            (texts[-1], here)
    assert texts[0] != texts[1]  # (O1's text is another)


def test_the_helper_optimises_for_its_own_host_only():
    """A request for another CPU's features: the helper refuses to optimise (its pass builder's
    target machine is its host's), generates code for it still, and stays."""
    triple, layout, cpu, features = jit_engine.codegen_target()
    other = (triple, layout, cpu, features.replace("+avx", "-avx", 1))
    text = 'define i32 @tracejit_helper_host(i32 %x) {\n  %y = add i32 %x, 2\n  ret i32 %y\n}\n'
    fallbacks = compile_helper.stats["fallbacks"]
    compile_helper.close()  # (a helper started for `other`)
    compile_helper._failed = False
    try:
        assert compile_helper.optimised_code(text, 4, other) is None
        assert compile_helper.stats["fallbacks"] == fallbacks + 1
        assert compile_helper.object_code(text, other) is not None
    finally:
        compile_helper.close()
        compile_helper._failed = False


def test_the_pipeline_the_helper_loads_by_path_imports_llvmlite_alone():
    """The helper runs backend/llvm_setup.py as a file of its own (no tracejit package): it may
    import nothing of ours, nor anything but the standard library and llvmlite."""
    import ast
    tree = ast.parse(Path(llvm_setup.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            top = (node.module or "").split(".")[0]
            assert node.level == 0 and (top == "llvmlite" or top in sys.stdlib_module_names), \
                node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                assert top == "llvmlite" or top in sys.stdlib_module_names, alias.name


def test_ir_the_helper_refuses_is_generated_here_and_the_helper_stays():
    objects, fallbacks = compile_helper.stats["objects"], compile_helper.stats["fallbacks"]
    assert compile_helper.object_code("define void @f( {", jit_engine.codegen_target()) is None
    assert compile_helper.stats["fallbacks"] == fallbacks + 1
    text = 'define i32 @tracejit_helper_probe(i32 %x) {\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n'
    obj = compile_helper.object_code(text, jit_engine.codegen_target())
    assert obj is not None and compile_helper.stats["objects"] == objects + 1
    assert obj == jit_engine.load(jit_engine.parse(text))[1]


def _digest(out) -> str:
    return hashlib.sha256(b"".join(np.asarray(x).tobytes()
                                   for x in tracejit.tree_util.tree_leaves(out))).hexdigest()


def test_final_code_from_the_helper_computes_what_final_code_made_here_does():
    """Tiered programs' final code, made by the helper, then (caches cleared) made on tiering's
    thread in this process: the same outputs, bit for bit."""
    rows = [b for name, b in WORKLOADS if any(r in name for r in ("softmax 1000", "sum 10M",
                                                                   "relu", "matmul"))]
    was = tracejit.config.read("tracejit_compile_helper")
    digests = []
    try:
        for on in (True, False):
            tracejit.config.update("tracejit_compile_helper", on)
            tracejit.clear_caches()
            gc.collect()
            objects = compile_helper.stats["objects"]
            got = []
            for build in rows:
                fn, args = build(tracejit, tnp, lax, random)
                fn(*args)
                tiering.wait()
                got.append(_digest(fn(*args)))
            assert (compile_helper.stats["objects"] > objects) == on
            digests.append(got)
    finally:
        tracejit.config.update("tracejit_compile_helper", was)
    assert digests[0] == digests[1]


_SCRIPT = """
    import os, signal, sys, time
    import numpy as np
    import tracejit, tracejit.numpy as tnp
    from tracejit.runtime import compile_helper, tiering
    mode = sys.argv[1]
    x = np.linspace(-3, 3, 20000, dtype=np.float32)
    want = lambda k: np.sum(np.exp(x * np.float32(k)), dtype=np.float64)
    def check(k):
        f = tracejit.jit(lambda v: tnp.sum(tnp.exp(v * np.float32(k))))
        first = float(f(x))
        tiering.wait()
        assert float(f(x)) == first and abs(first - want(k)) <= 1e-5 * want(k), k
        return f
    if mode == "nostart":
        compile_helper.__file__ = "/nonexistent/tracejit_compile_helper.py"
    elif mode == "garbled":
        compile_helper.__file__ = sys.argv[2]
    check(1)
    helper = compile_helper._process
    print(helper.pid if helper else 0, flush=True)
    if mode == "dies":
        os.kill(helper.pid, signal.SIGKILL)
        helper.wait()
    elif mode == "sigint":
        os.kill(helper.pid, signal.SIGINT)
        time.sleep(0.2)
    elif mode == "fork":
        pid = os.fork()
        if pid == 0:
            check(2)
            child = compile_helper._process
            ok = child is not None and child.pid != helper.pid
            os.kill(helper.pid, 0)  # (the parent's helper: still running)
            os._exit(0 if ok else 3)
        assert os.waitpid(pid, 0)[1] == 0
    check(3)
    print(dict(compile_helper.stats), flush=True)
    if mode == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
"""


def _run(mode: str, *extra: str) -> tuple[int, dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRACEJIT_PERSISTENT_CACHE="0",
               TRACEJIT_TIERED_COMPILE="1", TRACEJIT_COMPILE_HELPER="1")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT), mode, *extra],
                          env=env, capture_output=True, text=True, timeout=240, check=False)
    if mode == "killed":
        assert done.returncode == -signal.SIGKILL, done.stderr
    else:
        assert done.returncode == 0 and not done.stderr, (mode, done.stderr)
    pid, stats = done.stdout.split("\n", 1)
    return int(pid), eval(stats.strip())  # (a dict's repr, printed by the script above)


def _gone(pid: int, seconds: float = 5.0) -> bool:
    """Whether process `pid` has exited (a zombie no one reaps counts) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("mode", ["exit", "killed", "sigint", "fork"])
def test_the_helper_serves_and_ends_with_its_process(mode):
    """Used for every final code (none generated here); a SIGINT (the terminal's Ctrl-C reaches
    the whole group) leaves it serving; a forked child starts its own and leaves the parent's
    to the parent; it ends when the process exits, and when the process is killed."""
    pid, stats = _run(mode)
    assert pid and stats["starts"] == 1 and stats.get("fallbacks", 0) == 0, stats
    assert stats["objects"] >= 2, stats
    assert _gone(pid)


@pytest.mark.parametrize("mode", ["nostart", "dies", "garbled", "versions"])
def test_without_a_working_helper_final_code_is_made_here(mode, tmp_path):
    """A helper that cannot start, is killed, answers something that is not object code, or
    runs another llvmlite/LLVM: the final code is generated in this process, with the same
    results (the script checks them)."""
    garbage = tmp_path / "garbage.py"
    garbage.write_text(textwrap.dedent(f"""
        import struct, sys
        import llvmlite, llvmlite.binding as llvm
        i, o = sys.stdin.buffer, sys.stdout.buffer
        def send(data):
            o.write(struct.pack("<Q", len(data)) + data)
            o.flush()
        hello = f"{{llvmlite.__version__}}\\0{{'.'.join(map(str, llvm.llvm_version_info))}}"
        seen = False
        while True:
            head = i.read(8)
            if len(head) < 8:
                break
            i.read(struct.unpack("<Q", head)[0])
            if seen:
                o.write(b"o")
                send(b"\\x7fELFx")
            else:
                send((hello + ("x" if {mode == "versions"} else "")).encode())
            seen = True
    """))
    pid, stats = _run("garbled" if mode == "versions" else mode, str(garbage))
    before = 1 if mode == "dies" else 0  # (the objects made before it was killed)
    assert stats["fallbacks"] >= 2 - before and stats.get("objects", 0) == before, stats
    # (garbled: its reply was read, then refused; versions: refused at the start)
    assert (stats.get("requests", 0) >= 1) == (mode in ("garbled", "dies")), stats
    if pid:
        assert _gone(pid)
