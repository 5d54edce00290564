"""Numerics of the native backend against float64 references (issue 13 item 6): long float sums
are pairwise (error grows as log n, as JAX's and NumPy's), float32 tan within 1 ulp."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp


def _sum(x, axis=None):
    return np.asarray(tracejit.jit(lambda x: tnp.sum(x, axis=axis))(x))


def test_sum_of_ones_past_float32_integer_range():
    """Every partial sum of a sequential or lane-wise float32 sum stops growing at 2**24; a
    column of 2**24 + 8 ones (2 columns) sums to 2**24 + 8, as in JAX."""
    x = np.ones((2 ** 24 + 8, 2), np.float32)
    np.testing.assert_array_equal(_sum(x, 0), [2 ** 24 + 8] * 2)
    assert _sum(x) == 2 ** 25 + 16


def test_long_float32_sum_accuracy():
    """2**25 uniform values: within 2 ulp of the float64 sum (lane-wise sequential sums were 34
    ulp off), as NumPy's pairwise sum."""
    x = np.random.default_rng(0).random(2 ** 25, dtype=np.float32)
    exact = x.astype(np.float64).sum()
    ulp = float(np.spacing(np.float32(exact)))
    assert abs(float(_sum(x)) - exact) <= 2 * ulp
    mean = exact / x.size
    assert abs(float(tracejit.jit(tnp.mean)(x)) - mean) <= 2 * float(np.spacing(np.float32(mean)))


