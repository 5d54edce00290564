"""jax.ffi: real handlers (tests/data/ffi_handlers.cc, compiled here with g++ against XLA's FFI
headers) run under real JAX and under tracejit from the same shared library; results must be
equal bit for bit, and errors of the same class with the same text. Eager, jit (native code
calls the handler directly, backend/llvm/ffi_call.py) and the reference interpreter."""
import ctypes
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import tracejit
from tests.in_devices import run_check
from tracejit.lax import ffi_api
from tracejit.runtime import tiering

jax = pytest.importorskip("jax")

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["RmsNorm", "AllAttrs", "SumProd", "Fail", "Count", "InPlace", "BcastAdd",
           "ParallelSquare", "Context", "Stream", "AsyncFill", "Scratch", "UserDataHandler",
           "Fill", "AliasInfo"]
BACKENDS = ["native", "interpret"]


def compile_handlers(folder: str) -> ctypes.CDLL:
    gxx = shutil.which("g++")
    assert gxx is not None, "these tests compile FFI handlers: they need g++ (not skipped)"
    out = os.path.join(folder, "libffi_handlers.so")
    subprocess.run([gxx, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-pthread",
                    "-I", tracejit.ffi.include_dir(), os.path.join(HERE, "data",
                                                                    "ffi_handlers.cc"),
                    "-o", out], check=True, timeout=600)
    return ctypes.cdll.LoadLibrary(out)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """The test handlers, compiled once and registered under the same names in both."""
    so = compile_handlers(str(tmp_path_factory.mktemp("ffi")))
    for f in ("counter_value", "instantiate_count", "scales_deleted_count"):
        getattr(so, f).restype = ctypes.c_int64
    for f in ("scale_type_id", "scale_type_info"):
        getattr(so, f).restype = ctypes.c_void_p
    for name in TARGETS:
        for lib_ in (jax, tracejit):
            lib_.ffi.register_ffi_target(name, lib_.ffi.pycapsule(getattr(so, name)),
                                         platform="cpu")
    # a bundle: state made at instantiation, its type registered first (JAX fills the id in,
    # tracejit takes the id it finds)
    for lib_ in (jax, tracejit):
        lib_.ffi.register_ffi_type("ffi_test_scale", {
            "type_id": lib_.ffi.pycapsule(so.scale_type_id()),
            "type_info": lib_.ffi.pycapsule(so.scale_type_info())}, platform="cpu")
        lib_.ffi.register_ffi_target("Scale", {
            "instantiate": lib_.ffi.pycapsule(so.ScaleInstantiateHandler),
            "execute": lib_.ffi.pycapsule(so.ScaleExecuteHandler)}, platform="cpu")
    return so


@pytest.fixture(params=BACKENDS)
def backend(request):
    tracejit.config.update("tracejit_backend", request.param)
    return request.param


def outcome(fn, lib_):
    """What `fn(lib_)` gives: its results as (dtype, shape, bytes), or the error raised."""
    try:
        out = fn(lib_)
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return ("raised", type(e).__name__, str(e))
    leaves = list(_leaves(out))
    return (type(out).__name__ if isinstance(out, (list, tuple)) else "array",
            [(np.asarray(x).dtype.str, np.shape(x), np.asarray(x).tobytes()) for x in leaves])


def _leaves(x):
    if isinstance(x, (list, tuple)):
        for item in x:
            yield from _leaves(item)
    else:
        yield x


def same(fn, key=lambda o: o):
    """Run `fn` with JAX and with tracejit; the outcomes must be identical (or their `key`)."""
    theirs, ours = outcome(fn, jax), outcome(fn, tracejit)
    assert key(ours) == key(theirs)
    return ours


