"""jax.export's Exported: a jitted function's traced program with its calling convention (the
argument and result trees and types), called natively through jit, differentiated through its
exported VJP as JAX does, and (serialization.py) turned into bytes and back.

What JAX keeps as StableHLO is here tracejit's jaxpr: `mlir_module()` prints it and
`mlir_module_serialized` is its encoding in tracejit's format. Shape polymorphism is refused
(shape_poly.py): tracejit's abstract values hold integer dimensions only."""
from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, map_subjaxprs
from ..core.jaxpr_util import eval_closed
from ..core.pytree import (
    PyTreeDef,
    _registry,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from ..core.trace import get_aval, trace_to_jaxpr
from ..lax.call import pjit_p
from ..lax.control_flow.common import _key_str, _structure_diffs
from ..lax.elementwise import convert_element_type
from ..runtime.jit import Jitted, jit, without_unused_args
from ..transforms.api import vjp as _vjp
from ..transforms.custom import custom_vjp

# JAX's range (the version numbers its docs give for the calling convention); tracejit's own
# format has a version of its own (serialization.py FORMAT_VERSION)
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10

# primitives that call back into Python: JAX refuses to export them, and so does tracejit (a
# Python function is no part of a serialized program)
_HOST_CALLBACKS = frozenset({"debug_callback", "debug_print", "pure_callback", "io_callback"})
# primitives whose custom differentiation rules are Python functions: exported as their primal
# body (the exported VJP is traced from the program with the rules, as JAX's is)
_PRIMAL_BODY = {"custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
                "checkpoint": "jaxpr"}


class DisabledSafetyCheck:
    """A safety check that should be skipped on (de)serialization (JAX's class). `platform()`
    lets an Exported made for other platforms be called on the CPU; `custom_call(name)` is
    accepted and recorded (tracejit's programs have no custom calls)."""
    _impl: str

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return DisabledSafetyCheck("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return DisabledSafetyCheck(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __init__(self, _impl: str):
        self._impl = _impl

    def __str__(self) -> str:
        return self._impl
    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)


@dataclasses.dataclass(frozen=True)
class Exported:
    """A jitted function traced for one signature (JAX's attributes). `_closed` is the program
    with custom differentiation rules replaced by their primal bodies; `_get_vjp(self)` gives
    the exported VJP (None: none, as after deserializing with vjp_order=0)."""
    fun_name: str
    in_tree: PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings_hlo: tuple[None, ...]
    out_shardings_hlo: tuple[None, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple
    unordered_effects: tuple
    disabled_safety_checks: Sequence[DisabledSafetyCheck]
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    _get_vjp: Callable[[Exported], Exported] | None
    _closed: ClosedJaxpr = dataclasses.field(repr=False, compare=False)
    # (the jitted call and the VJP, made once; not an argument: `dataclasses.replace` makes
    # a copy with a cache of its own)
    _cache: dict = dataclasses.field(default_factory=dict, init=False, repr=False,
                                     compare=False)

    @property
    def mlir_module_serialized(self) -> bytes:
        """The program in tracejit's serialized form (JAX's field holds StableHLO bytecode)."""
        from .serialization import encode_program
        return encode_program(self._closed)

    def mlir_module(self, serialized: bool = True) -> str:
        """The exported program as text: tracejit's jaxpr (where JAX prints StableHLO), under
        a line giving its entry point `@main`'s types, as JAX's text opens with one."""
        ins = ", ".join(a.str_short() for a in self._closed.in_avals)
        outs = ", ".join(a.str_short() for a in self._closed.out_avals)
        return (f"module @jit_{self.fun_name} (tracejit jaxpr, not StableHLO)\n"
                f"  @main({ins}) -> ({outs})\n{self._closed}")

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def in_shardings_jax(self, mesh: Any) -> tuple[None, ...]:
        """No sharding was specified (tracejit exports single-device programs): None each."""
        return tuple(None for _ in self.in_avals)

    def out_shardings_jax(self, mesh: Any) -> tuple[None, ...]:
        return tuple(None for _ in self.out_avals)

    def has_vjp(self) -> bool:
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP: flat primal arguments, then a cotangent per primal output, ->
        the cotangents of the flat primal arguments."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        if "vjp" not in self._cache:
            self._cache["vjp"] = self._get_vjp(self)
        return self._cache["vjp"]

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """Bytes in tracejit's versioned format with the VJPs up to `vjp_order` (1 lets the
        deserialized function be differentiated once, 2 twice, ...)."""
        from .serialization import serialize
        return serialize(self, vjp_order=vjp_order)

    def call(self, *args, **kwargs):
        """Call the exported function (under jit, grad and vmap too) with arguments of its
        exported pytree structure, shapes and dtypes."""
        return _call(self, args, kwargs)


def deserialize(blob: bytes | bytearray) -> Exported:
    """An Exported from `Exported.serialize()`'s bytes. Refuses malformed or foreign data (a
    JAX-made blob among them) with a ValueError naming the cause; no code in the blob runs."""
    from .serialization import deserialize as _deserialize
    return _deserialize(blob)


# --- pytree node serialization (JAX's registries) -------------------------------------------

serialization_registry: dict[type, tuple[str, Callable]] = {}
deserialization_registry: dict[str, tuple[type, Callable, Callable]] = {}


def _is_namedtuple(nodetype: type) -> bool:
    return (issubclass(nodetype, tuple) and hasattr(nodetype, "_fields") and
            isinstance(nodetype._fields, Sequence) and
            all(isinstance(f, str) for f in nodetype._fields))


def register_pytree_node_serialization(nodetype: type, *, serialized_name: str,
                                       serialize_auxdata: Callable, deserialize_auxdata: Callable,
                                       from_children: Callable | None = None) -> type:
    """Register how a custom pytree node of `in_tree`/`out_tree` is serialized (JAX's API)."""
    if nodetype in serialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for type `{nodetype}`. "
            "Previous registration was with serialized_name "
            f"`{serialization_registry[nodetype][0]}`.")
    if serialized_name in deserialization_registry:
        raise ValueError(
            "Duplicate serialization registration for "
            f"serialized_name `{serialized_name}`. "
            "Previous registration was for type "
            f"`{deserialization_registry[serialized_name][0]}`.")
    if from_children is None:
        if nodetype not in _registry:
            raise ValueError(
                f"If `from_children` is not present, you must call first"
                f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
        from_children = _registry[nodetype].from_iter
    serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Register a namedtuple for serialization; its field names are stored with it."""
    if not _is_namedtuple(nodetype):
        raise ValueError("Use `jax.export.register_pytree_node_serialization` for "
                         "types other than `collections.namedtuple`.")

    def from_children(aux_data, children):
        assert len(aux_data) == len(children)
        return nodetype(**dict(zip(aux_data, children)))

    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name,
        serialize_auxdata=lambda _: json.dumps(nodetype._fields).encode("utf-8"),
        deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
        from_children=from_children)


def _serialize_ordereddict_keys(keys):
    if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
        return json.dumps(list(keys)).encode("utf-8")
    raise NotImplementedError(
        "Serialization of collections.OrderedDict is supported only when the "
        f"keys are strings. Found keys: {keys}.")


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict",
    serialize_auxdata=_serialize_ordereddict_keys,
    deserialize_auxdata=lambda b: tuple(json.loads(b.decode("utf-8"))))


def _register_key_arrays() -> None:
    """Typed PRNG keys are pytree nodes over their uint32 data here (JAX's are leaves of a key
    dtype): registered so that functions of typed keys serialize."""
    from ..prng import PRNGS, PRNGKeyArray
    register_pytree_node_serialization(  # (the node's aux data: the keys' implementation)
        PRNGKeyArray, serialized_name="tracejit.PRNGKeyArray",
        serialize_auxdata=lambda impl: impl.name.encode("utf-8"),
        deserialize_auxdata=lambda b: _key_impl(PRNGS, b))


def _key_impl(prngs: dict, name: bytes):
    impl = prngs.get(name.decode("utf-8", "replace"))
    if impl is None:
        raise ValueError(f"The serialized key array names an unknown PRNG implementation "
                         f"{name!r}: this tracejit knows {sorted(prngs)}.")
    return impl


_register_key_arrays()


# --- export -------------------------------------------------------------------------------

# our modules of the functions that JAX defines with jit (jnp's ufuncs and linalg): export
# takes them as they are, as JAX's does
_JITTED_IN_JAX = frozenset({"tracejit.numpy._ufuncs", "tracejit.numpy.linalg"})


def default_export_platform() -> str:
    """The platform programs are exported for by default: tracejit runs on the CPU."""
    return "cpu"


def export(fun_jit: Any, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """`export(jit(f))(*args_specs, **kwargs_specs)` -> Exported: f traced at the specs'
    shapes and dtypes (arrays, or `ShapeDtypeStruct`s; static arguments as jit takes them)."""
    if not isinstance(fun_jit, Jitted) and callable(fun_jit) and \
            getattr(fun_jit, "__module__", None) in _JITTED_IN_JAX:
        fun_jit = jit(fun_jit)  # (JAX's `export(jnp.sin)`: its jnp.sin is a jitted function)
    if not isinstance(fun_jit, Jitted):
        raise ValueError(  # noqa: TRY004 (JAX's error)
            f"Function to be exported must be the result of `jit` but is: {fun_jit}")
    for s in tree_flatten((platforms,))[0]:
        if not isinstance(s, str):
            raise TypeError(f"platforms must be strings; got {s!r}")

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        from .shape_poly import check_no_symbolic
        check_no_symbolic((args_specs, kwargs_specs))
        if fun_jit.in_shardings is not None or fun_jit.out_shardings is not None:
            raise NotImplementedError(
                "export of a jit with in_shardings/out_shardings: tracejit exports "
                "single-device programs only")
        args_specs, kwargs_specs = tree_map(_as_spec, (args_specs, kwargs_specs))
        traced = fun_jit.trace(*args_specs, **kwargs_specs)
        entry = traced._entry
        if entry.laid_out is not None and any(s is not None for s in entry.laid_out):
            raise NotImplementedError(
                "export of arguments laid out over a mesh: tracejit exports single-device "
                "programs only")
        return exported_from_jaxpr(entry.closed, entry.in_tree, entry.out_tree,
                                   fun_jit.fun_name, platforms, disabled_checks)
    return do_export


def _as_spec(x: Any) -> Any:
    """A value with `.shape` and `.dtype` that is no array (another library's struct, JAX's
    ShapeDtypeStruct) as our ShapeDtypeStruct, as JAX's export takes any such value."""
    if isinstance(x, (Array, ShapeDtypeStruct, np.ndarray, np.generic)) or \
            not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    return ShapeDtypeStruct(tuple(x.shape), x.dtype,
                            weak_type=bool(getattr(x, "weak_type", False)))


def exported_from_jaxpr(closed: ClosedJaxpr, in_tree: PyTreeDef, out_tree: PyTreeDef,
                        fun_name: str, platforms: Sequence[str] | None,
                        disabled_checks: Sequence[DisabledSafetyCheck],
                        in_avals: Sequence[ShapedArray] | None = None,
                        out_avals: Sequence[ShapedArray] | None = None) -> Exported:
    """The Exported of a traced program (its VJP traced from `closed`, custom rules kept).
    `in_avals`/`out_avals`: the program's own types with float0 ones among them (default:
    the program's)."""
    _check_no_callbacks(closed)
    primal = primal_program(closed)
    _, kept = without_unused_args(primal)
    in_avals = tuple(closed.in_avals if in_avals is None else in_avals)
    out_avals = tuple(closed.out_avals if out_avals is None else out_avals)
    n_in = len(in_avals)
    if kept is not None:  # (indices among all arguments, float0 ones included)
        data = [i for i, a in enumerate(in_avals) if not _is_float0(a)]
        kept = [data[i] for i in kept]
    platforms = (default_export_platform(),) if platforms is None else tuple(platforms)
    checks = tuple(disabled_checks)

    def get_vjp(exp: Exported) -> Exported:
        return _export_vjp(closed, exp, platforms, checks)

    return Exported(
        fun_name=fun_name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, in_shardings_hlo=(None,) * n_in,
        out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=1, platforms=platforms, ordered_effects=(), unordered_effects=(),
        disabled_safety_checks=checks,
        calling_convention_version=maximum_supported_calling_convention_version,
        module_kept_var_idx=tuple(range(n_in)) if kept is None else tuple(kept),
        uses_global_constants=False, _get_vjp=get_vjp, _closed=primal)


def _export_vjp(closed: ClosedJaxpr, exp: Exported, platforms: tuple[str, ...],
                checks: tuple) -> Exported:
    """JAX's exported VJP: a function of (*flat primals, *flat output cotangents) returning
    the flat primals' cotangents (of dtype float0 for integer outputs and inputs: those are
    in its avals, not in its program, as float0 values hold no data and cannot be traced)."""
    n_in = len(exp.in_avals)

    avals = list(exp.in_avals) + [a.to_tangent_aval() for a in exp.out_avals]

    def fun_vjp_jax(*data):
        args_and_cts = with_float0(data, avals)
        primals, cts = args_and_cts[:n_in], args_and_cts[n_in:]
        _, pullback = _vjp(lambda *xs: eval_closed(closed, *xs), *primals)
        return [ct for ct in pullback(list(cts)) if not _is_float0(get_aval_or_float0(ct))]

    vjp_closed = trace_to_jaxpr(fun_vjp_jax, [a for a in avals if not _is_float0(a)])
    in_tree = tree_structure((tuple(range(len(avals))), {}))
    out_tree = tree_structure(tuple(range(n_in)))
    out_avals = [a.to_tangent_aval() for a in exp.in_avals]
    return exported_from_jaxpr(vjp_closed, in_tree, out_tree, "fun_vjp_jax", platforms, checks,
                               avals, out_avals)


def _walk_eqns(closed: ClosedJaxpr):
    """Every equation of `closed`, bodies of calls and loops included (iterative)."""
    stack = [closed.jaxpr]
    while stack:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
            yield eqn
            for value in eqn.params.values():
                for x in (value if isinstance(value, tuple) else (value,)):
                    if isinstance(x, ClosedJaxpr):
                        stack.append(x.jaxpr)
                    elif isinstance(x, Jaxpr):
                        stack.append(x)


def _check_no_callbacks(closed: ClosedJaxpr) -> None:
    for eqn in _walk_eqns(closed):
        if eqn.primitive.name in _HOST_CALLBACKS:
            raise NotImplementedError("serialization of host_callbacks is not yet implemented")


def primal_program(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with each custom_jvp/custom_vjp call (and checkpoint under a policy function)
    replaced by a call of its primal body: the rules are Python functions, and an exported
    program is differentiated through its exported VJP instead."""
    memo: dict = {}

    def rewrite(c: ClosedJaxpr) -> ClosedJaxpr:
        eqns, changed = [], False
        for eqn in c.jaxpr.eqns:
            new = map_subjaxprs(eqn, rewrite, memo)
            body = _PRIMAL_BODY.get(new.primitive.name)
            if body is not None and (new.primitive.name != "checkpoint" or
                                     callable(new.params.get("policy"))):
                new = Eqn(pjit_p, new.invars, new.outvars,
                          {"jaxpr": new.params[body],
                           "name": str(new.params.get("name", new.primitive.name))},
                          new.source_info)
            changed |= new is not eqn
            eqns.append(new)
        if not changed:
            return c
        j = c.jaxpr
        return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns, j.debug_info),
                           c.consts)
    return rewrite(closed)


# --- calling --------------------------------------------------------------------------------

def _leaf_path(in_tree: PyTreeDef, leaf: int) -> str:
    """JAX's name of a flat argument: 'args[0]', "kwargs['y']", 'args[1][2]'."""
    def paths(td: PyTreeDef, prefix: str):
        if td.node_type is None:
            yield prefix
            return
        for i, c in enumerate(td.children):
            yield from paths(c, prefix + _key_str(td, i))
    args_td, kwargs_td = in_tree.children
    names = list(paths(args_td, "args")) + list(paths(kwargs_td, "kwargs"))
    return names[leaf]


def _check_tree(exported: Exported, in_tree: PyTreeDef) -> None:
    if in_tree == exported.in_tree:
        return
    lines = []
    for got, want, top in zip(in_tree.children, exported.in_tree.children, ("args", "kwargs")):
        for path, thing1, thing2, why in _structure_diffs(got, want, "<class 'int'>", top):
            lines.append(f"   - {path} is a {thing1} in the invocation and a {thing2} when "
                         f"exported, so {why}.\n")
    raise ValueError(
        "The invocation args and kwargs must have the same pytree structure "
        f"as when the function '{exported.fun_name}' was exported, but they "
        "have the following structural differences:\n" + "\n".join(lines))


def _check_avals(exported: Exported, avals: Sequence[ShapedArray]) -> None:
    """JAX's checks of a call's argument types (the weak type is no part of them)."""
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        if want.shape == got.shape and want.dtype == got.dtype:
            continue
        name = _leaf_path(exported.in_tree, i)
        if len(want.shape) != len(got.shape):
            raise ValueError(f"Rank mismatch for {name}: expected {want.shape} "
                             f"and called with {got.shape}")
        if want.dtype != got.dtype:
            raise ValueError(f"Dtype mismatch for {name}: expected {want.dtype} "
                             f"and called with {got.dtype}")
        for d, (w, g) in enumerate(zip(want.shape, got.shape)):
            if w != g:
                raise ValueError(f"Shape mismatch for {name}.shape[{d}] (expected same "
                                 f"constant): expected {want.shape} and called with "
                                 f"{got.shape}")


def _check_platform(exported: Exported) -> None:
    if "cpu" not in exported.platforms and \
            DisabledSafetyCheck.platform() not in exported.disabled_safety_checks:
        raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                         f"'{exported.platforms}' but it is used on '('cpu',)'.")


def _flat_function(exported: Exported) -> Jitted:
    """The jitted flat call of an Exported (one per Exported): its program, run natively, with
    reverse mode through the exported VJP as in JAX (a custom_vjp over the program). Values of
    dtype float0 (an exported VJP's cotangents of integers) carry no data and are no arguments
    or results of the jitted function: made as zeros around it."""
    flat = exported._cache.get("flat")
    if flat is not None:
        return flat
    closed = exported._closed
    in_avals, out_avals = exported.in_avals, exported.out_avals
    n_in = len(in_avals)

    # (a result is weakly typed only where out_avals says so: JAX's deserialized avals have no
    # weak types, and its call's results follow them)
    strong = [not a.weak_type for a in out_avals if not _is_float0(a)]

    @custom_vjp
    def f_flat(*args_flat):
        outs = eval_closed(closed, *args_flat)
        return [convert_element_type(o, get_aval(o).dtype) if s and get_aval(o).weak_type
                else o for o, s in zip(outs, strong)]

    def f_flat_vjp_fwd(*args_flat):
        return f_flat(*args_flat), args_flat

    def f_flat_vjp_bwd(args_flat, ct_res_flat):
        exp_vjp = exported.vjp()
        cts = [np.zeros(a.shape, dtypes.float0) if a.dtype == dtypes.float0 else ct
               for ct, a in zip(with_float0(ct_res_flat, out_avals), exp_vjp.in_avals[n_in:])]
        in_cts = exp_vjp.call(*with_float0(args_flat, in_avals), *cts)
        # (integer and boolean arguments have no cotangent: None, as custom_vjp takes it)
        return tuple(None if ct_aval.dtype == dtypes.float0 else ct
                     for ct, ct_aval, a in zip(in_cts, exp_vjp.out_avals, in_avals)
                     if a.dtype != dtypes.float0)

    f_flat.defvjp(f_flat_vjp_fwd, f_flat_vjp_bwd)
    f_flat.__name__ = f"call_exported_{exported.fun_name}"
    flat = exported._cache["flat"] = jit(f_flat)
    return flat


def _is_float0(aval: ShapedArray) -> bool:
    return aval.dtype == dtypes.float0


def get_aval_or_float0(x: Any) -> ShapedArray:
    if isinstance(x, np.ndarray) and x.dtype == dtypes.float0:
        return ShapedArray(x.shape, dtypes.float0)
    return get_aval(x)


def with_float0(values: Sequence, avals: Sequence[ShapedArray]) -> list:
    """`values` (one per non-float0 aval) with zeros of dtype float0 put where avals has one."""
    it = iter(values)
    return [np.zeros(a.shape, dtypes.float0) if _is_float0(a) else next(it) for a in avals]


def call(exported: Exported) -> Callable[..., Any]:
    """`exported.call` as a function (JAX's `jax.export.call`)."""
    if not isinstance(exported, Exported):
        raise ValueError("The exported argument must be an export.Exported. "  # noqa: TRY004
                         f"Found {exported}.")
    return lambda *args, **kwargs: _call(exported, args, kwargs)


_LEAF_TYPES = (Array, np.ndarray, float, int)  # (bool is an int)


def _plain(exported: Exported) -> bool:
    """Whether the Exported takes its arguments positionally, each an array, none of dtype
    float0: then a call of arrays needs no flattening (JAX's in_tree `((*, ...), {})`)."""
    plain = exported._cache.get("plain")
    if plain is None:
        n = len(exported.in_avals)
        plain = exported._cache["plain"] = (
            exported.in_tree == tree_structure((tuple(range(n)), {})) and
            not any(_is_float0(a) for a in exported.in_avals))
    return plain


def _call(exported: Exported, args: tuple, kwargs: dict) -> Any:
    if not kwargs and _plain(exported) and len(args) == len(exported.in_avals) and \
            all(isinstance(a, _LEAF_TYPES) for a in args):
        leaves = args  # (the common case, kept cheap: positional arrays)
    else:
        leaves, in_tree = tree_flatten((args, kwargs))
        _check_tree(exported, in_tree)
    avals = []
    for x in leaves:
        aval = get_aval_or_float0(x)
        if not isinstance(aval, ShapedArray):
            raise ValueError(f"Expected ShapedArray but got: {aval}")  # noqa: TRY004
        avals.append(aval)
    _check_avals(exported, avals)
    _check_platform(exported)
    outs = _flat_function(exported)(*[x for x, a in zip(leaves, exported.in_avals)
                                      if not _is_float0(a)])
    return tree_unflatten(exported.out_tree, with_float0(outs, exported.out_avals))
