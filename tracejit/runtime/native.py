"""The native executable: compiles a closed jaxpr through the LLVM backend and calls its entry
point with ctypes (which releases the GIL during the call)."""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, Sequence

import numpy as np

from ..backend.llvm import codegen
from ..backend.llvm import jit_engine
from ..compiler.passes import optimize
from ..core.array import Array
from ..core.jaxpr import ClosedJaxpr
from .buffers import pool
from .executable import Executable

_names = itertools.count()


def _address(a: np.ndarray) -> int | None:
    """Address of a fresh writable array (faster than ndarray.ctypes.data)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(a)) if a.nbytes else None
_PLACEHOLDER = "tracejit_entry"
_compiled: dict[str, tuple] = {}  # IR text -> (optimised module, entry point)


def _compile_cached(ir_text: str, name: str):
    """Identical programs (same IR) share machine code: LLVM's O3 is most of compile time."""
    hit = _compiled.get(ir_text)
    if hit is None:
        entry = f"{name}_{next(_names)}"  # symbols are global to the one engine
        module = jit_engine.compile_ir(ir_text.replace(f'@"{_PLACEHOLDER}"', f'@"{entry}"'))
        hit = _compiled[ir_text] = (module, _ENTRY(jit_engine.function_address(entry)))
    return hit


_ENTRY = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                          ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


class NativeExecutable(Executable):
    backend = "native"

    def __init__(self, closed: ClosedJaxpr, name: str = "jit_fn"):
        super().__init__(closed)
        jaxpr, consts = optimize(closed.jaxpr, closed.consts)
        self.jaxpr = jaxpr
        self._consts = [np.ascontiguousarray(np.asarray(c)) for c in consts]
        self.program = codegen.generate(ClosedJaxpr(jaxpr, consts), _PLACEHOLDER)
        self._module, self._fn = _compile_cached(self.program.ir_text, name)
        self._const_addresses = [c.ctypes.data for c in self._consts]
        self._nin = len(self._consts) + len(jaxpr.invars)
        self._nout = len(jaxpr.outvars)

    def __call__(self, leaves: Sequence[Any]) -> list[Array]:
        ins = (ctypes.c_void_p * (self._nin or 1))(*self._const_addresses)
        keep = []  # NumPy copies made here must outlive the call
        for i, (x, aval) in enumerate(zip(leaves, self.in_avals), len(self._consts)):
            if type(x) is Array:
                ins[i] = x.address
                continue
            a = np.ascontiguousarray(x, dtype=aval.dtype)
            keep.append(a)
            ins[i] = a.ctypes.data
        outs = [pool.empty(a.shape, a.dtype) for a in self.out_avals]
        out_ptrs = (ctypes.c_void_p * (self._nout or 1))(*[_address(o) for o in outs])
        nws = self.program.workspace_bytes
        ws = pool.empty((nws,), np.dtype(np.uint8)) if nws else None
        self._fn(ins, out_ptrs, _address(ws) if ws is not None else None)
        if ws is not None:
            pool.give_back(ws if ws.base is None else ws.base)
        results = [Array.from_numpy(o, a) for o, a in zip(outs, self.out_avals)]
        for r in results:
            r._pool = pool
        return results

    def temp_bytes(self) -> int:
        return self.program.workspace_bytes

    def as_text(self, dialect: str | None = None) -> str:
        if dialect in ("llvm", "llvm-ir"):
            return str(self._module)
        if dialect == "asm":
            return jit_engine.create_target_machine().emit_assembly(self._module)
        lines = [f"// tracejit native executable: {len(self.program.fusion_plans[0][1].kernels)} "
                 f"fused kernels at top level, workspace {self.program.workspace_bytes} bytes",
                 str(self.jaxpr)]
        for jaxpr, plan in self.program.fusion_plans[:1]:
            for k, group in enumerate(plan.kernels):
                lines.append(f"// kernel {k}: " + " -> ".join(e.primitive.name for e in group))
        return "\n".join(lines)
