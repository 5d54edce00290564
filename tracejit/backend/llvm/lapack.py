"""Structural rules for lax.linalg's decompositions: each matrix of the batch is copied into a
column-major workspace, factored by a LAPACK routine (SciPy's `cython_lapack` capsules, bound
by symbol name as blas.py binds gemm, so the IR stays address-free) and copied out, with NaNs
where LAPACK reports failure (as JAX on CPU). Workspace sizes are queried from LAPACK at
compile time (shapes are static) and come from the emitter's workspace, never from malloc.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax import decompositions as dec
from .blas import capsule_address, gemm_work, scipy_extension, threads_symbol
from .codegen import I8P, Buf, Emitter
from .rules import STRUCTURAL
from .scalar_ops import convert
from .types import I1, I8, I32, I64, const

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


@functools.cache
def _address(name: str) -> int:
    cython_blas, cython_lapack = map(scipy_extension, ("cython_blas", "cython_lapack"))
    return capsule_address(cython_lapack if name in cython_lapack.__pyx_capi__ else cython_blas,
                           name)


@functools.cache
def _symbol(name: str) -> str:
    import llvmlite.binding as llvm
    symbol = f"tracejit_scipy_{name}"
    llvm.add_symbol(symbol, _address(name))
    return symbol


def routine(dtype: np.dtype, name: str) -> str:
    """The LAPACK/BLAS name for `dtype`: 'potrf' -> dpotrf; 'syevd' -> zheevd for complex."""
    prefix = _PREFIX[np.dtype(dtype)]
    if prefix in "cz":
        name = {"syevd": "heevd", "orgqr": "ungqr", "sytrd": "hetrd",
                "ormqr": "unmqr"}.get(name, name)
    return prefix + name


# --- compile-time workspace queries ----------------------------------------------------------

class Work:
    """A workspace-query placeholder: an array of `dtype` whose first element LAPACK sets."""

    def __init__(self, dtype: Any):
        self.array = np.zeros(8, dtype)


def query(name: str, args: list) -> None:
    """Call routine `name` from Python (a workspace query: the lwork arguments are -1); ints
    and one-letter strings pass by reference, arrays (Work or ndarray) by pointer."""
    keep, ptrs = [], []
    for a in args:
        if isinstance(a, str):
            c = ctypes.c_char(a.encode())
        elif isinstance(a, int):
            c = ctypes.c_int(a)
        else:
            arr = a.array if isinstance(a, Work) else a
            keep.append(arr)
            ptrs.append(ctypes.c_void_p(arr.ctypes.data))
            continue
        keep.append(c)
        ptrs.append(ctypes.cast(ctypes.pointer(c), ctypes.c_void_p))
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(args))(_address(name))
    fn(*ptrs)


def _size(work: Work) -> int:
    """The size LAPACK asked for (rounded up: single-precision work[0] may round down)."""
    v = work.array[0]
    v = float(v.real) if np.iscomplexobj(v) else float(v)
    return max(1, int(v * (1 + 1e-6)) + 1)


# --- emitting calls --------------------------------------------------------------------------

def _call_work(name: str, args: list) -> int:
    """The float32 multiply-adds a LAPACK call costs, about: from the dimensions (the int
    arguments before the first array), m*n*k, or m*n*min(m, n), or n^3."""
    dims = []
    for a in args:
        if not isinstance(a, (int, str)):
            break
        if isinstance(a, int):
            dims.append(max(a, 1))
    if not dims:
        return 1
    m, n, k = (dims + [min(dims)] * 2)[:3] if len(dims) < 3 else dims[:3]
    return gemm_work(np.dtype({"s": np.float32, "d": np.float64, "c": np.complex64,
                               "z": np.complex128}[name[0]]), m, n, k)


def _call(em: Emitter, name: str, args: list) -> None:
    """Call `name` with Fortran conventions: everything by pointer (ints as i32 slots,
    one-letter strings as i8 slots, buffers as their pointers). OpenBLAS's LAPACK threads
    inside, so BLAS's thread count is set first, for the work the dimensions imply."""
    b = em.b
    set_threads = em.module.globals.get(threads_symbol()) or ir.Function(
        em.module, ir.FunctionType(ir.VoidType(), [I64]), name=threads_symbol())
    b.call(set_threads, [ir.Constant(I64, _call_work(name, args))])
    symbol = _symbol(name)
    fn = em.module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [I8P] * len(args)),
                         name=symbol)
    ptrs = []
    for a in args:
        if isinstance(a, str):
            slot = em._entry_alloca(I8)
            b.store(ir.Constant(I8, ord(a)), slot)
        elif isinstance(a, int):
            slot = em._entry_alloca(I32)
            b.store(ir.Constant(I32, a), slot)
        elif isinstance(a, Buf):
            slot = a.ptr
        else:
            slot = a
        ptrs.append(b.bitcast(slot, I8P))
    b.call(fn, ptrs)


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _work(em: Emitter, n: int, dtype: Any) -> Buf:
    return em.alloc(ShapedArray((max(int(n), 1),), np.dtype(dtype)))


