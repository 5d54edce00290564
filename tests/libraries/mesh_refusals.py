"""What jit, eager operations, shard_map and AOT calls refuse where the devices or types of a
program disagree, and where results live (written for real JAX): (1) out_shardings and
sharding constraints over other devices than the `jax.set_mesh` mesh; (2) arrays laid out over
a mesh of other axis types (Explicit against Auto) or names than the mesh in effect; (3)
in_shardings and out_shardings on one device (results live and are committed there); (4)
shard_map over an all-Explicit mesh given in_specs other than its arguments' types; (5) a
compiled AOT program called on arrays committed elsewhere than it was lowered for. Records each
result's values and placement (type, spec, device ids, committed), or the error's type and its
first words (up to where JAX names the source line: tracejit adds the line and a fix)."""
import re
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
from jax.sharding import SingleDeviceSharding  # noqa: E402

devs = jax.devices()
out = {}
x = np.arange(8.0, dtype=np.float32)
x2 = np.arange(16.0, dtype=np.float32).reshape(4, 4)


def describe(r):
    s = r.sharding
    ids = sorted(d.id for d in s.device_set)
    return f"{type(s).__name__} {getattr(s, 'spec', '')} {ids} committed={r.committed}"


def words(e):
    """The error's first paragraph, up to where it names the user's source line."""
    text = re.split(r" at \S+\.py:\d+", str(e).split("\n\n")[0])[0]
    return text.split("This error occurs at source:")[0]


def record(name, call, exact=True, placement=True):
    """The same keys whether the call raises or not (run_both compares the key sets); with
    `exact`, the error's words too (else its type: JAX's text garbles a few); with
    `placement`, where the results live (else only that the call ran)."""
    try:
        rs = call()
        rs = rs if isinstance(rs, tuple) else (rs,)
        out[name] = np.concatenate([np.ravel(np.asarray(r)) for r in rs])
        out[name + ".result"] = np.array(
            " | ".join(describe(r) for r in rs) if placement else "ran")
    except (ValueError, TypeError, AssertionError) as e:
        out[name] = np.zeros(0, np.float32)
        out[name + ".result"] = np.array(
            f"error {type(e).__name__}" + (f": {words(e)}" if exact else ""))


def times2(a):
    return a * 2


# (1) under set_mesh, what fixes a program's devices must name the mesh's, in its order
m2 = Mesh(np.array(devs[:2]), ("x",))
m2o = Mesh(np.array(devs[2:]), ("x",))
m4 = Mesh(np.array(devs), ("x",))
m2_rev = Mesh(np.array(devs[1::-1]), ("x",))
with jax.set_mesh(m2):
    for name, other in [("m2o", m2o), ("m4", m4), ("m2_rev", m2_rev),
                        ("m2_equal", Mesh(np.array(devs[:2]), ("x",)))]:
        record(f"ctx.out.{name}",
               lambda: jax.jit(times2, out_shardings=NamedSharding(other, P("x")))(x))
        record(f"ctx.wsc.{name}", lambda: jax.jit(
            lambda a: jax.lax.with_sharding_constraint(a * 2, NamedSharding(other, P("x"))))(x))
        record(f"ctx.device_put.{name}", lambda: jax.device_put(x, NamedSharding(other, P("x"))))
    record("ctx.out.spec", lambda: jax.jit(times2, out_shardings=P("x"))(x))
    record("ctx.out.dev3", lambda: jax.jit(
        times2, out_shardings=SingleDeviceSharding(devs[3]))(x))
    record("ctx.out.dev0", lambda: jax.jit(
        times2, out_shardings=SingleDeviceSharding(devs[0]))(x))
    record("ctx.in.dev3", lambda: jax.jit(
        times2, in_shardings=SingleDeviceSharding(devs[3]))(x))
with jax.sharding.use_abstract_mesh(m2.abstract_mesh):  # (no devices: nothing to compare)
    record("abstract.out.m2o", lambda: jax.jit(
        times2, out_shardings=NamedSharding(m2o, P("x")))(x))

