"""tracejit.test_util: `check_grads`, `check_jvp`, `check_vjp` (jax.test_util), a user-facing
module that checks autodiff (transforms.api) against central finite differences in NumPy, with
JAX's tolerances, random directions and error messages.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import ml_dtypes
import numpy as np

from .dtypes import canonicalize_dtype, float0, issubdtype
from .transforms.api import jvp, linearize, vjp
from .tree_util import tree_map, tree_reduce

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

_default_tolerance = {
    float0: 0, np.dtype(np.bool_): 0,
    **{np.dtype(t): 0 for t in (ml_dtypes.int2, ml_dtypes.int4, np.int8, np.int16, np.int32,
                                np.int64, ml_dtypes.uint2, ml_dtypes.uint4, np.uint8, np.uint16,
                                np.uint32, np.uint64)},
    **{np.dtype(getattr(ml_dtypes, n)): 1e-1 for n in (
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz")},
    np.dtype(ml_dtypes.float4_e2m1fn): 1e0, np.dtype(ml_dtypes.float8_e8m0fnu): 1e0,
    np.dtype(ml_dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3,
    np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}

default_gradient_tolerance = {
    **{np.dtype(getattr(ml_dtypes, n)): 1e-1 for n in (
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz")},
    np.dtype(ml_dtypes.float4_e2m1fn): 1e0, np.dtype(ml_dtypes.float8_e8m0fnu): 1e0,
    np.dtype(ml_dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}

_PYTHON_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64),
                         float: np.dtype(np.float64), complex: np.dtype(np.complex128)}
# compared in float32 by NumPy: it has no arithmetic of its own for these
_CUSTOM_FLOATS = {np.dtype(getattr(ml_dtypes, n)) for n in (
    "float4_e2m1fn", "float8_e8m0fnu", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "bfloat16")}


def _dtype(x: Any) -> np.dtype:
    if hasattr(x, "dtype"):
        return x.dtype
    dt = _PYTHON_SCALAR_DTYPES.get(type(x))
    return dt if dt is not None else np.asarray(x).dtype


def _is_python_scalar(val: Any) -> bool:
    return not isinstance(val, np.generic) and isinstance(val, (bool, int, float, complex))


def _assert_numpy_allclose(a: np.ndarray, b: np.ndarray, atol: float | None = None,
                           rtol: float | None = None, err_msg: str = "") -> None:
    if a.dtype == b.dtype == float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    a, b = (x.astype(np.float32) if x.dtype in _CUSTOM_FLOATS else x for x in (a, b))
    kw = {}
    if atol:
        kw["atol"] = atol
    if rtol:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, **kw, err_msg=err_msg)


def _tolerance(dtype: np.dtype, tol: Any = None) -> float:
    tol = {} if tol is None else tol
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(key): value for key, value in tol.items()}
    dtype = canonicalize_dtype(np.dtype(dtype))
    return tol.get(dtype, _default_tolerance[dtype])


def _assert_numpy_close(a: Any, b: Any, atol: Any = None, rtol: Any = None,
                        err_msg: str = "") -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
    rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
    # the tolerance grows with the number of elements, as in JAX
    _assert_numpy_allclose(a, b, atol=atol * a.size, rtol=rtol * b.size, err_msg=err_msg)


def _check_close(xs: Any, ys: Any, atol: Any = None, rtol: Any = None,
                 err_msg: str = "") -> None:
    tree_map(partial(_assert_numpy_close, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def _check_dtypes_match(xs: Any, ys: Any) -> None:
    def check(x: Any, y: Any) -> None:
        assert canonicalize_dtype(_dtype(x)) == canonicalize_dtype(_dtype(y))
    tree_map(check, xs, ys)


def _inner_prod(xs: Any, ys: Any) -> Any:
    def contract(x: Any, y: Any) -> Any:
        return np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
    return tree_reduce(np.add, tree_map(contract, xs, ys))


def _safe_subtract(x: Any, y: Any, *, dtype: np.dtype) -> Any:
    """x - y with inf - inf == 0 (a function constant at inf has a zero difference there)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, dtype), np.subtract(x, y, dtype=dtype))


def _preserve_input_types(f: Callable) -> Callable:
    def wrapped(*args: Any) -> Any:
        result = np.array(f(*args), dtype=_dtype(args[0]))
        return result.item() if all(_is_python_scalar(a) for a in args) else result
    return wrapped


