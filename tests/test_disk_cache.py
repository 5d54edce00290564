"""The persistent on-disk object cache (runtime/disk_cache.py): a second process running the same
program loads its object code instead of compiling, with the same results and optimised IR; a
truncated or corrupt entry is compiled afresh; the key follows the toolchain and host CPU; and
switching the cache off writes nothing."""
import json
import os
import subprocess
import sys
import uuid

import llvmlite
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.backend.llvm import jit_engine
from tracejit.runtime import disk_cache, tiering

# Runs a program with a reduction, a transcendental, a float16 conversion (which links to the
# support routines) and a matmul large enough for BLAS (called by a bound symbol name, so the
# IR, and the key, do not depend on where SciPy's library is loaded) natively, checks it
# against the interpreter, and reports what the cache did.
_SCRIPT = """
import hashlib, json
import numpy as np
import tracejit, tracejit.numpy as tnp
from tracejit.runtime import disk_cache, tiering

def f(x, y):
    z = tnp.sin(x) * 2.5 + tnp.exp(y).astype(np.float16).astype(np.float32)
    a = tnp.abs(z)  # positive terms: the product's relative error is at most k eps (BLAS order)
    return tnp.sum(z, axis=0), z.max(), a.reshape(37 * 11, 64) @ a.reshape(64, 37 * 11)

rng = np.random.default_rng(0)
x, y = rng.standard_normal((2, 37, 11, 64)).astype(np.float32)
native = [np.asarray(v) for v in tracejit.jit(f, backend="native")(x, y)]
ref = [np.asarray(v) for v in tracejit.jit(f, backend="interpret")(x, y)]
llvm_ir = tracejit.jit(f).lower(x, y).compile().as_text(dialect="llvm")
tiering.wait()  # (a first tier's final code is stored when made: runtime/tiering.py)
print(json.dumps({"stats": dict(disk_cache.stats), "library": dict(disk_cache.library_stats),
                  "native": [v.tolist() for v in native], "ref": [v.tolist() for v in ref],
                  "llvm_ir": hashlib.sha256(llvm_ir.encode()).hexdigest()}))
"""


def _run(cache_dir, enabled: bool = True) -> dict:
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir),
               TRACEJIT_PERSISTENT_CACHE="1" if enabled else "0", TRACEJIT_BACKEND="native")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # our sin/exp are within a few ulp, and sums (length 37, and 64 in the matmul) may add in
    # another order
    for native, ref, rtol in zip(out["native"], out["ref"], (2e-6, 2e-6, 64 * 2 ** -23)):
        np.testing.assert_allclose(native, ref, rtol=rtol)
    return out


def _entries(cache_dir) -> list:
    return sorted(p for p in cache_dir.iterdir() if p.suffix == ".o") if cache_dir.exists() else []


def test_second_process_loads_object_code(tmp_path):
    cold = _run(tmp_path)
    assert cold["stats"].get("hits", 0) == 0 and cold["stats"]["misses"] >= 1
    assert cold["stats"]["stores"] == cold["stats"]["misses"] == len(_entries(tmp_path))
    warm = _run(tmp_path)
    assert warm["stats"].get("misses", 0) == 0
    assert warm["stats"]["hits"] == cold["stats"]["misses"]
    assert warm["native"] == cold["native"]  # bit for bit
    assert warm["llvm_ir"] == cold["llvm_ir"]  # the optimised IR, as the cold process had it
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_loading_engine_gets_the_object_code_and_generates_none(monkeypatch):
    """An engine given a module's object code is made with a target machine of no CPU or
    features (cheap to make, and it generates nothing): its data layout is the host's, the
    loaded code computes what the generated code does, and an engine that generated code
    after all (the object cache's hook not handing it over) raises instead of running code
    generated for no CPU in particular."""
    import ctypes

    from tracejit.backend import llvm_setup
    assert (str(llvm_setup.create_loading_target_machine().target_data)
            == str(llvm_setup.pipeline_target_machine().target_data))
    ir_text = ("define i64 @tracejit_test_load(i64 %x) {\n  %y = mul i64 %x, 3\n"
               "  %z = add i64 %y, 1\n  ret i64 %z\n}\n")
    generated, obj = jit_engine.load(jit_engine.parse(ir_text))
    loaded, none = jit_engine.load(jit_engine.empty_module(), cached_object=obj)
    assert none is None
    for code in (generated, loaded):
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(code.address("tracejit_test_load"))
        assert fn(14) == 43
    monkeypatch.setattr(jit_engine, "_cached_object", lambda module: None)
    with pytest.raises(RuntimeError, match="generated code"):
        jit_engine.load(jit_engine.parse(ir_text), cached_object=obj)


