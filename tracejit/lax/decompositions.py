"""Matrix decompositions and solves (JAX's `lax.linalg`): cholesky, triangular_solve, lu, qr,
eigh, svd, eig and tridiagonal_solve, with all their rules. Leading dimensions are batch
dimensions. The backend lowers each to LAPACK calls (backend/llvm/lapack.py); the reference
impls here are NumPy/SciPy (the oracle). A failed factorisation gives NaNs, as JAX on CPU.
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.rules import Zero, add_tangents, bdim_at_front, instantiate, not_mapped
from ..core.trace import get_aval
from . import elementwise as ew
from .control_flow import fori_loop
from .indexing import GatherDimensionNumbers, GatherScatterMode, dynamic_slice_in_dim, gather
from .linalg import Precision, dot_general
from .reductions import argmax, reduce_sum
from .shape import (broadcast_in_dim, broadcasted_iota, concatenate, expand_dims, full, pad,
                    slice, squeeze, transpose)

_INEXACT = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


class EigImplementation(enum.Enum):
    """lax.linalg.eig's implementation choice; on CPU only LAPACK."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """lax.linalg.eigh's implementation choice; on CPU only QR (LAPACK's syevd)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """lax.linalg.svd's algorithm choice; on CPU LAPACK's divide and conquer (gesdd)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


# --- matrix helpers (the last two dimensions are the matrix; the rest batch) -----------------

def _T(x: Any) -> Any:
    nd = get_aval(x).ndim
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x: Any) -> Any:
    return ew.conj(x) if get_aval(x).dtype.kind == "c" else x


def _H(x: Any) -> Any:
    return _conj(_T(x))


def _mm(a: Any, b: Any) -> Any:
    """Batched matrix product over equal leading dimensions."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def _bmul(x: Any, y: Any) -> Any:
    """x * y with NumPy's broadcasting of size-1 dims (the operands have equal ranks)."""
    shape = np.broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
    return ew.mul(_bcast(x, shape), _bcast(y, shape))


def _bcast(x: Any, shape: tuple) -> Any:
    if get_aval(x).shape == tuple(shape):
        return x
    return broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def _outer_diff(w: Any) -> Any:
    """[..., i, j] = w[..., j] - w[..., i]."""
    aval = get_aval(w)
    nd, n = aval.ndim, aval.shape[-1]
    shape = aval.shape + (n,)
    return ew.sub(broadcast_in_dim(w, shape, tuple(range(nd - 1)) + (nd,)),
                  broadcast_in_dim(w, shape, tuple(range(nd))))


def _tri_mask(shape: tuple, k: int) -> Any:
    """True on and below the k-th diagonal of the last two dims."""
    nd = len(shape)
    rows = broadcasted_iota(np.int32, shape, nd - 2)
    cols = broadcasted_iota(np.int32, shape, nd - 1)
    return ew.ge(ew.add(rows, np.int32(k)), cols)


def _zeros_like(x: Any) -> Any:
    aval = get_aval(x)
    return full(aval.shape, 0, aval.dtype)


def tril(x: Any, k: int = 0) -> Any:
    return ew.select(_tri_mask(get_aval(x).shape, k), x, _zeros_like(x))


def triu(x: Any, k: int = 0) -> Any:
    return ew.select(_tri_mask(get_aval(x).shape, k - 1), _zeros_like(x), x)


def _eye(dtype: Any, shape: tuple) -> Any:
    """Identity matrices of `shape` (batch dims and two matrix dims, rectangular allowed)."""
    nd = len(shape)
    eq = ew.eq(broadcasted_iota(np.int32, shape, nd - 2),
               broadcasted_iota(np.int32, shape, nd - 1))
    return ew.convert_element_type(eq, dtype)


def _diagonal(x: Any) -> Any:
    """The main diagonal of the last two dims: [..., min(m, n)]."""
    aval = get_aval(x)
    *batch, m, n = aval.shape
    k = min(m, n)
    x = slice(x, (0,) * aval.ndim, tuple(batch) + (k, k))
    zero = _zeros_like(x)
    return reduce_sum(ew.select(_tri_mask(get_aval(x).shape, 0), ew.select(
        _tri_mask(get_aval(x).shape, -1), zero, x), zero), (aval.ndim - 1,))


def _diag_matrix(s: Any) -> Any:
    """A (batched) diagonal matrix with diagonal s."""
    aval = get_aval(s)
    n = aval.shape[-1]
    return _bmul(expand_dims(s, (aval.ndim - 1,)), _eye(aval.dtype, aval.shape + (n,)))


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtypes.finfo_of(dtype).dtype) if dtype.kind == "c" else dtype


def complex_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "c":
        return dtype
    return dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64


def take_rows(x: Any, perm: Any) -> Any:
    """x[..., perm[...], :]: rows of each matrix in the order of the batched permutation."""
    aval = get_aval(x)
    nd = aval.ndim
    batch = tuple(range(nd - 2))
    dnums = GatherDimensionNumbers(offset_dims=(nd - 1,), collapsed_slice_dims=(nd - 2,),
                                   start_index_map=(nd - 2,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    return gather(x, expand_dims(perm, (nd - 1,)), dnums, (1,) * (nd - 2) + (1, aval.shape[-1]),
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


# --- shape and dtype checks (JAX's texts) ----------------------------------------------------

def _check(name: str, *avals: ShapedArray, ranks: tuple) -> tuple:
    """Every operand inexact (float32/64, complex64/128) of rank >= its matrix rank, all with
    the same batch dims; returns those batch dims."""
    for i, (aval, rank) in enumerate(zip(avals, ranks)):
        if aval.dtype not in _INEXACT:
            raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes "
                            "are subtypes of (floating, complexfloating) of 32 or 64 bits.")
        if aval.ndim < rank:
            raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got "
                            f"shape={aval.shape}")
    if any(a.dtype != avals[0].dtype for a in avals):
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(a.dtype.name for a in avals)}.")
    batches = [a.shape[:a.ndim - r] for a, r in zip(avals, ranks)]
    if any(len(b) != len(batches[0]) for b in batches):
        raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, "
                        f"but got {[len(b) for b in batches]} batch dimensions for the inputs.")
    if any(b != batches[0] for b in batches):
        raise TypeError(f"All inputs to {name} must have the same batch dimensions, got "
                        f"{[tuple(b) for b in batches]}.")
    return tuple(batches[0])


def _square(name: str, aval: ShapedArray) -> None:
    if aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"The input to {name} must be a square matrix. Got shape "
                         f"{aval.shape[-2:]}.")


