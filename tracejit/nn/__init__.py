"""tracejit.nn: activation functions and friends (jax.nn), built from tracejit.numpy and lax.

Each function follows JAX's formulation step for step, so dtypes, weak types and special values
(inf, NaN, -inf rows) come out as in JAX; the ones JAX wraps in `jit` are jitted here too.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..core.config import config
from ..core.trace import Tracer, concrete_value, get_aval
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis
from ..numpy._util import asarray, check_arraylike, promote_args_inexact
from ..runtime.jit import jit
from ..transforms.api import custom_jvp

Axis = int | Sequence[int] | None

tanh = jnp.tanh


def _arraylike(name: str, *args: Any) -> Any:
    """JAX's ensure_arraylike: reject lists/objects with `name` in the message, then asarray."""
    check_arraylike(name, *args)
    out = [asarray(a) for a in args]
    return out[0] if len(out) == 1 else out


# --- elementwise activations ---------------------------------------------------------------

@jit
def identity(x: Any) -> Any:
    """The argument unchanged (as an array)."""
    return _arraylike("identity", x)


@custom_jvp
@jit
def relu(x: Any) -> Any:
    """max(x, 0); its derivative at 0 is 0 (max's own rule would give 1/2)."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x: Any) -> Any:
    """min(max(x, 0), 6); its derivative at 0 and at 6 is 0."""
    return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x: Any, b: Any = 4) -> Any:
    """(x + sqrt(x² + b)) / 2."""
    x, b = _arraylike("squareplus", x, b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@jit
def softplus(x: Any) -> Any:
    """log(1 + exp(x)), as logaddexp(x, 0) so large |x| neither overflows nor loses digits."""
    return jnp.logaddexp(x, 0)


@jit
def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, (x + 1)²/4 in between, x for x >= 1."""
    x = _arraylike("sparse_plus", x)
    return jnp.where(x <= -1., 0., jnp.where(x >= 1., x, (x + 1.) ** 2 / 4))


@jit
def soft_sign(x: Any) -> Any:
    """x / (|x| + 1)."""
    x = _arraylike("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@jit(inline=True)
def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)) (lax.logistic: float inputs only, as in JAX)."""
    return lax.logistic(x)


@jit
def sparse_sigmoid(x: Any) -> Any:
    """(x + 1) / 2 clipped to [0, 1]."""
    return 0.5 * jnp.clip(x + 1., 0., 2.)


@jit
def silu(x: Any) -> Any:
    """x * sigmoid(x)."""
    x = _arraylike("silu", x)
    return x * sigmoid(x)


swish = silu


@jit
def mish(x: Any) -> Any:
    """x * tanh(softplus(x))."""
    x = _arraylike("mish", x)
    return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x)."""
    x = _arraylike("log_sigmoid", x)
    return -softplus(-x)


@jit
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _arraylike("elu", x)
    # expm1 sees only the non-positive part, so large x cannot overflow into the other branch
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x for x >= 0, negative_slope * x otherwise."""
    x = _arraylike("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1] (integer inputs stay integers)."""
    x = _arraylike("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)."""
    return jnp.maximum(x, 0.) + alpha * jnp.expm1(jnp.minimum(x, 0.) / alpha)


@jit
def selu(x: Any) -> Any:
    """scale * elu(x, alpha) with the self-normalising constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit: the tanh approximation, or exactly x/2 * erfc(-x/√2)."""
    (x,) = promote_args_inexact("gelu", x)
    dtype = get_aval(x).dtype
    if approximate:
        # NumPy scalars of x's dtype are strongly typed: the result is never weak, as in JAX
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(dtype)
        cdf = 0.5 * (1. + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * x ** 3)))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(dtype)
    return jnp.array(0.5 * x * lax.erfc(-x * sqrt_half), dtype=dtype)


