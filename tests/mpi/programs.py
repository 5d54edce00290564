"""Sharded programs run two ways by tests/test_mpi.py: `mpi` (under `mpiexec -n 2`, two devices
per process: the mesh axis 'data' spans the processes) and `single` (one process, four devices:
every mesh axis batched). Each saves its results (tests/mpi/harness.py); the test compares them
with each other and with NumPy.

usage: python programs.py OUT {mpi,single}   (writes OUT.<rank>.npz)
"""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.experimental import multihost_utils
from tracejit.sharding import Mesh, NamedSharding, PartitionSpec as P

from harness import Run, received  # (tests/mpi/harness.py and model.py, beside this)
from model import DATA, LR, STEPS, TARGET, init, loss

run = Run(jax)
results, save, whole = run.results, run.save, run.whole
devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
mesh2d = Mesh(devs, ("data", "model"))
mesh1d = Mesh(devs[:, 0], ("data",))  # one device per process


x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
ints = np.arange(16, dtype=np.int32).reshape(4, 4)


# --- collectives over the process axis (1-d mesh), compiled and inside jit ----------------
def collectives(a, k):
    return (lax.psum(a, "data"), lax.pmean(a, "data"), lax.pmax(a, "data"),
            lax.pmin(k, "data"), lax.all_gather(a, "data"), lax.all_gather(a, "data", axis=1,
                                                                            tiled=True),
            lax.psum_scatter(a, "data", scatter_dimension=1, tiled=True),
            lax.ppermute(a, "data", [(0, 1), (1, 0)]), lax.ppermute(k, "data", [(0, 1)]),
            lax.all_to_all(a, "data", 1, 0, tiled=True),
            lax.axis_index("data")[None] * 10 + lax.axis_size("data"),
            lax.pbroadcast(a, "data", 1), lax.psum(k > 6, "data"))


specs = (P(), P(), P(), P(), P(), P(), P("data"), P("data"), P("data"), P("data"), P("data"),
         P(), P())
# (check_vma=False: all_gather's results are typed varying under JAX's default check_vma=True,
# and out_specs P() would be rejected; the values are replicated)
f1 = jax.shard_map(collectives, mesh=mesh1d, in_specs=(P("data"), P("data")), out_specs=specs,
                   check_vma=False)
save("collectives", f1(x, ints))
collected = jax.jit(f1)(x, ints)
save("collectives_jit", collected)
# under jit, results split over the processes come back split (GlobalArrays), as in JAX
if run.mode == "mpi":
    results["smap_jit/types"] = np.array([type(r).__name__ for r in collected[5:8]])
    results["smap_jit/specs"] = np.array([str(r.sharding.spec) for r in collected[5:8]])
    results["smap_jit/shards"] = np.array([[s.index[0].start or 0 for s in
                                            r.addressable_shards] for r in collected[6:8]])
# and fed back into jit as they are
save("smap_jit_reused", jax.jit(lambda a, b: a.sum(0)[:3] * b.sum(0))(collected[7],
                                                                    collected[6]))
# the same over one axis of all four devices: each process holds two of its positions
mesh_all = Mesh(devs.reshape(-1), ("data",))
f_all = jax.shard_map(collectives, mesh=mesh_all, in_specs=(P("data"), P("data")),
                      out_specs=specs, check_vma=False)
x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
save("collectives_all", jax.jit(f_all)(x8, ints))
save("collectives_all_eager", f_all(x8, ints))


# --- a process axis and a local one (2x2 mesh) ---------------------------------------------
def mixed(a, w):
    h = jnp.tanh(a @ w)  # a: rows over data, w: columns over model
    total = lax.psum(h.sum(), ("data", "model"))
    cols = lax.all_gather(h, "model", axis=1, tiled=True)
    return cols * total, lax.psum(h, "data") + lax.axis_index("model")


w = np.linspace(-1, 1, 6 * 4, dtype=np.float32).reshape(6, 4)
f2 = jax.shard_map(mixed, mesh=mesh2d, in_specs=(P("data"), P(None, "model")),
                   out_specs=(P("data"), P(None, "model")), check_vma=False)  # (as f1)
