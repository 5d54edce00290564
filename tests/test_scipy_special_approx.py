"""jax.scipy.special's dawsn, wofz, sici, owens_t, bessel_jn, hyp1f1, hyp2f1, fresnel:
values against SciPy (float64 to 1e-12 relative, float32 to a few float32 ulps: the documented
accuracy of the rational approximations and series JAX uses), eagerly and under jit (native)
and vmap; dtypes and errors against real JAX; gradients against central differences and JAX."""
import numpy as np
import pytest
import scipy.special as ss

import tracejit
import tracejit.scipy.special as ts

RNG = np.random.default_rng(0)
X = np.concatenate([RNG.standard_normal(60) * 3, RNG.standard_normal(20) * 30,
                    [0.0, 3.25, 6.25, -7.0, 1e-3, 4.0, 8.0, 1e3, 2e9]])
Z = np.concatenate([RNG.standard_normal(40) * 3 + 1j * RNG.standard_normal(40) * 3,
                    [0j, 1j, -1j, 5 - 0.1j, -4 + 0.2j]])
H = np.concatenate([RNG.standard_normal(40) * 2, [0.0, 1.0, 0.3]])
A = np.concatenate([RNG.standard_normal(40) * 2, [1.0, 0.0, 5.0]])
KA = RNG.uniform(-3, 3, 30)
KB = RNG.uniform(0.5, 4, 30)
KX = np.concatenate([RNG.uniform(-6, 6, 28), [120.0, 150.0]])
FX = np.concatenate([np.linspace(-12, 12, 121), [1.6, 1e5, -1e6, np.inf, -np.inf]])

# (name, our call, SciPy's, arguments, float32 / float64 tolerance: (rtol, atol))
CASES = {
    "dawsn": (lambda x: ts.dawsn(x), ss.dawsn, (X,), ((2e-6, 1e-7), (1e-13, 1e-300))),
    "si": (lambda x: ts.sici(x)[0], lambda x: ss.sici(x)[0], (X,), ((2e-6, 1e-7),
                                                                   (1e-13, 1e-300))),
    "ci": (lambda x: ts.sici(x)[1], lambda x: ss.sici(x)[1], (np.abs(X) + 1e-3,),
           ((2e-6, 2e-7), (1e-13, 1e-15))),
    "wofz": (lambda z: ts.wofz(z), ss.wofz, (Z,), ((1e-5, 1e-7), (1e-12, 1e-15))),
    "owens_t": (lambda h, a: ts.owens_t(h, a), ss.owens_t, (H, A), ((2e-6, 1e-8),
                                                                    (1e-12, 1e-16))),
    # float32: the alternating series for x < 0 cancels (1e-4); x = 120, 150 (the asymptotic
    # expansion) overflow float32, as in JAX, and are checked in float64 only
    # Cephes' float32 fresnlf returns 1/2 beyond x² >= 2.5625 ... 36974: 3.2e-6 at x = 12
    "fresnel_s": (lambda x: ts.fresnel(x)[0], lambda x: ss.fresnel(x)[0], (FX,),
                  ((0, 4e-6), (0, 2e-15))),
    "fresnel_c": (lambda x: ts.fresnel(x)[1], lambda x: ss.fresnel(x)[1], (FX,),
                  ((0, 4e-6), (0, 2e-15))),
    "hyp1f1": (lambda a, b, x: ts.hyp1f1(a, b, x), ss.hyp1f1, (KA, KB, KX),
               ((1e-4, 1e-7), (1e-12, 1e-14))),
}


def _cast(x, dtype):
    if np.iscomplexobj(x):
        return x.astype(np.complex64 if dtype == np.float32 else np.complex128)
    return x.astype(dtype)


@pytest.fixture
def x64():
    tracejit.config.update("jax_enable_x64", True)
    yield
    tracejit.config.update("jax_enable_x64", False)


