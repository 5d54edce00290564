"""Complex numbers on the native (LLVM) backend against the reference interpreter (NumPy):
every elementwise primitive that accepts complex64/complex128, reductions, cumulative ops,
dot_general, sort, scatter, conversions, and jnp programs mixing real and complex values.

Errors are measured normwise, as is usual for complex functions: |native - ref| per part in
ulps of max(|ref.real|, |ref.imag|) (of the part itself where the other is infinite). The
budgets come from math.py's table (f64: exp 1.01, log 0.80, sin/cos 1.54, sinh/cosh 2.05,
atan2 2.05, expm1 1.95, log1p 0.86 ulp) plus the reference's own error: NumPy calls glibc's
c* functions, which are off by a few ulps too (complex64 ones compute in float, whereas the
native complex64 code computes in float64 and rounds once).
"""
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

COMPLEX = [np.complex64, np.complex128]
INF, NAN = np.inf, np.nan
# every pairing of these parts: zeros of both signs, finite values, infinities, NaN
_PARTS = (0.0, -0.0, 1.5, -2.0, INF, -INF, NAN)
SPECIALS = [complex(x, y) for x in _PARTS for y in _PARTS]


@pytest.fixture(autouse=True)
def _x64():
    tracejit.config.update("jax_enable_x64", True)
    yield
    tracejit.config.update("jax_enable_x64", False)


def _random(dtype, n: int, seed: int, spread: float = 3.0) -> np.ndarray:
    """Parts of both signs with magnitudes over exp(±spread)."""
    rng = np.random.default_rng(seed)
    re, im = (rng.standard_normal(n) * np.exp(rng.uniform(-spread, spread, n)) for _ in "ri")
    return (re + 1j * im).astype(dtype)


def _with_specials(dtype, seed: int, n: int = 400) -> np.ndarray:
    return np.concatenate([_random(dtype, n, seed), np.array(SPECIALS, dtype)])


