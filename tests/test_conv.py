"""lax.conv_general_dilated and its helpers: values against a direct loop-nest convolution
written here (and real JAX), eagerly and natively under jit (direct loops and im2col + gemm),
under vmap; gradients against finite differences and real JAX; JAX's shapes, dtypes and errors;
small CNNs (stax, flax.linen) trained the same under JAX and tracejit."""
import itertools

import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.test_util import check_grads

from jax_oracle import same_error
from tests.libraries import assert_close, run_both

jax = pytest.importorskip("jax")
RNG = np.random.default_rng(11)


def rand(shape, dtype=np.float64):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "i":
        x = RNG.integers(-4, 5, shape)
    return x.astype(dtype)


def direct_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc):
    """The definition: canonical layouts, then for each output position and each kernel tap the
    dilated-input position (skipped when it is padding or a dilation hole), its sums one output
    element at a time, or without groups a product over every batch element and feature."""
    lhs_spec, rhs_spec, out_spec = dn
    x = np.transpose(lhs, lhs_spec)
    w = np.transpose(rhs, rhs_spec)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    space, window = x.shape[2:], w.shape[2:]
    out_space = []
    for d, k, s, (lo, hi), ld, rd in zip(space, window, strides, padding, lhs_dil, rhs_dil):
        span = (d - 1) * ld + 1 + lo + hi
        out_space.append(max(0, (span - ((k - 1) * rd + 1)) // s + 1))
    nb = n // bgc
    acc = np.complex128 if x.dtype.kind == "c" else \
        np.int64 if x.dtype.kind == "i" else np.float64
    out = np.zeros((nb, o) + tuple(out_space), acc)

    def input_at(pos, tap):  # the input position of an output position's tap, or None
        at = []
        for p, t, s, (lo, _), ld, rd, d in zip(pos, tap, strides, padding, lhs_dil, rhs_dil,
                                               space):
            q = p * s + t * rd - lo
            at.append(q // ld if q >= 0 and q % ld == 0 and q // ld < d else None)
        return None if None in at else tuple(at)
    if fgc == 1 and bgc == 1:  # (the same sums, for every batch element and feature at once)
        every = (slice(None), slice(None))
        xa, wa = x.astype(acc), w.astype(acc)
        for pos in itertools.product(*map(range, out_space)):
            for tap in itertools.product(*map(range, window)):
                at = input_at(pos, tap)
                if at is not None:
                    out[every + pos] += xa[every + at] @ wa[every + tap].T
        return np.transpose(out, np.argsort(out_spec))
    for b, f, *pos in itertools.product(range(nb), range(o), *map(range, out_space)):
        fg, bg = f // (o // fgc), f // (o // bgc)
        for tap in itertools.product(*map(range, window)):
            at = input_at(pos, tap)
            if at is None:
                continue
            for ci in range(cg):
                out[(b, f) + tuple(pos)] += (x[(bg * nb + b, fg * cg + ci) + at]
                                             * w[(f, ci) + tap])
    return np.transpose(out, np.argsort(out_spec))


# (lhs shape, rhs shape, params) in the layouts given; padding explicit or a string
CASES = [
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(2, 1), padding="SAME")),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 2), padding="SAME_LOWER")),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(2, 3), padding=((1, 2), (-1, 3)),
                                      lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    ((1, 4, 5, 5), (6, 2, 2, 3), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=2)),
    ((4, 2, 5, 5), (6, 2, 2, 3), dict(window_strides=(1, 2), padding=((0, 1), (1, 1)),
                                      batch_group_count=2)),
    ((2, 6, 5, 3), (3, 2, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 6, 3), (3, 3, 4), dict(window_strides=(2,), padding="SAME",
                                dimension_numbers=("NWC", "WIO", "NCW"))),
    ((3, 2, 7), (3, 4, 3), dict(window_strides=(1,), padding=((2, 0),), rhs_dilation=(2,),
                                dimension_numbers=("CNW", "IOW", "WCN"))),
    ((2, 2, 4, 3, 3), (3, 2, 2, 2, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
    ((2, 3), (4, 3), dict(window_strides=(), padding=())),  # no spatial dimensions
    ((2, 3, 0, 4), (2, 3, 1, 2), dict(window_strides=(1, 1), padding="VALID")),  # empty
    ((2, 3, 2, 4), (2, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),  # no windows
]


def params_of(lhs_shape, rhs_shape, kw):
    """The primitive's canonical params for a case (through JAX's own helpers)."""
    jl = jax.lax
    dn = jl.conv_dimension_numbers(lhs_shape, rhs_shape, kw.get("dimension_numbers"))
    nsp = len(lhs_shape) - 2
    ld = kw.get("lhs_dilation", (1,) * nsp)
    rd = kw.get("rhs_dilation", (1,) * nsp)
    pad = kw["padding"]
    if isinstance(pad, str):
        window = [(k - 1) * r + 1 for k, r in zip(np.take(rhs_shape, dn.rhs_spec)[2:], rd)]
        pad = jl.padtype_to_pads(np.take(lhs_shape, dn.lhs_spec)[2:], window,
                                 kw["window_strides"], pad)
    return (kw["window_strides"], pad, ld, rd, dn, kw.get("feature_group_count", 1),
            kw.get("batch_group_count", 1))


def conv_fn(kw):
    return lambda x, w: lax.conv_general_dilated(x, w, **kw)


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
def test_values_against_direct_loops_and_jax(case, dtype, x64):
    lhs_shape, rhs_shape, kw = CASES[case]
    x, w = rand(lhs_shape, dtype), rand(rhs_shape, dtype)
    ref = direct_conv(x, w, *params_of(lhs_shape, rhs_shape, kw))
    expected = jax.lax.conv_general_dilated(x, w, **kw)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    for got in (conv_fn(kw)(x, w), tracejit.jit(conv_fn(kw))(x, w)):
        assert got.shape == expected.shape == ref.shape
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [
    dict(window_strides=(1, 1), padding="SAME"),
    dict(window_strides=(2, 1), padding=((1, 2), (0, 1)), rhs_dilation=(2, 1)),
    dict(window_strides=(1, 1), padding=((2, 2), (1, 1)), lhs_dilation=(2, 1)),
])
@pytest.mark.parametrize("layout", [None, ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_sized_convolutions(kw, layout, dtype, x64):
    """Large enough for im2col + gemm (channels-last output in place, other layouts copied)."""
    shape_nchw, kernel_oihw = (3, 16, 11, 10), (12, 16, 3, 3)
    kw = dict(kw, dimension_numbers=layout)
    perm = {None: ((0, 1, 2, 3), (0, 1, 2, 3)), ("NHWC", "HWIO", "NHWC"): ((0, 2, 3, 1),
            (2, 3, 1, 0)), ("NHWC", "OIHW", "NCHW"): ((0, 2, 3, 1), (0, 1, 2, 3))}[layout]
    x = rand(shape_nchw, dtype).transpose(perm[0]).copy()
    w = rand(kernel_oihw, dtype).transpose(perm[1]).copy()
    expected = jax.lax.conv_general_dilated(x, w, **kw)
    got = tracejit.jit(conv_fn(kw))(x, w)
    ref = conv_fn(kw)(x, w)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=tol, atol=tol)


def test_preferred_element_type_and_half_precision():
    x, w = rand((2, 3, 5, 5), np.float16), rand((2, 3, 2, 2), np.float16)
    for pet in (None, np.float32):
        kw = dict(window_strides=(1, 1), padding="SAME", preferred_element_type=pet)
        expected = jax.lax.conv_general_dilated(x, w, **kw)
        for got in (conv_fn(kw)(x, w), tracejit.jit(conv_fn(kw))(x, w)):
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(np.asarray(got, np.float32),
                                       np.asarray(expected, np.float32), rtol=5e-3, atol=5e-3)
    xi, wi = rand((1, 2, 4, 4), np.int8), rand((2, 2, 2, 2), np.int8)
    kw = dict(window_strides=(1, 1), padding="VALID", preferred_element_type=np.int32)
    expected = jax.lax.conv_general_dilated(xi, wi, **kw)
    got = tracejit.jit(conv_fn(kw))(xi, wi)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("case", [0, 3, 4, 5, 6, 7, 8, 9])
def test_gradients_against_finite_differences_and_jax(case, x64):
    lhs_shape, rhs_shape, kw = CASES[case]
    x, w = rand(lhs_shape), rand(rhs_shape)
    check_grads(conv_fn(kw), (x, w), order=2, modes=("fwd", "rev"))

    def loss(mod):
        return lambda x, w: (mod.lax.conv_general_dilated(x, w, **kw) ** 2).sum()
    expected = jax.grad(loss(jax), (0, 1))(x, w)
    for fn in (tracejit.grad(loss(tracejit), (0, 1)),
               tracejit.jit(tracejit.grad(loss(tracejit), (0, 1)))):
        for g, e in zip(fn(x, w), expected):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [0, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
def test_vmap_against_a_loop(case, in_axes, x64):
    lhs_shape, rhs_shape, kw = CASES[case]
    xs, ws = rand((3,) + lhs_shape), rand((3,) + rhs_shape)
    xs = xs if in_axes[0] in (0, None) else np.moveaxis(xs, 0, in_axes[0]).copy()
    ws = ws if in_axes[1] in (0, None) else np.moveaxis(ws, 0, in_axes[1]).copy()
    args = [xs if in_axes[0] is not None else xs[0], ws if in_axes[1] is not None else ws[0]]
    loop = np.stack([np.asarray(conv_fn(kw)(*[
        np.take(a, i, ax) if ax is not None else a for a, ax in zip(args, in_axes)]))
        for i in range(3)])
    got = tracejit.jit(tracejit.vmap(conv_fn(kw), in_axes))(*args)
    np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-10, atol=1e-10)


def test_wrappers_and_conv_transpose_match_jax(x64):
    x, w = rand((2, 3, 6, 5)), rand((4, 3, 3, 2))
    jl, tl = jax.lax, lax
    pairs = [
        (lambda m, x, w: m.conv(x, w, (1, 2), "SAME"), x, w),
        (lambda m, x, w: m.conv_with_general_padding(x, w, (2, 1), ((1, 0), (0, 2)), (2, 1),
                                                     (1, 2)), x, w),
    ]
    xh, wh = rand((2, 5, 6, 3)), rand((3, 2, 3, 4))
    for padding in ("SAME", "VALID", ((1, 2), (0, 1))):
        for tk in (False, True):
            for cp in (False, True):
                pairs.append((lambda m, x, w, p=padding, tk=tk, cp=cp: m.conv_transpose(
                    x, w, (2, 1), p, transpose_kernel=tk, use_consistent_padding=cp,
                    rhs_dilation=(1, 2)), xh, wh if not tk else rand((3, 2, 4, 3))))
    x1, w1 = rand((2, 7, 3)), rand((3, 3, 2))
    pairs.append((lambda m, x, w: m.conv_transpose(x, w, (3,), "SAME"), x1, w1))
    for fn, a, b in pairs:
        expected = fn(jl, a, b)
        for got in (fn(tl, a, b), tracejit.jit(lambda a, b, fn=fn: fn(tl, a, b))(a, b)):
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-10,
                                       atol=1e-10)


def test_patches_and_local_convolution_match_jax():
    x = rand((2, 3, 7, 6), np.float32)
    for kw in (dict(filter_shape=(2, 3), window_strides=(1, 2), padding="SAME"),
               dict(filter_shape=(3, 2), window_strides=(2, 1), padding=((1, 0), (2, 1)),
                    rhs_dilation=(1, 2)),
               dict(filter_shape=(2, 2), window_strides=(1, 1), padding="VALID",
                    dimension_numbers=("NCHW", "OIHW", "NHWC"))):
        expected = jax.lax.conv_general_dilated_patches(x, **kw)
        got = tracejit.jit(lambda x, kw=kw: lax.conv_general_dilated_patches(x, **kw))(x)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
    w = rand((18, 4, 6, 4), np.float32)
    kw = dict(window_strides=(1, 1), padding="VALID", filter_shape=(2, 3),
              dimension_numbers=("NCHW", "IOHW", "NCHW"))
    expected = jax.lax.conv_general_dilated_local(x, w, **kw)
    got = lax.conv_general_dilated_local(x, w, **kw)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_shape_helpers_match_jax():
    jl = jax.lax
    specs = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "CWNH")]
    for spec in specs:
        assert lax.conv_general_permutations(spec) == jl.conv_general_permutations(spec)
        assert tuple(lax.conv_dimension_numbers((1,) * 4, (1,) * 4, spec)) == \
            tuple(jl.conv_dimension_numbers((1,) * 4, (1,) * 4, spec))
    lhs, rhs = (2, 9, 10, 3), (3, 2, 3, 5)
    for padding in ("SAME", "VALID", ((1, 2), (0, 3))):
        dn = ("NHWC", "HWIO", "NHWC")
        assert lax.conv_general_shape_tuple(lhs, rhs, (2, 3), padding, dn) == \
            jl.conv_general_shape_tuple(lhs, rhs, (2, 3), padding, dn)
        assert lax.conv_transpose_shape_tuple(lhs, rhs, (2, 3), padding, dn) == \
            tuple(jl.conv_transpose_shape_tuple(lhs, rhs, (2, 3), padding, dn))
        assert lax.conv_shape_tuple((2, 3, 9, 10), (5, 3, 3, 2), (1, 2), padding) == \
            jl.conv_shape_tuple((2, 3, 9, 10), (5, 3, 3, 2), (1, 2), padding)
    for padding in ("SAME", "VALID", "SAME_LOWER", "same"):
        assert lax.padtype_to_pads((7, 8), (3, 4), (2, 3), padding) == \
            jl.padtype_to_pads((7, 8), (3, 4), (2, 3), padding)
    assert lax.ConvDimensionNumbers((0, 1), (0, 1), (0, 1)) == \
        tuple(jl.ConvDimensionNumbers((0, 1), (0, 1), (0, 1)))


