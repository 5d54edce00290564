"""equinox.nn: Conv2d, MaxPool2d, AvgPool2d and ConvTranspose2d composed, differentiated with
filter_grad under filter_jit and vmapped (written for real JAX)."""
import sys
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

key = jax.random.PRNGKey(0)
k1, k2, k3, kx = jax.random.split(key, 4)
conv = eqx.nn.Conv2d(3, 4, 3, padding=1, key=k1)
pool = eqx.nn.MaxPool2d(2, 2)
avg = eqx.nn.AvgPool2d(2, 1, padding=1)
ct = eqx.nn.ConvTranspose2d(4, 2, 3, stride=2, key=k2)
x = jax.random.normal(kx, (3, 8, 8))

def f(conv, x):
    h = jax.nn.relu(conv(x))
    return jnp.sum(ct(avg(pool(h))) ** 2)

g = eqx.filter_jit(eqx.filter_grad(f))(conv, x)
out = {"val": f(conv, x), "gw": g.weight, "gb": g.bias, "vm": jax.vmap(conv)(jnp.stack([x, x * 2]))}
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
