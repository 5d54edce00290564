"""`jax.extend.core`: primitives defined by user code and the jaxpr IR they are staged into.
User-facing layer: a user Primitive is a core Primitive kept out of tracejit's registry, whose
rules live in the JAX-style tables (jax.interpreters.ad / batching / mlir) the transformations
and the compiler consult."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ...core import dtypes
from ...core import primitive as _primitive
from ...core.array import Array
from ...core.avals import AbstractValue, ShapedArray
from ...core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, JaxprTypeError, Literal, Var  # noqa: F401
from ...core.jaxpr import check_jaxpr as _check_jaxpr
from ...core.jaxpr_util import eval_jaxpr_bind
from ...core.errors import InconclusiveDimensionOperation, concretization_error  # noqa: F401
from ...core.jaxpr import SourceInfo
from ...core.trace import DebugInfo, Trace, Tracer, _state, get_aval  # noqa: F401
from ...core.trace import find_top_trace as _find_top_trace

JaxprEqn = Eqn


class Effect:
    """A generic side effect (JAX's `core.Effect`), the base class of effect types."""


Effects = frozenset
no_effects: frozenset = frozenset()


class Primitive(_primitive.Primitive):
    """JAX's `jax.extend.core.Primitive`: an operation defined by user code. Give it an impl
    (eager evaluation) and an abstract evaluation rule; register its JVP, transpose and batching
    rules in `jax.interpreters.ad` / `batching`, and a lowering for jit with
    `jax.interpreters.mlir.register_lowering(p, mlir.lower_fun(fun, multiple_results=...))`."""

    call_primitive = False
    map_primitive = False
    ref_primitive = False

    def __init__(self, name: str):
        super().__init__(name, registered=False)

    def def_impl(self, impl: Callable) -> Callable:
        """The eager implementation: called with arrays (as in JAX, not NumPy arrays)."""
        def on_arrays(*args, **params):
            return impl(*[Array.from_numpy(x, ShapedArray(x.shape, x.dtype))
                          if isinstance(x, np.ndarray) else x for x in args], **params)
        self.impl = on_arrays
        return impl

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        """avals in -> aval out (a sequence of them for a multiple-results primitive)."""
        def checked(*avals, **params):
            return _as_avals(self, abstract_eval(*avals, **params))
        self._abstract_eval = checked
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval: Callable) -> Callable:
        """As def_abstract_eval, for a rule returning (avals, effects). tracejit orders no
        effects of user primitives, so a rule declaring effects is refused when it runs."""
        def checked(*avals, **params):
            out, effects = effectful_abstract_eval(*avals, **params)
            if effects:
                raise NotImplementedError(
                    f"The primitive '{self.name}' declares the effects {set(effects)}; tracejit "
                    f"does not track the effects of user-defined primitives (use "
                    f"jax.experimental.io_callback for ordered side effects).")
            return _as_avals(self, out)
        self._abstract_eval = checked
        return effectful_abstract_eval

    # the rule families of tracejit.core.rules store the rules of a user primitive in the
    # JAX-style tables, where code written for JAX looks them up
    def def_jvp(self, f: Callable) -> Callable:
        _primitive.primitive_jvps[self] = f
        return f

    def def_transpose(self, f: Callable) -> Callable:
        _primitive.primitive_transposes[self] = f
        return f

    def def_batch(self, f: Callable) -> Callable:
        _primitive.primitive_batchers[self] = f
        return f

    def has_rule(self, rule: str) -> bool:
        tables = {"jvp": _primitive.primitive_jvps, "transpose": _primitive.primitive_transposes,
                  "batch": _primitive.primitive_batchers}
        if rule in tables:
            return self in tables[rule]
        return super().has_rule(rule)

    def __repr__(self) -> str:
        return self.name


