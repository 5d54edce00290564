"""The benchmark workloads, written once against JAX's API and run with tracejit, JAX or NumPy.

Each workload is `(name, build)`: `build(jax, jnp, lax, random)` returns `(fn, args)` where fn is
already wrapped in the implementation's jit (None for NumPy where no equivalent exists).
"""
from __future__ import annotations

import numpy as np


def _softmax(jnp):
    def softmax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)
    return softmax


def dispatch(jax, jnp, lax, random):
    return jax.jit(lambda x: x + 1), (jnp.asarray(np.float32(1.0)),)


def softmax(n, m):
    def build(jax, jnp, lax, random):
        x = jnp.asarray(np.random.default_rng(0).standard_normal((n, m)).astype(np.float32))
        return jax.jit(_softmax(jnp)), (x,)
    return build


def chain(jax, jnp, lax, random):
    x = jnp.asarray(np.linspace(-3, 3, 10_000_000, dtype=np.float32))
    return jax.jit(lambda x: jnp.tanh(x) * 0.5 + jnp.exp(-x * x) * jnp.sin(3 * x) - 1), (x,)


def sde(steps, adaptive):
    def build(jax, jnp, lax, random):
        def drift(x, theta):
            return theta[0] * x

        def diffusion(x, theta):
            return theta[1] * x

        def solve(key, x0, theta, dt, steps, adaptive=False):
            def step(carry, t):
                key, x, dt_current = carry
                key, subkey = random.split(key)
                dw = random.normal(subkey) * jnp.sqrt(dt_current)
                dx = drift(x, theta) * dt_current + diffusion(x, theta) * dw
                x_new = x + dx
                if adaptive:
                    dt_next = lax.cond(jnp.abs(dx / x) > 0.1, lambda d: d * 0.5, lambda d: d,
                                       dt_current)
                else:
                    dt_next = dt_current
                return (key, x_new, dt_next), x_new
            (_, final_x, _), traj = lax.scan(step, (key, x0, dt), xs=jnp.arange(steps))
            return jnp.concatenate([x0[jnp.newaxis], traj]), final_x
        fn = jax.jit(solve, static_argnames=("adaptive", "steps"))
        args = (random.PRNGKey(42), jnp.array(1.0), jnp.array([0.05, 0.2]), 0.01)
        return (lambda *a: fn(*a, steps=steps, adaptive=adaptive)), args
    return build


def fixed_point(n):
    def build(jax, jnp, lax, random):
        def solve(x0, coeff):
            def body(x, _):
                return jnp.cos(coeff * x), None
            return lax.scan(body, x0, xs=None, length=10_000)[0]
        x0 = jnp.asarray(np.full(n, 0.5, np.float32)) if n else jnp.asarray(np.float32(0.5))
        return jax.jit(solve), (x0, jnp.asarray(np.float32(0.9)))
    return build


def activation(kind):
    def build(jax, jnp, lax, random):
        def act(x):
            if kind == "polynomial":
                return x * x * x
            if kind == "relu":
                return jax.nn.relu(x)
            return jax.nn.leaky_relu(x, negative_slope=0.01)
        return jax.jit(act), (jnp.asarray(np.linspace(-2, 2, 1_000_000, dtype=np.float32)),)
    return build


def matmul(jax, jnp, lax, random):
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
    return jax.jit(lambda a, b: a @ b), (a, a)


def newton_sqrt(jax, jnp, lax, random):
    def sqrt(y):
        def cond(s):
            x, i = s
            return i < 20
        def body(s):
            x, i = s
            return 0.5 * (x + y / x), i + 1
        return lax.while_loop(cond, body, (y, 0))[0]
    y = jnp.asarray(np.linspace(1, 100, 1_000_000, dtype=np.float32))
    return jax.jit(sqrt), (y,)