def S(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


def rms_norm(lib_, x, eps=1e-5, vmap_method="broadcast_all"):
    return lib_.ffi.ffi_call("RmsNorm", lib_.ShapeDtypeStruct(x.shape, x.dtype),
                             vmap_method=vmap_method)(x, eps=np.float32(eps))


# --- the tutorial's rms_norm ------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5), (1, 1)])
def test_rms_norm(lib, backend, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = same(lambda j: rms_norm(j, x))
    assert got[0] != "raised"
    same(lambda j: j.jit(lambda a: rms_norm(j, a))(x))
    same(lambda j: j.jit(lambda a: rms_norm(j, a * 2.0) + 1.0)(x))  # fused with its neighbours
    # NumPy as a third opinion on the values (the handler's own float32 arithmetic)
    y = np.asarray(tracejit.jit(lambda a: rms_norm(tracejit, a))(x))
    ref = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-5)


def test_rms_norm_scalar_input_is_the_handlers_error(lib, backend):
    same(lambda j: rms_norm(j, np.float32(2.0)))
    same(lambda j: j.jit(lambda a: rms_norm(j, a))(np.float32(2.0)))


# --- attributes -------------------------------------------------------------------------------

ATTRS = {"b": True, "i8": np.int8(-3), "i16": np.int16(-300), "i32": np.int32(7),
         "i64": -(2**40), "u8": np.uint8(200), "u16": np.uint16(60000),
         "u32": np.uint32(4000000000), "u64": np.uint64(2**62 + 5), "f32": np.float32(1.5),
         "f64": 0.1, "s": "héllo", "ai32": np.array([1, 2, 3], np.int32),
         "ai64": np.array([4, 5], np.int64), "af32": np.array([0.5], np.float32),
         "af64": np.array([0.25, 0.125]), "d": {"x": 9, "name": "nm", "y": np.float32(2.5)}}

# changes to ATTRS: accepted ones, and XLA's or JAX's refusals. (No two values of one name
# compare equal: JAX caches an eager call's program by its params, where True == 1 and
# np.float16(1) == np.complex64(1), so the second of two such calls gets the first's program.)
ATTR_VARIANTS = [
    {}, {"ai32": np.array(3, np.int32)}, {"ai32": np.array([[1, 2], [3, 4]], np.int32)},
    {"ai32": np.array([], np.int32)}, {"b": np.bool_(False)}, {"s": b"by\x00tes"}, {"s": ""},
    {"f64": float("nan")}, {"f32": np.float32(-np.inf)}, {"i64": 2**63 - 1},
    {"d": {"name": "", "x": -1, "y": np.float32(0)}},
    {"ai32": np.array([1, 2], np.uint32)}, {"ai32": np.array([True])},
    {"ai32": np.array([1.0], np.float16)}, {"b": 2}, {"i32": 5}, {"f32": np.float16(1)},
    {"f32": np.dtype(np.float32)}, {"extra": 1}, {"s": ("a", "b")}, {"s": ["a"]},
    {"s": object()}, {"i64": 2**63}, {"f32": np.complex64(2j)},
    {"d": {"x": 9, "name": "nm", "y": np.float32(2.5), "z": {"q": 1}}},
]


@pytest.mark.parametrize("change", ATTR_VARIANTS, ids=lambda c: ",".join(c) or "all")
def test_every_attribute_kind(lib, x64, backend, change):
    kwargs = dict(ATTRS, **change)
    # (a dict in a dict: JAX's TypeError says so in words that differ between eager and jit)
    key = (lambda o: o[:2]) if change.get("d", {}).get("z") else (lambda o: o)
    same(lambda j: j.ffi.ffi_call("AllAttrs", S((40,), np.float64))(**kwargs), key)
    same(lambda j: j.jit(lambda: j.ffi.ffi_call("AllAttrs", S((40,), np.float64))(**kwargs))(),
         key)


def test_missing_attribute(lib):
    kwargs = dict(ATTRS)
    del kwargs["b"]
    got = same(lambda j: j.ffi.ffi_call("AllAttrs", S((40,), np.float64))(**kwargs))
    assert got[:2] == ("raised", "JaxRuntimeError") and "Wrong number of attributes" in got[2]


# --- several results, any-typed buffers -------------------------------------------------------

@pytest.mark.parametrize("container", [list, tuple])
def test_several_results(lib, backend, container):
    a = np.linspace(-2, 3, 12, dtype=np.float32).reshape(3, 4)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(j, a, b):
        return j.ffi.ffi_call("SumProd", container([S((3, 4), np.float32),
                                                    S((3, 4), np.float32),
                                                    S((4,), np.int32)]))(a, b)
    got = same(lambda j: f(j, a, b))
    assert got[0] == container.__name__
    same(lambda j: j.jit(lambda a, b: f(j, a, b))(a, b))
    same(lambda j: j.jit(lambda a, b: f(j, a, b)[1])(a, b))  # two results unused
    same(lambda j: f(j, a.astype(np.int32), b))  # the handler's own check
    same(lambda j: f(j, a, b[:2]))


def test_no_results_and_no_side_effect_is_never_called(lib, backend):
    # (no results: eagerly JAX's program is empty; under jit the call is unused and dropped —
    # the interpreter runs every equation, and the handler refuses a call with no result)
    same(lambda j: j.ffi.ffi_call("RmsNorm", [])(np.ones(3, np.float32), eps=np.float32(1)))
    if backend == "native":
        same(lambda j: j.jit(lambda x: j.ffi.ffi_call("RmsNorm", [])(x, eps=np.float32(1)))(
            np.ones(3, np.float32)))


def test_python_scalar_arguments_are_weakly_typed_buffers(lib):
    same(lambda j: j.ffi.ffi_call("SumProd", [S((), np.float32)] * 2 + [S((4,), np.int32)])(
        2.5, np.float32(1.5)))


# --- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [1, 3, 5, 9, 12, 13, 16])
def test_handler_errors(lib, backend, code):
    x = np.ones(3, np.float32)

    def f(j, x):
        return j.ffi.ffi_call("Fail", S((3,), np.float32))(x, code=np.int32(code),
                                                            why=f"failed with {code}: ∂")
    got = same(lambda j: f(j, x))
    assert got[:2] == ("raised", "JaxRuntimeError")
    same(lambda j: j.jit(lambda x: f(j, x) * 2)(x))
    # a failed program leaves nothing behind: the next call works
    same(lambda j: j.jit(lambda x: j.ffi.ffi_call("Fail", S((3,), np.float32))(
        x, code=np.int32(0), why=""))(x))


DECODE_ERRORS = [  # bad calls: the handler's decoding refuses them, in JAX's words
    lambda j: rms_norm(j, np.ones(3, np.int32)),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32))(np.ones(3, np.float32)),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32))(np.ones(3, np.float32), eps=1e-5),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.int32))(np.ones(3, np.float32),
                                                          eps=np.float32(1)),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32))(
        np.ones(3, np.float32), np.ones(3, np.float32), eps=np.float32(1)),
    lambda j: j.ffi.ffi_call("RmsNorm", [S((3,), np.float32)] * 2)(np.ones(3, np.float32),
                                                                   eps=np.float32(1)),
    lambda j: j.ffi.ffi_call("NoSuchTarget", S((3,), np.float32))(np.ones(3, np.float32)),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32), vmap_method="bad"),
    lambda j: j.ffi.ffi_call("RmsNorm", [3])(np.ones(3, np.float32)),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32))(np.ones(3, np.float32), eps=[1.0]),
    lambda j: j.ffi.ffi_call("RmsNorm", S((3,), np.float32), input_output_aliases={0: 0})(
        np.ones(3, np.int32), eps=np.float32(1)),
]


