"""jit: flatten arguments, look up the cache (pytree structure, avals with weak types, static
values, semantic config), trace and compile on a miss, call the executable on a hit. Inside
another trace a jitted call stages a `pjit` equation (inlined later by the compiler passes)."""
from __future__ import annotations

import collections
import contextlib
import enum
import functools
import inspect
import itertools
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..core import errors, key_reuse, thread_guard, transfer_guard
from ..core.array import Array
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.config import config
from ..core.devices import devices, process_count
from ..core.global_array import GlobalArray, note_call_outputs
from ..core.errors import no_execution_error
from ..core.interpret import eval_jaxpr_checked, invalid_value_error, invalid_values
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.jaxpr_util import closure_convert
from ..core.monitoring import JAXPR_TRACE_EVENT, log_elapsed_time
from ..core.axis_env import extend_axis_env
from ..core.pytree import (PyTreeDef, leaf_names, tree_flatten, tree_leaves, tree_map,
                           tree_unflatten)
from ..core.refs import check_no_refs, is_new_ref_for, refs_in_use, stage_scope
from ..core.sharding import (AxisType, Mesh, check_sharding_leaves, check_shardings, mesh_context,
                             replicated_sharding, resolve_sharding, typed_arguments)
from ..core.trace import (Tracer, current_dynamic_trace, fun_debug_info, get_aval, trace_to_jaxpr,
                          typeof, user_source_info)
from ..compiler.split_results import noted_results, split_results
from ..lax.call import pjit_p
from . import backend_start, explain, tiering
from .devices import place, to_array
from .executable import Executable, compile_jaxpr, interned
from .jit_refs import call_with_refs
from .sharded import (argument_text, check_arguments_typed, check_committed,
                      check_context_mesh, check_layout, check_program_devices,
                      check_shard_map_devices, commit_results, committed_device, device_marker,
                      given_devices, leaf_shardings, own_sharding, partition, propagate_noted,
                      read_leaves, result_marker, short_spec_outputs)

# --- argument handling ----------------------------------------------------------------------

def _static_hint(fun_name: str, static_argnames: set[str], positional: list[str]):
    def hint(names: list[str]) -> str:
        names = [n for n in names if n not in static_argnames]
        if not names:
            return ""
        quoted = ", ".join(repr(n) for n in names)
        return (f"If {', '.join(f'`{n}`' for n in names)} only changes the program's structure "
                f"(a loop count, a shape, a flag), mark it static: "
                f"jax.jit({fun_name}, static_argnames=({quoted},)) or the matching "
                "static_argnums. Otherwise express the value-dependent logic with jnp.where, "
                "lax.cond or lax.fori_loop/scan.")
    return hint


def _hashable_key(value: Any, what: str) -> Any:
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while trying "
            f"to hash an object of type {type(value)}, {value!r:.200} (static argument {what})."
            f" The error was:\nTypeError: {e}\nPass it as a tuple (or another hashable value), "
            "or as an ordinary (traced) argument.") from None
    return (type(value), value)


def _check_static_argnums(argnums: Sequence[int], sig: inspect.Signature | None,
                          fun_name: str, what: str = "static_argnums") -> None:
    if sig is None:
        return
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    npos = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    for i in argnums:
        if not -npos <= i < npos:
            raise ValueError(f"Jitted function has {what}={tuple(argnums)}, but only "
                             f"accepts {npos} positional arguments.")


_LEAF_TYPES = frozenset({Array, np.ndarray, float, int, bool, complex, np.float32, np.float64,
                         np.int32, np.int64, np.bool_, np.float16, np.uint32, np.uint8})
# (the type decides a NumPy scalar's aval, as its dtype canonicalised under the config's x64)
_NUMPY_SCALARS = frozenset({t for t in _LEAF_TYPES if issubclass(t, np.generic)} |
                           {np.int8, np.int16, np.uint16, np.uint64, np.complex64,
                            np.complex128})


@functools.cache  # (a tree's definition is immutable)
def _flat_treedef(n: int) -> PyTreeDef:
    return tree_flatten((tuple(range(n)), {}))[1]


_FAST_TREE_NODES = 10_000


def _fast_tree(tree: Any, key: list, leaves: list) -> tuple[bool, bool] | None:
    """A pytree argument's part of `Jitted._fast_key`, when it is built of tuples, lists and
    dicts (exactly those types: their flattening is fixed, as no type registers twice) of the
    leaves `_fast_key` takes: appended to `key` (each container as (type, length or sorted
    keys), then its items, in tree_flatten's order) and to `leaves`. Whether a leaf is placed,
    and whether one is no Array (a NumPy array or a Python or NumPy scalar); None where the
    call needs `_trace`."""
    placed = host = False
    stack, nodes = [tree], 0
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Array:
            if x._sharding is None:
                key.append(x.aval)
            else:
                key.append((x.aval, x._sharding))
                placed = True
            leaves.append(x)
            continue
        if t is tuple or t is list or t is dict:
            nodes += 1
            if nodes > _FAST_TREE_NODES:  # (a list holding itself: tree_flatten's error)
                return None
            if t is dict:
                try:
                    names = sorted(x)
                except TypeError:  # (tree_flatten's error, through `_trace`)
                    return None
                key.append((dict, tuple(names)))
                names.reverse()
                stack += map(x.__getitem__, names)
            else:
                key.append((t, len(x)))
                stack += reversed(x)
            continue
        if t is float or t is bool or t is complex:
            key.append(t)
        elif t is int:
            if not _INT32_MIN <= x <= _INT32_MAX:  # (its type's range decides: `_trace` says)
                return None
            key.append(int)
        elif t is np.ndarray:
            key.append((t, x.dtype, x.shape))
        elif t in _NUMPY_SCALARS:
            key.append(t)
        else:
            return None
        leaves.append(x)
        host = True
    return placed, host


# a Python int in this range fits int32 and int64 alike (its aval is then its type and x64's)
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


@functools.cache
def _flat_tuple_treedef(n: int) -> PyTreeDef:
    return tree_flatten((0,) * n)[1]


