"""`jax.scipy.optimize.minimize` with BFGS (user-facing layer over numpy and lax control flow;
numpyro's optim module imports it at load time). Nocedal & Wright's algorithm 6.1 with a
strong-Wolfe line search (their algorithms 3.5/3.6, zoom by bisection-safeguarded cubic
interpolation), all inside lax.while_loop so it runs under jit. JAX's own line search picks its
first trial step differently, so iterates and counts can differ from JAX's while the minimum
found agrees."""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..lax import lenient as lax
from ..transforms.api import value_and_grad

_C1, _C2 = 1e-4, 0.9  # sufficient decrease and curvature constants of the Wolfe conditions


class OptimizeResults(NamedTuple):
    """What `minimize` returns (JAX's fields): the minimizer x, success, status (0 converged,
    1 maximum iterations, 3 line search failed), fun and jac at x, the inverse Hessian
    estimate, and the numbers of function/gradient evaluations and iterations."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _cubic_min(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    m00, m01, m10, m11 = dc ** 2, -db ** 2, -dc ** 3, db ** 3
    r0, r1 = fb - fa - fpa * db, fc - fa - fpa * dc
    aa = (m00 * r0 + m01 * r1) / denom
    bb = (m10 * r0 + m11 * r1) / denom
    return a + (-bb + jnp.sqrt(bb * bb - 3 * aa * fpa)) / (3 * aa)


def _line_search(f_and_g, x, p, f0, g0, f_before, maxiter):
    """A step length along p meeting the strong Wolfe conditions: (alpha, f, g, evaluations,
    failed). The first trial step expects the decrease of the last iteration (f_before - f0)
    again, as SciPy's line search does, and is at most 1."""
    dphi0 = jnp.dot(g0, p)
    first = 1.01 * 2 * (f0 - f_before) / dphi0
    first = jnp.where(jnp.isfinite(first) & (first > 0), jnp.minimum(1.0, first), 1.0)

    def phi(alpha):
        f, g = f_and_g(x + alpha * p)
        return f, g, jnp.dot(g, p)

    # bracketing (N&W 3.5): double alpha until Wolfe holds or a minimum is bracketed, then
    # zoom (N&W 3.6) between lo (decreases enough; value and slope known) and hi
    def cond(s):
        return ~s["done"] & (s["i"] < maxiter)

    def body(s):
        zooming, lo, hi = s["zoom"], s["lo"], s["hi"]
        trial = _cubic_min(lo, s["f_lo"], s["d_lo"], hi, s["f_hi"], s["prev"], s["f_prev"])
        left, right, width = jnp.minimum(lo, hi), jnp.maximum(lo, hi), jnp.abs(hi - lo)
        safe = jnp.isfinite(trial) & (trial > left + 0.1 * width) & \
            (trial < right - 0.1 * width)
        alpha = jnp.where(zooming, jnp.where(safe, trial, 0.5 * (lo + hi)), s["alpha"])
        f, g, d = phi(alpha)
        fails_decrease = (f > f0 + _C1 * alpha * dphi0) | (f >= s["f_lo"])
        done = ~fails_decrease & (jnp.abs(d) <= -_C2 * dphi0)
        # a point that decreases enough becomes lo; the old lo becomes hi when the slope at
        # the new point points back towards it (or, before a bracket exists, uphill)
        flip = ~fails_decrease & jnp.where(zooming, d * (hi - lo) >= 0, d >= 0)
        new_hi = jnp.where(fails_decrease, alpha, jnp.where(flip, lo, hi))
        new_f_hi = jnp.where(fails_decrease, f, jnp.where(flip, s["f_lo"], s["f_hi"]))
        return {"i": s["i"] + 1, "done": done, "zoom": zooming | fails_decrease | flip,
                "alpha": jnp.where(zooming | fails_decrease | flip, s["alpha"], 2 * alpha),
                "lo": jnp.where(fails_decrease, lo, alpha),
                "f_lo": jnp.where(fails_decrease, s["f_lo"], f),
                "d_lo": jnp.where(fails_decrease, s["d_lo"], d),
                "hi": new_hi, "f_hi": new_f_hi, "prev": hi, "f_prev": s["f_hi"],
                "best_alpha": alpha, "best_f": f, "best_g": g, "nfev": s["nfev"] + 1}

    zero = jnp.zeros((), f0.dtype)
    state = {"i": jnp.array(0), "done": jnp.array(False), "zoom": jnp.array(False),
             "alpha": first.astype(f0.dtype), "lo": zero, "f_lo": f0, "d_lo": dphi0,
             "hi": zero, "f_hi": f0, "prev": zero, "f_prev": f0,
             "best_alpha": zero, "best_f": f0, "best_g": g0, "nfev": jnp.array(0)}
    s = lax.while_loop(cond, body, state)
    return s["best_alpha"], s["best_f"], s["best_g"], s["nfev"], ~s["done"]


