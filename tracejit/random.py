"""tracejit.random: JAX's functional PRNG (`jax.random`), bit-identical to JAX's threefry2x32,
rbg and unsafe_rbg streams.

Keys are raw key data (`PRNGKey`: uint32[2], or uint32[4] for rbg) or typed key arrays (`key`,
dtype `key<fry>`, `key<rbg>`, `key<urbg>`); inside, every sampler works on typed keys (raw data
is wrapped as the default implementation's, as JAX does), so each key operation is its
implementation's. Every sampler follows JAX's algorithm step by step on top of `prng`'s bits
with lax and jnp ops, so it works eagerly, under jit, inside loops and under vmap.
"""
from __future__ import annotations

import functools
import math
import operator
import typing
import warnings
from typing import Any, Sequence

import numpy as np

from . import prng
from .lax import lenient as lax
from . import numpy as jnp
from .core import dtypes, key_reuse
from .core.config import config
from .core.array import Array, BaseArray
from .core.avals import check_shape
from .core.trace import Tracer, concrete_value, get_aval
from .lax._base import canonicalize_axis
from .numpy._util import broadcast_shapes, check_arraylike, promote_dtypes_inexact
from .prng import PRNGKeyArray
from .transforms.custom import custom_jvp
from .transforms.custom_batching import sequential_vmap

# JAX 0.12's annotation for a typed key (`def f(key: jax.random.Key)`), a NewType of Array
Key = typing.NewType("Key", BaseArray)

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "split", "fold_in",
           "bits", "uniform", "normal", "truncated_normal", "bernoulli", "randint", "choice",
           "permutation", "categorical", "gumbel", "exponential", "laplace", "logistic",
           "cauchy", "gamma", "loggamma", "beta", "dirichlet", "poisson", "multivariate_normal",
           "orthogonal", "rademacher", "t", "chisquare", "f", "pareto", "lognormal",
           "weibull_min", "rayleigh", "wald", "triangular", "maxwell", "double_sided_maxwell",
           "generalized_normal", "ball", "geometric", "binomial", "multinomial", "clone",
           "key_dtype"]

# --- keys ----------------------------------------------------------------------------------------

def _is_arraylike(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)) or \
        hasattr(x, "__jax_array__")


# what consumes a typed key under jax_debug_key_reuse, named as JAX's check names it: split and
# bits bind a primitive of their own; every sampler is a jitted function in JAX
_CONSUMERS = {"split": "random_split", "bits": "random_bits"}
_NOT_CONSUMING = frozenset({"fold_in", "key_data", "key_impl"})


def _check_prng_key(name: str, key: Any, allow_batched: bool = False
                    ) -> tuple[PRNGKeyArray, bool]:
    """(the keys as a typed key array, whether `key` was one), with JAX's errors for bad keys.
    Raw key data is read as keys of the default implementation, as JAX wraps it. The typed
    array returned is a new one over the same data: what the caller draws from it (a sampler
    built on another, as choice on randint) is not a second use of the caller's key."""
    if isinstance(key, PRNGKeyArray):
        keys, typed = PRNGKeyArray(key._base_array, key.impl), True
        if config.jax_debug_key_reuse and name not in _NOT_CONSUMING:
            key_reuse.consume(key, _CONSUMERS.get(name, "jit"))
    elif _is_arraylike(key):
        impl = _default_impl()  # (raw key data is read as the default implementation's)
        prng.check_key_data(key, impl)
        keys, typed = PRNGKeyArray(jnp.asarray(key), impl), False
        legacy = config.jax_legacy_prng_key
        if legacy != "allow":
            message = ("Legacy uint32 key array passed as key to jax.random function. Please "
                       "create keys using jax.random.key(). If use of a raw key array was "
                       'intended, set jax_legacy_prng_key="allow".')
            if legacy == "error":
                raise ValueError(message)
            warnings.warn(message, stacklevel=3)
        elif config.jax_enable_custom_prng:
            warnings.warn("Raw arrays as random keys to jax.random functions are deprecated. "
                          "Assuming valid threefry2x32 key for now.", FutureWarning,
                          stacklevel=3)
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if keys.shape and not allow_batched:
        shape = keys.shape if typed else get_aval(keys._base_array).shape
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape} != (). Use jax.vmap for batching.")
    return keys, typed


def _keys_like(typed: bool, keys: PRNGKeyArray) -> Any:
    """New keys as the argument was (typed or raw data); typed always under
    jax_enable_custom_prng, as JAX returns them then."""
    return keys if typed or config.jax_enable_custom_prng else keys._base_array


# the implementations JAX knows; tracejit has those of prng.PRNGS
_JAX_IMPLS = ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32")


def _not_implemented(impl: str) -> NotImplementedError:
    names = ", ".join(f'"{name}"' for name in prng.PRNGS)
    return NotImplementedError(
        f'the "{impl}" PRNG implementation is not available in tracejit, whose jax.random '
        f"produces JAX's {names} streams only (bit for bit): use one of those (as impl=, or "
        'with jax.config.update("jax_default_prng_impl", ...))')