@pytest.mark.parametrize("shape,axis", [((3000, 5), None), ((3000, 5), 0), ((5, 3000), 1),
                                        ((4, 5, 3000), (0, 2)), ((2, 3, 5000), (1, 2)),
                                        ((2049,), 0), ((3000, 2, 2), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64, tnp.bfloat16.dtype])
def test_blocked_sums_match_the_reference(shape, axis, dtype):
    rng = np.random.default_rng(1)
    x = rng.random(shape) + (1j * rng.random(shape) if dtype == np.complex64 else 0)
    x = x.astype(dtype)
    ref = np.asarray(tracejit.jit(lambda x: tnp.sum(x, axis=axis), backend="interpret")(x))
    got = _sum(x, axis)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    tol = 1e-5 if dtype in (np.float32, np.complex64) else 1e-2
    np.testing.assert_allclose(got.astype(np.complex128), ref.astype(np.complex128), rtol=tol)


@pytest.mark.parametrize("shape,axis", [((2 ** 17, 32), 0), ((4000, 8, 40), (0, 1)),
                                        ((40, 3000, 20), 1)])
def test_wide_column_sums_are_blocked_pairwise(shape, axis):
    """Sums over leading axes with > 16 outputs added rows one by one, so their error grew with
    the row count (2**17 rows: ~1e-5 relative); blocked rows combined pairwise stay near
    float32's rounding of the float64 sum."""
    x = np.random.default_rng(2).random(shape, dtype=np.float32) + 1
    exact = x.astype(np.float64).sum(axis=axis)
    got = _sum(x, axis)
    assert got.dtype == np.float32 and got.shape == exact.shape
    assert np.max(np.abs(got - exact) / exact) < 4e-7


@pytest.mark.parametrize("dtype", [np.float16, np.complex64])
def test_wide_column_sums_of_other_floats(dtype):
    rng = np.random.default_rng(3)
    x = (rng.random((300, 3, 24)) + (1j * rng.random((300, 3, 24)) if dtype == np.complex64
                                     else 0)).astype(dtype)
    exact = x.astype(np.complex128).sum(axis=0)
    got = _sum(x, 0)
    assert got.dtype == dtype
    tol = 1e-3 if dtype == np.float16 else 1e-6  # float16: the output's own rounding
    np.testing.assert_allclose(got.astype(np.complex128), exact, rtol=tol)


def test_float32_tan_within_one_ulp():
    """Against float64 tan rounded: a wide sweep (to 1e6 and near the poles pi/2 + k pi)."""
    rng = np.random.default_rng(2)
    poles = (np.pi / 2 + np.pi * rng.integers(-1000, 1000, 20000)) * (
        1 + rng.normal(size=20000) * 1e-6)
    x = np.concatenate([rng.uniform(-10, 10, 100000), np.exp(rng.uniform(-20, 14, 100000)),
                        poles]).astype(np.float32)
    got = np.asarray(tracejit.jit(tnp.tan)(x)).astype(np.float64)
    want = np.tan(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 1.0


def test_complex_arctan2_as_jax():
    """JAX accepts complex atan2 (StableHLO's -i log((y + ix) / sqrt(x^2 + y^2))): native,
    interpreter and JAX agree, and so do their derivatives."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(3)
    x, y = ((rng.normal(size=(64, 2)) @ [1, 1j]).astype(np.complex64) for _ in range(2))
    want = np.asarray(jnp.arctan2(x, y))
    for backend in ("native", "interpret"):
        got = np.asarray(tracejit.jit(tnp.arctan2, backend=backend)(x, y))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    _, t_ours = tracejit.jvp(tnp.arctan2, (x, y), (y, x))
    _, t_jax = jax.jvp(jnp.arctan2, (x, y), (y, x))
    np.testing.assert_allclose(np.asarray(t_ours), np.asarray(t_jax), rtol=1e-4, atol=1e-5)


# Subnormal policy: IEEE gradual underflow everywhere (NumPy's), on both backends. (JAX on CPU
# flushes float32 subnormals to zero: its sign(1e-40) is 0.0; tracejit's is 1.0, as NumPy's.)
_SUBNORMAL_OPS = {
    "sign": np.sign, "abs": np.abs, "negative": np.negative, "sqrt": np.sqrt, "log": np.log,
    "log2": np.log2, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin, "tan": np.tan,
    "tanh": np.tanh, "arctan": np.arctan, "arcsinh": np.arcsinh, "cbrt": np.cbrt,
    "double": lambda x: x * 2, "half": lambda x: x / 2, "plus_tiny": lambda x: x + 1e-45,
    "relu": lambda x: np.maximum(x, 0), "positive": lambda x: (x > 0).astype(x.dtype),
}


@pytest.mark.parametrize("name", sorted(_SUBNORMAL_OPS))
@pytest.mark.parametrize("backend", ["native", "interpret"])
def test_subnormals_are_kept(name, backend):
    x = np.array([1e-40, -1e-40, 1.4e-45, 1.1e-38, 5e-39, -3e-42], np.float32)
    fn = {"double": lambda x: x * 2, "half": lambda x: x / 2,
          "plus_tiny": lambda x: x + np.float32(1e-45), "relu": lambda x: tnp.maximum(x, 0),
          "positive": lambda x: (x > 0).astype(x.dtype)}.get(name) or getattr(tnp, name)
    got = np.asarray(tracejit.jit(fn, backend=backend)(x))
    with np.errstate(invalid="ignore"):
        want = _SUBNORMAL_OPS[name](x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=2 * 1.4e-45)


@pytest.mark.parametrize("backend", ["native", "interpret"])
def test_subnormal_results_of_exp_and_erf(backend):
    """XLA's float32 exp/erf algorithms, kept bit for bit on normal numbers, round subnormal
    results (exp below x = -87.3) instead of flushing them."""
    import scipy.special as sp
    import tracejit.scipy.special as tsp
    x = np.linspace(-104, -87, 2001, dtype=np.float32)
    got = np.asarray(tracejit.jit(tnp.exp, backend=backend)(x))
    want = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1.5 * 1.4e-45)
    assert np.count_nonzero(got) > 1500
    t = np.array([1e-40, -7e-39, 1.4e-45], np.float32)
    np.testing.assert_allclose(np.asarray(tracejit.jit(tsp.erf, backend=backend)(t)),
                               sp.erf(t.astype(np.float64)), rtol=1e-6, atol=2 * 1.4e-45)
