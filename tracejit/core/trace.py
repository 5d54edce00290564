"""Tracing: the trace stack, `bind`, the eager (eval) interpreter and staging into a Jaxpr.

Operations on values call `bind(prim, ...)`, which hands them to the innermost active trace:
EvalTrace runs the primitive's NumPy impl at once; DynamicJaxprTrace records an equation.
Later transforms (JVP, batching) add their own Trace/Tracer pairs on the same stack.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes, errors, interpret
from .array import Array, BaseArray
from .avals import ArrayMetadata, ShapedArray, ShapeDtypeStruct
from .config import config
from .traceback_util import include_filename
from .jaxpr import (ClosedJaxpr, Eqn, Jaxpr, Literal, SourceInfo, Var, check_jaxpr,
                    runs_jaxpr)
from .sharding import (context_sharding, explicit_type_sharding, keeps_short_spec,
                       mesh_context, typed_out_sharding)

_SKIP_DIRS = (os.path.dirname(contextlib.__file__) + os.sep + "contextlib",
              os.path.dirname(contextlib.__file__) + os.sep + "functools")


def user_source_info() -> SourceInfo | None:
    """The innermost stack frame that belongs to user code (outside the tracejit package and
    the paths libraries registered with traceback_util.register_exclusion); while a jaxpr's
    equation is being re-bound (`rebinding_source`), that equation's source."""
    if _state.source is not None:
        return _state.source
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        fn = code.co_filename
        if not fn.startswith(_SKIP_DIRS) and include_filename(fn):
            return SourceInfo(fn, f.f_lineno, code.co_name, code, f.f_lasti)
        f = f.f_back
    return None


def rebinding_source(source: SourceInfo | None) -> SourceInfo | None:
    """Make `source` the source of what is staged until the next call (None: the user's stack
    again); returns the previous one. Re-binding a jaxpr's equations (transformations) keeps
    their user source lines this way, as JAX does."""
    prev, _state.source = _state.source, source
    return prev


# --- values --------------------------------------------------------------------------------

def get_aval(x: Any) -> ShapedArray:
    if isinstance(x, (Array, Tracer)):
        return x.aval
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        dtype, weak = dtypes.dtype_and_weak(x)
        if isinstance(x, int) and not isinstance(x, bool):
            _check_int_range(x, dtype)
        return ShapedArray((), dtype, weak)
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype == object or not dtypes.is_supported(x.dtype):
            raise TypeError(f"Value {x!r} with dtype {x.dtype} is not a valid JAX array type. "
                            "Only arrays of numeric and bool types are supported.")
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    if hasattr(x, "__jax_array__"):
        return get_aval(x.__jax_array__())
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid JAX type: "
                    "arguments and results of traced functions must be arrays, numeric scalars "
                    "or pytrees of them (mark other arguments static with static_argnames).")


def _check_int_range(x: int, dtype: np.dtype) -> None:
    info = np.iinfo(dtype)
    if not (info.min <= x <= info.max):
        # JAX's rule: an out-of-range Python int is an error, not a silent wrap.
        if dtype == np.int32 and -(2**63) <= x < 2**64:
            hint = " (enable 64-bit types with config.update('jax_enable_x64', True))"
        else:
            hint = ""
        raise OverflowError(f"Python int {x} too large to convert to {dtype.name}{hint}")


def to_numpy(x: Any, aval: ShapedArray | None = None) -> np.ndarray:
    """The NumPy value of a concrete operand, converted to its (canonical) aval dtype."""
    if isinstance(x, Array):
        return x._data  # raises on a deleted (donated) Array
    aval = aval or get_aval(x)
    return np.asarray(x, dtype=aval.dtype)


def is_concrete(x: Any) -> bool:
    return not isinstance(x, Tracer) or x.to_concrete_value() is not None


def concrete_value(x: Any, context: str = ""):
    """The concrete NumPy value of x, or a ConcretizationTypeError that explains why not."""
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise errors.concretization_error(x, context)
        return v
    return to_numpy(x)


# --- the trace stack -----------------------------------------------------------------------

class MainTrace:
    __slots__ = ("level", "trace_type", "global_data", "active")

    def __init__(self, level: int, trace_type: type, global_data: Any):
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.active = True

    def __repr__(self) -> str:
        return f"MainTrace({self.level},{self.trace_type.__name__})"


