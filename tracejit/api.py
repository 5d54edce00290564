"""Top-level functions composed of jit and the transforms (JAX keeps them in jax._src.api):
fwd_and_bwd. User-facing layer: above both runtime (jit) and transforms (vjp)."""
from __future__ import annotations

import operator
from typing import Callable, Sequence

from .runtime.jit import jit
from .transforms.api import vjp


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """`fwd(*args)` is `jax.vjp` of `fun` in the arguments `argnums`: (out, residuals) (and
    aux with has_aux); `bwd(residuals, ct)` pulls the cotangent `ct` back to those arguments
    (one cotangent for an int argnums, a tuple for a sequence). The residuals are the vjp
    function, a pytree of arrays, so with `jitted` both are jitted functions and `bwd` compiles
    once for all iterations (jit of a fresh vjp function would compile again each time)."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")
    nums = (operator.index(argnums),) if isinstance(argnums, int) else \
        tuple(operator.index(i) for i in argnums)

    def fwd(*args, **kwargs):
        def partial(*dyn):
            full = list(args)
            for i, v in zip(nums, dyn):
                full[i] = v
            return fun(*full, **kwargs)
        return vjp(partial, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, int) else g

    if jitted:
        fwd, bwd = jit(fwd), jit(bwd)
    return fwd, bwd
