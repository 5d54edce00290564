"""optax: fit a linear model with adam and a cosine schedule under jit (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

key = jax.random.PRNGKey(0)
kx, kw = jax.random.split(key)
x = jax.random.normal(kx, (64, 3))
w_true = jnp.array([1.5, -2.0, 0.5])
y = x @ w_true + 0.1


def loss(params):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
opt = optax.adam(optax.cosine_decay_schedule(0.1, 200))
state = opt.init(params)


@jax.jit
def step(params, state):
    value, grads = jax.value_and_grad(loss)(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


losses = []
for _ in range(200):
    params, state, value = step(params, state)
    losses.append(value)
np.savez(sys.argv[1], w=params["w"], b=params["b"], losses=np.array(losses))