def _default_impl() -> prng.PRNGImpl:
    """jax_default_prng_impl: the implementation of keys made without `impl` and of raw keys."""
    name = config.jax_default_prng_impl
    if name not in prng.PRNGS:
        raise _not_implemented(name)
    return prng.PRNGS[name]


def _impl_arg(name: str, impl: Any, dtype: Any = None) -> prng.PRNGImpl:
    """The implementation an `impl=` (a name or a key dtype) or `dtype=` argument names."""
    if dtype is not None:
        if impl is not None:
            raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to {name}")
        impl = dtype
    if impl is None:
        return _default_impl()
    if isinstance(impl, prng.KeyTy):
        return impl._impl
    if isinstance(impl, prng.PRNGImpl):
        return impl
    if isinstance(impl, str):
        if impl in prng.PRNGS:
            return prng.PRNGS[impl]
        if impl in _JAX_IMPLS:
            raise _not_implemented(impl)
        names = ", ".join(f'"{name}"' for name in prng.PRNGS)
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         f"{names}?")
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


def _seed(ctor: str, seed: Any, impl: prng.PRNGImpl) -> PRNGKeyArray:
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
    if _shape_of(seed):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                        f"{_shape_of(seed)} != (). Use jax.vmap for batching")
    return prng.random_seed(seed, impl)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802 - JAX's name
    """Raw key data from an integer seed (64-bit seeds use both words under x64): uint32[2]
    for threefry2x32, uint32[4] for rbg and unsafe_rbg."""
    impl = _impl_arg("jax.random.PRNGKey", impl)
    return _keys_like(False, _seed("PRNGKey", seed, impl))


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed scalar key (dtype key<fry>, key<rbg>, key<urbg>) from an integer seed."""
    return _seed("key", seed, _impl_arg("jax.random.key", impl, dtype))


def key_data(keys: Any) -> Any:
    """The uint32 key data (shape (*keys.shape, *key_shape)) under typed or raw keys."""
    keys_, _ = _check_prng_key("key_data", keys, allow_batched=True)
    return keys_._base_array


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """Typed keys over uint32 key data whose last axis holds the key's words."""
    impl = _impl_arg("jax.random.wrap_key_data", impl, dtype)
    prng.check_key_data(key_bits_array, impl)
    return PRNGKeyArray(jnp.asarray(key_bits_array), impl)


def key_impl(keys: Any) -> str:
    keys_, _ = _check_prng_key("key_impl", keys, allow_batched=True)
    return keys_.impl.name


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """`num` new keys (an int or a shape), stacked on a new leading axis."""
    keys, typed = _check_prng_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (operator.index(num),)
    return _keys_like(typed, prng.random_split(keys, check_shape(shape, "num")))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from `key` and 32-bit integer data (converted to uint32 as in JAX)."""
    key_data_, typed = _check_prng_key("fold_in", key)
    if _shape_of(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                        f"{_shape_of(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, int) and not 0 <= data < 2 ** 32:
        raise OverflowError(f"Python integer {data} out of bounds for uint32")
    return _keys_like(typed, prng.random_fold_in(key_data_, jnp.asarray(data, dtype=np.uint32)))


# --- shapes and dtypes ---------------------------------------------------------------------------

def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    if param_shapes:
        shape_ = broadcast_shapes(shape, *param_shapes)
        if shape != shape_:
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             "argument, and the result of broadcasting the shapes must equal the "
                             f"shape argument, but got result {shape_} for shape argument "
                             f"{shape}.")


def _check_broadcast_shapes(name: str, shape: Any, *args: Any) -> tuple[int, ...]:
    arg_shapes = [_shape_of(a) for a in args]
    if shape is None:
        return broadcast_shapes(*arg_shapes) if arg_shapes else ()
    shape = check_shape(shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _shape_of(x: Any) -> tuple[int, ...]:
    return tuple(get_aval(x).shape) if isinstance(x, Tracer) else np.shape(x)


def _float_dtype(name: str, dtype: Any, kinds: str = "float") -> np.dtype:
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    ok = dtypes.is_float(dtype) or (kinds == "inexact" and dtype.kind == "c")
    if not ok:
        what = "a float or complex" if kinds == "inexact" else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dtype}")
    return dtype


def _int_dtype(dtype: Any) -> np.dtype:
    return dtypes.default_int() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")


def _const(dtype: np.dtype, value: Any) -> Any:
    return lax.convert_element_type(np.array(value, dtype), dtype)


def _bcast(x: Any, shape: tuple[int, ...], op: str) -> Any:
    """x (rank-extended to len(shape)) broadcast to `shape`; JAX's lax errors otherwise."""
    aval = get_aval(x)
    if aval.shape == shape or aval.ndim == 0:
        return x
    if aval.ndim != len(shape):
        raise TypeError(f"{op}: arrays must have the same number of dimensions, got "
                        f"{ {aval.ndim, len(shape)} }")
    if any(d not in (1, s) for d, s in zip(aval.shape, shape)):
        raise TypeError(f"{op} got incompatible shapes for broadcasting: {shape}, {aval.shape}.")
    return jnp.broadcast_to(x, shape)


