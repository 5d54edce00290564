"""tracejit.scipy.signal, integrate and ndimage against real JAX: values, shapes and dtypes,
eagerly and under jit, gradients and the errors JAX raises."""
import jax
import jax.scipy.integrate as jint
import jax.scipy.ndimage as jnd
import jax.scipy.signal as jsig
import numpy as np
import pytest

import tracejit
from tracejit.scipy import integrate, ndimage, signal

RNG = np.random.default_rng(0)
SHAPES = [((10,), (3,)), ((3,), (10,)), ((5,), (5,)), ((1,), (4,)), ((7, 8), (3, 2)),
          ((4, 5), (6, 7)), ((4, 6), (4, 6)), ((3, 4, 5), (2, 2, 3))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_convolve_and_correlate_match_jax(shapes, mode, jit):
    x = RNG.normal(size=shapes[0]).astype(np.float32)
    y = RNG.normal(size=shapes[1]).astype(np.float32)
    names = ["convolve", "correlate"] + (["convolve2d", "correlate2d"] if x.ndim == 2 else [])
    for name in names:
        ours = getattr(signal, name)
        if jit:
            ours = tracejit.jit(ours, static_argnums=2)
        got, want = ours(x, y, mode), getattr(jsig, name)(x, y, mode)
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_convolve_complex_integer_and_float64(x64):
    x = (RNG.normal(size=9) + 1j * RNG.normal(size=9)).astype(np.complex64)
    y = (RNG.normal(size=4) + 1j * RNG.normal(size=4)).astype(np.complex64)
    for name in ("convolve", "correlate"):
        np.testing.assert_allclose(getattr(signal, name)(x, y), getattr(jsig, name)(x, y),
                                   rtol=1e-5, atol=1e-5)
    got = signal.convolve(np.arange(6), np.array([1, 2, 1]))
    want = jsig.convolve(np.arange(6), np.array([1, 2, 1]))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(signal.correlate2d(np.eye(4), np.ones((2, 3)), "same"),
                               jsig.correlate2d(np.eye(4), np.ones((2, 3)), "same"))


def test_convolve_gradient_and_vmap():
    x = RNG.normal(size=12).astype(np.float32)
    k = RNG.normal(size=3).astype(np.float32)

    def loss(lib_signal):
        return lambda x, k: (lib_signal.convolve(x, k, "same") ** 2).sum()
    for i in (0, 1):
        np.testing.assert_allclose(tracejit.grad(loss(signal), i)(x, k),
                                   jax.grad(loss(jsig), i)(x, k), rtol=1e-5, atol=1e-5)
    xs = RNG.normal(size=(4, 12)).astype(np.float32)
    got = tracejit.vmap(lambda v: signal.convolve(v, k))(xs)
    np.testing.assert_allclose(got, np.stack([jsig.convolve(v, k) for v in xs]), rtol=1e-5,
                               atol=1e-5)


def test_signal_errors_match_jax():
    for args, match in [((np.ones(3), np.ones((2, 2))), "same number of dimensions"),
                        ((np.ones((3, 2)), np.ones((2, 3))), "smaller than the other"),
                        ((np.ones(0), np.ones(2)), "zero-size")]:
        with pytest.raises(ValueError, match=match):
            jsig.convolve(*args)
        with pytest.raises(ValueError, match=match):
            signal.convolve(*args)
    with pytest.raises(ValueError, match="mode must be one of"):
        signal.convolve(np.ones(3), np.ones(2), mode="circular")
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        signal.convolve(np.ones(3), np.ones(2), method="winograd")
    np.testing.assert_allclose(signal.convolve(np.arange(3.0), np.ones(2), method="fft"),
                               jsig.convolve(np.arange(3.0), np.ones(2), method="fft"), atol=1e-6)
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        signal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(ValueError, match="2-dimensional"):
        signal.correlate2d(np.ones(3), np.ones(2))


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates_matches_jax(order, mode):
    img = RNG.normal(size=(5, 6)).astype(np.float32)
    coords = [RNG.uniform(-3, 8, 30).astype(np.float32),
              RNG.uniform(-3, 9, 30).astype(np.float32)]
    coords[0][:4] = [0., 4., 2.5, -0.5]          # the edges and half-way points exactly
    want = jnd.map_coordinates(img, coords, order, mode, cval=1.5)
    for f in (ndimage.map_coordinates,
              tracejit.jit(ndimage.map_coordinates, static_argnums=(2, 3))):
        got = f(img, coords, order, mode, 1.5)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_map_coordinates_integer_input_gradient_and_errors():
    img = np.arange(12, dtype=np.int32).reshape(3, 4)
    coords = [np.array([0.4, 1.5, 2.2]), np.array([0.5, 2.5, 3.])]
    np.testing.assert_array_equal(ndimage.map_coordinates(img, coords, 1),
                                  jnd.map_coordinates(img, coords, 1))
    f = np.linspace(0, 1, 20, dtype=np.float32).reshape(4, 5)
    c = np.array([1.3, 2.6], np.float32)
    g = tracejit.grad(lambda c: ndimage.map_coordinates(f, [c[0], c[1]], 1))(c)
    np.testing.assert_allclose(g, jax.grad(lambda c: jnd.map_coordinates(f, [c[0], c[1]], 1))(c),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(f, [c], 1)
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(f, [c, c], 3)
    with pytest.raises(NotImplementedError, match="does not yet support mode"):
        ndimage.map_coordinates(f, [c, c], 1, mode="grid-wrap")


def test_trapezoid_matches_jax():
    y = RNG.normal(size=(4, 7)).astype(np.float32)
    xs = np.sort(RNG.uniform(size=7)).astype(np.float32)
    x2 = np.sort(RNG.uniform(size=(4, 7)), axis=0).astype(np.float32)
    for kw in [{}, {"dx": 0.3}, {"x": xs}, {"axis": 0}, {"x": x2, "axis": 0},
               {"dx": np.arange(1, 5, dtype=np.float32)[:, None]},
               {"dx": np.arange(1, 7, dtype=np.float32)}]:
        for f in (integrate.trapezoid, tracejit.jit(integrate.trapezoid,
                                                    static_argnames="axis")):
            got, want = f(y, **kw), jint.trapezoid(y, **kw)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert integrate.trapezoid(np.arange(5)).dtype == jint.trapezoid(np.arange(5)).dtype
