"""tracejit.backend.llvm.math: every function JIT-compiled in a loop over a buffer, checked in
ulp against NumPy/SciPy (float64 references for float32; long double where NumPy has it for
float64; mpmath for float64 sin/cos/tan past 2**28) over dense sweeps, and bit-for-bit on
special values (NaN, +-inf, +-0, subnormals, overflow and underflow edges)."""
import contextlib
import ctypes
import functools
import re

import numpy as np
import pytest
import scipy.special as sp
from llvmlite import ir

from tracejit.backend.llvm import jit_engine
from tracejit.backend.llvm import math as llmath

F32, F64 = np.float32, np.float64
_IR_TYPES = {F32: ir.FloatType(), F64: ir.DoubleType()}


# --- compile every function for both precisions into one module --------------------------

def _kernel_name(name, dtype):
    return f"k_{name}_{np.dtype(dtype).name}"


def _build_loop(module, fname, name, ty, nargs):
    """void fname(T* in_0, ..., T* out, i64 n): out[i] = name(in_0[i], ...)."""
    ptr = ty.as_pointer()
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1) + [i64]),
                     name=fname)
    for a in fn.args[:-1]:
        a.add_attribute("noalias")
    n = fn.args[-1]
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, i64(0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), entry)
    xs = [b.load(b.gep(p, [i])) for p in fn.args[:nargs]]
    b.store(llmath.emit(b, name, *xs), b.gep(fn.args[nargs], [i]))
    nxt = b.add(i, i64(1))
    i.add_incoming(nxt, b.block)  # (the math may have opened blocks of its own)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()


@functools.cache
def _compiled(inline_slow_paths: bool = False):
    """Every function's loop; with `inline_slow_paths`, only sin/cos/tan's, their Payne-Hanek
    paths inline (as codegen emits them in loops over many elements) instead of calls."""
    module = ir.Module(name="llvm_math_test")
    with llmath.inline_slow_paths(inline_slow_paths):
        for name in _TRIG if inline_slow_paths else llmath.NAMES:
            nargs = llmath._FUNCTIONS[name][0]
            for dtype, ty in _IR_TYPES.items():
                _build_loop(module, _kernel_name(name, dtype), name, ty, nargs)
    optimized, code = jit_engine.compile_ir(str(module))
    return str(optimized), code


def run(name, *args, dtype=F32, inline_slow_paths=False):
    """Evaluate llmath's `name` elementwise over NumPy arrays (broadcast together)."""
    _, code = _compiled(inline_slow_paths)
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype) for a in args])
    arrays = [np.ascontiguousarray(a.ravel()) for a in arrays]
    out = np.empty_like(arrays[0])
    nargs = len(arrays)
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (nargs + 1)), ctypes.c_int64)
    fn = proto(code.address(_kernel_name(name, dtype)))
    fn(*[a.ctypes.data for a in arrays], out.ctypes.data, out.size)
    return out.reshape(np.broadcast_shapes(*[np.shape(a) for a in args]))


# --- references and error measure -----------------------------------------------------------

LD = np.longdouble
_HAVE_LD = np.finfo(LD).nmant > 52


def _sigmoid(x):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_NP = {  # NumPy ufuncs that also run in long double
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log1p": np.log1p,
    "expm1": np.expm1, "tanh": np.tanh, "logistic": _sigmoid, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "cbrt": np.cbrt, "atan2": np.arctan2, "pow": np.power,
}
_SP = {"erf": sp.erf, "erfc": sp.erfc, "erf_inv": sp.erfinv, "lgamma": sp.gammaln,
       "digamma": sp.psi, "bessel_i0e": sp.i0e, "bessel_i1e": sp.i1e,
       "polygamma": sp.polygamma}


def reference(name, *args, dtype):
    """Float64 reference for float32; long double (where NumPy has it) for float64, and for
    float64 lgamma/digamma/erfc SciPy mended where it is inaccurate (see _*_ref64)."""
    with np.errstate(all="ignore"):
        if name in _NP:
            work = LD if (dtype == F64 and _HAVE_LD) else F64
            return _NP[name](*[np.asarray(a, dtype).astype(work) for a in args])
        if dtype == F64 and name in _REF64:
            return _REF64[name](np.asarray(args[0], F64))
        return _SP[name](*[np.asarray(a, dtype).astype(F64) for a in args])


_EULER = LD("0.5772156649015328606065120900824024310422")
_PI_LD = 4 * np.arctan(LD(1))


def _lgamma1p_series(t):
    """lgamma(1 + t) = -euler*t + sum_k (-t)**k zeta(k) / k for |t| <= 1/2, in long double
    (SciPy's float64 gammaln loses relative accuracy near its zeros at 1 and 2)."""
    acc = np.zeros_like(t)
    for k in range(70, 1, -1):
        acc = acc * t + (-1) ** k * (1 + LD(sp.zetac(k))) / k
    return t * (acc * t - _EULER) + 0.0   # + 0.0: lgamma(1) is +0


