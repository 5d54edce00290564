"""`jax.interpreters.batching`: the batching (vmap) rule table and rule families for
user-defined primitives. A rule is batcher(vals, dims, **params) -> (out, out_dim), a dim
being an int or `not_mapped` (None). User-facing layer over tracejit.core (batching.py,
rules.py, primitive.py)."""
from __future__ import annotations

from typing import Any, Callable

from ..core import rules as _rules
from ..core.batching import BatchTrace, BatchTracer  # noqa: F401
from ..core.primitive import Primitive, primitive_batchers  # noqa: F401
from ..core.rules import axis_size as _axis_size
from ..core.rules import not_mapped  # noqa: F401


class AxisData:
    """The vmapped axis a rule runs under: its name (None unless given) and size."""
    __slots__ = ("name", "size", "spmd_name", "explicit_mesh_axis")

    def __init__(self, name: Any, size: int):
        self.name, self.size = name, size
        self.spmd_name = self.explicit_mesh_axis = None

    def __repr__(self) -> str:
        return f"AxisData(name={self.name!r}, size={self.size})"


class _AxisRuleTable(dict):
    """A rule table whose rules take the vmapped axis first; each rule is also registered in
    `primitive_batchers`, called with the axis it runs under. `call(rule, axis, vals, dims,
    **params)` says how."""

    def __init__(self, call: Callable):
        super().__init__()
        self._call = call

    def __setitem__(self, prim: Primitive, rule: Callable) -> None:
        super().__setitem__(prim, rule)
        call = self._call

        def batcher(vals, dims, **params):
            return call(rule, AxisData(None, _axis_size(vals, dims)), vals, dims, **params)
        primitive_batchers[prim] = batcher

    def __delitem__(self, prim: Primitive) -> None:
        super().__delitem__(prim)
        del primitive_batchers[prim]


# rule(axis_size, axis_name, main_type, vals, dims, **params): the older signature
axis_primitive_batchers = _AxisRuleTable(
    lambda rule, axis, vals, dims, **params: rule(axis.size, axis.name, None, vals, dims,
                                                  **params))
# rule(axis_data, vals, dims, **params)
fancy_primitive_batchers = _AxisRuleTable(
    lambda rule, axis, vals, dims, **params: rule(axis, vals, dims, **params))


def bdim_at_front(x: Any, bdim: int | None, size: int) -> Any:
    """x with its batch dimension first; an unbatched x is broadcast along a new one."""
    return _rules.bdim_at_front(x, bdim, size)


def moveaxis(x: Any, src: int, dst: int) -> Any:
    return _rules.moveaxis(x, src, dst)


def broadcast(x: Any, sz: int, axis: int) -> Any:
    """x with a new axis of length sz at position `axis`."""
    return moveaxis(_rules.bdim_at_front(x, not_mapped, sz), 0, axis)


def defvectorized(prim: Primitive) -> None:
    """An elementwise primitive whose operands share their batch dimension (moved first where
    they disagree)."""
    def batch(vals, dims, **params):
        mapped = {d for d in dims if d is not not_mapped}
        if len(mapped) == 1 and not_mapped not in dims:
            return prim.bind(*vals, **params), mapped.pop()
        size = _axis_size(vals, dims)
        return prim.bind(*[bdim_at_front(x, d, size) for x, d in zip(vals, dims)],
                         **params), 0
    prim.def_batch(batch)


def defbroadcasting(prim: Primitive) -> None:
    """An n-ary elementwise primitive whose rank-0 operands broadcast."""
    _rules.def_broadcasting(prim)


def defreducer(prim: Primitive, ident: Any = None) -> None:
    """A primitive reducing its operand over the param `axes`."""
    del ident
    _rules.def_reducer_batching(prim)
