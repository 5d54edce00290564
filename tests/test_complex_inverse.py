"""Complex asin/acos/atan/asinh/acosh/atanh, cumlogsumexp and jnp.logaddexp, natively and in the
reference interpreter, against JAX 0.12's recorded outputs (tests/data/complex_jax012.npz, made
by tests/data/make_complex_table.py with JAX 0.12.0.1 on CPU; the few values written in the
tests were printed by the same JAX), NumPy's complex functions where JAX agrees with them, finite
differences and loops (grad, vmap); erf/erfc/erf_inv/polygamma and top_k refuse complex operands
at trace time with JAX's errors.

The inverse functions follow XLA's formulas step for step (core/complex_inverse.py) in the part
dtype, so the remaining differences are the ulps of log1p/atan2/log/sqrt between our math.py
(or NumPy's libm, in the interpreter) and XLA's: at most 4 ulps per part on the table (measured:
2-4), signs of zeros, infinities and NaN placement exact. XLA on CPU flushes subnormals to zero
(inputs and intermediates): where our result is subnormal and XLA's a zero of the same sign,
both count as equal, and inputs with a nonzero part below 2 * tiny (XLA reads them as 0 or
flushes their squares' halves) are compared with the interpreter instead of JAX.
"""
import os
import warnings

import numpy as np
import pytest
from test_tiering import cold  # noqa: F401 (a fixture)
from tolerance import native

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backend.llvm import codegen
from tracejit.runtime import native as native_rt
from tracejit.runtime import tiering

DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "complex_jax012.npz"))
OPS = ("asin", "acos", "atan", "asinh", "acosh", "atanh")
NUMPY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
         "acosh": np.arccosh, "atanh": np.arctanh}
COMPLEX = ("complex64", "complex128")
ULPS = 4
INF_, NAN_ = np.inf, np.nan


@pytest.fixture(autouse=True)
def _x64():
    tracejit.config.update("jax_enable_x64", True)
    yield
    tracejit.config.update("jax_enable_x64", False)


