"""Arrays spanning processes (core): a global shape and sharding over a multi-process mesh, of
which this process holds one block — the part its devices hold. jit and shard_map compute on
such arrays (each process on its block); anything that would need the other processes' data
raises JAX's error naming process_allgather and addressable_shards.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from .array import Array, BaseArray
from .avals import ShapedArray
from .dce import drop_unread
from .devices import process_count, process_index
from .jaxpr import Var
from .sharding import Shard

_FETCH = ("Fetching value for `jax.Array` that spans non-addressable (non process local) "
          "devices is not possible. You can use "
          "`jax.experimental.multihost_utils.process_allgather` to print the global array or "
          "use `.addressable_shards` method of jax.Array to inspect the addressable (process "
          "local) shards.")


def piece(index: tuple, shape: tuple) -> tuple:
    """A device's index (slices of an array of `shape`) as (start, stop) per dimension."""
    return tuple(i.indices(n)[:2] for i, n in zip(index, shape))


def pieces_of(index_map: dict, shape: tuple, process: int | None = None) -> list[tuple]:
    """The distinct pieces the devices of `process` (this one by default) hold, in order, each
    as a tuple of (start, stop) per dimension (index_map: device -> index)."""
    p = process_index() if process is None else process
    return sorted({piece(i, shape) for d, i in index_map.items() if d.process_index == p})


def _box(pieces: list[tuple]) -> tuple[slice, ...]:
    """The smallest box holding every one of `pieces`, and whether they fill it."""
    box = tuple(slice(min(p[k][0] for p in pieces), max(p[k][1] for p in pieces))
                for k in range(len(pieces[0])))
    filled = sum(math.prod(e - s for s, e in p) for p in pieces) == \
        math.prod(b.stop - b.start for b in box)
    return box, filled


def block_of(index_map: dict, shape: tuple, process: int | None = None) -> tuple[slice, ...]:
    """The smallest box holding every piece the devices of `process` (this one by default)
    hold (index_map: device -> index)."""
    p = process_index() if process is None else process
    box, filled = _box(pieces_of(index_map, shape, p))
    # the distinct pieces must fill the box: a process whose devices hold pieces apart from
    # each other (devices interleaving processes along a split axis) has no one block
    if not filled:
        raise NotImplementedError(
            f"process {p}'s devices hold pieces of the array of shape {tuple(shape)} that are "
            f"not one block of it (the mesh's devices interleave processes along an axis the "
            f"array is split over); order the mesh's devices so that each process's devices "
            f"are consecutive along the split axes (as jax.devices() lists them)")
    return box


def boxes_of(index_map: dict, shape: tuple, process: int) -> list[tuple]:
    """The pieces `process`'s devices hold, as one box when they make one block (each as
    (start, stop) per dimension)."""
    pieces = pieces_of(index_map, shape, process)
    box, filled = _box(pieces)
    return [piece(box, shape)] if filled else pieces


def is_one_block(index_map: dict, shape: tuple) -> bool:
    """Whether this process's devices hold one block of an array of `shape`."""
    return _box(pieces_of(index_map, shape))[1]


def _cells(box: tuple, cuts: list) -> list[tuple]:
    """`box` ((start, stop) per dimension) cut at every boundary in `cuts` (per dimension)."""
    spans = [[(a, b) for a, b in zip(c, c[1:]) if lo <= a and b <= hi]
             for (lo, hi), c in zip(box, cuts)]
    return list(itertools.product(*spans))


def _rank(box_lists: list) -> int:
    return next((len(box) for boxes in box_lists for box in boxes), 0)


def _inside(cell: tuple, box: tuple) -> bool:
    return all(lo <= a and b <= hi for (a, b), (lo, hi) in zip(cell, box))


