"""Convolutions: conv_general_dilated_p (XLA's Conv) with its rules, and the user functions and
shape helpers JAX's lax has around it (conv, conv_transpose, padtype_to_pads, ...).

The primitive keeps JAX's general dimension numbers; the native lowering is in
backend/llvm/convolution.py (a direct loop nest, or im2col + BLAS gemm when that is faster)."""
from __future__ import annotations

import enum
import math
import operator
from typing import Any, NamedTuple, Sequence, Union

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.rules import Zero, aval_of, axis_size, defjvp, is_undefined, unbatched_aval
from ..core.trace import get_aval
from ._base import check_operand
from .elementwise import convert_element_type
from .linalg import (Precision, _accumulation_dtype, _dot_general_dtype,
                     canonicalize_precision)
from .shape import reshape, rev, transpose


class ConvDimensionNumbers(NamedTuple):
    """Where a convolution's dimensions are: `lhs_spec` = (batch, feature, spatial...),
    `rhs_spec` = (out feature, in feature, spatial...), `out_spec` = (batch, feature,
    spatial...), each a tuple of dimension indices."""
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


# what `dimension_numbers` may be (JAX's type alias)
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


class PaddingType(enum.Enum):
    VALID = 1
    SAME = 2
    SAME_LOWER = 3


# --- shape helpers (JAX's public utilities) -------------------------------------------------

def _dilate_dim(d: int, dilation: int) -> int:
    return d if dilation == 1 else max(0, 1 + dilation * (d - 1))