# (2) an array laid out over a mesh of other axis types or names than the mesh in effect
E, A = AxisType.Explicit, AxisType.Auto
me = jax.make_mesh((2,), ("x",), axis_types=(E,), devices=devs[:2])
ma = jax.make_mesh((2,), ("x",), axis_types=(A,), devices=devs[:2])
ma_y = jax.make_mesh((2,), ("y",), axis_types=(A,), devices=devs[:2])
ya = jax.device_put(x, NamedSharding(ma, P("x")))
ye = jax.device_put(x, NamedSharding(me, P("x")))
ya_y = jax.device_put(x, NamedSharding(ma_y, P("y")))
with jax.set_mesh(me):
    record("types.E.eager_mul", lambda: ya * 2)
    record("types.E.eager_sin", lambda: jnp.sin(ya))
    record("types.E.eager_other_names", lambda: ya_y * 2)
    record("types.E.jit", lambda: jax.jit(times2)(ya))
    record("types.E.jit_pair", lambda: jax.jit(lambda a: (a, a * 2))(ya)[1])
    record("types.E.jit_returned", lambda: jax.jit(lambda a: a)(ya))
    record("types.E.jit_unused", lambda: jax.jit(lambda a, b: b * 2)(ya, x),
           placement=False)
    record("types.E.jit_in_shardings", lambda: jax.jit(
        times2, in_shardings=NamedSharding(ma, P("x")))(ya))
    record("types.E.device_put", lambda: jax.device_put(ya))
    record("types.E.device_put_other", lambda: jax.device_put(x, NamedSharding(ma, P("x"))))
    record("types.E.out_other", lambda: jax.jit(
        times2, out_shardings=NamedSharding(ma, P("x")))(x))
    record("types.E.shard_map_other", lambda: jax.shard_map(
        times2, mesh=ma, in_specs=P("x"), out_specs=P("x"))(x))
    record("types.E.same", lambda: ye * 2)
with jax.set_mesh(ma):
    record("types.A.eager_mul", lambda: ye * 2)
    record("types.A.eager_sum", lambda: ye.sum())
    record("types.A.jit", lambda: jax.jit(times2)(ye))
    # (Auto meshes of other names mix; JAX reports the result over the mesh in effect)
    record("types.A.other_names", lambda: ya_y * 2, placement=False)
    record("types.A.same", lambda: ya * 2)
with jax.sharding.use_abstract_mesh(me.abstract_mesh):
    record("types.abstractE.eager", lambda: ya * 2)
    record("types.abstractE.jit", lambda: jax.jit(times2)(ya))
with me:  # (the legacy form types nothing)
    record("types.legacyE.eager", lambda: ya * 2)

# (3) in_shardings / out_shardings on one device: the program runs there
s3, s2 = SingleDeviceSharding(devs[3]), SingleDeviceSharding(devs[2])
record("one.in3", lambda: jax.jit(times2, in_shardings=s3)(x))
record("one.in3_jnp", lambda: jax.jit(times2, in_shardings=s3)(jnp.asarray(x)))
record("one.in3_committed2", lambda: jax.jit(times2, in_shardings=s3)(jax.device_put(x, devs[2])))
record("one.in3_returned", lambda: jax.jit(lambda a: a, in_shardings=s3)(x))
record("one.in3_constant", lambda: jax.jit(lambda a: (a * 2, jnp.ones(3)), in_shardings=s3)(x))
record("one.in3_unused", lambda: jax.jit(lambda a: jnp.ones(3), in_shardings=s3)(x))
record("one.in3_none", lambda: jax.jit(lambda a, b: a * b, in_shardings=(s3, None))(x, x))
record("one.in3_in2", lambda: jax.jit(lambda a, b: a * b, in_shardings=(s3, s2))(x, x))
record("one.in3_mesh_arg", lambda: jax.jit(lambda a, b: a * b, in_shardings=(s3, None))(
    x, jax.device_put(x, NamedSharding(m2, P("x")))), exact=False)
record("one.out3", lambda: jax.jit(times2, out_shardings=s3)(x))
record("one.out3_none", lambda: jax.jit(lambda a: (a * 2, a + 1), out_shardings=(s3, None))(x))
record("one.out3_out2", lambda: jax.jit(lambda a: (a * 2, a + 1), out_shardings=(s3, s2))(x))
record("one.in3_out2", lambda: jax.jit(times2, in_shardings=s3, out_shardings=s2)(x))
record("one.committed2_out3", lambda: jax.jit(times2, out_shardings=s3)(
    jax.device_put(x, devs[2])))
