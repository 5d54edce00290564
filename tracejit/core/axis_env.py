"""Named axes (core): the axes that `vmap(axis_name=...)`, `pmap` and `shard_map` bind while
they run, each with its size and the batch trace that maps it, per thread.

A collective (lax.psum & co., lax/parallel.py) is a `NamedAxisPrimitive`: binding one raises its
operands to the batch trace of the innermost axis it names, so that trace's named batch rule
computes it across the lanes; a name nothing binds is JAX's NameError.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, NamedTuple

from .primitive import Primitive
from .trace import MainTrace, full_raise


class ProcessAxis(NamedTuple):
    """A mesh axis whose positions are held by processes: the world rank at each process's
    part, and this process's part. With `lanes` > 1 each process holds that many consecutive
    positions, batched under the name `lanes_name` (so the axis has len(ranks) * lanes)."""
    ranks: tuple[int, ...]
    index: int
    lanes: int = 1
    lanes_name: Any = None


class AxisFrame(NamedTuple):
    name: Any
    size: int
    main: MainTrace | None  # the batch trace mapping the axis (None: make_jaxpr's axis_env)
    # set for an axis that spans processes (shard_map over a multi-process mesh): not batched,
    # each process computes its position, and collectives over it call MPI
    process: ProcessAxis | None = None
    # an axis over devices (pmap, shard_map): collectives take axis_index_groups, which JAX's
    # vmap(axis_name=...) rejects
    devices: bool = False
    # a shard_map axis under check_vma=True: values carry it in their type's `vma` while they
    # vary over it (core/vma.py)
    vma: bool = False
    # the name the types carry for it, where not its own (the lanes of a process axis that a
    # process holds several positions of: they vary over that mesh axis)
    typed_as: Any = None


class _AxisState(threading.local):
    def __init__(self) -> None:
        self.frames: list[AxisFrame] = []


_state = _AxisState()


@contextlib.contextmanager
def extend_axis_env(name: Any, size: int, main: MainTrace | None = None,
                    process: ProcessAxis | None = None):
    """Bind axis `name` of `size` while the block runs (innermost binding wins)."""
    _state.frames.append(AxisFrame(name, size, main, process))
    try:
        yield
    finally:
        _state.frames.pop()


@contextlib.contextmanager
def extend_frame(frame: AxisFrame):
    """Bind `frame` (its name, size, trace and flags) while the block runs."""
    _state.frames.append(frame)
    try:
        yield
    finally:
        _state.frames.pop()


def lookup(name: Any) -> AxisFrame:
    for frame in reversed(_state.frames):
        if frame.name == name:
            return frame
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                    f"vmap, pmap or shard_map) are available to collective operations: "
                    f"{[f.name for f in _state.frames]}")


def axis_size(name: Any) -> int:
    return lookup(name).size


def bound_names() -> list:
    return [f.name for f in _state.frames]


def vma_frames() -> list[AxisFrame]:
    """The bound axes whose values' types track how they vary (shard_map, check_vma=True)."""
    return [f for f in _state.frames if f.vma]


class NamedAxisPrimitive(Primitive):
    """A primitive computed across the lanes of named axes. `names(params)` lists the axes it
    acts over; the batch trace of one of them calls `named_batch(vals, dims, frame, **params)`
    (other batch traces use the ordinary `batch` rule: the collective acts lane by lane). Over
axes that span processes and none that a batch trace maps, `across_processes(args, frames,
**params)` computes it instead, with collectives between the processes."""

    def __init__(self, name: str, names: Callable[[dict], tuple], **kwargs: Any):
        super().__init__(name, **kwargs)
        self.own_vma = True  # (each collective says how it changes the varying axes)
        self.names = names
        self.named_batch: Callable | None = None
        self.across_processes: Callable | None = None

    def def_named_batch(self, f: Callable) -> Callable:
        self.named_batch = f
        return f

    def def_across_processes(self, f: Callable) -> Callable:
        self.across_processes = f
        return f

    def bind(self, *args: Any, **params: Any):
        frames = [lookup(n) for n in self.names(params)]
        mapped = [f.main for f in frames if f.main is not None]
        if mapped:
            main = max(mapped, key=lambda m: m.level)
            if not main.active:
                raise NameError(f"axis {self.names(params)} is bound by a transformation that "
                                f"has finished")
            trace = main.trace_type(main)
            if not args:  # (axis_index: no operand to raise; that trace builds the lanes)
                return trace.process_primitive(self, [], params)
            args = tuple(full_raise(trace, a) if _level(a) <= main.level else a for a in args)
        elif any(f.process is not None for f in frames):
            if self.across_processes is None:
                raise NotImplementedError(f"{self.name} over an axis that spans processes")
            return self.across_processes(args, frames, **params)
        return super().bind(*args, **params)


def _level(x: Any) -> int:
    trace = getattr(x, "_trace", None)
    return -1 if trace is None else trace.main.level