def exchange(local: Sequence[np.ndarray], held: list[list[tuple]], wanted: list[list[tuple]],
             dtype: Any, what: str) -> list[np.ndarray]:
    """Move parts of an array between processes without gathering it whole: process p holds
    the boxes `held[p]` (each (start, stop) per dimension; this process's data in `local`, in
    that order) and wants `wanted[p]`; returns this process's wanted boxes. Each part comes
    from the process that wants it where it holds it, else from the lowest rank holding it;
    the parts travel in one MPI alltoall (each process sends a peer only what that peer wants
    of it), none when every process holds what it wants."""
    from . import mpi
    me, n = process_index(), len(held)
    cuts = [sorted({e for boxes in held + wanted for box in boxes for e in box[k]})
            for k in range(_rank(held + wanted))]
    moves = []  # (from, to, wanted box's index, cell), in the order the receiver reads them
    for q in range(n):
        for w, box in enumerate(wanted[q]):
            for cell in _cells(box, cuts):
                holders = [p for p in [q] + list(range(n))
                           if any(_inside(cell, h) for h in held[p])]
                if not holders:
                    raise ValueError(f"{what}: no process holds the part {cell} of the array")
                moves.append((holders[0], q, w, cell))
    itemsize = np.dtype(dtype).itemsize

    def nbytes(cell):
        return itemsize * math.prod(b - a for a, b in cell)

    def part(cell) -> np.ndarray:  # (this process's data of `cell`)
        k = next(k for k, h in enumerate(held[me]) if _inside(cell, h))
        return local[k][tuple(slice(a - lo, b - lo) for (a, b), (lo, _) in
                              zip(cell, held[me][k]))]

    sizes = np.zeros((n, n), np.int64)
    for p, q, _, cell in moves:
        if p != q:
            sizes[p, q] += nbytes(cell)
    received = None
    if sizes.max() > 0:  # (every process computes the same moves: the same chunk size)
        send = np.zeros((n, int(sizes.max())), np.uint8)
        at = [0] * n
        for p, q, _, cell in moves:
            if p == me and q != me:
                raw = np.ascontiguousarray(part(cell), dtype).reshape(-1).view(np.uint8)
                send[q, at[q]:at[q] + raw.size] = raw
                at[q] += raw.size
        received = mpi.alltoall(send, tuple(range(n)), what)
    out = [np.empty(tuple(b - a for a, b in box), dtype) for box in wanted[me]]
    at = [0] * n
    for p, q, w, cell in moves:
        if q != me:
            continue
        lo = [a for a, _ in wanted[me][w]]
        into = tuple(slice(a - l0, b - l0) for (a, b), l0 in zip(cell, lo))
        if p == me:
            out[w][into] = part(cell)
        else:
            size = nbytes(cell)
            raw = received[p, at[p]:at[p] + size]
            out[w][into] = raw.view(dtype).reshape(out[w][into].shape)
            at[p] += size
    return out


