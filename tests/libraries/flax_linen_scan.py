"""flax.linen: an RNN whose cell is lifted over the time axis with nn.scan (flax's scan splits
out its broadcast parameters with jax.interpreters.partial_eval), init/apply under jit and its
gradient (written for real JAX)."""
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class Cell(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        h = nn.tanh(nn.Dense(4)(jnp.concatenate([c, x], -1)))
        return h, h


class RNN(nn.Module):
    @nn.compact
    def __call__(self, xs):
        scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=0, out_axes=0)
        return scan()(jnp.zeros(4), xs)


xs = jax.random.normal(jax.random.PRNGKey(1), (5, 3))
model = RNN()
variables = model.init(jax.random.PRNGKey(0), xs)
carry, ys = jax.jit(model.apply)(variables, xs)
grads = jax.grad(lambda v: jnp.sum(model.apply(v, xs)[1] ** 2))(variables)
out = {"carry": carry, "ys": ys, "grads": grads, "variables": variables}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