@pytest.mark.parametrize("damage", ["truncate", "flip_byte", "empty"])
def test_damaged_entry_is_compiled_afresh(tmp_path, damage):
    cold = _run(tmp_path)
    for path in _entries(tmp_path):
        data = bytearray(path.read_bytes())
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip_byte":
            data[-100] ^= 0x40  # inside the object code: only the checksum can tell
        else:
            data = b""
        path.write_bytes(bytes(data))
    again = _run(tmp_path)
    n = cold["stats"]["misses"]
    assert again["stats"]["errors"] == again["stats"]["misses"] == n
    assert again["stats"].get("hits", 0) == 0
    assert again["native"] == cold["native"]
    # the damaged entries were replaced: a third process loads them
    assert _run(tmp_path)["stats"]["hits"] == n


def test_key_follows_toolchain_and_host(monkeypatch):
    ir_text = "define void @f() {\n  ret void\n}\n"
    base = disk_cache.key(ir_text)
    assert disk_cache.key(ir_text) == base
    assert disk_cache.key(ir_text.replace("@f", "@g")) != base
    cpu, features = jit_engine.host_cpu()
    flipped = features.replace("+", "?").replace("-", "+").replace("?", "-")
    assert flipped != features
    monkeypatch.setattr(jit_engine, "host_cpu", lambda: (cpu, flipped))
    assert disk_cache.key(ir_text) != base
    monkeypatch.setattr(jit_engine, "host_cpu", lambda: (cpu + "x", features))
    assert disk_cache.key(ir_text) != base
    monkeypatch.setattr(jit_engine, "host_cpu", lambda: (cpu, features))
    assert disk_cache.key(ir_text) == base
    monkeypatch.setattr(llvmlite, "__version__", llvmlite.__version__ + ".post1")
    assert disk_cache.key(ir_text) != base
    monkeypatch.setattr(disk_cache, "FORMAT", disk_cache.FORMAT + 1)
    monkeypatch.setattr(llvmlite, "__version__", llvmlite.__version__[:-len(".post1")])
    assert disk_cache.key(ir_text) != base


@pytest.mark.usefixtures("second_tier")
@pytest.mark.parametrize("enabled", [True, False])
def test_option_switches_writing(tmp_path, enabled):
    tracejit.config.update("tracejit_cache_dir", str(tmp_path))
    tracejit.config.update("tracejit_persistent_cache", enabled)
    # a constant no other test uses: the in-process cache has not seen this program
    c = np.float32(uuid.uuid4().int % 10_000 / 7.0 + 1.0)
    x = np.arange(16, dtype=np.float32)
    out = tracejit.jit(lambda x: tnp.cos(x) * c, backend="native")(x)
    ref = tracejit.jit(lambda x: tnp.cos(x) * c, backend="interpret")(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=2e-6)
    tiering.wait()  # (the entry holds final code: stored once its second tier is made)
    assert len(_entries(tmp_path)) == (1 if enabled else 0)


def test_disabled_in_env_caches_no_program(tmp_path):
    """Off, no program is cached: what is written is the runtime's own code (the thread pool,
    the support routines, the slow paths), in the library subfolder, and nothing else."""
    out = _run(tmp_path, enabled=False)
    assert out["stats"] == {}
    assert [p.name for p in tmp_path.iterdir()] == [disk_cache.LIBRARY_FOLDER]
    library = tmp_path / disk_cache.LIBRARY_FOLDER
    assert len(_entries(library)) == out["library"]["stores"] >= 1
    # the user program's entry point is named jit_f_<hash> (native.py): in no entry
    assert not [p for p in _entries(library) if b"jit_f" in p.read_bytes()]
    again = _run(tmp_path, enabled=False)
    assert again["stats"] == {} and again["library"] == {"hits": out["library"]["stores"]}



@pytest.mark.usefixtures("second_tier")
@pytest.mark.parametrize("enabled", [True, False])
def test_jax_compilation_cache_options(tmp_path, enabled):
    """JAX's jax_compilation_cache_dir names the folder (where tracejit_cache_dir is unset) and
    jax_enable_compilation_cache=False caches no program, as programs written for JAX set them;
    JAX's thresholds are accepted with JAX's defaults."""
    import jax
    for name in ("jax_persistent_cache_min_compile_time_secs",
                 "jax_persistent_cache_min_entry_size_bytes", "jax_enable_compilation_cache",
                 "jax_compilation_cache_dir", "jax_traceback_filtering"):
        assert getattr(tracejit.config, name) == getattr(jax.config, name), name
    tracejit.config.update("tracejit_cache_dir", None)
    tracejit.config.update("jax_compilation_cache_dir", str(tmp_path))
    tracejit.config.update("jax_enable_compilation_cache", enabled)
    tracejit.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    c = np.float32(uuid.uuid4().int % 10_000 / 7.0 + 1.0)
    out = tracejit.jit(lambda x: tnp.sin(x) * c, backend="native")(np.arange(8, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(8, dtype=np.float32)) * c,
                               rtol=2e-6)
    tiering.wait()
    assert len(_entries(tmp_path)) == (1 if enabled else 0)
    with pytest.raises(ValueError, match="new enum value must be in"):
        tracejit.config.update("jax_traceback_filtering", "sometimes")