save("mixed", jax.jit(f2)(x, w))

# --- a mesh whose process axis is the minor one (devices not in jax.devices() order) -------
minor = Mesh(devs.T, ("model", "data"))
f_minor = jax.shard_map(lambda a: (lax.psum(a.sum(0), ("model", "data")),
                                   a * 2 + lax.axis_index("data")),
                        mesh=minor, in_specs=P("data", "model"),
                        out_specs=(P(), P("data", "model")))
save("minor_axis", (f_minor(x), jax.jit(f_minor)(x)))
by_minor = jax.make_array_from_callback(x.shape, NamedSharding(minor, P("model", "data")),
                                        lambda index: x[index])
save("minor_axis_jit", jax.jit(lambda a, v: (a.sum(0), jnp.tanh(a @ v)))(by_minor, w))
# devices interleaving the processes on one axis (p0, p1, p0, p1): computed on the devices in
# process order (the values do not depend on which process computes a position)
woven = Mesh(devs.T.reshape(-1), ("data",))
f_woven = jax.shard_map(lambda a: (lax.all_gather(a.sum(0), "data"),
                                   a * (lax.axis_index("data") + 1.0)),
                        mesh=woven, in_specs=P("data"), out_specs=(P(), P("data")),
                        check_vma=False)  # (all_gather's result is typed varying, as f1's)
save("woven", (f_woven(x8)[0], jax.jit(lambda a: f_woven(a)[1].sum(0))(x8),
               jax.jit(lambda a: (jnp.sin(a), a.sum(0)),
                       in_shardings=NamedSharding(woven, P("data")))(x8)))
# a dimension split over ('model', 'data'): the local axis first (computed with the processes
# laid along 'model' instead)
def local_first(a):
    position = lax.axis_index("model") * 2 + lax.axis_index("data")
    return lax.psum(a.sum(0) * (position + 1.0), ("model", "data")), a * (position + 1.0)


f_local_first = jax.shard_map(local_first, mesh=mesh2d, in_specs=P(("model", "data")),
                              out_specs=(P(), P(("model", "data"))))
save("local_first", (f_local_first(x8.T), jax.jit(f_local_first)(x8.T)))

