"""Choices made to compile less, checked against what they replace: scalar code's sin/cos/tan
call one out-of-line function per module for |x| >= 0.78 (the same bits as the vectorised
loop's inline code, NumPy's values); loops over fewer than VECTORIZE_COLD_ELEMENTS per call
are not vectorized (the same values); programs whose IR has internal functions (parallel
chunk bodies, those paths) load from the on-disk cache; a buffer copied into another is moved
in 64-byte vectors, bit for bit."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backend.llvm import codegen
from tracejit.backend.llvm import parallel_loops
from tracejit.runtime import disk_cache, tiering


def _trig(x):  # (each function used twice: the out-of-line path serves both)
    return jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.sin(jnp.cos(x * 2)) + jnp.tan(x * 0.5)


def _arguments(dtype, n):
    rng = np.random.default_rng(0)
    parts = [rng.uniform(-1, 1, n // 4), rng.uniform(-100, 100, n // 4),
             rng.uniform(-1e5, 1e5, n // 4),
             np.sign(rng.uniform(-1, 1, n // 4)) * 10.0 ** rng.uniform(5, 30, n // 4)]
    x = np.concatenate(parts).astype(dtype)
    x[:4] = [0.0, -0.0, 0.78, -0.78]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_trig_far_path_out_of_line(dtype):
    tracejit.config.update("jax_enable_x64", dtype == np.float64)  # (conftest restores it)
    n = 256  # below codegen.INLINE_SLOW_PATH_MIN_ELEMENTS: scalar code with the branch
    assert n < codegen.INLINE_SLOW_PATH_MIN_ELEMENTS
    x = _arguments(dtype, n)
    f = tracejit.jit(_trig)
    got = [np.asarray(v) for v in f(x)]
    ir_text = f.lower(x).compile().as_text("llvm")
    width = "f64" if dtype == np.float64 else "f32"
    # (float32 tan computes in float64)
    for op, symbol in [("sin", f"tracejit.sin.far.{width}"), ("cos", f"tracejit.cos.far.{width}"),
                       ("tan", "tracejit.tan.far.f64")]:
        name = rf'@"?{re.escape(symbol)}"?\('
        # one definition, called from the module's one function for the op (math.py: scalar
        # code's sin/cos/tan used more than once is out of line), itself called from each use
        outer = rf'@"?tracejit\.math\.{op}\.{"f32" if dtype == np.float32 else "f64"}"?\('
        assert len(re.findall(rf"define internal .*{name}", ir_text)) == 1, symbol
        assert len(re.findall(name, ir_text)) == 2, symbol
        assert len(re.findall(rf"call .*{outer}", ir_text)) == 2, op
    # a module's only use is inlined (a call would cost compile time, not save it)
    single = tracejit.jit(jnp.cos).lower(x).compile().as_text("llvm")
    assert ".far." not in single
    # a loop long enough to vectorise has the whole path inline: the same bits
    reps = -(-codegen.INLINE_SLOW_PATH_MIN_ELEMENTS // n)
    long = [np.asarray(v)[:n] for v in tracejit.jit(_trig)(np.tile(x, reps))]
    for a, b in zip(got, long):
        np.testing.assert_array_equal(a, b)
    eps = float(np.finfo(dtype).eps)
    wide = x.astype(np.float64)
    for a, want in zip(got[:3], [np.sin(wide), np.cos(wide), np.tan(wide)]):
        np.testing.assert_allclose(a, want.astype(dtype), rtol=8 * eps, atol=8 * eps)
    # (from the dtype's own x * 2 and x * 0.5: exact)
    last = np.sin(np.cos((x * 2).astype(np.float64))) + np.tan((x * 0.5).astype(np.float64))
    np.testing.assert_allclose(got[3], last.astype(dtype), rtol=8 * eps, atol=8 * eps)


@pytest.mark.usefixtures("second_tier")
def test_parallel_program_loads_from_disk_cache(tmp_path):
    """A parallel program's chunk body is an internal function: its object code defines it as
    a local symbol, which the entry's check accepts (it was refused, and recompiled, before)."""
    tracejit.config.update("tracejit_cache_dir", str(tmp_path))  # (conftest restores them)
    tracejit.config.update("tracejit_persistent_cache", True)
    x = np.linspace(-3, 3, parallel_loops.PARALLEL_MIN_ELEMENTS, dtype=np.float32)
    want = np.asarray(tracejit.jit(lambda x: jnp.sum(jnp.sin(x) * x))(x))
    tiering.wait()  # (its final code, stored when made: clear_caches does not wait for it)
    tracejit.clear_caches()
    before = dict(disk_cache.stats)
    got = np.asarray(tracejit.jit(lambda x: jnp.sum(jnp.sin(x) * x))(x))
    delta = {k: disk_cache.stats[k] - before.get(k, 0) for k in disk_cache.stats}
    assert delta.get("hits") == 1 and not delta.get("errors") and not delta.get("misses")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.sum(np.sin(x.astype(np.float64)) * x), rtol=1e-5)


_NO_VECTORIZE = '"llvm.loop.vectorize.enable", i1 0'