@pytest.mark.parametrize("k", range(len(DECODE_ERRORS)))
def test_bad_calls_raise_jaxs_errors(lib, backend, k):
    got = same(DECODE_ERRORS[k])
    assert got[0] == "raised"
    if "JaxRuntimeError" in got:
        same(lambda j: j.jit(lambda: DECODE_ERRORS[k](j))())


def test_no_gradient(lib):
    x = np.ones(3, np.float32)
    got = same(lambda j: j.grad(lambda a: rms_norm(j, a).sum())(x))
    assert got[:2] == ("raised", "ValueError")
    same(lambda j: j.jvp(lambda a: rms_norm(j, a), (x,), (x,)))
    same(lambda j: j.jit(j.grad(lambda a: rms_norm(j, a).sum()))(x))


# --- side effects -----------------------------------------------------------------------------

@pytest.mark.parametrize("has_side_effect", [True, False])
def test_side_effect_keeps_an_unused_call(lib, backend, has_side_effect):
    def prog(j):
        @j.jit
        def f(x):
            j.ffi.ffi_call("Count", S((1,), np.int32), has_side_effect=has_side_effect)(by=3)
            return x + 1
        before = lib.counter_value()
        f(1.0)
        f(2.0)
        return np.int64(lib.counter_value() - before)
    if backend == "interpret" and not has_side_effect:
        return  # (the interpreter runs every equation, used or not)
    got = same(prog)
    assert got[1][0][2] == np.int64(6 if has_side_effect else 0).tobytes()


def test_eager_calls_always_run(lib):
    def prog(j):
        before = lib.counter_value()
        for _ in range(3):
            j.ffi.ffi_call("Count", S((1,), np.int32))(by=2)
        return np.int64(lib.counter_value() - before)
    assert same(prog)[1][0][2] == np.int64(6).tobytes()


# --- input_output_aliases ---------------------------------------------------------------------

def test_aliased_output_starts_as_its_input(lib, backend):
    a = np.arange(4, dtype=np.float32)
    z = np.full(4, 10, np.float32)

    def call(j, a, z):
        return j.ffi.ffi_call("InPlace", S((4,), np.float32), input_output_aliases={0: 0})(a, z)
    got = same(lambda j: call(j, a, z))
    assert got[1][0][2] == np.array([10, 12, 14, 16], np.float32).tobytes()
    same(lambda j: j.jit(lambda a, z: call(j, a * 1.0, z))(a, z))
    same(lambda j: j.jit(lambda a, z: (call(j, a, z), a))(a, z))  # the input itself unchanged
    ours = tracejit.numpy.asarray(a)
    call(tracejit, ours, z)
    assert np.asarray(ours).tobytes() == a.tobytes()
    for bad in ({0: 1}, {5: 0}, {1: 0}):
        out = S((3,), np.float32) if bad == {1: 0} else S((4,), np.float32)
        same(lambda j, out=out, bad=bad: j.ffi.ffi_call("InPlace", out,
                                                        input_output_aliases=bad)(a, z))


# --- vmap -------------------------------------------------------------------------------------

VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None]


def bcast_add(j, method, x, y):
    return j.ffi.ffi_call("BcastAdd", (S(x.shape, np.float32), S((8,), np.int64)),
                          vmap_method=method)(x, y)


@pytest.mark.parametrize("method", VMAP_METHODS)
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, None)])
def test_vmap_methods(lib, x64, backend, method, in_axes):
    """The dims the handler sees (its second result) show each method's batching."""
    xs = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(4, dtype=np.float32) * 10
    args = (xs.T if in_axes[0] == 1 else xs if in_axes[0] == 0 else xs[0],
            y if in_axes[1] is None else np.stack([y, y + 1, y + 2]))

    def f(j):
        return j.vmap(lambda a, b: bcast_add(j, method, a, b)[0] if method == "expand_dims"
                      and in_axes[0] is None else bcast_add(j, method, a, b),
                      in_axes=in_axes)(*args)
    got = same(f)
    same(lambda j: j.jit(lambda: f(j))())
    if method is None:
        assert got[:2] == ("raised", "NotImplementedError")


