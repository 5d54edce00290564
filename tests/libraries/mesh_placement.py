"""Where results land under a mesh put in effect by jax.set_mesh, from values nobody laid out:
jit's results (one or several, from NumPy arrays, Python scalars, no arguments, AOT), eager
operations' (arithmetic, creation functions, jnp.asarray, grad, vmap, scan, random), over Auto
and Explicit axes; the same under `with mesh:` and use_abstract_mesh (which place nothing);
and such results used after the block. Records each value and the sharding it reports (type,
spec, device ids) (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

devs = jax.devices()
m2 = Mesh(np.array(devs[:2]), ("x",))
m2_other = Mesh(np.array(devs[2:]), ("x",))  # m2's shape, other devices
m22 = Mesh(np.array(devs).reshape(2, 2), ("x", "y"))
explicit = Mesh(np.array(devs[:2]), ("x",), axis_types=(AxisType.Explicit,))
out = {}
x = np.arange(8.0, dtype=np.float32).reshape(2, 4) / 4


def describe(s):
    ids = [d.id for d in s.mesh.devices.flat] if hasattr(s, "mesh") else \
        sorted(d.id for d in s.device_set)
    return f"{type(s).__name__} {getattr(s, 'spec', '')} {ids}"


def record(name, r):
    out[name] = np.asarray(r)
    out[name + ".sharding"] = np.array(describe(r.sharding))


def calls(prefix):
    """The calls recorded under each context (the same list each time)."""
    three = jax.jit(lambda a: (a * 2, a.sum(), jnp.sin(a).T))(x)
    for k, r in enumerate(three):
        record(f"{prefix}.jit{k}", r)
    record(f"{prefix}.jit_scalar", jax.jit(lambda a: a * 3)(1.5))
    record(f"{prefix}.jit_int", jax.jit(lambda a: a + 1)(np.arange(3)))
    record(f"{prefix}.jit_no_args", jax.jit(lambda: jnp.ones(3))())
    record(f"{prefix}.jit_of_jnp", jax.jit(jnp.cos)(jnp.asarray(x)))
    record(f"{prefix}.aot", jax.jit(lambda a: a - 1).lower(x).compile()(x))
    record(f"{prefix}.asarray", jnp.asarray(x))
    record(f"{prefix}.array_list", jnp.array([1.0, 2.0]))
    record(f"{prefix}.eager_add", jnp.asarray(x) + 1)
    record(f"{prefix}.eager_sin", jnp.sin(x))
    record(f"{prefix}.eager_sum", jnp.sum(x, axis=1))
    record(f"{prefix}.zeros", jnp.zeros((3, 2)))
    record(f"{prefix}.arange", jnp.arange(5))
    record(f"{prefix}.grad", jax.grad(lambda a: (a * a).sum())(x))
    record(f"{prefix}.vmap", jax.vmap(lambda a: a * 2)(x))
    record(f"{prefix}.scan", jax.lax.scan(lambda c, a: (c + a, a * 2), np.float32(0), x[0])[0])
    record(f"{prefix}.normal", jax.random.normal(jax.random.key(0), (3,)))
    record(f"{prefix}.device_put", jax.device_put(x))
    if prefix in ("m2", "m22"):  # (an eager cond whose branch holds a constraint: laid out)
        record(f"{prefix}.cond_constraint", jax.lax.cond(
            True, lambda a: jax.lax.with_sharding_constraint(a * 2, P("x")), jnp.sin, x))


calls("no_mesh")
for name, m in [("m2", m2), ("m22", m22), ("explicit", explicit)]:
    with jax.set_mesh(m):
        calls(name)
with jax.sharding.use_abstract_mesh(AbstractMesh((2,), ("x",))):
    calls("abstract")
with m2:  # (JAX's legacy context: PartitionSpecs name its axes, nothing is placed)
    calls("legacy")

# results made under m2, used after the block: they stay on its devices
with jax.set_mesh(m2):
    r = jax.jit(lambda a: a * 2)(x)
    e = jnp.asarray(x) - 1
record("after.jit", jax.jit(lambda a: a + 1)(r))
record("after.eager", r * e)
record("after.sum", jnp.sum(r))
record("after.with_split", jax.jit(lambda a, b: a + b)(
    r, jax.device_put(x, NamedSharding(m2, P("x")))))
with jax.set_mesh(m2):  # and the same again under m2
    record("again.jit", jax.jit(lambda a: a + 1)(r))
    record("again.eager", r * e)

np.savez(sys.argv[1], **out)
