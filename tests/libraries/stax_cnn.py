"""jax.example_libraries.stax: a small CNN (Conv-Relu-MaxPool-Conv-Relu-AvgPool-Flatten-Dense)
trained a few steps with jit(value_and_grad) and SGD; also a ConvTranspose layer's output (written
for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.example_libraries import optimizers, stax

key = jax.random.PRNGKey(0)
k_data, k_init, k_t = jax.random.split(key, 3)
x = jax.random.normal(k_data, (8, 12, 12, 3))
y = jax.nn.one_hot(jnp.arange(8) % 4, 4)

init_fun, apply_fun = stax.serial(
    stax.Conv(8, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
    stax.Conv(8, (3, 3), strides=(1, 1), padding="VALID"), stax.Relu,
    stax.AvgPool((2, 2), strides=(1, 1), padding="SAME"), stax.Flatten, stax.Dense(4),
    stax.LogSoftmax)
out_shape, params0 = init_fun(k_init, (-1, 12, 12, 3))
out = {"out_shape": np.array(out_shape), "W0": params0[0][0]}


def loss(params):
    return -jnp.mean(jnp.sum(apply_fun(params, x) * y, axis=1))


opt_init, opt_update, get_params = optimizers.sgd(0.1)


@jax.jit
def step(i, state):
    value, grads = jax.value_and_grad(loss)(get_params(state))
    return opt_update(i, grads, state), value


state = opt_init(params0)
losses = []
for i in range(6):
    state, value = step(i, state)
    losses.append(value)
out["losses"] = np.array(losses)
out["W0_final"] = get_params(state)[0][0]

t_init, t_apply = stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME")
t_shape, t_params = t_init(k_t, (2, 5, 5, 3))
out["t_shape"] = np.array(t_shape)
out["t_out"] = jax.jit(t_apply)(t_params, x[:2, :5, :5])
np.savez(sys.argv[1], **out)