def _per_matrix(x: np.ndarray, f, nout: int) -> list[np.ndarray]:
    """Apply f (one matrix -> nout arrays) to every matrix of a non-empty batch."""
    batch = x.shape[:-2]
    results = [f(m) for m in x.reshape((-1,) + x.shape[-2:])]
    return [np.stack([r[j] for r in results]).reshape(batch + np.shape(results[0][j]))
            for j in range(nout)]


def _batched_impl(prim: Primitive, f):
    """impl from a one-matrix NumPy function (operands [..., m, n], leading dims batch); where
    a result is empty (an empty batch or matrix) every result is zeros of its aval."""
    def impl(*args, **params):
        args = [np.asarray(a) for a in args]
        avals = prim.abstract_eval(*(ShapedArray(a.shape, a.dtype) for a in args), **params)
        if any(a.size == 0 for a in avals):
            outs = [np.zeros(a.shape, a.dtype) for a in avals]
        else:
            nb = args[0].ndim - 2
            batch = args[0].shape[:nb]
            per = [a.reshape((-1,) + a.shape[nb:]) for a in args]
            results = [f(*ms, **params) for ms in zip(*per)]
            outs = [np.stack([r[j] for r in results]).reshape(batch + np.shape(results[0][j]))
                    .astype(a.dtype) for j, a in enumerate(avals)]
        return outs if prim.multiple_results else outs[0]
    return impl


def _front_batch(prim: Primitive):
    """Batching for primitives whose leading dims are batch dims: the vmapped dim moves to the
    front of every operand (an unmapped operand is broadcast along it)."""
    def batch(vals, dims, **params):
        size = next(get_aval(x).shape[d] for x, d in zip(vals, dims) if d is not not_mapped)
        args = [bdim_at_front(x, d, size) for x, d in zip(vals, dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    prim.def_batch(batch)


def _nan_like(x: np.ndarray) -> np.ndarray:
    return np.full_like(x, np.nan)


# --- cholesky --------------------------------------------------------------------------------

def _cholesky_abstract(x: ShapedArray) -> ShapedArray:
    _check("cholesky", x, ranks=(2,))
    _square("cholesky", x)
    return ShapedArray(x.shape, x.dtype)


def _cholesky_one(a: np.ndarray):
    import scipy.linalg
    try:  # potrf reads the lower triangle only
        return (scipy.linalg.cholesky(a, lower=True, check_finite=False),)
    except (np.linalg.LinAlgError, ValueError):
        return (_nan_like(a),)


cholesky_p = Primitive("cholesky")
cholesky_p.def_abstract_eval(_cholesky_abstract)
cholesky_p.def_impl(_batched_impl(cholesky_p, _cholesky_one))
_front_batch(cholesky_p)


def symmetrize(x: Any) -> Any:
    """(x + x^H) / 2."""
    return ew.div(ew.add(x, _H(x)), np.array(2, get_aval(x).dtype))


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """lax.linalg.cholesky: lower-triangular L with L L^H = x (NaNs where x is not positive
    definite). Only x's lower triangle is read unless `symmetrize_input`."""
    if symmetrize_input:
        x = symmetrize(x)
    return tril(cholesky_p.bind(x))


def _cholesky_jvp(primals, tangents):
    (x,), (sigma_dot,) = primals, tangents
    L = tril(cholesky_p.bind(x))
    if type(sigma_dot) is Zero:
        return L, Zero.from_primal(L)
    # forward mode from arXiv:1602.07527: L_dot = L phi(L^-1 sigma_dot L^-H)
    tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    aval = get_aval(inner)
    phi = ew.div(tril(inner), ew.add(np.array(1, aval.dtype), _eye(aval.dtype, aval.shape)))
    return L, _mm(L, phi)


cholesky_p.def_jvp(_cholesky_jvp)


# --- triangular_solve ------------------------------------------------------------------------

def _triangular_solve_abstract(a: ShapedArray, b: ShapedArray, *, left_side, lower,
                               transpose_a, conjugate_a, unit_diagonal) -> ShapedArray:
    _check("triangular_solve", a, b, ranks=(2, 2))
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The first input to triangular_solve must be a square matrix. Got "
                         f"shape {a.shape[-2:]}.")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} "
                         f"and {b.shape}.")
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_one(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    from scipy.linalg import get_blas_funcs
    if b.size == 0:
        return (b.copy(),)
    if conjugate_a and not transpose_a:
        a, conjugate_a = np.conj(a), False
    trsm = get_blas_funcs("trsm", (a, b))
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    with np.errstate(all="ignore"):
        return (trsm(1.0, a, b, side=0 if left_side else 1, lower=int(lower), trans_a=trans,
                     diag=int(unit_diagonal)),)


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.def_abstract_eval(_triangular_solve_abstract)
triangular_solve_p.def_impl(_batched_impl(triangular_solve_p, _triangular_solve_one))
_front_batch(triangular_solve_p)


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """lax.linalg.triangular_solve: X with op(a) X = b (left_side) or X op(a) = b, where op
    transposes and/or conjugates a; only a's `lower` (or upper) triangle is read. b may have
    one dimension fewer than a (a batch of vectors)."""
    a_aval, b_aval = get_aval(a), get_aval(b)
    conjugate_a = bool(conjugate_a) and a_aval.dtype.kind == "c"
    singleton = b_aval.ndim == a_aval.ndim - 1
    if singleton:
        b = expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = get_aval(out).ndim
        out = squeeze(out, (nd - 1,) if left_side else (nd - 2,))
    return out


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    a_dot, b_dot = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out_dot = Zero.from_primal(ans)
    if type(b_dot) is not Zero:  # linear in b
        out_dot = triangular_solve_p.bind(a, b_dot, **params)
    if type(a_dot) is not Zero:
        out_dot = add_tangents(out_dot, _triangular_solve_jvp_a(a_dot, ans, a, **params))
    return ans, out_dot


def _triangular_solve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = ew.neg(g_a)
    g_a = _T(g_a) if transpose_a else g_a
    g_a = _conj(g_a) if conjugate_a else g_a

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
    m, n = get_aval(ans).shape[-2:]
    if left_side:
        return a_inverse(_mm(g_a, ans)) if m > n else _mm(a_inverse(g_a), ans)
    return a_inverse(_mm(ans, g_a)) if m < n else _mm(ans, a_inverse(g_a))


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # linear in b only (a is never an undefined primal: the jvp uses it nonlinearly)
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


triangular_solve_p.def_jvp(_triangular_solve_jvp)
triangular_solve_p.def_transpose(_triangular_solve_transpose)


# --- lu --------------------------------------------------------------------------------------

def _lu_abstract(x: ShapedArray):
    batch = _check("lu", x, ranks=(2,))
    m, n = x.shape[-2:]
    return (ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), dtypes.int32),
            ShapedArray(batch + (m,), dtypes.int32))