class GlobalArray:
    """A `jax.Array` over devices of several processes: `shape`, `dtype` and `sharding` are
    global; `local` is this process's block of it, at `block` (slices of the global array).
    Where the mesh's devices interleave the processes along a split axis, a process's pieces
    are not one block: `block` is None and `local` stacks its distinct pieces (`pieces_of`)
    along a new leading axis (`from_whole` makes such arrays)."""
    __array_priority__ = 100

    @classmethod
    def from_whole(cls, whole: Any, sharding: Any) -> GlobalArray:
        """The array laid out as `sharding` from its whole value (which this process holds):
        this process keeps only its devices' pieces."""
        host = np.asarray(whole)
        index_map = sharding.devices_indices_map(host.shape)
        aval = ShapedArray(host.shape, host.dtype, getattr(whole, "weak_type", False))
        if is_one_block(index_map, host.shape):
            block = block_of(index_map, host.shape)
            mine = np.ascontiguousarray(host[block])
            return cls(Array.from_numpy(mine, aval.update(shape=mine.shape)), host.shape,
                       sharding)
        stacked = np.stack([host[tuple(slice(a, b) for a, b in part)]
                            for part in pieces_of(index_map, host.shape)])
        return cls.from_pieces(Array.from_numpy(stacked, aval.update(shape=stacked.shape)),
                               host.shape, sharding)

    @classmethod
    def from_block(cls, block: Array, shape: tuple, computed: Any, sharding: Any,
                   what: str) -> GlobalArray:
        """The array laid out as `sharding` from this process's block of it laid out as
        `computed` (every process calls it): each process receives from the others only the
        pieces it holds under `sharding` (`exchange`), not the whole."""
        shape, n = tuple(shape), process_count()
        held, wanted = computed.devices_indices_map(shape), sharding.devices_indices_map(shape)
        parts = exchange([np.asarray(block)], [boxes_of(held, shape, p) for p in range(n)],
                         [boxes_of(wanted, shape, p) for p in range(n)], block.dtype, what)
        if is_one_block(wanted, shape):
            return cls(Array.from_numpy(parts[0], block.aval.update(shape=parts[0].shape)),
                       shape, sharding)
        stacked = np.stack(parts)
        return cls.from_pieces(Array.from_numpy(stacked, block.aval.update(
            shape=stacked.shape)), shape, sharding)

    def block_as(self, computing: Any, what: str) -> Array:
        """This process's block of the array laid out as `computing` (every process calls
        it): its own data when every process's block is the same there, else the parts it
        lacks received from the processes holding them (`exchange`), not the whole."""
        shape, n = self.shape, process_count()
        held = self.sharding.devices_indices_map(shape)
        wanted = computing.devices_indices_map(shape)
        wanted_boxes = [[piece(block_of(wanted, shape, p), shape)] for p in range(n)]
        if self.block is not None:
            held_boxes = [[piece(block_of(held, shape, p), shape)] for p in range(n)]
            if held_boxes == wanted_boxes:
                return self.local
            local = [np.asarray(self.local)]
        else:
            held_boxes = [pieces_of(held, shape, p) for p in range(n)]
            local = list(np.asarray(self.local))
        (mine,) = exchange(local, held_boxes, wanted_boxes, self.dtype, what)
        return Array.from_numpy(mine, self.local.aval.update(shape=mine.shape))

    def relabelled_block(self, computing: Any) -> Array:
        """This process's pieces put together as its block of the array laid out as
        `computing` over the same devices, each device's piece where that device sits there
        (not the data `computing` gives it): nothing moves between the processes. A program
        that does not read which positions a shard holds (`from_relabelled_block` undoes the
        relabelling on its results) computes the same values on it as on the true blocks."""
        shape = self.shape
        held = self.sharding.devices_indices_map(shape)
        there = computing.devices_indices_map(shape)
        start = [b.start for b in block_of(there, shape)]
        out = np.empty(tuple(b.stop - b.start for b in block_of(there, shape)), self.dtype)
        data = np.asarray(self.local)
        pieces = None if self.block is not None else pieces_of(held, shape)
        for d, index in there.items():
            if d.process_index != process_index():
                continue
            at = piece(held[d], shape)
            mine = data[pieces.index(at)] if pieces is not None else data[tuple(
                slice(a - b.start, e - b.start) for (a, e), b in zip(at, self.block))]
            out[tuple(slice(a - s0, e - s0) for (a, e), s0 in zip(piece(index, shape),
                                                                   start))] = mine
        return Array.from_numpy(out, self.local.aval.update(shape=out.shape))

    @classmethod
    def from_relabelled_block(cls, block: Array, shape: tuple, computed: Any,
                              sharding: Any) -> GlobalArray:
        """The array laid out as `sharding` from this process's block of a program run on
        relabelled blocks (`relabelled_block`, `computed` the layout it ran on): each of this
        process's pieces is the part of `block` where its device sat. Nothing moves."""
        shape = tuple(shape)
        there = computed.devices_indices_map(shape)
        wanted = sharding.devices_indices_map(shape)
        start = [b.start for b in block_of(there, shape)]
        data = np.asarray(block)
        parts = {}
        for d, index in wanted.items():
            if d.process_index == process_index():
                parts.setdefault(piece(index, shape), data[tuple(
                    slice(a - s0, e - s0) for (a, e), s0 in zip(piece(there[d], shape),
                                                                start))])
        if is_one_block(wanted, shape):
            box = block_of(wanted, shape)
            out = np.empty(tuple(b.stop - b.start for b in box), block.dtype)
            for at, value in parts.items():
                out[tuple(slice(a - b.start, e - b.start) for (a, e), b in zip(at, box))] = \
                    value
            return cls(Array.from_numpy(out, block.aval.update(shape=out.shape)), shape,
                       sharding)
        stacked = np.stack([parts[at] for at in pieces_of(wanted, shape)])
        return cls.from_pieces(Array.from_numpy(stacked, block.aval.update(
            shape=stacked.shape)), shape, sharding)

    @classmethod
    def from_pieces(cls, stacked: Array, shape: tuple, sharding: Any) -> GlobalArray:
        """The array whose pieces on this process (not one block of it: the mesh interleaves
        the processes) are `stacked` along a leading axis, in `pieces_of`'s order."""
        pieces = pieces_of(sharding.devices_indices_map(tuple(shape)), tuple(shape))
        want = (len(pieces),) + tuple(b - a for a, b in pieces[0]) if pieces else None
        if stacked.shape != want:
            raise ValueError(f"this process's pieces of the global shape {tuple(shape)} under "
                             f"{sharding} stack to shape {want}, but its data has shape "
                             f"{stacked.shape}")
        out = cls.__new__(cls)
        out.local = stacked
        out.aval = ShapedArray(tuple(shape), stacked.dtype, stacked.aval.weak_type)
        out.sharding, out.block = sharding, None
        return out

    def __init__(self, local: Array, shape: tuple, sharding: Any):
        self.local = local
        self.aval = ShapedArray(tuple(shape), local.dtype, local.aval.weak_type)
        self.sharding = sharding
        self.block = block_of(sharding.devices_indices_map(self.aval.shape), self.aval.shape)
        want = tuple(s.stop - s.start for s in self.block)
        if want != local.shape:
            raise ValueError(f"this process's block of the global shape {self.shape} under "
                             f"{sharding} has shape {want}, but its data has shape "
                             f"{local.shape}")

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    is_fully_addressable = property(lambda self: False)
    committed = property(lambda self: True)  # (laid out over a mesh, as JAX's)
    is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated)

    @property
    def addressable_shards(self) -> list:
        """This process's devices' pieces (index: slices of the global array), in the order
        of the mesh's devices, as JAX lists them."""
        placement = self.sharding.devices_indices_map(self.shape)
        replicas = self.sharding.replica_ids(self.shape) \
            if hasattr(self.sharding, "replica_ids") else {}
        out = []
        held = np.asarray(self.local)
        pieces = None if self.block is not None else pieces_of(placement, self.shape)
        for d, index in placement.items():
            if d.process_index != process_index():
                continue
            at = piece(index, self.shape)
            if pieces is not None:
                data = held[pieces.index(at)]
            else:
                data = held[tuple(slice(a - b.start, e - b.start)
                                  for (a, e), b in zip(at, self.block))]
            out.append(Shard(d, index, replicas.get(d, 0),
                             Array.from_numpy(data, self.local.aval.update(shape=data.shape))))
        return out

    def addressable_data(self, index: int) -> Array:
        return self.addressable_shards[index].data

    def devices(self) -> set:
        return set(self.sharding.device_set)

    def block_until_ready(self) -> GlobalArray:
        return self

    def delete(self) -> None:
        """Free this process's block (as donating the array to jit does)."""
        self.local.delete()

    def is_deleted(self) -> bool:
        return self.local.is_deleted()

    def check_live(self) -> None:
        """Array's error, with the global shape, when this array was donated or deleted."""
        if self.is_deleted():
            raise RuntimeError(
                f"Array has been deleted with shape={self.dtype.name}"
                f"[{','.join(map(str, self.shape))}]. It was donated to a jitted function "
                "(donate_argnums/donate_argnames) or deleted explicitly: use the function's "
                "output instead, or stop donating this argument.")

    def gathered(self, what: str = "process_allgather") -> np.ndarray:
        """The whole value, gathered from every process's pieces (every process calls it)."""
        from . import mpi
        from .devices import process_count
        ranks = tuple(range(process_count()))
        held = mpi.allgather(np.asarray(self.local), ranks, what)
        index_map = self.sharding.devices_indices_map(self.shape)
        out = np.empty(self.shape, self.dtype)
        for p, mine in zip(ranks, held):
            if self.block is not None:
                out[block_of(index_map, self.shape, p)] = mine
                continue
            for part, value in zip(pieces_of(index_map, self.shape, p), mine):
                out[tuple(slice(a, b) for a, b in part)] = value
        return out

    def __array__(self, dtype=None, copy=None):
        if self.block is not None and all(b == slice(0, n)
                                          for b, n in zip(self.block, self.shape)):
            return np.asarray(self.local, dtype=dtype)  # (this process holds all of it)
        raise RuntimeError(_FETCH)

    def __jax_array__(self):
        raise RuntimeError(_FETCH.replace("Fetching value for", "Computing outside shard_map "
                                          "with") + " Compute on it inside jit or shard_map.")

    def __repr__(self) -> str:
        return (f"GlobalArray(shape={self.shape}, dtype={self.dtype}, sharding={self.sharding}, "
                f"local block {self.block})")


