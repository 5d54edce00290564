"""jax.scipy.linalg's special matrices against real JAX (one compiled program for all of
them: shapes, dtypes, values, batched leading dimensions) and SciPy where SciPy has them."""
import numpy as np
import pytest
import scipy.linalg as sl

import tracejit
import tracejit.scipy.linalg as tsl

jax = pytest.importorskip("jax")
pytest.importorskip("jax.scipy.linalg")

C = np.array([1., 2., 3.])
R = np.array([4., 5.])
B = np.array([[1., 2., 3.], [4., 5., 6.]])


def cases(L):
    return [L.hankel(C), L.hankel(C, R), L.hankel(B), L.circulant(C), L.circulant(B),
            L.leslie(C, R), L.companion(C), L.companion(B), L.fiedler(C),
            L.fiedler_companion(np.array([1., 2., 3., 4., 5.])), L.fiedler_companion(C),
            L.convolution_matrix(C, 4), L.convolution_matrix(C, 4, "same"),
            L.convolution_matrix(C, 4, "valid"), L.convolution_matrix(B, 2), L.pascal(4),
            L.pascal(4, "upper"), L.invpascal(4), L.invpascal(3, "lower"), L.invhilbert(4),
            L.helmert(4), L.helmert(3, True), L.hadamard(4), L.dft(4), L.dft(3, "sqrtn"),
            L.dft(3, "n")]


def test_shapes_and_dtypes_as_jax_values_as_scipy():
    """JAX's shapes and dtypes by abstract evaluation (compiling all of these in JAX takes
    seconds); the values are SciPy's (its functions batch no leading dimensions: row by row)."""
    theirs = jax.eval_shape(lambda: cases(jax.scipy.linalg))
    ours = cases(tsl)
    expected = cases(sl)
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert o.shape == t.shape and o.dtype == t.dtype, i
    batched = {2: [sl.hankel(b) for b in B], 4: [sl.circulant(b) for b in B],
               7: [sl.companion(b) for b in B], 14: [sl.convolution_matrix(b, 2) for b in B]}
    for i, (o, e) in enumerate(zip(ours, expected)):
        e = np.stack(batched[i]) if i in batched else e
        np.testing.assert_allclose(np.asarray(o), e, rtol=1e-5, atol=1e-5, err_msg=str(i))


def test_x64_and_under_jit(x64):
    np.testing.assert_allclose(np.asarray(tsl.invhilbert(5)), sl.invhilbert(5), rtol=1e-9)
    assert tsl.dft(3).dtype == np.complex128
    a = np.array([1., 2., 3., 4.])
    jitted = tracejit.jit(lambda c: tsl.circulant(c[1:]) @ tsl.fiedler_companion(c))(a)
    np.testing.assert_allclose(np.asarray(jitted),
                               sl.circulant(a[1:]) @ sl.fiedler_companion(a), rtol=1e-12)


def test_errors_as_jax():
    for bad, match in [(lambda L: L.hadamard(3), "power of 2"),
                       (lambda L: L.pascal(3, "diag"), "Expected kind"),
                       (lambda L: L.convolution_matrix(C, 0), "positive integer"),
                       (lambda L: L.leslie(C, C), "Incorrect lengths"),
                       (lambda L: L.dft(3, "x"), "scale must be")]:
        with pytest.raises(ValueError, match=match):
            bad(jax.scipy.linalg)
        with pytest.raises(ValueError, match=match):
            bad(tsl)


def test_polar_and_vq_against_scipy():
    import scipy.cluster.vq as svq

    import tracejit.scipy.cluster.vq as tvq
    rng = np.random.RandomState(0)
    for shape, side in [((4, 3), "right"), ((3, 4), "left"), ((3, 3), "right")]:
        a = rng.randn(*shape).astype(np.float32)
        u, p = tsl.polar(a, side)
        theirs = jax.eval_shape(lambda a=a, side=side: jax.scipy.linalg.polar(a, side))
        for got, want, t in zip((u, p), sl.polar(a, side), theirs):
            assert got.shape == t.shape and got.dtype == t.dtype
            np.testing.assert_allclose(np.asarray(got), want, atol=2e-6)
    batched = tracejit.jit(lambda a: tsl.polar(a, method="svd"))(rng.randn(2, 3, 3))
    np.testing.assert_allclose(np.asarray(batched[0] @ batched[1]).shape, (2, 3, 3))
    with pytest.raises(NotImplementedError, match="qdwh"):
        tsl.polar(np.ones((3, 4)), "right")
    obs, cb = rng.randn(6, 2).astype(np.float32), rng.randn(3, 2).astype(np.float32)
    code, dist = tvq.vq(obs, cb)
    want_code, want_dist = svq.vq(obs, cb)
    np.testing.assert_array_equal(np.asarray(code), want_code)
    np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-6)
    with pytest.raises(ValueError, match="same rank"):
        tvq.vq(obs, cb[0])
