"""lax functions that JAX offers beside its primitives, most built from existing primitives (so
they lower natively and differentiate and batch through those): reciprocal, collapse,
broadcast_like, index_take, empty, platform_dependent, composite, the DotAlgorithmPreset names;
and three small primitives of JAX's with their rules: reduce_precision, optimization_barrier,
split (reduce_precision and split are composites: the compiler expands them into the lax
operations that compute them, compiler/lowerings.py)."""
from __future__ import annotations

import enum
import functools
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.batching import move_to_front
from ..core.rules import Zero, def_linear, def_vectorized, zeros_like_aval
from ..core.trace import Tracer, concrete_value, get_aval
from .elementwise import (add, bitcast_convert_type, bitwise_and, bitwise_or,
                          convert_element_type, gt, integer_pow, le, ne, rem,
                          select, shift_right_logical)
from .indexing import GatherDimensionNumbers, gather
from .shape import (broadcast_in_dim, concatenate, expand_dims, full, reshape, slice_in_dim,
                    transpose as transpose_fn)

__all__ = ["DotAlgorithmPreset", "broadcast_like", "collapse", "composite", "empty", "index_take",
           "optimization_barrier", "platform_dependent", "reciprocal", "reduce", "reduce_precision"]


def reciprocal(x: Any) -> Any:
    """Elementwise 1 / x (as JAX: integer_pow(x, -1))."""
    return integer_pow(x, -1)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merges dimensions [start_dimension, stop_dimension) into one (Python slice rules)."""
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: "
                         f"{shape}[{start_dimension}:{stop_dimension}]")
    return reshape(operand, (*shape[:lo], math.prod(shape[lo:hi]), *shape[hi:]))


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """arr broadcast (NumPy rules, trailing axes aligned) to the shape of like_arr."""
    shape = tuple(get_aval(like_arr).shape)
    arr_shape = tuple(get_aval(arr).shape)
    if arr_shape == shape:
        return arr
    lead = len(shape) - len(arr_shape)
    if lead < 0 or any(a not in (1, s) for a, s in zip(arr_shape, shape[lead:])):
        raise ValueError(f"Incompatible shapes for broadcasting: {arr_shape} and requested "
                         f"shape {shape}")
    keep = [i for i, a in enumerate(arr_shape) if a == shape[lead + i]]
    squeezed = reshape(arr, tuple(arr_shape[i] for i in keep))
    return broadcast_in_dim(squeezed, shape, tuple(lead + i for i in keep))


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """src[idxs[0], idxs[1], ...] along `axes` (indices wrap modulo each axis' size), a gather
    with the indexed axes collapsed and the remaining ones kept after the index axis."""
    axes = tuple(operator.index(a) for a in axes)
    indices = concatenate([expand_dims(i, (1,)) for i in idxs], 1)
    src_shape = get_aval(src).shape
    ind_aval = get_aval(indices)
    sizes = np.array([src_shape[ax] for ax in axes], ind_aval.dtype)
    sizes = broadcast_in_dim(convert_element_type(sizes, ind_aval.dtype), ind_aval.shape,
                             (ind_aval.ndim - 1,))
    indices = rem(add(rem(indices, sizes), sizes), sizes)  # a non-negative remainder
    slice_sizes = tuple(1 if ax in axes else d for ax, d in enumerate(src_shape))
    offset_dims = tuple(range(1, len(src_shape) - len(axes) + 1))
    dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=axes,
                                   start_index_map=axes)
    return gather(src, indices, dimension_numbers=dnums, slice_sizes=slice_sizes)


def split_slices(operand: Any, *, sizes: tuple[int, ...], axis: int) -> list:
    """split_p's pieces as slices: its impl evaluates them, and they are its composite.
    (lax.split itself, in shape.py, stages the slices directly, which fuse as index maps.)"""
    starts = np.cumsum((0, *sizes))
    return [slice_in_dim(operand, int(a), int(b), axis=axis)
            for a, b in itertools.pairwise(starts)]


def _split_abstract(x, *, sizes, axis):
    return [ShapedArray(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype, x.weak_type)
            for s in sizes]


def _split_transpose(cts, x, *, sizes, axis):
    pieces = [zeros_like_aval(ShapedArray(x.aval.shape[:axis] + (s,) + x.aval.shape[axis + 1:],
                                          x.aval.dtype)) if type(ct) is Zero else ct
              for ct, s in zip(cts, sizes)]
    return [concatenate(pieces, axis)]


def _split_batch(vals, dims, *, sizes, axis):
    x, = move_to_front(vals, dims)
    outs = split_p.bind(x, sizes=sizes, axis=axis + 1)
    return outs, [0] * len(outs)


split_p = Primitive("split", multiple_results=True)
split_p.def_abstract_eval(_split_abstract)
split_p.def_impl(lambda x, **params: [np.asarray(o) for o in split_slices(x, **params)])
split_p.def_composite(split_slices)
def_linear(split_p, _split_transpose)
split_p.def_batch(_split_batch)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array whose contents are unspecified: zeros, as JAX gives on CPU (eager and jit)."""
    return full(tuple(shape), 0, dtypes.check_user_dtype(dtype))


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Rounds floats to the nearest value (ties to even) of a format with the given exponent
    and mantissa widths, as XLA does: overflow gives ±inf, results below the format's smallest
    normal number give ±0, NaNs stay NaN. Differentiated as JAX does: the tangent is rounded
    the same way."""
    exponent_bits = operator.index(concrete_value(
        exponent_bits, "exponent_bits argument of lax.reduce_precision"))
    mantissa_bits = operator.index(concrete_value(
        mantissa_bits, "mantissa_bits argument of lax.reduce_precision"))
    if not isinstance(operand, Tracer) and not hasattr(operand, "dtype"):
        operand = np.asarray(operand, dtypes.default_float())
    dtype = get_aval(operand).dtype
    if not dtypes.is_float(dtype):
        raise TypeError(f"reduce_precision requires a floating-point operand, got {dtype}")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)


def reduce_precision_bits(operand: Any, *, exponent_bits: int, mantissa_bits: int) -> Any:
    """reduce_precision in integer operations on the bit pattern: the primitive's impl
    evaluates it, and it is its composite."""
    dtype = get_aval(operand).dtype
    info = dtypes.finfo_of(dtype)
    nbits, src_mant = info.bits, info.nmant
    src_exp = nbits - 1 - src_mant
    udtype = np.dtype(f"uint{nbits}")

    def c(v):
        return full((), v, udtype)

    x_bits = bitcast_convert_type(operand, udtype)
    result = x_bits
    if mantissa_bits < src_mant:
        dropped = src_mant - mantissa_bits
        last_kept = 1 << dropped
        kept_bit = shift_right_logical(bitwise_and(result, c(last_kept)), c(dropped))
        bias = add(kept_bit, c((last_kept >> 1) - 1))  # round half to even
        result = bitwise_and(add(result, bias), c(~(last_kept - 1) & ((1 << nbits) - 1)))
    if exponent_bits < src_exp:
        exp_mask = ((1 << src_exp) - 1) << src_mant
        sign_mask = 1 << (nbits - 1)
        src_bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        x_exponent = bitwise_and(result, c(exp_mask))
        overflows = gt(x_exponent, c((src_bias + reduced_bias) << src_mant))
        underflows = le(x_exponent, c((src_bias - reduced_bias) << src_mant))
        signed_zero = bitwise_and(result, c(sign_mask))
        signed_inf = bitwise_or(signed_zero, c(exp_mask))
        result = select(overflows, signed_inf, select(underflows, signed_zero, result))
    out = bitcast_convert_type(result, dtype)
    if mantissa_bits < src_mant or exponent_bits < src_exp:  # rounding may turn NaN into inf
        out = select(ne(operand, operand), operand, out)
    return out


def _reduce_precision_abstract(x, *, exponent_bits, mantissa_bits):
    return ShapedArray(x.shape, x.dtype, x.weak_type)


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_abstract_eval(_reduce_precision_abstract)
reduce_precision_p.def_impl(lambda x, **params: np.asarray(reduce_precision_bits(x, **params)))
reduce_precision_p.def_composite(reduce_precision_bits)
# JAX differentiates it as a linear map: tangents and cotangents are rounded the same way
def_linear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
def_vectorized(reduce_precision_p)


def optimization_barrier(operand: Any, /) -> Any:
    """Returns its argument (a pytree) unchanged. In XLA it stops computations moving across
    it; tracejit's passes do not reorder work between kernels in ways it would prevent."""
    leaves, treedef = tree_flatten(operand)
    return tree_unflatten(treedef, optimization_barrier_p.bind(*leaves) if leaves else [])


def _barrier_transpose(cts, *args):
    return [zeros_like_aval(a.aval) if type(ct) is Zero else ct for ct, a in zip(cts, args)]


optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
optimization_barrier_p.def_impl(lambda *xs: list(xs))
def_linear(optimization_barrier_p, _barrier_transpose)
optimization_barrier_p.def_batch(lambda vals, dims: (optimization_barrier_p.bind(*vals),
                                                     list(dims)))


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable) -> Any:
    """The branch for this platform (tracejit runs on 'cpu') applied to args, else default."""
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    if default is not None and not callable(default):
        raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise ValueError(f"Unsupported platform cpu: platform_dependent has branches only for "
                         f"{sorted(per_platform)}; pass cpu= or default=")
    return branch(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """Marks `decomposition` as a named composite op. XLA may swap in a custom kernel for the
    name; tracejit always runs the decomposition. Keyword arguments are static attributes."""
    @functools.wraps(decomposition)
    def wrapper(*args, **kwargs):
        if any(isinstance(v, Tracer) for v in kwargs.values()):
            raise TypeError(f"Found a JAX Tracer as an attribute in the decomposition for the "
                            f"composite op '{name}'; pass traced values as arguments, not "
                            "keyword attributes.")
        return decomposition(*args, **kwargs)
    return wrapper


class DotAlgorithmPreset(enum.Enum):
    """JAX's named dot-product algorithms (input, accumulation and output types). tracejit
    accepts the names; its CPU dot products compute in the operands' own precision."""
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __str__(self) -> str:
        return self.name


def _monoid_reducer(computation: Callable, inits: list) -> Callable | None:
    """The reduce_* function for `computation` with its identity as the one init value (JAX's
    lax.reduce fast path), else None."""
    from . import reductions as rd
    kind = rd.monoid(computation, inits[0]) if len(inits) == 1 else None
    return getattr(rd, f"reduce_{kind}") if kind is not None else None


def reduce(operands: Any, init_values: Any, computation: Callable, dimensions: Sequence[int],
           out_sharding: Any = None) -> Any:
    """JAX's lax.reduce: `operands` (a pytree of arrays) reduced over `dimensions` by
    `computation`, a monoid whose identity is `init_values` (scalars, the same pytree).
    lax.add/mul/max/min/bitwise ops with their identity become reduce_sum/prod/max/min/and/or/
    xor; any other computation is folded over the reduced elements in order (a scan, so it
    lowers natively and differentiates like one)."""
    from .control_flow import scan
    flat_operands, tree = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{tree} vs. {init_tree}")
    if len(flat_operands) != len(flat_inits):
        raise ValueError("Must have same total number of operands as init_values:  "
                         f"{len(flat_operands)} vs. {len(flat_inits)}")
    reducer = _monoid_reducer(computation, flat_inits)
    if reducer is not None:
        out = reducer(flat_operands[0], tuple(dimensions))
        weak = get_aval(flat_operands[0]).weak_type and get_aval(flat_inits[0]).weak_type
        return convert_element_type(out, get_aval(out).dtype, weak_type=weak)
    avals = [get_aval(x) for x in flat_operands]
    ndim = len(avals[0].shape)
    dims = sorted({d % ndim if -ndim <= d < ndim else _bad_dimension(d, ndim)
                   for d in dimensions})
    if not dims:  # nothing reduced: XLA returns the operands, the init values unused
        return tree_unflatten(tree, flat_operands)
    kept = [d for d in range(ndim) if d not in dims]
    kept_shape = tuple(avals[0].shape[d] for d in kept)
    count = math.prod(avals[0].shape[d] for d in dims)
    # the reduced elements first, in row-major order of the reduced dimensions
    rows = [reshape(transpose_fn(x, tuple(dims) + tuple(kept)), (count,) + kept_shape)
            for x in flat_operands]
    start = [_varying_as(broadcast_in_dim(v, kept_shape, ()), avals) for v in flat_inits]

    def step(carry, xs):
        merged = computation(tree_unflatten(tree, carry), tree_unflatten(tree, xs))
        merged_flat, merged_tree = tree_flatten(merged)
        if merged_tree != tree:
            raise TypeError(f"lax.reduce's computation returned {merged_tree}, expected {tree}")
        return merged_flat, None

    out, _ = scan(step, start, rows)
    return tree_unflatten(tree, out)


def _varying_as(start: Any, avals: list) -> Any:
    """A fold's start value typed to vary over the manual axes the operands vary over (under
    shard_map's check_vma=True): the carry then keeps one type through the scan, as JAX's
    reduce types its result like its operands."""
    missing = frozenset().union(*[getattr(a, "vma", frozenset()) for a in avals]) - \
        getattr(get_aval(start), "vma", frozenset())
    if not missing:
        return start
    from .parallel import pcast
    return pcast(start, tuple(sorted(missing, key=str)), to="varying")


def _bad_dimension(d: int, ndim: int):
    raise ValueError(f"reduction dimension {d} out of range for an operand of rank {ndim}")
