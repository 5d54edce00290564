"""lax elementwise primitives: against NumPy/SciPy (IEEE semantics, subnormals included) and
against jax.lax on the same inputs (XLA's rules for integer division, shifts, conversions and
special values), plus dtype and weak-type rules, error classes, and jit against eager.

XLA's CPU backend flushes float32/float64 subnormals to zero, so the JAX comparisons leave out
elements whose inputs or exact results are subnormal; the NumPy comparisons cover them for the
exact operations. Transcendental functions follow XLA's CPU algorithms, subnormals-as-zero
included, so their NumPy comparisons leave subnormals out too.
"""
import inspect
import itertools
import math
import re

import jax
import numpy as np
import pytest
import scipy.special as sp
from tolerance import EXACT_WIDTHS, NATIVE_ULPS, assert_jit_matches_eager, math_ulps

import tracejit
from tracejit import lax
from tracejit.lax import elementwise as E

jlax = jax.lax

# every eager evaluation here must be free of NumPy warnings (impls wrap IEEE cases quietly)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning:tracejit")

DTYPES = ["bool", "int8", "int32", "uint8", "uint32", "float16", "float32"]
DTYPES_X64 = ["int64", "uint64", "float64"]


def special_values(dtype) -> np.ndarray:
    """Edge cases of a dtype: NaN, ±inf, ±0, subnormals, extremes, rounding ties; int extremes
    and shift widths."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind in "iu":
        info, bits = np.iinfo(dtype), dtype.itemsize * 8
        v = {info.min, info.min + 1, 0, 1, 2, 3, 7, bits - 1, bits, bits + 1, info.max - 1,
             info.max}
        if dtype.kind == "i":
            v |= {-1, -2, -7, -bits}
        return np.array(sorted(v), dtype)
    info = np.finfo(dtype)
    v = [np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal, -3 * info.smallest_subnormal,
         info.tiny, -info.tiny, info.max, -info.max, info.eps, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5,
         -2.5, 0.49999997, 3.7, -0.3, 7.0, -7.0, 100.0, 1e3]
    with np.errstate(all="ignore"):
        return np.array(v, dtype)


def pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    v = special_values(dtype)
    x, y = np.meshgrid(v, v, indexing="ij")
    return x.ravel(), y.ravel()


def subnormal(a: np.ndarray) -> np.ndarray:
    """Where XLA's CPU backend would flush to zero (float32/float64 subnormals)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" or a.dtype == np.float16:
        return np.zeros(a.shape, bool)
    return (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)


