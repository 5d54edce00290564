"""optax beyond adam: chained transforms (clip_by_global_norm, adamw with weight decay and a
mask, sgd with nesterov momentum, lion, adafactor), schedules (warmup + cosine, joined, piecewise,
exponential), multi_transform, MultiSteps, loss functions, and L-BFGS with its zoom line search
(written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

key = jax.random.PRNGKey(1)
kx, kw, kl = jax.random.split(key, 3)
x = jax.random.normal(kx, (48, 5))
w_true = jax.random.normal(kw, (5, 3))
labels = jnp.argmax(x @ w_true, axis=-1)


def loss(params):
    logits = jnp.tanh(x @ params["w1"] + params["b1"]) @ params["w2"]
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return ce + 0.01 * optax.l2_loss(params["w2"]).sum()


params0 = {"w1": 0.3 * jax.random.normal(kl, (5, 8)), "b1": jnp.zeros(8),
           "w2": jnp.full((8, 3), 0.1)}
warmup_cosine = optax.warmup_cosine_decay_schedule(0.0, 0.05, 10, 60, end_value=0.001)
joined = optax.join_schedules([optax.constant_schedule(0.03), optax.exponential_decay(
    0.03, 10, 0.5)], boundaries=[20])
piecewise = optax.piecewise_constant_schedule(0.05, {15: 0.5, 40: 0.2})
decay_mask = {"w1": True, "b1": False, "w2": True}
transforms = {
    "adamw_clip": optax.chain(optax.clip_by_global_norm(1.0),
                              optax.adamw(warmup_cosine, weight_decay=1e-2, mask=decay_mask)),
    "sgd_nesterov": optax.sgd(joined, momentum=0.9, nesterov=True),
    "rmsprop_piecewise": optax.rmsprop(piecewise, centered=True),
    "lion": optax.lion(1e-3),
    "adafactor": optax.adafactor(0.05),
    "multi": optax.multi_transform({"a": optax.adam(0.02), "s": optax.sgd(0.1)},
                                   {"w1": "a", "b1": "s", "w2": "a"}),
    "multisteps": optax.MultiSteps(optax.adabelief(0.02), every_k_schedule=3),
}
out = {"warmup_cosine": np.array([warmup_cosine(i) for i in range(0, 60, 7)]),
       "joined": np.array([joined(i) for i in range(0, 40, 5)])}
for name, opt in transforms.items():
    state = opt.init(params0)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    params, values = params0, []
    for _ in range(60):
        params, state, value = step(params, state)
        values.append(value)
    out[f"{name}_losses"] = np.array(values)
    out[f"{name}_w2"] = params["w2"]
    out[f"{name}_norm"] = optax.global_norm(params)

# L-BFGS: the update needs the value, the gradient and the loss itself (for the line search)
opt = optax.lbfgs()
value_and_grad = optax.value_and_grad_from_state(loss)


@jax.jit
def lbfgs_step(params, state):
    value, grad = value_and_grad(params, state=state)
    updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=loss)
    return optax.apply_updates(params, updates), state, value


params, state, values = params0, opt.init(params0), []
for _ in range(15):
    params, state, value = lbfgs_step(params, state)
    values.append(value)
out["lbfgs_losses"] = np.array(values)
out["lbfgs_w2"] = params["w2"]
np.savez(sys.argv[1], **out)
