"""Mutable array references (jax.new_ref, Ref): values made functional while they are traced.

Eagerly a Ref holds an array. Where a function is staged (jit, a loop body, a cond branch), the
stager opens a RefScope: inside it every Ref the function touches reads and writes the scope's
own value for it (a tracer), so nothing leaks out of the trace; a Ref from outside the scope
that the scope does not hold raises `_NewRef`, and the stager (`thread_refs`) starts over with
that Ref's value as one more operand in and result out: the staged program stays functional
(JAX reaches the same form with its state primitives and their discharge).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .array import Array
from .avals import ShapedArray
from .trace import Tracer, get_aval, user_source_info


class AbstractRef:
    """The type of a Ref (JAX prints it `Ref{float32[3]}`)."""

    def __init__(self, inner: ShapedArray):
        self.inner_aval = inner

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    def __repr__(self) -> str:
        return f"Ref{{{self.inner_aval.str_long().lstrip('~')}}}"

    def __eq__(self, other) -> bool:
        return type(other) is AbstractRef and other.inner_aval == self.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))


class RefScope:
    """The values of the Refs a staged function sees: seeded with the operands the stager
    threads through (`owner` tells which stager), and every Ref created inside it."""

    def __init__(self, owner: object, seed: dict):
        self.owner = owner
        self.values: dict[Ref, Any] = dict(seed)


class _NewRef(Exception):
    """A staged function touched a Ref its scope does not hold: the stager adds it."""

    def __init__(self, owner: object, ref: Ref):
        super().__init__("internal: a Ref reached a staged function unannounced")
        self.owner, self.ref = owner, ref


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[RefScope] = []


_scopes = _Scopes()
_created = [False]  # has any Ref been made in this process? (until then staging skips refs)


def refs_in_use() -> bool:
    return _created[0]


class Ref:
    """A mutable array reference (jax.Ref): `ref[idx]` reads, `ref[idx] = v` writes (and
    `ref[idx] += v` both); writes inside jit, loops and cond are seen after them."""
    __slots__ = ("_value", "_aval", "_where", "__weakref__")
    __hash__ = object.__hash__
    _is_ref = True  # (what typeof looks for)

    def __init__(self, value: Any):
        aval = get_aval(value)
        self._aval = aval
        self._where = user_source_info()
        _created[0] = True
        scope = _scopes.stack[-1] if _scopes.stack else None
        if scope is None:
            self._value = value
        else:
            self._value = None
            scope.values[self] = value

    # --- the value, in the innermost scope -----------------------------------------------
    def _read(self) -> Any:
        if not _scopes.stack:
            if self._value is None:
                raise ValueError("This Ref was created inside a staged function (jit, a loop "
                                 "or cond) and cannot be used outside it.")
            return self._value
        scope = _scopes.stack[-1]
        if self in scope.values:
            return scope.values[self]
        raise _NewRef(scope.owner, self)

    def _write(self, value: Any) -> None:
        if not _scopes.stack:
            self._value = value
            return
        scope = _scopes.stack[-1]
        if self not in scope.values:
            raise _NewRef(scope.owner, self)
        scope.values[self] = value

    # --- the array-like surface ------------------------------------------------------------
    aval = property(lambda self: AbstractRef(self._aval))
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: int(np.prod(self._aval.shape, dtype=np.int64)))
    weak_type = property(lambda self: self._aval.weak_type)

    def __len__(self) -> int:
        if not self._aval.shape:
            raise TypeError("len() of unsized object")
        return self._aval.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        return get(self, idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        swap(self, idx, value, "swap")

    def __repr__(self) -> str:
        value = self._read() if self._value is not None or _scopes.stack else None
        if isinstance(value, Array):
            return "Ref" + repr(value)[len("Array"):]
        return f"Ref({self.aval!r})"

    __str__ = __repr__


def _is_full(idx: Any) -> bool:
    return idx is None or idx is Ellipsis or (isinstance(idx, tuple) and
                                              all(i is Ellipsis for i in idx))


def get(ref: Ref, idx: Any = None) -> Any:
    """ref[idx] (jax.ref.get): the whole value for idx None, `...` or ()."""
    value = ref._read()
    return value if _is_full(idx) else value[idx]


def swap(ref: Ref, idx: Any, value: Any, _function_name: str = "swap") -> Any:
    """Write value at ref[idx] and return what was there (jax.ref.swap). The value must have
    the indexed shape and the Ref's dtype."""
    old = ref._read()
    part = old if _is_full(idx) else old[idx]
    target = get_aval(part)
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        dtype, weak = dtypes.dtype_and_weak(value)  # (its own dtype, as in JAX: 7 is no float)
        value = Array.from_numpy(np.asarray(value, dtype), ShapedArray((), dtype, weak))
    aval = get_aval(value)
    if aval.dtype != ref.dtype:
        raise ValueError(f"Invalid dtype for `{_function_name}`. Ref dtype: {ref.dtype}. "
                         f"Value dtype: {aval.dtype}. ")
    if aval.shape != target.shape and not (aval.shape == () and not _is_full(idx)):
        raise ValueError(f"Invalid shape for `{_function_name}`. Ref shape: {ref.shape}. "
                         f"Expected shape: {target.shape}. Value shape: {aval.shape}. "
                         "Transforms: (). ")
    if not _scopes.stack and isinstance(value, Tracer) and not isinstance(old, Tracer):
        # a transformation's value (grad, vmap) written into a Ref made outside it would
        # outlive the transformation
        raise Exception("performing a set/swap operation with a differentiated value on a "
                        "non-differentiated array reference of type "
                        f"{ref.aval!r}. Move the array reference to be an argument of the "
                        "differentiated function?")
    new = value if _is_full(idx) else old.at[idx].set(value)
    ref._write(new)
    return part


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 - JAX's name
    """ref[idx] = value (jax.ref.set)."""
    swap(ref, idx, value, "set")