def _reflection_arg(x):
    r = x - np.round(x)
    return np.abs(np.sin(_PI_LD * r)), np.tan(_PI_LD * r)


def _lgamma_ref64(x):
    x = x.astype(LD)
    out = sp.gammaln(x.astype(F64)).astype(LD)
    near1, near2 = np.abs(x - 1) <= 0.5, np.abs(x - 2) < 0.5
    small = (x > 0) & (x < 0.5)
    out = np.where(near1, _lgamma1p_series(np.where(near1, x - 1, 0)), out)
    out = np.where(near2, _lgamma1p_series(np.where(near2, x - 2, 0)) + np.log1p(x - 2), out)
    out = np.where(small, _lgamma1p_series(np.where(small, x, 0)) - np.log(x), out)
    neg = x < 0
    if neg.any():   # lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
        xn = x[neg]
        s, _ = _reflection_arg(xn)
        out[neg] = np.where(s == 0, np.inf,
                            np.log(_PI_LD / s) - _lgamma_ref64((1 - xn).astype(F64)))
    return np.where(np.isinf(x), np.inf, out)


def _digamma_ref64(x):
    x = x.astype(LD)
    out = sp.psi(x.astype(F64)).astype(LD)
    neg = x < 0
    if neg.any():   # digamma(x) = digamma(1 - x) - pi / tan(pi x)
        xn = x[neg]
        _, t = _reflection_arg(xn)
        out[neg] = sp.psi((1 - xn).astype(F64)) - _PI_LD / t
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, out)   # JAX: NaN at the poles


def _erfc_ref64(x):
    out = sp.erfc(x).astype(LD)
    tail = x > 0.25  # SciPy loses the rounding of x*x there (and flushes subnormals)
    xt = x[tail].astype(LD)
    out[tail] = np.exp(-xt * xt) * sp.erfcx(x[tail])
    return out


_REF64 = {"lgamma": _lgamma_ref64, "digamma": _digamma_ref64, "erfc": _erfc_ref64}


def ulp_error(got, want, dtype, scale_floor=None):
    """|got - want| in units of the spacing of `dtype` at |want| (or at scale_floor where that
    is larger); matching NaNs and infinities count as 0."""
    want = np.asarray(want)
    mag = np.abs(want) if scale_floor is None else np.maximum(np.abs(want), scale_floor)
    with np.errstate(all="ignore"):
        spacing = np.spacing(mag.astype(dtype)).astype(want.dtype)
        spacing = np.maximum(spacing, np.finfo(dtype).smallest_subnormal)
        err = np.abs(got.astype(want.dtype) - want) / spacing
        want_t = want.astype(dtype)     # an infinity here: the exact value rounds to it
    both_nan = np.isnan(got) & np.isnan(want)
    same_inf = np.isinf(want_t) & (got == want_t)
    return np.where(both_nan | same_inf, 0.0, np.where(np.isnan(err), np.inf, err))


# --- sweeps -----------------------------------------------------------------------------------

def log_sweep(lo, hi, n, dtype, signed=True, rng=None):
    """n points spread evenly in log-scale over [lo, hi] (both > 0), random mantissas,
    optionally mirrored to negative values."""
    rng = rng or np.random.default_rng(0)
    e = rng.uniform(np.log2(lo), np.log2(hi), n)
    x = np.exp2(e).astype(dtype)
    if signed:
        x = np.where(rng.random(n) < 0.5, -x, x)
    return x


def lin_sweep(lo, hi, n, dtype, rng=None):
    rng = rng or np.random.default_rng(1)
    return rng.uniform(lo, hi, n).astype(dtype)


N = 100_000


