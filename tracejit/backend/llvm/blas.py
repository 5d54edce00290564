"""BLAS entry points for generated code: the Fortran s/d/c/zgemm that SciPy exports as capsules
(`scipy.linalg.cython_blas.__pyx_capi__`), and the thread count of each call. Generated code
calls them by symbol names that the JIT binds to addresses in this process, so the IR (and the
on-disk cache key made from it) does not change with where the libraries happen to be loaded."""
from __future__ import annotations

import _imp
import builtins
import contextlib
import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import sys
import threading

import numpy as np
from llvmlite import ir

from ...core.config import config
from ...core.imports import imports_in_flight
from .types import I32, I64

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@functools.cache
def scipy_extension(name: str):
    """SciPy's extension module `scipy.linalg.<name>` (cython_blas, cython_lapack) without
    running `scipy/linalg/__init__.py`, which imports most of SciPy (~0.2 s of a first call;
    loading the extension and its OpenBLAS takes ~0.01 s), nor `scipy/__init__.py` (~15 ms of
    CPU: its test runner imports subprocess, its version checks compile regexes), which the
    extension's initialisation would import for Cython's shared utility module (see
    _utility_without_scipy). Where scipy.linalg is imported already, or the file is not where
    SciPy's wheels put it, this is a plain import. A load that starts SciPy's OpenBLAS ends
    the threads it started (_stop_idle_blas_threads)."""
    full = f"scipy.linalg.{name}"
    scipy_spec = None if "scipy.linalg" in sys.modules else importlib.util.find_spec("scipy")
    top = scipy_spec.submodule_search_locations[0] \
        if scipy_spec is not None and scipy_spec.submodule_search_locations else None
    path = _extension_path(os.path.join(top, "linalg"), name) if top else None
    before, mapped = _threads(), _openblas_files()
    if path is None or full in sys.modules:  # (a plain import)
        import scipy.linalg.cython_blas
        import scipy.linalg.cython_lapack  # noqa: F401
        module = sys.modules[full]
    else:
        with _utility_without_scipy(top):
            module = _load_extension(full, path)
    after = _threads()
    # (only where this load mapped an OpenBLAS and threads appeared with it: one loaded before
    # is another library's too, and its pool may be running that library's call)
    if before is not None and after is not None and after - before and mapped is not None \
            and _openblas_files() - mapped:
        _stop_idle_blas_threads(module)
    return module


def _openblas_files() -> set[str] | None:
    """The OpenBLAS libraries mapped into this process (Linux), or None where not known.
    (NumPy's wheel brings one of its own: libscipy_openblas64_ in numpy.libs.)"""
    try:
        with open("/proc/self/maps") as maps:
            return {line.split(None, 5)[-1].strip() for line in maps if "openblas" in line.lower()}
    except OSError:
        return None