class _CacheEntry:
    """One traced signature of a jitted function and, once called, its executable."""
    __slots__ = ("closed", "in_tree", "out_tree", "executable", "in_avals", "arg_names",
                 "donated", "aliases", "consumed", "kept", "direct", "trace_key", "lock",
                 "debug_checks", "last_use", "laid_out", "placement", "blocks", "mark",
                 "context_mesh", "reads", "given", "device", "readers", "origin", "key_reuse",
                 "run", "run_host")

    def __init__(self, closed, in_tree, out_tree, in_avals, arg_names, donated):
        self.closed = closed
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = in_avals
        self.arg_names = arg_names
        self.donated: tuple[bool, ...] = donated  # per argument leaf
        self.executable: Executable | None = None
        # set by compile_entry: donated (output, leaf) pairs, the leaves a call deletes, the
        # leaves the program reads (None: all), and whether a call is just the executable's
        self.aliases: list[tuple[int, int]] = []
        self.consumed: tuple[int, ...] = ()
        self.kept: tuple[int, ...] | None = None
        self.direct = True
        self.trace_key: tuple | None = None  # the config it was compiled under (fast path)
        # (nans, infs) to look for in its outputs (jax_debug_nans/infs, part of the key)
        nans, infs = config.read("jax_debug_nans"), config.read("jax_debug_infs")
        self.debug_checks = (nans, infs) if nans or infs else None
        self.key_reuse = None  # jax_debug_key_reuse (part of the key): core/key_reuse.py
        self.lock = threading.Lock()  # one thread compiles it; the others wait for that
        self.last_use = 0  # `_clock` at its last call: the least recently used is evicted
        # sharded jit (runtime/sharded.py): per argument leaf, the NamedSharding it is laid
        # out as (None: no leaf is); once compiled, each output's sharding (None: unsharded)
        self.laid_out: tuple | None = None
        self.placement: list | None = None
        # once compiled: per output, (sharding, global shape) of a block of a value split over
        # processes that the program returns instead of gathering it (None: none is)
        self.blocks: list | None = None
        # once compiled: what a call does to its results for these two (sharded.py's
        # `result_marker`; None: nothing)
        self.mark: Callable | None = None
        # the mesh `jax.set_mesh` put in effect where it was traced (None: none, or one
        # spanning processes): results laid out by nothing else are replicated over it
        self.context_mesh: Mesh | None = None
        # the argument leaves whose devices bind the program (sharded.py's `read_leaves`;
        # all of them under keep_unused), found at the first call with a committed argument
        self.reads: tuple[int, ...] | None = None
        # per argument leaf, the device jit's in_shardings put it on (None: none does); and
        # the device in_shardings and out_shardings bind the program to (None: none), where
        # its results are committed
        self.given: tuple | None = None
        self.device: Any = None
        # per argument leaf, the primitive first reading it (None: none; sharded.py's
        # check_arguments_typed), found at the first call with a laid-out argument under a mesh
        self.readers: tuple | None = None
        # a copy indexing another kind of call on the fast path (`Jitted.remember_call_as`):
        # the entry it copies, whose eviction takes it too (None: none)
        self.origin: _CacheEntry | None = None
        # once on the fast path, where a call is its executable's (and donation's steps) and
        # nothing else (`Jitted._runner`): leaves -> the call's result (None: `Jitted._run`);
        # and the same for leaves among which a NumPy array or a Python scalar is
        self.run: Callable | None = None
        self.run_host: Callable | None = None


class _Traces:
    """The traces of one function under one set of jit options, shared by every `jit` wrapper of
    that function with those options: as in JAX, `jit(f)(4.); jit(f)(5.)` traces f once."""
    __slots__ = ("entries", "fast")

    def __init__(self, fast: bool):
        self.entries: dict[tuple, _CacheEntry] = {}
        # the dispatch fast path's index: a call's `Jitted._fast_key` -> entry
        self.fast: dict[tuple, _CacheEntry] | None = {} if fast else None

    def clear(self) -> None:
        with _cache_lock:
            self.entries.clear()
            if self.fast is not None:
                self.fast.clear()

    def add(self, key: tuple, entry: _CacheEntry) -> _CacheEntry:
        """Store `entry` under `key` unless another thread stored one first (that one wins and is
        returned); beyond `tracejit_jit_cache_size` entries the least recently used go, with
        their executables (under `_cache_lock`)."""
        entry = self.entries.setdefault(key, entry)
        entry.last_use = next(_clock)
        excess = len(self.entries) - config.read("tracejit_jit_cache_size")
        if excess > 0:
            oldest = sorted(self.entries.items(), key=lambda item: item[1].last_use)[:excess]
            gone = {id(e) for _, e in oldest}
            for k, _ in oldest:
                del self.entries[k]
            if self.fast is not None:
                for k in [k for k, e in self.fast.items()
                          if id(e) in gone or id(e.origin) in gone]:
                    del self.fast[k]
        return entry


_clock = itertools.count(1)  # orders calls, for the least-recently-used eviction


# function -> {jit options -> _Traces}. Weakly keyed: the traces go when the function does (an
# entry holds names and jaxprs, never its function, which would then live as long as its
# traces). Reads take no lock (a dict lookup); every fill takes `_cache_lock`.
_traces_by_fun: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def _traces_for(fun: Callable, options: tuple) -> _Traces:
    with _cache_lock:
        try:
            by_options = _traces_by_fun.get(fun)
            if by_options is None:
                by_options = _traces_by_fun[fun] = {}
        except TypeError:  # not weakly referenceable, or unhashable: this wrapper's own cache
            return _Traces(fast=True)
        traces = by_options.get(options)
        if traces is None:
            traces = by_options[options] = _Traces(fast=True)
        return traces


def clear_caches() -> None:
    """Drop every jitted function's traces and executables (`jax.clear_caches()`). Machine code
    stays in the LLVM engine and its in-process and on-disk caches, to be found again. Returns
    without waiting for final code still to be made (tiering.py): a program dropped here before
    its turn has only its disk entry made then, with that cache on (native._orphan)."""
    with _cache_lock:
        all_traces = [t for by_options in _traces_by_fun.values() for t in by_options.values()]
    for traces in all_traces:
        traces.clear()
    # outlined kernels kept for later programs go with the last program calling them (looked
    # up, not imported: importing it would load LLVM in a process that never compiled; after
    # the start-up thread, which may be importing them)
    backend_start.join()
    kernels = sys.modules.get(f"{__package__}.kernel_cache")
    if kernels is not None:
        kernels.clear()
    codegen = sys.modules.get("tracejit.backend.llvm.codegen")
    if codegen is not None:
        codegen.forget_emitted_kernels()
    tiering.settle()  # (a program the thread was finishing is let go of)


# --- donation -------------------------------------------------------------------------------

def _type_str(aval: ShapedArray) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _match_donations(in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                     donated: Sequence[bool]) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    """JAX's rule (mlir._set_up_aliases): each output, in order, takes the first remaining
    donated input of its shape and dtype (these pairs may share a buffer); a donated input left
    over is still consumed when an unmatched output has as many elements (XLA may reuse it);
    the rest are not usable, with JAX's warning, and stay valid."""
    by_type: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    for i, (aval, d) in enumerate(zip(in_avals, donated)):
        if d:
            by_type[(aval.shape, aval.dtype)].append(i)
    aliases, unmatched = [], collections.Counter()
    for j, aval in enumerate(out_avals):
        candidates = by_type.get((aval.shape, aval.dtype))
        if candidates:
            aliases.append((j, candidates.popleft()))
        else:
            unmatched[aval.size] += 1
    consumed = {i for _, i in aliases}
    unusable = []
    for i, (aval, d) in enumerate(zip(in_avals, donated)):
        if d and i not in consumed:
            if unmatched[aval.size]:
                unmatched[aval.size] -= 1
                consumed.add(i)
            else:
                unusable.append(_type_str(aval))
    if unusable:
        warnings.warn(f"Some donated buffers were not usable: {', '.join(unusable)}.\nSee an "
                      "explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.")
    return aliases, tuple(sorted(consumed))