def _domain(name, dtype):
    """Dense samples of the function's domain (float32 covers every exponent range)."""
    big = float(np.finfo(dtype).max)
    small = float(np.finfo(dtype).smallest_subnormal)
    f32 = dtype == F32
    # float64 beyond 2**28 is measured against mpmath in test_trig_whole_range
    trig_max = big if f32 else 2.0 ** 28
    table = {
        "exp": [lin_sweep(-104, 89, N, dtype)] if f32 else [lin_sweep(-746, 710, N, dtype)],
        "exp2": [lin_sweep(-151, 128, N, dtype)] if f32 else [lin_sweep(-1076, 1024, N, dtype)],
        "expm1": [lin_sweep(-20, 89, N, dtype), log_sweep(1e-30, 1, N, dtype)],
        "log": [log_sweep(small, big, N, dtype, signed=False), lin_sweep(0.5, 2, N, dtype)],
        "log2": [log_sweep(small, big, N, dtype, signed=False), lin_sweep(0.5, 2, N, dtype)],
        "log1p": [log_sweep(small, big, N, dtype, signed=False),
                  -log_sweep(small, 1, N, dtype, signed=False), lin_sweep(-0.5, 1, N, dtype)],
        "tanh": [log_sweep(small, 30, N, dtype)],
        "logistic": [lin_sweep(-104, 30, N, dtype) if f32 else lin_sweep(-745, 40, N, dtype)],
        "sin": [log_sweep(small, trig_max, N, dtype), lin_sweep(-10, 10, N, dtype)],
        "cos": [log_sweep(small, trig_max, N, dtype), lin_sweep(-10, 10, N, dtype)],
        "tan": [log_sweep(small, trig_max, N, dtype), lin_sweep(-10, 10, N, dtype)],
        "atan": [log_sweep(small, big, N, dtype)],
        "asin": [log_sweep(small, 1, N, dtype), lin_sweep(-1, 1, N, dtype)],
        "acos": [log_sweep(small, 1, N, dtype), lin_sweep(-1, 1, N, dtype)],
        "sinh": [log_sweep(small, 89.4 if f32 else 710.4, N, dtype)],
        "cosh": [log_sweep(small, 89.4 if f32 else 710.4, N, dtype)],
        "asinh": [log_sweep(small, big, N, dtype)],
        "acosh": [1 + log_sweep(small, 1, N, dtype, signed=False),
                  log_sweep(1, big, N, dtype, signed=False)],
        "atanh": [log_sweep(small, 1, N, dtype), lin_sweep(-1, 1, N, dtype)],
        "erf": [log_sweep(small, 7, N, dtype)],
        "erfc": [lin_sweep(-6, 10.1 if f32 else 27.3, N, dtype), log_sweep(small, 1, N, dtype)],
        "cbrt": [log_sweep(small, big, N, dtype)],
        "lgamma": [log_sweep(small, big, N // 2, dtype, signed=False), lin_sweep(0, 12, N, dtype),
                   lin_sweep(-30, 0, N, dtype)],
        "digamma": [log_sweep(small, big, N // 2, dtype, signed=False),
                    lin_sweep(0, 12, N, dtype), lin_sweep(-30, 0, N, dtype)],
        "bessel_i0e": [log_sweep(small, big, N, dtype), lin_sweep(-30, 30, N, dtype)],
        "bessel_i1e": [log_sweep(small, big, N, dtype), lin_sweep(-30, 30, N, dtype)],
    }
    return np.concatenate(table[name])


def _special_values(dtype):
    info = np.finfo(dtype)
    base = [0.0, 1.0, 2.0, 0.5, 1e-3, 3.0, 10.0, 88.72, 88.73, 89.5, 103.0, 104.0, 709.7,
            709.8, 710.5, 745.1, 746.0, 27.3, 10.06, 1.0 - float(info.epsneg),
            1.0 + float(info.eps),
            float(info.tiny), float(info.smallest_subnormal), 3 * float(info.smallest_subnormal),
            float(info.max), 1e30, 1e8, 3e9, np.pi, np.pi / 2, np.inf]
    vals = np.array(base + [-v for v in base] + [np.nan], dtype=dtype)
    return vals


UNARY = ["exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
         "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erf",
         "erfc", "cbrt", "lgamma", "digamma", "bessel_i0e", "bessel_i1e"]
# float32 functions that follow XLA's CPU code: their accuracy is measured on normal inputs and
# results (subnormals, which tracejit keeps and XLA flushes, are checked in test_numerics.py);
# native equals the reference bit for bit, subnormals included, in test_xla_f32_bit_exact.
XLA_F32 = ("exp", "log", "log1p", "erf", "erf_inv", "tanh")

# Max ulp error asserted against the references above (fixed sweeps, so these are the measured
# maxima with a little room). Where a float64 bound exceeds the module docstring's table, the
# reference itself is off by that much (SciPy's erf/erfc, checked against mpmath).
BOUNDS = {
    F32: {"exp": 5, "exp2": 1, "log": 1.5, "log2": 1.5, "log1p": 2.5, "expm1": 1.5,
          "tanh": 4.5, "logistic": 2, "sin": 1.5, "cos": 2, "tan": 1, "atan": 2, "asin": 2.5,
          "acos": 1.5, "sinh": 2.5, "cosh": 2.5, "asinh": 1.5, "acosh": 2, "atanh": 2, "erf": 4.5,
          "erfc": 3.5, "cbrt": 1, "lgamma": 2.5, "digamma": 3.5, "atan2": 2, "pow": 1,
          "bessel_i0e": 2, "bessel_i1e": 2, "polygamma": 1},
    F64: {"exp": 1.5, "exp2": 1.5, "log": 1, "log2": 1, "log1p": 1, "expm1": 2, "tanh": 2,
          "logistic": 2, "sin": 2, "cos": 1.5, "tan": 3, "atan": 1.5, "asin": 2.5, "acos": 1.5,
          "sinh": 2.5, "cosh": 2.5, "asinh": 1, "acosh": 2, "atanh": 2, "erf": 2.5,
          "erfc": 5.5, "cbrt": 1, "lgamma": 6, "digamma": 8, "atan2": 2.5, "pow": 1.5,
          "bessel_i0e": 6, "bessel_i1e": 12, "polygamma": 8},
}


# float32 lgamma and digamma at x < 0 (in ulps of the larger term, below): their reflections add
# two float32 terms of ~2-3 ulps each (lgamma(1 - x) and log(pi / |sin(pi x)|); digamma(1 - x)
# and pi cot(pi x))
NEGATIVE_BOUNDS = {F32: {"lgamma": 7, "digamma": 8}}


def _scale_floor(name, x, dtype):
    """lgamma and digamma at x < 0 come from the reflection formula f(x) = g(x) -+ f(1 - x),
    which cancels near their zeros and poles; error there is measured in ulp of the larger
    term, max(|f(1 - x)|, 1)."""
    if name in ("lgamma", "digamma"):
        with np.errstate(all="ignore"):
            other = np.abs(reference(name, 1 - x.astype(F64), dtype=F64))
        return np.where(x < 0, np.maximum(other, 1.0), 0.0)
    return None


# --- tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_accuracy(name, dtype):
    x = _domain(name, dtype)
    if dtype == F32 and name in XLA_F32:
        x = _normal_in_out(name, x)
    got = run(name, x, dtype=dtype)
    err = ulp_error(got, reference(name, x, dtype=dtype), dtype, _scale_floor(name, x, dtype))
    bound = _bound(name, x, dtype)
    worst = int(np.argmax(err - bound))
    assert err[worst] <= bound[worst], (
        f"{name}({x[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp")


def _bound(name, x, dtype):
    """BOUNDS' bound at each point of x (NEGATIVE_BOUNDS' at x < 0 where it has one)."""
    negative = NEGATIVE_BOUNDS.get(dtype, {}).get(name, BOUNDS[dtype][name])
    return np.where(x < 0, negative, BOUNDS[dtype][name])


def _normal_in_out(name, x):
    """The points of x with a normal (or zero, infinite, NaN) input and exact result."""
    with np.errstate(all="ignore"):
        want = np.abs(reference(name, x, dtype=F32))
    tiny = np.finfo(F32).tiny
    keep = ~((np.abs(x) < tiny) & (x != 0)) & ~((want < tiny) & (want != 0))
    return x[keep]


def _pow_args(dtype, n=100_000):
    """|x| over every exponent; y scaled so |y log2 x| spans the finite range (and past it)."""
    rng = np.random.default_rng(2)
    info = np.finfo(dtype)
    x = log_sweep(float(info.smallest_subnormal), float(info.max), n, dtype, rng=rng)
    limit = 140 if dtype == F32 else 1100
    y = rng.uniform(-1, 1, n) * limit / np.maximum(np.abs(np.log2(np.abs(x.astype(F64)))), 1e-3)
    y = np.where(rng.random(n) < 0.2, np.round(y), y)      # integer exponents, for x < 0
    return x, y.astype(dtype)


def _atan2_args(dtype, n=100_000):
    rng = np.random.default_rng(3)
    info = np.finfo(dtype)
    y = log_sweep(float(info.smallest_subnormal), float(info.max), n, dtype, rng=rng)
    x = log_sweep(float(info.smallest_subnormal), float(info.max), n, dtype, rng=rng)
    with np.errstate(over="ignore"):
        near = (y * log_sweep(1 / 64, 64, n, dtype, rng=rng)).astype(dtype)  # similar sizes
    return np.concatenate([y, y]), np.concatenate([x, near])


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["pow", "atan2"])
def test_binary_accuracy(name, dtype):
    a, b = _pow_args(dtype) if name == "pow" else _atan2_args(dtype)
    got = run(name, a, b, dtype=dtype)
    err = ulp_error(got, reference(name, a, b, dtype=dtype), dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= BOUNDS[dtype][name], (
        f"{name}({a[worst]!r}, {b[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp")


def _assert_special(name, got, want, args, dtype, bound, scale_floor=None):
    """Non-finite and zero results bit-for-bit (sign of zero included); finite within bound."""
    with np.errstate(over="ignore"):
        want_t = np.asarray(want).astype(dtype)
    exact = (got == want_t) & (np.signbit(got) == np.signbit(want_t))
    exact |= np.isnan(got) & np.isnan(want_t)
    err = ulp_error(got, want, dtype, scale_floor)
    close = np.isfinite(want_t) & (want_t != 0) & (err <= bound)
    bad = ~(exact | close)
    assert not bad.any(), [(name, *[a[bad][i] for a in args], got[bad][i], want_t[bad][i])
                           for i in range(min(5, int(bad.sum())))]


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(name, dtype):
    x = _special_values(dtype)
    if dtype == F32 and name in XLA_F32:
        x = _normal_in_out(name, x)
    got = run(name, x, dtype=dtype)
    want = np.asarray(reference(name, x, dtype=dtype))
    if name in _TRIG and dtype == F64:   # mpmath past 2**28 (it drops the sign of -0)
        want = np.where(np.abs(x) >= 2.0 ** 28, _trig_ref(name, x), want)
    if name == "digamma":   # JAX (not SciPy) gives NaN at every pole, 0 included
        want = np.where((x <= 0) & (x == np.floor(x)), np.nan, want)
    if name == "lgamma":    # and +inf at -inf, as C99 does
        want = np.where(x == -np.inf, np.inf, want)
    _assert_special(name, got, want, (x,), dtype, _bound(name, x, dtype),
                    _scale_floor(name, x, dtype))


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["pow", "atan2"])
def test_binary_special_values(name, dtype):
    sv = _special_values(dtype)
    a, b = (m.ravel() for m in np.meshgrid(sv, sv))
    got = run(name, a, b, dtype=dtype)
    _assert_special(name, got, reference(name, a, b, dtype=dtype), (a, b), dtype,
                    BOUNDS[dtype][name])


_TRIG = ("sin", "cos", "tan")


def _trig_ref(name, x):
    """mpmath's sin/cos/tan of each value (reduced with as many bits of pi as the exponent
    needs), as long double where NumPy has it, else float64."""
    import mpmath
    fn = getattr(mpmath, name)
    out = np.empty(x.shape, LD)
    with mpmath.workprec(128):
        for i, v in enumerate(np.asarray(x, F64).tolist()):
            y = fn(mpmath.mpf(v)) if np.isfinite(v) else mpmath.mpf("nan")
            hi = float(y)
            out[i] = LD(hi) + LD(float(y - hi)) if np.isfinite(hi) else hi
    return out


def _near_multiples_of_pio2(dtype, n, rng):
    """The floats nearest k*pi/2 for integers k up to 2**(mantissa bits) (rounded in mpmath),
    and their neighbours either side: the arguments that cancel most in the reduction."""
    import mpmath
    nmant = np.finfo(dtype).nmant + 1
    ks = np.unique(np.floor(np.exp2(rng.uniform(0, nmant + 1, n))).astype(np.int64))
    with mpmath.workprec(200):
        x = np.array([float(mpmath.mpf(int(k)) * mpmath.pi / 2) for k in ks.tolist()], dtype)
    return np.concatenate([x, np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(0))])


