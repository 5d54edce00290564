"""equinox: a small MLP trained with plain gradient steps under eqx.filter_jit and
eqx.filter_value_and_grad, per-example losses with eqx.filter_vmap (written for real JAX)."""
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

key = jax.random.PRNGKey(0)
kmodel, kx = jax.random.split(key)
model = eqx.nn.MLP(in_size=3, out_size=1, width_size=8, depth=2, activation=jax.nn.tanh,
                   key=kmodel)
x = jax.random.normal(kx, (32, 3))
y = jnp.sin(x[:, :1]) + 0.5 * x[:, 1:2]


def loss(model, x, y):
    pred = jax.vmap(model)(x)
    return jnp.mean((pred - y) ** 2)


@eqx.filter_jit
def step(model, x, y):
    value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
    model = eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads))
    return model, value


losses = []
for _ in range(20):
    model, value = step(model, x, y)
    losses.append(value)

per_example = eqx.filter_vmap(lambda m, xi, yi: jnp.sum((m(xi) - yi) ** 2),
                              in_axes=(None, 0, 0))(model, x, y)
grads = eqx.filter_grad(loss)(model, x, y)
params, _ = eqx.partition(model, eqx.is_array)
# equinox's own primitives (jax.extend.core.Primitive with batching rules and lower_fun
# lowerings): unvmap_any / unvmap_max see through vmap, eagerly and under jit
flags = x[:, 0] > 1.0
unvmapped = {
    "any_eager": eqx.internal.unvmap_any(flags),
    "any_vmap_jit": jax.jit(jax.vmap(eqx.internal.unvmap_any))(flags),
    "max_vmap": jax.vmap(eqx.internal.unvmap_max)(jnp.arange(5)),
}
primal, tangent = eqx.filter_jvp(lambda v: model(v), (x[0],), (jnp.ones(3),))
out = {"losses": jnp.stack(losses), "per_example": per_example,
       "params": jax.tree_util.tree_leaves(params), "grads": jax.tree_util.tree_leaves(grads),
       "unvmapped": unvmapped, "jvp": (primal, tangent)}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