# results split over the processes on meshes interleaving them, and from a jit inside a jit:
# GlobalArrays holding this process's pieces (not gathered), as JAX returns them
if run.mode == "mpi":
    split = {"woven_eager": f_woven(x8)[1], "woven_jit": jax.jit(f_woven)(x8)[1],
             "woven_in_shardings": jax.jit(jnp.sin, in_shardings=NamedSharding(
                 woven, P("data")))(x8),
             "local_first": jax.jit(f_local_first)(x8.T)[1],
             "nested_jit": jax.jit(lambda a, k: jax.jit(f1)(a, k))(x, ints)[6],
             "from_callback": jax.make_array_from_callback(
                 x8.shape, NamedSharding(woven, P("data")), lambda index: x8[index])}
    split["from_callback_jit"] = jax.jit(lambda a: a * 3)(split["from_callback"])
    for name, r in split.items():
        results[f"split/{name}/type"] = np.array(type(r).__name__)
        results[f"split/{name}/spec"] = np.array(str(r.sharding.spec))
        results[f"split/{name}/shards"] = np.array([[i.start or 0 for i in s.index]
                                                    for s in r.addressable_shards])
        results[f"split/{name}/value"] = whole(r)
    results["split/fed_back"] = whole(jax.jit(lambda a: a + 1)(split["woven_jit"]))
    # what such a result moves between the processes, by collective (bytes received): each
    # process fetches only the pieces the other computed for it, not the whole array; fed
    # back into jit, each fetches the rest of the block it computes on
    scale_woven = jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0),
                                        mesh=woven, in_specs=P("data"), out_specs=P("data")))
    plus_one = jax.jit(lambda a: a + 1)
    scale_rows = jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0),
                                       mesh=mesh1d, in_specs=P("data"), out_specs=P("data")))
    # a plain jit (no shard_map) on such arrays: each process computes on the pieces it holds
    # (the program never reads which positions it holds); a replicated operand cut at the
    # positions still fetches them
    plain_host = jax.jit(lambda a: a + x8)
    # (devices p0d1, p1d1, p0d0, p1d0: a process's pieces in the other order than its devices')
    reversed_woven = Mesh(devs.T[::-1].reshape(-1), ("data",))
    by_reversed = jax.make_array_from_callback(x8.shape, NamedSharding(reversed_woven,
                                                                       P(None, "data")),
                                               lambda index: x8[index])
    for name, (f, arg) in {"rows_scaled": (scale_rows, x8), "woven_scaled": (scale_woven, x8),
                           "woven_fed_back": (plus_one, split["woven_jit"]),
                           "woven_plain_transposed": (jax.jit(lambda a: (a * 2).T),
                                                      split["from_callback"]),
                           "woven_plain_host": (plain_host, split["from_callback"]),
                           "reversed_plain": (jax.jit(lambda a: jnp.sin(a) * 2),
                                              by_reversed)}.items():
        r, got = received(f, arg)  # (compiled first: the second call's traffic is its own)
        for code in ("allgather", "alltoall"):
            results[f"moved/{name}/{code}"] = np.int64(got[code])
        results[f"moved/{name}/value"] = whole(r)
        results[f"moved/{name}/spec"] = np.array(str(r.sharding.spec))
    # jit over GlobalArrays (the per-process programs of shard_map_processes.py): a row-split
    # array times a replicated matrix, shard_map taking each process's own block as it is (no
    # Allgather of the operand to cut it back out) and returning its block of the result (no
    # Allgather of the result either); the same with the gathered result read afterwards
    # (that gather stays); int32 blocks; a 2-d mesh with the devices of a process
    rows_split = jax.make_array_from_callback(x8.shape, NamedSharding(mesh1d, P("data")),
                                              lambda index: x8[index])
    ints_split = jax.make_array_from_callback(ints.shape, NamedSharding(mesh1d, P("data")),
                                              lambda index: ints[index])
    cells_split = jax.make_array_from_callback(x.shape, NamedSharding(mesh2d, P("data", "model")),
                                               lambda index: x[index])
    line = Mesh(devs.reshape(-1), ("data",))  # (4 positions, two on each process)
    line_split = jax.make_array_from_callback(x8.shape, NamedSharding(line, P("data")),
                                              lambda index: x8[index])
    cols_split = jax.make_array_from_callback(x8.shape, NamedSharding(mesh1d, P(None, "data")),
                                              lambda index: x8[index])
    times = jax.shard_map(lambda a, b: a @ b, mesh=mesh1d, in_specs=(P("data"), P()),
                          out_specs=P("data"))

    cells_scale = jax.shard_map(lambda a: a * (lax.axis_index("model") + 1.0), mesh=mesh2d,
                                in_specs=P("data", "model"), out_specs=P("data", "model"))

    def cells_chain(a):
        r = cells_scale(a)
        return r.T + 1, jnp.exp(r).sum(1), r + jnp.arange(6.0)

    def normalized(a, b):
        r = times(a, b)
        # (scaled down: exp of the raw row spread, ~100, amplifies the gemm's rounding)
        return jax.nn.softmax(r / 64, axis=1), r - r.mean(1, keepdims=True), r[:, None, :] * 2

    def times_and_sum(a, b):
        r = times(a, b)
        return r, r.sum(0)

    # the argument split over the processes as the result is, read beside it: its own block
    # (a 4 x 8 result: an 8 x 8 right operand; positive, so that no product cancels)
    w8 = np.linspace(0.5, 1.5, 64, dtype=np.float32).reshape(8, 8)

    def times_and_arg(a, b):
        r = times(a, b)
        return r + a, r * jnp.tanh(a) - a

    def column_stats(a, b):  # reductions over the dimension split over the processes
        r = times(a, b)
        return r.sum(0), r.max(0), r - r.mean(0)

    ints_doubled = jax.shard_map(lambda k: k * 2, mesh=mesh1d, in_specs=P("data"),
                                 out_specs=P("data"))
    line_scale = jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0), mesh=line,
                               in_specs=P("data"), out_specs=P("data"))
    woven_scale = jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0), mesh=woven,
                                in_specs=P("data"), out_specs=P("data"))

    on_blocks = {
        "rows_matmul": (jax.jit(times), (rows_split, x8.T)),
        "rows_matmul_read": (jax.jit(times_and_sum), (rows_split, x8.T)),
        "rows_matmul_scaled": (jax.jit(lambda a, b: times(a, b) * 2), (rows_split, x8.T)),
        "rows_matmul_replicated": (jax.jit(times, out_shardings=NamedSharding(mesh1d, P())),
                                   (rows_split, x8.T)),
        "ints_doubled": (jax.jit(jax.shard_map(lambda k: k * 2 + lax.axis_index("data"),
                                               mesh=mesh1d, in_specs=P("data"),
                                               out_specs=P("data"))), (ints_split,)),
        "cells_scaled": (jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("model") + 1.0),
                                               mesh=mesh2d, in_specs=P("data", "model"),
                                               out_specs=P("data", "model"))), (cells_split,)),
        "woven_blocks": (scale_woven, (split["from_callback"],)),
        "line_scaled": (jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0),
                                              mesh=line, in_specs=P("data"),
                                              out_specs=P("data"))), (line_split,)),
        "cols_scaled": (jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0),
                                              mesh=mesh1d, in_specs=P(None, "data"),
                                              out_specs=P(None, "data"))), (cols_split,)),
        "rows_identity": (jax.jit(jax.shard_map(lambda a: a, mesh=mesh1d, in_specs=P("data"),
                                                out_specs=P("data"))), (rows_split,)),
        # values computed from the split result in the same jit, by rules that keep the split
        # (elementwise, a broadcast replicated row, transpose, reductions over the whole
        # dimension, reshapes keeping the split dimension), and through a jit inside jit
        "rows_matmul_chain": (jax.jit(lambda a, b: (jnp.tanh(times(a, b)).T.sum(0),
                                                    times(a, b).T,
                                                    times(a, b) * (jnp.arange(4.0)[None] + 1),
                                                    times(a, b).max(1, keepdims=False) - 1,
                                                    times(a, b).reshape(4, 2, 2),
                                                    times(a, b).reshape(16))),
                              (rows_split, x8.T)),
        # replicated operands of the result's shape: this process's block cut out of them (a
        # column broadcast along the split dimension; a replicated argument's rows)
        "rows_matmul_column": (jax.jit(lambda a, b: times(a, b) + jnp.arange(4.0)[:, None]),
                               (rows_split, x8.T)),
        "rows_matmul_bias": (jax.jit(lambda a, b: times(a, b) + b[:4] * 3), (rows_split, x8.T)),
        # an operand split over the processes itself, sliced (its columns: per process)
        "rows_matmul_split_operand": (jax.jit(lambda a, b: times(a, b) + a[:, :4]),
                                      (rows_split, x8.T)),
        # two devices per process: a transpose, a sum over the dimension split within the
        # process, a replicated row broadcast
        "cells_chain": (jax.jit(cells_chain), (cells_split,)),
        # normalized rows (the reductions' keepdims: reshape, squeeze, broadcast_in_dim of the
        # block) and a new dimension
        "rows_matmul_normalized": (jax.jit(normalized), (rows_split, x8.T)),
        "nested_matmul": (jax.jit(lambda a, b: jax.jit(times)(a, b)), (rows_split, x8.T)),
        "nested_scaled": (jax.jit(lambda a, b: jax.jit(lambda c, d: times(c, d) * 2)(a, b) - 1),
                          (rows_split, x8.T)),
        "ints_row_sums": (jax.jit(lambda k: jax.shard_map(
            lambda k: k * 2, mesh=mesh1d, in_specs=P("data"), out_specs=P("data"))(k).sum(1)),
            (ints_split,)),
        # operands split over the processes as jit's arguments, laid out as the result: this
        # process's block of them, not gathered
        "rows_matmul_and_arg": (jax.jit(times_and_arg), (rows_split, w8)),
        "cells_and_arg": (jax.jit(lambda a: (cells_scale(a) + a, cells_scale(a).sum(0))),
                          (cells_split,)),
        # reductions over the split dimension: this process's partial result, one Allreduce
        "rows_matmul_column_stats": (jax.jit(column_stats), (rows_split, w8)),
        "ints_column_stats": (jax.jit(lambda k: (ints_doubled(k).sum(0), ints_doubled(k).min(0),
                                                 ints_doubled(k).sum())), (ints_split,)),
        "nested_column_sums": (jax.jit(lambda a, b: jax.jit(
            lambda c, d: times(c, d).sum(0))(a, b) * 2), (rows_split, w8)),
        "line_column_sums": (jax.jit(lambda a: (line_scale(a).sum(0), line_scale(a) * a)),
                             (line_split,)),
        # the plain program on the argument alone (the partitioner's: no shard_map)
        "rows_plain": (jax.jit(lambda a: (a * 2, jnp.tanh(a), a.sum(0), a[:, 2:6])),
                       (rows_split,)),
        # a plain jit on a mesh interleaving the processes: on the pieces each process holds
        "woven_plain": (jax.jit(lambda a: (a * 3, a.sum(0), jnp.tanh(a).max(1))),
                        (split["from_callback"],)),
        # a mesh interleaving the processes: derived values are blocks of the mesh the
        # processes computed on, each process's pieces fetched (alltoall) as shard_map's are
        "woven_derived": (jax.jit(lambda a: (woven_scale(a) * 2, woven_scale(a).sum(0),
                                             woven_scale(a) + a)), (split["from_callback"],))}
    for name, (f, args) in on_blocks.items():
        outs, got = received(f, *args)  # (compiled first: the second call's traffic is its own)
        for code in ("allgather", "allreduce", "alltoall"):
            results[f"moved/{name}/{code}"] = np.int64(got[code])
        for i, r in enumerate(jax.tree_util.tree_leaves(outs)):
            results[f"moved/{name}/value/{i}"] = whole(r)
            results[f"moved/{name}/type/{i}"] = np.array(type(r).__name__)
            results[f"moved/{name}/spec/{i}"] = np.array(str(r.sharding.spec))
            results[f"moved/{name}/shards/{i}"] = np.array(
                [[s.start or 0 for s in shard.index] for shard in r.addressable_shards])
    results["moved/rows_split_after"] = whole(rows_split)  # (the identity's argument intact)
    # a slice the user wrote that is one process's own block (process 0's rows): its gather
    # stays, on every process (were it bypassed on process 0 alone, process 1 would wait)
    first_rows = jax.jit(jax.shard_map(lambda a: lax.all_gather(a, "data", tiled=True)[:2],
                                       mesh=mesh1d, in_specs=P("data"), out_specs=P(),
                                       check_vma=False))
    results["moved/first_rows/value"] = whole(first_rows(rows_split))

