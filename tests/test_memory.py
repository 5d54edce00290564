"""Memory is given back and bounded (runtime/native.py, runtime/jit.py, runtime/disk_cache.py,
backend/llvm/jit_engine.py): a program's machine code lives in an engine of its own and goes
when the last jitted function using it goes (or its cache is cleared); each function keeps at
most `tracejit_jit_cache_size` signatures; the disk cache stays under `tracejit_cache_max_bytes`,
evicting the least recently used entries. Large arrays made from host data start on a cache
line (core/array.py), as the native pool's outputs do."""
import gc
import uuid
import weakref

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.core.array import ALIGN, ALIGN_MIN_BYTES
from tracejit.runtime import disk_cache, native, tiering


def test_dropping_a_jitted_function_frees_its_machine_code():
    c = float(uuid.uuid4().int % 1000) + 0.25  # a program no other test compiled
    f = tracejit.jit(lambda x: tnp.sin(x) * c)
    x = np.ones(4, np.float32)
    np.testing.assert_allclose(f(x), np.sin(x) * c, rtol=1e-6)
    program = weakref.ref(next(iter(f._traces.entries.values())).executable._compiled)
    assert program() is not None
    tiering.wait()  # (the tiering thread holds a program while it makes its O3 code)
    del f
    gc.collect()
    assert program() is None


def test_clear_caches_frees_machine_code_of_live_functions():
    c = float(uuid.uuid4().int % 1000) + 0.5
    f = tracejit.jit(lambda x: tnp.cos(x) + c)
    x = np.ones(4, np.float32)
    f(x)
    program = weakref.ref(next(iter(f._traces.entries.values())).executable._compiled)
    tracejit.clear_caches()
    gc.collect()
    assert program() is None
    np.testing.assert_allclose(f(x), np.cos(x) + c, rtol=1e-6)  # compiled again on demand


def test_identical_programs_share_machine_code_while_alive():
    c = float(uuid.uuid4().int % 1000) + 0.75
    f = tracejit.jit(lambda x: tnp.exp(x) - c)
    g = tracejit.jit(lambda x: tnp.exp(x) - c)  # another function, the same program
    x = np.ones(4, np.float32)
    f(x), g(x)
    (ef,), (eg,) = f._traces.entries.values(), g._traces.entries.values()
    assert ef.executable._compiled is eg.executable._compiled
    tiering.wait()  # (the tiering thread holds a program while it makes its O3 code)
    n = len(native._compiled)
    del f, g, ef, eg
    gc.collect()
    assert len(native._compiled) == n - 1


def test_each_function_keeps_its_most_recently_used_signatures():
    tracejit.config.update("tracejit_jit_cache_size", 3)
    traced = []

    @tracejit.jit
    def f(x):
        traced.append(x.shape)
        return x * 2

    for n in (1, 2, 3, 4):  # the fourth evicts shape (1,), the least recently used
        f(tnp.ones(n))
    f(tnp.ones(2))  # refreshes (2,)
    f(tnp.ones(5))  # evicts (3,)
    assert f._cache_size() == 3 and traced == [(1,), (2,), (3,), (4,), (5,)]
    f(tnp.ones(2)), f(tnp.ones(4))  # still cached
    assert len(traced) == 5
    np.testing.assert_array_equal(f(tnp.ones(3)), np.full(3, 2.0))  # traced again
    assert traced[-1] == (3,) and f._cache_size() == 3


@pytest.mark.usefixtures("second_tier")
def test_disk_cache_evicts_least_recently_used_entries(tmp_path):
    tracejit.config.update("tracejit_cache_dir", str(tmp_path))
    tracejit.config.update("tracejit_persistent_cache", True)
    x = np.arange(8, dtype=np.float32)
    salt = uuid.uuid4().int % 10_000

    def compile_one(i):
        c = np.float32(salt + i / 8)
        out = tracejit.jit(lambda x: tnp.tanh(x) * c)(x)
        np.testing.assert_allclose(out, np.tanh(x) * c, rtol=2e-6)
        tiering.wait()  # (its entry, final code, is stored when made: runtime/tiering.py)

    compile_one(0)
    (first,) = [p for p in tmp_path.iterdir() if p.suffix == ".o"]
    size = first.stat().st_size
    tracejit.config.update("tracejit_cache_max_bytes", int(size * 2.5))
    before = disk_cache.stats["evictions"]
    for i in range(1, 5):
        compile_one(i)
    entries = [p for p in tmp_path.iterdir() if p.suffix == ".o"]
    assert len(entries) == 2 and not first.exists()
    assert sum(p.stat().st_size for p in entries) <= size * 2.5
    assert disk_cache.stats["evictions"] - before == 3
    assert (tmp_path / "hmac-key").exists()  # only entries are evicted


def test_stores_scan_the_folder_only_where_the_bound_may_be_passed(tmp_path, monkeypatch):
    """A scan of the folder at every store made filling a cache quadratic: with room for all,
    one scan at the first store and then one per eighth of the bound stored; entries past the
    bound are still evicted at the store that passes it."""
    scans = []
    evict = disk_cache._evict
    monkeypatch.setattr(disk_cache, "_evict", lambda *a: scans.append(a[0]) or evict(*a))

    def store(folder, i):
        folder.mkdir(exist_ok=True)
        disk_cache._store(folder / f"e{i:02}.o", f"e{i}", b"k" * 32, bytes(1000), b"",
                          disk_cache.stats)

    for i in range(20):  # (the bound, 1 GiB, far off)
        store(tmp_path / "roomy", i)
    assert len(scans) == 1  # (the first store's: this process's view of the folder starts)
    store(tmp_path / "bounded", 0)
    size = (tmp_path / "bounded" / "e00.o").stat().st_size
    tracejit.config.update("tracejit_cache_max_bytes", size * 24)  # (an eighth: 3 entries)
    for i in range(1, 24):
        store(tmp_path / "bounded", i)
    assert len(scans) == 1 + 8  # (at e00, e03, ..., e21)
    assert len(list((tmp_path / "bounded").glob("*.o"))) == 24
    store(tmp_path / "bounded", 24)  # past the bound: scanned, the oldest evicted
    assert len(scans) == 1 + 9 and not (tmp_path / "bounded" / "e00.o").exists()
    assert len(list((tmp_path / "bounded").glob("*.o"))) == 24


def test_large_arrays_from_host_data_start_on_a_cache_line():
    """NumPy's large buffers start at 16 mod 64; asarray, array, device_put and copies of
    large arrays are aligned copies (never sharing the caller's memory, values and dtype
    conversions as NumPy's), small ones are plain copies."""
    big = np.random.default_rng(0).standard_normal(ALIGN_MIN_BYTES // 4 + 4).astype(np.float32)
    made = {"asarray": tnp.asarray(big), "array": tnp.array(big),
            "device_put": tracejit.device_put(big), "copy": tnp.asarray(big).copy(),
            "strided": tnp.asarray(np.repeat(big, 2)[::2]),
            "converted": tnp.asarray(big, dtype=tnp.int32), "2-d": tnp.asarray(big.reshape(-1, 4))}
    for name, x in made.items():
        v = np.asarray(x)
        assert v.ctypes.data % ALIGN == 0 and not v.flags.writeable, name
        assert not np.shares_memory(v, big), name
        np.testing.assert_array_equal(v.ravel(), big[:v.size].astype(v.dtype), err_msg=name)
    small = tnp.asarray(big[:10])
    np.testing.assert_array_equal(small, big[:10])
    assert not np.shares_memory(np.asarray(small), big)