class Trace:
    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, val):
        raise NotImplementedError

    def lift(self, val):
        raise NotImplementedError

    def process_primitive(self, primitive, tracers, params):
        raise NotImplementedError


# The shardings JAX reports for an eager primitive's results when an operand is laid out over
# a mesh, or a mesh is in effect (jax.set_mesh) and its body may hold sharding constraints:
# (primitive, params, avals in, avals out, the operands' shardings) -> one sharding or None per
# result. Installed by runtime/sharded.py (its rules sit in the compiler, above this layer).
eager_shardings: Callable | None = None
_MESHES = mesh_context()  # (per thread; `.placing`: the mesh set_mesh put in effect)


class EvalTrace(Trace):
    """Eager evaluation: run the primitive's NumPy impl, wrap results as Arrays (laid out as
    JAX lays out an eager op's results where an operand is laid out over a mesh or a mesh is
    in effect)."""

    def pure(self, val):
        return val

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        if config.read("jax_no_execution"):  # (JAX runs each eager operation as jit(op))
            raise errors.no_execution_error(f"jit({primitive.name})")
        avals_in = [get_aval(x) for x in tracers]
        avals_out = primitive.abstract_eval(*avals_in, **params)
        errors.check_fits([a.size * a.dtype.itemsize for a in avals_out
                           if hasattr(a, "dtype") and a.shape])
        vals = [to_numpy(x, a) for x, a in zip(tracers, avals_in)]
        outs = primitive.impl(*vals, **params)
        if not primitive.multiple_results:
            outs = (outs,)
        result = [Array.from_numpy(_checked(primitive, o, a), a) for o, a in zip(outs, avals_out)]
        laid = [x._sharding if type(x) is Array else None for x in tracers]
        placing = _MESHES.placing is not None
        if any(s is not None for s in laid) or (placing and params and runs_jaxpr(params)):
            if eager_shardings is not None:  # (a body may hold sharding constraints)
                for r, s in zip(result, eager_shardings(primitive, params, avals_in,
                                                        avals_out, laid)):
                    r._sharding = s
        elif placing:  # under jax.set_mesh: replicated over its mesh (P() or P(None, None))
            short = keeps_short_spec(primitive, avals_in, avals_out)
            for r in result:
                r._sharding = context_sharding(None if short else r.aval.ndim)
        nans, infs = config.read("jax_debug_nans"), config.read("jax_debug_infs")
        if nans or infs:
            kind = interpret.invalid_values(outs, nans, infs)
            if kind is not None:
                raise interpret.invalid_value_error(kind, primitive.name, user_source_info())
        return result if primitive.multiple_results else result[0]


def _checked(primitive, out: Any, aval: ShapedArray) -> np.ndarray:
    out = np.asarray(out)
    if out.shape != aval.shape:  # an impl rule disagreeing with its abstract eval is our bug
        raise AssertionError(f"internal error: impl of {primitive.name} returned shape "
                             f"{out.shape}, its abstract eval says {aval.shape}")
    return out


class _TraceState(threading.local):
    """Each thread's tracing state: its trace stack (EvalTrace at the bottom) and the innermost
    staging trace. Per thread, so a jitted call in one thread never joins another's trace."""

    def __init__(self) -> None:
        self.trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
        self.dynamic_trace: MainTrace | None = None
        self.source: SourceInfo | None = None  # see rebinding_source


_state = _TraceState()


@contextlib.contextmanager
def new_main(trace_type: type, global_data: Any = None, dynamic: bool = False):
    state = _state
    stack = state.trace_stack
    main = MainTrace(len(stack), trace_type, global_data)
    stack.append(main)
    prev_dynamic = state.dynamic_trace
    if dynamic:
        state.dynamic_trace = main
    try:
        yield main
    finally:
        state.dynamic_trace = prev_dynamic
        stack.pop()
        main.active = False