def compile_entry(entry: _CacheEntry, backend: str | None, keep_unused: bool,
                  split: bool = True, fun_name: str = "jit_fn") -> Executable:
    """Compile a traced signature. Unless `keep_unused`, arguments the program never reads are
    left out of it (not passed, not donated), as JAX does; donated arguments are matched to
    outputs. Records on `entry` what a call then does with its argument leaves. With `split`,
    a result split over processes (shard_map's, gathered in the trace) is returned as this
    process's block (wrapped as a GlobalArray by the call), not gathered."""
    closed = entry.closed
    if split:
        closed, entry.blocks = split_results(closed, entry.laid_out)
    # laid out over a mesh: the program run shard by shard (the traced jaxpr, which
    # make_jaxpr and lowering show, keeps its sharding constraints)
    closed, entry.placement = partition(closed, entry.laid_out)
    placement = entry.placement
    if entry.context_mesh is not None:  # (as JAX reports them under set_mesh)
        outs = closed.out_avals
        short = [False] * len(outs)
        if AxisType.Explicit in entry.context_mesh.axis_types:  # (P() or P(None, None))
            laid = entry.laid_out or [None] * len(entry.closed.jaxpr.invars)
            short = short_spec_outputs(entry.closed, [s is None for s in laid])
        placement = [replicated_sharding(entry.context_mesh, None if sh else a.ndim)
                     if s is None else s
                     for a, s, sh in zip(outs, placement or [None] * len(outs), short)]
    entry.mark = result_marker(placement, entry.blocks, closed.out_avals)
    if entry.device is not None:  # (bound to one device by in_shardings or out_shardings)
        entry.mark = device_marker(entry.device, entry.mark)
    kept = None
    if not keep_unused:
        closed, kept = without_unused_args(closed)
    in_avals = entry.in_avals if kept is None else [entry.in_avals[i] for i in kept]
    donated = entry.donated if kept is None else [entry.donated[i] for i in kept]
    aliases: list[tuple[int, int]] = []
    consumed: tuple[int, ...] = ()
    if any(donated):
        aliases, consumed = _match_donations(in_avals, closed.out_avals, donated)
        if kept is not None:
            consumed = tuple(kept[i] for i in consumed)
    # (the module's name in the compile events: JAX's "jit(f)", where tracing says "f")
    executable = compile_jaxpr(closed, backend, aliases, fun_name=f"jit({fun_name})")
    entry.aliases, entry.consumed, entry.kept = aliases, consumed, kept
    entry.direct = kept is None and not consumed
    return executable


def without_unused_args(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, tuple[int, ...] | None]:
    """The program without the invars that no equation or output reads, and the indices of
    those kept (None when all are read)."""
    jaxpr = closed.jaxpr
    read = {v for e in jaxpr.eqns for v in e.invars}
    read.update(jaxpr.outvars)
    kept = tuple(i for i, v in enumerate(jaxpr.invars) if v in read)
    if len(kept) == len(jaxpr.invars):
        return closed, None
    pruned = Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in kept], jaxpr.outvars, jaxpr.eqns,
                   jaxpr.debug_info)
    return ClosedJaxpr(pruned, closed.consts), kept


def execute(entry: _CacheEntry, executable: Executable, leaves: Sequence) -> list[Array]:
    """Run a compiled signature on a call's argument leaves, then delete the donated arguments
    it consumed (those written over are already deleted by the executable)."""
    return _execute(entry.consumed, entry.kept, executable, leaves)


def _execute(consumed: tuple[int, ...], kept: tuple[int, ...] | None,
             executable: Callable[[Sequence], list[Array]], leaves: Sequence) -> list[Array]:
    for i in consumed if len(leaves) > 1 else ():
        x = leaves[i]
        if type(x) is Array and any(y is x for j, y in enumerate(leaves) if j != i):
            raise RuntimeError(
                f"INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the "
                f"same call (flattened argument {i} is also passed as another argument). Toy "
                "example for this bug: `f(donate(a), a)`. Pass a copy (`a.copy()`) to one of "
                "them, or do not donate it.")
    outs = executable(leaves if kept is None else [leaves[i] for i in kept])
    for i in consumed:
        x = leaves[i]
        if type(x) is Array:
            x.delete()
    return outs


class Inline(enum.Enum):
    """How a jitted function called inside another is inlined (jit's `inline`, JAX's enum).
    JAX_EARLY traces it in place (no call equation in the enclosing jaxpr); every other member
    keeps its call equation, which the compiler's passes inline (one native program either
    way). `inline=True` stays JAX 0.10's in-place tracing (0.12 reads it as JAX_LATE)."""
    JAX_EARLY = "jax_early"
    JAX_LATE = "jax_late"
    XLA_EARLY = "xla_early"
    XLA_LATE = "xla_late"
    AUTO = "auto"