# --- notes on traced values ------------------------------------------------------------------
# shard_map staged by jit notes some of the values it stages (below) for jit and the compiler to
# read back. A note is held by its Var (`Var.notes`), so it belongs to the trace it was made in:
# it lives exactly as long as that program, nothing else traced can evict it, and processes
# tracing the same program hold the same notes whatever else each traced (one process reading
# a note its peer lost would run other collectives than the peer: an error, or a hang).
class _Notes:
    """What shard_map noted of one Var (most Vars have none: their `notes` is None)."""
    __slots__ = ("gathered", "own_block_cut", "wanted")

    def __init__(self):
        # (the block's Var, or None when it is the value itself: a Var naming itself would be
        # a reference cycle, left for the cyclic collector; sharding; computed or None)
        self.gathered: tuple | None = None
        self.wanted: Any = None  # the NamedSharding shard_map takes the value as
        self.own_block_cut = False


_EVER_NOTED = [False]  # (whether this process has noted any value: `any_noted`)


def _noting(v: Var) -> _Notes:
    """The notes of the Var `v`, made empty when it has none."""
    notes = v.notes
    if notes is None:
        notes = v.notes = _Notes()
        _EVER_NOTED[0] = True
    return notes


def _notes_of(v: Any) -> _Notes | None:
    """The notes of `v` (a Var or a Literal, which has none), or None."""
    return v.notes if type(v) is Var else None


