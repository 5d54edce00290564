"""Reductions and cumulative ops (tracejit.numpy + lax.cum*): values against NumPy, result
dtypes, weak types and error classes against real JAX, jit against eager."""
import functools
import math
import warnings

import numpy as np
import pytest
from tolerance import assert_jit_matches_eager, contraction_ulps, reassociation_ulps

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 4), (3, 0)]
DTYPES = ["bool", "int8", "int32", "uint8", "float16", "float32", "float32+nan"]
TOL = {"float16": 2e-2, "float32": 2e-5}


def make(shape, dtype, seed=0):
    """Inputs small enough that int products stay in range; '+nan' puts NaNs in a few places
    (never a whole slice, so nanarg* stay defined)."""
    rng = np.random.default_rng(seed)
    name = dtype.split("+")[0]
    if name == "bool":
        return rng.random(shape) < 0.6
    if name.startswith("uint"):
        return rng.integers(0, 3, shape).astype(name)
    if name.startswith("int"):
        return rng.integers(-2, 3, shape).astype(name)
    x = rng.normal(size=shape).astype(name)
    if dtype.endswith("+nan") and x.size > 2:
        x.flat[[0, x.size // 2 + 1]] = np.nan
    return x


def axes_for(shape, ints_only=False):
    out = [None] + list(range(len(shape))) + ([-1] if shape else [])
    if not ints_only and len(shape) >= 1:
        out.append(())
    if not ints_only and len(shape) >= 2:
        out += [(0, -1), (-1, 0)]
    return out


def oracle_input(x, fn):
    """NumPy computes in float64 (or int64), so the oracle is at least as exact as we are."""
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    if fn in ("min", "max", "amin", "amax", "argmin", "argmax", "nanmin", "nanmax",
              "nanargmin", "nanargmax", "all", "any", "count_nonzero", "ptp"):
        return x
    if x.dtype == bool or fn in ("cumprod", "nancumprod"):
        return x.astype(np.int64) if x.dtype == bool else x
    return x.astype(np.int64)


def assert_close(got, want, dtype, what=""):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (what, got.shape, np.shape(want))
    tol = TOL.get(dtype.split("+")[0]) if got.dtype.kind == "f" else None
    if tol is None and got.dtype.kind == "f":
        tol = TOL["float32"]
    if tol is None:
        np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype), err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=what)


@functools.lru_cache(maxsize=None)
def jax_error(name, shape, dtype, axis, keepdims):
    """The exception jnp.<name> raises for this input at trace time (no compilation)."""
    kw = {"keepdims": keepdims} if keepdims is not None else {}
    try:
        jax.eval_shape(functools.partial(getattr(jnp, name), axis=axis, **kw),
                       jax.ShapeDtypeStruct(shape, dtype))
    except Exception as e:  # noqa: BLE001 - any JAX error class is the oracle here
        return type(e)
    return None


# name -> (NumPy oracle, axis kind); cum ops take one int axis, arg ops one int axis
REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "var": np.var, "std": np.std,
    "min": np.min, "max": np.max, "amin": np.amin, "amax": np.amax, "ptp": np.ptp,
    "all": np.all, "any": np.any, "count_nonzero": np.count_nonzero,
    "nansum": np.nansum, "nanprod": np.nanprod, "nanmean": np.nanmean, "nanvar": np.nanvar,
    "nanstd": np.nanstd, "nanmin": np.nanmin, "nanmax": np.nanmax,
    "median": np.median, "nanmedian": np.nanmedian,
}
ARG_REDUCTIONS = {"argmax": np.argmax, "argmin": np.argmin, "nanargmax": np.nanargmax,
                  "nanargmin": np.nanargmin}
CUMULATIVE = {"cumsum": np.cumsum, "cumprod": np.cumprod, "nancumsum": np.nancumsum,
              "nancumprod": np.nancumprod}


def _cases(name):
    if name in REDUCTIONS:
        return [(s, dict(axis=a, keepdims=k)) for s in SHAPES for a in axes_for(s)
                for k in (False, True)]
    if name in ARG_REDUCTIONS:
        return [(s, dict(axis=a, keepdims=k)) for s in SHAPES for a in axes_for(s, True)
                for k in (False, True)]
    return [(s, dict(axis=a)) for s in SHAPES for a in axes_for(s, True)]


ALL_FUNCS = {**REDUCTIONS, **ARG_REDUCTIONS, **CUMULATIVE}
# ptp of bools is a TypeError in JAX (checked in the error table)
TABLE = [(n, d) for n in sorted(ALL_FUNCS) for d in DTYPES if (n, d) != ("ptp", "bool")]