def _run(f, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # the reference's complex -> real casts drop imaginary parts on purpose
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        native = tracejit.jit(f, backend="native")(*args)
        ref = tracejit.jit(f, backend="interpret")(*args)
    return native, ref


def _ulps(native, ref) -> np.ndarray:
    """Per-element normwise error in ulps; 0 where both agree exactly (NaNs included)."""
    a, b = np.asarray(native), np.asarray(ref)
    assert a.dtype == b.dtype and a.shape == b.shape
    if b.dtype.kind != "c":
        a, b = a.astype(np.complex128 if a.dtype == np.float64 else np.complex64), \
            b.astype(np.complex128 if b.dtype == np.float64 else np.complex64)
    part = b.real.dtype
    norm = np.maximum(np.abs(b.real), np.abs(b.imag))
    err = np.zeros(b.shape)
    for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
        same = (pa == pb) | (np.isnan(pa) & np.isnan(pb))
        scale = np.where(np.isfinite(norm), norm, np.abs(pb))
        with np.errstate(all="ignore"):  # (an infinite scale has an infinite spacing)
            ulp = np.spacing(np.maximum(scale, np.finfo(part).tiny).astype(part))
            e = np.abs(pa.astype(np.float64) - pb.astype(np.float64)) / ulp
        err = np.maximum(err, np.where(same, 0.0, np.where(np.isnan(e), np.inf, e)))
    return err


def _assert_close(native, ref, ulps: float, what: str = ""):
    for a, b in zip(tracejit.tree_util.tree_leaves(native), tracejit.tree_util.tree_leaves(ref)):
        err = _ulps(a, b)
        worst = int(np.argmax(err)) if err.size else 0
        assert err.size == 0 or err.flat[worst] <= ulps, (
            f"{what}: {err.flat[worst]:.3g} ulps > {ulps} at {worst}: native "
            f"{np.asarray(a).flat[worst]!r}, reference {np.asarray(b).flat[worst]!r}")


def _assert_same(native, ref):
    for a, b in zip(tracejit.tree_util.tree_leaves(native), tracejit.tree_util.tree_leaves(ref)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        # bit for bit, the signs of zeros included (NaN payloads aside)
        if a.dtype.kind == "c":
            for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
                signed = ~np.isnan(pb)
                np.testing.assert_array_equal(np.signbit(pa[signed]), np.signbit(pb[signed]))
        np.testing.assert_array_equal(a, b)


# --- elementwise: exact ------------------------------------------------------------------------

EXACT_UNARY = {
    "neg": lax.neg, "conj": lax.conj, "real": lax.real, "imag": lax.imag,
    "square": lax.square, "is_finite": lax.is_finite, "abs": lax.abs,
    "stop_gradient": lax.stop_gradient,
    "integer_pow3": lambda x: lax.integer_pow(x, 3),
    "integer_pow-2": lambda x: lax.integer_pow(x, -2),
    "integer_pow0": lambda x: lax.integer_pow(x, 0),
}
EXACT_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "eq": lax.eq, "ne": lax.ne,
    "max": lax.max, "min": lax.min,
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", list(EXACT_UNARY))
def test_exact_unary(name, dtype):
    """abs is NumPy's scaled hypot and integer_pow NumPy's fma products, step for step."""
    x = _with_specials(dtype, 1)
    _assert_same(*_run(EXACT_UNARY[name], x))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", list(EXACT_BINARY))
def test_exact_binary(name, dtype):
    """mul contracts to fma as NumPy's loop does; div is NumPy's Smith division."""
    x = _with_specials(dtype, 2)
    y = np.concatenate([_random(dtype, 400, 3), np.array(SPECIALS[::-1], dtype)])
    # every special against every special, too
    xs, ys = (np.array(v, dtype) for v in zip(*[(a, c) for a in SPECIALS for c in SPECIALS]))
    f = EXACT_BINARY[name]
    _assert_same(*_run(f, x, y))
    _assert_same(*_run(f, xs, ys))
    _assert_same(*_run(f, x[:5], x[7]))  # a rank-0 operand broadcast


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_parts_and_select(dtype):
    part = np.float32 if dtype == np.complex64 else np.float64
    x = _with_specials(dtype, 4)
    re, im = x.real.copy(), x.imag.copy()
    which = np.random.default_rng(5).random(x.shape) < 0.5

    def f(x, re, im, which):
        return (lax.complex(re, im), lax.select(which, x, lax.conj(x)),
                lax.select_n(np.int32(1), x, x * 2), lax.conj(re), lax.real(x) + lax.imag(x))
    _assert_same(*_run(f, x, re.astype(part), im.astype(part), which))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_clamp_and_fma(dtype):
    x, lo, hi = _with_specials(dtype, 6), _random(dtype, 449, 7), _random(dtype, 449, 8)
    _assert_same(*_run(lambda x, lo, hi: (lax.clamp(lo, x, hi), lax.fma(x, lo, hi)), x, lo, hi))


_REALS = [np.float32, np.float64, np.int32, np.int8, np.uint8, np.bool_]


@pytest.mark.parametrize("src,dst", [(c, d) for c in COMPLEX for d in _REALS + COMPLEX] +
                         [(r, c) for r in _REALS for c in COMPLEX])
def test_convert(src, dst):
    """complex -> real keeps the real part (then saturates to ints); -> bool tests both parts."""
    if np.dtype(src).kind == "c":
        x = _with_specials(src, 9)
    else:
        x = np.concatenate([np.arange(-20, 20), [0, 1, 1]]).astype(src)
    _assert_same(*_run(lambda x: lax.convert_element_type(x, dst), x))


@pytest.mark.parametrize("src,dst", [(np.complex64, np.int64), (np.complex64, np.float64),
                                     (np.complex64, np.uint64), (np.float64, np.complex64),
                                     (np.int64, np.complex64), (np.complex128, np.float64),
                                     (np.complex64, np.float32), (np.float32, np.complex64)])
def test_bitcast(src, dst):
    x = _with_specials(src, 10) if np.dtype(src).kind == "c" else \
        _with_specials(np.complex64, 10).view(src)
    if np.dtype(src).itemsize < np.dtype(dst).itemsize:
        x = x[: x.size // 2 * 2].reshape(-1, np.dtype(dst).itemsize // np.dtype(src).itemsize)
    _assert_same(*_run(lambda x: lax.bitcast_convert_type(x, dst), x))


# --- elementwise: transcendental ---------------------------------------------------------------

# (op, budget in ulps): f64 budgets are the native part errors summed along the formula plus
# glibc's; complex64 computes in float64, so its budget is the reference's float error.
TRANSCENDENTAL = {
    "sign": (lax.sign, 2, 2),      # z / hypot(z): hypot within ~0.5 ulp, then one division
    "sqrt": (lax.sqrt, 2, 2),      # sqrt, |z| and one division; glibc csqrt is within 1
    "rsqrt": (lax.rsqrt, 4, 4),    # sqrt's error, then Smith's 1 / z
    "exp": (lax.exp, 3, 4),        # exp 1.01 + cos/sin 1.54 + a product
    "exp2": (lax.exp2, 4, 6),      # exp after z·ln2 (its rounding is amplified by |z|)
    "log": (lax.log, 3, 4),        # log 0.80 / log1p 0.86 and atan2 2.05
    "log1p": (lax.log1p, 4, 4),    # NumPy's log(|1 + z|), atan2(im, 1 + re)
    "expm1": (lax.expm1, 4, 6),    # expm1·cos - 2 sin²(b/2), exp·sin
    "sin": (lax.sin, 3, 5), "cos": (lax.cos, 3, 5),    # sin/cos 1.54 times cosh/sinh 2.05
    "sinh": (lax.sinh, 3, 5), "cosh": (lax.cosh, 3, 5),
    "tanh": (lax.tanh, 4, 8), "tan": (lax.tan, 4, 8),  # a quotient of the above
}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", list(TRANSCENDENTAL))
def test_transcendental(name, dtype):
    f, ulps32, ulps64 = TRANSCENDENTAL[name]
    budget = ulps32 if dtype == np.complex64 else ulps64
    x = _with_specials(dtype, 11, 2000)
    native, ref = _run(f, x)
    _assert_close(native, ref, budget, name)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_exp_log_wide_range(dtype):
    """exp where exp(re) overflows but exp(re)·cos(im) does not (and where both do); log,
    sqrt and abs of huge and subnormal moduli. Imaginary parts passed to exp stay within
    math.py's sin/cos argument range (|x| < 2**28 in the float64 it computes in), the
    documented limit of the native argument reduction."""
    real = np.float32 if dtype == np.complex64 else np.float64
    big = 88.0 if dtype == np.complex64 else 709.0
    tiny, huge = np.finfo(real).smallest_subnormal, np.finfo(real).max
    x = np.array([complex(big + 1, 1.5707963), complex(big + 0.5, 3.0), complex(2 * big, 0.1),
                  complex(-huge, 1.0), complex(tiny, 2.0 ** 20), complex(-745.5, 0.3)], dtype)
    _assert_close(*_run(lax.exp, x), 4, "exp")
    x = np.array([complex(huge, huge), complex(tiny, tiny), complex(-huge, tiny),
                  complex(tiny, -huge), complex(1.0, 1e-20), complex(0.999, 0.04),
                  complex(-1.0, 1e-30), complex(huge, 0.0), complex(0.0, tiny)], dtype)
    for f, budget in ((lax.log, 4), (lax.sqrt, 2), (lax.abs, 0), (lax.sign, 2)):
        _assert_close(*_run(f, x), budget, f.__name__)


def _pow_budget(x, y, dtype) -> np.ndarray:
    """exp(y log x): an absolute error in w = y log x is a relative error of the result, and
    w carries log's error (atan2 2.05 ulps) times |y| plus the product's rounding, on both
    sides: 4 ulps of |w|, beside exp's own 4 ulps (test_transcendental) and 4 for safety."""
    with np.errstate(all="ignore"):
        w = np.abs(y.astype(np.complex128) * np.log(x.astype(np.complex128)))
    return 8 + 4 * np.nan_to_num(w, nan=0, posinf=0)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_pow(dtype):
    rng = np.random.default_rng(12)
    x = _random(dtype, 2000, 13, spread=1.5)
    y = _random(dtype, 2000, 14, spread=1.0)
    # integer exponents below 100 take NumPy's repeated-squaring path (bit for bit); zero
    # bases and exponents its special cases
    y[:300] = rng.integers(-99, 100, 300)
    y[300:320] = rng.integers(100, 300, 20)
    x[320:340], y[340:360] = 0, 0
    y[320:330] = y[320:330].real  # 0 ** positive real
    native, ref = _run(lax.pow, x, y)
    err = _ulps(native, ref)
    assert (err[:300] == 0).all(), np.flatnonzero(err[:300])
    assert (err <= _pow_budget(x, y, dtype)).all(), np.flatnonzero(err > _pow_budget(x, y, dtype))
    # an integer-typed exponent is y + 0i: the integer branch again, bit for bit
    n = rng.integers(-9, 10, x.shape).astype(np.int32)
    _assert_same(*_run(lax.pow, x, n))
    # every special value as base and as exponent: NumPy's branches, then glibc's cpow with
    # C99's infinity recovery in y * log x and cexp's special values
    values = SPECIALS + [1.5 - 0.5j, -0.3 + 2j, 2.0, -3.0, 0.5j]
    xs, ys = (np.array(v, dtype) for v in zip(*[(a, c) for a in values for c in values]))
    err = _ulps(*_run(lax.pow, xs, ys))
    assert (err <= _pow_budget(xs, ys, dtype)).all(), [
        (xs[i], ys[i]) for i in np.flatnonzero(err > _pow_budget(xs, ys, dtype))]


# --- coverage: every elementwise primitive that takes complex operands has a native form -------

def _takes_complex(prim) -> bool:
    """Whether `prim`'s abstract evaluation accepts complex64 operands (1, 2 or 3 of them, no
    params: a primitive that needs params, such as integer_pow or round, counts as not)."""
    from tracejit.core.avals import ShapedArray
    z = ShapedArray((2,), np.dtype(np.complex64))
    for n in (1, 2, 3):
        try:
            prim.abstract_eval(*[z] * n)
            return True
        except TypeError as e:  # a refused dtype, or another operand count or params wanted
            if "dtype" in str(e) or "requires" in str(e):
                return False
        except ValueError:
            pass
    return False


def test_every_elementwise_primitive_that_takes_complex_is_native():
    """What traces with complex operands compiles (JAX's TypeError otherwise, when traced:
    erf, erfc, erf_inv, polygamma, floor, ceil, round, cbrt, lgamma, digamma, bessel_i0e/i1e)."""
    from tracejit.backend.llvm import complex_ops
    from tracejit.core.primitive import Primitive
    from tracejit.lax import elementwise as ew
    prims = [p for name, p in vars(ew).items() if name.endswith("_p") and isinstance(p, Primitive)]
    taking = [p for p in prims if _takes_complex(p)]
    assert len(taking) > 40
    missing = [p.name for p in taking if p not in complex_ops.EMITTERS]
    assert not missing, missing
    refused = {p.name for p in prims if not _takes_complex(p)}
    assert {"erf", "erfc", "erf_inv", "polygamma", "floor", "lgamma", "cbrt"} <= refused


def test_logistic_of_complex_is_jaxs_formula():
    """1 / (1 + exp(-z)), as XLA. Recorded from JAX 0.12 (complex64); at -800 + 3j XLA's
    division recovers 1 / inf = -0 + 0j where NumPy's Smith division (ours, the reference's)
    gives NaN: left out."""
    z = np.array([1 + 2j, -0.5 + 0.25j, 30 - 2j, -30 + 1j, 800 + 1j, INF + 0j, NAN + 1j],
                 np.complex64)
    want = np.array([1.0214155 + 0.40343875j, 0.37572485 + 0.05900297j, 1 - 8.508862e-14j,
                     5.055945e-14 + 7.874169e-14j, 1 + 0j, 1 + 0j, complex(NAN, NAN)],
                    np.complex64)
    native, ref = _run(lax.logistic, z)
    for got in (native, ref):
        np.testing.assert_allclose(np.asarray(got), want, rtol=3e-7)
    _assert_close(native, ref, 4, "logistic")


# --- reductions, scans, dots, sorting, scatter -----------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions(dtype):
    x = _random(dtype, 6 * 37, 16, spread=0.5).reshape(6, 37)

    def f(x):
        return (jnp.sum(x), jnp.sum(x, axis=0), jnp.sum(x, axis=1), jnp.prod(x, axis=1),
                jnp.prod(x, axis=0), jnp.max(x, axis=1), jnp.min(x, axis=0))
    native, ref = _run(f, x)
    n_leaves, r_leaves = (tracejit.tree_util.tree_leaves(t) for t in (native, ref))
    # sums are reassociated (NumPy sums pairwise): a few ulps of the terms' magnitude
    for a, b in zip(n_leaves[:3], r_leaves[:3]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b),
                                   atol=64 * np.finfo(dtype).eps * np.abs(x).sum())
    # products along the contiguous axis are NumPy's reduce loop, plain products in order
    _assert_same(n_leaves[3], r_leaves[3])
    # down the columns NumPy multiplies whole rows with its fma loop: 37 roundings apart
    _assert_close(n_leaves[4], r_leaves[4], 2 * 6, "prod axis 0")
    for a, b in zip(n_leaves[5:], r_leaves[5:]):
        _assert_same(a, b)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_special_values(dtype):
    x = np.array(SPECIALS, dtype).reshape(7, 7)
    ordered = np.array([complex(-INF, -1.0), complex(-INF, 0.0), complex(-INF, -INF), 2j,
                        complex(INF, INF)], dtype)
    f = lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0),  # (argmax refuses complex, as JAX)
                   jnp.sum(x, axis=1), jnp.prod(x, axis=0))
    _assert_same(*_run(f, x))
    g = lambda x: (jnp.max(x), jnp.min(x),
                   lax.reduce_max(x[:0], (0,)), lax.reduce_min(x[:0], (0,)))
    _assert_same(*_run(g, ordered))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cumulative(dtype):
    x = _random(dtype, 5 * 40, 17, spread=0.3).reshape(5, 40)
    x[1, 3] = complex(NAN, 1)
    x[2, 5] = complex(INF, -1)

    def f(x):
        return (lax.cumsum(x, 1), lax.cumsum(x, 0, reverse=True), lax.cumprod(x, 1),
                lax.cumprod(x, 0), lax.cummax(x, 1), lax.cummin(x, 0, reverse=True),
                jnp.cumsum(x), jnp.cumprod(x, axis=1))
    _assert_same(*_run(f, x))  # accumulate loops: the same operations in the same order


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 6)), ((40, 50), (50, 36)),
                                    ((7,), (7,)), ((64, 64), (64,))])
