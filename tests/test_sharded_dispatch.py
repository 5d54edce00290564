"""jit's dispatch of calls on arguments laid out over a mesh in one process: repeated calls,
other layouts and other meshes of the same shape give real JAX's values, result shardings,
addressable shards, donations and errors (tests/libraries/sharded_dispatch.py, run with both);
and such calls take the dispatch fast path, which tells equal shardings from other ones."""
import sys

import numpy as np
import pytest

import tracejit as tj
from tests.in_devices import run_check
from tests.libraries import run_both
from tracejit.sharding import Mesh, NamedSharding
from tracejit.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("sharded_dispatch", tmp_path_factory.mktemp("sharded_dispatch"))


CASES = ([f"sm_same_{i}" for i in range(3)]
         + ["sm_replicated_args", "sm_other_mesh", "sm_reordered_mesh", "sm_mixed_meshes",
            "sm_back_to_first"]
         + [f"g_{n}" for n in ("x_a", "x_a_again", "rep_a", "x_b", "x_r", "x_a_last",
                               "two_meshes", "a_after_error")]
         + ["h_matching", "h_matching_again", "h_numpy", "h_other_spec", "h_other_mesh",
            "h_reordered_mesh", "h_other_mesh_replicated", "h_committed_device",
            "h_uncommitted", "h_matching_last", "hr_committed_device",
            "hr_other_mesh_replicated", "hr_other_mesh_split", "hd_split"]
         + [f"donated_{i}" for i in range(3)] + ["ident_0", "ident_1"])


def _keys(results: dict, case: str) -> list[str]:
    return sorted(k for k in results if k == case or k.startswith(case + "."))


def _compare(ours: dict, theirs: dict, case: str) -> None:
    assert _keys(ours, case) == _keys(theirs, case)
    for k in _keys(theirs, case):
        a, b = ours[k], theirs[k]
        if b.dtype.kind in "US":
            assert str(a) == str(b), k
        else:
            assert a.shape == b.shape and a.dtype == b.dtype, k
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("case", CASES)
def test_repeated_sharded_calls_match_jax(both, case):
    ours, theirs = both
    assert _keys(theirs, case), case  # (the script recorded it)
    _compare(ours, theirs, case)


# the checks below need 4 devices: each runs in a process of its own started with
# TRACEJIT_NUM_CPU_DEVICES=4 (this file run as a script), as the test process has one
IN_PROCESS = ["fast_path_keyed_by_sharding", "fast_call_refuses_conflicting_layout",
              "returned_argument_keeps_its_sharding", "mesh_and_sharding_hashes"]


@pytest.mark.parametrize("check", IN_PROCESS)
def test_with_four_devices(check):
    run_check(__file__, check, devices=4)


def _meshes():
    devs = tj.devices()
    assert len(devs) == 4, devs
    return Mesh(np.array(devs[:2]), ("x",)), Mesh(np.array(devs[2:4]), ("x",))


def _put(mesh, *spec):
    return tj.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P(*spec)))


def check_fast_path_keyed_by_sharding():
    a, b = _meshes()
    f = tj.jit(lambda x: x * 2 + 1)
    x = _put(a, "x")
    f(x)
    assert len(f._traces.fast) == 1  # (sharded calls are indexed by the fast path)
    # a new, equal mesh and sharding object: the same entry, no new trace
    again = Mesh(np.array(tj.devices()[:2]), ("x",))
    out = f(_put(again, "x"))
    assert f._cache_size() == 1 and len(f._traces.fast) == 1
    assert out.sharding == NamedSharding(a, P("x"))
    # another spec on the mesh, and another mesh of the same shape: new signatures
    assert f(_put(a)).sharding == NamedSharding(a, P())
    assert f._cache_size() == 2
    out_b = f(_put(b, "x"))
    assert f._cache_size() == 3 and out_b.sharding == NamedSharding(b, P("x"))
    assert [s.device.id for s in out_b.addressable_shards] == [d.id for d in b.devices.flat]
    # and the first again: found, laid out as before
    out = f(x)
    assert f._cache_size() == 3 and out.sharding == NamedSharding(a, P("x"))
    np.testing.assert_array_equal(np.asarray(out), np.arange(8.0) * 2 + 1)


