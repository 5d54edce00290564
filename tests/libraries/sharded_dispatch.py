"""Repeated calls of one jitted function on arguments laid out over meshes of 4 CPU devices
(jax_num_cpu_devices), in the orders that exercise jit's dispatch cache: the same layout again,
another layout of the same mesh, another mesh of the same shape (other devices, or the same
devices in another order), back to the first; shard_map under jit, in_shardings, donation and a
returned argument. Records each result's values, the sharding it reports (spec and device ids),
its addressable shards, and which calls raise (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

devs = jax.devices()
mesh_a = Mesh(np.array(devs[:2]), ("x",))
mesh_b = Mesh(np.array(devs[2:]), ("x",))  # the same shape, other devices
mesh_r = Mesh(np.array(devs[:2][::-1]), ("x",))  # the same devices, the other order
out = {}
base = np.arange(8.0, dtype=np.float32)


def put(m, *spec, scale=1.0):
    return jax.device_put(base * scale, NamedSharding(m, P(*spec)))


def describe(s):
    ids = [d.id for d in s.mesh.devices.flat] if hasattr(s, "mesh") else \
        sorted(d.id for d in s.device_set)
    return f"{type(s).__name__} {getattr(s, 'spec', '')} {ids}"


def record(name, call):
    """The same four keys whether the call raises or not (run_both compares the key sets)."""
    try:
        r = call()
    except ValueError as e:  # (the message's wording differs; that it raises is compared)
        out[name] = np.zeros(0, np.float32)
        out[name + ".sharding"] = np.array(f"error {type(e).__name__}")
        out[name + ".shards"] = np.array("")
        out[name + ".shard_data"] = np.zeros(0, np.float32)
        return
    out[name] = np.asarray(r)
    out[name + ".sharding"] = np.array(describe(r.sharding))
    shards = sorted(r.addressable_shards, key=lambda sh: sh.device.id)
    out[name + ".shards"] = np.array(
        "; ".join(f"{sh.device.id} {sh.index} {sh.replica_id}" for sh in shards))
    out[name + ".shard_data"] = np.concatenate([np.ravel(sh.data) for sh in shards])


# shard_map under jit, its mesh fixed: the same arguments thrice, other layouts, other meshes
sm = jax.jit(jax.shard_map(lambda a, b: a * b + 1, mesh=mesh_a, in_specs=(P("x"), P("x")),
                           out_specs=P("x")))
xa, ya = put(mesh_a, "x"), put(mesh_a, "x", scale=0.5)
for i in range(3):
    record(f"sm_same_{i}", lambda: sm(xa, ya))
record("sm_replicated_args", lambda: sm(put(mesh_a), put(mesh_a, scale=0.5)))
record("sm_other_mesh", lambda: sm(put(mesh_b, "x"), put(mesh_b, "x", scale=0.5)))
record("sm_reordered_mesh", lambda: sm(put(mesh_r, "x"), put(mesh_r, "x", scale=0.5)))
record("sm_mixed_meshes", lambda: sm(xa, put(mesh_b, "x", scale=0.5)))
record("sm_back_to_first", lambda: sm(xa, ya))

# plain jit: the layout (and so the result's) follows the arguments, call after call
g = jax.jit(lambda a, b: jnp.sin(a) + b)
for name, m, spec in [("x_a", mesh_a, ("x",)), ("x_a_again", mesh_a, ("x",)),
                      ("rep_a", mesh_a, ()), ("x_b", mesh_b, ("x",)), ("x_r", mesh_r, ("x",)),
                      ("x_a_last", mesh_a, ("x",))]:
    record(f"g_{name}", lambda m=m, spec=spec: g(put(m, *spec), put(m, *spec, scale=2.0)))
record("g_two_meshes", lambda: g(put(mesh_a, "x"), put(mesh_b, "x")))
record("g_a_after_error", lambda: g(put(mesh_a, "x"), put(mesh_a, "x", scale=2.0)))

# in_shardings: an argument laid out otherwise is an error, an uncommitted one is placed; one
# laid out alike over other devices (or the same in another order) is moved to in_shardings'
h = jax.jit(lambda a: a * 3, in_shardings=NamedSharding(mesh_a, P("x")))
record("h_matching", lambda: h(put(mesh_a, "x")))
record("h_matching_again", lambda: h(put(mesh_a, "x")))
record("h_numpy", lambda: h(base))
record("h_other_spec", lambda: h(put(mesh_a)))
record("h_other_mesh", lambda: h(put(mesh_b, "x")))
record("h_reordered_mesh", lambda: h(put(mesh_r, "x")))
record("h_other_mesh_replicated", lambda: h(put(mesh_b)))
record("h_committed_device", lambda: h(jax.device_put(base, devs[3])))
record("h_uncommitted", lambda: h(jnp.asarray(base)))
record("h_matching_last", lambda: h(put(mesh_a, "x")))
# replicated in_shardings: an argument on one device, or replicated elsewhere, is moved
hr = jax.jit(lambda a: a - 1, in_shardings=NamedSharding(mesh_a, P()))
record("hr_committed_device", lambda: hr(jax.device_put(base, devs[3])))
record("hr_other_mesh_replicated", lambda: hr(put(mesh_b)))
record("hr_other_mesh_split", lambda: hr(put(mesh_b, "x")))
# one device's in_shardings: an argument split over a mesh is refused
hd = jax.jit(lambda a: a * 5, in_shardings=jax.sharding.SingleDeviceSharding(devs[3]))
record("hd_split", lambda: hd(put(mesh_a, "x")))

# donation: the donated argument is gone after each call, the result laid out as before
d = jax.jit(lambda a: a + 1, donate_argnums=0)
for i in range(3):
    arg = put(mesh_a, "x")
    record(f"donated_{i}", lambda arg=arg: d(arg))
    out[f"donated_{i}.deleted"] = np.array(arg.is_deleted())

# a program returning its argument: the argument keeps its own layout
ident = jax.jit(lambda a, b: (a, a + b))
xr = put(mesh_a)
for i in range(2):
    record(f"ident_{i}", lambda: ident(xr, xa)[0])
    out[f"ident_{i}.argument"] = np.array(describe(xr.sharding))

np.savez(sys.argv[1], **out)
