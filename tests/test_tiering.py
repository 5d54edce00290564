"""Tiered compiles (runtime/tiering.py): a first call may run code from LLVM's O0 code generation
(of O3's optimised IR, or of IR O3 has not optimised: jit_engine.optimize_first_tier) while O3's
is made on a thread. Oracles: the same program's outputs from its final (O3) code,
bit for bit, for every benchmark row and a set of reductions and contractions; O3's assembly
for which fmas a module has; the object code an untiered compile stores on disk. Forks, exits,
clear_caches and programs dropped before their turn neither fail nor change a result."""
import gc
import hashlib
import math
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest
from tolerance import native

import tracejit
import tracejit.numpy as tnp
from tracejit import lax, random
from tracejit.backend.llvm import gemm, jit_engine
from tracejit.lax.elementwise import _fma_impl
from tracejit.runtime import disk_cache, kernel_cache, tiering
from tracejit.runtime import native as native_rt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.workloads import WORKLOADS

# (the second tier, O3's code made on tiering's thread, is what these test)
pytestmark = [pytest.mark.skipif(not native(), reason="tiers are the native backend's"),
              pytest.mark.usefixtures("second_tier")]


@pytest.fixture
def cold(tmp_path):
    """Programs compiled afresh (no disk entry to load), tiers on."""
    names = ("tracejit_cache_dir", "tracejit_tiered_compile")
    was = [(k, tracejit.config.read(k)) for k in names]
    tracejit.config.update("tracejit_cache_dir", str(tmp_path))
    tracejit.config.update("tracejit_tiered_compile", True)
    try:
        yield tmp_path
    finally:
        tiering.wait()
        for k, v in was:
            tracejit.config.update(k, v)


def _programs() -> set:
    return set(native_rt._compiled.values())


def _digest(out) -> str:
    leaves = tracejit.tree_util.tree_leaves(out)
    return hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in leaves)).hexdigest()


def _both_tiers(fn, *args) -> tuple[str, str, list]:
    """(digest of the first call's outputs, of a call after the final code is in place, the
    programs the first call compiled, whether each ran final code in it (not O0's) and whether
    it or a kernel of it ran code from IR O3 had not optimised)."""
    before = _programs()
    with tiering.paused():
        first = _digest(fn(*args))
        new = _programs() - before
        tiers = [(p, p.final and all(lib.final for lib in p.kernels),
                  any(m._optimised_ir is None for m in (p, *p.kernels))) for p in new]
    tiering.wait()
    assert all(p.final and all(lib.final for lib in p.kernels) for p, *_ in tiers)
    return first, _digest(fn(*args)), tiers


def _unoptimised(tiers) -> bool:
    """Whether any module of the programs `_both_tiers` lists ran code O3 had not optimised."""
    return any(unoptimised for *_, unoptimised in tiers)


@pytest.fixture
def unoptimised(cold, monkeypatch):
    """Every program's first call on the unoptimised tier where its IR allows it (whatever the
    cost model says), else on O0's code of O3's IR where that is exact."""
    monkeypatch.setattr(tiering, "unoptimised_pays", lambda jaxpr, ir_lines: True)
    monkeypatch.setattr(tiering, "o0_pays", lambda jaxpr, ir_lines: True)
    yield cold


@pytest.mark.parametrize("row", [name for name, _ in WORKLOADS])
def test_every_benchmark_row_gives_the_same_bits_at_both_tiers(cold, row):
    build = next(b for name, b in WORKLOADS if name == row)
    fn, args = build(tracejit, tnp, lax, random)
    first, final, _ = _both_tiers(fn, *args)
    assert first == final


# rows whose modules (some or all) have a flag that lets O3 reorder a sum
# (jit_engine.unoptimised_exact): those run O0's code of O3's IR first
_REASSOCIATING_ROWS = ("MLP 784-512-10 jit(grad), batch 128",
                       "CNN forward+grad (2 conv, 32x28x28)")
# rows that are one product on our gemm (AVX-512 hosts): the runtime's entry for it runs them
# (backend/llvm/lone_product.py), final code from the first call, no program compiled
_LONE_ROWS = ("matmul 1024x1024",) if (gemm.host_lanes() or 0) >= 16 else ()


@pytest.mark.parametrize("row", [name for name, _ in WORKLOADS])
def test_every_benchmark_row_unoptimised_gives_the_bits_of_o3(unoptimised, row):
    """The unoptimised tier on every row, the loops (the while_loop's too) and the slowest runs
    among them: O3's bits, where its IR has no reassociating flag."""
    build = next(b for name, b in WORKLOADS if name == row)
    fn, args = build(tracejit, tnp, lax, random)
    tracejit.clear_caches()  # (compiled afresh here, not found from the test above)
    gc.collect()
    first, final, tiers = _both_tiers(fn, *args)
    assert first == final
    assert _unoptimised(tiers) or row in _REASSOCIATING_ROWS or row in _LONE_ROWS and not tiers, \
        row


