"""JAX 0.12's jax.scipy.special additions: ndtri_exp, gammaincinv, gammainccinv, iv, jn, kn, yn.
Values against SciPy (and mpmath near y = -log 2, where SciPy's ndtri_exp cancels) in float64
and float32, eagerly and under jit; edge values (0, inf, NaN, out of domain) as JAX 0.12 gives
them (checked from its command line, asserted here as derived values); gradients against
central differences; vmap against a loop; dtypes and errors."""
import math

import mpmath
import numpy as np
import pytest
import scipy.special as ss

import tracejit
import tracejit.numpy as jnp
import tracejit.scipy.special as ts

RNG = np.random.default_rng(0)
# the comparisons below meet NaN and inf on purpose (edge values, overflowing references)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture
def x64():
    tracejit.config.update("jax_enable_x64", True)
    yield
    tracejit.config.update("jax_enable_x64", False)


def _rel(got, expected, floor):
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    return np.where(same, 0., np.abs(got - expected) / np.maximum(np.abs(expected), floor))


X = np.concatenate([np.linspace(0.05, 30, 60), np.logspace(-8, 3, 22), -RNG.uniform(0.1, 20, 8)])
ORDERS = (1, 7)
# float64: relative error, with (for J and Y, oscillating) the error measured against the
# envelope min(1, sqrt(2 / (pi x))) times 1e-3 near their zeros
BESSEL = {"jn": (ts.jn, ss.jv, 1e-3), "yn": (ts.yn, ss.yn, 1e-3), "iv": (ts.iv, ss.iv, 0.),
          "kn": (ts.kn, ss.kn, 0.)}


def _stacked_bessels(x):
    return jnp.stack([ours(n, x) for ours, _, _ in BESSEL.values() for n in ORDERS])


def _with_derivative(f):
    """One program for values and derivatives of an elementwise f: its jvp along ones."""
    return tracejit.jit(lambda *v: tracejit.jvp(f, v, tuple(jnp.ones_like(a) for a in v)))


def _central(f, at, h):
    """Central differences of the values f returns (its derivative output ignored)."""
    return (f(*[a + h for a in at])[0] - f(*[a - h for a in at])[0]) / (2 * h)


def test_bessel_against_scipy(x64):
    envelope = np.minimum(1., np.sqrt(2 / np.pi / np.abs(X)))
    floor = np.stack([np.maximum(near_zero * envelope, 1e-300)
                      for _, _, near_zero in BESSEL.values() for n in ORDERS])
    oscillating = np.stack([np.full(X.shape, near_zero > 0) for _, _, near_zero in
                            BESSEL.values() for n in ORDERS])
    expected = np.stack([ref(n, X) for _, ref, _ in BESSEL.values() for n in ORDERS])
    run = _with_derivative(_stacked_bessels)
    got, deriv = run(X)
    assert got.dtype == np.float64
    assert _rel(got, expected, floor).max() < 1e-11
    # derivatives (the recurrences' closed forms) against central differences of the values
    h = 1e-6 * np.abs(X)
    numeric = _central(run, (X,), h)
    # (below x = 0.1 the differences of I0, which is flat there, cancel)
    ok = np.isfinite(numeric) & (np.abs(X) > 0.1)
    assert (_rel(deriv, numeric, np.maximum(floor * 1e3, 1e-300))[ok] < 1e-6).all()
    # float32 (order 7, whose recurrences start from all of J0, J1, Y0, Y1, K0, K1 and run
    # Miller's method for I), batched with vmap: a few float32 ulps relative away from zeros;
    # for J and Y against the envelope, plus the rounding of the phase x - pi/4 (an ulp of x)
    x32 = X.astype(np.float32)
    rows = [k * len(ORDERS) + ORDERS.index(7) for k in range(len(BESSEL))]
    got32 = tracejit.jit(tracejit.vmap(lambda v: jnp.stack([ours(7, v) for ours, _, _ in
                                                            BESSEL.values()]), out_axes=1))(
        x32.reshape(9, 10))
    got32 = np.asarray(got32).reshape(len(BESSEL), -1)
    assert got32.dtype == np.float32
    exp32 = np.stack([ref(7, x32.astype(np.float64)) for _, ref, _ in BESSEL.values()])
    fine = np.abs(exp32) < 1e30
    floor32 = np.maximum(np.where(oscillating, floor * 1e3, floor)[rows], 1e-30)
    tol = 3e-5 + np.where(oscillating[rows], 2 * np.spacing(np.abs(x32)), 0)
    assert (_rel(got32, exp32, floor32) < tol)[fine].all()


