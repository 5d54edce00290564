"""The native (LLVM) backend against the reference interpreter: same values, bit for bit where
the operation is exact, on elementwise chains, reductions, shape ops, dots and control flow."""
import functools
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

RNG = np.random.default_rng(0)


def _both(f, *args):
    native = tracejit.jit(f, backend="native")(*args)
    ref = tracejit.jit(f, backend="interpret")(*args)
    return native, ref


def _assert_same(native, ref, rtol=0.0):
    n_leaves = tracejit.tree_util.tree_leaves(native)
    r_leaves = tracejit.tree_util.tree_leaves(ref)
    assert len(n_leaves) == len(r_leaves)
    for a, b in zip(n_leaves, r_leaves):
        assert a.dtype == b.dtype and a.shape == b.shape
        if rtol:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol)
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    if x.size >= 4:
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x


EXACT_BINARY = ["add", "sub", "mul", "max", "min", "eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("op", EXACT_BINARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.int8])
def test_exact_binary_ops(op, dtype):
    x, y = _data((3, 7), dtype), _data((3, 7), dtype)
    _assert_same(*_both(getattr(lax, op), x, y))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint32])
def test_integer_division_semantics(dtype):
    info = np.iinfo(dtype)
    x = np.array([7, -7 if info.min else 9, 5, info.min, 0, info.max, 3], dtype=dtype)
    y = np.array([0, 2, -2, -1, 0, 1, 3], dtype=dtype) if dtype != np.uint32 else \
        np.array([0, 2, 2, 1, 0, 1, 3], dtype=dtype)
    _assert_same(*_both(lambda a, b: (lax.div(a, b), lax.rem(a, b)), x, y))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_shifts_out_of_range(dtype):
    x = np.array([1, 5, 100, 7, 3], dtype=dtype)
    s = np.array([0, 1, 7, 40, 255], dtype=dtype) if dtype == np.uint8 else \
        np.array([0, 1, 31, 32, -1], dtype=dtype)
    _assert_same(*_both(lambda a, b: (lax.shift_left(a, b), lax.shift_right_logical(a, b),
                                      lax.shift_right_arithmetic(a, b)), x, s))


@pytest.mark.parametrize("src", [np.float32, np.float16, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("dst", [np.float32, np.int32, np.uint8, np.int8, np.bool_, np.float16])
def test_convert_element_type(src, dst):
    x = _data((17,), src)
    if src == np.float32:
        x[4:8] = [1e10, -1e10, 300.7, -3.5]
    _assert_same(*_both(lambda a: lax.convert_element_type(a, dst), x))



def _half_edge_cases(dtype) -> np.ndarray:
    """Ties, overflow to inf, subnormal halves, NaN and random bit patterns, in `dtype`."""
    edges = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0,
             2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -24 * 1.5, 2.0 ** -24 * 2.5, 6.1e-5,
             1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11]
    scaled = RNG.standard_normal(20000) * np.exp(RNG.uniform(-40, 15, 20000))
    width = np.dtype(dtype).itemsize * 8
    bits = RNG.integers(0, 2 ** (width - 1), 20000, dtype=f"int{width}").view(dtype)
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(edges + list(scaled), dtype), bits])


@pytest.mark.parametrize("src", [np.float64, np.float32])
def test_rounding_to_float16_is_correct_everywhere(x64, src):
    """x86 has no double -> half instruction: LLVM calls __truncdfhf2, which the JIT binds to
    backend/llvm/support.py's routine (unbound, the call jumped to address 0)."""
    x = _half_edge_cases(src)
    got = np.asarray(tracejit.jit(lambda a: lax.convert_element_type(a, np.float16))(x))
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))
    back = np.asarray(tracejit.jit(lambda a: lax.convert_element_type(a, src))(want))
    np.testing.assert_array_equal(back[~nan], want[~nan].astype(src))