def test_dot(dtype, shapes):
    """Small dots run inline, large ones through cgemm/zgemm; NumPy goes through BLAS."""
    a = _random(dtype, int(np.prod(shapes[0])), 18, spread=0.5).reshape(shapes[0])
    b = _random(dtype, int(np.prod(shapes[1])), 19, spread=0.5).reshape(shapes[1])
    native, ref = _run(lambda a, b: jnp.matmul(a, b), a, b)
    k = shapes[0][-1]
    # |error| <= 2k·eps·(|a|·|b|) per entry: the usual bound for a length-k complex dot product
    # (each complex product and sum rounds twice), for either side against the exact value
    bound = 2 * k * np.finfo(dtype).eps * np.matmul(np.abs(a), np.abs(b))
    diff = np.abs(np.asarray(native) - np.asarray(ref))
    assert np.all(diff <= bound), float(np.max(diff / bound))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sort(dtype):
    x = _with_specials(dtype, 20, 48).reshape(-1, 97)
    x[0, :40] = x[0, 40:80].real  # ties in the real part
    keys = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    f = lambda x, k: (lax.sort(x, dimension=1), lax.sort((x, k), dimension=1, num_keys=1),
                      lax.sort((x.T, k.T), dimension=0, num_keys=2), jnp.argsort(x, axis=1))
    _assert_same(*_run(f, x, keys))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_scatter_gather(dtype):
    x = _random(dtype, 30, 21).reshape(5, 6)
    idx = np.array([0, 3, 3, 4, 9, -1], np.int32)

    def f(x, idx):
        flat = x.reshape(-1)
        return (flat.at[idx].add(1 + 2j), flat.at[idx].multiply(x[0, 0]), flat.at[idx].set(x[1, 1]),
                flat[idx], x.at[2].add(x[3]), jnp.where(x.real > 0, x, 0j))
    _assert_same(*_run(f, x, idx))