# The floats closest to a multiple of pi/2 beyond 2**16 (float32: 16367173 * 2**72, within
# 2**-29.2 of one; found by an exhaustive search) and the known hardest double,
# 6381956970095103 * 2**797 (within 2**-60.9; Muller, Elementary Functions, 11.3).
_HARDEST = {F32: [16367173 * 2.0 ** 72, 10741887 * 2.0 ** 11, 10057457 * 2.0 ** 62],
            F64: [6381956970095103 * 2.0 ** 797]}


@pytest.mark.parametrize("inline", [False, True], ids=["out_of_line", "inline"])
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", _TRIG)
def test_trig_whole_range(name, dtype, inline):
    """Huge arguments (Payne-Hanek reduction past 2**16 / 2**28) up to the largest float,
    the neighbours of multiples of pi/2 and the hardest cases, against mpmath; the slow path
    as a call of its process-wide routine and inline in a vectorised loop."""
    rng = np.random.default_rng(7)
    huge = log_sweep(2.0 ** 10, float(np.finfo(dtype).max), 20_000, dtype, rng=rng)
    x = np.concatenate([huge, _near_multiples_of_pio2(dtype, 3000, rng),
                        np.array(_HARDEST[dtype], dtype)])
    x = np.concatenate([x, -x])
    err = ulp_error(run(name, x, dtype=dtype, inline_slow_paths=inline), _trig_ref(name, x),
                    dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= BOUNDS[dtype][name], f"{name}({x[worst]!r}): {err[worst]:.2f} ulp"


@pytest.mark.parametrize("name, bound", [("sin", 0.7), ("cos", 1.24)])
def test_f32_trig_kernels_at_every_float_in_their_worst_range(name, bound):
    """Every float32 in [0.5, pi/4], where sin's and cos's kernels (r = x: no reduction) have
    their largest errors (over all of [0, pi/4]: 0.69 and 1.239 ulp, module docstring), against
    float64. cos's completed square (math._cos_kernel) keeps under Horner's maximum, 1.243."""
    lo, hi = (int(np.array(v, F32).view(np.int32)) for v in (0.5, np.pi / 4))
    x = np.arange(lo, hi + 1, dtype=np.int32).view(F32)
    err = ulp_error(run(name, x, dtype=F32), reference(name, x, dtype=F32), F32)
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({x[worst]!r}): {err[worst]:.4f} ulp"


def test_two_over_pi_bits():
    """The Payne-Hanek table: 2/pi's binary digits from Machin's formula, against mpmath."""
    import mpmath
    words = llmath._two_over_pi_words(40)
    with mpmath.workprec(32 * 40 + 64):
        want = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** (32 * 40)))
    assert sum(w << (32 * (39 - k)) for k, w in enumerate(words)) == want


