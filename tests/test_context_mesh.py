"""The mesh in effect (jax.set_mesh, `with mesh:`, use_abstract_mesh) is part of jit's cache key:
a program traced under one mesh (shard_map with mesh=None, a bare PartitionSpec in out_shardings
or with_sharding_constraint, get_abstract_mesh()) is not reused under another, neither by the
full key nor by the dispatch fast path, nor by AOT lowering; the same mesh again, or an equal new
one, traces nothing new; results computed from values nobody laid out are replicated over the
mesh set_mesh put in effect. Values, shardings, errors and retraces against real JAX 0.10
(tests/libraries/context_mesh.py and mesh_placement.py, run with both), the rest in a process
with 4 devices."""
import sys
import threading

import numpy as np
import pytest

import tracejit as tj
from tests.in_devices import run_check
from tests.libraries import run_both_once
from tracejit.sharding import AbstractMesh, Mesh, NamedSharding, use_abstract_mesh
from tracejit.sharding import PartitionSpec as P

MESHES = ["m2", "m4", "m2_again", "m2_equal", "m2_other", "m22"]
# (prefix, the meshes it runs under in turn, then outside any)
SEQUENCES = [("sm", MESHES), ("out", MESHES + ["no_mesh"]), ("wsc", MESHES + ["no_mesh"]),
             ("am", MESHES + ["no_mesh"]), ("am_placed", MESHES + ["no_mesh"]),
             ("aot", MESHES)]
# (JAX binds a shard_map object given mesh=None to the first mesh it ran under and raises
# under one of another shape, as tracejit does: "sm.m4" and "sm.m22" are refused by both;
# `sm_fresh` has a shard_map of its own for each mesh)
# an argument laid out over devices other than the context mesh's: JAX's error, in both
PLACED_ELSEWHERE = ["am_placed.m4", "am_placed.m2_other", "am_placed.m22"]
# tracejit keys on the concrete mesh (its traced programs hold the devices: shard_map's and
# bare specs' layouts), JAX on the abstract mesh: the same shape over other devices traces
# once more here (the values and shardings agree)
RETRACED_HERE = ["m2_other"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both_once("context_mesh", tmp_path_factory)


def _close(a, b, key):
    if b.dtype.kind in "US":
        assert str(a) == str(b), (key, a, b)
    else:
        assert a.shape == b.shape and a.dtype == b.dtype, key
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=key)


def _cases():
    for prefix, meshes in SEQUENCES:
        for m in meshes:
            yield f"{prefix}.{m}"
    for m in MESHES:
        yield f"sm_fresh.{m}"


@pytest.mark.parametrize("case", list(_cases()))
def test_values_and_shardings_match_jax(both, case):
    ours, theirs = both
    _close(ours[case], theirs[case], case)
    sharding = case + ".sharding"
    if case.endswith("no_mesh") and case.split(".")[0] in ("out", "wsc"):
        # a bare PartitionSpec outside any mesh: both refuse it (JAX a RuntimeError,
        # tracejit a ValueError naming the spec)
        assert str(ours[sharding]).startswith("error") and \
            str(theirs[sharding]).startswith("error")
        return
    _close(ours[sharding], theirs[sharding], sharding)


BINDING = [f"{prefix}.{m}" for prefix, meshes in [
    ("bound", ["m2", "m4", "m2_other", "m22", "m2y", "m2_explicit", "m2_again"]),
    ("late", ["m2", "m22", "m4"]), ("decorated", ["m4", "m2"]),
    ("given", ["set_mesh_m4", "set_mesh_m4_jit", "set_mesh_m2", "abstract_m22", "legacy_m4"])]
    for m in meshes]


@pytest.mark.parametrize("case", BINDING)
def test_shard_map_is_bound_to_its_first_mesh_as_in_jax(both, case):
    """A shard_map with mesh=None is bound to the abstract mesh in effect at its first call
    whose specs fit it, and refuses a context mesh of another shape, axis names or types (not
    another mesh of its shape); one given a mesh refuses a set_mesh/use_abstract_mesh context
    of another (not a legacy `with mesh:`): JAX's values, and JAX's error text followed by a
    paragraph naming the caller's line and what to do."""
    ours, theirs = both
    _close(ours[case], theirs[case], case)
    assert str(ours[case + ".error"]) == str(theirs[case + ".error"]), case
    if case + ".where" in theirs:
        assert not theirs[case + ".where"]
        assert ours[case + ".where"] == str(theirs[case + ".error"]).startswith(
            "The context mesh"), case
    # (JAX's refusals: each of another shape, names or types than the first mesh's)
    assert str(theirs[case + ".error"]).startswith("The context mesh") == (case in [
        "bound.m4", "bound.m22", "bound.m2y", "bound.m2_explicit", "late.m4", "decorated.m2",
        "given.set_mesh_m4", "given.set_mesh_m4_jit", "given.abstract_m22"]), case


