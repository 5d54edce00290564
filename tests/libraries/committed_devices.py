"""Arrays committed to one device (`jax.device_put(x, device)`, device 0 included) passed to
shard_map and jit over a mesh of other devices: the calls JAX refuses ("Received incompatible
devices for jitted computation", or jit's in_shardings mismatch) and those it runs
(uncommitted arrays, NumPy arrays, a committed array in a program bound to no mesh), eagerly,
under jit, grad and vmap, and a refused call after a run of the same jitted function on
uncommitted arrays; which results are committed where (eager operations, jit — of the
arguments it reads —, grad, vmap, device_put, jnp.asarray/array), and eager operations under a
`set_mesh` of other devices (written for real JAX). Records each call's values or its error:
the class, the text's first paragraph (tracejit adds its own) up to the location, and whether
the text names this file; and per result leaf whether it is committed, and where."""
import re
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

devs = jax.devices()
m01 = Mesh(np.array(devs[:2]), ("x",))
m23 = Mesh(np.array(devs[2:]), ("x",))
x = np.arange(8.0, dtype=np.float32)
d3 = jax.device_put(x, devs[3])  # committed to device 3
d1 = jax.device_put(x, devs[1])  # to device 1: one of the mesh's, not all of them
d2 = jax.device_put(x, devs[2])
uncommitted = jnp.asarray(x)
placed01 = jax.device_put(x, NamedSharding(m01, P("x")))
placed23 = jax.device_put(x, NamedSharding(m23, P("x")))
out = {}


def placement(leaf):
    s = leaf.sharding
    spec = f" {s.spec}" if hasattr(s, "spec") else ""
    return (f"{leaf.committed} {type(s).__name__} {sorted(d.id for d in s.device_set)}"
            f"{spec}")


def record(name, call):
    try:
        r = call()
        leaves = jax.tree.leaves(r)
        out[name] = np.concatenate([np.ravel(leaf) for leaf in leaves])
        out[name + ".error"] = np.array("no error")
        out[name + ".where"] = np.array(False)
        out[name + ".committed"] = np.array("; ".join(map(placement, leaves)))
    except ValueError as e:
        text = str(e).split("\n\n")[0]
        # (the location: JAX's file:line:column (function), where it gives one; the function:
        # JAX names its own wrapper of an eager shard_map, and qualified names)
        text = re.sub(r"(on platform CPU) at .*$", r"\1", text, flags=re.DOTALL)
        text = re.sub(r"(argument \S+) of .*? with shape", r"\1 of F with shape", text)
        out[name] = np.zeros(0, np.float32)
        out[name + ".error"] = np.array(f"{type(e).__name__}: {text}")
        out[name + ".where"] = np.array(__file__ + ":" in str(e))
        out[name + ".committed"] = np.array("error")


def double(a):
    return a * 2


sm = jax.shard_map(double, mesh=m01, in_specs=P("x"), out_specs=P("x"))
replicated = jax.shard_map(double, mesh=m01, in_specs=P(), out_specs=P())
# shard_map, eagerly: its arguments' devices against the mesh's
record("sm_d3", lambda: sm(d3))
record("sm_d1", lambda: sm(d1))
record("sm_replicated_d3", lambda: replicated(d3))
record("sm_placed_m23", lambda: sm(placed23))
record("sm_pytree_d3", lambda: jax.shard_map(lambda t: t["w"] * 2, mesh=m01, in_specs=P("x"),
                                             out_specs=P("x"))({"w": d3}))
record("sm_uncommitted", lambda: sm(uncommitted))
record("sm_numpy", lambda: sm(x))
record("sm_placed_m01", lambda: sm(placed01))
record("sm_grad_d3", lambda: jax.grad(lambda a: sm(a).sum())(d3))
record("sm_vmap_d3", lambda: jax.vmap(sm)(jax.device_put(np.ones((3, 8), np.float32),
                                                         devs[3])))