# --- bits and uniform ----------------------------------------------------------------------------

def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (default uint32; uint64 under x64)."""
    data, _ = _check_prng_key("bits", key)
    dtype = dtypes.default_uint() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return prng.random_bits(data, dtype.itemsize * 8, check_shape(shape))


def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval): mantissa bits of 1.0 + random, minus 1 (JAX's)."""
    data, _ = _check_prng_key("uniform", key)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    shape = check_shape(shape)
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
    return _uniform(data, minval, maxval, shape, dtype)


def _uniform(keys: Any, minval: Any, maxval: Any, shape: tuple[int, ...], dtype: np.dtype):
    """Uniform floats of shape (*keys.shape, *shape)."""
    out_shape = (*keys.shape, *shape)
    rank = len(out_shape)
    minval = lax.broadcast_to_rank(lax.convert_element_type(minval, dtype), rank)
    maxval = lax.broadcast_to_rank(lax.convert_element_type(maxval, dtype), rank)
    finfo = dtypes.finfo_of(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    raw = prng.random_bits(keys, rng_bits, shape)
    uint = np.dtype(f"uint{nbits}")
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    float_bits = lax.bitwise_or(lax.shift_right_logical(raw, _const(uint, rng_bits - nmant)),
                                _const(uint, np.array(1.0, dtype).view(uint)))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), _const(dtype, 1.0))
    low = _bcast(minval, out_shape, "mul")
    span = _bcast(lax.sub(_bcast(maxval, out_shape, "sub"), low), out_shape, "mul")
    if dtype.itemsize >= 4:  # XLA's CPU backend contracts this multiply-add into one FMA
        scaled = lax.fma(floats, span, low)
    else:  # half types compute each op in float32 and round in between: no contraction
        scaled = lax.add(lax.mul(floats, span), low)
    return lax.max(_bcast(minval, out_shape, "max"), scaled)


# --- normal family -------------------------------------------------------------------------------

