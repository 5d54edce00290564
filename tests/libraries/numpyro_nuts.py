"""numpyro: NUTS on a small Bayesian linear regression (Normal and Exponential sites only) with
a fixed key, and SVI with an AutoNormal guide and numpyro's Adam (written for real JAX).
float64: warmup's dual averaging feeds each step's acceptance back into the step size, so
float32 last-bit differences grow into a different chain (see blackjax_nuts.py)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

jax.config.update("jax_enable_x64", True)

x = jnp.linspace(-1.0, 1.0, 20)
y = 0.7 * x - 0.3 + 0.2 * jnp.sin(7.0 * x)


def model(x, y=None):
    slope = numpyro.sample("slope", dist.Normal(0.0, 1.0))
    intercept = numpyro.sample("intercept", dist.Normal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.Exponential(2.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(slope * x + intercept, noise), obs=y)


mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=30, progress_bar=False)
mcmc.run(jax.random.PRNGKey(0), x, y)
samples = mcmc.get_samples()
out = {f"nuts_{k}": v for k, v in samples.items()}

guide = AutoNormal(model)
svi = SVI(model, guide, numpyro.optim.Adam(0.05), Trace_ELBO())
result = svi.run(jax.random.PRNGKey(1), 150, x, y, progress_bar=False)
out["svi_losses"] = result.losses
out.update({f"svi_{k}": v for k, v in result.params.items()})
np.savez(sys.argv[1], **out)
