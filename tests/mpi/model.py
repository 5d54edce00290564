"""The small MLP and data of the data-parallel training in tests/mpi/programs.py, shared with
tests/test_mpi.py, which trains it in one process on the whole batch as the oracle."""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp

DATA = np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32)
TARGET = np.sin(DATA.sum(1, keepdims=True)).astype(np.float32)
STEPS, LR = 5, 0.1


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (6, 8)) * 0.5, "b1": jnp.zeros(8),
            "w2": jax.random.normal(k2, (8, 1)) * 0.5, "b2": jnp.zeros(1)}


def loss(params, a, y):
    h = jnp.tanh(a @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)
