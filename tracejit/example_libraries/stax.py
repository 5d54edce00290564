"""`jax.example_libraries.stax`: a layer is a pair (init_fun(rng, input_shape) -> (output_shape,
params), apply_fun(params, inputs, **kwargs) -> outputs); combinators compose pairs. Keys are
split in JAX's order, so the same key gives the same initial parameters."""
from __future__ import annotations

import functools
import math

from ..lax import lenient as lax
from .. import numpy as jnp
from .. import random
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                  softplus, standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):  # noqa: N802,B008 (JAX's names)
    """A fully-connected layer: inputs @ W + b."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape) -> list[int]:
    lhs_spec, rhs_spec, _ = dimension_numbers
    spatial = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else
            next(spatial) for c in rhs_spec]


def _general_conv(transposed: bool):
    def layer(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
              W_init=None, b_init=normal(1e-6)):  # noqa: N803,B008 (JAX's names)
        _, rhs_spec, out_spec = dimension_numbers
        one = (1,) * len(filter_shape)
        strides = strides or one
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

        def init_fun(rng, input_shape):
            kernel = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
            shape_of = lax.conv_transpose_shape_tuple if transposed else \
                lax.conv_general_shape_tuple
            output_shape = shape_of(input_shape, kernel, strides, padding, dimension_numbers)
            k1, k2 = random.split(rng)
            bias = [out_chan if c == "C" else 1 for c in out_spec]
            return output_shape, (W_init(k1, kernel), b_init(k2, bias))

        def apply_fun(params, inputs, **kwargs):
            W, b = params
            if transposed:
                return lax.conv_transpose(inputs, W, strides, padding,
                                          dimension_numbers=dimension_numbers) + b
            return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                            dimension_numbers=dimension_numbers) + b
        return init_fun, apply_fun
    return layer


GeneralConv = _general_conv(False)
GeneralConv.__doc__ = "A convolution layer in any layout (lax.conv_general_dilated) plus a bias."
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1D = functools.partial(GeneralConv, ("NHC", "HIO", "NHC"))
GeneralConvTranspose = _general_conv(True)
GeneralConvTranspose.__doc__ = "A transposed convolution layer (lax.conv_transpose) plus a bias."
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):  # noqa: N802
        """A pooling layer: lax.reduce_window over the spatial dimensions."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        fixed = (0, len(window_shape) + 1) if spec is None else \
            (spec.index("N"), spec.index("C"))
        for i in sorted(fixed):  # batch and features: windows of one
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            ones = (1,) * len(window_shape)
            return lax.reduce_window_shape_tuple(input_shape, window_shape, strides, pads,
                                                 ones, ones), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
    """AvgPool's divisor: how many real (unpadded) elements each window covers."""
    def rescale(outputs, inputs, spec):
        fixed = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in fixed)
        sizes = lax.reduce_window(jnp.ones(spatial, dtype=inputs.dtype), 0., lax.add, dims,
                                  strides, padding)
        for i in sorted(fixed):
            sizes = jnp.expand_dims(sizes, i)
        return outputs / sizes
    return rescale


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,  # noqa: N802
              beta_init=zeros, gamma_init=ones):
    """Normalizes over `axis` (statistics of the batch itself), then scales and shifts."""
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying `fun(inputs, **fun_kwargs)`."""
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)

# parameterless layers are values, as in JAX (Flatten, Identity and FanInSum are not called)
Flatten = (lambda rng, input_shape: ((input_shape[0], math.prod(input_shape[1:])), ()),
           lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)
FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanOut(num):  # noqa: N802
    """A layer that hands its input on `num` times (a list)."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


def FanInConcat(axis=-1):  # noqa: N802
    """A layer that concatenates a list of inputs along `axis`."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return input_shape[0][:ax] + (size,) + input_shape[0][ax + 1:], ()
    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):  # noqa: N802
    """In 'train' mode, keeps each input with probability `rate` (scaled by 1/rate), as
    JAX's stax does; needs `rng=` at apply time."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
                "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
                "inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def serial(*layers):
    """The layers one after another; each gets its own key split off in turn."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side: the i-th applies to the i-th of a sequence of inputs."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by `make_layer(input_shape)` once the input shape is known."""
    return (lambda rng, input_shape: make_layer(input_shape)[0](rng, input_shape),
            lambda params, inputs, **kwargs: make_layer(inputs.shape)[1](params, inputs,
                                                                         **kwargs))
