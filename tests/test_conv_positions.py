"""Convolutions of few output features vectorised along their output positions
(backend/llvm/convolution._conv_positions): jnp.convolve's, a filtered image's, a depthwise
convolution's -- against the definition's loops, NumPy and JAX."""
import jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tests.test_conv import conv_fn, direct_conv, params_of
from tracejit.backend.llvm import convolution as native_conv

# (lhs, rhs, params): each runs the kernel along positions; widths not a multiple of its tiles
CASES = [
    ((2, 3, 100), (4, 3, 9), {"window_strides": (1,), "padding": "SAME"}),
    ((1, 2, 150), (1, 2, 5),
     {"window_strides": (1,), "padding": ((7, -2),), "rhs_dilation": (3,)}),
    ((1, 1, 30), (1, 1, 40), {"window_strides": (1,), "padding": ((39, 39),)}),  # no interior
    ((2, 2, 9, 70), (3, 2, 3, 5),
     {"window_strides": (2, 1), "padding": ((1, 1), (2, 2)), "rhs_dilation": (2, 1)}),
    ((1, 4, 6, 40), (4, 1, 3, 3),  # depthwise
     {"window_strides": (1, 1), "padding": "SAME", "feature_group_count": 4}),
    ((1, 6, 50), (4, 3, 5),
     {"window_strides": (1,), "padding": "VALID", "feature_group_count": 2}),
    ((1, 1, 3, 4, 20), (2, 1, 2, 2, 3), {"window_strides": (1, 2, 1), "padding": "SAME"}),
    ((2, 5, 33, 1), (3, 4, 1, 1),
     {"window_strides": (1, 1), "padding": ((1, 1), (0, 3)),
      "dimension_numbers": ("NHWC", "HWIO", "NHWC")}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_against_direct_loops_and_jax(case, dtype, request):
    """Padding on both sides (negative too, wider than the input), window dilation, strides
    and windows over the outer dimensions, feature groups, three spatial dimensions, a
    features-last layout whose features are one: against the definition and JAX."""
    if dtype == np.float64:
        request.getfixturevalue("x64")
    xs, ws, kw = CASES[case]
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    eqn = tracejit.make_jaxpr(conv_fn(kw))(x, w).jaxpr.eqns[0]
    assert native_conv._positions_lanes(eqn) is not None
    got = np.asarray(tracejit.jit(conv_fn(kw))(x, w))
    want = direct_conv(x, w, *params_of(xs, ws, kw))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, np.asarray(jax.lax.conv_general_dilated(x, w, **kw)),
                               rtol=tol * 10, atol=tol * 10)


def test_a_long_convolve_on_the_pool_with_the_serial_bits(monkeypatch):
    """jnp.convolve of 100,000 by 64 keeps its layout (compiler/conv_layouts.py moves larger
    convolutions channels-last, but not this one) and shares its tiles out on the pool: the
    same bits as the serial kernel, NumPy's float64 convolution within float32's rounding."""
    from tracejit.backend.llvm import parallel_loops
    from tracejit.compiler.conv_layouts import channels_last_convs
    rng = np.random.default_rng(5)
    x = rng.standard_normal(100_000).astype(np.float32)
    k = rng.standard_normal(64).astype(np.float32)

    def f(x, k):
        return tnp.convolve(x, k, mode="same")
    jaxpr = tracejit.make_jaxpr(f)(x, k)
    assert channels_last_convs(jaxpr.jaxpr, jaxpr.consts)[0] is jaxpr.jaxpr
    pooled = tracejit.jit(f)
    assert "@tracejit_parallel_for(" in pooled.lower(x, k).compile().as_text(dialect="llvm")
    monkeypatch.setattr(parallel_loops, "PARALLEL_MIN_ELEMENTS", 1 << 40)
    serial = tracejit.jit(f)
    assert "@tracejit_parallel_for(" not in serial.lower(x, k).compile().as_text(dialect="llvm")
    got = np.asarray(pooled(x, k))
    np.testing.assert_array_equal(got, np.asarray(serial(x, k)))
    want = np.convolve(x.astype(np.float64), k.astype(np.float64), mode="same")
    bound = 64 * np.finfo(np.float32).eps * np.convolve(np.abs(x), np.abs(k), mode="same")
    assert np.all(np.abs(got - want) <= bound)


def test_convolve_gradients_against_jax():
    """Both gradients of jnp.convolve run the kernel (the kernel's gradient is a convolution
    of 20 output positions, each a sum over the signal) and match JAX's."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(300).astype(np.float32)
    k = rng.standard_normal(20).astype(np.float32)

    def loss(np_):
        return lambda x, k: (np_.convolve(x, k, mode="full") ** 2).sum()
    grad = tracejit.grad(loss(tnp), argnums=(0, 1))
    convs = [e for e in tracejit.make_jaxpr(grad)(x, k).jaxpr.eqns
             if e.primitive.name == "conv_general_dilated"]
    assert len(convs) == 3 and all(native_conv._positions_lanes(e) for e in convs)
    got = tracejit.jit(grad)(x, k)
    want = jax.grad(loss(jax.numpy), argnums=(0, 1))(x, k)
    for g, h in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=2e-5,
                                   atol=2e-5 * np.abs(np.asarray(h)).max())
