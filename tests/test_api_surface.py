"""JAX's top-level names that tracejit lacked (against JAX 0.12's dir(jax), recorded here; JAX
0.10, installed, the oracle for behaviour where it has the name): each exists and does what
JAX's does — ds slices, smap maps, fwd_and_bwd compiles bwd once, dlpack shares memory where
JAX's does, segment reductions, user contexts key jit's cache, jax.ad's with_refs markers."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tests.in_devices import run_check
from tests.jax_oracle import assert_matches

jax = pytest.importorskip("jax")
jnp = jax.numpy
LIBS = [(tracejit, tnp), (jax, jnp)]

# from JAX 0.12's dir(jax): the names this file covers (the options and jax.image /
# custom_batching are other files')
JAX_012_NAMES = [
    "CompilerEffortLevel", "Inline", "ad", "copy_to_host_async", "dlpack", "ds", "export",
    "fwd_and_bwd",
    "get_abstract_mesh", "get_mesh", "host_count", "host_id", "host_ids", "interpreters", "lib",
    "live_arrays", "make_user_context", "memory", "monitoring", "ops", "print_environment_info",
    "profiler", "scipy", "smap", "use_abstract_mesh"]
LAZY_MODULES = ["dlpack", "export", "ffi", "interpreters", "lib", "monitoring", "ops",
                "profiler", "scipy"]


def test_top_level_names_exist():
    names = dir(tracejit)
    missing = [n for n in JAX_012_NAMES if n not in names or not hasattr(tracejit, n)]
    assert not missing
    for n in JAX_012_NAMES:  # (every one of them JAX 0.10 has too, but five)
        if n not in ("CompilerEffortLevel", "Inline", "get_abstract_mesh", "get_mesh",
                     "use_abstract_mesh"):
            assert hasattr(jax, n), n


def test_modules_load_on_first_use():
    """`import tracejit` imports none of the modules it hands out on first use (its import
    time stays), and each is then the module `import jax.X` finds."""
    code = ("import sys, tracejit\n"
            f"names = {LAZY_MODULES!r}\n"
            "print(sorted(n for n in names if 'tracejit.' + n in sys.modules))\n"
            "print(all(getattr(tracejit, n) is sys.modules['tracejit.' + n] for n in names))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=300)
    assert done.stdout.split("\n")[:2] == ["[]", "True"]
    with pytest.raises(AttributeError, match="no attribute 'not_a_jax_name'"):
        tracejit.not_a_jax_name  # noqa: B018


# --- jax.ds ------------------------------------------------------------------------------------

DS_CASES = [  # (index builder given ds and a traced-or-not start i) on x = arange(10)
    lambda ds, x, i: x[ds(2, 3)],
    lambda ds, x, i: x[ds(None)],
    lambda ds, x, i: x[ds(4)],
    lambda ds, x, i: x[ds(i, 3)],            # traced start: dynamic_slice, clamped
    lambda ds, x, i: x[ds(i, 3, 2)],         # traced start, strided: a gather
    lambda ds, x, i: x.at[ds(i, 3)].set(0.0),
    lambda ds, x, i: x.at[ds(i, 3, 2)].add(1.0),
    lambda ds, x, i: x.reshape(2, 5)[:, ds(i, 2)],
    lambda ds, x, i: x.reshape(2, 5)[ds(i // 8, 1), np.array([0, 4])],
]


@pytest.mark.parametrize("case", range(len(DS_CASES)))
@pytest.mark.parametrize("start", [2, 7, -2])
def test_ds_indexing(case, start):
    """x[jax.ds(...)] and x.at[jax.ds(...)] as JAX 0.10, under jit (native) with a traced
    start and eagerly with a Python int, in and out of bounds."""
    f = DS_CASES[case]
    x = np.arange(10, dtype=np.float32)
    expected = jax.jit(lambda x, i: f(jax.ds, x, i))(jnp.asarray(x), start)
    got = tracejit.jit(lambda x, i: f(tracejit.ds, x, i))(tnp.asarray(x), start)
    assert_matches(got, expected)
    if case < 3:  # (a static start: eager, same as JAX's)
        assert_matches(f(tracejit.ds, tnp.asarray(x), start),
                       f(jax.ds, jnp.asarray(x), start))


@pytest.mark.parametrize("index,expected", [((1, 4, 2), [1.0, 3.0]), ((8, 4), [8.0, 9.0])])
def test_static_ds_is_the_builtin_slice(index, expected):
    """A static jax.ds(i, j, s) reads as i:i+j:s, as JAX 0.12 and its docs say (JAX 0.10 took
    j elements from a clamped start: [1, 3, 5, 7] and [6, 7, 8, 9] here), eager and jitted."""
    x = tnp.arange(10.0)
    np.testing.assert_array_equal(np.asarray(x[tracejit.ds(*index)]), expected)
    np.testing.assert_array_equal(
        np.asarray(tracejit.jit(lambda x: x[tracejit.ds(*index)])(x)), expected)


def test_ds_values_and_transforms():
    assert repr(tracejit.ds(2, 3)) == repr(jax.ds(2, 3)) == "Slice(start=2, size=3, stride=1)"
    assert tracejit.ds(None) == jax.ds(None) == slice(None)
    assert tracejit.ds(1, 4, 2) == tracejit.ds(1, 4, 2)
    with pytest.raises(ValueError, match="Non-static stride"):
        tracejit.ds(0, 2, np.float32(1.0))
    x = np.arange(10, dtype=np.float32)
    g = tracejit.grad(lambda x, i: (x[tracejit.ds(i, 3)] ** 2).sum())(tnp.asarray(x), 4)
    np.testing.assert_array_equal(np.asarray(g), np.where((x >= 4) & (x < 7), 2 * x, 0))
    v = tracejit.vmap(lambda i: tnp.asarray(x)[tracejit.ds(i, 2)])(tnp.arange(3))
    np.testing.assert_array_equal(np.asarray(v), [[0, 1], [1, 2], [2, 3]])
    # a pytree: a static start and size are structure, a traced start a leaf (as JAX's)
    assert tracejit.tree_util.tree_leaves(tracejit.ds(2, 3)) == []
    assert len(tracejit.tree_util.tree_leaves(tracejit.ds(tnp.int32(2), 3))) == 1


def test_ds_indexes_refs():
    """A Ref read and written through jax.ds at a traced start, under jit, as JAX 0.10."""
    got = []
    for lib, np_ in LIBS:
        def f(x, i, lib=lib):
            r = lib.new_ref(x)
            r[lib.ds(i, 2)] = r[lib.ds(i, 2)] * 10
            return lib.freeze(r)
        got.append(lib.jit(f)(np_.arange(6.0), 3))
    assert_matches(*got)


# --- smap --------------------------------------------------------------------------------------

def _smap_check():
    jax_ = tracejit
    mesh = jax_.make_mesh((4,), ("x",), axis_types=(jax_.sharding.AxisType.Auto,))
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    with jax_.set_mesh(mesh):
        f = jax_.smap(lambda a: a * 2 + jax_.lax.psum(a.sum(), "x"), in_axes=0, out_axes=0,
                      axis_name="x")
        out = np.asarray(f(x))
        blocks = x.reshape(4, 2, 4)
        np.testing.assert_array_equal(out, (blocks * 2 + x.sum()).reshape(8, 4))
        g = jax_.jit(jax_.smap(lambda a, b: a.sum(0, keepdims=True) + b, in_axes=(1, None),
                               out_axes=1, axis_name="x"))
        np.testing.assert_array_equal(np.asarray(g(x, 1.0)), x.sum(0, keepdims=True) + 1)
        h = jax_.smap(axis_name="x", in_axes=0, out_axes=None)(
            lambda a: jax_.lax.psum(a, "x"))
        np.testing.assert_array_equal(np.asarray(h(x)), x.reshape(4, 2, 4).sum(0))
    print("smap ok")


def test_smap_over_devices():
    """smap (shard_map over one axis) on 4 CPU devices: its per-shard results and psum are
    those of the blocks (the same program JAX 0.10 runs to the same numbers)."""
    run_check(__file__, "smap")


@pytest.mark.parametrize("lib,_", LIBS)
def test_smap_argument_errors_are_jaxs(lib, _):
    for kwargs, match in [
            (dict(in_axes=[0], out_axes=0, axis_name="x"), "in_axes must be an int, None"),
            (dict(in_axes=(0, "a"), out_axes=0, axis_name="x"), "in_axes must be an int"),
            (dict(in_axes=0, out_axes="a", axis_name="x"), "out_axes must be an int"),
            (dict(in_axes=0, out_axes=0, axis_name=("x",)), "axis_name should be a `str`")]:
        with pytest.raises(TypeError, match=match):
            lib.smap(lambda a: a, **kwargs)


# --- fwd_and_bwd and jax.ad --------------------------------------------------------------------

@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
@pytest.mark.parametrize("has_aux", [False, True])
def test_fwd_and_bwd(argnums, has_aux):
    """Same primal outputs and cotangents as JAX 0.10; bwd traces once over the iterations
    (the residuals pass between the two jitted functions as a pytree of arrays)."""
    def f(np_, x, W):
        y = np_.tanh(x @ W)
        return (y, {"sum": y.sum()}) if has_aux else y
    rng = np.random.default_rng(0)
    x, W = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    ct = np.ones((3, 2), np.float32)
    results = []
    for lib, np_ in LIBS:
        fwd, bwd = lib.fwd_and_bwd(lambda x, W: f(np_, x, W), argnums=argnums, has_aux=has_aux)
        traces = []
        lib.monitoring.register_event_duration_secs_listener(
            lambda e, d, **k: traces.append(k.get("fun_name")) if e.endswith("trace_duration")
            else None)
        try:
            for _ in range(3):
                out = fwd(np_.asarray(x), np_.asarray(W))
                cts = bwd(out[1], np_.asarray(ct))
        finally:
            lib.monitoring.clear_event_listeners()
        assert traces.count("bwd") == 1, (lib.__name__, traces)
        results.append((out[0], out[2]["sum"] if has_aux else (), cts))
    assert_matches(results[0], results[1], rtol=2e-6)


def test_vjp_function_is_a_pytree_and_with_refs():
    """vjp's function passes into jit as JAX's does, and its with_refs takes jax.ad's
    markers and Refs (gradient added into the Ref; DidntWant / GradRef in the results)."""
    got = []
    for lib, np_ in LIBS:
        out, f_vjp = lib.vjp(lambda x, y: np_.sin(x) * y, 1.0, 2.0)
        via_jit = lib.jit(lambda f, c: f(c))(f_vjp, 1.0)
        skipped = f_vjp.with_refs(lib.ad.DontWant(), lib.ad.GradValue())(1.0)
        r = lib.new_ref(np_.zeros(()))
        into_ref = f_vjp.with_refs(r, lib.ad.GradValue())(1.0)
        got.append((via_jit, skipped, into_ref, r[...]))
    (o_jit, o_skip, o_ref, o_r), (j_jit, j_skip, j_ref, j_r) = got
    assert_matches(o_jit, j_jit, rtol=1e-6)
    assert repr(o_skip[0]) == repr(j_skip[0]) == "DidntWant()"
    assert repr(o_ref[0]) == repr(j_ref[0]) == "GradRef()"
    assert_matches(o_skip[1], j_skip[1], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(o_r), np.asarray(j_r), rtol=1e-6)
    assert tracejit.tree_util.tree_leaves(o_ref) == tracejit.tree_util.tree_leaves(o_ref[1:])
    _, f_vjp = tracejit.vjp(lambda x, y: x * y, 1.0, 2.0)
    with pytest.raises(ValueError, match="tree structure"):
        f_vjp.with_refs(tracejit.ad.GradValue())


# --- dlpack ------------------------------------------------------------------------------------

def _buffer(n: int, offset: int) -> np.ndarray:
    """n float32 starting `offset` bytes past a multiple of 64."""
    raw = np.zeros(n * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + n * 4].view(np.float32)


@pytest.mark.parametrize("offset", [0, 4])
def test_from_dlpack_shares_where_jax_does(offset):
    """copy=None shares a 64-byte-aligned NumPy buffer and copies an unaligned one, as JAX's
    CPU client; copy=True copies (JAX's docs; its CPU client shares an aligned one)."""
    for copy in (None, True):
        shared = []
        for lib, _ in LIBS:
            a = _buffer(1000, offset)
            a[:] = np.arange(1000)
            x = lib.dlpack.from_dlpack(a, copy=copy)
            a[0] = 77
            shared.append(float(x[0]) == 77)
        if copy is None:
            assert shared[0] == shared[1] == (offset == 0)
        else:
            assert shared[0] is False
    a = _buffer(10, 4)
    x = tracejit.dlpack.from_dlpack(a, copy=False)  # (any address: tracejit needs no alignment)
    a[3] = 5
    assert float(x[3]) == 5


def test_dlpack_dtypes_and_errors_are_jaxs():
    for dt in [np.float32, np.float64, np.int8, np.uint64, np.bool_, np.complex64, np.float16,
               jnp.bfloat16, np.dtype("V4"), np.dtype("U3"), np.object_]:
        assert tracejit.dlpack.is_supported_dtype(dt) == jax.dlpack.is_supported_dtype(dt), dt
    for lib, np_ in LIBS:
        with pytest.raises(TypeError, match="Expected a string or dtype-like object"):
            lib.dlpack.is_supported_dtype(None)
        with pytest.raises(TypeError, match="__dlpack__"):
            lib.dlpack.from_dlpack([1, 2])
    a = np.arange(6, dtype=np.float64).reshape(2, 3).T  # (canonicalized and made contiguous)
    assert_matches(tracejit.dlpack.from_dlpack(a), jax.dlpack.from_dlpack(a))
    y = tnp.arange(5.0)  # and back: NumPy reads the Array's memory without a copy
    z = np.from_dlpack(y)
    assert np.shares_memory(z, np.asarray(y)) and not z.flags.writeable
    assert y.__dlpack_device__() == jnp.arange(5.0).__dlpack_device__()


# --- live_arrays, copy_to_host_async, host_*, meshes, enums ------------------------------------

def test_live_arrays():
    for lib, np_ in LIBS:
        x, y = np_.arange(3.0), np_.ones((2, 2))
        live = lib.live_arrays()
        assert any(a is x for a in live) and any(a is y for a in live)
        del live
        x.delete()
        assert not any(a is x for a in lib.live_arrays())
        before = len(lib.live_arrays())
        del y
        assert len(lib.live_arrays()) == before - 1


def test_copy_to_host_async():
    for lib, np_ in LIBS:
        tree = {"a": np_.arange(3.0), "b": [1.5, np.ones(2)]}
        out = lib.copy_to_host_async(tree)
        assert out is tree


@pytest.mark.parametrize("name,new", [("host_count", "process_count"),
                                      ("host_id", "process_index"),
                                      ("host_ids", "process_indices")])
def test_host_names_warn_and_answer(name, new):
    for lib, _ in LIBS:
        with pytest.warns(UserWarning, match="renamed"):
            got = getattr(lib, name)()
        assert got == getattr(lib, new)()


def test_mesh_getters_are_the_sharding_modules():
    assert tracejit.get_abstract_mesh is tracejit.sharding.get_abstract_mesh
    assert tracejit.use_abstract_mesh is tracejit.sharding.use_abstract_mesh
    assert tracejit.get_mesh().empty and tracejit.get_abstract_mesh().empty
    assert jax.sharding.get_abstract_mesh().empty


def test_enums_are_jax_012s():
    """Members and values as recorded from JAX 0.12 (which JAX 0.10 lacks)."""
    assert [(m.name, m.value) for m in tracejit.Inline] == [
        ("JAX_EARLY", "jax_early"), ("JAX_LATE", "jax_late"), ("XLA_EARLY", "xla_early"),
        ("XLA_LATE", "xla_late"), ("AUTO", "auto")]
    assert [(m.name, m.value) for m in tracejit.CompilerEffortLevel] == [
        ("UNKNOWN", 0), ("O0", 9), ("O1", 19), ("O2", 29), ("O3", 39)]
    assert tracejit.CompilerEffortLevel("O2") is tracejit.CompilerEffortLevel(29)
    with pytest.raises(ValueError):
        tracejit.CompilerEffortLevel("O4")
    assert [m.name for m in tracejit.memory.Space] == [m.name for m in jax.memory.Space]
    assert repr(tracejit.memory.Space.Host) == repr(jax.memory.Space.Host)


def test_memory_kinds_are_jaxs():
    """A CPU device's memories print, compare and answer as JAX's; device_put to each kind
    records it (all are this process's memory: nothing is copied); an unknown kind is JAX's
    error."""
    for lib, np_ in LIBS:
        d = lib.devices()[0]
        got = (list(map(repr, d.addressable_memories())), str(d.default_memory()),
               d.memory("pinned_host") == d.addressable_memories()[1],
               d.memory("unpinned_host").addressable_by_devices() == [d],
               [m.kind for m in d.addressable_memories()], d.memory("device").platform)
        assert got == (["CPU_DEVICE_0", "PINNED_HOST_1", "UNPINNED_HOST_2"],
                       "CpuDeviceMemory(id=0, process_index=0, client=cpu)", True, True,
                       ["device", "pinned_host", "unpinned_host"], "cpu"), lib.__name__
        for kind in ("device", "pinned_host"):
            x = lib.device_put(np_.ones(3), lib.sharding.SingleDeviceSharding(d,
                                                                               memory_kind=kind))
            assert x.sharding.memory_kind == kind
        with pytest.raises(lib.errors.JaxRuntimeError, match="Got memory kind: foo"):
            d.memory("foo")


@pytest.mark.parametrize("inline,call_eqn", [
    (tracejit.Inline.JAX_EARLY, False), (tracejit.Inline.JAX_LATE, True),
    (tracejit.Inline.AUTO, True), (tracejit.Inline.XLA_LATE, True), (False, True)])
def test_jit_inline_enum(inline, call_eqn):
    """As JAX 0.12 (recorded): JAX_EARLY traces the inner function in place, the other members
    keep its call equation; either way the compiled result is the same."""
    g = tracejit.jit(lambda x: x * 2, inline=inline)
    jaxpr = tracejit.make_jaxpr(lambda x: g(x) + 1)(1.0)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert (names[0] in ("pjit", "jit")) == call_eqn and len(names) == 2
    assert float(tracejit.jit(lambda x: g(x) + 1)(2.0)) == 5.0


def test_make_user_context_keys_jits_cache():
    """A jitted function traces again under another value of a user context, and finds its
    earlier trace when the value comes back (JAX 0.10's counts)."""
    counts = []
    for lib, _ in LIBS:
        traced = []

        @lib.jit
        def f(x):
            traced.append(1)
            return x * 2

        ctx = lib.make_user_context(default_value=None)
        assert ctx.value is None
        f(1.0)
        with ctx(1):
            assert ctx.value == 1
            f(1.0)
        with ctx(2):
            f(1.0)
        with ctx(1):
            f(1.0)
        f(1.0)
        assert ctx.value is None
        counts.append(len(traced))
    assert counts[0] == counts[1] == 3


def test_print_environment_info(capsys):
    keys = ["jax", "jaxlib", "numpy", "python", "device info", "process_count", "platform"]
    info = tracejit.print_environment_info(return_string=True)
    theirs = jax.print_environment_info(return_string=True)
    assert [line.split(":")[0] for line in info.splitlines()][:7] == keys == \
        [line.split(":")[0] for line in theirs.splitlines()][:7]
    assert tracejit.print_environment_info() is None
    assert capsys.readouterr().out.strip() == info


def test_submodule_attributes():
    assert tracejit.lib.__version__ == tracejit.__version__
    assert tracejit.scipy.special.erf is not None
    assert tracejit.interpreters.batching is not None


# --- jax.ops ------------------------------------------------------------------------------------

SEGMENT_IDS = [np.array([0, 0, 1, 3, 3, 3]), np.array([2, -1, 0, 5, 1, 1])]


@pytest.mark.parametrize("op", ["segment_sum", "segment_prod", "segment_max", "segment_min"])
@pytest.mark.parametrize("ids", range(len(SEGMENT_IDS)))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("extra", [dict(num_segments=4), dict(), dict(num_segments=5,
                                                                       bucket_size=2)])
def test_segment_ops(op, ids, dtype, extra):
    """As JAX 0.10: empty segments hold the identity, ids out of range are dropped; jitted
    (native, num_segments static) too."""
    if op == "segment_max" and "bucket_size" in extra and dtype == np.int32:
        extra = dict(num_segments=5)
    data = (np.arange(12).reshape(6, 2) % 5 - 1).astype(dtype)
    seg = SEGMENT_IDS[ids]
    expected = getattr(jax.ops, op)(jnp.asarray(data), jnp.asarray(seg), **extra)
    assert_matches(getattr(tracejit.ops, op)(tnp.asarray(data), tnp.asarray(seg), **extra),
                   expected)
    if "num_segments" in extra:
        jitted = tracejit.jit(lambda d, s: getattr(tracejit.ops, op)(d, s, **extra))
        assert_matches(jitted(tnp.asarray(data), tnp.asarray(seg)), expected)


if __name__ == "__main__":
    with warnings.catch_warnings():
        {"smap": _smap_check}[sys.argv[1]]()


def test_python_scalar_conversions_refuse_as_jax():
    """float/int/complex of an array with dimensions, and __index__ of anything but an integer
    scalar, raise JAX's TypeError with JAX's words (NumPy's named 0-dimensional arrays)."""
    import jax.numpy as jnp
    from jax_oracle import same_error
    for value in ([1.0], [[2]], [1 + 1j]):
        for convert in (float, int, complex):
            ours = same_error(lambda: convert(tracejit.numpy.asarray(value)),
                              lambda: convert(jnp.asarray(value)))
            assert str(ours) == f"Only scalar arrays can be converted to Python scalars; " \
                f"got arr.ndim={np.ndim(value)}"
    for value in ([1], 1.0, True):
        ours = same_error(lambda: tracejit.numpy.asarray(value).__index__(),
                          lambda: jnp.asarray(value).__index__())
        assert str(ours) == "Only integer scalar arrays can be converted to a scalar index."
    assert [float(tracejit.numpy.asarray(2.5)), int(tracejit.numpy.asarray(3)),
            tracejit.numpy.asarray(4).__index__()] == [2.5, 3, 4]
