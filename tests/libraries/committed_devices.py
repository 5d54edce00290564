"""Arrays committed to one device (`jax.device_put(x, device)`) passed to shard_map and jit
over a mesh of other devices: the calls JAX refuses ("Received incompatible devices for
jitted computation", or jit's in_shardings mismatch) and those it runs (uncommitted arrays,
NumPy arrays, a committed array in a program bound to no mesh), eagerly, under jit, grad and
vmap, and a refused call after a run of the same jitted function on uncommitted arrays
(written for real JAX). Records each call's values or its error: the class, the text's first
paragraph (tracejit adds its own) up to the location, and whether the text names this file."""
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


def record(name, call):
    try:
        r = call()
        out[name] = np.asarray(r)
        out[name + ".error"] = np.array("no error")
        out[name + ".where"] = np.array(False)
    except ValueError as e:
        text = str(e).split("\n\n")[0]
        # (the location: JAX's file:line:column (function), where it gives one; the function:
        # JAX names its own wrapper of an eager shard_map, and qualified names)
        text = re.sub(r"(on platform CPU) at .*$", r"\1", text, flags=re.DOTALL)
        text = re.sub(r"(argument \S+) of .*? with shape", r"\1 of F with shape", text)
        out[name] = np.zeros(0, np.float32)
        out[name + ".error"] = np.array(f"{type(e).__name__}: {text}")
        out[name + ".where"] = np.array(__file__ + ":" in str(e))


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

np.savez(sys.argv[1], **out)
