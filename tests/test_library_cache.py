"""The runtime's own code (runtime/disk_cache.py's compile_library: the thread pool, math's slow
paths, the FFT's steps and line routines) is compiled once per machine: a second process loads
it from the cache folder's library subfolder, with the same results and without building its
IR, even with the program cache off; a tampered entry is rejected and compiled afresh;
`tracejit_library_cache` off writes nothing. Entries are named by the state of the package's
sources (source_digest), which an edit changes."""
import json
import os
import subprocess
import sys

import numpy as np

from tracejit.runtime import disk_cache, object_code

# a sum large enough for the thread pool, sines of huge arguments (the out-of-line slow path)
# and an rfft (the FFT's steps), in a fresh process
_SCRIPT = """
import json
import numpy as np
import tracejit, tracejit.numpy as jnp
from tracejit.runtime import disk_cache
from tracejit.backend.llvm import jit_engine
built = []  # the routines whose IR was built
compile_library = jit_engine._library_compiler
jit_engine.set_library_compiler(lambda name, ir_text, level: compile_library(
    name, lambda: built.append(name) or ir_text(), level))
x = np.linspace(-1.0, 1.0, 1 << 18, dtype=np.float32)
big = np.array([1e6, 3.5e12, -7.25e20, 1e30], np.float32)
total = float(tracejit.jit(lambda x: jnp.sum(x * x))(x))
sines = np.asarray(tracejit.jit(jnp.sin)(big)).tolist()
spectrum = np.asarray(tracejit.jit(jnp.fft.rfft)(x[:4096] ** 3))
print(json.dumps({"library": dict(disk_cache.library_stats), "programs": dict(disk_cache.stats),
                  "built": sorted(built),
                  "total": total, "sines": sines,
                  "spectrum": [spectrum.real.tolist(), spectrum.imag.tolist()]}))
"""


def _run(cache_dir, library: bool = True) -> dict:
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir), TRACEJIT_PERSISTENT_CACHE="0",
               TRACEJIT_LIBRARY_CACHE="1" if library else "0", TRACEJIT_NUM_THREADS="2",
               TRACEJIT_BACKEND="native")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    x = np.linspace(-1.0, 1.0, 1 << 18, dtype=np.float32).astype(np.float64)
    np.testing.assert_allclose(out["total"], np.sum(x * x), rtol=1e-5)
    big = np.array([1e6, 3.5e12, -7.25e20, 1e30], np.float32)
    np.testing.assert_allclose(out["sines"], np.sin(big.astype(np.float64)), rtol=0, atol=3e-7)
    want = np.fft.rfft(x[:4096] ** 3)
    got = np.array(out["spectrum"][0]) + 1j * np.array(out["spectrum"][1])
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())
    assert out["programs"] == {}  # the program cache is off: no program was cached
    return out


def _entries(folder) -> list:
    return sorted(p for p in folder.iterdir() if p.suffix == ".o")


def test_library_code_is_compiled_once_then_loaded(tmp_path):
    cold = _run(tmp_path)
    library = tmp_path / "library"
    n = len(_entries(library))
    assert n >= 7  # the pool, the sine's slow path, the FFT's 3 steps, fill, unpack
    assert cold["library"] == {"misses": n, "stores": n}
    assert len(cold["built"]) == len(set(cold["built"])) == n  # one entry per routine
    assert [p.name for p in tmp_path.iterdir()] == ["library"]  # and no program
    routines = set()
    for path in _entries(library):  # an entry holds its routines' names, not its IR
        data = path.read_bytes()
        _, n_ir, _, _ = disk_cache._HEADER.unpack_from(data)
        names = data[disk_cache._HEADER.size:disk_cache._HEADER.size + n_ir].decode()
        assert names and "define" not in names
        object_code.check(data[disk_cache._HEADER.size + n_ir:], names.split("\n"))
        routines.update(names.split("\n"))
    assert set(cold["built"]) <= routines  # (each module defines its routine's name)
    warm = _run(tmp_path)
    assert warm["library"] == {"hits": n} and warm["built"] == []  # loaded by name alone
    keys = ("total", "sines", "spectrum")
    assert [warm[k] for k in keys] == [cold[k] for k in keys]  # bit for bit
    for path in _entries(library):  # inside the object code: only the tag can tell
        data = bytearray(path.read_bytes())
        data[-100] ^= 0x40
        path.write_bytes(bytes(data))
    again = _run(tmp_path)
    assert again["library"] == {"errors": n, "misses": n, "stores": n}
    assert again["built"] == cold["built"]
    assert [again[k] for k in keys] == [cold[k] for k in keys]


