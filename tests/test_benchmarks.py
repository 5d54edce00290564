"""The benchmark workloads (benchmarks/workloads.py) at tiny sizes: each runs natively with
tracejit and gives real JAX's numbers for the same inputs, so a table row measures a program
that computes the right thing."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from benchmarks import workloads
from tracejit import lax as tlax
from tracejit import random as trandom

jax = pytest.importorskip("jax")

# (name, builder at a tiny size, relative tolerance): float32 factorisations and FFTs differ
# from XLA's by reassociation; everything else is elementwise or a reduction. (The CNN row's
# program takes seconds to compile on both sides whatever its size, so it is not here.)
CASES = [
    ("cholesky solve", workloads.cholesky_solve(16), 1e-4),
    ("batched inverse", workloads.batched_inverse(3, 5), 1e-4),
    ("rfft", workloads.rfft(64), 1e-4),
    ("logsumexp", workloads.logsumexp(5, 33), 1e-6),
    ("fixed-point scan scalar", workloads.fixed_point(0), 1e-5),
    ("fixed-point scan 1000-vector", workloads.fixed_point(1000), 1e-5),
    ("while_loop Newton", workloads.newton_sqrt, 1e-6),
    ("fori_loop", workloads.fori, 1e-5),
    ("SDE", workloads.sde(20, False), 1e-5),
]


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("build,rtol", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_workload_matches_jax(build, rtol):
    fn, args = build(tracejit, tnp, tlax, trandom)
    ours = _leaves(fn(*args))
    jfn, jargs = build(jax, jax.numpy, jax.lax, jax.random)
    theirs = _leaves(jfn(*jargs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


def test_roofline_loops_compute_their_sums():
    """benchmarks/roofline.py's FMA and read loops against NumPy (a loop that computed nothing
    would measure nothing)."""
    from benchmarks import roofline
    _engine, fma, read = roofline._compile()
    a = np.float32(0.5) + np.arange(roofline._CHAINS, dtype=np.float32) / np.float32(64)
    for _ in range(7):  # (each step exact in float64, then rounded once: one fma's rounding)
        a = (a.astype(np.float64) * (1023 / 1024) + 1 / 1024).astype(np.float32)
    np.testing.assert_allclose(fma(7), a.astype(np.float64).sum(), rtol=1e-6)
    owner = np.zeros(64 * 10 * 4 + 64, np.uint8)
    start = -owner.ctypes.data % 64
    data = owner[start:start + 64 * 10 * 4].view(np.float32)
    data[:] = np.arange(data.size) % 7  # (integers: every order sums them exactly)
    # lane 0 of the 4 accumulators: elements 0, 16, 32, 48 of every 64
    assert read(data.ctypes.data, 10) == data.reshape(10, 4, 16)[:, :, 0].sum()


def test_opt_pipeline_measures_the_compilers_pipeline():
    """benchmarks/opt_pipeline.py's reference pipeline ("O3") is the one jit_engine runs: the
    same machine code as the compiler's own optimisation of a captured program module (else
    its '=' marks would compare against some other code); and a pipeline that changes the
    code (O1 without vectorisers, on a loop only the loop vectoriser vectorises) is told
    apart."""
    import hashlib

    from benchmarks import opt_pipeline
    from tracejit.backend import llvm_setup
    from tracejit.backend.llvm import jit_engine
    modules = opt_pipeline.capture(["sum 10M"])
    assert [row for row, _ in modules] == ["sum 10M"]  # (the program's module, no library's)
    text = modules[0][1]
    module = jit_engine.parse(text)
    llvm_setup.run_pipeline(module, speed_level=3, vectorize=True)
    compilers = hashlib.sha256(
        llvm_setup.pipeline_target_machine().emit_object(module)).hexdigest()
    assert opt_pipeline.optimise(text, 3, True, True)[1] == compilers
    loop = ("define void @f(ptr noalias %a, ptr noalias %b) {\nentry:\n  br label %head\n"
            "head:\n  %i = phi i64 [ 0, %entry ], [ %j, %head ]\n"
            "  %p = getelementptr inbounds float, ptr %a, i64 %i\n"
            "  %x = load float, ptr %p\n  %y = fmul float %x, 3.0\n"
            "  %q = getelementptr inbounds float, ptr %b, i64 %i\n  store float %y, ptr %q\n"
            "  %j = add i64 %i, 1\n  %c = icmp slt i64 %j, 4096\n"
            "  br i1 %c, label %head, label %exit\nexit:\n  ret void\n}\n")
    assert opt_pipeline.optimise(loop, 1, False, False)[1] != opt_pipeline.optimise(
        loop, 3, True, True)[1]