def test_vmap_of_rms_norm_matches_the_loop(lib):
    xs = np.random.default_rng(1).standard_normal((5, 3, 4)).astype(np.float32)
    for method in ("sequential", "broadcast_all", "expand_dims", "legacy_vectorized"):
        got = tracejit.jit(tracejit.vmap(
            lambda a, m=method: rms_norm(tracejit, a, vmap_method=m)))(xs)
        loop = np.stack([np.asarray(rms_norm(tracejit, x)) for x in xs])
        assert np.asarray(got).tobytes() == loop.tobytes()
        same(lambda j, m=method: j.vmap(j.vmap(lambda a: rms_norm(j, a, vmap_method=m)))(xs))


# --- state, thread pool, context ---------------------------------------------------------------

def test_instantiate_once_per_program(lib, backend):
    # (factors of their own: an eager call's program is cached by its params, across tests)
    eager, jitted = np.float32(3 + 10 * BACKENDS.index(backend)), np.float32(4)

    def prog(j):
        before = lib.instantiate_count()
        call = j.ffi.ffi_call("Scale", S((3,), np.float32))
        outs = [call(np.ones(3, np.float32), factor=eager) for _ in range(2)]
        f = j.jit(lambda a: call(a, factor=jitted))
        outs += [f(np.arange(3, dtype=np.float32)) for _ in range(2)]
        return [*outs, np.int64(lib.instantiate_count() - before)]
    got = same(prog)
    assert got[1][-1][2] == np.int64(2).tobytes()


def test_thread_pool(lib, backend):
    x = np.linspace(-3, 3, 50, dtype=np.float32)
    same(lambda j: j.ffi.ffi_call("ParallelSquare", S(x.shape, np.float32))(x))
    same(lambda j: j.jit(lambda a: j.ffi.ffi_call("ParallelSquare", S(x.shape, np.float32))(a)
                         + 1)(x))


def test_cpu_context(lib):
    """What a CPU call has not: a stream, a device allocator, user data (JAX's Python API sets
    none) — the handler's own errors or fallbacks, in JAX's words."""
    same(lambda j: j.ffi.ffi_call("Context", S((1,), np.int32))())
    got = same(lambda j: j.ffi.ffi_call("Stream", S((1,), np.int32))())
    assert "GPU context is not available" in got[2]
    got = same(lambda j: j.ffi.ffi_call("Scratch", S((1,), np.int32))())
    assert got[1][0][2] == np.int32(0).tobytes()
    got = same(lambda j: j.ffi.ffi_call("UserDataHandler", S((1,), np.float32))())
    assert "User data with type id" in got[2]


@pytest.mark.parametrize("fail", [0, 1])
def test_asynchronous_handler(lib, backend, fail):
    """A handler returning a future (completed by its own thread): the call waits for it."""
    def call(j):
        return j.ffi.ffi_call("AsyncFill", S((5,), np.float32))(fail=np.int32(fail))
    same(call)
    same(lambda j: j.jit(lambda: call(j) + 1)())


def test_handler_inside_a_compiled_loop(lib):
    def prog(j):
        def body(c, x):
            y = rms_norm(j, x + c)
            return c + y.sum(), y
        return j.jit(lambda xs: j.lax.scan(body, np.float32(0), xs))(
            np.arange(12, dtype=np.float32).reshape(3, 4))
    same(prog)


def test_program_dropped_frees_its_state(lib):
    """A compiled program's ffi_call instance (and the state its handler made) goes with it."""
    f = tracejit.jit(lambda a: tracejit.ffi.ffi_call("Scale", S((2,), np.float32))(
        a, factor=np.float32(5)))
    assert np.asarray(f(np.ones(2, np.float32))).tolist() == [5, 5]
    tiering.wait()  # (the tiering thread holds a program while it makes its O3 code)
    alive, deleted = _stateful_instances(), lib.scales_deleted_count()
    del f
    tracejit.clear_caches()
    gc.collect()
    assert _stateful_instances() == alive - 1
    assert lib.scales_deleted_count() == deleted + 1  # (the type's deleter freed the state)


def _stateful_instances() -> int:
    return sum(isinstance(o, ffi_api.Instance) and bool(o.states) for o in gc.get_objects())


# --- registration ------------------------------------------------------------------------------

def test_registration_errors(lib):
    def P(j, f):
        return j.ffi.pycapsule(getattr(lib, f))
    same(lambda j: j.ffi.register_ffi_target("not_a_capsule", 5, platform="cpu"))
    same(lambda j: j.ffi.register_ffi_target("no_execute", {"prepare": P(j, "RmsNorm")}))
    same(lambda j: j.ffi.register_ffi_target("RmsNorm", P(j, "RmsNorm"), platform="cpu"))
    same(lambda j: j.ffi.register_ffi_target("for_gpu", P(j, "RmsNorm"), platform="gpu"))
    same(lambda j: j.ffi.register_ffi_type_id("t", P(j, "RmsNorm")))
    with pytest.raises(NotImplementedError, match="api_version=0"):
        tracejit.ffi.register_ffi_target("legacy", P(tracejit, "RmsNorm"), api_version=0)
    for name in ("ffi_lowering", "build_ffi_lowering_function"):
        with pytest.raises(NotImplementedError, match="MLIR"):
            getattr(tracejit.ffi, name)("RmsNorm")
    assert tracejit.ffi.include_dir() == jax.ffi.include_dir()
    # (abstract_token: JAX 0.12's, which this JAX lacks: tests/test_jax012_names.py)
    assert sorted(n for n in dir(jax.ffi) if not n.startswith("_")) == sorted(
        set(tracejit.ffi.__all__) - {"abstract_token"})