@jit
def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6."""
    return relu6(x + 3.) / 6.


@jit
def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x)."""
    x = _arraylike("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x: Any) -> Any:
    """log(1 - exp(-x)) for x >= 0, switching formulas at log 2 to keep precision."""
    x = _arraylike("log1mexp", x)
    c = jnp.log(2.)
    return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


@jit(static_argnames=("axis",))
def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: the first half of `axis` times sigmoid of the second half."""
    x = _arraylike("glu", x)
    if x.shape[axis] % 2:
        raise AssertionError("axis size must be divisible by 2")  # JAX asserts here
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


# --- reductions: logsumexp, softmax and friends --------------------------------------------

def _reduction_dims(ndim: int, axis: Axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list, np.ndarray)) else (axis,)
    dims = tuple(canonicalize_axis(a, ndim) for a in axes)
    if len(set(dims)) != len(dims):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return dims


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) over `axis`, shifted by the maximum so nothing overflows.

    With `return_sign`, returns (log|s|, sign(s)); otherwise a negative sum gives NaN.
    """
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = jnp.where(b != 0, a, -np.inf)
    else:
        (a,) = promote_args_inexact("logsumexp", a)
    aval = get_aval(a)
    dims = _reduction_dims(aval.ndim, axis)
    amax = jnp.max(a.real, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    # an all -inf (or empty, or inf) slice is shifted by 0 instead, giving -inf (or inf/NaN)
    amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, 0))
    amax_with_dims = amax if keepdims else lax.expand_dims(amax, dims)
    exp_a = jnp.exp(jnp.subtract(a, amax_with_dims.astype(aval.dtype)))
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    complex_out = dtypes.issubdtype(aval.dtype, np.complexfloating)
    if return_sign or not complex_out:
        sumexp = jnp.abs(sumexp)
    out = lax.add(lax.log(sumexp), amax.astype(get_aval(sumexp).dtype))
    if return_sign:
        return out, sign
    if b is not None and not complex_out:
        out = jnp.where(sign < 0, jnp.array(np.nan, dtype=get_aval(out).dtype), out)
    return out


def _count(x: Any, axis: Axis, keepdims: bool, where: Any, dtype: np.dtype) -> Any:
    """How many elements a reduction over `axis` (under `where`) sees, as `dtype`."""
    shape = get_aval(x).shape
    if where is None:
        dims = _reduction_dims(len(shape), axis)
        return jnp.array(int(np.prod([shape[d] for d in dims])), dtype=dtype)
    return jnp.sum(jnp.broadcast_to(where, shape), axis, dtype=dtype, keepdims=keepdims)


@jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """log(mean(exp(x))) = logsumexp(x) - log(n)."""
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    count = _count(x, axis, keepdims, where, get_aval(lse).dtype)
    return lse - jnp.log(count)


