"""Structural rules for sort and top_k, emitted as native loops over each row. codegen's Emitter
dispatches to them through `rules.STRUCTURAL`.

- A sort by keys of real or integer types of at most 64 bits together (one key, or several: an
  int32 and a float32), of a row of RADIX_MIN_ROW elements or more, is a least-significant-digit
  radix sort of the row's keys mapped to unsigned integers in sort order (`_sort_key`), several
  keys side by side in one, the first highest; one byte a pass, every pass's histogram counted
  in one read of the row, and a pass whose byte is the same in every key skipped. Stable, as
  every LSD radix sort is. (lax.sort of 1M by an int32 and a float32 key: 317 ms as the merge
  sort, JAX 0.12 201.)
- Any other sort (complex keys, wider keys, short rows) is a stable bottom-up merge sort of a
  permutation of the row, comparing its elements where they lie.
- top_k of k <= TOP_K_SELECT_MAX_K keeps the k greatest keys seen so far in a sorted buffer (an
  insertion sort that drops its last), read past in vectors of the row where none of them beats
  the k-th greatest; a larger k sorts the row by the key reversed."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax.sorting import sort_p, top_k_p
from .codegen import Buf, Emitter, NativeCompileError
from .complex_ops import parts
from .lanes import splat
from .rules import STRUCTURAL
from .types import I1, I8, I32, I64, mem_type, reg_bits

# Row length from which a one-key sort is a radix sort. 1,000 rows of n float32, one thread, CPU
# time a call (merge / radix): n = 16 0.38 / 0.53 ms, 24 0.74 / 0.82, 32 0.98 / 0.63, 64 2.5 /
# 1.4, 128 5.9 / 1.3, 1,000 68 / 6.6.
RADIX_MIN_ROW = 32
_BYTE = 256  # a pass's buckets
# Largest k whose top_k keeps a sorted buffer of the k greatest: an element that enters it moves
# the smaller ones down one place each, k of them at worst (a row in ascending order). 1,000
# rows of 1,000 float32, one thread (buffer / radix sort): k = 16 1.7 / 5.7 ms (ascending rows
# 13 / 5.5), 32 3.3 / 5.5 (26 / 5.5), 64 8.0 / 6.5 (51 / 5.5): the buffer where its worst case
# stays within a few times the sort's.
TOP_K_SELECT_MAX_K = 16

At = Callable[[ir.Value], ir.Value]  # a row position (i64) -> the permuted row's element there


def _full_index(oidx: list, axis: int, i: ir.Value) -> list:
    full = list(oidx)
    full.insert(axis, i)
    return full


def _each_row(em: Emitter, shape: Sequence[int], axis: int, row: Callable[[list], None]) -> None:
    em.loop_nest([n for d, n in enumerate(shape) if d != axis], row)


def _merge_sort_rows(em: Emitter, shape: Sequence[int], axis: int,
                     less: Callable[[list, ir.Value, ir.Value], ir.Value],
                     emit_row: Callable[[list, At], None]) -> None:
    """Stable bottom-up merge sort of every row along `axis`: `less(oidx, i, j)` compares row
    positions i and j; `emit_row(oidx, at)` consumes the sorted permutation of the row."""
    b = em.b
    n = shape[axis]
    perm_aval = ShapedArray((max(n, 1),), np.dtype(np.int64))
    bufs = [em.alloc(perm_aval), em.alloc(perm_aval)]

    def row(oidx):
        em.loop(n, lambda i: em.store(bufs[0], i, i), name="perm")
        src, dst = 0, 1
        width = 1
        while width < n:
            nblocks = -(-n // (2 * width))

            def merge(blk, width=width, src=src, dst=dst):
                lo = b.mul(blk, ir.Constant(I64, 2 * width))
                mid = b.add(lo, ir.Constant(I64, width))
                n_c = ir.Constant(I64, n)
                mid = b.select(b.icmp_signed(">", mid, n_c), n_c, mid)
                hi = b.add(lo, ir.Constant(I64, 2 * width))
                hi = b.select(b.icmp_signed(">", hi, n_c), n_c, hi)
                i_ptr, j_ptr = em._entry_alloca(I64), em._entry_alloca(I64)
                b.store(lo, i_ptr)
                b.store(mid, j_ptr)

                def step(t):
                    k = b.add(lo, t)
                    i, j = b.load(i_ptr), b.load(j_ptr)
                    left_ok = b.icmp_signed("<", i, mid)
                    right_ok = b.icmp_signed("<", j, hi)
                    # read both candidates at clamped positions (never out of bounds)
                    pi = em.load(bufs[src], b.select(left_ok, i, lo))
                    pj = em.load(bufs[src], b.select(right_ok, j, lo))
                    take_right = b.and_(right_ok, b.or_(b.not_(left_ok), less(oidx, pj, pi)))
                    em.store(bufs[dst], k, b.select(take_right, pj, pi))
                    b.store(b.select(take_right, i, b.add(i, ir.Constant(I64, 1))), i_ptr)
                    b.store(b.select(take_right, b.add(j, ir.Constant(I64, 1)), j), j_ptr)
                em.loop(b.sub(hi, lo), step, name="merge")
            em.loop(nblocks, merge, name="blk")
            src, dst = dst, src
            width *= 2
        emit_row(oidx, lambda k, perm=bufs[src]: em.load(perm, k))
    _each_row(em, shape, axis, row)
    for buf in bufs:
        em.release(buf)


def _radix_sort_rows(em: Emitter, shape: Sequence[int], axis: int, bits: int,
                     key: Callable[[list, ir.Value], ir.Value],
                     emit_row: Callable[[list, At], None]) -> None:
    """Stable LSD radix sort of every row along `axis` by `key(oidx, i)`, an unsigned integer
    of `bits` bits ordered as the row is to be sorted: the keys and their positions are sorted
    together, a byte a pass (passes whose byte is the same in every key are skipped), then
    `emit_row(oidx, at)` reads the sorted positions. Rows shorter than 2^31."""
    b = em.b
    n = shape[axis]
    passes = bits // 8
    kt = ir.IntType(bits)
    keys = [em.alloc(ShapedArray((n,), np.dtype(f"u{bits // 8}"))) for _ in range(2)]
    poss = [em.alloc(ShapedArray((n,), np.dtype(np.int32))) for _ in range(2)]
    counts = em.alloc(ShapedArray((passes * _BYTE,), np.dtype(np.int32)))
    # the pass's source and destination (a skipped pass leaves them where they were)
    src = [em._entry_alloca(buf.ptr.type) for buf in (keys[0], poss[0])]
    dst = [em._entry_alloca(buf.ptr.type) for buf in (keys[1], poss[1])]
    run = em._entry_alloca(I32)  # a pass's running count, as its counts become offsets
    one, n32 = ir.Constant(I32, 1), ir.Constant(I32, n)

    def bucket(k: ir.Value, p: int) -> ir.Value:
        byte = b.and_(b.lshr(k, ir.Constant(kt, 8 * p)), ir.Constant(kt, _BYTE - 1))
        wide = b.zext(byte, I64) if bits < 64 else byte
        return b.add(wide, ir.Constant(I64, p * _BYTE))

    def counter(k: ir.Value, p: int) -> ir.Value:
        return b.gep(counts.ptr, [bucket(k, p)], inbounds=True)

    def row(oidx):
        em.loop(passes * _BYTE, lambda d: em.store(counts, d, ir.Constant(I32, 0)),
                name="zero", over_data=False)

        def count(i):
            k = key(oidx, i)
            em.store(keys[0], i, k)
            em.store(poss[0], i, b.trunc(i, I32))
            for p in range(passes):
                slot = counter(k, p)
                b.store(b.add(b.load(slot), one), slot)
        em.loop(n, count, name="count", vectorize=False)
        for ptr, buf in zip(src + dst, (keys[0], poss[0], keys[1], poss[1])):
            b.store(buf.ptr, ptr)
        for p in range(passes):
            src_k, src_p = (Buf(b.load(ptr), buf.aval) for ptr, buf in zip(src, (keys[0], poss[0])))
            first = em.load(src_k, ir.Constant(I64, 0))
            with b.if_then(b.icmp_signed("!=", b.load(counter(first, p)), n32)):
                b.store(ir.Constant(I32, 0), run)

                def offset(d, p=p):  # the counts become each bucket's first place
                    slot = b.gep(counts.ptr, [b.add(d, ir.Constant(I64, p * _BYTE))],
                                 inbounds=True)
                    c = b.load(slot)
                    b.store(b.load(run), slot)
                    b.store(b.add(b.load(run), c), run)
                em.loop(_BYTE, offset, name="offsets", over_data=False, vectorize=False)
                dst_k, dst_p = (Buf(b.load(ptr), buf.aval)
                                for ptr, buf in zip(dst, (keys[1], poss[1])))

                def move(i, p=p, src_k=src_k, src_p=src_p, dst_k=dst_k, dst_p=dst_p):
                    k = em.load(src_k, i)
                    slot = counter(k, p)
                    at = b.load(slot)
                    b.store(b.add(at, one), slot)
                    at = b.zext(at, I64)
                    em.store(dst_k, at, k)
                    em.store(dst_p, at, em.load(src_p, i))
                em.loop(n, move, name="move", vectorize=False)
                for a, c in zip(src, dst):
                    was = b.load(a)
                    b.store(b.load(c), a)
                    b.store(was, c)
        sorted_p = Buf(b.load(src[1]), poss[0].aval)
        emit_row(oidx, lambda t: b.zext(em.load(sorted_p, t), I64))
    _each_row(em, shape, axis, row)
    for buf in (*keys, *poss, counts):
        em.release(buf)


def _key_less(em: Emitter, dtype: np.dtype, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(a < c, a == c) in sort order: NaNs last and equal to each other, -0.0 == 0.0."""
    b = em.b
    if dtype.kind == "c":  # the reference's lexicographic keys: real part, then imaginary
        part = np.dtype(dtypes.finfo_of(dtype).dtype)
        (ar, ai), (cr, ci) = parts(b, a), parts(b, c)
        lt_re, eq_re = _key_less(em, part, ar, cr)
        lt_im, eq_im = _key_less(em, part, ai, ci)
        return b.or_(lt_re, b.and_(eq_re, lt_im)), b.and_(eq_re, eq_im)
    if dtypes.is_inexact(dtype):
        a_nan, c_nan = b.fcmp_unordered("uno", a, a), b.fcmp_unordered("uno", c, c)
        lt = b.or_(b.and_(b.not_(a_nan), c_nan), b.fcmp_ordered("<", a, c))
        eq = b.or_(b.and_(a_nan, c_nan), b.fcmp_ordered("==", a, c))
        return lt, eq
    if dtype == dtypes.bool_ or dtype.kind == "u":
        return b.icmp_unsigned("<", a, c), b.icmp_unsigned("==", a, c)
    return b.icmp_signed("<", a, c), b.icmp_signed("==", a, c)