# --- arrays spanning processes -------------------------------------------------------------
sharding = NamedSharding(mesh2d, P("data", "model"))
from_cb = jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])
rows = x[2 * jax.process_index():2 * jax.process_index() + 2] if run.mode == "mpi" else x
from_local = jax.make_array_from_process_local_data(NamedSharding(mesh1d, P("data")), rows)
doubled = jax.shard_map(lambda a: a * 2, mesh=mesh2d, in_specs=P("data", "model"),
                        out_specs=P("data", "model"))(from_cb)
save("arrays", (from_cb, from_local, doubled))
# the rows-split array taken by shard_map split by columns over the processes: each process
# fetches the part of its column block it lacks (not the whole array)
by_columns = jax.shard_map(lambda a: a * (lax.axis_index("data") + 1.0), mesh=mesh2d,
                           in_specs=P("model", "data"), out_specs=P("model", "data"))
from tracejit.core import mpi as process_collectives  # noqa: E402
before = dict(process_collectives.received)
save("regrouped", by_columns(from_cb))
if run.mode == "mpi":
    for code in ("allgather", "alltoall"):
        results[f"moved/regrouped/{code}"] = np.int64(
            process_collectives.received[code] - before.get(code, 0))
results["arrays/shards"] = np.array([[s.index[0].start or 0, s.index[1].start or 0]
                                     for s in doubled.addressable_shards])
