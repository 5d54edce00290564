"""Several processes through MPI: this file starts `mpiexec -n 2` itself on the scripts in
tests/mpi/ (two devices per process, the mesh axis 'data' across the processes) and the same
programs in one process with four devices (every axis batched), and compares them with each
other, with NumPy and with one-process training on the whole batch. mpi4py and mpich are test
dependencies: without them this file fails, it does not skip.
"""
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import mpi4py  # noqa: F401  (a test dependency, `pip install mpi4py mpich`: fails, never skips)
import numpy as np

import tracejit as jax
from tests.libraries import recorded
from tests.mpi import HARNESS, start_jax
from tests.mpi.model import DATA, LR, STEPS, TARGET, init, loss
from tracejit.distributed import mpiexec

HERE = Path(__file__).resolve().parent / "mpi"
# initialize() in a process not started by mpiexec: one process, and a wrong count refused
INITIALIZE = ("import tracejit as jax\n"
              "try:\n    jax.distributed.initialize(num_processes=2)\n"
              "except ValueError as e:\n    print('ERR', e)\n"
              "jax.distributed.initialize(process_id=0)\n"
              "print(jax.distributed.is_initialized(), jax.process_count(), jax.devices())\n")
ROOT = HERE.parent.parent


def _env(devices: int) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), TRACEJIT_NUM_CPU_DEVICES=str(devices),
                JAX_PLATFORMS="cpu")


