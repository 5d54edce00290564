"""Row fusion (compiler.rows -> codegen's row_map): softmax, log_softmax and standardize compile
to one row kernel that keeps no full-size temporary and reads its input row at most twice; the
values agree with the reference interpreter, and regions that are not row-shaped (axis=0,
1-D, a value fed back through another op) still compute the right thing."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.compiler import passes, rows
from tracejit.core.interpret import eval_jaxpr
from tracejit.core.jaxpr import check_jaxpr
from tracejit.runtime.jit import make_jaxpr

F32 = np.float32
EPS = float(np.finfo(F32).eps)
RNG = np.random.default_rng(0)

# Tolerances against the interpreter (NumPy): our exp is within 1 ulp of NumPy's; a row sum
# is reassociated (vector partial sums) and measured up to 3 ulp from NumPy's pairwise sum over
# 1000 terms; softmax divides one by the other (7 ulp measured at spacing(|want|)). log_softmax
# and standardize subtract nearly equal terms, so their error is bounded relative to the row's
# largest value (1 and 3 ulp measured), not to each element.
SOFTMAX_RTOL = 16 * EPS
ROW_ATOL = 8 * EPS


def _hand_softmax(x):
    e = jnp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _hand_softmax_no_keepdims(x):
    e = jnp.exp(x - jnp.expand_dims(x.max(-1), -1))
    return e / e.sum(-1)[..., None]


def _stable_standardize(x):
    d = x - x.mean(-1, keepdims=True)
    return d / jnp.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)


ROW_PROGRAMS = [
    ("softmax", tracejit.nn.softmax, SOFTMAX_RTOL, 0.0),
    ("hand_softmax", _hand_softmax, SOFTMAX_RTOL, 0.0),
    ("hand_softmax_no_keepdims", _hand_softmax_no_keepdims, SOFTMAX_RTOL, 0.0),
    ("log_softmax", tracejit.nn.log_softmax, 0.0, ROW_ATOL),
    ("standardize", tracejit.nn.standardize, 0.0, ROW_ATOL),
    ("stable_standardize", _stable_standardize, 0.0, ROW_ATOL),
]
# programs dividing a row by a per-row value, which the row pass turns into a multiplication
_DIVIDES_BY_ROW_VALUE = {"softmax", "hand_softmax", "hand_softmax_no_keepdims",
                         "stable_standardize"}
# loops over the input row in the row body: a reduction, then the rest; JAX's default
# standardize takes mean(x) and mean(x^2) in two loops (the row is in cache by the second)
ROW_LOOPS = {"standardize": 3}


def _data(shape):
    return (RNG.standard_normal(shape) * 3).astype(F32)


def _assert_close(got, want, rtol: float, row_atol: float):
    """Same NaN/inf pattern; |got - want| <= rtol |want| + row_atol max|want| over its row."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    if want.ndim == 0:
        want, got, finite = want[None], got[None], finite[None]
    rowmax = np.max(np.where(finite, np.abs(want), 0), axis=-1, keepdims=True)
    bound = rtol * np.abs(want[finite]) + np.broadcast_to(row_atol * rowmax, want.shape)[finite]
    err = np.abs(got[finite].astype(np.float64) - want[finite])
    assert np.all(err <= bound), float(np.max(err - bound))


def _both(f, *args):
    return (tracejit.jit(f, backend="native")(*args), tracejit.jit(f, backend="interpret")(*args))


def _compiled(f, *args):
    return tracejit.jit(f, backend="native").lower(*args).compile()


def _row_maps(jaxpr):
    return [e for e in jaxpr.eqns if e.primitive.name == "row_map"]


