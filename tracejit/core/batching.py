"""Batching (vmap): a BatchTracer is a value with one extra dimension, `bdim` (or not_mapped),
and each primitive's batch rule computes all lanes at once.

`batch_flat` vectorises a flat function; `batch_jaxpr` turns a closed jaxpr into its batched
version (batched inputs and outputs carry the batch dimension first).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Sequence

from .avals import ShapedArray
from .config import config
from .axis_env import AxisFrame, NamedAxisPrimitive, extend_frame
from .jaxpr import ClosedJaxpr, runs_jaxpr
from .jaxpr_util import eval_closed, trace_closed
from .primitive import Primitive, primitive_batchers
from .rules import bdim_at_front, moveaxis, not_mapped, unbatched_aval
from .trace import (Trace, Tracer, check_no_leaks, full_lower, full_raise, get_aval, new_main,
                    typeof, user_source_info)


class BatchTracer(Tracer):
    # spread: batched, yet typed invariant over the named axis (shard_map's check_vma=True):
    # each lane holds its own device's value of a result whose type JAX makes invariant, as
    # a cond's on a varying predicate whose branches return invariant values
    __slots__ = ("val", "bdim", "spread")

    def __repr__(self) -> str:  # JAX's name and form
        axis = self._trace.main.global_data
        if axis is not None and axis.devices:  # pmap's or shard_map's: under jit, JAX's is
            base = self.val                    # a JitTracer of the per-device type
            while isinstance(base, BatchTracer):
                base = base.val
            if isinstance(base, Tracer):
                return f"JitTracer({self.aval.str_long()})"
        batched = get_aval(self.val)
        return f"VmapTracer(aval={self.aval.str_long()}, batched={batched.str_long()})"

    def __init__(self, trace: Trace, val: Any, bdim: int | None, spread: bool = False):
        self._trace = trace
        self.val = val
        self.bdim = bdim
        self.spread = spread

    @property
    def aval(self) -> ShapedArray:
        aval = unbatched_aval(self.val, self.bdim)
        axis = self._trace.main.global_data
        # under shard_map's check_vma=True a value varies over a mesh axis when that axis's
        # batch trace maps it (pvary materialises the lanes of an invariant value), unless
        # its type says it is invariant though its lanes differ (spread)
        if axis is not None and axis.vma and self.bdim is not not_mapped and not self.spread:
            aval = aval.update(vma=aval.vma | {_typed_name(axis)})
        return aval

    def typed_aval(self) -> ShapedArray:
        """vmap's type of a lane of a value laid out over Explicit mesh axes: the batched
        dimension's entry dropped (`float32[8@x,4@y]` mapped over axis 1: `float32[8@x]`)."""
        aval = self.aval
        if self._trace.main.global_data is not None:
            return aval  # (a named axis: shard_map's or pmap's types say {V:...} instead)
        s = typeof(self.val)._sharding
        if s is None:
            return aval
        if self.bdim is not not_mapped:
            parts = [axes if axes else None for axes in s._parts(aval.ndim + 1)]
            del parts[self.bdim]
            s = s.with_spec([p[0] if p and len(p) == 1 else p for p in parts])
        return ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding=s, vma=aval.vma)

    def full_lower(self):
        if self.bdim is not_mapped:
            return full_lower(self.val)
        return self

    def _origin_msg(self) -> str:
        where = user_source_info()
        at = f" The failing operation is at {where}." if where is not None else ""
        return f"The value is batched by vmap: each lane has its own value.{at}"


def _typed_name(axis: AxisFrame) -> Any:
    """The name a value's type carries for the batched axis `axis`."""
    return axis.name if axis.typed_as is None else axis.typed_as


def batch_rule(primitive: Primitive) -> Callable:
    rule = primitive.batch or primitive_batchers.get(primitive)  # (user rules: see primitive.py)
    if rule is None:
        raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
    return rule


class _Named(threading.local):
    # the named axis of the batch trace whose rule is running: the batch_flat/batch_jaxpr calls
    # a rule makes (the body of a jit, scan or cond it batches) map that same axis
    axis: AxisFrame | None = None
    # how many batch rules are running: the operations they bind are the lanes' arithmetic,
    # never a user's (no implicit pvary there: lax/parallel.py)
    depth: int = 0


_named = _Named()


def in_batch_rule() -> bool:
    """Whether a batch rule is running (its operations work on whole batches of lanes)."""
    return _named.depth > 0
INHERIT = object()