@pytest.mark.parametrize("name,dtype", TABLE)
def test_against_numpy_and_jax_dtypes(name, dtype):
    np_fn, tj_fn, j_fn = ALL_FUNCS[name], getattr(tnp, name), getattr(jnp, name)
    checked_dtype = False
    for shape, kw in _cases(name):
        x = make(shape, dtype)
        reduced_empty = x.size == 0 and (kw["axis"] is None or any(
            shape[a] == 0 for a in np.atleast_1d(kw["axis"]) if -len(shape) <= a < len(shape)))
        if name in ("median", "nanmedian") and (reduced_empty or kw["axis"] == ()):
            continue  # NumPy gives NaN / an error, JAX a TypeError / x: in the JAX tables
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = np_fn(oracle_input(x, name), **kw)
            except (ValueError, TypeError, IndexError):
                want = None
        what = f"{name}({dtype}{list(shape)}, {kw})"
        if want is None:
            # the error class does not depend on the dtype (bool ptp is not in the table)
            err = jax_error(name, shape, "float32", kw["axis"], kw.get("keepdims"))
            assert err is not None, what
            with pytest.raises(err):
                tj_fn(tnp.asarray(x), **kw)
            continue
        if name in ("median", "nanmedian") and shape == () and kw["keepdims"]:
            want = np.reshape(want, (1,))  # JAX flattens a scalar first
        got = tj_fn(tnp.asarray(x), **kw)
        assert_close(got, want, dtype, what)
        if not checked_dtype:
            expected = jax.eval_shape(functools.partial(j_fn, **kw), x)
            assert (got.dtype, got.weak_type) == (expected.dtype, expected.weak_type), what
            checked_dtype = True
    assert checked_dtype


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint"]
QUANTILE_CASES = [(n, d) for n in ("quantile", "nanquantile")
                  for d in ("int32", "float16", "float32", "float32+nan")] + \
    [("percentile", "float32"), ("nanpercentile", "float32+nan")]


