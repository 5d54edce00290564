"""jax.image (resize, scale_and_translate, ResizeMethod) against real JAX 0.10 on seeded random
images: every method, up- and downsampling, antialias on and off, one to four dimensions,
integer and float dtypes, under jit (native code, no call back into Python), grad (against
JAX and finite differences, float64) and vmap (against a Python loop and JAX's vmap).

Tolerance: values agree to a few float32 ulps of the image's magnitude, not bit for bit. The
weights (within an ulp of JAX's) go through sin (lanczos: our polynomial against XLA's) and a
division, and the einsum's sums run in another order (BLAS, or our loops, against XLA's dot):
16 ulps of the larger of the input's and the output's magnitudes covers the worst case seen
(cubic-pytorch without antialias, an output of 2e-4 cancelling terms of ~1: 1.8e-6, 15 ulps
of 1). Nearest-neighbour resizing is a gather: exact.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import image as timage

jax = pytest.importorskip("jax")
jimage = jax.image

RNG = np.random.default_rng(0)
METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
SCALED = [m for m in METHODS if m != "nearest"]  # (scale_and_translate refuses nearest)
# (input shape, output shape): up, down and mixed, one to four dimensions, sizes kept alone
RESIZES = [((10,), (23,)), ((10,), (4,)), ((7, 9), (14, 5)), ((7, 9), (3, 20)),
           ((6, 5, 3), (11, 4, 3)), ((2, 5, 6, 3), (2, 8, 3, 3)), ((4, 4, 4), (2, 7, 3)),
           ((5, 3), (0, 3))]


def _close(got, want, ulps: int = 16, like=None):
    """got == want to `ulps` ulps of the largest magnitude of want (or of the input `like`:
    where outputs cancel, the rounding is the size of the terms summed, the input's)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    if not np.issubdtype(want.dtype, np.inexact):  # (nearest of ints and bools: a gather)
        np.testing.assert_array_equal(got, want)
        return
    scale = max(float(np.max(np.abs(want.astype(np.float64)), initial=1.0)),
                float(np.max(np.abs(np.asarray(like, np.float64)), initial=0.0)))
    atol = ulps * float(np.finfo(want.dtype).eps) * scale
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=atol)


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_resize_matches_jax(method, antialias):
    for shape_in, shape_out in RESIZES:
        x = RNG.standard_normal(shape_in).astype(np.float32)
        got = timage.resize(x, shape_out, method, antialias=antialias)
        want = jimage.resize(x, shape_out, method, antialias=antialias)
        if method == "nearest":
            np.testing.assert_array_equal(got, want)
        _close(got, want, like=x)


@pytest.mark.parametrize("method", ["nearest", "linear", "lanczos3", "cubic", "area"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, "bfloat16",
                                   np.float64])
def test_resize_dtypes_follow_jax(method, dtype):
    """Booleans and integers become the default float (but under nearest, which keeps every
    dtype); float16 and bfloat16 stay themselves; float64 is float32 without x64."""
    x = (RNG.uniform(0, 200, (6, 7, 2))).astype(jax.numpy.dtype(dtype))
    for shape_out in [(9, 4, 2), (3, 12, 2)]:
        got = timage.resize(x, shape_out, method)
        want = jimage.resize(x, shape_out, method)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        if np.dtype(got.dtype).itemsize == 2:  # (16-bit products: their rounding's size)
            np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                       rtol=0, atol=2e-2 * 200)
        else:
            _close(got, want)


def test_resize_float64_under_x64(x64):
    x = RNG.standard_normal((5, 8))
    for method in SCALED:
        got = timage.resize(x, (9, 3), method)
        want = jimage.resize(x, (9, 3), method)
        assert got.dtype == np.float64
        _close(got, want, ulps=16)


def _random_warp(k: int, dtype=np.float32):
    scale = RNG.uniform(0.4, 2.5, k).astype(dtype)
    translation = RNG.uniform(-2.0, 2.0, k).astype(dtype)
    return scale, translation


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("method", SCALED)
def test_scale_and_translate_matches_jax(method, antialias):
    cases = [((8, 9, 2), (11, 6, 2), (0, 1)), ((8, 9, 2), (8, 13, 2), (-2,)),
             ((12,), (5,), (0,)), ((4, 5, 6), (6, 5, 3), (2, 0))]
    for shape_in, shape_out, dims in cases:
        x = RNG.standard_normal(shape_in).astype(np.float32)
        scale, translation = _random_warp(len(dims))
        args = (shape_out, dims, scale, translation, method, antialias)
        _close(timage.scale_and_translate(x, *args), jimage.scale_and_translate(x, *args))


def test_scale_and_translate_integer_image_and_warp():
    """A uint8 image and an int32 translation are promoted to float32 (float64 NumPy scales
    are canonicalised to it); a list of scales is refused with a TypeError, as by JAX."""
    x = RNG.integers(0, 255, (6, 6)).astype(np.uint8)
    args = ((9, 4), (0, 1), np.array([1.5, 0.75]), np.array([1, -1], np.int32), "cubic")
    got, want = timage.scale_and_translate(x, *args), jimage.scale_and_translate(x, *args)
    _close(got, want)
    for im in (timage, jimage):
        with pytest.raises(TypeError):
            im.scale_and_translate(x, (9, 4), (0, 1), [1.5, 0.75], [0.25, -1], "cubic")


