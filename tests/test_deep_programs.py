"""Deep programs: thousands of equations in one chain compile natively (every graph walk of the
compiler and backend is iterative, none recurses once per equation) and compute what the
reference interpreter computes."""
import time

import numpy as np

import tracejit
import tracejit.numpy as tnp
from tracejit.compiler.fusion import MAX_KERNEL_DEPTH


def _compare(f, *args, rtol=1e-6):
    compiled = tracejit.jit(f, backend="native").lower(*args).compile()
    expected = tracejit.jit(f, backend="interpret")(*args)
    np.testing.assert_allclose(np.asarray(compiled(*args)), np.asarray(expected), rtol=rtol)
    return compiled


def _eqn_count(f, *args) -> int:
    return len(tracejit.jit(f).trace(*args).jaxpr.eqns)


def test_five_thousand_fused_elementwise_equations():
    def f(x):
        for _ in range(2500):
            x = x * 1.0001 + 0.5
        return x

    x = np.linspace(-1, 1, 257, dtype=np.float32)
    assert _eqn_count(f, x) == 5000
    start = time.perf_counter()
    compiled = _compare(f, x)
    print(f"5,000-equation fused chain: traced and compiled in {time.perf_counter() - start:.1f} s")
    # kernels of MAX_KERNEL_DEPTH equations (fusion cuts long chains): equal ones compile once
    assert compiled.as_text().count("// kernel") == -(-5000 // MAX_KERNEL_DEPTH)


def test_long_chain_of_fused_index_maps():
    """Transposes fused as index arithmetic, alternating with arithmetic: kernels of
    MAX_KERNEL_DEPTH equations."""
    def f(x):
        for _ in range(700):
            x = x.T * 1.0001 + 0.25
        return x

    x = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 7
    assert _eqn_count(f, x) == 2100
    compiled = _compare(f, x)
    assert compiled.as_text().count("// kernel") == -(-2100 // MAX_KERNEL_DEPTH)


def test_five_thousand_equations_with_unfusable_ops():
    """A cumulative sum every few ops cuts the chain into hundreds of kernels."""
    def f(x):
        for k in range(2300):
            x = x * 1.0001 + 0.5
            if k % 10 == 9:
                x = tnp.cumsum(x) * 1e-3
        return x

    x = np.linspace(0, 1, 64, dtype=np.float32)
    assert _eqn_count(f, x) > 5000
    compiled = _compare(f, x)
    assert compiled.as_text().count("// kernel") == 231