def _to_fortran(em: Emitter, x, bidx: list, rows: int, cols: int, dst: Buf, ld: int,
                conj: bool = False) -> None:
    """dst[i + j*ld] = x[bidx..., i, j] (converted to dst's dtype, conjugated if asked)."""
    b = em.b
    src_dtype, dst_dtype = x.aval.dtype, dst.aval.dtype

    def body(ij):
        i, j = ij
        v = convert(b, em.value_at(x, bidx + [i, j]), src_dtype, dst_dtype)
        if conj:
            v = b.insert_value(v, b.fneg(b.extract_value(v, 1)), 1)
        em.store(dst, b.add(i, b.mul(j, _c(ld))), v)
    em.tiled_nest([rows, cols], body)  # (a transpose: in tiles, as codegen's)


def _from_fortran(em: Emitter, src: Buf, ld: int, out: Buf, bidx: list, rows: int, cols: int,
                  ok: ir.Value | None = None,
                  keep: Callable[[ir.Value, ir.Value], ir.Value] | None = None) -> None:
    """out[bidx..., i, j] = src[i + j*ld]; zero where keep(i, j) is false; NaN unless ok."""
    b = em.b
    dtype = out.aval.dtype
    nan = const(dtype, complex(np.nan, np.nan) if dtype.kind == "c" else np.nan)

    def body(ij):
        i, j = ij
        v = em.load(src, b.add(i, b.mul(j, _c(ld))))
        if keep is not None:
            v = b.select(keep(i, j), v, const(dtype, 0))
        if ok is not None:
            v = b.select(ok, v, nan)
        em.store(out, em.linear(out.aval.shape, bidx + [i, j]), v)
    em.tiled_nest([rows, cols], body)


def _vector_out(em: Emitter, src: Buf, out: Buf, bidx: list, n: int,
                ok: ir.Value | None = None) -> None:
    b = em.b
    dtype = out.aval.dtype
    nan = const(dtype, complex(np.nan, np.nan) if dtype.kind == "c" else np.nan)

    def body(i):
        v = convert(b, em.load(src, i), src.aval.dtype, dtype)
        em.store(out, em.linear(out.aval.shape, bidx + [i]), v if ok is None else
                 b.select(ok, v, nan))
    em.loop(n, body, name="vec")


def _info(em: Emitter) -> Buf:
    return em.alloc(ShapedArray((), dtypes.int32))


def _info_is(em: Emitter, info: Buf, op: str) -> ir.Value:
    return em.b.icmp_signed(op, em.load(info, None), ir.Constant(I32, 0))


def _outs(em: Emitter, eqn, dests) -> list[Buf]:
    return [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]


def _batch(eqn, rank: int = 2) -> tuple:
    aval = eqn.invars[0].aval
    return aval.shape[:aval.ndim - rank]


def _release(em: Emitter, *bufs: Buf) -> None:
    for buf in bufs:
        em.release(buf)


# --- the rules -------------------------------------------------------------------------------

def _matrix(em: Emitter, buf: Buf, bidx: list) -> ir.Value:
    """The pointer to matrix `bidx` of a dense row-major batch of matrices."""
    if not bidx:
        return buf.ptr
    rows, cols = buf.aval.shape[-2:]
    first = em.b.mul(em.linear(buf.aval.shape[:-2], bidx), _c(rows * cols))
    return em.b.gep(buf.ptr, [first], inbounds=True)