_PROGRAMS = {  # reductions, softmax, scans and while loops, trig, FFT: x is float32 (3001,)
    "max": lambda x: tnp.max(x), "argmin": tnp.argmin, "max rows": lambda x: tnp.max(
        x[:3000].reshape(-1, 6), axis=1), "cumsum": tnp.cumsum, "cumprod": lambda x: tnp.cumprod(
        1 + x * 1e-4), "int sum": lambda x: tnp.sum((x * 1e3).astype(np.int32)),
    "softmax": lambda x: tracejit.nn.softmax(x[:3000].reshape(60, 50), axis=-1),
    "fori": lambda x: lax.fori_loop(0, 25, lambda i, c: tnp.cos(c) * 0.9 + x, x),
    "scan": lambda x: lax.scan(lambda c, v: (c * 0.5 + v, tnp.sin(c) * v), 0.0, x)[1],
    "while": lambda x: lax.while_loop(lambda s: tnp.max(tnp.abs(s * s - tnp.abs(x) - 1)) > 1e-5,
                                      lambda s: (s + (tnp.abs(x) + 1) / s) / 2, x * 0 + 2.0),
    "trig": lambda x: tnp.sin(x) + tnp.cos(x * 7) * tnp.tan(x / 3),
    "trig huge": lambda x: tnp.sin(x * 1e6) - tnp.cos(x * 3e8),
    "exp log": lambda x: tnp.log1p(tnp.exp(x) * tnp.tanh(x)),
    "rfft": lambda x: tnp.fft.rfft(x[:2048]), "fft": lambda x: tnp.fft.fft(x[:3000]),
    "irfft": lambda x: tnp.fft.irfft(tnp.fft.rfft(x[:1024] * 2)),
}


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_the_unoptimised_tier_gives_the_bits_of_o3(unoptimised, name):
    x = (_RNG.standard_normal(3001) * 10).astype(np.float32)
    x[7], x[3000] = -0.0, np.inf if name in ("trig", "max", "exp log") else x[3000]
    first, final, tiers = _both_tiers(tracejit.jit(_PROGRAMS[name]), x)
    assert first == final
    assert _unoptimised(tiers)


@pytest.mark.parametrize("text,exact", [
    ("%s = fadd float %a, %b", True), ("%s = fmul contract float %a, %b", True),
    ("%s = fadd reassoc float %a, %b", False), ("%s = fadd nsz float %a, %b", False),
    ("%s = fcmp nnan une float %a, %b", False), ("%s = call fast float @f(float %a)", False),
    ("%s = fadd arcp contract float %a, %b", False), ("%fast = fadd float %a, %b", True),
])
def test_unoptimised_exact_refuses_every_fast_math_flag_but_contract(text, exact):
    assert jit_engine.unoptimised_exact(f"define float @g(float %a, float %b) {{\n  {text}\n"
                                        f"  ret float %s\n}}\n") == exact


def test_the_rows_the_tiers_are_for_run_o0_code_first(cold):
    """The rows above compare something: these run their first call on O0 code (no `contract`
    product an fadd reads, and tiering.o0_pays: loops and row loops among them; the SDE, the
    fori_loop and the MLP step contract products, as explicit fmas: contraction.py)."""
    tracejit.clear_caches()  # (compiled afresh here, not found from the test above)
    gc.collect()
    for row in ("softmax 1000x1000", "sum 10M", "rfft 2^20", "relu 1M", "softmax 3x5",
                "logsumexp", "fixed-point scan 1000", "SDE 1,000 steps", "fori_loop",
                "MLP step", *(() if _LONE_ROWS else ("matmul",))):
        build = next(b for name, b in WORKLOADS if row in name)
        fn, args = build(tracejit, tnp, lax, random)
        *_, tiers = _both_tiers(fn, *args)
        assert tiers and not all(final for _, final, _ in tiers), row


def _jaxpr(f, *shapes):
    return tracejit.make_jaxpr(f)(*[tracejit.ShapeDtypeStruct(s, np.float32)
                                    for s in shapes]).jaxpr