def _pivots_to_permutation(pivots: np.ndarray, m: int) -> np.ndarray:
    perm = np.arange(m, dtype=np.int32)
    for i, p in enumerate(pivots):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_one(a: np.ndarray):
    from scipy.linalg import get_lapack_funcs
    getrf = get_lapack_funcs("getrf", (a,))
    with np.errstate(all="ignore"):
        lu, piv, info = getrf(a)
    if info < 0:
        lu = _nan_like(lu)
    return lu, piv.astype(np.int32), _pivots_to_permutation(piv, a.shape[0])


def _lu_impl(x: np.ndarray):
    m, n = x.shape[-2:]
    if m == 0 or n == 0 or x.size == 0:
        batch = x.shape[:-2]
        perm = np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()
        return [x.copy(), np.zeros(batch + (min(m, n),), np.int32), perm]
    return _per_matrix(x, _lu_one, 3)


lu_p = Primitive("lu", multiple_results=True)
lu_p.def_abstract_eval(_lu_abstract)
lu_p.def_impl(_lu_impl)
_front_batch(lu_p)


def lu(x: Any) -> tuple:
    """lax.linalg.lu: (lu, pivots, permutation) with P x = L U; L (unit diagonal, implicit)
    below the diagonal of `lu`, U on and above it; int32 pivots (row swaps) and permutation."""
    return tuple(lu_p.bind(x))


def _lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    outs = [lu_, pivots, perm]
    zeros = [Zero.from_primal(pivots), Zero.from_primal(perm)]
    if type(a_dot) is Zero:
        return outs, [Zero.from_primal(lu_)] + zeros
    # de Hoog, Anderssen and Lukas: L' = L tril(L^-1 A' U^-1, -1), U' = triu(...) U
    aval = get_aval(a)
    *batch, m, n = aval.shape
    batch = tuple(batch)
    k = min(m, n)
    nd = aval.ndim
    zero = np.array(0, aval.dtype)
    l_part = tril(slice(lu_, (0,) * nd, batch + (m, k)), -1)
    l_full = ew.add(pad(l_part, zero, [(0, 0, 0)] * (nd - 1) + [(0, m - k, 0)]),
                    _eye(aval.dtype, batch + (m, m)))
    u_part = triu(slice(lu_, (0,) * nd, batch + (k, n)))
    u_eye = pad(_eye(aval.dtype, batch + (n - k, n - k)), zero,
                [(0, 0, 0)] * (nd - 2) + [(k, 0, 0), (k, 0, 0)])
    u_full = ew.add(pad(u_part, zero, [(0, 0, 0)] * (nd - 2) + [(0, n - k, 0), (0, 0, 0)]),
                    u_eye)
    la = triangular_solve(l_full, take_rows(a_dot, perm), left_side=True, lower=True,
                          unit_diagonal=True)
    lau = triangular_solve(u_full, la, left_side=False, lower=False)
    lu_dot = ew.add(_mm(l_full, tril(lau, -1)), _mm(triu(lau), u_full))
    return outs, [lu_dot] + zeros


lu_p.def_jvp(_lu_jvp)


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """lax.linalg.lu_pivots_to_permutation: arange(permutation_size) with the row swaps
    `pivots` ([..., k], int32) applied in order."""
    aval = get_aval(pivots)
    if aval.dtype != dtypes.int32:
        raise TypeError(f"lu_pivots_to_permutation requires int32 pivots, got {aval.dtype}")
    k = aval.shape[-1]
    if permutation_size < k:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                         f"trailing dimension of the pivots. Got pivots size {k}")
    shape = aval.shape[:-1] + (permutation_size,)
    nd = len(shape)
    iota = broadcasted_iota(np.int32, shape, nd - 1)

    def swap(i, perm):  # batched: every matrix swaps its rows i and pivots[..., i]
        i = ew.convert_element_type(i, np.int32)
        j = dynamic_slice_in_dim(pivots, i, 1, nd - 1)
        p_i = dynamic_slice_in_dim(perm, i, 1, nd - 1)
        at_j = ew.eq(iota, broadcast_in_dim(j, shape, tuple(range(nd))))
        p_j = reduce_sum(ew.select(at_j, perm, full(shape, 0, np.int32)), (nd - 1,))
        p_j = expand_dims(p_j, (nd - 1,))
        at_i = ew.eq(iota, broadcast_in_dim(i, shape, ()))
        return ew.select(at_i, broadcast_in_dim(p_j, shape, tuple(range(nd))),
                         ew.select(at_j, broadcast_in_dim(p_i, shape, tuple(range(nd))), perm))
    return fori_loop(0, k, swap, iota)


# --- qr --------------------------------------------------------------------------------------

def _qr_abstract(x: ShapedArray, *, full_matrices: bool, pivoting: bool = False):
    batch = _check("qr", x, ranks=(2,))
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    q, r = ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)
    return (q, r, ShapedArray(batch + (n,), dtypes.int32)) if pivoting else (q, r)


def _qr_one(a: np.ndarray, *, full_matrices: bool, pivoting: bool = False):
    if pivoting:  # LAPACK's geqp3, as JAX on CPU: a[:, p] = q r
        import scipy.linalg
        with np.errstate(all="ignore"):
            return scipy.linalg.qr(a, mode="full" if full_matrices else "economic",
                                   pivoting=True, check_finite=False)
    with np.errstate(all="ignore"):
        q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q, r


qr_p = Primitive("qr", multiple_results=True)
qr_p.def_abstract_eval(_qr_abstract)
qr_p.def_impl(_batched_impl(qr_p, _qr_one))
_front_batch(qr_p)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple:
    """lax.linalg.qr: (q, r) with x = q r, q unitary ([..., m, m], or [..., m, min(m, n)]
    without full_matrices) and r upper triangular. With `pivoting`, (q, r, p): the
    rank-revealing x[..., :, p] = q r (LAPACK's geqp3), |diag(r)| non-increasing, p int32."""
    aval = get_aval(x)
    pivoting = bool(pivoting)
    if aval.ndim >= 2 and 0 in aval.shape[-2:]:
        _check("qr", aval, ranks=(2,))
        q_aval, r_aval, *p_aval = _qr_abstract(aval, full_matrices=bool(full_matrices),
                                               pivoting=pivoting)
        out = (_eye(aval.dtype, q_aval.shape), full(r_aval.shape, 0, aval.dtype))
        # JAX's empty-matrix pivots are zeros, not arange
        return out + tuple(full(a.shape, 0, a.dtype) for a in p_aval)
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices), pivoting=pivoting))