def _kernel_roots(jaxpr):
    """Top-level primitive names, a `fused` kernel named by its root (its body's last eqn)."""
    return [e.params["body"].jaxpr.eqns[-1].primitive.name if e.primitive.name == "fused"
            else e.primitive.name for e in jaxpr.eqns]


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
def test_row_kernel_structure_and_values(name, f, rtol, row_atol):
    x = _data((64, 1000))
    compiled = _compiled(f, x)
    executable = compiled._executable
    # the whole program is one row kernel over the 64 rows
    (row_eqn,) = executable.jaxpr.eqns
    assert row_eqn.primitive.name == "row_map" and row_eqn.params["rows"] == (64,)
    body = row_eqn.params["body"].jaxpr
    # no full-size temporary: the workspace holds at most one row (plus alignment)
    assert compiled.memory_analysis().temp_size_in_bytes <= 1000 * 4 + 64
    # the body reads the input row in two loops (max/mean, then the rest): two of its kernels
    # (fused equations or lone ops) take it as an operand
    row_in = body.invars[0]
    loops = [e for e in body.eqns if any(v is row_in for v in e.invars)]
    assert len(loops) == ROW_LOOPS.get(name, 2), _kernel_roots(body)
    text = compiled.as_text()
    assert "row_map" in text and "// kernel 0: row_map -> reduce_" in text
    _assert_close(*_both(f, x), rtol, row_atol)


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
@pytest.mark.parametrize("shape", [(3, 17), (5,), (1, 20), (2, 3, 16), (3, 5), (2, 3, 15)])
def test_small_and_batched_shapes(name, f, rtol, row_atol, shape):
    """Rows of MIN_ROW_ELEMENTS or more are a row region; one row, or shorter rows (an n-body
    step's rows of 3), are left to plain fusion."""
    x = _data(shape)
    _assert_close(*_both(f, x), rtol, row_atol)
    row_maps = _row_maps(_compiled(f, x)._executable.jaxpr)
    if len(shape) == 1 or shape[-1] < rows.MIN_ROW_ELEMENTS:
        assert not row_maps
    else:
        assert [e.params["rows"] for e in row_maps] == [shape[:-1]]


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
def test_nan_and_inf_rows(name, f, rtol, row_atol):
    x = _data((8, 19))
    x[1, 3] = np.nan
    x[2, 0] = np.inf
    x[3, :] = -np.inf
    x[4, 2] = -np.inf
    x[5, :] = np.inf
    x[6, 1], x[6, 5] = np.inf, -np.inf
    x[7, :] = 0.0
    _assert_close(*_both(f, x), rtol, row_atol)


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
def test_wide_rows_call_outlined_kernels(name, f, rtol, row_atol):
    """Rows of >= OUTLINE_ROW_MIN_ELEMENTS run their elementwise kernels as functions of their
    own (`tjk_` modules, called once a row), narrower rows inline: the same values either way,
    NaN and inf rows included."""
    from tracejit.backend.llvm.control_flow import OUTLINE_ROW_MIN_ELEMENTS as wide
    for width, outlined in ((wide, True), (wide - 1, False)):
        x = _data((6, width))
        x[1, 3], x[2, 0], x[3, :], x[4, :] = np.nan, np.inf, -np.inf, np.inf
        compiled = _compiled(f, x)
        text = compiled.as_text(dialect="llvm")
        del compiled  # (a live program's kernels would show in the next one's text)
        assert (re.search(r'define void @"?tjk_', text) is not None) == outlined, (name, width)
        _assert_close(*_both(f, x), rtol, row_atol)


def test_softmax_over_leading_axis_is_not_a_row_region():
    x = _data((64, 100))
    f = lambda a: tracejit.nn.softmax(a, axis=0)
    _assert_close(*_both(f, x), SOFTMAX_RTOL, 0.0)
    assert not _row_maps(_compiled(f, x)._executable.jaxpr)


@pytest.mark.parametrize("axis", [(1, 2), (2,), -1])
def test_batched_rows_reduce_trailing_dims(axis):
    x = _data((3, 16, 40))
    f = lambda a: tracejit.nn.standardize(a, axis=axis)
    _assert_close(*_both(f, x), 0.0, ROW_ATOL)
    (row_eqn,) = _row_maps(_compiled(f, x)._executable.jaxpr)
    assert row_eqn.params["rows"] == ((3,) if axis == (1, 2) else (3, 16))