@pytest.mark.parametrize("case", PLACED_ELSEWHERE)
def test_arguments_laid_out_elsewhere_are_refused(both, case):
    ours, theirs = both
    assert str(theirs[case + ".sharding"]).startswith("error")
    assert str(ours[case + ".sharding"]) == str(theirs[case + ".sharding"])


def _new_traces(results: dict) -> dict[str, int]:
    """Per call, how many traces it added (the scripts record the running count)."""
    new, last = {}, {}
    for prefix, meshes in SEQUENCES:
        counter = "am" if prefix == "am_placed" else prefix  # (one function, one count)
        for m in meshes:
            count = int(results[f"{prefix}.{m}.traces"])
            new[f"{prefix}.{m}"] = count - last.get(counter, 0)
            last[counter] = count
    return new


def test_retraces_as_jax_does(both):
    ours, theirs = map(_new_traces, both)
    skip = set(PLACED_ELSEWHERE)
    for case in theirs:
        # (a refused call: JAX refuses a bare spec outside any mesh before tracing, tracejit
        # after; neither keeps the trace)
        refused = str(both[1][case + ".sharding"]).startswith("error")
        if case in skip or refused or case.split(".")[1] in RETRACED_HERE:
            continue
        assert ours[case] == theirs[case], (case, ours[case], theirs[case])
    # the point of the key: the same mesh again or an equal new one, nothing new
    for prefix, _ in SEQUENCES:
        for m in ("m2_again", "m2_equal"):
            assert theirs[f"{prefix}.{m}"] == 0 and ours[f"{prefix}.{m}"] == 0, (prefix, m)
    for prefix in ("out", "wsc", "am", "aot"):  # ("sm": refused under m4, untraced)
        assert ours[f"{prefix}.m4"] == 1, prefix  # another mesh: traced anew


# Under jax.set_mesh, results computed from values nobody laid out are replicated over the mesh
# (tests/libraries/mesh_placement.py); over Explicit axes the spec is written as JAX's typing
# rules make it: P() after a unary operation or a reduction of host data, P(None, None) after a
# binary one (tests/test_explicit_specs.py has the rule op by op).


@pytest.fixture(scope="module")
def placement(tmp_path_factory):
    return run_both_once("mesh_placement", tmp_path_factory)


def test_results_under_a_mesh_are_placed_as_jax_places_them(placement):
    ours, theirs = placement
    cases = sorted(k for k in theirs if not k.endswith(".sharding"))
    assert len(cases) > 80
    for case in cases:
        _close(ours[case], theirs[case], case)
        _close(ours[case + ".sharding"], theirs[case + ".sharding"], case)
    # the contexts that place nothing, and those that do, as JAX has them
    for prefix in ("no_mesh", "abstract", "legacy"):
        assert str(theirs[f"{prefix}.jit0.sharding"]) == "SingleDeviceSharding  [0]"
    assert str(theirs["m22.jit0.sharding"]) == "NamedSharding P() [0, 1, 2, 3]"
    assert str(theirs["explicit.eager_sin.sharding"]) == "NamedSharding P() [0, 1]"
    assert str(theirs["explicit.eager_add.sharding"]) == "NamedSharding P(None, None) [0, 1]"


# the checks below need 4 devices: each runs in a process of its own started with
# TRACEJIT_NUM_CPU_DEVICES=4 (this file run as a script), as the test process has one
IN_PROCESS = ["fast_path_keyed_by_mesh", "mesh_set_while_tracing",
              "sharded_arguments_under_two_meshes",
              "abstract_and_legacy_meshes", "meshes_per_thread", "explains_the_miss",
              "laid_out_elsewhere_is_refused"]


@pytest.mark.parametrize("check", IN_PROCESS)
def test_with_four_devices(check):
    run_check(__file__, check, devices=4)


X = np.arange(8.0, dtype=np.float32)


def _meshes():
    devs = tj.devices()
    assert len(devs) == 4, devs
    return Mesh(np.array(devs[:2]), ("x",)), Mesh(np.array(devs), ("x",))