def _thin_qr_jvp(q, r, dx):
    """JVP of the QR decomposition of an [..., m, n] matrix with m >= n (see
    j-towns.github.io/papers/qr-derivative.pdf)."""
    dx_rinv = triangular_solve(r, dx)  # right side: dx r^-1
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    lower = tril(qt_dx_rinv, -1)
    do = ew.sub(lower, _H(lower))  # skew-symmetric
    aval = get_aval(qt_dx_rinv)
    if aval.dtype.kind == "c":  # the imaginary part of the diagonal
        n = aval.shape[-1]
        im_diag = ew.sub(qt_dx_rinv, ew.convert_element_type(ew.real(qt_dx_rinv), aval.dtype))
        do = ew.add(do, ew.mul(_eye(aval.dtype, aval.shape[:-2] + (n, n)), im_diag))
    dq = ew.add(_mm(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(ew.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, full_matrices, pivoting=False):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, full_matrices=full_matrices, pivoting=pivoting)
    if type(dx) is Zero:
        return outs, [Zero.from_primal(v) for v in outs]
    # pivoted: x[:, p] = q r with p locally constant, so the unpivoted rule applies to
    # x[:, p] and dx[:, p]; p's tangent is the integer zero (as JAX)
    q, r, *p = outs
    if pivoting:
        x, dx = _T(take_rows(_T(x), p[0])), _T(take_rows(_T(dx), p[0]))
    dq, dr = _qr_unpivoted_jvp(x, dx, q, r, full_matrices)
    return outs, [dq, dr] + [Zero.from_primal(v) for v in p]


def _qr_unpivoted_jvp(x, dx, q, r, full_matrices):
    aval = get_aval(x)
    *batch, m, n = aval.shape
    batch, nd = tuple(batch), aval.ndim
    zeros = (0,) * nd

    def cols(v, lo, hi):
        shape = get_aval(v).shape
        return slice(v, zeros[:-1] + (lo,), shape[:-1] + (hi,))

    if m < n:  # X = [X1 X2]: the square QR of X1, and R2 = Q^H X2
        dq, dr1 = _thin_qr_jvp(q, cols(r, 0, m), cols(dx, 0, m))
        dr2 = ew.add(_mm(_H(dq), cols(x, m, n)), _mm(_H(q), cols(dx, m, n)))
        return dq, concatenate([dr1, dr2], nd - 1)
    q_mn = cols(q, 0, n) if full_matrices else q
    r_nn = slice(r, zeros, batch + (n, n)) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return dq_mn, dr_nn
    # full matrices (arXiv:2409.13374, eqs. 32-33)
    q_nn = slice(q_mn, zeros, batch + (n, n))
    q_pn = slice(q_mn, zeros[:-2] + (n, 0), batch + (m, n))
    q_mp = cols(q, n, m)
    dq_nn = slice(dq_mn, zeros, batch + (n, n))
    dq_pn = slice(dq_mn, zeros[:-2] + (n, 0), batch + (m, n))
    eye_n = _eye(aval.dtype, batch + (n, n))
    z_pn_h = _solve(_H(ew.sub(q_nn, eye_n)), _H(q_pn))
    z_pn = _H(z_pn_h)
    dq_mp = ew.sub(_mm(dq_mn, z_pn_h), _mm(ew.add(q_mn, _mm(q_mp, z_pn)),
                                           _H(ew.sub(dq_pn, _mm(z_pn, dq_nn)))))
    dq = concatenate([dq_mn, dq_mp], nd - 1)
    dr = concatenate([dr_nn, full(batch + (m - n, n), 0, aval.dtype)], nd - 2)
    return dq, dr


qr_p.def_jvp(_qr_jvp)


def _solve(a: Any, b: Any) -> Any:
    """a^-1 b for square a (batched, same batch dims) through LU with partial pivoting."""
    lu_, _, perm = lu_p.bind(a)
    x = take_rows(b, perm)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, x, left_side=True, lower=False)


# --- eigh ------------------------------------------------------------------------------------

def _eigh_abstract(x: ShapedArray, *, lower: bool, sort_eigenvalues: bool):
    batch = _check("eigh", x, ranks=(2,))
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Argument to symmetric eigendecomposition must have shape [..., n, "
                         f"n], got shape {x.shape}")
    n = x.shape[-1]
    return ShapedArray(x.shape, x.dtype), ShapedArray(batch + (n,), _real_dtype(x.dtype))


def _eigh_one(a: np.ndarray, *, lower: bool, sort_eigenvalues: bool):
    try:
        w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    except np.linalg.LinAlgError:
        return _nan_like(a), np.full(a.shape[-1], np.nan, _real_dtype(a.dtype))
    return v, w


eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.def_abstract_eval(_eigh_abstract)
eigh_p.def_impl(_batched_impl(eigh_p, _eigh_one))
_front_batch(eigh_p)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: Any = None,
         implementation: Any = None) -> tuple:
    """lax.linalg.eigh: (v, w) of a Hermitian matrix: eigenvalues w ascending (real dtype) and
    eigenvectors in v's columns. Only the `lower` (or upper) triangle is read unless
    `symmetrize_input`."""
    aval = get_aval(x)
    if subset_by_index is not None and tuple(subset_by_index) != (0, aval.shape[-1]):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")
    if implementation == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if implementation == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    if symmetrize_input:
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    return v, w


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues):
    (a,), (a_dot,) = primals, tangents
    # JAX's rule (nondegenerate perturbation theory): eigenvalue gaps of zero contribute zero
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues)
    if type(a_dot) is Zero:
        return [v, w_real], [Zero.from_primal(v), Zero.from_primal(w_real)]
    aval = get_aval(a)
    w = ew.convert_element_type(w_real, aval.dtype)
    eye_n = _eye(aval.dtype, aval.shape)
    fmat = ew.sub(ew.integer_pow(ew.add(eye_n, _outer_diff(w)), -1), eye_n)
    vdag_adot_v = _mm(_mm(_H(v), a_dot), v)
    dv = _mm(v, ew.mul(fmat, vdag_adot_v))
    real_part = ew.real(vdag_adot_v) if aval.dtype.kind == "c" else vdag_adot_v
    return [v, w_real], [dv, _diagonal(real_part)]


eigh_p.def_jvp(_eigh_jvp)


# --- svd -------------------------------------------------------------------------------------