results["arrays/fully_addressable"] = np.array(doubled.is_fully_addressable)
if run.mode == "mpi":
    try:
        np.asarray(doubled)
        results["arrays/fetch_error"] = np.array("")
    except RuntimeError as e:
        results["arrays/fetch_error"] = np.array(str(e))
    try:
        doubled + 1
        results["arrays/op_error"] = np.array("")
    except RuntimeError as e:
        results["arrays/op_error"] = np.array(str(e))
    pieces = [jax.device_put(x[2 * jax.process_index():][:2, 3 * k:3 * k + 3], d)
              for k, d in enumerate(jax.local_devices())]
    from_singles = jax.make_array_from_single_device_arrays(x.shape, sharding, pieces)
    save("singles", from_singles)
    results["bcast"] = multihost_utils.broadcast_one_to_all(np.float32(jax.process_index() + 5))
    results["gathered"] = multihost_utils.process_allgather(np.int32(jax.process_index()))
    multihost_utils.sync_global_devices("programs")
    multihost_utils.assert_equal(np.arange(3))
    try:
        multihost_utils.assert_equal(np.int32(jax.process_index()), "differs:")
        results["assert_equal"] = np.array("no error")
    except AssertionError as e:
        results["assert_equal"] = np.array(str(e))


# --- abstract evaluation and AOT stages of an array spanning processes: its global type, as
# JAX reports it; the compiled program's call runs each process's block, as jit's does ------
def texts(name, value):
    results[f"stages/{name}"] = np.array(str(value))