def _part_ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Ulps between two float arrays of one dtype: 0 for equal values (NaN with NaN), inf for a
    NaN against a number or zeros of opposite signs; values below tiny with the same sign count
    as equal (XLA's flush to zero)."""
    ity = np.int32 if got.dtype == np.float32 else np.int64
    tiny = np.finfo(got.dtype).tiny

    def ordered(v):  # the float order as integers: -0 and +0 both 0
        i = v.view(ity).astype(np.int64)
        return np.where(i < 0, np.iinfo(ity).min - i, i)
    a, b = ordered(got), ordered(want)
    with np.errstate(over="ignore"):  # across zero the int64 difference may wrap: far anyway
        dist = np.where((a >= 0) == (b >= 0), np.abs(a - b).astype(np.float64),
                        np.abs(a.astype(np.float64) - b.astype(np.float64)))
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    flushed = (np.abs(got) < tiny) & (np.abs(want) < tiny)
    dist = np.where(flushed & (np.signbit(got) == np.signbit(want)), 0.0, dist)
    dist = np.where(flushed & (np.signbit(got) != np.signbit(want)), np.inf, dist)
    dist = np.where(nan_g & nan_w, 0.0, np.where(nan_g != nan_w, np.inf, dist))
    return dist


def _ulps(got, want) -> np.ndarray:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    return np.maximum(_part_ulps(got.real, want.real), _part_ulps(got.imag, want.imag))


def _flushed_by_xla(z: np.ndarray) -> np.ndarray:
    tiny = np.finfo(z.real.dtype).tiny
    return np.logical_or(*[(np.abs(p) < 2 * tiny) & (p != 0) for p in (z.real, z.imag)])


def _call(op: str, z, backend: str):
    with np.errstate(all="ignore"):
        return np.asarray(tracejit.jit(getattr(lax, op), backend=backend)(z))


def _fail_report(z, got, want, err):
    bad = np.flatnonzero(err > ULPS)[:5]
    return [(z[i], got[i], want[i], err[i]) for i in bad]


@pytest.mark.parametrize("backend", ["native", "interpret"])
@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", OPS)
def test_inverse_functions_match_jax(op, dtype, backend):
    """The whole table: special values crossed (zeros of both signs on both axes, the branch
    cuts beyond ±1 and ±i, cut-over points of the algorithm, max, inf, NaN), then random
    points over the whole exponent range and near the unit square."""
    z = DATA[f"z_{dtype}"]
    want = DATA[f"{op}_{dtype}"]
    got = _call(op, z, backend)
    err = np.where(_flushed_by_xla(z), 0.0, _ulps(got, want))
    assert (err <= ULPS).all(), _fail_report(z, got, want, err)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", OPS)
def test_native_agrees_with_the_interpreter_where_xla_flushes(op, dtype):
    """On the whole table (subnormal parts included): the same formula, our math.py against
    NumPy's libm."""
    z = DATA[f"z_{dtype}"]
    native_out, ref = _call(op, z, "native"), _call(op, z, "interpret")
    err = _ulps(native_out, ref)
    assert _flushed_by_xla(z).sum() > 100
    assert (err <= ULPS).all(), _fail_report(z, native_out, ref, err)


def test_the_branch_cuts_take_jaxs_side_not_numpys():
    """On a cut with a -0 imaginary part XLA keeps the upper side (it tests y < 0, which -0
    is not); C99 and NumPy take the lower one. Recorded from JAX 0.12 (complex64):
    asin(2 - 0j) = 1.5707964 + 1.316958j, acosh(-0 - 0j) = 0 + 1.5707964j; NumPy gives
    1.5707964 - 1.316958j and 0 - 1.5707964j."""
    z = np.array([complex(2.0, -0.0), complex(-0.0, -0.0)], np.complex64)
    for op, want in (("asin", 1.5707964 + 1.316958j), ("acosh", 1.5707964j)):
        i = 0 if op == "asin" else 1
        got = _call(op, z[i:i + 1], "native")
        assert _ulps(got, np.array([want], np.complex64)).max() <= 1, got
        assert NUMPY[op](z[i:i + 1])[0].imag < 0


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", OPS)
def test_inverse_functions_agree_with_numpy_off_the_cuts(op, dtype):
    """Random points with nonzero parts over exp(±3) (no cut, no special value): JAX and
    NumPy's C99 functions agree there, normwise within 3 ulps (measured 1.3-2.8)."""
    rng = np.random.default_rng(3)
    n = 1000
    z = np.empty(n, dtype)
    z.real, z.imag = (rng.standard_normal(n) * np.exp(rng.uniform(-3, 3, n)) for _ in "ri")
    got, want = _call(op, z, "native"), NUMPY[op](z)
    scale = np.maximum(np.abs(want.real), np.abs(want.imag)) * np.finfo(dtype).eps
    err = np.maximum(np.abs(got.real - want.real), np.abs(got.imag - want.imag)) / scale
    assert err.max() <= 4, err.max()


@pytest.mark.parametrize("op", OPS)
def test_inverse_functions_jvp_and_vmap(op):
    """JVP against central differences (complex128, off the cuts: the acosh rule is JAX's
    rsqrt(z - 1) rsqrt(z + 1); rsqrt((z - 1)(z + 1)) has the wrong sign for Re z < 0), and
    vmap against the unbatched function, bit for bit."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(12) + 1j * rng.standard_normal(12)
    t = rng.standard_normal(12) + 1j * rng.standard_normal(12)
    f = getattr(lax, op)
    _, got = tracejit.jvp(f, (x,), (t,))
    h = 1e-6
    fd = (np.asarray(f(x + h * t)) - np.asarray(f(x - h * t))) / (2 * h)
    np.testing.assert_allclose(np.asarray(got), fd, rtol=1e-7, atol=1e-8)
    z = DATA["z_complex64"][:600].reshape(20, 30)
    for in_axes in (0, 1):
        batched = np.asarray(tracejit.jit(tracejit.vmap(f, in_axes=in_axes, out_axes=in_axes))(z))
        _same_bits([batched], [np.asarray(tracejit.jit(f)(z))], f"vmap in_axes={in_axes}")


def _position_inputs(dtype) -> np.ndarray:
    z = DATA[f"z_{dtype}"]
    n = codegen.INLINE_SLOW_PATH_MIN_ELEMENTS + 37
    return np.resize(z, n) if len(z) < n else z[:n]


def _program(z):
    return tuple(getattr(lax, op)(z) for op in OPS)


def _same_bits(got, want, where):
    """Equal bits per part, any NaN equal to any NaN (its sign and payload depend on which
    operand the instruction LLVM picked propagates, as in test_math_positions)."""
    for op, g, w in zip(OPS + ("cumlogsumexp",), got, want):
        parts = [(np.asarray(p(g)), np.asarray(p(w))) for p in (np.real, np.imag)]
        for pg, pw in parts:
            same = (pg.view(f"u{pg.itemsize}") == pw.view(f"u{pw.itemsize}")) | (
                np.isnan(pg) & np.isnan(pw))
            assert same.all(), f"{op} ({where}): {np.flatnonzero(~same)[:5]}"


@pytest.mark.parametrize("dtype", COMPLEX)
def test_an_elements_bits_do_not_depend_on_where_it_lies(dtype):
    """As tests/test_math_positions.py: the vector body against the scalar tail (the array
    shifted by 1, 3, 13 elements), a short array and 0-d programs (straight-line code)."""
    z = _position_inputs(dtype)
    f = tracejit.jit(_program)
    whole = [np.asarray(r) for r in f(z)]
    for s in (1, 3, 13):
        _same_bits(f(z[s:]), [w[s:] for w in whole], f"shifted by {s}")
    _same_bits(f(z[-37:]), [w[-37:] for w in whole], "short array")
    picks = list(range(0, len(z), 97))
    one = [[np.asarray(r) for r in f(z[k])] for k in picks]
    _same_bits([np.array([o[j] for o in one]) for j in range(len(OPS))],
               [w[picks] for w in whole], "0-d")


@pytest.mark.usefixtures("second_tier")
@pytest.mark.skipif(not native(), reason="tiers are the native backend's")
@pytest.mark.parametrize("dtype", COMPLEX)
def test_o0_and_o3_code_give_the_same_bits(cold, dtype):  # noqa: F811
    """The first call's O0 code against the final O3 code (tests/test_tiering.py's fixture):
    the same bits, NaNs' signs aside."""
    z = _position_inputs(dtype)
    f = tracejit.jit(lambda z: (*_program(z), lax.cumlogsumexp(z[:64].reshape(8, 8), axis=1)))
    tiering.wait()  # (an earlier test's program may still be waiting for its final code)
    earlier = list(native_rt._compiled.values())  # (some kept their first tier: conftest.py)
    with tiering.paused():
        first = [np.asarray(r) for r in f(z)]
        (program,) = [p for p in native_rt._compiled.values()
                      if not p.final and all(p is not q for q in earlier)]
    tiering.wait()
    assert program.final
    final = [np.asarray(r) for r in f(z)]
    _same_bits(first, final, "O0 against O3")


