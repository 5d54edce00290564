"""What arrays laid out over a mesh report, where the mesh lists its devices in another order
than their ids (reversed, permuted, 1-d and 2-d): addressable_shards (device, index, replica
id, data), the sharding's device assignment and devices_indices_map, in order — of device_put's,
jit's, an eager operation's and shard_map's results (sets, whose order follows the devices'
hashes in JAX, are left out); the types JAX prints for a jit's arguments laid out over Explicit
mesh axes under set_mesh, and for grad's, jvp's and vmap's tracers of them; and the layout of
gradients of shard_map, under jit and eagerly (written for real JAX, on 4 CPU devices)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

out = {}
devs = jax.devices()


def text(name, s):
    out[name] = np.array(s)


def index_text(index):
    return ",".join(f"{s.start}:{s.stop}" for s in index)


def report(name, x):
    """x's shards in the order listed, its sharding's device order and spec."""
    shards = x.addressable_shards
    text(name + ".devices", " ".join(str(s.device.id) for s in shards))
    text(name + ".indices", " ".join(index_text(s.index) for s in shards))
    text(name + ".replicas", " ".join(str(s.replica_id) for s in shards))
    out[name + ".data"] = np.concatenate([np.ravel(np.asarray(s.data)) for s in shards])
    s = x.sharding
    text(name + ".assignment", " ".join(str(d.id) for d in s._device_assignment))
    text(name + ".map", " ".join(f"{d.id}={index_text(i)}"
                                 for d, i in s.devices_indices_map(x.shape).items()))
    text(name + ".spec", str(getattr(s, "spec", None)))


# --- device order ---------------------------------------------------------------------------
vector = np.arange(8.0, dtype=np.float32)
matrix = np.arange(16.0, dtype=np.float32).reshape(4, 4)
for order in ([3, 2, 1, 0], [2, 0, 3, 1], [1, 3]):
    tag = "".join(map(str, order))
    m = Mesh(np.array([devs[i] for i in order]), ("x",))
    for sname, spec in (("split", P("x")), ("replicated", P())):
        x = jax.device_put(vector, NamedSharding(m, spec))
        report(f"put_{tag}_{sname}", x)
        report(f"jit_{tag}_{sname}", jax.jit(lambda a: a * 2)(x))
        report(f"eager_{tag}_{sname}", x * 2)
    sm = jax.shard_map(lambda a: a * 2, mesh=m, in_specs=P("x"), out_specs=P("x"))
    report(f"shard_map_{tag}", sm(vector))
    report(f"jit_shard_map_{tag}", jax.jit(sm)(vector))
    report(f"out_shardings_{tag}", jax.jit(lambda a: a + 1,
                                           out_shardings=NamedSharding(m, P("x")))(vector))
for order in ([3, 2, 1, 0], [2, 0, 3, 1]):
    tag = "".join(map(str, order))
    m = Mesh(np.array([devs[i] for i in order]).reshape(2, 2), ("x", "y"))
    for sname, spec in (("xy", P("x", "y")), ("y", P("y")), ("yx", P("y", "x")),
                        ("cols", P(None, "x"))):
        x = jax.device_put(matrix, NamedSharding(m, spec))
        report(f"put2d_{tag}_{sname}", x)
        report(f"jit2d_{tag}_{sname}", jax.jit(jnp.tanh)(x))

# --- types of a jit's arguments over Explicit mesh axes ---------------------------------------
explicit = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def types(name, *xs):
    text(name, " ".join(str(jax.typeof(x)) for x in xs))


with jax.set_mesh(explicit):
    a = jax.device_put(np.ones((8, 4), np.float32), P("x"))
    b = jax.device_put(np.ones((8, 4), np.float32), P("x", "y"))
    c = jax.device_put(np.ones((8, 4), np.float32), P(None, ("x", "y")))
    r = jax.device_put(np.ones((8, 4), np.float32), P())
    types("eager", a, b, c, r)
    jax.jit(lambda a, b, c, r: types("jit_args", a, b, c, r))(a, b, c, r)
    jax.jit(lambda t: types("jit_pytree", t["a"], t["b"][0]))({"a": a, "b": (b,)})
    jax.jit(lambda a, n: types("jit_numpy_beside", a, n))(a, np.ones((8, 4), np.float32))
    jax.jit(lambda a, s: types("jit_static_beside", a) or a * s, static_argnums=1)(a, 2.0)
    jax.jit(lambda a, w: types("jit_in_shardings", a, w),
            in_shardings=(None, P(None, "y")))(b, np.ones((8, 4), np.float32))
    jax.grad(lambda a: types("grad", a) or a.sum())(b)
    jax.jit(jax.grad(lambda a: types("jit_grad", a) or a.sum()))(b)
    jax.jvp(lambda a, b: types("jvp", a, b) or a, (a, b), (a, b))
    jax.jit(lambda a, b: jax.jvp(lambda a, b: types("jit_jvp", a, b) or a, (a, b), (a, b)))(a, b)
    jax.vmap(lambda row: types("vmap0", row) or row)(b)
    jax.vmap(lambda col: types("vmap1", col) or col, in_axes=1)(b)
    jax.jit(jax.vmap(lambda col: types("jit_vmap1", col) or col, in_axes=1))(b)
    jax.vmap(jax.grad(lambda row: types("vmap_grad", row) or row.sum()))(b)
    jax.jit(jax.shard_map(lambda blk: types("jit_shard_map", blk) or blk, in_specs=P("x"),
                          out_specs=P("x")))(a)

    # values computed inside the jit from such arguments
    def computed(a, b, c, r):
        types("computed_elementwise", a * 2, b + 1, jnp.sin(b), a + a, a.astype(jnp.int32),
              a > 0, jnp.maximum(b, 1.0))
        types("computed_transpose", a.T, b.T, (a + a).T)
        types("computed_reduce", a.sum(0), a.sum(1), b.sum(), b.max(axis=1), jnp.argmax(b, 1))
        types("computed_broadcast", jnp.broadcast_to(a, (3, 8, 4)), a[None] * 1, r * 2)
        types("computed_other", a.reshape(2, 4, 4), a @ r.T, a[:4], jnp.cumsum(a, 1))
        types("computed_grad", jax.grad(lambda v: types("computed_grad_inner", v * 3,
                                                        (v * v).T) or (v * v).sum())(b))
    jax.jit(computed)(a, b, c, r)

# --- gradients of shard_map: their layout -------------------------------------------------
m01 = Mesh(np.array(devs[:2]), ("x",))
split = jax.shard_map(lambda a: a * 2, mesh=m01, in_specs=P("x"), out_specs=P("x"))
whole = jax.shard_map(lambda a: a * 2, mesh=m01, in_specs=P(), out_specs=P())
losses = {"linear": lambda a: split(a).sum(), "square": lambda a: (split(a) ** 2).sum(),
          "replicated": lambda a: whole(a).sum(), "product": lambda a: (split(a) * a).sum(),
          "sin": lambda a: jnp.sin(split(a)).sum()}
for lname, loss in losses.items():
    for aname, arg in (("uncommitted", jnp.asarray(vector)),
                       ("placed", jax.device_put(vector, NamedSharding(m01, P("x"))))):
        for how, g in (("jit_grad", jax.jit(jax.grad(loss))), ("grad", jax.grad(loss)),
                       ("jit_value_and_grad", jax.jit(jax.value_and_grad(loss)))):
            name = f"{how}_{lname}_{aname}"
            result = jax.tree.leaves(g(arg))[-1]
            out[name] = np.asarray(result)
            s = result.sharding
            text(name + ".sharding", f"{getattr(s, 'spec', type(s).__name__)} "
                 f"{sorted(d.id for d in s.device_set)} {result.committed}")

np.savez(sys.argv[1], **out)