def test_region_results_operands_and_scalars():
    """Per-row and full values read after the region become results; a per-row value and a
    traced scalar from outside are operands."""
    def f(x, shift, t):
        m = x.max(-1, keepdims=True)
        h = (x - m) / t
        e = jnp.exp(h)
        s = e.sum(-1)
        return e / s[:, None] + shift[:, None], m, h, s
    args = (_data((32, 50)), _data((32,)), F32(1.5))
    native, ref = _both(f, *args)
    for n, r in zip(native, ref):
        _assert_close(n, r, SOFTMAX_RTOL, ROW_ATOL)
    (row_eqn,) = _row_maps(_compiled(f, *args)._executable.jaxpr)
    assert len(row_eqn.outvars) == 4


def test_outside_reader_moves_after_the_region():
    """argmax reads a value inside the region (between its equations): it runs after it."""
    def f(x):
        h = jnp.tanh(x)
        return jnp.argmax(h, -1), _hand_softmax(h)
    x = _data((16, 30))
    native, ref = _both(f, x)
    np.testing.assert_array_equal(native[0], ref[0])
    _assert_close(native[1], ref[1], SOFTMAX_RTOL, 0.0)
    jaxpr = _compiled(f, x)._executable.jaxpr
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.index("row_map") < names.index("argmax")


def test_value_fed_back_through_another_op_cuts_the_region():
    """cumsum (not row-wise) reads the row max and feeds the region again: the region stops
    before it, and the program still computes the same values."""
    def f(x):
        m = x.max(-1, keepdims=True)
        e = jnp.exp(x - m)
        c = jnp.cumsum(m, axis=0)
        return e / e.sum(-1, keepdims=True) + c
    x = _data((16, 30))
    _assert_close(*_both(f, x), SOFTMAX_RTOL, ROW_ATOL)
    closed = make_jaxpr(f)(x)
    jaxpr, _ = passes.optimize(closed.jaxpr, closed.consts)
    check_jaxpr(jaxpr)
    names = _kernel_roots(jaxpr)
    assert names.index("row_map") < names.index("cumsum") < names.index("add")


def test_row_sum_alone_keeps_plain_fusion():
    """A reduction whose result is not broadcast back gains nothing from a row kernel."""
    x = _data((16, 30))
    f = lambda a: jnp.exp(a).sum(-1) * 2.0
    assert not _row_maps(_compiled(f, x)._executable.jaxpr)


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
def test_row_map_interpreter_agrees_bit_for_bit(name, f, rtol, row_atol):
    """The optimised jaxpr (row_map evaluated row by row) gives the reference's bits; a row
    divided by its sum is multiplied by the sum's reciprocal instead (as XLA), within 2 ulp."""
    x = _data((6, 20))
    x[2, 3] = np.nan
    closed = make_jaxpr(f)(x)
    jaxpr, consts = passes.optimize(closed.jaxpr, closed.consts)
    check_jaxpr(jaxpr)
    assert _row_maps(jaxpr)
    (want,) = eval_jaxpr(closed.jaxpr, closed.consts, x)
    (got,) = eval_jaxpr(jaxpr, consts, x)
    if name in _DIVIDES_BY_ROW_VALUE:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.all(np.abs(got[ok] - want[ok]) <= 2 * np.spacing(np.abs(want[ok])))
    else:
        np.testing.assert_array_equal(got, want)


def test_row_kernel_inside_a_loop_body():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: tracejit.nn.softmax(c * 2.0), x)
    x = _data((8, 20))
    _assert_close(*_both(f, x), 4 * SOFTMAX_RTOL, 0.0)
    closed = make_jaxpr(f)(x)
    jaxpr, _ = passes.optimize(closed.jaxpr, closed.consts)
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name in ("scan", "while")]
    bodies = [v for v in loop.params.values() if hasattr(v, "jaxpr")]
    assert any(_row_maps(b.jaxpr) for b in bodies)


