"""MPI between processes (core): the communicators of process groups and the collective calls
the process-spanning collectives (lax/processes.py) run, through mpi4py, imported only when
several processes are in use. Every call first exchanges what each rank is about to send (which
collective, dtype, shape) and then waits on nonblocking requests with a deadline, so a peer that
died or called something else is an error, never a hang.
"""
from __future__ import annotations

import collections
import functools
import time
from typing import Any, Callable, Sequence

import numpy as np

from .config import config
from .errors import JaxRuntimeError

_HEADER = 12  # int64 words: the collective's code, dtype code, rank, shape (zero-padded)
_CODES = {"allreduce": 1, "allgather": 2, "reduce_scatter": 3, "sendrecv": 4, "alltoall": 5,
          "bcast": 6}


# per collective, the bytes this process received through it (what a program moves between
# processes: tests read it)
received: collections.Counter = collections.Counter()


def mpi() -> Any:
    """The mpi4py.MPI module (a clear error naming the fix when it is not installed)."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("several processes need mpi4py and an MPI library: "
                          "`pip install mpi4py mpich`") from e
    return MPI


def world() -> Any:
    return mpi().COMM_WORLD


@functools.cache
def group_comm(ranks: tuple[int, ...]) -> Any:
    """A communicator of the world ranks `ranks`, ranked in that order (the coordinate along a
    mesh axis). Created collectively by its members only, the first time they use it."""
    comm = world()
    if ranks == tuple(range(comm.Get_size())):
        return comm
    group = comm.Get_group().Incl(list(ranks))
    return comm.Create_group(group)


def timeout() -> float:
    return float(config.read("tracejit_collective_timeout"))


def _wait(request: Any, what: str, deadline: float, data: bool = False) -> None:
    """Wait for `request` until `deadline`; `data`: the exchange of headers is done, so every
    peer reached this collective and one stopped before sending its data."""
    delay = 1e-6
    while not request.Test():
        if time.monotonic() > deadline:
            waited = ("for its peer processes' data, after every one of them had called it: "
                      "one of them died or is stuck" if data else
                      "for its peer processes: one of them died, is stuck, or runs a different "
                      "program (every process must reach the same collectives in the same "
                      "order)")
            raise JaxRuntimeError(
                f"DEADLINE_EXCEEDED: {what} waited {timeout():g} s {waited}. Raise the limit "
                f"with config.update('tracejit_collective_timeout', seconds) or "
                f"$TRACEJIT_COLLECTIVE_TIMEOUT if the peers are only slow.")
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)


def _header(code: str, x: np.ndarray) -> np.ndarray:
    if x.ndim > _HEADER - 3:
        raise NotImplementedError(f"a collective between processes of rank {x.ndim} > "
                                  f"{_HEADER - 3}")
    h = np.zeros(_HEADER, np.int64)
    h[0], h[1], h[2] = _CODES[code], x.dtype.num, x.ndim
    h[3:3 + x.ndim] = x.shape
    return h


def _describe(h: np.ndarray) -> str:
    name = next(k for k, v in _CODES.items() if v == h[0]) if h[0] in _CODES.values() else "?"
    dtype = next((np.dtype(c).name for c in np.typecodes["All"]
                  if c and np.dtype(c).num == h[1]), f"dtype#{h[1]}")
    return f"{name} of {dtype}{[int(n) for n in h[3:3 + h[2]]]}"


def run(code: str, what: str, ranks: tuple[int, ...], x: np.ndarray,
        start: Callable[[Any], Any], nbytes: int) -> None:
    """Run one collective over the group `ranks`: check that every member sends the same
    collective, dtype and shape, then `start(comm)` (a nonblocking MPI call returning its
    request, into a buffer of `nbytes`) and wait for it, each step with the configured
    deadline."""
    comm = group_comm(ranks)
    deadline = time.monotonic() + timeout()
    mine = _header(code, x)
    headers = np.empty((comm.Get_size(), _HEADER), np.int64)
    _wait(comm.Iallgather(mine, headers), what, deadline)
    if not (headers == mine).all():
        others = "; ".join(f"rank {ranks[r]}: {_describe(h)}" for r, h in enumerate(headers))
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: {what}: the processes disagree on the collective ({others}). "
            f"Every process must call the same collectives on arrays of the same shape and "
            f"dtype.")
    _wait(start(comm), what, deadline, data=True)
    received[code] += nbytes


def as_bytes(x: np.ndarray) -> np.ndarray:
    """x's data as bytes (its last axis the bytes of one element): data movement needs no MPI
    type for the dtype (bfloat16, float16, bool, ...)."""
    x = np.asarray(x, order="C")  # (not ascontiguousarray: it makes a scalar 1-d)
    return x.reshape(x.shape + (1,)).view(np.uint8)


def from_bytes(b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.asarray(b, order="C").view(dtype).reshape(b.shape[:-1])


def _reducible(x: np.ndarray) -> np.ndarray:
    """x in a type MPI reduces: floats MPI has no type for in float32 (their values are exact
    there), bool as uint8."""
    dtype = x.dtype
    work = x.astype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 or \
        dtype.kind == "V" or dtype.name == "bfloat16" else x
    work = work.astype(np.uint8) if dtype == np.bool_ else work
    return np.asarray(work, order="C")


def allreduce(x: np.ndarray, op: str, ranks: Sequence[int], what: str) -> np.ndarray:
    """The sum (max, min) of x over the group, on every member."""
    work = _reducible(x)
    out = np.empty_like(work)
    mpi_op = {"sum": mpi().SUM, "max": mpi().MAX, "min": mpi().MIN}[op]
    run("allreduce", what, tuple(ranks), x,
        lambda comm: comm.Iallreduce(work, out, op=mpi_op), out.nbytes)
    return out.astype(x.dtype)


def allgather(x: np.ndarray, ranks: Sequence[int], what: str) -> np.ndarray:
    """Every member's x stacked along a new leading axis (in rank order), on every member."""
    ranks = tuple(ranks)
    b = as_bytes(x)
    out = np.empty((len(ranks),) + b.shape, np.uint8)
    run("allgather", what, ranks, x, lambda comm: comm.Iallgather(b, out), out.nbytes)
    return from_bytes(out, x.dtype)