class BatchTrace(Trace):
    """main.global_data: the named axis this trace maps (an AxisFrame whose main is None), or
    None for an anonymous vmap."""

    def pure(self, val):
        return BatchTracer(self, val, not_mapped)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        vals = [t.val for t in tracers]
        dims = [t.bdim for t in tracers]
        axis = self.main.global_data
        saved, _named.axis = _named.axis, axis
        _named.depth += 1
        try:
            if axis is not None and isinstance(primitive, NamedAxisPrimitive) and \
                    axis.name in primitive.names(params):
                out, out_dims = primitive.named_batch(vals, dims, axis, **params)
            elif all(d is not_mapped for d in dims):
                out = primitive.bind(*vals, **params)
                out_dims = [not_mapped] * len(out) if primitive.multiple_results else not_mapped
            else:
                out, out_dims = batch_rule(primitive)(vals, dims, **params)
        finally:
            _named.axis = saved
            _named.depth -= 1
        outs, out_dims = (out, out_dims) if primitive.multiple_results else ([out], [out_dims])
        spread = _spread_outputs(primitive, tracers, params, out_dims, axis)
        outs = [BatchTracer(self, o, d, s) for o, d, s in zip(outs, out_dims, spread)]
        return outs if primitive.multiple_results else outs[0]


def _spread_outputs(primitive: Primitive, tracers: Sequence[BatchTracer], params: dict,
                    out_dims: Sequence[int | None], axis: AxisFrame | None) -> list[bool]:
    """Which batched outputs are typed invariant over the axis (JAX's types, not the lanes'
    batching, decide): those the primitive's type rule makes invariant. Only a spread operand,
    a primitive running a jaxpr (a cond on a batched predicate) or one with its own typing rule
    (collectives, retypings) can make one, so the rule is asked only then."""
    none = [False] * len(out_dims)
    if axis is None or not axis.vma or all(d is not_mapped for d in out_dims):
        return none
    if not any(t.spread for t in tracers) and not runs_jaxpr(params) and \
            not primitive.own_vma:
        return none
    avals = primitive.abstract_eval(*[t.aval for t in tracers], **params)
    name = _typed_name(axis)
    return [d is not not_mapped and name not in getattr(a, "vma", (name,))
            for a, d in zip(avals, out_dims)]


def current_axis() -> AxisFrame | None:
    """The named axis of the batch rule running now (for rules that batch a function later,
    outside the rule: custom_jvp/custom_vjp's rules)."""
    return _named.axis


def batch_flat(fun: Callable[..., Sequence[Any]], args: Sequence[Any],
               in_dims: Sequence[int | None], axis: Any = INHERIT,
               spread: list | None = None) -> tuple[list, list[int | None]]:
    """Run fun on args batched along in_dims; returns the outputs and their batch dims.
    `axis`: the AxisFrame (name, size) the batch dimension is bound to, for collectives; by
    default the one of the batch rule running (a rule batching a sub-jaxpr maps the same axis),
    none from a user's anonymous vmap. `spread`, if given, receives per output whether it is
    batched yet typed invariant over the axis (see BatchTracer)."""
    if axis is INHERIT:
        axis = _named.axis
    with new_main(BatchTrace, global_data=axis) as main:
        trace = BatchTrace(main)
        bound = extend_frame(axis._replace(main=main)) if axis is not None else \
            contextlib.nullcontext()
        with bound:
            outs = fun(*[BatchTracer(trace, x, d) if d is not not_mapped else x
                         for x, d in zip(args, in_dims)])
            outs = [full_raise(trace, o) for o in outs]
        if spread is not None:
            spread[:] = [o.spread for o in outs]
        vals, dims = [o.val for o in outs], [o.bdim for o in outs]
    if config.jax_check_tracer_leaks:
        del trace, outs
        check_no_leaks(main)
    return vals, dims


def batch_jaxpr(closed: ClosedJaxpr, size: int, in_batched: Sequence[bool],
                force_out: bool | Sequence[bool]) -> tuple[ClosedJaxpr, list[bool]]:
    """closed batched over inputs `in_batched` (batch dimension first, length `size`); outputs
    come out batched first where they depend on a batched input or force_out asks for it."""
    avals = closed.in_avals
    b_avals = [a.update(shape=(size,) + a.shape) if b else a for a, b in zip(avals, in_batched)]
    n_out = len(closed.out_avals)
    force = [force_out] * n_out if isinstance(force_out, bool) else list(force_out)
    out_batched: list[bool] = []

    def fun(*args):
        outs, dims = batch_flat(lambda *xs: eval_closed(closed, *xs), args,
                                [0 if b else not_mapped for b in in_batched])
        out_batched[:] = [d is not not_mapped or f for d, f in zip(dims, force)]
        return [bdim_at_front(o, d, size) if b else o
                for o, d, b in zip(outs, dims, out_batched)]

    return trace_closed(fun, b_avals), out_batched


def move_to_front(vals: Sequence[Any], dims: Sequence[int | None]) -> list:
    """Batched values with their batch dimension moved first; unbatched ones unchanged."""
    return [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(vals, dims)]
