"""How far `jit(f)(x)` may be from eager `f(x)`: the one place tests get that tolerance from.

Eager ops run the NumPy impls of tracejit/lax; jit runs the configured backend. On the reference
interpreter that is the same NumPy code, so every helper here asks for bit-exact results. The
native backend (tracejit/backend/llvm) is bit-exact for IEEE-exact operations (add, mul, div,
sqrt, compares, select, abs, floor, convert, min/max, shape ops, integers) and differs from
eager only where the two compute differently:
- transcendental functions: native evaluates its own polynomials (backend/llvm/math.py), eager
  NumPy's or SciPy's (or XLA's float32 algorithms, which native reproduces): `math_ulps`;
- float sums and dot products: native reassociates them (vectorised partial sums, BLAS), eager
  uses NumPy's pairwise summation and matmul: `reassociation_ulps`;
- a float32/float64 product whose only reader adds or subtracts it: native rounds the two as one
  fma, as XLA's CPU compiler does (JAX's jit), eager rounds the product first: `contraction_ulps`.
A few ulps of one operand can become many ulps of a result that cancels (tanh(c*w + x) near
zero, x + log1p(...) near zero): there the ulps count at the magnitude of the operands, passed
as `scale` to `assert_jit_matches_eager`.
"""
from __future__ import annotations

import numpy as np

import tracejit

# Max ulp error of native's functions, (float32, float64): the table in the docstring of
# tracejit/backend/llvm/math.py, rounded up (test_lax_elementwise checks that it covers that
# table; the float32 figures of EXACT_WIDTHS are XLA's). lgamma/digamma/polygamma float64 at
# x < 0: in ulps of the larger term of the reflection formula, see math.py.
NATIVE_ULPS: dict[str, tuple[int, int]] = {
    "exp": (1, 2), "exp2": (1, 2), "log": (1, 1), "log2": (2, 1), "log1p": (1, 1),
    "expm1": (2, 2), "tanh": (3, 2), "logistic": (2, 2), "sin": (2, 2), "cos": (2, 2),
    "tan": (4, 3), "atan": (2, 2), "atan2": (2, 3), "asin": (3, 3), "acos": (2, 2),
    "sinh": (3, 3), "cosh": (3, 3), "asinh": (2, 1), "acosh": (2, 2), "atanh": (2, 2),
    "erf": (1, 1), "erfc": (4, 4), "pow": (1, 2), "cbrt": (1, 1), "lgamma": (3, 6),
    "digamma": (4, 8), "bessel_i0e": (2, 4), "bessel_i1e": (2, 10), "polygamma": (1, 4),
    "rsqrt": (0, 0),   # not math.py's: 1 / sqrt(x), two IEEE roundings
}
# Functions jit and eager compute bit for bit alike, at these float widths (bytes)
EXACT_WIDTHS: dict[str, set[int]] = {
    "sqrt": {2, 4, 8},   # correctly rounded on both sides
    "rsqrt": {4, 8},     # 1 / sqrt(x), the same two roundings (float16: eager rounds the
                         # sqrt to float16, native computes in float32)
    # XLA's float32 algorithms, which eager runs and native reproduces (float16: both compute
    # in float32; math.py's erf_inv is XLA's Giles polynomials)
    **{name: {2, 4} for name in ("exp", "log", "log1p", "erf", "erf_inv", "tanh")},
}
# Eager's own error: NumPy validates its float32 loops to <= 4 ulp and float64 to <= 2
# (numpy/_core/tests/data/umath-validation-set-*.csv); SciPy's float64 functions (erfc,
# logistic, lgamma, digamma) within about 4 (test_llvm_math measures them against mpmath);
# test_lax_elementwise holds eager float32 to ULPS_NUMPY = 4 of a float64 reference.
EAGER_ULPS = 4


def native() -> bool:
    """Whether jit runs on the native backend (else on the reference interpreter: exact)."""
    return tracejit.config.tracejit_backend == "native"


def math_ulps(names: str | tuple[str, ...], dtype, roundings: int = 0) -> int:
    """Ulps by which a result computed by the elementwise function(s) `names`, then rounded
    `roundings` more times, may differ between jit and eager (0 on the interpreter, and where
    both compute alike)."""
    names = (names,) if isinstance(names, str) else names
    real = np.finfo(dtype).dtype  # complex: its parts'
    if not native() or all(real.itemsize in EXACT_WIDTHS.get(n, ()) for n in names):
        return 0
    missing = [n for n in names if n not in NATIVE_ULPS]
    if missing:
        raise KeyError(f"no documented native ulp bound for {missing}: add math.py's figure "
                       "to NATIVE_ULPS in tests/tolerance.py")
    if real.itemsize < 4:  # both round a float32 value once (eager maybe per step): 1 ulp
        return 1 + roundings
    return max(NATIVE_ULPS[n][real == np.float64] for n in names) + EAGER_ULPS + roundings


def reassociation_ulps(n: int, roundings: int = 0) -> int:
    """Ulps of sum(|terms|) by which two evaluation orders of a sum of n terms, or of a dot
    product of length n, then rounded `roundings` more times, may differ (0 on the
    interpreter). Any order errs by at most (n - 1) u sum(|terms|) (Higham, Accuracy and
    Stability, (4.4); a dot product adds one rounding per term: n u), u = eps / 2; and an ulp
    of s is at least eps s / 2. The same bound, in ulps of |result|, covers products of n
    factors."""
    return 2 * n + roundings if native() else 0


def contraction_ulps(n: int = 1) -> int:
    """Ulps of max(|product|, |result|) by which n products contracted into the sums that read
    them may move a result whose later steps do not amplify them (0 on the interpreter): one
    fma round(p + c) against round(round(p) + c) differs by the product's skipped rounding (half
    an ulp of p) and the two final roundings (half an ulp of the result each), 2 when whole."""
    return 2 * n if native() else 0


def assert_jit_matches_eager(got, expected, *, ulps: int = 0, scale=None, mask=None,
                             what: str = "") -> None:
    """Same dtype and shape; bit-exact where `ulps` is 0; else |got - expected| within `ulps`
    spacings of max(|expected|, scale) (scale: the magnitude the result's error counts in
    where it can cancel). NaNs, infinities and the signs of zeros must match everywhere
    checked (`mask`: where to check)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape), \
        (what, got.dtype, got.shape, expected.dtype, expected.shape)
    check = np.ones(got.shape, bool) if mask is None else np.broadcast_to(mask, got.shape)
    if got.dtype.kind == "c":
        for part in (np.real, np.imag):
            assert_jit_matches_eager(part(got), part(expected), ulps=ulps, scale=scale,
                                     mask=check, what=what)
        return
    if got.dtype.kind != "f":
        bad = got != expected
    else:
        g, e = got.astype(np.float64), expected.astype(np.float64)
        same = ((g == e) & (np.signbit(g) == np.signbit(e))) | (np.isnan(g) & np.isnan(e))
        if ulps:
            with np.errstate(invalid="ignore", over="ignore"):
                mag = np.abs(e) if scale is None else np.maximum(np.abs(e), scale)
                tol = ulps * np.spacing(mag.astype(expected.dtype)).astype(np.float64)
                # two zeros matched above, signs included
                same |= np.isfinite(e) & ((g != 0) | (e != 0)) & (np.abs(g - e) <= tol)
        bad = ~same
    bad &= check
    assert not bad.any(), (
        f"{what}: jit differs from eager by more than {ulps} ulps at {np.flatnonzero(bad)[:8]}:"
        f" got {got[bad][:8]}, eager {expected[bad][:8]}")
