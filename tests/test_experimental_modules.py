"""JAX module names tracejit lacked (against dir() of JAX 0.12.1's and 0.10.2's modules):
jax.experimental.shard_map / pjit / mesh_utils / compilation_cache, tree_util.default_registry,
jax.sharding's auto_axes / explicit_axes / ManualAxisType / is_single_device_sharding and
jax.profiler.register_subprocess. JAX 0.10 (installed, one CPU device here) is the oracle where
it has the name; four devices and `python -m tracejit` run in one subprocess, whose expected
values are derived (JAX 0.10 on four CPU devices gives the same)."""
import dataclasses
import importlib
import inspect
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tests.jax_oracle import assert_matches, same_error

jax = pytest.importorskip("jax")
jnp = jax.numpy
ROOT = Path(__file__).resolve().parent.parent


def _deprecated(module: str, name: str):
    """`name` read from our module and JAX's: (ours, theirs, our warning's message), checking
    that ours warns with JAX's message (once a process, as JAX's: reset here to see it)."""
    ours_mod = importlib.import_module(f"tracejit.{module}")
    theirs_mod = importlib.import_module(f"jax.{module}")
    ours_mod.__getattr__.warned.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ours = getattr(ours_mod, name)
        theirs = getattr(theirs_mod, name)
    ours_msgs = [str(w.message) for w in seen if w.category is DeprecationWarning
                 and w.filename == __file__]
    assert ours_msgs and ours_msgs[0] == theirs_mod._deprecations[name][0]
    with warnings.catch_warnings(record=True) as again:  # (once a process)
        warnings.simplefilter("always")
        assert getattr(ours_mod, name) is ours
    assert not again
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ours_mod.nope  # noqa: B018
    return ours, theirs


def test_experimental_shard_map_old_api():
    """The old signature (f, mesh, in_specs, out_specs, check_rep=True), positional, every axis
    manual; values as JAX 0.10's, eagerly, under jit and grad; check_rep off allows an
    unreplicated out_spec of P() as check_vma=False does; a non-callable is refused at once."""
    ours, theirs = _deprecated("experimental.shard_map", "shard_map")
    sig = lambda f: [(p.name, p.default, p.kind) for p in inspect.signature(f).parameters.values()]
    assert sig(ours) == sig(theirs)
    x = np.arange(8.0, dtype=np.float32)
    for lib, smap, np_ in ((tracejit, ours, tnp), (jax, theirs, jnp)):
        mesh = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("i",))
        P = lib.sharding.PartitionSpec
        body = lambda a, lib=lib: lib.lax.psum(a * a, "i")
        f = smap(body, mesh, P("i"), P())
        unchecked = smap(lambda a: a * 3, mesh, (P("i"),), P(), check_rep=False)
        xs = np_.asarray(x)
        got = (f(xs), lib.jit(f)(xs), lib.grad(lambda a, f=f: f(a).sum())(xs), unchecked(xs),
               smap(lambda a, b: a + b, mesh, (P("i"), P()), P("i"))(xs, np_.float32(1)))
        if lib is tracejit:
            ours_got = got
    for g, e in zip(ours_got, got):  # (got: JAX's, the loop's last)
        assert_matches(g, e)
    same_error(lambda: ours(3, None, None, None), lambda: theirs(3, None, None, None))


