"""Printing parity with JAX: make_jaxpr's text and the reprs of tracers, compared to real JAX's
for the same programs."""
import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp_tj

X = np.ones((3,), np.float32)
M = np.ones((3, 3), np.float32)

# programs whose primitives carry the same params in JAX 0.10 as here (its reductions carry an
# out_sharding param that tracejit has no use for)
PROGRAMS = {
    "broadcast": (lambda jax_, jnp, x: x + jnp.ones((3,)) * 2.0, X),
    "broadcast_dims": (lambda jax_, jnp, m: m + jax_.lax.broadcast_in_dim(m[0], (3, 3), (1,)),
                       M),
    "dot_general": (lambda jax_, jnp, m: m @ m, M),
    "unused_output": (lambda jax_, jnp, x: jax_.lax.sort_key_val(x, x)[0], X),
    "nested_jit": (lambda jax_, jnp, x: jax_.jit(lambda y: y * 2)(x) + 1, X),
    "one_line": (lambda jax_, jnp, x: x * 2, X),
    "scan": (lambda jax_, jnp, x: jax_.lax.scan(lambda c, y: (c + y, c), 0.0, x), X),
    "cond": (lambda jax_, jnp, x: jax_.lax.cond(x[0] > 0, lambda v: v + 1, lambda v: v - 1, x),
             X),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_make_jaxpr_prints_as_jax(name):
    f, arg = PROGRAMS[name]
    ours = str(tracejit.make_jaxpr(lambda a: f(tracejit, jnp_tj, a))(arg))
    theirs = str(jax.make_jaxpr(lambda a: f(jax, jnp_jax, a))(arg))
    assert ours == theirs


def _reprs(jax_, jnp):
    seen = []

    def show(t):
        seen.append(repr(t))
        return t
    jax_.jit(lambda v: show(v) * 2)(X)
    jax_.jit(lambda v: show(v) * 2)(1.0)                      # weakly typed: ~float32[]
    jax_.vmap(lambda v: show(v) * 2)(M)
    jax_.vmap(lambda v: show(v) * 2, in_axes=1)(np.ones((2, 3), np.float32))
    jax_.jvp(lambda v: show(v) * 2.0, (1.0,), (1.0,))
    jax_.grad(lambda v: show(v).sum() * 2.0)(jnp.ones(3))
    return seen


def test_tracer_reprs_as_jax():
    assert _reprs(tracejit, jnp_tj) == _reprs(jax, jnp_jax)