def test_erf_inv_matches_xla():
    """float32 erf_inv is XLA's ErfInv32 (Giles) with XLA's log1p, step for step: JAX's bits."""
    import jax
    u = np.concatenate([lin_sweep(-1, 1, N, F32), log_sweep(1e-30, 1, N, F32),
                        1 - log_sweep(2 ** -24, 1, N, F32, signed=False)]).astype(F32)
    u = u[np.abs(u) < 1]
    np.testing.assert_array_equal(run("erf_inv", u), np.asarray(jax.jit(jax.lax.erf_inv)(u)))


def test_tanh_matches_jax():
    """float32 tanh is XLA's rational approximation with its FMAs: JAX's bits, on normal inputs
    and both sides of its two cuts (|x| = 0.0004, where it is x below; the clamp near 8, where
    it is exactly 1 above), infinities and NaN included."""
    import jax
    x = np.concatenate([lin_sweep(-10, 10, N, F32), log_sweep(1e-30, 30, N, F32),
                        _special_values(F32)]).astype(F32)
    x = x[~((np.abs(x) < np.finfo(F32).tiny) & (x != 0))]  # (XLA flushes subnormals)
    got, want = run("tanh", x), np.asarray(jax.jit(jax.numpy.tanh)(x))
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same][:5], got[~same][:5], want[~same][:5]))


