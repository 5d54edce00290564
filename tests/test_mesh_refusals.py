"""Where a program's devices or types disagree, tracejit refuses what JAX refuses, with JAX's
error and words, and puts results where JAX puts them (tests/libraries/mesh_refusals.py, run
with both against real JAX 0.10): out_shardings and sharding constraints over other devices than
the `jax.set_mesh` mesh; arrays laid out over a mesh of other axis types or names than the mesh
in effect; in_shardings and out_shardings on one device; shard_map over an all-Explicit mesh
given in_specs other than its arguments' types; a compiled AOT program called on arrays placed
otherwise than it was lowered for. The rest (our words: the user's line and the fix; the
dispatch fast path keeping placements) in a process with 4 devices."""
import sys

import numpy as np
import pytest

import tracejit as tj
from tests.in_devices import run_check
from tests.libraries import run_both
from tracejit.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from tracejit.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("mesh_refusals", tmp_path_factory.mktemp("mesh_refusals"))


GROUPS = ["ctx.", "abstract.", "types.", "one.", "smap.", "aot."]


@pytest.mark.parametrize("group", GROUPS)
def test_refusals_and_placements_match_jax(both, group):
    ours, theirs = both
    cases = sorted(k for k in theirs if k.startswith(group) and not k.endswith(".result"))
    assert cases, group
    for case in cases:
        assert str(ours[case + ".result"]) == str(theirs[case + ".result"]), case
        np.testing.assert_allclose(ours[case], theirs[case], rtol=1e-6, err_msg=case)


def test_the_recording_holds_both_outcomes(both):
    """Each group has calls JAX runs and calls it refuses (so neither side passes vacuously)."""
    _, theirs = both
    for group in GROUPS:
        results = [str(theirs[k]) for k in theirs if k.startswith(group) and
                   k.endswith(".result")]
        refused = [r for r in results if r.startswith("error")]
        if group != "abstract.":
            assert refused and len(refused) < len(results), group
    assert str(theirs["one.in3.result"]) == "SingleDeviceSharding  [3] committed=True"
    assert str(theirs["aot.on3.numpy.result"]) == "SingleDeviceSharding  [3] committed=True"


IN_PROCESS = ["errors_name_the_line_and_the_fix", "fast_path_keeps_placements",
              "aot_calls_check_every_call"]


@pytest.mark.parametrize("check", IN_PROCESS)
def test_with_four_devices(check):
    run_check(__file__, check, devices=4)


X = np.arange(8.0, dtype=np.float32)


def _raises(call, *words):
    """The error `call` raises: a ValueError naming this file's line, then `words`."""
    with pytest.raises(ValueError) as info:
        call()
    text = str(info.value)
    assert "test_mesh_refusals.py:" in text, text
    for w in words:
        assert w in text, (w, text)
    return text


def check_errors_name_the_line_and_the_fix():
    devs = tj.devices()
    m2, m2o = Mesh(np.array(devs[:2]), ("x",)), Mesh(np.array(devs[2:]), ("x",))
    with tj.set_mesh(m2):
        _raises(lambda: tj.jit(lambda a: a * 2, out_shardings=NamedSharding(m2o, P("x")))(X),
                "explicit output sharding with device ids [2, 3]", "\n\nA jitted program runs")
    _raises(lambda: tj.jit(lambda a: a * 2, in_shardings=SingleDeviceSharding(devs[3]),
                           out_shardings=SingleDeviceSharding(devs[2]))(X),
            "ARG_SHARDING with device ids [3]", "\n\nA jitted program runs")
    me = tj.make_mesh((2,), ("x",), axis_types=(AxisType.Explicit,), devices=devs[:2])
    ma = tj.make_mesh((2,), ("x",), axis_types=(AxisType.Auto,), devices=devs[:2])
    ya = tj.device_put(X, NamedSharding(ma, P("x")))
    with tj.set_mesh(me):
        _raises(lambda: ya * 2, "For primitive mul, context mesh", "\n\nUnder `jax.set_mesh")
        _raises(lambda: tj.jit(lambda a: a + 1)(ya), "For primitive add", "Move the array")
    me22 = tj.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    sm = tj.shard_map(lambda a: a * 2, mesh=me22, in_specs=P("x", "y"),
                      out_specs=P("x", "y"))
    _raises(lambda: sm(X.reshape(2, 4)), "does not match the specs of the input: P(None, None)",
            "Lay the argument out first")
    compiled = tj.jit(lambda a: a * 2).lower(X).compile()
    _raises(lambda: compiled(tj.device_put(X, devs[3])),
            "Computation was compiled for input shardings",
            "Passed sharding: SingleDeviceSharding(device=CpuDevice(id=3)",
            "Lower it again")


def check_fast_path_keeps_placements():
    """Repeated calls (the dispatch fast path after the first) keep the placement in_shardings
    and out_shardings give, and keep jit(f) and jit(f, in_shardings=...) apart."""
    devs = tj.devices()
    m2 = Mesh(np.array(devs[:2]), ("x",))

    def f(a):
        return a * 2
    for _ in range(3):
        plain = tj.jit(f)(X)
        assert plain.sharding == SingleDeviceSharding(devs[0]) and not plain.committed
        on3 = tj.jit(f, in_shardings=SingleDeviceSharding(devs[3]))(X)
        assert on3.sharding == SingleDeviceSharding(devs[3]) and on3.committed
        laid = tj.jit(f, in_shardings=NamedSharding(m2, P("x")))(X)
        assert laid.sharding == NamedSharding(m2, P("x")), laid.sharding
        pair = tj.jit(lambda a: (a * 2, a + 1),
                      out_shardings=(SingleDeviceSharding(devs[3]), None))(X)
        assert all(r.sharding == SingleDeviceSharding(devs[3]) for r in pair)
        for r in (plain, on3, laid, pair[0]):
            np.testing.assert_array_equal(np.asarray(r), X * 2)


def check_aot_calls_check_every_call():
    devs = tj.devices()
    compiled = tj.jit(lambda a: a * 2).lower(tj.device_put(X, devs[3])).compile()
    for _ in range(3):
        r = compiled(X)
        assert r.sharding == SingleDeviceSharding(devs[3]) and r.committed
        np.testing.assert_array_equal(np.asarray(r), X * 2)
        with pytest.raises(ValueError, match="Computation was compiled"):
            compiled(tj.device_put(X, devs[0]))


if __name__ == "__main__":
    name = sys.argv[1]
    globals()[f"check_{name}"]()
    print(f"{name} ok")