def assert_same(actual, expected, ulps: float = 0, atol: float = 0, mask=None, what=""):
    """Same dtype and shape; equal values with NaN == NaN and signed zeros distinguished, or
    within `ulps` units in the last place (+ atol) of `expected`; only where `mask` is set."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if mask is not None:
        actual, expected = actual[mask], expected[mask]
    if actual.dtype.kind == "c":
        for part in (np.real, np.imag):
            assert_same(part(actual), part(expected), ulps, atol, what=what)
        return
    if actual.dtype.kind != "f":
        bad = actual != expected
    else:
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        with np.errstate(all="ignore"):
            exact = (a == e) & ((np.signbit(a) == np.signbit(e)) | (ulps > 0))
            spacing = np.spacing(np.abs(expected)).astype(np.float64)
            close = np.isfinite(e) & (np.abs(a - e) <= ulps * spacing + atol)
        bad = ~(exact | close | (np.isnan(a) & np.isnan(e)))
    assert not bad.any(), (f"{what}: mismatches at {np.flatnonzero(bad)[:8]}: got "
                           f"{actual[bad][:8]}, expected {expected[bad][:8]}")


def flushed(shape, *arrays) -> np.ndarray:
    """Where any of `arrays` (inputs, exact result) is a float32/float64 subnormal."""
    out = np.zeros(shape, bool)
    for a in arrays:
        out |= np.broadcast_to(subnormal(a), shape)
    return out


def check_against_jax(ours, theirs, inputs, ref=None, ulps=0, atol=0, what=""):
    """dtype and weak type as JAX's; values as JAX's away from subnormals."""
    theirs_np = np.asarray(theirs)
    assert ours.dtype == theirs_np.dtype and ours.weak_type == theirs.weak_type, \
        (what, ours.dtype, ours.weak_type, theirs_np.dtype, theirs.weak_type)
    skip = flushed(theirs_np.shape, *inputs, *([ref] if ref is not None else []))
    assert_same(ours, theirs_np, ulps, atol, mask=~skip, what=what)


# --- reference tables ----------------------------------------------------------------------
# Exact operations: the reference is NumPy at the operand dtype (XLA's rule where NumPy's differs).


def _xla_sign(x):
    return np.where(x == 0, x, np.sign(x))  # ±0.0 and NaN pass through


def _clz_ref(x):
    bits = x.dtype.itemsize * 8
    unsigned = x.astype(f"u{x.dtype.itemsize}")
    return np.array([bits - int(v).bit_length() for v in unsigned.ravel()],
                    x.dtype).reshape(x.shape)


EXACT_UNARY = {
    "neg": np.negative, "sign": _xla_sign, "abs": np.abs, "square": np.square,
    "floor": np.floor, "ceil": np.ceil, "is_finite": np.isfinite, "bitwise_not": np.invert,
    # NumPy's bitwise_count counts |x|; XLA counts the two's complement bits
    "population_count": lambda x: np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(
        x.dtype), "clz": _clz_ref,
}


def _f64(fn):
    """A transcendental reference: evaluated in float64, rounded to the operand dtype."""
    def ref(x):
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)
    return ref


def _xla_lgamma(x):
    return np.where(x == -np.inf, np.inf, sp.gammaln(x))  # C99's lgamma(-inf) = +inf


def _xla_digamma(x):
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, sp.psi(x))  # poles are NaN


FLOAT_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
    "tanh": np.tanh, "logistic": sp.expit, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "erf": sp.erf, "erfc": sp.erfc,
    "erf_inv": sp.erfinv, "lgamma": _xla_lgamma, "digamma": _xla_digamma,
    "bessel_i0e": sp.i0e, "bessel_i1e": sp.i1e,
}


def _wrap(values, dtype) -> np.ndarray:
    """Python ints reduced modulo 2**bits into `dtype` (two's complement)."""
    dtype = np.dtype(dtype)
    bits = 8 * dtype.itemsize
    return np.array([v % (1 << bits) for v in values], f"u{dtype.itemsize}").view(dtype)


def _trunc_div(x, y):
    """XLA's integer division: truncates; x / 0 == -1; INT_MIN / -1 == INT_MIN."""
    def div(a, b):
        q = abs(a) // abs(b) if b else -1
        return q if b == 0 or (a < 0) == (b < 0) else -q
    return _wrap([div(a, b) for a, b in zip(x.tolist(), y.tolist())], x.dtype)


def _trunc_rem(x, y):
    """XLA's integer remainder: the sign of x; x % 0 == x."""
    def rem(a, b):
        r = abs(a) % abs(b) if b else abs(a)
        return r if a >= 0 else -r
    return _wrap([rem(a, b) for a, b in zip(x.tolist(), y.tolist())], x.dtype)


def _ordered_max(x, y):
    """XLA's max: NaN-propagating, and -0.0 < +0.0."""
    if x.dtype.kind != "f":
        return np.maximum(x, y)
    both_zero = (x == 0) & (y == 0)
    return np.where(both_zero, np.where(np.signbit(x), y, x), np.maximum(x, y))


def _ordered_min(x, y):
    if x.dtype.kind != "f":
        return np.minimum(x, y)
    both_zero = (x == 0) & (y == 0)
    return np.where(both_zero, np.where(np.signbit(x), x, y), np.minimum(x, y))


def _nextafter(x, y):
    return np.where(x == y, y, np.nextafter(x, y))  # C99: y when x == y (NumPy's float16: x)


def _shift(kind):
    """XLA's shifts: amounts are unsigned; shifting out all bits gives 0 (or the sign)."""
    def ref(x, y):
        bits = x.dtype.itemsize * 8
        out = []
        for a, s in zip(x.tolist(), y.astype(f"u{x.dtype.itemsize}").tolist()):
            signed = a - (1 << bits) if a >= 1 << (bits - 1) else a  # the bits, as signed
            if kind == "left":
                out.append(0 if s >= bits else (a << s) & ((1 << bits) - 1))
            elif kind == "logical":
                out.append(0 if s >= bits else (a & ((1 << bits) - 1)) >> s)
            else:
                out.append(signed >> min(s, bits - 1))
        return _wrap(out, x.dtype)
    return ref


def _int_or_float(int_ref, float_ref):
    return lambda x, y: int_ref(x, y) if x.dtype.kind in "iu" else float_ref(x, y)


EXACT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": _int_or_float(_trunc_div, np.divide), "rem": _int_or_float(_trunc_rem, np.fmod),
    "max": _ordered_max, "min": _ordered_min, "nextafter": _nextafter,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "shift_left": _shift("left"),
    "shift_right_logical": _shift("logical"), "shift_right_arithmetic": _shift("arithmetic"),
}
FLOAT_BINARY = {"pow": np.power, "atan2": np.arctan2}
COMPLEX_PRIMS = {"real", "imag", "conj", "complex"}