def test_pjit_as_jax_010():
    """pjit: jit's arguments positionally after in/out_shardings; under a legacy `with mesh:`
    None means replicated over it and PartitionSpecs name its axes, and the function is traced
    with it as the abstract mesh; outside one (or under set_mesh only) a PartitionSpec raises
    JAX's RuntimeError; static_argnums, donate_argnums, .lower as jit's."""
    ours, theirs = _deprecated("experimental.pjit", "pjit")
    names = lambda f: list(inspect.signature(f).parameters)
    assert names(ours) == names(theirs)
    x = np.arange(8.0, dtype=np.float32)
    results = {}
    for lib, pjit in (("ours", ours), ("theirs", theirs)):
        jx = tracejit if lib == "ours" else jax
        P = jx.sharding.PartitionSpec
        mesh = jx.sharding.Mesh(np.array(jx.devices()[:1]), ("x",))
        seen = []
        def scaled(a, n, jx=jx, seen=seen):
            seen.append(jx.sharding.get_abstract_mesh().axis_names)
            return a * n
        f = pjit(scaled, P("x"), None, static_argnums=1)
        out = {"plain": pjit(lambda a: a + 1)(x)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with mesh:
                out["mesh"] = f(x, 3)
                out["none"] = pjit(lambda a: a.sum(), out_shardings=P())(x)
                out["donated"] = pjit(lambda a: a * 2, donate_argnums=0)(jx.numpy.asarray(x))
                out["text"] = f.lower(x, 2).as_text()[:18]
        out["seen"] = seen
        out["specs"] = [str(out[k].sharding.spec) for k in ("mesh", "none", "donated")]
        out["plain_sharding"] = type(out["plain"].sharding).__name__
        with jx.sharding.set_mesh(mesh), pytest.raises(RuntimeError) as err:
            f(x, 2)
        out["error"] = str(err.value).splitlines()[0]
        with pytest.raises(RuntimeError) as err:
            pjit(lambda a: a, out_shardings=P("x"))(x)
        out["error_out"] = str(err.value).splitlines()[0]
        results[lib] = out
    ours_r, theirs_r = results["ours"], results["theirs"]
    for k in ("plain", "mesh", "none", "donated"):
        assert_matches(ours_r[k], theirs_r[k])
    for k in ("text", "seen", "specs", "plain_sharding", "error", "error_out"):
        assert ours_r[k] == theirs_r[k], (k, ours_r[k], theirs_r[k])
    same_error(lambda: ours(3), lambda: theirs(3)(1))  # (JAX refuses at the call)


def test_mesh_utils_on_one_device():
    from jax.experimental import mesh_utils as theirs

    from tracejit.experimental import mesh_utils as ours
    assert sorted(n for n in dir(theirs) if not n.startswith("_")) == \
        sorted(n for n in dir(ours) if not n.startswith("_") and n in ours.__all__)
    for shape in ((1,), [1, 1], (np.int64(1), 1.0)):
        got, exp = ours.create_device_mesh(shape), theirs.create_device_mesh(shape)
        assert got.shape == exp.shape and got.dtype == exp.dtype
        assert [d.id for d in got.flat] == [d.id for d in exp.flat]
    assert ours.create_hybrid_device_mesh((1,), (1,), process_is_granule=True).shape == \
        theirs.create_hybrid_device_mesh((1,), (1,), process_is_granule=True).shape
    for args, kw in [(((2,),), {}), (((1, "a"),), {}), (((1,), (1,)), {}),
                     (((1,), (2,)), {"process_is_granule": True})]:
        fn = "create_device_mesh" if len(args) == 1 else "create_hybrid_device_mesh"
        err = same_error(lambda fn=fn, args=args, kw=kw: getattr(ours, fn)(*args, **kw),
                         lambda fn=fn, args=args, kw=kw: getattr(theirs, fn)(*args, **kw))
        with pytest.raises(ValueError) as theirs_err:
            getattr(theirs, fn)(*args, **kw)
        # (a device prints as CpuDevice(id=0) here, cpu:0 in JAX)
        assert str(err).replace("CpuDevice(id=0)", "cpu:0") == str(theirs_err.value)


def test_compilation_cache(tmp_path):
    """set_cache_dir is JAX's option jax_compilation_cache_dir (read back as JAX's is) and the
    folder programs are then kept in; reset_cache makes the next compile report the cache's use
    again (JAX's monitoring event)."""
    from jax.experimental.compilation_cache import compilation_cache as theirs

    import tracejit.experimental.compilation_cache.compilation_cache as ours
    from tracejit import monitoring
    assert [n for n in dir(theirs) if not n.startswith("_")] == \
        sorted(n for n in dir(ours) if n in ours.__all__)
    assert tracejit.experimental.compilation_cache.compilation_cache is ours
    folder = tmp_path / "cache"
    ours.set_cache_dir(folder)
    assert tracejit.config.jax_compilation_cache_dir == str(folder)
    events = []
    monitoring.register_event_listener(lambda name, **kw: events.append(name))
    try:
        ours.reset_cache()
        assert float(tracejit.jit(lambda a: a * 3.25 + 0.5)(2.0)) == 7.0
    finally:
        monitoring.clear_event_listeners()
    assert "/jax/compilation_cache/tasks_using_cache" in events
    assert any(folder.rglob("*")), "nothing was cached in the folder set"
    saved = jax.config.jax_compilation_cache_dir
    try:
        theirs.set_cache_dir(str(folder))  # (JAX's: the same option, read back the same)
        assert jax.config.jax_compilation_cache_dir == str(folder)
    finally:
        jax.config.update("jax_compilation_cache_dir", saved)


def test_default_registry():
    ours, theirs = tracejit.tree_util.default_registry, jax.tree_util.default_registry
    tree = {"b": [1, (2, None)], "a": 3}
    for reg, lib in ((ours, tracejit), (theirs, jax)):
        treedef = reg.flatten(tree)[1]
        assert treedef == lib.tree_util.tree_structure(tree)
    assert ours.flatten(tree)[0] == theirs.flatten(tree)[0]
    assert ours.flatten([1, None, (2,)], lambda x: isinstance(x, tuple))[0] == \
        theirs.flatten([1, None, (2,)], lambda x: isinstance(x, tuple))[0]
    assert [(tracejit.tree_util.keystr(p), v) for p, v in ours.flatten_with_path(tree)[0]] == \
        [(jax.tree_util.keystr(p), v) for p, v in theirs.flatten_with_path(tree)[0]]
    stop_at_b = lambda path, x: bool(path) and getattr(path[-1], "key", None) == "b"
    assert [v for _, v in ours.flatten_with_path(tree, stop_at_b)[0]] == \
        [v for _, v in theirs.flatten_with_path(tree, stop_at_b)[0]]
    for t in (3, [1, 2], (1, 2), {"b": 1, "a": 2}, None, np.ones(2)):
        got, exp = ours.flatten_one_level(t), theirs.flatten_one_level(t)
        assert (got is None) == (exp is None)
        if got is not None:
            assert list(got[0]) == list(exp[0]) and got[1] == exp[1]
        got, exp = ours.flatten_one_level_with_keys(t), theirs.flatten_one_level_with_keys(t)
        assert (got is None) == (exp is None)
        if got is not None:
            assert [(str(k), c) for k, c in got[0]] == [(str(k), c) for k, c in exp[0]]
    for typ in (list, dict, tuple, type(None), int, np.ndarray):
        assert ours.is_node(typ) == theirs.is_node(typ), typ

    class Box:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

    @dataclasses.dataclass
    class Pair:
        x: object
        y: object
    for reg in (ours, theirs):
        reg.register_node(Box, lambda b: ((b.v,), b.tag), lambda tag, ch: Box(ch[0], tag))
        reg.register_dataclass_node(Pair, ["x"], ["y"])
    for lib in (tracejit, jax):
        doubled = lib.tree_util.tree_map(lambda a: a * 2, [Box(3, "t"), Pair(4, "m")])
        assert (doubled[0].v, doubled[0].tag, doubled[1].x, doubled[1].y) == (6, "t", 8, "m")
        assert lib.tree_util.keystr(lib.tree_util.default_registry.flatten_with_path(
            Pair(1, 2))[0][0][0]) == ".x"
    # tracejit has one registry, so jit knows the node too (JAX's jit reads another registry,
    # which only register_pytree_node fills: there this raises a TypeError)
    assert tracejit.jit(lambda b: b.v + 1)(Box(np.float32(1), "t")) == 2


def test_sharding_names():
    """ManualAxisType as JAX 0.10's (keyword-only sets, equality, repr, update, errors);
    is_single_device_sharding as JAX 0.12's (an isinstance test of SingleDeviceSharding);
    auto_axes / explicit_axes on one device as JAX 0.10's: the function sees the mesh with
    the axes retyped, values unchanged, JAX's errors."""
    ours, theirs = tracejit.sharding, jax.sharding
    m_o, m_t = ours.ManualAxisType(varying={"x"}), theirs.ManualAxisType(varying={"x"})
    assert repr(m_o) == repr(m_t) and repr(ours.ManualAxisType()) == repr(theirs.ManualAxisType())
    assert m_o == ours.ManualAxisType(varying=frozenset({"x"})) and hash(m_o) == hash(
        ours.ManualAxisType(varying={"x"}))
    assert repr(m_o.update(reduced={"y"})) == repr(m_t.update(reduced={"y"}))
    assert (m_o.empty, ours.ManualAxisType().empty) == (m_t.empty, theirs.ManualAxisType().empty)
    for kw in ({"varying": {"x"}, "unreduced": {"x"}}, {"varying": {"x"}, "reduced": {"x"}}):
        err = same_error(lambda kw=kw: ours.ManualAxisType(**kw),
                         lambda kw=kw: theirs.ManualAxisType(**kw))
        assert "cannot have common mesh axes" in str(err)
    same_error(lambda: ours.ManualAxisType({"x"}), lambda: theirs.ManualAxisType({"x"}))
    with pytest.raises(TypeError, match="should of type `frozenset` or `set`"):  # (JAX 0.12's)
        ours.ManualAxisType(varying="x")
    d = tracejit.devices()[0]
    assert ours.is_single_device_sharding(ours.SingleDeviceSharding(d))
    assert ours.is_single_device_sharding(tnp.ones(2).sharding)
    mesh = tracejit.make_mesh((1,), ("x",))
    assert not ours.is_single_device_sharding(ours.NamedSharding(mesh, ours.PartitionSpec()))

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    results = {}
    for lib in (tracejit, jax):
        sh, seen = lib.sharding, []
        AT, P = sh.AxisType, sh.PartitionSpec

        def f(a, sh=sh, lib=lib, seen=seen):
            seen.append(tuple(str(t) for t in sh.get_abstract_mesh().axis_types))
            return lib.numpy.sin(a) * 2

        out = []
        for types, wrap, call in [
                ((AT.Explicit, AT.Explicit), sh.auto_axes(f, out_sharding=P("x")), {}),
                ((AT.Explicit, AT.Explicit), sh.auto_axes(f, axes="y"), {"out_sharding": P()}),
                ((AT.Auto, AT.Auto), sh.explicit_axes(f, in_sharding=P("x")), {}),
                ((AT.Auto, AT.Auto), sh.explicit_axes(axes=("y",))(f), {"in_sharding": P()})]:
            m = lib.make_mesh((1, 1), ("x", "y"), axis_types=types)
            with sh.set_mesh(m):
                a = lib.device_put(x, sh.NamedSharding(m, P()))
                out += [wrap(a, **call), lib.jit(lambda a, wrap=wrap, call=call:
                                                 wrap(a, **call))(a)]
        errs = []
        for bad in (lambda sh=sh, f=f: sh.auto_axes(f)(x),
                    lambda sh=sh, f=f, P=P: sh.explicit_axes(f, in_sharding=P())(x)):
            with pytest.raises((TypeError, ValueError)) as err:
                bad()
            errs.append((type(err.value).__name__, str(err.value).splitlines()[0]))
        results[lib] = out, seen, errs
    (o_out, o_seen, o_errs), (t_out, t_seen, t_errs) = results[tracejit], results[jax]
    for g, e in zip(o_out, t_out):
        assert_matches(g, e, rtol=1e-6)
    assert o_seen == t_seen and o_errs == t_errs


def test_profiler_register_subprocess():
    """JAX 0.10 raises JaxRuntimeError when it cannot reach the subprocess's profiler server;
    tracejit has none to reach (its start_server refuses), so it always raises so."""
    assert "register_subprocess" in dir(jax.profiler)
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="no profiler server"):
        tracejit.profiler.register_subprocess(1234, 9999)
    assert issubclass(tracejit.errors.JaxRuntimeError, RuntimeError)


