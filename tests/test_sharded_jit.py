"""Sharded jit in one process: jit of programs over sharded arguments (4 CPU devices) gives
real JAX's numbers and reports JAX's output shardings (tests/libraries/sharded_jit.py, run with
both); the propagation pass's plans (layouts, collectives) and resharding against NumPy."""
import gc
import re

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tests.libraries import run_both
from tracejit.compiler.sharding import propagate_shardings
from tracejit.core.global_array import noted, wanted
from tracejit.core.jaxpr import Var
from tracejit.lax import psum

SIZES = {"x": 2, "y": 2}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("sharded_jit", tmp_path_factory.mktemp("sharded_jit"))


CASES = ["elementwise", "broadcast_operand", "sum_all", "sum_rows", "max_cols",
         "mean_then_scale", "argmax", "transpose", "reshape_split", "reshape_merge",
         "broadcast_new_dim", "model_parallel_matmul", "unsharded_argument", "identity",
         "data_parallel_mlp", "grad_w1", "grad_w2", "step_w1", "remat_grad_w1", "in_shardings",
         "constraint", "constraint_unsharded_argument", "constraint_eager", "constraint_grad",
         "explicit_elementwise", "explicit_sum", "explicit_transpose", "explicit_sum_rows",
         "reshard_eager", "reshard_in_jit", "cumsum_split_dim", "cumsum_whole_dim",
         "sort_rows", "slice_stride", "slice_uneven", "slice_keeping_split", "pad",
         "concatenate", "dynamic_slice",
         "index", "top_k", "embedding_lookup", "embedding_grad", "select_columns",
         "fori_loop", "while_loop", "scan_carry", "cond", "conv", "conv_kernel_grad",
         "random_from_split_keys", "shard_map_jit_split", "shard_map_jit_replicated",
         "shard_map_jit_nested", "shard_map_jit_line", "out_shardings_unsharded_argument",
         # shard_map's layouts carried through the rest of the jit
         "sm_then_scale", "sm_then_sin_plus_argument", "sm_then_row_broadcast",
         "sm_then_astype", "sm_then_sum_all", "sm_then_sum_split_rows", "sm_then_max_cols",
         "sm_rows_then_sum_rows", "sm_then_transpose", "sm_rows_then_transpose",
         "sm_then_reshape_merge", "sm_then_new_dim", "sm_then_matmul", "sm_then_softmax",
         "sm_line_then_sum_split", "sm_nested_then_scale", "sm_then_constant", "sm_rows_direct",
         # and its in_specs' layout carried back to the arguments
         "sm_argument_scaled", "sm_argument_returned", "sm_argument_summed",
         "sm_argument_through_sin", "sm_argument_through_transpose", "sm_sum_plus_argument",
         "sm_other_argument",
         # ... under grad, jvp, vjp, vmap and checkpoint inside the jit
         "sm_grad", "sm_value_and_grad_value", "sm_value_and_grad_grad", "sm_jvp", "sm_vjp",
         "sm_vmap", "sm_vmap_axis1", "sm_vmap_out_last", "sm_vmap_grad", "sm_remat",
         # arguments split by device_put over one axis
         "rows_astype", "rows_plus_scalar", "rows_prod_split", "rows_any_split",
         "rows_logsumexp", "rows_slice_columns", "cols_sum_split", "cols_mean_kept",
         "cols_transpose", "cols_flatten",
         # shard_map inside control flow bodies, scans over its results, control flow on
         # split arguments
         "scan_body_sm_carry", "scan_body_sm_ys", "scan_body_sm_reduced_ys", "fori_body_sm",
         "while_body_sm", "cond_sm_both_branches", "cond_sm_one_branch", "scan_over_sm_ys",
         "scan_over_sm_carry", "scan_carry_from_sm", "scan_carry_from_sm_ys",
         "scan_over_sm_rows_ys", "scan_over_sm_transposed", "scan_over_split_rows",
         "scan_over_split_cols", "cond_split_rows", "nested_scan", "switch_three_branches",
         "vmap_scan", "while_carry_from_sum", "fori_sm_scatter", "scatter_grad", "cond_sm_scan",
         # ... differentiated inside the jit
         "grad_scan_body_sm", "value_and_grad_scan_body_sm_value",
         "value_and_grad_scan_body_sm_grad", "grad_fori_body_sm", "grad_cond_sm",
         # scatter, dynamic_update_slice and gathers on split arrays
         "at_set_rows", "at_set_one", "at_add_rows", "at_set_column", "at_set_2d",
         "at_set_2d_rows", "at_multiply_columns", "at_max_rows", "dus_rows", "dus_columns",
         "take_split_axis", "take_unsplit_axis", "take_along_unsplit_axis",
         "take_along_split_axis", "sort_by_argsort", "index_2d_columns",
         # eager operations on split arrays, grad of a jit outside any jit
         "eager_sin", "eager_plus_numpy", "eager_sum_rows", "eager_sum_all", "eager_transpose",
         "eager_matmul", "eager_reshape", "eager_index", "eager_sort", "eager_cumsum",
         "eager_astype", "grad_of_jit", "value_of_jit_grad"]


