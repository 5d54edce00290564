"""Records JAX 0.12's outputs into complex_jax012.npz, which tests/test_complex_inverse.py reads:
complex asin/acos/atan/asinh/acosh/atanh on a table of inputs (branch cuts with signed zeros,
tiny and huge magnitudes, the algorithms' cut-over points, inf and NaN, log-uniform random
points), and cumlogsumexp of complex and real floats along each axis, forwards and reversed.
Run with JAX 0.12: .venv-jax312/bin/python tests/data/make_complex_table.py"""
import os

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp

OPS = ("asin", "acos", "atan", "asinh", "acosh", "atanh")


def inputs(dtype) -> np.ndarray:
    part = np.dtype(dtype).type
    fi = np.finfo(part)
    special = [0.0, fi.smallest_subnormal, fi.tiny, float(np.sqrt(fi.tiny)) * 4, 1e-20, 1e-7,
               0.5, 1 - fi.eps, 1.0, 1 + fi.eps, 1.5, 2.0, 10.0, 1e3, 1e7, 1e18,
               float(np.sqrt(fi.max)) / 8, float(np.sqrt(fi.max)), 1e30, float(fi.max) / 4,
               float(fi.max), float("inf"), float("nan")]
    special = np.array([v for s in special for v in (s, -s)], part)
    re, im = np.meshgrid(special, special)
    rng = np.random.default_rng(0)
    n = 1500
    mag = np.exp(rng.uniform(np.log(fi.tiny), np.log(fi.max), (2, n)) * 0.9)
    sign = rng.choice([-1.0, 1.0], (2, n))
    near = rng.uniform(-3, 3, (2, n))
    re = np.concatenate([re.ravel(), sign[0] * mag[0], near[0]])
    im = np.concatenate([im.ravel(), sign[1] * mag[1], near[1]])
    z = np.empty(re.shape, dtype)  # set by parts: re + 1j * im would turn inf * 1j into NaN
    z.real, z.imag = re, im
    return z


def cumlogsumexp_input(dtype) -> np.ndarray:
    """7 x 40 values (parts of spread magnitude and sign), a row with -inf, inf and NaN."""
    rng = np.random.default_rng(1)
    shape = (7, 40)
    if np.dtype(dtype).kind != "c":
        x = rng.normal(0, 4, shape)
        x[3, ::7] = [-np.inf, np.inf, -np.inf, np.nan, 1.0, -np.inf]
        return np.asarray(x).astype(dtype)
    x = np.empty(shape, dtype)
    x.real = rng.normal(0, 4, shape)
    x.imag = rng.normal(0, 4, shape)
    x.real[3, 0:40:10] = [-np.inf, -np.inf, 5.0, -np.inf]  # -inf + b i: a zero of any phase
    return x


if __name__ == "__main__":
    out = {}
    for dtype in (np.complex64, np.complex128):
        z = inputs(dtype)
        out[f"z_{np.dtype(dtype).name}"] = z
        for op in OPS:
            out[f"{op}_{np.dtype(dtype).name}"] = np.asarray(jax.jit(getattr(jax.lax, op))(z))
        x = cumlogsumexp_input(dtype)
        out[f"cumlse_x_{np.dtype(dtype).name}"] = x
        for axis in (0, 1):
            for reverse in (False, True):
                r = jax.lax.cumlogsumexp(x, axis=axis, reverse=reverse)
                out[f"cumlse_{axis}{int(reverse)}_{np.dtype(dtype).name}"] = np.asarray(r)
    for dtype in (jnp.bfloat16, np.float16, np.float32, np.float64):
        x = cumlogsumexp_input(dtype)
        name = np.dtype(dtype).name
        out[f"cumlse_x_{name}"] = np.asarray(x, np.float64)  # npz keeps no bfloat16
        for axis in (0, 1):
            for reverse in (False, True):
                r = jax.lax.cumlogsumexp(jnp.asarray(x), axis=axis, reverse=reverse)
                out[f"cumlse_{axis}{int(reverse)}_{name}"] = np.asarray(r, np.float64)
    np.savez_compressed(os.path.join(os.path.dirname(__file__), "complex_jax012.npz"), **out)
    print(jax.__version__, {k: v.shape for k, v in out.items()})