# --- erf, erfc, erf_inv, polygamma, top_k: JAX's trace-time errors ---------------------------

@pytest.mark.parametrize("backend", ["native", "interpret"])
@pytest.mark.parametrize("name", ["erf", "erfc", "erf_inv"])
def test_erf_family_refuses_complex_as_jax(name, backend):
    """JAX 0.12: TypeError 'erf does not accept dtype complex64. Accepted dtypes are subtypes of
    floating.' (the same for erfc, erf_inv), when traced: no compile is attempted."""
    z = np.ones(3, np.complex64)
    msg = (f"^{name} does not accept dtype complex64. Accepted dtypes are subtypes of "
           f"floating.$")
    with pytest.raises(TypeError, match=msg):
        tracejit.jit(getattr(lax, name), backend=backend)(z)
    with pytest.raises(TypeError, match=msg):
        tracejit.make_jaxpr(getattr(lax, name))(z)
    with pytest.raises(TypeError, match="^erf does not accept dtype complex128"):
        tracejit.scipy.special.erf(np.ones(2, np.complex128))


def test_polygamma_and_top_k_refuse_complex_as_jax():
    z = np.ones(3, np.complex64)
    with pytest.raises(TypeError, match="^polygamma does not accept dtype complex64 at position "
                                        "0. Accepted dtypes at position 0 are subtypes of "
                                        "floating.$"):
        tracejit.jit(lax.polygamma)(z, z)
    with pytest.raises(ValueError, match="^top_k is not compatible with complex inputs.$"):
        tracejit.jit(lambda z: lax.top_k(z, 2), backend="native")(z)
    # a real operand still works
    np.testing.assert_allclose(tracejit.jit(lax.erf)(np.float32(0.5)), 0.5204999, rtol=1e-6)


