"""Collectives that cannot complete, run by tests/test_mpi.py under `mpiexec -n 2`: the
processes disagree on a psum's shape (both must raise); then, with a two-second collective
timeout, process 1 stalls in a ppermute between the exchange of headers and its data (it never
posts its send and receive) and process 0 must raise within the deadline; then, with a
one-second one, process 1 (still stalled) skips a psum, a ppermute and two pbroadcasts (each
process holds two positions of the axis: two devices each) and process 0 must raise within it
instead of hanging. Each process writes what it saw to OUT.<rank>.txt (process 1 first) and
leaves at once (os._exit: MPI's requests that never completed would otherwise keep it in
MPI_Finalize).

usage: python failures.py OUT
"""
import os
import sys
import time

import numpy as np

import tracejit as jax
from tracejit import lax
from tracejit.sharding import Mesh, PartitionSpec as P

from harness import Run  # (tests/mpi/harness.py, beside this)

jax.config.update("tracejit_collective_timeout", 120.0)  # (a slow peer is not the error here)
Run(jax, mode="mpi")  # (MPI started; what this writes is text, not the harness's arrays)
rank = jax.process_index()
mesh = Mesh(np.array(jax.devices()), ("data",))
report = []


def psum_of(n):
    # (made varying: the psum of an invariant value is no collective, it is n times the value)
    f = jax.shard_map(lambda a: lax.psum(lax.pcast(a, "data", to="varying"), "data"),
                      mesh=mesh, in_specs=P(), out_specs=P())
    return f(np.ones(n, np.float32))


try:  # shapes disagree: found by the exchange that precedes the data
    psum_of(2 + rank)
    report.append("mismatch: no error")
except Exception as e:  # noqa: BLE001
    report.append(f"mismatch: {type(e).__name__}: {e}")

def write():
    with open(f"{sys.argv[1]}.{rank}.txt", "w") as out:
        out.write("\n".join(report))


def wait_for(other):
    for _ in range(1200):  # (process 1 first: mpiexec ends the others when one leaves)
        if os.path.exists(f"{sys.argv[1]}.{other}.txt"):
            break
        time.sleep(0.05)


# a ppermute between the processes' positions, compiled and run once by both (so that the
# stalled call below starts on both at once, its headers exchanged well within the deadline)
shift = [(i, (i + 1) % mesh.size) for i in range(mesh.size)]
shifted = jax.jit(jax.shard_map(lambda a: lax.ppermute(a, "data", shift), mesh=mesh,
                                in_specs=P("data"), out_specs=P("data")))
ones = np.ones(mesh.size, np.float32)
jax.block_until_ready(shifted(ones))
jax.config.update("tracejit_collective_timeout", 2.0)
if rank == 1:  # stalls for good once the headers agree: its data is never posted
    from tracejit.core import mpi as process_mpi
    exchange = process_mpi.run

    def stalled(code, what, ranks, x, start, nbytes):
        def stall(comm):
            report.append(f"stalled after the headers of {what}")
            write()
            wait_for(0)
            os._exit(0)
        return exchange(code, what, ranks, x, stall, nbytes)
    process_mpi.run = stalled
start = time.monotonic()
try:  # the peer agreed on the ppermute, then sent nothing: the deadline, not a hang
    jax.block_until_ready(shifted(ones))
    report.append("stalled peer: no error")
except Exception as e:  # noqa: BLE001
    report.append(f"stalled peer: {type(e).__name__} after {time.monotonic() - start:.1f} s: "
                  f"{e}")

jax.config.update("tracejit_collective_timeout", 1.0)
if rank == 0:
    start = time.monotonic()
    try:  # the peer never joins: the deadline, not a hang
        psum_of(4)
        report.append("timeout: no error")
    except Exception as e:  # noqa: BLE001
        report.append(f"timeout: {type(e).__name__} after {time.monotonic() - start:.1f} s: {e}")
    try:  # nor for a ppermute between the processes' positions (point to point)
        jax.shard_map(lambda a: lax.ppermute(a, "data", shift), mesh=mesh, in_specs=P("data"),
                      out_specs=P("data"))(np.ones(mesh.size, np.float32))
        report.append("ppermute timeout: no error")
    except Exception as e:  # noqa: BLE001
        report.append(f"ppermute timeout: {type(e).__name__}: {e}")
    for source in (0, 2):  # nor for a pbroadcast's Bcast, from this process or the peer
        try:
            jax.shard_map(lambda a, s=source: lax.pbroadcast(a, "data", s), mesh=mesh,
                          in_specs=P("data"), out_specs=P("data"))(
                np.ones(mesh.size, np.float32))
            report.append(f"pbroadcast {source} timeout: no error")
        except Exception as e:  # noqa: BLE001
            report.append(f"pbroadcast {source} timeout: {type(e).__name__}: {e}")
    write()
    wait_for(1)
os._exit(0)  # (process 1 never gets here: it leaves from its stall)
