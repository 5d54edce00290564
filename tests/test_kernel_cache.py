"""The process-wide kernel cache (runtime/kernel_cache.py): two jitted programs with an identical
outlined kernel compile it once and give what each gives compiled alone; clear_caches releases
the kernels' code and a later program compiles them again; the on-disk cache round-trips
programs that call another program's kernels in a fresh process; two threads compiling programs
with a kernel in common compile it once."""
import gc
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.backend.llvm import codegen
from tracejit.runtime import kernel_cache, tiering


@pytest.fixture
def outline_all(monkeypatch):
    """Every kernel outlined (small programs stay fast), and no on-disk cache, so that the
    counters count LLVM's compiles."""
    monkeypatch.setattr(codegen, "OUTLINE_MIN_EQNS", 1)
    was = tracejit.config.read("tracejit_persistent_cache")
    tracejit.config.update("tracejit_persistent_cache", False)
    yield
    tracejit.config.update("tracejit_persistent_cache", was)


def _base(c):
    # two kernels: sin(x) * c fused, then the cumulative sum
    return lambda x: jnp.cumsum(jnp.sin(x) * c)


def _inline(f, x):
    """f compiled as one function (no outlined kernels): the oracle bit for bit."""
    old = codegen.OUTLINE_MIN_EQNS
    codegen.OUTLINE_MIN_EQNS = 10 ** 9
    try:
        return np.asarray(tracejit.jit(f)(x))
    finally:
        codegen.OUTLINE_MIN_EQNS = old


def _counts():
    return dict(kernel_cache.stats)


def _delta(before, key):
    return kernel_cache.stats[key] - before.get(key, 0)


def test_programs_sharing_a_kernel_compile_it_once(outline_all):
    x = np.linspace(-2, 2, 37, dtype=np.float32)
    base = _base(1.2345)

    def wrapper(x):  # the two kernels of `base`, then one of its own
        return base(x) * 3.0 + 7.0
    before = _counts()
    first = np.asarray(tracejit.jit(base)(x))
    assert _delta(before, "compiled") == 2 and _delta(before, "reused") == 0
    before = _counts()
    second = np.asarray(tracejit.jit(wrapper)(x))
    assert _delta(before, "compiled") == 1 and _delta(before, "reused") == 2
    np.testing.assert_array_equal(first, _inline(base, x))
    np.testing.assert_array_equal(second, _inline(wrapper, x))
    np.testing.assert_allclose(first, np.cumsum(np.sin(x) * np.float32(1.2345)), rtol=1e-5,
                               atol=1e-6)
    # the program's text shows the kernels it calls, compiled with it or before it
    compiled = tracejit.jit(wrapper).lower(x).compile()
    called = set(re.findall(r"declare [\w ]*void @(tjk_\w+)", compiled.as_text("llvm")))
    asm = compiled.as_text("asm")
    assert len(called) == 3 and all(f"{s}:" in asm for s in called)


def test_clear_caches_releases_kernels_and_they_compile_again(outline_all):
    x = np.linspace(-2, 2, 41, dtype=np.float32)
    f = tracejit.jit(_base(2.5))
    want = np.asarray(f(x))
    text = f.lower(x).compile().as_text(dialect="llvm")
    symbols = {s for s in kernel_cache._live.keys() if f"@{s}(" in text}
    assert len(symbols) == 2
    tracejit.clear_caches()
    gc.collect()
    assert not symbols & set(kernel_cache._live.keys())  # the code is gone
    before = _counts()
    # a new program with those kernels compiles them again and binds their names anew
    g = tracejit.jit(_base(2.5))
    np.testing.assert_array_equal(np.asarray(g(x)), want)
    assert _delta(before, "compiled") == 2
    assert symbols <= set(kernel_cache._live.keys())


def test_a_dropped_programs_kernels_serve_the_next_program(outline_all):
    # a jit of a lambda made and dropped in a loop: the kernels stay among the recent ones
    x = np.linspace(-2, 2, 47, dtype=np.float32)
    base = _base(-0.625)
    outs = []
    before = _counts()
    for k in range(3):
        outs.append(np.asarray(tracejit.jit(lambda x: base(x) + k)(x)))
        gc.collect()
    assert _delta(before, "compiled") == 2 + 3 and _delta(before, "reused") == 2 * 2
    for k, got in enumerate(outs):
        np.testing.assert_array_equal(got, _inline(lambda x: base(x) + k, x))


