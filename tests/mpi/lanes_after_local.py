"""A mesh whose axis within the processes comes before the axis spanning them, of which each
process holds several positions (tracejit under `mpiexec -n 2`, four devices per process: the
2x4 mesh ('data', 'model') with process 0's devices in columns 0 and 1), run three ways by
tests/test_mpi.py: `mpi`, `single` (tracejit, one process of eight devices) and `jax` (real
JAX, eight devices). Blocks split over ('model', 'data') and over 'model' alone: a block times
a constant (check_vma's implicit pvary over both axes), psum, psum_scatter, all_gather,
all_to_all and axis_index over one axis and both, under jit and eagerly, and gradients of a
linear loss — on small integers, so every run's sums are exact and compared bit for bit.
Written for JAX: `python -m tracejit` runs it.

usage: python [-m tracejit] lanes_after_local.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run  # (tests/mpi/harness.py, beside this)

run = Run(jax, devices=4)
save = run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

# devices 0-3 on process 0, 4-7 on process 1: 'data' (size 2) lies within each process, which
# holds two positions of 'model'
mesh = Mesh(np.array(jax.devices()).reshape(4, 2).T, ("data", "model"))
rng = np.random.default_rng(0)
floats = rng.integers(-9, 10, (16, 6)).astype(np.float32)  # each position: a (2, 6) block

BOTH = {  # blocks split over both axes: each varies over both
    "twice": lambda v: 2 * v,
    "plus_index": lambda v: v + lax.axis_index("data") + 10 * lax.axis_index("model"),
    "psum_md": lambda v: lax.psum(v, ("model", "data")),
    "psum_dm": lambda v: lax.psum(3 * v, ("data", "model")),
    "psum_data": lambda v: lax.psum(v, "data"),
    "psum_model": lambda v: lax.psum(v, "model"),
    "ps_tiled": lambda v: lax.psum_scatter(jnp.concatenate([v, 2 * v, 3 * v, 4 * v], 0),
                                           "model", tiled=True),
    "ps_both": lambda v: lax.psum_scatter(jnp.tile(v, (4, 1)), ("model", "data"), tiled=True),
    "ag_both": lambda v: lax.all_gather(v, ("model", "data"), axis=1, tiled=True),
    "a2a_model": lambda v: lax.all_to_all(jnp.tile(v, (2, 1)), "model", 0, 1, tiled=True),
    "a2a_both": lambda v: lax.all_to_all(jnp.tile(v, (4, 1)), ("data", "model"), 0, 1,
                                         tiled=True),
}
MODEL = {  # blocks split over 'model' alone: invariant over 'data'
    "twice": lambda v: 2 * v,
    "psum_model": lambda v: lax.psum(v, "model"),
    "ag_model": lambda v: lax.all_gather(v, "model", tiled=True)[:4],
}
for split, programs in ((("model", "data"), BOTH), ("model", MODEL)):
    for name, f in programs.items():
        g = jax.shard_map(f, mesh=mesh, in_specs=P(split), out_specs=P(split))
        tag = f"{''.join(a[0] for a in np.atleast_1d(split))}/{name}"
        save(f"{tag}/jit", jax.jit(g)(floats))
        save(f"{tag}/eager", g(floats))


def loss(v):
    def f(u):
        total = lax.psum(u * u, ("model", "data")) + lax.psum(2 * u, "model")
        return jnp.concatenate([total, lax.all_gather(u, ("data", "model"), tiled=True)], 0)
    out = jax.shard_map(f, mesh=mesh, in_specs=P(("model", "data")),
                        out_specs=P(("model", "data")))(v)
    return jnp.sum(out * (jnp.arange(out.size, dtype=jnp.float32).reshape(out.shape) % 5))


save("grad", jax.jit(jax.grad(loss))(floats))
run.finish()
