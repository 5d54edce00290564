"""Programs written for real JAX that define primitives through jax.extend or use equinox and
flax, run unmodified with `python -m tracejit` and compared with real JAX's results."""
from tests.libraries import assert_close, run_both


def test_user_primitive_multiply_add(tmp_path):
    # JAX's documented multiply_add: eager, jit (lower_fun lowering), jvp, grad, vmap, mixes
    ours, theirs = run_both("user_primitive", tmp_path)
    assert len(theirs) == 10
    assert_close(ours, theirs, rtol=1e-6)


def test_equinox_mlp(tmp_path):
    # eqx.nn.MLP trained under filter_jit / filter_value_and_grad; filter_vmap, filter_grad
    ours, theirs = run_both("equinox_mlp", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_equinox_loops_and_errors(tmp_path):
    # eqx.internal.while_loop (lax / checkpointed / bounded) under jit and vmap, grad through
    # the bounded and checkpointed loops, eqx.error_if raising out of compiled code
    ours, theirs = run_both("equinox_loops", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    assert bool(ours["['error_raised']"])


def test_flax_linen_mlp(tmp_path):
    # linen Dense/relu MLP: init, apply, 20 plain gradient steps under jit
    ours, theirs = run_both("flax_linen_mlp", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_flax_linen_scan(tmp_path):
    # nn.scan over an RNN cell: flax traces the body with partial_eval.trace_to_jaxpr_nounits
    ours, theirs = run_both("flax_linen_scan", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_flax_nnx_mlp(tmp_path):
    # nnx.Linear MLP, nnx.Optimizer(optax.sgd) under nnx.jit / nnx.value_and_grad; nnx.grad
    ours, theirs = run_both("flax_nnx_mlp", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_shard_map_and_pmap_over_four_devices(tmp_path):
    # jax_num_cpu_devices=4, a 2x2 mesh: collectives over mesh axes, jit/grad around, a
    # data-parallel step equal to the full-batch step, JAX's errors
    ours, theirs = run_both("shard_map_devices", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    assert bool(ours["dp_equals_full_batch"])
    assert bool(ours["error_varying_out"]) and bool(ours["error_uneven"])


def test_debug_visualize_and_inspect_sharding(tmp_path):
    # JAX's tables for 1-D/2-D arrays split over 4 devices (rows, columns, both, replicated)
    ours, theirs = run_both("debug_sharding", tmp_path)
    assert_close(ours, theirs, rtol=0)
    assert all(bool(v.all()) for k, v in ours.items() if k.endswith("_same"))