# ulps: against a float64 reference (our NumPy impls), and against XLA's own approximations
ULPS_NUMPY = {np.dtype(np.float16): 1, np.dtype(np.float32): 4, np.dtype(np.float64): 4}
ULPS_JAX = {np.dtype(np.float16): 2, np.dtype(np.float32): 32, np.dtype(np.float64): 32}
ATOL_JAX = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-6}


def _plain_elementwise_functions() -> set[str]:
    """lax's elementwise functions of one or two operands and nothing else (`not_` is
    `bitwise_not`; the others skipped take a static parameter or work on pytrees, and have
    tests of their own; log2 is tested in test_lax_jax012.py). JAX's keyword-only `accuracy=`
    option of the transcendental functions does not count as a parameter."""
    out = set()
    for name in E.__all__:
        f = getattr(E, name)
        if not inspect.isfunction(f) or name in ("not_", "stop_gradient", "integer_pow",
                                                 "bitcast_convert_type", "polygamma", "log2"):
            continue
        params = [p for p in inspect.signature(f).parameters.values()
                  if not (p.name == "accuracy" and p.kind is p.KEYWORD_ONLY)]
        if len(params) in (1, 2) and all(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
                                         for p in params):
            out.add(name)
    return out


def test_tables_cover_every_elementwise_primitive():
    tabled = set(EXACT_UNARY) | set(FLOAT_UNARY) | set(EXACT_BINARY) | set(FLOAT_BINARY)
    assert _plain_elementwise_functions() == tabled | COMPLEX_PRIMS


def test_native_ulp_table_covers_math_docstring():
    """tests/tolerance.py's NATIVE_ULPS bounds jit against eager by the native backend's own
    documented errors: it must cover every row of math.py's table, rounded up."""
    from tracejit.backend.llvm import math as native_math
    rows = re.findall(r"^ {4}(\w+) +([\d.]+|-) +([\d.]+|-)", native_math.__doc__, re.MULTILINE)
    assert len(rows) > 20
    for name, *figures in rows:
        for bound, figure, f32 in zip(NATIVE_ULPS.get(name, (0, 0)), figures, (True, False)):
            if figure == "-" or f32 and 4 in EXACT_WIDTHS.get(name, ()):
                continue  # XLA's algorithms, which eager runs too: jit and eager agree exactly
            assert bound >= math.ceil(float(figure)), (name, "f32" if f32 else "f64")


def test_jit_tolerance_counts_ulps_at_the_scale():
    e = np.array([1.0, -0.0, 0.0, np.nan, np.inf, 1e-30], np.float32)
    up3 = e.copy()
    up3[0] = np.nextafter(np.nextafter(np.nextafter(e[0], 2), 2), 2)
    assert_jit_matches_eager(up3, e, ulps=3)
    with pytest.raises(AssertionError):
        assert_jit_matches_eager(up3, e, ulps=2)
    for bad in (-e, np.where(np.isnan(e), 0, e)):   # signed zeros, NaN and inf must match
        with pytest.raises(AssertionError):
            assert_jit_matches_eager(bad.astype(np.float32), e, ulps=3)
    near_zero = e.copy()
    near_zero[-1] = 2e-7   # a result that cancels: ulps of the operands' magnitude, 1.0
    assert_jit_matches_eager(near_zero, e, ulps=2, scale=1.0)
    with pytest.raises(AssertionError):
        assert_jit_matches_eager(near_zero, e, ulps=1, scale=1.0)


def _jax_accepts(fn, *args) -> bool:
    try:
        jax.eval_shape(fn, *args)
    except TypeError:
        return False
    return True


def _run_unary(name, ref, dtype, ulps_numpy):
    x = special_values(dtype)
    ours_fn, jax_fn = getattr(lax, name), getattr(jlax, name)
    if not _jax_accepts(jax_fn, x):
        with pytest.raises(TypeError):
            ours_fn(x)
        return
    with np.errstate(all="ignore"):
        expected = ref(x)
    ours = ours_fn(x)
    dt = np.dtype(dtype)
    mask = ~flushed(x.shape, x, expected) if ulps_numpy else None
    assert_same(ours, expected, ulps_numpy.get(dt, 0), mask=mask, what=f"{name}({dt}) vs NumPy")
    loose = dt.kind == "f" and ulps_numpy.get(dt, 0) > 0
    check_against_jax(ours, jax_fn(x), [x], expected, ULPS_JAX[dt] if loose else 0,
                      ATOL_JAX[dt] if loose else 0, what=f"{name}({dt}) vs JAX")
    assert_jit_matches_eager(tracejit.jit(ours_fn)(x), ours,
                             ulps=math_ulps(name, dt) if loose else 0,
                             scale=_reflection_scale(name, x), what=f"jit {name}({dt})")


