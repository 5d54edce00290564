"""Linear-algebra primitives: dot_general (and dot, batch_matmul on top of it).

dot_general's result dims are XLA's: batch dims, then lhs free dims, then rhs free dims.
"""
from __future__ import annotations

import enum
import operator
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.primitive import Primitive
from ..core.rules import aval_of, defjvp, is_undefined
from ..core.trace import get_aval
from ._base import check_operand
from .elementwise import convert_element_type, convert_element_type_p
from .shape import transpose


class Precision(enum.Enum):
    """lax.Precision: a speed/accuracy hint for float32 dots (no effect on CPU)."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        return _PRECISION_STRINGS.get(value)

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


def canonicalize_precision(precision: Any) -> tuple[Precision, Precision] | None:
    """A precision argument as JAX keeps it in params: None or a (lhs, rhs) pair of enums."""
    if precision is None:
        default = config.jax_default_matmul_precision
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, str) and precision in _PRECISION_STRINGS:
        return Precision(precision), Precision(precision)
    if isinstance(precision, Precision):
        return precision, precision
    if isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) for p in precision):
            return canonicalize_precision(precision[0])[0], canonicalize_precision(precision[1])[0]
    raise ValueError(f"Precision argument must be one of: None, a lax.Precision, one of the "
                     f"strings {list(_PRECISION_STRINGS)}, or a pair of these; got {precision!r}")


# --- dot_general ---------------------------------------------------------------------------


def _type_rank(dtype: np.dtype) -> tuple:
    """XLA's HigherPrecisionType order, used when lhs and rhs dtypes differ."""
    base = np.finfo(dtype).dtype if dtype.kind == "c" else dtype
    if dtypes.is_float(base):
        info = dtypes.finfo_of(base)
        maxexp, nmant, bits = info.maxexp, info.nmant, info.bits
    else:
        maxexp, nmant = -1, -1
        bits = 1 if base == dtypes.bool_ else np.iinfo(base).bits
    return dtype.kind == "c", maxexp, nmant, bits, base.kind != "u"


def _bit_width(dtype: np.dtype) -> int:
    return 1 if dtype == dtypes.bool_ else dtype.itemsize * 8


def _dot_general_dtype(lhs: np.dtype, rhs: np.dtype, preferred: np.dtype | None) -> np.dtype:
    """Mixed operand dtypes are allowed (as in JAX): the result has the higher one."""
    lrank, rrank = _type_rank(lhs), _type_rank(rhs)
    if lrank == rrank and lhs != rhs:
        raise TypeError(f"lax.dot_general argument type error: {lhs}, {rhs}")
    result = lhs if lrank >= rrank else rhs
    if preferred is None or preferred == result:
        return result
    if not dtypes.is_float(result) and _bit_width(preferred) < _bit_width(result):
        raise TypeError(f"`preferred_element_type` must not be narrower than the original type, "
                        f"got preferred_element_type of {preferred} for result type of {result}.")
    return preferred


def _check_dims(side: str, aval: ShapedArray, contract: tuple, batch: tuple) -> None:
    if not all(0 <= d < aval.ndim for d in contract + batch):
        raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and "
                        f"less than the number of axes of the {side} value, got {side}_batch of "
                        f"{batch} and {side}_contracting of {contract} for {side} of rank "
                        f"{aval.ndim}")
    if len(set(batch)) != len(batch):
        raise TypeError(f"dot_general requires {side} batch dimensions to be distinct, got "
                        f"{side}_batch {batch}.")
    if len(set(contract)) != len(contract):
        raise TypeError(f"dot_general requires {side} contracting dimensions to be distinct, "
                        f"got {side}_contracting {contract}.")
    if set(batch) & set(contract):
        raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                        f"contracting dimensions, got {side}_batch {batch} and "
                        f"{side}_contracting {contract}.")