def any_noted() -> bool:
    """Whether this process has noted any traced value (none is until shard_map is staged by
    jit): the walks that carry notes skip their per-value look-ups until then. Which values
    are noted is each Var's own, whatever else was traced."""
    return _EVER_NOTED[0]


# --- results split over processes under jit -------------------------------------------------
# Under jit, shard_map's result split over processes is gathered, so that the rest of the traced
# program sees its global value; the gathered Var is noted with the Var of this process's block
# and its sharding. A jit that returns such a value returns the block instead, as a GlobalArray
# (the gather then unused), as JAX's jit returns an array split over processes. On a mesh
# interleaving the processes, the block is of the layout the processes computed on
# (`computed`): the call then fetches each process's pieces from the others (`from_block`).
def note_gathered(whole: Any, block: Any, sharding: Any, computed: Any = None) -> None:
    """Note that the traced value `whole` (a Var) is the gathered global value of the block
    `block` (a Var of the same trace) laid out as `sharding` — or, given `computed`, this
    process's block of it laid out as `computed` (a mesh interleaving the processes)."""
    _noting(whole).gathered = (None if block is whole else block, sharding, computed)


def noted(v: Any) -> tuple | None:
    """(the block's Var, sharding, computed) noted for the traced value `v` (a Var), or
    None."""
    notes = _notes_of(v)
    if notes is None or notes.gathered is None:
        return None
    block, sharding, computed = notes.gathered
    return (v if block is None else block, sharding, computed)


# shard_map's operands under jit (in one process) are noted with the layout its in_specs give
# them: JAX's propagation carries it back to the values they are computed from (sharded jit's
# arguments and the results made from them report it)
def note_wanted(v: Any, sharding: Any) -> None:
    """Note that shard_map takes the traced value `v` (a Var) laid out as `sharding`."""
    _noting(v).wanted = sharding


