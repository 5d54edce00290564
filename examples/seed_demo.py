"""The user's brief, run with tracejit: each example of the article on jax.jit, its result, the
traced jaxpr, the compiled program, and jitted-vs-eager timings. `make demo` runs this file."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import tracejit as jax  # noqa: E402
import tracejit.numpy as jnp  # noqa: E402
from examples.seed import run  # noqa: E402
from tracejit import errors  # noqa: E402

OUT = Path(__file__).resolve().parent / "output"


def section(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def timed(fn, *args, repeat: int = 20) -> float:
    fn(*args)
    t = time.perf_counter()
    for _ in range(repeat):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - t) / repeat


def main() -> None:
    OUT.mkdir(exist_ok=True)
    section("1. Tracing with abstract values: naive_softmax lowered from a ShapeDtypeStruct")
    ns = run("01_softmax_lower.py")
    softmax = ns["naive_softmax"]
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32))
    print("\nThe traced jaxpr:")
    print(jax.make_jaxpr(softmax)(x))
    compiled = ns["jitted_softmax_lower"].compile()
    print("\nThe compiled program (Compiled.as_text()):")
    print(compiled.as_text())
    print("\nsoftmax(x) rows sum to", np.asarray(compiled(x)).sum(axis=-1))
    big = jnp.asarray(np.random.default_rng(1).standard_normal((1000, 1000)).astype(np.float32))
    jitted = jax.jit(softmax)
    t_jit, t_eager = timed(jitted, big), timed(softmax, big)
    print(f"softmax 1000x1000: jitted {t_jit * 1e3:.2f} ms, eager (op by op) "
          f"{t_eager * 1e3:.2f} ms")

    section("2. Static shapes: boolean masks under jit")
    ns = run("02_static_shapes.py")
    v = jnp.asarray(np.array([0.1, 0.7, 0.4, 0.9], np.float32))
    try:
        ns["unstable_shape_func"](v)
    except errors.NonConcreteBooleanIndexError as e:
        print("unstable_shape_func raises, as in JAX:", type(e).__name__)
        print("  ", str(e).splitlines()[0])
    print("stable_shape_func:", ns["stable_shape_func"](v))

    section("3. lax.cond chooses an integrator at run time")
    ns = run("03_cond_integrators.py")
    step = jax.jit(ns["dynamics_step"])
    state = (jnp.asarray(1.0), jnp.asarray(0.0))
    for sel in (1.0, -1.0):
        print(f"method_selector={sel:+}: new state", [float(s) for s in step(state, 0.1, sel)])
    print(jax.make_jaxpr(ns["dynamics_step"])(state, 0.1, 1.0))

    section("4. lax.scan: fixed point of x = cos(0.9 x)")
    ns = run("04_fixed_point_scan.py")
    fp = jax.jit(ns["fixed_point_iteration"], static_argnums=2)
    print("fixed point:", float(fp(0.5, 0.9, 100)))

    section("5. static_argnums: one compiled version per static value")
    ns = run("05_static_argnums.py")
    for k in ("out1", "out2", "out3"):
        print(f"{k} =", ns[k])
    print("compiled versions:", ns["apply_activation"]._cache_size())

    section("6. The SDE solver: as written, and with `steps` static")
    try:
        run("07_sde_solver.py")
    except errors.ConcretizationTypeError as e:
        print("As written (steps traced) it raises ConcretizationTypeError, as JAX does:")
        print("\n".join("   " + line for line in str(e).splitlines()[:6]))
    ns = run("07_sde_solver.py", edit=lambda s: s.replace(
        "static_argnames=('adaptive', )", "static_argnames=('adaptive', 'steps')"))
    import matplotlib.pyplot as plt
    path = OUT / "sde_trajectories.png"
    plt.savefig(path, dpi=80)
    print(f"trajectories plotted to {path}")
    solve = ns["solve_sde_euler_maruyama"]
    args = (ns["key"], ns["x0"], ns["theta"], ns["dt"])
    t = timed(lambda *a: solve(*a, steps=1000, adaptive=False), *args)
    print(f"1,000-step solve (jitted, compiled once): {t * 1e3:.3f} ms per call")


if __name__ == "__main__":
    main()
