"""The persistent on-disk cache of object code, beneath native.py's in-process one: a second
process compiling the same LLVM IR on the same host loads the object code MCJIT generated in the
first instead of optimising and generating it again (O3 and code generation are most of compile
time). An entry also holds the optimised IR, which is parsed and handed to the engine in place
of re-optimising, so `Compiled.as_text("llvm")` reads the same warm or cold.

Loading object code runs it, so the cache trusts nothing it did not write itself:
- the folder must be the user's own and writable by nobody else (created 0700), else the cache
  is off for the process, with one warning naming the folder and the fix;
- every entry is authenticated: an HMAC-SHA256, under a random per-user key kept 0600 in the
  folder, of the entry's own name (its key) and payload, so an entry written elsewhere, edited,
  or moved to another name is rejected;
- entries are opened without following links or blocking (a FIFO, a device or a link is not an
  entry), must be regular files of the user's, not group/world-writable, of bounded size;
- the object code is checked structurally (ELF for this host: headers, sections, symbols and
  relocations within bounds) before the linker sees it.
Anything rejected or unreadable is deleted where it is ours to delete and the program compiled
as if there were no cache. Writes are atomic (a temp file in the same folder, then os.replace).

The folder is bounded (`tracejit_cache_max_bytes`): a store that takes it past the bound deletes
the least recently used entries (a hit refreshes an entry's modification time).

Key: sha256 of FORMAT, the llvmlite and LLVM versions, the host CPU name and features, and the
IR text (entry symbol included: native.py names it deterministically). Options:
`tracejit_persistent_cache` (on by default) and `tracejit_cache_dir` (else
$XDG_CACHE_HOME/tracejit or ~/.cache/tracejit).
"""
from __future__ import annotations

import collections
import errno
import hashlib
import hmac
import os
import pathlib
import secrets
import stat
import struct
import tempfile
import threading
import warnings

import llvmlite
import llvmlite.binding as llvm

from ..backend.llvm import jit_engine
from ..core.config import config
from .object_code import BadObject, check

FORMAT = 2  # bump when the entry layout or what the object code depends on changes
_MAGIC = b"TJOC"
_HEADER = struct.Struct("<4sQQ32s")  # magic, IR bytes, object bytes, HMAC (see _tag)
_MAX_ENTRY_BYTES = 1 << 30  # far above any program's object code; bounds what a read takes
_KEY_NAME = "hmac-key"
_KEY_BYTES = 32
# hits: object code loaded; misses: compiled (no usable entry); stores: entries written;
# errors: unreadable, rejected or unwritable entries (each also a miss or a failed store);
# evictions: entries deleted to keep the folder within tracejit_cache_max_bytes
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


def compile_ir(ir_text: str) -> tuple[llvm.ModuleRef, jit_engine.Code]:
    """Parse, verify and optimise at O3, and generate machine code, loading it from the cache
    when that holds a valid entry for `ir_text`. Returns the optimised module as O3 left it (the
    same whether compiled or loaded; code generation rewrites the one the engine holds) and the
    code."""
    folder = cache_dir()
    secret = _secret(folder) if folder is not None else None
    name = key(ir_text)
    path = folder / f"{name}.o" if secret is not None else None
    entry = _load(path, name, secret) if path is not None else None
    if entry is not None:
        optimised_ir, obj = entry
        module = _checked_module(path, optimised_ir, obj)
        if module is not None:
            # (the engine takes `module`)
            code, _ = jit_engine.load(module, cached_object=obj, ir_text=optimised_ir)
            stats["hits"] += 1
            _touch(path)
            return jit_engine.parse(optimised_ir), code
    module = jit_engine.parse(ir_text)
    module = jit_engine.optimize(module)
    optimised_ir = str(module)
    code, obj = jit_engine.load(module, ir_text=optimised_ir)
    if path is not None:
        stats["misses"] += 1
        if obj is not None:
            _store(path, name, secret, optimised_ir.encode(), obj)
    # parsed back, as a hit is: the text reads the same (parsing canonicalises attributes)
    return jit_engine.parse(optimised_ir), code


def _checked_module(path: pathlib.Path, optimised_ir: str, obj: bytes) -> llvm.ModuleRef | None:
    """The entry's IR parsed, if it parses and its object code passes object_code.check (which
    needs the IR: every function the module defines must be in the object); else None, the
    entry deleted."""
    try:
        module = jit_engine.parse(optimised_ir)
        check(obj, [f.name for f in module.functions if not f.is_declaration])
    except (RuntimeError, BadObject):
        stats["errors"] += 1
        _discard(path)
        return None
    return module


# --- the folder and its key ------------------------------------------------------------------

class UnsafeCacheFolder(Exception):
    """The cache folder (or its key) is not safe to load code from; the message says how."""


_secrets: dict[pathlib.Path, bytes | None] = {}  # folder -> its key; None: not usable
_secrets_lock = threading.Lock()


