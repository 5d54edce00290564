"""polygamma and the derivative of digamma, against SciPy, central differences and JAX."""
import numpy as np
import pytest
import scipy.special as sp

import tracejit
from tracejit import lax

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("m", [0.0, 1.0, 2.0])
def test_polygamma_values(m, x64):
    x = np.array([0.3, 1.5, 2.5, 10.0])
    np.testing.assert_allclose(np.asarray(lax.polygamma(m, x)), sp.polygamma(int(m), x),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(lax.polygamma(m, x)),
                               np.asarray(jax.lax.polygamma(m, x)), rtol=1e-12)


def test_non_integer_order_is_nan(x64):
    assert np.isnan(float(lax.polygamma(0.5, 2.0)))


@pytest.mark.parametrize("x", [0.7, 2.5, 10.0])
def test_digamma_derivatives(x, x64):
    d1 = float(tracejit.grad(lax.digamma)(x))
    fd = (float(lax.digamma(x + 1e-6)) - float(lax.digamma(x - 1e-6))) / 2e-6
    assert abs(d1 - fd) < 1e-6 * max(1.0, abs(fd))
    assert d1 == pytest.approx(float(jax.grad(jax.lax.digamma)(x)), rel=1e-12)
    d2 = float(tracejit.grad(tracejit.grad(lax.digamma))(x))
    assert d2 == pytest.approx(float(jax.grad(jax.grad(jax.lax.digamma))(x)), rel=1e-10)
    batched = tracejit.vmap(tracejit.grad(lax.digamma))(np.array([x, x + 1.0]))
    np.testing.assert_allclose(np.asarray(batched), [d1, float(sp.polygamma(1, x + 1.0))],
                               rtol=1e-12)