texts("eval_shape", jax.eval_shape(lambda a: (a * 2, a.sum(0), a @ a.T), from_cb))
texts("eval_shape_jit", jax.jit(lambda a: a * 2).eval_shape(from_cb))
texts("eval_shape_out", jax.eval_shape(jax.jit(
    lambda a: a.sum(1), out_shardings=NamedSharding(mesh2d, P())), from_cb))
struct = jax.ShapeDtypeStruct(from_cb.shape, from_cb.dtype, sharding=from_cb.sharding)
texts("struct", struct)
texts("eval_shape_struct", jax.eval_shape(lambda a: a * 2, struct))
lowered = jax.jit(lambda a: jnp.sin(a) * 2).lower(from_cb)
texts("out_info", lowered.out_info)
texts("args_info", lowered.args_info)
texts("jaxpr", jax.make_jaxpr(lambda a: a * 2)(from_cb))
compiled = lowered.compile()(from_cb)
texts("compiled_spec", compiled.sharding.spec)
save("stages_compiled", compiled)
from_struct = jax.jit(lambda a: a - 1).lower(struct).compile()(from_cb)
texts("struct_compiled_spec", from_struct.sharding.spec)
save("stages_struct_compiled", from_struct)


# --- data-parallel training: grads per shard, pmean, update (the same parameters as one
# process on the whole batch: the test checks) -----------------------------------------------
def step(params, a, y):
    g = jax.grad(loss)(params, a, y)
    g = lax.pmean(g, "data")
    return jax.tree_util.tree_map(lambda p, d: p - LR * d, params, g)


data, target = DATA, TARGET
# (check_vma=False: the per-shard gradients are averaged by the pmean alone; with JAX's
# default check_vma=True the gradients of the replicated params are first summed over shards)
train = jax.jit(jax.shard_map(step, mesh=mesh1d, in_specs=(P(), P("data"), P("data")),
                              out_specs=P(), check_vma=False))