def _secret(folder: pathlib.Path) -> bytes | None:
    """The folder's key after checking the folder, once per folder and process; None, with one
    warning, when the folder is not safe or usable (the persistent cache is then off)."""
    with _secrets_lock:
        if folder not in _secrets:
            try:
                _secrets[folder] = _open_folder(folder)
            except (UnsafeCacheFolder, OSError) as err:
                _secrets[folder] = None
                warnings.warn(f"tracejit's persistent code cache is off for this process: "
                              f"{err}", RuntimeWarning, stacklevel=2)
        return _secrets[folder]


def _open_folder(folder: pathlib.Path) -> bytes:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise UnsafeCacheFolder(f"{folder} is not a folder; remove it or point "
                                f"TRACEJIT_CACHE_DIR elsewhere") from None
    info = folder.stat()
    fix = f"chmod 700 {folder}, or point TRACEJIT_CACHE_DIR at a folder of your own"
    if info.st_uid != os.getuid():
        raise UnsafeCacheFolder(f"{folder} belongs to user id {info.st_uid}, not to you "
                                f"({os.getuid()}): anyone who can write there could run code "
                                f"as you; point TRACEJIT_CACHE_DIR at a folder of your own")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheFolder(f"{folder} is writable by other users, who could make this "
                                f"process run their code; {fix}")
    return _folder_key(folder)


def _folder_key(folder: pathlib.Path) -> bytes:
    """The folder's random key, made on first use (0600, written whole before it appears)."""
    path = folder / _KEY_NAME
    try:
        data = _read_own_file(path, _KEY_BYTES, private=True)
    except FileNotFoundError:
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # mkstemp makes it 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(_KEY_BYTES))
            try:
                os.link(temp, path)  # atomic, and never replaces a key another process made
            except FileExistsError:
                pass
        finally:
            os.unlink(temp)
        data = _read_own_file(path, _KEY_BYTES, private=True)
    except _Rejected as err:
        raise UnsafeCacheFolder(f"its key {path} {err}; delete the file") from None
    if len(data) != _KEY_BYTES:
        raise UnsafeCacheFolder(f"its key {path} is not one tracejit wrote; delete the file")
    return data


# --- entries ---------------------------------------------------------------------------------

class _Rejected(Exception):
    """A file at an entry's (or the key's) path that must not be read as one."""


def _read_own_file(path: pathlib.Path, max_bytes: int, private: bool = False) -> bytes:
    """The bytes of `path` if it is a regular file of ours (not a link, FIFO or device) that
    nobody else may write (with `private`, nobody else may read), at most `max_bytes` long.
    Raises FileNotFoundError, _Rejected, or OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _Rejected("is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        others = stat.S_IRWXG | stat.S_IRWXO if private else stat.S_IWGRP | stat.S_IWOTH
        if not stat.S_ISREG(info.st_mode):
            raise _Rejected("is not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & others:
            raise _Rejected("belongs to another user or is open to others")
        if info.st_size > max_bytes:
            raise _Rejected(f"is larger than {max_bytes} bytes")
        return f.read(max_bytes + 1)


def _tag(secret: bytes, name: str, header: bytes, payload) -> bytes:
    """The entry's HMAC: over its own name too, so an entry moved to another name is rejected."""
    mac = hmac.new(secret, name.encode() + b"\0", hashlib.sha256)
    mac.update(header)
    mac.update(payload)
    return mac.digest()


def _load(path: pathlib.Path, name: str, secret: bytes) -> tuple[str, bytes] | None:
    try:
        data = _read_own_file(path, _MAX_ENTRY_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, _Rejected):
        stats["errors"] += 1
        _discard(path)
        return None
    if len(data) >= _HEADER.size:
        magic, n_ir, n_obj, tag = _HEADER.unpack_from(data)
        payload = memoryview(data)[_HEADER.size:]
        header = data[:_HEADER.size - len(tag)]
        if (magic == _MAGIC and len(payload) == n_ir + n_obj
                and hmac.compare_digest(tag, _tag(secret, name, header, payload))):
            try:
                return bytes(payload[:n_ir]).decode(), bytes(payload[n_ir:])
            except UnicodeDecodeError:
                pass
    stats["errors"] += 1
    _discard(path)
    return None


def _discard(path: pathlib.Path) -> None:
    """Delete a rejected entry (the name only: a link goes, not what it points to)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _store(path: pathlib.Path, name: str, secret: bytes, ir: bytes, obj: bytes) -> None:
    header = _HEADER.pack(_MAGIC, len(ir), len(obj), bytes(32))[:-32]
    entry = header + _tag(secret, name, header, ir + obj) + ir + obj
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".o")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(entry)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        stats["errors"] += 1
        return
    stats["stores"] += 1
    _evict(path.parent, config.tracejit_cache_max_bytes)


def _touch(path: pathlib.Path) -> None:
    """Mark an entry used (its modification time orders eviction; access times are often not
    kept)."""
    try:
        os.utime(path, follow_symlinks=False)
    except OSError:
        pass


def _evict(folder: pathlib.Path, max_bytes: int) -> None:
    """Delete the least recently used entries until the folder's entries fit in `max_bytes`."""
    entries = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if item.name.endswith(".o") and not item.name.startswith("."):
                    info = item.stat(follow_symlinks=False)
                    entries.append((info.st_mtime_ns, info.st_size, item.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.unlink(entry)
            stats["evictions"] += 1
        except OSError:
            pass
        total -= size
