"""jax.sharding on this process's devices: reprs, equality and hashing of meshes, specs and
shardings, their queries, set_mesh, device_put / jit / with_sharding_constraint / shard_map /
pmap with shardings, and the errors for bad meshes and specs (written for real JAX; run with
one CPU device)."""
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec,
                          SingleDeviceSharding)

P = PartitionSpec
texts, values = {}, {}
x = jnp.arange(6.0).reshape(2, 3)
dev = jax.devices()[0]
single = SingleDeviceSharding(dev)
mesh = jax.make_mesh((1,), ("x",))
auto_mesh = Mesh(np.array(jax.devices()), ("x",))
mesh2 = jax.make_mesh((1, 1), ("a", "b"), axis_types=(AxisType.Auto, AxisType.Explicit))
named = NamedSharding(mesh, P("x", None))
texts["reprs"] = [repr(x.sharding), repr(single), repr(mesh), str(mesh), repr(auto_mesh),
                  repr(mesh2), repr(named), repr(NamedSharding(auto_mesh, P())),
                  repr(P("x", None)), repr(P()), repr(P(("x", "y"), None)), repr(P(("x",))),
                  repr(P("x", unreduced={"y"})), repr(AxisType.Explicit), str(AxisType.Auto),
                  repr(AbstractMesh((2, 3), ("p", "q"))), repr(mesh.abstract_mesh),
                  repr(jax.sharding.get_abstract_mesh()), repr(jax.sharding.get_mesh()),
                  repr(x.addressable_shards[0].index), repr(P.UNCONSTRAINED)]
flags = [x.sharding == single, hash(x.sharding) == hash(single), single != named,
         named == NamedSharding(mesh, P("x", None)),
         hash(named) == hash(NamedSharding(mesh, P("x", None))),
         named != NamedSharding(mesh, P("x")), P("x") == P(("x",)), P("x") != ("x",),
         P("x", None) != P("x"), mesh == jax.make_mesh((1,), ("x",)), mesh != auto_mesh,
         hash(mesh) == hash(jax.make_mesh((1,), ("x",))), named.is_fully_replicated,
         named.is_fully_addressable, single.is_equivalent_to(named, 2),
         jax.device_put(x, named).sharding.is_equivalent_to(named, 2),
         x.sharding.device_set == {dev}, named.device_set == {dev}, len(P("x", None)) == 2,
         P(None, "x").index("x") == 1, list(AxisType) == [AxisType.Auto, AxisType.Explicit,
                                                          AxisType.Manual]]
values["flags"] = np.array(flags)
values["meta"] = np.array([single.num_devices, named.num_devices, mesh.size, mesh2.size,
                           len(x.addressable_shards), x.addressable_shards[0].replica_id])
texts["queries"] = [str(named.shard_shape((4, 6))), str(single.devices_indices_map((2, 3))),
                    str(named.memory_kind), str(mesh.shape), str(mesh.axis_names),
                    str(mesh.axis_sizes), str(mesh2.axis_types), str(mesh.devices.shape),
                    str(mesh2.explicit_axes), str(mesh2.auto_axes), str(mesh.device_ids)]
with jax.set_mesh(mesh):
    texts["in_set_mesh"] = [repr(jax.sharding.get_abstract_mesh()),
                            repr(jax.sharding.get_mesh())]
texts["after_set_mesh"] = [repr(jax.sharding.get_abstract_mesh())]

values["device_put"] = jax.device_put(x, named)
values["device_put_tree"] = jax.device_put({"a": x, "b": 1.0}, {"a": named, "b": single})["a"]
f = jax.jit(lambda a, b: a * b + 1, in_shardings=(named, None), out_shardings=named)
values["jit_shardings"] = f(x, 2.0)
auto_named = NamedSharding(auto_mesh, P("x"))
values["constraint"] = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, auto_named))(x)
sm = jax.shard_map(lambda a, b: a * b, mesh=auto_mesh, in_specs=(P("x"), P()),
                   out_specs=P("x"))
values["shard_map"] = sm(x, jnp.array(3.0))
values["pmap"] = jax.pmap(lambda a, s: a * s, in_axes=(0, None))(x[None], 2.0)

warnings.simplefilter("ignore", DeprecationWarning)
errors = [
    lambda: jax.make_mesh((2,), ("x",)),
    lambda: Mesh(np.array(jax.devices()), ("x", "y")),
    lambda: Mesh(np.array(jax.devices()), ("x",), axis_types=("a",)),
    lambda: NamedSharding(mesh, P("y")),
    lambda: NamedSharding(mesh2, P("a", "a")),
    lambda: jax.device_put(x, NamedSharding(mesh, P("x", None, None))),
    lambda: jax.lax.with_sharding_constraint(x, named),
    lambda: jax.jit(lambda a: a, in_shardings=3)(x),
    lambda: jax.jit(lambda a: a, in_shardings=(None, None))(x),
    lambda: P("x", unreduced=["y"]),
    lambda: P("x", unreduced={"y"})[0],
    lambda: AbstractMesh((1,), ("x",)).devices,
    lambda: jax.shard_map(lambda a: a, mesh=auto_mesh, in_specs=P("j"), out_specs=P())(x),
    lambda: jax.shard_map(lambda a: a, in_specs=P(), out_specs=P())(x),
]
for i, bad in enumerate(errors):
    try:
        bad()
        texts[f"error{i}"] = ["no error"]
    except Exception as err:  # noqa: BLE001  (the type and text are what is compared)
        texts[f"error{i}"] = [f"{type(err).__name__}: {err}".split("\n")[0]]
np.savez(sys.argv[1], **values, **{k: np.array(v) for k, v in texts.items()})