def _free_dims(ndim: int, contract: tuple, batch: tuple) -> list[int]:
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_general_abstract(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers, precision,
                          preferred_element_type) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    _check_dims("lhs", lhs, lc, lb)
    _check_dims("rhs", rhs, rc, rb)
    if len(lb) != len(rb):
        raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch "
                        f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
    lb_shape = tuple(lhs.shape[d] for d in lb)
    rb_shape = tuple(rhs.shape[d] for d in rb)
    if lb_shape != rb_shape:
        raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions to "
                        f"have the same shape, got {lb_shape} and {rb_shape}.")
    lc_shape = tuple(lhs.shape[d] for d in lc)
    rc_shape = tuple(rhs.shape[d] for d in rc)
    if len(lc) != len(rc) or lc_shape != rc_shape:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {lc_shape} and {rc_shape}.")
    dtype = _dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    shape = (lb_shape + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
             + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)))
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _accumulation_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    """Where the NumPy reference sums products: integers exactly (wrapping mod 2**64, which
    agrees with XLA's wrap-around in the output type); half floats in float32, as XLA on CPU."""
    if not (dtypes.is_inexact(lhs) or dtypes.is_inexact(rhs)):
        return np.dtype(np.uint64 if out.kind == "u" else np.int64)
    inexact = [d for d in (lhs, rhs, out) if dtypes.is_inexact(d)]
    wide = any(d in (dtypes.float64, dtypes.complex128) for d in inexact)
    if any(d.kind == "c" for d in inexact):
        return dtypes.complex128 if wide else dtypes.complex64
    return dtypes.float64 if wide else dtypes.float32


def _dot_general_impl(lhs: np.ndarray, rhs: np.ndarray, *, dimension_numbers, precision,
                      preferred_element_type) -> np.ndarray:
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = _dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    acc = _accumulation_dtype(lhs.dtype, rhs.dtype, out_dtype)
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    batch = [lhs.shape[d] for d in lb]
    m = int(np.prod([lhs.shape[d] for d in lf]))
    n = int(np.prod([rhs.shape[d] for d in rf]))
    k = int(np.prod([lhs.shape[d] for d in lc]))
    b = int(np.prod(batch))
    # (batch, free, contract) @ (batch, contract, free): one BLAS-backed matmul
    x = np.transpose(lhs, list(lb) + lf + list(lc)).astype(acc).reshape(b, m, k)
    y = np.transpose(rhs, list(rb) + list(rc) + rf).astype(acc).reshape(b, k, n)
    with np.errstate(all="ignore"):
        out = np.matmul(x, y)
        shape = batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
        out = out.reshape(shape)
        if out_dtype == dtypes.bool_:
            return out != 0
        return out.astype(out_dtype)


dot_general_p = Primitive("dot_general")
dot_general_p.def_abstract_eval(_dot_general_abstract)
dot_general_p.def_impl(_dot_general_impl)