# --- cumlogsumexp ------------------------------------------------------------------------------

REAL = ("bfloat16", "float16", "float32", "float64")


def _cumlse_input(name: str) -> np.ndarray:
    dtype = jnp.bfloat16 if name == "bfloat16" else np.dtype(name)
    return np.asarray(DATA[f"cumlse_x_{name}"]).astype(dtype)


def _cumlse(x, axis, reverse, backend):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f = tracejit.jit(lambda x: lax.cumlogsumexp(x, axis=axis, reverse=reverse),
                         backend=backend)
        return np.asarray(f(x))


def _close(got, want, eps, tol):
    """NaN in the same places, infinities equal, finite values within tol eps of max(1, |v|)
    per part, |v| the modulus for complex v (normwise: a phase is only as exact as its
    modulus; complex logaddexp's phases can also cancel, the sum of 40 exponentials then
    being smaller than its terms, and reassociation costs more than an ulp)."""
    scale = np.maximum(1.0, np.abs(want.astype(np.complex128 if want.dtype.kind == "c" else
                                               np.float64)))
    pairs = [(got.real, want.real), (got.imag, want.imag)] if got.dtype.kind == "c" else [
        (got, want)]
    for g, w in pairs:
        g, w = g.astype(np.float64), w.astype(np.float64)
        assert (np.isnan(g) == np.isnan(w)).all(), np.argwhere(np.isnan(g) != np.isnan(w))
        inf = np.isinf(w)
        assert (g[inf] == w[inf]).all()
        fin = np.isfinite(w) & np.isfinite(scale)
        err = np.abs(g[fin] - w[fin]) / scale[fin] / eps
        assert err.max(initial=0) <= tol, err.max()


def _eps(name):
    return 2.0 ** -7 if name == "bfloat16" else float(np.finfo(np.dtype(name)).eps)


@pytest.mark.parametrize("backend", ["native", "interpret"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", COMPLEX + REAL)
def test_cumlogsumexp_matches_jax(name, axis, reverse, backend):
    """JAX's running fold from -inf (+0j): forwards the same fold (complex: within 8 eps,
    measured 3-6; real: 4 eps, measured 1-2). Reversed, XLA's reduce_window folds each window
    x[i:] afresh from the initial value in increasing order while we run one fold from the
    end: the same sums reassociated (complex: 64 eps, measured 12-48; real 4, measured 1-3),
    except
    that a complex x[i] with real part -inf makes JAX's window i start with
    (-inf + 0j) (+) (-inf + bj) = NaN, where our fold has already met finite values: there
    we give the finite sum of the rest."""
    x = _cumlse_input(name)
    want = DATA[f"cumlse_{axis}{int(reverse)}_{name}"]
    got = _cumlse(x, axis, reverse, backend).astype(want.dtype if name in REAL else x.dtype)
    complex_ = name in COMPLEX
    if complex_ and reverse:
        starts_nan = np.isneginf(x.real) & np.isnan(want)
        assert starts_nan.sum() >= 2 and np.isfinite(got[starts_nan]).all()
        want = np.where(starts_nan, got, want)
    tol = (64 if reverse else 8) if complex_ else 4
    _close(got, want, _eps(name), tol)


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_cumlogsumexp_native_matches_the_interpreter(name):
    x = _cumlse_input(name)
    for axis in (0, 1):
        for reverse in (False, True):
            _close(_cumlse(x, axis, reverse, "native"), _cumlse(x, axis, reverse, "interpret"),
                   _eps(name), 64)


def test_complex_cumlogsumexp_first_output_is_wrapped_like_jaxs():
    """JAX 0.12: cumlogsumexp([1+2j, 1+1j, 3-1j]) as complex64 =
    [1+2.0000002j, 1.562563+1.5000002j, 2.8040876-0.8262019j]: even the first entry passes
    through the combine (its phase wrapped by fmod with float32's π)."""
    x = np.array([1 + 2j, 1 + 1j, 3 - 1j], np.complex64)
    want = np.array([1 + 2.0000002j, 1.562563 + 1.5000002j, 2.8040876 - 0.8262019j],
                    np.complex64)
    got = _cumlse(x, 0, False, "native")
    assert got[0] == want[0]
    np.testing.assert_allclose(got, want, rtol=4e-7)


def test_complex_cumlogsumexp_jvp_against_finite_differences():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))) * 0.5
    t = rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))
    for axis, reverse in ((0, False), (1, True)):
        def f(x, axis=axis, reverse=reverse):
            return lax.cumlogsumexp(x, axis=axis, reverse=reverse)
        _, got = tracejit.jvp(f, (x,), (t,))
        h = 1e-6
        fd = (np.asarray(f(x + h * t)) - np.asarray(f(x - h * t))) / (2 * h)
        np.testing.assert_allclose(np.asarray(got), fd, rtol=1e-6, atol=1e-7)
        # reverse mode against the JVP: JAX's gradient g of a real loss has dL = Re(sum(g t))
        loss = lambda x: jnp.sum(jnp.real(f(x) * np.conj(t)))
        g = np.asarray(tracejit.grad(loss)(x))
        _, dl = tracejit.jvp(loss, (x,), (t,))
        np.testing.assert_allclose(np.sum(np.real(g * t)), np.asarray(dl), rtol=1e-12)


