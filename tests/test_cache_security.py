"""The on-disk code cache trusts only what it wrote (runtime/disk_cache.py, object_code.py): a
folder others can write, or that is not a folder, turns the cache off with one warning; entries
copied in, edited, swapped, or replaced by links, FIFOs or junk are rejected and compiled afresh
with the right results and no crash; object code is checked before the linker sees it."""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from tracejit.runtime import object_code

# two programs, so two entries: enough to swap
_SCRIPT = """
import json, warnings
import numpy as np
import tracejit, tracejit.numpy as tnp
from tracejit.runtime import disk_cache, tiering
x = np.linspace(-2, 2, 64, dtype=np.float32)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    a = tracejit.jit(lambda x: tnp.sin(x) * 3.25 + 1)(x)
    b = tracejit.jit(lambda x: tnp.cumsum(tnp.exp(x)) - 0.5)(x)
    tiering.wait()  # (a first tier's final code is stored when made: runtime/tiering.py)
print(json.dumps({"stats": dict(disk_cache.stats), "a": np.asarray(a).tolist(),
                  "b": np.asarray(b).tolist(), "warnings": [str(w.message) for w in caught]}))
"""


def _run(cache_dir) -> dict:
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(cache_dir), TRACEJIT_PERSISTENT_CACHE="1",
               TRACEJIT_BACKEND="native")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(out["a"], np.sin(x) * 3.25 + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out["b"], np.cumsum(np.exp(x)) - 0.5, rtol=1e-5)
    return out


def _entries(folder) -> list:
    return sorted(p for p in folder.iterdir() if p.suffix == ".o")


@pytest.fixture
def warm(tmp_path):
    """A cache folder holding the two programs' entries, and their count."""
    folder = tmp_path / "cache"
    cold = _run(folder)
    assert cold["stats"] == {"misses": 2, "stores": 2} and not cold["warnings"]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct((folder / "hmac-key").stat().st_mode & 0o777) == "0o600"
    assert _run(folder)["stats"] == {"hits": 2}
    return folder


def _rejected_then_healed(folder, n_rejected=2):
    again = _run(folder)
    want = {"hits": 2 - n_rejected, "errors": n_rejected, "misses": n_rejected,
            "stores": n_rejected}
    assert again["stats"] == {k: v for k, v in want.items() if v}, again["stats"]
    assert _run(folder)["stats"] == {"hits": 2}  # rewritten entries are good again


def test_swapped_entries_are_rejected(warm):
    first, second = _entries(warm)
    tmp = warm / "swap"
    first.rename(tmp)
    second.rename(first)
    tmp.rename(second)
    _rejected_then_healed(warm)


def test_entries_from_another_cache_are_rejected(warm, tmp_path):
    other = tmp_path / "other"
    _run(other)  # the same programs, cached under another folder's key
    for entry in _entries(other):
        shutil.copy(entry, warm / entry.name)
    _rejected_then_healed(warm)