def test_unary_exact_ops():
    x = _data((4, 5), np.float32)
    _assert_same(*_both(lambda a: (lax.neg(a), lax.abs(a), lax.sign(a), lax.floor(a),
                                   lax.ceil(a), lax.round(a), lax.round(a, 1), lax.is_finite(a),
                                   lax.sqrt(lax.abs(a)), lax.integer_pow(a, 3),
                                   lax.integer_pow(a, -2), lax.square(a)), x))
    i = _data((9,), np.int32)
    _assert_same(*_both(lambda a: (lax.neg(a), lax.abs(a), lax.sign(a), lax.population_count(a),
                                   lax.clz(a), lax.bitwise_not(a)), i))


def test_select_clamp_nextafter():
    x, y = _data((6,), np.float32), _data((6,), np.float32)
    p = np.array([True, False, True, True, False, False])
    w = np.array([0, 1, 2, 5, -1, 1], np.int32)
    _assert_same(*_both(lambda p, w, x, y: (lax.select(p, x, y), lax.select_n(w, x, y, x * 2),
                                            lax.clamp(-1.0, x, 2.0), lax.nextafter(x, y)),
                        p, w, x, y))


@pytest.mark.parametrize("shape,axes", [((5, 7), (1,)), ((5, 7), (0,)), ((5, 7), (0, 1)),
                                        ((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)), ((0, 3), (0,)),
                                        ((4,), (0,))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reductions(shape, axes, dtype):
    x = _data(shape, dtype)
    if dtype == np.float32:
        x = np.nan_to_num(x, nan=0.5, posinf=2.0, neginf=-2.0)

    def f(a):
        return (lax.reduce_sum(a, axes), lax.reduce_max(a, axes), lax.reduce_min(a, axes),
                lax.reduce_prod(a, axes))
    native, ref = _both(f, x)
    _assert_same(native, ref, rtol=1e-5 if dtype == np.float32 else 0.0)


def test_reductions_propagate_nan_and_argmax_ties():
    x = np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, -np.inf, 0.0]], np.float32)
    _assert_same(*_both(lambda a: (lax.reduce_max(a, (1,)), lax.reduce_min(a, (0,)),
                                   lax.argmax(a, 1, np.int32), lax.argmin(a, 1, np.int32),
                                   lax.reduce_sum(a, (1,))), x))
    b = np.array([[True, False], [False, False]])
    _assert_same(*_both(lambda a: (lax.reduce_and(a, (1,)), lax.reduce_or(a, (1,)),
                                   lax.reduce_xor(a, (0,))), b))


def test_fused_elementwise_chain_with_broadcasts_and_shape_ops():
    x = _data((4, 6), np.float32)
    v = _data((6,), np.float32)

    def f(a, b, contracted=False):
        t = lax.broadcast_in_dim(b, (4, 6), (1,))
        # native rounds a * t + 1 once, as one fma (XLA's contraction: tests/test_fp_contraction)
        y = lax.transpose(lax.fma(a, t, 1.0) if contracted else a * t + 1.0, (1, 0))
        z = lax.rev(lax.reshape(y, (3, 8)), (0,))
        s = lax.slice(z, (0, 1), (3, 8), (1, 2))
        c = lax.concatenate([s, s * 2.0], 1)
        p = lax.pad(c, 0.5, ((1, 0, 0), (0, 2, 1)))
        return p, lax.iota(np.int32, 5) * 3, lax.squeeze(lax.reshape(a, (1, 24)), (0,))
    ref = tracejit.jit(functools.partial(f, contracted=True), backend="interpret")(x, v)
    _assert_same(tracejit.jit(f, backend="native")(x, v), ref)