def _threads() -> set[str] | None:
    """The ids of this process's threads (Linux), or None where they are not known."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _stop_idle_blas_threads(module) -> None:
    """After a load that started OpenBLAS (its threads appeared with it): one thread for its
    calls, and its thread pool ended, whose threads spin ~0.1 s after they start (~20-35 ms of
    CPU each, taking a core from the first product's run on a machine of two; our calls state
    their thread count, mostly 1, so that pool sat idle). Setting a count starts the pool
    again (as after a fork, whose handler calls the same function): the thread routine sets
    it only where a call wants another count than OpenBLAS has (_threads_module)."""
    lib = ctypes.CDLL(module.__file__)
    set_fn = _openblas_function("set_num_threads", [ctypes.c_int], None, lib)
    shutdown = getattr(lib, "blas_thread_shutdown_", None)
    if set_fn is not None and shutdown is not None:
        shutdown.argtypes, shutdown.restype = [], ctypes.c_int
        set_fn(1)
        shutdown()


def _extension_path(folder: str, name: str) -> str | None:
    paths = [os.path.join(folder, name + suffix)
             for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    return next((p for p in paths if os.path.exists(p)), None)


def _load_extension(full: str, path: str):
    had = full in sys.modules
    spec = importlib.util.spec_from_file_location(full, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        # (Cython's initialisation enters it in sys.modules, early: out again, after an error
        # too, so that a later import of scipy.linalg imports it as usual -- the same module
        # object -- and sets the attribute)
        if not had:
            sys.modules.pop(full, None)
    return module


_UTILITY = "scipy._cyutility"


@contextlib.contextmanager
def _utility_without_scipy(top: str):
    """While SciPy itself is not imported: Cython's shared utility module `scipy._cyutility`,
    loaded from its file, for the extensions' initialisation, which imports it by name
    (PyImport_ImportModule: `__import__` then sys.modules), and `__import__` would import its
    package `scipy` first. For this thread and this load, `__import__` hands it the module
    instead; no `scipy` enters sys.modules (a bare stand-in package once did, and another
    thread's `import scipy`, which takes what sys.modules holds without waiting for a lock,
    got it). The utility module leaves sys.modules after (a later import of SciPy imports it
    as usual: the same module object). Under the import lock, so that other threads' imports
    wait for the load; and only while no import is under way in any thread (one of SciPy
    could otherwise wait for that lock while the extension waited for SciPy): else, and where
    SciPy has no such module, SciPy is imported as usual."""
    _imp.acquire_lock()
    path = _extension_path(top, "_cyutility")
    if path is None or "scipy" in sys.modules or imports_in_flight():
        _imp.release_lock()
        yield
        return
    had = _UTILITY in sys.modules
    try:
        utility = sys.modules.get(_UTILITY) or _load_extension(_UTILITY, path)
        sys.modules[_UTILITY] = utility
        original, owner, active = builtins.__import__, threading.get_ident(), [True]

        def load_only_utility(name, globals=None, locals=None, fromlist=(), level=0):
            # (PyImport_ImportModule reads the module from sys.modules: what this returns in
            # place of the package is not looked at)
            if name == _UTILITY and level == 0 and active and threading.get_ident() == owner:
                return utility
            return original(name, globals, locals, fromlist, level)

        builtins.__import__ = load_only_utility
        try:
            yield
        finally:
            active.clear()  # (inert, should another thread have wrapped it meanwhile)
            if builtins.__import__ is load_only_utility:
                builtins.__import__ = original
    finally:
        if not had:
            sys.modules.pop(_UTILITY, None)
        _imp.release_lock()


def capsule_address(module, name: str) -> int:
    """The address of the C function a Cython module exports as capsule `name`."""
    capsule = module.__pyx_capi__[name]
    return _get_pointer(capsule, _get_name(capsule))


@functools.cache
def _address(name: str) -> int:
    return capsule_address(scipy_extension("cython_blas"), name)


def gemm_symbol_name(dtype: np.dtype, routine: str = "gemm") -> str:
    """BLAS's name of ?gemm / ?gemv for `dtype` (sgemm, dgemm, cgemm, zgemm)."""
    return {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
            np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[np.dtype(dtype)] + routine


@functools.cache
def gemm_symbol(dtype: np.dtype, routine: str = "gemm") -> str:
    """The name generated code calls ?gemm (or ?gemv: routine="gemv") by, bound to SciPy's
    function for this process."""
    import llvmlite.binding as llvm
    name = gemm_symbol_name(dtype, routine)
    symbol = f"tracejit_scipy_{name}"
    llvm.add_symbol(symbol, _address(name))
    return symbol


# --- whether cutting a product changes its bits ----------------------------------------------
# A product cut into row or column tiles (linalg.py) gives every output element one tile's sum.
# With OpenBLAS's AVX-512 kernels for float32/float64 (SkylakeX and its successors, what it
# picks on AVX-512 cores) that sum is the one a single call makes, so a product may run as one
# call or as tiles as suits the threads free (the same bits either way). Its Haswell kernels
# (what this environment's OPENBLAS_CORETYPE pins) and its complex kernels sum otherwise for
# some shapes and not others (hundreds of elements of a 64^3 sgemm; a 1024x512x256 cgemm, not
# a 160^3 one), which no small probe can rule out: only the kernels known to agree are trusted,
# after a probe confirms it in this process.
SPLIT_EXACT_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")
_PROBE = 160  # (rows and columns cut at 80 and 48: tile edges on multiples of 16, as linalg's)


@functools.cache
def splits_agree(dtype: np.dtype) -> bool:
    """Whether this process's ?gemm gives the same bits for a product computed in one call
    and cut into calls over its output's rows or columns (one BLAS thread each, as tiles)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or openblas_core() not in SPLIT_EXACT_CORES:
        return False
    gemm = _fortran_gemm(dtype)
    n = _PROBE

    def draw(seed):  # (inexact values of mixed signs: every sum rounds)
        x = np.sin(np.arange(n * n, dtype=np.float64) * 0.7 + seed).reshape(n, n)
        return np.asfortranarray(x.astype(dtype))
    a, b = draw(0), draw(1)
    api = openblas_threads_api()
    threads = api[1]()
    if threads != 1:  # (setting a count starts OpenBLAS's thread pool: only where it changes)
        api[0](1)
    try:
        whole = np.zeros((n, n), dtype, order="F")
        gemm(a, b, whole, 0, n, 0, n)
        cut = np.zeros((n, n), dtype, order="F")
        for lo, hi in ((0, 80), (80, n)):      # rows of C: rows of A
            gemm(a, b, cut, lo, hi, 0, n)
        rows = whole.tobytes() == cut.tobytes()
        cut[:] = 0
        for lo, hi in ((0, 48), (48, n)):      # columns of C: columns of B
            gemm(a, b, cut, 0, n, lo, hi)
        return rows and whole.tobytes() == cut.tobytes()
    finally:
        if threads != 1:
            api[0](threads)


@functools.cache
def openblas_core() -> str | None:
    """The kernel family SciPy's OpenBLAS runs here ("SkylakeX", "Haswell", ...), or None
    when its BLAS is not OpenBLAS."""
    fn = _openblas_function("get_corename", [], ctypes.c_char_p)
    return fn().decode() if fn is not None else None


def _openblas_function(stem: str, argtypes: list, restype, lib: ctypes.CDLL | None = None):
    """OpenBLAS's `stem` function (as SciPy's build or a plain one names it) behind SciPy's
    cython_blas (or the extension `lib`), as a ctypes function, or None. Looked up through the
    extension's own handle, which searches the libraries it links (NumPy's OpenBLAS is another
    library)."""
    if lib is None:
        lib = ctypes.CDLL(scipy_extension("cython_blas").__file__)
    for prefix in ("scipy_openblas", "openblas"):
        for suffix in ("", "64_"):
            fn = getattr(lib, f"{prefix}_{stem}{suffix}", None)
            if fn is not None:
                fn.argtypes, fn.restype = argtypes, restype
                return fn
    return None


def _fortran_gemm(dtype: np.dtype):
    """gemm(a, b, c, r0, r1, c0, c1): c[r0:r1, c0:c1] = a[r0:r1] @ b[:, c0:c1] by this
    process's Fortran ?gemm (column-major arrays, one call)."""
    real = ctypes.c_float if dtype in (np.float32, np.complex64) else ctypes.c_double
    scalar = real * (2 if dtype.kind == "c" else 1)
    ptr = ctypes.c_void_p
    fn = ctypes.CFUNCTYPE(None, *[ptr] * 13)(_address(gemm_symbol_name(dtype)))
    one, zero = scalar(1), scalar(0)
    trans = ctypes.c_char(b"N")

    def at(x, r, c):
        return ptr(x.ctypes.data + (r + c * x.shape[0]) * x.itemsize)

    def gemm(a, b, c, r0, r1, c0, c1):
        m, n, k = (ctypes.c_int(v) for v in (r1 - r0, c1 - c0, a.shape[1]))
        lda, ldb, ldc = (ctypes.c_int(x.shape[0]) for x in (a, b, c))
        fn(*[ctypes.addressof(v) for v in (trans, trans, m, n, k, one)], at(a, r0, 0),
           ctypes.addressof(lda), at(b, 0, c0), ctypes.addressof(ldb), ctypes.addressof(zero),
           at(c, r0, c0), ctypes.addressof(ldc))
    return gemm


