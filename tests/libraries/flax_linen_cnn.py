"""flax.linen: a small CNN (nn.Conv, nn.relu, nn.max_pool, nn.avg_pool, nn.Dense) trained with
plain gradient steps through apply under jit (written for real JAX)."""
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(6, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="VALID", feature_group_count=2)(x))
        x = nn.avg_pool(x, (2, 2), padding="SAME")
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(3)(x)


key = jax.random.PRNGKey(0)
kinit, kx = jax.random.split(key)
x = jax.random.normal(kx, (6, 14, 14, 2))
y = jnp.arange(6) % 3
model = CNN()
variables = model.init(kinit, x)


def loss(params):
    logits = model.apply({"params": params}, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))


@jax.jit
def step(params):
    value, grads = jax.value_and_grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), value


params = variables["params"]
init_params = params
losses = []
for _ in range(6):
    params, value = step(params)
    losses.append(value)

out = {"init": init_params, "params": params, "losses": jnp.stack(losses)}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
