"""CPU time per jitted call on the steady-state path (the call's fixed cost), for the kinds of
call issue 12 names: a scalar `x + 1`, softmax 3x5, four arguments, a pytree argument, a static
argument, a donated argument, a NumPy argument, a small array, a keyword argument, three outputs,
a Python float and int, and a method jitted with `self` static. Runs with whichever library `import` finds,
so a before/after pair is two PYTHONPATHs (or `--jax` for JAX itself):

    python -m benchmarks.dispatch_cost [--jax] [--rounds R] [--calls N] [case substring ...]

Prints, per case, the median and the best of R rounds of N calls (ns of process CPU per call)."""
from __future__ import annotations

import functools
import statistics
import sys
import time

import numpy as np


def _cases(jax, jnp):
    rng = np.random.default_rng(0)
    def f32(*shape):
        return jnp.asarray(rng.standard_normal(shape).astype(np.float32))

    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)

    add = jax.jit(lambda x: x + 1)
    four = jax.jit(lambda a, b, c, d: a * b + c - d)
    tree = jax.jit(lambda p, x: p["w"] * x + p["b"])
    static = jax.jit(lambda x, n: x * n, static_argnums=1)
    donated = jax.jit(lambda x: x + 1, donate_argnums=0)
    x, v = jnp.asarray(np.float32(1.0)), f32(4)
    params = {"w": f32(4), "b": f32(4)}
    state = [f32(4)]

    def donate_step():  # (a donated argument is deleted: each call donates the last result)
        state[0] = donated(state[0])

    host = np.ones(4, np.float32)
    kw = jax.jit(lambda x, y: x * y + 1)
    outs3 = jax.jit(lambda x: (x + 1, x * 2, x - 3))

    class Model:
        def __init__(self, scale):
            self.scale = scale

        @functools.partial(jax.jit, static_argnums=0)
        def apply(self, x):
            return x * 2 + 1

        def __hash__(self):
            return id(self)

        def __eq__(self, other):
            return self is other

    model = Model(2.0)
    sm, jitted_softmax = f32(3, 5), jax.jit(softmax)
    return {
        "x+1 scalar": lambda: add(x),
        "softmax 3x5": lambda: jitted_softmax(sm),
        "4 arguments": lambda: four(v, v, v, v),
        "pytree argument": lambda: tree(params, v),
        "static_argnums": lambda: static(v, 3),
        "donated": donate_step,
        "numpy argument": lambda: add(host),
        "small array x+1": lambda: add(v),
        "keyword argument": lambda: kw(v, y=v),
        "3 outputs": lambda: outs3(v),
        "python float": lambda: add(2.0),
        "python int": lambda: add(2),
        "method (self static)": lambda: model.apply(v),
    }


def main(argv: list[str]) -> None:
    use_jax = "--jax" in argv
    argv = [a for a in argv if a != "--jax"]
    rounds, calls = 7, 20_000
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i:i + 2]
    if "--calls" in argv:
        i = argv.index("--calls")
        calls = int(argv[i + 1])
        del argv[i:i + 2]
    if use_jax:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_platforms", "cpu")
    else:
        import tracejit as jax
        import tracejit.numpy as jnp
    cases = _cases(jax, jnp)
    for name, call in cases.items():
        if argv and not any(s in name for s in argv):
            continue
        for _ in range(200):  # compiled, and the fast path's index filled
            call()
        if use_jax:  # (JAX runs asynchronously: its loop waits for the last result)
            jax.block_until_ready(jax.numpy.zeros(()))
        per_call = []
        for _ in range(rounds):
            c0 = time.process_time_ns()
            for _ in range(calls):
                call()
            per_call.append((time.process_time_ns() - c0) / calls)
        print(f"{name:18} median {statistics.median(per_call):7.0f} ns   "
              f"best {min(per_call):7.0f} ns")


if __name__ == "__main__":
    main(sys.argv[1:])
