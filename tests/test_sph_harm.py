"""jax.scipy.special.sph_harm_y against SciPy (values, degrees 0-8, the poles), real JAX
(dtypes, shapes, errors), finite differences (angle gradients), under jit and vmap."""
import numpy as np
import pytest
import scipy.special as ss

import tracejit
import tracejit.scipy.special as tsp

jax = pytest.importorskip("jax")
pytest.importorskip("jax.scipy.special")

RNG = np.random.RandomState(0)
N = RNG.randint(0, 9, 40)
M = np.array([RNG.randint(-k, k + 1) for k in N])
THETA = RNG.uniform(0, np.pi, 40)
PHI = RNG.uniform(0, 2 * np.pi, 40)
THETA[:2] = 0.0, np.pi  # the poles


def test_values_against_scipy(x64):
    expected = ss.sph_harm_y(N, M, THETA, PHI)
    got = tsp.sph_harm_y(N, M, THETA, PHI)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-13)
    jitted = tracejit.jit(lambda t, p: tsp.sph_harm_y(N, M, t, p, n_max=8))(THETA, PHI)
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=1e-12, atol=1e-13)
    rows = tracejit.vmap(lambda t: tsp.sph_harm_y(N[:5], M[:5], t, PHI[:5], n_max=8))(
        np.stack([THETA[:5], THETA[5:10]]))
    np.testing.assert_allclose(np.asarray(rows[1]), ss.sph_harm_y(N[:5], M[:5], THETA[5:10],
                                                                  PHI[:5]), rtol=1e-12)


def test_gradient_against_finite_differences(x64):
    def f(t, p):
        return tracejit.numpy.sum(tsp.sph_harm_y(N[2:], M[2:], t, p).real)
    g_t, g_p = tracejit.grad(f, (0, 1))(THETA[2:], PHI[2:])
    eps = 1e-6
    exact = lambda t, p: ss.sph_harm_y(N[2:], M[2:], t, p).real  # noqa: E731
    np.testing.assert_allclose(np.asarray(g_t), (exact(THETA[2:] + eps, PHI[2:])
                                                 - exact(THETA[2:] - eps, PHI[2:])) / (2 * eps),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(g_p), (exact(THETA[2:], PHI[2:] + eps)
                                                 - exact(THETA[2:], PHI[2:] - eps)) / (2 * eps),
                               rtol=1e-5, atol=1e-7)


def test_dtypes_shapes_and_errors_as_jax():
    cases = [(N[:3], M[:3], THETA[:3], PHI[:3]), (np.array([2]), np.array([1]), 0.5, 0.3),
             (np.array([2, 3]), np.array([1, 1]), np.array([0.5]), np.array([0.3]))]
    # JAX's shapes and dtypes by abstract evaluation (compiling its program takes seconds);
    # the values are SciPy's
    for args in cases:
        theirs = jax.eval_shape(lambda a=args: jax.scipy.special.sph_harm_y(*a))
        ours = tsp.sph_harm_y(*args)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        n, m, t, p = np.broadcast_arrays(*args)
        np.testing.assert_allclose(np.asarray(ours), ss.sph_harm_y(n, m, t, p), rtol=2e-5,
                                   atol=1e-6)
    with pytest.raises(NotImplementedError, match="diff_n"):
        tsp.sph_harm_y(N, M, THETA, PHI, diff_n=1)
    with pytest.raises(tracejit.errors.ConcretizationTypeError, match="n_max"):
        tracejit.jit(lambda n: tsp.sph_harm_y(n, M, THETA, PHI))(N)
