"""blackjax: NUTS with window adaptation (step size and diagonal mass matrix), HMC and a random
walk Metropolis chain on a small correlated Gaussian-like posterior, fixed keys (written for
real JAX)."""
import sys

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

# float64: window adaptation's dual averaging feeds every step's acceptance back into the step
# size, so in float32 last-bit differences (exp/log/tanh rounding) grow over the 60 warmup steps
# to a different step size and chain; in float64 both runs agree to ~1e-12 (a fixed-step NUTS
# chain agrees to the bit in float32 too).
jax.config.update("jax_enable_x64", True)

mean = jnp.array([1.0, -0.5])
scale = jnp.array([1.0, 0.3])


def logdensity(x):
    z = (x["loc"] - mean) / scale
    return -0.5 * jnp.sum(z ** 2) - 0.5 * x["log_s"] ** 2 + jnp.tanh(x["loc"][0] * x["log_s"])


def inference_loop(key, kernel, state, num_samples):
    def one_step(state, key):
        state, info = kernel(key, state)
        return state, (state.position, info.acceptance_rate)
    keys = jax.random.split(key, num_samples)
    return jax.lax.scan(one_step, state, keys)


key = jax.random.key(0)
k_warm, k_nuts, k_hmc, k_rw = jax.random.split(key, 4)
init = {"loc": jnp.zeros(2), "log_s": jnp.zeros(())}
out = {}

warmup = blackjax.window_adaptation(blackjax.nuts, logdensity)
(state, params), _ = warmup.run(k_warm, init, num_steps=60)
out["step_size"] = params["step_size"]
out["inverse_mass_matrix"] = params["inverse_mass_matrix"]
nuts = blackjax.nuts(logdensity, **params)
_, (samples, accepted) = inference_loop(k_nuts, jax.jit(nuts.step), state, 40)
out["nuts_loc"], out["nuts_log_s"] = samples["loc"], samples["log_s"]
out["nuts_accepted"] = accepted

hmc = blackjax.hmc(logdensity, step_size=0.3, inverse_mass_matrix=jnp.ones(3),
                   num_integration_steps=5)
_, (samples, accepted) = inference_loop(k_hmc, jax.jit(hmc.step), hmc.init(init), 50)
out["hmc_loc"], out["hmc_accepted"] = samples["loc"], accepted

rw = blackjax.additive_step_random_walk(logdensity, blackjax.mcmc.random_walk.normal(0.5))
_, (samples, accepted) = inference_loop(k_rw, jax.jit(rw.step), rw.init(init), 200)
out["rw_loc"], out["rw_log_s"], out["rw_accepted"] = samples["loc"], samples["log_s"], accepted
np.savez(sys.argv[1], **out)