def wanted(v: Any) -> Any:
    """The sharding shard_map takes the traced value `v` (a Var) as, or None."""
    notes = _notes_of(v)
    return None if notes is None else notes.wanted


# the staged values that are shard_map's cut of this process's own block (its position along
# the process axes, the same cut on every process): the compiler may read such a cut of an
# Allgather from the gathered block itself and drop the gather, as every process does alike
# (a slice the user wrote may take one process's own block only: never bypassed)
def note_own_block_cut(v: Any) -> None:
    """Note the staged Var `v` as shard_map's cut of this process's own block."""
    _noting(v).own_block_cut = True


def is_own_block_cut(v: Any) -> bool:
    """Whether `v` was noted by `note_own_block_cut` (or re-evaluated from one)."""
    notes = _notes_of(v)
    return notes is not None and notes.own_block_cut


def _in_process_notes(v: Any) -> tuple:
    """(the note of `v` as its own block, its wanted sharding), each None unless over a mesh
    of this process (across processes a noted value stands for a block: left as traced)."""
    found, want = noted(v), wanted(v)
    if found is not None and (found[0] is not v or _spans_processes(found[1])):
        found = None
    if want is not None and _spans_processes(want):
        want = None
    return found, want


def _spans_processes(sharding: Any) -> bool:
    return bool(getattr(getattr(sharding, "mesh", None), "is_multi_process", False))


def carry_notes(v: Any, x: Any) -> None:
    """A jaxpr re-evaluated (`eval_jaxpr_bind`: jvp, partial evaluation or transposition of a
    loop's body staging it again) binds `x` for its Var `v`: the staged values of `x` (a JVP
    tracer's primal and tangent, laid out alike) keep the notes of `v` made in one process
    (its own block), so that jit's reports of shard_map results survive differentiation
    (runtime/sharded.py)."""
    if _notes_of(v) is None:
        return
    if is_own_block_cut(v):  # (a primal only: a tangent is no cut of a gathered value)
        from .trace import DynamicJaxprTracer
        if isinstance(x, DynamicJaxprTracer) and x._var is not v:
            note_own_block_cut(x._var)
    found, want = _in_process_notes(v)
    if found is None and want is None:
        return
    from .jvp_trace import JVPTracer
    from .trace import DynamicJaxprTracer
    staged = []
    while isinstance(x, JVPTracer):
        staged.append(x.tangent)
        x = x.primal
    staged.append(x)
    for t in staged:
        w = t._var if isinstance(t, DynamicJaxprTracer) else None
        if w is None or w is v:
            continue
        if found is not None and noted(w) is None:
            note_gathered(w, w, found[1], found[2])
        if want is not None and wanted(w) is None:
            note_wanted(w, want)


def note_cotangent(v: Any, ct: Any) -> None:
    """Transposition made `ct`, the whole cotangent of the Var `v`: as shard_map's transpose
    is a shard_map from its out_specs to its in_specs, the cotangent of a value shard_map
    takes is laid out as it takes it (reported so), and that of its result is taken as the
    result was laid out."""
    found, want = _in_process_notes(v)
    if found is None and want is None:
        return
    from .trace import DynamicJaxprTracer
    w = ct._var if isinstance(ct, DynamicJaxprTracer) else None
    if w is None or w is v:
        return
    if want is not None and noted(w) is None:
        note_gathered(w, w, want)
    if found is not None and wanted(w) is None:
        note_wanted(w, found[1])


