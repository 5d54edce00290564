"""JAX's documentation page docs/key-concepts.md ("Key concepts", jax-ml/jax@cec06d116c),
its code cells unchanged, run as a notebook by _doc_cells (written for real JAX)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _doc_cells import run_cells  # noqa: E402

CELLS = [
    r'''
import jax
import jax.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

selu_jit = jax.jit(selu)
print(selu_jit(1.0))
''',
    r'''
@jax.jit
def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
''',
    r'''
@jax.jit
def f(x):
  print(x)
  return x + 1

x = jnp.arange(5)
result = f(x)
''',
    r'''
def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
''',
    r'''
x = jnp.arange(5.0)
jax.make_jaxpr(selu)(x)
''',
    r'''
# (nested) list of parameters
params = [1, 2, (jnp.arange(3), jnp.ones(2))]

print(jax.tree.structure(params))
print(jax.tree.leaves(params))
''',
    r'''
# Dictionary of parameters
params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}

print(jax.tree.structure(params))
print(jax.tree.leaves(params))
''',
    r'''
# Named tuple of parameters
from typing import NamedTuple

class Params(NamedTuple):
  a: int
  b: float

params = Params(1, 5.0)
print(jax.tree.structure(params))
print(jax.tree.leaves(params))
''',
    r'''
import jax.numpy as jnp
jnp.add(1, 1.0)  # jax.numpy API implicitly promotes mixed types.
''',
    r'''
from jax import lax
lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.
''',
    r'''
lax.add(jnp.float32(1), 1.0)
''',
    r'''
x = jnp.array([1, 2, 1])
y = jnp.ones(10)
jnp.convolve(x, y)
''',
    r'''
from jax import lax
result = lax.conv_general_dilated(
    x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
    y.reshape(1, 1, 10),
    window_strides=(1,),
    padding=[(len(y) - 1, len(y) - 1)])  # equivalent of padding='full' in NumPy
result[0, 0]
''',
]

run_cells(CELLS, sys.argv[1])