def test_api_table_layout():
    """Every struct's declared size (XLA_FFI_*_STRUCT_SIZE: handlers check them) as the
    installed c_api.h gives it, read by a tiny C++ program compiled against it."""
    gxx = shutil.which("g++")
    assert gxx is not None
    names = ["XLA_FFI_Api", "XLA_FFI_CallFrame", "XLA_FFI_Buffer", "XLA_FFI_Metadata",
             "XLA_FFI_Metadata_Extension", "XLA_FFI_Args", "XLA_FFI_Rets", "XLA_FFI_Attrs",
             "XLA_FFI_Api_Version"] + [f"XLA_FFI_{n}_Args" for n in ffi_api._ARGS]
    src = ("#include <cstdio>\n#include \"xla/ffi/api/c_api.h\"\nint main() {\n"
           + "".join(f'  printf("%d\\n", (int){n}_STRUCT_SIZE);\n' for n in names) + "}\n")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "sizes")
        subprocess.run([gxx, "-x", "c++", "-std=c++17", "-I", tracejit.ffi.include_dir(), "-",
                        "-o", exe], input=src, text=True, check=True, timeout=300)
        theirs = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    A = ffi_api
    ours = [A.API.struct_size, A.CALL_FRAME_SIZE, A.BUFFER_SIZE, A._size(A.Metadata, "traits"),
            A._size(A.MetadataExtension, "metadata"), A._size(A.Args, "args"),
            A._size(A.Rets, "rets"), A._size(A.Attrs, "attrs"),
            A._size(A.ApiVersion, "minor_version")] + [
        A._size(A._ARG_STRUCTS[n], A._SIZED_TO.get(n, A._ARGS[n][-1][0])) for n in A._ARGS]
    assert dict(zip(names, map(int, theirs.split()))) == dict(zip(names, ours))


def test_stages_and_calls_counted_as_in_xla(lib):
    """XLA's CPU runtime runs a bundle's instantiate stage once per program instance and
    execute once per call, never prepare/initialize; two equal calls are two calls (no CSE),
    and a call in a loop runs in every iteration even with loop-invariant operands."""
    for lib_ in (jax, tracejit):
        lib_.ffi.register_ffi_target("Stages", {
            s: lib_.ffi.pycapsule(getattr(lib, "Stages" + s.capitalize()))
            for s in ("instantiate", "prepare", "initialize", "execute")}, platform="cpu")
    lib.stage_count.restype = ctypes.c_int64

    def prog(j):
        before = [lib.stage_count(i) for i in range(4)]
        call = j.ffi.ffi_call("Stages", S((1,), np.int32))
        outs = [call(), call(), j.jit(lambda: call() + 1)(), j.jit(lambda x: (call(), call(),
                                                                                x))(1)]
        xs = np.arange(12, dtype=np.float32).reshape(4, 3)
        outs.append(j.jit(lambda c, xs: j.lax.scan(
            lambda c, x: (c + rms_norm(j, c), x), c, xs))(np.ones(3, np.float32) * 0, xs))
        outs.append(j.jit(lambda c, xs: j.lax.scan(
            lambda c, x: (c + call(), x), c, xs))(np.zeros(1, np.int32), xs))
        return [*outs, np.array([lib.stage_count(i) for i in range(4)]) - before]
    got = same(prog)
    assert np.frombuffer(got[1][-1][2], np.int64).tolist() == [5, 0, 0, 9]


def test_donated_inputs(lib, backend):
    a = np.linspace(-2, 3, 12, dtype=np.float32).reshape(3, 4)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)

    def prog(j):
        f = j.jit(lambda a, b: j.ffi.ffi_call("SumProd", [S((3, 4), np.float32)] * 2
                                              + [S((4,), np.int32)])(a, b)[:2],
                  donate_argnums=(0, 1))
        return f(j.numpy.asarray(a), j.numpy.asarray(b))
    got = same(prog)
    assert got[1][0][2] == (a + b).tobytes() and got[1][1][2] == (a * b).tobytes()


def test_output_over_an_input_goes_through_a_copy(lib):
    """Native code hands the handler its destinations; one that is an operand's buffer at run
    time (a loop's carry, a donated input) would be overwritten before the handler reads it
    again (SumProd writes `sum` before it reads its operands for `prod`): the handler writes a
    temporary, copied after."""
    a = np.linspace(-2, 3, 12, dtype=np.float32).reshape(3, 4)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = [S((3, 4), np.float32)] * 2 + [S((4,), np.int32)]

    def prog(j):
        def body(i, carry):
            total, prod = j.ffi.ffi_call("SumProd", out)(*carry)[:2]
            return total, prod
        return j.jit(lambda a, b: j.lax.fori_loop(0, 3, body, (a, b)))(a, b)
    got = same(prog)
    x, y = a, b
    for _ in range(3):
        x, y = x + y, x * y
    assert got[1][0][2] == x.tobytes() and got[1][1][2] == y.tobytes()