def _svd_abstract(x: ShapedArray, *, full_matrices: bool, compute_uv: bool):
    batch = _check("svd", x, ranks=(2,))
    m, n = x.shape[-2:]
    k = min(m, n)
    s = ShapedArray(batch + (k,), _real_dtype(x.dtype))
    if not compute_uv:
        return (s,)
    return (s, ShapedArray(batch + (m, m if full_matrices else k), x.dtype),
            ShapedArray(batch + (n if full_matrices else k, n), x.dtype))


def _svd_one(a: np.ndarray, *, full_matrices: bool, compute_uv: bool):
    try:
        if not compute_uv:
            return (np.linalg.svd(a, compute_uv=False),)
        u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
        return s, u, vt
    except np.linalg.LinAlgError:
        k = min(a.shape)
        s = np.full(k, np.nan, _real_dtype(a.dtype))
        if not compute_uv:
            return (s,)
        m, n = a.shape
        return (s, np.full((m, m if full_matrices else k), np.nan, a.dtype),
                np.full((n if full_matrices else k, n), np.nan, a.dtype))


svd_p = Primitive("svd", multiple_results=True)
svd_p.def_abstract_eval(_svd_abstract)
svd_p.def_impl(_batched_impl(svd_p, _svd_one))
_front_batch(svd_p)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: Any = None, algorithm: Any = None) -> Any:
    """lax.linalg.svd: (u, s, vh) with x = u diag(s) vh, s descending; s alone without
    compute_uv."""
    aval = get_aval(x)
    _check("svd", aval, ranks=(2,))
    m, n = aval.shape[-2:]
    if subset_by_index is not None and tuple(subset_by_index) != (0, min(m, n)):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    # (QR, LAPACK's gesvd, agrees with gesdd up to rounding: both run as gesdd)
    if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on "
                                  "CPU.")
    if m == 0 or n == 0:
        return _empty_svd(aval, bool(full_matrices), bool(compute_uv))
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if compute_uv:
        s, u, vt = out
        return u, s, vt
    return out[0]


def _empty_svd(aval: ShapedArray, full_matrices: bool, compute_uv: bool):
    batch = aval.shape[:-2]
    m, n = aval.shape[-2:]
    s = full(batch + (0,), 0, _real_dtype(aval.dtype))
    if not compute_uv:
        return s
    if full_matrices:
        u, vt = _eye(aval.dtype, batch + (m, m)), _eye(aval.dtype, batch + (n, n))
    else:
        u, vt = full(batch + (m, 0), 0, aval.dtype), full(batch + (0, n), 0, aval.dtype)
    return u, s, vt


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (A,), (dA,) = primals, tangents
    s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True)
    aval = get_aval(A)
    m, n = aval.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices")
    primal_out = [s, U, Vt] if compute_uv else [s]
    if type(dA) is Zero:
        return primal_out, [Zero.from_primal(p) for p in primal_out]
    dtype, nd = aval.dtype, aval.ndim
    Ut, V = _H(U), _H(Vt)
    s_dim = expand_dims(s, (nd - 2,))
    dS = _mm(_mm(Ut, dA), V)
    ds = _diagonal(ew.real(dS) if dtype.kind == "c" else dS)
    if not compute_uv:
        return [s], [ds]
    real = get_aval(s).dtype
    s_sum = ew.add(_bcast(s_dim, get_aval(dS).shape), _bcast(_T(s_dim), get_aval(dS).shape))
    s_diffs = ew.mul(s_sum, _outer_diff(s))  # [i, j] = s_j^2 - s_i^2
    eye_k = _eye(real, get_aval(s_diffs).shape)
    F = ew.sub(ew.div(np.array(1, real), ew.add(s_diffs, eye_k)), eye_k)
    s_c = ew.convert_element_type(s_dim, dtype)
    dSS = _bmul(s_c, dS)
    SdS = _bmul(_T(s_c), dS)
    s_zeros = ew.convert_element_type(ew.eq(s, np.array(0, real)), real)
    s_inv = ew.sub(ew.div(np.array(1, real), ew.add(s, s_zeros)), s_zeros)
    s_inv_mat = ew.convert_element_type(_diag_matrix(s_inv), dtype)
    dUdV_diag = ew.mul(ew.mul(np.array(0.5, dtype), ew.sub(dS, _H(dS))), s_inv_mat)
    F_c = ew.convert_element_type(F, dtype)
    dU = _mm(U, ew.add(ew.mul(F_c, ew.add(dSS, _H(dSS))), dUdV_diag))
    dV = _mm(V, ew.mul(F_c, ew.add(SdS, _H(SdS))))
    if m > n:
        dAV = _mm(dA, V)
        resid = ew.sub(dAV, _mm(U, _mm(Ut, dAV)))
        dU = ew.add(dU, ew.div(resid, _bcast(s_c, get_aval(resid).shape)))
    if n > m:
        dAHU = _mm(_H(dA), U)
        resid = ew.sub(dAHU, _mm(V, _mm(Vt, dAHU)))
        dV = ew.add(dV, ew.div(resid, _bcast(s_c, get_aval(resid).shape)))
    return [s, U, Vt], [ds, dU, _H(dV)]


svd_p.def_jvp(_svd_jvp)


# --- eig -------------------------------------------------------------------------------------

def _eig_abstract(x: ShapedArray, *, compute_left_eigenvectors: bool,
                  compute_right_eigenvectors: bool, enable_eigvec_derivs: bool):
    batch = _check("eig", x, ranks=(2,))
    _square("eig", x)
    dtype = complex_dtype(x.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return (ShapedArray(batch + x.shape[-1:], dtype),) + (ShapedArray(x.shape, dtype),) * count


def _eig_one(a: np.ndarray, *, compute_left_eigenvectors: bool,
             compute_right_eigenvectors: bool, enable_eigvec_derivs: bool):
    import scipy.linalg
    # the complex algorithm (zgeev) for real input too: the native code calls the same one
    a = a.astype(complex_dtype(a.dtype))
    try:
        w, vl, vr = scipy.linalg.eig(a, left=True, right=True, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        w, vl, vr = np.full(a.shape[0], np.nan, a.dtype), _nan_like(a), _nan_like(a)
    out = [w]
    if compute_left_eigenvectors:
        out.append(vl)
    if compute_right_eigenvectors:
        out.append(vr)
    return out


eig_p = Primitive("eig", multiple_results=True)
eig_p.def_abstract_eval(_eig_abstract)


eig_p.def_impl(_batched_impl(eig_p, _eig_one))
_front_batch(eig_p)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: Any = None, use_magma: Any = None) -> list:
    """lax.linalg.eig: [w, vl, vr] (as requested) of a general square matrix, complex."""
    if implementation is not None and implementation != EigImplementation.LAPACK:
        raise ValueError("Only the lapack implementation is supported on CPU.")
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs)))