def _as_avals(prim: Primitive, out: Any):
    """A user rule's result as tracejit avals: ShapedArrays (ShapeDtypeStructs are accepted)."""
    def one(a):
        if isinstance(a, ShapedArray):
            return a
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            return ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))
        many = " (a sequence of them: it has multiple results)" if prim.multiple_results else ""
        raise TypeError(f"The abstract evaluation rule of the primitive '{prim.name}' returned "
                        f"{a!r}; it must return a ShapedArray{many}.")
    if prim.multiple_results:
        if not isinstance(out, (list, tuple)):
            raise TypeError(f"The abstract evaluation rule of the multiple-results primitive "
                            f"'{prim.name}' must return a sequence of avals, got {out!r}.")
        return [one(a) for a in out]
    return one(out)


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr, *args: Any) -> Any:
    """`jaxpr_as_fun(closed)(*args)` evaluates the jaxpr; with args, evaluates it at once."""
    def fun(*xs):
        return eval_jaxpr_bind(closed_jaxpr.jaxpr, closed_jaxpr.consts, *xs)
    return fun(*args) if args else fun


def new_jaxpr_eqn(invars: list, outvars: list, primitive: _primitive.Primitive, params: dict,
                  effects: Any = no_effects, source_info: SourceInfo | None = None,
                  ctx: Any = None) -> Eqn:
    """An equation `outvars = primitive[params] invars` (tracejit's equations carry no
    effects: those of user primitives are refused when their abstract eval declares any)."""
    if effects:
        raise NotImplementedError("tracejit's jaxpr equations carry no effects")
    return Eqn(primitive, invars, outvars, params, source_info)


def valid_jaxtype(x: Any) -> bool:
    """Whether x is a value JAX can trace (an array or a numeric scalar)."""
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def concrete_or_error(force: Callable | None, val: Any, context: str = "") -> Any:
    """force(val) for a concrete val (or a tracer that knows its value); otherwise a
    ConcretizationTypeError naming `context`."""
    force = force if force is not None else (lambda x: x)
    if isinstance(val, Tracer):
        concrete = val.to_concrete_value()
        if concrete is None:
            raise concretization_error(val, context)
        return force(concrete)
    return force(val)


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Type-check a jaxpr; raises JaxprTypeError naming the ill-typed equation."""
    _check_jaxpr(jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr)


def find_top_trace(xs: Sequence[Any]) -> Trace:
    """The innermost trace among those of `xs` and the one staging ambient operations."""
    return _find_top_trace(list(xs))


class OpaqueTraceState:
    """What `get_opaque_trace_state` returns: equal to another only under the same trace."""
    __slots__ = ("_main",)

    def __init__(self, main: Any):
        self._main = main

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueTraceState) and self._main is other._main

    def __hash__(self) -> int:
        return id(self._main)

    def __repr__(self) -> str:
        return f"OpaqueTraceState({self._main!r})"


def get_opaque_trace_state(convention: Any = None) -> OpaqueTraceState:
    """A token of the innermost active transformation (libraries compare them to tell whether
    an object was made under the trace now running)."""
    del convention
    return OpaqueTraceState(_state.trace_stack[-1])


def mapped_aval(size: int, axis: int | None, aval: AbstractValue) -> AbstractValue:
    """aval without its mapped axis `axis` (of length `size`); unchanged for axis None."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval} has size {aval.shape[axis]}, "
                         f"not {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: AbstractValue,
                  explicit_mesh_axis: Any = None) -> AbstractValue:
    """aval with a new axis of length `size` at `axis`; unchanged for axis None."""
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> np.dtype:
    """float0 for integer and boolean primals, the primal's dtype otherwise."""
    dtype = dtypes.np_dtype(primal_dtype)
    return dtype if dtypes.is_inexact(dtype) else dtypes.float0


def jaxprs_in_params(params: dict) -> Iterator[Jaxpr]:
    """The jaxprs held by an equation's params (closed ones yield their jaxpr)."""
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, Jaxpr):
                yield v
            elif isinstance(v, ClosedJaxpr):
                yield v.jaxpr


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
    """The jaxprs in the params of jaxpr's equations (not recursively)."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


from . import primitives  # noqa: E402,F401  (jax.extend.core.primitives; needs Primitive above)