def check_no_leaks(main: MainTrace, owners: Sequence[Any] = ()) -> None:
    """jax_check_tracer_leaks: once `main`'s trace has finished (and its caller dropped its own
    references), any of its tracers still referenced from elsewhere escaped it, through a side
    effect: JAX's "Leaked trace" Exception, naming each and what refers to it. `owners`: the
    trace's own containers (its builder's), whose references do not count."""
    gc.collect()
    skip = {id(o) for o in owners}
    traces = [r for r in gc.get_referrers(main) if isinstance(r, Trace)]
    leaked = [t for tr in traces for t in gc.get_referrers(tr)
              if isinstance(t, Tracer) and t._trace.main is main]
    skip.add(id(leaked))
    found = []
    for t in leaked:
        holders = [r for r in gc.get_referrers(t)
                   if id(r) not in skip and r is not leaked and not inspect.isframe(r)]
        if holders:
            found.append(f"{t!r}\n{t._leak_msg()}\n<{type(t).__name__} {id(t)}> is referred to "
                         f"by {_describe_holder(holders[0], t)}")
    del leaked
    if found:
        raise Exception(f"Leaked trace {main.trace_type.__name__}. Leaked tracer(s):\n\n"
                        + "\n\n".join(found))


def _describe_holder(holder: Any, value: Any) -> str:
    """JAX's words for what holds a leaked tracer: `module.name` for a module's global,
    `<list id>[i]` for a list's item, else the holder's type and id."""
    if isinstance(holder, dict):
        for module in list(sys.modules.values()):
            if getattr(module, "__dict__", None) is holder:
                name = next((k for k, v in holder.items() if v is value), "?")
                return f"{module.__name__}.{name}"
    if isinstance(holder, list):
        i = next((i for i, v in enumerate(holder) if v is value), "?")
        return f"<list {id(holder)}>[{i}]"
    return f"<{type(holder).__name__} {id(holder)}>"


@contextlib.contextmanager
def ensure_compile_time_eval():
    """JAX's `ensure_compile_time_eval`: inside it, operations on concrete values run at once
    (their results are concrete Arrays) even while a function is being staged by jit; values
    that depend on the staged function's arguments are staged as usual."""
    state = _state
    saved, state.dynamic_trace = state.dynamic_trace, None
    try:
        yield
    finally:
        state.dynamic_trace = saved


# type of value -> function giving its abstract value, for types typeof knows beyond arrays and
# scalars (typed PRNG keys, high-level types registered through jax.experimental.hijax)
pytype_aval_mappings: dict[type, Callable[[Any], Any]] = {}


def typeof(x: Any) -> ShapedArray:
    """JAX's `typeof`: the abstract value (shape, dtype, weak type) of an array or scalar
    (of a Ref: its AbstractRef)."""
    if getattr(type(x), "_is_ref", False):
        return x.aval
    handler = pytype_aval_mappings.get(type(x))
    if handler is not None:
        return handler(x)
    if isinstance(x, Tracer):
        return x.typed_aval()
    if type(x) is ShapeDtypeStruct:  # (its dtype canonical, as JAX types it)
        return x.aval
    if type(x) is Array and x._sharding is not None:
        typed = explicit_type_sharding(x._sharding, x.aval.ndim)
        if typed is not None:  # (JAX's types carry a layout over Explicit axes)
            aval = x.aval
            return ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding=typed)
    return get_aval(x)


@contextlib.contextmanager
def named_scope(name: str):
    """JAX's `named_scope`: names the operations staged inside it for profilers; tracejit's
    jaxprs carry no name stack, so it checks its argument and otherwise changes nothing."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """JAX's `named_call`: `fun` with its operations staged under `name` (default: fun's name)
    for profilers; as with named_scope, tracejit's jaxprs carry no name stack."""
    scope = name if name is not None else getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)
    return named


def trace_state_clean() -> bool:
    """Whether no transformation is active in this thread: nothing is being staged and no
    jvp/vmap trace is on the stack (JAX's internal `jax._src.core.trace_state_clean`, which
    numpyro asks before caching functions)."""
    return _state.dynamic_trace is None and len(_state.trace_stack) == 1


def current_dynamic_trace() -> MainTrace | None:
    """This thread's innermost staging trace, None when nothing is being staged."""
    return _state.dynamic_trace


_CONVERSION_HINT = ("The problem arose with the `{fn}` function. If trying to convert the data "
                    "type of a value, try using `x.astype({fn})` or `jnp.array(x, {fn})` "
                    "instead.")


