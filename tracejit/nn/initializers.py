"""tracejit.nn.initializers: JAX's layer initializers (`jax.nn.initializers`), user-facing, built
from tracejit.random and tracejit.numpy step for step as JAX's, so the same key, shape and dtype
give the same bits.

`out_sharding` is accepted for JAX's signatures: with one device every sharding puts the whole
array there, so it changes nothing (orthogonal and delta_orthogonal refuse it, as JAX does).
"""
from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np

from .. import numpy as jnp
from .. import random
from ..core import dtypes
from ..core.avals import check_shape

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]

RealNumeric = Any  # a float or a scalar array


@typing.runtime_checkable
class Initializer(Protocol):
    """What the builders below return: `init(key, shape, dtype=None, out_sharding=None)`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        raise NotImplementedError


def _dtype_or_default(dtype: Any) -> Any:
    return dtypes.default_float() if dtype is None else dtype


def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of zeros (the key is ignored)."""
    return jnp.zeros(shape, _dtype_or_default(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of ones (the key is ignored)."""
    return jnp.ones(shape, _dtype_or_default(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """Builds an initializer of arrays full of `value`; `dtype` is its default dtype."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        return jnp.full(shape, value, dtype=_dtype_or_default(dtype))
    return init


def uniform(scale: RealNumeric = 1e-2, dtype: Any = None) -> Initializer:
    """Builds an initializer of values uniform in [0, scale)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _dtype_or_default(dtype)
        return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
    return init


def normal(stddev: RealNumeric = 1e-2, dtype: Any = None) -> Initializer:
    """Builds an initializer of normal values with mean 0 and standard deviation `stddev`."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _dtype_or_default(dtype)
        return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
    return init


def truncated_normal(stddev: RealNumeric = 1e-2, dtype: Any = None, lower: RealNumeric = -2.0,
                     upper: RealNumeric = 2.0) -> Initializer:
    """Builds an initializer of standard normal values truncated to (lower, upper), then
    multiplied by `stddev` (no variance correction: that is the caller's choice)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        dtype = _dtype_or_default(dtype)
        return (random.truncated_normal(key, lower, upper, shape, dtype)
                * jnp.array(stddev, dtype))
    return init


def _compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2,
                  out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    """Effective input and output sizes of a dense or convolutional kernel: axes not named
    in, out or batch form the receptive field and multiply both."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional"
                         " weights tensor with default in_axis. Must be at least 2D or specify"
                         " in_axis explicitly.")

    def size(axes: int | Sequence[int]) -> int:
        return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)

    in_size, out_size = size(in_axis), size(out_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / size(batch_axis)
    return in_size * receptive_field_size, out_size * receptive_field_size


def _to_complex_dtype(real_dtype: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if real_dtype == np.float64 else np.complex64)


def _complex_uniform(key: Any, shape: Sequence[int], dtype: Any) -> Any:
    """Uniform values on the unit-variance disk of the complex plane."""
    key_r, key_theta = random.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    dtype = _to_complex_dtype(real_dtype)
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: Any, shape: Sequence[int], dtype: Any) -> Any:
    """Complex normal values (variance one before truncation) with modulus below `upper`."""
    key_r, key_theta = random.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    dtype = _to_complex_dtype(real_dtype)
    t = ((1 - jnp.exp(jnp.array(-(upper ** 2), dtype)))
         * random.uniform(key_r, shape, real_dtype).astype(dtype))
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * jnp.exp(1j * theta)


_Mode = Literal["fan_in", "fan_out", "fan_avg", "fan_geo_avg"]
_Distribution = Literal["truncated_normal", "normal", "uniform"]


def variance_scaling(scale: RealNumeric, mode: _Mode, distribution: _Distribution,
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Builds an initializer whose samples have variance scale / n, n the fan chosen by `mode`
    ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"), drawn from `distribution`: a normal
    truncated at two standard deviations, a normal, or a uniform interval (a uniform disk for
    complex dtypes)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        shape = check_shape(shape)
        dtype = _dtype_or_default(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            if dtypes.issubdtype(dtype, np.floating):
                # the standard deviation of a standard normal truncated to (-2, 2)
                stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            # ... and of a complex standard normal truncated to modulus 2
            stddev = jnp.sqrt(variance) / jnp.array(.95311164380491208, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.sqrt(variance)
        if distribution == "uniform":
            if dtypes.issubdtype(dtype, np.floating):
                return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
    return init


def glorot_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                   batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) uniform: variance_scaling(1.0, "fan_avg", "uniform")."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) normal: variance_scaling(1.0, "fan_avg", "truncated_normal")."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun uniform: variance_scaling(1.0, "fan_in", "uniform")."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun normal: variance_scaling(1.0, "fan_in", "truncated_normal")."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
               batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) uniform: variance_scaling(2.0, "fan_in", "uniform")."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
              batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) normal: variance_scaling(2.0, "fan_in", "truncated_normal")."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                            out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: RealNumeric = 1.0, column_axis: int = -1,
               dtype: Any = None) -> Initializer:
    """Builds an initializer of uniformly random orthogonal matrices (orthonormal rows or
    columns, whichever side is smaller), times `scale`; `column_axis` holds the columns."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        if out_sharding is not None:
            raise NotImplementedError
        dtype = _dtype_or_default(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(dim == 0 for dim in shape):
            return jnp.zeros(shape, dtype=dtype)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.array(scale, dtype) * q
    return init


def delta_orthogonal(scale: RealNumeric = 1.0, column_axis: int = -1,
                     dtype: Any = None) -> Initializer:
    """Builds an initializer of delta-orthogonal convolution kernels (3-D to 5-D): zero but
    for an orthogonal matrix at the spatial centre (arXiv:1806.05393)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        if out_sharding is not None:
            raise NotImplementedError
        dtype = _dtype_or_default(dtype)
        if len(shape) not in [3, 4, 5]:
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho_matrix = orthogonal(scale=scale, column_axis=column_axis,
                                  dtype=dtype)(key, shape[-2:])
        w = jnp.zeros(shape, dtype=dtype)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return w.at[(*centre, ...)].set(ortho_matrix)
    return init