def test_run_elements_counts_loops_by_their_trips():
    """Each equation's operands and results; an equation with bodies by its bodies alone (their
    equations read its operands and write its results): a scan's body its length times (and
    TRIP_ELEMENTS a trip); a while_loop's, body and condition, as many times as its counter
    allows, else without bound (its trips are unknown); a cond's costliest branch."""
    assert tiering.run_elements(_jaxpr(lambda x: tnp.sin(x) * 2, (1000,))) == 2 * 1000 + 2001
    scan = _jaxpr(lambda x: lax.fori_loop(0, 100, lambda i, c: tnp.sin(c), x), (1000,))
    trip = tiering.TRIP_ELEMENTS
    assert tiering.run_elements(scan) == 100 * (3 + 2000 + trip)  # (i + 1: 3 scalars)
    loop = _jaxpr(lambda x: lax.while_loop(lambda c: c[0] < 100,
                                           lambda c: (c[0] + 1, tnp.sin(c[1])), (0, x))[1],
                  (1000,))
    # (the body: i + 1, sin; the condition: i < 100, 3 scalars)
    assert tiering.run_elements(loop) == 100 * (3 + 2000 + 3 + trip)
    loop = _jaxpr(lambda x: lax.while_loop(lambda c: tnp.max(c[1]) < 100,
                                           lambda c: (c[0] + 1, tnp.sin(c[1])), (0, x))[1],
                  (1000,))
    assert tiering.run_elements(loop) == math.inf
    branch = _jaxpr(lambda p, x: lax.cond(p[0] > 0, lambda x: tnp.sin(tnp.cos(x)), tnp.sin, x),
                    (1,), (1000,))
    # squeeze, gt, convert (the index); cos then sin (the cond's own operands and result are
    # the branch's)
    assert tiering.run_elements(branch) == 2 + 3 + 2 + 4000


def _softmax_rows(shape):
    """softmax over rows as the compiler has it: a row_map whose body is reduce_max, a fused
    sub+exp, reduce_sum, a scalar div and a fused multiply."""
    jaxpr = _jaxpr(lambda x: (lambda e: e / tnp.sum(e, axis=-1, keepdims=True))(
        tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))), shape)
    optimised = native_rt.optimize(jaxpr, [])[0]
    (eqn,) = optimised.eqns
    assert eqn.primitive.name == "row_map" and eqn.params["rows"] == (shape[0],)
    return optimised


def test_run_elements_counts_a_row_maps_rows_by_its_body():
    """softmax 8x256: each row reads its 256 elements twice (max; sub+exp) and its exponentials
    twice (sum; the product), writes 256 exponentials and 256 results: 6 an element, not the
    row_map's operand and result besides (which counted softmax 4096^2's 6 as 8)."""
    # a row: reduce_max 256 + 1, fused sub+exp 256 + 1 + 256, reduce_sum 256 + 1, div
    # 1 + 1 + 1 (its literal 1.0 a scalar), fused mul 256 + 1 + 256: 1543, and a trip's 40
    trip = tiering.TRIP_ELEMENTS
    assert tiering.run_elements(_softmax_rows((8, 256))) == 8 * (1543 + trip) == 12664
    # run_ops: sub+exp weighs broadcast 1 + sub 1 + exp 10 = 12, mul broadcast 1 + mul 1 = 2
    assert tiering.run_ops(_softmax_rows((8, 256))) == \
        8 * (257 + 12 * 513 + 257 + 3 + 2 * 513 + trip) == 61912


def test_run_ops_weighs_a_fused_kernel_by_its_body():
    """run_elements' walk, a fused kernel's elements times its body's operations (a costly one,
    as sin, COSTLY_OPS times one); a while_loop's without bound where its trips have none."""
    f = _jaxpr(lambda x: tnp.sin(x) * 2 + 1, (1000,))
    fused = native_rt.optimize(f, [])[0]
    (eqn,) = fused.eqns
    body = [e.primitive.name for x in tiering._bodies(eqn) for e in x.jaxpr.eqns]
    weight = sum(tiering.COSTLY_OPS.get(name, 1) for name in body)
    assert "sin" in body and weight >= tiering.COSTLY_OPS["sin"] + 2
    assert tiering.run_ops(fused) == weight * tiering.run_elements(fused)
    assert tiering.run_ops(_jaxpr(lambda x: tnp.sin(x) * 2, (1000,))) == \
        tiering.run_elements(_jaxpr(lambda x: tnp.sin(x) * 2, (1000,)))  # (unfused: once each)
    loop = _jaxpr(lambda x: lax.while_loop(lambda c: c[1][0] < 100,
                                           lambda c: (c[0] + 1, tnp.sin(c[1])), (0, x))[1],
                  (1000,))
    assert tiering.run_ops(loop) == math.inf


