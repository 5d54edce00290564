"""jax.scipy.fft's type-2 DCT and its inverse (numpyro's DCTAffine uses them): lengths, norms,
n (cut / zero-pad), axes, n-dimensional forms, gradients and errors (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import fft

x = jax.random.normal(jax.random.PRNGKey(3), (3, 5, 4))
r = {}
for norm in (None, "backward", "ortho"):
    tag = str(norm)
    r[f"dct_{tag}"] = fft.dct(x, norm=norm)
    r[f"dct_axis0_{tag}"] = fft.dct(x, axis=0, norm=norm)
    r[f"idct_{tag}"] = fft.idct(x, axis=1, norm=norm)
    r[f"roundtrip_{tag}"] = fft.idct(fft.dct(x, norm=norm), norm=norm)
    r[f"dctn_{tag}"] = fft.dctn(x, norm=norm)
    r[f"idctn_axes_{tag}"] = fft.idctn(x, axes=(0, 2), norm=norm)
r["dct_n_cut"] = fft.dct(x, n=2)
r["dct_n_pad"] = fft.dct(x, n=7, axis=1)
r["dctn_s"] = fft.dctn(x, s=(6, 3))
r["dct_int"] = fft.dct(jnp.arange(6))
r["grad"] = jax.grad(lambda v: jnp.sum(fft.dct(v, norm="ortho") ** 3))(x[0, 0])
r["jit"] = jax.jit(lambda v: fft.idct(v, n=6))(x)
for i, bad in enumerate([lambda: fft.dct(x, type=3), lambda: fft.dct(x, norm="forward"),
                         lambda: fft.idctn(x, norm="forward")]):
    try:
        bad()
        r[f"error{i}"] = np.array("no error")
    except (NotImplementedError, ValueError) as err:
        r[f"error{i}"] = np.array(f"{type(err).__name__}: {err}")
np.savez(sys.argv[1], **r)