def _start_all(tmp: Path):
    """(the mpiexec run's results, the one-process run's, the failure reports, initialize's
    output): the four started together, as they are independent."""
    python = sys.executable
    started = {
        "mpi": subprocess.Popen([mpiexec(), "-n", "2", python, str(HERE / "programs.py"),
                                 str(tmp / "mpi"), "mpi"], env=_env(2),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
        "single": subprocess.Popen([python, str(HERE / "programs.py"), str(tmp / "single"),
                                    "single"], env=_env(4), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True),
        "initialize": subprocess.Popen([python, "-c", INITIALIZE], env=_env(1),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True),
        "failures": subprocess.Popen([mpiexec(), "-n", "2", python,
                                      str(HERE / "failures.py"), str(tmp / "failures")],
                                     env=_env(2), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True),
    }
    logs = {k: p.communicate(timeout=240)[0] for k, p in started.items()}
    for k in ("mpi", "single", "initialize"):
        assert started[k].returncode == 0, f"{k} run failed:\n{logs[k][-4000:]}"
    loaded = {}
    for k in ("mpi", "single"):
        with np.load(tmp / f"{k}.0.npz") as saved:  # (process 0's)
            loaded[k] = {name: saved[name] for name in saved.files}
    reports = {}
    for rank in (0, 1):
        path = tmp / f"failures.{rank}.txt"
        assert path.exists(), f"failures.py rank {rank} wrote nothing:\n{logs['failures']}"
        reports[rank] = path.read_text()
    return loaded["mpi"], loaded["single"], reports, logs["initialize"]


def _group(results: dict, prefix: str) -> dict:
    return {k: v for k, v in results.items() if k.startswith(prefix + "/")}


GROUPS = ("collectives", "collectives_jit", "collectives_all", "collectives_all_eager", "mixed",
          "mlp", "outer_grad", "inner_grad", "mixing_grad", "mixing_grad_all", "jit_elementwise",
          "jit_reduce_all", "jit_reduce_rows", "jit_reduce_cols", "jit_matmul",
          "jit_out_shardings", "jit_in_shardings", "jit_local_rows", "jit_reused", "jit_mlp",
          "jit_lanes_gram", "jit_lanes_center", "outer_jit_mlp", "outer_jit_batch_grad",
          "outer_vmap", "outer_jvp", "donate", "smap_jit_reused", "minor_axis",
          "minor_axis_jit", "woven", "outer_vjp", "outer_linearize", "local_first", "regrouped")


def test_several_processes(tmp_path):
    """One test, so that the processes start once however pytest distributes the tests (the
    suite runs with -n 2); each check below names what it compares."""
    runs = _start_all(tmp_path)
    for group in GROUPS:
        _check_two_processes_equal_one(runs, group)
    _check_collectives_against_numpy(runs)
    _check_arrays_spanning_processes(runs)
    _check_stages_of_arrays_spanning_processes(runs)
    _check_jit_across_processes(runs)
    _check_transformations_outside_jit(runs)
    _check_mesh_with_the_process_axis_minor(runs)
    _check_results_split_over_processes(runs)
    _check_donation(runs)
    _check_data_parallel_training_equals_whole_batch(runs)
    _check_disagreeing_and_missing_peers_raise(runs)
    _check_initialize_checks_its_arguments_against_mpi(runs)


def _check_two_processes_equal_one(runs, group):
    """Each sharded program gives under mpiexec -n 2 what it gives in one process."""
    mpi, single, _, _ = runs
    ours, oracle = _group(mpi, group), _group(single, group)
    assert sorted(ours) == sorted(oracle) and ours, group
    for k in oracle:
        assert ours[k].shape == oracle[k].shape and ours[k].dtype == oracle[k].dtype, k
        np.testing.assert_allclose(ours[k], oracle[k], rtol=2e-6, atol=1e-6, err_msg=k)


def _check_collectives_against_numpy(runs):
    mpi, _, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    ints = np.arange(16, dtype=np.int32).reshape(4, 4)
    a, b = x[:2], x[2:]  # the two processes' shards
    want = [a + b, (a + b) / 2, np.maximum(a, b), np.minimum(ints[:2], ints[2:]),
            np.stack([a, b]), np.concatenate([a, b], axis=1),
            # psum_scatter over columns: process p keeps columns 3p:3p+3 of the sum
            np.concatenate([(a + b)[:, :3], (a + b)[:, 3:]]),
            np.concatenate([b, a]),  # ppermute swaps the halves
            np.concatenate([np.zeros_like(ints[:2]), ints[:2]]),  # only 0 -> 1 is sent
            # all_to_all(split 1, concat 0): process p gets column block p of every shard
            np.concatenate([np.concatenate([a[:, :3], b[:, :3]]),
                            np.concatenate([a[:, 3:], b[:, 3:]])]),
            np.array([2, 12]),  # axis_index * 10 + axis_size
            b,  # pbroadcast from position 1
            (ints[:2] > 6).astype(np.int32) + (ints[2:] > 6)]  # psum of bools counts
    for i, w in enumerate(want):
        np.testing.assert_allclose(mpi[f"collectives/{i}"], w, rtol=1e-6, err_msg=str(i))
    # under jit: the results out_specs split over the processes stay split, each process
    # holding its rows (JAX's types and specs for these outputs)
    assert list(mpi["smap_jit/types"]) == ["Array", "GlobalArray", "GlobalArray"]
    assert list(mpi["smap_jit/specs"]) == ["P()", "P('data',)", "P('data',)"]
    np.testing.assert_array_equal(mpi["smap_jit/shards"], [[0], [0]])  # (process 0's)
    np.testing.assert_allclose(mpi["smap_jit_reused/0"], want[7].sum(0)[:3] * want[6].sum(0),
                               rtol=1e-6)


def _check_arrays_spanning_processes(runs):
    mpi, single, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    for i, w in enumerate([x, x, 2 * x]):
        np.testing.assert_array_equal(mpi[f"arrays/{i}"], w)
        np.testing.assert_array_equal(single[f"arrays/{i}"], w)
    np.testing.assert_array_equal(mpi["singles/0"], x)
    # process 0's shards only (rows 0:2, both column blocks), and not fully addressable
    np.testing.assert_array_equal(mpi["arrays/shards"], [[0, 0], [0, 3]])
    assert not mpi["arrays/fully_addressable"] and single["arrays/fully_addressable"]
    assert "multihost_utils.process_allgather" in str(mpi["arrays/fetch_error"])
    assert "Compute on it inside jit or shard_map" in str(mpi["arrays/op_error"])
    assert mpi["bcast"] == 5.0  # process 0's value
    np.testing.assert_array_equal(mpi["gathered"], [0, 1])
    assert str(mpi["assert_equal"]).startswith("differs: Expected equal values")


# what JAX 0.10 reports for tests/mpi/programs.py's "stages" calls on the array split over the
# 2x2 mesh (4 CPU devices in one process): eval_shape, the AOT stages and make_jaxpr see the
# global type; a ShapeDtypeStruct keeps the sharding; a compiled call lays its result out
_NAMED = "NamedSharding(mesh=Mesh('data': 2, 'model': 2, axis_types=(Auto, Auto)), spec=P{}, " \
    "memory_kind=device)"
JAX_STAGES = {
    "eval_shape": "(ShapeDtypeStruct(shape=(4, 6), dtype=float32), ShapeDtypeStruct(shape=(6,),"
                  " dtype=float32), ShapeDtypeStruct(shape=(4, 4), dtype=float32))",
    "eval_shape_jit": "ShapeDtypeStruct(shape=(4, 6), dtype=float32)",
    "eval_shape_out": "ShapeDtypeStruct(shape=(4,), dtype=float32, sharding="
                      f"{_NAMED.format('()')})",
    "struct": "ShapeDtypeStruct(shape=(4, 6), dtype=float32, sharding="
              + _NAMED.format("('data', 'model')") + ")",
    "eval_shape_struct": "ShapeDtypeStruct(shape=(4, 6), dtype=float32)",
    "out_info": "ShapeDtypeStruct(shape=(4, 6), dtype=float32)",
    "args_info": "((ArgInfo(_aval=ShapedArray(float32[4,6]), donated=False),), {})",
    "jaxpr": "{ lambda ; a:f32[4,6]. let b:f32[4,6] = mul a 2.0:f32[] in (b,) }",
    "compiled_spec": "P('data', 'model')", "struct_compiled_spec": "P('data', 'model')"}


def _check_stages_of_arrays_spanning_processes(runs):
    """eval_shape, ShapeDtypeStruct, make_jaxpr and the AOT stages of an array spanning
    processes: what JAX reports for the same array in one process, and the compiled calls'
    values (NumPy's)."""
    mpi, single, _, _ = runs
    for run in (mpi, single):
        assert {k[len("stages/"):]: str(v) for k, v in run.items()
                if k.startswith("stages/")} == JAX_STAGES
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    for run in (mpi, single):
        np.testing.assert_allclose(run["stages_compiled/0"], np.sin(x) * 2, rtol=1e-6)
        np.testing.assert_allclose(run["stages_struct_compiled/0"], x - 1, rtol=1e-6)


def _check_jit_across_processes(runs):
    """Plain jit on arrays spanning processes: NumPy's values, and the output shardings the
    one-process sharded jit reports (GlobalArrays where a result is split over processes)."""
    mpi, single, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
    want = {"elementwise": np.sin(x) * 2 + x, "reduce_all": x.sum(), "reduce_rows": x.max(0),
            "reduce_cols": x.sum(1), "matmul": np.tanh(x @ w), "out_shardings": x.T * 3,
            "in_shardings": x * x[0] + 1, "local_rows": x - x.mean(0),
            "reused": 2 * x.max(0), "lanes_gram": x8.T @ x8, "lanes_center": x8 - x8.mean(0)}
    for name, value in want.items():
        np.testing.assert_allclose(mpi[f"jit_{name}/0"], value, rtol=2e-6, atol=1e-6,
                                   err_msg=name)
    specs = {k: str(v) for k, v in mpi.items() if k.startswith("jit_spec/")}
    assert specs == {k: str(v) for k, v in single.items() if k.startswith("jit_spec/")}
    # what JAX 0.10 reports for these programs (4 CPU devices in one process)
    both, one = "('data', 'model')", "('data',)"
    jax_reports = {"elementwise": f"{both}{both}", "reduce_all": f"(){both}",
                   "reduce_rows": f"('model',){both}", "reduce_cols": f"{one}{both}",
                   "matmul": f"{one}{both}", "out_shardings": f"(None, 'data'){both}",
                   "in_shardings": f"{one}{one}", "local_rows": f"{one}{one}", "mlp": f"(){one}",
                   "reused": f"('model',){both}", "lanes_gram": "()('data',)",
                   "lanes_center": "('data',)('data',)"}
    assert specs == {f"jit_spec/{k}": f"NamedSharding{v}" for k, v in jax_reports.items()}
    for run in (mpi, single):
        assert str(run["jit_mismatch"]).startswith(
            "Sharding passed to jit does not match the sharding on the respective arg."), \
            run["jit_mismatch"]


def _check_transformations_outside_jit(runs):
    """grad / jvp / vjp / linearize / vmap of a jitted function, called on arrays spanning
    processes: NumPy's values (the whole batch's gradient), and the shardings JAX reports."""
    mpi, _, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    np.testing.assert_allclose(mpi["outer_vmap/0"], np.tanh(x @ w), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(mpi["outer_jvp/0"], np.sin(x).sum(0), rtol=2e-6)
    np.testing.assert_allclose(mpi["outer_jvp/1"], (np.cos(x) * x).sum(0), rtol=2e-6)
    v = np.linspace(-1, 1, 6, dtype=np.float32)
    y = np.tanh(x @ v)
    slope = 1 - y ** 2
    for k, want in enumerate([y, slope @ x, slope[:, None] * v]):  # vjp, pulling back ones
        np.testing.assert_allclose(mpi[f"outer_vjp/{k}"], want, rtol=1e-5, atol=1e-6)
    for k, want in enumerate([y, slope * 2 * (x @ v)]):  # linearize, along (v, x)
        np.testing.assert_allclose(mpi[f"outer_linearize/{k}"], want, rtol=1e-5, atol=1e-6)
    batch_grad = jax.grad(loss, argnums=1)(init(jax.random.key(1)), DATA, TARGET)
    np.testing.assert_allclose(mpi["outer_jit_batch_grad/0"], batch_grad, rtol=1e-5, atol=1e-7)
    # JAX 0.10's reports for the same calls on 4 CPU devices in one process
    jax_reports = {"grad": "()('data',)", "batch_grad": "('data',)('data',)",
                   "vmap": "('data',)('data', 'model')", "jvp": "('model',)('data', 'model')"}
    assert {k: str(v) for k, v in mpi.items() if k.startswith("outer_spec/")} == \
        {f"outer_spec/{k}": f"NamedSharding{v}" for k, v in jax_reports.items()}


def _check_results_split_over_processes(runs):
    """On meshes interleaving the processes (and from a jit nested in a jit) a result split
    over the processes is a GlobalArray of this process's pieces with the out_specs' sharding
    (JAX's report), not the gathered whole; NumPy's values once gathered."""
    mpi, _, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
    position = np.arange(1.0, 5.0, dtype=np.float32)
    want = {"woven_eager": ("P('data',)", [[0, 0], [2, 0]], x8 * position[:, None]),
            "woven_jit": ("P('data',)", [[0, 0], [2, 0]], x8 * position[:, None]),
            "woven_in_shardings": ("P('data',)", [[0, 0], [2, 0]], np.sin(x8)),
            "local_first": ("P(('model', 'data'),)", [[0, 0], [4, 0]],
                            x8.T * np.repeat(position, 2)[:, None]),
            "nested_jit": ("P('data',)", [[0, 0]], (x[:2] + x[2:])[:, [0, 1, 2, 3, 4, 5]]
                           .reshape(2, 2, 3).transpose(1, 0, 2).reshape(4, 3)),
            "from_callback": ("P('data',)", [[0, 0], [2, 0]], x8),
            "from_callback_jit": ("P('data',)", [[0, 0], [2, 0]], x8 * 3)}
    for name, (spec, shards, value) in want.items():
        assert str(mpi[f"split/{name}/type"]) == "GlobalArray", name
        assert str(mpi[f"split/{name}/spec"]) == spec, name
        np.testing.assert_array_equal(mpi[f"split/{name}/shards"], shards, err_msg=name)
        np.testing.assert_allclose(mpi[f"split/{name}/value"], value, rtol=2e-6, err_msg=name)
    np.testing.assert_allclose(mpi["split/fed_back"], x8 * position[:, None] + 1, rtol=2e-6)
    # no allgather of the whole (4 x 8 float32, 128 bytes): on a mesh of one block per process
    # nothing moves; interleaved, one alltoall each way, of one row (32 bytes) per peer, for
    # each process's pieces (p0 holds rows 0 and 2, computes 0 and 1). A plain jit (no
    # shard_map) computes on the pieces each process holds: nothing moves (it was an alltoall
    # each way, 128 bytes), but for a replicated operand cut at the positions computed on
    halves = np.repeat([1.0, 2.0], 2).astype(np.float32)[:, None]
    for name, value, alltoalls, spec in [
            ("rows_scaled", x8 * halves, 0, "P('data',)"),
            ("woven_scaled", x8 * position[:, None], 1, "P('data',)"),
            ("woven_fed_back", x8 * position[:, None] + 1, 0, "P('data',)"),
            ("woven_plain_transposed", x8.T * 2, 0, "P(None, 'data')"),
            ("woven_plain_host", x8 * 2, 2, "P('data',)"),
            ("reversed_plain", np.sin(x8) * 2, 0, "P(None, 'data')")]:
        assert int(mpi[f"moved/{name}/allgather"]) == 0, name
        assert int(mpi[f"moved/{name}/alltoall"]) == alltoalls * 2 * 32, name
        assert str(mpi[f"moved/{name}/spec"]) == spec, name
        np.testing.assert_allclose(mpi[f"moved/{name}/value"], value, rtol=2e-6, err_msg=name)
    _check_jit_over_blocks(mpi)
    np.testing.assert_allclose(mpi["moved/first_rows/value"], x8[:2], rtol=2e-6)
    # rows split over the processes taken split by columns: each process receives the 2 x 3
    # float32 part of its column block it lacks (24 bytes per peer), before the whole is
    # gathered once to compare it (96 bytes)
    assert int(mpi["moved/regrouped/alltoall"]) == 2 * 24
    assert int(mpi["moved/regrouped/allgather"]) == 2 * 48


def _check_jit_over_blocks(mpi):
    """jit(shard_map) over GlobalArrays: a result split over the processes comes back as this
    process's block (JAX's sharding and shards), and nothing is Allgathered for it unless the
    program reads the gathered value too; NumPy's values once gathered."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
    ints = np.arange(16, dtype=np.int32).reshape(4, 4)
    gram = x8 @ x8.T
    scaled = x * np.repeat([1.0, 2.0], 3)  # (cells_scale's result)
    gram8 = x8 @ np.linspace(0.5, 1.5, 64, dtype=np.float32).reshape(8, 8)
    # centred columns cancel: their float32 rounding (a partial sum per process, then the
    # Allreduce, in other orders than NumPy's) is within a few eps of the values summed
    centred = 4 * np.finfo(np.float32).eps * np.abs(gram8).max()
    lined = x8 * np.arange(1.0, 5.0, dtype=np.float32)[:, None]  # (line_scale's, woven_scale's)
    softmax = np.exp((gram - gram.max(1, keepdims=True)) / 64)
    softmax /= softmax.sum(1, keepdims=True)
    rows, cells = "P('data',)", "P('data', 'model')"
    # per case: the Allgather's bytes (its buffer: both processes' blocks), then per result
    # (value, type, spec, this process's shards; None: not checked)
    want = {
        # no Allgather of the operand, nor of the result: nothing moves
        "rows_matmul": (0, [(gram, "GlobalArray", rows, [[0, 0]])]),
        # the result is also summed over its rows: this process's rows summed, then one
        # Allreduce of the float32[4] (16 bytes; it was an Allgather of both 2 x 4 blocks, 64),
        # the returned result still the block
        "rows_matmul_read": ({"allgather": 0, "allreduce": 16},
                             [(gram, "GlobalArray", rows, [[0, 0]]),
                              (gram.sum(0), "Array", "P()", None)]),
        # computed from the result in the same jit: the block computed on, nothing gathered,
        # the sharding JAX reports (over Auto axes trailing unsplit dimensions left out)
        "rows_matmul_scaled": (0, [(2 * gram, "GlobalArray", rows, [[0, 0]])]),
        "rows_matmul_chain": (0, [(np.tanh(gram).T.sum(0), "GlobalArray", rows, [[0]]),
                                  (gram.T, "GlobalArray", "P(None, 'data')", [[0, 0]]),
                                  (gram * np.arange(1.0, 5.0), "GlobalArray", rows,
                                   [[0, 0]]),
                                  (gram.max(1) - 1, "GlobalArray", rows, [[0]]),
                                  (gram.reshape(4, 2, 2), "GlobalArray", rows,
                                   [[0, 0, 0]]),
                                  (gram.reshape(16), "GlobalArray", rows, [[0]])]),
        # replicated operands of its shape: this process's block cut out of them, no gather
        "rows_matmul_column": (0, [(gram + np.arange(4.0)[:, None], "GlobalArray", rows,
                                    [[0, 0]])]),
        "rows_matmul_bias": (0, [(gram + x8.T[:4] * 3, "GlobalArray", rows, [[0, 0]])]),
        # an operand split over the processes itself, sliced: the slice keeps the split rows
        # whole, so each process slices its own block, and it is laid out as the result: no
        # gather (it was an Allgather of the result, 64 bytes, and of the argument for the
        # slice, 128)
        "rows_matmul_split_operand": (0, [(gram + x8[:, :4], "GlobalArray", rows, [[0, 0]])]),
        # two devices per process: values computed from the result stay blocks (the operand
        # not gathered either, as in cells_scaled), the sum over the columns split within the
        # process reduced there
        "cells_chain": (0, [(scaled.T + 1, "GlobalArray", "P('model', 'data')",
                              [[0, 0], [3, 0]]),
                             (np.exp(scaled).sum(1), "GlobalArray", rows, [[0], [0]]),
                             (scaled + np.arange(6.0), "GlobalArray", cells,
                              [[0, 0], [0, 3]])]),
        "rows_matmul_normalized": (0, [(softmax, "GlobalArray", rows, [[0, 0]]),
                                       (gram - gram.mean(1, keepdims=True), "GlobalArray",
                                        rows, [[0, 0]]),
                                       (gram[:, None, :] * 2, "GlobalArray", rows,
                                        [[0, 0, 0]])]),
        # a jit inside jit: the inner call no longer gathers the result its caller returns
        "nested_matmul": (0, [(gram, "GlobalArray", rows, [[0, 0]])]),
        "nested_scaled": (0, [(2 * gram - 1, "GlobalArray", rows, [[0, 0]])]),
        "ints_row_sums": (0, [((ints * 2).sum(1), "GlobalArray", rows, [[0]])]),
        # out_shardings replicating the result: gathered (as before), every process whole
        "rows_matmul_replicated": (2 * 32, [(gram, "Array", "P()", [[0, 0]])]),
        # int32 blocks (no pvary ahead of shard_map's cut of the block)
        "ints_doubled": (0, [(ints * 2 + np.repeat([0, 1], 2)[:, None], "GlobalArray", rows,
                              [[0, 0]])]),
        # two devices per process (a 2-d mesh, a 4-position axis), a mesh interleaving the
        # processes (the pieces of the block exchanged by alltoall first), columns split: the
        # cut of the gathered operand read through the devices' reshapes and transposes
        # (compiler/passes.py `_own_block_of_gather`), no Allgather either
        "cells_scaled": (0, [(x * np.repeat([1.0, 2.0], 3), "GlobalArray", cells,
                              [[0, 0], [0, 3]])]),
        "woven_blocks": (0, [(x8 * np.arange(1.0, 5.0)[:, None], "GlobalArray", rows,
                              [[0, 0], [2, 0]])]),
        "line_scaled": (0, [(x8 * np.arange(1.0, 5.0)[:, None], "GlobalArray", rows,
                             [[0, 0], [1, 0]])]),
        "cols_scaled": (0, [(x8 * np.repeat([1.0, 2.0], 4), "GlobalArray", "P(None, 'data')",
                             [[0, 0]])]),
        "rows_identity": (0, [(x8, "GlobalArray", rows, [[0, 0]])]),
        # an argument split over the processes as the result is (or as the block of two
        # devices per process), beside it: this process's block of it, nothing gathered (it
        # was an Allgather of the 4 x 8 result, 128 bytes; cells: 192, the sum P() where JAX
        # 0.10 reports P('model',)). JAX 0.10 reports these specs
        "rows_matmul_and_arg": (_nothing_but(), [
            (gram8 + x8, "GlobalArray", rows, [[0, 0]]),
            (gram8 * np.tanh(x8) - x8, "GlobalArray", rows, [[0, 0]])]),
        "cells_and_arg": (_nothing_but(allreduce=24), [
            (scaled + x, "GlobalArray", cells, [[0, 0], [0, 3]]),
            (scaled.sum(0), "Array", "P('model',)", None)]),
        # sums, maxima and minima over the dimension split over the processes: one Allreduce
        # of this process's partial result each (float32[8]: 32 bytes; it was an Allgather of
        # the whole result, 128 bytes, read by all three; ints: 192, one per shard_map call),
        # whole on every process; the centred columns reported P() before, JAX P('data',)
        "rows_matmul_column_stats": (_nothing_but(allreduce=3 * 32), [
            (gram8.sum(0), "Array", "P()", None), (gram8.max(0), "Array", "P()", None),
            (gram8 - gram8.mean(0), "GlobalArray", rows, [[0, 0]], centred)]),
        "ints_column_stats": (_nothing_but(allreduce=16 + 16 + 4), [
            ((ints * 2).sum(0), "Array", "P()", None), ((ints * 2).min(0), "Array", "P()", None),
            ((ints * 2).sum(), "Array", "P()", None)]),
        # inside a jit inside jit: the inner call's Allreduce, its gather dropped (128 before)
        "nested_column_sums": (_nothing_but(allreduce=32), [
            (gram8.sum(0) * 2, "Array", "P()", None)]),
        # (a 4-position axis, two per process: 256 bytes of Allgather before)
        "line_column_sums": (_nothing_but(allreduce=32), [
            (lined.sum(0), "Array", "P()", None),
            (lined * x8, "GlobalArray", rows, [[0, 0], [1, 0]])]),
        # no shard_map: the partitioner's own program, nothing gathered either (the column
        # slice was computed on the gathered argument: 128 bytes)
        "rows_plain": (_nothing_but(allreduce=32), [
            (x8 * 2, "GlobalArray", rows, [[0, 0]]), (np.tanh(x8), "GlobalArray", rows, [[0, 0]]),
            (x8.sum(0), "Array", "P()", None), (x8[:, 2:6], "GlobalArray", rows, [[0, 0]])]),
        # a mesh interleaving the processes: the argument's pieces fetched for the block the
        # process computes on (32 bytes from each peer, counted as the alltoall's 64), each
        # split result's pieces sent back (64 each), the sum one Allreduce; it was 384 bytes
        # of Allgather (the result, for each derived value) and 128 of alltoall, the scaled
        # result returned whole (P(), JAX: P('data',))
        # a plain jit there: each process computes on the pieces it holds, nothing but the
        # sum's Allreduce moves (an alltoall each way before: 128 bytes, 64 for the rows'
        # maxima)
        "woven_plain": (_nothing_but(allreduce=32), [
            (x8 * 3, "GlobalArray", rows, [[0, 0], [2, 0]]), (x8.sum(0), "Array", "P()", None),
            (np.tanh(x8).max(1), "GlobalArray", rows, [[0], [2]])]),
        "woven_derived": (_nothing_but(allreduce=32, alltoall=3 * 64), [
            (lined * 2, "GlobalArray", rows, [[0, 0], [2, 0]]),
            (lined.sum(0), "Array", "P()", None),
            (lined + x8, "GlobalArray", rows, [[0, 0], [2, 0]])])}
    for name, (moved, outs) in want.items():
        moved = moved if isinstance(moved, dict) else {"allgather": moved}
        assert {k: int(mpi[f"moved/{name}/{k}"]) for k in moved} == moved, name
        for i, (value, kind, spec, shards, *atol) in enumerate(outs):
            np.testing.assert_allclose(mpi[f"moved/{name}/value/{i}"], value, rtol=2e-6,
                                       atol=atol[0] if atol else 0, err_msg=name)
            for key, w in (("type", kind), ("spec", spec)):
                assert w is None or str(mpi[f"moved/{name}/{key}/{i}"]) == w, (name, key)
            if shards is not None:
                np.testing.assert_array_equal(mpi[f"moved/{name}/shards/{i}"], shards,
                                              err_msg=name)
    np.testing.assert_array_equal(mpi["moved/rows_split_after"], x8)


def _nothing_but(**moved) -> dict:
    """The bytes each collective moves per call: those named, none through the others."""
    return {"allgather": 0, "allreduce": 0, "alltoall": 0, **moved}


def _check_mesh_with_the_process_axis_minor(runs):
    """A 2x2 mesh ('model', 'data') whose devices are jax.devices() transposed: 'data' spans
    the processes although it is the minor axis. NumPy's values (eagerly and under jit); a
    mesh interleaving the processes along its one axis; a dimension split over a local axis
    before the process axis."""
    mpi, _, _, _ = runs
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
    total = x[:, :3].sum(0) + x[:, 3:].sum(0)  # rows over 'data', columns over 'model'
    rows_at = np.repeat([0.0, 1.0], 2)[:, None]  # axis_index('data') of each row block
    for k in (0, 2):  # shard_map, then jit(shard_map)
        np.testing.assert_allclose(mpi[f"minor_axis/{k}"], total, rtol=1e-6)
        np.testing.assert_allclose(mpi[f"minor_axis/{k + 1}"], x * 2 + rows_at, rtol=1e-6)
    np.testing.assert_allclose(mpi["minor_axis_jit/0"], x.sum(0), rtol=1e-6)
    np.testing.assert_allclose(mpi["minor_axis_jit/1"], np.tanh(x @ w), rtol=2e-6, atol=1e-6)
    # a 1-d mesh interleaving the processes (p0, p1, p0, p1): position k still has rows k
    x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
    np.testing.assert_allclose(mpi["woven/0"], x8, rtol=1e-6)  # all_gather of the row sums
    np.testing.assert_allclose(mpi["woven/1"], (x8 * np.arange(1.0, 5.0)[:, None]).sum(0),
                               rtol=1e-6)
    np.testing.assert_allclose(mpi["woven/2"], np.sin(x8), rtol=1e-6)  # jit, in_shardings
    np.testing.assert_allclose(mpi["woven/3"], x8.sum(0), rtol=1e-6)
    # rows split over ('model', 'data'), the local axis first: position = 2 model + data
    scaled = x8.T * np.repeat(np.arange(1.0, 5.0), 2)[:, None]
    for k in (0, 2):  # shard_map, then jit(shard_map)
        np.testing.assert_allclose(mpi[f"local_first/{k}"], scaled.sum(0), rtol=1e-6)
        np.testing.assert_allclose(mpi[f"local_first/{k + 1}"], scaled, rtol=1e-6)


def _check_donation(runs):
    """Donated arrays spanning processes (and replicated over them) are deleted by the call,
    as in one process; the split one's block is reused for the result; using one again
    raises Array's error with its global shape."""
    mpi, single, _, _ = runs
    for run in (mpi, single):
        np.testing.assert_array_equal(run["donation/deleted"], [True, True])
        assert str(run["donation/again"]).startswith(
            "Array has been deleted with shape=float32[4,6]. It was donated"), run
    assert mpi["donation/reused"]


def _check_data_parallel_training_equals_whole_batch(runs):
    """Two processes averaging their shards' gradients train the parameters one process
    gets from the whole batch."""
    mpi, _, _, _ = runs
    params = init(jax.random.key(0))
    step = jax.jit(lambda p: jax.tree_util.tree_map(
        lambda w, g: w - LR * g, p, jax.grad(loss)(p, DATA, TARGET)))
    for _ in range(STEPS):
        params = step(params)
    leaves = jax.tree_util.tree_leaves(params)
    for i, w in enumerate(leaves):
        np.testing.assert_allclose(mpi[f"mlp/{i}"], w, rtol=1e-5, atol=1e-6)
        # the same step as plain jit on a batch split over the processes
        np.testing.assert_allclose(mpi[f"jit_mlp/{i}"], w, rtol=1e-5, atol=1e-6)
        # and with the gradient taken outside jit: grad(jit(loss)) on the split batch
        np.testing.assert_allclose(mpi[f"outer_jit_mlp/{i}"], w, rtol=1e-5, atol=1e-6)
    grads = jax.tree_util.tree_leaves(jax.grad(loss)(init(jax.random.key(1)), DATA, TARGET))
    for i, g in enumerate(grads):
        np.testing.assert_allclose(mpi[f"outer_grad/{i}"], g, rtol=1e-5, atol=1e-6)


def _check_disagreeing_and_missing_peers_raise(runs):
    """Shapes that differ across processes: both raise; a peer that stalls between the
    exchange of headers and its data (a ppermute, point to point): the deadline (2 s here);
    a peer that never joins (a psum, a ppermute, pbroadcasts): the deadline (1 s), not a
    hang."""
    _, _, reports, _ = runs
    for rank in (0, 1):
        assert "INVALID_ARGUMENT" in reports[rank] and "float32[2]" in reports[rank] and \
            "float32[3]" in reports[rank], reports[rank]
    # process 1 passed the headers' exchange and then never posted its data
    assert "stalled after the headers of ppermute over the process axis 'data'" in reports[1]
    stalled = reports[0].split("\nstalled peer: ")[1].split("\ntimeout: ")[0]
    assert stalled.startswith("JaxRuntimeError after "), stalled
    assert "DEADLINE_EXCEEDED: ppermute over the process axis 'data' waited 2 s for its peer " \
        "processes' data, after every one of them had called it" in stalled, stalled
    seconds = float(stalled.split("JaxRuntimeError after ")[1].split(" s")[0])
    assert 1.9 <= seconds < 60, stalled  # (the deadline, plus a busy machine's delays)
    assert "DEADLINE_EXCEEDED" in reports[0] and "tracejit_collective_timeout" in reports[0]
    seconds = float(reports[0].split("\ntimeout: JaxRuntimeError after ")[1].split(" s")[0])
    assert 0.9 <= seconds < 60  # (the deadline, plus compiling the psum on a busy machine)
    # the ppermute's exchange between the positions (two per process) waits no longer either
    ppermute = reports[0].split("ppermute timeout: ")[1]
    assert "DEADLINE_EXCEEDED: ppermute over the process axis 'data'" in ppermute, ppermute
    for source in (0, 2):  # (the source on the process left waiting, then on the missing one)
        bcast = reports[0].split(f"pbroadcast {source} timeout: ")[1].split("pbroadcast 2")[0]
        assert "DEADLINE_EXCEEDED: pbroadcast over the process axis 'data'" in bcast, bcast


def _check_initialize_checks_its_arguments_against_mpi(runs):
    """In a plain process MPI is one process of one: arguments saying otherwise are errors."""
    out = runs[3]
    assert "ERR" in out and "mpiexec -n 2" in out, out
    assert "True 1 [CpuDevice(id=0)]" in out, out


def test_axis_index_groups_across_processes(tmp_path):
    """Collectives within groups of positions of an axis spanning the processes (groups
    crossing the processes and within them; reversed order) give under mpiexec -n 2 what they
    give in one process (tests/test_axis_index_groups.py checks that against JAX)."""
    python, script = sys.executable, str(HERE / "groups.py")
    started = {
        "mpi": subprocess.Popen([mpiexec(), "-n", "2", python, script, str(tmp_path / "mpi"),
                                 "mpi"], env=_env(2), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True),
        "single": subprocess.Popen([python, script, str(tmp_path / "single"), "single"],
                                   env=_env(4), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)}
    logs = {k: p.communicate(timeout=240)[0] for k, p in started.items()}
    for k, p in started.items():
        assert p.returncode == 0, f"{k} run failed:\n{logs[k][-4000:]}"
    with np.load(tmp_path / "mpi.0.npz") as a, np.load(tmp_path / "single.0.npz") as b:
        ours, oracle = dict(a), dict(b)
    # bytes received per call within groups (Allgather, Reduce_scatter, point to point), where
    # each took an Allgather of every position's 4 x 2 float32 block (128 bytes): psum_scatter
    # one Reduce_scatter of the process's two 2 x 2 results (32 bytes); all_to_all the 2 x 2
    # chunks (16 bytes), all_gather and psum the blocks (32 bytes), that the process's two
    # positions need from their partners on the other process — none when the groups lie
    # within the processes
    for name, want in {"psum_scatter_across": [0, 32, 0], "psum_scatter_within": [0, 32, 0],
                       "all_to_all_across": [0, 0, 32], "all_to_all_within": [0, 0, 0],
                       "all_gather_across": [0, 0, 64], "all_gather_within": [0, 0, 0],
                       "psum_across": [0, 0, 64], "psum_within": [0, 0, 0]}.items():
        np.testing.assert_array_equal(ours.pop(f"moved/{name}"), want, err_msg=name)
    assert sorted(ours) == sorted(oracle)
    for k in oracle:
        if oracle[k].dtype.kind == "i":  # (ints: bit for bit, whatever the order of the sum)
            np.testing.assert_array_equal(ours[k], oracle[k], err_msg=k)
        np.testing.assert_allclose(ours[k], oracle[k], rtol=2e-6, atol=1e-6, err_msg=k)
    # and against NumPy: shard k (4 rows) gets the sum of its group's shards
    shards = (np.arange(32, dtype=np.float32).reshape(16, 2) / 7.0).reshape(4, 4, 2)
    want = np.concatenate([shards[[0, 2]].sum(0), shards[[1, 3]].sum(0)] * 2)
    np.testing.assert_allclose(ours["psum_across"], want, rtol=1e-6)


def _three_runs(tmp_path: Path, script: str, devices: int = 2) -> dict:
    """Run tests/mpi/`script` (written for JAX) three ways at once — under mpiexec -n 2
    (`devices` each), in one process of twice as many devices (both through `python -m
    tracejit`) and in real JAX (its recording, tests/mpi/recorded/, while that matches) — and
    return what each saved: {"mpi.0", "mpi.1", "single.0", "jax.0"} -> arrays."""
    python, path = sys.executable, str(HERE / script)
    alias = [python, "-m", "tracejit", path]
    theirs = recorded(HERE / script, HARNESS)
    started = {
        "mpi": subprocess.Popen([mpiexec(), "-n", "2", *alias, str(tmp_path / "mpi"), "mpi"],
                                env=_env(devices), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True),
        "single": subprocess.Popen([*alias, str(tmp_path / "single"), "single"],
                                   env=_env(2 * devices), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)}
    if theirs is None:
        started["jax"] = start_jax(HERE / script, tmp_path / "jax")
    logs = {k: p.communicate(timeout=240)[0] for k, p in started.items()}
    for k, p in started.items():
        assert p.returncode == 0, f"{k} run failed:\n{logs[k][-4000:]}"
    runs = {"jax.0": theirs}
    for name in ["mpi.0", "mpi.1", "single.0"] + (["jax.0"] if theirs is None else []):
        with np.load(tmp_path / f"{name}.npz") as saved:
            runs[name] = dict(saved)
    return runs


def _bit_for_bit(runs: dict) -> None:
    """The two processes agree, then with the one-process run, then with real JAX: the same
    names, shapes, dtypes and bits (_three_runs' results)."""
    for (a, b) in (("mpi.1", "mpi.0"), ("mpi.0", "single.0"), ("single.0", "jax.0")):
        assert sorted(runs[a]) == sorted(runs[b]), (a, b)
        for k in runs[b]:
            ours, oracle = runs[a][k], runs[b][k]
            assert ours.shape == oracle.shape and ours.dtype == oracle.dtype, (a, b, k)
            np.testing.assert_array_equal(ours, oracle, err_msg=f"{a} {b} {k}")


def test_check_vma_across_processes(tmp_path):
    """shard_map's default check_vma=True over an axis spanning the processes (tests/mpi/vma.py,
    written for JAX): under mpiexec -n 2 the types, gradients inside shard_map (an invariant
    input's summed over the processes), data-parallel training and errors of one process of
    four devices, which are real JAX's; every rank raises the errors, and the collectives after
    them still meet."""
    runs = _three_runs(tmp_path, "vma.py")
    mpi = runs["mpi.0"]
    # (on a mesh spanning the processes every jit result is a GlobalArray with its NamedSharding,
    # as JAX's jit returns one not fully addressable: the split block and the replicated one)
    assert list(mpi.pop("mpi/split_types")) == ["GlobalArray", "GlobalArray"]
    runs["mpi.1"].pop("mpi/split_types")
    # the psum of an invariant value calls no MPI (nor its pmean): one Allreduce, the varying's
    assert [str(runs[r].pop("mpi/allreduces")) for r in ("mpi.0", "mpi.1")] == ["1", "1"]
    for ours, oracle in (("mpi.0", "single.0"), ("mpi.1", "mpi.0"), ("single.0", "jax.0")):
        a, b = runs[ours], runs[oracle]
        assert sorted(a) == sorted(b), (ours, oracle)
        for k in b:
            if b[k].dtype.kind == "U":  # the types and JAX's error texts, word for word
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"{ours} {k}")
            else:
                np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{ours} {k}")
    assert all(str(mpi[k]) != "no error" for k in mpi if k.startswith("error/"))
    # the invariant input's gradient is the whole batch's (summed over 'data'); without the
    # types each process keeps its own rows' gradient
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
    w = np.linspace(-1, 1, 6, dtype=np.float32)
    per_row = np.cos(x * w) * x
    for k in ("grad_1d/0", "grad_1d/1", "grad_2d/0", "grad_2d/1", "grad_all/0", "grad_all/1",
              "grad_psum/0", "grad_outer/0", "grad_outer/1", "grad_jit/0"):
        np.testing.assert_allclose(mpi[k], per_row.sum(0), rtol=1e-5, err_msg=k)
    np.testing.assert_allclose(mpi["grad_unchecked/0"],
                               [per_row[:2].sum(0), per_row[2:].sum(0)], rtol=1e-5)
    for i in range(4):  # the parameters one process trains on the whole batch
        np.testing.assert_allclose(mpi[f"dp/{i}"], mpi[f"dp_whole_batch/{i}"], rtol=1e-5,
                                   atol=1e-6)


def test_grads_of_collective_losses(tmp_path):
    """Gradients of a loss a collective reduces inside shard_map over an axis spanning the
    processes (tests/mpi/grads.py, written for JAX), one and two positions per process,
    check_vma True and False, grad outside (eager and jit) and inside, out_specs P() and
    P('data'), psum / pmean / all_gather / psum_scatter: under mpiexec -n 2 those of one
    process of four devices, which are real JAX's, and NumPy's for the psum'd loss. (A result
    leaving replicated shared its cotangent among the processes under check_vma too: 1/2 of
    JAX's gradient; a psum over two positions of a process doubled it when taken inside.)"""
    runs = _three_runs(tmp_path, "grads.py")
    for ours, oracle in (("mpi.0", "single.0"), ("mpi.1", "mpi.0"), ("single.0", "jax.0")):
        a, b = runs[ours], runs[oracle]
        assert sorted(a) == sorted(b) and len(b) > 150, (ours, oracle)
        for k in b:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-5 * np.abs(b[k]).max(),
                                       err_msg=f"{ours} {k}")
    # the psum'd loss's gradient from NumPy: of sum(sin(x w) (1 + x)) over every row
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32).astype(np.float64)
    w = rng.standard_normal(4).astype(np.float32).astype(np.float64)
    gx = np.cos(x * w) * w * (1 + x) + np.sin(x * w)
    gw = (np.cos(x * w) * x * (1 + x)).sum(0)
    mpi = runs["mpi.0"]
    for m in ("one", "two"):
        for k in (f"outer_{m}_checked_psum_replicated", f"outer_{m}_unchecked_psum_replicated"):
            for i, want in ((1, gx), (2, gw), (3, gx), (4, gw)):  # (eager, then jit)
                np.testing.assert_allclose(mpi[f"{k}/{i}"], want, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{k}/{i}")
        n = 2 if m == "one" else 4  # (P('data'): the loss once per position)
        np.testing.assert_allclose(mpi[f"outer_{m}_checked_psum_split/1"], n * gx, rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(mpi[f"inner_{m}_checked_psum/0"], gx, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(mpi[f"inner_{m}_checked_psum/1"], gw, rtol=1e-4, atol=1e-5)


def test_routing_over_several_positions_per_process(tmp_path):
    """ppermute, psum_scatter and all_to_all over an axis of four positions, two on each of
    the two processes (tests/mpi/routing.py, written for JAX): under mpiexec -n 2 the values of
    one process of four devices and of real JAX — bit for bit where data only moves (ppermute,
    all_to_all, and every int), within the float sum's bound for psum_scatter, whose order
    differs (this process's lanes, then the processes) — and only the blocks that cross the
    processes move between them."""
    runs = _three_runs(tmp_path, "routing.py")
    moved = {k: int(v) for k, v in runs["mpi.0"].items() if k.startswith("moved/")}
    assert moved == {k: int(v) for k, v in runs["mpi.1"].items() if k.startswith("moved/")}
    for run in runs.values():
        for k in [k for k in run if k.startswith("moved/")]:
            del run[k]
    # each position's block is float32[2, 8, 4] (256 bytes); a psum_scatter result 2 x 2 x 4
    # (64); an all_to_all chunk 2 x 2 x 4 (64). SHIFT: one block enters each process; LOCAL:
    # none; CROSS: both; psum_scatter: this process's two results; all_to_all: the 2 x 2 chunks
    # from each process (those from itself included, as MPI's Alltoall counts them). No
    # Allgather of every position's value, as before (2048 bytes each, under check_vma).
    want = {"shift": ("sendrecv", 256), "local": ("sendrecv", 0), "cross": ("sendrecv", 512),
            "psum_scatter": ("reduce_scatter", 128), "all_to_all": ("alltoall", 512)}
    for name, (code, nbytes) in want.items():
        for c in ("allgather", "allreduce", "reduce_scatter", "alltoall", "sendrecv"):
            assert moved[f"moved/{name}/{c}"] == (nbytes if c == code else 0), (name, c)
    x = np.random.default_rng(0).standard_normal((8, 8, 4)).astype(np.float32)
    blocks = x.reshape(4, 2, 8, 4).astype(np.float64)
    total, magnitude = blocks.sum(0), np.abs(blocks).sum(0)
    # the psum_scatter cases' global results (the positions' results stacked) of the sum t
    summed = [lambda t: t.reshape(2, 4, 2, 4).transpose(1, 0, 2, 3).reshape(8, 2, 4),
              lambda t: t.transpose(2, 0, 1).reshape(8, 8), lambda t: t.reshape(8, 2, 4)]
    for (a, b) in (("mpi.1", "mpi.0"), ("mpi.0", "single.0"), ("single.0", "jax.0")):
        assert sorted(runs[a]) == sorted(runs[b]), (a, b)
        for k in runs[b]:
            ours, oracle = runs[a][k], runs[b][k]
            assert ours.shape == oracle.shape and ours.dtype == oracle.dtype, (a, b, k)
            group, i = k.split("/")
            if group.startswith("grad"):  # (sums of terms up to the largest entry's size, in
                # each run's own order: an error relative to that, not to a cancelled entry)
                np.testing.assert_allclose(ours, oracle, rtol=1e-5,
                                           atol=1e-6 * np.abs(oracle).max(), err_msg=k)
            elif ours.dtype.kind == "f" and i in ("4", "5", "6"):
                # psum_scatter of floats: each run's sum of four terms is within 3 eps of their
                # magnitudes' sum of the exact one (float64), so two runs within twice that
                exact = summed[int(i) - 4](total) * (-2 if group == "vmap" else 1)
                bound = 3 * np.finfo(np.float32).eps * summed[int(i) - 4](magnitude) * \
                    (2 if group == "vmap" else 1)
                if group == "vmap":  # (the second of the two vmapped values: -2 a)
                    ours, oracle = ours[:, 1], oracle[:, 1]
                for run in (ours, oracle):
                    assert (np.abs(run - exact) <= bound).all(), (a, b, k)
            else:
                np.testing.assert_array_equal(ours, oracle, err_msg=f"{a} {b} {k}")


def test_collectives_over_several_axes_across_processes(tmp_path):
    """all_gather, psum_scatter, all_to_all (and axis_index, psum, pmax, pmean, groups) over
    two mesh axes at once, one of them spanning the processes (tests/mpi/several_axes.py,
    written for JAX; 2x2 meshes with the process axis first and second, 4x1 and 1x4, the
    axes named in both orders): under mpiexec -n 2 the values and gradients of one process of
    four devices, which are real JAX's — bit for bit, on small integers whose sums are exact."""
    runs = _three_runs(tmp_path, "several_axes.py")
    moved = [{k: int(run.pop(k)) for k in list(run) if k.startswith("moved/")}
             for run in (runs["mpi.0"], runs["mpi.1"])]
    assert moved[0] == moved[1] and len(moved[0]) == 12
    for mesh in ("grid", "flipped"):  # (the local steps move nothing between the processes)
        for name in ("ag", "ag_yx"):
            assert moved[0][f"moved/{mesh}/{name}"] == moved[0][f"moved/{mesh}/ag_alone"] > 0
        for name in ("ps", "ps_yx"):
            assert moved[0][f"moved/{mesh}/{name}"] == moved[0][f"moved/{mesh}/ps_alone"] > 0
    assert len(runs["jax.0"]) > 300
    _bit_for_bit(runs)


def test_local_axis_before_the_lanes_of_a_process_axis(tmp_path):
    """A 2x4 mesh whose first axis lies within the processes and whose second spans them, each
    process holding two of its positions (tests/mpi/lanes_after_local.py, four devices a
    process): a block times a constant, collectives over one axis and both, and a gradient,
    under mpiexec -n 2 as in one process of eight devices and in real JAX, bit for bit."""
    runs = _three_runs(tmp_path, "lanes_after_local.py", devices=4)
    assert len(runs["jax.0"]) == 29
    _bit_for_bit(runs)


def test_pbroadcast_over_processes(tmp_path):
    """pbroadcast over a process axis (tests/mpi/broadcast.py, written for JAX): under mpiexec
    -n 2 the values of one process of four devices and of real JAX (its documented psum
    equivalent: JAX 0.10 has no CPU lowering of pbroadcast), bit for bit for floats and ints,
    gradients within their sums' rounding and against the closed form; each process receives
    the source's value once, by one Bcast (the source's process nothing), and no Allgather of
    every position's value."""
    runs = _three_runs(tmp_path, "broadcast.py")
    # a position's block is float32[2, 8, 4] (256 bytes); positions 0, 1 are process 0's. On
    # the 2x2 mesh each process's block is its two devices' (512 bytes). The gradient's
    # transpose sums the cotangents over the axis (one Allreduce of this process's lanes' sum)
    codes = ("allgather", "allreduce", "reduce_scatter", "alltoall", "sendrecv", "bcast")
    for rank in (0, 1):
        want = {f"line_{s}": {"bcast": 256 if s // 2 != rank else 0} for s in range(4)}
        want["grid"] = {"bcast": 512 if rank == 0 else 0}
        want["grad"] = {"bcast": 256 if rank == 0 else 0, "allreduce": 256}
        for name, moved in want.items():
            for code in codes:
                assert int(runs[f"mpi.{rank}"][f"moved/{name}/{code}"]) == moved.get(code, 0), \
                    (rank, name, code)
        for k in [k for k in runs[f"mpi.{rank}"] if k.startswith("moved/")]:
            del runs[f"mpi.{rank}"][k]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 8, 4)).astype(np.float32)
    rng.integers(-1000, 1000, (8, 8, 4))
    w = rng.standard_normal((8, 8, 4)).astype(np.float32)
    # every position's loss is sum_i sum(sin(block i) * its w) * (i + 1): the gradient at
    # position p, cos(block p) * (p + 1) * the sum of the positions' w (float64)
    blocks = x.reshape(4, 2, 8, 4).astype(np.float64)
    total_w = w.reshape(4, 2, 8, 4).astype(np.float64).sum(0)
    grads = {"grad": np.stack([np.cos(blocks[p]) * (p + 1) * total_w
                               for p in range(4)]).reshape(x.shape)}
    # the mesh of one position on each process (blocks of 4 x 8 x 4), loss at position p
    # sum(sin(source's block) * its w) * (p + 1) (inside shard_map: times 1): the gradient
    # is cos(source's block) * the positions' w so weighted at the source, zero elsewhere
    halves, half_w = x.reshape(2, 4, 8, 4).astype(np.float64), w.reshape(2, 4, 8, 4)
    for s in (0, 1):
        for name in ("checked", "unchecked"):
            for how, weighted in (("eager", (1, 2)), ("staged", (1, 2)), ("jit", (1, 2)),
                                  ("inner", (1, 1))):
                g = np.zeros_like(halves)
                g[s] = np.cos(halves[s]) * (weighted[0] * half_w[0] + weighted[1] * half_w[1])
                grads[f"pair_{name}_{s}_{how}"] = g.reshape(x.shape)
    for (a, b) in (("mpi.1", "mpi.0"), ("mpi.0", "single.0"), ("mpi.0", "jax.0")):
        assert sorted(runs[a]) == sorted(runs[b]), (a, b)
        for k in runs[b]:
            ours, oracle = runs[a][k], runs[b][k]
            assert ours.shape == oracle.shape and ours.dtype == oracle.dtype, (a, b, k)
            if not k.startswith(("grad", "pair")):
                np.testing.assert_array_equal(ours, oracle, err_msg=f"{a} {b} {k}")
                continue
            grad = grads[k.split("/")[0] if k.startswith("pair") else "grad"]
            np.testing.assert_allclose(ours, grad, rtol=0, atol=1e-6 * np.abs(grad).max(),
                                       err_msg=f"{a} {k}")
            np.testing.assert_allclose(ours, oracle, rtol=1e-5,
                                       atol=1e-6 * np.abs(oracle).max(), err_msg=f"{a} {b} {k}")


def test_notes_survive_other_tracing(tmp_path):
    """A jit traced (eval_shape) before process 0 alone traces more noted values than the
    notes once kept (tests/mpi/notes.py): at its call both processes still bypass the Allgather
    of the operand shard_map cuts its own block out of (2 x 8 float32 from each process, 128
    bytes), moving what the same program compiled at once moves, with NumPy's value. (Process
    0 once lost the notes and alone gathered the operand: the collectives disagreed.)"""
    python, script = sys.executable, str(HERE / "notes.py")
    run = subprocess.run([mpiexec(), "-n", "2", python, script, str(tmp_path / "notes")],
                         env=_env(2), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=240, check=False)
    assert run.returncode == 0, f"notes.py failed:\n{run.stdout[-4000:]}"
    x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
    for rank in (0, 1):
        with np.load(tmp_path / f"notes.{rank}.npz") as saved:
            got = dict(saved)
        assert int(got["retraced"]) == 0, rank  # (the trace made before is the one compiled)
        assert int(got["allgather"]) == int(got["fresh_allgather"]) < 128, (rank, got)
        np.testing.assert_allclose(got["value"], x8 @ x8.T, rtol=2e-6, err_msg=str(rank))


def test_half_float_sums_round_once(tmp_path):
    """float16 and bfloat16 sums and products over a dimension split across the processes
    (tests/mpi/half_sums.py, written for JAX; over one or two devices a process, and a
    dimension split over both axes): one device sums them in float32 and rounds once; so do
    the split programs, their partial sums and the Allreduce kept in float32 (the partial sums
    were rounded to the half type first). On integers whose float32 sums are exact in any
    order, every run (mpiexec -n 2, one process of four devices) equals the one-device run bit
    for bit, and NumPy's exact sum rounded once; the half-type partial sums would differ."""
    runs = _three_runs(tmp_path, "half_sums.py")
    values = np.random.default_rng(9).integers(0, 128, (64, 8))
    for dtype in (np.float16, ml_dtypes.bfloat16):
        name = np.dtype(dtype).name
        exact = values.sum(0).astype(dtype)
        halves = [values[:32].sum(0).astype(dtype), values[32:].sum(0).astype(dtype)]
        rounded_twice = (halves[0].astype(np.float32) + halves[1].astype(np.float32)) \
            .astype(dtype)
        assert (rounded_twice != exact).any(), name  # (the values tell the two apart)
        for run in ("mpi.0", "mpi.1", "single.0"):
            got = runs[run]
            keys = [k for k in got if k.startswith(name + "_")]
            assert len(keys) == 2 * (3 * 4 + 1), (run, name)
            for k in [k for k in keys if k.endswith("/split")]:
                assert got[k].view(np.uint16).tobytes() == got[k.replace("split", "one_device")] \
                    .view(np.uint16).tobytes(), (run, k)
            for spec in ("rows", "cells", "lines"):
                assert got[f"{name}_{spec}_reduce_sum/split"].view(np.uint16).tobytes() == \
                    exact.view(np.uint16).tobytes(), (run, spec)


def test_set_mesh_spanning_processes_places_results(tmp_path):
    """Under jax.set_mesh of a mesh spanning the processes (one axis of all four devices, and
    a 2x2 one), results computed from values nobody laid out — jit's (host arrays, scalars, no
    arguments, AOT), eager operations', jnp.asarray's, grad's, vmap's, scan's, random's,
    device_put's, and such results fed back or used after the block (tests/mpi/context_mesh.py,
    written for JAX) — are replicated over the mesh as real JAX's in one process of four
    devices: NamedSharding(mesh, P()), fully replicated, and on each process its own devices'
    shards, each the whole value (they were single-device arrays); not fully addressable,
    as the mesh spans the processes. One process of four devices gives JAX's reports exactly."""
    runs = _three_runs(tmp_path, "context_mesh.py")
    oracle = runs["jax.0"]
    assert sorted(runs["single.0"]) == sorted(oracle) and len(oracle) > 200
    for k in oracle:
        if oracle[k].dtype.kind == "U" or oracle[k].dtype == bool:
            np.testing.assert_array_equal(runs["single.0"][k], oracle[k], err_msg=k)
        else:
            np.testing.assert_allclose(runs["single.0"][k], oracle[k], rtol=1e-6, err_msg=k)

    def ours(jax_id: int) -> int:  # (JAX's CPU device 2p + k is process p's k-th: p*2048 + k)
        return jax_id // 2 * 2048 + jax_id % 2
    for rank in (0, 1):
        got = runs[f"mpi.{rank}"]
        assert sorted(got) == sorted(oracle), rank
        for k in [k for k in oracle if "/" not in k]:
            np.testing.assert_allclose(got[k], oracle[k], rtol=1e-6, err_msg=f"{rank} {k}")
            assert bool(got[f"{k}/replicated"]) == bool(oracle[f"{k}/replicated"]), (rank, k)
            described = str(oracle[f"{k}/sharding"])  # ("kind spec [device ids]")
            # (device_put(x): JAX places it, uncommitted, on one device, not over the mesh:
            # each process's own first device, so that it holds the whole value)
            if described.startswith(kind := "SingleDeviceSharding"):
                assert str(got[f"{k}/sharding"]).startswith(kind), (rank, k)
                assert got[f"{k}/addressable"], (rank, k)
                assert list(got[f"{k}/shard_devices"]) == [ours(2 * rank)], (rank, k)
                assert list(got[f"{k}/shards_whole"]) == [True], (rank, k)
                continue
            head, ids = described[:-1].rsplit("[", 1)
            assert str(got[f"{k}/sharding"]) == \
                f"{head}{[ours(int(i)) for i in ids.split(', ')]}", (rank, k)
            assert not got[f"{k}/addressable"], (rank, k)
            mine = [i // 2 == rank for i in oracle[f"{k}/shard_devices"]]
            assert list(got[f"{k}/shard_devices"]) == \
                [ours(i) for i in oracle[f"{k}/shard_devices"][mine]], (rank, k)
            assert list(got[f"{k}/shards_whole"]) == \
                list(oracle[f"{k}/shards_whole"][mine]), (rank, k)