def _reflection_scale(name, x):
    """lgamma and digamma at x < 0 are log(pi / |sin(pi x)|) - lgamma(1 - x) and digamma(1 - x)
    - pi cot(pi x), which cancel near their zeros: the error counts in the larger of the two
    terms there (math.py's table)."""
    if name not in ("lgamma", "digamma"):
        return None
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = np.pi * (x - np.rint(x))
        terms = (np.maximum(np.abs(sp.gammaln(1 - x)), np.abs(np.log(np.pi / np.abs(np.sin(r)))))
                 if name == "lgamma" else
                 np.maximum(np.abs(sp.psi(1 - x)), np.abs(np.pi / np.tan(r))))
    return np.where(x < 0, np.nan_to_num(np.maximum(terms, 1.0)), 0.0)


@pytest.mark.parametrize("name", sorted(EXACT_UNARY))
def test_exact_unary(name):
    for dtype in DTYPES:
        _run_unary(name, EXACT_UNARY[name], dtype, {})


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary(name):
    for dtype in DTYPES:
        _run_unary(name, _f64(FLOAT_UNARY[name]), dtype, ULPS_NUMPY)


def _run_binary(name, ref, dtype, ulps_numpy):
    x, y = pairs(dtype)
    ours_fn, jax_fn = getattr(lax, name), getattr(jlax, name)
    if not _jax_accepts(jax_fn, x, y):
        with pytest.raises(TypeError):
            ours_fn(x, y)
        return
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(x, y))
    ours = ours_fn(x, y)
    dt = np.dtype(dtype)
    ulps = ulps_numpy.get(dt, 0)
    mask = ~flushed(x.shape, x, y, expected) if ulps_numpy else None
    assert_same(ours, expected, ulps, mask=mask, what=f"{name}({dt}) vs NumPy")
    check_against_jax(ours, jax_fn(x, y), [x, y], expected, ULPS_JAX[dt] if ulps else 0,
                      ATOL_JAX[dt] if ulps else 0, what=f"{name}({dt}) vs JAX")
    assert_jit_matches_eager(tracejit.jit(ours_fn)(x, y), ours,
                             ulps=math_ulps(name, dt) if ulps else 0, what=f"jit {name}({dt})")


@pytest.mark.parametrize("name", sorted(EXACT_BINARY))
def test_exact_binary(name):
    for dtype in DTYPES:
        _run_binary(name, EXACT_BINARY[name], dtype, {})


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary(name):
    ref = FLOAT_BINARY[name]
    for dtype in DTYPES:
        _run_binary(name, lambda x, y: ref(x.astype(np.float64), y).astype(x.dtype), dtype,
                    ULPS_NUMPY)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "rem", "max", "min", "eq", "lt",
                                  "bitwise_and", "shift_left", "shift_right_logical",
                                  "shift_right_arithmetic", "nextafter"])
def test_binary_x64(name, x64):
    for dtype in DTYPES_X64:
        _run_binary(name, EXACT_BINARY[name], dtype, {})


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "floor", "population_count", "clz",
                                  "bitwise_not"])
def test_unary_x64(name, x64):
    for dtype in DTYPES_X64:
        _run_unary(name, EXACT_UNARY[name], dtype, {})


def test_integer_division_by_zero_and_overflow():
    """XLA's rules, independently of the table: x / 0 == -1, x % 0 == x, INT_MIN / -1 ==
    INT_MIN, INT_MIN % -1 == 0 (unsigned: x / 0 is all ones)."""
    for dtype in ["int8", "int32", "uint8", "uint32"]:
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, 5, 0], dtype)
        zero = np.zeros(4, dtype)
        assert_same(lax.div(x, zero), np.full(4, -1).astype(dtype), what=dtype)
        assert_same(lax.rem(x, zero), x, what=dtype)
        assert_same(lax.div(x, zero), np.asarray(jlax.div(x, zero)), what=dtype)
        assert_same(lax.rem(x, zero), np.asarray(jlax.rem(x, zero)), what=dtype)
        if info.min < 0:
            m, minus_one = np.array([info.min], dtype), np.array([-1], dtype)
            assert_same(lax.div(m, minus_one), m)
            assert_same(lax.rem(m, minus_one), np.zeros(1, dtype))


def test_shifts_by_out_of_range_amounts():
    """Shifting by the bit width, more, or a negative amount: 0 (left, logical) or the sign."""
    x = np.array([-8, 8, -1, 1, 127, -128], np.int8)
    for s in [8, 9, 100, -1, -8, 127]:
        amount = np.full(6, s, np.int8)
        assert_same(lax.shift_left(x, amount), np.zeros(6, np.int8))
        assert_same(lax.shift_right_logical(x, amount), np.zeros(6, np.int8))
        assert_same(lax.shift_right_arithmetic(x, amount), np.where(x < 0, -1, 0).astype(np.int8))
        for fn in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
            assert_same(getattr(lax, fn)(x, amount), np.asarray(getattr(jlax, fn)(x, amount)))