@pytest.mark.parametrize("case", CASES)
def test_sharded_jit_matches_jax(both, case):
    ours, theirs = both
    assert str(ours[case + ".sharding"]) == str(theirs[case + ".sharding"])
    a, b = ours[case], theirs[case]
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_loop_runs_gathered_with_jaxs_numbers(both):
    ours, theirs = both
    np.testing.assert_allclose(ours["fori_loop_values"], theirs["fori_loop_values"],
                               rtol=1e-5, atol=1e-6)


def test_an_ahead_of_time_compiled_call_reports_the_sharding(both):
    ours, theirs = both
    assert str(ours["aot_compiled"]) == str(theirs["aot_compiled"])


@pytest.mark.parametrize("case", ["uneven", "conflicting_in_shardings", "two_meshes"])
def test_bad_layouts_raise_jaxs_errors(both, case):
    ours, theirs = both
    assert str(theirs["error_" + case]) != "no error"
    assert str(ours["error_" + case]) == str(theirs["error_" + case])


@pytest.mark.parametrize("key", ["abstract_mesh", "use_abstract_mesh",
                                 "after_use_abstract_mesh"])
def test_the_abstract_mesh_in_effect_is_jaxs(both, key):
    # under set_mesh, then under use_abstract_mesh inside it, then after that block
    ours, theirs = both
    assert str(ours[key]) == str(theirs[key])


def test_make_jaxpr_keeps_the_constraint_jit_partitions_by():
    mesh = tj.sharding.Mesh(np.array(tj.devices()), ("b",),
                            axis_types=(tj.sharding.AxisType.Auto,))
    s = tj.sharding.NamedSharding(mesh, tj.P("b"))

    def f(a):
        return tj.lax.with_sharding_constraint(a * 2, s)
    (eqn,) = [e for e in tj.make_jaxpr(f)(np.ones(4)).jaxpr.eqns if e.params.get("sharding")]
    assert eqn.primitive.name == "sharding_constraint"
    out = tj.jit(f)(np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2)
    assert out.sharding.mesh == mesh


def test_shard_maps_notes_belong_to_its_program():
    """shard_map staged by jit notes its operand's and result's layouts on the traced
    program's Vars (core/global_array.py): tracing more noted values after it than the notes
    once kept (4096, the oldest dropped) drops none of them, the program compiled afterwards
    reports them, and once the program is dropped its Vars go too (were held by the notes)."""
    def live_vars():  # (of the values traced below alone: float16, trailing dimensions 7, 5)
        gc.collect()
        return [o for o in gc.get_objects() if type(o) is Var and
                o.aval.dtype == np.float16 and o.aval.shape[-2:] == (7, 5)]

    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]), ("i",))
    sm = tj.shard_map(lambda a: a * 2, mesh=mesh, in_specs=tj.P("i"), out_specs=tj.P("i"))
    jitted = tj.jit(lambda a: sm(a + 1) - 3)
    x = np.linspace(-1, 1, 105).astype(np.float16).reshape(3, 7, 5)
    traced = jitted.trace(x)
    notes = {v: (noted(v), wanted(v)) for v in live_vars() if noted(v) or wanted(v)}
    # shard_map's operand (taken as P('i')); its result and the output made from it
    taken = tj.sharding.NamedSharding(mesh, tj.P("i"))
    assert [w for _, w in notes.values() if w is not None] == [taken]
    assert sum(n is not None for n, _ in notes.values()) == 2
    many = tj.shard_map(lambda *a: a, mesh=mesh, in_specs=tj.P("i"), out_specs=tj.P("i"))
    tj.make_jaxpr(many)(*[np.ones(2, np.float32)] * 4200)
    assert {v: (noted(v), wanted(v)) for v in notes} == notes
    out = jitted(x)  # (the trace made before, compiled now)
    np.testing.assert_allclose(np.asarray(out, np.float32),
                               ((x + np.float16(1)) * np.float16(2) - np.float16(3)), rtol=1e-3)
    # (the report of the same program traced and compiled at once: P() on this one device, as
    # JAX 0.10 reports it)
    assert out.sharding == tj.jit(lambda a: sm(a + 1) - 3)(x).sharding
    del jitted, traced, notes
    assert live_vars() == []


def _plan(f, *shapes_and_dims):
    avals = [np.zeros(s, np.float32) for s, _ in shapes_and_dims]
    jaxpr = tj.make_jaxpr(f)(*avals).jaxpr
    return propagate_shardings(jaxpr, [d for _, d in shapes_and_dims], SIZES)


def test_a_split_contraction_is_a_partial_product_and_a_psum():
    plan = _plan(lambda a, b: a @ b, ((4, 8), (("x",), ("y",))), ((8, 3), (("y",), ())))
    (dot,) = plan.eqns
    assert dot.combine == ("y",) and dot.combine_with is psum
    assert plan.out_dims == ((("x",), ()),)


def test_data_parallel_matmul_needs_no_collective():
    plan = _plan(lambda a, b: a @ b, ((8, 6), (("x",), ())), ((6, 5), ((), ())))
    assert plan.eqns[0].combine == () and plan.out_dims == ((("x",), ()),)


