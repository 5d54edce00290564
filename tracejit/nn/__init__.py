"""tracejit.nn: activation functions and friends (jax.nn), built from tracejit.numpy and lax.

Each function follows JAX's formulation step for step, so dtypes, weak types and special values
(inf, NaN, -inf rows) come out as in JAX; the ones JAX wraps in `jit` are jitted here too.
"""
from __future__ import annotations

import functools
import operator
import warnings
from typing import Any, Sequence

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


__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
    "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign",
    "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus", "standardize", "swish",
    "tanh",
]

from . import initializers  # noqa: F401  (jax.nn.initializers)