def _counted():
    """A program that holds the mesh in effect's size and axes, and its trace count."""
    traces = []

    def f(a):
        traces.append(1)
        m = tj.sharding.get_abstract_mesh()
        return a + m.size + 10 * len(m.axis_names)
    return f, traces


def _expected(f, a):
    """The oracle: the function run op by op under the same meshes."""
    with tj.disable_jit():
        return np.asarray(f(a))


def check_fast_path_keyed_by_mesh():
    m2, m4 = _meshes()
    f, traces = _counted()
    jf = tj.jit(f)
    # (a shard_map made at each trace: one object is bound to the first mesh, as JAX's)
    sm = tj.jit(lambda a: tj.shard_map(lambda a: a + tj.lax.psum(1, "x"), mesh=None,
                                       in_specs=P("x"), out_specs=P("x"))(a))
    for _ in range(3):  # alternating: each mesh's entry found by the fast path every time
        for m, size in ((m2, 2), (m4, 4)):
            with tj.set_mesh(m):
                np.testing.assert_array_equal(np.asarray(jf(X)), X + size + 10)
                out = sm(X)
                np.testing.assert_array_equal(np.asarray(out), X + size)
                assert out.sharding == NamedSharding(m, P("x"))
        np.testing.assert_array_equal(np.asarray(jf(X)), X)  # outside any mesh
    assert len(traces) == 3 and jf._cache_size() == 3 and len(jf._traces.fast) == 3
    assert sm._cache_size() == 2 and len(sm._traces.fast) == 2
    # an equal new mesh: the same fast entry (the fast key holds a token per equal meshes)
    with tj.set_mesh(Mesh(np.array(tj.devices()[:2]), ("x",))):
        np.testing.assert_array_equal(np.asarray(jf(X)), X + 12)
    assert len(traces) == 3 and len(jf._traces.fast) == 3
    # more meshes than the tokens remembered: m2's calls get a new token, found by the full
    # key (no new trace), right every time
    for i in range(300):
        with tj.set_mesh(Mesh(np.array(tj.devices()[i % 4:i % 4 + 1]), (f"a{i}",))):
            pass
    for m, size in ((m2, 2), (m4, 4), (m2, 2)):
        with tj.set_mesh(m):
            np.testing.assert_array_equal(np.asarray(jf(X)), X + size + 10)
    assert len(traces) == 3
    # `jax.set_mesh(m)` as a statement, then another: the key follows
    tj.set_mesh(m4)
    np.testing.assert_array_equal(np.asarray(jf(X)), X + 14)
    tj.set_mesh(m2)
    np.testing.assert_array_equal(np.asarray(jf(X)), X + 12)
    assert len(traces) == 3


def check_mesh_set_while_tracing():
    # a function that leaves another mesh in effect when traced: its program is the one for
    # the mesh it was called under, and not indexed under the mesh it left
    m2, m4 = _meshes()

    def f(a):
        size = tj.sharding.get_abstract_mesh().size
        tj.set_mesh(m4)
        return a + size
    jf = tj.jit(f)
    with tj.set_mesh(m2):
        np.testing.assert_array_equal(np.asarray(jf(X)), X + 2)
        # now under m4 (f's statement): traced anew for it
        np.testing.assert_array_equal(np.asarray(jf(X)), X + 4)
        np.testing.assert_array_equal(np.asarray(jf(X)), X + 4)


def check_sharded_arguments_under_two_meshes():
    # the fast path's sharded arguments (indexed by their sharding) and the mesh in effect
    m2, m4 = _meshes()
    f, traces = _counted()
    jf = tj.jit(f)
    placed = tj.device_put(X, NamedSharding(m2, P("x")))
    for _ in range(2):
        with tj.set_mesh(m2):
            out = jf(placed)
            np.testing.assert_array_equal(np.asarray(out), X + 12)
            assert out.sharding == NamedSharding(m2, P("x"))
        out = jf(placed)
        np.testing.assert_array_equal(np.asarray(out), X)
        assert out.sharding == NamedSharding(m2, P("x"))
    assert len(traces) == 2 and len(jf._traces.fast) == 2
    # out_shardings a bare spec, the arguments laid out: laid out over the mesh in effect
    g = tj.jit(lambda a: a * 2, out_shardings=P("x"))
    for m in (m2, m4, m2):
        with tj.set_mesh(m):
            out = g(tj.device_put(X, NamedSharding(m, P())))
            assert out.sharding == NamedSharding(m, P("x"))
            np.testing.assert_array_equal(np.asarray(out), X * 2)