def test_bessel_edges(x64):
    z = np.array([0., np.inf, -np.inf, np.nan, -2.5, 700., 800.])
    nan, inf = np.nan, np.inf
    # JAX 0.12's values at 0, inf, -inf, NaN, -2.5 (SciPy's jv, yn, iv are NaN at infinity);
    # at 700 and 800 I overflows exactly where it should, K underflows to 0 (SciPy's kn already
    # at 700, where K is 4.7e-306: mpmath's values there)
    expected = {("jn", -3): [0., 0., 0., nan, ss.jv(-3, -2.5), ss.jv(-3, 700.), ss.jv(-3, 800.)],
                ("yn", 1): [-inf, 0., nan, nan, nan, ss.yn(1, 700.), ss.yn(1, 800.)],
                ("yn", -3): [inf, 0., nan, nan, nan, -ss.yn(3, 700.), -ss.yn(3, 800.)],
                ("kn", 1): [inf, 0., nan, nan, nan, float(mpmath.besselk(1, 700)), 0.],
                ("kn", -3): [inf, 0., nan, nan, nan, float(mpmath.besselk(3, 700)), 0.],
                ("iv", 1): [0., inf, -inf, nan, ss.iv(1, -2.5), ss.iv(1, 700.), inf],
                ("iv", -2): [0., inf, inf, nan, ss.iv(2, -2.5), ss.iv(2, 700.), inf]}
    run = _with_derivative(lambda v: jnp.stack([getattr(ts, name)(n, v)
                                                for name, n in expected]))
    got, deriv = run(z)
    np.testing.assert_allclose(got, list(expected.values()), rtol=1e-12)
    # the derivatives at z = 0 (JAX 0.12's): Y_1' = inf, K_1' = -inf, I_1' = 1/2; at -2.5
    # and 700 (negative orders, reflections) against SciPy's derivative functions
    np.testing.assert_array_equal(deriv[[1, 3, 5], 0], [np.inf, -np.inf, 0.5])
    np.testing.assert_allclose(deriv[[0, 5, 6], 4], [ss.jvp(-3, -2.5), ss.ivp(1, -2.5),
                                                     ss.ivp(-2, -2.5)], rtol=1e-12)
    np.testing.assert_allclose(deriv[:3, 5], [ss.jvp(-3, 700.), ss.yvp(1, 700.),
                                              ss.yvp(-3, 700.)], rtol=1e-11)