class Tracer(ArrayMetadata):
    """A value seen by a trace. Operators come from the numpy layer (see array_methods)."""
    __slots__ = ("_trace",)
    __array_priority__ = 1000
    _is_tracer = True

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    def typed_aval(self) -> ShapedArray:
        """`typeof` of this value: its aval, with the layout over Explicit mesh axes JAX's
        type shows where this trace knows it (a JVP tracer: its primal's)."""
        return self.aval

    def to_concrete_value(self):
        """The concrete value, if this trace knows it (e.g. a JVP primal); None while staging."""
        return None

    def full_lower(self):
        return self

    def _short_repr(self) -> str:
        shape = ",".join(map(str, self.aval.shape))
        return f"traced array with shape {self.aval.dtype.name}[{shape}]"

    def _origin_msg(self) -> str:
        return ""

    def _leak_msg(self) -> str:
        return ""

    def _concrete_or_raise(self, error_factory):
        v = self.to_concrete_value()
        if v is None:
            raise error_factory(self)
        return v

    def __bool__(self):
        return bool(self._concrete_or_raise(errors.bool_conversion_error))

    def __int__(self):
        return int(self._concrete_or_raise(lambda t: errors.concretization_error(
            t, _CONVERSION_HINT.format(fn="int"))))

    def __index__(self):
        v = self._concrete_or_raise(errors.integer_conversion_error)
        if not dtypes.is_int(np.asarray(v).dtype):
            raise TypeError(f"only integer scalar arrays can be converted to a scalar index, "
                            f"got {self.aval.str_short()}")
        return int(v)

    def __float__(self):
        return float(self._concrete_or_raise(lambda t: errors.concretization_error(
            t, _CONVERSION_HINT.format(fn="float"))))

    def __complex__(self):
        return complex(self._concrete_or_raise(lambda t: errors.concretization_error(
            t, _CONVERSION_HINT.format(fn="complex"))))

    def __array__(self, dtype=None, copy=None):
        v = self._concrete_or_raise(errors.array_conversion_error)
        return np.asarray(v, dtype=dtype)

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} ({self._short_repr()}). "
                        "Static arguments of jit must be hashable Python values, not arrays.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.aval.str_short()}>"

    def __setitem__(self, idx, value):
        raise TypeError("JAX arrays are immutable: use x = x.at[idx].set(value) instead of "
                        "x[idx] = value.")


BaseArray.register(Tracer)  # tracers are `jax.Array`s too


def _check_active(x: Tracer, where: str) -> None:
    if not x._trace.main.active:
        raise errors.leaked_tracer_error(x, where)


def find_top_trace(xs: Sequence[Any]) -> Trace:
    state = _state
    stack = state.trace_stack
    top = stack[0]
    for x in xs:
        if isinstance(x, Tracer):
            main = x._trace.main
            if not main.active:
                raise errors.leaked_tracer_error(
                    x, "The tracer was used after the transformation that created it finished.")
            if main.level >= len(stack) or stack[main.level] is not main:
                raise errors.leaked_tracer_error(
                    x, "The tracer belongs to a transformation running in another thread.")
            if main.level > top.level:
                top = main
    dynamic = state.dynamic_trace
    if dynamic is not None and dynamic.level > top.level:
        top = dynamic
    return top.trace_type(top)


def full_raise(trace: Trace, val: Any):
    if not isinstance(val, Tracer):
        return trace.pure(val)
    _check_active(val, "The tracer was used after the transformation that created it finished.")
    level = trace.main.level
    if val._trace.main is trace.main:
        return val
    if val._trace.main.level < level:
        return trace.lift(val)
    raise errors.leaked_tracer_error(
        val, "A tracer from one transformation was used inside another, unrelated one "
             "(it escaped through a side effect).")


def full_lower(val: Any):
    return val.full_lower() if isinstance(val, Tracer) else val


# Set by lax/parallel.py: under shard_map's check_vma=True, the operands of a primitive that
# vary over different manual axes are first made to vary over all of them (JAX's implicit
# pvary), so that transposition sees the pvary (its transpose sums over the axis).
insert_pvary: Callable | None = None


def bind(primitive, *args, **params):
    if insert_pvary is not None and len(args) > 1:
        args = insert_pvary(primitive, args, params)
    trace = find_top_trace(args)
    tracers = [full_raise(trace, a) for a in args]
    outs = trace.process_primitive(primitive, tracers, params)
    if primitive.multiple_results:
        return [full_lower(o) for o in outs]
    return full_lower(outs)


# --- staging: DynamicJaxprTrace records equations ------------------------------------------