def _check(name, dtype):
    ours, ref, args, tols = CASES[name]
    rtol, atol = tols[dtype == np.float64]
    if dtype == np.float32 and name == "hyp1f1":
        args = tuple(a[:-2] for a in args)
    cast = [_cast(a, dtype) for a in args]
    expected = ref(*args)
    for got in (ours(*cast), tracejit.jit(ours)(*cast)):
        got = np.asarray(got)
        assert got.dtype == np.result_type(*cast) or got.dtype.kind == "c"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
def test_float32_against_scipy(name):
    _check(name, np.float32)


@pytest.mark.parametrize("name", list(CASES))
def test_float64_against_scipy(x64, name):
    _check(name, np.float64)


def test_bessel_jn_against_scipy(x64):
    z = np.abs(RNG.standard_normal(30) * 5) + 0.1
    expected = np.stack([ss.jv(n, z) for n in range(6)])
    for f in (lambda z: ts.bessel_jn(z, v=5), tracejit.jit(lambda z: ts.bessel_jn(z, v=5))):
        np.testing.assert_allclose(f(z), expected, rtol=1e-12, atol=1e-14)
    assert ts.bessel_jn(z.reshape(5, 6), v=2).shape == (3, 5, 6)


def test_vmap_matches_loop():
    x = X[:12].astype(np.float32).reshape(3, 4)
    for f in (ts.dawsn, lambda v: ts.sici(v)[1], lambda v: ts.owens_t(v, 0.7 * v),
              lambda v: ts.hyp1f1(0.5, 1.5, v), lambda v: ts.bessel_jn(v + 5, v=2)):
        batched = tracejit.vmap(f)(x)
        looped = np.stack([np.asarray(f(row)) for row in x])
        np.testing.assert_allclose(batched, looped, rtol=1e-6, atol=1e-7)


def test_gradients_against_central_differences(x64):
    h = 1e-6
    points = {
        "dawsn": (lambda x: ts.dawsn(x), (0.7,)),
        "si": (lambda x: ts.sici(x)[0], (2.5,)),
        "ci": (lambda x: ts.sici(x)[1], (5.5,)),
        "wofz_re": (lambda x: ts.wofz(x + 0.4j).real, (0.8,)),
        "owens_t": (lambda h_, a: ts.owens_t(h_, a), (0.6, 1.7)),
        "hyp1f1": (lambda a, b, x: ts.hyp1f1(a, b, x), (0.7, 1.9, 2.3)),
        "bessel_jn": (lambda z: ts.bessel_jn(z, v=3)[3], (2.2,)),
        "fresnel_s": (lambda x: ts.fresnel(x)[0], (1.3,)),
        "fresnel_c": (lambda x: ts.fresnel(x)[1], (-2.1,)),
    }
    for name, (f, at) in points.items():
        grads = tracejit.grad(f, argnums=tuple(range(len(at))))(*at)
        for i, g in enumerate(grads):
            up = list(at)
            down = list(at)
            up[i] += h
            down[i] -= h
            numeric = (f(*up) - f(*down)) / (2 * h)
            np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-9, err_msg=name)