def _eig_vec_jvp(w, v, da):
    """Nondegenerate perturbation theory under geev's normalisation (unit 2-norm, largest
    component real), as JAX."""
    aval = get_aval(v)
    nd = aval.ndim
    eye_n = _eye(aval.dtype, aval.shape)
    fmat = ew.sub(ew.div(np.array(1, aval.dtype), ew.add(eye_n, _outer_diff(w))), eye_n)
    P = _mm(_solve(v, da), v)
    dw = _diagonal(P)
    U = _mm(v, ew.mul(fmat, P))
    k = argmax(ew.abs(v), nd - 2, np.int32)
    mask = ew.convert_element_type(
        ew.eq(broadcasted_iota(np.int32, aval.shape, nd - 2), expand_dims(k, (nd - 2,))),
        aval.dtype)
    c = ew.complex(ew.neg(ew.real(reduce_sum(ew.mul(_conj(v), U), (nd - 2,)))),
                   ew.div(ew.neg(ew.imag(reduce_sum(ew.mul(mask, U), (nd - 2,)))),
                          ew.real(reduce_sum(ew.mul(mask, v), (nd - 2,)))))
    return dw, ew.add(U, _bmul(v, expand_dims(c, (nd - 2,))))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
    (a,), (da,) = primals, tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
            "input that JAX cannot check (see the enable_eigvec_derivs argument to "
            "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt "
            "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = outs[0], outs[-1]
    primal_out = [w] + ([outs[1]] if compute_left_eigenvectors else []) + \
        ([vr] if compute_right_eigenvectors else [])
    if type(da) is Zero:
        return primal_out, [Zero.from_primal(p) for p in primal_out]
    da = ew.convert_element_type(da, get_aval(vr).dtype)
    nd = get_aval(vr).ndim
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        return [w], [reduce_sum(ew.mul(_solve(vr, da), _T(vr)), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    tangent_out = [dw]
    if compute_left_eigenvectors:
        tangent_out.append(_eig_vec_jvp(_conj(w), outs[1], _H(da))[1])
    if compute_right_eigenvectors:
        tangent_out.append(dvr)
    return primal_out, tangent_out


eig_p.def_jvp(_eig_jvp)


# --- tridiagonal_solve -----------------------------------------------------------------------

def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular: bool) -> ShapedArray:
    _check("tridiagonal_solve", dl, d, du, b, ranks=(1, 1, 1, 2))
    if dl.shape != d.shape or dl.shape != du.shape:
        raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                        "shape.")
    if dl.shape != b.shape[:-1]:
        raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        "equal the dimensions of the diagonal arguments.")
    return ShapedArray(b.shape, b.dtype)


def _tridiagonal_solve_one(dl, d, du, b, *, perturb_singular: bool):
    from scipy.linalg import get_lapack_funcs
    if b.size == 0:
        return (b.copy(),)
    gtsv = get_lapack_funcs("gtsv", (d, b))
    with np.errstate(all="ignore"):
        *_, x, info = gtsv(dl[1:], d, du[:-1], b)
    return (_nan_like(x) if info != 0 else x,)


tridiagonal_solve_p = Primitive("tridiagonal_solve")
tridiagonal_solve_p.def_abstract_eval(_tridiagonal_solve_abstract)


def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular: bool):
    batch = np.shape(d)[:-1]
    out = np.empty(np.shape(b), np.asarray(b).dtype)
    for idx in np.ndindex(*batch):
        out[idx] = _tridiagonal_solve_one(dl[idx], d[idx], du[idx], b[idx],
                                          perturb_singular=perturb_singular)[0]
    return out


tridiagonal_solve_p.def_impl(_tridiagonal_solve_impl)
_front_batch(tridiagonal_solve_p)


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False):
    """lax.linalg.tridiagonal_solve: X with A X = b for the tridiagonal A with sub-diagonal dl
    (dl[0] = 0), diagonal d and super-diagonal du (du[-1] = 0)."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve(perturb_singular=True) is not implemented "
                                  "in tracejit")
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=False)


def _tridiagonal_product(dl, d, du, b):
    """A b for the tridiagonal A (b: [..., m, n])."""
    nd = get_aval(b).ndim
    shape = get_aval(b).shape
    m = shape[-2]
    zero = np.array(0, get_aval(b).dtype)
    y = _bmul(expand_dims(d, (nd - 1,)), b)
    lo = [(0, 0, 0)] * (nd - 2)
    # row i gets dl[i] b[i-1] and du[i] b[i+1]
    b_down = pad(slice(b, (0,) * nd, shape[:-2] + (m - 1, shape[-1])), zero,
                 lo + [(1, 0, 0), (0, 0, 0)])
    b_up = pad(slice(b, (0,) * (nd - 2) + (1, 0), shape), zero, lo + [(0, 1, 0), (0, 0, 0)])
    y = ew.add(y, _bmul(expand_dims(dl, (nd - 1,)), b_down))
    return ew.add(y, _bmul(expand_dims(du, (nd - 1,)), b_up))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    *diags, b = primals
    *diags_dot, b_dot = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    if all(type(t) is Zero for t in diags_dot):
        rhs = b_dot
    else:
        matvec_dot = _tridiagonal_product(*[instantiate(t) for t in diags_dot], ans)
        rhs = add_tangents(b_dot, ew.neg(matvec_dot))
    if type(rhs) is Zero:
        return ans, Zero.from_primal(ans)
    return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    nd = get_aval(du).ndim
    shape = get_aval(du).shape
    zero = np.array(0, get_aval(du).dtype)
    lo = [(0, 0, 0)] * (nd - 1)
    m = shape[-1]
    # the transposed matrix: its sub-diagonal is du shifted down, its super-diagonal dl up
    dl_t = pad(slice(du, (0,) * nd, shape[:-1] + (m - 1,)), zero, lo + [(1, 0, 0)])
    du_t = pad(slice(dl, (0,) * (nd - 1) + (1,), shape), zero, lo + [(0, 1, 0)])
    return [None, None, None,
            tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)]


tridiagonal_solve_p.def_jvp(_tridiagonal_solve_jvp)
tridiagonal_solve_p.def_transpose(_tridiagonal_solve_transpose)


# --- schur and hessenberg (CPU only in JAX, and not differentiable there) --------------------

def _no_jvp(prim: Primitive) -> None:
    def jvp(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
    prim.def_jvp(jvp)


def _schur_abstract(x: ShapedArray, *, compute_schur_vectors: bool):
    _check("schur", x, ranks=(2,))
    _square("schur", x)
    return (ShapedArray(x.shape, x.dtype),) * (2 if compute_schur_vectors else 1)


def _schur_one(a: np.ndarray, *, compute_schur_vectors: bool):
    import scipy.linalg
    try:
        t, vs = scipy.linalg.schur(a, output="complex" if a.dtype.kind == "c" else "real",
                                   check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        t, vs = _nan_like(a), _nan_like(a)
    return (t, vs) if compute_schur_vectors else (t,)


schur_p = Primitive("schur", multiple_results=True)
schur_p.def_abstract_eval(_schur_abstract)
schur_p.def_impl(_batched_impl(schur_p, _schur_one))
_front_batch(schur_p)
_no_jvp(schur_p)


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> list:
    """lax.linalg.schur: [T, vs] with x = vs T vs^H, T (quasi-)upper triangular (real Schur
    form for real x); [T] without compute_schur_vectors."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur with sorted eigenvalues (sort_eig_vals, "
                                  "select_callable) is not implemented in tracejit")
    return list(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors)))