class DebugInfo:
    """What is being traced, for error messages: the function, its argument names, and why."""
    __slots__ = ("fun_name", "fun_source", "arg_names", "traced_for", "static_hint")

    def __init__(self, fun_name: str, fun_source: str, arg_names: Sequence[str],
                 traced_for: str = "jit", static_hint: Callable[[list[str]], str] | None = None):
        self.fun_name = fun_name
        self.fun_source = fun_source
        self.arg_names = list(arg_names)
        self.traced_for = traced_for
        self.static_hint = static_hint


def fun_debug_info(fun: Callable, arg_names: Sequence[str], traced_for: str,
                   static_hint=None) -> DebugInfo:
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(getattr(fun, "__wrapped__", fun), "__code__", None)
    source = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "<unknown>"
    return DebugInfo(name, source, arg_names, traced_for, static_hint)


class DynamicJaxprTracer(Tracer):
    """A value being staged: its aval and the Var (or Literal) that names it in the jaxpr."""
    __slots__ = ("_aval", "_source", "_var")

    def __init__(self, trace: Trace, aval: ShapedArray, var: Var | Literal,
                 source: SourceInfo | None = None):
        self._trace = trace
        self._aval = aval
        self._var = var
        self._source = source

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def __repr__(self) -> str:  # JAX's name for a tracer of a staging (jit) trace
        return f"JitTracer({self._aval.str_long()})"

    def _origin_msg(self) -> str:
        builder: JaxprBuilder = self._trace.main.global_data
        return builder.origin_msg(self)

    def _leak_msg(self) -> str:
        d: DebugInfo | None = self._trace.main.global_data.debug
        msg = ""
        if d is not None:
            msg = (f"The function being traced when the value leaked was {d.fun_name} at "
                   f"{d.fun_source} traced for {d.traced_for}.")
        if self._source is not None:
            msg += f" The leaked value was created at {self._source.filename}:" \
                   f"{self._source.lineno} ({self._source.function})."
        return msg


class JaxprBuilder:
    """The equations staged by one DynamicJaxprTrace. Each tracer carries its own Var; only
    consts are looked up by identity (`id(val)`), and the map holds the value it is keyed by
    (an id is unique only while its object lives)."""

    def __init__(self, debug: DebugInfo | None):
        self.debug = debug
        self.eqns: list[Eqn] = []
        self.const_tracers: dict[int, tuple[Any, DynamicJaxprTracer]] = {}  # id(val) -> both
        self.constvar_to_val: dict[Var, Any] = {}
        self.arg_tracers: list[DynamicJaxprTracer] = []

    def new_tracer(self, trace: Trace, aval: ShapedArray, source=None) -> DynamicJaxprTracer:
        return DynamicJaxprTracer(trace, aval, Var(aval), source)

    def new_arg(self, trace: Trace, aval: ShapedArray) -> DynamicJaxprTracer:
        t = self.new_tracer(trace, aval)
        self.arg_tracers.append(t)
        return t

    @staticmethod
    def getvar(t: DynamicJaxprTracer) -> Var | Literal:
        return t._var

    def new_const(self, trace: Trace, val: Any) -> DynamicJaxprTracer:
        hit = self.const_tracers.get(id(val))
        if hit is not None:
            return hit[1]
        aval = get_aval(val)
        if aval.shape == () and not isinstance(val, Tracer):
            t = DynamicJaxprTracer(trace, aval, Literal(to_numpy(val, aval), aval))
        else:
            t = self.new_tracer(trace, aval)
            self.constvar_to_val[t._var] = val
        self.const_tracers[id(val)] = (val, t)
        return t

    def add_eqn(self, eqn: Eqn) -> None:
        self.eqns.append(eqn)

    def build(self, in_tracers: Sequence[Tracer], out_tracers: Sequence[Tracer]) -> ClosedJaxpr:
        invars = [self.getvar(t) for t in in_tracers]
        outvars = [self.getvar(t) for t in out_tracers]
        used = _used_vars(self.eqns, outvars)
        consts = [(var, val) for var, val in self.constvar_to_val.items() if var in used]
        jaxpr = Jaxpr([v for v, _ in consts], invars, outvars, self.eqns, self.debug)
        return ClosedJaxpr(jaxpr, [val for _, val in consts])

    # -- error messages: which arguments does a value depend on?
    def progenitor_args(self, tracer: DynamicJaxprTracer) -> list[int]:
        arg_index = {t._var: i for i, t in enumerate(self.arg_tracers)}
        producers = {v: e for e in self.eqns for v in e.outvars}
        found, seen, stack = set(), set(), [tracer._var]
        while stack:
            v = stack.pop()
            if isinstance(v, Literal) or v in seen:
                continue
            seen.add(v)
            if v in arg_index:
                found.add(arg_index[v])
            eqn = producers.get(v)
            if eqn is not None:
                stack.extend(eqn.invars)
        return sorted(found)

    def origin_msg(self, tracer: Tracer) -> str:
        d = self.debug
        if d is None:
            return ""
        msg = f"The error occurred while tracing the function {d.fun_name} at {d.fun_source} " \
              f"for {d.traced_for}."
        where = user_source_info()
        if where is not None:
            msg += f" The failing operation is at {where.filename}:{where.lineno}."
        idx = self.progenitor_args(tracer)
        names = [d.arg_names[i] for i in idx if i < len(d.arg_names)]
        if names:
            top = sorted({n.split("[")[0].split(".")[0] for n in names})
            if len(names) == 1:
                msg += (" This concrete value was not available in Python because it depends on "
                        f"the value of the argument {names[0]}.")
            else:
                msg += (" This concrete value was not available in Python because it depends on "
                        f"the values of the arguments {', '.join(names)}.")
            if d.static_hint is not None:
                msg += "\n" + d.static_hint(top)
        elif not idx:
            msg += (" This value is an intermediate result of the traced computation (it does "
                    "not depend on any argument directly).")
        return msg