def _product_loop_head(lines: list[str]) -> tuple[str, int]:
    """The header label of the loop whose body computes the first product, and the product's
    line (the loop's back edge comes after it; its entry's branch to the header before): an
    fmul, or an fma where a sum reads it (backend/llvm/contraction.py)."""
    label = None
    for at, line in enumerate(lines):
        if line.endswith(":"):
            label = line[:-1].strip('"')
        elif " fmul " in line or ('= call ' in line and '@"llvm.fma.' in line):
            break
    return label.replace(".body", ".head"), at


def _work_loop_vectorizable(ir_text: str) -> bool:
    """Whether the loop computing the first product (the element loop; for a sum of computed
    values, lane_reduce's fill loop, inside a loop over blocks that is never vectorised) is
    left to LLVM's vectoriser: its back edge carries no metadata turning it off."""
    lines = ir_text.split("\n")
    head, at = _product_loop_head(lines)
    back = next(line for line in lines[at:] if line.startswith(f'  br label %"{head}"'))
    if "!llvm.loop" not in back:
        return True
    node = back.rsplit("!llvm.loop ", 1)[1].strip()
    refs = next(line for line in lines if line.startswith(f"{node} = ")).split("{", 1)[1]
    off = {line.split(" = ")[0] for line in lines if line.endswith(_NO_VECTORIZE + " }")}
    return not off & {r.strip() for r in refs.rstrip("} ").split(",")}


def _emitted_ir(f, x) -> str:
    from tracejit.compiler.passes import optimize
    from tracejit.core.jaxpr import ClosedJaxpr
    closed = tracejit.make_jaxpr(f)(x)
    jaxpr, consts = optimize(closed.jaxpr, closed.consts)
    return codegen.generate(ClosedJaxpr(jaxpr, consts), "entry").ir_text


@pytest.mark.parametrize("reduce", [False, True])
def test_cold_loops_are_not_vectorized(reduce):
    def f(x):
        y = x * 1.5 + 0.25
        return jnp.sum(y) if reduce else y
    cold = codegen.VECTORIZE_COLD_ELEMENTS
    for n, vectorized in [(cold - 1, False), (cold, True)]:
        x = np.linspace(-2, 2, n, dtype=np.float32)
        assert _work_loop_vectorizable(_emitted_ir(f, x)) == vectorized, n
        got = np.asarray(tracejit.jit(f)(x))
        want = x.astype(np.float64) * 1.5 + 0.25
        if reduce:
            np.testing.assert_allclose(got, want.sum(), rtol=1e-5, atol=1e-4)
        else:
            # (one rounding: the product contracts into the add, as XLA's; exact in float64)
            np.testing.assert_array_equal(got, want.astype(np.float32))


def test_cold_counts_a_scan_s_steps():
    """A loop over few elements inside a long scan runs often: it is vectorized."""
    def f(x):
        return tracejit.lax.scan(lambda c, _: (c * 0.5 + 1.0, None), x, length=64)[0]
    x = np.ones(codegen.VECTORIZE_COLD_ELEMENTS // 16, np.float32)
    ir_text = _emitted_ir(f, x)
    # the element loop of the body (the block with the multiply) has no metadata; the scan's
    # own loop over 64 steps and the copies in and out, once per call, do
    head, _ = _product_loop_head(ir_text.split("\n"))
    assert f'br label %"{head}"' in ir_text
    assert f'br label %"{head}", !llvm.loop' not in ir_text
    assert 'br label %"scan.head", !llvm.loop' in ir_text
    np.testing.assert_allclose(np.asarray(tracejit.jit(f)(x)), np.full_like(x, 2.0), rtol=1e-6)


def _carried(x):
    """A while loop whose array carry comes back unchanged (a select, so the carry stays): its
    lowering copies the operand in and the carry out."""
    def body(c):
        y, i = c
        return jnp.where(i > 100, y[::-1], y), i + 1
    return lax.while_loop(lambda c: c[1] < 3, body, (x, 0))[0]


_COLD = codegen.VECTORIZE_COLD_ELEMENTS


@pytest.mark.parametrize("dtype,n,vectors", [
    (np.float32, _COLD, True), (np.float32, _COLD + 1, True), (np.float32, _COLD + 15, True),
    (np.int8, _COLD + 63, True), (np.int8, _COLD + 64, True), (np.complex64, _COLD + 1, True),
    (np.float16, _COLD + 33, True), (np.float32, _COLD - 1, False), (np.int8, 63, False),
    (np.bool_, 4 * _COLD, False)])
def test_buffer_copies_move_bytes(dtype, n, vectors):
    """Copies of VECTORIZE_COLD_ELEMENTS or more elements a call move 64-byte vectors (the last
    one ending at the last byte): every byte arrives, NaN payloads too; colder ones, and bool
    (whose load truncates), keep the element loop."""
    x = (np.arange(n) * 1.5).astype(dtype)
    if dtype == np.float32:
        x.view(np.uint32)[::3] = 0x7F800001  # a signalling NaN: kept bit for bit
    assert ('"bytes.head"' in _emitted_ir(_carried, x)) == vectors
    got = np.asarray(tracejit.jit(_carried)(x))
    assert got.dtype == x.dtype and got.tobytes() == x.tobytes()