_add = partial(tree_map, _preserve_input_types(operator.add))
_sub = partial(tree_map, _preserve_input_types(operator.sub))
_safe_sub = partial(tree_map, lambda x, y: _safe_subtract(x, y, dtype=_dtype(x)))
_conj = partial(tree_map, _preserve_input_types(np.conj))


def _scalar_mul(xs: Any, a: float) -> Any:
    def mul(x: Any) -> Any:
        dtype = _dtype(x)
        result = np.multiply(x, np.array(a, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(x) else result
    return tree_map(mul, xs)


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    shape, dtype = np.shape(x), _dtype(x)

    def randn() -> np.ndarray:
        return np.asarray(rng.randn(*shape), dtype=dtype)

    if issubdtype(dtype, np.complexfloating):
        result = randn() + dtype.type(1.0j) * randn()
    else:
        result = randn()
    return result.item() if _is_python_scalar(x) else result


def _numerical_jvp(f: Callable, primals: Any, tangents: Any, eps: float = EPS) -> Any:
    delta = _scalar_mul(tangents, eps)
    f_pos = f(*_add(primals, delta))
    f_neg = f(*_sub(primals, delta))
    return _scalar_mul(_safe_sub(f_pos, f_neg), 0.5 / eps)


def _merge_tolerance(tol: Any, default: dict) -> Any:
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    out = default.copy()
    for k, v in tol.items():
        out[np.dtype(k)] = v
    return out


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
    """Check a JVP (`f_jvp`, typically `partial(jvp, f)`) against central finite differences
    of `f` at `args`, in one random direction (NumPy's RandomState(0)); AssertionError if not
    close. atol/rtol: a number, or a dict from dtype to tolerance."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rng = np.random.RandomState(0)
    tangent = tree_map(partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes_match(v_out, t_out)
    v_out_expected = f(*args)
    _check_dtypes_match(v_out, v_out_expected)
    t_out_expected = _numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                 err_msg=f"{err_msg} primal" if err_msg else "primal")
    _check_close(t_out, t_out_expected, atol=atol, rtol=rtol,
                 err_msg=f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
    """Check a VJP (`f_vjp`, typically `partial(vjp, f)`) against finite differences: the
    cotangent projection <t, vjp(c)> must match <jvp_numerical(t), c> for random t, c."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rand_like = partial(_rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_out_expected = f(*args)
    _check_close(v_out, v_out_expected, atol=atol, rtol=rtol,
                 err_msg=f"{err_msg} primal" if err_msg else "primal")
    tangent = tree_map(rand_like, args)
    tangent_out = _numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_map(rand_like, v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    _check_close(ip, ip_expected, atol=atol, rtol=rtol,
                 err_msg=(f"{err_msg} cotangent projection" if err_msg
                          else "cotangent projection"))


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: Any = None, rtol: Any = None,
                eps: float | None = None) -> None:
    """Check forward ('fwd'), reverse ('rev') and linearized ('lin') derivatives of `f` at
    `args` up to `order` against finite differences, each in one random direction; raises
    AssertionError naming the failing check (e.g. 'JVP of VJP tangent')."""
    args = tuple(args)
    eps = eps or EPS
    _check_jvp = partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    _check_vjp = partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def _check_grads(f: Callable, args: tuple, order: int, err_msg: str = "") -> None:
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            _check_jvp(f, partial(jvp, f), args, err_msg=fwd_msg)
            if order > 1:
                _check_grads(partial(jvp, f), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            _check_vjp(f, partial(vjp, f), args, err_msg=rev_msg)
            if order > 1:
                def f_vjp(*args: Any) -> Any:
                    out_primal, vjp_fun = vjp(f, *args)
                    return vjp_fun(out_primal)
                _check_grads(f_vjp, args, order - 1, rev_msg)
        if "lin" in modes:
            lin_msg = f"LIN of {err_msg}" if err_msg else "LIN"
            _check_jvp(f, partial(_jvp_from_lin, f), args, err_msg=lin_msg)
            if order > 1:
                _check_grads(partial(_jvp_from_lin, f), (args, args), order - 1, lin_msg)

    _check_grads(f, args, order)


def _jvp_from_lin(f: Callable, primals: Any, tangents: Any) -> tuple:
    primal_out, f_lin = linearize(f, *primals)
    return primal_out, f_lin(*tangents)