def test_ndtri_exp_against_scipy_and_mpmath(x64):
    mpmath.mp.dps = 40
    near = -math.log(2) * (1 + np.array([0., 1e-15, -1e-12, 1e-9, -1e-6, 1e-3]))
    y = np.concatenate([-np.logspace(-320, 308, 120), -np.linspace(0.01, 3, 150),
                        [-2., -2.0000001, -0.1454, -0.1455, 0., -np.inf, 1e-300, np.nan],
                        near])
    run = _with_derivative(ts.ndtri_exp)
    got, deriv = run(y)
    assert got.dtype == np.float64
    far = np.abs(y + math.log(2)) > 0.05       # SciPy's ndtri_exp cancels near -log 2
    assert _rel(got[far], ss.ndtri_exp(y[far]), 1e-300).max() < 4e-15
    exact = [float(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.exp(mpmath.mpf(v)) - 1))
             for v in near]
    assert _rel(got[-6:], exact, 1e-300).max() < 4e-15
    # JAX 0.12's edges: inf at 0, -inf at -inf, NaN above 0; derivative inf at 0, 0 at -inf
    np.testing.assert_array_equal(got[-10:-6], [np.inf, -np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(deriv[-10:-8], [np.inf, 0.])
    # derivatives against central differences of the values
    h = 1e-6 * np.abs(y)
    numeric = _central(run, (y,), h)
    ok = (y < -1e-30) & (y > -1e30)
    assert (_rel(deriv, numeric, 1e-300)[ok] < 1e-6).all()
    # the second derivative, through the closed-form first
    d1 = tracejit.grad(ts.ndtri_exp)
    np.testing.assert_allclose(tracejit.grad(d1)(-2.), (d1(-2. + 1e-5) - d1(-2. - 1e-5)) / 2e-5,
                               rtol=1e-6)
    # float32 (vmapped): within 4 float32 ulps of SciPy's value rounded
    y32 = y[(y > -3e38) & (y < -1e-38)].astype(np.float32)
    y32 = y32[:y32.size // 6 * 6]
    got32 = np.asarray(tracejit.vmap(ts.ndtri_exp)(y32.reshape(-1, 6))).ravel()
    exp32 = ss.ndtri_exp(y32.astype(np.float64))
    assert got32.dtype == np.float32
    ulps = np.abs(got32 - exp32) / np.spacing(np.abs(exp32).astype(np.float32))
    assert ulps.max() < 4


def _inverses(a, y):
    return jnp.stack([ts.gammaincinv(a, y), ts.gammainccinv(a, y)])


def test_gammaincinv_against_scipy(x64):
    a = np.concatenate([10 ** RNG.uniform(-3, 3, 12), [0.5, 1., 2.]])
    y = np.concatenate([10. ** -RNG.uniform(0, 300, 4), RNG.uniform(0, 1, 5),
                        1 - 10. ** -RNG.uniform(1, 15, 2)])
    a, y = (v.ravel() for v in np.meshgrid(a, y))
    # JAX 0.12's edge values: 0 and inf at the ends of [0, 1] (either way round), NaN for
    # a < 0, y outside [0, 1], NaN, a in {0, inf} inside (0, 1)
    a = np.concatenate([a, [0., 0., 1., -1., np.inf, 1., 2., 2., np.inf]])
    y = np.concatenate([y, [0., .5, 0., .5, .5, 1.5, 1., np.nan, 1.]])
    # the derivative in a on half the points, in y on the other half: one jvp
    in_a = np.arange(a.size) % 2 == 0
    run = tracejit.jit(lambda a_, y_: tracejit.jvp(_inverses, (a_, y_), (1. * in_a, 1. - in_a)))
    got, deriv = run(a, y)
    assert got.dtype == np.float64
    nan, inf = np.nan, np.inf
    np.testing.assert_array_equal(got[:, -9:], [[0., nan, 0., nan, nan, nan, inf, nan, inf],
                                                [inf, nan, inf, nan, nan, nan, 0., nan, 0.]])
    for k, ref in enumerate((ss.gammaincinv, ss.gammainccinv)):
        expected = ref(a[:-9], y[:-9])
        ok = expected > 1e-300
        assert _rel(got[k, :-9], expected, 1e-300)[ok].max() < 2e-12
    # derivatives (dx/dy in closed form, dx/da by the gamma sampler's implicit derivative)
    # against central differences, where both moves stay inside the domain
    h_a, h_y = 1e-6 * a * in_a, 1e-7 * np.minimum(y, 1 - y) * ~in_a
    up, down = run(a + h_a, y + h_y)[0], run(a - h_a, y - h_y)[0]
    numeric = (up - down) / (2 * (h_a + h_y))
    ok = ((a > 1e-2) & (a < 1e3) & (y > 1e-250) & (y < 1 - 1e-10)) & np.isfinite(numeric)
    assert (_rel(deriv, numeric, 1e-300)[ok] < 2e-5).all()
    # float32, vmapped (probabilities above float32's smallest normal): a few ulps, times 1/a
    # for small a, where x ~ (p Gamma(a + 1))**(1/a) amplifies P's rounding by 1/a
    keep = np.flatnonzero((y > 1e-30) & (y < 1 - 1e-6))[:90]
    a32, y32 = a[keep].astype(np.float32), y[keep].astype(np.float32)
    got32 = tracejit.jit(tracejit.vmap(_inverses, out_axes=1))(a32.reshape(9, 10),
                                                                y32.reshape(9, 10))
    got32 = np.asarray(got32).reshape(2, -1)
    assert got32.dtype == np.float32
    for k, ref in enumerate((ss.gammaincinv, ss.gammainccinv)):
        exp32 = ref(a32.astype(np.float64), y32.astype(np.float64))
        fine = exp32 > 1e-35
        tol = 3e-5 + 16 * 2. ** -23 / np.minimum(a32, 1)
        assert (_rel(got32[k], exp32, 1e-300) < tol)[fine].all()


def test_dtypes_and_errors():
    # integers promote to the default float; results of Python scalars are not weakly typed
    # (JAX 0.12's); half types compute in float32 and come back
    for got in (ts.ndtri_exp(-1), ts.ndtri_exp(-1.), ts.jn(2, 1), ts.yn(0, 1.), ts.iv(0, 1.),
                ts.kn(0, 1.), ts.iv(2, jnp.array([1, 2])), ts.gammaincinv(2, 0.5),
                ts.gammainccinv(2., 0.5)):
        assert (got.dtype, got.weak_type) == (np.float32, False)
    for f in (lambda v: ts.ndtri_exp(-v), lambda v: ts.kn(2, v),
              lambda v: ts.gammainccinv(v, 0.25)):
        got = f(jnp.asarray(1.5, jnp.float16))
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, f(np.float32(1.5)).astype(np.float16))
    assert ts.gammaincinv(jnp.float32(2), 0.5).dtype == np.float32
    assert ts.gammaincinv(jnp.ones(3), jnp.full((2, 1), 0.5)).shape == (2, 3)
    # complex input: JAX 0.12's ValueError; complex Bessel arguments are not supported yet
    with pytest.raises(ValueError, match="ndtri_exp does not support complex"):
        ts.ndtri_exp(np.array([1j]))
    with pytest.raises(ValueError, match="gammaincinv does not support complex"):
        ts.gammaincinv(2 + 0j, 0.5)
    with pytest.raises(NotImplementedError, match="complex"):
        ts.jn(2, 1 + 1j)
    # the order must be a static integer: a float is a TypeError, a traced one a
    # ConcretizationTypeError (a TypeError subclass) naming the argument
    with pytest.raises(TypeError):
        ts.jn(2.0, 1.0)
    with pytest.raises(TypeError, match="static integer"):
        tracejit.jit(lambda n: ts.kn(n, 1.0))(2)
    np.testing.assert_allclose(ts.jn(jnp.array(2), 1.0), ss.jv(2, 1.0), rtol=1e-6)
