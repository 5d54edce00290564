"""JAX's documentation pages that use the scientific surface, their code cells unchanged
(tests/libraries/doc_*.py, run as notebooks by tests/libraries/_doc_cells.py), under tracejit:
every value a cell shows, every number it prints and the error class of each cell the page
shows raising, against real JAX's results for the same cells (recorded, as for the library
programs, by `python -m tests.libraries doc_NAME`: running the pages under JAX takes 10-30 s
each)."""
import importlib.util

import numpy as np
import pytest

from tests.libraries import assert_close, run_both

pytestmark = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                reason="the pages draw with matplotlib")


def test_vmapped_log_probs(tmp_path):
    """"Autobatching for Bayesian inference": vmap of a log-joint, 1000 SGD steps on an ELBO
    with jax.random draws (the same bits as JAX's, so the same trajectory)."""
    assert_close(*run_both("doc_vmapped_log_probs", tmp_path), rtol=1e-4, atol=1e-5)


def test_convolutions(tmp_path):
    """"Generalized convolutions in JAX" (SciPy's sample picture, a download, replaced by a
    synthetic one of its shape)."""
    assert_close(*run_both("doc_convolutions", tmp_path), rtol=1e-4, atol=1e-4)


def test_key_concepts(tmp_path):
    """"Key concepts": jit, tracers printed, pytrees, promotion (the cell that raises),
    jnp.convolve and lax.conv_general_dilated."""
    assert_close(*run_both("doc_key_concepts", tmp_path), rtol=1e-5, atol=1e-5)


def test_autodiff_cookbook(tmp_path):
    """"The Autodiff Cookbook": grad, jacfwd/jacrev, hessians, hvp, jvp/vjp, complex
    numbers, custom derivatives. Cell 7 prints float32 finite differences with eps=1e-4,
    whose cancellation magnifies rounding differences: those two numbers to 1%."""
    ours, theirs = run_both("doc_autodiff_cookbook", tmp_path)
    fd_ours, fd_theirs = ours.pop("cell7_printed"), theirs.pop("cell7_printed")
    np.testing.assert_allclose(fd_ours[1::2], fd_theirs[1::2], rtol=1e-5)  # autodiff
    np.testing.assert_allclose(fd_ours[0::2], fd_theirs[0::2], rtol=1e-2)  # differences
    assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