@pytest.mark.parametrize("shape", [(1, 4096), (5, 3000), (40, 4096)])
def test_long_rows_prefetch_the_next_row(shape):
    """A row kernel whose exp-and-sum pass runs in 1,024-element blocks (logsumexp of rows
    longer than a block) prefetches a slice of the next row a block, the last row its own;
    values as NumPy's float64 logsumexp, the same bits on one and two threads (40 rows of
    4,096 run on the pool)."""
    x = _data(shape)
    x[0, 7] = 40.0  # a dominant term in the first row
    f = lambda a: tracejit.nn.logsumexp(a, axis=-1)
    assert "llvm.prefetch" in _compiled(f, x).as_text(dialect="llvm")
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    want = (np.log(np.exp(x64 - m).sum(-1)) + m[:, 0]).astype(F32)
    old = tracejit.config.read("tracejit_num_threads")
    got = []
    try:
        for threads in (1, 2):
            tracejit.config.update("tracejit_num_threads", threads)
            got.append(np.asarray(tracejit.jit(f)(x)))
    finally:
        tracejit.config.update("tracejit_num_threads", old)
    np.testing.assert_array_equal(got[0], got[1])
    assert np.all(np.abs(got[0] - want) <= 4 * np.spacing(np.abs(want)))


@pytest.mark.parametrize("name,f,prefetches", [
    ("standardize", tracejit.nn.standardize, 1),
    ("softmax", tracejit.nn.softmax, 0),
    ("normalise by the row sum", lambda a: a / a.sum(-1, keepdims=True), 0)])
def test_only_a_sum_of_computed_values_prefetches(name, f, prefetches):
    """Rows of 2,000: standardize's mean (the row body's first pass, reading the row from
    memory) and its mean of squares are blocked sums, and the second prefetches the next
    row; sums of a row in memory do not: the input row itself, or softmax's output row holding
    its exp (a prefetch there, between the exp and the scaling pass, gained nothing). Values
    as the reference's."""
    x = _data((3, 2000))
    compiled = _compiled(f, x)
    assert _row_maps(compiled._executable.jaxpr)
    # (present or not: a row's two blocks are unrolled, codegen.UNROLLED_TRIPS, and with them
    # the prefetch's call sites)
    assert ("call void @llvm.prefetch" in compiled.as_text(dialect="llvm")) == bool(prefetches)
    _assert_close(*_both(f, x), SOFTMAX_RTOL if name != "standardize" else 0.0,
                  ROW_ATOL if name != "softmax" else 0.0)


# programs whose row body ends by rescaling, in place, an output row an earlier elementwise
# kernel wrote (e * (1 / sum), shifted - logsumexp, d * (1 / std)): pipelined (control_flow)
_PIPELINED = {"softmax", "hand_softmax", "hand_softmax_no_keepdims", "log_softmax",
              "stable_standardize"}


def _threads_run(f, x, threads: int):
    old = tracejit.config.read("tracejit_num_threads")
    try:
        tracejit.config.update("tracejit_num_threads", threads)
        return np.asarray(tracejit.jit(f)(x))
    finally:
        tracejit.config.update("tracejit_num_threads", old)


