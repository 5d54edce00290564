"""Collectives within groups of positions (axis_index_groups) over a mesh axis spanning the
processes, run two ways by tests/test_mpi.py: `mpi` (under `mpiexec -n 2`, two devices per
process) and `single` (one process, four devices); each saves its results (tests/mpi/harness.py).

usage: python groups.py OUT {mpi,single}   (writes OUT.<rank>.npz)
"""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import Mesh, PartitionSpec as P

from harness import Run, received  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results = run.results
devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
mesh_all = Mesh(devs.reshape(-1), ("data",))  # two positions in each process
mesh1d = Mesh(devs[:, 0], ("data",))  # one position in each process
x = np.arange(32, dtype=np.float32).reshape(16, 2) / 7.0
ints = np.arange(-16, 16, dtype=np.int32).reshape(16, 2) * 1000003


def save(name, value):
    results[name] = run.whole(value)


def smap(f, mesh=mesh_all):
    # (check_vma=False: psum within groups is JAX's only without the varying-axes types)
    return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("data"), out_specs=P("data"),
                                 check_vma=False))


for tag, groups in {"across": [[0, 2], [1, 3]], "within": [[0, 1], [2, 3]]}.items():
    save(f"psum_{tag}", smap(lambda a: lax.psum(a, "data", axis_index_groups=groups))(x))
    save(f"pmax_{tag}", smap(lambda a: lax.pmax(a, "data", axis_index_groups=groups))(x))
    save(f"pmean_{tag}", smap(lambda a: lax.pmean(a, "data", axis_index_groups=groups))(x))
    save(f"all_gather_{tag}", smap(lambda a: lax.all_gather(
        a, "data", axis_index_groups=groups, tiled=True))(x))
    save(f"psum_scatter_{tag}", smap(lambda a: lax.psum_scatter(
        a, "data", axis_index_groups=groups, tiled=True))(x))
    save(f"all_to_all_{tag}", smap(lambda a: lax.all_to_all(
        a, "data", 0, 1, axis_index_groups=groups, tiled=True))(x))
    save(f"grad_{tag}", smap(jax.grad(lambda a: jnp.sum(lax.psum(
        a * a, "data", axis_index_groups=groups) ** 2)))(x))
    save(f"grad_scatter_{tag}", smap(jax.grad(lambda a: jnp.sum(jnp.sin(lax.psum_scatter(
        a, "data", axis_index_groups=groups, tiled=True)))))(x))
    save(f"psum_scatter_ints_{tag}", smap(lambda a: lax.psum_scatter(
        a, "data", scatter_dimension=1, axis_index_groups=groups))(ints))
    save(f"psum_ints_{tag}", smap(lambda a: lax.psum(a, "data", axis_index_groups=groups))(ints))
    save(f"pmin_ints_{tag}", smap(lambda a: lax.pmin(a, "data", axis_index_groups=groups))(ints))
    save(f"psum_bool_{tag}", smap(lambda a: lax.psum(a > 0, "data", axis_index_groups=groups))(
        ints))
    save(f"all_gather_untiled_{tag}", smap(lambda a: lax.all_gather(
        a, "data", axis=1, axis_index_groups=groups), mesh_all)(x))
    save(f"all_to_all_ints_{tag}", smap(lambda a: lax.all_to_all(
        a, "data", 1, 0, axis_index_groups=groups))(ints))
    save(f"all_to_all_vmap_{tag}", smap(jax.vmap(lambda r: lax.all_to_all(
        r, "data", 0, 0, axis_index_groups=groups, tiled=True), in_axes=1, out_axes=1))(x))
    save(f"all_to_all_vmap0_{tag}", smap(jax.vmap(lambda r: lax.all_to_all(
        r, "data", 0, 0, axis_index_groups=groups, tiled=True), in_axes=0, out_axes=0))(
        x.reshape(8, 4)))
    # (weighted by where each chunk lands)
    save(f"grad_all_to_all_{tag}", smap(jax.grad(lambda a: jnp.sum(jnp.sin(lax.all_to_all(
        a, "data", 0, 1, axis_index_groups=groups, tiled=True)) * jnp.arange(8.0).reshape(
        2, 4))))(x))
# one position per process: the group lists the positions in reverse
save("reversed_gather", smap(lambda a: lax.all_gather(a, "data", axis_index_groups=[[1, 0]]),
                             mesh1d)(x[:8]))
save("reversed_psum", smap(lambda a: lax.psum(a, "data", axis_index_groups=[[1, 0]]),
                           mesh1d)(x[:8]))
save("reversed_all_to_all", smap(lambda a: lax.all_to_all(
    a, "data", 0, 1, axis_index_groups=[[1, 0]], tiled=True), mesh1d)(x[:8]))
save("reversed_psum_scatter", smap(lambda a: lax.psum_scatter(
    a, "data", axis_index_groups=[[1, 0]], tiled=True), mesh1d)(x[:8]))

if run.mode == "mpi":  # what one call within groups receives, compiled first
    for tag, groups in {"across": [[0, 2], [1, 3]], "within": [[0, 1], [2, 3]]}.items():
        for name, f in {"psum": smap(lambda a: lax.psum(a, "data", axis_index_groups=groups)),
                        "all_gather": smap(lambda a: lax.all_gather(
                            a, "data", axis_index_groups=groups, tiled=True)),
                        "psum_scatter": smap(lambda a: lax.psum_scatter(
                            a, "data", axis_index_groups=groups, tiled=True)),
                        "all_to_all": smap(lambda a: lax.all_to_all(
                            a, "data", 0, 1, axis_index_groups=groups, tiled=True))}.items():
            got = received(f, x)[1]  # (its result stays split: nothing gathers it)
            results[f"moved/{name}_{tag}"] = np.array(
                [got[c] for c in ("allgather", "reduce_scatter", "sendrecv")])

run.finish()