def _dilate_shape(shape: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    if not all(r > 0 for r in dilation):
        raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(_dilate_dim(int(d), int(r)) for d, r in zip(shape, dilation))


def _stride_dim(d: int, window: int, stride: int) -> int:
    return max(0, (d - window) // stride + 1)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str | PaddingType
                    ) -> list[tuple[int, int]]:
    """(low, high) pads per spatial dimension for 'VALID', 'SAME' (an odd pad's extra element
    at the end) or 'SAME_LOWER' (at the start)."""
    if isinstance(padding, str):
        try:
            padding = PaddingType[padding.upper()]
        except KeyError:
            raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                               f"'SAME_LOWER', got {padding}.") from None
    if padding in (PaddingType.SAME, PaddingType.SAME_LOWER):
        pads = []
        for d, w, s in zip(in_shape, window_shape, window_strides):
            out = -(-int(d) // int(s))
            total = max(0, (out - 1) * int(s) + int(w) - int(d))
            small, big = total // 2, total - total // 2
            pads.append((small, big) if padding == PaddingType.SAME else (big, small))
        return pads
    if padding == PaddingType.VALID:
        return [(0, 0)] * len(in_shape)
    raise TypeError(f"Unknown padding type: {padding}.")


def conv_general_permutations(dimension_numbers: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """The (lhs, rhs, out) specs of string dimension numbers such as ('NHWC', 'HWIO', 'NHWC');
    spatial dimensions are ordered as they appear in the rhs string."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
        if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {dimension_numbers[i]}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise TypeError("convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")

    def perm(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """`dimension_numbers` (None, three layout strings, or ConvDimensionNumbers) as a
    ConvDimensionNumbers; None means ('NCHW', 'OIHW', 'NCHW') for any rank."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(e, str) for e in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, e in enumerate(dimension_numbers):
        if len(e) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(e)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any, batch_group_count: int = 1
                     ) -> tuple[int, ...]:
    """The output shape of a convolution of operands in canonical (N, C, spatial) order."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    space = tuple(_stride_dim(p, int(k), int(s))
                  for p, k, s in zip(padded, rhs_shape[2:], strides))
    batch = int(lhs_shape[0]) // batch_group_count
    return (batch, int(rhs_shape[0])) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers) -> tuple[int, ...]:
    """The output shape of a convolution with string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers) -> tuple[int, ...]:
    """The output shape of conv_transpose with string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(int(k), int(s), padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    pad_sums = [sum(p) for p in padding]
    space = [(int(i) - 1) * int(s) - int(k) + 2 + p
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, pad_sums)]
    out = (int(lhs_t[0]), int(rhs_t[0])) + tuple(space)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


# --- the primitive ---------------------------------------------------------------------------

def _conv_abstract(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding,
                   lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                   batch_group_count, precision, preferred_element_type) -> ShapedArray:
    dn = dimension_numbers
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of "
                         f"dimensions, but got {lhs.shape} and {rhs.shape}.")
    for spec, aval, side in ((dn.lhs_spec, lhs, "lhs"), (dn.rhs_spec, rhs, "rhs"),
                             (dn.out_spec, lhs, "out")):
        if sorted(spec) != list(range(aval.ndim)):
            raise TypeError(f"convolution {side}_spec must be a permutation of "
                            f"range({aval.ndim}), got {tuple(spec)}.")
    if lhs.ndim < 2:
        raise TypeError(f"convolution operands need a batch and a feature dimension, got "
                        f"shapes {lhs.shape} and {rhs.shape}.")
    if not feature_group_count > 0:
        raise ValueError(f"conv_general_dilated feature_group_count must be a positive "
                         f"integer, got {feature_group_count}.")
    lhs_features = lhs.shape[dn.lhs_spec[1]]
    quot, rem = divmod(lhs_features, feature_group_count)
    if rem:
        raise ValueError(f"conv_general_dilated feature_group_count must divide lhs feature "
                         f"dimension size, but {feature_group_count} does not divide "
                         f"{lhs_features}.")
    if quot != rhs.shape[dn.rhs_spec[1]]:
        raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                         f"feature_group_count must equal the rhs input feature dimension "
                         f"size, but {lhs_features} // {feature_group_count} != "
                         f"{rhs.shape[dn.rhs_spec[1]]}.")
    out_features = rhs.shape[dn.rhs_spec[0]]
    if out_features % feature_group_count:
        raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of feature_group_count, but {out_features} is not a "
                         f"multiple of {feature_group_count}.")
    if not batch_group_count > 0:
        raise ValueError(f"conv_general_dilated batch_group_count must be a positive integer, "
                         f"got {batch_group_count}.")
    batch = lhs.shape[dn.lhs_spec[0]]
    if batch_group_count > 1 and batch % batch_group_count:
        raise ValueError(f"conv_general_dilated batch_group_count must divide lhs batch "
                         f"dimension size, but {batch_group_count} does not divide {batch}.")
    if out_features % batch_group_count:
        raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of batch_group_count, but {out_features} is not a "
                         f"multiple of {batch_group_count}.")
    if batch_group_count > 1 and feature_group_count > 1:
        raise ValueError(f"At most one of batch_group_count and feature_group_count may be > "
                         f"1, got batch_group_count={batch_group_count} and "
                         f"feature_group_count={feature_group_count}")
    nspatial = len(dn.rhs_spec) - 2
    if nspatial != len(window_strides):
        raise ValueError(f"conv_general_dilated window and window_strides must have the same "
                         f"number of dimensions, but got {nspatial} and {len(window_strides)}")
    for name, seq in (("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(seq) != nspatial:
            raise ValueError(f"conv_general_dilated {name} must have {nspatial} entries, got "
                             f"{tuple(seq)}")
    if any(s <= 0 for s in window_strides):
        raise ValueError(f"conv_general_dilated window_strides must be positive, got "
                         f"{tuple(window_strides)}")
    lhs_t = _dilate_shape(np.take(lhs.shape, dn.lhs_spec), lhs_dilation)
    rhs_t = _dilate_shape(np.take(rhs.shape, dn.rhs_spec), rhs_dilation)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
    shape = tuple(int(d) for d in np.take(out_t, np.argsort(dn.out_spec)))
    if not (dtypes.is_inexact(lhs.dtype) or dtypes.is_int(lhs.dtype)):
        raise TypeError(f"conv_general_dilated does not accept dtype {lhs.dtype.name}. "
                        "Accepted dtypes are subtypes of number.")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"lax.conv_general_dilated requires arguments to have the same "
                        f"dtypes, got {lhs.dtype.name}, {rhs.dtype.name}.")
    dtype = _dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _dilate(x: np.ndarray, dilation: Sequence[int], first_axis: int) -> np.ndarray:
    """x with dilation-1 zeros between its elements along the axes from `first_axis` on."""
    if all(d == 1 for d in dilation):
        return x
    shape = list(x.shape)
    slices = [slice(None)] * x.ndim
    for k, d in enumerate(dilation):
        ax = first_axis + k
        shape[ax] = _dilate_dim(x.shape[ax], d)
        slices[ax] = slice(None, None, d)
    out = np.zeros(shape, x.dtype)
    out[tuple(slices)] = x
    return out


def _conv_impl(lhs: np.ndarray, rhs: np.ndarray, *, window_strides, padding, lhs_dilation,
               rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
               precision, preferred_element_type) -> np.ndarray:
    """NumPy reference: canonical layout, dilate, pad (negative pads crop), gather the windows
    and contract each group with an einsum."""
    dn = dimension_numbers
    out_aval = _conv_abstract(ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype),
                              window_strides=window_strides, padding=padding,
                              lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                              dimension_numbers=dn, feature_group_count=feature_group_count,
                              batch_group_count=batch_group_count, precision=precision,
                              preferred_element_type=preferred_element_type)
    acc = _accumulation_dtype(lhs.dtype, rhs.dtype, out_aval.dtype)
    x = np.transpose(lhs, dn.lhs_spec).astype(acc)
    w = np.transpose(rhs, dn.rhs_spec).astype(acc)
    out_t = tuple(np.take(out_aval.shape, dn.out_spec))
    if math.prod(out_t) == 0 or math.prod(w.shape) == 0 or math.prod(x.shape) == 0:
        res = np.zeros(out_t, acc)
    else:
        x = _dilate(x, lhs_dilation, 2)
        w = _dilate(w, rhs_dilation, 2)
        crop = [slice(None)] * 2
        pads = [(0, 0)] * 2
        for lo, hi in padding:
            crop.append(slice(max(-lo, 0), None if hi >= 0 else hi))
            pads.append((max(lo, 0), max(hi, 0)))
        x = np.pad(x, pads)[tuple(crop)]
        nsp = x.ndim - 2
        win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=tuple(range(2, x.ndim)))
        win = win[(slice(None),) * 2 + tuple(slice(None, None, s) for s in window_strides)]
        win = win[(slice(None),) * 2 + tuple(slice(0, d) for d in out_t[2:])]
        letters, kl = "abcdef"[:nsp], "ghijkl"[:nsp]
        n, c = x.shape[:2]
        o = w.shape[0]
        g, bg = feature_group_count, batch_group_count
        # win: [B, N/B, G, C/G, out..., k...]; w: [B*G, O/(B*G), C/G, k...]
        win = win.reshape((bg, n // bg, g, c // g) + win.shape[2:])
        w = w.reshape((bg * g, o // (bg * g)) + w.shape[1:])
        w = w.reshape((bg, g) + w.shape[1:])
        spec = f"stuv{letters}{kl},suwv{kl}->stuw{letters}"  # s: batch group, u: feature group
        with np.errstate(all="ignore"):
            res = np.einsum(spec, win, w)
        # batch groups: output batch n, feature (b, o); feature groups: feature (g, o)
        res = np.moveaxis(res, 0, 2).reshape((n // bg, o) + res.shape[4:])
    res = np.transpose(res, np.argsort(dn.out_spec))
    with np.errstate(all="ignore"):
        return res.astype(out_aval.dtype)


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_abstract_eval(_conv_abstract)
conv_general_dilated_p.def_impl(_conv_impl)


def _int_tuple(seq: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(s) for s in seq)
    except TypeError:
        raise TypeError(f"conv_general_dilated {what} must be a sequence of integers, got "
                        f"{seq!r}") from None


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int],
                         padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None, out_sharding: Any = None):
    """General n-dimensional convolution with strides, padding ('SAME', 'SAME_LOWER', 'VALID'
    or (low, high) pairs), lhs (transposed) and rhs (atrous) dilation, feature and batch
    groups, in any layout (`dimension_numbers`), as XLA's Conv."""
    for x in (lhs, rhs):
        check_operand(x, "lax.conv_general_dilated")
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nsp = lhs_aval.ndim - 2
    if lhs_dilation is None:
        lhs_dilation = (1,) * nsp
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution using "
                         "this op. Please either exactly specify the required padding or use "
                         "conv_transpose.")
    if rhs_dilation is None:
        rhs_dilation = (1,) * nsp
    window_strides = _int_tuple(window_strides, "window_strides")
    lhs_dilation = _int_tuple(lhs_dilation, "lhs_dilation")
    rhs_dilation = _int_tuple(rhs_dilation, "rhs_dilation")
    if isinstance(padding, str):
        rhs_space = np.take(rhs_aval.shape, dn.rhs_spec)[2:]
        window = [_dilate_dim(int(k), r) for k, r in zip(rhs_space, rhs_dilation)]
        padding = padtype_to_pads(np.take(lhs_aval.shape, dn.lhs_spec)[2:], window,
                                  window_strides, padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (ValueError, TypeError) as e:
        raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding}") from e
    preferred = None if preferred_element_type is None else \
        dtypes.check_user_dtype(preferred_element_type, "preferred_element_type")
    dn = ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dn))
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dn,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=canonicalize_precision(precision), preferred_element_type=preferred)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: Any = None, preferred_element_type: Any = None):
    """conv_general_dilated in NCHW/OIHW layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None):
    """conv_general_dilated in NCHW/OIHW layout with dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of one dimension of a transposed convolution."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else -(-pad_len // 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None, use_consistent_padding: bool = False):
    """A fractionally strided convolution (the 'transpose' of a strided one); TensorFlow's
    layouts by default; `transpose_kernel` flips the kernel and swaps its feature axes (as
    Keras' Conv2DTranspose)."""
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    ndims = lhs_aval.ndim
    if ndims != rhs_aval.ndim or ndims < 2:
        raise ValueError(f"conv_transpose needs lhs and rhs of one rank >= 2, got shapes "
                         f"{lhs_aval.shape} and {rhs_aval.shape}")
    if dimension_numbers is None:
        if ndims not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndims]
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    k_space = np.take(rhs_aval.shape, dn.rhs_spec)[2:]
    if rhs_dilation is None:
        rhs_dilation = (1,) * (ndims - 2)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        window = [_dilate_dim(int(k), int(r)) for k, r in zip(k_space, rhs_dilation)]
        each = [padding] * len(strides) if isinstance(padding, str) else \
            [tuple(p) for p in padding]
        pads = tuple(_conv_transpose_padding(k, int(s), p)
                     for k, s, p in zip(window, strides, each))
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndims))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _moveaxes(x: np.ndarray, src: Sequence[int], dst: Sequence[int]) -> np.ndarray:
    return np.moveaxis(x, tuple(src), tuple(dst))


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None):
    """The patches conv_general_dilated would multiply with a kernel of `filter_shape`: the
    output's feature dimension holds each input feature's window, flattened (feature major),
    as a grouped convolution with a one-hot kernel."""
    check_operand(lhs, "lax.conv_general_dilated_patches")
    aval = get_aval(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    size = math.prod(filter_shape)
    channels = aval.shape[dn.lhs_spec[1]]
    # one output feature per (input feature, window tap), picking that tap
    eye = np.broadcast_to(np.eye(size, dtype=aval.dtype), (channels, size, size))
    rhs = _moveaxes(eye.reshape((channels * size, 1) + filter_shape), (0, 1),
                    (dn.rhs_spec[0], dn.rhs_spec[1]))
    prec = None if precision is None else (precision, Precision.DEFAULT)
    return conv_general_dilated(lhs, np.ascontiguousarray(rhs), window_strides, padding,
                                lhs_dilation, rhs_dilation, dn, feature_group_count=channels,
                                precision=prec, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                               filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: Any = None, precision: Any = None):
    """An unshared convolution: every output position has its own kernel (rhs carries the
    output's spatial dimensions); patches contracted with rhs by dot_general."""
    from .linalg import dot_general
    prec = canonicalize_precision(precision)
    if prec is not None and not (isinstance(prec, tuple) and len(prec) == 2):
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           None if prec is None else prec[0])
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
        get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_b, rhs_b = list(out_spec[2:]), list(rhs_spec[2:])
    rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: lhs_b[k])]
    dims = (((out_spec[1],), (rhs_spec[1],)), (tuple(sorted(lhs_b)), tuple(rhs_b)))
    out = dot_general(patches, rhs, dims, precision=precision)
    nd = get_aval(out).ndim
    perm = [d for d in range(nd) if d not in (nd - 2, nd - 1)]
    for src, dst in sorted(((nd - 2, out_spec[0]), (nd - 1, out_spec[1])), key=lambda t: t[1]):
        perm.insert(dst, src)
    return transpose(out, perm)


