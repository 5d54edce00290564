"""jnp.vectorize (optax builds losses with it at import): gufunc signatures, loop dimensions that
broadcast, several outputs, excluded arguments, and NumPy's errors (written for real JAX)."""
import sys

import jax.numpy as jnp
import numpy as np

r = {}
dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
a = jnp.arange(12.0).reshape(4, 3)
r["dot"] = dot(a, jnp.arange(3.0))
r["dot_broadcast"] = dot(a[:, None, :], jnp.ones((1, 5, 3)))
r["scalar_fn"] = jnp.vectorize(lambda x, y: x * 2 + y)(jnp.arange(3.0)[:, None], jnp.ones((1, 4)))
two = jnp.vectorize(lambda m, v: (m @ v, v.sum()), signature="(m,n),(n)->(m),()")
r["matvec"], r["sum"] = two(jnp.ones((2, 3, 4)), jnp.arange(4.0))
r["excluded"] = jnp.vectorize(lambda x, p: x ** p, excluded={1})(jnp.arange(3.0), 2)
bad_calls = [lambda: dot(jnp.ones(3), jnp.ones(4)),
             lambda: jnp.vectorize(jnp.sum, signature="(n)->(n)")(jnp.ones(3)),
             lambda: jnp.vectorize(jnp.sum, signature="bad")(jnp.ones(3)),
             lambda: jnp.vectorize(jnp.sum, excluded={-1})]
for i, bad in enumerate(bad_calls):
    try:
        bad()
        r[f"error{i}"] = np.array("no error")
    except (TypeError, ValueError) as err:
        r[f"error{i}"] = np.array(f"{type(err).__name__}: {err}")
np.savez(sys.argv[1], **r)