def _copy_rows(em: Emitter, x, bidx: list, out: Buf, keep=None, conj: bool = False) -> None:
    """out[bidx..., i, j] = x[bidx..., i, j] in row-major order (a contiguous copy, unlike the
    transposing _to_fortran); zero where keep(i, j) is false; conjugated if asked."""
    b = em.b
    rows, cols = x.aval.shape[-2:]
    dtype = out.aval.dtype

    def body(ij):
        i, j = ij
        v = convert(b, em.value_at(x, bidx + [i, j]), x.aval.dtype, dtype)
        if conj:
            v = b.insert_value(v, b.fneg(b.extract_value(v, 1)), 1)
        if keep is not None:
            v = b.select(keep(i, j), v, const(dtype, 0))
        em.store(out, b.add(b.mul(i, _c(cols)), j) if out.aval.ndim == 1 else
                 em.linear(out.aval.shape, bidx + [i, j]), v)
    em.loop_nest([rows, cols], body)


# Row-major matrices are LAPACK's column-major ones transposed, so these rules hand LAPACK the
# row-major buffers themselves and flip what the transpose flips (uplo, side), rather than
# copying each matrix into and out of Fortran order: a transposing copy of a 512^2 matrix
# touches a new cache line per element and cost more than the factorization's copies should.

def _cholesky(em: Emitter, eqn, ins, dests):
    """x = L L^H from x's lower triangle. In the output buffer, row-major x is column-major
    x^T, whose upper triangle is x's lower one; potrf("U") factors it as U^H U, and U read
    row-major is U^T = L (for Hermitian x too: x^T = conj(x) = conj(L) conj(L)^H)."""
    (x,), (out,) = ins, _outs(em, eqn, dests)
    b = em.b
    dtype = x.aval.dtype
    n = x.aval.shape[-1]
    info = _info(em)
    nan = const(dtype, complex(np.nan, np.nan) if dtype.kind == "c" else np.nan)

    def one(bidx):
        # potrf reads and writes only the lower triangle (row-major): the zeros stay
        _copy_rows(em, x, bidx, out, keep=lambda i, j: b.icmp_signed(">=", i, j))
        _call(em, routine(dtype, "potrf"), ["U", n, _matrix(em, out, bidx), max(n, 1), info])
        with b.if_then(_info_is(em, info, "!="), likely=False):
            em.loop_nest([n, n], lambda ij: em.store(
                out, em.linear(out.aval.shape, bidx + ij), nan))
    em.loop_nest(list(_batch(eqn)), one)
    _release(em, info)
    return [out]


def _triangular_solve(em: Emitter, eqn, ins, dests):
    """op(a) y = x (left_side) or y op(a) = x, solved in place in the output buffer: row-major
    y is column-major y^T, and transposing the equation swaps the side and makes the
    triangle of a (read row-major: a^T) the other one; op stays as it is."""
    (a, x), (out,) = ins, _outs(em, eqn, dests)
    p = eqn.params
    dtype = x.aval.dtype
    m = a.aval.shape[-1]
    rows, cols = x.aval.shape[-2:]
    # trsm has no "conjugate without transposing": conjugate a while copying it instead
    conj_copy = p["conjugate_a"] and not p["transpose_a"]
    trans = ("C" if p["conjugate_a"] else "T") if p["transpose_a"] else "N"
    copy_a = conj_copy or not isinstance(a, Buf) or a.aval.dtype != dtype
    fa = _work(em, m * m, dtype) if copy_a else None

    one_ = em.alloc(ShapedArray((), dtype))
    em.store(one_, None, const(dtype, 1))

    def one(bidx):
        if copy_a:
            _copy_rows(em, a, bidx, fa, conj=conj_copy)
        if not (isinstance(x, Buf) and x.ptr is out.ptr):
            _copy_rows(em, x, bidx, out)
        _call(em, routine(dtype, "trsm"), ["R" if p["left_side"] else "L",
                                           "U" if p["lower"] else "L", trans,
                                           "U" if p["unit_diagonal"] else "N", cols, rows,
                                           one_, fa if copy_a else _matrix(em, a, bidx),
                                           max(m, 1), _matrix(em, out, bidx), max(cols, 1)])
    if rows and cols:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, *([fa] if copy_a else []))
    return [out]