def _hessenberg_abstract(x: ShapedArray):
    batch = _check("hessenberg", x, ranks=(2,))
    _square("hessenberg", x)
    n = x.shape[-1]
    return ShapedArray(x.shape, x.dtype), ShapedArray(batch + (max(n - 1, 0),), x.dtype)


def _hessenberg_one(a: np.ndarray):
    from scipy.linalg import get_lapack_funcs
    gehrd = get_lapack_funcs("gehrd", (a,))
    h, tau, info = gehrd(a)
    return h, tau[:max(a.shape[0] - 1, 0)]


hessenberg_p = Primitive("hessenberg", multiple_results=True)
hessenberg_p.def_abstract_eval(_hessenberg_abstract)
hessenberg_p.def_impl(_batched_impl(hessenberg_p, _hessenberg_one))
_front_batch(hessenberg_p)
_no_jvp(hessenberg_p)


def hessenberg(a: Any) -> tuple:
    """lax.linalg.hessenberg: (a, taus): the upper Hessenberg form in a's upper triangle and
    first subdiagonal, the Householder reflectors below it with their scales in taus."""
    return tuple(hessenberg_p.bind(a))


def _geqrf_abstract(x: ShapedArray):
    batch = _check("geqrf", x, ranks=(2,))
    m, n = x.shape[-2:]
    return ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), x.dtype)


def _geqrf_one(a: np.ndarray):
    from scipy.linalg import get_lapack_funcs
    qr_, tau, _, info = get_lapack_funcs("geqrf", (a,))(a)
    return qr_, tau


geqrf_p = Primitive("geqrf", multiple_results=True)
geqrf_p.def_abstract_eval(_geqrf_abstract)
geqrf_p.def_impl(_batched_impl(geqrf_p, _geqrf_one))
_front_batch(geqrf_p)
_no_jvp(geqrf_p)


def geqrf(a: Any) -> tuple:
    """LAPACK's geqrf: (a, taus) with R on and above a's diagonal and the Householder
    reflectors below it (JAX's lax.linalg.geqrf)."""
    return tuple(geqrf_p.bind(a))


def _geqp3_abstract(a: ShapedArray, jpvt: ShapedArray):
    batch = _check("geqp3", a, ranks=(2,))
    if jpvt.dtype != dtypes.int32:  # LAPACK's pivots are 32-bit
        raise TypeError(f"geqp3 requires int32 column pivots jpvt, got {jpvt.dtype.name}; "
                        "pass jpvt.astype(jnp.int32)")
    m, n = a.shape[-2:]
    if jpvt.shape != batch + (n,):
        raise ValueError(f"geqp3 expects jpvt of shape {batch + (n,)} (the batch dims and "
                         f"a's column count) for a of shape {a.shape}, got {jpvt.shape}")
    return (ShapedArray(a.shape, a.dtype), ShapedArray(jpvt.shape, jpvt.dtype),
            ShapedArray(batch + (min(m, n),), a.dtype))


def _geqp3_one(a: np.ndarray, jpvt: np.ndarray):
    # SciPy's f2py wrapper does not take jpvt in (a nonzero entry pins that column to the
    # front), so call its cython_lapack routine directly, Fortran conventions by pointer
    import ctypes

    from scipy.linalg import cython_lapack
    m, n = a.shape
    prefix = {"f": "s", "d": "d", "F": "c", "D": "z"}[a.dtype.char]
    capsule = cython_lapack.__pyx_capi__[prefix + "geqp3"]
    ctypes.pythonapi.PyCapsule_GetName.restype = ctypes.c_char_p
    ctypes.pythonapi.PyCapsule_GetName.argtypes = [ctypes.py_object]
    ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
    ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = ctypes.pythonapi.PyCapsule_GetPointer(
        capsule, ctypes.pythonapi.PyCapsule_GetName(capsule))
    fa = np.array(a, order="F")
    piv = np.array(jpvt, np.int32)
    tau = np.zeros(min(m, n), a.dtype)
    lwork = max(1, 3 * n + 1) * 64
    work, rwork = np.zeros(lwork, a.dtype), np.zeros(max(1, 2 * n), a.real.dtype)
    ints = [ctypes.c_int(v) for v in (m, n, max(m, 1), lwork, 0)]
    ref = [ctypes.cast(ctypes.pointer(c), ctypes.c_void_p) for c in ints]
    arrays = [ctypes.c_void_p(x.ctypes.data) for x in (fa, piv, tau, work, rwork)]
    args = ref[:2] + [arrays[0], ref[2], arrays[1], arrays[2], arrays[3], ref[3]]
    args += [arrays[4], ref[4]] if a.dtype.kind == "c" else [ref[4]]
    ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(args))(address)(*args)
    if ints[4].value != 0:
        fa, tau = _nan_like(fa), _nan_like(tau)
    return np.ascontiguousarray(fa), piv, tau


geqp3_p = Primitive("geqp3", multiple_results=True)
geqp3_p.def_abstract_eval(_geqp3_abstract)
geqp3_p.def_impl(_batched_impl(geqp3_p, _geqp3_one))
_front_batch(geqp3_p)
_no_jvp(geqp3_p)


def geqp3(a: Any, jpvt: Any, *, use_magma: bool | None = None) -> tuple:
    """lax.linalg.geqp3, LAPACK's column-pivoted QR: (a, jpvt, taus) with R on and above a's
    diagonal, the Householder reflectors below it, and jpvt the 1-based column pivots
    (a[:, jpvt - 1] = q r). A nonzero jpvt entry on input moves that column to the front."""
    return tuple(geqp3_p.bind(a, jpvt))


