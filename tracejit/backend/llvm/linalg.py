"""Structural rule for dot_general: large float/complex products through BLAS gemm, the rest
(small, integer, half precision, unusual layouts) as an inline loop nest. codegen's Emitter
dispatches to it through `rules.STRUCTURAL`."""
from __future__ import annotations

import math

import llvmlite.ir as ir

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax import elementwise as ew
from ...lax.linalg import dot_general_p
from ...lax.reductions import reduce_sum_p
from .codegen import I8P, Buf, Emitter, Scalar, _as_value
from .reductions import _acc_dtype, _combine
from .rules import STRUCTURAL
from .scalar_ops import convert, emit_scalar
from .types import I8, I64, const, reg_type


def _gemm_layout(aval: ShapedArray, batch: tuple, contract: tuple, free: list[int]):
    """(transposed?, rows, cols) if the operand is a row-major [batch.., A, B] matrix whose two
    groups are the free and contracting dims in either order; None otherwise."""
    nb = len(batch)
    if tuple(batch) != tuple(range(nb)):
        return None
    rest = list(range(nb, aval.ndim))
    if rest == list(free) + list(contract):
        return False
    if rest == list(contract) + list(free):
        return True
    return None


_BLAS_MIN_FLOPS = 32 * 32 * 32
_GEMM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _dot_general(em: Emitter, eqn, ins, dests):
    lhs, rhs = [em.materialize(x) if not isinstance(x, Scalar) else x for x in ins]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    aval_out = eqn.outvars[0].aval
    out = dests[0] or em.alloc(aval_out)
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    dtype = aval_out.dtype
    m = math.prod(lhs.aval.shape[d] for d in lf)
    n = math.prod(rhs.aval.shape[d] for d in rf)
    k = math.prod(lhs.aval.shape[d] for d in lc)
    if (dtype in _GEMM_DTYPES and lhs.aval.dtype == rhs.aval.dtype == dtype
            and isinstance(lhs, Buf) and isinstance(rhs, Buf) and m * n * k >= _BLAS_MIN_FLOPS):
        lt = _gemm_layout(lhs.aval, lb, lc, lf)
        rt = _gemm_layout(rhs.aval, rb, rf, rc)
        if lt is not None and rt is not None:
            batch = math.prod(lhs.aval.shape[d] for d in lb)
            _emit_gemm(em, dtype, lhs, rhs, out, batch, m, n, k, lt, rt)
            return [out]
    return _dot_loops(em, eqn, lhs, rhs, out, dests, lc, rc, lb, rb, lf, rf)


def _emit_gemm(em: Emitter, dtype, lhs: Buf, rhs: Buf, out: Buf, batch: int, m: int, n: int,
               k: int, lhs_t: bool, rhs_t: bool) -> None:
    """Row-major C[m,n] = A·B through Fortran BLAS: C^T = B^T·A^T (column-major), per batch.
    Each product first sets BLAS's thread count for its size (blas.py: the work of one product,
    not the batch's: a batch of small products must not wake threads for each)."""
    from .blas import gemm_symbol, gemm_work, threads_symbol
    b = em.b
    ft = reg_type(dtype)
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I8P] + [i32.as_pointer()] * 3 +
                           [ft.as_pointer()] * 2 + [i32.as_pointer()] + [ft.as_pointer()] +
                           [i32.as_pointer()] + [ft.as_pointer()] * 2 + [i32.as_pointer()])
    symbol = gemm_symbol(dtype)
    fn = em.module.globals.get(symbol) or ir.Function(em.module, fnty, name=symbol)

    def slot(t, value):
        ptr = em._entry_alloca(t)
        b.store(value, ptr)
        return ptr

    def char(c):
        return slot(I8, ir.Constant(I8, ord(c)))

    # B (rhs) is op(X1): row-major [k,n] is column-major [n,k] = B^T ('N', ld n);
    # stored [n,k] it is column-major [k,n] = B, so 'T' with ld k. Likewise for A.
    ta, lda = (char("T"), k) if rhs_t else (char("N"), n)
    tb, ldb = (char("T"), m) if lhs_t else (char("N"), k)
    args_const = [slot(i32, ir.Constant(i32, v)) for v in (n, m, k)]
    alpha, beta = slot(ft, const(dtype, 1)), slot(ft, const(dtype, 0))
    lda_p, ldb_p, ldc_p = (slot(i32, ir.Constant(i32, v)) for v in (lda, ldb, n))
    threads = threads_symbol()
    set_threads = em.module.globals.get(threads) or ir.Function(
        em.module, ir.FunctionType(ir.VoidType(), [I64]), name=threads)
    b.call(set_threads, [ir.Constant(I64, gemm_work(dtype, m, n, k))])

    def one(i):
        a_ptr = b.gep(rhs.ptr, [b.mul(i, ir.Constant(I64, k * n))], inbounds=True)
        b_ptr = b.gep(lhs.ptr, [b.mul(i, ir.Constant(I64, m * k))], inbounds=True)
        c_ptr = b.gep(out.ptr, [b.mul(i, ir.Constant(I64, m * n))], inbounds=True)
        b.call(fn, [ta, tb, *args_const, alpha, a_ptr, lda_p, b_ptr, ldb_p, beta, c_ptr, ldc_p])
    em.loop(batch, one, name="batch")


def _dot_loops(em: Emitter, eqn, lhs, rhs, out: Buf, dests, lc, rc, lb, rb, lf, rf):
    """Inline loop nest: small dots, integer and half-precision dots, unusual layouts."""
    aval_out = eqn.outvars[0].aval
    dtype = aval_out.dtype
    acc_dtype = _acc_dtype(dtype)
    b = em.b
    acc_ptr = em._entry_alloca(reg_type(acc_dtype))
    csizes = [lhs.aval.shape[d] for d in lc]

    def outer(oidx):
        nb = len(lb)
        bidx, lidx, ridx = oidx[:nb], oidx[nb:nb + len(lf)], oidx[nb + len(lf):]
        b.store(const(acc_dtype, 0), acc_ptr)

        def inner(cidx):
            li: list = [None] * lhs.aval.ndim
            ri: list = [None] * rhs.aval.ndim
            for dims, idx, target in ((lb, bidx, li), (rb, bidx, ri), (lf, lidx, li),
                                      (rf, ridx, ri), (lc, cidx, li), (rc, cidx, ri)):
                for d, i in zip(dims, idx):
                    target[d] = i
            x = convert(b, em.value_at(lhs, li), lhs.aval.dtype, acc_dtype)
            y = convert(b, em.value_at(rhs, ri), rhs.aval.dtype, acc_dtype)
            if acc_dtype == dtypes.bool_:
                b.store(b.or_(b.load(acc_ptr), b.and_(x, y)), acc_ptr)
                return
            prod = emit_scalar(b, ew.mul_p, [acc_dtype] * 2, acc_dtype, [x, y], {})
            b.store(_combine(em, reduce_sum_p, acc_dtype, b.load(acc_ptr), prod), acc_ptr)
        em.loop_nest(csizes, inner)
        em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None,
                 convert(b, b.load(acc_ptr), acc_dtype, dtype))
    em.loop_nest(aval_out.shape, outer)
    return [out if aval_out.ndim or dests[0] is not None else _as_value(em, out)]


STRUCTURAL[dot_general_p] = _dot_general