# jit: the program's devices (a shard_map, a sharding constraint, out_shardings, another
# argument) against each committed argument's
jsm = jax.jit(sm)
record("jit_sm_uncommitted", lambda: jsm(uncommitted))
record("jit_sm_d3", lambda: jsm(d3))  # (after a run of the same jit on an uncommitted array)
record("jit_sm_uncommitted_again", lambda: jsm(uncommitted))
record("jit_sm_d3_keyword", lambda: jax.jit(lambda a, *, b: sm(a) + b)(x, b=d3))
record("jit_in_shardings_d3", lambda: jax.jit(
    double, in_shardings=NamedSharding(m01, P("x")))(d3))
record("jit_out_shardings_d3", lambda: jax.jit(
    double, out_shardings=NamedSharding(m01, P("x")))(d3))
record("jit_constraint_d3", lambda: jax.jit(lambda a: jax.lax.with_sharding_constraint(
    a * 2, NamedSharding(m01, P("x"))))(d3))
record("jit_placed_then_d3", lambda: jax.jit(lambda a, b: sm(a) + b)(placed01, d3))
record("jit_d3_then_placed", lambda: jax.jit(lambda a, b: a + b)(d3, placed01))
record("jit_d3_d2", lambda: jax.jit(lambda a, b: a + b)(d3, d2))
record("jit_d3_alone", lambda: jax.jit(double)(d3))  # (bound to no mesh: runs)
record("jit_d3_uncommitted", lambda: jax.jit(lambda a, b: a + b)(d3, uncommitted))
record("jit_grad_sm_d3", lambda: jax.jit(jax.grad(lambda a: sm(a).sum()))(d3))
# the mesh in effect binds a jitted program to its devices too
with jax.set_mesh(m01):
    record("jit_d3_under_mesh", lambda: jax.jit(double)(d3))
    record("jit_uncommitted_under_mesh", lambda: jax.jit(double)(uncommitted))
with jax.set_mesh(Mesh(np.array(devs[3:]), ("x",))):
    record("jit_d3_under_its_mesh", lambda: jax.jit(double)(d3))

# which arrays are committed, and where: put on device 0 (committed, unlike one never placed)
d0 = jax.device_put(x, devs[0])
m12 = Mesh(np.array(devs[1:3]), ("x",))
sm12 = jax.shard_map(double, mesh=m12, in_specs=P("x"), out_specs=P("x"))
record("placed_d0", lambda: d0)
record("placed_ones", lambda: jnp.ones(3))
record("placed_uncommitted", lambda: uncommitted)
record("placed_device_put_numpy", lambda: jax.device_put(x))
record("jit_d0_d1", lambda: jax.jit(lambda a, b: a + b)(d0, d1))
record("sm12_d0", lambda: sm12(d0))
record("jit_sm12_d0", lambda: jax.jit(sm12)(d0))
record("device_put_d1_again", lambda: jax.device_put(d1))
record("device_put_d1_to_d0", lambda: jax.device_put(d1, devs[0]))
record("device_put_uncommitted_d0", lambda: jax.device_put(uncommitted, devs[0]))
record("jit_device_put_d0_d1", lambda: jax.jit(lambda a, b: a + b)(
    jax.device_put(uncommitted, devs[0]), d1))
# results of operations on committed arrays: committed to that device (eager operations run
# as a jit of their primitive, its arguments args[0], args[1], ...)
record("eager_d1_mul", lambda: d1 * 2)
record("eager_d1_uncommitted", lambda: d1 + uncommitted)
record("eager_d1_negative", lambda: jnp.negative(d1))
record("eager_d1_sum", lambda: d1.sum())
record("eager_d1_index", lambda: d1[2])
record("eager_d1_astype", lambda: d1.astype(jnp.int32))
record("eager_d1_cond", lambda: jax.lax.cond(True, double, lambda a: a, d1))
record("eager_lax_add_d0_d1", lambda: jax.lax.add(d0, d1))
record("jit_d1", lambda: jax.jit(double)(d1))
record("jit_d1_pair", lambda: jax.jit(lambda a, b: (a + b, b, 3.0))(d1, uncommitted))
# (jit drops the arguments its program does not read: they bind it to no device)
record("jit_d1_unused", lambda: jax.jit(lambda a, b: b * 2)(d1, uncommitted))
record("jit_d1_unused_kept", lambda: jax.jit(lambda a, b: b * 2, keep_unused=True)(
    d1, uncommitted))