def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal: √2 · erf_inv(u) for u uniform on (nextafter(-1, 0), 1), as JAX; complex
    dtypes take real and imaginary parts from two subkeys, scaled by 1/√2."""
    data, _ = _check_prng_key("normal", key)
    shape = check_shape(shape)
    dtype = _float_dtype("normal", dtype, "inexact")
    if dtype.kind == "c":
        key_re, key_im = _split2(data)
        real = np.dtype(f"float{dtype.itemsize * 4}")
        re = lax.convert_element_type(_normal_real(key_re, shape, real), dtype)
        im = lax.convert_element_type(_normal_real(key_im, shape, real), dtype)
        return lax.div(lax.add(re, lax.mul(_const(dtype, 1j), im)), _const(dtype, np.sqrt(2)))
    return _normal_real(data, shape, dtype)


def _normal_real(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(keys, lo, 1.0, shape, dtype)
    return lax.mul(_const(dtype, np.sqrt(2)), lax.erf_inv(u))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = None) -> Any:
    """Normal samples truncated to the open interval (lower, upper), by inverting the CDF."""
    shape = None if shape is None else check_shape(shape)
    data, _ = _check_prng_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    # JAX divides by √2; XLA folds that into a multiply by the rounded reciprocal
    inv_sqrt2 = _const(dtype, np.array(1, dtype) / sqrt2)
    a = lax.erf(lax.mul(lower, inv_sqrt2))
    b = lax.erf(lax.mul(upper, inv_sqrt2))
    sqrt2 = _const(dtype, sqrt2)
    out = lax.mul(sqrt2, lax.erf_inv(_uniform(data, a, b, shape, dtype)))
    # rounding (or drawing `a` itself) must not push a sample onto or past a bound
    return jnp.clip(out, lax.nextafter(lax.stop_gradient(lower), _const(dtype, np.inf)),
                    lax.nextafter(lax.stop_gradient(upper), _const(dtype, -np.inf)))


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """mean + factor(cov) @ z for standard normal z; factor by Cholesky ('cholesky'), the
    eigendecomposition ('eigh') or the SVD ('svd') of cov, as JAX."""
    data, _ = _check_prng_key("multivariate_normal", key)
    mean, cov = promote_dtypes_inexact(jnp.asarray(mean), jnp.asarray(cov))
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = get_aval(mean).dtype if dtype is None else dtypes.check_user_dtype(dtype, fun_name="")
    if not dtypes.is_float(dtype):
        raise ValueError("dtype argument to `multivariate_normal` must be a float dtype, got "
                         f"{dtype}")
    mean_shape, cov_shape = get_aval(mean).shape, get_aval(cov).shape
    if len(mean_shape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{len(mean_shape)}")
    if len(cov_shape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{len(cov_shape)}")
    n = mean_shape[-1]
    if cov_shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                         f"got cov.shape == {cov_shape}.")
    if shape is None:
        shape = broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    else:
        shape = check_shape(shape)
        _check_shape("normal", shape, mean_shape[:-1], cov_shape[:-2])
    # the factor as JAX computes it (LAPACK through lax.linalg)
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _normal_real(data, (*shape, n), dtype)
    return jnp.add(mean, jnp.einsum("...ij,...j->...i", factor, z))


def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None,
               m: int | None = None) -> Any:
    """A uniformly random (semi-)orthogonal n x m matrix: Q of the QR decomposition of a normal
    matrix, with column signs fixed so that R has a positive diagonal."""
    m_ = n if m is None else m
    shape = check_shape(shape)
    data, _ = _check_prng_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype)
    n = operator.index(concrete_value(n, "The error occurred in jax.random.orthogonal()"))
    m_ = operator.index(concrete_value(m_, "The error occurred in jax.random.orthogonal()"))
    z = _normal_real(data, (*shape, max(n, m_), min(n, m_)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m_ else x


# --- discrete samplers ---------------------------------------------------------------------------

def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None,
              mode: str = "low") -> Any:
    """Booleans that are True with probability p: uniform(p.dtype) < p ('high': 2 draws)."""
    shape = None if shape is None else check_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    data, _ = _check_prng_key("bernoulli", key)
    dtype = get_aval(p).dtype
    if not dtypes.is_float(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    p = lax.convert_element_type(p, dtype)
    if shape is None:
        shape = get_aval(p).shape
    else:
        _check_shape("bernoulli", shape, get_aval(p).shape)
    if mode == "high":
        u = _uniform(data, 0.0, 1.0, (2, *shape), dtype)
        u1, u2 = u[0], u[1]
        u2 = lax.mul(u2, _const(dtype, 2.0 ** -dtypes.finfo_of(dtype).nmant))
        return jnp.less(u2, jnp.subtract(p, u1))
    return jnp.less(_uniform(data, 0.0, 1.0, shape, dtype), p)


def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability (2 * bernoulli - 1)."""
    data, _ = _check_prng_key("rademacher", key)
    dtype = _int_dtype(dtype)  # (bernoulli of the same key: one use of it, not a second)
    b = jnp.asarray(bernoulli(data, 0.5, check_shape(shape))).astype(dtype)
    return (2 * b - 1).astype(dtype)


def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    """val converted to integer dtype, clipped to its range instead of wrapping."""
    val_dtype = get_aval(val).dtype
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(val_dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(val_dtype).max))
    return jnp.clip(val, _const(val_dtype, lo), _const(val_dtype, hi)).astype(dtype)


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in [minval, maxval) by JAX's algorithm: two words of random bits per value,
    reduced modulo the span (span 1 where maxval <= minval, so minval is returned)."""
    data, _ = _check_prng_key("randint", key)
    dtype = _int_dtype(dtype)
    shape = check_shape(shape)
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    info = np.iinfo(dtype)
    sample_dtype = dtype
    if info.bits < 32:  # sampled at 32 bits to keep the modulo bias small
        sample_dtype = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min),
                          int(info.max) + 1)
    return _randint(data, minval, maxval, shape, sample_dtype).astype(dtype)


def _randint(keys: Any, minval: Any, maxval: Any, shape: tuple[int, ...], dtype: np.dtype):
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    check_arraylike("randint", minval, maxval)
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    if not dtypes.is_int(get_aval(minval).dtype):
        minval = minval.astype(int)
    if not dtypes.is_int(get_aval(maxval).dtype):
        maxval = maxval.astype(int)
    # maxval above dtype's range (e.g. 256 for uint8): the span must be one larger
    top = _convert_and_clip_integer(jnp.array(np.iinfo(dtype).max, dtype),
                                    get_aval(maxval).dtype)
    maxval_out_of_range = _bcast(lax.broadcast_to_rank(lax.gt(maxval, top), len(shape)), shape,
                                 "select")
    minval = _bcast(lax.broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape)),
                    shape, "sub")
    maxval = _bcast(lax.broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape)),
                    shape, "sub")
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split2(keys)
    higher_bits = prng.random_bits(k1, nbits, shape)
    lower_bits = prng.random_bits(k2, nbits, shape)
    unsigned = np.dtype(f"uint{nbits}")
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    # the full range wraps span to 0, and x % 0 == x keeps all the bits, as intended
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, _const(unsigned, 1)), span)
    # (hi * 2**nbits + lo) % span, without overflow: 2**nbits % span from its square root
    multiplier = lax.rem(_const(unsigned, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def _split2(keys: PRNGKeyArray) -> tuple[Any, Any]:
    """split(key) into two keys (for a batch of keys at once)."""
    return _split_n(keys, 2)


def _split_n(keys: PRNGKeyArray, num: int) -> list:
    new = prng.random_split(keys, (num,))._base_array
    axis = keys.ndim
    return [PRNGKeyArray(lax.squeeze(lax.slice_in_dim(new, i, i + 1, axis=axis), (axis,)),
                         keys.impl) for i in range(num)]


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of range(x) (int x) or of x along `axis` (every slice on its own
    with independent=True): sorts by random 32-bit keys, repeated for large sizes."""
    data, _ = _check_prng_key("permutation", key)
    check_arraylike("permutation", x)
    ndim = len(_shape_of(x))
    axis = canonicalize_axis(axis, ndim or 1)
    if not ndim:
        if not dtypes.is_int(get_aval(x).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(concrete_value(x, "argument x of jax.random.permutation()"))
        return _shuffle(data, jnp.arange(r), axis)
    x = jnp.asarray(x)
    if independent or ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, jnp.arange(get_aval(x).shape[axis]), 0)
    return jnp.take(x, ind, axis, unique_indices=True)