# Run by `python -m tracejit` with four CPU devices: `jax` is tracejit, the new modules load only
# on first use, the import forms of JAX programs work, and results over four devices are those
# JAX 0.10 gives on four CPU devices (values derived: every layout holds the same numbers).
DEVICE_SCRIPT = """
import sys
import warnings
import jax
assert jax.__name__ == "tracejit", jax
lazy = ["pjit", "shard_map", "mesh_utils", "compilation_cache"]
assert not [m for m in lazy if "tracejit.experimental." + m in sys.modules], sys.modules
warnings.simplefilter("ignore", DeprecationWarning)
import numpy as np
import jax.experimental.pjit
import jax.experimental.compilation_cache.compilation_cache as cc
from jax.experimental import mesh_utils
from jax.experimental.shard_map import shard_map
from jax.experimental.pjit import pjit
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, AxisType
assert jax.experimental.pjit.pjit is pjit and cc.set_cache_dir and jax.tree_util.default_registry
assert shard_map.__module__ == "tracejit.experimental.shard_map"

grid = mesh_utils.create_device_mesh((2, 2))
print("mesh", grid.shape, [d.id for d in grid.flat])
print("rev", [d.id for d in mesh_utils.create_device_mesh([4], jax.devices()[::-1]).flat])
print("hybrid", mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1), process_is_granule=True).shape)
mesh = Mesh(grid, ("x", "y"))
x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
with mesh:
    r = pjit(lambda a: a.sum(0), in_shardings=P("x", "y"), out_shardings=P("y"))(x)
    print("pjit", r.sharding.spec, r.tolist())
    print("pjit-none", pjit(lambda a: a * 2)(x).sharding.spec)
    r = pjit(lambda a, k: a * k, static_argnums=1)(
        jax.device_put(x, NamedSharding(mesh, P("x", "y"))), 2)
    print("pjit-keep", r.sharding.spec, float(r.sum()))
    try:
        pjit(lambda a: a, P("x"))(np.arange(3.0))
    except ValueError as e:
        print("indivisible", "evenly divide" in str(e) or str(e))
f = shard_map(lambda a: jax.lax.psum(a, "x"), mesh, P("x", "y"), P(None, "y"))
print("shard_map", np.asarray(f(x)).tolist())
emesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(emesh):
    a = jax.device_put(x, NamedSharding(emesh, P("x", "y")))
    seen = []
    g = lambda v: (seen.append(str(jax.sharding.get_abstract_mesh().axis_types)), v * 2)[1]
    r = jax.sharding.auto_axes(g, out_sharding=P("x", None))(a)
    print("auto", r.sharding.spec, float(r.sum()), seen[-1])
    r = jax.jit(jax.sharding.auto_axes(g, axes="y", out_sharding=P(None, "x")))(a)
    print("auto-jit", r.sharding.spec, float(r.sum()), seen[-1])
amesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
spec = lambda r: tuple(r.sharding.spec)[:1 + max([i for i, p in enumerate(r.sharding.spec)
                                                   if p is not None], default=-1)]
with jax.set_mesh(amesh):
    a = jax.device_put(x, NamedSharding(amesh, P("x", "y")))
    r = jax.sharding.explicit_axes(g, in_sharding=P("x"))(a)
    print("explicit", spec(r), float(r.sum()), seen[-1])
    r = jax.jit(jax.sharding.explicit_axes(g, axes="x", in_sharding=P("x")))(a)
    print("explicit-jit", float(r.sum()), seen[-1])
"""

DEVICE_EXPECTED = [
    "mesh (2, 2) [0, 1, 2, 3]", "rev [3, 2, 1, 0]", "hybrid (2, 2)",
    "pjit P('y',) [24.0, 28.0, 32.0, 36.0]", "pjit-none P()",
    "pjit-keep P('x', 'y') 240.0", "indivisible True",
    # each device's 2x2 block summed over x: the rows 0+2 and 1+3, laid out over y
    "shard_map " + str((np.arange(16.0).reshape(4, 4)[:2] + np.arange(16.0).reshape(4, 4)[2:])
                       .tolist()),
    "auto P('x', None) 240.0 (Auto, Auto)", "auto-jit P(None, 'x') 240.0 (Explicit, Auto)",
    "explicit ('x',) 240.0 (Explicit, Explicit)", "explicit-jit 240.0 (Explicit, Auto)"]


def test_four_devices_under_the_jax_alias(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(DEVICE_SCRIPT)
    env = dict(os.environ, TRACEJIT_NUM_CPU_DEVICES="4", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "tracejit", str(script)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines() == DEVICE_EXPECTED