record("jit_d0_unused_d1", lambda: jax.jit(lambda a, b: b * 2)(d0, d1))
record("jit_d1_dead", lambda: jax.jit(lambda a, b: (a * 0 + 1, b * 2)[1])(d1, uncommitted))
record("jit_d1_constant", lambda: jax.jit(lambda a: jnp.ones(3))(d1))
record("grad_d1", lambda: jax.grad(lambda a: (a * a).sum())(d1))
record("grad_d1_sum", lambda: jax.grad(lambda a: a.sum())(d1))  # (the seed's broadcast)
record("jit_grad_d1", lambda: jax.jit(jax.grad(lambda a: (a * a).sum()))(d1))
record("aot_d1", lambda: jax.jit(double).lower(d1).compile()(d1))
record("vmap_d1", lambda: jax.vmap(double)(d1))
record("vmap_d1_sum", lambda: jax.vmap(jnp.sum)(jax.device_put(np.ones((3, 4), np.float32),
                                                               devs[1])))
record("asarray_d1", lambda: jnp.asarray(d1))
record("array_d1", lambda: jnp.array(d1))
record("copy_d1", lambda: d1.copy())
record("array_d1_float16", lambda: jnp.array(d1, dtype=jnp.float16))
record("zeros_like_d1", lambda: jnp.zeros_like(d1))
record("full_like_d1_shape", lambda: jnp.full_like(d1, 2.0, shape=(2, 3)))
record("ones_like_weak_d1", lambda: jnp.ones_like(jax.device_put(3.0, devs[1])))
record("zeros_like_placed01", lambda: jnp.zeros_like(placed01))
record("full_like_placed01_shape", lambda: jnp.full_like(placed01, 1.0, shape=(3,)))
# jit(grad(f)) of a shard_map over devices 0, 1 on an array committed to device 3: the
# gradient reads no argument (the shard_map's is linear), so JAX runs it on the mesh
record("jit_grad_sm_d3_kept", lambda: jax.jit(jax.grad(lambda a: sm(a).sum()),
                                              keep_unused=True)(d3))
record("jit_grad_sm_square_d3", lambda: jax.jit(jax.grad(lambda a: (sm(a) ** 2).sum()))(d3))
# eager operations under a set_mesh of other devices: refused as the jit
with jax.set_mesh(m12):
    record("eager_lax_d1_under_mesh", lambda: jax.lax.mul(d1, 2.0))
    record("eager_lax_d0_under_mesh", lambda: jax.lax.sin(d0))
    record("eager_uncommitted_under_mesh", lambda: uncommitted * 2)
    record("eager_d1_under_mesh", lambda: d1 * 2)  # (JAX: "x of multiply")
    record("grad_d1_under_mesh", lambda: jax.grad(lambda a: (a * a).sum())(d1))
    record("array_d1_under_mesh", lambda: jnp.array(d1))
    record("array_uncommitted_under_mesh", lambda: jnp.array(uncommitted))
with jax.set_mesh(Mesh(np.array(devs[1:2]), ("x",))):
    record("eager_d1_under_its_mesh", lambda: d1 * 2)
    record("eager_d0_under_mesh_of_d1", lambda: jax.lax.mul(d0, 2.0))
    record("jit_d1_under_its_mesh", lambda: jax.jit(double)(d1))

np.savez(sys.argv[1], **out)