def _lu(em: Emitter, eqn, ins, dests):
    (x,), (out, pivots, perm) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k = min(m, n)
    a, ipiv, info = _work(em, m * n, dtype), _work(em, k, np.int32), _info(em)
    b = em.b

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, max(m, 1))
        if k:
            _call(em, routine(dtype, "getrf"), [m, n, a, max(m, 1), ipiv, info])
        ok = _info_is(em, info, ">=") if k else ir.Constant(I1, 1)
        _from_fortran(em, a, max(m, 1), out, bidx, m, n, ok)
        one32 = ir.Constant(I32, 1)

        def piv(i):  # LAPACK's pivots are 1-based
            em.store(pivots, em.linear(pivots.aval.shape, bidx + [i]),
                     b.sub(em.load(ipiv, i), one32))
        em.loop(k, piv, name="piv")

        def at(i):
            return em.linear(perm.aval.shape, bidx + [i])
        em.loop(m, lambda i: em.store(perm, at(i), b.trunc(i, I32)), name="perm")

        def swap(i):
            j = b.sext(b.sub(em.load(ipiv, i), one32), I64)
            pi, pj = em.load(perm, at(i)), em.load(perm, at(j))
            em.store(perm, at(i), pj)
            em.store(perm, at(j), pi)
        em.loop(k, swap, name="swap")
    em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, ipiv, info)
    return [out, pivots, perm]


def _geqp3_args(dtype, m: int, n: int, a, jpvt, tau, work, lwork: int, rwork, info) -> list:
    """?geqp3's arguments; the complex routines take a real workspace of 2n before info."""
    args = [m, n, a, max(m, 1), jpvt, tau, work, lwork]
    return args + ([rwork, info] if np.dtype(dtype).kind == "c" else [info])


def _geqp3_lwork(dtype, m: int, n: int) -> int:
    wk = Work(dtype)
    query(routine(dtype, "geqp3"), _geqp3_args(dtype, m, n, Work(dtype), Work(np.int32),
                                               Work(dtype), wk, -1, Work(_real(dtype)), 0))
    return _size(wk)


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _qr(em: Emitter, eqn, ins, dests):
    (x,), (q, r, *p) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k = min(m, n)
    qc = q.aval.shape[-1]
    kr = r.aval.shape[-2]
    cols = max(n, qc)
    geqrf, orgqr = routine(dtype, "geqrf"), routine(dtype, "orgqr")
    w1, w2 = Work(dtype), Work(dtype)
    query(geqrf, [m, n, Work(dtype), m, Work(dtype), w1, -1, 0])
    query(orgqr, [m, qc, k, Work(dtype), m, Work(dtype), w2, -1, 0])
    lwork = max(_size(w1), _size(w2), _geqp3_lwork(dtype, m, n) if p else 1)
    a, tau, work, info = (_work(em, m * cols, dtype), _work(em, k, dtype),
                          _work(em, lwork, dtype), _info(em))
    if p:  # column pivoting: geqp3 (jpvt zero: every column free), pivots made 0-based
        jpvt, rwork = _work(em, n, np.int32), _work(em, 2 * n, _real(dtype))

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, m)
        if p:
            em.loop(n, lambda i: em.store(jpvt, i, ir.Constant(I32, 0)), name="jpvt")
            _call(em, routine(dtype, "geqp3"),
                  _geqp3_args(dtype, m, n, a, jpvt, tau, work, lwork, rwork, info))
            em.loop(n, lambda i: em.store(p[0], em.linear(p[0].aval.shape, bidx + [i]),
                                          em.b.sub(em.load(jpvt, i), ir.Constant(I32, 1))),
                    name="piv")
        else:
            _call(em, geqrf, [m, n, a, m, tau, work, lwork, info])
        _from_fortran(em, a, m, r, bidx, kr, n, keep=lambda i, j: em.b.icmp_signed("<=", i, j))
        _call(em, orgqr, [m, qc, k, a, m, tau, work, lwork, info])
        _from_fortran(em, a, m, q, bidx, m, qc)
    em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, tau, work, info, *((jpvt, rwork) if p else ()))
    return [q, r, *p]