def _away_from_zero(x):
    x64 = x.astype(np.float64)  # exact: the fractional part of a float32/float16 is
    r = np.trunc(x64)
    return np.where(np.abs(x64 - r) >= 0.5, r + np.sign(x64), r).astype(x.dtype)


@pytest.mark.parametrize("method", [0, 1])
def test_round(method):
    ref = _away_from_zero if method == 0 else np.round
    for dtype in DTYPES:
        x = special_values(dtype)
        if not _jax_accepts(lambda a: jlax.round(a, method), x):
            with pytest.raises(TypeError):
                lax.round(x, method)
            continue
        with np.errstate(all="ignore"):
            expected = ref(x)
        ours = lax.round(x, method)
        assert_same(ours, expected, what=f"round({dtype}, {method})")
        check_against_jax(ours, jlax.round(x, method), [x], expected)
    assert lax.RoundingMethod.AWAY_FROM_ZERO == 0 and lax.RoundingMethod.TO_NEAREST_EVEN == 1


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, 7, 13, -1, -2, -3])
def test_integer_pow(y):
    for dtype in DTYPES:
        x = special_values(dtype)
        if not _jax_accepts(lambda a: jlax.integer_pow(a, y), x):
            with pytest.raises(TypeError):
                lax.integer_pow(x, y)
            continue
        ours = lax.integer_pow(x, y)
        dt = np.dtype(dtype)
        if dt.kind in "iu":  # wraps modulo 2**bits, like Python ints reduced
            mod = 1 << (8 * dt.itemsize)
            assert_same(ours, _wrap([pow(v, y, mod) for v in x.tolist()], dt))
        else:  # NumPy's power at the dtype (intermediates overflow there, as in XLA)
            with np.errstate(all="ignore"):
                expected = 1 / np.power(x, -y) if y < 0 else np.power(x, y)
            # repeated squaring rounds at each step, as XLA's expansion does
            assert_same(ours, expected, ulps=2 * abs(y) + 1, what=f"{dt}**{y}")
        check_against_jax(ours, jlax.integer_pow(x, y), [x], ours if dt.kind == "f" else None,
                          ulps=1 if dt.kind == "f" else 0, what=f"integer_pow {dt} {y}")


def _convert_ref(x, dtype):
    """NumPy's astype, except float -> int saturates and maps NaN to 0 (XLA)."""
    dtype = np.dtype(dtype)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = [0 if np.isnan(v) else info.min if v <= info.min else info.max
               if v >= info.max else int(v) for v in x.tolist()]
        return np.array(out, dtype)
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def test_convert_element_type():
    for src, dst in itertools.product(DTYPES, DTYPES):
        x = special_values(src)
        ours = lax.convert_element_type(x, dst)
        expected = _convert_ref(x, dst)
        assert_same(ours, expected, what=f"{src}->{dst}")
        check_against_jax(ours, jlax.convert_element_type(x, dst), [x], expected,
                          what=f"{src}->{dst}")
        assert_same(tracejit.jit(lambda a: lax.convert_element_type(a, dst))(x), expected)


def test_convert_saturation_x64(x64):
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0**63, -2.0**63, 2.0**64, 3.7, -3.7])
    for dst in ["int8", "int32", "int64", "uint8", "uint32", "uint64"]:
        ours = lax.convert_element_type(x, dst)
        assert_same(ours, _convert_ref(x, dst), what=dst)
        check_against_jax(ours, jlax.convert_element_type(x, dst), [x], what=dst)


