"""Collectives over several mesh axes at once (axis_name=('x', 'y'), positions numbered over
the product of the axes in the order named) under shard_map on 8 CPU devices, meshes 2x4, 4x2
and 2x2x2, the axes named in the mesh's order, in others and in part: all_gather (axis, tiled,
to='invarying'), psum_scatter (scatter_dimension, tiled), all_to_all (split and concat axes,
tiled), axis_index, axis_size, psum, pmax, pmin, pmean, and within axis_index_groups; their
values, types, gradients (inside shard_map and outside), vmap around them, check_vma=False,
and the errors for shapes the axes do not divide (written for real JAX)."""
import math
import sys

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

out = {}
devs = np.array(jax.devices())
MESHES = {"m24": Mesh(devs.reshape(2, 4), ("x", "y")),
          "m42": Mesh(devs.reshape(4, 2), ("x", "y")),
          "m222": Mesh(devs.reshape(2, 2, 2), ("x", "y", "z"))}
# (mesh, the axes named, whether every case runs or the values alone)
RUNS = [("m24", ("x", "y"), True), ("m24", ("y", "x"), True),
        ("m42", ("x", "y"), True), ("m42", ("y", "x"), False),
        ("m222", ("x", "y", "z"), True), ("m222", ("z", "x", "y"), False),
        ("m222", ("z", "x"), True), ("m222", ("y", "z"), False)]
# each position's block: (2, 6) of small integers (sums of them are exact in float32)
base = ((np.arange(16 * 6) * 7) % 11 - 5).astype(np.float32).reshape(16, 6)


def wide(v, n):
    """A block made (2n, 6): its copies times 1..n (then position-dependent as v is)."""
    return jnp.concatenate([v * (i + 1) for i in range(n)], 0)


def one_each(v, n):
    """A block made (n, 12)."""
    return wide(v, n).reshape(n, 12)