def _key_bits(dtype: np.dtype) -> int:
    """The width of _sort_key's and _unsigned_order's integers for `dtype`."""
    return 8 if dtype == dtypes.bool_ else reg_bits(dtype) if dtypes.is_inexact(dtype) \
        else dtype.itemsize * 8


def _sort_key(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """An unsigned integer ordered as sort orders values of a real or integer type (_key_less):
    every NaN one value above +inf, -0.0 as 0.0, then _unsigned_order."""
    b = em.b
    if dtypes.is_inexact(dtype):
        width = reg_bits(dtype)
        it = ir.IntType(width)
        quiet_nan = ((1 << (width - 1)) - 1) ^ ((1 << (np.finfo(dtype).nmant - 1)) - 1) \
            if dtype != dtypes.bfloat16 else 0x7FC00000
        bits = b.bitcast(v, it)
        bits = b.select(b.fcmp_unordered("uno", v, v), ir.Constant(it, quiet_nan), bits)
        v = b.bitcast(b.select(b.fcmp_ordered("==", v, ir.Constant(v.type, 0.0)),
                               ir.Constant(it, 0), bits), v.type)
    return _unsigned_order(em, dtype, v)


def _unsigned_order(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """An unsigned integer ordered as JAX's total order orders `v` (-NaN < -inf < -0 < 0 < inf
    < NaN for floats); for integers, their own order. Vectors of `v` too."""
    b = em.b
    if dtype == dtypes.bool_:
        return b.zext(v, I8)
    if dtype.kind == "u":
        return v
    width = _key_bits(dtype)
    it = ir.IntType(width)
    if dtype.kind == "i":
        return b.xor(v, _constant(v, it, 1 << (width - 1)))
    bits = b.bitcast(v, _like(v, it))
    neg = b.icmp_signed("<", bits, _constant(v, it, 0))
    # negative: all bits flipped (more negative, smaller); else the sign bit set
    return b.xor(bits, b.select(neg, _constant(v, it, (1 << width) - 1),
                                _constant(v, it, 1 << (width - 1))))


def _like(v: ir.Value, it: ir.IntType) -> ir.Type:
    """`it`, or a vector of it as long as `v` where `v` is a vector."""
    return ir.VectorType(it, v.type.count) if isinstance(v.type, ir.VectorType) else it


def _constant(v: ir.Value, it: ir.IntType, c: int) -> ir.Constant:
    """The integer c as `it`, splat where `v` is a vector."""
    t = _like(v, it)
    return splat(t, c) if isinstance(t, ir.VectorType) else ir.Constant(t, c)


def _sort(em: Emitter, eqn, ins, dests):
    axis, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    aval = eqn.outvars[0].aval
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    b = em.b
    n = aval.shape[axis]

    def emit_row(oidx, at: At):
        def put(k):
            src = _full_index(oidx, axis, at(k))
            dst = em.linear(aval.shape, _full_index(oidx, axis, k))
            for x, o in zip(ins, outs):
                em.store(o, dst, em.value_at(x, src))
        em.loop(n, put, name="put")

    keys = [x.aval.dtype for x in ins[:num_keys]]
    widths = [_key_bits(k) for k in keys]
    if all(k.kind != "c" for k in keys) and sum(widths) <= 64 and RADIX_MIN_ROW <= n < 2 ** 31:
        # (several keys: one unsigned integer of their keys side by side, the first highest --
        # lexicographic order -- in the narrowest radix width that holds them)
        bits = next(w for w in (8, 16, 32, 64) if w >= sum(widths))

        def key(oidx, i):
            whole = None
            for x, dtype_k, width in zip(ins, keys, widths):
                k = _sort_key(em, dtype_k, em.value_at(x, _full_index(oidx, axis, i)))
                k = b.zext(k, ir.IntType(bits)) if width < bits else k
                whole = k if whole is None else b.or_(
                    b.shl(whole, ir.Constant(ir.IntType(bits), width)), k)
            return whole
        _radix_sort_rows(em, aval.shape, axis, bits, key, emit_row)
        return outs

    def less(oidx, i, j):
        result = ir.Constant(I1, 0)
        decided = ir.Constant(I1, 0)
        for x in ins[:num_keys]:
            xi = em.value_at(x, _full_index(oidx, axis, i))
            xj = em.value_at(x, _full_index(oidx, axis, j))
            lt, eq = _key_less(em, x.aval.dtype, xi, xj)
            result = b.select(decided, result, lt)
            decided = b.or_(decided, b.not_(eq))
        return result
    _merge_sort_rows(em, aval.shape, axis, less, emit_row)
    return outs


def _top_k(em: Emitter, eqn, ins, dests):
    (x,) = ins
    k, axis = eqn.params["k"], eqn.params["axis"]
    dtype = x.aval.dtype
    if dtype.kind == "c":  # the reference orders the raw bits of the struct, not a number order
        raise NativeCompileError("native top_k of complex numbers is not supported")
    vals, idxs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    out_shape = eqn.outvars[0].aval.shape
    shape = x.aval.shape
    n = shape[axis]
    b = em.b

    def key(oidx, i):
        return _unsigned_order(em, dtype, em.value_at(x, _full_index(oidx, axis, i)))

    def emit_row(oidx, at: At):
        def put(t):
            p = at(t)
            dst = em.linear(out_shape, _full_index(oidx, axis, t))
            em.store(vals, dst, em.value_at(x, _full_index(oidx, axis, p)))
            em.store(idxs, dst, b.trunc(p, I32))
        em.loop(k, put, name="topk")

    if k == 0 or n == 0:
        return [vals, idxs]
    if k <= TOP_K_SELECT_MAX_K and n < 2 ** 31:
        _select_rows(em, x, axis, k, key, emit_row)
    elif RADIX_MIN_ROW <= n < 2 ** 31:  # the greatest first, ties in the row's order: ~key
        _radix_sort_rows(em, shape, axis, _key_bits(dtype), lambda o, i: b.not_(key(o, i)),
                         emit_row)
    else:
        _merge_sort_rows(em, shape, axis, lambda o, i, j: b.icmp_unsigned(">", key(o, i),
                                                                           key(o, j)), emit_row)
    return [vals, idxs]


def _select_rows(em: Emitter, x, axis: int, k: int, key: Callable[[list, ir.Value], ir.Value],
                 emit_row: Callable[[list, At], None]) -> None:
    """The k greatest of every row by `key` (unsigned), the greatest first and ties in the row's
    order: a buffer of the greatest k so far, sorted, into which an element greater than the
    k-th moves by insertion (the k-th dropped). Where the row lies in memory in a 4- or 8-byte
    type, the elements past the first k are read a vector at a time, each vector's keys compared
    with the k-th at once, and only a vector with a greater one looked at element by element."""
    b = em.b
    shape = x.aval.shape
    n = shape[axis]
    dtype = x.aval.dtype
    width = _key_bits(dtype)
    kt = ir.IntType(width)
    top = em.alloc(ShapedArray((k,), np.dtype(f"u{width // 8}")))
    at = em.alloc(ShapedArray((k,), np.dtype(np.int32)))
    place = em._entry_alloca(I64)
    kth = em._entry_alloca(kt)  # the k-th greatest key so far
    last = ir.Constant(I64, k - 1)

    def insert(first: ir.Value, v: ir.Value, i: ir.Value) -> None:
        """v (the key of element i) into the buffer: at `first`, or above the smaller keys."""
        b.store(first, place)
        head, body, done = (b.append_basic_block(f"insert.{s}") for s in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        j = b.load(place)
        above = b.sub(j, ir.Constant(I64, 1))
        more = b.icmp_signed(">", j, ir.Constant(I64, 0))
        smaller = b.and_(more, b.icmp_unsigned("<", em.load(top, b.select(more, above, j)), v))
        b.cbranch(smaller, body, done)
        b.position_at_end(body)
        em.store(top, j, em.load(top, above))
        em.store(at, j, em.load(at, above))
        b.store(above, place)
        b.branch(head)
        b.position_at_end(done)
        em.store(top, j, v)
        em.store(at, j, b.trunc(i, I32))

    def consider(oidx, i: ir.Value) -> None:
        v = key(oidx, i)
        with b.if_then(b.icmp_unsigned(">", v, b.load(kth)), likely=False):
            insert(last, v, i)
            b.store(em.load(top, last), kth)

    lanes = 64 // dtype.itemsize
    vectors = isinstance(x, Buf) and axis == len(shape) - 1 and dtype.itemsize in (4, 8) and \
        dtype != dtypes.bool_ and (n - k) // lanes >= 2

    def row(oidx):
        em.loop(k, lambda i: insert(i, key(oidx, i), i), name="first", over_data=False,
                vectorize=False)
        b.store(em.load(top, last), kth)
        rest = n - k
        if not vectors:
            em.loop(rest, lambda i: consider(oidx, b.add(i, ir.Constant(I64, k))), name="rest",
                    vectorize=False)
        else:
            vt = ir.VectorType(mem_type(dtype), lanes)
            mask = em._entry_alloca(ir.IntType(lanes))
            start = em.linear(shape, _full_index(oidx, axis, ir.Constant(I64, k)))
            base = b.gep(x.ptr, [start], inbounds=True)

            def block(j):
                first = b.mul(j, ir.Constant(I64, lanes))
                ptr = b.bitcast(b.gep(base, [first], inbounds=True), vt.as_pointer())
                keys = _unsigned_order(em, dtype, b.load(ptr, align=dtype.itemsize))
                threshold = b.shuffle_vector(
                    b.insert_element(ir.Constant(keys.type, ir.Undefined), b.load(kth),
                                     ir.Constant(I32, 0)),
                    ir.Constant(keys.type, ir.Undefined),
                    ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))
                mt = ir.IntType(lanes)
                b.store(b.bitcast(b.icmp_unsigned(">", keys, threshold), mt), mask)
                # each lane whose key was greater, in order (the k-th may have risen since)
                head, body, done = (b.append_basic_block(f"lanes.{s}")
                                    for s in ("head", "body", "done"))
                b.branch(head)
                b.position_at_end(head)
                bits = b.load(mask)
                b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(mt, 0)), body, done)
                b.position_at_end(body)
                b.store(b.and_(bits, b.sub(bits, ir.Constant(mt, 1))), mask)
                lane = b.zext(b.cttz(bits, ir.Constant(I1, 1)), I64)
                consider(oidx, b.add(b.add(first, lane), ir.Constant(I64, k)))
                b.branch(head)
                b.position_at_end(done)
            blocks = rest // lanes
            em.loop(blocks, block, name="vec", vectorize=False)
            em.loop(rest - blocks * lanes, lambda i: consider(oidx, b.add(
                i, ir.Constant(I64, k + blocks * lanes))), name="tail", vectorize=False)
        emit_row(oidx, lambda t: b.zext(em.load(at, t), I64))
    _each_row(em, shape, axis, row)
    em.release(top)
    em.release(at)


STRUCTURAL.update({sort_p: _sort, top_k_p: _top_k})