def test_a_kernel_reducing_a_broadcast_counts_its_loop():
    """jnp.isin's comparison of every value with every test value, reduced in one kernel: its
    loop runs over the 100,000 x 1,000 pairs, not the 101,000 elements it reads and 100,000 it
    writes, and so gets O3 code first (its unoptimised first call ran 0.53 s, against 30 ms
    for this compile and its O3 run)."""
    jaxpr = tracejit.make_jaxpr(tnp.isin)(tracejit.ShapeDtypeStruct((100_000,), np.int32),
                                          tracejit.ShapeDtypeStruct((1000,), np.int32)).jaxpr
    fused = native_rt.optimize(jaxpr, [])[0]
    (eqn,) = fused.eqns
    assert eqn.primitive.name == "fused"
    assert tiering.run_elements(fused) == 100_000 * 1000
    assert not tiering.unoptimised_pays(fused, 100) and not tiering.o0_pays(fused, 100)


def test_heavy_and_iterative_ops_weigh_alone_or_fused():
    """polygamma and zeta (HEAVY_OPS) and an iterative op (ITERATIVE_OPS) weigh the same alone
    as in a fused kernel's body; other lone operations count once. Over 2^20 elements they
    take O0's code generation of O3's IR, which vectorises them (the unoptimised tier ran
    polygamma 1.4x, gammainc 3x slower), where a cheap kernel keeps the unoptimised tier."""
    n = 1 << 20
    alone = [(lambda x: lax.polygamma(1.0, x), tiering.HEAVY_OPS["polygamma"]),
             (lambda x: lax.zeta(x + 2.0, 1.5), tiering.HEAVY_OPS["zeta"]),
             (lambda x: lax.igamma(x, x), tiering.ITERATIVE_OPS),
             (lambda x: lax.betainc(x, x, x), tiering.ITERATIVE_OPS)]
    for f, weight in alone:
        jaxpr = native_rt.optimize(_jaxpr(f, (n,)), [])[0]
        assert tiering.run_ops(jaxpr) >= weight * n
        assert not tiering.unoptimised_pays(jaxpr, 700) and tiering.o0_pays(jaxpr, 700)
    cheap = native_rt.optimize(_jaxpr(lambda x: x * 2.0 + 1.0, (n,)), [])[0]
    assert tiering.unoptimised_pays(cheap, 100)
    assert tiering.run_ops(_jaxpr(lambda x: tnp.sqrt(x), (n,))) == \
        tiering.run_elements(_jaxpr(lambda x: tnp.sqrt(x), (n,)))  # (a lone sqrt: once)

_LOOPS = [  # (condition, body, initial carry from x, whether the counter bounds its trips)
    (lambda c: c[0] < 100, lambda c: (c[0] + 1, tnp.sin(c[1])), lambda x: (0, x), True),
    (lambda c: (c[0] < 100) & (c[1][0] > 0), lambda c: (c[0] + 1, tnp.sin(c[1])),
     lambda x: (0, x), True),
    (lambda c: c[0] <= 10, lambda c: (c[0] + 3, c[1] * 2), lambda x: (1, x), True),
    (lambda c: 10 > c[0], lambda c: (1 + c[0], c[1] * 2), lambda x: (0, x), True),
    (lambda c: c[0] > 0, lambda c: (c[0] - 1, c[1] * 2), lambda x: (7, x), True),
    (lambda c: c[0] >= 0, lambda c: (c[0] - 2, c[1] * 2), lambda x: (7, x), True),
    (lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] * 2), lambda x: (7, x), True),
    (lambda c: c[0] < c[2], lambda c: (c[0] + 1, c[1] * 2, c[2]), lambda x: (0, x, 9), True),
    (lambda c: c[2] > c[0], lambda c: (c[0] + 1, c[1] * 2, c[2]), lambda x: (0, x, 9), True),
    # no bound: an `or`; a step away from the limit; a limit known only at the call; a step
    # that is a value; a float counter; the condition on the values alone
    (lambda c: (c[0] < 10) | (c[1][0] < 50), lambda c: (c[0] + 1, c[1] * 2), lambda x: (0, x),
     False),
    (lambda c: c[0] < 10, lambda c: (c[0] - 1, c[1] * 2), lambda x: (15, x), False),
    (lambda c: c[0] < c[2], lambda c: (c[0] + 1, c[1] * 2, c[2]),
     lambda x: (0, x, tnp.int32(x[0]) + 3), False),
    (lambda c: c[0] < 10, lambda c: (c[0] + c[2], c[1] * 2, c[2]), lambda x: (0, x, 1), False),
    (lambda c: c[0] < 5.5, lambda c: (c[0] + 1.0, c[1] * 2), lambda x: (0.0, x), False),
    (lambda c: c[1][0] < 5, lambda c: (c[0] + 1, c[1] * 2), lambda x: (0, x), False),
]