class Jitted:
    """The object `jit(f)` returns: callable, with `.trace/.lower` AOT stages."""

    def __init__(self, fun: Callable, static_argnums=None, static_argnames=None,
                 donate_argnums=None, donate_argnames=None, keep_unused: bool = False,
                 inline: bool | Inline = False, backend: str | None = None,
                 in_shardings: Any = None,
                 out_shardings: Any = None):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        self.fun = fun
        self.fun_name = getattr(fun, "__name__", type(fun).__name__)
        # results split over processes come back as GlobalArrays (False: gathered, for the
        # per-process programs of shard_map_processes.py, which lay out their results)
        self.split_outputs = True
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        # (listed once: a call with static or keyword arguments asks for them several times)
        self._positional = [] if self._sig is None else [
            p.name for p in self._sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        static_argnums = _as_tuple(static_argnums, "static_argnums")
        static_argnames = _as_names(static_argnames, "static_argnames")
        donate_argnums = _as_tuple(donate_argnums, "donate_argnums")
        donate_argnames = _as_names(donate_argnames, "donate_argnames")
        # resolve numbers <-> names through the signature, as JAX does
        pos_names = self._positional_names()
        static_argnums = set(static_argnums) | {pos_names.index(n) for n in static_argnames
                                                if n in pos_names}
        static_argnames = set(static_argnames) | {pos_names[i] for i in static_argnums
                                                  if -len(pos_names) <= i < len(pos_names)}
        _check_static_argnums(sorted(static_argnums), self._sig, self.fun_name)
        if self._sig is not None:
            known = set(self._sig.parameters)
            has_varkw = any(p.kind == p.VAR_KEYWORD for p in self._sig.parameters.values())
            for n in static_argnames | set(donate_argnames):
                if n not in known and not has_varkw:
                    raise ValueError(f"jitted function {self.fun_name} has static_argnames or "
                                     f"donate_argnames {n!r}, which is not a parameter of "
                                     f"{self.fun_name}{self._sig}.")
        npos = len(pos_names)
        self.static_argnums = tuple(sorted({i % npos if npos and i < 0 else i
                                            for i in static_argnums}))
        self.static_argnames = frozenset(static_argnames)
        _check_static_argnums(sorted(donate_argnums), self._sig, self.fun_name,
                              "donate_argnums")
        donate_argnums = set(donate_argnums) | {pos_names.index(n) for n in donate_argnames
                                                if n in pos_names}
        if donate_argnums & set(self.static_argnums):
            raise ValueError("static_argnums and donate_argnums cannot overlap: "
                             f"{sorted(donate_argnums & set(self.static_argnums))}")
        self.donate_argnums = tuple(sorted(donate_argnums))
        self.donate_argnames = frozenset(donate_argnames) | {pos_names[i] for i in donate_argnums
                                                             if i < len(pos_names)}
        self.keep_unused = bool(keep_unused)
        self.inline = inline is Inline.JAX_EARLY if isinstance(inline, Inline) else bool(inline)
        self.backend = backend
        # checked against each new signature; in_shardings also partition the program
        check_sharding_leaves(in_shardings, "in_shardings")
        check_sharding_leaves(out_shardings, "out_shardings")
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        # (the shardings too: a trace records what they fix, and the dispatch fast path's
        # index holds no sharding option)
        self._traces = _traces_for(fun, (self.static_argnums, self.static_argnames,
                                         self.donate_argnums, self.donate_argnames,
                                         self.keep_unused, self.inline, self.backend,
                                         _as_key(in_shardings), _as_key(out_shardings)))
        # (no static argument: `__call__`'s shortest path applies)
        self._positional_only = self._traces.fast is not None and not self.static_argnums
        functools.update_wrapper(self, fun, updated=())

    def _positional_names(self) -> list[str]:
        return self._positional

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<jitted function {self.fun_name}>"

    # -- splitting arguments
    def _split(self, args: tuple, kwargs: dict):
        nargs = len(args)
        for i in self.static_argnums:
            if i >= nargs and self._positional_names()[i:i + 1] and \
                    self._positional_names()[i] not in kwargs:
                param = self._sig.parameters[self._positional_names()[i]]
                if param.default is inspect.Parameter.empty:
                    raise TypeError(f"{self.fun_name}() missing required positional argument "
                                    f"{param.name!r} (static_argnums={self.static_argnums}).")
        static = tuple((i, _hashable_key(args[i], f"at position {i}"))
                       for i in self.static_argnums if i < nargs)
        static_kw = tuple(sorted((k, _hashable_key(v, repr(k))) for k, v in kwargs.items()
                                 if k in self.static_argnames))
        static_set = set(self.static_argnums)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_set)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static, static_kw, dyn_args, dyn_kwargs

    def _arg_names(self, args: tuple, dyn_kwargs: dict) -> list[str]:
        pos = self._positional_names()
        names: list[str] = []
        static_set = set(self.static_argnums)
        for i, a in enumerate(args):
            if i in static_set:
                continue
            base = pos[i] if i < len(pos) else f"args[{i}]"
            names += leaf_names(base, a)
        for k in sorted(dyn_kwargs):
            names += leaf_names(k, dyn_kwargs[k])
        return names

    def _flat_fun(self, static, static_kw, in_tree: PyTreeDef, nargs: int):
        static_pos = dict((i, v) for i, (_, v) in static)
        static_kwargs = {k: v for k, (_, v) in static_kw}

        def flat_fun(*leaves):
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, leaves)
            it = iter(dyn_args)
            args = [static_pos[i] if i in static_pos else next(it) for i in range(nargs)]
            out = self.fun(*args, **dyn_kwargs, **static_kwargs)
            if key_reuse.enabled():  # (what the body did to the key objects it was given)
                flat_fun.key_reuse = key_reuse.signature((dyn_args, dyn_kwargs), out)
            out_leaves, out_tree = tree_flatten(out)
            if refs_in_use():
                check_no_refs(out_leaves, self.fun_name, fun_debug_info(self.fun, [], "jit")
                              .fun_source, "jit")
            flat_fun.out_tree = _SINGLE_LEAF if out_tree == _SINGLE_LEAF else out_tree
            return out_leaves
        return flat_fun

    def _avals(self, leaves: list, arg_names: list[str]) -> tuple[ShapedArray, ...]:
        avals = []
        for i, x in enumerate(leaves):
            if isinstance(x, (ShapeDtypeStruct, GlobalArray)):  # (a GlobalArray: its global
                avals.append(x.aval)                           # type, as JAX traces it)
                continue
            try:
                avals.append(get_aval(x))
            except TypeError:
                where = arg_names[i] if i < len(arg_names) else f"#{i}"
                raise TypeError(
                    f"Error interpreting argument to {self.fun_name} as an abstract array. The "
                    f"problematic value is of type {type(x)} and was passed to the function at "
                    f"path {where}.\nThis typically means that a jit-wrapped function was "
                    "called with a non-array argument, and this argument was not marked as "
                    f"static using the static_argnums or static_argnames parameters of "
                    f"jax.jit: e.g. jax.jit({self.fun_name}, "
                    f"static_argnames=({where.split('[')[0]!r},)).") from None
        return tuple(avals)

    def _trace(self, args: tuple, kwargs: dict, shape_only: bool = False):
        if not kwargs and not self.static_argnums and all(type(a) in _LEAF_TYPES for a in args):
            # the common case, kept cheap: positional array/scalar arguments only
            static, static_kw, dyn_args, dyn_kwargs = (), (), args, kwargs
            leaves, in_tree = list(args), _flat_treedef(len(args))
        else:
            static, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
            if not dyn_kwargs and all(type(a) in _LEAF_TYPES for a in dyn_args):
                # static arguments aside, array/scalar leaves only: the flat tree, as above
                leaves, in_tree = list(dyn_args), _flat_treedef(len(dyn_args))
            else:
                leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        try:
            avals = tuple(x.aval if type(x) is Array or type(x) is GlobalArray else get_aval(x)
                          for x in leaves)
        except TypeError:
            avals = self._avals(leaves, self._arg_names(args, dyn_kwargs))  # raises, naming it
        laid_out = None  # per leaf, the NamedSharding it is laid out as (runtime/sharded.py)
        placed = any(getattr(x, "_sharding", None) is not None for x in leaves)
        if self.in_shardings is not None or placed or ShapeDtypeStruct in map(type, leaves):
            laid_out = leaf_shardings(self.in_shardings, dyn_args, leaves, self.fun_name)
        if any(getattr(a, "vma", None) for a in avals):
            # (inside shard_map's check_vma=True the varying axes decide the implicit pvarys the
            # traced program holds: part of the key, though not of the avals' equality)
            avals = tuple((a, a.vma) for a in avals)
        # the meshes in effect too: a program traced under one (shard_map with mesh=None, a
        # bare PartitionSpec, get_abstract_mesh()) may hold its axes, sizes and devices
        key = (in_tree, avals, static, static_kw, config.trace_key(), laid_out, _MESHES.key)
        entry = self._traces.entries.get(key)
        if entry is None:
            if config.read("jax_no_tracing") and not shape_only:  # (JAX's eval_shape may)
                raise RuntimeError(f"re-tracing function {self.fun_name} at "
                                   f"{fun_debug_info(self.fun, (), 'jit').fun_source} for "
                                   "`jit`, but 'no_tracing' is set")
            arg_names = self._arg_names(args, dyn_kwargs)
            avals = self._avals(leaves, arg_names)
            if config.read("jax_explain_cache_misses"):
                explain.explain_cache_miss(self.fun, self.fun_name, key,
                                           list(self._traces.entries), arg_names)
            # traced without the lock (tracing may jit other functions, in this thread or
            # another); when two threads trace one signature at once, the first stored wins
            self._check_in_shardings(dyn_args)
            if laid_out is not None:
                check_layout(laid_out, avals, arg_names, self.fun_name)
                check_context_mesh(laid_out, avals, arg_names, self.fun_name, _MESHES.placing,
                                   user_source_info())
            start = time.perf_counter()
            if placed:  # (traced with the types JAX gives arrays laid out over Explicit axes:
                # `typeof(x)` reads `float32[8@x,4]` inside; their equality ignores the layout)
                avals = tuple(typeof(x) if type(x) is Array else a for x, a in zip(leaves, avals))
            entry = self._stage(static, static_kw, in_tree, len(args), avals, arg_names,
                                {i: own_sharding(x) for i, x in enumerate(leaves)
                                 if not isinstance(x, Tracer)})
            entry.laid_out, entry.context_mesh = laid_out, _MESHES.placing
            if laid_out is None:  # (shard_map's results' shardings carried to the outputs)
                propagate_noted(entry.closed)
            else:
                check_shard_map_devices(entry.closed, laid_out, avals, arg_names, self.fun_name)
            self._check_out_shardings(entry)
            if self.in_shardings is not None:
                entry.given = given_devices(self.in_shardings, dyn_args, len(leaves),
                                            self.fun_name)
            reads = self._reads(entry) if entry.given is not None or laid_out is not None \
                else ()
            entry.device = check_program_devices(
                entry.closed, reads, laid_out, entry.given, self.out_shardings,
                _MESHES.placing, lambda i: argument_text(arg_names[i], self.fun_name, avals[i]),
                user_source_info())
            if config.read("jax_log_compiles"):
                explain.log_traced(self.fun_name, time.perf_counter() - start)
            if not any(isinstance(c, Tracer) for c in entry.closed.consts):
                with _cache_lock:
                    entry = self._traces.add(key, entry)
        if placed and (_MESHES.stack or _MESHES.abstract):
            # (every call: with in_shardings the key holds theirs, not the arguments' own)
            check_arguments_typed(entry, leaves, user_source_info)
        if placed and any(committed_device(x) is not None for x in leaves):
            # (every call: the key holds no single device an argument is committed to, and the
            # dispatch fast path only remembers a call that passed this)
            check_committed(entry.closed, leaves, laid_out, self._reads(entry),
                            lambda: self._arg_names(args, dyn_kwargs), self.fun_name,
                            self.out_shardings, user_source_info(), entry.given)
        return entry, leaves

    def _reads(self, entry: _CacheEntry) -> tuple[int, ...]:
        if entry.reads is None:
            entry.reads = tuple(range(len(entry.in_avals))) if self.keep_unused else \
                read_leaves(entry.closed)
        return entry.reads

    def _inline_args(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments an inlined call passes on: the dynamic ones as arrays (a Python float
        becomes a weakly typed float32 array, as jit makes it), static ones as they are."""
        args = tuple(a if i in self.static_argnums else tree_map(to_array, a)
                     for i, a in enumerate(args))
        kwargs = {k: v if k in self.static_argnames else tree_map(to_array, v)
                  for k, v in kwargs.items()}
        return args, kwargs

    def _check_in_shardings(self, dyn_args: tuple) -> None:
        shardings = self.in_shardings
        if shardings is None:
            return
        if isinstance(shardings, list):
            shardings = tuple(shardings)
        if isinstance(shardings, tuple) and len(shardings) != len(dyn_args):
            raise ValueError(
                f"pjit in_shardings specification must be a tree prefix of the positional "
                f"arguments tuple. In particular, pjit in_shardings must either be a Sharding, "
                f"a PartitionSpec, or a tuple of length equal to the number of positional "
                f"arguments. But pjit in_shardings is the wrong length: got a tuple or list of "
                f"length {len(shardings)} for an args tuple of length {len(dyn_args)}.")
        if not isinstance(shardings, tuple):
            shardings = (shardings,) * len(dyn_args)
        check_shardings(shardings, tuple(dyn_args), f"{self.fun_name} (jit in_shardings)")

    def _check_out_shardings(self, entry: _CacheEntry) -> None:
        if self.out_shardings is not None:
            outs = tree_unflatten(entry.out_tree, list(entry.closed.out_avals))
            check_shardings(self.out_shardings, outs, f"{self.fun_name} (jit out_shardings)")

    def _stage(self, static, static_kw, in_tree, nargs, avals, arg_names,
               own: dict) -> _CacheEntry:
        """Trace the function for these avals; `own`: the sharding each argument leaf that is
        a value (not a tracer of an enclosing trace, whose type is not known here) carries."""
        flat_fun = self._flat_fun(static, static_kw, in_tree, nargs)
        debug = fun_debug_info(self.fun, arg_names, "jit",
                               _static_hint(self.fun_name, set(self.static_argnames),
                                            self._positional_names()))
        def typed_fun(*tracers):  # (each argument typed by its own layout, as in JAX)
            with typed_arguments([tracers[i] for i in own], list(own.values())):
                return flat_fun(*tracers)
        # (stage_scope: a Ref it closes over reroutes the call, jit_refs.py)
        with stage_scope(self), log_elapsed_time(JAXPR_TRACE_EVENT, self.fun_name):
            closed = trace_to_jaxpr(typed_fun, avals, debug)
        entry = _CacheEntry(closed, in_tree, flat_fun.out_tree, avals, arg_names,
                            self._donated_leaves(in_tree, static, nargs))
        entry.key_reuse = getattr(flat_fun, "key_reuse", None)
        return entry

    def _donated_leaves(self, in_tree: PyTreeDef, static, nargs: int) -> tuple[bool, ...]:
        """Per argument leaf: is it donated (donate_argnums / donate_argnames)?"""
        flags = [False] * in_tree.num_leaves
        if not (self.donate_argnums or self.donate_argnames):
            return tuple(flags)
        dyn_args, dyn_kwargs = tree_unflatten(in_tree, list(range(in_tree.num_leaves)))
        static_pos = {i for i, _ in static}
        positions = [i for i in range(nargs) if i not in static_pos]
        donated = [sub for i, sub in zip(positions, dyn_args) if i in self.donate_argnums]
        donated += [sub for k, sub in dyn_kwargs.items() if k in self.donate_argnames]
        for leaf in tree_leaves(donated):
            flags[leaf] = True
        return tuple(flags)

    def __call__(self, *args, **kwargs):
        # the fast path's commonest call in the fewest steps: positional Arrays of a signature
        # called before under the same config, most often unsharded, whose call is then its
        # executable's alone (`_fast_key`'s key for them, looked up as `_call` would)
        if refs_in_use():  # Refs as arguments or closed over: threaded through (jit_refs.py)
            return call_with_refs(self, args, kwargs)
        if self._positional_only and not kwargs and current_dynamic_trace() is None:
            key, placed = [], False
            for x in args:
                if type(x) is not Array:
                    break
                if x._sharding is None:
                    key.append(x.aval)
                else:
                    key.append((x.aval, x._sharding))
                    placed = True
            else:
                key.append(_MESHES.token)
                entry = self._traces.fast.get(tuple(key))
                # (config.trace_key(), read inline: its call is ~0.2 us of a ~2.4 us call; while
                # no with-block is open its cache is the key, None after an update)
                if entry is not None and entry.trace_key is (
                        config._trace_key_cache if not config._open else config.trace_key()):
                    entry.last_use = next(_clock)
                    run = entry.run
                    return run(args) if run is not None and not placed else \
                        self._run(entry, args, kwargs, args, placed)
        return self._call(args, kwargs)

    def _call_unshortened(self, *args, **kwargs):
        """`__call__` without its shortcut: every call goes through `_call` (jax.profiler's
        trace puts it in place, to time each call there)."""
        if refs_in_use():
            return call_with_refs(self, args, kwargs)
        return self._call(args, kwargs)

    def remember_call_as(self, args: tuple, kwargs: dict, like: tuple,
                         mark: Callable[[list], list]) -> None:
        """Index the call (args, kwargs) on the dispatch fast path as the call `like` (its
        arguments and keyword arguments, a call made just before) runs: its compiled program on
        the same leaves, then what that call does to its results (`entry.mark`: it reads the
        leaves only to tell arguments returned as they are, alike here), then `mark(outs)`.
        For jit on arrays every process holds alike (shard_map_processes.py
        `_on_replicated`), which otherwise flattens, views and calls again each time. Not for
        a program that donates."""
        fast = self._traces.fast
        found, seen = self._fast_key(args, kwargs), self._fast_key(*like)
        if fast is None or found is None or seen is None or current_dynamic_trace() is not None:
            return
        entry = fast.get(seen[0])
        if entry is None or any(entry.donated) or len(found[1]) != len(seen[1]):
            return
        alias = _CacheEntry.__new__(_CacheEntry)
        for name in _CacheEntry.__slots__:
            setattr(alias, name, getattr(entry, name))
        inner = entry.mark
        alias.mark = (lambda outs, leaves: mark(outs)) if inner is None else \
            (lambda outs, leaves: mark(inner(outs, leaves)))
        alias.origin = entry
        alias.run = alias.run_host = None  # (its mark applies)
        with _cache_lock:  # (unless evicted meanwhile)
            if any(e is entry for e in self._traces.entries.values()):
                fast[found[0]] = alias

    def _fast_key(self, args: tuple, kwargs: dict) -> tuple | None:
        """The dispatch fast path's key of a call, its leaves, whether one is placed (has a
        sharding) and whether one is no Array; or None when the call needs `_trace`. The key: the avals of unsharded Array
        arguments (the type for a Python float, complex, bool or int in int32's range, weakly
        typed but the bool: its value is no part of the signature; dtype and shape for a NumPy
        array, the type for a NumPy scalar), tuples, lists and dicts of those as their type
        and length (keys) then their items (`_fast_tree`), and the type and value of each
        static argument; keyword arguments after the positional ones, their sorted names,
        then each as a static one or a tree. A static value that cannot be hashed makes the
        key unhashable (the lookup's TypeError). Last, the meshes in effect (`_trace`'s key
        holds them too)."""
        key, leaves, placed, host = [], [], False, False
        static = self.static_argnums
        for i, a in enumerate(args):
            if static and i in static:
                key.append((type(a), a))
                continue
            t = type(a)
            if t is Array:
                if a._sharding is None:
                    key.append(a.aval)
                else:  # placed: its sharding too (hashed once, compared by identity first)
                    key.append((a.aval, a._sharding))
                    placed = True
                leaves.append(a)
                continue
            if t is float or t is bool or t is complex:
                key.append(t)
            elif t is int:  # (weakly typed int32, or int64 under x64: the config's part)
                if not _INT32_MIN <= a <= _INT32_MAX:  # (_trace raises its OverflowError)
                    return None
                key.append(int)
            elif t is np.ndarray:  # (its aval follows from dtype and shape, as a scalar's
                key.append((t, a.dtype, a.shape))  # from its type)
            elif t in _NUMPY_SCALARS:
                key.append(t)
            elif t is tuple or t is list or t is dict:
                tree = _fast_tree(a, key, leaves)
                if tree is None:
                    return None
                placed, host = placed or tree[0], host or tree[1]
                continue
            else:
                return None
            leaves.append(a)
            host = True
        if kwargs:  # their names, then in that order (tree_flatten's, of the dynamic ones:
            names = sorted(kwargs)  # their leaves follow the positional ones) each value
            key.append(("**", tuple(names)))
            static_names = self.static_argnames
            for k in names:
                v = kwargs[k]
                if k in static_names:
                    key.append((type(v), v))
                    continue
                tree = _fast_tree(v, key, leaves)
                if tree is None:
                    return None
                placed, host = placed or tree[0], host or tree[1]
        key.append(_MESHES.token)  # (the meshes in effect, as `_trace`'s key holds them)
        return tuple(key), leaves, placed, host

    def _call(self, args: tuple, kwargs: dict):
        """Every jitted call. Positional Arrays of a signature compiled before, under the same
        config, find their entry by avals alone (no flattening, no full key); anything else
        goes through `_trace`, then is staged into an enclosing trace or compiled."""
        tracing = current_dynamic_trace() is not None
        fast = self._traces.fast
        entry, host = None, True
        if fast is not None and not tracing:
            found = self._fast_key(args, kwargs)
            if found is not None:
                try:
                    entry = fast.get(found[0])
                except TypeError:  # an unhashable static argument: _trace says so
                    entry = None
                # a stamp that is still config.trace_key() means no option changed since it
                # was stamped, jax_disable_jit included
                if entry is not None and entry.trace_key is not (
                        config._trace_key_cache if not config._open else config.trace_key()):
                    entry = None
                leaves, placed, host = found[1], found[2], found[3]
        if entry is None:
            trace_key, meshes = config.trace_key(), _MESHES.key
            if config.read("jax_disable_jit"):
                return self.fun(*args, **kwargs)
            if not tracing and spans_processes(args, kwargs, self.in_shardings):
                return call_across_processes(self, args, kwargs)
            if self.inline and tracing:  # no call equation: traced in place, on arrays as jit
                args, kwargs = self._inline_args(args, kwargs)
                return self.fun(*args, **kwargs)
            entry, leaves = self._trace(args, kwargs)
            placed = any(getattr(x, "_sharding", None) is not None for x in leaves)
            # a closed-over tracer of an enclosing transformation (grad/vmap of a function
            # that calls jit on a closure) is an argument of the call equation too
            if tracing or any(isinstance(x, Tracer) for x in leaves) or \
                    any(isinstance(c, Tracer) for c in entry.closed.consts):
                closed, noted = noted_results(entry.closed)
                closed, extra = closure_convert(closed)
                outs = pjit_p.bind(*extra, *leaves, jaxpr=closed, name=self.fun_name)
                if noted:  # (shard_map's results inside: the caller's jit returns them split)
                    note_call_outputs(outs, noted)
                    outs = outs[:len(entry.closed.jaxpr.outvars)]
                return self._with_keys(entry, args, kwargs,
                                       tree_unflatten(entry.out_tree, outs))
            if transfer_guard.guarding:  # NumPy/Python arguments are host-to-device transfers
                transfer_guard.host_leaves(leaves)
            if entry.key_reuse is not None:  # (a reused key refused before the program runs)
                key_reuse.check(entry.key_reuse, self._dynamic(args, kwargs))
            if config.read("jax_no_execution"):  # (checked here: not put on the fast path)
                raise no_execution_error(f"jit({self.fun_name})")
            if entry.executable is None:
                self._compile(entry)
            found = self._fast_key(args, kwargs) if fast is not None else None
            # (indexed under the meshes it was traced under: unless the traced function set
            # another mesh, `jax.set_mesh(m)` as a statement, left in effect after it; not
            # while a transfer guard is on, whose check the fast path would skip)
            if found is not None and _MESHES.key is meshes and not transfer_guard.guarding and \
                    not any(isinstance(c, Tracer) for c in entry.closed.consts):
                entry.trace_key = trace_key
                if entry.run is None:
                    entry.run, entry.run_host = self._runner(entry)
                with _cache_lock:  # (unless evicted meanwhile: then it is only the caller's)
                    if any(e is entry for e in self._traces.entries.values()):
                        fast[tuple(map(interned, found[0]))] = entry
        entry.last_use = next(_clock)
        if entry.run is not None and not placed:
            return entry.run_host(leaves) if host else entry.run(leaves)
        return self._run(entry, args, kwargs, leaves, placed)

    def _run(self, entry: _CacheEntry, args: tuple, kwargs: dict, leaves: Sequence,
             placed: bool) -> Any:
        """A call of a compiled entry, with the steps its kind of program and arguments take
        (`_CacheEntry.run` where none does)."""
        outs = entry.executable(leaves) if entry.direct else \
            execute(entry, entry.executable, leaves)
        if entry.debug_checks is not None:
            self._check_outputs(entry, leaves, outs)
        if entry.mark is not None:  # (laid out over a mesh, or shard_map's results)
            outs = entry.mark(outs, leaves)
        if placed and entry.laid_out is None:  # (an argument committed to one device)
            outs = commit_results(outs, leaves, self._reads(entry), entry.context_mesh)
        result = outs[0] if entry.out_tree is _SINGLE_LEAF else \
            tree_unflatten(entry.out_tree, outs)
        if entry.key_reuse is not None:  # (typed keys are no fast-path arguments)
            result = self._with_keys(entry, args, kwargs, result)
        return result if self.out_shardings is None else place(result, self.out_shardings)

    def _runner(self, entry: _CacheEntry) -> tuple[Callable | None, Callable | None]:
        """The fast path's calls of `entry` (see `_CacheEntry.run` and `run_host`) where
        nothing but its executable (and `execute`'s donation steps) acts on a call with
        unsharded arguments: no debug check, mark, key-reuse check or out_shardings. Hold no
        reference to this wrapper (the traces may outlive it, and must not keep its function
        alive)."""
        if entry.debug_checks is not None or entry.mark is not None or \
                entry.key_reuse is not None or self.out_shardings is not None:
            return None, None
        out_tree, executable = entry.out_tree, entry.executable
        single = out_tree is _SINGLE_LEAF
        if entry.direct:
            runs = executable.runners(single)
        else:  # (arguments donated or left unread: `execute`'s steps around the runners')
            consumed, kept = entry.consumed, entry.kept
            runs = tuple((lambda leaves, run=run: _execute(consumed, kept, run, leaves)[0])
                         if single else
                         (lambda leaves, run=run: _execute(consumed, kept, run, leaves))
                         for run in executable.runners(False))
        if single:
            return runs
        if out_tree == _flat_tuple_treedef(out_tree.num_leaves):  # (no unflattening)
            return tuple((lambda leaves, run=run: tuple(run(leaves))) for run in runs)
        return tuple((lambda leaves, run=run: tree_unflatten(out_tree, run(leaves)))
                     for run in runs)

    def _with_keys(self, entry: _CacheEntry, args: tuple, kwargs: dict, result: Any) -> Any:
        """jax_debug_key_reuse: the traced body's use of its key arguments applied to the
        caller's keys (raising if it consumes one consumed before), and to its key results."""
        if entry.key_reuse is not None:
            key_reuse.call(entry.key_reuse, self._dynamic(args, kwargs), result)
        return result

    def _dynamic(self, args: tuple, kwargs: dict) -> tuple:
        """The traced arguments of a call: (positional ones, keyword ones), static ones left
        out, as the traced function saw them."""
        return (tuple(a for i, a in enumerate(args) if i not in self.static_argnums),
                {k: v for k, v in kwargs.items() if k not in self.static_argnames})

    def _check_outputs(self, entry: _CacheEntry, leaves: Sequence, outs: list) -> None:
        """jax_debug_nans/infs: an output with a NaN (infinity) reruns the program op by op,
        which raises naming the operation that made it and the user's line (as JAX does)."""
        nans, infs = entry.debug_checks
        kind = invalid_values(outs, nans, infs)
        if kind is None:
            return
        explain.warn(f"Invalid {kind} value encountered in the output of a jit "
                     "function. Calling the de-optimized version.")
        eval_jaxpr_checked(entry.closed, [np.asarray(x) for x in leaves], nans, infs)
        raise invalid_value_error(kind, f"the output of jit({self.fun_name}) (the "
                                  "de-optimized version produced none: it came from an input)",
                                  None)

    def _compile(self, entry: _CacheEntry) -> None:
        with entry.lock:  # not `_cache_lock`: other signatures compile meanwhile
            if entry.executable is None:
                log = config.read("jax_log_compiles")
                if log:
                    explain.log_compiling(self.fun_name, entry.in_avals)
                start = time.perf_counter()
                entry.executable = compile_entry(entry, self.backend, self.keep_unused,
                                                 self.split_outputs, self.fun_name)
                if log:
                    explain.log_compiled(self.fun_name, self.backend or config.tracejit_backend,
                                         time.perf_counter() - start)

    # -- AOT stages
    def trace(self, *args, **kwargs):
        from .stages import Traced
        entry, leaves = self._trace(args, kwargs)
        device = entry.device
        if device is None and entry.laid_out is None and \
                any(committed_device(x) is not None for x in leaves):
            # (the device a committed argument it reads binds it to: the compiled program
            # keeps it, as JAX's does)
            device = next(x._sharding._device for i, x in enumerate(leaves)
                          if i in self._reads(entry) and committed_device(x) is not None)
        return Traced(self, entry, device)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """The results' shapes and dtypes (global ones for arrays spanning processes), each
        with the sharding out_shardings lay it out as, if any (as JAX's structs carry)."""
        entry, _ = self._trace(args, kwargs, shape_only=True)
        out = tree_unflatten(entry.out_tree,
                             [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                              for a in entry.closed.out_avals])
        if self.out_shardings is None:
            return out
        specs, treedef = tree_flatten(self.out_shardings, is_leaf=lambda s: s is None)
        laid = []
        for spec, sub in zip(specs, treedef.flatten_up_to(out)):
            s = resolve_sharding(spec, f"{self.fun_name} (jit out_shardings)")
            laid.append(tree_map(lambda t, s=s: ShapeDtypeStruct(
                t.shape, t.dtype, weak_type=t.weak_type, sharding=s), sub))
        return tree_unflatten(treedef, laid)

    def clear_cache(self) -> None:
        """Drop the traces of this function under these jit options (for every wrapper)."""
        self._traces.clear()

    def _cache_size(self) -> int:
        return len(self._traces.entries)


_SINGLE_LEAF = tree_flatten(0)[1]
_MESHES = mesh_context()  # (per thread: `.key` reads this thread's meshes)


def spans_processes(args: tuple, kwargs: dict, in_shardings: Any) -> bool:
    """Whether an argument is laid out over a mesh spanning processes (an array spanning them,
    one every process holds alike, or in_shardings saying so): each process then runs its
    part of the partitioned program."""
    if process_count() == 1:
        return False
    leaves = tree_leaves((args, kwargs))
    return any(isinstance(x, GlobalArray) for x in leaves) or \
        any(_multi_process(getattr(x, "_sharding", None)) for x in leaves) or \
        any(_multi_process(s) for s in tree_leaves(in_shardings))


def _multi_process(sharding: Any) -> bool:
    return getattr(getattr(sharding, "mesh", None), "is_multi_process", False)


# how jit runs over a mesh spanning processes: set by shard_map_processes.py (a user-facing
# module, as it runs the partitioned program as shard_map does across processes)
_ACROSS_PROCESSES: list = []


def run_across_processes(run: Callable) -> None:
    """Set `run(jitted, args, kwargs)`, jit's call when arrays span processes."""
    _ACROSS_PROCESSES[:] = [run]


def call_across_processes(jitted: Jitted, args: tuple, kwargs: dict) -> Any:
    """`jitted(*args, **kwargs)` where an argument spans processes (`spans_processes`)."""
    thread_guard.check()
    return _ACROSS_PROCESSES[0](jitted, args, kwargs)


def _as_key(shardings: Any) -> Any:
    """in_shardings / out_shardings as part of a hashable key (a list as the tuple jit reads
    it as; a dict or another unhashable tree: this wrapper's own traces)."""
    return tuple(shardings) if isinstance(shardings, list) else shardings


def _as_tuple(x, name: str) -> tuple[int, ...]:
    if x is None:
        return ()
    if isinstance(x, (int, np.integer)):
        return (int(x),)
    try:
        items = tuple(x)
    except TypeError:
        raise TypeError(f"{name} must be an int or a sequence of ints, got {x!r}") from None
    for i in items:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name} must contain ints, got {x!r}")
    return tuple(int(i) for i in items)