def test_softmax_matches_reference():
    x = _data((8, 33), np.float32)
    x = np.nan_to_num(x)

    def softmax(a):
        m = lax.reduce_max(a, (1,))
        e = lax.exp(a - lax.broadcast_in_dim(m, a.shape, (0,)))
        return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), a.shape, (0,))
    native, ref = _both(softmax, x)
    _assert_same(native, ref, rtol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
@pytest.mark.parametrize("case", [
    ((64, 48), (48, 40), (((1,), (0,)), ((), ()))),
    ((48, 64), (48, 40), (((0,), (0,)), ((), ()))),
    ((64, 48), (40, 48), (((1,), (1,)), ((), ()))),
    ((3, 64, 48), (3, 48, 40), (((2,), (1,)), ((0,), (0,)))),
    ((3, 5), (5, 2), (((1,), (0,)), ((), ()))),
    ((5,), (5,), (((0,), (0,)), ((), ()))),
])
def test_dot_general(case, dtype):
    ls, rs, dn = case
    x, y = np.nan_to_num(_data(ls, dtype)), np.nan_to_num(_data(rs, dtype))
    if np.dtype(dtype).kind == "f":
        x = np.clip(x, -4, 4).astype(dtype)
        y = np.clip(y, -4, 4).astype(dtype)
    with tracejit.enable_x64(dtype == np.float64):
        native, ref = _both(lambda a, b: lax.dot_general(a, b, dn), x, y)
    tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}.get(dtype, 0.0)
    np.testing.assert_allclose(np.asarray(native, np.float64), np.asarray(ref, np.float64),
                               rtol=tol, atol=tol)
    assert native.dtype == ref.dtype


def test_control_flow_runs_natively():
    def scan_fn(c):
        return lax.scan(lambda c, x: (c * 0.5 + x, c * 2.0), c, np.arange(5, dtype=np.float32))

    def while_fn(x):
        return lax.while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 1, s[1] * 1.5), (0, x))

    def cond_fn(p, x):
        return lax.cond(p > 0, lambda x: x + 1.0, lambda x: x * 2.0, x)

    _assert_same(*_both(scan_fn, np.float32(1.0)))
    _assert_same(*_both(while_fn, np.ones(3, np.float32)))
    for p in (np.int32(1), np.int32(-1)):
        _assert_same(*_both(cond_fn, p, np.ones(3, np.float32)))


def test_nested_jit_and_closure_constants():
    c = np.arange(6, dtype=np.float32)
    inner = tracejit.jit(lambda x: x * c)

    def f(x):
        return lax.scan(lambda carry, _: (inner(carry) + 1.0, carry), x, None, length=3)
    _assert_same(*_both(f, np.ones(6, np.float32)))


def test_python_scalar_arguments_beside_arrays_and_numpy_values():
    """Python floats, ints and bools among the arguments (converted per call to their avals'
    dtypes: a fresh array each, whose address is taken from its buffer), as values that vary
    between calls of one compiled signature, beside Arrays, NumPy arrays and NumPy scalars."""
    def f(a, x, n, flag, v, s):
        return tracejit.numpy.where(flag, a * x + n, a - x) + v * s
    a = tracejit.numpy.arange(4.0)
    g = tracejit.jit(f)
    for x, n, flag in ((0.1, 3, True), (-2.5, -7, False), (1e30, 2**31 - 1, True)):
        args = (a, x, n, flag, np.full(4, 0.5, np.float32), np.float32(3))
        got = g(*args)
        _assert_same(got, tracejit.jit(f, backend="interpret")(*args))
        assert got.dtype == np.float32
    assert g._cache_size() == 1


def test_native_as_text_shows_kernels_and_llvm():
    f = tracejit.jit(lambda x: lax.exp(x * 2.0) + 1.0, backend="native")
    compiled = f.lower(np.ones(8, np.float32)).compile()
    text = compiled.as_text()
    assert "kernel 0: mul -> exp -> add" in text
    assert " = fused[" in text  # the kernel is an equation of the printed jaxpr
    assert "define" in compiled.as_text(dialect="llvm")
    assert compiled.as_text(dialect="asm").strip()


def test_unsupported_primitive_raises_at_compile_time_naming_it(monkeypatch):
    from tracejit.backend.llvm.codegen import NativeCompileError
    from tracejit.core import primitive

    monkeypatch.setattr(primitive, "registry", dict(primitive.registry))
    mystery_p = primitive.Primitive("mystery_op")
    mystery_p.def_abstract_eval(lambda x: x)
    mystery_p.def_impl(lambda x: x)
    f = tracejit.jit(lambda x: mystery_p.bind(x) + 1.0, backend="native")
    with pytest.raises(NativeCompileError, match="mystery_op"):
        f(np.ones(3, np.float32))
    np.testing.assert_array_equal(
        np.asarray(tracejit.jit(lambda x: mystery_p.bind(x) + 1.0, backend="interpret")(
            np.ones(3, np.float32))), 2 * np.ones(3))


