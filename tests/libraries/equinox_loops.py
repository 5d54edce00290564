"""equinox's loops and runtime errors, built on its own primitives (select_if_vmap, nonbatchable,
unvmap_*: jax.extend primitives with batching rules and lower_fun lowerings):
eqx.internal.while_loop of each kind under jit and vmap, reverse mode through the bounded and checkpointed ones,
and eqx.error_if, passing and failing (written for real JAX)."""
import sys

import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import numpy as np


def run(x, kind):
    def cond(c):
        return c[0] < 5

    def body(c):
        return c[0] + 1, c[1] * 1.1 + jnp.sin(c[1])
    return eqxi.while_loop(cond, body, (0, x), max_steps=8, kind=kind)[1]


x = jnp.array([0.5, -1.0, 2.0])
out = {}
for kind in ("lax", "checkpointed", "bounded"):
    out[kind] = jax.jit(lambda x: run(x, kind))(x)
    out[kind + "_vmap"] = jax.vmap(lambda x: run(x, kind))(jnp.stack([x, 2 * x]))
for kind in ("bounded", "checkpointed"):  # checkpointed: equinox's own custom_vjp
    out[kind + "_grad"] = jax.jit(jax.grad(lambda x: jnp.sum(run(x, kind))))(x)
out["error_if"] = jax.jit(lambda x: eqx.error_if(x, x > 10.0, "too big"))(x)
try:  # a failing check raises out of the compiled program, through a host callback
    jax.jit(lambda x: eqx.error_if(x, x > 1.0, "too big"))(x)
    out["error_raised"] = np.array(False)
except jax.errors.JaxRuntimeError as e:
    out["error_raised"] = np.array("too big" in str(e))
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