params = init(jax.random.key(0))
for _ in range(STEPS):
    params = train(params, data, target)
save("mlp", params)


# grad of a function calling shard_map (the loss averaged over the processes)
def global_loss(params, a, y):
    per = jax.shard_map(lambda p, a, y: lax.pmean(loss(p, a, y), "data"), mesh=mesh1d,
                        in_specs=(P(), P("data"), P("data")), out_specs=P())
    return per(params, a, y)


save("outer_grad", jax.jit(jax.grad(global_loss))(init(jax.random.key(1)), data, target))


# grad taken inside shard_map of a loss averaged with pmean: per shard (JAX's check_vma=False)
def inner(p, a, y):
    g = jax.grad(lambda p: lax.pmean(loss(p, a, y), "data"))(p)
    return jax.tree_util.tree_map(lambda v: v[None], g)


save("inner_grad", jax.jit(jax.shard_map(inner, mesh=mesh1d, in_specs=(P(), P("data"),
                                                                    P("data")),
                                         out_specs=P("data"), check_vma=False))(
    init(jax.random.key(2)), data, target))


# a gathered (replicated) value used differently per position, differentiated from outside
def mixing(a):
    return lax.all_gather(a, "data")[0] * (lax.axis_index("data") + 1.0) + lax.psum(a, "data")


for name, m in (("mixing_grad", mesh1d), ("mixing_grad_all", mesh_all)):
    f_mix = jax.shard_map(mixing, mesh=m, in_specs=P("data"), out_specs=P("data"))
    weights = np.arange(24, dtype=np.float32).reshape(4, 6)
    save(name, jax.jit(jax.grad(lambda a: (f_mix(a) * weights).sum()))(x))


# --- plain jit over arrays spanning processes: the partitioned program, its collectives over
# 'data' through MPI (in one process: every axis batched) --------------------------------------
def spec_of(r):
    return np.array(f"{type(r.sharding).__name__}{tuple(r.sharding.spec)}"
                    f"{r.sharding.mesh.axis_names}")


jitted = {
    "elementwise": jax.jit(lambda a: jnp.sin(a) * 2 + a)(from_cb),
    "reduce_all": jax.jit(lambda a: a.sum())(from_cb),  # psum over both axes
    "reduce_rows": jax.jit(lambda a: a.max(axis=0))(from_cb),  # pmax over 'data'
    "reduce_cols": jax.jit(lambda a: a.sum(axis=1))(from_cb),
    "matmul": jax.jit(lambda a, w: jnp.tanh(a @ w))(from_cb, w),  # contracting dim split
    "out_shardings": jax.jit(lambda a: a.T * 3, out_shardings=NamedSharding(
        mesh2d, P(None, "data")))(from_cb),
    "in_shardings": jax.jit(lambda a, b: a * b + 1, in_shardings=(
        NamedSharding(mesh1d, P("data")), None))(x, x[0]),
    "local_rows": jax.jit(lambda a: a - a.mean(0))(from_local),
}
# over one axis of all four devices: each process holds two positions (batched) of it
spread = jax.make_array_from_callback(x8.shape, NamedSharding(mesh_all, P("data")),
                                      lambda index: x8[index])
jitted["lanes_gram"] = jax.jit(lambda a: a.T @ a)(spread)
jitted["lanes_center"] = jax.jit(lambda a: a - a.mean(0))(spread)
# a result every process holds alike, laid out over the mesh spanning processes, fed back
jitted["reused"] = jax.jit(lambda a: a * 2)(jitted["reduce_rows"])
for name, r in jitted.items():
    save(f"jit_{name}", r)
    results[f"jit_spec/{name}"] = spec_of(r)


try:  # in_shardings disagreeing with the array's own sharding: JAX's error
    jax.jit(lambda a: a, in_shardings=NamedSharding(mesh2d, P("data")))(from_cb)
    results["jit_mismatch"] = np.array("no error")
except ValueError as e:
    results["jit_mismatch"] = np.array(str(e))