@pytest.mark.parametrize("name", XLA_F32)
def test_xla_f32_bit_exact(name):
    """float32 exp, log, log1p, erf, erf_inv and tanh equal the reference interpreter (XLA's CPU
    algorithms) bit for bit: random bit patterns (subnormals and NaNs included), dense sweeps
    and the special values."""
    from tracejit.lax import elementwise
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(0, 2 ** 32, 300_000, dtype=np.uint64).astype(np.uint32)
                        .view(F32), _special_values(F32), lin_sweep(-1, 1, N, F32),
                        lin_sweep(-100, 100, N, F32),
                        log_sweep(float(np.finfo(F32).smallest_subnormal), 1e-30, N, F32)])
    got = run(name, x)
    want = getattr(elementwise, f"{name}_p").impl(x)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same][:5], got[~same][:5], want[~same][:5]))


def _polygamma_floor(m, x):
    """At x < 0 the float64 error is measured in ulp of the larger term of the reflection,
    m! * sum_k |x + k|**-(m+1) (digamma: as _scale_floor), as for digamma."""
    with np.errstate(all="ignore"):
        if m == 0:
            return _scale_floor("digamma", x, F64)
        f, g = x - np.floor(x), np.ceil(x) - x
        big = sp.factorial(m) * (sp.zeta(m + 1, f) + sp.zeta(m + 1, g))
    return np.where(x < 0, big, 0.0)


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("m", [0, 1, 2, 3, 5, 10, 30])
def test_polygamma_accuracy(m, dtype):
    info = np.finfo(dtype)
    x = np.concatenate([log_sweep(float(info.smallest_subnormal), float(info.max), N // 2, dtype,
                                  signed=False),
                        lin_sweep(0, 30, N // 2, dtype), lin_sweep(-30, 0, N // 2, dtype)])
    with np.errstate(all="ignore"):
        want = reference("polygamma", np.full_like(x, m), x, dtype=dtype)
        if m == 0 and dtype == F64:   # SciPy's psi is inaccurate at x < 0 (see _REF64)
            want = np.where(x == 0, -np.inf, _digamma_ref64(x))
        # SciPy's m! * zeta(m + 1, x) loses zeta's bits where zeta is subnormal (as ours does)
        keep = ~(np.abs(want) / sp.factorial(m) < np.finfo(F64).tiny)
    x, want = x[keep], want[keep]
    got = run("polygamma", np.full_like(x, m), x, dtype=dtype)
    floor = _polygamma_floor(m, x) if dtype == F64 else None
    err = ulp_error(got, want, dtype, floor)
    worst = int(np.argmax(err))
    # float64: ours is within 4 ulp of mpmath (module docstring); SciPy's zeta rounds each
    # q + k before raising it to the power -(m + 1), which costs it up to ~(m + 1) ulp more
    bound = BOUNDS[dtype]["polygamma"] + (2 * (m + 1) if dtype == F64 else 0)
    assert err[worst] <= bound, (
        f"polygamma({m}, {x[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp")


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_erf_inv_special_values(dtype):
    x = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 0.5, -0.5,
                  np.finfo(dtype).smallest_subnormal], dtype)
    got = run("erf_inv", x, dtype=dtype)
    want = sp.erfinv(x.astype(F64))
    want[1] = -0.0   # JAX keeps the sign of zero (SciPy does not)
    _assert_special("erf_inv", got, want, (x,), dtype, 4)


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_intrinsics(dtype):
    sv = _special_values(dtype)
    a, b = (m.ravel() for m in np.meshgrid(sv, sv))
    for name, ref in [("sqrt", np.sqrt), ("fabs", np.abs), ("floor", np.floor),
                      ("ceil", np.ceil)]:
        with np.errstate(all="ignore"):
            _assert_special(name, run(name, sv, dtype=dtype), ref(sv), (sv,), dtype, 0)
    # NaN-propagating minimum/maximum (not minnum/maxnum), with -0 < +0 as JAX orders them
    # (NumPy returns its second operand for equal zeros).
    zeros = (a == 0) & (b == 0)
    lo = np.where(zeros, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), np.minimum(a, b))
    hi = np.where(zeros, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), np.maximum(a, b))
    for name, ref in [("minimum", lo), ("maximum", hi)]:
        _assert_special(name, run(name, a, b, dtype=dtype), ref, (a, b), dtype, 0)
    # fma rounds once: (1 + e)**2 - (1 + 2e) = e*e survives only when fused.
    e = 2.0 ** -12 if dtype == F32 else 2.0 ** -27
    got = run("fma", [1 + e, np.nan, np.inf, 2.0], [1 + e, 1.0, 0.0, 3.0], [-(1 + 2 * e), 1.0,
              1.0, -np.inf], dtype=dtype)
    np.testing.assert_array_equal(got, np.array([e * e, np.nan, np.nan, -np.inf], dtype))


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_minmax_compares_and_selects_match_the_intrinsics(monkeypatch, dtype):
    """LLVM 15's form of minimum/maximum (math.minmax without LLVM 17's intrinsics: compares
    and selects, a clamp against a constant in one of each) gives the intrinsics' values on
    every pair of special values, in the vectorised loop and its scalar remainder, on any
    LLVM."""
    monkeypatch.setattr(llmath, "LLVM_17", False)
    ty = ir.FloatType() if dtype == F32 else ir.DoubleType()
    module = ir.Module(name=f"minmax_selects_{dtype.__name__}")
    for name in ("minimum", "maximum"):
        _build_loop(module, f"k_{name}", name, ty, 2)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * 2
                                             + [ir.IntType(64)]), name="k_clamp")
    b = ir.IRBuilder(fn.append_basic_block())
    with _counted_loop(b, fn.args[2]) as i:
        x = b.load(b.gep(fn.args[0], [i]))
        lo = llmath.minmax(b, x, ir.Constant(ty, -104.0), True)
        b.store(llmath.minmax(b, lo, ir.Constant(ty, 88.8), False), b.gep(fn.args[1], [i]))
    b.ret_void()
    assert "llvm.maximum" not in str(module) and "llvm.minimum" not in str(module)
    _, code = jit_engine.compile_ir(str(module))
    sv = _special_values(dtype)
    a, c = (np.ascontiguousarray(m.ravel()) for m in np.meshgrid(sv, sv))
    zeros = (a == 0) & (c == 0)
    want = {"minimum": np.where(zeros, np.where(np.signbit(a) | np.signbit(c), -0.0, 0.0),
                                np.minimum(a, c)),
            "maximum": np.where(zeros, np.where(np.signbit(a) & np.signbit(c), -0.0, 0.0),
                                np.maximum(a, c))}
    i64 = ctypes.c_int64
    for name, ref in want.items():
        out = np.empty_like(a)
        ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, i64)(code.address(f"k_{name}"))(
            a.ctypes.data, c.ctypes.data, out.ctypes.data, a.size)
        _assert_special(name, out, ref, (a, c), dtype, 0)
    out = np.empty_like(a)
    ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 2, i64)(code.address("k_clamp"))(
        a.ctypes.data, out.ctypes.data, a.size)
    _assert_special("clamp", out, np.clip(a, dtype(-104.0), dtype(88.8)), (a,), dtype, 0)