def check_fast_call_refuses_conflicting_layout():
    a, b = _meshes()
    f = tj.jit(lambda x, y: x + y)
    f(_put(a, "x"), _put(a, "x"))
    with pytest.raises(ValueError, match="incompatible devices"):
        f(_put(a, "x"), _put(b, "x"))
    h = tj.jit(lambda x: x * 3, in_shardings=NamedSharding(a, P("x")))
    h(_put(a, "x"))
    with pytest.raises(ValueError, match="does not match the sharding on the respective arg"):
        h(_put(a))
    assert h(_put(a, "x")).sharding == NamedSharding(a, P("x"))
    # shard_map over devices 0, 1 inside, the argument over 2, 3: JAX's error, every time
    # (the refused signature is not cached), the right call still runs
    def step(x):
        return tj.shard_map(lambda p: p * 2, mesh=a, in_specs=P("x"), out_specs=P("x"))(x) + 1
    g = tj.jit(step)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"Received incompatible devices for jitted "
                           r"computation. Got argument x of step with shape float32\[8\] and "
                           r"with device ids \[2, 3\] on platform CPU and shard_map inside jit "
                           r"with device ids \[0, 1\] on platform CPU"):
            g(_put(b, "x"))
    np.testing.assert_array_equal(np.asarray(g(_put(a, "x"))), np.arange(8.0) * 2 + 1)
    with pytest.raises(ValueError, match="incompatible devices"):
        g(_put(b, "x"))


def check_returned_argument_keeps_its_sharding():
    a, _ = _meshes()
    f = tj.jit(lambda x, y: (x, x + y))
    x, y = _put(a), _put(a, "x")
    for _ in range(3):
        same, _ = f(x, y)
        assert x.sharding == NamedSharding(a, P()) and same.sharding == NamedSharding(a, P())
        assert not x.is_deleted()


def check_mesh_and_sharding_hashes():
    devs = tj.devices()
    m1, m2 = Mesh(np.array(devs[:2]), ("x",)), Mesh(np.array(devs[:2]), ("x",))
    assert m1 == m2 and hash(m1) == hash(m2) and m1 is not m2
    assert Mesh(np.array(devs[:2][::-1]), ("x",)) != m1
    assert Mesh(np.array(devs[:2]), ("y",)) != m1
    s1, s2 = NamedSharding(m1, P("x")), NamedSharding(m2, P("x"))
    assert s1 == s2 and hash(s1) == hash(s2)
    assert s1 != NamedSharding(m1, P()) and s1 != NamedSharding(m1, P("x"),
                                                               memory_kind="pinned_host")
    assert len({s1, s2, NamedSharding(m1, P())}) == 2


if __name__ == "__main__":
    globals()["check_" + sys.argv[1]]()
    print(f"{sys.argv[1]} ok")


# --- arrays committed to one device (tests/libraries/committed_devices.py, run with both) ----
COMMITTED = ["sm_d3", "sm_d1", "sm_replicated_d3", "sm_placed_m23", "sm_pytree_d3",
             "sm_uncommitted", "sm_numpy", "sm_placed_m01", "sm_grad_d3", "sm_vmap_d3",
             "jit_sm_uncommitted", "jit_sm_d3", "jit_sm_uncommitted_again",
             "jit_sm_d3_keyword", "jit_in_shardings_d3", "jit_out_shardings_d3",
             "jit_constraint_d3", "jit_placed_then_d3", "jit_d3_then_placed", "jit_d3_d2",
             "jit_d3_alone", "jit_d3_uncommitted", "jit_grad_sm_d3", "jit_d3_under_mesh",
             "jit_uncommitted_under_mesh", "jit_d3_under_its_mesh",
             "placed_d0", "placed_ones", "placed_uncommitted", "placed_device_put_numpy",
             "jit_d0_d1", "sm12_d0", "jit_sm12_d0", "device_put_d1_again",
             "device_put_d1_to_d0", "device_put_uncommitted_d0", "jit_device_put_d0_d1",
             "eager_d1_mul", "eager_d1_uncommitted", "eager_d1_negative", "eager_d1_sum",
             "eager_d1_index", "eager_d1_astype", "eager_d1_cond", "eager_lax_add_d0_d1",
             "jit_d1", "jit_d1_pair", "jit_d1_unused", "jit_d1_unused_kept",
             "jit_d0_unused_d1", "jit_d1_dead", "jit_d1_constant", "grad_d1", "grad_d1_sum",
             "jit_grad_d1", "aot_d1", "vmap_d1", "vmap_d1_sum", "asarray_d1", "array_d1", "copy_d1",
             "array_d1_float16", "zeros_like_d1", "full_like_d1_shape", "ones_like_weak_d1",
             "zeros_like_placed01", "full_like_placed01_shape", "jit_grad_sm_d3_kept", "jit_grad_sm_square_d3",
             "eager_lax_d1_under_mesh", "eager_lax_d0_under_mesh",
             "eager_uncommitted_under_mesh", "array_d1_under_mesh",
             "array_uncommitted_under_mesh", "eager_d1_under_its_mesh",
             "eager_d0_under_mesh_of_d1", "jit_d1_under_its_mesh", "eager_d1_under_mesh",
             "grad_d1_under_mesh"]