def _eigh(em: Emitter, eqn, ins, dests):
    (x,), (v, w) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    n = x.aval.shape[-1]
    name = routine(dtype, "syevd")
    uplo = "L" if eqn.params["lower"] else "U"
    real = w.aval.dtype
    wk, iw, rw = Work(dtype), Work(np.int32), Work(real)
    if dtype.kind == "c":
        query(name, ["V", uplo, n, Work(dtype), max(n, 1), Work(real), wk, -1, rw, -1, iw, -1,
                     0])
    else:
        query(name, ["V", uplo, n, Work(dtype), max(n, 1), Work(real), wk, -1, iw, -1, 0])
    lwork, liwork, lrwork = _size(wk), _size(iw), _size(rw)
    a, wv, work, iwork, info = (_work(em, n * n, dtype), _work(em, n, real),
                                _work(em, lwork, dtype), _work(em, liwork, np.int32), _info(em))
    rwork = _work(em, lrwork, real) if dtype.kind == "c" else None

    def one(bidx):
        _to_fortran(em, x, bidx, n, n, a, max(n, 1))
        extra = [rwork, lrwork] if rwork is not None else []
        _call(em, name, ["V", uplo, n, a, max(n, 1), wv, work, lwork] + extra +
              [iwork, liwork, info])
        ok = _info_is(em, info, "==")
        _from_fortran(em, a, max(n, 1), v, bidx, n, n, ok)
        _vector_out(em, wv, w, bidx, n, ok)
    if n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, wv, work, iwork, info, *([rwork] if rwork is not None else []))
    return [v, w]


def _svd(em: Emitter, eqn, ins, dests):
    outs = _outs(em, eqn, dests)
    (x,) = ins
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k, big = min(m, n), max(m, n)
    compute_uv, full = eqn.params["compute_uv"], eqn.params["full_matrices"]
    jobz = ("A" if full else "S") if compute_uv else "N"
    ucols = m if jobz == "A" else k
    vrows = n if jobz == "A" else k
    ldu, ldvt = m, (vrows if compute_uv else 1)
    real = outs[0].aval.dtype
    name = routine(dtype, "gesdd")
    complex_ = dtype.kind == "c"
    lrwork = (max(5 * k * k + 5 * k, 2 * big * k + 2 * k * k + k) if compute_uv else 7 * k)
    wk = Work(dtype)
    rw = [Work(real)] if complex_ else []
    query(name, [jobz, m, n, Work(dtype), m, Work(real), Work(dtype), ldu, Work(dtype), ldvt,
                 wk, -1] + rw + [Work(np.int32), 0])
    lwork = _size(wk)
    a, s, work, iwork, info = (_work(em, m * n, dtype), _work(em, k, real),
                               _work(em, lwork, dtype), _work(em, 8 * k, np.int32), _info(em))
    u = _work(em, m * ucols if compute_uv else 1, dtype)
    vt = _work(em, vrows * n if compute_uv else 1, dtype)
    rwork = [_work(em, lrwork, real)] if complex_ else []

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, m)
        _call(em, name, [jobz, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork] + rwork +
              [iwork, info])
        ok = _info_is(em, info, "==")
        _vector_out(em, s, outs[0], bidx, k, ok)
        if compute_uv:
            _from_fortran(em, u, ldu, outs[1], bidx, m, outs[1].aval.shape[-1], ok)
            _from_fortran(em, vt, ldvt, outs[2], bidx, outs[2].aval.shape[-2], n, ok)
    em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, s, work, iwork, info, u, vt, *rwork)
    return outs