# --- transformation rules: JVP (bilinear), transposes (both convolutions), batching -----------

def _reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merge axis `src` into axis `dst` (numbered after `src` is removed), `src` major."""
    shape = list(get_aval(x).shape)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [s for i, s in enumerate(shape) if i != src]
    new[dst] *= shape[src]
    return reshape(x, new, perm)


def _reshape_axis_out_of(src: int, size1: int, x: Any) -> Any:
    """Split axis `src` into (size1, rest)."""
    shape = list(get_aval(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, shape)


def _swap_spec(spec: Sequence[int]) -> tuple[int, ...]:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window, rhs_dilation)
    out_d = _dilate_shape(out_shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding)]
    after = [ld + r - 1 - o - b for ld, r, o, b in zip(lhs_d, rhs_d, out_d, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    if len(in_shape) == 0:
        return ()
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window, rhs_dilation)
    out_d = _dilate_shape(out_shape, strides)
    lows = [lo for lo, _ in padding]
    highs = [o - ld + r - lo - 1 for o, ld, r, lo in zip(out_d, lhs_d, rhs_d, lows)]
    return tuple(zip(lows, highs))


def _cast_to(x: Any, aval: ShapedArray) -> Any:
    return x if get_aval(x).dtype == aval.dtype else convert_element_type(x, aval.dtype)


def _conv_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    """The lhs cotangent: ct convolved with the spatially reversed kernel, strides and lhs
    dilation swapped; groups move from the kernel's in to its out features."""
    lhs_aval, rhs_shape = aval_of(lhs), get_aval(rhs).shape
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        groups = max(feature_group_count, batch_group_count)
        rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    dn = ConvDimensionNumbers(out_spec, _swap_spec(rhs_spec), lhs_spec)
    pads = _vjp_lhs_padding(np.take(lhs_aval.shape, lhs_spec[2:]),
                            np.take(rhs_shape, rhs_spec[2:]), window_strides,
                            np.take(get_aval(ct).shape, out_spec[2:]), padding, lhs_dilation,
                            rhs_dilation)
    w = rev(rhs, tuple(rhs_spec[2:]))
    if get_aval(w).dtype != get_aval(ct).dtype:
        w = convert_element_type(w, get_aval(ct).dtype)
    out = conv_general_dilated(ct, w, window_strides=lhs_dilation, padding=pads,
                               lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                               dimension_numbers=dn, feature_group_count=groups,
                               batch_group_count=1, precision=precision,
                               preferred_element_type=preferred_element_type)
    out = _cast_to(out, lhs_aval)
    if batch_group_count > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    """The rhs cotangent: lhs convolved with ct, batch and feature dimensions swapped (feature
    groups become batch groups and back)."""
    rhs_aval = aval_of(rhs)
    ct_aval = get_aval(ct)
    if ct_aval.size == 0:
        return Zero(rhs_aval)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fgc, bgc = batch_group_count, feature_group_count
    dn = ConvDimensionNumbers(_swap_spec(lhs_spec), _swap_spec(out_spec), _swap_spec(rhs_spec))
    pads = _vjp_rhs_padding(np.take(get_aval(lhs).shape, lhs_spec[2:]),
                            np.take(rhs_aval.shape, rhs_spec[2:]), window_strides,
                            np.take(ct_aval.shape, out_spec[2:]), padding, lhs_dilation,
                            rhs_dilation)
    if get_aval(lhs).dtype != ct_aval.dtype:
        lhs = convert_element_type(lhs, ct_aval.dtype)
    out = conv_general_dilated(lhs, ct, window_strides=rhs_dilation, padding=pads,
                               lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
                               dimension_numbers=dn, feature_group_count=fgc,
                               batch_group_count=bgc, precision=precision,
                               preferred_element_type=preferred_element_type)
    return _cast_to(out, rhs_aval)