def test_elementwise_chain_is_one_kernel_without_temporaries():
    def chain(x):
        return lax.tanh(x) * 0.5 + lax.exp(-x * x) * lax.sin(3.0 * x) - 1.0
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    compiled = tracejit.jit(chain, backend="native").lower(x).compile()
    text = compiled.as_text()
    assert text.count("// kernel") == 1
    assert compiled.memory_analysis().temp_size_in_bytes == 0
    np.testing.assert_allclose(np.asarray(compiled(x)),
                               np.asarray(tracejit.jit(chain, backend="interpret")(x)),
                               rtol=1e-5, atol=1e-6)



_RSS_PROBE = """
import resource, sys
import numpy as np
import tracejit
from tracejit import lax

def chain(x):
    return lax.tanh(x) * 0.5 + lax.exp(-x * x) * lax.sin(3.0 * x) - 1.0

x = tracejit.numpy.asarray(np.linspace(-3, 3, 10_000_000, dtype=np.float32))
compiled = tracejit.jit(chain, backend="native").lower(x).compile()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = compiled(x).block_until_ready()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024, compiled.memory_analysis().temp_size_in_bytes)
"""


def test_elementwise_chain_peak_memory_is_its_output():
    """Over 10M float32 the fused chain allocates its 40 MB output and nothing else: the peak
    RSS of a fresh process grows by about the output (unfused, each of the ~8 intermediates
    would add 40 MB)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _RSS_PROBE], capture_output=True, text=True,
                          check=True)
    growth, temp = (int(v) for v in done.stdout.split())
    out_bytes = 10_000_000 * 4
    assert temp == 0
    assert growth <= out_bytes + 8 * 2 ** 20, growth

def test_loop_bodies_make_no_calls_back_into_python():
    def f(x):
        def body(c, _):
            return lax.cos(c * 0.9) + lax.reduce_sum(c, (0,)) * 0.0, None
        return lax.scan(body, x, None, length=50)[0]
    llvm_ir = tracejit.jit(f, backend="native").lower(
        np.ones(4, np.float32)).compile().as_text(dialect="llvm")
    calls = [line for line in llvm_ir.splitlines() if " call " in line]
    # only intrinsics, cos's native slow path for huge arguments (the scalar routine or its
    # vector variants) and the module's own function for |x| >= 0.78 (math._far_trig): no
    # callbacks, no libm
    assert all("@llvm." in c or re.search(r"@tracejit_cos_big_f32(_[mn]\d+)?\(", c)
               or "@tracejit.cos.far.f32(" in c for c in calls), calls


def test_temporaries_share_workspace_by_liveness():
    def f(x):
        a = lax.reduce_sum(lax.exp(x), (1,))      # temporaries of shape (64,)
        b = lax.reduce_max(lax.sin(x), (1,))
        c = lax.reduce_min(lax.cos(x), (1,))
        return lax.sort(a) + lax.sort(b) + lax.sort(c)
    x = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    compiled = tracejit.jit(f, backend="native").lower(x).compile()
    _assert_same(compiled(x), tracejit.jit(f, backend="interpret")(x), rtol=1e-6)
    # a, b, c and the sorted copies (6 x 256 bytes) plus one sort's radix buffers at a time (keys
    # and positions twice, 4 x 256 bytes, and a count per byte value and pass, 4 x 1,024);
    # without reuse the three sorts would need three times those
    row, sort = 64 * 4, 4 * 64 * 4 + 4 * 256 * 4
    assert compiled.memory_analysis().temp_size_in_bytes <= 6 * row + sort


def test_dynamic_update_slice_in_scan_updates_in_place():
    def f(buf):
        def body(b, i):
            return lax.dynamic_update_slice(b * 1.0, lax.broadcast(i * 1.0, (1,)), (i,)), None
        return lax.scan(body, buf, np.arange(16, dtype=np.float32).astype(np.int32))[0]
    x = np.zeros(16, np.float32)
    _assert_same(*_both(f, x))


@pytest.mark.parametrize("shape,perm", [((31, 33), (1, 0)), ((32, 48), (1, 0)),
                                        ((33, 47), (1, 0)), ((2, 40, 35), (0, 2, 1)),
                                        ((3, 34, 32), (2, 0, 1)), ((520, 515), (1, 0))])
def test_fused_transposes_in_tiles(shape, perm):
    """A fused kernel reading through a transpose runs its last two axes in tiles (codegen's
    tiled_nest): sizes around the tile, ragged edges, batch axes, and one large enough for
    the thread pool, exact against NumPy and the interpreter."""
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.standard_normal(tuple(shape[p] for p in perm)).astype(np.float32)
    f = lambda x, y: lax.transpose(x, perm) * 2.0 + y  # noqa: E731
    native, ref = _both(f, x, y)
    _assert_same(native, ref)
    np.testing.assert_array_equal(np.asarray(native), np.transpose(x, perm) * 2.0 + y)



@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32],
                         ids=lambda d: np.dtype(d).name)
def test_integer_products_wrap_as_the_reference(dtype):
    """Integer products accumulate a row at a time in the output (linalg._integer_dot): the
    reference's values, wrapped, for operands spanning the dtype's whole range, in each layout
    (transposed operands, batches, a vector operand, an empty contraction)."""
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (37, 53), dtype=dtype, endpoint=True)
    c = rng.integers(info.min, info.max, (53, 29), dtype=dtype, endpoint=True)
    batch = rng.integers(info.min, info.max, (4, 6, 6), dtype=dtype, endpoint=True)
    cases = [(lambda x, y: x @ y, a, c), (lambda x, y: x.T @ y.T, c, a),
             (lambda x: tnp.einsum("bij,bjk->bik", x, x), batch),
             (lambda x, y: x[0] @ y, a, c), (lambda x, y: x @ y[:, 0], a, c),
             (lambda x, y: tnp.einsum("ij,kj->ik", x, y), a, np.ascontiguousarray(c.T)),
             (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))), a[:, :0], c[:0])]
    if np.dtype(dtype).itemsize < 4:
        cases.append((lambda x, y: tnp.dot(x, y, preferred_element_type=np.int32), a, c))
    for f, *args in cases:
        _assert_same(*_both(f, *args))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.float16,
                                   np.complex64], ids=lambda d: np.dtype(d).name)
def test_scatter_runs_of_one_index_as_the_reference(dtype):
    """Element scatters that combine keep a run of updates to one element in a register
    (indexing.py): the reference's bits for sorted indices (long runs), unsorted ones, indices
    out of bounds between a run's updates (dropped or clipped), NaNs and every combine."""
    rng = np.random.default_rng(9)
    kind = np.dtype(dtype).kind
    for sort in (True, False):
        idx = rng.integers(-3, 40, 300).astype(np.int32)
        idx = np.sort(idx) if sort else idx
        upd = (rng.standard_normal(300) * 5).astype(dtype) if kind in "fc" else \
            rng.integers(0, 9, 300).astype(dtype)
        if kind == "f":
            upd[[7, 150, 151]] = np.nan
        base = np.ones(37, dtype)
        for method in ("add", "multiply", "min", "max", "set"):
            if kind == "c" and method in ("min", "max"):
                continue
            for mode in (None, "clip", "drop"):
                _assert_same(*_both(lambda b, i, u, method=method, mode=mode: getattr(
                    b.at[i], method)(u, mode=mode), base, idx, upd))
    # into a rank-0 operand (no element index: no runs)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(),
                                     scatter_dims_to_operand_dims=())
    _assert_same(*_both(lambda x, u: lax.scatter_add(x, np.zeros((3, 0), np.int32), u, dn),
                        base[0], upd[:3]))
    if kind != "c":
        seg = np.sort(rng.integers(0, 37, 300)).astype(np.int32)
        _assert_same(*_both(lambda u, s: tracejit.ops.segment_max(u, s, num_segments=37),
                            upd, seg))
