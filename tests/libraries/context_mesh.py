"""One jitted function called under one context mesh (jax.set_mesh) after another: shard_map
with mesh=None, out_shardings and with_sharding_constraint given bare PartitionSpecs, a program
reading get_abstract_mesh(), AOT lowering, and arguments laid out over a mesh. Records each
result's values, the sharding it reports (spec and device ids), which calls raise, and how
many times each function was traced (a Python side effect in it): the same mesh object again,
or an equal new one, traces nothing new; another mesh does (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

devs = jax.devices()
m2 = Mesh(np.array(devs[:2]), ("x",))
m4 = Mesh(np.array(devs), ("x",))  # another size
m2_equal = Mesh(np.array(devs[:2]), ("x",))  # a new object equal to m2
m2_other = Mesh(np.array(devs[2:]), ("x",))  # m2's shape, other devices
m22 = Mesh(np.array(devs).reshape(2, 2), ("x", "y"))  # another shape, the same size
ORDER = [("m2", m2), ("m4", m4), ("m2_again", m2), ("m2_equal", m2_equal),
         ("m2_other", m2_other), ("m22", m22)]
out = {}
x = np.arange(8.0, dtype=np.float32)


def describe(s):
    ids = [d.id for d in s.mesh.devices.flat] if hasattr(s, "mesh") else \
        sorted(d.id for d in s.device_set)
    return f"{type(s).__name__} {getattr(s, 'spec', '')} {ids}"


def record(name, call, traces=None):
    """The same keys whether the call raises or not (run_both compares the key sets)."""
    try:
        r = call()
        out[name] = np.asarray(r)
        out[name + ".sharding"] = np.array(describe(r.sharding))
    except (ValueError, RuntimeError) as e:  # (the wording differs: its type is recorded)
        out[name] = np.zeros(0, np.float32)
        out[name + ".sharding"] = np.array(f"error {type(e).__name__}")
    if traces is not None:
        out[name + ".traces"] = np.array(len(traces))


def under_each(prefix, f, traces, arg=x, no_mesh=True):
    for name, m in ORDER:
        with jax.set_mesh(m):
            record(f"{prefix}.{name}", lambda: f(arg), traces)
    if no_mesh:  # then outside any mesh
        record(f"{prefix}.no_mesh", lambda: f(arg), traces)


# shard_map with mesh=None under jit: the context mesh's axis size is in the program
sm_traces = []


def body(a):
    sm_traces.append(1)
    return a + jax.lax.psum(1, "x")


under_each("sm", jax.jit(jax.shard_map(body, mesh=None, in_specs=P("x"), out_specs=P("x"))),
           sm_traces, no_mesh=False)  # (outside any mesh, JAX 0.10 fails in XLA)
# each mesh with a shard_map and jit of its own (JAX binds a shard_map object with mesh=None
# to the first mesh it runs under: "sm" above raises under another; these show the values)
for name, m in ORDER:
    with jax.set_mesh(m):
        record(f"sm_fresh.{name}", lambda: jax.jit(jax.shard_map(
            body, mesh=None, in_specs=P("x"), out_specs=P("x")))(x))



# the conditions of that binding, and JAX's error text (its first paragraph: tracejit adds
# where and what to do, a paragraph of its own; `.where`: the message names this file's line)
def message(name, call):
    try:
        r = call()
        out[name] = np.asarray(r)
        out[name + ".error"] = np.array("no error")
    except ValueError as e:
        out[name] = np.zeros(0, np.float32)
        out[name + ".error"] = np.array(str(e).split("\n\n")[0])
        out[name + ".where"] = np.array(__file__ + ":" in str(e))


m2y = Mesh(np.array(devs[:2]), ("y",))  # m2's shape, another axis name
m2_explicit = jax.make_mesh((2,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,),
                            devices=devs[:2])
bound = jax.shard_map(body, mesh=None, in_specs=P("x"), out_specs=P("x"))
for name, m in [("m2", m2), ("m4", m4), ("m2_other", m2_other), ("m22", m22), ("m2y", m2y),
                ("m2_explicit", m2_explicit), ("m2_again", m2)]:
    with jax.set_mesh(m):
        message(f"bound.{name}", lambda: bound(x))
# a first call whose specs do not fit the mesh binds nothing: the next mesh is its first
late = jax.shard_map(lambda a: a * jax.lax.psum(1, "y"), mesh=None, in_specs=P("y"),
                     out_specs=P("y"))
for name, m in [("m2", m2), ("m22", m22), ("m4", m4)]:
    with jax.set_mesh(m):
        message(f"late.{name}", lambda: late(x))
# the decorator form binds alike
decorated = jax.shard_map(mesh=None, in_specs=P("x"), out_specs=P("x"))(body)
for name, m in [("m4", m4), ("m2", m2)]:
    with jax.set_mesh(m):
        message(f"decorated.{name}", lambda: decorated(x))
# a mesh given to shard_map: checked against the abstract mesh in effect (set_mesh,
# use_abstract_mesh), not against the legacy `with mesh:` one
given = jax.shard_map(body, mesh=m2, in_specs=P("x"), out_specs=P("x"))
with jax.set_mesh(m4):
    message("given.set_mesh_m4", lambda: given(x))
    message("given.set_mesh_m4_jit", lambda: jax.jit(given)(x))
with jax.set_mesh(m2):
    message("given.set_mesh_m2", lambda: given(x))
with jax.sharding.use_abstract_mesh(m22.abstract_mesh):
    message("given.abstract_m22", lambda: jax.jit(given)(x))
with m4:
    message("given.legacy_m4", lambda: given(x))

# out_shardings a bare PartitionSpec: laid out over the context mesh
out_traces = []
under_each("out", jax.jit(lambda a: (out_traces.append(1), a * 2)[1], out_shardings=P("x")),
           out_traces)

# with_sharding_constraint given a bare PartitionSpec
wsc_traces = []
under_each("wsc", jax.jit(lambda a: (wsc_traces.append(1),
                                     jax.lax.with_sharding_constraint(a * 2, P("x")))[1]),
           wsc_traces)

# a program reading the abstract mesh in effect
am_traces = []


def mesh_size(a):
    am_traces.append(1)
    return a + jax.sharding.get_abstract_mesh().size + 10 * len(
        jax.sharding.get_abstract_mesh().axis_names)


am = jax.jit(mesh_size)
under_each("am", am, am_traces)
# its arguments laid out over m2 (the dispatch fast path's sharded arguments)
placed = jax.device_put(x, NamedSharding(m2, P("x")))
under_each("am_placed", am, am_traces, placed)

# AOT: lower under each mesh, then run the compiled program outside any
aot_traces = []
aot = jax.jit(lambda a: (aot_traces.append(1), a + jax.sharding.get_abstract_mesh().size)[1])
for name, m in ORDER:
    with jax.set_mesh(m):
        compiled = aot.lower(x).compile()
    record(f"aot.{name}", lambda compiled=compiled: compiled(x), aot_traces)

np.savez(sys.argv[1], **out)