def _conv_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs):
        return [_conv_transpose_lhs(ct, lhs, rhs, **params), None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs, **params)]


def _conv_batch(vals, dims, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
    """JAX's rule: the vmapped axis folds into the lhs batch (lhs only), the out features (rhs
    only) or the feature groups (both); group axes stay outermost."""
    (lhs, rhs), (lb, rb) = vals, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  precision=precision, preferred_element_type=preferred_element_type)

    def bind(x, y, fgc, bgc):
        return conv_general_dilated_p.bind(x, y, feature_group_count=fgc,
                                           batch_group_count=bgc, **params)

    size = axis_size(vals, dims)
    if size == 0:  # folding an empty axis into another would lose the other's size
        avals = [unbatched_aval(v, d) for v, d in zip(vals, dims)]
        out = _conv_abstract(*avals, feature_group_count=feature_group_count,
                             batch_group_count=batch_group_count, **params)
        return np.zeros((0,) + out.shape, out.dtype), 0

    if lb is not None and rb is not None:
        size = get_aval(lhs).shape[lb]
        if batch_group_count > 1:
            new_lhs = _reshape_axis_into(lb, lhs_spec[0], lhs)
            fgc, bgc = feature_group_count, batch_group_count * size
        else:
            new_lhs = _reshape_axis_into(lb, lhs_spec[1], lhs)
            fgc, bgc = feature_group_count * size, batch_group_count
        out = bind(new_lhs, _reshape_axis_into(rb, rhs_spec[0], rhs), fgc, bgc)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if lb is not None:
        size = get_aval(lhs).shape[lb]
        if batch_group_count == 1:
            new_lhs = _reshape_axis_into(lb, lhs_spec[0], lhs)
        else:  # the vmapped axis goes inside each batch group
            new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(lb <= lhs_spec[0]),
                                           batch_group_count, lhs)
            new_lhs = _reshape_axis_into(lb + int(lhs_spec[0] < lb), lhs_spec[0] + 1, new_lhs)
            new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = bind(new_lhs, rhs, feature_group_count, batch_group_count)
        return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    size = get_aval(rhs).shape[rb]
    if feature_group_count == 1 and batch_group_count == 1:
        out = bind(lhs, _reshape_axis_into(rb, rhs_spec[0], rhs), 1, 1)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    groups = max(feature_group_count, batch_group_count)
    new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rb <= rhs_spec[0]), groups, rhs)
    new_rhs = _reshape_axis_into(rb + int(rhs_spec[0] < rb), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = bind(lhs, new_rhs, feature_group_count, batch_group_count)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = _reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return out, out_spec[1]


defjvp(conv_general_dilated_p,
       lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(g, rhs, **params),
       lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, g, **params))
conv_general_dilated_p.def_transpose(_conv_transpose)
conv_general_dilated_p.def_batch(_conv_batch)


def _conv_pp_params(params: dict) -> dict:
    shown = {k: v for k, v in params.items() if v is not None}
    return dict(sorted(shown.items()))


conv_general_dilated_p.pp_params = _conv_pp_params


__all__ = ["ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv_general_dilated",
           "conv", "conv_with_general_padding", "conv_transpose", "conv_general_dilated_patches",
           "conv_general_dilated_local", "conv_dimension_numbers", "conv_general_permutations",
           "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple",
           "padtype_to_pads"]