def _tridiagonal_abstract(x: ShapedArray, *, lower: bool):
    batch = _check("tridiagonal", x, ranks=(2,))
    n = x.shape[-1]
    if x.shape[-2] != n or n == 0:
        raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape "
                         f"{x.shape[-2:]}.")
    real = _real_dtype(x.dtype)
    return (ShapedArray(x.shape, x.dtype), ShapedArray(batch + (n,), real),
            ShapedArray(batch + (n - 1,), real), ShapedArray(batch + (n - 1,), x.dtype))


def _tridiagonal_one(a: np.ndarray, *, lower: bool):
    from scipy.linalg import get_lapack_funcs
    sytrd = get_lapack_funcs("hetrd" if a.dtype.kind == "c" else "sytrd", (a,))
    c, d, e, tau, info = sytrd(a, lower=int(lower))
    return c, d, e, tau


tridiagonal_p = Primitive("tridiagonal", multiple_results=True)
tridiagonal_p.def_abstract_eval(_tridiagonal_abstract)
tridiagonal_p.def_impl(_batched_impl(tridiagonal_p, _tridiagonal_one))
_front_batch(tridiagonal_p)
_no_jvp(tridiagonal_p)


def tridiagonal(a: Any, *, lower: bool = True) -> tuple:
    """lax.linalg.tridiagonal: (a, d, e, taus) reducing a Hermitian matrix to tridiagonal form
    (LAPACK's sytrd/hetrd): diagonal d, off-diagonal e, the reflectors in a's `lower` (or
    upper) triangle with scales taus."""
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


def _ormqr_abstract(a: ShapedArray, taus: ShapedArray, c: ShapedArray, *, left: bool,
                    transpose: bool) -> ShapedArray:
    _check("ormqr", a, taus, c, ranks=(2, 1, 2))
    m = a.shape[-2]
    if left and c.shape[-2] != m:
        raise ValueError(f"ormqr with left=True expects c to have the same number of rows as "
                         f"the Householder matrix a. Got a shape {a.shape[-2:]} and c shape "
                         f"{c.shape[-2:]}.")
    if not left and c.shape[-1] != m:
        raise ValueError(f"ormqr with left=False expects c to have the same number of columns "
                         f"as the Householder matrix a has rows. Got a shape {a.shape[-2:]} "
                         f"and c shape {c.shape[-2:]}.")
    if taus.shape[-1] > min(a.shape[-2:]):
        raise ValueError(f"ormqr: taus has {taus.shape[-1]} elements, more than a "
                         f"{a.shape[-2:]} matrix has reflectors")
    return ShapedArray(c.shape, c.dtype)


def _ormqr_one(a: np.ndarray, taus: np.ndarray, c: np.ndarray, *, left: bool,
               transpose: bool):
    from scipy.linalg import get_lapack_funcs
    complex_ = a.dtype.kind == "c"
    ormqr = get_lapack_funcs("unmqr" if complex_ else "ormqr", (a,))
    trans = ("C" if complex_ else "T") if transpose else "N"
    k = taus.shape[-1]
    cq, _, info = ormqr("L" if left else "R", trans, a[:, :k], taus, c,
                        lwork=max(1, 64 * max(c.shape)))
    return (cq,)


ormqr_p = Primitive("ormqr")
ormqr_p.def_abstract_eval(_ormqr_abstract)
ormqr_p.def_impl(_batched_impl(ormqr_p, _ormqr_one))
_front_batch(ormqr_p)
_no_jvp(ormqr_p)


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """lax.linalg.ormqr: Q c (left) or c Q, with Q^T (Q^H for complex) if `transpose`, for the
    Q whose Householder reflectors are a's columns (geqrf's) and taus, without forming Q."""
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _householder_product_abstract(a: ShapedArray, taus: ShapedArray):
    _check("householder_product", a, taus, ranks=(2, 1))
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"The first argument to householder_product must have at least as "
                         f"many rows as columns, got shape {a.shape}")
    if taus.shape[-1] > n:
        raise ValueError(f"The second argument to householder_product must not have more "
                         f"elements than the minimum of the first argument's dimensions, got "
                         f"{taus.shape[-1]} > {n}")
    return ShapedArray(a.shape, a.dtype)


def _householder_product_one(a: np.ndarray, taus: np.ndarray):
    from scipy.linalg import get_lapack_funcs
    orgqr = get_lapack_funcs("ungqr" if a.dtype.kind == "c" else "orgqr", (a,))
    q, _, info = orgqr(a, taus)
    return (q,)


householder_product_p = Primitive("householder_product")
householder_product_p.def_abstract_eval(_householder_product_abstract)
householder_product_p.def_impl(_batched_impl(householder_product_p, _householder_product_one))
_front_batch(householder_product_p)
_no_jvp(householder_product_p)


def householder_product(a: Any, taus: Any) -> Any:
    """lax.linalg.householder_product: the unitary matrix (shape of a) that is the product of
    the elementary reflectors stored below a's diagonal, with scales taus (LAPACK's orgqr)."""
    return householder_product_p.bind(a, taus)


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """lax.linalg.cholesky_update: the upper-triangular Cholesky factor of R^T R + w w^T given
    R's. Computed by refactoring the updated matrix (LAPACK potrf, O(n^3)), not JAX's O(n^2)
    rotations; the result is the same factor (positive diagonal)."""
    r_aval, w_aval = get_aval(r_matrix), get_aval(w_vector)
    if r_aval.ndim != 2 or r_aval.shape[0] != r_aval.shape[1] or w_aval.shape != r_aval.shape[:1]:
        raise ValueError(f"cholesky_update expects a square matrix and a vector of its size, "
                         f"got shapes {r_aval.shape} and {w_aval.shape}")
    n = r_aval.shape[0]
    w_col = broadcast_in_dim(w_vector, (n, 1), (0,))
    a = ew.add(_mm(_H(r_matrix), r_matrix), _mm(w_col, _H(w_col)))
    return _H(cholesky(a, symmetrize_input=False))


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """lax.linalg.symmetric_product: alpha * a a^T + beta * c."""
    a_aval = get_aval(a_matrix)
    dtype = a_aval.dtype
    out = ew.add(ew.mul(np.array(alpha, dtype), _mm(a_matrix, _T(a_matrix))),
                 ew.mul(np.array(beta, dtype), c_matrix))
    if symmetrize_output:
        out = ew.div(ew.add(out, _T(out)), np.array(2, dtype))
    return out


__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "symmetric_product",
           "schur", "hessenberg", "householder_product", "geqrf", "geqp3", "tridiagonal",
           "ormqr",
           "cholesky_update",
           "cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh",
           "svd", "eig", "tridiagonal_solve", "symmetrize", "tril", "triu"]