def _as_names(x, name: str) -> tuple[str, ...]:
    if x is None:
        return ()
    if isinstance(x, str):
        return (x,)
    items = tuple(x)
    for i in items:
        if not isinstance(i, str):
            raise TypeError(f"{name} must be a str or a sequence of str, got {x!r}")
    return items


def jit(fun: Callable | None = None, *, static_argnums: int | Iterable[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Iterable[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool | Inline = False,
        abstracted_axes: Any = None, in_shardings: Any = None, out_shardings: Any = None,
        compiler_options: dict[str, Any] | None = None, **unsupported: Any) -> Any:
    """Compile `fun`: trace it once per argument signature and run the compiled program.

    Also usable as `@jit(static_argnums=...)` (decorator factory). Arguments laid out over a
    mesh (`in_shardings`, or the NamedSharding they carry) make the program run per shard with
    the collectives its layout needs (runtime/sharded.py); `out_shardings` lay results out.
    """
    if unsupported:
        raise TypeError(f"jit() got unexpected keyword arguments {sorted(unsupported)}")
    from .stages import check_compiler_options  # (stages imports this module)
    check_compiler_options(compiler_options)  # (here, where JAX's XLA refuses at compile)
    _check_abstracted_axes(abstracted_axes, "jit")
    if device is not None:
        _check_device(device, backend)
    if backend not in (None, "cpu", "interpret", "llvm", "native"):
        raise ValueError(f"Unknown backend {backend!r}")
    backend = {"interpret": "interpret", "llvm": "native", "native": "native"}.get(backend)
    kw = dict(static_argnums=static_argnums, static_argnames=static_argnames,
              donate_argnums=donate_argnums, donate_argnames=donate_argnames,
              keep_unused=keep_unused, inline=inline, backend=backend,
              in_shardings=in_shardings, out_shardings=out_shardings)
    if fun is None:
        return lambda f: Jitted(f, **kw)
    return Jitted(fun, **kw)


def _check_device(device: Any, backend: str | None) -> None:
    """`device=`: tracejit has one device, the CPU, where every output already lives; any other
    value is an error. JAX deprecates the option and rejects it together with `backend`."""
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  "`jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the inputs "
                  "to the jitted function to get the same behavior.", DeprecationWarning,
                  stacklevel=3)
    if backend is not None:
        raise ValueError(f"can't specify both a device and a backend for jit, got "
                         f"device={device!r} and backend={backend!r}")
    if not any(device is d for d in devices()):
        raise ValueError(f"jit(device={device!r}): not a device of this process; tracejit "
                         f"runs on the CPU only, devices() = {devices()}.")


def _check_abstracted_axes(abstracted_axes: Any, where: str) -> None:
    if abstracted_axes is not None:
        raise NotImplementedError(
            f"{where}(abstracted_axes=...) (dynamic shapes, experimental in JAX) is not "
            "supported: tracejit traces and compiles one program per argument shape. Leave "
            "abstracted_axes unset.")


def make_jaxpr(fun: Callable, static_argnums: int | Iterable[int] = (),
               axis_env: Sequence[tuple[Any, int]] | None = None,
               return_shape: bool = False, abstracted_axes: Any = None) -> Callable:
    """`make_jaxpr(f)(*args)` -> the ClosedJaxpr that jit would compile (printable like JAX's).
    `axis_env`: (name, size) pairs of named axes to bind while tracing, so collectives over
    them (lax.psum, ...) are staged."""
    _check_abstracted_axes(abstracted_axes, "make_jaxpr")
    static_argnums = _as_tuple(static_argnums, "static_argnums")

    @functools.wraps(fun)
    def make(*args, **kwargs):
        j = Jitted(fun, static_argnums=static_argnums)
        try:
            with contextlib.ExitStack() as stack:
                for name, size in axis_env or ():
                    stack.enter_context(extend_axis_env(name, int(size)))
                entry, _ = j._trace(args, kwargs)
        except Exception as e:  # noqa: BLE001 - the one case reworded, the rest as they are
            if is_new_ref_for(e, j):
                raise NotImplementedError(
                    "make_jaxpr of a function that reads or writes a Ref it closes over is not "
                    "supported; pass the Ref's value (jax.freeze(ref) or ref[...]) instead, or "
                    "call the function under jit.") from None
            raise
        if return_shape:
            shapes = tree_unflatten(entry.out_tree, [ShapeDtypeStruct(a.shape, a.dtype,
                                                                      weak_type=a.weak_type)
                                                     for a in entry.closed.out_avals])
            return entry.closed, shapes
        return entry.closed
    return make


def eval_shape(fun: Callable, *args, **kwargs):
    # (a jitted function answers itself: its out_shardings are part of the answer)
    return (fun if isinstance(fun, Jitted) else Jitted(fun)).eval_shape(*args, **kwargs)


__all__ = ["jit", "make_jaxpr", "eval_shape", "clear_caches", "Jitted", "errors"]
