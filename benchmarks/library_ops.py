"""Library operations outside the main table, ours vs JAX: sorting (sort, argsort, rows),
top_k, argmax, searchsorted, bincount, an integer product, pooling windows, 2-D FFTs,
categorical sampling, special functions (ndtri, spence, erfcx, log_ndtr, i0e, gammaln, digamma,
betainc, gammainc, polygamma), the two-method samplers (binomial, poisson), a float -> int
conversion and a CNN layer's convolutions -- where a user's program spends its time beyond
elementwise work and BLAS -- and patterns of users' programs once far behind JAX's
(_user_programs).

    python -m benchmarks.library_ops [--runs N] ["row substring" ...]

Each side runs in its own process (JAX in .venv-jax312 when present, else the test venv's),
the sides alternating N times. A row: the first call (trace + compile + run), then the median
of the calls made in `BUDGET` seconds (tracejit after its final code: runtime/tiering.py).
Prints each row's medians over the runs and JAX's time / ours (> 1: ours faster)."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from . import ROOT, jax_python, side_env
from .run_side import measure

BUDGET = 0.6


def rows(jax, jnp, lax) -> list[tuple[str, object, tuple]]:
    """(name, jitted function, arguments) of every row, the same on both sides."""
    import importlib

    import numpy as np
    special = importlib.import_module(f"{jax.__name__}.scipy.special")
    rng = np.random.default_rng(0)
    v = rng.standard_normal(1 << 20).astype(np.float32)
    m = rng.standard_normal((1000, 1000)).astype(np.float32)
    bias = rng.standard_normal(1000).astype(np.float32)
    bins = rng.integers(0, 1000, 1 << 20).astype(np.int32)
    small = rng.integers(-5, 5, (256, 256)).astype(np.int8)
    image = rng.standard_normal((8, 64, 64, 32)).astype(np.float32)
    plane = (m[:512, :512] + 1j * m[-512:, -512:]).astype(np.complex64)
    key = jax.random.PRNGKey(0)
    positive = rng.uniform(0.01, 5, 1 << 20).astype(np.float32)
    kernel = rng.standard_normal((3, 3, 32, 16)).astype(np.float32)
    layout = ("NHWC", "HWIO", "NHWC")
    table = [
        ("sort 1M float32", lambda a: jnp.sort(a), (v,)),
        ("argsort 1M float32", lambda a: jnp.argsort(a), (v,)),
        ("sort rows 1000x1000", lambda a: jnp.sort(a, axis=1), (m,)),
        ("top_k 8 of 1000x1000 rows", lambda a: lax.top_k(a, 8), (m,)),
        ("top_k 64 of 1000x1000 rows", lambda a: lax.top_k(a, 64), (m,)),
        ("argmax rows 1000x1000", lambda a: jnp.argmax(a, axis=1), (m,)),
        ("argmax of 1M (flattened)", lambda a: jnp.argmax(a), (m,)),
        ("argmax rows of x + b", lambda a, c: jnp.argmax(a + c, axis=1), (m, bias)),
        ("searchsorted 64K into 1M", lambda a, q: jnp.searchsorted(a, q),
         (np.sort(v), v[:1 << 16])),
        ("bincount 1M into 1000", lambda b: jnp.bincount(b, length=1000), (bins,)),
        ("int8 dot 256^3 -> int32",
         lambda a: jnp.dot(a, a, preferred_element_type=jnp.int32), (small,)),
        ("avg_pool 3x3 SAME 8x64x64x32",
         lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME"),
         (image,)),
        ("max_pool 3x3/2 SAME 8x64x64x32",
         lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
         (image,)),
        ("fft2 512x512 complex64", lambda a: jnp.fft.fft2(a), (plane,)),
        ("categorical 1000x1000", lambda k, a: jax.random.categorical(k, a), (key, m)),
        ("scipy.special.ndtri 1M float32", special.ndtri,
         (rng.uniform(0, 1, 1 << 20).astype(np.float32),)),
        ("scipy.special.spence 1M float32", special.spence, (positive,)),
        ("scipy.special.erfcx 1M float32", special.erfcx, (v,)),
        ("scipy.special.log_ndtr 1M float32", special.log_ndtr, (v * 4,)),
        ("scipy.special.i0e 1M float32", special.i0e, (v * 4,)),
        ("scipy.special.gammaln 1M float32", special.gammaln, (v * 4,)),
        ("scipy.special.digamma 1M float32", special.digamma, (v * 4,)),
        ("scipy.special.betainc 64K float32", special.betainc,
         (positive[:1 << 16] * 4, positive[1 << 16:2 << 16] * 4,
          rng.uniform(0.01, 0.99, 1 << 16).astype(np.float32))),
        ("scipy.special.gammainc 1M float32", special.gammainc,
         (positive * 4, positive[::-1] * 4)),
        ("scipy.special.polygamma(1, x) 1M float32", lambda a: special.polygamma(1, a),
         (positive * 4,)),
        ("random.binomial(20, 0.3) 64K",
         lambda k: jax.random.binomial(k, 20.0, 0.3, (1 << 16,)), (key,)),
        ("random.binomial(1000, 0.3) 64K",
         lambda k: jax.random.binomial(k, 1000.0, 0.3, (1 << 16,)), (key,)),
        ("random.poisson(3) 64K", lambda k: jax.random.poisson(k, 3.0, (1 << 16,)), (key,)),
        ("floor(x).astype(int32) 1M", lambda a: jnp.floor(a).astype(jnp.int32), (v,)),
        ("conv 3x3 8x32x32x32 -> 64",
         lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=layout),
         (image[:, :32, :32], rng.standard_normal((3, 3, 32, 64)).astype(np.float32))),
        ("conv 3x3 32x28x28x1 -> 32",
         lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=layout),
         (image.reshape(-1)[:32 * 28 * 28].reshape(32, 28, 28, 1),
          rng.standard_normal((3, 3, 1, 32)).astype(np.float32))),
        ("conv_transpose 3x3/2 8x32x32x32 -> 16",
         lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=layout),
         (image[:, :32, :32], kernel)),
        ("conv 3x3 weight gradient 8x32x32x32 -> 16",
         jax.grad(lambda w, x: lax.conv_general_dilated(
             x, w, (1, 1), "SAME", dimension_numbers=layout).sum()),
         (kernel, image[:, :32, :32])),
    ]
    return [(name, jax.jit(fn), args) for name, fn, args in table + _user_programs(jax, jnp, lax)]


def _user_programs(jax, jnp, lax) -> list:
    """Patterns of users' programs that once ran far behind JAX (10x to 2000x): a carry updated
    in place in a loop, a reshape or sum that divides its index, an operand contracted over
    a middle dimension, an op of broadcasts, a wide pytree of outputs, a convolution of one
    feature, a stack of many arrays, a scan asked to unroll, a gather's rows, a scatter into
    zeros, a cumulative sum down columns; arrays of a few columns (an image's channels, 3-vectors,
    rows of 3), a small matrix-vector product per point, a sum over middle axes, a large gemv,
    an LU, a compare-all reduction's first call, an ODE on a 3-vector; a logaddexp reduction, a
    reflect padding, a causal mask's iotas, a 2-D FFT (see "Programs beyond the table" in the
    README)."""
    import numpy as np
    rng = np.random.default_rng(1)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    long = np.arange(100_000, dtype=np.float32)
    mlp = [f32(64, 128) * 0.1, f32(128, 10) * 0.1]

    def causal_attention(q, k, v):
        s = q @ k.T / 8.0
        s = jnp.where(jnp.tril(jnp.ones((s.shape[0], s.shape[0]), bool)), s, -jnp.inf)
        return jax.nn.softmax(s, -1) @ v

    def per_example_norms(p, x, y):
        def loss(p, x, y):
            return jnp.sum((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)
        g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(p, x, y)
        return [jnp.linalg.norm(a.reshape(a.shape[0], -1), axis=1) for a in g]

    def adam_like(p, m, v, g):
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        return jax.tree_util.tree_map(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8),
                                      p, m, v), m, v
    def n_body(x):
        d = x[:, None, :] - x[None, :, :]
        return jnp.sum(d * (jnp.sum(d * d, -1) + 1e-3)[..., None] ** -1.5, 1)

    def lorenz(s):
        def f(s):
            return jnp.stack([10 * (s[1] - s[0]), s[0] * (28 - s[2]) - s[1],
                              s[0] * s[1] - 8 / 3 * s[2]])

        def step(i, s):
            k1 = f(s)
            k2 = f(s + 0.0005 * k1)
            k3 = f(s + 0.0005 * k2)
            k4 = f(s + 0.001 * k3)
            return s + 0.001 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return lax.fori_loop(0, 10_000, step, s)
    params = {f"l{i}": {"w": f32(64, 64), "b": f32(64)} for i in range(25)}
    ids = rng.integers(0, 50_000, 4096).astype(np.int32)
    starts = rng.integers(0, 100_000, 100_000).astype(np.int32)
    return [
        ("fori_loop: 10k steps of .at[i].set on 100K",
         lambda x: lax.fori_loop(0, 10_000, lambda i, a: a.at[i * 10].set(x[i] + 1),
                                 jnp.zeros_like(x)), (long,)),
        ("fori_loop: .at[i].set under a cond",
         lambda x: lax.fori_loop(0, 10_000, lambda i, a: lax.cond(
             i % 10 == 0, lambda a: a.at[i].set(x[i] * 4), lambda a: a, a),
             jnp.zeros_like(x)), (long,)),
        ("vmap(grad) per-example norms, 256 x MLP 64-128-10", per_example_norms,
         (mlp, f32(256, 64), f32(256, 10))),
        ("repeat(x, 2, 0) + x[::-1] of 1000^2",
         lambda x: jnp.concatenate([jnp.repeat(x, 2, axis=0), x[::-1]], 0), (f32(1000, 1000),)),
        ("image.resize bilinear 64^3 -> 64x128^2",
         lambda x: jax.image.resize(x, (64, 128, 128), "bilinear"), (f32(64, 64, 64),)),
        ("sum(sin(X) * Y), meshgrid of 2000",
         lambda a, b: jnp.sum(jnp.sin(jnp.meshgrid(a, b)[0]) * jnp.meshgrid(a, b)[1]),
         (f32(2000), f32(2000))),
        ("Adam-like update of 50 arrays", adam_like, (params, params, params, params)),
        ("jnp.convolve 100K by 64, same", lambda x, k: jnp.convolve(x, k, mode="same"),
         (f32(100_000), f32(64))),
        ("depthwise conv 3x3 NCHW 8x32x32x32",
         lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=32),
         (f32(8, 32, 32, 32), f32(32, 1, 3, 3))),
        ("jnp.stack of 100 arrays of 10K", lambda *xs: jnp.stack(xs),
         tuple(f32(10_000) for _ in range(100))),
        ("jnp.polyval, 9 coefficients at 1M points", lambda p, x: jnp.polyval(p, x),
         (f32(9), f32(1 << 20))),
        ("tanh of a gather of 4096 rows of 128",
         lambda t, i: jnp.tanh(t[i]), (f32(50_000, 128), ids)),
        ("embedding gradient, 50K x 128 at 4096 ids",
         jax.grad(lambda t, i: jnp.sum(jnp.tanh(t[i]))), (f32(50_000, 128), ids)),
        ("vmapped dynamic_slice of 16 at 100K starts",
         jax.vmap(lambda x, s: lax.dynamic_slice(x, (s,), (16,)), in_axes=(None, 0)),
         (long, starts)),
        ("cumsum over axis 0 of 1000^2", lambda x: jnp.cumsum(x, 0), (f32(1000, 1000),)),
        ("uint8 image (1080, 1920, 3) to normalised float32",
         lambda im: (im.astype(jnp.float32) / 255.0 - 0.5) / 0.25,
         (rng.integers(0, 256, (1080, 1920, 3)).astype(np.uint8),)),
        ("jnp.cross of 1M 3-vectors", jnp.cross, (f32(1_000_000, 3), f32(1_000_000, 3))),
        ("n-body forces, 1000 bodies", n_body, (f32(1000, 3),)),
        ("einsum nij,nj->ni: 1M points by their 3x3 matrices",
         lambda r, p: jnp.einsum("nij,nj->ni", r, p), (f32(1_000_000, 3, 3), f32(1_000_000, 3))),
        ("mean over (1, 2) of 32x64x64x64", lambda x: jnp.mean(x, axis=(1, 2)),
         (f32(32, 64, 64, 64),)),
        ("matrix-vector product 4096^2", lambda a, x: a @ x, (f32(4096, 4096), f32(4096))),
        ("jnp.linalg.det of 512^2", jnp.linalg.det, (f32(512, 512),)),
        ("jnp.isin of 100K in 1000", jnp.isin,
         (rng.integers(0, 5000, 100_000).astype(np.int32),
          rng.integers(0, 5000, 1000).astype(np.int32))),
        ("Lorenz system, 10k RK4 steps", lorenz, (np.ones(3, np.float32),)),
        ("jnp.logaddexp.reduce over rows of 1000^2",
         lambda x: jnp.logaddexp.reduce(x, axis=1), (f32(1000, 1000),)),
        ("jnp.pad of 1000^2 by 16, reflect", lambda x: jnp.pad(x, 16, mode="reflect"),
         (f32(1000, 1000),)),
        ("causal attention 1024x64", causal_attention, (f32(1024, 64), f32(1024, 64),
                                                         f32(1024, 64))),
        ("jnp.fft.rfft2 of 512^2", jnp.fft.rfft2, (f32(512, 512),)),
    ]


def side(impl: str, wanted: list[str]) -> dict:
    if impl == "jax":
        import jax
        import jax.numpy as jnp
        from jax import lax
        settle = None
    else:
        import tracejit as jax
        import tracejit.numpy as jnp
        from tracejit import lax
        from tracejit.runtime import tiering
        settle = tiering.wait
    out = {}
    for name, fn, args in rows(jax, jnp, lax):
        if wanted and not any(w in name for w in wanted):
            continue
        # each side's own arrays, made once: NumPy arguments cost JAX a copy to its device
        # every call (a 25.6 MB table 2.7 ms), tracejit none
        args = jax.tree_util.tree_map(jnp.asarray, args)
        first, median, _ = measure(fn, args, budget=BUDGET, settle=settle)
        out[name] = {"first": first, "median": median}
    return {"version": jax.__version__, "rows": out}


def _run_side(python: str, impl: str, wanted: list[str]) -> dict:
    proc = subprocess.run([python, "-m", "benchmarks.library_ops", "--side", impl, *wanted],
                          cwd=ROOT, env=side_env(TRACEJIT_PERSISTENT_CACHE="0"),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} side failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _time(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main(runs: int, wanted: list[str]) -> None:
    ours, theirs = [], []
    for _ in range(runs):  # alternating, so that a load change hits both sides alike
        ours.append(_run_side(sys.executable, "tracejit", wanted))
        theirs.append(_run_side(jax_python(), "jax", wanted))
    print(f"tracejit vs JAX {theirs[0]['version']}; runs: {runs}; load average now: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| operation | tracejit | JAX | vs JAX | 1st call tracejit | 1st call JAX |")
    print("|---|---|---|---|---|---|")
    for name in ours[0]["rows"]:
        med = [{k: statistics.median(r["rows"][name][k] for r in side_runs)
                for k in ("first", "median")} for side_runs in (ours, theirs)]
        print(f"| {name} | {_time(med[0]['median'])} | {_time(med[1]['median'])} | "
              f"{med[1]['median'] / med[0]['median']:.2f} | {_time(med[0]['first'])} | "
              f"{_time(med[1]['first'])} |")


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--side"]:
        print(json.dumps(side(argv[1], argv[2:])))
        sys.exit()
    n_runs = 1
    if "--runs" in argv:
        k = argv.index("--runs")
        n_runs, argv = int(argv[k + 1]), argv[:k] + argv[k + 2:]
    main(n_runs, argv)
