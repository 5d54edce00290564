"""Executables: what `jit` runs on a cache hit. The reference backend evaluates the jaxpr with the
NumPy interpreter; the native backend (LLVM) plugs in here with the same interface."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr
from ..core.monitoring import BACKEND_COMPILE_EVENT, log_elapsed_time
from ..lax.callback import compiled_program
from . import backend_start


class Executable:
    """Runs a closed jaxpr on concrete NumPy inputs; returns Arrays."""
    backend = "abstract"

    def __init__(self, closed: ClosedJaxpr):
        self.closed = closed
        # (interned: a later call on its results finds its fast-path key by identity)
        self.out_avals: list[ShapedArray] = [interned(a) for a in closed.out_avals]
        self.in_avals: list[ShapedArray] = closed.in_avals

    def __call__(self, leaves: Sequence[Any]) -> list[Array]:
        """Run on flat argument leaves (Arrays, NumPy arrays or scalars of the input avals)."""
        raise NotImplementedError

    def runners(self, single: bool) -> tuple[Callable[[Sequence[Any]], Any],
                                             Callable[[Sequence[Any]], Any]]:
        """The call as jit's dispatch fast path makes it (its result: the only output itself
        if `single`): for Array arguments, and for arguments among which NumPy arrays or
        Python scalars are; backends specialise them for the signature."""
        call = self.__call__
        run = (lambda leaves: call(leaves)[0]) if single else call
        return run, run

    def as_text(self) -> str:
        raise NotImplementedError

    def temp_bytes(self) -> int:
        """Bytes of intermediates the executable needs besides its arguments and outputs."""
        raise NotImplementedError

    def alias_bytes(self) -> int:
        """Bytes of outputs written into donated inputs' buffers."""
        return 0


class InterpretExecutable(Executable):
    backend = "interpret"

    def __init__(self, closed: ClosedJaxpr):
        super().__init__(closed)
        self._consts = [np.asarray(c) for c in closed.consts]

    def __call__(self, leaves: Sequence[Any]) -> list[Array]:
        with compiled_program():  # (a failing callback raises as from native code)
            outs = eval_jaxpr(self.closed.jaxpr, self._consts,
                              *to_numpy_args(leaves, self.in_avals))
        return [Array.from_numpy(o, a) for o, a in zip(outs, self.out_avals)]

    def temp_bytes(self) -> int:
        # the interpreter materialises every intermediate
        outs = {id(v) for v in self.closed.jaxpr.outvars}
        return sum(v.aval.size * v.aval.dtype.itemsize for e in self.closed.jaxpr.eqns
                   for v in e.outvars if id(v) not in outs)

    def as_text(self) -> str:
        return (f"// tracejit executable (backend: interpret — the NumPy reference interpreter)\n"
                f"{self.closed.jaxpr}")


# one object per plain type (shape, dtype, weak type; no varying axes, no Explicit layout) that
# a compiled program returns or a dispatch fast-path key holds: a call on the results of an
# earlier call then finds its key by identity, not ShapedArray.__eq__ per argument (~70 ns
# each). As many as the compiled programs' distinct output and argument types.
_interned: dict[ShapedArray, ShapedArray] = {}


def interned(aval: Any) -> Any:
    """`aval`'s shared equal object where it is a plain ShapedArray (see `_interned`); any
    other value as it is."""
    if type(aval) is not ShapedArray or aval.vma or aval._sharding is not None:
        return aval
    return _interned.setdefault(aval, aval)


def compile_jaxpr(closed: ClosedJaxpr, backend: str | None = None,
                  donated: Sequence[tuple[int, int]] = (), fun_name: str = "jit_fn"
                  ) -> Executable:
    """`donated`: (output index, input index) pairs whose buffers may be shared (jit's match of
    donated arguments to outputs); the interpreter never reuses memory. `fun_name` names the
    function in the compile events (core/monitoring.py)."""
    backend = backend or config.tracejit_backend
    if backend == "interpret":
        with log_elapsed_time(BACKEND_COMPILE_EVENT, fun_name):  # (nothing to lower)
            return InterpretExecutable(closed)
    if backend == "native":
        backend_start.join()  # (its imports are then done, or not begun: never half-done)
        from .native import NativeExecutable
        return NativeExecutable(closed, donated=donated, fun_name=fun_name)
    raise ValueError(f"Unknown tracejit backend {backend!r}; available: 'interpret', 'native'.")


def to_numpy_args(leaves: Sequence[Any], avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    out = []
    for x, aval in zip(leaves, avals):
        if isinstance(x, Array):
            out.append(x._data)
        else:
            out.append(np.asarray(x, dtype=aval.dtype))
    return out