def _minimize_bfgs(fun: Callable, x0: Any, maxiter: int | None, norm: Any, gtol: float,
                   line_search_maxiter: int) -> OptimizeResults:
    if maxiter is None:
        maxiter = int(np.size(x0)) * 200
    f_and_g = value_and_grad(fun)
    f0, g0 = f_and_g(x0)
    eye = jnp.eye(x0.shape[0], dtype=x0.dtype)
    # before the first step, "the last decrease" is taken as half the gradient's norm (SciPy)
    state = {"k": jnp.array(0), "x": x0, "f": f0, "g": g0, "H": eye,
             "f_before": f0 + jnp.linalg.norm(g0) / 2,
             "converged": jnp.linalg.norm(g0, ord=norm) < gtol, "failed": jnp.array(False),
             "nfev": jnp.array(1)}

    def cond(s):
        return ~s["converged"] & ~s["failed"] & (s["k"] < maxiter)

    def body(s):
        p = -(s["H"] @ s["g"])
        alpha, f, g, nfev, failed = _line_search(f_and_g, s["x"], p, s["f"], s["g"],
                                                 s["f_before"], line_search_maxiter)
        step = alpha * p
        y = g - s["g"]
        rho = 1.0 / jnp.dot(y, step)
        left = eye - rho * jnp.outer(step, y)
        h_new = left @ s["H"] @ left.T + rho * jnp.outer(step, step)
        h_new = jnp.where(jnp.isfinite(rho), h_new, s["H"])
        return {"k": s["k"] + 1, "x": jnp.where(failed, s["x"], s["x"] + step),
                "f_before": s["f"],
                "f": jnp.where(failed, s["f"], f), "g": jnp.where(failed, s["g"], g),
                "H": jnp.where(failed, s["H"], h_new),
                "converged": jnp.linalg.norm(g, ord=norm) < gtol, "failed": failed,
                "nfev": s["nfev"] + nfev}

    s = lax.while_loop(cond, body, state)
    status = jnp.where(s["converged"], 0, jnp.where(s["k"] >= maxiter, 1,
                                                    jnp.where(s["failed"], 3, -1)))
    return OptimizeResults(x=s["x"], success=s["converged"] & ~s["failed"], status=status,
                           fun=s["f"], jac=s["g"], hess_inv=s["H"], nfev=s["nfev"],
                           njev=s["nfev"], nit=s["k"])


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimize the scalar function `fun(x, *args)` of a 1-D array from `x0` (method='BFGS';
    options maxiter, norm, gtol, line_search_maxiter; tol sets gtol)."""
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got "
                        f"{args}")
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"jax.scipy.optimize.minimize: x0 must be one-dimensional, got shape "
                         f"{x0.shape} (ravel it, e.g. with jax.flatten_util.ravel_pytree)")
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized")
    opts = {"maxiter": None, "norm": jnp.inf, "gtol": 1e-5 if tol is None else tol,
            "line_search_maxiter": 10, **options}
    unknown = set(opts) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if unknown:
        raise TypeError(f"minimize: unknown options {sorted(unknown)}")
    return _minimize_bfgs(lambda x: fun(x, *args), x0, **opts)


__all__ = ["OptimizeResults", "minimize"]
