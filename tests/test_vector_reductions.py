"""Float sums, maxima and minima in explicit vector lanes (backend/llvm/lanes.py) and the row
kernels' reciprocal scaling (compiler/rows.py): sums within the documented reassociation bound of
NumPy's float64 sums, max/min exactly NumPy's (NaN, inf) and JAX's (signed zeros), for every row
length around the lane width, the same bits for 1 and 2 threads, and the reference interpreter's
results. Each case is one program holding many reductions, so the file compiles a few times."""
import re

import numpy as np
import pytest
from llvmlite import ir

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.backend import llvm_setup
from tracejit.backend.llvm import lanes, parallel_loops

# each kind of tail (W = 16 float32 or 8 float64 a vector, 4 vectors a step): fewer than W
# elements, whole vectors, a partial vector, whole steps, and rows cut into 1,024-blocks
LENGTHS = {np.float32: [1, 2, 15, 16, 17, 31, 33, 47, 48, 63, 64, 65, 70, 1000, 1023, 1025,
                        2049],
           np.float64: [1, 7, 8, 9, 23, 24, 31, 32, 33, 40, 70, 1024, 2049]}


def _bound(x: np.ndarray, axis=None) -> np.ndarray:
    """The README's bound for a lane sum, pairwise over blocks: (block / (4 W) + 2 + log2(4 W)
    + log2(blocks)) ε Σ|x|, rounded up: 32 ε Σ|x| for the lengths here."""
    return 32 * np.finfo(x.dtype).eps * np.abs(x).sum(axis=axis, dtype=np.float64)


def _rows(dtype, lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, n)).astype(dtype) for n in lengths]