@pytest.mark.parametrize("k", range(len(_LOOPS)))
def test_while_trips_bounds_a_counted_loop(k):
    """tiering.while_trips: the trips each loop runs (counted by a Python loop of its condition
    and body) where a counter compared with a constant (a literal, or a carry the body passes
    on) bounds them, else inf."""
    cond, body, init, bounded = _LOOPS[k]
    (eqn,) = [e for e in _jaxpr(lambda x: lax.while_loop(cond, body, init(x)), (3,)).eqns
              if e.primitive.name == "while"]
    carry, trips = init(np.ones(3, np.float32)), 0
    while cond(carry):
        carry, trips = body(carry), trips + 1
    assert tiering.while_trips(eqn) == (trips if bounded else math.inf)


@pytest.mark.parametrize("trips,shape,o0", [(10, (1000,), True), (40_000, (1000,), False),
                                             (1000, (), True), (1_000_000, (), False)])
@pytest.mark.parametrize("loop", ["fori_loop", "while_loop"])
def test_a_long_run_gets_o3_code_first_and_a_short_one_o0(cold, trips, shape, o0, loop):
    """tiering.o0_pays through a compile: a loop (no product to contract) of few trips runs O0
    code first; of 40,000 trips over 1000 elements (~8e7 elements: ~12 ms more at O0, more
    than its compile saves) or of a million scalar trips (their cost is the trips'), O3's.
    A while_loop whose counter bounds its trips as a fori_loop's (while_trips) alike. Both
    tiers give O3's bits."""
    x = np.asarray(_RNG.standard_normal(shape), np.float32)

    def step(c):
        return tnp.sqrt(tnp.abs(c) + 1.0) / 1.5
    if loop == "fori_loop":
        f = tracejit.jit(lambda x: lax.fori_loop(0, trips, lambda i, c: step(c), x))
    else:
        f = tracejit.jit(lambda x: lax.while_loop(lambda c: c[0] < trips,
                                                  lambda c: (c[0] + 1, step(c[1])), (0, x))[1])
    first, final, tiers = _both_tiers(f, x)
    assert first == final
    assert tiers and all(done for _, done, _ in tiers) != o0


_RNG = np.random.default_rng(7)
_REDUCTIONS = [
    ("sum", lambda x: tnp.sum(x)), ("sum rows", lambda x: tnp.sum(x.reshape(-1, 4), axis=1)),
    ("sum cols", lambda x: tnp.sum(x.reshape(-1, 4), axis=0)), ("max", lambda x: tnp.max(x)),
    ("min rows", lambda x: tnp.min(x.reshape(-1, 4), axis=1)), ("cumsum", tnp.cumsum),
    ("mean var", lambda x: (tnp.mean(x), tnp.var(x))), ("dot", lambda x: tnp.dot(x, x[::-1])),
    ("logsumexp", lambda x: tracejit.nn.logsumexp(x)), ("norm", lambda x: tnp.linalg.norm(x)),
    ("prod", lambda x: tnp.prod(1 + x * 1e-3)), ("argmax", tnp.argmax),
]


_FLOAT_ONLY = ("logsumexp", "norm", "prod", "mean var")


@pytest.mark.parametrize("size", [4, 1000, 2 ** 17 + 4, 3_000_000])
@pytest.mark.parametrize("name,f,dtype", [
    (name, f, dtype) for name, f in _REDUCTIONS for dtype in (np.float32, np.float64, np.int32)
    if dtype != np.int32 or name not in _FLOAT_ONLY])