@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32", "float64"])
def test_convert_float_to_int_vectorised_at_the_bounds(src, x64):
    """Float -> int under jit over 2^13 elements (a vectorised loop): each integer type's
    bounds and the floats either side of them, halves, NaN and infinities, against the
    saturating reference."""
    import ml_dtypes
    src = np.dtype(ml_dtypes.bfloat16) if src == "bfloat16" else np.dtype(src)
    info = ml_dtypes.finfo(src)
    edges = [0.0, 0.5, -0.5, 0.99, -0.99, 1.0, -1.0, 1.5, -1.5, 2.5, float(info.max),
             -float(info.max), np.inf, -np.inf, np.nan]
    for bits in (8, 16, 32, 64):
        for e in (2.0 ** (bits - 1), -2.0 ** (bits - 1), 2.0 ** bits):
            edges.extend([e, e * 1.5, e / 1.5])
    with np.errstate(all="ignore"):
        x = np.array(edges, np.float64).astype(src)
        x = np.concatenate([x, np.nextafter(x, np.inf).astype(src) if src.itemsize >= 4
                            else x, -x])
    x = np.tile(x, -(-8192 // len(x)))[:8192]
    for dst in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        got = tracejit.jit(lambda a: lax.convert_element_type(a, dst))(x)
        # (the reference from the same values in float64: NumPy has no bfloat16 kind "f")
        assert_same(got, _convert_ref(x.astype(np.float64), dst), what=f"{src}->{dst}")


def test_convert_weak_type_and_passthrough():
    x = np.arange(3, dtype=np.float32)
    weak = lax.convert_element_type(x, np.float32, weak_type=True)
    assert weak.weak_type and weak.dtype == np.float32
    strong = lax.convert_element_type(2.0, np.float32)
    assert not strong.weak_type and strong.weak_type == jlax.convert_element_type(
        2.0, np.float32).weak_type
    # a NumPy operand of the target dtype still comes back as an Array
    assert isinstance(lax.convert_element_type(x, np.float32), tracejit.Array)


BITCAST_CASES = [("int32", "float32"), ("float32", "uint32"), ("uint8", "int8"),
                 ("float16", "int16"), ("float32", "uint8"), ("int32", "int16"),
                 ("uint8", "float32"), ("int16", "float32")]


@pytest.mark.parametrize("src,dst", BITCAST_CASES)
def test_bitcast_convert_type(src, dst):
    src, dst = np.dtype(src), np.dtype(dst)
    x = special_values(src)
    if src.itemsize < dst.itemsize:  # the last axis is gathered into one wider element
        x = x[: len(x) // 4 * 4].reshape(-1, dst.itemsize // src.itemsize)
    ours = lax.bitcast_convert_type(x, dst)
    expected = np.ascontiguousarray(x).view(dst)
    if src.itemsize > dst.itemsize:
        expected = expected.reshape(x.shape + (src.itemsize // dst.itemsize,))
    elif src.itemsize < dst.itemsize:
        expected = expected.reshape(x.shape[:-1])

    def bits(a):  # compare bit patterns: NaN payloads included
        return np.asarray(a).view(f"u{dst.itemsize}")
    assert_same(bits(ours), bits(expected))
    assert_same(bits(ours), bits(jlax.bitcast_convert_type(x, dst)))
    assert_same(bits(tracejit.jit(lambda a: lax.bitcast_convert_type(a, dst))(x)), bits(ours))


def test_bitcast_scalar():
    scalar = lax.bitcast_convert_type(np.float32(1.0), np.int32)
    assert scalar.shape == () and int(scalar) == 0x3F800000


def test_bitcast_errors_match_jax():
    for x, dst in [(np.array([True]), np.int8), (np.array([1], np.int8), np.bool_),
                   (np.array([1, 2], np.int8), np.int32), (np.ones(3, np.int8), np.int16)]:
        with pytest.raises(Exception) as theirs:
            jlax.bitcast_convert_type(x, dst)
        with pytest.raises(theirs.type):
            lax.bitcast_convert_type(x, dst)


def test_select_n_and_select():
    rng = np.random.default_rng(0)
    cases = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    which = np.array([0, 1, 2, 2, 1, 0], np.int32)
    assert_same(lax.select_n(which, *cases), np.choose(which, cases))
    assert_same(lax.select_n(which, *cases), np.asarray(jlax.select_n(which, *cases)))
    pred = np.array([True, False, True, False, True, False])
    assert_same(lax.select_n(pred, cases[0], cases[1]), np.where(pred, cases[1], cases[0]))
    assert_same(lax.select(pred, cases[0], cases[1]), np.where(pred, cases[0], cases[1]))
    assert_same(lax.select(np.True_, cases[0], cases[1]), cases[0])  # scalar predicate
    assert_same(lax.select_n(np.int32(2), *cases), cases[2])
    assert_same(lax.select_n(pred, cases[0]), cases[0])
    jitted = tracejit.jit(lambda p, a, b: lax.select(p, a, b))(pred, cases[0], cases[1])
    assert_same(jitted, np.where(pred, cases[0], cases[1]))
    weak = lax.select(True, 1.0, 2.0)
    assert weak.weak_type == jlax.select(True, 1.0, 2.0).weak_type
    empty = lax.select(np.zeros(0, bool), np.zeros(0, np.float32), np.ones(0, np.float32))
    assert empty.shape == (0,)


@pytest.mark.parametrize("args", [
    (np.ones(3, bool), np.ones(3, np.float32), np.ones(3, np.int32)),  # cases differ in dtype
    (np.ones(3, np.float32), np.ones(3, np.float32), np.ones(3, np.float32)),  # float predicate
    (np.ones(2, bool), np.ones(3, np.float32), np.ones(3, np.float32)),  # predicate shape
])
def test_select_errors_match_jax(args):
    with pytest.raises(TypeError):
        jlax.select(*args)
    with pytest.raises(TypeError):
        lax.select(*args)


def test_clamp():
    x = special_values("float32")
    for lo, hi in [(np.float32(-1), np.float32(2)), (np.full_like(x, -0.5), np.full_like(x, 3))]:
        ours = lax.clamp(lo, x, hi)
        expected = np.minimum(np.maximum(x, lo), hi)  # NaN propagates, like XLA
        assert_same(ours, expected)
        check_against_jax(ours, jlax.clamp(lo, x, hi), [x], expected)
    xi = special_values("int8")
    assert_same(lax.clamp(np.int8(-3), xi, np.int8(5)), np.clip(xi, -3, 5))
    assert lax.clamp(0.0, 2.0, 1.0).weak_type == jlax.clamp(0.0, 2.0, 1.0).weak_type
    with pytest.raises(TypeError):
        jlax.clamp(np.float32(0), np.ones(3, np.int32), np.float32(1))
    with pytest.raises(TypeError):
        lax.clamp(np.float32(0), np.ones(3, np.int32), np.float32(1))


def test_complex_parts():
    re = special_values("float32")
    im = re[::-1].copy()
    z = lax.complex(re, im)
    expected = np.empty(re.shape, np.complex64)
    expected.real, expected.imag = re, im
    assert_same(z, expected)
    assert_same(z, np.asarray(jlax.complex(re, im)))
    assert_same(lax.real(z), re)
    assert_same(lax.imag(z), im)
    assert_same(lax.conj(z), np.conj(expected))
    assert_same(lax.conj(re), np.asarray(jlax.conj(re)))  # real input: imaginary part +0
    assert_same(lax.abs(z), np.abs(expected), ulps=1)
    half = np.float16([1.0, -2.5])
    for fn, arg in [("real", re), ("imag", re), ("conj", half), ("complex", (half, half))]:
        args = arg if isinstance(arg, tuple) else (arg,)
        with pytest.raises(TypeError):
            getattr(jlax, fn)(*args)
        with pytest.raises(TypeError):
            getattr(lax, fn)(*args)


def test_python_scalars_and_weak_types():
    cases = [(lax.add, (2.0, 3.0)), (lax.add, (np.float32(1), 2.0)), (lax.mul, (2, 3)),
             (lax.sub, (np.int32(5), 7)), (lax.eq, (1.0, 2.0)), (lax.lt, (np.float32(1), 2.0)),
             (lax.is_finite, (2.0,)), (lax.neg, (2,)), (lax.population_count, (7,)),
             (lax.max, (True, False)), (lax.shift_left, (np.int32(1), 3)),
             (lax.pow, (2.0, 3.0)), (lax.abs, (-2,)), (lax.sign, (-2.5,))]
    for fn, args in cases:
        ours, theirs = fn(*args), getattr(jlax, fn.__name__)(*args)
        assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type), (fn, args)
        assert_same(ours, np.asarray(theirs))


def test_pow_takes_an_integer_exponent():
    x = np.array([2.0, -2.0, 0.5, 0.0, np.inf], np.float32)
    n = np.array([3, -1, 2, -2, 0], np.int32)
    ours = lax.pow(x, n)
    with np.errstate(divide="ignore"):
        assert_same(ours, np.power(x, n.astype(np.float32)))
    check_against_jax(ours, jlax.pow(x, n), [x])
    with pytest.raises(TypeError):
        jlax.pow(n, x)
    with pytest.raises(TypeError):
        lax.pow(n, x)


def test_rank0_broadcast_and_empty_operands():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(lax.add(x, np.float32(1)), x + 1)
    assert_same(lax.mul(np.float32(2), x), 2 * x)
    assert_same(lax.lt(x, 2.5), x < 2.5)
    e = np.zeros((0, 3), np.float32)
    assert lax.add(e, e).shape == (0, 3) and lax.sin(e).shape == (0, 3)
    assert lax.eq(e, np.float32(0)).shape == (0, 3)
    jitted = tracejit.jit(lambda a, b: lax.add(a, b))(x, np.float32(1))
    assert_same(jitted, x + 1)


@pytest.mark.parametrize("fn,args", [
    ("add", (np.ones(3, np.float32), np.ones(3, np.int32))),  # lax does not promote
    ("add", (np.ones(3, np.float32), np.ones(4, np.float32))),  # incompatible shapes
    ("add", (np.ones(3, bool), np.ones(3, bool))),
    ("sub", (np.ones(3, bool), np.ones(3, bool))),
    ("bitwise_and", (np.ones(3, np.float32), np.ones(3, np.float32))),
    ("shift_left", (np.ones(3, np.float32), np.ones(3, np.float32))),
    ("sin", (np.ones(3, np.int32),)),
    ("floor", (np.ones(3, np.int32),)),
    ("abs", (np.ones(3, np.uint8),)),
    ("nextafter", (np.ones(3, np.int32), np.ones(3, np.int32))),
    ("clz", (np.ones(3, np.float32),)),
])
def test_errors_match_jax(fn, args):
    with pytest.raises(TypeError):
        getattr(jlax, fn)(*args)
    with pytest.raises(TypeError):
        getattr(lax, fn)(*args)


BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter", "eq", "ne",
          "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
          "shift_right_logical", "shift_right_arithmetic"]
SCALAR_PAIRS = [(1, 1.0), (1.0, 1), (1, 1j), (2.0, 1j), (np.float32(1), 1), (np.int8(2), 1),
                (np.float16(1), 1.0), (np.ones(2, np.float32), 2), (np.int32(3), 1.5),
                (1, 1), (1.0, 2.0), (np.float32(1), 2.0), (np.int32(3), 2), (True, False)]


@pytest.mark.parametrize("fn", BINARY)
def test_python_scalars_keep_their_own_dtype_as_in_jax(fn):
    """lax does not promote Python scalars either: each is a weak value of its own default
    dtype, so lax.add(1, 1.0) raises JAX's TypeError (its text, tip included), while the
    jnp functions keep promoting."""
    for args in SCALAR_PAIRS:
        try:
            expected = getattr(jlax, fn)(*args)
        except TypeError as e:
            with pytest.raises(TypeError) as ours:
                getattr(lax, fn)(*args)
            if "same dtypes" in str(e):
                assert str(ours.value) == str(e), args
            continue
        got = getattr(lax, fn)(*args)
        assert (got.dtype, got.weak_type) == (expected.dtype, expected.weak_type), args
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
        traced = tracejit.jit(lambda a, b: getattr(lax, fn)(a, b))(*args)
        np.testing.assert_allclose(np.asarray(traced), np.asarray(expected), rtol=1e-6)
    import tracejit.numpy as tnp
    np.testing.assert_array_equal(tnp.add(1, 1.0), jax.numpy.add(1, 1.0))
    assert tnp.multiply(np.float16(2), 3.0).dtype == np.float16


def test_integer_pow_errors_match_jax():
    with pytest.raises(TypeError):
        jlax.integer_pow(np.int32(3), -1)
    with pytest.raises(TypeError, match="negative powers"):
        lax.integer_pow(np.int32(3), -1)
    with pytest.raises(TypeError):
        lax.integer_pow(np.float32(3), "2")


def test_impl_dtypes_match_abstract_eval():
    """Each impl returns exactly the dtype its abstract eval promises (eager evaluation would
    otherwise cast silently)."""
    from tracejit.core.avals import ShapedArray
    from tracejit.core.primitive import registry
    for name, dtype in itertools.product(sorted(_plain_elementwise_functions()), DTYPES):
        prim = registry[name.removeprefix("bitwise_")]
        nargs = len(inspect.signature(getattr(E, name)).parameters)
        args = [special_values(dtype)[:2]] * nargs
        try:
            (aval,) = prim.abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in args])
        except TypeError:  # a dtype the op rejects
            continue
        with np.errstate(all="ignore"):
            out = np.asarray(prim.impl(*args))
        assert out.dtype == aval.dtype and out.shape == aval.shape, (prim, dtype)


def test_strictness_is_the_entry_not_the_callers_file():
    """Public lax is strict wherever it is called from (even code whose file lies inside the
    package); the package's own entry, lax/lenient.py, takes Python scalars at the other
    operand's dtype and is otherwise lax's namespace."""
    import os

    from tracejit.lax import lenient
    inside = os.path.join(os.path.dirname(tracejit.__file__), "numpy", "_fake.py")
    code = compile("lax.add(1, 1.0)", inside, "eval")
    with pytest.raises(TypeError, match="same dtypes"):
        eval(code, {"lax": lax})
    x = tracejit.numpy.ones(3, tracejit.numpy.bfloat16)
    assert lenient.mul(x, 2).dtype == x.dtype and lenient.add(1, 1.0).dtype == np.float32
    with pytest.raises(TypeError, match="same dtypes"):
        lax.mul(x, 2)
    assert lenient.cond is lax.cond and lenient.add_p is lax.add_p
    assert lax.add.__doc__ == lenient.add.__doc__ and lax.add.__name__ == "add"