def euler_xs_ys(jax, jnp, lax, random):
    """Euler steps of dx/dt = sin(x) - x + f(t) for a 1000-vector over 10k steps: the forcing
    f comes in per step (xs, 10k x 1000) and the trajectory goes out (ys, 10k x 1000)."""
    def integrate(x0, forcing):
        def step(x, f):
            x = x + 0.01 * (jnp.sin(x) - x + f)
            return x, x
        return lax.scan(step, x0, forcing)
    return jax.jit(integrate), tuple(jnp.asarray(a) for a in _euler_inputs())


def _euler_inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal(1000).astype(np.float32),
            rng.standard_normal((10_000, 1000)).astype(np.float32))


def fori(jax, jnp, lax, random):
    return jax.jit(lambda x: lax.fori_loop(0, 10_000, lambda i, x: x * 0.999 + 0.001, x)), \
        (jnp.asarray(np.float32(1.0)),)


def mlp_grad(jax, jnp, lax, random):
    rng = np.random.default_rng(0)
    params = {"w1": jnp.asarray(rng.standard_normal((784, 512)).astype(np.float32) * 0.05),
              "b1": jnp.asarray(np.zeros(512, np.float32)),
              "w2": jnp.asarray(rng.standard_normal((512, 10)).astype(np.float32) * 0.05),
              "b2": jnp.asarray(np.zeros(10, np.float32))}
    x = jnp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
    y = jnp.asarray(rng.integers(0, 10, 128).astype(np.int32))

    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
    return jax.jit(jax.grad(loss)), (params, x, y)