def addupdate(ref: Ref, idx: Any, x: Any) -> None:
    """ref[idx] += x (jax.ref.addupdate)."""
    swap(ref, idx, get(ref, idx) + x, "addupdate")


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A new mutable reference holding init_val (jax.new_ref)."""
    try:
        get_aval(init_val)
    except TypeError:
        raise TypeError("Error interpreting argument to new_ref as a JAX value. The problematic "
                        f"value is of type {type(init_val)} and was passed to new_ref at "
                        "position 0.") from None
    if not isinstance(init_val, (Array, Tracer)):
        aval = get_aval(init_val)
        init_val = Array.from_numpy(np.asarray(init_val, aval.dtype), aval)
    return Ref(init_val)


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A new reference of type ty (a ShapedArray or ShapeDtypeStruct), its contents unset
    (zeros here)."""
    aval = ShapedArray(tuple(ty.shape), np.dtype(ty.dtype))
    return Ref(Array.from_numpy(np.zeros(aval.shape, aval.dtype), aval))


def freeze(ref: Ref) -> Any:
    """The reference's final value (jax.freeze)."""
    return ref._read()


def free_ref(ref: Ref) -> None:
    """Release the reference (its value is no longer needed)."""


def check_no_refs(leaves: Sequence[Any], fun_name: str, fun_source: str, kind: str) -> None:
    """JAX's error for a staged function returning a Ref."""
    for x in leaves:
        if isinstance(x, Ref):
            where = x._where
            msg = (f"function {fun_name} at {fun_source} traced for {kind} returned a mutable "
                   f"array reference of type {x.aval!r}, "
                   "but mutable array references cannot be returned.")
            if where is not None:
                msg += f"\n\nThe returned mutable array was created on line {where.summary()}."
            raise ValueError(msg)


@contextlib.contextmanager
def ref_scope(owner: object, refs: Sequence[Ref], values: Sequence[Any]):
    """Run staged user code with `refs` holding `values` (tracers of the staging)."""
    scope = RefScope(owner, dict(zip(refs, values)))
    _scopes.stack.append(scope)
    try:
        yield scope
    finally:
        _scopes.stack.pop()


def thread_refs(owner: object, run: Callable[[list[Ref]], tuple[Any, list]]) -> Any:
    """Stage with Refs made functional: run(plan) stages the user's function with the values
    of the Refs in plan as extra operands (in a `ref_scope(owner, plan, ...)`), returning
    (result, the Refs' final values). A Ref the function touches beyond plan restarts run with
    it added; the final values are then written back (in the enclosing scope)."""
    plan: list[Ref] = []
    while True:
        try:
            result, finals = run(list(plan))
            break
        except _NewRef as e:
            if e.owner is not owner or e.ref in plan:
                raise
            plan.append(e.ref)
    for r, v in zip(plan, finals):
        r._write(v)
    return result


def current_values(refs: Sequence[Ref]) -> list:
    """The Refs' values in the enclosing scope (raising _NewRef for that scope's stager)."""
    return [r._read() for r in refs]


def stage_scope(owner: object):
    """The scope a stager opens while tracing a function that may touch Refs it was not given
    (when no Ref exists yet, none)."""
    return ref_scope(owner, (), ()) if _created[0] else contextlib.nullcontext()


def is_new_ref_for(err: BaseException, owner: object) -> bool:
    return isinstance(err, _NewRef) and err.owner is owner