def test_edited_object_code_with_a_recomputed_plain_checksum_is_rejected(warm):
    # the layout of format 1, whose unkeyed sha256 anyone could recompute after an edit
    for entry in _entries(warm):
        data = bytearray(entry.read_bytes())
        magic, n_ir, n_obj, _ = struct.unpack_from("<4sQQ32s", data)
        data[-100] ^= 0x40
        payload = bytes(data[60:])
        data[28:60] = hashlib.sha256(payload).digest()
        entry.write_bytes(bytes(data))
    _rejected_then_healed(warm)


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage"])
def test_damaged_entries_are_compiled_afresh(warm, damage):
    for entry in _entries(warm):
        data = entry.read_bytes()
        entry.write_bytes({"truncate": data[:len(data) // 2], "empty": b"",
                           "garbage": os.urandom(len(data))}[damage])
    _rejected_then_healed(warm)


def test_links_fifos_and_folders_at_entry_paths_are_never_read(warm, tmp_path):
    first, second = _entries(warm)
    first.unlink()
    first.symlink_to("/dev/zero")  # read as data, this never ends
    second.unlink()
    os.mkfifo(second)  # opened for reading, this blocks until a writer comes
    _rejected_then_healed(warm)
    assert not first.is_symlink()
    first.unlink()
    first.symlink_to(second)  # a link to a valid entry is still a link
    _rejected_then_healed(warm, n_rejected=1)


def test_open_entries_are_rejected(warm):
    for entry in _entries(warm):
        entry.chmod(0o666)
    _rejected_then_healed(warm)


def test_garbage_names_and_a_read_only_folder_do_no_harm(warm):
    (warm / "not-an-entry.o.tmp").write_bytes(b"junk")
    (warm / ".tmp-123.o").write_bytes(b"junk")
    (warm / "sub.o").mkdir()
    assert _run(warm)["stats"] == {"hits": 2}
    for entry in _entries(warm):
        if entry.is_file():
            entry.unlink()
    warm.chmod(0o500)
    try:
        out = _run(warm)  # as root the folder stays writable; otherwise each store fails
        assert out["stats"]["misses"] == 2
        assert out["stats"].get("stores", 0) + out["stats"].get("errors", 0) == 2
    finally:
        warm.chmod(0o700)


def test_a_folder_others_can_write_turns_the_cache_off(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    out = _run(folder)
    assert out["stats"] == {} and not list(folder.iterdir())
    assert len(out["warnings"]) == 1
    assert str(folder) in out["warnings"][0] and "chmod 700" in out["warnings"][0]


def test_a_folder_of_another_user_turns_the_cache_off(tmp_path):
    if os.getuid() == 0:
        folder = tmp_path / "theirs"
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, -1)
    else:
        folder = tmp_path.anchor  # "/", root's
    out = _run(folder)
    assert out["stats"] == {} and len(out["warnings"]) == 1
    assert "not to you" in out["warnings"][0]


def test_a_file_where_the_folder_should_be_turns_the_cache_off(tmp_path):
    (tmp_path / "file").write_text("x")
    out = _run(tmp_path / "file")
    assert out["stats"] == {} and "is not a folder" in out["warnings"][0]


@pytest.mark.parametrize("damage", ["mode", "link", "short"])
def test_a_key_that_is_not_ours_turns_the_cache_off(warm, tmp_path, damage):
    key = warm / "hmac-key"
    if damage == "mode":
        key.chmod(0o644)
    elif damage == "link":
        (tmp_path / "elsewhere").write_bytes(key.read_bytes())
        key.unlink()
        key.symlink_to(tmp_path / "elsewhere")
    else:
        key.write_bytes(b"short")
    out = _run(warm)
    assert out["stats"] == {} and "hmac-key" in out["warnings"][0]


# --- the object-code check, on a real object -----------------------------------------------

@pytest.fixture(scope="module")
def obj():
    """Object code of a small program, as the cache stores it, and the name it defines."""
    import llvmlite.binding as llvm

    from tracejit.backend.llvm import jit_engine
    module = jit_engine.parse("define i64 @tj_probe(i64 %x) {\n  %y = mul i64 %x, 3\n"
                              "  ret i64 %y\n}\n")
    tm = jit_engine.create_target_machine()
    del llvm
    return tm.emit_object(module), "tj_probe"


def test_object_check_accepts_what_llvm_emits(obj):
    code, name = obj
    object_code.check(code, [name])


def _patch(code: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(code)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _section_header(code: bytes, index: int) -> int:
    shoff = struct.unpack_from("<Q", code, 0x28)[0]
    return shoff + 64 * index


def test_object_check_rejects_damage(obj):
    code, name = obj
    shnum = struct.unpack_from("<H", code, 0x3C)[0]
    kinds = [struct.unpack_from("<I", code, _section_header(code, i) + 4)[0]
             for i in range(shnum)]
    symtab, rela = kinds.index(2), next((i for i, k in enumerate(kinds) if k in (4, 9)), None)
    sym_off = struct.unpack_from("<Q", code, _section_header(code, symtab) + 24)[0]
    damaged = {
        "short": code[:40],
        "magic": b"\x7fELG" + code[4:],
        "machine": _patch(code, 0x12, "<H", 3),
        "type": _patch(code, 0x10, "<H", 2),
        "section table past the end": _patch(code, 0x28, "<Q", len(code) - 10),
        "section past the end": _patch(code, _section_header(code, symtab) + 32, "<Q",
                                       len(code)),
        "symbol in a missing section": _patch(code, sym_off + 24 + 6, "<H", shnum + 3),
        "symbol name outside its table": _patch(code, sym_off + 24, "<I", 10 ** 6),
        "missing name": code,
    }
    if rela is not None:
        rela_off = struct.unpack_from("<Q", code, _section_header(code, rela) + 24)[0]
        damaged["relocation symbol"] = _patch(code, rela_off + 8, "<Q", (10 ** 6) << 32)
    for what, bad in damaged.items():
        wanted = ["not_defined_here"] if what == "missing name" else [name]
        with pytest.raises(object_code.BadObject):
            object_code.check(bad, wanted)
            pytest.fail(what)