def _used_vars(eqns: list[Eqn], outvars: list) -> set:
    used = {v for e in eqns for v in e.invars}
    used.update(outvars)
    return used


class DynamicJaxprTrace(Trace):
    @property
    def builder(self) -> JaxprBuilder:
        return self.main.global_data

    def new_arg(self, aval: ShapedArray) -> DynamicJaxprTracer:
        return self.builder.new_arg(self, aval)

    def pure(self, val):
        return self.builder.new_const(self, val)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        builder = self.builder
        avals_in = [t.aval for t in tracers]
        avals_out = primitive.abstract_eval(*avals_in, **params)
        if any(getattr(a, "_sharding", None) is not None for a in avals_in):
            avals_out = _typed_outputs(primitive, params, avals_in, avals_out)
        source = user_source_info()
        outs = [builder.new_tracer(self, a, source) for a in avals_out]
        builder.add_eqn(Eqn(primitive, [builder.getvar(t) for t in tracers],
                            [builder.getvar(t) for t in outs], params, source))
        return outs if primitive.multiple_results else outs[0]


def _typed_outputs(primitive, params, avals_in, avals_out):
    """`avals_out` with the layouts over Explicit mesh axes JAX's types show, derived from
    the operands' (core/sharding.py `typed_out_sharding`: only `typeof` reads them)."""
    out = []
    for a in avals_out:
        s = typed_out_sharding(primitive, params, avals_in, a) if type(a) is ShapedArray \
            else None
        out.append(a if s is None else
                   ShapedArray(a.shape, a.dtype, a.weak_type, sharding=s, vma=a.vma))
    return out


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                   debug: DebugInfo | None = None) -> ClosedJaxpr:
    """Stage `fun` (flat args -> flat list of outputs) into a ClosedJaxpr.

    Consts of the result may be tracers of an enclosing trace (closures inside control flow).
    """
    builder = JaxprBuilder(debug)
    with new_main(DynamicJaxprTrace, builder, dynamic=True) as main:
        trace = DynamicJaxprTrace(main)
        in_tracers = [trace.new_arg(a) for a in in_avals]
        outs = fun(*in_tracers)
        out_tracers = [full_raise(trace, _check_output(o, debug)) for o in outs]
        closed = builder.build(in_tracers, out_tracers)
    if config.jax_check_tracer_leaks:
        del trace, in_tracers, outs, out_tracers  # (what is left referenced has leaked)
        check_no_leaks(main, (builder.arg_tracers, builder.const_tracers,
                              *builder.const_tracers.values()))
    if config.jax_enable_checks:
        check_jaxpr(closed.jaxpr)
    return closed


def _check_output(x: Any, debug: DebugInfo | None):
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)):
        return x
    what = f" of {debug.fun_name}" if debug else ""
    raise TypeError(f"Value {x!r} of type {type(x).__name__} returned{what} is not a valid JAX "
                    "type: functions traced by JAX must return arrays, numeric scalars or "
                    "pytrees of them.")