def mlp_step(jax, jnp, lax, random):
    """benchmarks/scaling.py's one-device training step: a 256-256-1 tanh MLP on a batch of
    4096, squared error, plain SGD (two 4096x256x256 products, gemvs, elementwise)."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(4096, 256)).astype(np.float32))
    y = jnp.asarray(rng.normal(size=(4096, 1)).astype(np.float32))
    params = {"w1": jnp.asarray(rng.normal(size=(256, 256)).astype(np.float32) / 16),
              "w2": jnp.asarray(rng.normal(size=(256, 1)).astype(np.float32) / 16)}

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g)
    return jax.jit(step), (params, x, y)


def normal_10m(jax, jnp, lax, random):
    return jax.jit(lambda k: random.normal(k, (10_000_000,))), (random.PRNGKey(0),)


def _spd(n):
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


def cholesky_solve(n):
    def build(jax, jnp, lax, random):
        def solve(a, b):  # factor, then the two triangular solves (LAPACK potrf + trsm)
            L = jnp.linalg.cholesky(a)
            y = lax.linalg.triangular_solve(L, b, left_side=True, lower=True)
            return lax.linalg.triangular_solve(L, y, left_side=True, lower=True,
                                               transpose_a=True)
        b = np.random.default_rng(1).standard_normal((n, 8)).astype(np.float32)
        return jax.jit(solve), (jnp.asarray(_spd(n)), jnp.asarray(b))
    return build


def batched_inverse(batch, n):
    def build(jax, jnp, lax, random):
        x = np.random.default_rng(0).standard_normal((batch, n, n)).astype(np.float32)
        return jax.jit(jnp.linalg.inv), (jnp.asarray(x + 8 * np.eye(n, dtype=np.float32)),)
    return build


def cnn_grad(batch, side=28):
    """A small CNN's loss and gradients: conv 3x3x16 - relu - maxpool 2 - conv 3x3x32 - relu -
    maxpool 2 - dense 10 on `batch` images of side x side (NHWC; side a multiple of 4)."""
    def build(jax, jnp, lax, random):
        rng = np.random.default_rng(0)
        flat = (side // 4) ** 2 * 32
        params = {"c1": jnp.asarray(rng.standard_normal((3, 3, 1, 16)).astype(np.float32) * 0.3),
                  "c2": jnp.asarray(rng.standard_normal((3, 3, 16, 32)).astype(np.float32) * 0.1),
                  "w": jnp.asarray(rng.standard_normal((flat, 10)).astype(np.float32) * 0.02)}
        x = jnp.asarray(rng.standard_normal((batch, side, side, 1)).astype(np.float32))
        y = jnp.asarray(rng.integers(0, 10, batch).astype(np.int32))
        dn = ("NHWC", "HWIO", "NHWC")

        def block(h, w):
            h = jax.nn.relu(lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=dn))
            return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

        def loss(p, x, y):
            h = block(block(x, p["c1"]), p["c2"]).reshape((x.shape[0], -1))
            logp = jax.nn.log_softmax(h @ p["w"])
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return jax.jit(jax.value_and_grad(loss)), (params, x, y)
    return build


def rfft(n):
    def build(jax, jnp, lax, random):
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        return jax.jit(jnp.fft.rfft), (jnp.asarray(x),)
    return build


def logsumexp(n, m):
    def build(jax, jnp, lax, random):
        x = np.random.default_rng(0).standard_normal((n, m)).astype(np.float32)
        return jax.jit(lambda x: jax.nn.logsumexp(x, axis=-1)), (jnp.asarray(x),)
    return build


def sum_10m(jax, jnp, lax, random):
    x = jnp.asarray(np.random.default_rng(0).standard_normal(10_000_000).astype(np.float32))
    return jax.jit(jnp.sum), (x,)


WORKLOADS = [
    ("dispatch x+1 (scalar)", dispatch),
    ("softmax 3x5", softmax(3, 5)),
    ("softmax 1000x1000", softmax(1000, 1000)),
    ("softmax 4096x4096", softmax(4096, 4096)),
    ("elementwise chain 10M", chain),
    ("SDE 1,000 steps", sde(1_000, False)),
    ("SDE 1,000 steps adaptive", sde(1_000, True)),
    ("SDE 100,000 steps", sde(100_000, False)),
    ("SDE 100,000 steps adaptive", sde(100_000, True)),
    ("fixed-point scan scalar (10k)", fixed_point(0)),
    ("fixed-point scan 1000-vector (10k)", fixed_point(1000)),
    ("scan with xs/ys 1000-vector (10k)", euler_xs_ys),
    ("polynomial activation 1M", activation("polynomial")),
    ("relu 1M", activation("relu")),
    ("leaky_relu 1M", activation("leaky_relu")),
    ("matmul 1024x1024", matmul),
    ("MLP 784-512-10 jit(grad), batch 128", mlp_grad),
    ("MLP step 256-256-1, batch 4096 (scaling.py's)", mlp_step),
    ("random.normal 10M", normal_10m),
    ("while_loop Newton sqrt 1M", newton_sqrt),
    ("fori_loop 10k scalar steps", fori),
    ("Cholesky solve 512x512", cholesky_solve(512)),
    ("batched inverse 64x(32x32)", batched_inverse(64, 32)),
    ("CNN forward+grad (2 conv, 32x28x28)", cnn_grad(32)),
    ("rfft 2^20", rfft(2 ** 20)),
    ("logsumexp 4096x4096 (rows)", logsumexp(4096, 4096)),
    ("sum 10M", sum_10m),
]


# --- the same workloads in plain NumPy (None where NumPy has no counterpart) ----------------

def _np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_sde(steps):
    def run(x0=1.0, mu=0.05, sigma=0.2, dt=0.01):
        rng = np.random.default_rng(42)
        x = np.float32(x0)
        traj = np.empty(steps + 1, np.float32)
        traj[0] = x
        for i in range(steps):  # NumPy has no compiled loop: one Python iteration per step
            dw = np.float32(rng.standard_normal()) * np.float32(np.sqrt(dt))
            x = x + mu * x * dt + sigma * x * dw
            traj[i + 1] = x
        return traj
    return run, ()


def _np_fixed_point(n):
    def run(x, c=np.float32(0.9)):
        for _ in range(10_000):
            x = np.cos(c * x)
        return x
    return run, (np.full(n, 0.5, np.float32) if n else np.float32(0.5),)


def _np_newton(y):
    x = y
    for _ in range(20):
        x = 0.5 * (x + y / x)
    return x


def _np_euler(x, forcing):
    traj = np.empty_like(forcing)
    for t, f in enumerate(forcing):
        x = x + np.float32(0.01) * (np.sin(x) - x + f)
        traj[t] = x
    return x, traj


def _np_fori(x):
    for _ in range(10_000):
        x = x * np.float32(0.999) + np.float32(0.001)
    return x


def _np_cholesky_solve(a, b):
    import scipy.linalg
    L = np.linalg.cholesky(a)
    y = scipy.linalg.solve_triangular(L, b, lower=True)
    return scipy.linalg.solve_triangular(L, y, lower=True, trans=1)


def _np_logsumexp(x):
    import scipy.special
    return scipy.special.logsumexp(x, axis=-1)


_RNG = np.random.default_rng(0)
NUMPY = {
    "softmax 3x5": lambda: (_np_softmax, (_RNG.standard_normal((3, 5)).astype(np.float32),)),
    "softmax 1000x1000": lambda: (_np_softmax,
                                  (_RNG.standard_normal((1000, 1000)).astype(np.float32),)),
    "softmax 4096x4096": lambda: (_np_softmax,
                                  (_RNG.standard_normal((4096, 4096)).astype(np.float32),)),
    "elementwise chain 10M": lambda: (
        lambda x: np.tanh(x) * 0.5 + np.exp(-x * x) * np.sin(3 * x) - 1,
        (np.linspace(-3, 3, 10_000_000, dtype=np.float32),)),
    "SDE 1,000 steps": lambda: _np_sde(1_000),
    "fixed-point scan scalar (10k)": lambda: _np_fixed_point(0),
    "fixed-point scan 1000-vector (10k)": lambda: _np_fixed_point(1000),
    "polynomial activation 1M": lambda: (lambda x: x * x * x,
                                         (np.linspace(-2, 2, 1_000_000, dtype=np.float32),)),
    "relu 1M": lambda: (lambda x: np.maximum(x, 0),
                        (np.linspace(-2, 2, 1_000_000, dtype=np.float32),)),
    "leaky_relu 1M": lambda: (lambda x: np.where(x >= 0, x, 0.01 * x),
                              (np.linspace(-2, 2, 1_000_000, dtype=np.float32),)),
    "matmul 1024x1024": lambda: (lambda a, b: a @ b, (
        _RNG.standard_normal((1024, 1024)).astype(np.float32),) * 2),
    "while_loop Newton sqrt 1M": lambda: (_np_newton,
                                          (np.linspace(1, 100, 1_000_000, dtype=np.float32),)),
    "scan with xs/ys 1000-vector (10k)": lambda: (_np_euler, _euler_inputs()),
    "fori_loop 10k scalar steps": lambda: (_np_fori, (np.float32(1.0),)),
    "Cholesky solve 512x512": lambda: (_np_cholesky_solve, (
        _spd(512), np.random.default_rng(1).standard_normal((512, 8)).astype(np.float32))),
    "batched inverse 64x(32x32)": lambda: (np.linalg.inv, (
        np.random.default_rng(0).standard_normal((64, 32, 32)).astype(np.float32)
        + 8 * np.eye(32, dtype=np.float32),)),
    "rfft 2^20": lambda: (np.fft.rfft, (
        np.random.default_rng(0).standard_normal(2 ** 20).astype(np.float32),)),
    "logsumexp 4096x4096 (rows)": lambda: (_np_logsumexp, (
        np.random.default_rng(0).standard_normal((4096, 4096)).astype(np.float32),)),
    "random.normal 10M": lambda: (
        lambda: np.random.default_rng(0).standard_normal(10_000_000, dtype=np.float32), ()),
    "sum 10M": lambda: (np.sum, (
        np.random.default_rng(0).standard_normal(10_000_000).astype(np.float32),)),
}