def test_jaxpr_params_are_canonical():
    x, w = np.ones((1, 2, 4, 4), np.float32), np.ones((3, 2, 2, 2), np.float32)
    jaxpr = tracejit.make_jaxpr(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")))(x, w)
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.primitive is lax.conv_general_dilated_p
    assert eqn.params["padding"] == ((0, 1), (0, 1))
    assert isinstance(eqn.params["dimension_numbers"], lax.ConvDimensionNumbers)


BAD = [
    ((2, 3, 5, 5), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME")),  # features
    ((2, 4, 5, 5), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=3)),
    ((3, 2, 5, 5), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      batch_group_count=2)),
    ((2, 4, 5, 5), (4, 2, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=2, batch_group_count=2)),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1,), padding="VALID")),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      lhs_dilation=(2, 1))),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=((-7, 0), (0, 0)))),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="FULL")),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NCHW", "OIHW"))),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NCHW", "OIHW", "NCHX"))),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NCHW", "OIH", "NCHW"))),
    ((2, 3, 5, 5), (4, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=(1, 1))),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_errors_match_jax(case):
    lhs_shape, rhs_shape, kw = BAD[case]
    x, w = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
    same_error(lambda: lax.conv_general_dilated(x, w, **kw),
               lambda: jax.lax.conv_general_dilated(x, w, **kw))


