"""How types print (`str` and `repr` of jax.typeof and of tracers): weak types, dtypes, keys,
inside jit and shard_map (varying axes, in the mesh's order), arrays laid out over Explicit mesh
axes (`float32[8@x,4]`); and collectives over several mesh axes of a 2x2 mesh of 4 CPU devices:
lax.pbroadcast (its values, its error for an operand invariant over one of them), ppermute and
pshuffle (values, whatever order the tuple names the axes in, and gradients) (written for real
JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

out = {}
devs = np.array(jax.devices()).reshape(2, 2)


def text(name, s):
    out[name] = np.array(s)


def types(name, x):
    text(name + ".str", str(jax.typeof(x)))
    text(name + ".repr", repr(jax.typeof(x)))


# concrete values
types("array", jnp.ones((3, 4)))
types("weak_float", 1.0)
types("weak_int", 3)
types("bool", True)
types("float32_scalar", jnp.float32(2.0))
types("int32_vector", jnp.arange(3))
types("bfloat16", jnp.zeros(2, jnp.bfloat16))
types("complex64", jnp.zeros((2, 1), jnp.complex64))
types("key", jax.random.key(0))
types("keys", jax.random.split(jax.random.key(0), 3))
types("weak_sum", jnp.asarray(1.0) + 2)


# traced values under jit: the type, the tracer's str and repr
def traced(name):
    def f(x):
        types(name + ".typeof", x)
        text(name + ".tracer_str", str(x))
        text(name + ".tracer_repr", repr(x))
        types(name + ".times2", x * 2)
        return x
    return f


jax.jit(traced("jit_weak"))(1.0)
jax.jit(traced("jit_matrix"))(np.ones((2, 3), np.float32))

# arrays laid out over Explicit mesh axes carry their layout in their type; over Auto axes not
explicit = Mesh(devs, ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
explicit_yx = Mesh(devs, ("y", "x"), axis_types=(AxisType.Explicit,) * 2)
auto = Mesh(devs, ("x", "y"), axis_types=(AxisType.Auto,) * 2)
mixed = Mesh(devs, ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
base = np.arange(32.0, dtype=np.float32).reshape(8, 4)
for name, m, spec in [("explicit_x", explicit, P("x", None)),
                      ("explicit_xy", explicit, P("x", "y")),
                      ("explicit_yx_dims", explicit, P("y", "x")),
                      ("explicit_tuple", explicit, P(("x", "y"), None)),
                      ("explicit_tuple_yx", explicit_yx, P(("x", "y"))),
                      ("explicit_short", explicit, P("x")),
                      ("explicit_replicated", explicit, P()),
                      ("auto_x", auto, P("x", None)),
                      ("mixed_both", mixed, P("x", "y"))]:
    a = jax.device_put(base, NamedSharding(m, spec))
    types(name, a)
    types(name + ".times2", a * 2)
    types(name + ".sum0", a.sum(0))


# inside shard_map under jit: the varying axes in the mesh's order
def in_shard_map(name):
    def f(x):
        types(name + ".typeof", x)
        text(name + ".tracer_repr", repr(x))
        types(name + ".psum_x", lax.psum(x, "x"))
        types(name + ".psum_both", lax.psum(x, ("x", "y")))
        types(name + ".sum", x.sum())
        types(name + ".weak", jnp.float32(2.0) + 1)
        return x
    return f


for name, m in [("sm", auto), ("sm_yx", Mesh(devs, ("y", "x"), axis_types=(AxisType.Auto,) * 2))]:
    jax.jit(jax.shard_map(in_shard_map(name), mesh=m, in_specs=P(("x", "y")),
                          out_specs=P(("x", "y"))))(np.arange(8.0, dtype=np.float32))


# pbroadcast over several axes: the values (JAX's CPU backend has no lowering for it: there the
# equivalent its docstring gives, a psum of the source's masked value), then its type error
def broadcast(name, axes, source, spec, check_vma=True):
    def f(v):
        try:
            return lax.pbroadcast(v, axes, source)
        except NotImplementedError as e:
            if "MLIR translation rule" not in str(e):
                raise
        return lax.psum(jnp.where(lax.axis_index(axes) == source, v, 0), axes)

    def call():
        return jax.jit(jax.shard_map(f, mesh=auto, in_specs=spec, out_specs=P(("x", "y")),
                                     check_vma=check_vma))(base)
    try:
        try:
            out[name] = np.asarray(call())
        except NotImplementedError as e:  # (JAX raises it at lowering, outside the shard_map)
            if "MLIR translation rule" not in str(e):
                raise
            out[name] = np.asarray(jax.jit(jax.shard_map(
                lambda v: lax.psum(jnp.where(lax.axis_index(axes) == source, v, 0), axes),
                mesh=auto, in_specs=spec, out_specs=P(("x", "y")), check_vma=check_vma))(base))
        text(name + ".error", "")
    except ValueError as e:
        out[name] = np.zeros(0, np.float32)
        text(name + ".error", f"{type(e).__name__}: {str(e).splitlines()[0]}")


broadcast("pbroadcast_xy_0", ("x", "y"), 0, P(("x", "y")))
broadcast("pbroadcast_xy_1", ("x", "y"), 1, P(("x", "y")))
broadcast("pbroadcast_xy_3", ("x", "y"), 3, P(("x", "y")))
broadcast("pbroadcast_yx_1", ("y", "x"), 1, P(("x", "y")))
broadcast("pbroadcast_y_1", ("y",), 1, P(("x", "y")))
broadcast("pbroadcast_xy_invariant_y", ("x", "y"), 2, P("x"))
broadcast("pbroadcast_xy_invariant", ("x", "y"), 2, P())
broadcast("pbroadcast_xy_unchecked", ("x", "y"), 2, P("x"), check_vma=False)

# ppermute and pshuffle over several axes: positions numbered over the product of the axes
ba = Mesh(devs, ("b", "a"), axis_types=(AxisType.Auto,) * 2)
w = np.cos(np.arange(32.0, dtype=np.float32)).reshape(8, 4)
cycle = [(0, 1), (1, 2), (2, 3), (3, 0)]
for name, m, axes, f in [
        ("ppermute_xy", auto, ("x", "y"), lambda v, axes: lax.ppermute(v, axes, cycle)),
        ("ppermute_yx", auto, ("y", "x"), lambda v, axes: lax.ppermute(v, axes, cycle)),
        ("ppermute_partial", auto, ("x", "y"), lambda v, axes: lax.ppermute(v, axes,
                                                                          [(0, 2), (3, 1)])),
        ("ppermute_ab_on_ba", ba, ("a", "b"), lambda v, axes: lax.ppermute(v, axes, cycle)),
        ("pshuffle_xy", auto, ("x", "y"), lambda v, axes: lax.pshuffle(v, axes, [3, 2, 0, 1]))]:
    spec = P(tuple(m.axis_names))
    out[name] = np.asarray(jax.jit(jax.shard_map(lambda v, f=f, axes=axes: f(v, axes), mesh=m,
                                                 in_specs=spec, out_specs=spec))(base))

    def loss(v, wv, f=f, axes=axes):
        return jnp.sum(jnp.sin(f(v, axes)) * wv)
    out[name + ".grad"] = np.asarray(jax.jit(jax.shard_map(
        jax.grad(loss), mesh=m, in_specs=(spec, spec), out_specs=spec))(base, w))

np.savez(sys.argv[1], **out)