def test_aliased_result_is_the_operands_buffer(lib, backend):
    """With input_output_aliases the handler gets one buffer as the operand and the result, as
    in XLA (its second result says so), eagerly, under jit, in a loop that carries it (updated
    in place), donated, and under lax.map's loop."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def call(j, a):
        return j.ffi.ffi_call("AliasInfo", (S(a.shape, np.float32), S((1,), np.int32)),
                              input_output_aliases={0: 0})(a)
    got = same(lambda j: call(j, x))
    assert got[1][1][2] == np.int32(1).tobytes()
    same(lambda j: j.jit(lambda a: call(j, a))(x))
    same(lambda j: j.jit(lambda a: call(j, a * 3.0))(x))  # (a temporary dying here: no copy)
    same(lambda j: j.jit(lambda a: (call(j, a), a + 1))(x))  # (the operand read after)
    # a donated operand is the result's buffer: updated in place, no copy
    same(lambda j: j.jit(lambda a: call(j, a), donate_argnums=0)(j.numpy.asarray(x)))
    if backend == "native":
        donated = tracejit.numpy.asarray(x)
        address = donated.address
        assert tracejit.jit(lambda a: call(tracejit, a), donate_argnums=0)(
            donated)[0].address == address
    same(lambda j: j.jit(lambda a: j.lax.fori_loop(0, 4, lambda i, c: call(j, c[0]),
                                                   call(j, a)))(x))
    same(lambda j: j.jit(lambda xs: j.lax.map(lambda a: call(j, a), xs))(x))


def test_vmap_sequential_calls_per_element(lib, backend):
    """vmap_method="sequential" under jit: a loop calling the handler once per element with
    that element's operand and result buffers (several results, an aliased one, an unbatched
    operand passed whole)."""
    xs = np.random.default_rng(3).standard_normal((5, 2, 4)).astype(np.float32)
    y = np.arange(8, dtype=np.float32).reshape(2, 4)

    def f(j, a, b):
        total, prod, info = j.ffi.ffi_call("SumProd", [S((2, 4), np.float32)] * 2
                                           + [S((4,), np.int32)], vmap_method="sequential")(a, b)
        doubled, one = j.ffi.ffi_call("AliasInfo", (S((2, 4), np.float32), S((1,), np.int32)),
                                      input_output_aliases={0: 0},
                                      vmap_method="sequential")(prod)
        return total, doubled, one, info
    got = same(lambda j: j.jit(j.vmap(lambda a: f(j, a, y)))(xs))
    assert got[1][0][2] == (xs + y).tobytes()
    same(lambda j: j.jit(j.vmap(lambda a, b: f(j, a, b)))(xs, xs[::-1] * 2))


def test_handler_writing_only_its_result(lib, backend):
    """A handler that reads nothing and writes its whole result, which is the program's output,
    a temporary fused into what follows, or a scan's stacked output row by row."""
    def fill(j, v, shape=(3, 4)):
        return j.ffi.ffi_call("Fill", S(shape, np.float32))(value=np.float32(v))
    same(lambda j: j.jit(lambda: fill(j, 2.5))())
    same(lambda j: j.jit(lambda x: fill(j, 1.5) * x + fill(j, -1, ()))(np.ones((3, 4),
                                                                              np.float32)))
    same(lambda j: j.jit(lambda: j.lax.scan(lambda c, _: (c + 1, fill(j, 0.5, (4,)) + c),
                                            np.float32(0), None, length=5))())


def test_error_under_jit_is_raised_and_freed(lib):
    """A handler's error in a compiled program (in a loop too) is JAX's JaxRuntimeError with its
    message; the XLA_FFI_Error is freed, and the program works on its next call."""
    def fail(j, x, code):
        return j.ffi.ffi_call("Fail", S((3,), np.float32))(x, code=code, why="no ∂ here")

    def prog(j, code):
        return j.jit(lambda x: j.lax.scan(lambda c, _: (fail(j, c, code) + 1, c), x, None,
                                          length=3))(np.ones(3, np.float32))
    errors = len(ffi_api._errors)
    got = same(lambda j: prog(j, np.int32(9)))
    assert got[:2] == ("raised", "JaxRuntimeError") and "FAILED_PRECONDITION: no ∂ here" in got[2]
    assert len(ffi_api._errors) == errors
    f = tracejit.jit(lambda x: fail(tracejit, x, np.int32(3)))
    for _ in range(2):  # (the same program again: raises again, leaves nothing behind)
        with pytest.raises(tracejit.errors.JaxRuntimeError, match="INVALID_ARGUMENT: no ∂"):
            f(np.ones(3, np.float32))
    assert len(ffi_api._errors) == errors
    g = tracejit.jit(lambda x: fail(tracejit, x, np.int32(0)) + 1)
    assert np.asarray(g(np.ones(3, np.float32))).tolist() == [2, 2, 2]


