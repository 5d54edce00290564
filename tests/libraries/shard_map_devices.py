"""shard_map and pmap over 4 CPU devices (jax_num_cpu_devices), with collectives over mesh axes:
a 2x2 mesh, specs splitting one or two dimensions over one or two axes, psum / all_gather /
axis_index / ppermute inside, jit and grad around, a data-parallel training step against the
same step on the whole batch, and the errors (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))
x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
out = {"device_ids": np.array([d.id for d in jax.devices()])}


def smap(f, in_specs, out_specs):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


out["psum_x"] = smap(lambda a: lax.psum(a, "x"), P("x"), P(None))(x)
out["index_xy"] = smap(lambda a: a * lax.axis_index("y") + lax.axis_index("x"), P("x", "y"),
                       P("x", "y"))(x)
out["index_yx"] = smap(lambda a: a + 100 * lax.axis_index("x"), P("y", "x"), P("y", "x"))(x)
out["two_axes_one_dim"] = smap(lambda a: a * (1 + lax.axis_index(("x", "y"))),
                               P(None, ("x", "y")), P(None, ("x", "y")))(x)
out["replicated_over_y"] = smap(lambda a: a * 2, P("x"), P("x"))(x)
out["ring"] = smap(lambda a: lax.ppermute(a, "x", [(0, 1), (1, 0)]), P("x"), P("x"))(x)
w = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
# model-parallel matmul: the contraction split over y, partial products summed with psum
out["matmul"] = jax.jit(smap(lambda a, w: lax.psum(a @ w, "y"), (P("x", "y"), P("y", None)),
                             P("x", None)))(x, w)
out["grad"] = jax.grad(lambda v: smap(lambda a, v: lax.pmean(jnp.sum((a @ v) ** 2), ("x", "y")),
                                      (P("x", "y"), P("y")), P())(x, v))(np.ones(8, np.float32))
out["pmap"] = jax.pmap(lambda a: lax.psum(a, "i") + lax.axis_index("i"), axis_name="i")(x)

# a data-parallel training step: per-shard gradients averaged with pmean equal the full batch's
rng = np.random.default_rng(0)
params = {"w": rng.normal(size=(5, 3)).astype(np.float32), "b": np.zeros(3, np.float32)}
xb = rng.normal(size=(16, 5)).astype(np.float32)
yb = rng.normal(size=(16, 3)).astype(np.float32)


def loss(p, xs, ys):
    return jnp.mean((jnp.tanh(xs @ p["w"] + p["b"]) - ys) ** 2)


@jax.jit
def dp_step(p, xs, ys):
    def shard_step(p, xs, ys):
        g = lax.pmean(jax.grad(loss)(p, xs, ys), ("x", "y"))
        return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)
    # check_vma=False: no implicit psum of the gradients of replicated values (with the
    # varying-axes types JAX sums these gradients over the devices: tests/libraries/vma.py)
    return jax.shard_map(shard_step, mesh=mesh, in_specs=(P(), P(("x", "y")), P(("x", "y"))),
                         out_specs=P(), check_vma=False)(p, xs, ys)


p_dp, p_one = params, params
for _ in range(3):
    p_dp = dp_step(p_dp, xb, yb)
    p_one = jax.tree.map(lambda a, b: a - 0.1 * b, p_one, jax.grad(loss)(p_one, xb, yb))
out["dp_w"], out["dp_b"] = p_dp["w"], p_dp["b"]
out["dp_equals_full_batch"] = np.array(np.allclose(p_dp["w"], p_one["w"], atol=1e-6))

# placement: device_put / jit out_shardings / shard_map results carry their shardings
placed = jax.device_put(x, jax.sharding.NamedSharding(mesh, P("x")))
out["placed_shards"] = np.array([str((s.device.id, s.index, s.replica_id))
                                 for s in placed.addressable_shards])
out["placed_pieces"] = np.stack([np.asarray(s.data) for s in placed.addressable_shards])
jitted = jax.jit(lambda a: (a * 2, a.sum()),
                 out_shardings=(jax.sharding.NamedSharding(mesh, P(None, "y")),
                                jax.sharding.NamedSharding(mesh, P())))(x)
out["jit_out_specs"] = np.array([str(o.sharding.spec) for o in jitted])
out["jit_out_shards"] = np.array([str((s.device.id, s.index)) for s in
                                  jitted[0].addressable_shards])
out["shard_map_out_spec"] = np.array(str(smap(lambda a: a, P("x", "y"), P("x", "y"))(
    x).sharding.spec))
on_two = jax.device_put(np.ones(3, np.float32), jax.devices()[2])
out["single_device"] = np.array(str(on_two.sharding))

for name, (bad, words) in {
    "varying_out": (lambda: smap(lambda a: a * lax.axis_index("y"), P("x"), P("x"))(x),
                    "was given out_specs which require replication which can't be statically "
                    "inferred given the mesh"),
    "uneven": (lambda: smap(lambda a: a, P("x"), P("x"))(np.ones((3, 2))),
               "was given argument arrays with axis sizes that are not evenly divisible"),
}.items():
    try:
        bad()
        out["error_" + name] = np.array(False)
    except ValueError as e:
        out["error_" + name] = np.array(words in str(e))

np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