def test_threads_compiling_a_shared_kernel_compile_it_once(outline_all):
    x = np.linspace(-1, 1, 43, dtype=np.float32)
    base = _base(0.75)
    programs = [lambda x: base(x) + 1.0, lambda x: base(x) * 2.0]
    before = _counts()
    results, errors = [None, None], []

    def run(k):
        try:
            results[k] = np.asarray(tracejit.jit(programs[k])(x))
        except Exception as e:  # (reported by the assertion below)
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # the two shared kernels once, each program's last kernel once
    assert _delta(before, "compiled") == 4 and _delta(before, "reused") == 2
    for f, got in zip(programs, results):
        np.testing.assert_array_equal(got, _inline(f, x))


# A fresh process compiling programs that share kernels (every kernel outlined), reporting what
# the kernel and disk caches did and the results; argv: the programs to run, in order.
_SCRIPT = """
import json, sys
import numpy as np
import tracejit, tracejit.numpy as jnp
from tracejit.backend.llvm import codegen
from tracejit.runtime import disk_cache, kernel_cache, tiering
codegen.OUTLINE_MIN_EQNS = 1
base = lambda x: jnp.cumsum(jnp.sin(x) * 1.75)
programs = {"base": base, "wrapper": lambda x: base(x) * 3.0 + 7.0}
x = np.linspace(-2, 2, 29, dtype=np.float32)
out = {name: np.asarray(tracejit.jit(programs[name])(x)).tolist() for name in sys.argv[1:]}
tiering.wait()  # (first tiers' final code is stored when made)
print(json.dumps({"kernels": dict(kernel_cache.stats), "disk": dict(disk_cache.stats),
                  "out": out}))
"""


def _fresh_process(cache_dir, *names) -> dict:
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir), TRACEJIT_PERSISTENT_CACHE="1")
    done = subprocess.run([sys.executable, "-c", _SCRIPT, *names], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_disk_cache_round_trip_with_a_shared_kernel(tmp_path):
    cold = _fresh_process(tmp_path, "base", "wrapper")
    assert cold["kernels"] == {"compiled": 3, "reused": 2}
    assert cold["disk"]["stores"] == 4  # two programs, two libraries of kernels
    # the wrapper first: its kernels (in two libraries in the first process) are compiled
    # together, then its program's object code, which calls them, is loaded from the disk
    other = _fresh_process(tmp_path, "wrapper", "base")
    assert other["kernels"] == {"compiled": 3, "reused": 2}
    assert other["disk"]["hits"] == 2
    assert other["out"] == cold["out"]  # bit for bit
    x = np.linspace(-2, 2, 29, dtype=np.float32)
    want = np.cumsum(np.sin(x) * np.float32(1.75))
    np.testing.assert_allclose(cold["out"]["base"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cold["out"]["wrapper"], want * 3 + 7, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("second_tier")
def test_kernels_released_by_clear_caches_load_from_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(codegen, "OUTLINE_MIN_EQNS", 1)
    was = [(k, tracejit.config.read(k)) for k in ("tracejit_cache_dir",
                                                  "tracejit_persistent_cache")]
    tracejit.config.update("tracejit_cache_dir", str(tmp_path))
    tracejit.config.update("tracejit_persistent_cache", True)
    try:
        x = np.linspace(-2, 2, 31, dtype=np.float32)
        want = np.asarray(tracejit.jit(_base(1.5))(x))
        tiering.wait()  # (the final code, stored when made: clear_caches does not wait for it)
        tracejit.clear_caches()
        gc.collect()
        before = _counts()
        f = tracejit.jit(_base(1.5))
        np.testing.assert_array_equal(np.asarray(f(x)), want)
        assert _delta(before, "loaded") == 2 and _delta(before, "compiled") == 0
    finally:
        for k, v in was:
            tracejit.config.update(k, v)


def test_a_kernel_emitted_again_follows_the_settings_emission_reads(outline_all, monkeypatch):
    # a later program's kernel reuses the IR emitted earlier only under the same settings
    from tracejit.compiler.passes import optimize
    from tracejit.core.jaxpr import ClosedJaxpr

    def kernels(f, x):
        closed = tracejit.make_jaxpr(f)(x)
        jaxpr, consts = optimize(closed.jaxpr, closed.consts)
        return codegen.generate(ClosedJaxpr(jaxpr, consts), "entry").kernels
    f = _base(0.3125)
    x = np.ones(codegen.VECTORIZE_COLD_ELEMENTS + 53, np.float32)  # (fewer: never vectorized)
    first = kernels(f, x)
    assert kernels(f, x) == first
    off = '"llvm.loop.vectorize.enable", i1 0'
    assert not any(off in text for text in first.values())
    monkeypatch.setattr(codegen, "VECTORIZE_MAX_BODY", 0)
    later = kernels(f, x)
    assert all(off in text for text in later.values()) and not set(later) & set(first)