@pytest.mark.parametrize("name,dtype", QUANTILE_CASES)
def test_quantiles_against_numpy(name, dtype):
    scale = 100 if "percentile" in name else 1
    qs = [np.float32(0.3 * scale), np.array([0.0, 0.25, 0.6, 1.0], np.float32) * scale]
    combos = [(shape, axis, q, method) for shape in [(), (5,), (3, 4), (2, 3, 4)]
              for axis in axes_for(shape) if axis != () for q in qs
              for method in QUANTILE_METHODS]
    for i, (shape, axis, q, method) in enumerate(combos):
        x = make(shape, dtype)
        kw = dict(axis=axis, method=method, keepdims=i % 3 == 0)
        got = getattr(tnp, name)(tnp.asarray(x), q, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(x.astype(np.float64), q, **kw)
        if shape == () and kw["keepdims"]:
            want = np.reshape(want, np.shape(q) + (1,))  # JAX flattens a scalar first
        assert_close(got, want, dtype, f"{name}({dtype}{list(shape)}, {q}, {kw})")
        assert got.dtype == (np.float16 if dtype == "float16" else np.float32)
        assert not got.weak_type


# --- API behaviour against JAX: dtypes, weak types, special values, errors -----------------

def _weak(m, L, shape=(3,), value=1.5):
    return L.broadcast(m.asarray(value), shape)


def _arr(m, value, dtype=None):
    return m.asarray(np.asarray(value, dtype=dtype))


NAN4 = [1.0, np.nan, 3.0, np.nan]
M23 = np.arange(6.0, dtype=np.float32).reshape(2, 3)
MASK3 = np.array([True, False, True])

API_CASES = {
    # Python scalars and weak arrays: results are strong
    "sum pyfloat": lambda m, L: m.sum(1.5),
    "sum pyint": lambda m, L: m.sum(3),
    "sum pybool": lambda m, L: m.sum(True),
    "mean pyint": lambda m, L: m.mean(3),
    "var pyfloat": lambda m, L: m.var(1.5),
    "std pyint": lambda m, L: m.std(3),
    "sum weak": lambda m, L: m.sum(_weak(m, L)),
    "max weak": lambda m, L: m.max(_weak(m, L)),
    "mean weak": lambda m, L: m.mean(_weak(m, L)),
    "cumsum weak": lambda m, L: m.cumsum(_weak(m, L)),
    "cumsum weak int": lambda m, L: m.cumsum(_weak(m, L, value=3)),
    "argmax weak": lambda m, L: m.argmax(_weak(m, L)),
    "median weak": lambda m, L: m.median(_weak(m, L)),
    "any pyfloat": lambda m, L: m.any(1.0),
    # dtype rules
    "prod uint8": lambda m, L: m.prod(_arr(m, [1, 2, 3], np.uint8)),
    "sum float16 big": lambda m, L: m.sum(_arr(m, np.ones(5000), np.float16)),
    "cumsum float16 big": lambda m, L: m.cumsum(_arr(m, np.ones(5000), np.float16)),
    "sum dtype bool": lambda m, L: m.sum(_arr(m, [0.0, 2.0, 0.0]), dtype=bool),
    "sum dtype int": lambda m, L: m.sum(_arr(m, [1.7, 1.7, 1.7]), dtype=m.int32),
    "sum dtype float16": lambda m, L: m.sum(_arr(m, [1, 2, 3]), dtype=m.float16),
    "prod dtype": lambda m, L: m.prod(_arr(m, [1, 2, 3]), dtype=m.float32),
    "sum promote_integers off": lambda m, L: m.sum(_arr(m, [1, 2], np.int8),
                                                   promote_integers=False),
    "mean dtype int": lambda m, L: m.mean(_arr(m, [1, 2, 3, 4]), dtype=m.int32),
    "var dtype int": lambda m, L: m.var(_arr(m, [1, 2, 3, 4]), dtype=m.int32),
    "mean float16": lambda m, L: m.mean(_arr(m, [1, 2, 4], np.float16)),
    "var float16": lambda m, L: m.var(_arr(m, [1, 2, 4], np.float16)),
    "mean bool": lambda m, L: m.mean(_arr(m, [True, False])),
    "max bool": lambda m, L: m.max(_arr(m, [True, False])),
    "cumsum bool": lambda m, L: m.cumsum(_arr(m, [True, True])),
    "cumprod bool": lambda m, L: m.cumprod(_arr(m, [True, True])),
    "cumsum int8 keeps": lambda m, L: m.cumsum(_arr(m, [100, 100], np.int8)),
    "cumsum dtype bool": lambda m, L: m.cumsum(_arr(m, [0.0, 2.0, 0.0]), dtype=bool),
    "cumsum dtype int8": lambda m, L: m.cumsum(_arr(m, M23), axis=-1, dtype=m.int8),
    "cumsum scalar": lambda m, L: m.cumsum(3.0),
    "cumulative_sum int8": lambda m, L: m.cumulative_sum(_arr(m, [1, 2], np.int8)),
    "cumulative_sum uint8": lambda m, L: m.cumulative_sum(_arr(m, [1, 2], np.uint8)),
    "cumulative_sum bool": lambda m, L: m.cumulative_sum(_arr(m, [True, True])),
    "cumulative_prod int8": lambda m, L: m.cumulative_prod(_arr(m, [1, 2], np.int8)),
    "cumulative_prod bool": lambda m, L: m.cumulative_prod(_arr(m, [True, True])),
    "cumulative_sum include": lambda m, L: m.cumulative_sum(_arr(m, M23), axis=1,
                                                            include_initial=True),
    "cumulative_prod include": lambda m, L: m.cumulative_prod(_arr(m, M23), axis=0,
                                                              include_initial=True),
    "count_nonzero": lambda m, L: m.count_nonzero(_arr(m, [1.0, 0.0, np.nan])),
    "count_nonzero keep": lambda m, L: m.count_nonzero(_arr(m, M23), axis=1, keepdims=True),
    # NaN semantics
    "all nan": lambda m, L: m.all(_arr(m, [1.0, np.nan])),
    "argmax nan": lambda m, L: m.argmax(_arr(m, NAN4)),
    "argmin nan": lambda m, L: m.argmin(_arr(m, NAN4)),
    "max nan": lambda m, L: m.max(_arr(m, NAN4)),
    "nanargmax": lambda m, L: m.nanargmax(_arr(m, NAN4)),
    "nanargmax all nan": lambda m, L: m.nanargmax(_arr(m, [[3.0, np.nan], [np.nan, np.nan]]),
                                                  axis=1),
    "nanargmin all nan keep": lambda m, L: m.nanargmin(
        _arr(m, [[3.0, np.nan], [np.nan, np.nan]]), axis=1, keepdims=True),
    "nanmax all nan": lambda m, L: m.nanmax(_arr(m, [np.nan, np.nan])),
    "nanmax initial": lambda m, L: m.nanmax(_arr(m, [np.nan, np.nan]), initial=2.0),
    "nanmean int": lambda m, L: m.nanmean(_arr(m, [1, 5, 2])),
    "nanvar int": lambda m, L: m.nanvar(_arr(m, [1, 5, 2])),
    "nanvar ddof": lambda m, L: m.nanvar(_arr(m, NAN4), ddof=1),
    "nanvar ddof too big": lambda m, L: m.nanvar(_arr(m, NAN4), ddof=2),
    "nanstd where": lambda m, L: m.nanstd(_arr(m, [[1.0, np.nan, 4.0], [2.0, 2.0, np.nan]]),
                                          axis=1, where=MASK3),
    "nansum bool": lambda m, L: m.nansum(_arr(m, [True, True])),
    "nancumsum int8": lambda m, L: m.nancumsum(_arr(m, [1, 2], np.int8)),
    "nancumprod": lambda m, L: m.nancumprod(_arr(m, [1.0, np.nan, 2.0])),
    "median nan": lambda m, L: m.median(_arr(m, [1.0, 5.0, np.nan, 4.0])),
    "nanmedian all nan row": lambda m, L: m.nanmedian(
        _arr(m, [[3.0, np.nan, 1.0], [np.nan, np.nan, np.nan]]), axis=1),
    "quantile nearest": lambda m, L: m.quantile(_arr(m, [0.0, 1.0, 2.0, 3.0]),
                                                _arr(m, [0.5, 1 / 6, 0.2, 0.5 / 3], np.float32),
                                                method="nearest"),
    "quantile inverted_cdf": lambda m, L: m.quantile(_arr(m, [[3.0, 1.0, 2.0, 9.0]] * 2),
                                                     _arr(m, [0.2, 0.5, 0.9], np.float32),
                                                     axis=1, method="inverted_cdf"),
    "quantile weights": lambda m, L: m.quantile(_arr(m, M23), 0.5, axis=1,
                                                method="inverted_cdf",
                                                weights=_arr(m, [1.0, 3.0, 1.0])),
    "nanquantile bad weight": lambda m, L: m.nanquantile(_arr(m, M23), 0.5, axis=0,
                                                         method="inverted_cdf",
                                                         weights=_arr(m, [1.0, -1.0])),
    "quantile clamps q": lambda m, L: m.quantile(_arr(m, [1.0, 5.0, 2.0]), 1.5),
    "quantile tuple axes keep": lambda m, L: m.quantile(_arr(m, np.arange(24.0).reshape(2, 3, 4)),
                                                        _arr(m, [0.2, 0.7], np.float32),
                                                        axis=(0, 2), keepdims=True),
    "nanquantile keepdims": lambda m, L: m.nanquantile(
        _arr(m, [[3.0, np.nan, 1.0], [np.nan, 2.0, np.nan]]), _arr(m, [0.2, 0.7], np.float32),
        axis=1, keepdims=True),
    "quantile float16": lambda m, L: m.quantile(_arr(m, [1.0, 5.0, 2.0, 4.0], np.float16), 0.3),
    "median int": lambda m, L: m.median(_arr(m, [1, 5, 2, 4])),
    "median no axes": lambda m, L: m.median(_arr(m, M23), axis=()),
    "percentile int q": lambda m, L: m.percentile(_arr(m, [0.0, 1.0, 2.0, 3.0]), 50),
    # axis forms, keepdims, where, initial
    "sum axis list": lambda m, L: m.sum(_arr(m, M23), axis=[0, 1]),
    "sum axis np int": lambda m, L: m.sum(_arr(m, M23), axis=np.int64(1)),
    "sum axis np array": lambda m, L: m.sum(_arr(m, M23), axis=np.array([0, 1])),
    "argmax keepdims no axis": lambda m, L: m.argmax(_arr(m, M23), keepdims=True),
    "argmax 0d": lambda m, L: m.argmax(_arr(m, 3.0)),
    "mean where": lambda m, L: m.mean(_arr(m, M23), axis=1, where=MASK3),
    "mean where keepdims": lambda m, L: m.mean(_arr(m, M23), axis=1, keepdims=True,
                                               where=MASK3),
    "var where": lambda m, L: m.var(_arr(m, M23), axis=0, where=MASK3),
    "sum where": lambda m, L: m.sum(_arr(m, M23), axis=0, where=_arr(m, [[True], [False]])),
    "all where": lambda m, L: m.all(_arr(m, [True, False]), where=_arr(m, [True, False])),
    "max where initial": lambda m, L: m.max(_arr(m, M23), axis=0, where=MASK3, initial=-1),
    "max initial float on int": lambda m, L: m.max(_arr(m, [1, 5]), initial=2.5),
    "sum initial float on int": lambda m, L: m.sum(_arr(m, [1, 5]), initial=2.5),
    "max initial nan": lambda m, L: m.max(_arr(m, [1.0, 5.0]), initial=np.nan),
    "max empty initial": lambda m, L: m.max(_arr(m, np.ones(0, np.float32)), initial=3.0),
    "sum float16 initial": lambda m, L: m.sum(_arr(m, [1, 1, 1], np.float16), initial=1),
    "var correction": lambda m, L: m.var(_arr(m, [1.0, 2.0, 3.0, 4.0]), correction=1.5),
    "var ddof": lambda m, L: m.std(_arr(m, M23), axis=1, ddof=1),
    "var mean=": lambda m, L: m.var(_arr(m, [1.0, 2.0, 3.0, 4.0]), mean=2.0),
    "var mean= keepdims": lambda m, L: m.var(_arr(m, M23), axis=1, keepdims=True,
                                             mean=_arr(m, [[1.0], [4.0]])),
    "var ddof == n": lambda m, L: m.var(_arr(m, [1.0, 2.0, 3.0]), ddof=3),
    "mean empty": lambda m, L: m.mean(_arr(m, np.ones(0, np.float32))),
    "max empty along other axis": lambda m, L: m.max(_arr(m, np.ones((0, 3), np.float32)),
                                                     axis=1),
    "average weights returned": lambda m, L: m.average(_arr(m, [1, 5, 2, 4]),
                                                       weights=_arr(m, [1, 1, 2, 2]),
                                                       returned=True),
    "average returned no weights": lambda m, L: m.average(_arr(m, M23), axis=1, returned=True),
    "average weights along axis": lambda m, L: m.average(_arr(m, M23), axis=1,
                                                         weights=_arr(m, [0.0, 1.0, 2.0])),
    "average keepdims": lambda m, L: m.average(_arr(m, M23), axis=1, keepdims=True,
                                               weights=_arr(m, [0.0, 1.0, 2.0]), returned=True),
    "average int": lambda m, L: m.average(_arr(m, [0, 1, 2])),
    "average float16": lambda m, L: m.average(_arr(m, [1, 2, 4], np.float16),
                                              weights=_arr(m, [1, 1, 2], np.float16)),
    "ptp int": lambda m, L: m.ptp(3),
    # methods
    "method sum": lambda m, L: _arr(m, M23).sum(axis=0),
    "method mean": lambda m, L: _arr(m, M23).mean(),
    "method max keepdims": lambda m, L: _arr(m, M23).max(axis=-1, keepdims=True),
    "method min": lambda m, L: _arr(m, M23).min(axis=0),
    "method prod": lambda m, L: _arr(m, M23).prod(axis=(0, 1)),
    "method cumsum": lambda m, L: _arr(m, M23).cumsum(axis=1),
    "method cumprod": lambda m, L: _arr(m, M23).cumprod(),
    "method std": lambda m, L: _arr(m, M23).std(ddof=1),
    "method var": lambda m, L: _arr(m, M23).var(axis=1),
    "method argmax": lambda m, L: _arr(m, M23).argmax(axis=1),
    "method argmin": lambda m, L: _arr(m, M23).argmin(),
    "method all": lambda m, L: _arr(m, M23).all(axis=0),
    "method any": lambda m, L: _arr(m, M23).any(),
    "method ptp": lambda m, L: _arr(m, M23).ptp(axis=1),
    # lax cumulative ops
    "lax cumsum reverse": lambda m, L: L.cumsum(_arr(m, M23), axis=1, reverse=True),
    "lax cummax nan": lambda m, L: L.cummax(_arr(m, [1.0, np.nan, 3.0, 0.0])),
    "lax cummin nan reverse": lambda m, L: L.cummin(_arr(m, [1.0, np.nan, 3.0, 0.0]),
                                                    reverse=True),
    "lax cumlogsumexp inf": lambda m, L: L.cumlogsumexp(_arr(m, [1.0, -np.inf, 3.0, np.inf])),
    "lax cumsum weak": lambda m, L: L.cumsum(_weak(m, L)),
    "lax cummax weak": lambda m, L: L.cummax(_weak(m, L)),
    "lax cumprod int8 wraps": lambda m, L: L.cumprod(_arr(m, [16, 16, 3], np.int8)),
    "lax cumsum uint8": lambda m, L: L.cumsum(_arr(m, [200, 100], np.uint8), reverse=True),
    "lax cumsum float16": lambda m, L: L.cumsum(_arr(m, np.ones(3000), np.float16)),
    "lax cumlogsumexp float16": lambda m, L: L.cumlogsumexp(_arr(m, [1, 2, 3], np.float16)),
}


ERROR_CASES = {
    "max empty": lambda m, L: m.max(_arr(m, np.ones(0, np.float32))),
    "nanmin empty": lambda m, L: m.nanmin(_arr(m, np.ones(0, np.float32))),
    "ptp empty": lambda m, L: m.ptp(_arr(m, np.ones((2, 0), np.float32)), axis=1),
    "min where without initial": lambda m, L: m.min(_arr(m, [1.0, 2.0, 3.0]), where=MASK3),
    "argmax empty": lambda m, L: m.argmax(_arr(m, np.ones(0, np.float32))),
    "argmax empty axis": lambda m, L: m.argmax(_arr(m, np.ones((3, 0), np.float32)), axis=1),
    "argmax axis out of range": lambda m, L: m.argmax(_arr(m, [1.0, 2.0]), axis=2),
    "argmax axis tuple": lambda m, L: m.argmax(_arr(m, M23), axis=(0,)),
    "sum axis out of range": lambda m, L: m.sum(_arr(m, [1.0, 2.0]), axis=2),
    "sum negative axis out of range": lambda m, L: m.sum(_arr(m, M23), axis=-3),
    "sum 0d axis": lambda m, L: m.sum(_arr(m, 3.0), axis=0),
    "sum duplicate axis": lambda m, L: m.sum(_arr(m, M23), axis=(0, 0)),
    "sum duplicate negative axis": lambda m, L: m.sum(_arr(m, M23), axis=(1, -1)),
    "sum float axis": lambda m, L: m.sum(_arr(m, M23), axis=0.5),
    "sum initial array": lambda m, L: m.sum(_arr(m, [1.0]), initial=_arr(m, [1.0, 2.0])),
    "sum int where": lambda m, L: m.sum(_arr(m, [1.0]), where=_arr(m, [1])),
    "sum list": lambda m, L: m.sum([1, 2]),
    "sum None": lambda m, L: m.sum(None),
    "sum out": lambda m, L: m.sum(_arr(m, [1.0]), out=_arr(m, 0.0)),
    "mean out": lambda m, L: m.mean(_arr(m, [1.0]), out=_arr(m, 0.0)),
    "cumsum out": lambda m, L: m.cumsum(_arr(m, [1.0]), out=_arr(m, [0.0])),
    "ptp bool": lambda m, L: m.ptp(_arr(m, [True, False])),
    "std int dtype": lambda m, L: m.std(_arr(m, [1, 2]), dtype=m.int32),
    "var ddof and correction": lambda m, L: m.var(_arr(m, [1.0, 2.0]), ddof=1, correction=1),
    "cumsum axis out of range": lambda m, L: m.cumsum(_arr(m, [1.0]), axis=1),
    "cumulative_sum scalar": lambda m, L: m.cumulative_sum(_arr(m, 3.0)),
    "cumulative_prod 2d no axis": lambda m, L: m.cumulative_prod(_arr(m, M23)),
    "median empty": lambda m, L: m.median(_arr(m, np.ones(0, np.float32))),
    "quantile empty axis": lambda m, L: m.quantile(_arr(m, np.ones((3, 0), np.float32)), 0.5,
                                                   axis=1),
    "quantile int q": lambda m, L: m.quantile(_arr(m, [1.0, 2.0]), 1),
    "quantile 2d q": lambda m, L: m.quantile(_arr(m, [1.0, 2.0]), _arr(m, np.ones((2, 2)))),
    "quantile bad method": lambda m, L: m.quantile(_arr(m, [1.0, 2.0]), 0.5, method="foo"),
    "quantile repeated axis": lambda m, L: m.quantile(_arr(m, M23), 0.5, axis=(1, 1)),
    "quantile overwrite_input": lambda m, L: m.quantile(_arr(m, M23), 0.5,
                                                        overwrite_input=True),
    "quantile weights linear": lambda m, L: m.quantile(_arr(m, M23), 0.5, axis=1,
                                                       weights=_arr(m, [1.0, 1.0, 1.0])),
    "quantile weights no axis": lambda m, L: m.quantile(_arr(m, M23), 0.5,
                                                        method="inverted_cdf",
                                                        weights=_arr(m, [1.0, 1.0, 1.0])),
    "quantile weights bad shape": lambda m, L: m.quantile(_arr(m, M23), 0.5, axis=1,
                                                          method="inverted_cdf",
                                                          weights=_arr(m, [1.0, 1.0])),
    "average weights no axis": lambda m, L: m.average(_arr(m, M23),
                                                      weights=_arr(m, [1.0, 1.0, 1.0])),
    "average weights bad shape": lambda m, L: m.average(_arr(m, M23), axis=0,
                                                        weights=_arr(m, [1.0, 1.0, 1.0])),
    "lax cumsum bool": lambda m, L: L.cumsum(_arr(m, [True, False])),
    "lax cummax bool": lambda m, L: L.cummax(_arr(m, [True, False])),
    "lax cumsum negative axis": lambda m, L: L.cumsum(_arr(m, M23), axis=-1),
    "lax cumsum axis out of range": lambda m, L: L.cumsum(_arr(m, [1.0]), axis=1),
    "lax cumsum scalar": lambda m, L: L.cumsum(_arr(m, 1.0)),
    "lax cumsum python float": lambda m, L: L.cumsum(1.0),
}


def _tj_and_jax(case):
    return case(tnp, tlax), case(jnp, jlax)


@pytest.mark.parametrize("name", sorted(API_CASES))
def test_api_behaviour_matches_jax(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = _tj_and_jax(API_CASES[name])
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type), name
        tol = 1e-2 if g.dtype == np.float16 else 1e-6
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=tol, atol=tol, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors_match_jax(name):
    case = ERROR_CASES[name]
    with pytest.raises(Exception) as jax_info:
        case(jnp, jlax)
    with pytest.raises(jax_info.type):
        case(tnp, tlax)


def test_error_messages_are_jax_s():
    with pytest.raises(ValueError, match="zero-size array to reduction operation max which "
                                         "has no identity"):
        tnp.max(tnp.asarray(np.ones(0, np.float32)))
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        tnp.sum(tnp.asarray(M23), axis=(0, -2))
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
        tnp.mean(tnp.asarray(M23), axis=2)
    with pytest.raises(ValueError, match="XLA operations do not allow negative axes"):
        tlax.cummin(tnp.asarray(M23), axis=-1)
    with pytest.raises(TypeError, match="cumsum does not accept dtype bool"):
        tlax.cumsum(tnp.asarray(np.array([True])))
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        tlax.cumlogsumexp(tnp.asarray(np.array([1, 2], np.int32)))


# --- lax cumulative primitives against NumPy ----------------------------------------------

def _logaddexp_accumulate(x, axis):
    return np.logaddexp.accumulate(x, axis=axis)


LAX_CUMULATIVE = {"cumsum": np.cumsum, "cumprod": np.cumprod,
                  "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate,
                  "cumlogsumexp": _logaddexp_accumulate}


# cumlogsumexp takes floats only (an int operand is a TypeError, tested above)
LAX_TABLE = [(n, d) for n in sorted(LAX_CUMULATIVE)
             for d in ("int8", "int32", "uint8", "float16", "float32+nan")
             if n != "cumlogsumexp" or d.startswith("float")]


@pytest.mark.parametrize("name,dtype", LAX_TABLE)
def test_lax_cumulative_against_numpy(name, dtype):
    for shape in [(0,), (5,), (3, 4), (2, 3, 4), (3, 0)]:
        x = make(shape, dtype)
        for axis in range(len(shape)):
            for reverse in (False, True):
                got = getattr(tlax, name)(tnp.asarray(x), axis=axis, reverse=reverse)
                src = np.flip(x, axis) if reverse else x
                work = np.float64 if x.dtype.kind == "f" else x.dtype
                with np.errstate(all="ignore"):
                    want = LAX_CUMULATIVE[name](src.astype(work), axis=axis).astype(work)
                want = np.flip(want, axis) if reverse else want
                assert got.dtype == x.dtype and not got.weak_type
                assert_close(got, want, dtype, f"{name}({dtype}{list(shape)}, {axis}, {reverse})")


def test_lax_cumulative_jaxpr_params():
    jaxpr = tracejit.make_jaxpr(lambda x: tlax.cumsum(x, axis=1, reverse=True))(
        np.ones((2, 3), np.float32))
    assert "cumsum[axis=1 reverse=True]" in str(jaxpr)
    assert "f32[2,3]" in str(jaxpr)


# --- jit agrees with eager ----------------------------------------------------------------

JIT_FUNCS = sorted(ALL_FUNCS) + ["quantile", "nanpercentile", "average"]


@pytest.mark.parametrize("name", JIT_FUNCS)
def test_jit_matches_eager(name):
    x = make((2, 3, 4), "float32+nan" if name.startswith("nan") else "float32", seed=1)
    axes = axes_for(x.shape, ints_only=name in ARG_REDUCTIONS or name in CUMULATIVE
                    or name == "average")
    for axis in axes:
        if name in ("quantile", "nanpercentile"):
            def f(a, q, axis=axis):
                return getattr(tnp, name)(a, q, axis=axis, keepdims=True)
            args = (x, np.array([0.1, 0.5, 0.95], np.float32) * (100 if "perc" in name else 1))
        elif name == "average":
            def f(a, w, axis=axis):
                return tnp.average(a, axis=axis, weights=w, returned=True)
            args = (x, make(x.shape, "float32", seed=2) ** 2)
        else:
            kw = {} if name in CUMULATIVE else {"keepdims": axis is not None}
            f = functools.partial(getattr(tnp, name), axis=axis, **kw)
            args = (x,)
        eager, jitted = f(*args), tracejit.jit(f)(*args)
        eager = eager if isinstance(eager, tuple) else (eager,)
        jitted = jitted if isinstance(jitted, tuple) else (jitted,)
        for e, j, tol in zip(eager, jitted, _jit_tolerance(name, axis, *args)):
            assert (e.dtype, e.shape, e.weak_type) == (j.dtype, j.shape, j.weak_type)
            scale = tol.pop("scale", None)
            assert_jit_matches_eager(j, e, scale=None if scale is None else np.reshape(
                scale, np.shape(e)), what=f"{name} axis={axis}", **tol)


def _jit_tolerance(name, axis, x, w=None) -> list[dict]:
    """assert_jit_matches_eager's tolerance for each output of `name` (tests/tolerance.py):
    float sums and products reassociate under jit, within reassociation_ulps of the sum of
    the magnitudes of their terms (`scale`, float64, keepdims); everything else is exact."""
    n = x.size if axis is None else math.prod(x.shape[a] for a in np.atleast_1d(axis))
    a = np.abs(x.astype(np.float64))
    sums = functools.partial(np.nansum, axis=axis, keepdims=True)
    if name in ("sum", "nansum"):
        return [{"ulps": reassociation_ulps(n), "scale": sums(a)}]
    if name in ("mean", "nanmean"):  # sum / count: one more rounding
        with np.errstate(invalid="ignore"):  # a NaN alone (axis=()): NaN in both
            mean_abs = sums(a) / np.sum(~np.isnan(x), axis, keepdims=True)
        return [{"ulps": reassociation_ulps(n, 1), "scale": mean_abs}]
    if name in ("prod", "nanprod"):
        return [{"ulps": reassociation_ulps(n)}]
    if name in ("var", "nanvar", "std", "nanstd"):
        # sum((x - mean)**2) / count: terms of one sign, after two roundings; the mean's own
        # error changes the sum only in second order (the deviations sum to zero)
        return [{"ulps": reassociation_ulps(n, 3)}]
    if name in ("quantile", "nanpercentile"):
        # low * (1 - t) + high * t with t in [0, 1]: the first product is one fma under jit
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (an all-NaN slice: NaN in both)
            largest = np.nanmax(a, axis=axis, keepdims=True)
        return [{"ulps": contraction_ulps(),
                 "scale": np.broadcast_to(largest, (3,) + largest.shape)}]
    if name == "average":  # (sum(w x) / sum(w), sum(w)), w >= 0: both sums' errors add up
        return [{"ulps": reassociation_ulps(2 * n, 1), "scale": sums(w * a) / sums(w)},
                {"ulps": reassociation_ulps(n)}]
    return [{}, {}]


def test_jit_with_where_initial_and_traced_q():
    x = make((3, 4), "float32", seed=3)
    mask = make((3, 4), "bool", seed=4)

    def f(a, m, q):
        return (tnp.sum(a, axis=1, where=m, initial=2.0), tnp.max(a, where=m, initial=-5.0),
                tnp.mean(a, axis=0, where=m), tnp.var(a, where=m, ddof=1),
                tnp.nanquantile(a, q, axis=0), tnp.cumsum(a, axis=1), a.sum(axis=0))
    q = np.float32(0.3)
    eager, jitted = f(x, mask, q), tracejit.jit(f)(x, mask, q)
    want = (jnp.sum(x, axis=1, where=mask, initial=2.0), jnp.max(x, where=mask, initial=-5.0),
            jnp.mean(x, axis=0, where=mask), jnp.var(x, where=mask, ddof=1),
            jnp.nanquantile(x, q, axis=0), jnp.cumsum(x, axis=1), x.sum(axis=0))
    for i, (e, j, w) in enumerate(zip(eager, jitted, want)):
        if i == 4:  # nanquantile's interpolation, lo * (1 - t) + hi * t: jit contracts its
            # first product into the sum (backend/llvm/contraction.py), eager rounds both
            np.testing.assert_array_max_ulp(np.asarray(e), np.asarray(j), maxulp=1)
        else:
            np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
        np.testing.assert_allclose(np.asarray(e), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_reductions_in_jaxpr_use_reduce_primitives():
    jaxpr = str(tracejit.make_jaxpr(lambda x: (tnp.sum(x, axis=0), tnp.max(x), tnp.all(x > 0),
                                               tnp.argmin(x, axis=1)))(M23))
    for prim in ("reduce_sum", "reduce_max", "reduce_and", "argmin"):
        assert prim in jaxpr


# --- 64-bit mode ---------------------------------------------------------------------------

X64_CASES = [("sum", "int32"), ("sum", "uint8"), ("sum", "bool"), ("prod", "int8"),
             ("mean", "int64"), ("mean", "float64"), ("var", "int32"), ("std", "float64"),
             ("argmax", "float64"), ("cumsum", "int32"), ("cumsum", "uint32"),
             ("cumulative_sum", "uint8"), ("cumulative_sum", "int16"), ("max", "uint64"),
             ("median", "int64"), ("nanmean", "float64"), ("count_nonzero", "float64"),
             ("average", "int64"), ("quantile", "float64")]


@pytest.mark.parametrize("name,dtype", X64_CASES)
def test_x64_dtypes(x64, name, dtype):
    x = make((3, 4), dtype)
    args = (x, 0.3) if name == "quantile" else (x,)
    kw = {"axis": 1}
    got = getattr(tnp, name)(tnp.asarray(x), *args[1:], **kw)
    want = getattr(jnp, name)(*args, **kw)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def _max_min_ref(v, is_max, axis):
    """NumPy's max (min), NaN-propagating, with a zero result +0 (-0) where that zero is among
    the values: -0 < +0, as JAX (NumPy returns either zero)."""
    got = np.max(v, axis=axis) if is_max else np.min(v, axis=axis)
    wanted = (v == 0) & (np.signbit(v) != is_max)  # +0 for a max, -0 for a min
    zero_sign = ~np.any(wanted, axis=axis) if is_max else np.any(wanted, axis=axis)
    return np.where(got == 0, np.where(zero_sign, -0.0, 0.0), got).astype(v.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("llvm_17", [True, False], ids=["intrinsic", "flagged"])
def test_max_min_of_computed_values_propagate_nan_and_order_zeros(monkeypatch, dtype, llvm_17):
    """A max (min) of values fused into its loop, over rows and over the whole array: NaN if any
    element is, +0 above -0, as JAX. `flagged` is LLVM 15's form (maxnum marked nnan nsz beside
    a NaN flag and a zero flag: reductions._flagged_step), run here on whatever LLVM this is."""
    from tracejit.backend.llvm import reductions
    monkeypatch.setattr(reductions, "LLVM_17", llvm_17)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(8, 1003)).astype(dtype)
    x[1, 500] = np.nan                       # a NaN among values
    x[2] = -np.abs(x[2])
    x[2, [3, 700]] = [-0.0, 0.0]             # the max of row 2 is a zero of either sign
    x[3] = -np.abs(x[3])
    x[3, 5] = -0.0                           # ... only -0
    x[4] = np.abs(x[4])
    x[4, [9, 1000]] = [0.0, -0.0]            # the min of row 4 is a zero of either sign
    x[5] = np.abs(x[5])
    x[5, 1002] = 0.0                         # ... only +0
    x[6] = -np.inf
    x[7, 0] = np.nan                         # a NaN first
    with tracejit.enable_x64(dtype == np.float64):
        for red in (tnp.max, tnp.min):
            for axis in (1, None):
                for rows in ((0, 1, 2, 3, 4, 5, 6, 7), (2,), (3,), (4,), (5,), (2, 3), (4, 5)):
                    # (a fresh function each time: no program compiled with the other form)
                    def f(x, red=red, axis=axis):
                        return red(x * dtype(2.0), axis=axis)
                    v = x[list(rows)]
                    got = np.asarray(tracejit.jit(f)(v))
                    want = _max_min_ref(v * dtype(2.0), red is tnp.max, axis)
                    np.testing.assert_array_equal(got, want)
                    assert (np.signbit(got) == np.signbit(want)).all(), (red, axis, rows)


def _blocked_column_sums(rows: np.ndarray) -> np.ndarray:
    """The order reductions._blocked_column_sum adds a float32 (rows, columns) array's rows in:
    blocks of 64 rows added one by one from zero, the block sums combined by a binary counter
    (level k holds the sum of 2^k blocks), then the levels the final count's bits name, the
    smallest first."""
    levels, count = {}, 0
    for start in range(0, len(rows), 64):
        block = np.zeros(rows.shape[1], np.float32)
        for r in rows[start:start + 64]:
            block = block + r
        k = 0
        while count >> k & 1:
            block = levels[k] + block
            k += 1
        levels[k] = block
        count += 1
    total = np.zeros(rows.shape[1], np.float32)
    for k in range(count.bit_length()):
        if count >> k & 1:
            total = total + levels[k]
    return total


@pytest.mark.parametrize("shape,axes", [((6, 40, 30, 16), (1, 2)), ((5, 200, 8), (1,)),
                                        ((3, 4, 70, 5, 9), (1, 2, 3)), ((64, 96, 96, 8), (1, 2))])
@pytest.mark.parametrize("threads", [1, 2])
def test_sums_over_middle_axes_add_each_leading_indexs_rows_in_blocks(shape, axes, threads, rng):
    """A float sum over middle axes, the last kept, sums each leading index's rows on its own
    (reductions._blocked_column_sum, on the pool for the last shape): the blocked order's bits
    for either thread count."""
    tracejit.config.update("tracejit_num_threads", threads)
    x = rng.standard_normal(shape).astype(np.float32)
    got = np.asarray(tracejit.jit(lambda a: tnp.sum(a, axis=axes))(x))
    rows = int(np.prod([shape[d] for d in axes]))
    assert got.shape == tuple(shape[d] for d in range(len(shape)) if d not in axes)
    for b in range(shape[0]):
        each = np.moveaxis(x[b], [d - 1 for d in axes], range(len(axes))).reshape(rows, -1)
        np.testing.assert_array_equal(got[b].reshape(-1), _blocked_column_sums(each))
    from tracejit.backend.llvm import parallel_loops
    compiled = tracejit.jit(lambda a: tnp.sum(a, axis=axes)).lower(x).compile()
    (eqn,) = compiled._executable.jaxpr.eqns
    assert parallel_loops.candidate(eqn)  # (its leading indices shared out on the pool)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_,
                                   np.float16])
@pytest.mark.parametrize("shape,axis", [((7, 300), 0), ((6, 300), 0), ((3, 5, 40), 1),
                                        ((2, 9, 4, 33), 1), ((5, 2, 70), 0)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_along_a_leading_axis_walks_rows(dtype, shape, axis, name, rng,
                                                   monkeypatch):
    """Along an axis before the last, rows of the best so far are compared with each row in
    turn (reductions._argminmax_rows, odd and even row counts): NumPy's first best, or first
    NaN, with ties and NaNs in every column; the loop it replaced walked each column alone."""
    from tracejit.backend.llvm import reductions
    walked = []
    rows = reductions._argminmax_rows
    monkeypatch.setattr(reductions, "_argminmax_rows", lambda *a: walked.append(1) or rows(*a))
    x = rng.integers(-3, 4, shape).astype(dtype) if dtype != np.bool_ else \
        rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[::17] = np.nan
    got = np.asarray(tracejit.jit(lambda a: getattr(tnp, name)(a, axis=axis))(x))
    np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis))
    assert got.dtype == np.int32 and walked
