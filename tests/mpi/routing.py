"""ppermute, psum_scatter and all_to_all over a mesh axis of four positions where each process
holds two (tracejit under `mpiexec -n 2`, two devices per process), run three ways by
tests/test_mpi.py: `mpi`, `single` (tracejit, one process of four devices) and `jax` (real JAX,
four devices): tiled and untiled, over several dimensions, floats and ints, eagerly, under jit,
vmap and grad (inside shard_map and outside), with and without check_vma. Under `mpi` it also
records the bytes each collective received (core/mpi.py's counters). Written for JAX:
`python -m tracejit` runs it.

usage: python [-m tracejit] routing.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run, received  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results, save = run.results, run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("data",))  # positions 0, 1 on process 0; 2, 3 on 1
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 8, 4)).astype(np.float32)  # each position: a (2, 8, 4) block
ints = rng.integers(-1000, 1000, (8, 8, 4)).astype(np.int32)


SHIFT = [(i, (i + 1) % 4) for i in range(4)]  # 1 -> 2 and 3 -> 0 cross the processes
PARTIAL = [(0, 3), (3, 1), (1, 0)]  # position 2 receives nothing (zeros)
LOCAL = [(0, 1), (1, 0), (3, 2)]  # nothing crosses
CROSS = [(0, 2), (2, 0), (1, 3), (3, 1)]  # everything crosses


def routed(a):
    """Every case, of one position's block a (2, 8, 4)."""
    return (lax.ppermute(a, "data", SHIFT), lax.ppermute(a, "data", PARTIAL),
            lax.ppermute(a, "data", LOCAL), lax.ppermute(a, "data", CROSS),
            lax.psum_scatter(a, "data", scatter_dimension=1, tiled=True),
            lax.psum_scatter(a, "data", scatter_dimension=2),
            lax.psum_scatter(a.reshape(8, 2, 4), "data", scatter_dimension=0, tiled=True),
            lax.all_to_all(a, "data", 1, 0, tiled=True),
            lax.all_to_all(a, "data", 2, 1),
            lax.all_to_all(a, "data", 1, 2, tiled=True),
            lax.all_to_all(a.reshape(8, 2, 4), "data", 0, 0, tiled=True))


def smap(f, check_vma=True):
    return jax.shard_map(f, mesh=mesh, in_specs=P("data"), out_specs=P("data"),
                         check_vma=check_vma)


for dtype, v in (("f32", x), ("i32", ints)):
    save(f"eager_{dtype}", smap(routed)(v))
    save(f"jit_{dtype}", jax.jit(smap(routed))(v))
    save(f"unchecked_{dtype}", jax.jit(smap(routed, check_vma=False))(v))
# vmap inside shard_map: the collectives batched over a local axis too
save("vmap", jax.jit(smap(lambda a: jax.vmap(routed, out_axes=1)(jnp.stack([a, -2 * a]))))(x))



# in loops: a ring of ppermutes (fori_loop) and a scan whose carry goes through all_to_all (the
# carry's type must stay varying over 'data' alone); integer-valued floats, so every sum is
# exact in any order
def ring(a):
    return lax.fori_loop(0, 3, lambda i, c: (c[0] + lax.ppermute(c[1], "data", SHIFT),
                                             lax.ppermute(c[1], "data", SHIFT)), (a, a))[0]


def scanned(a):
    return lax.scan(lambda c, _: (lax.all_to_all(c, "data", 1, 1, tiled=True) * 2,
                                  lax.psum_scatter(c, "data", scatter_dimension=1, tiled=True)),
                    a, None, length=3)


for check_vma in (True, False):
    save(f"loops_{check_vma}", (jax.jit(smap(ring, check_vma))(np.round(x * 8)),
                                jax.jit(smap(scanned, check_vma))(np.round(x * 8))))

# gradients: ppermute's transpose is the inverse permutation, psum_scatter's all_gather,
# all_to_all's all_to_all back
weights = rng.standard_normal((8, 8, 4)).astype(np.float32)


def per_position(a, w):
    total = 0.0
    # (not the untiled all_to_all: JAX 0.10's transpose of it fails its own cotangent check)
    for i, o in enumerate(routed(a)[:8] + routed(a)[9:]):
        total = total + jnp.sum(jnp.sin(o) * (i + 1.0)) * jnp.sum(w)
    return total


# (each position's loss leaves split, summed outside: the gradient of the sum of the positions'
# losses, from both sides of shard_map; taken directly below)
run.save_position_grads(per_position, mesh, x, weights)

# the same losses taken directly: psum'd inside shard_map, the sum leaving replicated (out_specs
# P()), differentiated outside and inside (w.r.t. both inputs)
def summed(a, w):
    return lax.psum(per_position(a, w), "data")


for name, check_vma in (("grad_direct", True), ("grad_direct_unchecked", False)):
    direct = jax.shard_map(summed, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P(),
                           check_vma=check_vma)
    save(f"{name}_outer", jax.jit(jax.grad(direct, argnums=(0, 1)))(x, weights))
    save(f"{name}_outer_eager", jax.grad(direct, argnums=(0, 1))(x, weights))
    save(f"{name}_inner", jax.jit(jax.shard_map(
        lambda a, w: jax.grad(summed, argnums=(0, 1))(a, w), mesh=mesh,
        in_specs=(P("data"), P("data")), out_specs=P("data"), check_vma=check_vma))(x, weights))


if run.mode == "mpi":  # what one call of each collective receives, compiled first
    def moved(name, f, v):
        got = received(f, v)[1]
        for code in ("allgather", "allreduce", "reduce_scatter", "alltoall", "sendrecv"):
            results[f"moved/{name}/{code}"] = np.int64(got[code])

    # (out_specs P('data'): each result stays split, so nothing gathers it in the call)
    moved("shift", jax.jit(smap(lambda a: lax.ppermute(a, "data", SHIFT))), x)
    moved("local", jax.jit(smap(lambda a: lax.ppermute(a, "data", LOCAL))), x)
    moved("cross", jax.jit(smap(lambda a: lax.ppermute(a, "data", CROSS))), x)
    moved("psum_scatter", jax.jit(smap(lambda a: lax.psum_scatter(
        a, "data", scatter_dimension=1, tiled=True))), x)
    moved("all_to_all", jax.jit(smap(lambda a: lax.all_to_all(a, "data", 1, 0, tiled=True))), x)

run.finish()
