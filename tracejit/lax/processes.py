"""Collectives across processes (lax): over a mesh axis whose positions are held by processes
(shard_map over a multi-process mesh), psum & co. (lax/parallel.py) are not batched: each
process holds its own value and the collective is an MPI call (core/mpi.py) — one of the six
`mpi_*` collective primitives here, which native code runs as a call back into Python
(backend/llvm/host_callback.py).

The primitives act along a leading axis of the group's size where data is split or stacked
(allgather: (…) -> (n, …); reduce_scatter and alltoall: (n, …) -> …; sendrecv: this process's
positions, (lanes, …) -> (lanes, …); bcast: … -> the root member's …); the collectives' own
arguments (gather axis, tiled, split and concat axes) are ordinary reshapes around them.

Transposes are the per-position ones of lax/parallel.py (JAX's check_vma=False rules): psum's
is psum, all_gather's psum_scatter and back, ppermute's the inverse permutation, all_to_all's
itself. Under check_vma=True (`vma=True`) the types carry the process axes too: psum's allreduce
makes its result invariant and transposes to pvary; pvary (the identity, typed varying) transposes
to that psum, as lax/parallel.py's rules in one process; `mpi_vma` only retypes a value (a block
entering shard_map split over a process axis varies over it). At shard_map's boundary a value
entering whole passes `pvary` (the identity, untyped; its cotangents are summed over the
processes) and a result leaving whole passes `shared` (the identity; each process's copy takes
1/P of the cotangent) — over every process axis untyped, and typed only over those the value is
split over (an invariant value's cotangent is whole on every process: shard_map_processes.py) —
so the gradient of a function calling shard_map equals the one-process run's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import mpi
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.axis_env import AxisFrame, NamedAxisPrimitive
from ..core.rules import bdim_at_front, def_linear, moveaxis
from ..core.trace import get_aval
from . import parallel
from .elementwise import add, convert_element_type, div, mul, select_n
from .indexing import dynamic_index_in_dim
from .reductions import reduce_max, reduce_min, reduce_sum
from .shape import broadcast_in_dim, concatenate, full_like, index_in_dim, reshape


def _what(name: str, axis_name: Any) -> str:
    return f"{name} over the process axis {axis_name!r}"


def _collective(name: str, abstract: Any, impl: Any) -> Primitive:
    p = Primitive(name)
    p.effectful = True  # (every process must run each one, in the same order: never dropped)
    p.def_abstract_eval(abstract)
    p.def_impl(lambda x, **params: impl(np.asarray(x), **params))
    return p


def _typed(x: ShapedArray, axis_name: Any, vma: bool, varying: bool) -> ShapedArray:
    """x's type with the process axis added to (or removed from) its varying axes where the
    types track them (vma: shard_map's check_vma=True)."""
    if not vma:
        return x
    return x.update(vma=x.vma | {axis_name} if varying else x.vma - {axis_name})


# x on every member -> the reduction; batched: elementwise, so the batch axis stays put
allreduce_p = _collective(
    "mpi_allreduce", lambda x, *, axis_name, vma, **_: _typed(x, axis_name, vma, False),
    lambda x, *, op, ranks, axis_name, vma: mpi.allreduce(x, op, ranks,
                                                          _what("p" + op, axis_name)))
allreduce_p.own_vma = True
allreduce_p.def_batch(lambda vals, dims, **params: (allreduce_p.bind(vals[0], **params),
                                                    dims[0]))


def _allreduce_jvp(primals, tangents, *, op, **params):
    if op != "sum":
        raise NotImplementedError(f"Differentiation rule for 'p{op}' not implemented")
    (x,), (t,) = primals, tangents
    return allreduce_p.bind(x, op=op, **params), allreduce_p.bind(t, op=op, **params)


def _allreduce_transpose(ct, x, *, op, ranks, axis_name, vma):
    """Typed (check_vma=True): the invariant cotangent reaches every process's term, pvary;
    untyped: JAX's check_vma=False rule, the psum of the cotangents."""
    if vma:
        return [pvary_p.bind(ct, ranks=ranks, axis_name=axis_name, vma=True)]
    return [allreduce_p.bind(ct, op=op, ranks=ranks, axis_name=axis_name, vma=False)]


allreduce_p.def_jvp(_allreduce_jvp)
allreduce_p.transpose = _allreduce_transpose

# a value every process holds alike, used where values differ per process: the identity, whose
# transpose adds up what each process's use of it contributes (typed varying with vma=True:
# JAX's pvary over a process axis)
pvary_p = Primitive("mpi_pvary")
pvary_p.own_vma = True
pvary_p.def_abstract_eval(lambda x, *, axis_name, vma, **_: _typed(x, axis_name, vma, True))
pvary_p.def_impl(lambda x, **_: x)
pvary_p.def_batch(lambda vals, dims, **params: (pvary_p.bind(vals[0], **params), dims[0]))
def_linear(pvary_p, lambda ct, x, *, ranks, axis_name, vma: [
    allreduce_p.bind(ct, op="sum", ranks=ranks, axis_name=axis_name, vma=vma)])

# the identity that only retypes: the process axes `add` joined to, `remove` taken from, the
# value's varying axes (a block split over a process axis entering shard_map varies over it; a
# result leaves typed as outside shard_map; a cond's lanes picked by a varying predicate are
# typed as its branches, over any mesh axis: control_flow/conditionals.py); its transpose
# retypes back
vma_p = Primitive("mpi_vma")
vma_p.own_vma = True
vma_p.def_abstract_eval(lambda x, *, add, remove: x.update(vma=(x.vma - set(remove)) | set(add)))
vma_p.def_impl(lambda x, **_: x)
vma_p.def_batch(lambda vals, dims, **params: (vma_p.bind(vals[0], **params), dims[0]))
def_linear(vma_p, lambda ct, x, *, add, remove: [vma_p.bind(ct, add=remove, remove=add)])

# a result every process holds alike, leaving shard_map: the identity; the cotangent of the one
# value it is reaches each process's copy, so each takes its 1/P share
shared_p = Primitive("mpi_shared")
shared_p.def_abstract_eval(lambda x, **_: x)
shared_p.def_impl(lambda x, **_: x)
shared_p.def_batch(lambda vals, dims, **params: (shared_p.bind(vals[0], **params), dims[0]))
def_linear(shared_p, lambda ct, x, *, ranks, axis_name: [
    div(ct, full_like(ct, len(ranks)))])


def _stacked(x: ShapedArray, n: int) -> ShapedArray:
    return x.update(shape=(n,) + x.shape)


def _leading(x: ShapedArray, n: int, name: str) -> ShapedArray:
    if not x.shape or x.shape[0] != n:
        raise ValueError(f"{name}: the operand's leading axis must have the group's size {n}, "
                         f"got shape {x.shape}")
    return x.update(shape=x.shape[1:])


allgather_p = _collective(
    "mpi_allgather", lambda x, *, ranks, axis_name: _stacked(x, len(ranks)),
    lambda x, *, ranks, axis_name: mpi.allgather(x, ranks, _what("all_gather", axis_name)))
reduce_scatter_p = _collective(
    "mpi_reduce_scatter",
    lambda x, *, ranks, axis_name: _leading(x, len(ranks), "mpi_reduce_scatter"),
    lambda x, *, ranks, axis_name: mpi.reduce_scatter(x, ranks,
                                                      _what("psum_scatter", axis_name)))
alltoall_p = _collective(
    "mpi_alltoall", lambda x, *, ranks, axis_name: x,
    lambda x, *, ranks, axis_name: mpi.alltoall(x, ranks, _what("all_to_all", axis_name)))
# (lanes, ...) -> (lanes, ...): member m holds positions m * lanes + l, perm pairs positions
sendrecv_p = _collective(
    "mpi_sendrecv", lambda x, **_: x,
    lambda x, *, perm, ranks, axis_name: mpi.sendrecv(x, perm, ranks,
                                                      _what("ppermute", axis_name)))

# pbroadcast: member `root`'s x (root: its index in ranks) on every member, one MPI Bcast;
# the transpose sums every member's cotangent onto the root, the others' zero (a
# Reduce_scatter of the cotangents put at the root's block, as the gather it replaces was)
bcast_p = _collective(
    "mpi_bcast", lambda x, **_: x,
    lambda x, *, root, ranks, axis_name: mpi.bcast(x, root, ranks, _what("pbroadcast",
                                                                          axis_name)))
bcast_p.def_batch(lambda vals, dims, **params: (bcast_p.bind(vals[0], **params), dims[0]))


def _bcast_transpose(ct, x, *, root, ranks, axis_name):
    block = reshape(ct, (1,) + get_aval(ct).shape)
    zeros = full_like(block, 0)
    blocks = [block if m == root else zeros for m in range(len(ranks))]
    return [reduce_scatter_p.bind(concatenate(blocks, 0), ranks=ranks, axis_name=axis_name)]


def_linear(bcast_p, _bcast_transpose)

# batched over a local axis: the batch axis right after the group axis
allgather_p.def_batch(lambda vals, dims, **params: (
    allgather_p.bind(moveaxis(vals[0], dims[0], 0), **params), 1))
reduce_scatter_p.def_batch(lambda vals, dims, **params: (
    reduce_scatter_p.bind(_second(vals[0], dims[0]), **params), 0))
alltoall_p.def_batch(lambda vals, dims, **params: (
    alltoall_p.bind(_second(vals[0], dims[0]), **params), 1))
sendrecv_p.def_batch(lambda vals, dims, **params: (
    sendrecv_p.bind(_second(vals[0], dims[0]), **params), 1))


def _second(x: Any, d: int) -> Any:
    """x (a leading group axis, then data) with its batch axis d moved to position 1."""
    return moveaxis(x, d, 1) if d != 1 else x


def_linear(allgather_p, lambda ct, x, **params: [reduce_scatter_p.bind(ct, **params)])
def_linear(reduce_scatter_p, lambda ct, x, **params: [allgather_p.bind(ct, **params)])
def_linear(alltoall_p, lambda ct, x, **params: [alltoall_p.bind(ct, **params)])
def_linear(sendrecv_p, lambda ct, x, *, perm, **params: [
    sendrecv_p.bind(ct, perm=tuple((d, s) for s, d in perm), **params)])

# ppermute where each process holds several positions (lanes): bound on one lane's value; the
# batch trace of the lanes stacks them, (lanes, …), for one mpi_sendrecv (an all_gather over
# the lanes would be copied to every lane under check_vma, each copy sent). With cells > 1
# each lane's value is (cells, …), and perm pairs cells (position * cells + cell): the
# permutation of chunks all_to_all within groups is.
lanes_sendrecv_p = NamedAxisPrimitive("mpi_lanes_sendrecv",
                                      lambda params: (params["lanes_name"],))
lanes_sendrecv_p.effectful = True  # (as the collective it becomes)
lanes_sendrecv_p.def_abstract_eval(lambda x, **_: x)


def _lanes_sendrecv_impl(x, *, lanes_name, **_):
    raise NameError(f"ppermute's lanes {lanes_name!r} outside the transformation mapping them")


def _lanes_sendrecv_named(vals, dims, axis, *, lanes_name, cells, **params):
    (x,), (d,) = vals, dims
    front = bdim_at_front(x, d, axis.size)
    shape = get_aval(front).shape
    if cells > 1:  # (lanes, cells, …) -> this process's cells in order
        front = reshape(front, (shape[0] * shape[1],) + shape[2:])
    return reshape(sendrecv_p.bind(front, **params), shape), 0


def _lanes_sendrecv_batch(vals, dims, *, cells, **params):
    (x,), (d,) = vals, dims
    if cells > 1 and d == 0:  # (the cells stay first)
        x, d = moveaxis(x, 0, 1), 1
    return lanes_sendrecv_p.bind(x, cells=cells, **params), d


lanes_sendrecv_p.def_impl(_lanes_sendrecv_impl)
lanes_sendrecv_p.def_named_batch(_lanes_sendrecv_named)
lanes_sendrecv_p.def_batch(_lanes_sendrecv_batch)
def_linear(lanes_sendrecv_p, lambda ct, x, *, perm, **params: [
    lanes_sendrecv_p.bind(ct, perm=tuple((d, s) for s, d in perm), **params)])

# pbroadcast where each process holds several positions: bound on one lane's value, the source
# lane's taken from the stacked lanes and sent by one mpi_bcast (a Bcast of all the lanes would
# move each lane's copy); the transpose sums every position's cotangent onto the source (a psum
# over the axis, kept at the source: lax/parallel.py's rule, across the processes)
lanes_bcast_p = NamedAxisPrimitive("mpi_lanes_bcast", lambda params: (params["lanes_name"],))
lanes_bcast_p.effectful = True  # (as the collective it becomes)
lanes_bcast_p.def_abstract_eval(lambda x, **_: x)


def _lanes_bcast_impl(x, *, lanes_name, **_):
    raise NameError(f"pbroadcast's lanes {lanes_name!r} outside the transformation mapping them")


def _lanes_bcast_named(vals, dims, axis, *, source, lanes_name, ranks, axis_name):
    (x,), (d,) = vals, dims
    front = bdim_at_front(x, d, axis.size)
    one = bcast_p.bind(index_in_dim(front, source % axis.size, 0, keepdims=False),
                       root=source // axis.size, ranks=ranks, axis_name=axis_name)
    shape = get_aval(one).shape
    return broadcast_in_dim(one, (axis.size,) + shape, tuple(range(1, len(shape) + 1))), 0


lanes_bcast_p.def_impl(_lanes_bcast_impl)
lanes_bcast_p.def_named_batch(_lanes_bcast_named)
lanes_bcast_p.def_batch(lambda vals, dims, **params: (lanes_bcast_p.bind(vals[0], **params),
                                                      dims[0]))
def_linear(lanes_bcast_p, lambda ct, x, *, source, axis_name, **_: parallel._pbroadcast_transpose(
    ct, x, axis_name=axis_name, source=source))

# the collectives (native code calls back into MPI), and the identities that only say how a
# value is typed or differentiated (forwarded by native code, dropped by the compiler)
PRIMITIVES = (allreduce_p, allgather_p, reduce_scatter_p, alltoall_p, sendrecv_p, bcast_p)
IDENTITIES = (pvary_p, shared_p, vma_p)


# --- the named collectives over a process axis ----------------------------------------------
# Where each process holds several positions of the axis (`lanes` > 1, batched under
# `lanes_name`), reductions and gathers act over those lanes first, then across processes;
# the collectives that route data between positions move only the blocks that cross
# processes (a lane-batched MPI call, with the lanes' own collective before or after it).

def _first_process(frames: list) -> Any:
    return next(f for f in frames if f.process is not None)


def _reduction(op: str, prim: Any):
    def across(args, frames, *, axes, axis_index_groups):
        (x,), frame = args, _first_process(frames)
        if op == "sum" and np.dtype(get_aval(x).dtype) == np.bool_:
            x = convert_element_type(x, np.int32)  # (a count of True lanes, as JAX)
        if frame.vma and frame.name not in get_aval(x).vma:
            # typed invariant over the axis: every position holds x, no MPI call (sum: x times
            # the axis's size, as lax/parallel.py's rule for an unbatched operand)
            out = mul(x, full_like(x, frame.size)) if op == "sum" else x
        else:
            out = _across(prim, x, op, frame)
        rest = tuple(n for n in axes if n != frame.name)
        return prim.bind(out, axes=rest, axis_index_groups=axis_index_groups) if rest else out
    prim.def_across_processes(across)


def _across(prim: Any, x: Any, op: str, frame: AxisFrame) -> Any:
    """The reduction of x over the positions of the process axis `frame`: over this process's
    lanes, then one MPI Allreduce."""
    pa = frame.process
    if pa.lanes > 1:
        if frame.vma:  # (typed as varying over the lanes it sums, which the batch trace types
            # as the axis's: else psum's transpose takes it as invariant, the sum as x times
            # the lanes, and scales the cotangent by them; the sum varies over the processes)
            x = vma_p.bind(x, add=(pa.lanes_name,), remove=(frame.name,))
        x = prim.bind(x, axes=(pa.lanes_name,), axis_index_groups=None)
        if frame.vma:
            x = vma_p.bind(x, add=(frame.name,), remove=(pa.lanes_name,))
    return allreduce_p.bind(x, op=op, ranks=pa.ranks, axis_name=frame.name, vma=frame.vma)


_reduction("sum", parallel.psum_p)
_reduction("max", parallel.pmax_p)
_reduction("min", parallel.pmin_p)


def _position(frame: Any) -> Any:
    """This position along the axis (int32): the process's part, then the lane in it."""
    pa = frame.process
    here = Array.from_numpy(np.asarray(pa.index * pa.lanes, np.int32),
                            ShapedArray((), np.dtype(np.int32)))
    if frame.vma:  # (typed: the position varies over the axis, as axis_index's type)
        here = vma_p.bind(here, add=(frame.name,), remove=())
    if pa.lanes == 1:
        return here
    return add(here, parallel.axis_index_p.bind(axis_name=pa.lanes_name))


parallel.axis_index_p.def_across_processes(lambda args, frames, *, axis_name: _position(
    frames[0]))


def _pvary(args, frames, *, axes):
    """pvary over process axes (check_vma=True's implicit pvary, pcast): the identity, typed
    varying over them; its transpose sums the cotangents over the processes."""
    (x,) = args
    for frame in frames:
        pa = frame.process
        if pa is not None:
            if pa.lanes > 1:  # (this process's positions: its lanes made real)
                x = _lanes_typed(parallel.pvary_p.bind(x, axes=(pa.lanes_name,)), frame)
            x = pvary_p.bind(x, ranks=pa.ranks, axis_name=frame.name, vma=frame.vma)
    rest = tuple(f.name for f in frames if f.process is None)
    return Primitive.bind(parallel.pvary_p, x, axes=rest) if rest else x


parallel.pvary_p.def_across_processes(_pvary)


def _lanes_typed(x: Any, frame: AxisFrame) -> Any:
    """x, made by a collective over this process's lanes, typed (check_vma) as varying over the
    axis whose positions they are, not over the lanes' own name — no mesh axis: a loop carry
    typed by it would not match its initial value."""
    if not frame.vma:
        return x
    return vma_p.bind(x, add=(frame.name,), remove=(frame.process.lanes_name,))


def _everyone(x: Any, frame: Any) -> Any:
    """Every position's x, stacked along a new leading axis (in position order)."""
    pa = frame.process
    if pa.lanes > 1:
        x = _lanes_typed(parallel.all_gather_p.bind(
            x, all_gather_dimension=0, axis_name=(pa.lanes_name,), axis_index_groups=None,
            axis_size=pa.lanes, tiled=False), frame)
    out = allgather_p.bind(x, ranks=pa.ranks, axis_name=frame.name)
    if pa.lanes > 1:
        shape = get_aval(out).shape
        out = reshape(out, (shape[0] * shape[1],) + shape[2:])
    return out


def _all_gather(args, frames, *, all_gather_dimension, tiled, **_):
    return parallel._stacked_to(_everyone(args[0], frames[0]), all_gather_dimension, tiled)


parallel.all_gather_p.def_across_processes(_all_gather)


def _psum_scatter(args, frames, *, scatter_dimension, tiled, **_):
    """Position q keeps the sum of every position's block q. Over several lanes: this
    process's lanes summed into each lane's blocks (a psum_scatter over the lanes: lane l holds
    the local sum of block p * lanes + l for every process p), then one MPI Reduce_scatter over
    the processes, each receiving only its positions' blocks (so the float sum's order is
    lanes first, then processes: it may differ from one process's in the last bits)."""
    (x,), frame = args, frames[0]
    pa, n, sd = frame.process, frame.size, scatter_dimension
    shape = get_aval(x).shape
    parallel._scattered_shape(shape, n, sd, tiled)  # (JAX's errors for a bad shape)
    if tiled:
        x = reshape(x, shape[:sd] + (n, shape[sd] // n) + shape[sd + 1:])
    x = moveaxis(x, sd, 0)
    if pa.lanes > 1:
        rest = get_aval(x).shape[1:]
        x = _lanes_typed(parallel.reduce_scatter_p.bind(
            reshape(x, (len(pa.ranks), pa.lanes) + rest), scatter_dimension=1,
            axis_name=(pa.lanes_name,), axis_index_groups=None, axis_size=pa.lanes,
            tiled=False), frame)
    # (lane-batched: the lanes become the Reduce_scatter's second axis, one block each)
    return reduce_scatter_p.bind(x, ranks=pa.ranks, axis_name=frame.name)


parallel.reduce_scatter_p.def_across_processes(_psum_scatter)


def _ppermute(args, frames, *, axis_name, perm):
    """Each pair's block moves from its source position to its destination: this process's
    lanes stacked (lanes_sendrecv_p), the blocks that stay in the process copied, those that
    cross sent point to point (mpi.sendrecv)."""
    return _moved(args[0], tuple(perm), frames[0])


def _moved(x: Any, perm: tuple, frame: AxisFrame, cells: int = 1) -> Any:
    """x moved by perm: pairs of positions, or with cells > 1 (x: (cells, …)) pairs of cells,
    position * cells + cell."""
    pa = frame.process
    if pa.lanes > 1:
        return lanes_sendrecv_p.bind(x, perm=perm, ranks=pa.ranks, axis_name=frame.name,
                                     lanes_name=pa.lanes_name, cells=cells)
    shape = get_aval(x).shape
    front = x if cells > 1 else reshape(x, (1,) + shape)  # (this process's cells)
    return reshape(sendrecv_p.bind(front, perm=perm, ranks=pa.ranks, axis_name=frame.name),
                   shape)


parallel.ppermute_p.def_across_processes(_ppermute)


def _all_to_all(args, frames, *, split_axis, concat_axis, **_):
    """Chunk j of the split axis goes to position j; what arrives is joined along the concat
    axis in source order: the chunks put first, exchanged, and put back. Over several lanes
    the chunks are grouped by destination process (lanes, ...), one MPI Alltoall moves each
    group to its process (lane-batched: each process receives its lanes' chunks from every
    position), and an all_to_all over the lanes hands each lane its own."""
    (x,), frame = args, frames[0]
    pa, n = frame.process, frame.size
    shape = get_aval(x).shape
    if shape[split_axis] % n:
        raise ValueError(f"all_to_all: the split axis {split_axis} has size "
                         f"{shape[split_axis]}, not a multiple of the axis size {n}")
    k = shape[split_axis] // n
    chunks = reshape(x, shape[:split_axis] + (n, k) + shape[split_axis + 1:])
    front = moveaxis(chunks, split_axis, 0)  # (n, *shape with split axis k)
    piece = get_aval(front).shape[1:]
    if pa.lanes == 1:
        got = alltoall_p.bind(front, ranks=pa.ranks, axis_name=frame.name)
    else:  # (per lane: (source process, destination lane, ...) -> (source position, ...))
        got = alltoall_p.bind(reshape(front, (len(pa.ranks), pa.lanes) + piece),
                              ranks=pa.ranks, axis_name=frame.name)
        got = _lanes_typed(parallel.all_to_all_p.bind(
            got, split_axis=1, concat_axis=1, axis_name=(pa.lanes_name,),
            axis_index_groups=None, tiled=True), frame)
        got = reshape(got, (n,) + piece)
    out = moveaxis(got, 0, concat_axis)  # the sources just before the concat axis
    return reshape(out, piece[:concat_axis] + (n * piece[concat_axis],) + piece[concat_axis + 1:])


parallel.all_to_all_p.def_across_processes(_all_to_all)


def _pbroadcast(args, frames, *, axis_name, source):
    """Position `source`'s x on every position: one MPI Bcast from its process (of the source
    lane's value, where each process holds several positions), each process receiving the one
    value, not every position's. (Under check_vma its operand varies over the axis:
    lax.pbroadcast refuses an invariant one, as JAX's.)"""
    (x,), frame = args, frames[0]
    pa = frame.process
    if pa.lanes > 1:
        return lanes_bcast_p.bind(x, source=source, lanes_name=pa.lanes_name, ranks=pa.ranks,
                                  axis_name=frame.name)
    return bcast_p.bind(x, root=source, ranks=pa.ranks, axis_name=frame.name)


parallel.pbroadcast_p.def_across_processes(_pbroadcast)


# --- axis_index_groups across processes ----------------------------------------------------
# Within equal groups each collective moves only what its group needs (below): psum_scatter is
# the ungrouped one of each position's blocks spread over the axis; all_to_all and all_gather a
# permutation of the positions' chunks or copies, and psum, pmax and pmin (untyped) that
# all_gather reduced. Otherwise every position's value is gathered (allgather), each group's
# collective computed from its members' values as in one process (the primitive's named rule,
# over an axis of the positions), and each position keeps its own result.

def _grouped(prim: Any, plain: Any, equal_groups: Any = None) -> Any:
    def across(args, frames, **params):
        groups = params.get("axis_index_groups")
        if groups is None:
            return plain(args, frames, **params)
        if len(frames) != 1:
            raise NotImplementedError(f"{prim.name} with axis_index_groups over several axes "
                                      f"spanning processes: name one axis")
        frame = frames[0]
        if equal_groups is not None and len({len(g) for g in groups}) == 1:
            out = equal_groups(args[0], frame, groups, **params)
            if out is not None:  # (None: a case the general rule below takes)
                return out
        # (typed as the axis is: psum within groups is then JAX's NotImplementedError)
        positions = AxisFrame(frame.name, frame.size, None, devices=True, vma=frame.vma)
        out, d = prim.named_batch([_everyone(args[0], frame)], [0], positions, **params)
        out = bdim_at_front(out, d, frame.size)
        return dynamic_index_in_dim(out, _position(frame), 0, keepdims=False)
    return across


def _psum_scatter_in_groups(x, frame, groups, *, scatter_dimension, tiled, **_):
    """psum_scatter within groups of m positions as the ungrouped one over the whole axis:
    each position's m blocks spread to n, block d being its block for d's place in d's group
    where d shares its group and zeros elsewhere, so position d receives its group's sum of
    its block (adding zeros is exact, but a sum of -0.0 alone comes out 0.0) and each process
    only its positions' results."""
    m, sd, n = len(groups[0]), scatter_dimension, frame.size
    shape = get_aval(x).shape
    parallel._scattered_shape(shape, m, sd, tiled)  # (JAX's errors for a bad shape)
    if tiled:
        x = reshape(x, shape[:sd] + (m, shape[sd] // m) + shape[sd + 1:])
    x = moveaxis(x, sd, 0)  # (m, *result)
    place = {d: i for g in groups for i, d in enumerate(g)}
    group_of = {d: k for k, g in enumerate(groups) for d in g}
    spread = concatenate([index_in_dim(x, place[d], 0) for d in range(n)], 0)
    same = np.array([[group_of[q] == group_of[d] for d in range(n)] for q in range(n)])
    ours = dynamic_index_in_dim(_constant(same), _position(frame), 0, keepdims=False)
    ours = broadcast_in_dim(ours, get_aval(spread).shape, (0,))
    spread = select_n(ours, full_like(spread, 0), spread)
    return _psum_scatter([spread], [frame], scatter_dimension=0, tiled=False)


def _all_to_all_in_groups(x, frame, groups, *, split_axis, concat_axis, **_):
    """all_to_all within groups of m positions: chunk j of the r-th member of a group goes to
    cell r of the group's j-th member — a permutation of the positions' chunks, moved as
    ppermute moves blocks (those crossing processes point to point, the others copied)."""
    m = len(groups[0])
    shape = get_aval(x).shape
    if shape[split_axis] % m:
        raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {frame.name} ({m})")
    chunks = reshape(x, shape[:split_axis] + (m, shape[split_axis] // m) +
                     shape[split_axis + 1:])
    front = moveaxis(chunks, split_axis, 0)  # (m, *chunk)
    piece = get_aval(front).shape[1:]
    perm = tuple((q * m + j, g[j] * m + r) for g in groups for r, q in enumerate(g)
                 for j in range(m))
    out = moveaxis(_moved(front, perm, frame, cells=m), 0, concat_axis)  # (sources in order)
    return reshape(out, piece[:concat_axis] + (m * piece[concat_axis],) + piece[concat_axis + 1:])


def _all_gather_in_groups(x, frame, groups, *, all_gather_dimension, tiled, **_):
    """all_gather within groups of m positions: each position's block copied once per member
    of its group, copy i of the group's r-th member going to cell r of its i-th member — a
    permutation of the copies, moved as ppermute moves blocks."""
    m = len(groups[0])
    shape = get_aval(x).shape
    copies = broadcast_in_dim(x, (m,) + shape, tuple(range(1, len(shape) + 1)))
    perm = tuple((q * m + i, g[i] * m + r) for g in groups for r, q in enumerate(g)
                 for i in range(m))
    return parallel._stacked_to(_moved(copies, perm, frame, cells=m), all_gather_dimension,
                                tiled)


def _reduced_in_groups(op: str, reduce: Any) -> Any:
    """psum (pmax, pmin) within groups: the group's blocks gathered as above, reduced here.
    Only untyped (check_vma=False) and over the one axis: otherwise the general rule (JAX's
    errors for psum within groups under check_vma)."""
    def rule(x, frame, groups, *, axes, axis_index_groups):
        if frame.vma or tuple(axes) != (frame.name,):
            return None
        if op == "sum" and np.dtype(get_aval(x).dtype) == np.bool_:
            x = convert_element_type(x, np.int32)  # (a count of True lanes, as JAX)
        return reduce(_all_gather_in_groups(x, frame, groups, all_gather_dimension=0,
                                            tiled=False), (0,))
    return rule


def _constant(v: np.ndarray) -> Array:
    return Array.from_numpy(v, ShapedArray(v.shape, v.dtype))


for _prim, _rule in ((parallel.psum_p, _reduced_in_groups("sum", reduce_sum)),
                    (parallel.pmax_p, _reduced_in_groups("max", reduce_max)),
                    (parallel.pmin_p, _reduced_in_groups("min", reduce_min)),
                    (parallel.all_gather_p, _all_gather_in_groups)):
    _prim.def_across_processes(_grouped(_prim, _prim.across_processes, _rule))
parallel.all_to_all_p.def_across_processes(_grouped(
    parallel.all_to_all_p, parallel.all_to_all_p.across_processes, _all_to_all_in_groups))
parallel.reduce_scatter_p.def_across_processes(_grouped(
    parallel.reduce_scatter_p, parallel.reduce_scatter_p.across_processes,
    _psum_scatter_in_groups))
