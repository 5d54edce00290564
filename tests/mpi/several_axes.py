"""Collectives over several mesh axes at once (axis_name=('data', 'model'), positions numbered
over the product in the order named) where some of the axes span the processes (tracejit under
`mpiexec -n 2`, two devices per process), run three ways by tests/test_mpi.py: `mpi`, `single`
(tracejit, one process of four devices) and `jax` (real JAX, four devices). Meshes: 2x2 with
the process axis first, 2x2 with it second, 4x1 (each process holding two positions of the
axis spanning them) and 1x4 (the same, after an axis of size 1 within the processes, which
the block's split names too); the axes named in the mesh's order and reversed. all_gather,
psum_scatter, all_to_all, axis_index, psum, pmax, pmean, all_gather(to='invarying') and
axis_index_groups, under jit and vmap, and gradients of a linear loss inside shard_map and
outside — on small integers (floats and ints), so every run's sums are exact and compared bit
for bit; on the 1x4 mesh also programs over the process axis alone, and a block times a
constant. Written for JAX: `python -m tracejit` runs it.

usage: python [-m tracejit] several_axes.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run, received  # (tests/mpi/harness.py, beside this)

run = Run(jax)
save = run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

devices = np.array(jax.devices())  # 0, 1 on process 0; 2, 3 on process 1: 'data' spans the
# processes on the grid (one position each) and the column (two each), 'model' when flipped
# (mesh, the axes splitting the blocks: the process axis first, as shard_map over processes
# takes a dimension split over several axes)
MESHES = {"grid": (Mesh(devices.reshape(2, 2), ("data", "model")), ("data", "model")),
          "flipped": (Mesh(devices.reshape(2, 2).T, ("data", "model")), ("model", "data")),
          "column": (Mesh(devices.reshape(4, 1), ("data", "model")), ("data", "model")),
          "row": (Mesh(devices.reshape(1, 4), ("data", "model")), ("model", "data"))}
GROUPS = [[3, 0], [1, 2]]
rng = np.random.default_rng(0)
ints = rng.integers(-9, 10, (16, 6)).astype(np.int32)  # each position: a (4, 6) block
floats = ints.astype(np.float32)


def collectives(axes, vmapped=False):
    """(vmapped: not all_to_all within groups, which JAX 0.10 cannot batch)"""
    def f(v):
        wide = jnp.concatenate([v, 2 * v, 3 * v, 4 * v], 0)  # (16, 6)
        pairs = jnp.concatenate([v, -v], 0)  # (8, 6): one part per member of a group of 2
        here = lax.axis_index(axes)
        out = {
            "ag": lax.all_gather(v, axes),
            "ag_tiled_1": lax.all_gather(v, axes, axis=1, tiled=True),
            "ps": lax.psum_scatter(v, axes),
            "ps_tiled_1": lax.psum_scatter(wide.T, axes, scatter_dimension=1, tiled=True),
            "a2a_tiled": lax.all_to_all(wide, axes, 0, 1, tiled=True),
            "a2a_0_0": lax.all_to_all(v, axes, 0, 0),
            "a2a_0_1": lax.all_to_all(v.T[:4], axes, 0, 1),
            "index": here,
            "psum": lax.psum(v, axes),
            "pmax": lax.pmax(v * (here + 1), axes),
            "ag_groups": lax.all_gather(v, axes, axis_index_groups=GROUPS),
            "ps_groups": lax.psum_scatter(pairs, axes, axis_index_groups=GROUPS, tiled=True),
            "pmax_groups": lax.pmax(v * (here + 1), axes, axis_index_groups=GROUPS),
        }
        if not vmapped:
            out["a2a_groups"] = lax.all_to_all(pairs, axes, 0, 1, axis_index_groups=GROUPS,
                                               tiled=True)
        return out
    return f


def linear(axes):
    """The collectives whose transposes every run has (JAX's all_to_all with tiled=False and
    split_axis != concat_axis has none), floats only."""
    def f(v):
        wide = jnp.concatenate([v, 2 * v, 3 * v, 4 * v], 0)
        return {"ag": lax.all_gather(v, axes, axis=1, tiled=True),
                "ag_invariant": lax.all_gather(v, axes, to="invarying"),
                "ps": lax.psum_scatter(wide, axes, tiled=True),
                "a2a": lax.all_to_all(wide, axes, 0, 1, tiled=True),
                "a2a_0_0": lax.all_to_all(v, axes, 0, 0),
                "pmean": lax.pmean(v, axes) * 4,
                "ag_groups": lax.all_gather(v, axes, axis_index_groups=GROUPS),
                "ps_groups": lax.psum_scatter(jnp.concatenate([v, -v], 0), axes,
                                              axis_index_groups=GROUPS, tiled=True)}
    return f


def weighted(tree):
    """A linear loss of small integer weights (exact sums)."""
    total = 0.0
    for i, leaf in enumerate(jax.tree_util.tree_leaves(tree)):
        w = (jnp.arange(leaf.size, dtype=jnp.float32).reshape(leaf.shape) % 5) - 2 + i
        total = total + jnp.sum(leaf * w)
    return total


for mesh_name, (mesh, split) in MESHES.items():
    spec = P(split)
    for axes in (("data", "model"), ("model", "data")):
        tag = f"{mesh_name}_{''.join(a[0] for a in axes)}"

        def smap(f, check_vma=True, mesh=mesh, spec=spec):
            return jax.shard_map(lambda u: jax.tree_util.tree_map(lambda r: r[None], f(u)),
                                 mesh=mesh, in_specs=spec, out_specs=spec,
                                 check_vma=check_vma)
        for dtype, v in (("f32", floats), ("i32", ints)):
            save(f"{tag}/jit_{dtype}", jax.jit(smap(collectives(axes)))(v))
        save(f"{tag}/unchecked", jax.jit(smap(collectives(axes), check_vma=False))(floats))
        save(f"{tag}/vmap", jax.jit(smap(lambda u, axes=axes: jax.vmap(collectives(axes, True))(
            jnp.stack([u, 1 - u]))))(floats))

        def outer(v, smap=smap, axes=axes):
            return weighted(smap(linear(axes))(v))
        save(f"{tag}/grad_outside", jax.jit(jax.grad(outer))(floats))
        save(f"{tag}/grad_inside", jax.jit(jax.shard_map(
            jax.grad(lambda v, axes=axes: weighted(linear(axes)(v))), mesh=mesh,
            in_specs=spec, out_specs=spec))(floats))

# the 1x4 mesh over its process axis alone, and with no collective (check_vma's implicit pvary
# of the constant over both axes the block varies over), under jit and eagerly
row, row_split = MESHES["row"]
for name, f in {"twice": lambda v: 2 * v,
                "ps_tiled": lambda v: lax.psum_scatter(
                    jnp.concatenate([v, 2 * v, 3 * v, 4 * v], 0), "model", tiled=True),
                "a2a": lambda v: lax.all_to_all(v, "model", 0, 1, tiled=True),
                "psum_twice": lambda v: lax.psum(2 * v, "model")[None]}.items():
    g = jax.shard_map(f, mesh=row, in_specs=P(row_split), out_specs=P(row_split))
    save(f"row_alone/{name}", jax.jit(g)(floats))
    save(f"row_alone/{name}_eager", g(floats))

if run.mode == "mpi":  # the bytes a call receives through MPI: the gather over both axes
    # moves what one over the process axis alone moves (the blocks, not their local copies),
    # and the psum_scatter what one of the result's size over the process axis moves (the
    # local positions' sums first)
    for mesh_name, process_axis in (("grid", "data"), ("flipped", "model")):
        mesh, split = MESHES[mesh_name]
        for name, f in {
                "ag": lambda v: lax.all_gather(v, ("data", "model")),
                "ag_yx": lambda v: lax.all_gather(v, ("model", "data")),
                "ag_alone": lambda v, a=process_axis: lax.all_gather(v, a),
                "ps": lambda v: lax.psum_scatter(v, ("data", "model")),
                "ps_yx": lambda v: lax.psum_scatter(v, ("model", "data")),
                "ps_alone": lambda v, a=process_axis: lax.psum_scatter(v[:2], a)}.items():
            g = jax.jit(jax.shard_map(lambda v, f=f: f(v)[None], mesh=mesh, in_specs=P(split),
                                      out_specs=P(split)))
            run.results[f"moved/{mesh_name}/{name}"] = np.int64(sum(received(g, floats)[1]
                                                                   .values()))

run.finish()
