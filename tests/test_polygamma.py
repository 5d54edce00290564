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


# --- the native backend against the reference interpreter --------------------------------

_SPECIAL_X = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, -2.5, -0.3, 0.5, 1.0, 3.7, 8.0,
              8.5, 30.0, 1e-30, -1e-30, 1e-300, 1e30, 5e-324, -1e5 - 0.5]


def _native_vs_interpret(f, *args, ulps):
    """Non-finite and zero results bit for bit (sign included), others within `ulps`."""
    native = np.asarray(tracejit.jit(f, backend="native")(*args))
    ref = np.asarray(tracejit.jit(f, backend="interpret")(*args))
    assert native.dtype == ref.dtype
    exact = (native == ref) & (np.signbit(native) == np.signbit(ref))
    exact |= np.isnan(native) & np.isnan(ref)
    spacing = np.spacing(np.abs(ref).astype(ref.dtype)).astype(np.float64)
    with np.errstate(all="ignore"):
        close = np.isfinite(ref) & (ref != 0) & (
            np.abs(native.astype(np.float64) - ref) <= ulps * spacing)
    bad = ~(exact | close)
    assert not bad.any(), list(zip(*(np.broadcast_to(a, bad.shape)[bad][:5]
                                     for a in (*args, native, ref))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["bessel_i0e", "bessel_i1e"])
def test_native_bessel(op, dtype, x64):
    rng = np.random.default_rng(0)
    x = np.concatenate([np.array(_SPECIAL_X), rng.uniform(-40, 40, 2000),
                        np.exp(rng.uniform(-60, 60, 2000))]).astype(dtype)
    # SciPy's own i1e is ~10 ulp off near x = 8 (float64); float32's polynomials are within
    # 1.8 ulps (backend/llvm/math.py), the interpreter's float64 SciPy value rounded within 0.5
    _native_vs_interpret(getattr(lax, op), x, ulps=2 if dtype == "float32" else 16)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_native_polygamma(dtype, x64):
    rng = np.random.default_rng(1)
    m = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 7.0, 0.5, -1.0, np.nan, np.inf, -np.inf])
    # (not x = -1e5 - 0.5: SciPy sums 1e5 terms there and keeps ~3 digits of psi'')
    x = np.concatenate([np.array(_SPECIAL_X[:-1]), rng.uniform(-20, 20, 300),
                        np.exp(rng.uniform(-5, 8, 300))])
    mm, xx = (a.ravel().astype(dtype) for a in np.meshgrid(m, x))
    # order 200: 200! overflows, so inf, or NaN where zeta(201, x) underflows to 0 (SciPy's)
    mm = np.concatenate([mm, np.full(4, 200.0, dtype)])
    xx = np.concatenate([xx, np.array([0.5, 2.0, 100.0, np.inf], dtype)])
    # float64: within 8 ulp of SciPy (reflection at x < 0 measured in its larger term: allow
    # more there); float32 rounds a float64 value
    ulps = 1 if dtype == "float32" else np.where(xx < 0, 1e4, 16)
    _native_vs_interpret(lax.polygamma, mm, xx, ulps=ulps)


def test_native_polygamma_fuses_with_broadcast_order(x64):
    """A scalar order broadcast against an array (the usual call) compiles and fuses."""
    x = np.linspace(0.1, 5.0, 64)
    _native_vs_interpret(lambda x: lax.polygamma(2.0, x) * lax.bessel_i0e(x), x, ulps=24)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zeta_reflection_out_of_line_gives_scalar_codes_bits(dtype, x64):
    """zeta's terms below 0 (math._zeta_reflection) run out of line: a vectorised kernel calls
    the routine's vector variants on the lanes with x < 0 only; each lane gets the bits the
    same function gives in scalar code (`lax.map`: the scalar routine), at every order."""
    from tracejit.backend.llvm import math as ourmath
    from tracejit.runtime import tiering
    rng = np.random.default_rng(2)
    x = rng.uniform(-20, 20, 4096).astype(dtype)
    x[2048:] = np.abs(x[2048:])   # (vectors of both signs, then vectors with no lane below 0)
    for m in (1.0, 2.0, 5.0):
        order = np.dtype(dtype).type(m)
        f = tracejit.jit(lambda v, order=order: lax.polygamma(order, v))
        text = f.lower(x).compile().as_text(dialect="llvm")
        variant = ourmath.vector_variant_symbol(ourmath._ZETA_REFLECTION, 2)[:-1]
        assert f"@{variant}" in text, "the kernel calls no vector variant of the reflection"
        per_element = tracejit.jit(lambda v, order=order: lax.map(
            lambda t: lax.polygamma(order, t), v))
        f(x)
        tiering.wait()  # (the final code: a first call may run the first tier's, unvectorised)
        got, want = np.asarray(f(x)), np.asarray(per_element(x))
        np.testing.assert_array_equal(got, want)
        ok = np.floor(x) != x
        np.testing.assert_allclose(got[ok], sp.polygamma(int(m), x[ok].astype(np.float64)),
                                   rtol=1e-5 if dtype == "float32" else 1e-9)
