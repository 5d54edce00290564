"""jax.scipy.optimize.minimize (BFGS), which numpyro's optim module imports: the minimum found
on a quadratic and a logistic regression, under jit, with args, and the errors (written for
real JAX). Iteration counts are not compared: JAX's line search picks its first trial step by
its own heuristic. (Rosenbrock's function is checked against SciPy in test_scipy_optimize.py:
JAX's BFGS stops there with status 3, its line search failing.)"""
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.optimize import minimize

jax.config.update("jax_enable_x64", True)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


a = jax.random.normal(jax.random.PRNGKey(0), (40, 3))
labels = (a @ jnp.array([1.0, -2.0, 0.5]) > 0).astype(jnp.float64)


def logistic(w, a, labels, l2):
    z = a @ w
    return jnp.mean(jnp.logaddexp(0.0, z) - labels * z) + l2 * jnp.sum(w ** 2)


out = {}
runs = {"quadratic": (lambda x: jnp.sum((x - jnp.arange(4.0)) ** 2 * jnp.arange(1.0, 5.0)),
                      jnp.zeros(4), ()),
        "logistic": (logistic, jnp.zeros(3), (a, labels, 0.01))}
for name, (f, x0, args) in runs.items():
    r = jax.jit(lambda x0, args, f=f: minimize(f, x0, args, method="BFGS"))(x0, args)
    out[f"{name}_x"], out[f"{name}_fun"], out[f"{name}_jac"] = r.x, r.fun, r.jac
    out[f"{name}_success"], out[f"{name}_status"] = r.success, r.status
r = minimize(rosenbrock, jnp.array([-1.2, 1.0]), method="BFGS", options={"maxiter": 3})
out["maxiter_status"], out["maxiter_success"] = r.status, r.success
for i, bad in enumerate([lambda: minimize(rosenbrock, jnp.zeros(2), method="CG"),
                         lambda: minimize(rosenbrock, jnp.zeros(2), args=[1], method="BFGS")]):
    try:
        bad()
        out[f"error{i}"] = np.array("no error")
    except (TypeError, ValueError) as err:
        out[f"error{i}"] = np.array(f"{type(err).__name__}: {err}")
np.savez(sys.argv[1], **out)
