"""jax.experimental.pjit (user-facing, deprecated in JAX): `pjit`, jit as it was before jit
took shardings. What differs from jit: PartitionSpecs and None in in_shardings/out_shardings
name the mesh of a `with mesh:` block (JAX's legacy mesh context, not `jax.set_mesh`'s), None
meaning replicated over it, and the function is traced with that mesh as the abstract mesh.
As in JAX, reading `pjit` from this module warns."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.array import Array
from ..core.pytree import tree_map
from ..core.sharding import Mesh, NamedSharding, PartitionSpec, mesh_context, use_abstract_mesh
from ..runtime.devices import device_put
from ..runtime.jit import jit
from ._deprecated import deprecated_attribute

_MESSAGE = "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead."


class _Unspecified:
    """in_shardings / out_shardings not given: each value's layout is jit's to choose (JAX's
    UnspecifiedValue), where None given means replicated over the `with mesh:` block's mesh."""

    def __repr__(self) -> str:
        return "UnspecifiedValue"


UNSPECIFIED = _Unspecified()


def _on_mesh(shardings: Any, mesh: Mesh | None, what: str) -> Any:
    """in_shardings / out_shardings with their PartitionSpecs and Nones on `mesh` (None where
    not given: jit's own choice)."""
    if shardings is UNSPECIFIED:
        return None
    def leaf(s: Any) -> Any:
        if s is None:
            return None if mesh is None else NamedSharding(mesh, PartitionSpec())
        if isinstance(s, PartitionSpec):
            if mesh is None:
                raise RuntimeError(
                    f"pjit requires a non-empty mesh in context if you are passing "
                    f"`PartitionSpec`s to {what}. You can define a context mesh via "
                    f"`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to {what} and "
                    f"then the mesh context manager is not required.")
            return NamedSharding(mesh, s)
        return s
    return tree_map(leaf, shardings, is_leaf=lambda s: s is None or isinstance(s, PartitionSpec))


def _legacy_mesh() -> Mesh | None:
    """The mesh of the innermost `with mesh:` block, None outside any (or in an empty one)."""
    legacy = mesh_context().legacy
    return legacy[-1] if legacy and not legacy[-1].empty else None


def _traced_on(fun: Callable, mesh: Mesh) -> Callable:
    """`fun` run with `mesh`'s abstract mesh in effect (`jax.sharding.get_abstract_mesh()`
    inside a pjit-ed function answers the legacy mesh, as in JAX)."""
    @functools.wraps(fun)
    def traced(*args, **kwargs):
        with use_abstract_mesh(mesh.abstract_mesh):
            return fun(*args, **kwargs)
    return traced


class _Pjit:
    """What `pjit(f, ...)` returns: per legacy mesh in effect at a call, the jit of `f` with
    the shardings resolved on it; calls and jit's methods (lower, trace, eval_shape, ...) go
    to that jit."""

    def __init__(self, fun: Callable, in_shardings: Any, out_shardings: Any, kw: dict):
        if not callable(fun):
            raise TypeError(f"pjit requires a callable for its first argument, but got {fun} "
                            f"of type {type(fun)}.")
        self._fun, self._in, self._out, self._kw = fun, in_shardings, out_shardings, kw
        self._jits: dict = {}
        functools.update_wrapper(self, fun)

    def _jit(self):
        mesh = _legacy_mesh()
        jitted = self._jits.get(mesh)
        if jitted is None:
            fun = self._fun if mesh is None else _traced_on(self._fun, mesh)
            jitted = jit(fun, in_shardings=_on_mesh(self._in, mesh, "in_shardings"),
                         out_shardings=_on_mesh(self._out, mesh, "out_shardings"), **self._kw)
            self._jits[mesh] = jitted
        return jitted

    def __call__(self, *args, **kwargs):
        mesh = _legacy_mesh()
        if mesh is not None and self._in is UNSPECIFIED:
            # (as JAX's pjit: under a `with mesh:` block an argument never placed goes there
            # replicated, a placed one keeps its layout; static arguments are hashable, so
            # never arrays)
            replicated = NamedSharding(mesh, PartitionSpec())
            args, kwargs = tree_map(
                lambda x: device_put(x, replicated) if isinstance(x, np.ndarray) or (
                    isinstance(x, Array) and not x.committed) else x, (args, kwargs))
        return self._jit()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_fun", "_in", "_out", "_kw", "_jits"):
            raise AttributeError(name)
        return getattr(self._jit(), name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def _pjit(fun: Callable, in_shardings: Any = UNSPECIFIED, out_shardings: Any = UNSPECIFIED,
          static_argnums: Any = None, static_argnames: Any = None, donate_argnums: Any = None,
          donate_argnames: Any = None, keep_unused: bool = False, device: Any = None,
          backend: str | None = None, inline: bool = False,
          compiler_options: dict[str, Any] | None = None) -> Callable:
    """`jax.experimental.pjit.pjit` has been deprecated. Please use `jax.jit`."""
    return _Pjit(fun, in_shardings, out_shardings, {
        "static_argnums": static_argnums, "static_argnames": static_argnames,
        "donate_argnums": donate_argnums, "donate_argnames": donate_argnames,
        "keep_unused": keep_unused, "device": device, "backend": backend, "inline": inline,
        "compiler_options": compiler_options})


_pjit.__name__ = _pjit.__qualname__ = "pjit"


__getattr__ = deprecated_attribute(__name__, "pjit", _pjit, _MESSAGE)
