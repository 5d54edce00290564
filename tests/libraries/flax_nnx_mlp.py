"""flax.nnx: a small MLP of nnx.Linear layers trained with nnx.Optimizer (optax.sgd) under
nnx.jit and nnx.value_and_grad; nnx.grad of the trained model (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(3, 8, rngs=rngs)
        self.out = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.tanh(self.hidden(x)))


key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (32, 3))
y = jnp.sin(x[:, :1]) + 0.5 * x[:, 1:2]
model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit
def step(model, optimizer, x, y):
    value, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return value


losses = jnp.stack([step(model, optimizer, x, y) for _ in range(20)])
grads = nnx.grad(loss_fn)(model, x, y)
out = {"losses": losses, "params": nnx.state(model, nnx.Param).to_pure_dict(),
       "grads": grads.to_pure_dict(), "pred": model(x[:4])}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