@pytest.mark.parametrize("name,f,rtol,row_atol", ROW_PROGRAMS, ids=[p[0] for p in ROW_PROGRAMS])
def test_rescaling_runs_inside_the_next_rows_kernel(name, f, rtol, row_atol, monkeypatch, x64):
    """A row body whose last kernel rescales an output row in place runs it inside the next
    row's earlier elementwise kernel (one loop computing both; a chunk's first row rescales a
    scratch row), each chunk's last row on its own: the same bits as the row-by-row emission
    (the oracle: control_flow._pipelined turned off), on one and two threads, for rows on the
    pool (uneven chunks) and off it, float32 and float64, odd widths and NaN/inf rows; values
    as the reference interpreter's. Rows over PIPELINE_MAX_ROW_BYTES stay row by row."""
    from tracejit.backend.llvm import control_flow
    cases = [((1000, 300), F32), ((7, 256), F32), ((5, 257), F32), ((300, 500), np.float64),
             ((1, 999), F32), ((6, 1025), F32), ((130, 1024), np.float64)]
    for shape, dtype in cases:
        x = _data(shape).astype(dtype)
        if shape[0] >= 5:
            x[1, 3], x[2, 0], x[3, :], x[4, 2] = np.nan, np.inf, -np.inf, -np.inf
        tracejit.clear_caches()
        compiled = _compiled(f, x)
        text, temp = compiled.as_text(dialect="llvm"), compiled.memory_analysis().temp_size_in_bytes
        del compiled  # (a live program's kernels would show in the next one's text)
        got = [_threads_run(f, x, threads) for threads in (1, 2)]
        with monkeypatch.context() as m:
            m.setattr(control_flow, "_pipelined", lambda body: None)
            tracejit.clear_caches()
            plain = _compiled(f, x)
            plain_text = plain.as_text(dialect="llvm")
            plain_temp = plain.memory_analysis().temp_size_in_bytes
            del plain
            want = [_threads_run(f, x, threads) for threads in (1, 2)]
        tracejit.clear_caches()
        # pipelined, the earlier kernel (and only it) is replaced by the merged one; the
        # rescaling kernel is the same function (named by a hash of its IR) in both programs
        kernels, plain_kernels = (set(re.findall(r'define void @"?(tjk_\w+)', t))
                                  for t in (text, plain_text))
        pipelined = name in _PIPELINED and \
            shape[-1] * x.itemsize <= control_flow.PIPELINE_MAX_ROW_BYTES
        assert len(kernels - plain_kernels) == len(plain_kernels - kernels) == pipelined, \
            (shape, kernels)
        # (the first row's scratch row is on the stack, not in the workspace)
        assert temp == plain_temp
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(got[0], got[1])
        assert got[0].dtype == dtype
        ref = tracejit.jit(f, backend="interpret")(x)
        _assert_close(got[0], ref, rtol, row_atol)


@pytest.mark.parametrize("shape", [(64, 96), (128, 40)])
def test_masks_from_iotas_are_made_in_the_row_body(shape):
    """A causal mask (`tril` of ones: iotas over the rows' full shape, compared) is made by
    the row body itself: the iota along the row as the body's own, the one along a row
    dimension from a per-row iota, one element a row (their full-size arrays were each a
    kernel storing them). The interpreter's values, within the row kernels' tolerance."""
    def masked_softmax(x):
        n = x.shape[-1]
        s = jnp.where(jnp.tril(jnp.ones((x.shape[-2], n), bool)), x, -jnp.inf)
        return tracejit.nn.softmax(s, -1)
    x = _data(shape)
    closed = make_jaxpr(masked_softmax)(x)
    rowed = passes.dce(rows.fuse_rows(closed.jaxpr))
    check_jaxpr(rowed)
    iotas = [e.outvars[0].aval.size for e in rowed.eqns if e.primitive.name == "iota"]
    assert len(_row_maps(rowed)) == 1 and all(size <= x.size // shape[-1] for size in iotas)
    got, want = _both(masked_softmax, x)
    _assert_close(got, want, SOFTMAX_RTOL, 0.0)
    # the workspace: the per-row iota and a row at most (the full iotas took 2 * 4 * x.size)
    workspace = _compiled(masked_softmax, x).memory_analysis().temp_size_in_bytes
    assert workspace <= 4 * (x.size // shape[-1] + shape[-1]) + 128