def _row_reductions(xs):
    return [(tnp.sum(x, axis=1), tnp.max(x, axis=1), tnp.min(x, axis=1)) for x in xs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_reductions_every_tail_length(dtype, x64):
    xs = _rows(dtype, LENGTHS[dtype])
    for x, (s, mx, mn) in zip(xs, tracejit.jit(_row_reductions)(xs)):
        s = np.asarray(s)
        assert s.dtype == dtype
        exact = x.sum(axis=1, dtype=np.float64)
        assert np.all(np.abs(s - exact) <= _bound(x, 1)), x.shape
        np.testing.assert_array_equal(np.asarray(mx), x.max(axis=1))
        np.testing.assert_array_equal(np.asarray(mn), x.min(axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whole_array_sums(dtype, x64):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(n).astype(dtype) for n in (17, 1023, 1025, 3 * 1024 + 7, 70_001)]
    got = tracejit.jit(lambda xs: [(tnp.sum(x), tnp.max(x), tnp.min(x)) for x in xs])(xs)
    for x, (s, mx, mn) in zip(xs, got):
        assert abs(float(s) - x.sum(dtype=np.float64)) <= _bound(x), x.size
        assert float(mx) == x.max() and float(mn) == x.min()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_at_every_alignment(dtype, x64):
    """The lanes load unaligned vectors: where a buffer starts (NumPy arrays are passed to
    native code as they lie) changes no bit of a whole-array or row reduction."""
    n = 3 * 1024 + 37
    rng = np.random.default_rng(7)
    values = rng.standard_normal(n).astype(dtype)
    fn = tracejit.jit(lambda x: (tnp.sum(x), tnp.max(x), tnp.min(x),
                                 tnp.sum(x[:3 * 1020].reshape(3, 1020), axis=1)))
    owner = np.empty(n * values.itemsize + 64, np.uint8)
    results = []
    for offset in range(0, 64, values.itemsize):
        start = (offset - owner.ctypes.data) % 64
        x = owner[start:start + n * values.itemsize].view(dtype)
        assert x.ctypes.data % 64 == offset
        x[:] = values
        results.append([np.asarray(r) for r in fn(x)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)
    assert abs(float(results[0][0]) - values.sum(dtype=np.float64)) <= _bound(values)


def _exp_sums(xs, x3, flat):
    """Sums of values computed in the reduction's loop (exp, fused: never stored): rows at
    every tail length, over two trailing axes, and a whole-array sum over 1,024-blocks."""
    return ([tnp.sum(tnp.exp(x), axis=1) for x in xs], tnp.sum(tnp.exp(x3), axis=(1, 2)),
            tnp.sum(tnp.exp(flat)))


def _stored_sums(es, e3, e_flat):
    return [tnp.sum(e, axis=1) for e in es], tnp.sum(e3, axis=(1, 2)), tnp.sum(e_flat)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_of_computed_values_adds_as_the_values_stored(dtype, x64, monkeypatch):
    """A sum of values a fused producer computes (lane_reduce's `value` form) gives the bits
    of the sum of the same values in memory (lanes), also in code LLVM optimises without its
    vectorisers (a huge function's O1 pipeline): the order is the lanes', not the one LLVM's
    vectoriser chose for a reassociated sum (other bits without the vectorisers, with another
    vector width, or when the values were also an output)."""
    def inputs(rows):
        rng = np.random.default_rng(rows)
        return (_rows(dtype, LENGTHS[dtype], seed=rows)[:-1] + [rng.standard_normal(
                    (rows, 40)).astype(dtype)], rng.standard_normal((rows, 5, 37)).astype(dtype),
                rng.standard_normal(3 * 1024 + 37).astype(dtype))

    def check(args, sums):
        want = tracejit.jit(_stored_sums)(*tracejit.jit(lambda *a: tracejit.tree_util.tree_map(
            tnp.exp, a))(*args))
        for got, ref in zip(tracejit.tree_util.tree_leaves(sums),
                            tracejit.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    args = inputs(3)
    check(args, tracejit.jit(_exp_sums)(*args))
    monkeypatch.setattr(llvm_setup, "HUGE_FUNCTION_LINES", 0)
    args = inputs(2)  # (shapes compiled nowhere else: neither cache has their O3 code)
    check(args, tracejit.jit(lambda *a: _exp_sums(*a))(*args))


def test_lanes_are_emitted():
    """The row sum is the lane loop (16 float32 a vector), not LLVM's own vectorisation."""
    x = np.ones((4, 100), np.float32)
    ir_text = tracejit.jit(lambda x: tnp.sum(x, axis=1)).lower(x).compile().as_text(
        dialect="llvm")
    assert f"<{lanes.LANE_BYTES // 4} x float>" in ir_text and "reassoc" not in ir_text


def test_a_step_of_the_four_accumulators_is_one_vector():
    """The four accumulators are one vector of 4 W lanes: a turn of a row's lanes loop is one
    load and one add (a max: one compare and select) of 4 W lanes, which LLVM splits into the
    four vectors. A long sum's straight-line block keeps its W-lane loads (the order LLVM then
    keeps them in ran faster): a loop of 4 of them a turn that O3 unrolls fully (the first
    tier compiles the loop), so the optimised IR holds the whole block's."""
    x = np.ones((4, 1000), np.float32)
    text = tracejit.jit(lambda x: (tnp.sum(x, axis=1), tnp.max(x, axis=1))).lower(
        x).compile()._executable.program.ir_text
    w = lanes.LANE_BYTES // 4

    def data_loads(text, n):  # (the elements' loads; the accumulators' slots have no align)
        return len(re.findall(rf'load <{n} x float>, <{n} x float>\* %"[^"]+", align 4', text))
    assert data_loads(text, 4 * w) == 2  # (the sum's loop, the max's)
    long = np.ones(1 << 17, np.float32)
    compiled = tracejit.jit(lambda x: tnp.sum(x)).lower(long).compile()
    text = compiled._executable.program.ir_text
    assert data_loads(text, w) >= lanes.ACCUMULATORS and "llvm.loop.unroll.full" in text
    optimised = compiled.as_text(dialect="llvm")
    assert len(re.findall(rf"load <{w} x float>, ptr %[\w.]+, align 4", optimised)) >= 1024 // w


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("flags", ["host", "i1", "lane-wide"])
def test_nan_and_inf_as_numpy(flags, monkeypatch, x64):
    """Sums, maxes and mins with NaNs and infinities where NumPy's, float32 and float64; a
    max's (min's) NaN flags in both forms, whichever the host's: i1 vectors (AVX-512's masks)
    and lane-wide integers (AVX2's compare results)."""
    if flags != "host":
        forced = {"i1": lambda t: ir.IntType(1), "lane-wide": lambda t: ir.IntType(
            64 if isinstance(t, ir.DoubleType) else 32)}[flags]
        monkeypatch.setattr(lanes, "_flag_type", forced)
        probe = np.zeros((2, 1000), np.float32)  # (a loop of 15 steps of 4 W = 64 lanes)
        text = tracejit.jit(lambda x: tnp.max(x, axis=1)).lower(probe).compile().as_text(
            dialect="llvm")
        # (i1: a flag for each of the 4 W lanes; lane-wide: one vector of W, the four ORed)
        assert ("phi <64 x i1>" if flags == "i1" else "phi <16 x i32>") in text, text
    n = 37
    rows = np.zeros((9, n), np.float32) + np.linspace(-1, 1, n, dtype=np.float32)
    rows[0, 0] = np.nan        # first element
    rows[1, 20] = np.nan       # inside the lanes
    rows[2, n - 1] = np.nan    # the masked tail vector
    rows[3, 5] = np.inf
    rows[4, 6] = -np.inf
    rows[5, [3, 30]] = [np.inf, -np.inf]   # sum NaN, max inf, min -inf
    rows[6, :] = np.inf
    rows[7, :] = -np.inf
    rows[8, [0, 36]] = [-np.inf, np.nan]
    wide = np.tile(rows, (1, 30))  # the same rows 1,110 long: lanes, blocks and tails
    for x in (rows, wide, rows.astype(np.float64), wide.astype(np.float64)):
        s, mx, mn = (np.asarray(a) for a in tracejit.jit(
            lambda x: (tnp.sum(x, axis=1), tnp.max(x, axis=1), tnp.min(x, axis=1)))(x))
        np.testing.assert_array_equal(np.isnan(s), np.isnan(x.sum(axis=1)))
        finite = ~np.isnan(s)
        np.testing.assert_array_equal(s[np.isinf(s)], x.sum(axis=1)[np.isinf(s)])
        assert np.all(np.isinf(x.sum(axis=1)[finite]) == np.isinf(s[finite]))
        np.testing.assert_array_equal(mx, x.max(axis=1))
        np.testing.assert_array_equal(mn, x.min(axis=1))


def test_signed_zeros_as_jax():
    """JAX: a sum of zeros is +0, max prefers +0, min prefers -0, wherever they sit."""
    n = 70
    z = np.full((4, n), -0.0, np.float32)
    z[1, 33] = 0.0
    z[2, :] = 0.0
    z[3, 1::2] = 0.0
    first = z.copy()
    first[:, 1:] = -1.0  # the same zeros, now only at element 0, the row's max
    z = np.concatenate([z, first], axis=0)
    s, mx, mn = (np.asarray(a) for a in tracejit.jit(
        lambda x: (tnp.sum(x, axis=1), tnp.max(x, axis=1), tnp.min(x, axis=1)))(z))
    np.testing.assert_array_equal(np.signbit(s[:4]), [False] * 4)
    np.testing.assert_array_equal(np.signbit(mx), [True, False, False, False,
                                                   True, True, False, True])
    np.testing.assert_array_equal(np.signbit(mn[:4]), [True, True, False, True])
    np.testing.assert_array_equal(mx, z.max(axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zeros_every_length(dtype, x64):
    """A row whose max (min) is zero is recomputed exactly (lanes._exact: whole vectors, then
    the rest one by one): +0 (-0) wins wherever it sits, before, in or after the last whole
    vector, for rows shorter than a vector too (NumPy's max, and XLA's, may give -0 there)."""
    for n in (1, 3, 8, 16, 17, 70, 1000, 1024, 4099):
        spots = sorted({0, n // 2, n - 1, max(0, n - 3), (n // 16) * 16 % n})
        rows = [np.full(n, -0.0, dtype), np.zeros(n, dtype)]
        for k in spots:
            row = np.full(n, -0.0, dtype)
            row[k] = 0.0
            rows.append(row)
            lone = np.full(n, -1.0, dtype)  # the zero the row's only maximum
            lone[k] = 0.0
            rows.append(lone)
        x = np.stack(rows)
        mx, mn = (np.asarray(a) for a in tracejit.jit(
            lambda x: (tnp.max(x, axis=1), tnp.min(x, axis=1)))(x))
        any_pos = (x == 0) & ~np.signbit(x)
        any_neg = (x == 0) & np.signbit(x)
        np.testing.assert_array_equal(mx, 0.0)
        np.testing.assert_array_equal(np.signbit(mx), ~any_pos.any(axis=1), err_msg=str(n))
        low = x.min(axis=1)
        np.testing.assert_array_equal(mn, low)
        zero_min = low == 0
        np.testing.assert_array_equal(np.signbit(mn[zero_min]), any_neg.any(axis=1)[zero_min],
                                      err_msg=str(n))


def test_empty_rows_and_integers_exact():
    e = np.zeros((3, 0), np.float32)
    s, mx, mn = tracejit.jit(lambda e: (tnp.sum(e, axis=1), lax.reduce_max(e, (1,)),
                                        lax.reduce_min(e, (1,))))(e)
    np.testing.assert_array_equal(np.asarray(s), [0, 0, 0])
    np.testing.assert_array_equal(np.asarray(mx), [-np.inf] * 3)
    np.testing.assert_array_equal(np.asarray(mn), [np.inf] * 3)
    rng = np.random.default_rng(2)
    for dtype in (np.int32, np.int64, np.uint8):
        x = rng.integers(0, 100, (5, 1025)).astype(dtype)
        got = tracejit.jit(lambda x: (tnp.sum(x, axis=1), tnp.max(x, axis=1),
                                      tnp.min(x, axis=1), tnp.sum(x)))(x)
        want = (x.sum(axis=1), x.max(axis=1), x.min(axis=1), x.sum())
        for g, w in zip(got, want):  # (uint8 sums to uint32, as in JAX)
            g = np.asarray(g)
            np.testing.assert_array_equal(g, w.astype(g.dtype))


def test_reference_interpreter_agrees():
    xs = _rows(np.float32, [1, 33, 70, 1025], seed=3)
    native = tracejit.jit(_row_reductions)(xs)
    ref = tracejit.jit(_row_reductions, backend="interpret")(xs)
    for x, a, r in zip(xs, native, ref):
        assert np.all(np.abs(np.asarray(a[0]) - np.asarray(r[0])) <= _bound(x, 1))
        for k in (1, 2):
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(r[k]))


def _softmax(x):
    e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
    return e / tnp.sum(e, axis=-1, keepdims=True)


def test_softmax_scales_by_reciprocal():
    """The row kernel multiplies by 1/sum (as XLA does), in the output row: within 8 ulp of
    NumPy's float64 (the reference's division is 6 ulp off it here: float32 exp and x - max)."""
    x = np.random.default_rng(4).standard_normal((6, 1025)).astype(np.float32)
    f = tracejit.jit(_softmax)
    compiled = f.lower(x).compile()
    assert "row_map" in compiled.as_text() and "div 1.0" in compiled.as_text()
    # the exp is written into the output row and scaled there: no row temporary
    assert compiled.memory_analysis().temp_size_in_bytes == 0
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    got = np.asarray(f(x))
    assert np.all(np.abs(got - want) <= 8 * np.spacing(want.astype(np.float32)))
    ref = np.asarray(tracejit.jit(_softmax, backend="interpret")(x))
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_same_bits_for_one_and_two_threads(threads):
    """Sizes just past the parallel threshold: rows and a whole-array sum cut into chunks."""
    n0 = parallel_loops.PARALLEL_MIN_ELEMENTS
    rng = np.random.default_rng(5)
    x_rows = rng.standard_normal((n0 // 1025 + 3, 1025)).astype(np.float32)
    x_flat = rng.standard_normal(n0 + 17).astype(np.float32)
    fn = tracejit.jit(lambda a, b: (tnp.sum(a, axis=1), tnp.max(a, axis=1), _softmax(a),
                                    tnp.sum(b), tnp.max(b)))
    results = []
    for k in (1, 2):
        threads(k)
        results.append([np.asarray(r) for r in fn(x_rows, x_flat)])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
    assert abs(float(results[0][3]) - x_flat.sum(dtype=np.float64)) <= 64 * _bound(x_flat) / 32


def _lanes_model(x: np.ndarray) -> np.ndarray:
    """lanes.lane_reduce's sum of a run in NumPy, in its documented order: vector j (W
    elements) into accumulator j % 4, the last partial vector as the W ending the run with the
    lanes counted before zeroed, then (0 + 1) + (2 + 3) and each vector's halves."""
    w = 64 // x.itemsize
    accs = [np.zeros(w, x.dtype) for _ in range(4)]
    vectors, part = divmod(x.size, w)
    for j in range(vectors):
        accs[j % 4] = accs[j % 4] + x[j * w:(j + 1) * w]
    if part and x.size >= w:
        accs[vectors % 4] = accs[vectors % 4] + np.where(np.arange(w) >= w - part, x[-w:], 0)
    elif part:
        accs[0] = accs[0] + np.concatenate([x, np.zeros(w - part, x.dtype)])
    v = (accs[0] + accs[1]) + (accs[2] + accs[3])
    while v.size > 1:
        v = v[:v.size // 2] + v[v.size // 2:]
    return v[0]


def _blocks_model(x: np.ndarray) -> np.ndarray:
    """A serial long sum in NumPy: its 1,024-element blocks each _lanes_model, then combined as
    the binary counter combines them (level k holds 2^k blocks; a level meeting the carry adds
    the later to the earlier), the levels left over from the smallest up."""
    levels: dict[int, np.ndarray] = {}
    for start in range(0, x.size, 1024):
        carry, k = _lanes_model(x[start:start + 1024]), 0
        while k in levels:
            carry, k = levels.pop(k) + carry, k + 1
        levels[k] = carry
    total = None
    for k in sorted(levels):
        total = levels[k] if total is None else total + levels[k]
    return total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_sums_add_in_the_documented_order(dtype, x64):
    """A serial sum of 1,024-element blocks, bit for bit against a NumPy model of the order:
    whole blocks as a loop and, from reductions.UNROLL_MIN_ELEMENTS a call, in straight-line
    code (lanes._unrolled_sum), and a shorter last block (a loop and a tail) of every kind."""
    from tracejit.backend.llvm import reductions
    rng = np.random.default_rng(11)
    big = reductions.UNROLL_MIN_ELEMENTS
    assert big + 2048 < parallel_loops.PARALLEL_MIN_ELEMENTS  # (serial: one counter)
    sizes = [1024, 2048, 3072, 1024 + 1, 1024 + 7, 1024 + 64, 1024 + 70, 2048 + 100,
             2048 + 1023, big - 1, big, big + 1, big + 70, big + 2048 + 1023]
    xs = [(rng.standard_normal(n) * 100).astype(dtype) for n in sizes]
    fn = tracejit.jit(lambda x: tnp.sum(x))
    for x in xs:
        got = np.asarray(fn(x))
        assert got.dtype == dtype
        assert got.tobytes() == np.asarray(_blocks_model(x), dtype).tobytes(), x.size


def _arg_values(shape, dtype, rng) -> np.ndarray:
    """Ties (few distinct values), and for floats NaNs, signed zeros and infinities."""
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 9, shape).astype(dtype)
    x = np.round(rng.standard_normal(shape), 1)
    flat = x.reshape(-1)
    flat[::37], flat[::13], flat[::29] = np.nan, -0.0, 0.0
    flat[::41], flat[::43] = -np.inf, np.inf
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8,
                                   np.int8, np.uint32, np.float16], ids=str)
def test_argmax_argmin_of_rows_in_memory(dtype, x64):
    """argmax/argmin of rows in memory (a row's max in lanes, then the first place holding it),
    of a whole array flattened (a fused reshape of one), of computed values and columns (copied
    into a row first), and of rows on the thread pool, as the reference interpreter gives
    them; rows without a NaN in floats too. Every length around the lane width."""
    rng = np.random.default_rng(3)
    fns = [lambda a: tnp.argmax(a, axis=-1), lambda a: tnp.argmin(a, axis=-1),
           lambda a: tnp.argmax(a), lambda a: tnp.argmin(a),
           # computed values and columns: each row copied into a temporary row first
           lambda a: tnp.argmax(a * 2, axis=-1), lambda a: tnp.argmin(a, axis=0),
           lambda a: tnp.argmax(a - 1)]
    shapes = [(3, n) for n in (1, 2, 15, 16, 17, 63, 65, 1000)] + [(300, 600), (1, 5, 300)]
    for shape in shapes:
        x = _arg_values(shape, dtype, rng)
        for y in (x, np.nan_to_num(x) if x.dtype.kind == "f" else x[::-1]):
            for f in fns:
                native = tracejit.jit(f)(y)
                reference = tracejit.jit(f, backend="interpret")(y)
                np.testing.assert_array_equal(np.asarray(native), np.asarray(reference))
                assert np.asarray(native).dtype == np.asarray(reference).dtype
    x = _arg_values((300, 600), dtype, rng)
    text = tracejit.jit(fns[0]).lower(x).compile().as_text("llvm")
    # on the pool, with no serial loop of compares (its blocks: r.*) but for float16's rows
    assert "@chunks" in text
    assert bool(re.search(r"\br\.body", text)) == (dtype == np.float16)
    fused = tracejit.jit(lambda a: tnp.argmax(a * 2, axis=-1)).lower(x).compile().as_text("llvm")
    assert bool(re.search(r"\br\.body", fused)) == (dtype == np.float16)
