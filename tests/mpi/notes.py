"""shard_map's notes on traced values (core/global_array.py) under `mpiexec -n 2`, run by
tests/test_mpi.py: a jit traced first (eval_shape) and compiled later, after process 0 alone
traced more noted values than the notes once kept (4096 of each kind, the oldest dropped).
Both processes must still read the program's notes alike and bypass the Allgather of the
operand whose own block shard_map cuts back out; had process 0 lost them, it alone would
enter that Allgather and the peers' collectives would no longer match. Each process writes
OUT.<rank>.npz: the bytes its call received by Allgather (and those of the same program
compiled at once), the result's value.

usage: python notes.py OUT
"""
import numpy as np

import tracejit as jax
from tracejit.core import mpi as process_collectives
from tracejit.sharding import Mesh, NamedSharding
from tracejit.sharding import PartitionSpec as P

from harness import Run  # (tests/mpi/harness.py, beside this)

# (diverging collectives fail within a minute here rather than after the default 300 s)
jax.config.update("tracejit_collective_timeout", 60.0)
run = Run(jax, mode="mpi")
rank = jax.process_index()
mesh = Mesh(np.array(jax.devices()).reshape(2, -1)[:, 0], ("data",))  # one device per process
x8 = np.arange(32, dtype=np.float32).reshape(4, 8) / 7.0
rows_split = jax.make_array_from_callback(x8.shape, NamedSharding(mesh, P("data")),
                                          lambda index: x8[index])
times = jax.jit(jax.shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P("data"), P()),
                              out_specs=P("data")))
jax.eval_shape(times, jax.ShapeDtypeStruct(x8.shape, x8.dtype), x8.T)  # (traced now: notes
# made; compiled at the call)
traced = len(times._traces.entries)

if rank == 0:  # process 0 alone traces other sharded programs meanwhile (as a process that
    # evaluates or logs alone does): more noted operands, results and cuts than were kept
    many = jax.shard_map(lambda *blocks: [b * 2 for b in blocks], mesh=mesh,
                         in_specs=P("data"), out_specs=P("data"))
    jax.make_jaxpr(many)(*[np.ones((2, 3), np.float32)] * 4200)


def received_by_allgather(f):
    before = process_collectives.received["allgather"]
    out = f(rows_split, x8.T)
    return np.int64(process_collectives.received["allgather"] - before), out


moved, r = received_by_allgather(times)
# the same program's first call traced and compiled at once, nothing traced between
fresh = jax.jit(jax.shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P("data"), P()),
                              out_specs=P("data")))
run.results.update({"allgather": moved, "fresh_allgather": received_by_allgather(fresh)[0],
                    # (the call reused the trace made before: its notes are the ones read)
                    "retraced": np.int64(len(times._traces.entries) - traced),
                    "value": run.whole(r)})
run.finish()
