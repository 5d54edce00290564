"""`pmap`: map a function over devices. tracejit has one device (the host CPU), so a mapped
axis may have length 1 (or device_count()); the program is compiled once, as jit of vmap.
Runtime layer: built from the vmap transformation and jit."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..core.devices import device_count
from ..core.pytree import tree_flatten
from ..core.trace import get_aval
from ..transforms.api import vmap
from .jit import jit


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | tuple[int, ...] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | tuple[int, ...] = ()) -> Callable:
    """JAX's `pmap` on tracejit's single device: `fun` mapped over axis `in_axes` of its
    arguments, each slice on a device, results stacked on `out_axes`; the mapped axis must be
    no longer than device_count()."""
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    mapped = vmap(fun, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                  axis_size=axis_size)
    compiled = jit(mapped, static_argnums=static, donate_argnums=donate_argnums,
                   backend=backend)
    available = len(devices) if devices is not None else device_count(backend)

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        dynamic = [a for i, a in enumerate(args) if i not in static]
        per_arg = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        dynamic_axes = [ax for i, ax in enumerate(per_arg) if i not in static]
        for arg, ax in zip(dynamic, dynamic_axes):
            if ax is None:
                continue
            for leaf in tree_flatten(arg)[0]:
                size = get_aval(leaf).shape[ax]
                if size > available:
                    raise ValueError(
                        f"compiling computation that requires {size} logical devices, but "
                        f"only {available} devices are available (pmap maps axis {ax} of "
                        f"length {size} over devices; tracejit has one CPU device: use vmap "
                        f"to vectorise over the axis instead)")
        return compiled(*args, **kwargs)
    return pmapped
