"""tracejit.numpy.linalg (jax.numpy.linalg): decompositions and solves on lax.linalg's
primitives (LAPACK in native code), norms, and the array-API spellings of the tensor
contractions in _linalg. Semantics, dtypes and errors are JAX's."""
from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

import numpy as np

from .. import numpy as _jnp  # (partially initialised here; its names are read at call time)
from ..core import dtypes
from ..core.trace import get_aval
from ..lax import decompositions as _dec
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis, const_like
from ..transforms.custom import custom_jvp
from . import _linalg
from ._reductions import max as _max
from ._reductions import min as _min
from ._reductions import sum as _sum
from ._ufuncs import absolute, conjugate, multiply, not_equal, power, real, sqrt
from ._util import asarray, check_arraylike, promote_dtypes_inexact

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "tensordot", "vecdot", "outer",
           "cross", "cholesky", "cond", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
           "inv", "lstsq", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensorinv", "tensorsolve",
           "trace", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]


def _sum_of_squares(x: Any, axis: Any, keepdims: bool) -> Any:
    return _sum(real(multiply(x, conjugate(x))), axis=axis, keepdims=keepdims)


def vector_norm(x: Any, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: float | str = 2) -> Any:
    """jnp.linalg.vector_norm: the `ord`-norm of x over `axis` (all axes by default). As in
    JAX, the input's dtype is kept (no promotion to float)."""
    check_arraylike("jnp.linalg.vector_norm", x)
    x = asarray(x)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return sqrt(_sum_of_squares(x, axis, keepdims))
    if isinstance(ord, str):
        hint = {"inf": "Use 'jax.numpy.inf' instead.", "-inf": "Use '-jax.numpy.inf' instead."}
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint.get(ord, '')}")
    if ord == np.inf:
        return _max(absolute(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _min(absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return _sum(not_equal(x, 0), dtype=dtypes.finfo_of(get_aval(x).dtype).dtype, axis=axis,
                    keepdims=keepdims)
    if ord == 1:
        return _sum(absolute(x), axis=axis, keepdims=keepdims)
    abs_x = absolute(x)
    aval = get_aval(abs_x).strip_weak_type()
    # ord and 1/ord take abs(x)'s dtype, as JAX's lax._const does
    out = _sum(power(abs_x, const_like(aval, ord)), axis=axis, keepdims=keepdims)
    return power(out, const_like(aval, 1.0 / ord))


def norm(x: Any, ord: float | str | None = None, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Any:
    """jnp.linalg.norm: a vector norm over one axis or a matrix norm over two ('fro', 1, -1,
    inf, -inf); with axis=None and ord=None the 2-norm of all elements."""
    check_arraylike("jnp.linalg.norm", x)
    (x,) = promote_dtypes_inexact(x)
    ndim = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return sqrt(_sum_of_squares(x, None, keepdims))
        axis = tuple(range(ndim))
    elif isinstance(axis, tuple):
        axis = tuple(canonicalize_axis(a, ndim) for a in axis)
    else:
        axis = (canonicalize_axis(axis, ndim),)
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                         "compute a vector-norm, or two axes to compute a matrix-norm.")
    row, col = axis
    if ord is None or ord in ("f", "fro"):
        return sqrt(_sum_of_squares(x, axis, keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if ord in (1, -1):  # max/min over columns of the column sums
        reduce_axis, outer_axis = row, col
    elif ord in (np.inf, -np.inf):  # max/min over rows of the row sums
        reduce_axis, outer_axis = col, row
    elif ord in ("nuc", 2, -2):
        s = svd(_jnp.moveaxis(x, axis, (-2, -1)), compute_uv=False)
        if ord == 2:
            y = _max(s, axis=-1, initial=0)
        elif ord == -2:
            y = _min(s, axis=-1)
        else:
            y = _sum(s, axis=-1)
        return _jnp.expand_dims(y, axis) if keepdims else y
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if not keepdims and outer_axis > reduce_axis:
        outer_axis -= 1
    sums = _sum(absolute(x), axis=reduce_axis, keepdims=keepdims)
    if ord > 0:
        return _max(sums, axis=outer_axis, keepdims=keepdims, initial=0)
    return _min(sums, axis=outer_axis, keepdims=keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: float | str = "fro") -> Any:
    """jnp.linalg.matrix_norm: norm over the last two axes."""
    check_arraylike("jnp.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """jnp.linalg.matmul: jnp.matmul with positional-only operands."""
    return _linalg.matmul(x1, x2, precision=precision,
                          preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """jnp.linalg.tensordot: jnp.tensordot with keyword-only `axes`."""
    return _linalg.tensordot(x1, x2, axes, precision=precision,
                             preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """jnp.linalg.vecdot: conj(x1) . x2 along `axis`."""
    return _linalg.vecdot(x1, x2, axis=axis, precision=precision,
                          preferred_element_type=preferred_element_type)


def outer(x1: Any, x2: Any, /) -> Any:
    """jnp.linalg.outer: outer product of two 1-D arrays."""
    check_arraylike("jnp.linalg.outer", x1, x2)
    n1, n2 = get_aval(asarray(x1)).ndim, get_aval(asarray(x2)).ndim
    if n1 != 1 or n2 != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} "
                         f"x2.ndim={n2}")
    return _linalg.outer(x1, x2)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """jnp.linalg.cross: cross product of 3-vectors along `axis`."""
    check_arraylike("jnp.linalg.cross", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    n1 = s1[canonicalize_axis(axis, len(s1))]
    n2 = s2[canonicalize_axis(axis, len(s2))]
    if n1 != 3 or n2 != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={n1} and x2.shape[axis]={n2}")
    return _linalg.cross(x1, x2, axis=axis)



# --- decompositions and solves ---------------------------------------------------------------

class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _inexact(name: str, *args: Any) -> list:
    check_arraylike(name, *args)
    return promote_dtypes_inexact(*[asarray(a) for a in args])


def _mT(x: Any) -> Any:
    nd = get_aval(x).ndim
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x: Any) -> Any:
    return _jnp.conj(_mT(x))


def _square_shape(name: str, x: Any) -> tuple:
    shape = get_aval(x).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {name} must have shape [..., n, n], got {shape}.")
    return shape


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """jnp.linalg.cholesky: the lower (or, with upper=True, upper) Cholesky factor of a
    Hermitian positive-definite matrix; NaNs where it is not positive definite."""
    (a,) = _inexact("jnp.linalg.cholesky", a)
    L = _dec.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
    """jnp.linalg.svd: SVDResult(U, S, Vh) with a = U diag(S) Vh (S descending), or S alone
    without compute_uv; `hermitian` uses the eigendecomposition."""
    (a,) = _inexact("jnp.linalg.svd", a)
    if hermitian:
        w, v = _dec.eigh(a, subset_by_index=subset_by_index)
        s = _jnp.abs(v)
        nd = get_aval(s).ndim
        if not compute_uv:
            return lax.rev(lax.sort(s, dimension=nd - 1), (nd - 1,))
        sign = _jnp.sign(v)
        idxs = lax.broadcasted_iota(np.int32, get_aval(s).shape, nd - 1)
        s, idxs, sign = lax.sort((s, idxs, sign), dimension=nd - 1, num_keys=1)
        s, idxs, sign = (lax.rev(t, (nd - 1,)) for t in (s, idxs, sign))
        u = _jnp.take_along_axis(w, idxs[..., None, :], axis=-1)
        vh = _H(u * sign[..., None, :].astype(get_aval(u).dtype))
        return SVDResult(u, s, vh)
    out = _dec.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                   subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x: Any, /) -> Any:
    """jnp.linalg.svdvals: the singular values, descending."""
    return svd(x, compute_uv=False)


def eig(a: Any) -> EigResult:
    """jnp.linalg.eig: EigResult(eigenvalues, eigenvectors) of a general square matrix (always
    complex; right eigenvectors in the columns)."""
    (a,) = _inexact("jnp.linalg.eig", a)
    w, v = _dec.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: Any) -> Any:
    """jnp.linalg.eigvals: the (complex) eigenvalues of a general square matrix."""
    (a,) = _inexact("jnp.linalg.eigvals", a)
    return _dec.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _lower(UPLO: str | None) -> bool:
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """jnp.linalg.eigh: EighResult(eigenvalues ascending, eigenvectors) of a Hermitian
    matrix."""
    lower = _lower(UPLO)
    (a,) = _inexact("jnp.linalg.eigh", a)
    v, w = _dec.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """jnp.linalg.eigvalsh: the eigenvalues of a Hermitian matrix, ascending."""
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def qr(a: Any, mode: str = "reduced") -> Any:
    """jnp.linalg.qr: QRResult(Q, R) ('reduced' or 'complete'), R alone ('r'), or LAPACK's
    (reflectors transposed, taus) ('raw')."""
    (a,) = _inexact("jnp.linalg.qr", a)
    if mode == "raw":  # LAPACK's geqrf, its matrix transposed (Fortran's view), as NumPy
        a, taus = _dec.geqrf(a)
        return QRResult(_mT(a), taus)
    if mode in ("reduced", "r", "full"):
        full_matrices = False
    elif mode == "complete":
        full_matrices = True
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = _dec.qr(a, full_matrices=full_matrices)
    return r if mode == "r" else QRResult(q, r)


def _solve_square(a: Any, b: Any) -> Any:
    """a^-1 b for a [..., m, m] and b [..., m, n] with equal batch dims (LU, partial pivoting)."""
    lu, _, perm = _dec.lu(a)
    x = _dec.take_rows(b, perm)
    x = _dec.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return _dec.triangular_solve(lu, x, left_side=True, lower=False)


def solve(a: Any, b: Any) -> Any:
    """jnp.linalg.solve: x with a x = b; b is a vector ([m]) or a batch of matrices; batch
    dims broadcast."""
    a, b = _inexact("jnp.linalg.solve", a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if len(a_shape) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got "
                         f"a.shape={a_shape}")
    if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and a_shape[-1] == b_shape[-1]
            and a_shape[-1] != b_shape[-2]):
        raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX "
                         "v0.5.0, this would have been treated as a batched 1-dimensional "
                         "solve. To recover this behavior, use solve(a, b[..., None])"
                         ".squeeze(-1).")
    if a_shape[-1] != a_shape[-2]:
        raise ValueError(f"solve: a must be a batch of square matrices, got shape {a_shape}")
    vector = len(b_shape) == 1
    b_mat = b[:, None] if vector else b
    core_b = get_aval(b_mat).shape[-2:]
    if core_b[0] != a_shape[-1]:
        raise ValueError(f"solve: shapes {a_shape} and {b_shape} do not fit: the last "
                         f"dimension of a must match b's {'only' if vector else 'second-last'}"
                         f" dimension")
    batch = np.broadcast_shapes(a_shape[:-2], get_aval(b_mat).shape[:-2])
    a = _jnp.broadcast_to(a, batch + a_shape[-2:])
    b_mat = _jnp.broadcast_to(b_mat, batch + core_b)
    x = _solve_square(a, b_mat)
    return x[..., 0] if vector else x


def inv(a: Any) -> Any:
    """jnp.linalg.inv: the inverse of each square matrix (infs/NaNs where singular)."""
    check_arraylike("jnp.linalg.inv", a)
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    eye = _jnp.broadcast_to(_jnp.eye(shape[-1], dtype=get_aval(a).dtype), shape)
    return solve(a, eye)


def _swaps(pivots: Any, n: int) -> Any:
    """The number of row swaps LU's pivots make (its parity is the permutation's sign)."""
    return _jnp.count_nonzero(pivots != _jnp.arange(n, dtype=np.int32), axis=-1)


def _slogdet_lu(a: Any) -> tuple:
    dtype = get_aval(a).dtype
    n = get_aval(a).shape[-1]
    lu, pivots, _ = _dec.lu(a)
    diag = _jnp.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = _jnp.any(diag == _jnp.array(0, dtype=dtype), axis=-1)
    parity = _swaps(pivots, n)
    if dtype.kind == "c":
        sign = _jnp.prod(diag / _jnp.abs(diag).astype(dtype), axis=-1)
    else:
        sign = _jnp.array(1, dtype=dtype)
        parity = parity + _jnp.count_nonzero(diag < 0, axis=-1)
    sign = _jnp.where(is_zero, _jnp.array(0, dtype=dtype),
                      sign * _jnp.array(-2 * (parity % 2) + 1, dtype=dtype))
    logdet = _jnp.where(is_zero, _jnp.array(-np.inf, dtype=dtype),
                        _jnp.sum(_jnp.log(_jnp.abs(diag)).astype(dtype), axis=-1))
    return sign, _jnp.real(logdet)


def _slogdet_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    sign, ans = _slogdet_lu_jvp_fn(x)
    ans_dot = _jnp.trace(solve(x, g), axis1=-1, axis2=-2)
    if get_aval(x).dtype.kind == "c":
        sign_dot = (ans_dot - _jnp.real(ans_dot).astype(get_aval(ans_dot).dtype)) * sign
        ans_dot = _jnp.real(ans_dot)
    else:
        sign_dot = _jnp.zeros_like(sign)
    return (sign, ans), (sign_dot, ans_dot)


_slogdet_lu_jvp_fn = custom_jvp(_slogdet_lu)
_slogdet_lu_jvp_fn.defjvp(_slogdet_jvp)


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """jnp.linalg.slogdet: SlogdetResult(sign, logabsdet) through LU (sign 0 and logabsdet
    -inf for a singular matrix); its derivative is trace(solve(a, da)), as JAX."""
    (a,) = _inexact("jnp.linalg.slogdet", a)
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
    if method is not None and method != "lu":
        if method == "qr":
            raise NotImplementedError("slogdet(method='qr') is not implemented in tracejit; "
                                      "use method='lu'")
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    return SlogdetResult(*_slogdet_lu_jvp_fn(a))


def _cofactor_solve(a: Any, b: Any) -> tuple:
    """(det(a), adj(a) b) for square a and b of a's shape, defined for singular a too (JAX's
    algorithm: LU with the last pivot replaced by 1/partial_det, and filters for infinities)."""
    n = get_aval(a).shape[-1]
    dtype = get_aval(a).dtype
    if n == 1:
        return a[..., 0, 0], b
    lu, pivots, permutation = _dec.lu(a)
    diag = _jnp.diagonal(lu, axis1=-2, axis2=-1)
    parity = _swaps(pivots, n)
    sign = _jnp.asarray(-2 * (parity % 2) + 1, dtype=dtype)
    partial_det = _jnp.cumprod(diag, axis=-1) * sign[..., None]
    lu = lu.at[..., -1, -1].set(1.0 / partial_det[..., -2])
    d = _jnp.ones(get_aval(b).shape[:-1], dtype)
    d = _dec.triangular_solve(lu, d, left_side=True, lower=False)
    d = _jnp.any(_jnp.isnan(d) | _jnp.isinf(d), axis=-1)
    d = _jnp.broadcast_to(d[..., None, None], get_aval(b).shape)
    x = _jnp.where(d, _jnp.zeros_like(b), b)
    x = _dec.take_rows(x, permutation)
    x = _dec.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = _jnp.concatenate((x[..., :-1, :] * partial_det[..., -1, None, None], x[..., -1:, :]),
                         axis=-2)
    x = _dec.triangular_solve(lu, x, left_side=True, lower=False)
    x = _jnp.where(d, _jnp.zeros_like(x), x)
    return partial_det[..., -1], x


def _det_lu(a: Any) -> Any:
    sign, logdet = slogdet(a)
    return sign * _jnp.exp(logdet).astype(get_aval(sign).dtype)


def _det_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    y, z = _cofactor_solve(x, g)
    return y, _jnp.trace(z, axis1=-1, axis2=-2)


_det = custom_jvp(_det_lu)
_det.defjvp(_det_jvp)


def det(a: Any) -> Any:
    """jnp.linalg.det: the determinant (closed forms for 2x2 and 3x3, else LU); its derivative
    is the cofactor formula, defined at singular matrices too (as JAX)."""
    (a,) = _inexact("jnp.linalg.det", a)
    shape = get_aval(a).shape
    if len(shape) >= 2 and shape[-2:] == (2, 2):
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if len(shape) >= 2 and shape[-2:] == (3, 3):
        return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] +
                a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0] +
                a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] -
                a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0] -
                a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] -
                a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return _det(a)
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")


def _pinv_impl(a: Any, rtol: Any, hermitian: bool) -> Any:
    m, n = get_aval(a).shape[-2:]
    dtype = get_aval(a).dtype
    if m == 0 or n == 0:
        return _jnp.empty(get_aval(a).shape[:-2] + (n, m), dtype)
    a = _jnp.conj(a)
    if rtol is None:
        rtol = 10.0 * max(m, n) * _jnp.array(_jnp.finfo(dtype).eps)
    rtol = _jnp.asarray(rtol)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = lax.expand_dims(rtol[..., None],
                           tuple(range(get_aval(s).ndim - get_aval(rtol).ndim - 1)))
    cutoff = rtol * s[..., 0:1]
    s = _jnp.where(s > cutoff, s, np.inf).astype(get_aval(u).dtype)
    res = _linalg.matmul(_mT(vh), _mT(u) / s[..., None], precision=lax.Precision.HIGHEST)
    return lax.convert_element_type(res, dtype)


def _pinv_jvp(rtol, hermitian, primals, tangents):
    (a,), (a_dot,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    if hermitian:
        a, a_dot = _dec.symmetrize(a), _dec.symmetrize(a_dot)
    m, n = get_aval(a).shape[-2:]
    mm = _linalg.matmul
    if m >= n:
        s = mm(mm(p, _H(p)), _H(a_dot))
        t = mm(mm(_H(a_dot), _H(p)), p)
        p_dot = -mm(mm(p, a_dot), p) + s - mm(mm(s, a), p) + t - mm(mm(p, a), t)
    else:
        s = mm(p, mm(_H(p), _H(a_dot)))
        t = mm(_H(a_dot), mm(_H(p), p))
        p_dot = -mm(p, mm(a_dot, p)) + s - mm(s, mm(a, p)) + t - mm(p, mm(a, t))
    return p, p_dot


_pinv = custom_jvp(lambda a, rtol, hermitian: _pinv_impl(a, rtol, hermitian),
                   nondiff_argnums=(1, 2))
_pinv.defjvp(_pinv_jvp)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """jnp.linalg.pinv: the Moore-Penrose pseudo-inverse through the SVD (singular values below
    rtol * the largest are dropped), with JAX's derivative rule."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = _inexact("jnp.linalg.pinv", a)
    return _pinv(a, rtol, bool(hermitian))


def matrix_power(a: Any, n: int) -> Any:
    """jnp.linalg.matrix_power: a to the integer power n by repeated squaring (n < 0 inverts
    first)."""
    check_arraylike("jnp.linalg.matrix_power", a)
    arr = asarray(a)
    shape = get_aval(arr).shape
    if len(shape) < 2:
        raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                        "two-dimensional")
    if shape[-2] != shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return _jnp.broadcast_to(_jnp.eye(shape[-2], dtype=get_aval(arr).dtype), shape)
    if n < 0:
        arr = inv(arr)
        n = abs(n)
    if n <= 3:
        result = arr
        for _ in range(n - 1):
            result = _linalg.matmul(result, arr)
        return result
    z = result = None
    while n > 0:
        z = arr if z is None else _linalg.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _linalg.matmul(result, z)
    return result


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """jnp.linalg.matrix_rank: the number of singular values above rtol * the largest (default
    rtol: max(m, n) * eps)."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = _inexact("jnp.linalg.matrix_rank", M)
    shape = get_aval(M).shape
    if len(shape) < 2:
        return _jnp.any(M != 0).astype(np.int32)
    S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    s_dtype = get_aval(S).dtype
    if rtol is None:
        rtol = S.max(-1) * np.asarray(max(shape[-2:])).astype(s_dtype) * \
            _jnp.finfo(s_dtype).eps
    rtol = _jnp.expand_dims(rtol, np.ndim(rtol))
    return _jnp.sum(S > rtol, axis=-1)


def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False) -> tuple:
    """jnp.linalg.lstsq: (x, residuals, rank, singular values) of min |a x - b| through the
    SVD (2-D a; b of 1 or 2 dimensions)."""
    a, b = _inexact("jnp.linalg.lstsq", a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if a_shape[0] != b_shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_orig_ndim = len(b_shape)
    if b_orig_ndim == 1:
        b = b[:, None]
    if len(a_shape) != 2:
        raise TypeError(f"{len(a_shape)}-dimensional array given. Array must be "
                        "two-dimensional")
    if get_aval(b).ndim != 2:
        raise TypeError(f"{get_aval(b).ndim}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = a_shape
    dtype = get_aval(a).dtype
    if math.prod(a_shape) == 0:
        s = _jnp.empty(0, dtype=dtype)
        rank = _jnp.array(0, dtype=int)
        x = _jnp.zeros((n,) + get_aval(b).shape[1:], dtype=dtype)
    else:
        if rcond is None:
            rcond = float(_jnp.finfo(dtype).eps) * max(n, m)
        else:
            rcond = _jnp.where(rcond < 0, _jnp.finfo(dtype).eps, rcond)
        u, s, vt = svd(a, full_matrices=False)
        s_dtype = get_aval(s).dtype
        mask = (s > 0) & (s >= _jnp.array(rcond, dtype=s_dtype) * s[0])
        rank = mask.sum()
        safe_s = _jnp.where(mask, s, 1).astype(dtype)
        s_inv = _jnp.where(mask, 1 / safe_s, 0)[:, None]
        uTb = _linalg.matmul(_jnp.conj(u).T, b, precision=lax.Precision.HIGHEST)
        x = _linalg.matmul(_jnp.conj(vt).T, s_inv * uTb, precision=lax.Precision.HIGHEST)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = _jnp.asarray([])
    else:
        b_estimate = _linalg.matmul(a, x, precision=lax.Precision.HIGHEST)
        resid = norm(b - b_estimate, axis=0) ** 2
    if b_orig_ndim == 1:
        x = x.ravel()
    return x, resid, rank, s


def matrix_transpose(x: Any, /) -> Any:
    """jnp.linalg.matrix_transpose: swap the last two axes."""
    check_arraylike("jnp.linalg.matrix_transpose", x)
    x = asarray(x)
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={ndim}")
    return _mT(x)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """jnp.linalg.diagonal: the diagonal of the last two axes."""
    check_arraylike("jnp.linalg.diagonal", x)
    return _jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """jnp.linalg.trace: the trace over the last two axes."""
    check_arraylike("jnp.linalg.trace", x)
    return _jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """jnp.linalg.tensorinv: the inverse of a tensor seen as a matrix (first `ind` dims by the
    rest)."""
    check_arraylike("tensorinv", a)
    arr = asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = get_aval(arr).shape
    contracting, batch = shape[:ind], shape[ind:]
    flat = (math.prod(contracting), math.prod(batch))
    if flat[0] != flat[1]:
        raise ValueError("tensorinv is only possible when the product of the first `ind` "
                         "dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={shape} with ind={ind}.")
    return inv(arr.reshape(flat)).reshape(*batch, *contracting)


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """jnp.linalg.tensorsolve: x with tensordot(a, x, x.ndim) == b."""
    check_arraylike("tensorsolve", a, b)
    a, b = asarray(a), asarray(b)
    if axes is not None:
        nd = get_aval(a).ndim
        a = _jnp.moveaxis(a, axes, len(axes) * (nd - 1,))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    out_shape = a_shape[len(b_shape):]
    if a_shape[:len(b_shape)] != b_shape:
        raise ValueError("After moving axes to end, leading shape of a must match shape of b."
                         f" got a.shape={a_shape}, b.shape={b_shape}")
    size = math.prod(b_shape)
    if size != math.prod(out_shape):
        raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={a_shape}, b.ndim={len(b_shape)}.")
    a = a.reshape(size, math.prod(out_shape))
    return solve(a, b.ravel()).reshape(out_shape)


def multi_dot(arrays: Any, *, precision: Any = None) -> Any:
    """jnp.linalg.multi_dot: the product of a chain of matrices (first and last may be
    vectors), contracted in a cheap order."""
    check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrs = [asarray(a) for a in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got "
                         f"len(arrays)={len(arrs)}")
    shapes = [get_aval(a).shape for a in arrs]
    if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2) and
            all(len(s) == 2 for s in shapes[1:-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                         "first and last array which may be 1 or 2 dimensional. Got array "
                         f"shapes {shapes}")
    if any(s[-1] != t[0] for s, t in zip(shapes[:-1], shapes[1:])):
        raise ValueError("multi_dot: last dimension of each array must match first dimension "
                         f"of following array. Got array shapes {shapes}")
    axes: list[tuple[int, ...]] = [(i, i + 1) for i in range(len(arrs))]
    if len(shapes[0]) == 1:
        axes[0] = axes[0][1:]
    if len(shapes[-1]) == 1:
        axes[-1] = axes[-1][:1]
    operands = [x for pair in zip(arrs, axes) for x in pair]
    return _linalg.einsum(*operands, optimize="auto", precision=precision)


def cond(x: Any, p: Any = None) -> Any:
    """jnp.linalg.cond: the condition number in norm p (2 by default, from the singular
    values); inf where the matrix is singular."""
    check_arraylike("cond", x)
    arr = asarray(x)
    shape = get_aval(arr).shape
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"arr.shape={shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"arr.shape={shape}")
    if p is None or p == 2:
        s = svdvals(arr)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(arr)
        r = s[..., -1] / s[..., 0]
    else:
        if shape[-2] != shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                             f"arr.shape={shape}")
        r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
    return _jnp.where(_jnp.isnan(r) & ~_jnp.isnan(arr).any(axis=(-2, -1)), np.inf, r)
