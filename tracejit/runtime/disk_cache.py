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
the least recently used entries (a hit refreshes an entry's modification time). Each process
scans the folder where its view of it may have passed the bound (`_bound`), not at each store:
another process's entries are counted at the next scan, so the folder may pass the bound by an
eighth of it per process writing.

Key: sha256 of FORMAT, the llvmlite and LLVM versions, the host CPU name and features, and the
IR text (entry symbol included: native.py names it deterministically). Options:
`tracejit_persistent_cache` (on by default; JAX's `jax_enable_compilation_cache` too) and
`tracejit_cache_dir` (else JAX's `jax_compilation_cache_dir`, else $XDG_CACHE_HOME/tracejit or
~/.cache/tracejit).

The runtime's own code (the thread pool, math's slow paths, the support routines: the same in
every process, like jaxlib's prebuilt runtime) goes through `compile_library`, into the folder's
`library` subfolder, under the same checks, keyed by its name, its optimisation level and the
contents of tracejit's source files (`source_digest`) instead of its IR text: a hit loads it
without building its IR (building and printing the thread pool's IR only to hash it was ~3.7 of
the ~4.5 ms of CPU it took to load). A library entry holds the names of the functions it
defines in the place of the optimised IR (no library is printed with as_text). That cache has
an option of its own, `tracejit_library_cache` (on by default): `tracejit_persistent_cache` off
still means that no user program is cached, and the runtime's code is then compiled once per
machine rather than once per process.
"""
from __future__ import annotations

import collections
import errno
import functools
import hashlib
import hmac
import os
import pathlib
import re
import secrets
import stat
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from ..backend.llvm import jit_engine
from ..core import monitoring
from ..core.config import config
from . import compile_helper
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
# the same counts for the runtime's own code (compile_library), kept apart from the programs'
library_stats: collections.Counter[str] = collections.Counter()
LIBRARY_FOLDER = "library"  # the subfolder of the cache folder compile_library uses


def _base_dir() -> pathlib.Path:
    folder = config.tracejit_cache_dir or config.jax_compilation_cache_dir
    if folder:
        return pathlib.Path(folder)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "tracejit"


def cache_dir() -> pathlib.Path | None:
    """The cache folder, or None when the persistent cache is off."""
    on = config.tracejit_persistent_cache and config.jax_enable_compilation_cache
    return _base_dir() if on else None


def library_dir() -> pathlib.Path | None:
    """The folder of the runtime's own code (compile_library), or None when that cache is off."""
    return _base_dir() / LIBRARY_FOLDER if config.tracejit_library_cache else None


def key(ir_text: str, *extra: str) -> str:
    """The entry name for `ir_text` compiled by this llvmlite/LLVM for this host CPU (and
    whatever else `extra` says the code depends on)."""
    cpu, features = jit_engine.host_cpu()
    digest = hashlib.sha256()
    for part in (str(FORMAT), llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                 cpu, features, *extra, ir_text):
        digest.update(part.encode())
        digest.update(b"\0")  # so no two part lists hash the same text
    return digest.hexdigest()


def compile_ir(ir_text: str, tiered: bool = False, unoptimised: bool = False
               ) -> tuple[str | None, jit_engine.Code, bool]:
    """Parse, verify and optimise at O3, and generate machine code, loading it from the cache
    when that holds a valid entry for `ir_text`. Returns the optimised module's text as O3 left
    it (the same whether compiled or loaded; code generation rewrites the module the engine
    holds), the code, and whether the code is final. The text is parsed only if someone asks
    to read it (as_text): parsing and verifying it again took ~1 ms of every first call.
    `tiered`: a module the cache does not hold is generated at O0 (not final, not stored:
    `finish` makes and stores its final code) from O3's optimised IR where that computes O3's
    bits (jit_engine.fast_codegen_exact); with `unoptimised` too, from its IR barely optimised
    (jit_engine.optimize_first_tier; its optimised text is then None until `finish`) where
    jit_engine.unoptimised_exact says that does."""
    folder = cache_dir()
    _first_use(folder)
    if folder is None:
        return _compile(lambda: ir_text, folder, key(ir_text), jit_engine.optimize, stats,
                        tiered=tiered, unoptimised=unoptimised)
    # JAX's persistent-cache events: a request per program, then a hit (with the time it took
    # to load) or a miss (fired as the new entry is written, as JAX does)
    monitoring.record_event(monitoring.CACHE_REQUEST_EVENT)
    hits, misses, start = stats["hits"], stats["misses"], time.monotonic()
    out = _compile(lambda: ir_text, folder, key(ir_text), jit_engine.optimize, stats,
                   tiered=tiered, unoptimised=unoptimised)
    if stats["hits"] > hits:
        monitoring.record_event(monitoring.CACHE_HIT_EVENT)
        monitoring.record_event_duration_secs(monitoring.CACHE_RETRIEVAL_EVENT,
                                              time.monotonic() - start)
    elif stats["misses"] > misses:
        monitoring.record_event(monitoring.CACHE_MISS_EVENT)
    return out


def finish(ir_text: str, optimised_ir: str | None) -> tuple[str, jit_engine.Code]:
    """(optimised IR, final code) of a module that compile_ir(tiered=True) generated at O0:
    O3's code generation of its optimised IR (not optimised again; optimised now where that
    first tier had skipped O3's optimisation: `optimised_ir` None), stored in the cache under
    `ir_text`'s key, as compile_ir would have stored it: in the cache folder in effect when
    compile_ir ran (none if none was), not the one in effect now. The cache holds final code
    only. Where `tracejit_compile_helper` is on and the helper runs, it does that optimisation
    and the code generation (compile_helper.py: the same text and object code, without holding
    llvmlite's lock here); else this thread does."""
    with _tiered_lock:
        folder = _tiered_folders.pop(ir_text, None)
    secret = _secret(folder) if folder is not None else None
    helper = config.tracejit_compile_helper
    obj = None
    if optimised_ir is None:
        made = compile_helper.optimised_code(ir_text, jit_engine.inlined_lines(ir_text),
                                             jit_engine.codegen_target()) if helper else None
        optimised_ir, obj = made if made is not None else (optimised_text(ir_text), None)
    if obj is None and helper:
        obj = compile_helper.object_code(optimised_ir, jit_engine.codegen_target())
    if obj is not None:
        code = jit_engine.load_object(obj)
    else:
        code, obj = jit_engine.load(jit_engine.parse(optimised_ir), ir_text=optimised_ir)
    if secret is not None and obj is not None:
        name = key(ir_text)
        _store(folder / f"{name}.o", name, secret, optimised_ir.encode(), obj, stats)
    return optimised_ir, code


def optimised_text(ir_text: str) -> str:
    """The text of `ir_text`'s module as O3 leaves it (`jit_engine.optimize`), as compile_ir
    returns it for a module it optimised."""
    return str(jit_engine.optimize(jit_engine.parse(ir_text), jit_engine.inlined_lines(ir_text)))


# the IR text of a module compile_ir generated at O0 with the cache on -> that cache's folder,
# until `finish` stores its final code there (a program dropped with the cache on is finished
# too: native.py's _orphan)
_tiered_folders: dict[str, pathlib.Path] = {}
_tiered_lock = threading.Lock()

_used: list[bool] = []  # (once per process: whether the cache is in use, as JAX reports it)


def _first_use(folder: pathlib.Path | None) -> None:
    if not _used:
        _used.append(True)
        monitoring.record_event(monitoring.TASK_DISABLED_CACHE_EVENT if folder is None else
                                monitoring.TASK_USING_CACHE_EVENT)


def compile_library(routine: str, ir_text: Callable[[], str],
                    speed_level: int) -> jit_engine.Code:
    """The machine code of the runtime's module `routine` (what jit_engine.compile_library runs
    once the runtime is imported), loaded from the library cache when that holds a valid entry,
    else compiled from `ir_text()` (see jit_engine.optimize_library) and stored. The entry's
    name stands for the IR without it: the routine's name (one name, one builder) and the
    sources that build it (source_digest), with what key() adds."""
    folder = library_dir()
    # ("names": the entry holds the names it defines, not its IR; see _compile)
    name = (key("", "library", "names", str(speed_level), routine, source_digest()) if folder
            else "")
    return _compile(ir_text, folder, name,
                    lambda module, _: jit_engine.optimize_library(module, speed_level),
                    library_stats, library=True)[1]


_PACKAGE = pathlib.Path(__file__).resolve().parent.parent  # (tracejit/)
# how long a source must have been left alone before its listing may stand for its contents:
# far more than a tick of any file system's clock (a write within the tick of the one before
# may leave the change time as it was)
_SETTLED_NS = 2 * 10**9
# the records of source_digest: hits (the listing stood for the contents), misses (contents
# read), stores, errors (as `stats`)
source_stats: collections.Counter[str] = collections.Counter()


@functools.cache
def source_digest(root: pathlib.Path = _PACKAGE) -> str:
    """What the runtime's own IR is a function of, short of building it: the path and contents
    of every Python source of the tracejit package under `root`, and the versions of NumPy and
    Python the builders ran on. An edit anywhere in the package names new entries (the library
    is compiled again, once per machine). Contents, not modification times: an edit that keeps
    a file's size and time (within one tick of the clock, or with the time put back), a copy
    that keeps the times (`cp -p`, an archive) or a reinstall of other code would otherwise
    load the old sources' code. Reading them (268 files, 3 MB) took ~5.3 ms of CPU, in the first
    program that loads a library (backend_start's thread has it only where the program leaves
    it time), so the library folder keeps a record of the last digest of `root` with the
    listing it was made from (`_listing`: each source's size, modification and change times,
    inode and device), which stands for the contents while the listing is the same (~1 ms):
    see digest_sources."""
    return digest_sources(root, library_dir())


def digest_sources(root: pathlib.Path, folder: pathlib.Path | None,
                   settled_ns: int = _SETTLED_NS) -> str:
    """source_digest of `root`, with the record kept in `folder` (None: no record). A record
    stands for the contents because no call sets a file's change time: every write, rename,
    `utime` or copy gives the file a new one (or a new inode), so sources with the recorded
    times, inodes and sizes have the recorded contents -- unless one was written again within
    the tick of the clock its time was taken in. As git does with its index, a listing is
    recorded only once every source has been left alone `settled_ns` (a file written just
    before is read each time until then), and a file system that keeps no change times (0) is
    read each time. The record is authenticated like an entry, under its own name (one per
    `root`, replaced when the listing changes)."""
    sources = _python_sources(root)
    listing, settled = _listing(root, sources, settled_ns)
    secret = _secret(folder, True, warn=False) if folder is not None and folder.is_dir() else None
    if secret is None or listing is None:
        return _contents_digest(root, sources)
    name = "sources-" + hashlib.sha256(str(root).encode()).hexdigest()
    path = folder / f"{name}.digest"
    entry = _load(path, name, secret, source_stats)
    if entry is not None:
        recorded, _, digest = entry[0].partition("\n")
        if recorded == listing and re.fullmatch("[0-9a-f]{64}", digest):
            source_stats["hits"] += 1
            return digest
    source_stats["misses"] += 1
    digest = _contents_digest(root, sources)
    if settled:
        _store(path, name, secret, f"{listing}\n{digest}".encode(), b"", source_stats)
    return digest


def _python_sources(root: pathlib.Path) -> list[str]:
    """The paths of the .py files under `root` (not in __pycache__), sorted."""
    sources = []
    folders = [str(root)]
    while folders:
        with os.scandir(folders.pop()) as listing:
            for item in listing:
                if item.name.endswith(".py"):
                    if item.is_file():
                        sources.append(item.path)
                elif item.name != "__pycache__" and item.is_dir(follow_symlinks=False):
                    folders.append(item.path)
    sources.sort()  # (a listing's order is the file system's)
    return sources


def _listing(root: pathlib.Path, sources: list[str], settled_ns: int) -> tuple[str | None, bool]:
    """(the sha256 of the sources' listing: the versions source_digest hashes, `root`, and each
    file's path, size, modification and change times, inode and device; whether every file
    was last changed `settled_ns` ago or more). None where a file's change time is 0."""
    digest = hashlib.sha256(f"{np.__version__}\0{sys.version}\0{root}".encode())
    newest = 0
    for path in sources:
        info = os.stat(path)
        if info.st_ctime_ns <= 0:
            return None, False
        newest = max(newest, info.st_ctime_ns, info.st_mtime_ns)
        digest.update(f"\0{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}"
                      f"\0{info.st_ino}\0{info.st_dev}".encode())
    return digest.hexdigest(), newest <= time.time_ns() - settled_ns


def _contents_digest(root: pathlib.Path, sources: list[str]) -> str:
    digest = hashlib.sha256(f"{np.__version__}\0{sys.version}".encode())
    start = len(str(root))
    for path in sources:
        with open(path, "rb") as f:
            text = f.read()
        # (the path and length first: no two lists of files hash the same bytes)
        digest.update(f"\0{path[start:]}\0{len(text)}\0".encode())
        digest.update(text)
    return digest.hexdigest()


def _compile(ir_text: Callable[[], str], folder: pathlib.Path | None, name: str, optimise,
             counts: collections.Counter, library: bool = False, tiered: bool = False,
             unoptimised: bool = False) -> tuple[str | None, jit_engine.Code, bool]:
    """(optimised IR, code, final) of the module `ir_text()`: loaded from `folder`'s entry
    `name` when it holds a valid one (`ir_text` is not called), else parsed, optimised by
    `optimise(module, lines of its IR)` and compiled, and stored there (with `tiered`, see
    compile_ir). A `library` entry holds, in the place of the optimised IR (which nobody reads
    back: a library has no as_text), the names of the functions it defines for others, one a
    line, which is all a hit needs of it (_checked_library; compile_library returns the code
    alone): reading them from the IR's text was 0.01-1.1 ms a routine (the GEMM's is 228 KB),
    besides reading and authenticating the text."""
    secret = _secret(folder, library) if folder is not None else None
    path = folder / f"{name}.o" if secret is not None else None
    entry = _load(path, name, secret, counts) if path is not None else None
    if entry is not None:
        optimised_ir, obj = entry
        checked = _checked_library if library else _checked_module
        module = checked(path, optimised_ir, obj, counts)
        if module is not None:
            # (the engine takes `module`)
            code, _ = jit_engine.load(module, cached_object=obj, ir_text=optimised_ir,
                                      library=library)
            counts["hits"] += 1
            _touch(path)
            return optimised_ir, code, True
    text = ir_text()
    if tiered and unoptimised and jit_engine.unoptimised_exact(text):
        optimised_ir = stored_ir = None  # (fast: `finish` optimises and stores it)
        module = jit_engine.optimize_first_tier(jit_engine.parse(text))
        code, obj = jit_engine.load(module, ir_text=text, library=library, fast=True)
        fast = True
    else:
        module = optimise(jit_engine.parse(text), jit_engine.inlined_lines(text))
        optimised_ir = str(module)
        stored_ir = "\n".join(_exported(module, optimised_ir)) if library else optimised_ir
        fast = tiered and jit_engine.fast_codegen_exact(optimised_ir)
        code, obj = jit_engine.load(module, ir_text=optimised_ir, library=library, fast=fast)
    if fast and path is not None:  # (where `finish` stores the final code)
        with _tiered_lock:
            _tiered_folders[text] = folder
    if path is not None:
        counts["misses"] += 1
        if obj is not None and not fast:
            _store(path, name, secret, stored_ir.encode(), obj, counts)
    return optimised_ir, code, not fast


_LOCAL = (llvm.Linkage.internal, llvm.Linkage.private)


def _exported(module: llvm.ModuleRef, optimised_ir: str | None = None) -> list[str]:
    """The functions `module` defines for other modules to call; read from its printed text
    `optimised_ir` where the caller has it and the text allows (exported_functions)."""
    names = exported_functions(optimised_ir) if optimised_ir is not None else None
    if names is None:
        names = [f.name for f in module.functions
                 if not f.is_declaration and f.linkage not in _LOCAL]
    return names


def _checked_module(path: pathlib.Path, optimised_ir: str, obj: bytes,
                    counts: collections.Counter) -> llvm.ModuleRef | None:
    """The entry's IR parsed, if it parses and its object code passes object_code.check (which
    needs the IR: every function the module defines for others to call must be in the object;
    internal ones are local symbols, or inlined away); else None, the entry deleted."""
    try:
        module = jit_engine.parse(optimised_ir)
        check(obj, _exported(module))
    except (RuntimeError, BadObject):
        counts["errors"] += 1
        _discard(path)
        return None
    return module


# a definition in LLVM's printed IR: its linkage and other keywords, then its name (quoted when
# it has other characters than these, with \XX escapes) right before its parameters
_DEFINE = re.compile(r'^define ([^@\n]*)@("[^"\n]*"|[-\w$.]+)\(', re.MULTILINE)
_LOCAL_WORDS = {"internal", "private"}


def exported_functions(ir_text: str) -> list[str] | None:
    """The functions LLVM's printed IR `ir_text` defines for other modules to call (not internal
    or private), read from the text; None where a name is quoted (it may hold escapes)."""
    found = _DEFINE.findall(ir_text)
    if any(name.startswith('"') for _, name in found):
        return None
    return [name for words, name in found if not _LOCAL_WORDS.intersection(words.split())]


def _checked_library(path: pathlib.Path, names: str, obj: bytes,
                     counts: collections.Counter) -> llvm.ModuleRef | None:
    """_checked_module for a library entry, which holds no IR (~0.4-1 ms a routine to parse, in
    the first program calling it) but the `names` of the functions it defines for others, one
    a line (_compile); the engine is given an empty module, for which the MCJIT object cache's
    hook hands over the entry's object code (no library module calls the support routines or
    slow paths that `load` links by a module's declarations)."""
    try:
        check(obj, names.split("\n") if names else [])
    except BadObject:
        counts["errors"] += 1
        _discard(path)
        return None
    return jit_engine.empty_module()


# --- the folder and its key ------------------------------------------------------------------

class UnsafeCacheFolder(Exception):
    """The cache folder (or its key) is not safe to load code from; the message says how."""


# (folder, whether its parent is checked too) -> its key; None: not usable
_secrets: dict[tuple[pathlib.Path, bool], bytes | None] = {}
_secrets_lock = threading.Lock()
_warned: set[str] = set()  # (an unsafe folder turns off both caches: one warning says so)


def _secret(folder: pathlib.Path, subfolder: bool = False, warn: bool = True) -> bytes | None:
    """The folder's key after checking the folder (and with `subfolder`, its parent), once per
    folder and process; None, with one warning, when the folder is not safe or usable (the
    persistent cache is then off). Without `warn`, None and nothing said (nor remembered: the
    next call with `warn` checks again, and says why)."""
    with _secrets_lock:
        if (folder, subfolder) not in _secrets:
            try:
                if subfolder:  # (whoever may write the parent may replace the subfolder)
                    _check_folder(folder.parent)
                _check_folder(folder)
                _secrets[folder, subfolder] = _folder_key(folder)
            except (UnsafeCacheFolder, OSError) as err:
                if not warn:
                    return None
                _secrets[folder, subfolder] = None
                if str(err) not in _warned:
                    _warned.add(str(err))
                    warnings.warn(f"tracejit's persistent code cache is off for this process: "
                                  f"{err}", RuntimeWarning, stacklevel=2)
        return _secrets[folder, subfolder]


def reset() -> None:
    """Forget what this process learnt of cache folders (JAX's compilation_cache.reset_cache):
    each is checked again at its next use, a refused one warns again, and whether the cache is
    in use is reported again. The entries themselves stay."""
    with _secrets_lock:
        _secrets.clear()
        _warned.clear()
    _used.clear()


def _check_folder(folder: pathlib.Path) -> None:
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


def _load(path: pathlib.Path, name: str, secret: bytes,
          counts: collections.Counter) -> tuple[str, bytes] | None:
    try:
        data = _read_own_file(path, _MAX_ENTRY_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, _Rejected):
        counts["errors"] += 1
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
    counts["errors"] += 1
    _discard(path)
    return None


def _discard(path: pathlib.Path) -> None:
    """Delete a rejected entry (the name only: a link goes, not what it points to)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _store(path: pathlib.Path, name: str, secret: bytes, ir: bytes, obj: bytes,
           counts: collections.Counter) -> None:
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
        counts["errors"] += 1
        return
    counts["stores"] += 1
    _bound(path.parent, len(entry), config.tracejit_cache_max_bytes, counts)


# folder -> (its entries' bytes at this process's last scan of it plus its stores since, those
# stores' bytes): a store scans the folder only when that view passes the bound or the stores
# since reach an eighth of it (other processes' entries are seen at the next scan). A scan on
# every store made filling a cache quadratic: the test suite's thousands of entries, ~170 s.
_seen_bytes: dict[str, tuple[int, int]] = {}
_seen_lock = threading.Lock()


def _bound(folder: pathlib.Path, added: int, max_bytes: int,
           counts: collections.Counter) -> None:
    """After a store of `added` bytes into `folder`: evict (_evict) where it may be due."""
    with _seen_lock:
        seen = _seen_bytes.get(str(folder))
        if seen is not None:
            total, since = seen[0] + added, seen[1] + added
            if total <= max_bytes and since < max_bytes // 8:
                _seen_bytes[str(folder)] = (total, since)
                return
    total = _evict(folder, max_bytes, counts)
    with _seen_lock:
        _seen_bytes[str(folder)] = (total, 0)


def _touch(path: pathlib.Path) -> None:
    """Mark an entry used (its modification time orders eviction; access times are often not
    kept)."""
    try:
        os.utime(path, follow_symlinks=False)
    except OSError:
        pass


def _evict(folder: pathlib.Path, max_bytes: int, counts: collections.Counter) -> int:
    """Delete the least recently used entries until the folder's entries fit in `max_bytes`;
    returns the bytes of those left."""
    entries = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if item.name.endswith(".o") and not item.name.startswith("."):
                    info = item.stat(follow_symlinks=False)
                    entries.append((info.st_mtime_ns, info.st_size, item.path))
    except OSError:
        return max_bytes  # (unreadable now: the next store scans again)
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.unlink(entry)
            counts["evictions"] += 1
        except OSError:
            pass
        total -= size
    return total


jit_engine.set_library_compiler(compile_library)
