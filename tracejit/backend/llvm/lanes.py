"""Vector-lane float reductions, used by codegen's reduce rules (reductions.py) on a contiguous
run of float32/float64 in memory: explicit vectors in a fixed order, so a row's sum, max or min
runs at load speed and gives the same bits on every CPU, for every thread count."""
from __future__ import annotations

import functools
from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from .codegen import Emitter
from .types import I1, const, reg_type

# Lanes: ACCUMULATORS independent vectors of LANE_BYTES (16 float32 or 8 float64 each), so the
# loop carries 4 dependency chains of vector adds and loads one cache line per vector. The
# lane count is fixed in the IR (not chosen by LLVM), so the order of the additions, and with
# it the rounding, is the same on a machine with 256-bit vectors as on one with 512-bit ones.
# The four are one IR vector of 4 W lanes (accumulator k its lanes [k W, (k + 1) W)): a step
# of 4 W contiguous elements is then one load and one add, which LLVM splits into the same
# four vector instructions, but its passes see a quarter of the instructions (softmax 1000²'s
# row program: O3 + machine code 20.0 -> 17.5 ms, the same machine code; _unrolled_sum aside).
LANE_BYTES = 64
ACCUMULATORS = 4
_OPS = ("reduce_sum", "reduce_max", "reduce_min")


def supported(name: str, dtype: np.dtype) -> bool:
    """Whether lane_reduce handles reducer `name` over values of `dtype`."""
    return name in _OPS and dtype in (dtypes.float32, dtypes.float64)


