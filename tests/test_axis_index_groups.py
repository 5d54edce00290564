"""axis_index_groups (collectives within groups of an axis's positions) under pmap and shard_map
on 4 CPU devices, against real JAX (tests/libraries/axis_index_groups.py run with both): values,
gradients and jvps, and JAX's errors for bad groups and for vmap; make_jaxpr keeps the groups."""
import numpy as np
import pytest

import tracejit as tj
from tests.libraries import run_both_once

VALUES = ["psum", "psum_in_order", "psum_one_group", "psum_unequal", "psum_bools",
          "psum_constant", "psum_pytree", "pmean", "pmax", "pmin_int", "all_gather",
          "all_gather_axis1", "all_gather_tiled", "psum_scatter", "psum_scatter_tiled",
          "all_to_all", "all_to_all_tiled", "vmap_inside", "jit_around", "grad_psum",
          "grad_all_gather", "grad_psum_scatter", "grad_all_to_all", "grad_outside", "jvp",
          "sm_psum", "sm_pmax_checked", "sm_all_gather", "sm_psum_scatter", "sm_all_to_all",
          "sm_grad"]
ERRORS = ["overlap", "gap", "all_to_all_overlap", "psum_scatter_unequal",
          "scatter_not_divisible", "all_to_all_not_divisible", "vmap_psum", "vmap_all_gather",
          "vmap_all_to_all", "sm_psum_checked"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both_once("axis_index_groups", tmp_path_factory)


@pytest.mark.parametrize("case", VALUES)
def test_grouped_collectives_match_jax(both, case):
    ours, theirs = both
    a, b = ours[case], theirs[case]
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("case", ERRORS)
def test_bad_groups_raise_jaxs_errors(both, case):
    ours, theirs = both
    theirs, ours = str(theirs["error_" + case]), str(ours["error_" + case])
    assert theirs != "no error"
    kind, _, words = theirs.partition(": ")
    # the same class, JAX's words first (ours may add how to fix it)
    assert ours.startswith(kind + ": " + words), (ours, theirs)


def test_make_jaxpr_keeps_the_groups_as_a_parameter():
    def f(v):
        return tj.lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]])
    jaxpr = tj.make_jaxpr(f, axis_env=[("i", 4)])(np.ones(2, np.float32))
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.params["axis_index_groups"] == ((0, 1), (2, 3))

