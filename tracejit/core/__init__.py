"""Core: values (avals, Array, dtypes), primitives, tracing, the jaxpr IR, pytrees, errors.

The package also answers as `jax.core`: the public names JAX keeps there are re-exported below
(the rest of tracejit imports the submodules directly)."""
from typing import Any, Union

from .avals import AbstractValue, ShapedArray  # noqa: F401
from .jaxpr import Literal, Var
from .jaxpr_util import eval_jaxpr_bind as _eval_jaxpr_bind
from .trace import Trace, Tracer, ensure_compile_time_eval, trace_state_clean  # noqa: F401

ParamDict = dict[str, Any]
Atom = Union[Var, Literal]
Value = Any
eval_context = ensure_compile_time_eval


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info: bool = True) -> list:
    """JAX's `core.eval_jaxpr`: evaluate `jaxpr` by binding each equation, so that whatever
    transformation is active sees its operations."""
    return _eval_jaxpr_bind(jaxpr, consts, *args)


def max_dim(d1: int, d2: int) -> int:
    return max(d1, d2)


def min_dim(d1: int, d2: int) -> int:
    return min(d1, d2)
