"""1-D and 2-D float convolutions moved to channels-last 2-D layouts (a pass, after
conv_phases).

The native backend's register-blocked kernels (backend/llvm/convolution.py) need a forward
convolution's input and output with their features innermost (NHWC), and a weight gradient's
(its batch the input's features, its window as large as the output gradient) with that batch
innermost. Any other layout -- NCHW, lax's default and equinox's -- ran im2col and a gemm
after copying its input features-last. Here such a convolution becomes transposes around the
same convolution in those layouts: the transposes are index maps (on the thread pool where
large), and the convolution takes a kernel. A 1-D convolution becomes a 2-D one whose first
spatial dimension has size 1 (the kernels tile the last). The result is the same convolution,
its sums in that kernel's order.

Which form: a convolution whose window holds more positions than its output (a weight
gradient's) gets the weight gradient's layouts, any other the forward ones. Only where the
convolution has at least MIN_MULTIPLY_ADDS (the transposes are a pass over each operand):
small ones keep their layout and the backend's direct loop nest. A convolution of few output
features with its positions innermost (`along_positions`: jnp.convolve's, a filtered image's,
a depthwise one's) keeps its layout too: the backend vectorises it along those positions."""
from __future__ import annotations

import math

import numpy as np

from ..core.jaxpr import Eqn, Jaxpr
from ..lax.convolution import ConvDimensionNumbers, conv_general_dilated_p
from .rewrite import rewrite_eqns

# A convolution with fewer multiply-adds (batch included) keeps its layout
MIN_MULTIPLY_ADDS = 1 << 22
# A convolution with fewer output features per group runs along its positions where its layout
# allows (`along_positions`): AVX2's float32 lanes, below which a vector of output features
# is part empty
FEW_FEATURES = 8
# (batch, feature, spatial...) positions of each operand in the layouts the kernels read
_FORWARD = ((0, 3, 1, 2), None, (0, 3, 1, 2))          # NHWC; the weights as they are
_WEIGHT_GRADIENT = ((3, 0, 1, 2), (3, 0, 1, 2), (2, 3, 0, 1))


def channels_last_convs(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """`jaxpr` with each such convolution (here and in sub-jaxprs) in channels-last layouts
    between transposes."""
    return rewrite_eqns(jaxpr, consts, _target,
                        lambda eqn, target, lhs, rhs: [_moved(eqn, target, lhs, rhs)])


def along_positions(eqn: Eqn) -> bool:
    """Whether `eqn` is a real float32 or float64 convolution of fewer than FEW_FEATURES output
    features per group whose innermost spatial dimension is contiguous in its input and its
    output, with a window stride of one there and no input dilation: the backend's kernel
    along output positions (backend/llvm/convolution._conv_positions) can run it."""
    if eqn.primitive is not conv_general_dilated_p:
        return False
    p = eqn.params
    lhs, rhs = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    lhs_spec, _, out_spec = p["dimension_numbers"]
    return (len(lhs_spec) >= 3 and lhs.dtype == rhs.dtype == out.dtype
            and out.dtype in (np.dtype(np.float32), np.dtype(np.float64))
            and p["batch_group_count"] == 1 and all(d == 1 for d in p["lhs_dilation"])
            and p["window_strides"][-1] == 1
            and out.shape[out_spec[1]] // p["feature_group_count"] < FEW_FEATURES
            and math.prod(lhs.shape[lhs_spec[-1] + 1:]) == 1
            and math.prod(out.shape[out_spec[-1] + 1:]) == 1)


def _target(eqn: Eqn):
    """The (lhs, rhs, out) specs to run `eqn` in (None for an operand kept as it is), or None
    where `eqn` is not such a convolution or is in them already."""
    if eqn.primitive is not conv_general_dilated_p:
        return None
    p = eqn.params
    lhs, rhs = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    specs = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = specs
    if (len(lhs_spec) not in (3, 4) or p["feature_group_count"] != 1
            or p["batch_group_count"] != 1
            or any(d != 1 for d in p["lhs_dilation"])
            or not lhs.dtype == rhs.dtype == out.dtype
            or out.dtype not in (np.dtype(np.float32), np.dtype(np.float64))):
        return None
    window = math.prod(rhs.shape[d] for d in rhs_spec[2:])
    positions = math.prod(out.shape[d] for d in out_spec[2:])
    if out.size * window * rhs.shape[rhs_spec[1]] < MIN_MULTIPLY_ADDS or along_positions(eqn):
        return None
    target = _WEIGHT_GRADIENT if window > positions else _FORWARD
    if len(lhs_spec) == 4 and all(t is None or tuple(t) == tuple(s)
                                  for t, s in zip(target, specs)):
        return None
    return target


def _arranged(x, spec, target):
    """x transposed so that its axes play their roles (batch, feature, spatial...) at the
    positions `target` gives them."""
    from .. import lax
    perm = [0] * len(spec)
    for role, axis in enumerate(spec):
        perm[target[role]] = axis
    return x if perm == list(range(len(spec))) else lax.transpose(x, tuple(perm))


def _moved(eqn: Eqn, target, lhs, rhs):
    from .. import lax
    p = eqn.params
    specs = p["dimension_numbers"]
    strides, padding = p["window_strides"], p["padding"]
    lhs_dilation, rhs_dilation = p["lhs_dilation"], p["rhs_dilation"]
    lifted = len(specs[0]) == 3
    if lifted:  # one spatial dimension: a first one of size 1 before it (a new last axis)
        lhs, rhs = lax.expand_dims(lhs, (3,)), lax.expand_dims(rhs, (3,))
        specs = tuple((s[0], s[1], 3, s[2]) for s in specs)
        strides, padding = (1, *strides), ((0, 0), *padding)
        lhs_dilation, rhs_dilation = (1, *lhs_dilation), (1, *rhs_dilation)
    lhs_t, rhs_t, out_t = (s if t is None else t for t, s in zip(target, specs))
    y = lax.conv_general_dilated(
        _arranged(lhs, specs[0], lhs_t), _arranged(rhs, specs[1], rhs_t),
        strides, padding, lhs_dilation, rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(tuple(lhs_t), tuple(rhs_t), tuple(out_t)),
        feature_group_count=1, batch_group_count=1, precision=p["precision"],
        preferred_element_type=p["preferred_element_type"])
    # back: the result's axis out_spec[role] is y's axis out_t[role]
    perm = [0] * len(out_t)
    for role, axis in enumerate(specs[2]):
        perm[axis] = out_t[role]
    y = y if perm == list(range(len(perm))) else lax.transpose(y, tuple(perm))
    return lax.squeeze(y, (3,)) if lifted else y
