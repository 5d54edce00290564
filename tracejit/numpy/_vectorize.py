"""`jnp.vectorize`: NumPy's generalized-ufunc wrapper, built on vmap (a user-facing layer over
transforms). The function sees each argument's core dimensions; the loop dimensions in front
broadcast against each other and become vmapped axes, innermost last."""
from __future__ import annotations

import functools
import re
from typing import Callable, Collection

import numpy as np

from ..transforms.api import vmap
from ._shape import expand_dims, squeeze
from ._util import asarray, broadcast_shapes

_NAME = r"\w+"
_ARGUMENT = rf"\((?:{_NAME}(?:,{_NAME})*)?\)"
_SIGNATURE = rf"^{_ARGUMENT}(?:,{_ARGUMENT})*->{_ARGUMENT}(?:,{_ARGUMENT})*$"


def _parse_signature(signature: str) -> tuple[list[tuple], list[tuple]]:
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    if not re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = ([tuple(re.findall(_NAME, a)) for a in re.findall(_ARGUMENT, side)]
                 for side in signature.split("->"))
    return ins, outs


def _bind_core_dims(sizes: dict, shape: tuple, core: tuple, context: str, *,
                    is_input: bool) -> None:
    """Record the sizes of `core`'s named dimensions in `sizes`, raising NumPy's errors when a
    shape has too few dimensions or disagrees with a size seen before."""
    if is_input and len(shape) < len(core):
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all "
                         f"core dimensions {core!r} {context}")
    if not is_input and len(shape) != len(core):
        raise ValueError(f"output shape {shape!r} does not match core dimensions {core!r} "
                         f"{context}")
    for name, size in zip(core, shape[len(shape) - len(core):]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                             f"{sizes[name]!r} {context}")


def _without_excluded(func: Callable, excluded: Collection, args: tuple, kwargs: dict):
    """`func` with the excluded arguments bound, and the arguments left to vectorize."""
    static_args = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
                   if i < len(args)]
    static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in excluded)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}

    def bound(*args):
        args = list(args)
        for i, a in static_args:
            args.insert(i, a)
        return func(*args, **dyn_kwargs, **static_kwargs)
    return bound, dyn_args


def vectorize(pyfunc: Callable, *, excluded: Collection = frozenset(),
              signature: str | None = None) -> Callable:
    """Vectorize `pyfunc` over leading (loop) dimensions, as `numpy.vectorize` with a gufunc
    `signature` such as '(n),(n)->()'; without one every argument is a scalar to pyfunc.
    `excluded` names positions or keywords passed through unvectorized."""
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and " \
                  f"signature={signature!r}"
        func, args = _without_excluded(pyfunc, excluded, args, kwargs)
        if signature is None:
            in_core, out_core = [()] * len(args), None
        else:
            in_core, out_core = _parse_signature(signature)
        nones = {i for i, a in enumerate(args) if a is None}
        if nones:
            if any(in_core[i] != () for i in nones):
                raise ValueError(f"Cannot pass None at locations {nones} with "
                                 f"signature={signature!r}")
            func, args = _without_excluded(func, nones, args, {})
            in_core = [c for i, c in enumerate(in_core) if i not in nones]
        args = tuple(asarray(a) for a in args)
        if len(args) != len(in_core):
            raise TypeError(f"wrong number of positional arguments: expected {len(in_core)!r}, "
                            f"got {len(args)!r} {context}")
        sizes: dict = {}
        for a, core in zip(args, in_core):
            _bind_core_dims(sizes, a.shape, core, context, is_input=True)
        loops = [a.shape[:a.ndim - len(core)] for a, core in zip(args, in_core)]
        loop_shape = broadcast_shapes(*loops)
        checked = func if out_core is None else _checking_outputs(func, sizes, out_core,
                                                                  context)
        # size-1 loop dimensions are squeezed and left unbatched (in_axes None) rather than
        # broadcast, so vmap's rules see only the arguments that really vary
        squeezed = [squeeze(a, axis=tuple(i for i, n in enumerate(loop) if n == 1))
                    for a, loop in zip(args, loops)]
        filled = [(1,) * (len(loop_shape) - len(loop)) + tuple(loop) for loop in loops]
        vectorized, expand = checked, []
        for dim in range(len(loop_shape) - 1, -1, -1):  # innermost loop dimension first
            in_axes = tuple(None if shape[dim] == 1 else 0 for shape in filled)
            if all(ax is None for ax in in_axes):
                expand.append(dim)
            else:
                vectorized = vmap(vectorized, in_axes)
        out = vectorized(*squeezed)
        if not expand:
            return out
        if isinstance(out, tuple):
            return tuple(expand_dims(o, sorted(expand)) for o in out)
        return expand_dims(out, sorted(expand))
    return wrapped


def _checking_outputs(func: Callable, sizes: dict, out_core: list, context: str) -> Callable:
    def checked(*args):
        out = func(*args)
        shapes = [np.shape(o) for o in (out if isinstance(out, tuple) else [out])]
        if len(out_core) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                            f"{out!r}\n{context}")
        if len(shapes) != len(out_core):
            raise TypeError(f"wrong number of output arguments: expected {len(out_core)!r}, "
                            f"got {len(shapes)!r} {context}")
        own = dict(sizes)
        for shape, core in zip(shapes, out_core):
            _bind_core_dims(own, shape, core, context, is_input=False)
        return out
    return checked


__all__ = ["vectorize"]