def test_first_error_is_the_one_raised(lib, monkeypatch):
    """An error returns from the function it happens in; with equations outlined into functions
    of their own the caller carries on, and a later call may fail too: the call raises the
    first error, as XLA (which stops at it) does, and frees both."""
    from tracejit.backend.llvm import codegen
    monkeypatch.setattr(codegen, "OUTLINE_MIN_EQNS", 1)

    def fail(x, why):
        return tracejit.ffi.ffi_call("Fail", S((3,), np.float32))(x, code=np.int32(3), why=why)
    f = tracejit.jit(lambda x: fail(fail(x * 2, "first") + 1, "second") * 3)
    errors = len(ffi_api._errors)
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="INVALID_ARGUMENT: first"):
        f(np.ones(3, np.float32))
    assert len(ffi_api._errors) == errors  # (the second error freed too)


def test_context_under_jit(lib):
    """What a handler asks its execution context under jit (device ordinal, state, the thread
    pool) answers as in JAX; the context is the call's own (its frame is on the native
    stack)."""
    same(lambda j: j.jit(lambda: j.ffi.ffi_call("Context", S((1,), np.int32))())())
    got = same(lambda j: j.jit(lambda: j.ffi.ffi_call("Stream", S((1,), np.int32))())())
    assert "GPU context is not available" in got[2]


def test_disk_cache_replays_code_with_this_process_handler(lib, tmp_path):
    """A second process loads the program's object code from the on-disk cache; it calls that
    process's handler with that process's attributes (the record's address, the handler's and
    the attributes are run-time data, not in the cached code)."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import ctypes, sys
        import numpy as np
        import tracejit
        from tracejit.runtime import disk_cache
        so = ctypes.cdll.LoadLibrary({lib._name!r})
        tracejit.ffi.register_ffi_target("RmsNorm", tracejit.ffi.pycapsule(so.RmsNorm))
        eps = np.float32(sys.argv[1])
        f = tracejit.jit(lambda a: tracejit.ffi.ffi_call(
            "RmsNorm", tracejit.ShapeDtypeStruct(a.shape, a.dtype))(a, eps=eps) + 1)
        y = np.asarray(f(np.ones((2, 3), np.float32)))
        print(f"{{y.min():.5f}} {{y.max():.5f}}", dict(disk_cache.stats))
    """))
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.dirname(HERE))
    outs = [subprocess.run([sys.executable, str(script), eps], env=env, capture_output=True,
                           text=True, check=True).stdout for eps in ("1", "3")]
    assert outs[0] == "1.70711 1.70711 {'misses': 1}\n", outs[0]  # (1 + 1 / sqrt(1 + eps))
    assert outs[1] == "1.50000 1.50000 {'hits': 1}\n", outs[1]


def test_two_threads_one_program(lib):
    """Two threads calling one jitted program at once (the native call lets go of the GIL):
    each call builds its own call frame, so every result is its own input's."""
    import threading
    f = tracejit.jit(lambda a: rms_norm(tracejit, a) + tracejit.ffi.ffi_call(
        "Scale", S((64,), np.float32))(a[0], factor=np.float32(3)))
    xs = [np.random.default_rng(k).standard_normal((4, 64)).astype(np.float32)
          for k in range(2)]
    wants = [np.asarray(f(x)) for x in xs]
    bad = []

    def work(k):
        for _ in range(300):
            got = np.asarray(f(xs[k]))
            if got.tobytes() != wants[k].tobytes():
                bad.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    assert wants[0].tobytes() != wants[1].tobytes()


def test_other_attributes_same_code(lib):
    """The handler's address, the attributes and the state are run-time data: two programs that
    differ only in an attribute compile to one IR, and each gets its own value."""
    x = np.ones((2, 3), np.float32)
    f1 = tracejit.jit(lambda a: rms_norm(tracejit, a, eps=1.0))
    f2 = tracejit.jit(lambda a: rms_norm(tracejit, a, eps=3.0))
    assert np.allclose(np.asarray(f1(x)), 1 / np.sqrt(2)) and np.allclose(np.asarray(f2(x)),
                                                                           0.5)
    ir1 = f1.lower(x).compile().as_text("llvm")
    assert ir1 == f2.lower(x).compile().as_text("llvm")
    assert "tracejit_host_callback" not in ir1 and "tracejit_ffi_error" in ir1


def test_shard_map_calls_the_handler_per_device():
    run_check(__file__, "shard_map")


def _shard_map_check():
    """Under shard_map (4 devices) each device's handler call sees its own block, whatever the
    vmap_method (JAX runs the call in each device's program; there is no vmap)."""
    from tracejit.sharding import PartitionSpec as P
    with tempfile.TemporaryDirectory() as d:
        so = compile_handlers(d)
        tracejit.ffi.register_ffi_target("SumProd", tracejit.ffi.pycapsule(so.SumProd))
        a = np.linspace(-2, 3, 32, dtype=np.float32).reshape(8, 4)
        b = np.arange(32, dtype=np.float32).reshape(8, 4)
        mesh = tracejit.make_mesh((4,), ("x",))
        for method in (None, "sequential", "broadcast_all", "expand_dims"):
            def f(a, b, method=method):
                return tracejit.ffi.ffi_call("SumProd", [S((2, 4), np.float32)] * 2
                                             + [S((4,), np.int32)], vmap_method=method)(a, b)
            g = tracejit.jit(tracejit.shard_map(f, mesh=mesh, in_specs=(P("x"), P("x")),
                                                out_specs=[P("x"), P("x"), P("x")]))
            put = [tracejit.device_put(x, tracejit.NamedSharding(mesh, P("x"))) for x in (a, b)]
            total, prod, info = (np.asarray(r) for r in g(*put))
            assert total.tobytes() == (a + b).tobytes() and prod.tobytes() == (a * b).tobytes()
            # (rank, element count, bytes, dtype code of b) of each device's block
            assert info.tolist() == [2, 8, 32, 11] * 4, (method, info)
    print("shard_map ok")