def _eig(em: Emitter, eqn, ins, dests):
    outs = _outs(em, eqn, dests)
    (x,) = ins
    p = eqn.params
    n = x.aval.shape[-1]
    cdtype = outs[0].aval.dtype  # zgeev/cgeev for real input too (as the reference)
    real = np.dtype(dtypes.finfo_of(cdtype).dtype)
    name = routine(cdtype, "geev")
    left, right = p["compute_left_eigenvectors"], p["compute_right_eigenvectors"]
    jobvl, jobvr = "V" if left else "N", "V" if right else "N"
    ldvl, ldvr = (max(n, 1) if left else 1), (max(n, 1) if right else 1)
    wk = Work(cdtype)
    query(name, [jobvl, jobvr, n, Work(cdtype), max(n, 1), Work(cdtype), Work(cdtype), ldvl,
                 Work(cdtype), ldvr, wk, -1, Work(real), 0])
    lwork = _size(wk)
    a, w, work, rwork, info = (_work(em, n * n, cdtype), _work(em, n, cdtype),
                               _work(em, lwork, cdtype), _work(em, 2 * n, real), _info(em))
    vl = _work(em, n * n if left else 1, cdtype)
    vr = _work(em, n * n if right else 1, cdtype)

    def one(bidx):
        _to_fortran(em, x, bidx, n, n, a, max(n, 1))
        _call(em, name, [jobvl, jobvr, n, a, max(n, 1), w, vl, ldvl, vr, ldvr, work, lwork,
                         rwork, info])
        ok = _info_is(em, info, "==")
        _vector_out(em, w, outs[0], bidx, n, ok)
        rest = outs[1:]
        if left:
            _from_fortran(em, vl, ldvl, rest.pop(0), bidx, n, n, ok)
        if right:
            _from_fortran(em, vr, ldvr, rest.pop(0), bidx, n, n, ok)
    if n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, w, work, rwork, info, vl, vr)
    return outs


def _tridiagonal_solve(em: Emitter, eqn, ins, dests):
    (dl, d, du, x), (out,) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, nrhs = x.aval.shape[-2:]
    fdl, fd, fdu = _work(em, m, dtype), _work(em, m, dtype), _work(em, m, dtype)
    fb, info = _work(em, m * nrhs, dtype), _info(em)
    b = em.b

    def one(bidx):
        def diag(i):
            nxt = b.add(i, _c(1))
            em.store(fd, i, em.value_at(d, bidx + [i]))
            # gtsv's sub-diagonal is dl[1:], its super-diagonal du[:-1]
            em.store(fdl, i, em.value_at(dl, bidx + [nxt]))
            em.store(fdu, i, em.value_at(du, bidx + [i]))
        em.loop(m - 1, diag, name="diag")
        last = _c(m - 1)
        em.store(fd, last, em.value_at(d, bidx + [last]))
        _to_fortran(em, x, bidx, m, nrhs, fb, m)
        _call(em, routine(dtype, "gtsv"), [m, nrhs, fdl, fd, fdu, fb, m, info])
        _from_fortran(em, fb, m, out, bidx, m, nrhs, _info_is(em, info, "=="))
    if m and nrhs:
        em.loop_nest(list(x.aval.shape[:-2]), one)
    _release(em, fdl, fd, fdu, fb, info)
    return [out]


def _schur(em: Emitter, eqn, ins, dests):
    outs = _outs(em, eqn, dests)
    (x,) = ins
    dtype = x.aval.dtype
    n = x.aval.shape[-1]
    vectors = eqn.params["compute_schur_vectors"]
    jobvs, ldvs = ("V", max(n, 1)) if vectors else ("N", 1)
    name = routine(dtype, "gees")
    real = np.dtype(dtypes.finfo_of(dtype).dtype)
    null = ir.Constant(I8P, None)  # the eigenvalue-selecting function: unused without sorting
    wk = Work(dtype)
    if dtype.kind == "c":
        query(name, [jobvs, "N", Work(np.int8), n, Work(dtype), max(n, 1), 0, Work(dtype),
                     Work(dtype), ldvs, wk, -1, Work(real), Work(np.int32), 0])
    else:
        query(name, [jobvs, "N", Work(np.int8), n, Work(dtype), max(n, 1), 0, Work(dtype),
                     Work(dtype), Work(dtype), ldvs, wk, -1, Work(np.int32), 0])
    lwork = _size(wk)
    a, vs, work, info = (_work(em, n * n, dtype), _work(em, n * n if vectors else 1, dtype),
                         _work(em, lwork, dtype), _info(em))
    sdim, bwork = _info(em), _work(em, n, np.int32)
    w = [_work(em, n, dtype)] if dtype.kind == "c" else [_work(em, n, dtype), _work(em, n, dtype)]
    rwork = [_work(em, n, real)] if dtype.kind == "c" else []

    def one(bidx):
        _to_fortran(em, x, bidx, n, n, a, max(n, 1))
        _call(em, name, [jobvs, "N", null, n, a, max(n, 1), sdim, *w, vs, ldvs, work, lwork,
                         *rwork, bwork, info])
        ok = _info_is(em, info, "==")
        _from_fortran(em, a, max(n, 1), outs[0], bidx, n, n, ok)
        if vectors:
            _from_fortran(em, vs, ldvs, outs[1], bidx, n, n, ok)
    if n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, vs, work, info, sdim, bwork, *w, *rwork)
    return outs


