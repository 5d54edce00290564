"""lax.dce_sink: a use of values that jaxpr-level dead-code elimination keeps (JAX's effect), and
that compiles to nothing, as XLA's code has no trace of it; no outputs.
"""
from __future__ import annotations

from typing import Any

from ..core.primitive import Primitive
from ..core.pytree import tree_leaves

dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.effectful = True  # (its equation stays in the jaxpr through DCE, as JAX's)
dce_sink_p.def_abstract_eval(lambda x, *, prevent_mlir_dce: [])
dce_sink_p.def_impl(lambda x, *, prevent_mlir_dce: [])
# the compiler's first pass replaces it by nothing (prevent_mlir_dce keeps XLA's custom call
# alive in JAX's HLO; a native build has no later DCE that could want it)
dce_sink_p.def_composite(lambda x, *, prevent_mlir_dce: [])
dce_sink_p.def_jvp(lambda primals, tangents, **params: (dce_sink_p.bind(*primals, **params), []))
dce_sink_p.def_transpose(lambda ct, x, **params: [None])
dce_sink_p.def_batch(lambda vals, dims, **params: (dce_sink_p.bind(*vals, **params), []))


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
    """lax.dce_sink: mark every leaf of the pytree `val` used; returns None."""
    for leaf in tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))


__all__ = ["dce_sink"]
