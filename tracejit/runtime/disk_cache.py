"""The persistent on-disk cache of object code, beneath native.py's in-process one: a second
process compiling the same LLVM IR on the same host loads the object code MCJIT generated in the
first instead of optimising and generating it again (O3 and code generation are most of compile
time). An entry also holds the optimised IR, which is parsed and handed to the engine in place
of re-optimising, so `Compiled.as_text("llvm")` reads the same warm or cold.

Key: sha256 of FORMAT, the llvmlite and LLVM versions, the host CPU name and features, and the
IR text (entry symbol included: native.py names it deterministically). Entries are written
atomically (a temp file in the same folder, then os.replace) and carry their payload's length
and sha256: a missing, truncated or corrupt entry, or any I/O error, means compiling as if there
were no cache. Options: `tracejit_persistent_cache` (on by default) and `tracejit_cache_dir`
(else $XDG_CACHE_HOME/tracejit or ~/.cache/tracejit).
"""
from __future__ import annotations

import collections
import hashlib
import os
import pathlib
import struct
import tempfile

import llvmlite
import llvmlite.binding as llvm

from ..backend.llvm import jit_engine
from ..core.config import config

FORMAT = 1  # bump when the entry layout or what the object code depends on changes
_MAGIC = b"TJOC"
_HEADER = struct.Struct("<4sQQ32s")  # magic, IR bytes, object bytes, sha256(IR + object)
# hits: object code loaded; misses: compiled (no usable entry); stores: entries written;
# errors: unreadable, corrupt or unwritable entries (each also a miss or a failed store)
stats: collections.Counter[str] = collections.Counter()


def cache_dir() -> pathlib.Path | None:
    """The cache folder, or None when the persistent cache is off."""
    if not config.tracejit_persistent_cache:
        return None
    if config.tracejit_cache_dir:
        return pathlib.Path(config.tracejit_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "tracejit"


def key(ir_text: str) -> str:
    """The entry name for `ir_text` compiled by this llvmlite/LLVM for this host CPU."""
    cpu, features = jit_engine.host_cpu()
    digest = hashlib.sha256()
    for part in (str(FORMAT), llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                 cpu, features, ir_text):
        digest.update(part.encode())
        digest.update(b"\0")  # so no two part lists hash the same text
    return digest.hexdigest()


def compile_ir(ir_text: str) -> llvm.ModuleRef:
    """Parse, verify and optimise at O3, and add to the engine, loading the machine code from the
    cache when it holds an entry for `ir_text`. Returns the optimised module as O3 left it (code
    generation rewrites the module the engine holds), the same whether compiled or loaded."""
    folder = cache_dir()
    path = folder / f"{key(ir_text)}.o" if folder is not None else None
    entry = _load(path) if path is not None else None
    if entry is not None:
        optimised_ir, obj = entry
        try:
            module = jit_engine.parse(optimised_ir)
        except RuntimeError:  # intact but unparsable: compile afresh, as for a corrupt entry
            stats["errors"] += 1
        else:
            jit_engine.add_module(module, cached_object=obj)
            stats["hits"] += 1
            return module
    module = jit_engine.parse(ir_text)
    jit_engine.optimize(module)
    optimised_ir = str(module)
    obj = jit_engine.add_module(module)
    if path is not None:
        stats["misses"] += 1
        if obj is not None:
            _store(path, optimised_ir.encode(), obj)
    # parsed back, as a hit is: the text reads the same (parsing canonicalises attributes)
    return jit_engine.parse(optimised_ir)


def _load(path: pathlib.Path) -> tuple[str, bytes] | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        stats["errors"] += 1
        return None
    if len(data) >= _HEADER.size:
        magic, n_ir, n_obj, checksum = _HEADER.unpack_from(data)
        payload = memoryview(data)[_HEADER.size:]
        if (magic == _MAGIC and len(payload) == n_ir + n_obj
                and hashlib.sha256(payload).digest() == checksum):
            try:
                return bytes(payload[:n_ir]).decode(), bytes(payload[n_ir:])
            except UnicodeDecodeError:
                pass
    stats["errors"] += 1
    return None


def _store(path: pathlib.Path, ir: bytes, obj: bytes) -> None:
    header = _HEADER.pack(_MAGIC, len(ir), len(obj), hashlib.sha256(ir + obj).digest())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".o")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header + ir + obj)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        stats["errors"] += 1
        return
    stats["stores"] += 1