COMMITTED_REFUSED = ["sm_d3", "sm_d1", "sm_replicated_d3", "sm_placed_m23", "sm_pytree_d3",
                     "sm_grad_d3", "sm_vmap_d3", "jit_sm_d3", "jit_sm_d3_keyword",
                     "jit_out_shardings_d3", "jit_constraint_d3", "jit_placed_then_d3",
                     "jit_d3_then_placed", "jit_d3_d2", "jit_d3_under_mesh", "jit_d0_d1",
                     "sm12_d0", "jit_sm12_d0", "jit_device_put_d0_d1", "eager_lax_add_d0_d1",
                     "jit_grad_sm_d3_kept", "jit_grad_sm_square_d3",
                     "eager_lax_d1_under_mesh", "eager_lax_d0_under_mesh",
                     "eager_d0_under_mesh_of_d1", "array_d1_under_mesh", "eager_d1_under_mesh",
                     "grad_d1_under_mesh"]


def _placement(results: dict, case: str) -> str:
    return str(results[case + ".committed"])


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    return run_both("committed_devices", tmp_path_factory.mktemp("committed_devices"))


@pytest.mark.parametrize("case", COMMITTED)
def test_committed_arguments_as_jax(committed, case):
    """A committed argument's device against the mesh's, a shard_map's, a sharding
    constraint's, out_shardings' or another argument's: JAX's values, or its error (class and
    text up to the location), then tracejit's paragraph naming the caller's line and the fix;
    uncommitted arrays run. A refusal after the same jit ran on an uncommitted array (the cache
    keys no committed device): refused all the same."""
    ours, theirs = committed
    np.testing.assert_array_equal(ours[case], theirs[case])
    assert str(ours[case + ".error"]) == str(theirs[case + ".error"]), case
    refused = str(theirs[case + ".error"]).startswith("ValueError: Received incompatible")
    assert refused == (case in COMMITTED_REFUSED), case
    assert bool(ours[case + ".where"]) == refused, case
    assert _placement(ours, case) == _placement(theirs, case), case


def test_committed_results_placement(committed):
    """Which results are committed, and where, as JAX says: device_put to device 0 commits,
    an operation on a committed array (eager, jit reading it, grad, vmap, jnp.array) gives one
    committed there, jit of a program that does not read it (dropped or dead) does not."""
    ours, theirs = committed
    for case, placement in [("placed_d0", "True SingleDeviceSharding [0]"),
                            ("placed_ones", "False SingleDeviceSharding [0]"),
                            ("eager_d1_mul", "True SingleDeviceSharding [1]"),
                            ("jit_d1_unused", "False SingleDeviceSharding [0]"),
                            ("jit_d1_dead", "False SingleDeviceSharding [0]"),
                            ("grad_d1", "True SingleDeviceSharding [1]"),
                            ("array_d1", "True SingleDeviceSharding [1]")]:
        assert _placement(theirs, case) == placement, case  # (what the recording says)
        assert _placement(ours, case) == placement, case


def test_committed_gradient_of_shard_map_laid_out_as_jax(committed):
    # (jit(grad(f)) of a shard_map over devices 0, 1 on an array committed to device 3: the
    # gradient reads no argument, so JAX runs it on the mesh and lays it out as the in_specs
    # take the operand; tracejit reported P())
    ours, theirs = committed
    assert _placement(theirs, "jit_grad_sm_d3") == "True NamedSharding [0, 1] P('x',)"
    assert _placement(ours, "jit_grad_sm_d3") == _placement(theirs, "jit_grad_sm_d3")
