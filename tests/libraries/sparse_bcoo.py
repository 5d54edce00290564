"""jax.experimental.sparse.BCOO as numpyro's CAR distribution uses it: from a SciPy matrix
and from a dense one (with padding), products with dense arrays, transpose, scaling, pytree
leaves, under jit (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.experimental.sparse import BCOO

m = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
b = BCOO.fromdense(jnp.asarray(m))
c = BCOO.from_scipy_sparse(sp.csr_matrix(m))
padded = BCOO.fromdense(jnp.asarray(m), nse=5)
r = {"repr": np.array([repr(b), repr(c), repr(padded)]), "nse": np.array(padded.nse),
     "b_data": b.data, "b_indices": b.indices, "c_data": c.data, "c_indices": c.indices,
     "padded_indices": padded.indices, "padded_dense": padded.todense(),
     "matvec": b @ jnp.arange(3.0), "matmat": c @ jnp.ones((3, 2)), "vecmat": jnp.ones(2) @ b,
     "transpose": b.T.todense(), "scaled": (2 * b).todense(),
     "jit": jax.jit(lambda s, v: s @ v)(c, jnp.arange(3.0)),
     "leaves": np.array(len(jax.tree.leaves(b)))}
np.savez(sys.argv[1], **r)
