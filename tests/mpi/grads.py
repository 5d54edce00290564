"""Gradients through shard_map over a mesh axis spanning the processes, taken directly of a loss
reduced by a collective inside it (no per-position losses summed outside), run three ways by
tests/test_mpi.py: `mpi` (tracejit under `mpiexec -n 2`, two devices per process), `single`
(tracejit, one process of four devices) and `jax` (real JAX, four devices). Every combination:
one and two positions of 'data' per process, check_vma True and False, grad outside shard_map
(eager and under jit) and inside it, out_specs P() and P('data'), a loss of psum, pmean,
all_gather then sum, psum_scatter then sum; and a ('data', 'model') mesh. (A result leaving
replicated once shared its cotangent among the processes under check_vma too, where psum's
typed transpose already hands each position the whole: the gradient came out 1/P of JAX's.)
Written for JAX: `python -m tracejit` runs it.

usage: python [-m tracejit] grads.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results, save = run.results, run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
meshes = {"one": Mesh(devs[:, 0], ("data",)),  # one position per process
          "two": Mesh(devs.reshape(-1), ("data",))}  # two positions per process
rng = np.random.default_rng(0)
x = rng.standard_normal((16, 4)).astype(np.float32)  # split over 'data'
w = rng.standard_normal(4).astype(np.float32)  # replicated


def terms(a, v):
    return jnp.sin(a * v) * (1.0 + a)


# each loss of one position's block a and the replicated v: (a scalar, whether it is typed
# invariant over 'data' under check_vma, whether every position's value is alike)
LOSSES = {
    "psum": (lambda a, v: lax.psum(jnp.sum(terms(a, v)), "data"), True, True),
    "pmean": (lambda a, v: lax.pmean(jnp.sum(terms(a, v)), "data"), True, True),
    "all_gather": (lambda a, v: jnp.sum(lax.all_gather(terms(a, v), "data")), False, True),
    "psum_scatter": (lambda a, v: jnp.sum(lax.psum_scatter(
        terms(a, v), "data", scatter_dimension=0, tiled=True)), False, False),
}

for mesh_name, mesh in meshes.items():
    for check_vma in (True, False):
        for loss_name, (loss, invariant, alike) in LOSSES.items():
            tag = f"{mesh_name}_{'checked' if check_vma else 'unchecked'}_{loss_name}"
            # grad outside shard_map, of both the split and the replicated input; out_specs P()
            # where the loss may leave replicated (untyped: where every position's is alike)
            out_specs = [P("data")] + ([P()] if invariant or (alike and not check_vma) else [])
            for spec in out_specs:
                f = jax.shard_map(
                    (lambda a, v, loss=loss: loss(a, v)) if spec == P() else
                    (lambda a, v, loss=loss: loss(a, v)[None]),
                    mesh=mesh, in_specs=(P("data"), P()), out_specs=spec, check_vma=check_vma)

                def total(a, v, f=f):
                    return jnp.sum(f(a, v))

                g = jax.grad(total, argnums=(0, 1))
                name = f"outer_{tag}_{'replicated' if spec == P() else 'split'}"
                save(name, (jax.value_and_grad(total, argnums=(0, 1))(x, w), jax.jit(g)(x, w)))
            # grad inside shard_map: the split input's per position, the replicated input's
            # (typed: invariant, summed over 'data'; untyped: each position's own)
            def grads(a, v, loss=loss, check_vma=check_vma):
                ga, gv = jax.grad(loss, argnums=(0, 1))(a, v)
                return ga, gv if check_vma else gv[None]

            inner = jax.shard_map(grads, mesh=mesh, in_specs=(P("data"), P()),
                                  out_specs=(P("data"), P() if check_vma else P("data")),
                                  check_vma=check_vma)
            save(f"inner_{tag}", (inner(x, w), jax.jit(inner)(x, w)))

# a mesh of ('data', 'model'), 'model' within each process: x split over both, w over 'model',
# the loss psum'd (pmean'd) over both axes and differentiated outside
mesh2d = Mesh(devs, ("data", "model"))
for check_vma in (True, False):
    for loss_name, reduce in (("psum", lax.psum), ("pmean", lax.pmean)):
        for spec in (P(), P("data", "model")):
            def body(a, v, reduce=reduce, spec=spec):
                s = reduce(jnp.sum(terms(a, v)), ("data", "model"))
                return s if spec == P() else s[None, None]

            f = jax.shard_map(body, mesh=mesh2d, in_specs=(P("data", "model"), P("model")),
                              out_specs=spec, check_vma=check_vma)

            def total(a, v, f=f):
                return jnp.sum(f(a, v))

            name = (f"outer_2d_{'checked' if check_vma else 'unchecked'}_{loss_name}_"
                    f"{'replicated' if spec == P() else 'split'}")
            save(name, (jax.value_and_grad(total, argnums=(0, 1))(x, w),
                        jax.jit(jax.grad(total, argnums=(0, 1)))(x, w)))

run.finish()