@jit(static_argnames=("axis",))
def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """x - logsumexp(x) along `axis`; masked-out elements give -inf."""
    x = _arraylike("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return jnp.where(where, result, -np.inf)
    return result


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum; masked-out elements give 0.

    Any +inf in a slice makes that slice NaN (inf / inf), as in JAX.
    """
    if config.jax_softmax_custom_jvp:  # (JAX's upgrade: the JVP written out, y·(ẋ − Σyẋ))
        return _softmax(x, axis, where, -np.inf)
    return _softmax_formula(x, axis, where, -np.inf, lax.stop_gradient)


def _softmax_formula(x: Any, axis: Axis, where: Any, initial: Any, shift_gradient) -> Any:
    x_max = jnp.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, initial)
    # JAX's default formulation (jax_softmax_custom_jvp=False): the shift carries no gradient
    unnormalized = jnp.exp(x_safe - shift_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x: Any, axis: Axis, where: Any, initial: Any) -> Any:
    return _softmax_formula(x, axis, where, initial, lambda v: v)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x, where, initial), (x_dot, _, _) = primals, tangents
    y = _softmax(x, axis, where, initial)
    return y, y * (x_dot - (y * x_dot).sum(axis, where=where, keepdims=True))


@jit(static_argnames=("axis", "algorithm"))
def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None, *, algorithm: str = "fast") -> Any:
    """(x - mean) / sqrt(variance + epsilon) along `axis`.

    algorithm="fast" takes the variance as mean(x²) - mean(x)² (clipped at 0, JAX's default);
    "stable" as mean((x - mean)²).
    """
    check_arraylike("standardize", x)
    for name, v in (("mean", mean), ("variance", variance), ("where", where)):
        if v is not None:
            check_arraylike("standardize", v, names=[name])
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True,
                                where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - \
                jnp.square(mean)
            variance = jnp.clip(variance, 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# --- one_hot -------------------------------------------------------------------------------

@jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x: Any, num_classes: int, *, dtype: Any, axis: int) -> Any:
    aval = get_aval(x)
    out_axis = canonicalize_axis(axis, aval.ndim + 1)
    lhs = lax.expand_dims(x, (out_axis,))
    rhs_shape = [1] * aval.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(aval.dtype, rhs_shape, out_axis)
    return (lhs == rhs).astype(dtype)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """Encode integer indices as one-hot vectors along a new `axis`; indices outside
    [0, num_classes) give all zeros."""
    context = "The error arose in jax.nn.one_hot argument `num_classes`."
    if isinstance(num_classes, Tracer):
        num_classes = concrete_value(num_classes, context)
    num_classes = operator.index(num_classes)
    x = jnp.asarray(x)
    if not dtypes.is_int(get_aval(x).dtype):
        warnings.warn(f"jax.nn.one_hot input should be integer-typed; got "
                      f"dtype={get_aval(x).dtype}", DeprecationWarning, stacklevel=2)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype)
    return _one_hot(x, num_classes, dtype=dtype, axis=axis)


# --- dot_product_attention -----------------------------------------------------------------
# Shapes: B batch, T query length, S key/value length, N query heads, K key/value heads (N is a
# multiple of K), G = N // K query heads per key/value head, H head size. The query is viewed
# as (B, T, K, G, H) so grouped-query attention is one einsum, with no copies of key or value.

def _to_4d(x: Any) -> Any:
    x = jnp.asarray(x)
    ndim = get_aval(x).ndim
    return lax.expand_dims(x, tuple(range(4 - ndim))) if ndim < 4 else x


def _check_shape_and_dtype(x: Any, shape: Sequence[int], dtype: Any, name: str) -> None:
    if x is None:
        return
    aval = get_aval(x)
    if aval.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {aval.ndim}")
    if dtype is not None and aval.dtype != dtype:
        raise ValueError(f"{name} dtype should be {np.dtype(dtype)}, but got {aval.dtype}")
    if any(want != -1 and got != want for got, want in zip(aval.shape, shape)):
        raise ValueError(f"{name} shape should be {list(shape)}: but got {aval.shape}")


def _check_broadcast(named: dict, logits_shape: tuple) -> None:
    """bias and mask must broadcast to the logits (B, N, T, S); their heads axis is 1 or N."""
    for name, x in named.items():
        if x is not None and get_aval(x).shape[1] not in (1, logits_shape[1]):
            # (JAX asserts here)
            raise AssertionError(f"dot_product_attention: {name} of shape {get_aval(x).shape} "
                                 f"has {get_aval(x).shape[1]} heads; it must have 1 or the "
                                 f"query's {logits_shape[1]}")
    for name, x in named.items():
        if x is not None and any(d not in (1, want)
                                 for d, want in zip(get_aval(x).shape, logits_shape)):
            raise TypeError(f"dot_product_attention: {name} of shape {get_aval(x).shape} does "
                            f"not broadcast to the logits' (B, N, T, S) = {logits_shape}")


def _grouped(x: Any, num_heads: int, num_kv_heads: int) -> Any:
    """A 4-D bias or mask (b, n, t, s), n in (1, N), as (b, K or 1, G or 1, t, s)."""
    if x is None:
        return None
    b, n, t, s = get_aval(x).shape
    if n == 1:
        return lax.expand_dims(x, (2,))
    return lax.reshape(x, (b, num_kv_heads, num_heads // num_kv_heads, t, s))


def _attention_mask(mask: Any, T: int, S: int, is_causal: bool,
                    local_window_size: tuple | None, q_seqlen: Any, kv_seqlen: Any) -> Any:
    """Where a logit (B, K, G, T, S) takes part, as one broadcastable boolean, or None."""
    # every part of rank 5, so numpy_rank_promotion="raise" has nothing to object to
    q_pos = lax.broadcasted_iota(np.int32, (1, 1, 1, T, S), 3)
    k_pos = lax.broadcasted_iota(np.int32, (1, 1, 1, T, S), 4)
    parts = [] if mask is None else [mask]
    if is_causal:
        parts.append(k_pos <= q_pos)
    if local_window_size is not None:
        left, right = local_window_size
        parts.append((q_pos <= k_pos + left) & (q_pos >= k_pos - right))
    if q_seqlen is not None:
        parts.append(q_pos < q_seqlen[:, None, None, None, None])
    if kv_seqlen is not None:
        parts.append(k_pos < kv_seqlen[:, None, None, None, None])
    return functools.reduce(operator.and_, parts) if parts else None


@functools.partial(jit, static_argnames=("is_causal", "local_window_size", "return_residual"))
def _dot_product_attention(query, key, value, bias, mask, scale, q_seqlen, kv_seqlen, *,
                           is_causal: bool, local_window_size: tuple | None,
                           return_residual: bool):
    B, T, N, H = get_aval(query).shape
    S, K = get_aval(key).shape[1:3]
    G = N // K
    dtype = get_aval(query).dtype
    logits_dtype = jnp.promote_types(dtype, np.float32)
    query = lax.reshape(query, (B, T, K, G, H))
    # (JAX asks for the BF16_BF16_F32 / F16_F16_F32 algorithm for half types: what a half-type
    # dot_general with a float32 result computes here anyway)
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * jnp.array(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, N, K)).astype(logits_dtype)
    keep = _attention_mask(_grouped(mask, N, K), T, S, is_causal, local_window_size,
                           q_seqlen, kv_seqlen)
    if keep is not None:
        # a large finite negative, not -inf: a fully masked row averages the values uniformly
        # (float32's range caps it, since the softmax below is float32 whatever the inputs)
        big = -0.7 * min(jnp.finfo(logits_dtype).max, np.finfo(np.float32).max)
        logits = jnp.where(keep, logits, jnp.asarray(big, dtype=logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(get_aval(key).dtype)
    out = jnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if q_seqlen is not None:  # query rows past their length give zeros
        valid = lax.broadcasted_iota(np.int32, (B, T), 1) < q_seqlen[:, None]
        out = out * valid[:, :, None, None, None].astype(get_aval(out).dtype)
    out = lax.reshape(out, (B, T, N, H))
    if not return_residual:
        return out
    lse = logsumexp(logits, axis=-1).astype(get_aval(key).dtype)  # (B, K, G, T)
    lse = lax.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return out, lax.stop_gradient(lse)


def _refuse_cudnn(is_causal: bool, padded: bool, local_window_size: tuple | None) -> None:
    """JAX's cuDNN path on a machine without cuDNN: its one argument check, then its error."""
    if local_window_size is not None:
        causal_only = is_causal and not padded
        if local_window_size[1] != 0 and not causal_only:
            raise ValueError(f"cuDNN doesn't support right window: {local_window_size[1]} "
                             "when causal mask is not used.")
    raise RuntimeError("cuDNN is not detected. (tracejit runs on the CPU: use "
                       "implementation='xla' or None.)")


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: Any = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, softmax(scale · Q Kᵀ + bias, masked) V, per head.

    query (B, T, N, H) or (T, N, H); key and value (B, S, K, H) or (S, K, H) with N a multiple
    of K (grouped-query attention). bias and mask (boolean, True takes part) broadcast to
    (B, N, T, S). scale defaults to 1/√H. is_causal, local_window_size ((left, right) or one
    int for both) and the int32 sequence lengths (B,) mask further; query rows past their length
    come out zero. The logits are computed in float32 at least and the softmax in float32, as in
    JAX. With return_residual, also returns the logsumexp of the logits, (B, T, N) or (T, N).
    """
    output_shape = get_aval(jnp.asarray(query)).shape
    query, key, value = _to_4d(query), _to_4d(key), _to_4d(value)
    bias = None if bias is None else _to_4d(bias)
    mask = None if mask is None else _to_4d(mask)
    q_seqlen = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_seqlen = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if local_window_size is not None:
        if isinstance(local_window_size, (int, np.integer)):
            local_window_size = (local_window_size, local_window_size)
        local_window_size = tuple(local_window_size)
        if len(local_window_size) != 2:
            raise ValueError("local_window_size should be an int or a (left, right) pair, but "
                             f"got {local_window_size}")
    key_aval = get_aval(key)
    if key_aval.ndim != 4:
        raise ValueError(f"key ndim should be 4, but got {key_aval.ndim}")
    B, S, K, H = key_aval.shape
    _check_shape_and_dtype(value, [B, S, K, H], key_aval.dtype, "value")
    _check_shape_and_dtype(query, [B, -1, -1, H], key_aval.dtype, "query")
    _check_shape_and_dtype(mask, [-1] * 4, np.bool_, "mask")
    _check_shape_and_dtype(bias, [-1] * 4, None, "bias")
    _check_shape_and_dtype(q_seqlen, [B], np.int32, "query_seq_lengths")
    _check_shape_and_dtype(kv_seqlen, [B], np.int32, "key_value_seq_lengths")
    N = get_aval(query).shape[2]
    if N % K != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, "
                         f"but got {N} vs {K}")
    _check_broadcast({"bias": bias, "mask": mask}, (B, N, get_aval(query).shape[1], S))
    scale = 1.0 / np.sqrt(H) if scale is None else scale
    if implementation == "cudnn":
        _refuse_cudnn(bool(is_causal), q_seqlen is not None or kv_seqlen is not None,
                      local_window_size)
    elif implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out = _dot_product_attention(query, key, value, bias, mask, scale, q_seqlen, kv_seqlen,
                                 is_causal=bool(is_causal), local_window_size=local_window_size,
                                 return_residual=bool(return_residual))
    if return_residual:
        out, residual = out
        return lax.reshape(out, output_shape), lax.reshape(residual, output_shape[:-1])
    return lax.reshape(out, output_shape)


# --- block-scaled matrix products -----------------------------------------------------------

def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """Block-scaled batched matmul (JAX 0.12's CPU semantics): lhs (B, M, K) and rhs (B, N, K)
    times their scales (B, M, Kb) and (B, N, Kb) repeated over blocks of K // Kb along K, all
    cast to `preferred_element_type` first, then contracted over K: (B, M, N).

    tracejit has no float8/float4 arrays, so the operands are of its own types (float32,
    bfloat16, ...). JAX 0.10 raises NotImplementedError for this on the CPU.
    """
    arrays = (lhs, rhs, lhs_scales, rhs_scales)
    if not all(get_aval(x).ndim == 3 for x in arrays):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    a, b, a_scales, b_scales = (get_aval(x).shape for x in arrays)
    if a[2] != b[2] or a[0] != b[0]:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a} and {b}")
    if a_scales[2] != b_scales[2] or a_scales[0] != b_scales[0]:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a_scales} and {b_scales}")
    if a_scales[1] != a[1] or b_scales[1] != b[1]:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {a}, b: {b}, a_scales: {a_scales}, "
                         f"b_scales: {b_scales}")
    if a_scales[2] == 0 or a[2] % a_scales[2]:
        raise TypeError(f"scaled_matmul: the contracting size {a[2]} must be a multiple of the "
                        f"scales' {a_scales[2]} blocks")
    dtype = dtypes.check_user_dtype(preferred_element_type, "preferred_element_type",
                                    "scaled_matmul")
    return _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, dtype=dtype)


@functools.partial(jit, static_argnames=("dtype",))
def _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, *, dtype):
    def scaled(x, scales):
        B, M, K = get_aval(x).shape
        blocks = get_aval(scales).shape[2]
        x = lax.reshape(x.astype(dtype), (B, M, blocks, K // blocks))
        return lax.reshape(x * scales.astype(dtype)[..., None], (B, M, K))
    return lax.dot_general(scaled(lhs, lhs_scales), scaled(rhs, rhs_scales),
                           (((2,), (2,)), ((0,), (0,))), preferred_element_type=dtype)


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How scaled_dot_general quantizes an operand (JAX's class of this name)."""
    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """The BlockScaleConfig of JAX 0.12 for 'nvfp4', 'mxfp8' or 'mxfp4'."""
    import ml_dtypes
    if mode == "nvfp4":
        return BlockScaleConfig(
            "nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
            jnp.asarray(1.0, np.float32) if global_scale is None else global_scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu,
                                None, False)
    if mode == "mxfp4":
        if global_scale is not None:
            raise ValueError("mxfp4 does not use a global_scale; its E8M0 block scales cover "
                             "the whole range.")
        return BlockScaleConfig("mxfp4", 32, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu,
                                None, False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32,
                       configs: Sequence[BlockScaleConfig] | None = None,
                       implementation: str | None = None) -> Any:
    """lax.dot_general with block-scaled quantization of both operands (and of the cotangent)
    as `configs` say. Without configs, lax.dot_general with `preferred_element_type`.

    With configs it raises NotImplementedError: the quantization rounds to float8/float4
    types, which tracejit has not got (JAX 0.10 on the CPU raises NotImplementedError too).
    """
    if implementation is not None:
        warnings.warn("Backend selector, now ignored. The system chooses the backend "
                      "automatically.", DeprecationWarning, stacklevel=2)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    raise NotImplementedError(
        "jax.nn.scaled_dot_general with block-scale configs quantizes its operands to "
        "float8/float4 types, which tracejit does not have yet; pass configs=None for "
        "lax.dot_general, or quantize yourself and call jax.nn.scaled_matmul")


__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity", "leaky_relu",
    "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot",
    "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu", "sigmoid", "silu",
    "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish", "tanh",
]

from . import initializers  # noqa: F401  (jax.nn.initializers)
