"""JAX 0.12's newer lax names (log2, one_minus_square, polynomial) and scipy.special.erfcinv:
values against NumPy/SciPy and against JAX 0.12's outputs recorded here (JAX 0.10 lacks them;
recorded with /work/main/.venv-jax312, jax_enable_x64 on), native (jit) against the reference
interpreter, derivatives against finite differences, vmap against a loop."""
import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import tracejit
from tracejit import lax

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning:tracejit")

_VALS = [0.0, -0.0, 1.0, 2.0, 8.0, 0.5, 3.0, 10.0, 0.1, 1e-3, 123456.0, -1.0, np.inf, -np.inf,
         np.nan]
# JAX 0.12's jit(lax.log2) on _VALS (+ a subnormal), recorded. XLA computes log(x) * (1/ln 2)
# and flushes subnormal inputs (-inf at float32 1e-40, float64 1e-310); float64 gives
# 2.9999999999999996 at 8.
JAX012_LOG2 = {
    "float16": [-np.inf, -np.inf, 0.0, 1.0, 3.0, -1.0, 1.5849609375, 3.322265625, -3.322265625,
                -9.9609375, np.inf, np.nan, np.inf, np.nan, np.nan, -24.0],
    "bfloat16": [-np.inf, -np.inf, 0.0, 1.0, 3.0, -1.0, 1.59375, 3.3125, -3.3125, -10.0, 17.0,
                 np.nan, np.inf, np.nan, np.nan, -24.0],
    "float32": [-np.inf, -np.inf, 0.0, 1.0, 3.0, -1.0, 1.5849624872207642, 3.321928024291992,
                -3.321928024291992, -9.965784072875977, 16.913637161254883, np.nan, np.inf,
                np.nan, np.nan, -np.inf],
    "float64": [-np.inf, -np.inf, 0.0, 1.0, 2.9999999999999996, -1.0, 1.5849625007211563,
                3.3219280948873626, -3.321928094887362, -9.965784284662087, 16.913637428049103,
                np.nan, np.inf, np.nan, np.nan, -np.inf],
}
_SUBNORMAL = {"float16": 6e-8, "bfloat16": 6e-8, "float32": 1e-40, "float64": 1e-310}


def _dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if name == "bfloat16" else np.dtype(name)


# (mantissa bits, smallest normal exponent) of each float type
_FORMAT = {"float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126),
           "float64": (52, -1022)}