def _hessenberg(em: Emitter, eqn, ins, dests):
    (x,), (out, taus) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    n = x.aval.shape[-1]
    name = routine(dtype, "gehrd")
    wk = Work(dtype)
    query(name, [n, 1, n, Work(dtype), max(n, 1), Work(dtype), wk, -1, 0])
    lwork = _size(wk)
    a, tau, work, info = (_work(em, n * n, dtype), _work(em, n, dtype), _work(em, lwork, dtype),
                          _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, n, n, a, max(n, 1))
        _call(em, name, [n, 1, n, a, max(n, 1), tau, work, lwork, info])
        _from_fortran(em, a, max(n, 1), out, bidx, n, n)
        _vector_out(em, tau, taus, bidx, n - 1)
    if n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, tau, work, info)
    return [out, taus]


def _geqrf(em: Emitter, eqn, ins, dests):
    (x,), (out, taus) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k = min(m, n)
    name = routine(dtype, "geqrf")
    wk = Work(dtype)
    query(name, [m, n, Work(dtype), max(m, 1), Work(dtype), wk, -1, 0])
    lwork = _size(wk)
    a, tau, work, info = (_work(em, m * n, dtype), _work(em, k, dtype), _work(em, lwork, dtype),
                          _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, max(m, 1))
        _call(em, name, [m, n, a, max(m, 1), tau, work, lwork, info])
        _from_fortran(em, a, max(m, 1), out, bidx, m, n)
        _vector_out(em, tau, taus, bidx, k)
    if m and n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, tau, work, info)
    return [out, taus]


def _geqp3(em: Emitter, eqn, ins, dests):
    (x, jpvt_in), (out, jpvt_out, taus) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k = min(m, n)
    lwork = _geqp3_lwork(dtype, m, n)
    a, jpvt, tau, work, rwork, info = (
        _work(em, m * n, dtype), _work(em, n, np.int32), _work(em, k, dtype),
        _work(em, lwork, dtype), _work(em, 2 * n, _real(dtype)), _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, max(m, 1))
        em.loop(n, lambda i: em.store(jpvt, i, em.value_at(jpvt_in, bidx + [i])), name="jpvt")
        _call(em, routine(dtype, "geqp3"),
              _geqp3_args(dtype, m, n, a, jpvt, tau, work, lwork, rwork, info))
        _from_fortran(em, a, max(m, 1), out, bidx, m, n)
        em.loop(n, lambda i: em.store(jpvt_out, em.linear(jpvt_out.aval.shape, bidx + [i]),
                                      em.load(jpvt, i)), name="piv")
        _vector_out(em, tau, taus, bidx, k)
    if m and n:
        em.loop_nest(list(_batch(eqn)), one)
    else:  # nothing to factor: zero pivots, as the reference's empty results
        em.loop_nest(list(jpvt_out.aval.shape),
                     lambda idx: em.store(jpvt_out, em.linear(jpvt_out.aval.shape, idx),
                                          ir.Constant(I32, 0)))
    _release(em, a, jpvt, tau, work, rwork, info)
    return [out, jpvt_out, taus]


