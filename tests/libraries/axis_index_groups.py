"""Collectives within groups of an axis's positions (axis_index_groups) over 4 CPU devices:
psum / pmean / pmax / pmin / all_gather / psum_scatter / all_to_all under pmap and shard_map,
their gradients and jvps, and the errors for bad groups and for vmap (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("i",))
x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
x3 = np.arange(32.0, dtype=np.float32).reshape(16, 2)  # per device (4, 2)
G = [[0, 2], [1, 3]]
out = {}


def pm(f, a=x):
    return jax.pmap(f, "i")(a)


def sm(f, a=x3, check_vma=False):
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                         check_vma=check_vma)(a)


out["psum"] = pm(lambda v: lax.psum(v, "i", axis_index_groups=G))
out["psum_in_order"] = pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))
out["psum_one_group"] = pm(lambda v: lax.psum(v, "i", axis_index_groups=[[3, 1, 0, 2]]))
out["psum_unequal"] = pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1, 2], [3]]))
out["psum_bools"] = pm(lambda v: lax.psum(v > 2, "i", axis_index_groups=G))
out["psum_constant"] = pm(lambda v: v * lax.psum(1, "i", axis_index_groups=G))
out["psum_pytree"] = pm(lambda v: lax.psum((v, {"b": 2 * v}), "i", axis_index_groups=G)[1]["b"])
out["pmean"] = pm(lambda v: lax.pmean(v, "i", axis_index_groups=G))
out["pmax"] = pm(lambda v: lax.pmax(v, "i", axis_index_groups=G))
out["pmin_int"] = pm(lambda v: lax.pmin(v.astype(jnp.int32), "i", axis_index_groups=G))
out["all_gather"] = pm(lambda v: lax.all_gather(v, "i", axis_index_groups=G))
out["all_gather_axis1"] = pm(lambda v: lax.all_gather(v, "i", axis_index_groups=G, axis=1))
out["all_gather_tiled"] = pm(lambda v: lax.all_gather(v, "i", axis_index_groups=G, tiled=True))
out["psum_scatter"] = pm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=G))
out["psum_scatter_tiled"] = pm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=G,
                                                          tiled=True))
out["all_to_all"] = pm(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=G))
out["all_to_all_tiled"] = pm(lambda v: lax.all_to_all(jnp.outer(v, jnp.arange(4.0)), "i", 1, 0,
                                                      axis_index_groups=G, tiled=True))
out["vmap_inside"] = pm(jax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=G)))
out["jit_around"] = jax.jit(lambda a: pm(lambda v: lax.pmax(v, "i", axis_index_groups=G), a))(x)

# derivatives: psum's transpose is the psum over the same groups, all_gather's is psum_scatter
out["grad_psum"] = pm(jax.grad(lambda v: jnp.sum(
    lax.psum(v * v, "i", axis_index_groups=G) ** 2)))
out["grad_all_gather"] = pm(jax.grad(lambda v: jnp.sum(
    lax.all_gather(v, "i", axis_index_groups=G) ** 2 * jnp.arange(2.0)[:, None])))
out["grad_psum_scatter"] = pm(jax.grad(lambda v: jnp.sum(
    lax.psum_scatter(v, "i", axis_index_groups=G, tiled=True) ** 2)))
out["grad_all_to_all"] = pm(jax.grad(lambda v: jnp.sum(
    lax.all_to_all(v, "i", 0, 0, axis_index_groups=G, tiled=True) ** 2
    * jnp.arange(2.0)[:, None])))
out["grad_outside"] = jax.grad(lambda a: jnp.sum(pm(lambda u: lax.psum(
    u * u, "i", axis_index_groups=G), a) ** 3))(x)
out["jvp"] = jax.jvp(lambda a: pm(lambda u: lax.psum(u * u, "i", axis_index_groups=G), a),
                     (x,), (np.ones_like(x),))[1]

# shard_map (check_vma=False: JAX implements psum within groups only without the vma types)
out["sm_psum"] = sm(lambda v: lax.psum(v, "i", axis_index_groups=G))
out["sm_pmax_checked"] = sm(lambda v: lax.pmax(v, "i", axis_index_groups=G), check_vma=True)
out["sm_all_gather"] = sm(lambda v: lax.all_gather(v, "i", axis_index_groups=G, tiled=True))
out["sm_psum_scatter"] = sm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=G,
                                                       tiled=True))
out["sm_all_to_all"] = sm(lambda v: lax.all_to_all(v, "i", 0, 1, axis_index_groups=G,
                                                   tiled=True))
out["sm_grad"] = jax.grad(lambda a: jnp.sum(sm(lambda v: lax.psum(
    v * v, "i", axis_index_groups=G), a) ** 2))(x3)

for name, bad in {
    "overlap": lambda: pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [1, 2]])),
    "gap": lambda: pm(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 1], [3, 4]])),
    "all_to_all_overlap": lambda: pm(lambda v: lax.all_to_all(
        v, "i", 0, 0, axis_index_groups=[[0, 0], [2, 3]])),
    "psum_scatter_unequal": lambda: pm(lambda v: lax.psum_scatter(
        v, "i", axis_index_groups=[[0, 1, 2], [3]])),
    "scatter_not_divisible": lambda: sm(lambda v: lax.psum_scatter(
        v[:1], "i", axis_index_groups=G, tiled=True)),
    "all_to_all_not_divisible": lambda: sm(lambda v: lax.all_to_all(
        v[:1], "i", 0, 0, axis_index_groups=G, tiled=True)),
    "vmap_psum": lambda: jax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=G),
                                  axis_name="i")(x),
    "vmap_all_gather": lambda: jax.vmap(lambda v: lax.all_gather(v, "i", axis_index_groups=G),
                                        axis_name="i")(x),
    "vmap_all_to_all": lambda: jax.vmap(lambda v: lax.all_to_all(
        v, "i", 0, 0, axis_index_groups=G), axis_name="i")(x),
    "sm_psum_checked": lambda: sm(lambda v: lax.psum(v, "i", axis_index_groups=G),
                                  check_vma=True),
}.items():
    try:
        bad()
        out["error_" + name] = np.array("no error")
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        out["error_" + name] = np.array(type(e).__name__ + ": " + str(e).split("\n")[0])

np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
