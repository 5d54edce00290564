"""JAX's libraries, unmodified, under `python -m tracejit`: each program in tests/libraries runs
with real JAX and with tracejit, and the numbers must agree."""
import importlib
import importlib.util

import numpy as np
import pytest

from tests.libraries import assert_close, run_both


def needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"test extras not installed: {missing}")


@needs("jax", "optax")
def test_optax_adam_fits_a_linear_model(tmp_path):
    ours, theirs = run_both("optax_adam", tmp_path)
    assert_close(ours, theirs, rtol=2e-5, atol=1e-6)


@needs("jax")
def test_jnp_vectorize_as_jax(tmp_path):
    ours, theirs = run_both("jnp_vectorize", tmp_path)
    assert_close(ours, theirs, rtol=1e-6)


# What numpyro and blackjax import at load time from modules other engineers are adding
# (jax.scipy.linalg: D; jax.scipy.special's gamma family: C; jax.experimental.io_callback: A;
# jax.extend: B). Until those are merged the programs
# cannot import, and the tests say which names are missing.
PREREQUISITES = {
    "blackjax": ["tracejit.scipy.linalg:cholesky", "tracejit.scipy.linalg:solve_triangular"],
    "numpyro": ["tracejit.scipy.linalg:solve_triangular", "tracejit.scipy.linalg:cho_solve",
                "tracejit.scipy.linalg:toeplitz", "tracejit.scipy.special:betainc",
                "tracejit.scipy.special:gammaincc", "tracejit.scipy.special:xlog1py",
                "tracejit.scipy.special:multigammaln", "tracejit.scipy.optimize:minimize",
                "tracejit.experimental:io_callback", "tracejit.extend.core:Literal",
                "tracejit.extend.core.primitives:closed_call_p", "tracejit.extend.linear_util:"
                "wrap_init"],
}


def _missing(library: str) -> list[str]:
    out = []
    for item in PREREQUISITES[library]:
        module, name = item.split(":")
        try:
            found = hasattr(importlib.import_module(module), name)
        except ImportError:
            found = False
        if not found:
            out.append(item)
    return out


def needs_merged(library: str):
    missing = _missing(library)
    return pytest.mark.skipif(bool(missing), reason=f"{library} imports names not merged into "
                              f"tracejit yet: {missing}")


@needs("jax", "blackjax")
@needs_merged("blackjax")
def test_blackjax_nuts_window_adaptation_hmc_and_random_walk(tmp_path):
    ours, theirs = run_both("blackjax_nuts", tmp_path)
    assert_close(ours, theirs, rtol=1e-9, atol=1e-10)


@needs("jax")
def test_example_libraries_stax_mlp_with_every_optimizer(tmp_path):
    ours, theirs = run_both("stax_mlp", tmp_path)
    for key in ("W0", "b0", "Wlast", "out_shape"):  # same key -> the same initial bits
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    assert_close(ours, theirs, rtol=1e-5, atol=2e-6)


@needs("jax", "optax")
def test_optax_transforms_schedules_and_lbfgs(tmp_path):
    ours, theirs = run_both("optax_transforms", tmp_path)
    # adafactor divides by factored RMS estimates and rescales by parameter RMS: parameters
    # whose gradients are ~0 (rounding noise) get steps of full size in both runs, so those
    # leaves drift apart by more than rounding, and by the last steps the loss a little too
    noisy = {"adafactor_losses", "adafactor_w2", "adafactor_norm"}
    assert_close({k: v for k, v in ours.items() if k not in noisy},
                 {k: v for k, v in theirs.items() if k not in noisy}, rtol=1e-5, atol=1e-6)
    assert_close({k: ours[k] for k in noisy}, {k: theirs[k] for k in noisy}, rtol=1e-3,
                 atol=5e-4)


@needs("jax")
def test_scipy_dct_as_jax(tmp_path):
    ours, theirs = run_both("scipy_dct", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


@needs("jax")
def test_sparse_bcoo_as_numpyro_uses_it(tmp_path):
    ours, theirs = run_both("sparse_bcoo", tmp_path)
    assert_close(ours, theirs, rtol=0)


@needs("jax", "numpyro")
@needs_merged("numpyro")
def test_numpyro_nuts_and_svi_autonormal(tmp_path):
    ours, theirs = run_both("numpyro_nuts", tmp_path)
    assert_close(ours, theirs, rtol=1e-8, atol=1e-9)


@needs("jax")
def test_sharding_api_as_jax_on_one_device(tmp_path):
    """Reprs, equality, hashing, queries, set_mesh, shardings given to device_put / jit /
    with_sharding_constraint / shard_map / pmap, and the error texts, all as real JAX's."""
    ours, theirs = run_both("sharding_api", tmp_path)
    assert_close(ours, theirs, rtol=0)


@needs("jax")
def test_scipy_minimize_bfgs_finds_jaxs_minimum(tmp_path):
    ours, theirs = run_both("scipy_minimize", tmp_path)
    # the same minimum to the gradient tolerance (1e-5); fun and jac at it to that order
    assert_close({k: v for k, v in ours.items() if not k.endswith(("_jac", "_fun"))},
                 {k: v for k, v in theirs.items() if not k.endswith(("_jac", "_fun"))},
                 rtol=1e-4, atol=1e-4)
    for key in (k for k in theirs if k.endswith(("_jac", "_fun"))):
        np.testing.assert_allclose(ours[key], theirs[key], atol=1e-5, err_msg=key)