@contextlib.contextmanager
def _counted_loop(b, n):
    """`for i in range(n)` (n > 0 assumed: the special values) around the body's code."""
    i64 = ir.IntType(64)
    pre, loop, done = b.block, b.append_basic_block("loop"), b.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), pre)
    yield i
    nxt = b.add(i, i64(1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)


def test_exp_loop_vectorises():
    """The whole point of branch-free polynomials: a loop calling exp uses vector registers."""
    ir_text, _ = _compiled()
    body = ir_text[re.search(r'define void @"?k_exp_float32"?\(', ir_text).start():]
    body = body[:body.index("\n}\n")]
    assert "<16 x float>" in body or "<8 x float>" in body
    assert "@exp" not in body and "@llvm.exp" not in body


def test_exp_scalef_and_two_multiplies_agree(monkeypatch):
    """float32 exp scales by 2**n with llvm.ldexp (one vscalefps) on AVX-512 hosts and with
    two multiplies elsewhere: both round once, so they agree bit for bit, at the subnormal and
    overflow edges too (each path compiled here, whichever the host takes)."""
    ir_text, _ = _compiled()
    body = ir_text[re.search(r'define void @"?k_exp_float32"?\(', ir_text).start():]
    assert ("@llvm.ldexp" in body[:body.index("\n}\n")]) == llmath._has_scalef()
    if not llmath.LLVM_17:
        pytest.skip("llvm.ldexp is LLVM 17's: this LLVM has only the two multiplies' path")
    rng = np.random.default_rng(3)
    x = np.concatenate([lin_sweep(-104.5, -85, N, F32), lin_sweep(87, 89, N // 4, F32),
                        rng.uniform(-110, 90, N).astype(F32), _special_values(F32)])
    outs = []
    for scalef in (False, True):
        monkeypatch.setattr(llmath, "_has_scalef", lambda scalef=scalef: scalef)
        module = ir.Module(name=f"exp_scalef_{scalef}")
        _build_loop(module, "k", "exp", ir.FloatType(), 1)
        if scalef:
            assert "llvm.ldexp" in str(module)
        _, code = jit_engine.compile_ir(str(module))
        out = np.empty_like(x)
        ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
            code.address("k"))(x.ctypes.data, out.ctypes.data, x.size)
        outs.append(out)
    a, b = outs
    assert np.count_nonzero((a > 0) & (a < np.finfo(F32).tiny)) > 1000  # subnormal results
    same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    assert same.all(), list(zip(x[~same][:5], a[~same][:5], b[~same][:5]))


def test_emit_rejects_bad_operands():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.FloatType(), ir.DoubleType(),
                                                              ir.IntType(32)]), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    x32, x64, i = fn.args
    with pytest.raises(ValueError, match="no LLVM math implementation"):
        llmath.emit(b, "gamma", x32)
    with pytest.raises(TypeError, match="takes 2 operand"):
        llmath.emit(b, "pow", x32)
    with pytest.raises(TypeError, match="one type"):
        llmath.emit(b, "pow", x32, x64)
    with pytest.raises(TypeError, match="float32 or float64"):
        llmath.emit(b, "exp", i)


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [8, 8192], ids=["scalar_code", "vectorised"])
def test_a_function_used_many_times_is_defined_once_and_inlined(dtype, n):
    """emit calls the module's one function per math function, type and variant (its body
    built once), which LLVM inlines at every call -- but scalar code's sin, used more than once,
    which stays one function called from each use: the same bits as a kernel using it once
    (`run`), no other call left, and vector code where the loop is long enough."""
    import tracejit
    import tracejit.numpy as jnp
    from tracejit.backend.llvm import codegen
    tracejit.config.update("jax_enable_x64", dtype == F64)  # (conftest restores it)
    x = np.linspace(-40, 40, n).astype(dtype)
    ks, fns = (1, 2, 3, 5, 7), {"sin": jnp.sin, "exp": jnp.exp, "tanh": jnp.tanh}
    f = tracejit.jit(lambda x: [fn(x * k) for k in ks for fn in fns.values()])
    outs = f(x)
    compiled = f.lower(x).compile()
    text = compiled._executable.program.ir_text
    vector = n >= codegen.INLINE_SLOW_PATH_MIN_ELEMENTS
    width = np.dtype(dtype).itemsize * 8
    for name in fns:
        symbol = f"tracejit.math.{name}.f{width}{'.vector' if vector and name == 'sin' else ''}"
        assert len(re.findall(rf'^define internal .*@"{re.escape(symbol)}"\(', text,
                              re.MULTILINE)) == 1, symbol
        assert text.count(f'@"{symbol}"(') == 1 + len(ks), symbol   # (one call a use)
    optimised = compiled.as_text("llvm")
    left = set(re.findall(r'@"?tracejit\.math\.(\w+)\.', optimised))
    assert left == (set() if vector else {"sin"})  # (no other call nor definition left)
    assert bool(re.search(r"<\d+ x (float|double)>", optimised)) == vector
    got = iter(outs)
    for k in ks:
        for name in fns:
            want = run(name, x * dtype(k), dtype=dtype,
                       inline_slow_paths=vector and name == "sin")
            np.testing.assert_array_equal(np.asarray(next(got)), want, err_msg=f"{name} {k}")


def test_float32_tables_are_the_fitters_output():
    """The float32 polynomial tables (math.py's Bessel, lgamma, digamma; scipy/special.py's
    erfcx, ndtri) are what tools/fit_polynomials.py fits: a table edited by hand, or a fit changed
    without its table, fails here (within the fits' last-bit noise across BLAS kernels)."""
    import importlib.util
    import pathlib

    from tracejit.scipy import special
    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "fit_polynomials.py"
    spec = importlib.util.spec_from_file_location("fit_polynomials", path)
    fitter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fitter)
    tables = {**fitter.erfcx_tables(), **fitter.bessel_tables(), **fitter.lgamma_tables(),
              **fitter.digamma_tables(), **fitter.ndtri_tables()}
    assert len(tables) == 18
    for name, fitted in tables.items():
        ours = getattr(special if name.startswith(("_ERFCX", "_NDTRI")) else llmath, name)
        np.testing.assert_allclose(ours, fitted, rtol=1e-9, atol=1e-13, err_msg=name)
    assert fitter.LGAMMA_MIN_X == llmath._LGAMMA32_X0
