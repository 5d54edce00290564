"""flax.linen: a small MLP (nn.Dense, nn.relu) initialised with init and trained with plain
gradient steps through apply under jit (written for real JAX)."""
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class MLP(nn.Module):
    features: tuple = (8, 8, 1)

    @nn.compact
    def __call__(self, x):
        for f in self.features[:-1]:
            x = nn.relu(nn.Dense(f)(x))
        return nn.Dense(self.features[-1])(x)


key = jax.random.PRNGKey(0)
kinit, kx = jax.random.split(key)
x = jax.random.normal(kx, (32, 3))
y = jnp.sin(x[:, :1]) + 0.5 * x[:, 1:2]
model = MLP()
variables = model.init(kinit, x)


def loss(params, x, y):
    pred = model.apply({"params": params}, x)
    return jnp.mean((pred - y) ** 2)


@jax.jit
def step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), value


params = variables["params"]
init_params = params
losses = []
for _ in range(20):
    params, value = step(params, x, y)
    losses.append(value)

out = {"init": init_params, "params": params, "losses": jnp.stack(losses),
       "pred": model.apply({"params": params}, x[:4])}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