def cases(axes, n, groups):
    c = {
        "ag": lambda v: lax.all_gather(v, axes),
        "ag_axis1_tiled": lambda v: lax.all_gather(v, axes, axis=1, tiled=True),
        "ag_axis2": lambda v: lax.all_gather(v, axes, axis=2),
        "ag_invariant": lambda v: lax.all_gather(v, axes, axis=1, to="invarying"),
        "ps": lambda v: lax.psum_scatter(one_each(v, n), axes),
        "ps_dim1_tiled": lambda v: lax.psum_scatter(wide(v, n).T, axes, scatter_dimension=1,
                                                    tiled=True),
        "ps_dim1": lambda v: lax.psum_scatter(one_each(v, n).T, axes, scatter_dimension=1),
        "a2a_0_1": lambda v: lax.all_to_all(one_each(v, n), axes, 0, 1),
        "a2a_1_0": lambda v: lax.all_to_all(one_each(v, n).T, axes, 1, 0),
        "a2a_0_0": lambda v: lax.all_to_all(one_each(v, n), axes, 0, 0),
        "a2a_tiled_0_1": lambda v: lax.all_to_all(wide(v, n), axes, 0, 1, tiled=True),
        "a2a_tiled_1_1": lambda v: lax.all_to_all(wide(v, n).T, axes, 1, 1, tiled=True),
        "index": lambda v: v * 0 + lax.axis_index(axes),
        "size": lambda v: v * lax.axis_size(axes),
        "psum": lambda v: lax.psum(v, axes),
        "pmax": lambda v: lax.pmax(v * (1 + lax.axis_index(axes)), axes),
        "pmin_int": lambda v: lax.pmin(v.astype(jnp.int32) - lax.axis_index(axes), axes),
        "pmean": lambda v: lax.pmean(v, axes),
        "ag_groups": lambda v: lax.all_gather(v, axes, axis_index_groups=groups, axis=1),
        "ps_groups": lambda v: lax.psum_scatter(wide(v, n // 2), axes,
                                                axis_index_groups=groups, tiled=True),
        "a2a_groups": lambda v: lax.all_to_all(wide(v, n // 2), axes, 0, 1,
                                               axis_index_groups=groups, tiled=True),
        "a2a_groups_untiled": lambda v: lax.all_to_all(one_each(v, n // 2), axes, 0, 1,
                                                       axis_index_groups=groups),
        "pmax_groups": lambda v: lax.pmax(v * (1 + lax.axis_index(axes)), axes,
                                          axis_index_groups=groups),
    }
    unchecked = {  # (psum within groups: only without the varying-axes types, as in JAX)
        "psum_groups": lambda v: lax.psum(v * (1 + lax.axis_index(axes)), axes,
                                          axis_index_groups=groups),
        "pmean_groups": lambda v: lax.pmean(v, axes, axis_index_groups=groups),
        "ag_unchecked": c["ag"], "ps_unchecked": c["ps"],
        "a2a_unchecked": c["a2a_tiled_0_1"]}
    return c, unchecked


# (not all_to_all with tiled=False and split_axis != concat_axis: JAX 0.10's transpose of it
# raises 'Expected cotangent type float32[8,12,1] but got float32[8,1,12]')
DIFFERENTIATED = ["ag", "ag_axis1_tiled", "ag_invariant", "ps", "ps_dim1_tiled", "a2a_0_0",
                  "a2a_tiled_1_1", "psum", "pmean", "ag_groups", "ps_groups", "a2a_groups",
                  "psum_groups", "ag_unchecked", "ps_unchecked", "a2a_unchecked"]
VMAPPED = ["ag_axis1_tiled", "ps", "a2a_tiled_0_1", "ag_groups"]  # (JAX: no vmap of a2a_groups)


def weights(shape):
    return np.cos(np.arange(math.prod(shape), dtype=np.float32)).reshape(shape)


for mesh_name, axes, every in RUNS:
    mesh = MESHES[mesh_name]
    spec = P(mesh.axis_names)  # (every position its own block of base's rows)
    n = math.prod(mesh.shape[a] for a in axes)
    groups = np.random.default_rng(n).permutation(n).reshape(2, -1).tolist()
    checked, unchecked = cases(axes, n, groups)
    tag = f"{mesh_name}_{''.join(axes)}"
    for name, f in [*checked.items(), *unchecked.items()]:
        if not every and name not in ("ag", "ps", "a2a_0_1", "a2a_tiled_0_1", "index",
                                      "ag_groups"):
            continue
        key, check_vma = f"{tag}/{name}", name not in unchecked

        def body(v, f=f, key=key):
            r = f(v)
            out.setdefault(key + ".type", np.array(str(jax.typeof(r))))
            return r[None]
        sm = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec,
                                   check_vma=check_vma))
        out[key] = np.asarray(sm(base))
        if not every:
            continue
        if name in DIFFERENTIATED:
            w = weights(out[key].shape)

            def loss(v, f=f, check_vma=check_vma, mesh=mesh, spec=spec, w=w):
                return jnp.sum(jnp.sin(jax.shard_map(lambda u: f(u)[None], mesh=mesh,
                                                     in_specs=spec, out_specs=spec,
                                                     check_vma=check_vma)(v)) * w)
            out[key + ".grad"] = np.asarray(jax.jit(jax.grad(loss))(base))

            def inner(v, f=f, w=w):  # (each position's own loss, differentiated inside)
                return jnp.sum(jnp.sin(f(v)) * jnp.asarray(w[0]))
            out[key + ".grad_inside"] = np.asarray(jax.jit(jax.shard_map(
                jax.grad(inner), mesh=mesh, in_specs=spec, out_specs=spec,
                check_vma=check_vma))(base))
        if name in VMAPPED:
            two = np.stack([base, 3 - base])
            out[key + ".vmap"] = np.asarray(jax.vmap(sm)(two))
            out[key + ".vmap_inside"] = np.asarray(jax.jit(jax.shard_map(
                lambda v, f=f: jax.vmap(f)(jnp.stack([v, 2 * v]))[None], mesh=mesh,
                in_specs=spec, out_specs=spec, check_vma=check_vma))(base))

# JAX's errors for operands whose shape the axes do not divide (the first line; ours adds the
# line of the call and what to do), and for psum_scatter over axes the operand varies over
# only some of
m24, spec24 = MESHES["m24"], P(("x", "y"))
for name, bad in {
    "ps_not_divisible": lambda v: lax.psum_scatter(v, ("x", "y"), tiled=True),
    "ps_not_the_size": lambda v: lax.psum_scatter(v, ("y", "x")),
    "a2a_not_divisible": lambda v: lax.all_to_all(v, ("x", "y"), 1, 0, tiled=True),
    "a2a_not_the_size": lambda v: lax.all_to_all(v, ("y", "x"), 0, 1),
    "ps_mixed_state": lambda v: lax.psum_scatter(lax.psum(v, "y").reshape(12)[:8],
                                                 ("x", "y"), tiled=True),
}.items():
    try:
        jax.jit(jax.shard_map(lambda v, bad=bad: bad(v)[None], mesh=m24, in_specs=spec24,
                              out_specs=spec24))(base)
        out["error/" + name] = np.array("no error")
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        out["error/" + name] = np.array(type(e).__name__ + ": " + str(e).split("\n")[0])

np.savez(sys.argv[1], **out)
