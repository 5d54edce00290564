"""jax.scipy.signal's FFT-based functions (fftconvolve, detrend, stft, istft, csd, welch)
against real JAX (shapes, dtypes, errors) and SciPy (values), eagerly and under jit."""
import numpy as np
import pytest
import scipy.signal as ss

import tracejit
import tracejit.scipy.signal as ts

jax = pytest.importorskip("jax")
js = jax.scipy.signal


def theirs(f, *args, **kwargs):
    """JAX's f(*args, **kwargs) under jax.jit: JAX runs it op by op otherwise, compiling each
    operation at each new shape (2.8 of the 3.1 s of CPU of a welch case); the comparisons are
    to 1e-4, where its fused and op-by-op results are equally good oracles."""
    return jax.jit(lambda *a: f(*a, **kwargs))(*args)


def assert_same(got, expected, rtol=1e-4):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * max(1.0, np.abs(e).max()))


CONV_SHAPES = [((10,), (3,), None), ((3,), (10,), None), ((6, 7), (3, 2), None),
               ((5, 8), (5, 3), -1), ((4, 6, 5), (4, 3, 2), (1, 2)), ((1, 5), (4, 1), None)]


@pytest.mark.parametrize("shape1,shape2,axes", CONV_SHAPES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_matches_scipy_and_jax(shape1, shape2, axes, mode, rng):
    a = rng.standard_normal(shape1).astype(np.float32)
    b = rng.standard_normal(shape2).astype(np.float32)
    try:
        expected = theirs(js.fftconvolve, a, b, mode=mode, axes=axes)
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)[:30]):
            ts.fftconvolve(a, b, mode=mode, axes=axes)
        return
    got = tracejit.jit(lambda a, b: ts.fftconvolve(a, b, mode=mode, axes=axes))(a, b)
    assert_same(got, expected)
    np.testing.assert_allclose(np.asarray(got), ss.fftconvolve(a, b, mode=mode, axes=axes),
                               rtol=1e-4, atol=1e-4)


def test_fftconvolve_complex_and_errors(rng):
    a = (rng.standard_normal((7,)) + 1j * rng.standard_normal(7)).astype(np.complex64)
    b = rng.standard_normal(4).astype(np.float32)
    assert_same(ts.fftconvolve(a, b), theirs(js.fftconvolve, a, b))
    for bad in (dict(mode="wide"),):
        with pytest.raises(ValueError):
            js.fftconvolve(a, b, **bad)
        with pytest.raises(ValueError):
            ts.fftconvolve(a, b, **bad)
    with pytest.raises(ValueError, match="same dimensionality"):
        ts.fftconvolve(a, b[None])


@pytest.mark.parametrize("kwargs", [dict(), dict(bp=[50, 120]), dict(type="constant", axis=0),
                                    dict(bp=[1, 2])])
def test_detrend(kwargs, rng):
    x = rng.standard_normal((3, 200))
    assert_same(ts.detrend(x.astype(np.float32), **kwargs),
                theirs(js.detrend, x.astype(np.float32), **kwargs))
    np.testing.assert_allclose(np.asarray(ts.detrend(x, **kwargs)), ss.detrend(x, **kwargs),
                               atol=1e-5)


WELCH_CASES = [dict(nperseg=64), dict(nperseg=50, average="median", scaling="spectrum",
                                      detrend="linear"),
               dict(nperseg=32, nfft=40, noverlap=8), dict(nperseg=64, window="hamming"),
               dict(nperseg=33, return_onesided=False, detrend=False)]


@pytest.mark.parametrize("kwargs", WELCH_CASES)
def test_welch_and_csd(kwargs, rng):
    x = rng.standard_normal((2, 300)).astype(np.float32)
    y = rng.standard_normal((2, 300)).astype(np.float32)
    assert_same(tracejit.jit(lambda x: ts.welch(x, **kwargs))(x), theirs(js.welch, x, **kwargs))
    assert_same(ts.welch(x.T, axis=0, **kwargs), theirs(js.welch, x.T, axis=0, **kwargs))
    assert_same(ts.csd(x, y, **kwargs), theirs(js.csd, x, y, **kwargs))
    f, p = ts.welch(x.astype(np.float64), **kwargs)
    sf, sp = ss.welch(x.astype(np.float64), **kwargs)
    np.testing.assert_allclose(np.asarray(f), sf, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p), sp, rtol=1e-4, atol=1e-6)


STFT_CASES = [dict(nperseg=32), dict(nperseg=31, noverlap=10, boundary="odd"),
              dict(nperseg=16, boundary="even", padded=False), dict(nperseg=20, nfft=24,
                                                                     window="hamming")]


@pytest.mark.parametrize("kwargs", STFT_CASES)
def test_stft_and_istft(kwargs, rng):
    x = rng.standard_normal((2, 257)).astype(np.float32)
    got = tracejit.jit(lambda x: ts.stft(x, **kwargs))(x)
    expected = theirs(js.stft, x, **kwargs)
    assert_same(got, expected)
    np.testing.assert_allclose(np.asarray(got[2]), ss.stft(x, **kwargs)[2], atol=1e-5)
    inverse_kw = {k: v for k, v in kwargs.items() if k in ("nperseg", "noverlap", "nfft",
                                                           "window")}
    # (JAX 0.10's istft passes the caller's nfft, not its default, to irfft: an odd
    # nperseg without nfft fails there; SciPy's default is nperseg)
    inverse_kw.setdefault("nfft", kwargs["nperseg"])
    z = np.asarray(expected[2])
    assert_same(tracejit.jit(lambda z: ts.istft(z, **inverse_kw))(z),
                theirs(js.istft, z, **inverse_kw))


def test_istft_round_trip_and_errors(rng):
    x = rng.standard_normal(256).astype(np.float32)
    _, _, z = ts.stft(x, nperseg=32)
    _, back = ts.istft(np.asarray(z), nperseg=32)
    np.testing.assert_allclose(np.asarray(back)[:256], x, atol=1e-5)
    for bad in (dict(nperseg=-1), dict(noverlap=40), dict(time_axis=0, freq_axis=0)):
        with pytest.raises(ValueError) as expected:
            js.istft(np.asarray(z), **bad)
        with pytest.raises(ValueError) as got:
            ts.istft(np.asarray(z), **bad)
        assert str(got.value) == str(expected.value)
    with pytest.raises(ValueError, match="Unknown boundary"):
        ts.stft(x, boundary="circular")