def _shuffle(keys: Any, x: Any, axis: int) -> Any:
    # Sorting by random 32-bit keys, repeated so that ties become unlikely (tjablin@'s rule in
    # JAX and TensorFlow): rounds = ceil(3 * ln(size) / ln(2**32 - 1)).
    size = math.prod(get_aval(x).shape)
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        keys, subkey = _split2(keys)
        sort_keys = prng.random_bits(subkey, 32, get_aval(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """Random elements of `a` (or of range(a)) along `axis`: randint, a permutation's prefix,
    inverse-CDF search over cumsum(p), or the Gumbel top-k trick (p without replacement)."""
    data, _ = _check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    check_arraylike("choice", a)
    arr = jnp.asarray(a)
    arr_shape = get_aval(arr).shape
    if not arr_shape:
        n_inputs = int(concrete_value(a, "The error occurred in jax.random.choice()"))
    else:
        axis = canonicalize_axis(axis, len(arr_shape))
        n_inputs = arr_shape[axis]
    shape = check_shape(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=get_aval(arr).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(data, shape, 0, n_inputs)
            result = ind if not arr_shape else jnp.take(arr, ind, axis)
        else:
            perm = permutation(data, n_inputs if not arr_shape else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis if arr_shape else 0)
    else:
        check_arraylike("choice", p)
        (p_arr,) = promote_dtypes_inexact(jnp.asarray(p))
        if get_aval(p_arr).shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {get_aval(p_arr).shape} and a.shape[axis] is "
                             f"{n_inputs}.")
        p_dtype = get_aval(p_arr).dtype
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            u = uniform(data, shape, dtype=p_dtype)
            r = jnp.multiply(p_cuml[-1], jnp.subtract(1, u))
            ind = jnp.searchsorted(p_cuml, r).astype(int)
        else:  # Gumbel top-k: the k largest of log(p) + Gumbel noise
            g = jnp.add(gumbel(data, (n_inputs,), dtype=p_dtype, mode=mode), jnp.log(p_arr))
            ind = lax.top_k(g, n_draws)[1].astype(int)
        result = ind if not arr_shape else jnp.take(arr, ind, axis)
    return result.reshape(shape if not arr_shape else
                          arr_shape[:axis] + tuple(shape) + arr_shape[axis + 1:])


def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Indices drawn with probabilities softmax(logits, axis): argmax of logits + Gumbel noise
    (with replacement) or its top-k (without)."""
    data, _ = _check_prng_key("categorical", key)
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    logits_shape = get_aval(logits).shape
    ndim = len(logits_shape)
    batch_shape = tuple(np.delete(np.array(logits_shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = check_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    dtype = get_aval(logits).dtype
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= ndim
        noise_shape = list(shape[len(shape) - len(batch_shape):])
        noise_shape.insert(axis % ndim, logits_shape[axis])
        noise = gumbel(data, (*prefix, *noise_shape), dtype, mode=mode)
        return jnp.argmax(jnp.add(noise, lax.expand_dims(logits, tuple(range(len(prefix))))),
                          axis=axis)
    logits = jnp.add(logits, gumbel(data, logits_shape, dtype, mode=mode))
    k = math.prod(prefix)
    if k > logits_shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits_shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
    nd = get_aval(indices).ndim
    return lax.reshape(indices, shape, (nd - 1, *range(nd - 1)))


# --- continuous samplers by inversion ------------------------------------------------------------

def _sampler_dtype(name: str, key: Any, shape: Sequence[int], dtype: Any):
    data, _ = _check_prng_key(name, key)
    return data, check_shape(shape), _float_dtype(name, dtype)


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """-log(1 - u), computed as -log1p(-u)."""
    data, shape, dtype = _sampler_dtype("exponential", key, shape, dtype)
    return _exponential(data, shape, dtype)


def _exponential(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(keys, 0.0, 1.0, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """sign(u) * log1p(-|u|) for u uniform on (-1, 1)."""
    data, shape, dtype = _sampler_dtype("laplace", key, shape, dtype)
    u = _uniform(data, -1.0 + dtypes.finfo_of(dtype).epsneg, 1.0, shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """log(x) - log1p(-x) for x uniform on [tiny, 1)."""
    data, shape, dtype = _sampler_dtype("logistic", key, shape, dtype)
    x = _uniform(data, dtypes.finfo_of(dtype).tiny, 1.0, shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """tan(pi * (u - 1/2)) for u uniform on [eps, 1)."""
    data, shape, dtype = _sampler_dtype("cauchy", key, shape, dtype)
    u = _uniform(data, dtypes.finfo_of(dtype).eps, 1.0, shape, dtype)
    return lax.tan(lax.mul(_const(dtype, np.pi), lax.sub(u, _const(dtype, 0.5))))


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None,
           mode: str | None = None) -> Any:
    """-log(-log(u)); mode 'high' spends two uniforms per value for a longer tail, 'highest'
    (float32) builds u from 64 random bits."""
    data, shape, dtype = _sampler_dtype("gumbel", key, shape, dtype)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel(data, shape, dtype, mode)


def _gumbel(keys: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    info = dtypes.finfo_of(dtype)
    if dtype == np.float32 and mode == "highest":
        raw = prng.random_bits(keys, 32, (2, *shape))
        neg = lax.bitwise_not(raw)
        lo_bits = neg[1]
        # 1 - bits in 64-bit fixed point
        carry = lax.convert_element_type(lax.eq(lo_bits, _const(np.uint32, 2 ** 32 - 1)),
                                         np.uint32)
        neg = lax.add(neg, jnp.stack([carry, jnp.ones_like(lo_bits)]))
        flip = jnp.less(raw[0], _const(np.uint32, 2 ** 31))
        x = _safe_int_to_float(jnp.where(flip, raw, neg))
        return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
    if mode in ("high", "highest"):
        u = _uniform(keys, 0.0, 1.0, (2, *shape), dtype)
        high, low = u[0], u[1]
        x = jnp.where(high >= 0.5, high,
                      high + _const(dtype, 2.0 ** -info.nmant) * low + _const(dtype, info.tiny))
        return -jnp.log(-jnp.log1p(-x))
    u = _uniform(keys, info.tiny, 1.0, shape, dtype)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _safe_int_to_float(words: Any) -> Any:
    """A pair of uint32 words (2, ...) read as a 64-bit fraction, as float32 in (0, 1)."""
    finfo = np.finfo(np.float32)
    hiclz, loclz = lax.clz(words[0]), lax.clz(words[1])
    hi, lo = words[0], words[1]
    u32 = np.uint32
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                  lax.shift_right_logical(lo, lax.sub(_const(u32, finfo.bits), hiclz))))
    mantissa = lax.shift_right_logical(mantissa, _const(u32, finfo.bits - finfo.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, _const(u32, (1 << finfo.nmant) - 1))
    exponent = lax.sub(_const(u32, -finfo.minexp),
                       jnp.where(hiclz == 32, lax.add(_const(u32, 32), loclz), hiclz))
    exponent = lax.shift_left(exponent, _const(u32, finfo.nmant))
    exponent = lax.bitwise_and(exponent, _const(
        u32, (1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


# --- gamma family --------------------------------------------------------------------------------

def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) samples by Marsaglia and Tsang's method (JAX's loop structure, per element
    with its own key from split(key, a.size))."""
    data, _ = _check_prng_key("gamma", key)
    dtype = _float_dtype("gamma", dtype)
    return _gamma(data, a, None if shape is None else check_shape(shape), dtype, False)


def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) samples, computed in log space (accurate for small a)."""
    data, _ = _check_prng_key("loggamma", key)
    dtype = _float_dtype("gamma", dtype)
    return _gamma(data, a, None if shape is None else check_shape(shape), dtype, True)


def _gamma(keys: Any, a: Any, shape: tuple[int, ...] | None, dtype: np.dtype,
           log_space: bool) -> Any:
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    a = lax.convert_element_type(a, dtype)
    if get_aval(a).shape != shape:
        a = jnp.broadcast_to(a, shape)
    size = math.prod(shape)
    if size == 0:
        return a
    lanes = prng.random_split(keys, (size,))
    alpha = lax.reshape(a, (size,))
    return lax.reshape(_gamma_lanes(lanes._base_array, alpha, log_space, lanes.impl), shape)


@functools.partial(custom_jvp, nondiff_argnums=(2, 3))
def _gamma_lanes(lane_keys: Any, alpha: Any, log_space: bool, impl: prng.PRNGImpl) -> Any:
    """Gamma samples for every lane (key data i, alpha i). threefry keys: all lanes at once, as
    JAX's vmap; other implementations lane after lane, as JAX computes them: a vmapped
    rng_bit_generator would draw every lane's bits from the first lane's key."""
    if impl is prng.THREEFRY:
        return _gamma_one(PRNGKeyArray(lane_keys, impl), alpha, log_space)
    return _gamma_lane_by_lane(log_space, impl)(lane_keys, alpha)


@functools.cache
def _gamma_lane_by_lane(log_space: bool, impl: prng.PRNGImpl):
    """lax.map of `_gamma_one` over the lanes; under vmap, a loop over the batch too (JAX's
    batching rule of random_gamma maps over the batch's lanes and the lanes alike)."""
    def lanes(lane_keys, alpha):
        return lax.map(lambda lane: _gamma_one(PRNGKeyArray(lane[0], impl), lane[1], log_space),
                       (lane_keys, alpha))
    return sequential_vmap(lanes)


def _gamma_one(keys: PRNGKeyArray, alpha: Any, log_space: bool) -> Any:
    """JAX's `_gamma_one` for every lane (key i, alpha i) at once: loops run until every lane
    is done and a lane's state only changes while its own condition holds, which is what
    JAX's vmapped while loops compute."""
    dtype = get_aval(alpha).dtype

    def c(v):
        return lax.full_like(alpha, v)

    zero, one = c(0), c(1)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, c(1 / 3))
    cc = lax.mul(c(1 / 3), lax.rsqrt(d))  # XLA rewrites a / sqrt(b) as a * rsqrt(b)

    # the multiply-adds below are fused as XLA's CPU backend contracts them in JAX's loops
    def keep_going(state):
        _, x, v, u = state
        squeeze_ok = lax.ge(u, lax.fma(lax.neg(lax.mul(x, x)), c(0.0331), one))
        log_ok = lax.ge(lax.log(u), lax.fma(x, c(0.5), lax.mul(d, lax.add(lax.sub(one, v),
                                                                          lax.log(v)))))
        return lax.bitwise_and(squeeze_ok, log_ok)

    def next_xv(state):
        keys_, _, _ = state
        keys_, subkey = _split2(keys_)
        x = _normal_real(subkey, (), dtype)
        return keys_, x, lax.fma(x, cc, one)

    def body(state):
        keys_, x_key, u_key = _split_n(state[0], 3)
        _, x, v = _masked_while(lambda s: lax.le(s[2], zero), next_xv, (x_key, zero, c(-1)))
        return keys_, lax.mul(x, x), lax.mul(lax.mul(v, v), v), _uniform(u_key, 0.0, 1.0, (),
                                                                          dtype)

    keys, subkey = _split2(keys)
    _, _, v, _ = _masked_while(keep_going, body, (keys, zero, one, c(2)))
    if log_space:
        log_samples = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    samples = lax.sub(one, _uniform(subkey, 0.0, 1.0, (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


@_gamma_lanes.defjvp
def _gamma_lanes_jvp(log_space, impl, primals, tangents):
    """JAX's implicit reparameterisation gradient: the sample moves with alpha at a fixed CDF
    value, dx/dalpha = -(dP/dalpha) / (dP/dx) (lax.random_gamma_grad); d log x = dx / x."""
    keys, alpha = primals
    alpha_dot = tangents[1]
    sample = _gamma_lanes(keys, alpha, log_space, impl)
    if log_space:
        # exp(log sample) may round to 0: use the smallest normal instead, as JAX does
        x = lax.exp(sample)
        x = lax.select(lax.eq(x, lax.full_like(x, 0)),
                       lax.full_like(x, dtypes.finfo_of(get_aval(x).dtype).tiny), x)
        grad = lax.div(lax.random_gamma_grad(alpha, x), x)
    else:
        grad = lax.random_gamma_grad(alpha, sample)
    return sample, lax.mul(grad, alpha_dot)


def _masked_while(lane_cond, body, state):
    """A while loop over lanes: runs while any lane's condition holds; other lanes keep their
    state. Keys (the first element, of shape (lanes,)) are masked like the rest."""
    def cond(s):
        return jnp.any(lane_cond(s))

    def select(active, new, old):
        if isinstance(new, PRNGKeyArray):
            return PRNGKeyArray(select(active, new._base_array, old._base_array), new.impl)
        return lax.select(_expand_mask(active, get_aval(new).shape), new, old)

    def masked_body(s):
        active = lane_cond(s)
        return tuple(select(active, n, o) for n, o in zip(body(s), s))
    return lax.while_loop(cond, masked_body, state)


def _expand_mask(mask: Any, shape: tuple[int, ...]) -> Any:
    if get_aval(mask).shape == shape:
        return mask
    return lax.broadcast_in_dim(mask, shape, tuple(range(get_aval(mask).ndim)))


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) = G_a / (G_a + G_b), from log-gamma samples rescaled by their maximum."""
    data, _ = _check_prng_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    _check_all_safe_to_cast("beta", dtype, a, b)
    shape = _check_broadcast_shapes("beta", shape, a, b)
    key_a, key_b = _split2(data)
    a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
    log_gamma_a = _gamma(key_a, a, shape, dtype, True)
    log_gamma_b = _gamma(key_b, b, shape, dtype, True)
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a = lax.exp(lax.sub(log_gamma_a, log_max))
    gamma_b = lax.exp(lax.sub(log_gamma_b, log_max))
    return lax.div(gamma_a, lax.add(gamma_a, gamma_b))


def _check_all_safe_to_cast(name: str, dtype: np.dtype, *args: Any) -> None:
    for arg in args:
        aval = get_aval(arg)
        if not aval.weak_type and not np.can_cast(aval.dtype, dtype, "same_kind"):
            raise TypeError(f"In arguments to {name}, cannot safely cast argument of type "
                            f"{aval.dtype} to {dtype}")


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """softmax of log-gamma samples with concentrations alpha (last axis)."""
    from .nn import softmax
    data, _ = _check_prng_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    alpha_shape = _shape_of(alpha)
    if len(alpha_shape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{len(alpha_shape)}")
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        shape = check_shape(shape)
        _check_shape("dirichlet", shape, alpha_shape[:-1])
    alpha = lax.convert_element_type(alpha, dtype)
    log_gamma_samples = _gamma(data, alpha, (*shape, alpha_shape[-1]), dtype, True)
    return softmax(log_gamma_samples, -1)


def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson(lam) counts: Knuth's product of uniforms for lam < 10, Hormann's transformed
    rejection otherwise (both run over the whole array, as in JAX)."""
    data, _ = _check_prng_key("poisson", key)
    if data.impl is not prng.THREEFRY:  # (JAX's check: its poisson assumes threefry's keys)
        raise NotImplementedError("`poisson` is only implemented for the threefry2x32 RNG, not "
                                  f"{data.impl.name}")
    dtype = _int_dtype(dtype)
    if not dtypes.is_int(dtype):
        raise ValueError(f"Invalid integer data type '{dtype.char}'.")
    shape = _shape_of(lam) if shape is None else check_shape(shape)
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    # rejection's acceptance rate approaches 89% as lam grows: any large value serves here
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    max_iters = np.iinfo(dtype).max
    result = _by_lane(use_knuth, dtype,
                      lambda: _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                      lambda: _poisson_rejection(data, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


def _by_lane(use_first: Any, dtype: np.dtype, first: Any, second: Any) -> Any:
    """first() where `use_first`, second() elsewhere (both of use_first's shape and `dtype`),
    as JAX's select of both methods' samples (poisson's, binomial's); but a method no lane
    takes is skipped (lax.cond), not run as a rejection loop over parameters chosen only to
    end it soon. Both draw from the same key, so the samples are the same bits either way."""
    none = functools.partial(jnp.zeros, get_aval(use_first).shape, dtype)
    return lax.select(use_first, lax.cond(jnp.any(use_first), first, none),
                      lax.cond(jnp.all(use_first), none, second))


def _poisson_knuth(keys, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _split2(rng)
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _uniform(subkey, 0.0, 1.0, shape, np.dtype(np.float32))
        return i + 1, k, rng, log_prod + jnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return jnp.any(log_prod > -lam) & (i < _const(dtype, max_iters))

    k_init = lax.full_like(lam, 0, dtype, shape)
    log_rate_init = lax.full_like(lam, 0, np.float32, shape)
    k = lax.while_loop(cond, body, (_const(dtype, 0), k_init, keys, log_rate_init))[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(keys, lam, shape, dtype, max_iters):
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    f32 = np.dtype(np.float32)

    def body(carry):
        i, k_out, accepted, rng = carry
        rng, subkey_0, subkey_1 = _split_n(rng, 3)
        u = _uniform(subkey_0, 0.0, 1.0, shape, f32) - 0.5
        v = _uniform(subkey_1, 0.0, 1.0, shape, f32)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        return i + 1, lax.select(accept, k, k_out), accepted | accept, rng

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < _const(dtype, max_iters))

    k_init = lax.full_like(lam, -1, f32, shape)
    accepted = lax.full_like(lam, False, np.bool_, shape)
    k = lax.while_loop(cond, body, (_const(dtype, 0), k_init, accepted, keys))[1]
    return k.astype(dtype)


# the samplers derived from the ones above (imported last: that module builds on this one)
from .random_derived import (  # noqa: E402
    ball, binomial, chisquare, clone, double_sided_maxwell, f, generalized_normal, geometric,
    key_dtype, lognormal, maxwell, multinomial, pareto, rayleigh, t, triangular, wald,
    weibull_min)