def _dot_general_pp_params(params: dict) -> dict:
    """As JAX prints it: dimension numbers as lists, None-valued params left out."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shown = {k: v for k, v in sorted(params.items()) if v is not None}
    shown["dimension_numbers"] = (list(lc), list(rc)), (list(lb), list(rb))
    return dict(sorted(shown.items()))


dot_general_p.pp_params = _dot_general_pp_params


def _index_tuple(dims: Any, what: str) -> tuple[int, ...]:
    if isinstance(dims, (int, np.integer)):
        return (int(dims),)
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"dot_general {what} must be a sequence of ints, got {dims!r}") from None


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None):
    """lax.dot_general: contract `lhs_contract` with `rhs_contract`, batching over the batch
    dims. dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))."""
    for x in (lhs, rhs):
        check_operand(x, "lax.dot_general")
    if dimension_numbers is None:  # as JAX: the plain matrix/vector product
        return dot(lhs, rhs, precision=precision, preferred_element_type=preferred_element_type)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError) as e:  # same class as JAX's failed unpacking
        raise type(e)(f"dot_general dimension_numbers must be ((lhs_contracting, "
                      f"rhs_contracting), (lhs_batch, rhs_batch)), got "
                      f"{dimension_numbers!r}") from None
    dnums = ((_index_tuple(lc, "lhs_contracting"), _index_tuple(rc, "rhs_contracting")),
             (_index_tuple(lb, "lhs_batch"), _index_tuple(rb, "rhs_batch")))
    preferred = None if preferred_element_type is None else \
        dtypes.check_user_dtype(preferred_element_type, "preferred_element_type")
    algorithm = _algorithm(precision)
    if algorithm is not None:
        return _dot_by_algorithm(lhs, rhs, dnums, algorithm, preferred)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dnums,
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred)


# JAX's dot algorithms on the CPU: these presets run (XLA's CPU ignores the rest of an algorithm
# but its types, so JAX refuses the others there); each casts the operands to its input types
# and accumulates in its accumulation type (or the result's, where the preset allows that)
_CPU_ALGORITHMS = {  # name -> (input types, accumulation type), named (bfloat16 loads lazily)
    "DEFAULT": (None, None), "F16_F16_F16": (("float16",), "float16"),
    "F32_F32_F32": (("float32",), "float32"), "F64_F64_F64": (("float64",), "float64"),
    "BF16_BF16_F32": (("bfloat16", "float32"), "float32"),
    "BF16_BF16_F32_X3": (("float32",), "float32"), "BF16_BF16_F32_X6": (("float32",), "float32")}


def _algorithm(precision: Any) -> Any:
    """A DotAlgorithmPreset (also named by a string) or DotAlgorithm given as `precision`."""
    if precision is None or isinstance(precision, Precision):
        return None
    from .composed import DotAlgorithmPreset
    from .typenames import DotAlgorithm
    if isinstance(precision, (DotAlgorithmPreset, DotAlgorithm)):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    return None


def _dot_by_algorithm(lhs: Any, rhs: Any, dnums: tuple, algorithm: Any, preferred: Any) -> Any:
    """dot_general under one of JAX's dot algorithms, as JAX lowers it on the CPU: the operands
    converted to the algorithm's input types, the product accumulated in its type, the result
    converted to the type dot_general gives without it."""
    name = getattr(algorithm, "name", None)
    if name not in _CPU_ALGORITHMS or not isinstance(algorithm, enum.Enum):
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")
    names, accumulation = _CPU_ALGORITHMS[name]
    if names is None:
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dnums, precision=None,
                                  preferred_element_type=preferred)
    out_dtype = _dot_general_abstract(get_aval(lhs), get_aval(rhs), dimension_numbers=dnums,
                                      precision=None, preferred_element_type=preferred).dtype
    inputs = [dtypes.np_dtype(n) for n in names]

    def cast(x: Any) -> Any:  # (to float64 with x64 off too: XLA's convert, as JAX's)
        if get_aval(x).dtype in inputs:
            return x
        return convert_element_type_p.bind(x, new_dtype=inputs[0], weak_type=False)
    lhs, rhs = cast(lhs), cast(rhs)
    outputs = [dtypes.np_dtype(accumulation)]
    if name == "BF16_BF16_F32" and dtypes.promote_types(
            get_aval(lhs).dtype, get_aval(rhs).dtype) == dtypes.np_dtype("bfloat16"):
        outputs.append(dtypes.np_dtype("bfloat16"))
    acc = out_dtype if out_dtype in outputs else outputs[0]
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dnums, precision=None,
                             preferred_element_type=acc)
    if get_aval(out).dtype != out_dtype:
        out = convert_element_type_p.bind(out, new_dtype=out_dtype, weak_type=False)
    return out


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None):
    """lax.dot: vector/matrix products of rank-1 or rank-2 operands (or any dot_general when
    `dimension_numbers` is given)."""
    if dimension_numbers is None:
        lshape, rshape = get_aval(lhs).shape, get_aval(rhs).shape
        if not (1 <= len(lshape) <= 2 and 1 <= len(rshape) <= 2 and lshape[-1] == rshape[0]):
            raise ValueError("jax.lax.dot: dimension_numbers must be specified when not "
                             "performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={lshape} "
                             f"rhs_shape={rshape}")
        dimension_numbers = (((len(lshape) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None):
    """lax.batch_matmul: matmul over equal leading batch dims (both operands rank >= 2)."""
    lnd, rnd = get_aval(lhs).ndim, get_aval(rhs).ndim
    if min(lnd, rnd) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lnd}, {rnd}")
    if lnd != rnd:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lnd}, {rnd}")
    batch = tuple(range(lnd - 2))
    return dot_general(lhs, rhs, (((lnd - 1,), (rnd - 2,)), (batch, batch)), precision)


# --- transformation rules: JVP (bilinear), transpose, batching ------------------------------

def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, swap_ans=False):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_aval = aval_of(x)
    x_kept = tuple(_free_dims(x_aval.ndim, x_contract, x_batch))
    y_kept = tuple(_free_dims(aval_of(y).ndim, y_contract, y_batch))
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + list(x_kept) + x_contract_by_y))
    out = transpose(dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                                       preferred_element_type=preferred_element_type), out_axes)
    if get_aval(out).dtype == x_aval.dtype:
        return out
    return convert_element_type(out, x_aval.dtype, x_aval.weak_type)


def _dot_general_transpose(ct, x, y, *, dimension_numbers, precision, preferred_element_type):
    if is_undefined(x):
        return [_dot_general_transpose_lhs(ct, x, y, dimension_numbers=dimension_numbers,
                                           precision=precision,
                                           preferred_element_type=preferred_element_type), None]
    (xc, yc), (xb, yb) = dimension_numbers
    return [None, _dot_general_transpose_lhs(ct, y, x, dimension_numbers=((yc, xc), (yb, xb)),
                                             precision=precision,
                                             preferred_element_type=preferred_element_type,
                                             swap_ans=True)]


def _dot_general_batch(vals, dims, *, dimension_numbers, precision, preferred_element_type):
    """JAX's rule: no transposes; both operands batched make a new (first) batch dimension, one
    makes its batch dimension a free one."""
    (x, y), (dx, dy) = vals, dims
    (xc, yc), (xb, yb) = dimension_numbers

    def bump(ds, d):
        return tuple(i + (i >= d) for i in ds)

    if dx is not None and dy is not None:
        xb, yb = (dx,) + bump(xb, dx), (dy,) + bump(yb, dy)
        xc, yc = bump(xc, dx), bump(yc, dy)
        out_dim = 0
    elif dx is not None:  # among lhs's free dimensions, which follow the batch dimensions
        x_free = _free_dims(get_aval(x).ndim - 1, xc, xb)
        out_dim = len(xb) + sum(d < dx for d in x_free)
        xb, xc = bump(xb, dx), bump(xc, dx)
    else:  # among rhs's free dimensions, which follow the batch and lhs free dimensions
        y_free = _free_dims(get_aval(y).ndim - 1, yc, yb)
        out_dim = get_aval(x).ndim - len(xc) + sum(d < dy for d in y_free)
        yb, yc = bump(yb, dy), bump(yc, dy)
    out = dot_general_p.bind(x, y, dimension_numbers=((xc, yc), (xb, yb)), precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


defjvp(dot_general_p,
       lambda g, x, y, **params: dot_general_p.bind(g, y, **params),
       lambda g, x, y, **params: dot_general_p.bind(x, g, **params))
dot_general_p.def_transpose(_dot_general_transpose)
dot_general_p.def_batch(_dot_general_batch)


__all__ = ["Precision", "dot_general", "dot", "batch_matmul"]

# lax.linalg's decompositions live in their own module (they use dot_general, defined above)
from .decompositions import (  # noqa: E402,F401
    EigImplementation, EighImplementation, SvdAlgorithm, cholesky, cholesky_p, cholesky_update,
    eig, eig_p, eigh, eigh_p, hessenberg, hessenberg_p, householder_product,
    householder_product_p, lu, lu_p, lu_pivots_to_permutation, ormqr, ormqr_p, qr, qr_p, schur,
    schur_p, svd, svd_p, symmetric_product, symmetrize, triangular_solve, triangular_solve_p,
    tridiagonal, tridiagonal_p, tridiagonal_solve, tridiagonal_solve_p)