if __name__ == "__main__":
    {"shard_map": _shard_map_check}[os.sys.argv[1]]()


def test_api_functions_called_through_the_table(lib):
    """The table's function pointers as C calls them: a handler registered through
    XLA_FFI_Handler_Register (as a library's static registration does), and an error's
    life (create, get its message, destroy); a too-small argument struct is refused."""
    A, c_void_p = ffi_api, ctypes.c_void_p

    def fn(name, restype=c_void_p):
        return ctypes.CFUNCTYPE(restype, c_void_p)(getattr(A.API, f"XLA_FFI_{name}"))

    name, platform = ctypes.create_string_buffer(b"ViaTheTable"), ctypes.create_string_buffer(
        b"Host")
    reg = A._ARG_STRUCTS["Handler_Register"]()
    reg.struct_size = A._size(type(reg), "traits")
    reg.name = A.ByteSpan(ctypes.addressof(name), len(name.value))
    reg.platform = A.ByteSpan(ctypes.addressof(platform), len(platform.value))
    reg.bundle = A.Bundle(None, None, None, ctypes.cast(lib.RmsNorm, c_void_p).value)
    assert fn("Handler_Register")(ctypes.addressof(reg)) is None
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    via = tracejit.ffi.ffi_call("ViaTheTable", S(x.shape, np.float32))(x, eps=np.float32(1e-5))
    assert np.asarray(via).tobytes() == np.asarray(rms_norm(tracejit, x)).tobytes()

    message = ctypes.create_string_buffer("bad ∂".encode())
    create = A._ARG_STRUCTS["Error_Create"](A._size(A._ARG_STRUCTS["Error_Create"], "errc"),
                                            None, ctypes.addressof(message), 5)
    err = fn("Error_Create")(ctypes.addressof(create))
    get = A._ARG_STRUCTS["Error_GetMessage"](32, None, err, None)
    fn("Error_GetMessage", None)(ctypes.addressof(get))
    assert ctypes.string_at(get.message).decode() == "bad ∂"
    destroy = A._ARG_STRUCTS["Error_Destroy"](24, None, err)
    fn("Error_Destroy", None)(ctypes.addressof(destroy))
    assert err not in A._errors

    create.struct_size = 8  # (older than any header: refused with XLA's words)
    err = fn("Error_Create")(ctypes.addressof(create))
    assert "Unexpected XLA_FFI_Error_Create size" in str(A.take_error(err))


def test_equal_attributes_of_other_types_are_other_calls(lib, x64):
    """True == 1 and np.float16(1) == 1.0 in Python, but the handler sees their types: an eager
    call is never run with the attributes of an earlier call that compared equal (JAX 0.10's
    cache of eager programs mixes them up; see ATTR_VARIANTS)."""
    call = tracejit.ffi.ffi_call("AllAttrs", S((40,), np.float64))
    call(**dict(ATTRS, b=True))
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="expected PRED but got S64"):
        call(**dict(ATTRS, b=1))
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="expected S64 but got U64"):
        call(**dict(ATTRS, d={"x": np.uint64(9), "name": "nm", "y": np.float32(2.5)}))


def test_threads_share_one_instantiation(lib):
    """Eager calls of one signature from several threads at once: one instantiation, every
    call sees its state."""
    from concurrent.futures import ThreadPoolExecutor
    factor = np.float32(7)
    call = tracejit.ffi.ffi_call("Scale", S((3,), np.float32))
    f = tracejit.jit(lambda a: call(a, factor=factor))
    before = lib.instantiate_count()
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda k: np.asarray(f(np.full(3, k, np.float32))), range(16)))
    assert [o.tolist() for o in outs] == [[7.0 * k] * 3 for k in range(16)]
    assert lib.instantiate_count() - before == 1


def test_custom_vjp_makes_it_differentiable(lib):
    """JAX's way to differentiate an FFI call (the tutorial's): custom_vjp around it."""
    def make(j):
        @j.custom_vjp
        def f(x):
            return rms_norm(j, x)

        def fwd(x):
            return f(x), x

        def bwd(x, ct):  # (d/dx of x * r(x), r = 1/sqrt(mean(x²) + eps), for the test only)
            r = 1.0 / j.numpy.sqrt(j.numpy.mean(x * x, axis=-1, keepdims=True) + 1e-5)
            n = x.shape[-1]
            return (ct * r - x * r ** 3 * j.numpy.sum(ct * x, axis=-1, keepdims=True) / n,)
        f.defvjp(fwd, bwd)
        return f
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    theirs = np.asarray(jax.jit(jax.grad(lambda a: make(jax)(a).sum()))(x))
    ours = np.asarray(tracejit.jit(tracejit.grad(lambda a: make(tracejit)(a).sum()))(x))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-7)  # (XLA's own fusions of
    # the NumPy-side arithmetic round differently; the handler's values are bit-equal above)