def alltoall(x: np.ndarray, ranks: Sequence[int], what: str) -> np.ndarray:
    """x of shape (n, ...): member j receives every member's x[j], stacked in rank order."""
    ranks = tuple(ranks)
    b = as_bytes(x)
    out = np.empty_like(b)
    run("alltoall", what, ranks, x, lambda comm: comm.Ialltoall(b, out), out.nbytes)
    return from_bytes(out, x.dtype)


def reduce_scatter(x: np.ndarray, ranks: Sequence[int], what: str) -> np.ndarray:
    """x of shape (n, ...): member j receives the sum over members of their x[j]."""
    work = _reducible(x)
    out = np.empty_like(work[0])
    run("reduce_scatter", what, tuple(ranks), x,
        lambda comm: comm.Ireduce_scatter_block(work, out, op=mpi().SUM), out.nbytes)
    return out.astype(x.dtype)


def sendrecv(x: np.ndarray, perm: Sequence[tuple[int, int]], ranks: Sequence[int],
             what: str) -> np.ndarray:
    """x of shape (lanes, ...): this member's blocks, where member m holds the blocks (positions
    of an axis, or their chunks) m * lanes ... m * lanes + lanes - 1; each (source,
    destination) pair of `perm` moves the source's block to the destination, and a block no
    pair sends to receives zeros. Only blocks crossing members go through MPI, point to point
    (one Isend per block this member sends away, one Irecv per block it receives); the others
    are copied."""
    ranks = tuple(ranks)
    me, lanes = ranks.index(world().Get_rank()), x.shape[0]
    b = as_bytes(x)
    out = np.zeros_like(b)
    here = range(me * lanes, (me + 1) * lanes)
    sends = [(s, d) for s, d in perm if s in here and d not in here]
    receives = [(s, d) for s, d in perm if d in here and s not in here]
    for s, d in perm:
        if s in here and d in here:
            out[d - here.start] = b[s - here.start]

    def start(comm):  # (one tag: MPI matches the messages between two members in the order
        # they were posted, and both post theirs in perm's order)
        requests = [comm.Isend(b[s - here.start], dest=d // lanes, tag=7) for s, d in sends]
        requests += [comm.Irecv(out[d - here.start], source=s // lanes, tag=7)
                     for s, d in receives]
        return _All(mpi(), requests)
    run("sendrecv", what, ranks, x, start, len(receives) * out[0].nbytes if lanes else 0)
    return from_bytes(out, x.dtype)


class _All:
    """Several requests waited on as one."""

    def __init__(self, MPI: Any, requests: list):
        self.MPI, self.requests = MPI, requests

    def Test(self) -> bool:  # (MPI's name: waited on as a request)
        return self.MPI.Request.Testall(self.requests) if self.requests else True


def bcast(x: np.ndarray, root: int, ranks: Sequence[int], what: str) -> np.ndarray:
    """Member `root`'s x (root: its index in `ranks`) on every member (x: the same shape and
    dtype everywhere). Counted as received by the others only: the root sends."""
    ranks = tuple(ranks)
    b = as_bytes(np.array(x))  # (a copy: Bcast writes the received data over it)
    here = ranks.index(world().Get_rank()) if world().Get_rank() in ranks else None
    run("bcast", what, ranks, x, lambda comm: comm.Ibcast(b, root=root),
        b.nbytes if here != root else 0)
    return from_bytes(b, x.dtype)