def test_library_cache_off_writes_nothing(tmp_path):
    out = _run(tmp_path, library=False)
    assert out["library"] == {} and not any(tmp_path.iterdir())


def test_source_digest_follows_every_source_file(tmp_path):
    """A library entry's name changes with the contents of any source, an added or removed
    one, in any subfolder, even where an edit keeps the file's size and modification time (a
    write within one tick of the clock, or the time put back); not with a touch (the same
    text at another time), bytecode caches or other files."""
    digest = disk_cache.source_digest.__wrapped__  # (uncached: the files change in between)
    (tmp_path / "core").mkdir()
    (tmp_path / "__init__.py").write_text("x = 1\n")
    (tmp_path / "core" / "a.py").write_text("y = 2\n")
    first = digest(tmp_path)
    assert digest(tmp_path) == first
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "b.py").write_text("ignored\n")
    (tmp_path / "core" / "notes.txt").write_text("ignored\n")
    assert digest(tmp_path) == first
    a = tmp_path / "core" / "a.py"
    stamp = a.stat().st_mtime_ns
    os.utime(a, ns=(stamp, stamp + 10**9))  # touched: the same text at another time
    assert digest(tmp_path) == first
    changed = set()
    a.write_text("y = 3\n")  # the same size, the time it had
    os.utime(a, ns=(stamp, stamp))
    changed.add(digest(tmp_path))
    a.write_text("y = 30\n")  # another size
    changed.add(digest(tmp_path))
    (tmp_path / "core" / "c.py").write_text("")
    changed.add(digest(tmp_path))
    (tmp_path / "core" / "c.py").rename(tmp_path / "c.py")  # moved to another folder
    changed.add(digest(tmp_path))
    assert len(changed) == 4 and first not in changed


def test_source_digest_record_stands_for_the_contents_while_the_listing_stays(tmp_path,
                                                                               monkeypatch):
    """The library folder's record of the sources' digest: a listing that stays (sizes, times,
    inodes) gives the recorded digest without reading a file; an edit that keeps size and
    modification time changes the change time, so the contents are read again; a listing
    with a file changed in the last `settled_ns` is not recorded (a write within one tick of
    the clock may leave the times as they were); a tampered record is rejected."""
    import time
    root, folder = tmp_path / "pkg", tmp_path / "cache" / "library"
    (root / "core").mkdir(parents=True)
    (root / "__init__.py").write_text("x = 1\n")
    (root / "core" / "a.py").write_text("y = 2\n")
    folder.mkdir(mode=0o700, parents=True)
    settled = 10**8  # (0.1 s: far more than a tick of the clock)
    time.sleep(0.2)
    stats = disk_cache.source_stats

    def digest():
        before = dict(stats)
        out = disk_cache.digest_sources(root, folder, settled_ns=settled)
        assert out == disk_cache.digest_sources(root, None)  # (the contents' digest)
        return out, {k: v - before.get(k, 0) for k, v in stats.items() if v != before.get(k, 0)}
    first, counts = digest()
    assert counts == {"misses": 1, "stores": 1}
    (record,) = folder.glob("*.digest")  # (one, beside the folder's key)
    assert record.stat().st_mode & 0o077 == 0
    with monkeypatch.context() as m:  # a hit reads no source
        m.setattr(disk_cache, "_contents_digest", None)
        assert disk_cache.digest_sources(root, folder, settled_ns=settled) == first
    assert digest() == (first, {"hits": 1})
    a = root / "core" / "a.py"
    before = a.stat()
    a.write_text("y = 3\n")  # the same size, the time it had
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    second, counts = digest()
    assert second != first and counts == {"misses": 1}  # (just changed: not recorded)
    assert digest() == (second, {"misses": 1})
    time.sleep(0.2)
    assert digest() == (second, {"misses": 1, "stores": 1})
    assert digest() == (second, {"hits": 1})
    data = bytearray(record.read_bytes())
    data[-3] ^= 1  # (in the recorded digest)
    record.write_bytes(bytes(data))
    assert digest() == (second, {"errors": 1, "misses": 1, "stores": 1})
    assert digest() == (second, {"hits": 1})


