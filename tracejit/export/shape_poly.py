"""jax.export's shape polymorphism, refused: tracejit's abstract values (core/avals.py) hold
integer dimensions only, and its compiler specialises every loop nest to them, so no symbolic
dimension can be traced or compiled. Specs whose every dimension is a constant are read (as
JAX reads them, to integers); a dimension variable raises NotImplementedError saying so."""
from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import Any

from ..core.pytree import tree_leaves

_MISSING = ("shape polymorphism (symbolic dimensions) is not supported by tracejit: its "
            "abstract values and compiled programs have integer dimensions only. Export the "
            "function once per concrete shape instead")


class SymbolicScope:
    """JAX's scope of dimension variables and constraints: none can be made here."""

    def __init__(self, constraints_str: Sequence[str] = ()):
        raise NotImplementedError(f"jax.export.SymbolicScope: {_MISSING}.")


def is_symbolic_dim(p: Any) -> bool:
    """Whether `p` is a symbolic dimension: never, in tracejit."""
    return False


def _parse_dims(shape_spec: str | None, like: Sequence[int | None] | None) -> tuple[int, ...]:
    spec = "..." if shape_spec is None else shape_spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    parts = [p.strip() for p in spec.split(",")]
    if parts and parts[-1] == "" and len(parts) > 1:  # "(4,)"
        parts.pop()
    if parts == [""]:
        parts = []
    if "..." in parts:
        if parts.count("...") > 1 or parts[-1] != "...":
            raise ValueError(f"syntax error in symbolic shape {shape_spec!r}: '...' must be "
                             "the last dimension")
        if like is None:
            raise ValueError(f"shape {shape_spec!r} has '...' and needs `like`")
        parts = parts[:-1] + ["_"] * (len(like) - len(parts) + 1)
    dims = []
    for i, part in enumerate(parts):
        if part == "_":
            if like is None or i >= len(like) or like[i] is None:
                raise ValueError(f"shape {shape_spec!r} has a placeholder '_' at dimension "
                                 f"{i} that `like` does not fill")
            dims.append(int(like[i]))
        elif re.fullmatch(r"-?\d+", part):
            dims.append(int(part))
        else:
            raise NotImplementedError(
                f"jax.export.symbolic_shape({shape_spec!r}): dimension {part!r} is symbolic; "
                f"{_MISSING}.")
    if like is not None:
        if len(like) != len(dims):
            raise ValueError(f"shape {shape_spec!r} has {len(dims)} dimensions and `like` "
                             f"{len(like)}")
        for d, l in zip(dims, like):
            if l is not None and l != d:
                raise ValueError(f"shape {shape_spec!r} does not match like={tuple(like)}")
    return tuple(dims)


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[int, ...]:
    """JAX's parser of shape specs, for constant dimensions only ("4, 5" -> (4, 5))."""
    if constraints:
        raise NotImplementedError(f"jax.export.symbolic_shape(constraints=...): {_MISSING}.")
    return _parse_dims(shape_spec, like)


def symbolic_dim_bounds(dimension: Any) -> tuple[int, int]:
    """The inclusive bounds JAX can prove for a dimension: (d, d) for an integer d, the only
    dimensions here (JAX reads it with operator.index: TypeError for a float, say)."""
    d = operator.index(dimension)
    return d, d


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None) -> Any:
    """ShapeDtypeStructs for `args` from shape specs: constant dimensions only."""
    from ..core.avals import ShapeDtypeStruct
    from ..core.pytree import tree_flatten, tree_unflatten
    from ..core.trace import get_aval
    leaves, tree = tree_flatten(args)
    if shapes_specs is None or isinstance(shapes_specs, str):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = tree.flatten_up_to(shapes_specs)
    out = []
    for x, spec in zip(leaves, specs):
        aval = get_aval(x) if not hasattr(x, "shape") or not hasattr(x, "dtype") else x
        shape = symbolic_shape(spec, constraints=constraints, scope=scope, like=aval.shape)
        out.append(ShapeDtypeStruct(shape, aval.dtype))
    return tree_unflatten(tree, out)


def check_no_symbolic(specs: Any) -> None:
    """Refuse a spec whose shape has a dimension that is not an integer (a string, say)."""
    for leaf in tree_leaves(specs):
        shape = getattr(leaf, "shape", None)
        if isinstance(shape, tuple) and any(not isinstance(d, int) and
                                            not hasattr(d, "__index__") for d in shape):
            raise NotImplementedError(f"jax.export.export with shape {shape}: {_MISSING}.")