def test_dtypes_errors_and_gradients_as_jax():
    jax = pytest.importorskip("jax")
    js = jax.scipy.special
    for ours, theirs, args in [
        (ts.dawsn, js.dawsn, (np.float32(0.5),)), (ts.dawsn, js.dawsn, (np.int32(2),)),
        (ts.wofz, js.wofz, (np.float32(0.5),)), (ts.wofz, js.wofz, (np.complex64(0.5j),)),
        (ts.owens_t, js.owens_t, (1, np.float32(0.5))),
        (ts.hyp1f1, js.hyp1f1, (1, 2, np.float32(0.5))),
        (lambda x: ts.sici(x)[0], lambda x: js.sici(x)[0], (np.float16(0.5),)),
        (lambda x: ts.bessel_jn(x, v=1), lambda x: js.bessel_jn(x, v=1), (np.float32(0.5),)),
        (lambda x: ts.fresnel(x)[1], lambda x: js.fresnel(x)[1], (np.float16(0.5),)),
    ]:
        a, b = ours(*args), theirs(*args)
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
    for ours, theirs in [(ts.dawsn, js.dawsn), (lambda z: ts.hyp1f1(1.0, 2.0, z),
                                                lambda z: js.hyp1f1(1.0, 2.0, z)),
                         (ts.sici, js.sici), (lambda z: ts.bessel_jn(z, v=1),
                                              lambda z: js.bessel_jn(z, v=1))]:
        with pytest.raises((ValueError, TypeError)):  # JAX's hyp1f1 fails inside, in rem
            theirs(np.complex64(1j))
        with pytest.raises(ValueError):
            ours(np.complex64(1j))
    g = tracejit.grad(lambda a, b, x: ts.hyp1f1(a, b, x), argnums=(0, 1, 2))(0.7, 1.9, 2.3)
    gj = jax.grad(lambda a, b, x: js.hyp1f1(a, b, x), argnums=(0, 1, 2))(0.7, 1.9, 2.3)
    np.testing.assert_allclose(g, gj, rtol=1e-5)
    g = tracejit.grad(lambda h_, a: ts.owens_t(h_, a), argnums=(0, 1))(0.4, 2.5)
    gj = jax.grad(lambda h_, a: js.owens_t(h_, a), argnums=(0, 1))(0.4, 2.5)
    np.testing.assert_allclose(g, gj, rtol=1e-5)


def _hyp2f1_points():
    rng = np.random.default_rng(1)
    n = 40
    a, b = rng.uniform(-3, 3, n), rng.uniform(-3, 3, n)
    c, x = rng.uniform(0.5, 5, n), rng.uniform(-2, 0.99, n)
    a[:5] = [-2, -3, 0, 1, 2]  # terminating sums and a = 0
    x[5:10] = [0.95, 0.97, 0.999, 1.0, 0.5]
    c[5:8] = a[5:8] + b[5:8] + np.array([1, 2, 0.0])  # c - a - b an integer near x = 1
    return a, b, c, x


def test_hyp2f1_against_jax_and_scipy(x64):
    """Every branch (special cases, terminating sums, Euler's transformation, the digamma
    series near 1) against JAX's hyp2f1; against SciPy where the plain series converges."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    try:
        a, b, c, x = _hyp2f1_points()
        theirs = np.asarray(jax.scipy.special.hyp2f1(a, b, c, x))
        tg = jax.grad(jax.scipy.special.hyp2f1, argnums=(0, 1, 2, 3))(0.3, 0.7, 1.9, 0.4)
    finally:
        jax.config.update("jax_enable_x64", False)
    for got in (ts.hyp2f1(a, b, c, x), tracejit.jit(ts.hyp2f1)(a, b, c, x)):
        np.testing.assert_allclose(got, theirs, rtol=1e-12, atol=1e-14)
    inside = (np.abs(x) < 0.9) & (c > 0)
    np.testing.assert_allclose(np.asarray(ts.hyp2f1(a, b, c, x))[inside],
                               ss.hyp2f1(a, b, c, x)[inside], rtol=1e-10)
    g = tracejit.grad(ts.hyp2f1, argnums=(0, 1, 2, 3))(0.3, 0.7, 1.9, 0.4)
    np.testing.assert_allclose(g, tg, rtol=1e-10)
    h = 1e-6
    numeric = (ts.hyp2f1(0.3, 0.7, 1.9, 0.4 + h) - ts.hyp2f1(0.3, 0.7, 1.9, 0.4 - h)) / (2 * h)
    np.testing.assert_allclose(g[3], numeric, rtol=1e-7)
    f32 = [v.astype(np.float32) for v in (a, b, c, x)]
    assert ts.hyp2f1(*f32).dtype == np.float32