def with_noted_blocks(closed: Any, carried: dict | None = None) -> tuple[Any, list]:
    """For staging a traced program as a call inside another trace (a jit inside jit): the
    program with the block of each noted output that is not the output itself appended as
    an extra output, and per noted output (its index, the extra output's index or None when
    it is its own block, its sharding, the block's computed layout or None). (closed, [])
    when no output is noted. `carried`: outputs noted by the caller (Var -> as `noted`)."""
    from .jaxpr import ClosedJaxpr, Jaxpr
    jaxpr = closed.jaxpr
    noted_outs, extra = [], []
    for i, v in enumerate(jaxpr.outvars):
        found = noted(v) if not carried or v not in carried else carried[v]
        if found is None:
            continue
        block, sharding, computed = found
        k = None
        if block is not v:
            k = len(jaxpr.outvars) + len(extra)
            extra.append(block)
        noted_outs.append((i, k, sharding, computed))
    if extra:
        closed = ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, list(jaxpr.outvars) + extra,
                                   jaxpr.eqns, jaxpr.debug_info), closed.consts)
    return closed, noted_outs


def note_call_outputs(outs: list, noted: list) -> None:
    """Note the outputs of a staged call (Vars of the enclosing trace) as their callee's were
    (`with_noted_blocks`), so that the enclosing jit returns them split as well."""
    for i, k, sharding, computed in noted:
        whole = getattr(outs[i], "_var", None)
        block = whole if k is None else getattr(outs[k], "_var", None)
        if whole is not None and block is not None:
            note_gathered(whole, block, sharding, computed)


def split_outputs(closed: Any, carried: dict | None = None) -> tuple[Any, list | None]:
    """A traced program whose outputs noted by `note_gathered` (or in `carried`: Var -> as
    `noted`) are replaced by their blocks, and per output (its sharding, global shape, the
    block's computed layout or None), or None (returned as computed); (closed, None) when no
    output is such a value."""
    from .jaxpr import ClosedJaxpr, Jaxpr
    jaxpr = closed.jaxpr
    found = [noted(v) if not carried or v not in carried else carried[v]
             for v in jaxpr.outvars]
    if not any(found):
        return closed, None
    outvars = [v if f is None else f[0] for v, f in zip(jaxpr.outvars, found)]
    eqns = drop_unread(jaxpr.eqns, outvars, [v for v, f in zip(jaxpr.outvars, found) if f])
    rewritten = Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info)
    return ClosedJaxpr(rewritten, closed.consts), [
        None if f is None else (f[1], v.aval.shape, f[2]) for v, f in zip(jaxpr.outvars, found)]


def as_global(outs: list, blocks: list, leaves: Any) -> list:
    """The results of a program rewritten by `split_outputs`: blocks as GlobalArrays (a
    value every process holds whole: laid out over the mesh, in place unless it is one of
    the call's argument `leaves`, which keep their own layout)."""
    args = {id(x) for x in leaves}
    laid = []
    for o, b in zip(outs, blocks):
        if b is not None and b[2] is not None:  # (a block as computed: pieces fetched)
            o = GlobalArray.from_block(o, b[1], b[2], b[0], "jit")
        elif b is not None and o.shape != b[1]:
            o = GlobalArray(o, b[1], b[0])
        elif b is not None and splits_processes(b[0], o.shape):
            o = GlobalArray.from_whole(o, b[0])  # (computed whole: each keeps its pieces)
        elif b is not None and (id(o) in args or o._sharding is not None):
            o = o.placed(b[0])
        elif b is not None:
            o._sharding = b[0]  # (a fresh result: its only owner is this call's caller)
        laid.append(o)
    return laid


def splits_processes(sharding: Any, shape: tuple) -> bool:
    """Whether `sharding` (over a mesh spanning processes) leaves this process only part of an
    array of `shape`."""
    if not getattr(getattr(sharding, "mesh", None), "is_multi_process", False):
        return False
    index_map = sharding.devices_indices_map(shape)
    full = tuple((0, n) for n in shape)
    return pieces_of(index_map, shape) != [full]


def _refuse(self, *args, **kwargs):
    self.__jax_array__()


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    for _form in ("__{}__", "__r{}__"):
        setattr(GlobalArray, _form.format(_name), _refuse)
for _name in ("__neg__", "__pos__", "__abs__", "__invert__", "__getitem__", "__lt__", "__le__",
              "__gt__", "__ge__", "__bool__", "__float__", "__int__", "__len__", "__iter__"):
    setattr(GlobalArray, _name, _refuse)
BaseArray.register(GlobalArray)
