"""tracejit.scipy.special and tracejit.scipy.stats against real JAX (the oracle for values,
dtypes and gradients) and SciPy (for accuracy), eagerly and under jit."""
import jax
import jax.scipy.special as jsp
import numpy as np
import pytest

import tracejit
from tracejit.scipy import special

X = np.linspace(-30, 10, 81).astype(np.float32)
P = np.linspace(0.001, 0.999, 64).astype(np.float32)
Y = np.linspace(0.1, 5, 33).astype(np.float32)


@pytest.mark.parametrize("name, arg", [("ndtr", X), ("log_ndtr", X), ("ndtri", P),
                                       ("expit", X), ("logit", P), ("erf", X), ("erfc", X),
                                       ("erfinv", 2 * P - 1), ("gammaln", Y),
                                       ("digamma", Y)])
@pytest.mark.parametrize("jit", [False, True])
def test_unary_matches_jax(name, arg, jit):
    ours = getattr(special, name)
    if jit:
        ours = tracejit.jit(ours)
    got, want = ours(arg), getattr(jsp, name)(arg)
    assert got.dtype == want.dtype
    # gammaln and digamma cross zero inside the range: there a float32 ulp of the terms that
    # cancel is a large relative error in both implementations, so allow a few ulps of 1
    atol = 2e-6 if name in ("gammaln", "digamma") else 1e-30
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=atol)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_zero_x_and_gradient(name):
    ours, theirs = getattr(special, name), getattr(jsp, name)
    x = np.array([0., 0., 2., 0.5], np.float32)
    y = np.array([0., -1., 3., 0.25], np.float32)
    np.testing.assert_allclose(ours(x, y), theirs(x, y), rtol=1e-6)
    for argnums in (0, 1):
        g = tracejit.grad(ours, argnums)(2., 3.)
        np.testing.assert_allclose(g, jax.grad(theirs, argnums)(2., 3.), rtol=1e-6)


def test_log_ndtr_gradient_in_both_tails():
    import mpmath
    mpmath.mp.dps = 40
    for x in (-25., -3., 0., 3., 12.):
        exact = float(mpmath.npdf(x) / mpmath.ncdf(x))
        # exp(log_pdf - log_ndtr): at x = -25 both logs are near -312, where a float32 ulp is
        # 3e-5, so that is the relative error of the difference's exp (JAX's too)
        np.testing.assert_allclose(tracejit.grad(special.log_ndtr)(x), exact, rtol=5e-5)


def test_log_ndtr_rejects_integers_and_bad_series_order():
    for f in (special.ndtr, special.ndtri):
        with pytest.raises(TypeError, match="int32"):
            f(1)
    with pytest.raises(TypeError, match="log_ndtr"):
        special.log_ndtr(np.int32(1))  # JAX does not promote integers here
    with pytest.raises(ValueError, match="series_order"):
        special.log_ndtr(1., series_order=-1)