# a data-parallel training step as plain jit: the batch split over the processes, the
# parameters replicated, the gradient's sum over the batch a psum through MPI
@jax.jit
def plain_step(params, a, y):
    g = jax.grad(loss)(params, a, y)
    return jax.tree_util.tree_map(lambda p, d: p - LR * d, params, g)


rows_of = slice(4 * jax.process_index(), 4 * jax.process_index() + 4) if run.mode == "mpi" else \
    slice(None)
batch = jax.make_array_from_process_local_data(NamedSharding(mesh1d, P("data")),
                                               data[rows_of])
labels = jax.make_array_from_process_local_data(NamedSharding(mesh1d, P("data")),
                                                target[rows_of])
params = init(jax.random.key(0))
for _ in range(STEPS):
    params = plain_step(params, batch, labels)
save("jit_mlp", params)
results["jit_spec/mlp"] = spec_of(params["w1"])


# --- transformations outside jit, called on arrays spanning processes: each runs as one jit
# of the transformed function (jit(grad(f))), the program partitioned as above -----------------
loss_jit = jax.jit(loss)
params = init(jax.random.key(0))
for _ in range(STEPS):  # data-parallel training with the gradient taken outside jit
    grads = jax.grad(loss_jit)(params, batch, labels)
    params = jax.tree_util.tree_map(lambda p, d: p - LR * d, params, grads)
save("outer_jit_mlp", params)
outer_specs = {"grad": grads["w1"]}
# the gradient with respect to the batch itself: split over the processes as the batch is
batch_grad = jax.grad(loss_jit, argnums=1)(init(jax.random.key(1)), batch, labels)
save("outer_jit_batch_grad", batch_grad)
outer_specs["batch_grad"] = batch_grad
rows_tanh = jax.vmap(jax.jit(lambda row, v: jnp.tanh(row @ v)), in_axes=(0, None))(from_cb, w)
save("outer_vmap", rows_tanh)
outer_specs["vmap"] = rows_tanh
v6 = np.linspace(-1, 1, 6, dtype=np.float32)
tanh_rows = jax.jit(lambda v, a: jnp.tanh(a @ v))
y_rows, pullback = jax.vjp(tanh_rows, v6, from_local)
ones_rows = jax.make_array_from_process_local_data(NamedSharding(mesh1d, P("data")),
                                                   np.ones(len(rows), np.float32))
save("outer_vjp", (y_rows, pullback(ones_rows)))
y_rows, pushforward = jax.linearize(tanh_rows, v6, from_local)
save("outer_linearize", (y_rows, pushforward(v6, from_local)))
pair = jax.jvp(jax.jit(lambda a: jnp.sin(a).sum(0)), (from_cb,), (from_cb,))
save("outer_jvp", pair)
outer_specs["jvp"] = pair[1]
if run.mode == "mpi":  # (in one process these transformations run eagerly, op by op)
    for name, r in outer_specs.items():
        results[f"outer_spec/{name}"] = spec_of(r)

# --- donation: the donated arrays are deleted after the call (and, across processes, their
# blocks reused for the results) -------------------------------------------------------------
spread_rows = jax.make_array_from_process_local_data(NamedSharding(mesh1d, P("data")), rows)
shared = jax.device_put(np.ones(6, np.float32), NamedSharding(mesh1d, P()))
held = (spread_rows.local if run.mode == "mpi" else spread_rows).unsafe_buffer_pointer()
donating = jax.jit(lambda a, b: (a * 2, b + 1), donate_argnums=(0, 1))
twice, plus_one = donating(spread_rows, shared)
save("donate", (twice, plus_one))
results["donation/deleted"] = np.array([spread_rows.is_deleted(), shared.is_deleted()])
if run.mode == "mpi":
    results["donation/reused"] = np.array(twice.local.unsafe_buffer_pointer() == held)
try:
    donating(spread_rows, shared)
    results["donation/again"] = np.array("no error")
except RuntimeError as e:
    results["donation/again"] = np.array(str(e))
run.finish()
