"""pbroadcast over a mesh axis whose positions span the processes (tracejit under `mpiexec -n 2`,
two devices per process), run three ways by tests/test_mpi.py: `mpi`, `single` (tracejit, one
process of four devices) and `jax` (real JAX, four devices): from every source position of an
axis of four (two on each process) and of a 2x2 mesh's process axis, floats and ints, eagerly,
under jit, vmap and grad (inside shard_map and outside), with and without check_vma. Under
`mpi` it also records the bytes each collective received (core/mpi.py's counters). Written for
JAX (whose pbroadcast has no CPU lowering: it runs the psum its documentation equates it with):
`python -m tracejit` runs it.

usage: python [-m tracejit] broadcast.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run, received  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results, save = run.results, run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

line = Mesh(np.array(jax.devices()), "data")  # positions 0, 1 on process 0; 2, 3 on 1
grid = Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))  # 'data' spans them
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 8, 4)).astype(np.float32)  # each position: a (2, 8, 4) block
ints = rng.integers(-1000, 1000, (8, 8, 4)).astype(np.int32)


def pbroadcast(a, axis_name, source):
    if run.mode == "jax":  # (JAX 0.10 has no CPU lowering of pbroadcast: its documented
        # equivalent)
        return lax.psum(jnp.where(lax.axis_index(axis_name) == source, a, jnp.zeros_like(a)),
                        axis_name)
    return lax.pbroadcast(a, axis_name, source)


def from_every(a):
    """One position's block a (2, 8, 4) broadcast from each source of the line."""
    return tuple(pbroadcast(a, "data", s) for s in range(4))


def smap(f, check_vma=True, mesh=line, spec=None):
    spec = P("data") if spec is None else spec
    return jax.shard_map(f, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=check_vma)


for dtype, v in (("f32", x), ("i32", ints)):
    save(f"eager_{dtype}", smap(from_every)(v))
    save(f"jit_{dtype}", jax.jit(smap(from_every))(v))
    save(f"unchecked_{dtype}", jax.jit(smap(from_every, check_vma=False))(v))
    # the 2x2 mesh: over its process axis (one position on each), then over its local axis
    save(f"grid_{dtype}", jax.jit(smap(lambda a: (
        pbroadcast(a, "data", 1), pbroadcast(a, "data", 0),
        pbroadcast(pbroadcast(a, "model", 1), "data", 1)),
        mesh=grid, spec=P("data", "model")))(v))
# vmap inside shard_map: the Bcast of the batched value
save("vmap", jax.jit(smap(lambda a: jax.vmap(from_every, out_axes=1)(
    jnp.stack([a, -2 * a]))))(x))
# in a loop: the carry goes round the positions
save("loop", jax.jit(smap(lambda a: lax.fori_loop(
    0, 4, lambda i, c: c + pbroadcast(c, "data", 3) * 0.5, a)))(x))

# gradients: pbroadcast's transpose sums every position's cotangent onto the source
weights = rng.standard_normal((8, 8, 4)).astype(np.float32)


def staged(compute):
    """compute() called while jit traces a function it does not depend on (its result is
    returned by that function)."""
    return jax.jit(lambda y: (y + 1, compute()))(np.float32(0))[1]


def per_position(a, w):
    total = 0.0
    for i, o in enumerate(from_every(a)):
        total = total + jnp.sum(jnp.sin(o) * w) * (i + 1.0)
    return total


run.save_position_grads(per_position, line, x, weights, staged=staged)

# one position on each process (the mesh of each one's first device): eager grad once ran the
# body op by op, where arrays carry no vma, and pbroadcast, taking each block for invariant,
# kept it (every position got the source's gradient); jit's was right
pair = Mesh(np.array(jax.devices())[::2], "data")


def pair_position(a, w, s):
    return jnp.sum(jnp.sin(pbroadcast(a, "data", s)) * w)


for s in (0, 1):
    for name, check_vma in (("checked", True), ("unchecked", False)):
        pair_losses = jax.shard_map(
            lambda a, w, s=s: pair_position(a, w, s)[None] * (lax.axis_index("data") + 1.0),
            mesh=pair, in_specs=(P("data"), P("data")), out_specs=P("data"),
            check_vma=check_vma)

        def pair_loss(a, w, pair_losses=pair_losses):
            return jnp.sum(pair_losses(a, w))

        save(f"pair_{name}_{s}_eager", jax.grad(pair_loss)(x, weights))
        save(f"pair_{name}_{s}_staged", staged(lambda: jax.grad(pair_loss)(x, weights)))
        save(f"pair_{name}_{s}_jit", jax.jit(jax.grad(pair_loss))(x, weights))
        save(f"pair_{name}_{s}_inner", jax.jit(jax.shard_map(
            lambda a, w, s=s: jax.grad(pair_position)(a, w, s), mesh=pair,
            in_specs=(P("data"), P("data")), out_specs=P("data"), check_vma=check_vma))(
                x, weights))


if run.mode == "mpi":  # what one call receives, compiled first
    def moved(name, f, v):
        got = received(f, v)[1]
        for code in ("allgather", "allreduce", "reduce_scatter", "alltoall", "sendrecv",
                     "bcast"):
            results[f"moved/{name}/{code}"] = np.int64(got[code])

    # (out_specs P('data'): each result stays split, so nothing gathers it in the call)
    for s in range(4):
        moved(f"line_{s}", jax.jit(smap(lambda a, s=s: pbroadcast(a, "data", s))), x)
    moved("grid", jax.jit(smap(lambda a: pbroadcast(a, "data", 1), mesh=grid,
                               spec=P("data", "model"))), x)
    moved("grad", jax.jit(smap(lambda a: jax.grad(lambda b: jnp.sum(
        jnp.sin(pbroadcast(b, "data", 2))))(a))), x)

run.finish()