def check_laid_out_elsewhere_is_refused():
    # an array laid out over devices 0, 1 (or 1, 0) under set_mesh of others: JAX's error,
    # under jit (every call: the refused signature is not kept) and eagerly, naming the line
    # and the fix; `with mesh:` and use_abstract_mesh bind no devices, as in JAX
    m2, m4 = _meshes()
    reordered = Mesh(np.array(tj.devices()[:2][::-1]), ("x",))
    placed = tj.device_put(X, NamedSharding(m2, P("x")))
    jf = tj.jit(lambda a: a * 2)
    for mesh, arg, ids in [(m4, placed, r"\[0, 1, 2, 3\]"), (m2, tj.device_put(
            X, NamedSharding(reordered, P("x"))), r"\[0, 1\]")]:
        with tj.set_mesh(mesh):
            for call in (jf, jf, lambda a: a + 1, lambda a: a.sum()):
                with pytest.raises(ValueError, match=r"Received incompatible devices for jitted "
                                   r"computation. Got argument .* with shape float32\[8\] and "
                                   rf"with device ids \[.\, .\] on platform CPU and jit's "
                                   rf"context mesh with device ids {ids} on platform CPU at "
                                   r".*test_context_mesh.py:\d+ .*\n\nA jitted program runs "
                                   r"on one set of devices, and under `jax.set_mesh"):
                    call(arg)
    assert jf._cache_size() == 0
    with tj.set_mesh(m2):  # (its own mesh: runs)
        np.testing.assert_array_equal(np.asarray(jf(placed) + placed), X * 3)
    with pytest.warns(DeprecationWarning), m4:
        np.testing.assert_array_equal(np.asarray(jf(placed)), X * 2)
    with use_abstract_mesh(AbstractMesh((4,), ("x",))):
        np.testing.assert_array_equal(np.asarray(jf(placed) - placed), X)


def check_abstract_and_legacy_meshes():
    m2, m4 = _meshes()
    f, traces = _counted()
    jf = tj.jit(f)
    with tj.set_mesh(m4):
        np.testing.assert_array_equal(np.asarray(jf(X)), _expected(f, X))
        with use_abstract_mesh(AbstractMesh((2, 2), ("a", "b"))):
            np.testing.assert_array_equal(np.asarray(jf(X)), _expected(f, X))
            np.testing.assert_array_equal(np.asarray(jf(X)), X + 24)
            lowered = jf.lower(X)  # AOT: traced for this abstract mesh, kept
        np.testing.assert_array_equal(np.asarray(jf(X)), X + 14)
    np.testing.assert_array_equal(np.asarray(lowered.compile()(X)), X + 24)
    n = len(traces)
    # `with mesh:` (legacy): a bare PartitionSpec resolves against it
    wsc = tj.jit(lambda a: tj.lax.with_sharding_constraint(a * 2, P("x")))
    for m in (m2, m4):
        with pytest.warns(DeprecationWarning), m:
            out = wsc(X)
        assert out.sharding == NamedSharding(m, P("x")), (out.sharding, m)
    assert wsc._cache_size() == 2 and len(traces) == n


def check_meshes_per_thread():
    # each thread its own meshes (as in JAX): one thread's mesh is no part of another's key
    m2, m4 = _meshes()
    f, _ = _counted()
    jf = tj.jit(f)
    results, start = {}, threading.Barrier(2)

    def run(name, mesh, size):
        with tj.set_mesh(mesh):
            start.wait()
            results[name] = [np.asarray(jf(X)) - X for _ in range(20)]
            results[name + "_expected"] = size + 10
    threads = [threading.Thread(target=run, args=("a", m2, 2)),
               threading.Thread(target=run, args=("b", m4, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("a", "b"):
        for r in results[name]:
            np.testing.assert_array_equal(r, results[name + "_expected"])
    np.testing.assert_array_equal(np.asarray(jf(X)), X)  # (this thread: none)


def check_explains_the_miss():
    m2, m4 = _meshes()
    f, _ = _counted()
    jf = tj.jit(f)
    import logging
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tracejit").addHandler(handler)
    tj.config.update("jax_explain_cache_misses", True)
    with tj.set_mesh(m2):
        jf(X)
    with tj.set_mesh(m4):
        jf(X)
    text = records[-1].getMessage()
    assert "different context mesh" in text and "Mesh('x': 4" in text, text
    assert "over devices [0, 1, 2, 3]" in text, text


if __name__ == "__main__":
    globals()["check_" + sys.argv[1]]()
    print(f"{sys.argv[1]} ok")
