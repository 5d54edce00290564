"""Where results land under `jax.set_mesh` of a mesh spanning the processes (tracejit under
`mpiexec -n 2`, two devices per process), from values nobody laid out: jit's results (from
NumPy arrays, Python scalars, no arguments, AOT), eager operations' (arithmetic, creation
functions, jnp.asarray, grad, vmap, scan, random), and such results used after the block and
fed back. Run three ways by tests/test_mpi.py: `mpi`, `single` (tracejit, one process of four
devices) and `jax` (real JAX, four devices: the oracle of what a result reports). Each value is
saved with its sharding (type, spec, the mesh's device ids), whether it is fully replicated
and fully addressable, and its addressable shards (device ids, whether each holds the whole
value). Written for JAX: `python -m tracejit` runs it.

usage: python [-m tracejit] context_mesh.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results = run.results

import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
# (each with a spec splitting x over the processes)
meshes = {"m4": (Mesh(devs.reshape(-1), ("x",)), P(None, "x")),
          "m22": (Mesh(devs, ("x", "y")), P("x"))}
x = np.arange(8.0, dtype=np.float32).reshape(2, 4) / 4


def record(name, r):
    s, value = r.sharding, run.whole(r)
    results[name] = value
    results[f"{name}/sharding"] = np.array(
        f"{type(s).__name__} {getattr(s, 'spec', '')} "
        f"{[d.id for d in s.mesh.devices.flat] if hasattr(s, 'mesh') else ''}")
    results[f"{name}/replicated"] = np.array(r.is_fully_replicated)
    results[f"{name}/addressable"] = np.array(r.is_fully_addressable)
    shards = r.addressable_shards
    results[f"{name}/shard_devices"] = np.array([sh.device.id for sh in shards])
    results[f"{name}/shards_whole"] = np.array(
        [np.array_equal(np.asarray(sh.data), value) for sh in shards])


def calls(prefix):
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


for name, (m, split) in meshes.items():
    with jax.set_mesh(m):
        calls(name)
        r = jax.jit(lambda a: a * 2)(x)
        e = jnp.asarray(x) - 1
        # fed back in: a jit of the replicated result, and one splitting it over the mesh
        record(f"{name}.again_jit", jax.jit(lambda a, b: a * b + 1)(r, e))
        record(f"{name}.again_split", jax.jit(lambda a: a * 3, out_shardings=NamedSharding(
            m, split))(r))
        # the same jit called again on such arrays (after the first call, tracejit's dispatch
        # fast path): each call's results, an argument returned as it is among them
        again = jax.jit(lambda a, b: (a * 2, b, (a + b).sum(0)))
        for call in range(3):
            for k, out in enumerate(again(r, e)):
                record(f"{name}.again{call}_{k}", out)
        record(f"{name}.again_scalar", jax.jit(lambda a, s: a * s)(r, 2.5))
        # laid out split over the mesh eagerly (a sharding constraint, device_put), and eager
        # operations on such arrays: their layouts propagated, as a jit of each reports them
        constrained = jax.lax.with_sharding_constraint(x, split)
        record(f"{name}.constrained", constrained)
        record(f"{name}.constrained_times2", constrained * 2)
        record(f"{name}.constrained_sum", constrained.sum())
        record(f"{name}.constrained_T", constrained.T)
        record(f"{name}.constrained_plus_host", constrained + x)
        record(f"{name}.cond_constrained", jax.lax.cond(
            True, lambda a: jax.lax.with_sharding_constraint(a, split), lambda a: a, x))
        record(f"{name}.put_split_sin", jnp.sin(jax.device_put(x, NamedSharding(m, split))))
    # used after the block: they stay laid out over the mesh
    record(f"{name}.after_jit", jax.jit(lambda a: a + 1)(r))
    record(f"{name}.after_eager", r * e)
    record(f"{name}.after_sum", jnp.sum(r))
run.finish()