def test_complex_cumlogsumexp_under_vmap_matches_a_loop():
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((4, 5, 7)) + 1j * rng.standard_normal((4, 5, 7))).astype(
        np.complex64)
    f = lambda v: lax.cumlogsumexp(v, axis=1, reverse=True)
    for in_axis in (0, 1, 2):
        got = np.asarray(tracejit.vmap(f, in_axes=in_axis)(x))
        want = np.stack([np.asarray(f(np.take(x, i, in_axis))) for i in range(x.shape[in_axis])])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", ["native", "interpret"])
def test_jnp_logaddexp_of_complex_is_jaxs(backend):
    """jnp.logaddexp/logaddexp2 of complex numbers, as JAX 0.12 computes them (recorded,
    complex64): the larger term (in (re, im) order) shifts, the phase is wrapped into [-π, π)
    (logaddexp2: [-π/ln 2, π/ln 2)). At (-inf + 1j, 1 + 1j) JAX's logaddexp2 is NaN (XLA's
    complex exp2 of -inf + 0j); ours, NumPy's exp2 there, gives 1 + 1j: left out."""
    z1 = np.array([1.4 + 2.6j, -0.5 + 0.25j, 3 - 3j, complex(-INF_, 1), 2 + 0j], np.complex64)
    z2 = np.array([0.3 - 1j, -0.5 + 3j, 3 + 3j, 1 + 1j, complex(INF_, 0)], np.complex64)
    want = np.array([1.0670328 + 2.806976j, -1.4439306 + 1.6250002j, 3.6830893 - 3.1415927j,
                     1 + 1.0000002j, complex(NAN_, NAN_)], np.complex64)
    want2 = np.array([0.85959005 + 1.9927502j, -0.2879234 + 1.625j, 2.9619772 - 4.53236j],
                     np.complex64)
    with np.errstate(all="ignore"):
        got = np.asarray(tracejit.jit(jnp.logaddexp, backend=backend)(z1, z2))
        got2 = np.asarray(tracejit.jit(jnp.logaddexp2, backend=backend)(z1, z2))
    assert _ulps(got, want).max() <= ULPS, got
    assert _ulps(got2[:3], want2).max() <= ULPS, got2
    # JAX's JVP: t1 exp(x1 - out) + t2 exp(x2 - out), recorded for t1 = 1, t2 = 1j
    t = np.ones(5, np.complex64)
    _, dt = tracejit.jvp(jnp.logaddexp, (z1, z2), (t, 1j * t))
    np.testing.assert_allclose(np.asarray(dt)[:3], np.array(
        [1.0786300 - 0.6520211j, -2.0209582 - 2.020957j, 0.57127309 + 0.5712734j]), rtol=2e-6)