_START = """
import json, numpy as np, tracejit
from tracejit.runtime import disk_cache
assert tracejit.__file__.startswith({root!r}), tracejit.__file__
y = tracejit.jit(tracejit.numpy.sin)(np.float32([1e30]))  # (the slow path: library code)
np.testing.assert_allclose(np.asarray(y), np.sin(np.float64(np.float32(1e30))), rtol=3e-7)
print(json.dumps({{"library": dict(disk_cache.library_stats),
                  "sources": dict(disk_cache.source_stats)}}))
"""


def test_a_copy_with_an_edit_that_keeps_size_and_times_compiles_the_library_again(tmp_path):
    """End to end, with the package copied as `cp -p` does (times kept): the same sources in
    another copy load the library's entries; an edit of one source that keeps its size and
    modification time makes new ones (the old ones would be another source's code), also
    where the copy's sources' digest was recorded (their listing, settled) before the edit."""
    import shutil
    import time

    import tracejit

    def copy(name):
        root = tmp_path / name
        shutil.copytree(os.path.dirname(tracejit.__file__), root / "tracejit",
                        ignore=shutil.ignore_patterns("__pycache__"))  # (copy2: times kept)
        return root

    def run(root) -> dict:
        env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"),
                   TRACEJIT_PERSISTENT_CACHE="0", TRACEJIT_LIBRARY_CACHE="1",
                   TRACEJIT_BACKEND="native", PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", _START.format(root=str(root))], env=env,
                              capture_output=True, text=True, timeout=120, check=False,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])
    first, second = copy("first"), copy("second")
    time.sleep(2.2)  # (disk_cache._SETTLED_NS: the copies' listings may be recorded)
    out = run(first)
    assert out["sources"] == {}  # (no library folder yet when the digest was taken)
    cold = out["library"]
    assert cold.get("misses", 0) > 0 and "hits" not in cold
    # the same contents: the same entries
    assert run(second) == {"library": {"hits": cold["misses"]},
                           "sources": {"misses": 1, "stores": 1}}
    assert run(second) == {"library": {"hits": cold["misses"]}, "sources": {"hits": 1}}
    source = second / "tracejit" / "runtime" / "disk_cache.py"
    before = source.stat()
    text = source.read_text()
    edited = text.replace('"""The persistent', '"""the persistent', 1)
    assert edited != text and len(edited) == len(text)
    source.write_text(edited)
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert source.stat().st_size == before.st_size
    assert source.stat().st_mtime_ns == before.st_mtime_ns
    edited_run = run(second)
    assert edited_run["library"] == {"misses": cold["misses"], "stores": cold["misses"]}
    # (the edited sources are read; recorded too where the process got to its digest 2 s or
    # more after the edit, as it may on a busy machine)
    assert edited_run["sources"].get("misses") == 1 and "hits" not in edited_run["sources"]
    cache = tmp_path / "cache"  # private: only its owner may read or list any of it
    for path in [cache, *cache.rglob("*")]:
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))
    assert len(_entries(cache / "library")) == 2 * cold["misses"]


def test_exported_functions_read_from_the_text():
    """The names a library hit checks the object code for, read without LLVM's parser: every
    linkage but internal and private, attributes with parentheses before the name's; a quoted
    name (escapes) leaves it to the parser."""
    text = """
define internal fastcc void @run(i64 range(i64 0, 42) %.1) unnamed_addr {
  ret void
}
define private void @hidden() {
  ret void
}
define void @tracejit_a.b$c(ptr noalias readonly captures(none) %.1) local_unnamed_addr #0 {
  ret void
}
define weak <4 x float> @tracejit_m4(<4 x float> %.1) {
  ret <4 x float> %.1
}
declare void @pthread_join(ptr)
"""
    assert disk_cache.exported_functions(text) == ["tracejit_a.b$c", "tracejit_m4"]
    assert disk_cache.exported_functions(text + 'define void @"odd\\22name"() {\n}\n') is None