def lane_reduce(em: Emitter, name: str, dtype: np.dtype, ptr: ir.Value | None, n: int,
                short: tuple[ir.Value, int] | None = None,
                value: Callable[[ir.Value], ir.Value] | None = None,
                unroll: bool = False) -> ir.Value:
    """reduce_sum/max/min of the n elements at `ptr` (contiguous), as a scalar; with `short`
    = (cond, m), a sum of the m elements there instead where `cond` holds (a run's last, shorter
    block; n a multiple of 4 W): one loop with a run-time trip count and m's tail under `cond`,
    the additions of lane_reduce(m) there and of lane_reduce(n) elsewhere, where two copies of
    the loop cost LLVM ~3 ms (sum 10M). With `unroll` (a sum), the n elements (where `cond` does
    not hold) add in straight-line code instead of the loop: _unrolled_sum.

    Element i goes to vector accumulator (i // W) % 4, lane i % W (W elements a vector); the
    last n % W elements, if any, are loaded as the vector ending at element n - 1 with the lanes
    already counted masked to the identity. The four accumulators are combined as (0, 1), (2,
    3), then their halves pairwise down to one lane: the order depends on n only.

    Sums add in that order, so a sum of n elements differs from the exact one by at most
    (n / (4 W) + 2 + log2(4 W)) ε Σ|x|, about 20 ε Σ|x| for a row of 1,024 float32. Max and min
    are exact: each lane keeps the first of its greatest values (one compare and a blend, an
    x86 max), a NaN anywhere makes the result NaN (as NumPy and JAX), and a result of zero is
    +0 for a max (-0 for a min) if that zero is among the elements (_signed_zero): +0 beats -0
    as in JAX.

    With `value` (a sum; ptr None), element i is value(i), i an i64 index: values computed by
    fused producers (logsumexp's exp), never stored. A step's 4 W values are computed by a loop
    of 4 W into a stack slot (a tail's vector by a loop of W; the masked lanes' values are
    computed again) and loaded from it as the vectors. That loop's vector shape is fixed (W
    wide, 4 interleaved: `Emitter.loop`'s vector_shape), so LLVM vectorises it into one turn
    and keeps the vectors in registers: the sum costs what LLVM's own vectorised
    (reassociated) sum did (logsumexp 4096², one thread: 3.10-3.15 ms against 3.08-3.09, load
    ~8), and adds in the order above -- the bits of the same values' sum in memory, on any
    vector width, with or without LLVM's vectorisers."""
    assert value is None or (ptr is None and name == "reduce_sum" and not unroll), name
    b = em.b
    t = reg_type(dtype)
    w = LANE_BYTES // dtype.itemsize
    vt = ir.VectorType(t, w)
    wide = ir.VectorType(t, ACCUMULATORS * w)
    ident = _identity(name, dtype)
    ident_v = splat(vt, ident)
    minmax = name != "reduce_sum"
    acc = em._entry_alloca(wide)
    b.store(splat(wide, ident), acc)
    if minmax:
        flag = _flag_type(t)
        flags = em._entry_alloca(ir.VectorType(flag, wide.count if flag == I1 else w))
        b.store(splat(flags.type.pointee, 0), flags)

    if value is not None:
        slot = em._entry_alloca(ir.ArrayType(t, ACCUMULATORS * w))
        zero32 = ir.Constant(ir.IntType(32), 0)

        def fill(index: ir.Value, count: int) -> None:
            def put(j: ir.Value) -> None:
                saved, em._memo = em._memo, {}  # (as loop_nest: nothing outlives the body)
                b.store(value(b.add(index, j)), b.gep(slot, [zero32, j], inbounds=True))
                em._memo = saved
            em.loop(count, put, name="lane", vector_shape=(w, count // w))

        def slot_vec(vec: ir.VectorType) -> ir.Value:
            at = b.gep(slot, [zero32, zero32], inbounds=True)
            return b.load(b.bitcast(at, vec.as_pointer()), align=dtype.itemsize)

        def load_vec(index: ir.Value) -> ir.Value:
            fill(index, w)
            return slot_vec(vt)

        def load_one(index: ir.Value) -> ir.Value:
            return value(index)
    else:
        def load_vec(index: ir.Value, vec: ir.VectorType = vt) -> ir.Value:
            at = b.gep(ptr, [index], inbounds=True)
            return b.load(b.bitcast(at, vec.as_pointer()), align=dtype.itemsize)

        def load_one(index: ir.Value) -> ir.Value:
            return b.load(b.gep(ptr, [index], inbounds=True))

    def add_into(v: ir.Value) -> None:  # (v: 4 W lanes, one for each accumulator's lane)
        a = b.load(acc)
        if not minmax:
            b.store(b.fadd(a, v), acc)
            return
        # an ordered compare: a NaN never wins here, it is counted in the flags instead
        take = b.fcmp_ordered(">" if name == "reduce_max" else "<", v, a)
        b.store(b.select(take, v, a), acc)
        nan = b.fcmp_unordered("uno", v, v)
        if flags.type.pointee.element != I1:  # (one vector of W flags: their ORs)
            nan = b.sext(nan, ir.VectorType(flags.type.pointee.element, wide.count))
            quarters = [b.shuffle_vector(nan, nan, _lanes(k * w, (k + 1) * w))
                        for k in range(ACCUMULATORS)]
            nan = b.or_(b.or_(quarters[0], quarters[1]), b.or_(quarters[2], quarters[3]))
        b.store(b.or_(b.load(flags), nan), flags)

    block = ACCUMULATORS * w
    full = n // block

    def body(i):
        base = b.mul(i, ir.Constant(ir.IntType(64), block))
        if value is not None:
            fill(base, block)
            add_into(slot_vec(wide))
        else:
            add_into(load_vec(base, wide))
    if short is None:
        if unroll and not minmax:
            _unrolled_sum(em, ptr, wide, acc, full, dtype.itemsize)
        elif full:
            em.loop(full, body, name="lanes")
        _tail(em, name, n, w, full * block, add_into, load_vec, ident_v, load_one)
    else:
        cond, m = short
        assert not minmax and n % block == 0 and m < n, (name, n, m)
        if unroll:
            with b.if_else(cond) as (last, whole):
                with last:
                    if m // block:
                        em.loop(m // block, body, name="lanes")
                    if m % block:
                        _tail(em, name, m, w, m // block * block, add_into, load_vec, ident_v,
                              load_one)
                with whole:
                    _unrolled_sum(em, ptr, wide, acc, full, dtype.itemsize)
        else:
            c = functools.partial(ir.Constant, ir.IntType(64))
            em.loop(b.select(cond, c(m // block), c(full)), body, name="lanes")
            if m % block:
                with b.if_then(cond):
                    _tail(em, name, m, w, m // block * block, add_into, load_vec, ident_v,
                          load_one)
    total = _fold(b, name, b.load(acc), w)
    if not minmax:
        return total
    bits = ir.IntType(flags.type.pointee.count * flags.type.pointee.element.width)
    any_nan = b.icmp_unsigned("!=", b.bitcast(b.load(flags), bits), ir.Constant(bits, 0))
    result = em._entry_alloca(t)
    b.store(b.select(any_nan, ir.Constant(t, float("nan")), total), result)
    zero = b.and_(b.not_(any_nan), b.fcmp_ordered("==", total, ir.Constant(t, 0.0)))
    with b.if_then(zero, likely=False):  # which zero: the rare case
        b.store(_signed_zero(em, name, dtype, ptr, n, vt, load_vec), result)
    return b.load(result)


def _flag_type(t: ir.Type) -> ir.IntType:
    """A lane's NaN flag in a max or min: an i1 where AVX-512's mask registers hold a vector of
    them (one for each of the 4 W lanes); elsewhere a compare's all-ones result as wide as the
    lane, the four accumulators' ORed into one vector of W flags. On AVX2 the 64 i1 flags of
    a float32 step were split into 64 scalars, kept on the stack (max of each row of 1000²
    float32: 386 us, JAX 0.12 116; 50-82 us after); one vector of flags, not four, keeps the
    loop's 8 accumulators and flags in registers (14 spills and reloads a step before)."""
    from ..llvm_setup import host_has
    return I1 if host_has("avx512f") else ir.IntType(64 if isinstance(t, ir.DoubleType) else 32)


def _unrolled_sum(em: Emitter, ptr: ir.Value, wide: ir.VectorType, acc: ir.Value,
                  steps: int, align: int) -> None:
    """The first `steps` steps of 4 W elements at ptr added into the accumulators, in
    straight-line code: the additions of the lanes loop, in its order, without its branch. A
    1,024-element block of a long sum was a 16-turn loop (32 for float64), and its exit cost a
    block (4 KiB, ~35 ns from L3) about 7%: one thread reading 20 MB, best of 500 calls,
    183-187 -> 173 us (a C loop of the same loads, unrolled by gcc, 166-174 us; at 2 or 4 turns
    a loop, as slow as at 16). One W-lane load and add a vector, not a 4 W one a step: LLVM's
    scheduler kept the order of the vectors' loads then, but put each step's four in another
    order (every other step backwards), and the sum ran 16% slower (one thread, best of 15 x 30
    calls: 545 -> 635 us). The code is a loop of `steps` turns that O3 unrolls fully
    (Emitter.loop's `unroll`), so that the first tier's O0 code generation, which ignores
    that, compiles 4 loads and adds, not 64 (the module's O0 code generation took 9.1 ms of
    sum 10M's ~28 ms first call, 4.8-5.2 since); the accumulators live in four stack slots,
    which the first tier's and O3's passes make registers."""
    b = em.b
    w = wide.count // ACCUMULATORS
    vt = ir.VectorType(wide.element, w)
    vp = b.bitcast(ptr, vt.as_pointer())
    total = b.load(acc)
    slots = [em._entry_alloca(vt) for _ in range(ACCUMULATORS)]
    for k, slot in enumerate(slots):
        b.store(b.shuffle_vector(total, total, _lanes(k * w, (k + 1) * w)), slot)

    def step(i: ir.Value) -> None:
        base = b.mul(i, ir.Constant(ir.IntType(64), ACCUMULATORS))
        for k, slot in enumerate(slots):
            at = b.gep(vp, [b.add(base, ir.Constant(ir.IntType(64), k))], inbounds=True)
            b.store(b.fadd(b.load(slot), b.load(at, align=align)), slot)
    em.loop(steps, step, name="lanes.unrolled", over_data=False, unroll=True)
    b.store(_concat(b, [b.load(slot) for slot in slots]), acc)


def _signed_zero(em: Emitter, name: str, dtype: np.dtype, ptr: ir.Value, n: int,
                 vt: ir.VectorType, load_vec) -> ir.Value:
    """The zero a max (min) of the n elements at ptr is when the lanes found a zero and no NaN:
    +0 (-0) if any element is that zero, bit for bit, else the other, which is what LLVM's
    maximum (minimum), -0 < +0, gives in order. An integer compare, W at a time (the last W
    overlapping the whole vectors: an element seen twice changes nothing), in a loop LLVM's
    vectoriser leaves alone: it vectorised the in-order maximum loop (4 vectors a turn, an
    epilogue loop), ~3 ms of softmax 1000²'s compile for a path that runs only when a row's
    result is zero."""
    b = em.b
    w, t = vt.count, vt.element
    it = ir.IntType(8 * dtype.itemsize)
    bits = 0 if name == "reduce_max" else 1 << (it.width - 1)
    vi, vb = ir.VectorType(it, w), ir.VectorType(I1, w)
    seen = em._entry_alloca(vb)
    b.store(splat(vb, 0), seen)

    def look(at: ir.Value) -> None:
        v = b.bitcast(load_vec(at), vi)
        b.store(b.or_(b.load(seen), b.icmp_unsigned("==", v, splat(vi, bits))),
                seen)
    c = functools.partial(ir.Constant, ir.IntType(64))
    if n >= w:
        em.loop(n // w, lambda i: look(b.mul(i, c(w))), name="zeros", vectorize=False)
        if n % w:
            look(c(n - w))
        found = b.icmp_unsigned("!=", b.bitcast(b.load(seen), ir.IntType(w)),
                                ir.Constant(ir.IntType(w), 0))
    else:  # fewer than W elements in all
        found = ir.Constant(I1, 0)
        for j in range(n):
            x = b.bitcast(b.load(b.gep(ptr, [c(j)], inbounds=True)), it)
            found = b.or_(found, b.icmp_unsigned("==", x, ir.Constant(it, bits)))
    return b.select(found, ir.Constant(t, 0.0 if name == "reduce_max" else -0.0),
                    ir.Constant(t, -0.0 if name == "reduce_max" else 0.0))


def _tail(em: Emitter, name: str, n: int, w: int, start: int, add_into, load_vec, ident_v,
          load_one) -> None:
    """The elements of a run of n from `start` (fewer than 4 W) added into the accumulators:
    whole vectors into accumulators 0, 1, ..., the last partial one into the next, in one
    step of 4 W lanes whose other lanes leave their accumulator as it is (a sum adds -0 there:
    x + -0 is x, bit for bit; a partial vector's masked lanes add +0, as they did)."""
    b = em.b
    vectors, part = divmod(n - start, w)
    if not vectors and not part:
        return
    pieces = [load_vec(ir.Constant(ir.IntType(64), start + k * w)) for k in range(vectors)]
    if part and n >= w:  # the vector ending at n - 1, its first w - part lanes counted before
        v = load_vec(ir.Constant(ir.IntType(64), n - w))
        keep = _last_lanes(w, part)
        pieces.append(b.select(keep, v, ident_v))
    elif part:  # fewer than w elements in all
        v = ident_v
        for j in range(part):
            v = b.insert_element(v, load_one(ir.Constant(ir.IntType(64), j)),
                                 ir.Constant(ir.IntType(32), j))
        pieces.append(v)
    if len(pieces) < ACCUMULATORS:
        untouched = ir.Constant(ident_v.type.element, -0.0) if name == "reduce_sum" else \
            ident_v.constant[0]
        pieces += [splat(ident_v.type, untouched)] * (ACCUMULATORS - len(pieces))
    add_into(_concat(b, pieces))


def _concat(b: ir.IRBuilder, vecs: list[ir.Value]) -> ir.Value:
    """The vectors side by side, as one (pairwise)."""
    while len(vecs) > 1:
        n = vecs[0].type.count
        vecs = [b.shuffle_vector(vecs[k], vecs[k + 1], _lanes(0, 2 * n))
                for k in range(0, len(vecs), 2)]
    return vecs[0]


def _identity(name: str, dtype: np.dtype) -> ir.Constant:
    return const(dtype, {"reduce_sum": 0.0, "reduce_max": -np.inf, "reduce_min": np.inf}[name])


def _fold(b: ir.IRBuilder, name: str, acc: ir.Value, w: int) -> ir.Value:
    """The accumulators (`acc`'s four runs of w lanes) combined pairwise, (0, 1) and (2, 3),
    then the two, then each vector's halves, down to a scalar (for max and min: the first of
    equal values)."""
    def op(x, y):  # (the lanes hold no NaN, and a zero result is recomputed: a plain compare)
        if name == "reduce_sum":
            return b.fadd(x, y)
        return b.select(b.fcmp_ordered(">" if name == "reduce_max" else "<", y, x), y, x)
    # accumulators 0 and 2 beside 1 and 3: one op makes (0 + 1, 2 + 3), halved below
    assert ACCUMULATORS == 4
    even = b.shuffle_vector(acc, acc, _runs(w, (0, 2)))
    odd = b.shuffle_vector(acc, acc, _runs(w, (1, 3)))
    v = op(even, odd)
    width = v.type.count
    while width > 1:
        half = width // 2
        lo = b.shuffle_vector(v, v, _lanes(0, half))
        hi = b.shuffle_vector(v, v, _lanes(half, width))
        v, width = op(lo, hi), half
    return b.extract_element(v, ir.Constant(ir.IntType(32), 0))


@functools.cache
def _runs(w: int, runs: tuple[int, ...]) -> ir.Constant:
    """The shuffle mask picking the given runs of w lanes, side by side."""
    return ir.Constant(ir.VectorType(ir.IntType(32), w * len(runs)),
                       [r * w + j for r in runs for j in range(w)])


@functools.cache
def _lanes(start: int, stop: int) -> ir.Constant:
    """The shuffle mask picking lanes start..stop-1, built once (llvmlite wraps each element of
    a new vector constant, and a program of thousands of reductions folds ~10 halves each)."""
    return ir.Constant(ir.VectorType(ir.IntType(32), stop - start), list(range(start, stop)))


# Vector constants of a reduction, one object per (type, printed element) in the process:
# llvmlite wraps each lane of a new vector constant in a Constant of its own and prints them all
# when the module is printed (the 64 lanes of the accumulators' identity, every reduction); a
# shared one is wrapped and printed once. (Constants have no parent: modules may share them.)
_SPLATS: dict[tuple[int, str], ir.Constant] = {}


def splat(vt: ir.VectorType, value) -> ir.Constant:
    """ir.Constant(vt, [value] * lanes), `value` a Python number or a Constant of the lanes'
    type."""
    element = value if isinstance(value, ir.Constant) else ir.Constant(vt.element, value)
    key = (vt.count, str(element))
    splat = _SPLATS.get(key)
    if splat is None:
        splat = _SPLATS[key] = ir.Constant(vt, [element] * vt.count)
    return splat


@functools.cache
def _last_lanes(w: int, part: int) -> ir.Constant:
    """The i1 mask of w lanes true in its last `part`."""
    return ir.Constant(ir.VectorType(I1, w), [int(j >= w - part) for j in range(w)])
