"""Print the float32 polynomial tables of tracejit/scipy/special.py (erfcx, ndtri) and
tracejit/backend/llvm/math.py (bessel_i0e, bessel_i1e, lgamma, digamma), so they can be fitted
again:

    python tools/fit_polynomials.py

Each piece is a least-squares fit, weighted by 1/|f| (relative error), on 4,000 Chebyshev nodes
of its interval, of the function written in its variable s (x - centre, 1/x - centre, 1/x**2 or
1/sqrt(w) - centre), then expanded in powers of s: coefficients lowest degree first, as float64
(the code rounds them to float32, and splits a constant term that is not exact into hi + lo).
SciPy's float64 functions are the reference (within a few float64 ulps: far below a float32 ulp;
mpmath where float64 would cancel). The fits are near-minimax; the errors that matter are
measured on the compiled code (tests/test_scipy_special.py, tests/test_llvm_math.py)."""
from __future__ import annotations

import numpy as np
import scipy.special as sp
from numpy.polynomial import chebyshev, polynomial

NODES = 4000


def fit(f, lo: float, hi: float, degree: int, centre: float = 0.0) -> tuple[float, ...]:
    """f(s) on s in [lo, hi] as a polynomial in s - centre, lowest degree first."""
    k = np.arange(NODES)
    t = np.cos(np.pi * (k + 0.5) / NODES)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    y = f(mid + half * t)
    in_t = chebyshev.cheb2poly(chebyshev.chebfit(t, y, degree, w=1 / np.abs(y)))
    # t = (s - centre) / half + (centre - mid) / half
    out = np.zeros(1)
    for c in in_t[::-1]:
        out = polynomial.polyadd(polynomial.polymul(out, [(centre - mid) / half, 1 / half]), [c])
    return tuple(float(c) for c in out)


def erfcx_tables() -> dict[str, tuple[float, ...]]:
    """erfcx(x), x >= 0: itself on [0, 1) and [1, 2) in x - 0.5 and x - 1.5; x erfcx(x) on
    [2, 8) in 1/x - 0.3125 and on [8, inf) in 1/x**2."""
    def g_u(u):
        return sp.erfcx(1 / u) / u

    def g_t(t):
        return sp.erfcx(1 / np.sqrt(t)) / np.sqrt(t)

    return {"_ERFCX32_0_1": fit(sp.erfcx, 0., 1., 9, 0.5),
            "_ERFCX32_1_2": fit(sp.erfcx, 1., 2., 9, 1.5),
            "_ERFCX32_2_8": fit(g_u, 1 / 8, 1 / 2, 9, 0.3125),
            "_ERFCX32_8_INF": fit(g_t, 1e-14, 1 / 64, 5)}


def bessel_tables() -> dict[str, tuple[float, ...]]:
    """i0e and i1e of z = |x|: on [0, 0.5], (i0e(z) - 1) / z and (i1e(z) / z - 1/2) / z in z;
    themselves on (0.5, 2.625] and (2.625, 8] in z - 1.5 and z - 5.25; sqrt(z) times them on
    (8, inf) in 1/z."""
    tables = {}
    for name, f in (("I0E", sp.i0e), ("I1E", sp.i1e)):
        def small(z, f=f, name=name):
            return (f(z) - 1) / z if name == "I0E" else (f(z) / z - 0.5) / z

        def tail(u, f=f):
            return f(1 / u) / np.sqrt(u)

        tables[f"_{name}32_0_05"] = fit(small, 0., 0.5, 6 if name == "I0E" else 5)
        tables[f"_{name}32_05_2625"] = fit(f, 0.5, 2.625, 10, 1.5)
        tables[f"_{name}32_2625_8"] = fit(f, 2.625, 8., 12, 5.25)
        tables[f"_{name}32_8_INF"] = fit(tail, 1e-14, 1 / 8, 6)
    return tables


# lgamma's minimum (on x > 0), rounded to float32, and lgamma there (mpmath, 30 digits)
LGAMMA_MIN_X = float(np.float32(1.4616321449683622))


def lgamma_tables() -> dict[str, tuple[float, ...]]:
    """lgamma(1 + y) / y and lgamma(2 + y) / y on [-1/2, 1/2] (removable at y = 0), and
    (lgamma(x0 + d) - lgamma(x0)) / d**2 on [1.25 - x0, 1.75 - x0], x0 LGAMMA_MIN_X, in mpmath
    (lgamma(x0 + d) - lgamma(x0) cancels in float64 near d = 0); its constant term first."""
    import mpmath
    mpmath.mp.dps = 30
    x0 = mpmath.mpf(LGAMMA_MIN_X)
    at_min = mpmath.loggamma(x0)

    def over_y(shift):
        return lambda y: sp.gammaln(shift + y) / y

    def over_d2(d):
        return np.array([float((mpmath.loggamma(x0 + mpmath.mpf(v)) - at_min) / mpmath.mpf(v) ** 2)
                         for v in d])
    return {"_LGAMMA32_1": fit(over_y(1.), -0.5, 0.5, 15),
            "_LGAMMA32_2": fit(over_y(2.), -0.5, 0.5, 11),
            "_LGAMMA32_MIN": (float(at_min), *fit(over_d2, 1.25 - LGAMMA_MIN_X,
                                                  1.75 - LGAMMA_MIN_X, 8))}


def digamma_tables() -> dict[str, tuple[float, ...]]:
    """digamma(y) / (y - x0) on [1, 2] in y - 3/2, x0 digamma's positive zero (mpmath: the
    quotient cancels in float64 near x0)."""
    import mpmath
    mpmath.mp.dps = 30
    x0 = mpmath.findroot(mpmath.digamma, 1.46)

    def quotient(y):
        return np.array([float(mpmath.digamma(mpmath.mpf(v)) / (mpmath.mpf(v) - x0)) for v in y])
    return {"_DIGAMMA32_R": fit(quotient, 1., 2., 11, 1.5)}


def ndtri_tables() -> dict[str, tuple[float, ...]]:
    """ndtri(1 - y) / (1 - 2 y) (y <= 1/2) as a function of w = -log(4 y (1 - y)): on [0, 5)
    in w - 2.5, and beyond (to w = 105: y down to float32's least subnormal) as sqrt(w) times a
    polynomial in r = 1/sqrt(w), centred at 0.27. With 1 - 2 y = sqrt(1 - exp(-w)) and
    2 y = exp(-w) / (1 + sqrt(1 - exp(-w))), ndtri(1 - y) = sqrt(2) erfcinv(2 y)."""
    def of_w(w):
        root = np.sqrt(-np.expm1(-w))
        return np.sqrt(2.) * sp.erfcinv(np.exp(-w) / (1 + root)) / root

    def tail(r):
        return of_w(1 / r ** 2) * r
    return {"_NDTRI32_HEAD": fit(of_w, 0., 5., 10, 2.5),
            "_NDTRI32_TAIL": fit(tail, 1 / np.sqrt(105.), 1 / np.sqrt(5.), 12, 0.27)}


def main() -> None:
    tables = {**erfcx_tables(), **bessel_tables(), **lgamma_tables(), **digamma_tables(),
              **ndtri_tables()}
    for name, coeffs in tables.items():
        body = ", ".join(repr(c) for c in coeffs)
        print(f"{name} = ({body})")


if __name__ == "__main__":
    main()
