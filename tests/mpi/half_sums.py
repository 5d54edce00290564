"""Half-float sums and products over a dimension split across the processes (tracejit under
`mpiexec -n 2`, two devices per process), run three ways by tests/test_mpi.py: `mpi`, `single`
(tracejit, one process of four devices) and `jax` (real JAX, four devices). Each program runs
on the split array and, as the oracle, on the host array under a plain jit (one device); both
are saved. One device sums float16 and bfloat16 in float32 and rounds once; the split program
must too: partial sums rounded to the half type before the Allreduce (or the psum over the
devices) are a second rounding. The values are integers whose float32 sums are exact, so any
order of the float32 sum gives the same bits and the results must be equal bit for bit, while
rounded partial sums differ from them (the test checks that they would). Written for JAX:
`python -m tracejit` runs it.

usage: python [-m tracejit] half_sums.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results, whole = run.results, run.whole

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
mesh1d = Mesh(devs[:, 0], ("data",))  # one device per process
mesh2d = Mesh(devs, ("data", "model"))
rng = np.random.default_rng(9)
# (64 x 8 integers below 128: every partial and whole sum is exact in float32 and below
# float16's largest, 65504 (all of them: < 65024); the half types' spacing at the column sums,
# 2048 to 8128 (float16: 2 to 4, bfloat16: 16 to 32), rounds the partial sums)
values = rng.integers(0, 128, (64, 8))
times = jax.shard_map(lambda a, b: a * b, mesh=mesh1d, in_specs=(P("data"), P()),
                      out_specs=P("data"))

for dtype in (jnp.float16, jnp.bfloat16):
    name = np.dtype(dtype).name
    h = values.astype(dtype)
    ones = np.ones(8, dtype)
    # (each runs on the split array, then on the host array: one device)
    programs = {"reduce_sum": lambda a: lax.reduce_sum(a, (0,)),
                "sum_all": lambda a: jnp.sum(a, dtype=a.dtype),  # (no float32 upcast asked)
                "sum_upcast": lambda a: jnp.sum(a, 0),  # (jnp's own float32 upcast)
                "matvec": lambda a: a.T @ a[:, :1]}  # (the contracting dimension split)
    for spec_name, mesh, spec in (("rows", mesh1d, P("data")),
                                  ("cells", mesh2d, P("data", "model")),
                                  ("lines", mesh2d, P(("data", "model")))):
        split = jax.make_array_from_callback(h.shape, NamedSharding(mesh, spec),
                                             lambda index, h=h: h[index])
        for prog, f in programs.items():
            key = f"{name}_{spec_name}_{prog}"
            results[f"{key}/split"] = whole(jax.jit(f)(split))
            results[f"{key}/one_device"] = np.asarray(jax.jit(f)(h))
        if mesh is mesh1d:  # (a sum of shard_map's result split over the processes)
            key = f"{name}_{spec_name}_shard_map_sum"
            results[f"{key}/split"] = whole(jax.jit(
                lambda a, ones=ones: lax.reduce_sum(times(a, ones), (0,)))(split))
            results[f"{key}/one_device"] = np.asarray(jax.jit(
                lambda a, ones=ones: lax.reduce_sum(a * ones, (0,)))(h))
run.finish()
