"""The rest of jax.numpy (issue 11 item 5): each function against real JAX (values, dtypes,
weak types; eagerly and under jit) through one table that covers every name, then NumPy as
the value oracle, JAX's errors, and grad/vmap where JAX's functions support them."""
import io

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import errors

from jax_oracle import assert_matches, check, check_error, jnp

jax = pytest.importorskip("jax")

rng = np.random.RandomState(0)
F = rng.randn(12).astype(np.float32)
G = rng.randn(12).astype(np.float32)
M = rng.randn(3, 5).astype(np.float32)
W = rng.rand(12).astype(np.float32)
I = np.array([5, 1, 3, 3, 7, 9, 1], np.int32)
J = np.array([3, 9, 4, 4, 1, 0], np.int32)
P = np.array([1.0, -3.0, 2.0], np.float32)
U8 = np.array([[3, 200, 17], [7, 1, 255]], np.uint8)

# name -> cases: (f(jnp, *args), args, jit, rtol); jit=False where the function needs
# concrete values (its result's shape depends on them), as in JAX
CASES = {
    "apply_along_axis": [(lambda np_, a: np_.apply_along_axis(lambda v: v * v.sum(), 1, a),
                          (M,), True, 1e-6),
                         (lambda np_, a: np_.apply_along_axis(np_.max, 0, a), (M,), True, 0)],
    "apply_over_axes": [(lambda np_, a: np_.apply_over_axes(np_.sum, a, [0, 1]), (M,), True,
                         1e-6)],
    "array_repr": [(lambda np_, a: np_.asarray(len(np_.array_repr(np.asarray(a)))), (F,),
                    False, 0)],
    "array_str": [(lambda np_, a: np_.asarray(len(np_.array_str(np.asarray(a)))), (F,),
                   False, 0)],
    "bartlett": [(lambda np_: np_.bartlett(7), (), True, 1e-6),
                 (lambda np_: np_.bartlett(1), (), True, 0)],
    "blackman": [(lambda np_: np_.blackman(8), (), True, 1e-6)],
    "hamming": [(lambda np_: np_.hamming(9), (), True, 1e-6),
                (lambda np_: np_.hamming(0), (), True, 0)],
    "hanning": [(lambda np_: np_.hanning(6), (), True, 1e-6)],
    "kaiser": [(lambda np_, b: np_.kaiser(7, b), (np.float32(4.0),), True, 1e-5),
               (lambda np_: np_.kaiser(5, 2.5), (), True, 1e-5)],
    "block": [(lambda np_, a, b: np_.block([[a, b], [b, a]]), (M, M), True, 0),
              (lambda np_, a: np_.block([1, 2.0, a]), (F,), True, 0)],
    "bool": [(lambda np_, a: np_.bool(a), (F,), True, 0)],
    "c_": [(lambda np_, a, b: np_.c_[a, b], (F, G), True, 0),
           (lambda np_: np_.c_[0:4, 1:5], (), False, 0)],
    "r_": [(lambda np_, a, b: np_.r_[a, 0, b], (F, G), True, 0),
           (lambda np_: np_.r_[1:5, 7, 0:1:3j], (), False, 0),
           (lambda np_, a: np_.r_["0,2", a, a], (F,), True, 0),
           (lambda np_, a: np_.r_["r", a], (F,), True, 0)],
    "s_": [(lambda np_, a: a[np_.s_[1:5:2]], (F,), True, 0)],
    "index_exp": [(lambda np_, a: a[np_.index_exp[::-1, 2]], (M,), True, 0)],
    "mgrid": [(lambda np_: np_.mgrid[0:3, 1:5:2], (), False, 0),
              (lambda np_: np_.mgrid[-1:1:5j], (), False, 1e-6)],
    "ogrid": [(lambda np_: np_.ogrid[0:3, 0:2.0:0.5], (), False, 0)],
    "cdouble": [(lambda np_, a: np_.cdouble(a), (F,), True, 0)],
    "csingle": [(lambda np_, a: np_.csingle(a), (F,), True, 0)],
    "double": [(lambda np_, a: np_.double(a), (I,), True, 0)],
    "single": [(lambda np_, a: np_.single(a), (I,), True, 0)],
    "character": [(lambda np_: np_.asarray(np_.issubdtype(np.str_, np_.character)), (), False,
                   0)],
    "flexible": [(lambda np_: np_.asarray(np_.issubdtype(np.void, np_.flexible)), (), False,
                  0)],
    "object_": [(lambda np_: np_.asarray(np.dtype(np_.object_).kind == "O"), (), False, 0)],
    "ComplexWarning": [(lambda np_: np_.asarray(issubclass(np_.ComplexWarning, Warning)), (),
                        False, 0)],
    "float6_e2m3fn": [(lambda np_: np_.asarray(np.dtype(np_.float6_e2m3fn).itemsize), (),
                       False, 0)],
    "float6_e3m2fn": [(lambda np_: np_.asarray(np.dtype(np_.float6_e3m2fn).itemsize), (),
                       False, 0)],
    "int1": [(lambda np_: np_.asarray(np.dtype(np_.int1).name == "int1"), (), False, 0)],
    "uint1": [(lambda np_: np_.asarray(np.dtype(np_.uint1).name == "uint1"), (), False, 0)],
    "corrcoef": [(lambda np_, a: np_.corrcoef(a), (M,), True, 1e-5),
                 (lambda np_, a, b: np_.corrcoef(a, b), (F, G), True, 1e-5)],
    "cov": [(lambda np_, a: np_.cov(a), (M,), True, 1e-5),
            (lambda np_, a: np_.cov(a, rowvar=False, bias=True), (M,), True, 1e-5),
            (lambda np_, a, w: np_.cov(a, fweights=np_.arange(1, 6), aweights=w[:5]), (M, W),
             True, 1e-5),
            (lambda np_, a: np_.cov(a, ddof=0), (F,), True, 1e-5)],
    "diagflat": [(lambda np_, a: np_.diagflat(a), (M[:2, :2],), True, 0),
                 (lambda np_, a: np_.diagflat(a, -2), (F[:3],), True, 0)],
    "diff": [(lambda np_, a: np_.diff(a), (F,), True, 0),
             (lambda np_, a: np_.diff(a, 2, axis=0, prepend=0.5), (M,), True, 0),
             (lambda np_, a: np_.diff(a, append=a[:2]), (I,), True, 0),
             (lambda np_, a: np_.diff(a > 0), (F,), True, 0)],
    "ediff1d": [(lambda np_, a: np_.ediff1d(a, to_begin=np_.asarray([-1]), to_end=9), (M,),
                 True, 0)],
    "gradient": [(lambda np_, a: np_.gradient(a), (F,), True, 1e-6),
                 (lambda np_, a: np_.gradient(a, 0.5, axis=1), (M,), True, 1e-6),
                 (lambda np_, a, x: np_.gradient(a, np_.cumsum(x)), (F, W), True, 1e-5),
                 (lambda np_, a: np_.gradient(a), (M,), True, 1e-6)],
    "einsum_path": [(lambda np_, a, b: np_.asarray(np_.einsum_path("ij,jk,kl", a, b.T, a)[0]),
                     (M, M), False, 0)],
    "fill_diagonal": [(lambda np_, a: np_.fill_diagonal(a, 7.0, inplace=False), (M,), True, 0),
                      (lambda np_, a, v: np_.fill_diagonal(a, v[:2], inplace=False), (M, F),
                       True, 0)],
    "frombuffer": [(lambda np_: np_.frombuffer(np.arange(4, dtype=np.int32).tobytes(),
                                              dtype=np.int32), (), False, 0)],
    "fromstring": [(lambda np_: np_.fromstring("1 2 3", dtype=int, sep=" "), (), False, 0)],
    "fromfunction": [(lambda np_: np_.fromfunction(lambda i, j: i * 3 + j, (3, 4)), (), True,
                      0),
                     (lambda np_: np_.fromfunction(lambda i: i ** 2, (5,), dtype=int), (), True,
                      0)],
    "get_printoptions": [(lambda np_: np_.asarray(np_.get_printoptions()["precision"]), (),
                          False, 0)],
    "set_printoptions": [(lambda np_: np_.asarray(np_.set_printoptions is not None), (), False,
                          0)],
    "printoptions": [(lambda np_, a: np_.asarray(len(_printed(np_, a))), (F,), False, 0)],
    "histogram": [(lambda np_, a: np_.histogram(a), (F,), True, 1e-6),
                  (lambda np_, a: np_.histogram(a, bins=4, range=(-1, 1)), (F,), True, 1e-6),
                  (lambda np_, a, w: np_.histogram(a, bins=np_.asarray([-2.0, 0.0, 0.5, 3.0]),
                                                   weights=w, density=True), (F, W), True,
                   1e-5),
                  (lambda np_, a: np_.histogram(a, bins=3), (I,), True, 1e-6)],
    "histogram_bin_edges": [(lambda np_, a: np_.histogram_bin_edges(a, 5), (F,), True, 1e-6),
                            (lambda np_, a: np_.histogram_bin_edges(a * 0, 2), (F,), True,
                             1e-6)],
    "histogram2d": [(lambda np_, a, b: np_.histogram2d(a, b, bins=3), (F, G), True, 1e-6),
                    (lambda np_, a, b, w: np_.histogram2d(a, b, bins=[2, 4], weights=w,
                                                          density=True), (F, G, W), True,
                     1e-5)],
    "histogramdd": [(lambda np_, a: np_.histogramdd(a, bins=(2, 3, 2)), (M.T,), True, 1e-6)],
    "interp": [(lambda np_, x, xp, fp: np_.interp(x, xp, fp), (F, np.sort(G), W), True, 1e-5),
               (lambda np_, x, xp, fp: np_.interp(x, xp, fp, left=-1.0, right="extrapolate"),
                (F, np.sort(G), W), True, 1e-5),
               (lambda np_, x, xp, fp: np_.interp(x, xp, fp, period=2.0), (F, G, W), True,
                1e-5)],
    "intersect1d": [(lambda np_, a, b: np_.intersect1d(a, b), (I, J), False, 0),
                    (lambda np_, a, b: np_.intersect1d(a, b, size=5), (I, J), True, 0),
                    (lambda np_, a, b: np_.intersect1d(a, b, size=4, fill_value=-1), (I, J),
                     True, 0),
                    (lambda np_, a, b: np_.intersect1d(a, b, return_indices=True), (I, J),
                     False, 0),
                    (lambda np_, a, b: np_.intersect1d(a, b, return_indices=True, size=6),
                     (I, J), True, 0),
                    (lambda np_, a, b: np_.intersect1d(a, b.astype(np_.float32), size=3),
                     (I, J), True, 0)],
    "setdiff1d": [(lambda np_, a, b: np_.setdiff1d(a, b), (I, J), False, 0),
                  (lambda np_, a, b: np_.setdiff1d(a, b, size=6), (I, J), True, 0),
                  (lambda np_, a, b: np_.setdiff1d(a, b, size=2, fill_value=9), (I, J), True,
                   0),
                  (lambda np_, a, b: np_.setdiff1d(a[::-1][:3], b, assume_unique=True,
                                                   size=3), (I, J), True, 0)],
    "setxor1d": [(lambda np_, a, b: np_.setxor1d(a, b), (I, J), False, 0),
                 (lambda np_, a, b: np_.setxor1d(a, b, size=8), (I, J), True, 0),
                 (lambda np_, a, b: np_.setxor1d(a, b, size=3, fill_value=0), (I, J), True, 0)],
    "iterable": [(lambda np_, a: np_.asarray(np_.iterable(a) and not np_.iterable(1)), (F,),
                  False, 0)],
    "load": [(lambda np_, a: _roundtrip(np_, a), (F,), False, 0)],
    "save": [(lambda np_, a: _roundtrip(np_, a), (I,), False, 0)],
    "savez": [(lambda np_, a: _roundtrip_npz(np_, a), (F,), False, 0)],
    "mask_indices": [(lambda np_: np_.mask_indices(4, np_.triu, 1), (), False, 0),
                     (lambda np_: np_.mask_indices(3, np_.tril, size=6), (), True, 0)],
    "packbits": [(lambda np_, a: np_.packbits(a > 0), (M,), True, 0),
                 (lambda np_, a: np_.packbits(a, axis=1, bitorder="little"), (U8,), True, 0)],
    "unpackbits": [(lambda np_, a: np_.unpackbits(a), (U8,), True, 0),
                   (lambda np_, a: np_.unpackbits(a, axis=0, count=3), (U8,), True, 0),
                   (lambda np_, a: np_.unpackbits(a, axis=1, count=30, bitorder="little"),
                    (U8,), True, 0)],
    "piecewise": [(lambda np_, x: np_.piecewise(x, [x < 0, x > 1], [lambda v: -v, 5.0,
                                                                    lambda v: v * 2]),
                   (F,), True, 0),
                  (lambda np_, x: np_.piecewise(x, [x < 2], [lambda v: v * v]), (I,), True,
                   0)],
    "poly": [(lambda np_, z: np_.poly(z), (P,), True, 1e-6),
             (lambda np_, z: np_.poly(z[:0]), (P,), True, 0)],
    "polyadd": [(lambda np_, a, b: np_.polyadd(a, b), (P, F[:5]), True, 0),
                (lambda np_, a, b: np_.polyadd(a, b), (I, P), True, 0)],
    "polysub": [(lambda np_, a, b: np_.polysub(a, b), (F[:5], P), True, 0)],
    "polyder": [(lambda np_, a: np_.polyder(a, 2), (F[:5],), True, 1e-6),
                (lambda np_, a: np_.polyder(a), (I,), True, 0)],
    "polyint": [(lambda np_, a: np_.polyint(a, 2, k=np_.asarray([1.0, 2.0])), (P,), True,
                 1e-6),
                (lambda np_, a: np_.polyint(a), (I,), True, 1e-6)],
    "polymul": [(lambda np_, a, b: np_.polymul(a, b), (P, F[:4]), True, 1e-6),
                (lambda np_, a, b: np_.polymul(a, b), (I[:3], J[:2]), True, 0)],
    "polydiv": [(lambda np_, a, b: np_.polydiv(a, b), (F[:5], P), True, 1e-5)],
    "polyval": [(lambda np_, p, x: np_.polyval(p, x), (P, F), True, 1e-6),
                (lambda np_, p, x: np_.polyval(p, x), (I[:4], J), True, 0)],
    "polyfit": [(lambda np_, x, y: np_.polyfit(x, y, 2), (F, G), True, 2e-3),
                (lambda np_, x, y, w: np_.polyfit(x, y, 1, w=w), (F, G, W), True, 2e-3)],
    "roots": [(lambda np_, p: np_.roots(p), (P,), False, 1e-5),
              (lambda np_, p: np_.roots(np_.concatenate([p[:1] * 0, p]), strip_zeros=False),
               (P,), True, 1e-5)],
    "put_along_axis": [(lambda np_, a, i: np_.put_along_axis(a, i, 0.5, axis=1, inplace=False),
                        (M, np.array([[0], [4], [2]])), True, 0),
                       (lambda np_, a, i, v: np_.put_along_axis(a, i, v[:2], None,
                                                                inplace=False),
                        (M, np.array([3, 11]), F), True, 0)],
    "sort_complex": [(lambda np_, a: np_.sort_complex(a), (F,), True, 0),
                     (lambda np_, a: np_.sort_complex(a), (I,), True, 0)],
    "trapezoid": [(lambda np_, y: np_.trapezoid(y), (F,), True, 1e-5),
                  (lambda np_, y, x: np_.trapezoid(y, x), (F, np.cumsum(W)), True, 1e-5),
                  (lambda np_, y: np_.trapezoid(y, dx=0.25, axis=0), (M,), True, 1e-5)],
    "trim_zeros": [(lambda np_, a: np_.trim_zeros(a), (np.array([0, 0, 3, 0, 2, 0]),), False,
                    0),
                   (lambda np_, a: np_.trim_zeros(a, "b"), (np.array([0, 1, 0, 0]),), False,
                    0)],
    "ufunc": [(lambda np_, a: np_.add.reduce(a, axis=1), (M,), True, 1e-6),
              (lambda np_, a: np_.multiply.accumulate(a), (I,), True, 0),
              (lambda np_, a, b: np_.subtract.outer(a, b), (I, J), True, 0),
              (lambda np_, a: np_.maximum.reduceat(a, np_.asarray([0, 3, 2])), (F,), True, 0),
              (lambda np_, a: np_.bitwise_or.reduce(a), (I,), True, 0),
              (lambda np_, a: np_.logaddexp.reduce(a), (F,), True, 1e-5),
              (lambda np_, a: np_.add.at(a, np_.asarray([0, 2, 2]), 1, inplace=False), (I,),
               True, 0),
              (lambda np_, a: np_.logical_xor.accumulate(a > 0), (F,), True, 0)],
    "frompyfunc": [(lambda np_, a: np_.frompyfunc(lambda x, y: x * y + 1, 2, 1,
                                                  identity=1).reduce(a), (I,), True, 0),
                   (lambda np_, a, b: np_.frompyfunc(lambda x, y: x - y, 2, 1).outer(a, b),
                    (F[:3], G[:4]), True, 1e-6)],
    "unwrap": [(lambda np_, p: np_.unwrap(p), (np.cumsum(F) * 2,), True, 1e-5),
               (lambda np_, p: np_.unwrap(p, period=4, discont=1.0, axis=0), (M * 3,), True,
                1e-5),
               (lambda np_, p: np_.unwrap(p, period=6), (I,), True, 0)],
    "vander": [(lambda np_, x: np_.vander(x), (F[:4],), True, 1e-6),
               (lambda np_, x: np_.vander(x, 3, increasing=True), (I,), True, 0)],
}