def _tridiagonal(em: Emitter, eqn, ins, dests):
    (x,), (out, d, e, taus) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    real = d.aval.dtype
    n = x.aval.shape[-1]
    uplo = "L" if eqn.params["lower"] else "U"
    name = routine(dtype, "sytrd")
    wk = Work(dtype)
    query(name, [uplo, n, Work(dtype), n, Work(real), Work(real), Work(dtype), wk, -1, 0])
    lwork = _size(wk)
    a, fd, fe, tau, work, info = (_work(em, n * n, dtype), _work(em, n, real), _work(em, n, real),
                                  _work(em, n, dtype), _work(em, lwork, dtype), _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, n, n, a, n)
        _call(em, name, [uplo, n, a, n, fd, fe, tau, work, lwork, info])
        _from_fortran(em, a, n, out, bidx, n, n)
        _vector_out(em, fd, d, bidx, n)
        _vector_out(em, fe, e, bidx, n - 1)
        _vector_out(em, tau, taus, bidx, n - 1)
    em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, fd, fe, tau, work, info)
    return [out, d, e, taus]


def _ormqr(em: Emitter, eqn, ins, dests):
    (x, taus, c), (out,) = ins, _outs(em, eqn, dests)
    dtype = c.aval.dtype
    ma, na = x.aval.shape[-2:]
    k = taus.aval.shape[-1]
    m, n = c.aval.shape[-2:]
    side = "L" if eqn.params["left"] else "R"
    trans = ("C" if dtype.kind == "c" else "T") if eqn.params["transpose"] else "N"
    name = routine(dtype, "ormqr")
    wk = Work(dtype)
    query(name, [side, trans, m, n, k, Work(dtype), max(ma, 1), Work(dtype), Work(dtype),
                 max(m, 1), wk, -1, 0])
    lwork = _size(wk)
    a, tau, fc, work, info = (_work(em, ma * na, dtype), _work(em, k, dtype),
                              _work(em, m * n, dtype), _work(em, lwork, dtype), _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, ma, na, a, max(ma, 1))
        em.loop(k, lambda i: em.store(tau, i, em.value_at(taus, bidx + [i])), name="tau")
        _to_fortran(em, c, bidx, m, n, fc, max(m, 1))
        _call(em, name, [side, trans, m, n, k, a, max(ma, 1), tau, fc, max(m, 1), work, lwork,
                         info])
        _from_fortran(em, fc, max(m, 1), out, bidx, m, n)
    if m and n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, tau, fc, work, info)
    return [out]


def _householder_product(em: Emitter, eqn, ins, dests):
    (x, taus), (out,) = ins, _outs(em, eqn, dests)
    dtype = x.aval.dtype
    m, n = x.aval.shape[-2:]
    k = taus.aval.shape[-1]
    name = routine(dtype, "orgqr")
    wk = Work(dtype)
    query(name, [m, n, k, Work(dtype), max(m, 1), Work(dtype), wk, -1, 0])
    lwork = _size(wk)
    a, tau, work, info = (_work(em, m * n, dtype), _work(em, k, dtype), _work(em, lwork, dtype),
                          _info(em))

    def one(bidx):
        _to_fortran(em, x, bidx, m, n, a, max(m, 1))
        em.loop(k, lambda i: em.store(tau, i, em.value_at(taus, bidx + [i])), name="tau")
        _call(em, name, [m, n, k, a, max(m, 1), tau, work, lwork, info])
        _from_fortran(em, a, max(m, 1), out, bidx, m, n)
    if m and n:
        em.loop_nest(list(_batch(eqn)), one)
    _release(em, a, tau, work, info)
    return [out]


STRUCTURAL.update({dec.schur_p: _schur, dec.hessenberg_p: _hessenberg,
                   dec.householder_product_p: _householder_product, dec.geqrf_p: _geqrf,
                   dec.geqp3_p: _geqp3,
                   dec.tridiagonal_p: _tridiagonal, dec.ormqr_p: _ormqr})
STRUCTURAL.update({dec.cholesky_p: _cholesky, dec.triangular_solve_p: _triangular_solve,
                   dec.lu_p: _lu, dec.qr_p: _qr, dec.eigh_p: _eigh, dec.svd_p: _svd,
                   dec.eig_p: _eig, dec.tridiagonal_solve_p: _tridiagonal_solve})