@pytest.mark.parametrize("forced", [False, True])
def test_reductions_give_the_same_bits_at_both_tiers(cold, monkeypatch, name, f, dtype, size,
                                                     forced):
    """As the cost model picks the tier, and on the unoptimised tier where the IR allows it."""
    if forced:
        monkeypatch.setattr(tiering, "unoptimised_pays", lambda jaxpr, ir_lines: True)
    x = (_RNG.standard_normal(size) * 100).astype(dtype)
    if dtype != np.int32:
        x[size // 3] = np.nan if name in ("sum", "max") else x[size // 3]
    first, final, _ = _both_tiers(tracejit.jit(f), x)
    assert first == final


_CONTRACTIONS = [
    lambda x, a, b: x * a + b, lambda x, a, b: b - x * a, lambda x, a, b: x * x + b * a,
    lambda x, a, b: tnp.sum(x * a + b), lambda x, a, b: tnp.cumsum(x * a) + b,
    lambda x, a, b: lax.fori_loop(0, 3, lambda i, c: c * a + b, x),
]


@pytest.mark.parametrize("k", range(len(_CONTRACTIONS)))
def test_a_contracted_product_gives_the_same_bits_at_o0(cold, k):
    """O0's code generation contracts nothing, but our modules' contractions are explicit fmas
    (backend/llvm/contraction.py), no `contract` flag left: O0's code computes them too, so a
    first call may run it and gives the bits of O3's code and of tiers off."""
    x, a, b = _RNG.standard_normal((3, 4099)).astype(np.float32)
    first, final, tiers = _both_tiers(tracejit.jit(_CONTRACTIONS[k]), x, a, b)
    assert first == final
    if k == 0:  # one module, its product read by the sum: O0's code first, rounded once
        assert tiers and not any(final for _, final, _ in tiers)
        assert first == _digest(_fma_impl(x, a, b))


def _asm_fmas(ir_text: str, opt: int) -> int:
    machine = jit_engine.create_target_machine(opt)
    asm = machine.emit_assembly(jit_engine.parse(ir_text))
    return sum(line.split()[0].startswith("vfmadd") or line.split()[0].startswith("vfmsub")
               or line.split()[0].startswith("vfnmadd") for line in asm.splitlines()
               if line.strip() and not line.strip().startswith((".", "#")) and
               line.startswith("\t"))


_PAIR = """
define void @f(float* %p, float %x, float %a, float %b) {
  %m = fmul contract float %x, %a
  %s = READER
  store float %s, float* %p
  ret void
}
"""
_PAIRS = {  # reader of the product -> whether the rule lets O0 generate it, O3 contracts it
    "fadd contract float %m, %b": (False, True),
    "fsub contract float %b, %m": (False, True),
    "fadd float %m, %b": (False, False),  # (the rule keeps to any fadd: O3 does not contract)
    "fdiv float %m, %b": (True, False),
    "call float @llvm.fma.f32(float %m, float %a, float %b)": (False, False),  # (any call)
}


@pytest.mark.parametrize("reader", list(_PAIRS))
def test_fast_codegen_exact_agrees_with_the_fmas_o3_makes(reader):
    ir_text = _PAIR.replace("READER", reader)
    if "llvm.fma" in reader:
        ir_text += "declare float @llvm.fma.f32(float, float, float)\n"
    exact = jit_engine.fast_codegen_exact(ir_text)
    contracts = _asm_fmas(ir_text, 0) < _asm_fmas(ir_text, 3)
    assert (exact, contracts) == _PAIRS[reader]
    if exact:  # O3's code has the fmas O0's has
        assert _asm_fmas(ir_text, 0) == _asm_fmas(ir_text, 3)


def test_value_names_are_each_functions_own():
    """A product named %m in one function and an fadd of another %m in the next: no pair."""
    ir_text = (_PAIR.replace("READER", "fdiv float %m, %b") +
               _PAIR.replace("@f(", "@g(").replace("fmul contract", "fmul")
               .replace("READER", "fadd contract float %m, %b"))
    assert jit_engine.fast_codegen_exact(ir_text)


def test_o0_keeps_the_explicit_fmas_of_the_math_routines(cold):
    """exp's polynomial is llvm.fma calls: O0's code has them (the same bits, not contraction's)."""
    x = _RNG.standard_normal((3001, 7)).astype(np.float32)
    tracejit.clear_caches()  # (exp's kernel compiled afresh, not found from a test above)
    gc.collect()
    before = _programs()
    f = tracejit.jit(lambda v: tnp.exp(v) / 3.0)  # (held: its program lives while f does)
    with tiering.paused():
        f(x)
        new = _programs() - before
        # (what O0 generated code from: O3's IR, or the first tier's where O3's is to come)
        texts = [m._optimised_ir or str(jit_engine.optimize_first_tier(
                     jit_engine.parse(m.ir_text))) for p in new for m in (p, *p.kernels)
                 if not m.final]
        texts = [text for text in texts if "@llvm.fma" in text]
        assert texts
        for text in texts:
            assert _asm_fmas(text, 0) > 0


def test_the_disk_cache_stores_the_final_code_only(cold, tmp_path_factory):
    """No entry while a program runs O0 code; then the entry an untiered compile writes (the
    same optimised IR and object code: the final code of the unoptimised tier, optimised on
    the thread, is O3's), which a later compile loads as final."""
    x = _RNG.standard_normal(5000).astype(np.float32)
    make = lambda: tracejit.jit(lambda v: tnp.sum(tnp.exp(v - tnp.max(v))))
    entries = lambda d: sorted(p for p in Path(d).glob("*.o"))
    f = make()
    before = _programs()
    with tiering.paused():
        want = np.asarray(f(x))
        assert not entries(cold)
        assert any(m._optimised_ir is None for p in _programs() - before
                   for m in (p, *p.kernels))
    tiering.wait()
    tiered = {p.name: p.read_bytes()[disk_cache._HEADER.size:] for p in entries(cold)}
    assert tiered
    del f
    gc.collect()
    kernel_cache.clear()
    gc.collect()
    other = tmp_path_factory.mktemp("untiered")
    tracejit.config.update("tracejit_cache_dir", str(other))
    tracejit.config.update("tracejit_tiered_compile", False)
    np.testing.assert_array_equal(np.asarray(make()(x)), want)
    untiered = {p.name: p.read_bytes()[disk_cache._HEADER.size:] for p in entries(other)}
    assert untiered == tiered  # (the HMAC, under each folder's own key, left out)
    gc.collect()
    kernel_cache.clear()
    gc.collect()
    tracejit.config.update("tracejit_tiered_compile", True)
    hits = disk_cache.stats["hits"]
    before = _programs()
    np.testing.assert_array_equal(np.asarray(make()(x)), want)
    assert disk_cache.stats["hits"] > hits
    assert all(p.final for p in _programs() - before)


def test_final_code_is_stored_where_the_cache_was_at_the_compile(cold, tmp_path_factory):
    """A program compiled tiered with the cache in one folder has its final code stored there,
    not in a folder set before the thread's turn (a later test's tmp_path: seen in the suite
    as a stray entry in an emptied folder)."""
    x = _RNG.standard_normal(4000).astype(np.float32)
    later = tmp_path_factory.mktemp("later")
    c = np.float32(_RNG.integers(1, 10_000))
    f = tracejit.jit(lambda v: tnp.tanh(v) * c)
    with tiering.paused():
        f(x)
        assert not list(Path(cold).glob("*.o"))
        tracejit.config.update("tracejit_cache_dir", str(later))
    tiering.wait()
    assert list(Path(cold).glob("*.o")) and not list(later.glob("*.o"))


def test_off_gives_final_code_at_the_first_call(cold):
    tracejit.config.update("tracejit_tiered_compile", False)
    before = _programs()
    f = tracejit.jit(lambda v: tnp.sum(v * 2.0))  # (held: its program lives while f does)
    f(np.arange(1000, dtype=np.float32))
    new = _programs() - before
    assert new and all(p.final and all(lib.final for lib in p.kernels) for p in new)


def test_programs_dropped_or_cleared_before_their_turn(cold):
    # (positive: a sum of standard normals that cancels to near 0 has a float32 error far
    # above rtol=1e-5 of itself, and _RNG's draws here depend on which tests xdist ran before)
    x = _RNG.uniform(0.5, 1.5, 3000).astype(np.float32)
    want = [np.sum(x.astype(np.float64) * k) + 1 for k in range(6)]
    make = lambda k: tracejit.jit(lambda v: tnp.sum(v * np.float32(k)) + 1)
    with tiering.paused():
        for k in range(3):  # dropped at once, their second tier not begun
            np.testing.assert_allclose(np.asarray(make(k)(x)), want[k], rtol=1e-5)
        gc.collect()
    fs = [make(k) for k in range(3, 6)]
    first = [np.asarray(f(x)) for f in fs]
    tracejit.clear_caches()  # (while the thread may be finishing them)
    gc.collect()
    for k, f, got in zip(range(3, 6), fs, first):
        np.testing.assert_allclose(got, want[k], rtol=1e-5)
        assert np.asarray(f(x)) == got
    tiering.wait()


def _held(program) -> bool:
    with tiering._ready:
        return any(ref() is program for ref in tiering._held)


def test_final_code_is_begun_after_the_first_call_returns(cold):
    """A tiered program is held (not queued for its final code) from its compile to the end of
    its first call; a `wait` finishes one never called; one dropped uncalled stores its final
    code on disk (the cache is on) and is freed."""
    x = _RNG.standard_normal(3000).astype(np.float32)
    f = tracejit.jit(lambda v: tnp.sum(tnp.sqrt(tnp.abs(v))))
    before = _programs()
    compiled = f.lower(x).compile()
    (program,) = _programs() - before
    assert not program.final and _held(program)
    first = _digest(compiled(x))
    assert not _held(program)
    tiering.wait()
    assert program.final and _digest(compiled(x)) == first

    g = tracejit.jit(lambda v: tnp.max(tnp.sqrt(tnp.abs(v)) + 2.0))
    before = _programs()
    never_called = g.lower(x).compile()
    (program,) = _programs() - before
    assert _held(program)
    tiering.wait()
    assert program.final and not _held(program)

    h = tracejit.jit(lambda v: tnp.min(tnp.sqrt(tnp.abs(v)) - 2.0))
    before = _programs()
    entries = set(Path(cold).glob("*.o"))
    dropped = h.lower(x).compile()
    (program,) = _programs() - before
    ref = weakref.ref(program)
    del program, dropped, never_called
    tracejit.clear_caches()
    gc.collect()
    tiering.wait()
    assert ref() is None and not tiering._held
    assert set(Path(cold).glob("*.o")) - entries  # (its orphan's entry)


def test_fork_and_exit_while_a_second_tier_is_pending(tmp_path):
    """A fork right after tiered compiles (parent and child each call again and wait for their
    final code; one program is still held, never called before the fork: the child has no
    thread until it is released), and exits with programs pending or held, with the cache on
    or off: right results, no error, and with the cache on the entries are stored."""
    source = """
        import os, sys
        import numpy as np
        import tracejit, tracejit.numpy as tnp
        from tracejit.runtime import tiering
        x = np.linspace(-3, 3, 20000, dtype=np.float32)
        fs = [tracejit.jit(lambda v, k=k: tnp.sum(tnp.exp(v * np.float32(k)))) for k in range(4)]
        want = [np.sum(np.exp(x * np.float32(k)), dtype=np.float64) for k in range(4)]
        first = [float(f(x)) for f in fs]
        held = tracejit.jit(lambda v: tnp.max(tnp.exp(v) + 1)).lower(x).compile()
        if sys.argv[1] == "fork":
            pid = os.fork()
            again = [float(f(x)) for f in fs]
            top = float(held(x))
            tiering.wait()
            ok = again == first == [float(f(x)) for f in fs] and top == float(held(x))
            ok = ok and all(abs(a - w) <= 1e-5 * w for a, w in zip(first, want))
            ok = ok and abs(top - float(np.exp(np.float32(3))) - 1) <= 1e-5 * top
            if pid == 0:
                os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            print(ok, status)
        else:
            print(all(abs(a - w) <= 1e-5 * w for a, w in zip(first, want)), 0)
    """
    for mode, cache in (("fork", "1"), ("fork", "0"), ("exit", "1"), ("exit", "0")):
        folder = tmp_path / f"{mode}-{cache}"
        env = dict(os.environ, PYTHONPATH=str(ROOT), TRACEJIT_PERSISTENT_CACHE=cache,
                   TRACEJIT_CACHE_DIR=str(folder))
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(source), mode], env=env,
                              capture_output=True, text=True, timeout=240, check=False)
        assert done.returncode == 0 and not done.stderr, (mode, cache, done.stderr)
        assert done.stdout.split() == ["True", "0"], (mode, cache, done.stdout)
        # (5 programs; with the cache on, their final code is stored, at the latest at exit)
        assert len(list(folder.glob("*.o"))) == (5 if cache == "1" else 0), (mode, cache)