def _ulps(a, b, dtype) -> np.ndarray:
    """|a - b| in units of the last place of `dtype` at b (0 where both are the same NaN/inf)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    bits, emin = _FORMAT[np.dtype(dtype).name]
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        exponent = np.maximum(np.floor(np.log2(np.where(np.isfinite(b) & (b != 0),
                                                        np.abs(b), 1.0))), emin)
        return np.where(same, 0.0, np.abs(a - b) / 2.0 ** (exponent - bits))


@pytest.mark.parametrize("name", list(JAX012_LOG2))
def test_log2_against_numpy_and_jax012(x64, name):
    dtype = _dtype(name)
    with np.errstate(over="ignore"):  # 123456 is inf in float16
        x = np.array(_VALS + [_SUBNORMAL[name]], np.float64).astype(dtype)
    native = np.asarray(tracejit.jit(lax.log2)(x))
    interp = np.asarray(tracejit.jit(lax.log2, backend="interpret")(x))
    assert native.dtype == dtype and interp.dtype == dtype
    with np.errstate(all="ignore"):
        exact = np.log2(x.astype(np.float64))
    # within an ulp of the exact value (math.py: log2 1.01 ulp f32, 0.98 f64), both backends
    assert _ulps(native, exact, dtype).max() <= 1.02
    assert _ulps(interp, exact, dtype).max() <= 1.02
    # JAX 0.12 (XLA's log times 1/ln 2, ~2 ulp) agrees within 2 ulp on every normal input; at the
    # subnormal XLA flushes float32 to zero (-inf) where we keep it (-132.877...)
    jax_ = np.array(JAX012_LOG2[name])
    normal = slice(0, len(_VALS)) if name in ("float32", "float64") else slice(None)
    assert _ulps(native[normal], jax_[normal], dtype).max() <= 2
    # exact powers of two are exact here (XLA's float64 8 -> 2.9999999999999996)
    np.testing.assert_array_equal(native[[2, 3, 4, 5]], np.array([0, 1, 3, -1], dtype))


def test_log2_dense_sweep_ulps(x64, rng):
    for dtype in (np.float32, np.float64):
        x = np.exp(rng.uniform(-700 if dtype == np.float64 else -85, 85, 20000)).astype(dtype)
        out = np.asarray(tracejit.jit(lax.log2)(x))
        exact = np.log2(x.astype(np.longdouble)).astype(np.float64)
        assert _ulps(out, exact, np.dtype(dtype)).max() <= 1.02
        interp = np.asarray(tracejit.jit(lax.log2, backend="interpret")(x))
        assert _ulps(interp, exact, np.dtype(dtype)).max() <= 1.2  # NumPy's own log2


def test_log2_complex_against_jax012_and_numpy(x64):
    z = np.array([1 + 1j, -2, 0.5j, 1e-3 - 4j], np.complex64)
    jax_ = np.array([(0.5 + 1.1330900192260742j), (1 + 4.532360076904297j),
                     (-1 + 2.2661800384521484j), (2 - 2.2658193111419678j)])  # JAX 0.12
    for backend in ("native", "interpret"):
        out = np.asarray(tracejit.jit(lax.log2, backend=backend)(z))
        assert out.dtype == np.complex64
        np.testing.assert_allclose(out, jax_, rtol=3e-7)
        np.testing.assert_allclose(out, np.log2(z.astype(np.complex128)), rtol=3e-7)


def test_log2_rejects_integers_and_accepts_accuracy():
    with pytest.raises(TypeError):
        lax.log2(np.array([1, 2], np.int32))
    assert float(lax.log2(np.float32(4), accuracy=None)) == 2.0


def test_log2_derivatives(x64):
    f = lambda x: lax.log2(x) * x
    x, h = 1.7, 1e-6
    fd = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(tracejit.grad(f)(x), fd, rtol=1e-8)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(tracejit.grad(lax.log2)))(x),
                               -1 / (x * x * np.log(2)), rtol=1e-14)
    xs = np.array([0.5, 2.0, 7.0])
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(lax.log2))(xs),
                               1 / (xs * np.log(2)), rtol=1e-14)


# JAX 0.12's jit(lax.one_minus_square), recorded
def test_one_minus_square_against_jax012(x64):
    x = np.array([0.9999999, 1 - 2 ** -24, 0.5, 3, -1e-20, np.inf], np.float32)
    jax_ = [2.3841856489070778e-07, 1.1920928955078125e-07, 0.75, -8.0, 1.0, -np.inf]
    for backend in ("native", "interpret"):
        np.testing.assert_array_equal(
            tracejit.jit(lax.one_minus_square, backend=backend)(x), np.array(jax_, np.float32))
    i = np.array([0, 2, -3, 70000], np.int32)  # wraps as XLA's int32 arithmetic
    np.testing.assert_array_equal(tracejit.jit(lax.one_minus_square)(i),
                                  [1, -3, -8, -605032703])
    z = np.array([1 + 1j, -2, 0.5j], np.complex64)
    np.testing.assert_allclose(tracejit.jit(lax.one_minus_square)(z), (1 + z) * (1 - z))
    b = np.array([0.5, 0.99, 3], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(tracejit.jit(lax.one_minus_square)(b),
                                  tracejit.jit(lax.one_minus_square, backend="interpret")(b))


def test_one_minus_square_derivative_is_minus_2x(x64):
    # the product rule on (1 + x)(1 - x) would cancel to 0 here; JAX 0.12 gives -2e-300
    assert tracejit.grad(lax.one_minus_square)(1e-300) == -2e-300
    x, h = 0.3, 1e-6
    fd = (lax.one_minus_square(x + h) - lax.one_minus_square(x - h)) / (2 * h)
    np.testing.assert_allclose(tracejit.grad(lax.one_minus_square)(x), fd, rtol=1e-8)
    xs = np.array([0.1, -2.0, 5.0])
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(lax.one_minus_square))(xs), -2 * xs)


def test_polynomial_against_jax012(x64):
    y = lax.polynomial(3.0, [1.0, 5.0, 2.0])  # JAX 0.12: Array(34., weak_type=True)
    assert float(y) == 34.0 and y.weak_type
    x = np.array([0.5, -2.0, np.inf], np.float32)
    for backend in ("native", "interpret"):
        f = tracejit.jit(lambda x, c: lax.polynomial(x, c), backend=backend)
        # past 8 terms JAX scans from 0 (NaN at inf); up to 8 it unrolls (inf)
        np.testing.assert_array_equal(f(x, [1.0] * 9), [1.99609375, 171.0, np.nan])
        np.testing.assert_array_equal(f(x, [1.0] * 8), [1.9921875, -85.0, np.inf])
        g = tracejit.jit(lambda x: lax.polynomial(x, [1.0, 2.0, 3.0], unroll=2),
                         backend=backend)
        np.testing.assert_array_equal(g(x), [2.75, 9.0, np.nan])
    assert lax.polynomial(np.ones((2, 1), np.float32), [np.ones((1, 3)), 2.0]).shape == (2, 3)
    with pytest.raises(TypeError, match="same number of dimensions"):
        lax.polynomial(np.ones((2,), np.float32), [np.ones((2, 3)), 2.0])
    np.testing.assert_array_equal(
        tracejit.jit(lambda x: lax.polynomial(x, [1, 2, 3]))(np.array([2, 3], np.int32)),
        [17, 34])
    np.testing.assert_array_equal(lax.polynomial(np.ones(3, np.float32), [2.0]), [2, 2, 2])
    np.testing.assert_array_equal(lax.polynomial(np.ones(3, np.float32), []), [0, 0, 0])


def test_polynomial_native_matches_interpreter_and_horner(x64, rng):
    for dtype in (np.float32, np.float64, np.complex64, ml_dtypes.bfloat16, np.float16):
        x = rng.uniform(-2, 2, (5, 7)).astype(dtype)
        c = [rng.uniform(-1, 1, (5, 1)).astype(dtype), 0.5, rng.uniform(-1, 1, ()).astype(dtype),
             -1.5]
        f = lambda x, c0, c2: lax.polynomial(x, [c0, 0.5, c2, -1.5])
        # Horner's rule open-coded by mul and add: the same native code (LLVM may contract a
        # product and a sum into an fma there, as XLA does, so native and NumPy differ by a
        # rounding), and the same interpreted bits
        g = lambda x, c0, c2: ((x * -1.5 + c2) * x + 0.5) * x + c0
        args = (x, c[0], np.asarray(c[2], dtype))
        np.testing.assert_array_equal(tracejit.jit(f)(*args), tracejit.jit(g)(*args))
        interp = np.asarray(tracejit.jit(f, backend="interpret")(*args))
        acc = np.asarray(-1.5, dtype)
        for k in (c[2], 0.5, c[0]):
            acc = acc * x + np.asarray(k, dtype)
        np.testing.assert_array_equal(interp, np.broadcast_to(acc, (5, 7)))


def test_polynomial_derivatives_and_vmap(x64):
    coeffs = [1.0, -2.0, 0.5, 3.0]
    f = lambda x, c: lax.polynomial(x, c)
    x, h = 0.7, 1e-6
    fd_x = (f(x + h, coeffs) - f(x - h, coeffs)) / (2 * h)
    np.testing.assert_allclose(tracejit.grad(f)(x, coeffs), fd_x, rtol=1e-8)
    # second order: 2 a_2 + 6 a_3 x
    np.testing.assert_allclose(tracejit.grad(tracejit.grad(f))(x, coeffs), 1.0 + 18 * x)
    # reverse mode wrt the coefficients: x^k, and a non-scalar x summed (unbroadcast)
    np.testing.assert_allclose(tracejit.grad(f, argnums=1)(x, coeffs), [1, x, x ** 2, x ** 3])
    xs = np.array([0.5, -1.0, 2.0])
    # one tracer in two places: its tangent counts at both (x^0 and x^2)
    np.testing.assert_allclose(
        tracejit.grad(lambda c: lax.polynomial(xs, [c, 2.0, c]).sum())(1.5), 3 + (xs ** 2).sum())
    g = tracejit.jit(tracejit.grad(lambda c: lax.polynomial(xs, c).sum()))
    np.testing.assert_allclose(g(coeffs), [3, xs.sum(), (xs ** 2).sum(), (xs ** 3).sum()])
    # jvp against vjp on both operands (the transpose identity)
    t_x, t_c = 0.3, [0.1, -0.2, 0.4, 0.05]
    _, tan = tracejit.jvp(f, (x, coeffs), (t_x, t_c))
    _, vjp = tracejit.vjp(f, x, coeffs)
    ct_x, ct_c = vjp(1.0)
    np.testing.assert_allclose(tan, ct_x * t_x + np.dot(ct_c, t_c), rtol=1e-12)
    cs = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    got = tracejit.vmap(lambda x, c: lax.polynomial(x, [c[0], c[1], c[2]]))(xs[:2], cs)
    np.testing.assert_allclose(got, [f(xs[i], list(cs[i])) for i in range(2)])


# JAX 0.12's jax.scipy.special.erfcinv, recorded
_ERFCINV_Y = [0.0, 1e-30, 1e-10, 0.1, 0.5, 1.0, 1.5, 1.9, 2.0 - 1e-10, 2.0, -0.1, 2.1, np.nan]
_ERFCINV_JAX012 = [np.inf, 8.148616223169864, 4.572824967389486, 1.163087153676674,
                   0.4769362762044699, 0.0, -0.4769362762044699, -1.1630871536766738,
                   -4.572824958544925, -np.inf, np.nan, np.nan, np.nan]


def test_erfcinv_against_jax012_and_scipy(x64):
    from tracejit.scipy.special import erfcinv
    y = np.array(_ERFCINV_Y)
    for backend in ("native", "interpret"):
        out = np.asarray(tracejit.jit(erfcinv, backend=backend)(y))
        np.testing.assert_allclose(out, _ERFCINV_JAX012, rtol=4e-15)
        np.testing.assert_allclose(out, sp.erfcinv(y), rtol=4e-15)
    y32 = np.array([0.0, 1e-30, 0.1, 0.5, 1.0, 1.5, 1.9, 2.0], np.float32)
    jax32 = [np.inf, 8.148615837097168, 1.1630871295928955, 0.4769362807273865, 0.0,
             -0.4769362807273865, -1.1630871295928955, -np.inf]
    out32 = np.asarray(tracejit.jit(erfcinv)(y32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, jax32, rtol=3e-7)
    assert np.asarray(erfcinv(np.array([1.5], np.float16))).dtype == np.float16
    with pytest.raises(ValueError, match="complex"):
        erfcinv(np.array([1 + 1j]))


def test_erfcinv_derivatives(x64):
    from tracejit.scipy.special import erfcinv
    # JAX 0.12: grad at 0.3 and its second derivative
    np.testing.assert_allclose(tracejit.grad(erfcinv)(0.3), -1.5163632173337642, rtol=1e-13)
    np.testing.assert_allclose(tracejit.grad(tracejit.grad(erfcinv))(0.3), 3.370255885361794,
                               rtol=1e-10)
    ys = np.array([1e-8, 0.3, 1.2, 1.99])
    h = ys * 1e-6
    fd = (sp.erfcinv(ys + h) - sp.erfcinv(ys - h)) / (2 * h)
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(erfcinv))(ys), fd, rtol=1e-7)