# --- how many threads each BLAS call gets ----------------------------------------------------
# OpenBLAS on its own threads every product above a tiny size, and its worker threads stall
# when a core is busy: a 128x784x512 sgemm on 2 threads took a median 8-24 ms against 1.0-1.3
# ms on one (a 2-core machine under load; the best 2-thread runs were no faster than 1 thread).
# So every call states its thread count: one thread until each thread gets WORK_PER_THREAD of
# work, about 11 ms of single-core sgemm, long enough that a scheduler delay of a few ms on a
# woken thread costs less than the second core saves (1024^3 sgemm: 22 ms on one core).

WORK_PER_THREAD = 1 << 29
# work of one multiply-add, relative to float32's: SIMD lanes per register and real
# multiply-adds per complex one
_COST = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.complex64): 4,
         np.dtype(np.complex128): 8}
_SET_FN, _GET_FN, _MAX, _PER_THREAD = ("tracejit_blas_set_fn", "tracejit_blas_get_fn",
                                       "tracejit_blas_max_threads",
                                       "tracejit_blas_work_per_thread")
THREADS_SYMBOL = "tracejit_blas_threads"
POOL_BUSY_SYMBOL = "tracejit_pool_busy"  # thread_pool's flag, bound when the pool is made


def gemm_work(dtype: np.dtype, m: int, n: int, k: int) -> int:
    """The work of one m x k by k x n product in float32 multiply-add units."""
    return m * n * k * _COST[np.dtype(dtype)]


