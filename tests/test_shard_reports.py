"""What arrays laid out over a mesh report, against real JAX 0.10 on 4 CPU devices
(tests/libraries/shard_reports.py, run with both): addressable_shards, the device assignment and
devices_indices_map in the mesh's order (reversed and permuted meshes, 1-d and 2-d; they were
listed by device id), for device_put's, jit's, eager operations' and shard_map's results; the
types of a jit's arguments laid out over Explicit mesh axes (`float32[8@x,4]`; they printed
`float32[8,4]`) and of grad's, jvp's and vmap's tracers of them; and the layouts gradients of
shard_map report, under jit and eagerly."""
import numpy as np
import pytest

from tests.libraries import run_both


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("shard_reports", tmp_path_factory.mktemp("shard_reports"))


def test_shards_in_the_meshs_device_order(both):
    ours, theirs = both
    assert sorted(ours) == sorted(theirs)
    cases = sorted(k[:-len(".devices")] for k in theirs if k.endswith(".devices"))
    assert len(cases) > 40
    for case in cases:
        for field in ("devices", "indices", "replicas", "assignment", "map", "spec"):
            k = f"{case}.{field}"
            assert str(ours[k]) == str(theirs[k]), k
        # (each shard's data: exact, but for tanh's last bits, ours and XLA's polynomials)
        np.testing.assert_allclose(ours[case + ".data"], theirs[case + ".data"], rtol=1e-6,
                                   atol=0, err_msg=case)
    # (what the recording holds: a reversed mesh lists its last device first)
    assert str(theirs["put_3210_split.devices"]) == "3 2 1 0"
    assert str(theirs["put_3210_split.indices"]) == "0:2 2:4 4:6 6:8"
    assert str(theirs["put2d_2031_y.replicas"]) == "0 0 1 1"


TYPES = ["eager", "jit_args", "jit_pytree", "jit_numpy_beside", "jit_static_beside",
         "jit_in_shardings", "grad", "jit_grad", "jvp", "jit_jvp", "vmap0", "vmap1",
         "jit_vmap1", "vmap_grad", "jit_shard_map", "computed_elementwise",
         "computed_transpose", "computed_reduce", "computed_grad_inner"]


@pytest.mark.parametrize("case", TYPES)
def test_types_of_arguments_over_explicit_axes(both, case):
    """A jit's arguments, grad's/jvp's/vmap's tracers of them, and values computed from them
    by elementwise operations, transposes and reductions print JAX's layout."""
    ours, theirs = both
    assert str(ours[case]) == str(theirs[case]), case


def test_types_still_printed_without_a_layout(both):
    # (strict: a change makes this fail, and the case moves to TYPES) — the other primitives'
    # results inside jit (reshape, dot_general, slice; a[None], our reshape, JAX's
    # broadcast_in_dim) and a gradient (JAX's transposes type the cotangent as the primal)
    ours, theirs = both
    known = {"computed_broadcast": (1, "float32[1,8,4]"), "computed_other": (0, "float32[2,4,4]"),
             "computed_grad": (0, "float32[8,4]")}
    for case, (k, printed) in known.items():
        mine, jax_types = str(ours[case]).split(), str(theirs[case]).split()
        assert mine[k] == printed and jax_types[k] != printed, case
        assert [t for i, t in enumerate(mine) if i != k] == \
            [t for i, t in enumerate(jax_types) if i != k] or case != "computed_broadcast", case


def test_types_recorded():
    # (strict: what JAX prints, so that the cases above compare layouts, not plain types)
    from tests.libraries import HERE, recorded
    theirs = recorded(HERE / "shard_reports.py")
    if theirs is None:
        pytest.skip("recording out of date: the other tests run real JAX live")
    assert str(theirs["jit_args"]) == \
        "float32[8@x,4] float32[8@x,4@y] float32[8,4@(x,y)] float32[8,4]"
    assert str(theirs["jit_in_shardings"]) == "float32[8@x,4@y] float32[8,4]"
    assert str(theirs["vmap1"]) == "float32[8@x]"


GRADS = [f"{how}_{loss}_{arg}" for how in ("jit_grad", "grad", "jit_value_and_grad")
         for loss in ("linear", "square", "replicated", "product", "sin")
         for arg in ("uncommitted", "placed")]

@pytest.mark.parametrize("case", GRADS)
def test_gradients_of_shard_map(both, case):
    """The gradient laid out as the in_specs take the operand, as JAX's transposed shard_map
    returns it — also where it reads no argument (a linear loss: tracejit reported P() under
    jit) and eagerly (tracejit computed it on device 0, uncommitted)."""
    ours, theirs = both
    np.testing.assert_allclose(ours[case], theirs[case], rtol=1e-6)
    assert str(ours[case + ".sharding"]) == str(theirs[case + ".sharding"]), case