# --- jnp programs --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
def test_jnp_abs_angle_exp(dtype):
    x = _with_specials(dtype, 22)
    native, ref = _run(lambda x: (jnp.abs(x), jnp.exp(x), jnp.angle(x), jnp.real(x * 1j)), x)
    n, r = tracejit.tree_util.tree_leaves(native), tracejit.tree_util.tree_leaves(ref)
    _assert_same(n[0], r[0])
    _assert_close(n[1], r[1], 3 if dtype == np.complex64 else 4, "exp")
    _assert_close(n[2], r[2], 3, "angle")  # atan2: 2.05 ulps (f64), glibc's within 1
    _assert_same(n[3], r[3])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_mixed_real_complex_fori_loop(dtype):
    """A damped rotation z <- z·w + c carried with a real energy accumulator."""
    real = np.float32 if dtype == np.complex64 else np.float64
    z0 = _random(dtype, 16, 23, spread=0.2)
    w = np.asarray(0.9 * np.exp(0.3j), dtype)

    def f(z0, w):
        def body(i, carry):
            z, energy = carry
            z = z * w + lax.complex(lax.convert_element_type(i, real) * 0.01, real(0.5))
            return z, energy + jnp.sum(jnp.abs(z) ** 2)
        z, energy = lax.fori_loop(0, 25, body, (z0, real(0)))
        return z, energy, jnp.sqrt(z) * jnp.conj(z)
    native, ref = _run(f, z0, w)
    n, r = tracejit.tree_util.tree_leaves(native), tracejit.tree_util.tree_leaves(ref)
    _assert_same(n[0], r[0])  # fma products and sums, in the same order
    # the energy: |z|² by pow (x² as exp(2 log x) on both sides) summed pairwise vs in order
    np.testing.assert_allclose(np.asarray(n[1]), np.asarray(r[1]),
                               rtol=16 * np.finfo(real).eps)
    _assert_close(n[2], r[2], 4, "sqrt(z) * conj(z)")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_scalar_and_control_flow(dtype):
    x = _random(dtype, 4, 24)

    def f(x):
        s = x[0] * x[1] / x[2]
        t = lax.cond(s.real > 0, lambda v: v * 2, lambda v: -v, s)
        return lax.while_loop(lambda c: jnp.abs(c[0]) < 100.0, lambda c: (c[0] * (1.5 + 0.5j),
                                                                       c[1] + 1), (t, 0))
    _assert_same(*_run(f, x))