def test_a_reduction_over_a_split_dimension_is_combined_over_its_axes():
    plan = _plan(lambda a: a.max(), ((4, 8), (("x",), ("y",))))
    assert plan.eqns[-1].combine == ("x", "y") and plan.out_dims == ((),)


def test_an_operation_without_a_rule_gathers_its_operands():
    plan = _plan(lambda a: tj.lax.reduce_window(a, 0.0, tj.lax.add, (2, 2), (1, 1), "VALID"),
                 ((4, 8), (("x",), ("y",))))
    assert plan.eqns[-1].in_dims[0] == ((), ()) and plan.out_dims == (((), ()),)


def test_a_scan_along_a_split_dimension_gathers_it_and_cuts_the_result_back():
    plan = _plan(lambda a: tnp.cumsum(a, 0), ((4, 8), (("x",), ("y",))))
    assert plan.eqns[-1].in_dims == (((), ("y",)),)
    assert plan.eqns[-1].computed == (((), ("y",)),) and plan.out_dims == ((("x",), ("y",)),)


def test_conflicting_free_dimensions_keep_the_lhs_axes():
    # both operands' free dimensions split over x: the rhs is gathered, the result keeps lhs's
    plan = _plan(lambda a, b: a @ b, ((4, 8), (("x",), ())), ((8, 6), ((), ("x",))))
    assert plan.eqns[0].in_dims[1] == ((), ()) and plan.out_dims == ((("x",), ()),)


@pytest.mark.parametrize("src,dst", [
    ((("x",), ()), ((), ("y",))),
    ((("x", "y"), ()), (("y",), ("x",))),
    (((), ()), (("y", "x"), ())),
])
def test_reshard_moves_a_shard_between_layouts(src, dst):
    # the per-shard reshard run under shard_map equals the NumPy array cut as dst says
    from tracejit.compiler.sharding import reshard
    from tracejit.transforms.spmd import run_sharded
    x = np.arange(48.0, dtype=np.float32).reshape(8, 6)
    got = tj.jit(lambda a: run_sharded(lambda s: [reshard(s, src, dst, SIZES)], [a], [src],
                                       lambda: [dst], SIZES)[0])(x)
    np.testing.assert_array_equal(np.asarray(got), x)


def _mlp_step(pmean):
    def loss(p, x, y):
        return tnp.mean((tnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    def step(p, x, y):
        g = tj.grad(loss)(p, x, y)
        g = tj.lax.pmean(g, "x") if pmean else g
        return tj.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g)
    return step


def test_shard_map_step_on_one_device_compiles_to_the_plain_step():
    """benchmarks/scaling.py's data-parallel step on a one-device mesh: shard_map's split over
    the device (a leading dimension of size 1, batched once by shard_map and once by jit's
    partitioning) leaves the plain step's program -- as many kernels, each large one on the
    thread pool, no copy of the batch, the weight gradient written untransposed -- and its
    values bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2048, 256)).astype(np.float32)  # (kernels and products large
    y = rng.normal(size=(2048, 1)).astype(np.float32)    # enough for the thread pool)
    params = {"w1": rng.normal(size=(256, 256)).astype(np.float32) / 16,
              "w2": rng.normal(size=(256, 1)).astype(np.float32) / 16}
    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]), ("x",))
    P = tj.sharding.PartitionSpec

    def put(v, spec):
        s = tj.sharding.NamedSharding(mesh, spec)
        return tj.make_array_from_callback(v.shape, s, lambda index: v[index])
    sharded = ({k: put(v, P()) for k, v in params.items()}, put(x, P("x")), put(y, P("x")))
    train = tj.jit(tj.shard_map(_mlp_step(True), mesh=mesh, in_specs=(P(), P("x"), P("x")),
                                out_specs=P()))
    plain = tj.jit(_mlp_step(False))
    got, want = train(*sharded), plain(params, x, y)
    for k in params:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    texts = [f.lower(*args).compile() for f, args in ((train, sharded), (plain,
                                                                        (params, x, y)))]
    ours, theirs = [c.as_text() for c in texts]
    count = [t.count("\n// kernel ") for t in (ours, theirs)]
    # the same workspace: the batch's reshape (kernel 0) is a view of it, not a copy
    heads = [t.splitlines()[0].split("kernels at top level")[1] for t in (ours, theirs)]
    assert heads[0] == heads[1] and "// kernel 0: reshape\n" in ours, heads
    assert "transpose[permutation=(0, 2, 1)]" not in ours and count[0] == count[1] + 1
    lls = [c.as_text(dialect="llvm") for c in texts]
    pools = [ll.count("@tracejit_parallel_for(") for ll in lls]
    gemms = [len(re.findall(r"call void @tracejit_(?:scipy_sgemm|sgemm_\d+)\(", ll))
             for ll in lls]  # (BLAS's sgemm or our gemm.py's)
    # (sgemm's call sites: 2 on AVX2, where BLAS runs both large products, in tiles; 3 or
    # more on AVX-512, where our gemm runs them)
    assert pools[0] == pools[1] >= 4 and gemms[0] == gemms[1] >= 2, gemms