record("one.chain_eager", lambda: jax.jit(times2, in_shardings=s3)(x) + 1)
record("one.chain_jit", lambda: jax.jit(lambda a: a - 1)(jax.jit(times2, in_shardings=s3)(x)))
record("one.chain_device_put", lambda: jax.device_put(jax.jit(times2, in_shardings=s3)(x)))

# (4) shard_map over a mesh whose axes are all Explicit takes its arguments as typed
for mname, types in [("E", (E, E)), ("A", (A, A))]:
    m = jax.make_mesh((2, 2), ("x", "y"), axis_types=types, devices=devs)
    sm = jax.shard_map(times2, mesh=m, in_specs=P("x", "y"), out_specs=P("x", "y"))
    record(f"smap.{mname}.outside_mesh", lambda: sm(x2))
    with jax.set_mesh(m):
        record(f"smap.{mname}.numpy", lambda: sm(x2))
        record(f"smap.{mname}.jnp", lambda: sm(jnp.ones((4, 4))))
        record(f"smap.{mname}.mesh_none", lambda: jax.shard_map(
            times2, mesh=None, in_specs=P("x", "y"), out_specs=P("x", "y"))(x2))
        record(f"smap.{mname}.jit", lambda: jax.jit(sm)(x2))
        record(f"smap.{mname}.jit_in_shardings", lambda: jax.jit(
            sm, in_shardings=P("x", "y"))(x2))
        record(f"smap.{mname}.replicated_spec", lambda: jax.shard_map(
            times2, mesh=m, in_specs=P(), out_specs=P())(x2))
        record(f"smap.{mname}.short_spec", lambda: jax.shard_map(
            times2, mesh=m, in_specs=P("x"), out_specs=P("x"))(x2))
        record(f"smap.{mname}.placed_same", lambda: sm(jax.device_put(x2, P("x", "y"))))
        record(f"smap.{mname}.placed_rows", lambda: sm(jax.device_put(x2, P("x"))))
        record(f"smap.{mname}.placed_whole", lambda: sm(jax.device_put(x2, P())))
        record(f"smap.{mname}.jit_placed_whole", lambda: jax.jit(sm)(
            jax.device_put(x2, P())))
        record(f"smap.{mname}.jit_placed_same", lambda: jax.jit(sm)(
            jax.device_put(x2, P("x", "y"))))
        record(f"smap.{mname}.scalar", lambda: jax.shard_map(
            times2, mesh=m, in_specs=P(), out_specs=P())(3.0))

# (5) a compiled AOT program called on arrays placed otherwise than it was lowered for
xs = jax.device_put(x, NamedSharding(m2, P("x")))
plain = jax.jit(times2).lower(x).compile()
laid = jax.jit(times2).lower(xs).compile()
on3 = jax.jit(times2).lower(jax.device_put(x, devs[3])).compile()
given = jax.jit(times2, in_shardings=NamedSharding(m2, P("x"))).lower(x).compile()
for name, arg in [("numpy", lambda: x), ("jnp", lambda: jnp.asarray(x)),
                  ("dev0", lambda: jax.device_put(x, devs[0])),
                  ("dev3", lambda: jax.device_put(x, devs[3])),
                  ("m2", lambda: xs),
                  ("m2o", lambda: jax.device_put(x, NamedSharding(m2o, P("x")))),
                  ("m2_whole", lambda: jax.device_put(x, NamedSharding(m2, P()))),
                  ("m4", lambda: jax.device_put(x, NamedSharding(m4, P("x"))))]:
    for cname, compiled in [("plain", plain), ("laid", laid), ("on3", on3), ("given", given)]:
        record(f"aot.{cname}.{name}", lambda: compiled(arg()))
pair = jax.jit(lambda a, b: a + b).lower(x, xs).compile()
record("aot.pair.numpy_laid", lambda: pair(x, xs))
record("aot.pair.numpy_numpy", lambda: pair(x, x))

np.savez(sys.argv[1], **out)
