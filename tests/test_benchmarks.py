"""The benchmark workloads (benchmarks/workloads.py) at tiny sizes: each runs natively with
tracejit and gives real JAX's numbers for the same inputs, so a table row measures a program
that computes the right thing."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from benchmarks import workloads
from tracejit import lax as tlax
from tracejit import random as trandom

jax = pytest.importorskip("jax")

# (name, builder at a tiny size, relative tolerance): float32 factorisations and FFTs differ
# from XLA's by reassociation; everything else is elementwise or a reduction. (The CNN row's
# program takes seconds to compile on both sides whatever its size, so it is not here.)
CASES = [
    ("cholesky solve", workloads.cholesky_solve(16), 1e-4),
    ("batched inverse", workloads.batched_inverse(3, 5), 1e-4),
    ("rfft", workloads.rfft(64), 1e-4),
    ("logsumexp", workloads.logsumexp(5, 33), 1e-6),
    ("fixed-point scan scalar", workloads.fixed_point(0), 1e-5),
    ("fixed-point scan 1000-vector", workloads.fixed_point(1000), 1e-5),
    ("while_loop Newton", workloads.newton_sqrt, 1e-6),
    ("fori_loop", workloads.fori, 1e-5),
    ("SDE", workloads.sde(20, False), 1e-5),
]


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("build,rtol", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_workload_matches_jax(build, rtol):
    fn, args = build(tracejit, tnp, tlax, trandom)
    ours = _leaves(fn(*args))
    jfn, jargs = build(jax, jax.numpy, jax.lax, jax.random)
    theirs = _leaves(jfn(*jargs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())
