"""jax.example_libraries: a stax MLP (Dense, BatchNorm, Relu, FanOut/parallel/FanInSum, Dropout)
trained with each of its optimizers and schedules, under jit; the same key must give the same
initial parameters and the same training run (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.example_libraries import optimizers, stax

key = jax.random.PRNGKey(0)
k_data, k_init, k_drop = jax.random.split(key, 3)
x = jax.random.normal(k_data, (32, 4))
y = jnp.sin(x @ jnp.array([1.0, -2.0, 0.5, 0.3]))[:, None]

# Relu before BatchNorm: a bias feeding BatchNorm straight has a zero gradient up to rounding,
# which the adaptive optimizers (adagrad, sm3) scale up to full steps of rounding noise
block = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(8), stax.Identity), stax.FanInSum)
init_fun, apply_fun = stax.serial(stax.Dense(8), stax.Relu, stax.BatchNorm(axis=0), block,
                                  stax.Tanh, stax.Dropout(0.9), stax.Dense(1))
out_shape, params0 = init_fun(k_init, (-1, 4))
out = {"out_shape": np.array(out_shape), "W0": params0[0][0], "b0": params0[0][1],
       "Wlast": params0[-1][0]}


def loss(params, rng):
    return jnp.mean((apply_fun(params, x, rng=rng) - y) ** 2)


schedule = optimizers.exponential_decay(0.05, 10, 0.5)
makers = {"sgd": lambda: optimizers.sgd(0.05),
          "momentum": lambda: optimizers.momentum(schedule, 0.9),
          "nesterov": lambda: optimizers.nesterov(0.02, 0.9),
          "adagrad": lambda: optimizers.adagrad(0.1),
          "rmsprop": lambda: optimizers.rmsprop(optimizers.inverse_time_decay(0.01, 5, 0.5)),
          "rmsprop_momentum": lambda: optimizers.rmsprop_momentum(0.005),
          "adam": lambda: optimizers.adam(optimizers.polynomial_decay(0.01, 20, 0.001)),
          "adamax": lambda: optimizers.adamax(
              optimizers.piecewise_constant([5, 15], [0.02, 0.01, 0.005])),
          "sm3": lambda: optimizers.sm3(0.05)}
for name, make in makers.items():
    opt_init, opt_update, get_params = make()

    # sm3 keeps each parameter's shape (Python ints) in its state, which jit cannot take
    @(lambda f: f) if name == "sm3" else jax.jit
    def step(i, state, rng):
        value, grads = jax.value_and_grad(loss)(get_params(state), rng)
        grads = optimizers.clip_grads(grads, 1.0)
        return opt_update(i, grads, state), value

    state = opt_init(params0)
    losses = []
    for i in range(25):
        state, value = step(i, state, jax.random.fold_in(k_drop, i))
        losses.append(value)
    final = get_params(state)
    out[f"{name}_losses"] = np.array(losses)
    out[f"{name}_W0"] = final[0][0]
    out[f"{name}_norm"] = optimizers.l2_norm(final)
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    out[f"{name}_repacked"] = np.array(
        jax.tree.structure(packed) == jax.tree.structure(state))
np.savez(sys.argv[1], **out)