def _printed(np_, a):
    with np_.printoptions(precision=2):
        return np_.array_str(np.asarray(a))


def _roundtrip(np_, a):
    f = io.BytesIO()
    np_.save(f, a)
    f.seek(0)
    return np_.load(f)


def _roundtrip_npz(np_, a):
    f = io.BytesIO()
    np_.savez(f, a=a)
    f.seek(0)
    return np_.asarray(np_.load(f)["a"])


BRIEF_NAMES = """apply_along_axis apply_over_axes array_repr array_str bartlett blackman hamming
hanning kaiser block bool c_ r_ s_ index_exp mgrid ogrid cdouble csingle double single character
flexible object_ ComplexWarning corrcoef cov diagflat diff ediff1d gradient einsum_path
fill_diagonal float6_e2m3fn float6_e3m2fn int1 uint1 frombuffer fromfile fromfunction fromiter
frompyfunc fromstring get_printoptions set_printoptions printoptions histogram histogram2d
histogram_bin_edges histogramdd interp intersect1d setdiff1d setxor1d iterable load save savez
mask_indices packbits unpackbits piecewise poly polyadd polydiv polyder polyfit polyint polymul
polysub polyval roots put_along_axis sort_complex trapezoid trim_zeros ufunc unwrap
vander""".split()
REFUSED = {"fromfile", "fromiter"}  # JAX raises for these: checked in test_refused_as_jax


def test_table_covers_every_name():
    assert sorted(set(BRIEF_NAMES) - REFUSED) == sorted(CASES)
    for name in BRIEF_NAMES:
        assert hasattr(tnp, name) and hasattr(jnp, name), name


@pytest.mark.parametrize("name,i", [(n, i) for n in sorted(CASES) for i in range(len(CASES[n]))])
def test_matches_jax(name, i):
    f, args, jit, rtol = CASES[name][i]
    check(f, *args, jit=jit, rtol=rtol)


def test_matches_jax_x64(x64):
    for f, args in [(CASES["polyfit"][0][0], (F.astype(np.float64), G.astype(np.float64))),
                    (CASES["hamming"][0][0], ()), (CASES["interp"][2][0], (F, G, W)),
                    (CASES["cov"][0][0], (M,)), (CASES["histogram"][0][0], (F,))]:
        check(f, *args, rtol=1e-5)