def test_mixed_dtypes_are_an_error():
    x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 2, 2), np.float64)
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(x, w.astype(np.int32), (1, 1), "VALID")
    with pytest.raises(TypeError):
        lax.conv_general_dilated(x.astype(bool), w.astype(bool), (1, 1), "VALID")


def test_stax_cnn_trains_like_jax(tmp_path):
    ours, theirs = run_both("stax_cnn", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_flax_linen_cnn_trains_like_jax(tmp_path):
    pytest.importorskip("flax")
    ours, theirs = run_both("flax_linen_cnn", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


# --- jnp.convolve / jnp.correlate ------------------------------------------------------------

@pytest.mark.parametrize("fn", ["convolve", "correlate"])
@pytest.mark.parametrize("lengths", [(5, 3), (3, 5), (4, 4), (1, 6), (7, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_jnp_convolve_and_correlate_match_numpy_and_jax(fn, lengths, dtype):
    a, v = rand(lengths[0], dtype), rand(lengths[1], dtype)
    for mode in ("full", "same", "valid"):
        expected = getattr(jax.numpy, fn)(a, v, mode)
        f = getattr(tracejit.numpy, fn)
        for got in (f(a, v, mode), tracejit.jit(lambda a, v, mode=mode: f(a, v, mode))(a, v)):
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5,
                                       atol=1e-5)
            np.testing.assert_allclose(np.asarray(got), getattr(np, fn)(a, v, mode), rtol=1e-4,
                                       atol=1e-4)
    pet = np.complex64 if dtype == np.complex64 else np.float32
    assert getattr(tracejit.numpy, fn)(a, v, preferred_element_type=pet).dtype == \
        getattr(jax.numpy, fn)(a, v, preferred_element_type=pet).dtype


def test_jnp_convolve_gradients_vmap_and_errors(x64):
    a, v = rand(6), rand(3)
    check_grads(lambda a, v: tracejit.numpy.convolve(a, v, "same"), (a, v), order=2)
    expected = jax.grad(lambda a, v: (jax.numpy.correlate(a, v, "full") ** 2).sum(),
                        (0, 1))(a, v)
    got = tracejit.jit(tracejit.grad(lambda a, v: (tracejit.numpy.correlate(a, v, "full") ** 2)
                                     .sum(), (0, 1)))(a, v)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-10)
    rows = rand((4, 6))
    got = tracejit.vmap(lambda r: tracejit.numpy.convolve(r, v))(rows)
    np.testing.assert_allclose(np.asarray(got), np.stack([np.convolve(r, v) for r in rows]),
                               rtol=1e-10)
    for args in ((rows, v), (a[:0], v), (a, v, "middle")):
        same_error(lambda args=args: tracejit.numpy.convolve(*args),
                   lambda args=args: jax.numpy.convolve(*args))


@pytest.mark.parametrize("budget", [1, 100_000])
def test_gemm_path_in_chunks_of_batch_elements(budget, monkeypatch, x64):
    """im2col buffers are bounded: one batch element per gemm, or a few (a divisor of N)."""
    from tracejit.backend.llvm import convolution as native_conv
    monkeypatch.setattr(native_conv, "_COLS_BYTES", budget)
    x, w = rand((6, 8, 9, 7)), rand((5, 8, 3, 2))
    for dn in (None, ("NCHW", "OIHW", "NHWC")):
        kw = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=dn)
        got = tracejit.jit(conv_fn(kw))(x, w)
        np.testing.assert_allclose(np.asarray(got), np.asarray(jax.lax.conv_general_dilated(
            x, w, **kw)), rtol=1e-10, atol=1e-10)


def test_vmap_over_an_empty_axis_matches_jax():
    w = np.ones((4, 3, 2, 2), np.float32)
    xs = np.ones((0, 2, 3, 5, 5), np.float32)

    def f(mod):
        return mod.vmap(lambda x: mod.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
    expected = f(jax)(xs)
    for got in (f(tracejit)(xs), tracejit.jit(f(tracejit))(xs)):
        assert got.shape == expected.shape and got.dtype == expected.dtype


def test_equinox_conv_and_pool_layers_like_jax(tmp_path):
    pytest.importorskip("equinox")
    ours, theirs = run_both("equinox_cnn", tmp_path)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_transposed_convolutions_run_as_subpixel_convolutions():
    """compiler/conv_phases.py: a convolution with lhs dilation (window stride 1) becomes one
    convolution of the undilated input whose output features are (phase, feature), its rows
    interleaved after. Against the original program on the reference interpreter: kernels
    shorter and longer than the stride, every padding form (negative too), strides 2 and 3,
    1-, 2- and 3-D, channels-first layouts, and a strided convolution's input gradient."""
    import itertools

    from tracejit.compiler.conv_phases import split_dilated_convs
    from tracejit.core.interpret import eval_jaxpr
    rng = np.random.default_rng(0)

    def check(f, *args):
        closed = tracejit.make_jaxpr(f)(*args)
        split, consts = split_dilated_convs(closed.jaxpr, closed.consts)
        want = eval_jaxpr(closed.jaxpr, closed.consts, *args)[0]
        got = eval_jaxpr(split, consts, *args)[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4)
        np.testing.assert_allclose(np.asarray(tracejit.jit(f)(*args)), want, rtol=2e-5,
                                   atol=1e-4)
        return sum(e.params.get("lhs_dilation", (1,)) != (1,) * len(e.params.get(
            "lhs_dilation", (1,))) for e in split.eqns)

    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    for k, s, pad in itertools.product((1, 2, 3, 5), (2, 3), (
            "SAME", "VALID", ((0, 0), (0, 0)), ((2, 1), (1, 3)), ((-1, 2), (3, -1)))):
        w = rng.standard_normal((k, k + 1, 3, 4)).astype(np.float32)
        assert check(lambda x, w: lax.conv_transpose(
            x, w, (s, 2), pad, dimension_numbers=("NHWC", "HWIO", "NHWC")), x, w) == 0
    x1, w1 = rng.standard_normal((2, 3, 9)).astype(np.float32), \
        rng.standard_normal((4, 3, 3)).astype(np.float32)
    assert check(lambda x, w: lax.conv_general_dilated(x, w, (1,), [(2, 1)],
                                                       lhs_dilation=(3,)), x1, w1) == 0
    x3 = rng.standard_normal((1, 2, 4, 5, 3)).astype(np.float32)
    w3 = rng.standard_normal((3, 2, 2, 3, 2)).astype(np.float32)
    assert check(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1, 1), [(1, 1), (0, 2), (1, 0)], lhs_dilation=(2, 1, 2)), x3, w3) == 0
    xg = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    wg = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    assert check(tracejit.grad(lambda x, w: lax.conv_general_dilated(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")).sum()), xg, wg) == 0
    assert check(lambda x, w: lax.conv_general_dilated(x, w, (1,), [(-20, 30)],
                                                       lhs_dilation=(3,)), x1, w1) == 0
    # kept as it is: a window stride with the dilation
    assert check(lambda x, w: lax.conv_general_dilated(x, w, (2,), [(2, 1)],
                                                       lhs_dilation=(3,)), x1, w1) == 1


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_gemm_sized_gradients_against_jax(strides):
    """A CNN layer's gradients at im2col size: the weight gradient's convolution reads the
    batch as its features (copied features-last first: convolution._features_last), a strided
    layer's input gradient is a transposed convolution (compiler/conv_phases.py)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 16, 16, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 12)).astype(np.float32)

    def loss(m):
        def f(x, w):
            y = m.lax.conv_general_dilated(x, w, strides, "SAME",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return (y * y).sum()
        return f
    got = tracejit.jit(tracejit.grad(loss(tracejit), (0, 1)))(x, w)
    want = jax.grad(loss(jax), (0, 1))(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4,
                                   atol=1e-4 * np.abs(np.asarray(e)).max())


@pytest.mark.parametrize("cout, groups", [(32, 1), (8, 1), (1100, 1), (12, 3)])
def test_direct_convolutions_run_on_the_pool_with_the_serial_bits(cout, groups, monkeypatch):
    """A direct convolution (a contraction under im2col's minimum, or feature groups) with
    enough work runs its batch on the thread pool: the same bits as the serial loop nest (each
    output's sum in the same order), which the interpreter's oracle matches closely. Rows of
    sums up to 4 KiB live on the stack, longer ones (1,100 features) in the workspace."""
    from tracejit.backend.llvm import parallel_loops
    rng = np.random.default_rng(3)
    cin = 1 if groups == 1 else 3
    side = 28 if cout < 1000 else 8
    x = rng.standard_normal((32, side, side, cin)).astype(np.float32)
    w = rng.standard_normal((3, 3, cin // groups, cout)).astype(np.float32)
    kw = dict(window_strides=(1, 1), padding="SAME", feature_group_count=groups,
              dimension_numbers=("NHWC", "HWIO", "NHWC"))
    f = tracejit.jit(conv_fn(kw))
    assert "@tracejit_parallel_for(" in f.lower(x, w).compile().as_text(dialect="llvm")
    pooled = np.asarray(f(x, w))
    monkeypatch.setattr(parallel_loops, "PARALLEL_MIN_ELEMENTS", 1 << 40)
    g = tracejit.jit(conv_fn(kw))
    assert "@tracejit_parallel_for(" not in g.lower(x, w).compile().as_text(dialect="llvm")
    np.testing.assert_array_equal(pooled, np.asarray(g(x, w)))
    want = np.asarray(tracejit.jit(conv_fn(kw), backend="interpret")(x, w))
    np.testing.assert_allclose(pooled, want, rtol=1e-5, atol=1e-5)


BLOCKED_CASES = [  # (input NHWC, kernel HWIO, strides, padding, rhs dilation)
    ((8, 32, 32, 32), (3, 3, 32, 16), (1, 1), "SAME", (1, 1)),
    ((2, 9, 11, 20), (3, 3, 20, 48), (2, 2), "SAME", (1, 1)),      # 3 vectors; a rest tile
    ((2, 10, 13, 24), (5, 3, 24, 32), (1, 2), ((2, 1), (0, 3)), (2, 1)),
    ((3, 7, 7, 16), (3, 3, 16, 112), (1, 1), "VALID", (1, 1)),     # 4 + 3 vectors
    ((2, 12, 30, 8), (3, 5, 8, 64), (1, 1), ((-1, 2), (3, -2)), (1, 2)),  # cropping
    ((4, 8, 8, 40), (1, 1, 40, 64), (1, 1), "SAME", (1, 1)),
    ((1, 5, 40, 6), (2, 7, 6, 16), (3, 1), "SAME", (1, 1)),        # an edge in every tile
]


@pytest.mark.parametrize("case", range(len(BLOCKED_CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_kernel_against_direct_loops_and_jax(case, dtype, request):
    """The register-blocked kernel (2-D, features innermost in input and output): tiles of
    every width, rest tiles, edge positions on both sides, strides, dilations, padding
    (negative too), output features in 1-4 vectors; the weights read in place (HWIO) or
    packed first (OIHW), on the pool or not -- against the direct loops and JAX."""
    from tracejit.backend.llvm import convolution as native_conv
    if dtype == np.float64:
        request.getfixturevalue("x64")
    xs, ws, strides, padding, dilation = BLOCKED_CASES[case]
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    for dn, kernel in [(("NHWC", "HWIO", "NHWC"), w),
                       (("NHWC", "OIHW", "NHWC"), np.transpose(w, (3, 2, 0, 1)))]:
        kw = dict(window_strides=strides, padding=padding, rhs_dilation=dilation,
                  dimension_numbers=dn)
        f = tracejit.jit(conv_fn(kw))
        text = f.lower(x, kernel).compile().as_text(dialect="llvm")
        assert "@llvm.fma.v" in text, "the blocked kernel was not used"
        eqn = tracejit.make_jaxpr(conv_fn(kw))(x, kernel).jaxpr.eqns[0]
        assert native_conv._blocked_lanes(eqn) is not None
        got = np.asarray(f(x, kernel))
        want = direct_conv(x, kernel, *params_of(xs, kernel.shape, kw))
        tol = 1e-4 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        np.testing.assert_allclose(got, np.asarray(jax.lax.conv_general_dilated(
            x, kernel, **kw)), rtol=tol, atol=tol)



@pytest.mark.parametrize("case", range(len(BLOCKED_CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weight_gradient_kernel_against_jax(case, dtype, request, monkeypatch):
    """The weight gradient's convolution of an NHWC convolution (its batch the input's
    features, innermost; the batch contracted) runs as its register-blocked kernel: every
    stride, dilation and padding of BLOCKED_CASES, row tiles of every width, 1-7 vectors of
    output features -- against JAX's gradient, and the same bits on the pool as off it."""
    from tracejit.backend.llvm import convolution as native_conv
    from tracejit.backend.llvm import parallel_loops
    if dtype == np.float64:
        request.getfixturevalue("x64")
    xs, ws, strides, padding, dilation = BLOCKED_CASES[case]
    rng = np.random.default_rng(10 + case)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    kw = dict(window_strides=strides, padding=padding, rhs_dilation=dilation,
              dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(conv):
        return lambda w, x: (conv(x, w, **kw) ** 2).sum()
    grad = tracejit.grad(loss(lax.conv_general_dilated))
    convs = [e for e in tracejit.make_jaxpr(grad)(w, x).jaxpr.eqns
             if e.primitive.name == "conv_general_dilated"]
    # (the kernel wherever the convolution is large enough for a product: cases 0, 2, 3, 4)
    assert (native_conv._weight_lanes(convs[-1]) is not None) == (case in (0, 2, 3, 4))
    got = np.asarray(tracejit.jit(grad)(w, x))
    want = np.asarray(jax.grad(loss(jax.lax.conv_general_dilated))(w, x))
    tol = 2e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    monkeypatch.setattr(parallel_loops, "PARALLEL_MIN_ELEMENTS", 1 << 40)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(grad)(w, x)), got)


@pytest.mark.parametrize("layout", [None, ("NCHW", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW"),
                                    ("CHWN", "IHWO", "HWCN")])
def test_other_layouts_run_channels_last(layout, x64):
    """A large 2-D float convolution in another layout (lax's default NCHW, equinox's) runs as
    transposes around the same convolution channels-last (compiler/conv_layouts.py): the
    forward one and its input gradient in the forward kernel's layout, its weight gradient in
    the weight gradient kernel's -- against JAX, values and gradients, float32 and float64."""
    from tracejit.compiler.conv_layouts import MIN_MULTIPLY_ADDS, channels_last_convs
    rng = np.random.default_rng(7)
    kw = dict(window_strides=(1, 2), padding=((1, 1), (0, 2)), rhs_dilation=(1, 1),
              dimension_numbers=layout)
    spec = lax.conv_dimension_numbers((8, 24, 20, 20), (32, 24, 3, 3),
                                      layout or ("NCHW", "OIHW", "NCHW"))
    shape = [0] * 4
    for role, axis in enumerate(spec.lhs_spec):
        shape[axis] = (8, 24, 20, 20)[role]
    wshape = [0] * 4
    for role, axis in enumerate(spec.rhs_spec):
        wshape[axis] = (32, 24, 3, 3)[role]
    for dtype, tol in [(np.float32, 2e-4), (np.float64, 1e-10)]:
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal(wshape).astype(dtype)
        _moved_convs_against_jax(kw, w, x, tol)
    if layout is None:  # (a convolution under MIN_MULTIPLY_ADDS keeps its layout)
        small = tracejit.make_jaxpr(conv_fn(kw))(x[:1, :, :4, :4], w)
        assert small.jaxpr.eqns[0].outvars[0].aval.size * 9 * 24 < MIN_MULTIPLY_ADDS
        assert channels_last_convs(small.jaxpr, small.consts)[0] is small.jaxpr


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_convolutions_in_the_kernels_layouts(dtype, x64):
    """Complex convolutions in the register-blocked kernels' layouts (NHWC forward, its
    gradients) keep im2col and gemm: values and gradients against JAX."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((2, 12, 12, 16)) + 1j * rng.standard_normal((2, 12, 12, 16)))
    w = (rng.standard_normal((3, 3, 16, 16)) + 1j * rng.standard_normal((3, 3, 16, 16)))
    x, w = x.astype(dtype), w.astype(dtype)
    kw = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    np.testing.assert_allclose(np.asarray(tracejit.jit(conv_fn(kw))(x, w)), np.asarray(
        jax.lax.conv_general_dilated(x, w, **kw)), rtol=tol, atol=tol)

    def loss(conv):
        return lambda w, x: (conv(x, w, **kw).real ** 2).sum()
    got = tracejit.jit(tracejit.grad(loss(lax.conv_general_dilated)))(w, x)
    want = jax.grad(loss(jax.lax.conv_general_dilated))(w, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol * 100)


@pytest.mark.parametrize("layout", [("NWC", "WIO", "NWC"), ("NCW", "OIW", "NCW")])
@pytest.mark.parametrize("stride, dilation", [(2, 1), (1, 2)])
def test_one_dimensional_convolutions_run_as_two_dimensional(layout, stride, dilation, x64):
    """A large 1-D float convolution runs as a 2-D one with a first spatial dimension of size
    1, channels-last (compiler/conv_layouts.py): the register-blocked kernels take it and
    both its gradients; values and gradients against JAX, strided or dilated."""
    rng = np.random.default_rng(9)
    kw = dict(window_strides=(stride,), padding=((2, 1),), rhs_dilation=(dilation,),
              dimension_numbers=layout)
    x = rng.standard_normal((8, 300, 32) if layout[0] == "NWC" else (8, 32, 300))
    w = rng.standard_normal((5, 32, 48) if layout[1] == "WIO" else (48, 32, 5))

    for dtype, tol in [(np.float32, 2e-4), (np.float64, 1e-10)]:
        convs = _moved_convs_against_jax(kw, w.astype(dtype), x.astype(dtype), tol)
        assert all(len(e.params["window_strides"]) == 2 for e in convs)


def _moved_convs_against_jax(kw, w, x, tol):
    """The convolution `kw` of x by w, and both its gradients, against JAX; its three
    convolutions after conv_phases and conv_layouts (the pipeline's order: a strided
    convolution's input gradient is sub-pixel first) each run a register-blocked kernel.
    Returns those three convolution equations."""
    from tracejit.backend.llvm import convolution as native_conv
    from tracejit.compiler.conv_layouts import channels_last_convs
    from tracejit.compiler.conv_phases import split_dilated_convs

    def loss(conv):
        return lambda w, x: (conv(x, w, **kw) ** 2).sum()
    grad = tracejit.grad(loss(lax.conv_general_dilated), argnums=(0, 1))
    jaxpr = tracejit.make_jaxpr(grad)(w, x)
    moved, _ = channels_last_convs(*split_dilated_convs(jaxpr.jaxpr, jaxpr.consts))
    convs = [e for e in moved.eqns if e.primitive.name == "conv_general_dilated"]
    assert len(convs) == 3 and all(
        native_conv._blocked_lanes(e) is not None or native_conv._weight_lanes(e) is not None
        for e in convs)
    got = tracejit.jit(grad)(w, x)
    want = jax.grad(loss(jax.lax.conv_general_dilated), argnums=(0, 1))(w, x)
    for g, h in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=tol,
                                   atol=tol * np.abs(np.asarray(h)).max())
    np.testing.assert_allclose(np.asarray(tracejit.jit(conv_fn(kw))(x, w)), np.asarray(
        jax.lax.conv_general_dilated(x, w, **kw)), rtol=tol, atol=tol * 10)
    return convs
