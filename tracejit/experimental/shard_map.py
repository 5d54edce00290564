"""jax.experimental.shard_map (user-facing, deprecated in JAX): the old spelling of
jax.shard_map (tracejit/shard_map.py) — mesh, in_specs and out_specs positional, `check_rep` for
check_vma, every mesh axis manual. As in JAX, reading `shard_map` from this module warns."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..shard_map import shard_map as _jax_shard_map
from ._deprecated import deprecated_attribute

_MESSAGE = "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map instead."


def _shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any,
               check_rep: bool = True) -> Callable:
    """Please use `jax.shard_map`: this is `jax.shard_map(f, mesh=mesh, in_specs=in_specs,
    out_specs=out_specs, check_vma=check_rep)` over all of the mesh's axes."""
    return _jax_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                          check_vma=check_rep)


_shard_map.__name__ = _shard_map.__qualname__ = "shard_map"


__getattr__ = deprecated_attribute(__name__, "shard_map", _shard_map, _MESSAGE)