def test_the_exit_finishes_pending_programs_for_its_seconds_only(tmp_path):
    """With the cache on, the exit makes and stores the final code of programs still pending
    for up to tracejit_exit_compile_seconds; those left are not stored, and the next process
    compiles them again and stores them at its exit. 20 programs, each called once while the
    thread is paused (so all 20 are pending at the exit): all stored with time enough (120 s:
    the default 2 s may not be, on a loaded machine); with 0 s only what the thread had in
    hand; then a process with time enough finds those (its disk-cache hits) and stores the
    rest."""
    source = """
        import numpy as np
        import tracejit, tracejit.numpy as tnp
        from tracejit.runtime import disk_cache, tiering
        x = np.linspace(-3, 3, 20000, dtype=np.float32)
        fs = [tracejit.jit(lambda v, k=k: tnp.sum(tnp.exp(v * np.float32(k / 20))))
              for k in range(20)]
        with tiering.paused():
            sums = [float(f(x)) for f in fs]
        want = [np.sum(np.exp(x * np.float32(k / 20)), dtype=np.float64) for k in range(20)]
        assert all(abs(s - w) <= 1e-5 * w for s, w in zip(sums, want))
        print(disk_cache.stats["hits"])
    """
    source = textwrap.dedent(source)
    counts = {}
    for name, seconds, folder in (("enough", "120", "a"), ("none", "0", "b"),
                                  ("after_none", "120", "b")):
        env = dict(os.environ, PYTHONPATH=str(ROOT), TRACEJIT_PERSISTENT_CACHE="1",
                   TRACEJIT_CACHE_DIR=str(tmp_path / folder),
                   TRACEJIT_EXIT_COMPILE_SECONDS=seconds)
        done = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True,
                              text=True, timeout=240, check=False)
        assert done.returncode == 0 and not done.stderr, (name, done.stderr)
        counts[name] = (int(done.stdout), len(list((tmp_path / folder).glob("*.o"))))
    assert counts["enough"] == (0, 20)
    hits, stored = counts["none"]
    assert hits == 0 and stored < 20
    assert counts["after_none"] == (stored, 20)