def test_resize_method_enum_is_jaxs():
    assert [(m.name, m.value) for m in timage.ResizeMethod] == \
        [(m.name, m.value) for m in jimage.ResizeMethod]
    for s in ["nearest", "linear", "bilinear", "trilinear", "triangle", "lanczos3", "lanczos5",
              "cubic", "bicubic", "tricubic", "cubic-pytorch", "bicubic-pytorch", "area"]:
        assert timage.ResizeMethod.from_string(s).name == jimage.ResizeMethod.from_string(s).name
    x = RNG.standard_normal((5, 5)).astype(np.float32)
    _close(timage.resize(x, (8, 3), timage.ResizeMethod.LANCZOS5),
           jimage.resize(x, (8, 3), jimage.ResizeMethod.LANCZOS5))


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [
    lambda im, x: im.resize(x, (3, 4, 5), "linear"),
    lambda im, x: im.resize(x, (3, 4), "bogus"),
    lambda im, x: im.scale_and_translate(x, (3, 4), (0, 1), [1., 1.], [0., 0.], "nearest"),
    lambda im, x: im.scale_and_translate(x, (3,), (0,), [1.], [0.], "linear"),
])
def test_errors_are_jaxs(call):
    x = np.ones((4, 4), np.float32)
    assert _error(lambda: call(timage, x)) == _error(lambda: call(jimage, x))


def test_jit_is_native_and_matches_eager():
    """Under jit the weights (constants of static shapes, or computed from traced scales) and
    the contractions compile to native code: no equation calls back into Python."""
    x = RNG.standard_normal((6, 7, 3)).astype(np.float32)
    scale, translation = _random_warp(2)

    def warp(x, s, t):
        return timage.scale_and_translate(x, (9, 5, 3), (0, 1), s, t, "lanczos3")

    for fn, args in [(lambda x: timage.resize(x, (9, 5, 3), "cubic"), (x,)),
                     (warp, (x, scale, translation))]:
        compiled = tracejit.jit(fn).lower(*args).compile()
        text = compiled.as_text()
        assert "callback" not in text and "host" not in text
        _close(compiled(*args), fn(*args))
    want = jimage.scale_and_translate(x, (9, 5, 3), (0, 1), scale, translation, "lanczos3")
    _close(tracejit.jit(warp)(x, scale, translation), want)


@pytest.mark.parametrize("method,antialias", [("linear", True), ("linear", False),
                                              ("lanczos3", True), ("cubic", False),
                                              ("cubic-pytorch", False), ("area", True)])
def test_grad_matches_jax_and_finite_differences(x64, method, antialias):
    """d/d(image, scale, translation) of a weighted sum of the output, in float64: JAX's
    gradients to 1e-9, and central differences (step 1e-6) to 1e-6."""
    x = RNG.standard_normal((6, 5))
    w = RNG.standard_normal((9, 4))
    scale, translation = _random_warp(2, np.float64)

    def loss(im, lib_np):
        return lambda x, s, t: lib_np.sum(im.scale_and_translate(
            x, (9, 4), (0, 1), s, t, method, antialias) * w)

    ours = tracejit.jit(tracejit.grad(loss(timage, tnp), argnums=(0, 1, 2)))(
        x, scale, translation)
    theirs = jax.grad(loss(jimage, jax.numpy), argnums=(0, 1, 2))(x, scale, translation)
    for g, h in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-9, atol=1e-9)
    f = tracejit.jit(loss(timage, tnp))
    eps = 1e-6
    for which, base in [(1, scale), (2, translation)]:
        for i in range(2):
            hi, lo = [x, scale, translation], [x, scale, translation]
            hi[which], lo[which] = base + eps * np.eye(2)[i], base - eps * np.eye(2)[i]
            fd = (float(f(*hi)) - float(f(*lo))) / (2 * eps)
            np.testing.assert_allclose(float(ours[which][i]), fd, rtol=1e-6, atol=1e-6)
    dx = RNG.standard_normal(x.shape)  # (linear in the image: one directional difference)
    fd = (float(f(x + eps * dx, scale, translation)) - float(f(x - eps * dx, scale,
                                                                translation))) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(np.asarray(ours[0]) * dx)), fd, rtol=1e-6)


def test_grad_of_resize_wrt_image_matches_jax():
    x = RNG.standard_normal((5, 6, 2)).astype(np.float32)
    w = RNG.standard_normal((8, 3, 2)).astype(np.float32)
    for method in ["nearest", "lanczos5", "cubic-pytorch"]:
        ours = tracejit.grad(lambda x: tnp.sum(timage.resize(x, (8, 3, 2), method) * w))(x)
        theirs = jax.grad(lambda x: jax.numpy.sum(jimage.resize(x, (8, 3, 2), method) * w))(x)
        _close(ours, theirs, ulps=16)


def test_vmap_matches_a_loop_and_jax():
    xs = RNG.standard_normal((3, 6, 7)).astype(np.float32)
    scales = RNG.uniform(0.5, 2.0, (3, 2)).astype(np.float32)
    translation = np.array([0.5, -0.25], np.float32)

    def warp(im):
        return lambda x, s, t: im.scale_and_translate(x, (8, 5), (0, 1), s, t, "lanczos3")

    got = tracejit.vmap(warp(timage), (0, 0, None))(xs, scales, translation)
    loop = np.stack([np.asarray(warp(timage)(x, s, translation)) for x, s in zip(xs, scales)])
    _close(got, loop, ulps=2)
    _close(got, jax.vmap(warp(jimage), (0, 0, None))(xs, scales, translation))
    got = tracejit.jit(tracejit.vmap(warp(timage), (None, 0, None)))(xs[0], scales, translation)
    _close(got, jax.vmap(warp(jimage), (None, 0, None))(xs[0], scales, translation))
    for method in ["nearest", "area"]:
        got = tracejit.vmap(lambda x: timage.resize(x, (4, 11), method), in_axes=2)(
            xs.transpose(1, 2, 0))
        _close(got, jax.vmap(lambda x: jimage.resize(x, (4, 11), method), in_axes=2)(
            xs.transpose(1, 2, 0)))