def threads_for(work: int) -> int:
    """The thread count a BLAS call of `work` gets (what the native routine computes)."""
    return max(1, min(work // WORK_PER_THREAD, max_threads()))


def max_threads() -> int:
    """`tracejit_num_threads` ($TRACEJIT_NUM_THREADS), or `default_threads()`."""
    return _thread_cap(config.read("tracejit_num_threads"))


# what MPI launchers set to the number of processes they started on this host: MPICH's and
# Intel MPI's Hydra, Open MPI, MVAPICH2
_LOCAL_PROCESSES_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                         "MV2_COMM_WORLD_LOCAL_SIZE")


def default_threads(environ=os.environ, usable: int | None = None,
                    online: int | None = None) -> int:
    """The thread count when `tracejit_num_threads` is unset: the CPUs this process may run on
    (`usable`, its affinity) — shared among the processes an MPI launcher started on this host
    (each its share, at least 1), as they would otherwise oversubscribe the cores. A launcher
    that bound each process to its own CPUs (affinity below the `online` CPUs) shared them
    already."""
    if usable is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    if online is None:
        online = os.cpu_count() or usable
    local = next((environ[v] for v in _LOCAL_PROCESSES_VARS if environ.get(v)), None)
    if local is None or usable < online:
        return max(1, usable)
    try:
        processes = int(local)
    except ValueError:
        return max(1, usable)
    return max(1, usable // max(1, processes))


def _thread_cap(value) -> int:
    if value is None:
        return default_threads()
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n != float(value):
        raise ValueError(f"tracejit_num_threads must be a positive integer, got {value!r}; set "
                         "TRACEJIT_NUM_THREADS or config.update('tracejit_num_threads', n)")
    return n


@functools.cache
def openblas_threads_api() -> tuple | None:
    """(set, get) of the thread count of the OpenBLAS behind SciPy's cython_blas, as ctypes
    functions; None when SciPy's BLAS is not OpenBLAS (`_openblas_function`)."""
    set_fn = _openblas_function("set_num_threads", [ctypes.c_int], None)
    get_fn = _openblas_function("get_num_threads", [], ctypes.c_int)
    return (set_fn, get_fn) if set_fn is not None and get_fn is not None else None


def _threads_module() -> ir.Module:
    """`void tracejit_blas_threads(i64 work)`: set OpenBLAS's thread count for a call of that
    work, from globals Python fills (the set function may be null: then it does nothing), where
    OpenBLAS's count (its get function) is another: setting it starts OpenBLAS's thread pool
    when that is not running (_stop_idle_blas_threads)."""
    mod = ir.Module(name="tracejit_blas_threads")
    set_ty = ir.FunctionType(ir.VoidType(), [I32]).as_pointer()
    set_fn = ir.GlobalVariable(mod, set_ty, _SET_FN)
    set_fn.initializer = ir.Constant(set_ty, None)
    get_ty = ir.FunctionType(I32, []).as_pointer()
    get_fn = ir.GlobalVariable(mod, get_ty, _GET_FN)
    get_fn.initializer = ir.Constant(get_ty, None)
    limits = []
    for name, value in ((_MAX, 1), (_PER_THREAD, WORK_PER_THREAD)):
        g = ir.GlobalVariable(mod, I64, name)
        g.initializer = ir.Constant(I64, value)
        limits.append(g)
    # set while our thread pool runs a kernel (thread_pool.py): its threads hold the cores
    pool_busy = ir.GlobalVariable(mod, I32, POOL_BUSY_SYMBOL)
    pool_busy.linkage = "external"
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64]), name=THREADS_SYMBOL)
    entry, count, call, done = (fn.append_basic_block(n)
                                for n in ("entry", "count", "call", "done"))
    b = ir.IRBuilder(entry)
    target = b.load(set_fn)
    b.cbranch(b.icmp_unsigned("==", target, ir.Constant(set_ty, None)), done, count)
    b.position_at_end(count)
    n = b.udiv(fn.args[0], b.load(limits[1]))
    n = b.select(b.icmp_unsigned(">", n, b.load(limits[0])), b.load(limits[0]), n)
    n = b.select(b.icmp_unsigned("<", n, ir.Constant(I64, 1)), ir.Constant(I64, 1), n)
    busy = b.load_atomic(pool_busy, "monotonic", 4)
    n = b.trunc(b.select(b.icmp_unsigned("!=", busy, ir.Constant(I32, 0)),
                         ir.Constant(I64, 1), n), I32)
    b.cbranch(b.icmp_signed("==", b.call(b.load(get_fn), []), n), done, call)
    b.position_at_end(call)
    b.call(target, [n])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return mod


@functools.cache
def _threads_code():
    """The routine's machine code, kept for the process, with its globals filled in."""
    import llvmlite.binding as llvm

    from . import jit_engine, thread_pool
    thread_pool.symbol()  # (binds the pool's busy flag the routine reads)
    code = jit_engine.compile_library(THREADS_SYMBOL, _threads_module)  # (once per machine)
    api = openblas_threads_api()
    if api is not None:  # (the get function first: the routine calls it once set is set)
        for name, function in ((_GET_FN, api[1]), (_SET_FN, api[0])):
            ctypes.c_void_p.from_address(code.global_address(name)).value = \
                ctypes.cast(function, ctypes.c_void_p).value
    llvm.add_symbol(THREADS_SYMBOL, code.address(THREADS_SYMBOL))
    _write_max_threads(code, config.read("tracejit_num_threads"))
    config.watch("tracejit_num_threads", lambda value: _write_max_threads(code, value))
    return code


def _write_max_threads(code, value) -> None:
    ctypes.c_int64.from_address(code.global_address(_MAX)).value = _thread_cap(value)


def threads_symbol() -> str:
    """The name generated code calls, `void(i64 work)`, before each BLAS call."""
    _threads_code()
    return THREADS_SYMBOL
