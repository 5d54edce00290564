"""Floating-point contraction under jit (backend/llvm/scalar_ops.py `_contract`): a float32 or
float64 product whose only reader adds or subtracts it is one fma, rounded once, as XLA's CPU
compiler contracts it, so jit returns JAX's bits; eager rounds the product first, as JAX's eager
ops do. Oracles: the exact fma of lax's reference (`_fma_impl`) and real JAX's jit."""
import re

import numpy as np
import pytest
from tolerance import native

import tracejit
import tracejit.numpy as tnp
from tracejit.backend.llvm import codegen, jit_engine
from tracejit.compiler.passes import optimize
from tracejit.core.jaxpr import ClosedJaxpr
from tracejit.lax.elementwise import _fma_impl

# (name, f(numpy module, x, a, b, d), the same value as one fma of NumPy arrays (None:
# eager's rounding of each operation))
CASES = [
    ("x*a+b", lambda m, x, a, b, d: x * a + b, lambda x, a, b, d: _fma_impl(x, a, b)),
    ("b+x*a", lambda m, x, a, b, d: b + x * a, lambda x, a, b, d: _fma_impl(x, a, b)),
    ("x*a-b", lambda m, x, a, b, d: x * a - b, lambda x, a, b, d: _fma_impl(x, a, -b)),
    ("b-x*a", lambda m, x, a, b, d: b - x * a, lambda x, a, b, d: _fma_impl(-x, a, b)),
    ("x*x+b", lambda m, x, a, b, d: x * x + b, lambda x, a, b, d: _fma_impl(x, x, b)),
    ("square(x)+b", lambda m, x, a, b, d: m.square(x) + b,
     lambda x, a, b, d: _fma_impl(x, x, b)),
    ("x**3+b", lambda m, x, a, b, d: x ** 3 + b, lambda x, a, b, d: _fma_impl(x * x, x, b)),
    # the first operand's product is contracted, the second rounded (LLVM's order, as XLA's)
    ("x*a+b*d", lambda m, x, a, b, d: x * a + b * d, lambda x, a, b, d: _fma_impl(x, a, b * d)),
    ("x*a-b*d", lambda m, x, a, b, d: x * a - b * d,
     lambda x, a, b, d: _fma_impl(x, a, -(b * d))),
    # under a negation: -A + B is B - A, A - -B is A + B; -(x*a) - b is one fma too (XLA's;
    # before, -(x*a) - b alone rounded its product)
    ("-(x*a)+b", lambda m, x, a, b, d: -(x * a) + b, lambda x, a, b, d: _fma_impl(-x, a, b)),
    ("b-(-(x*a))", lambda m, x, a, b, d: b - (-(x * a)), lambda x, a, b, d: _fma_impl(x, a, b)),
    ("-(x*a)-b", lambda m, x, a, b, d: -(x * a) - b, lambda x, a, b, d: _fma_impl(-x, a, -b)),
    ("-(x*a)+b*d", lambda m, x, a, b, d: -(x * a) + b * d,
     lambda x, a, b, d: _fma_impl(b, d, -(x * a))),
    # a product that is also a result is stored rounded and read back, in XLA's code and ours
    ("x*a, x*a+b", lambda m, x, a, b, d: (x * a, x * a + b), None),
]


# the reference interpreter rounds every operation under jit too, as eager ops do
native_only = pytest.mark.skipif(not native(), reason="contraction is the native backend's")


def _operands(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(4)]


def _last(out):
    return np.asarray(out[-1] if isinstance(out, tuple) else out)


@pytest.mark.parametrize("shape", [(), (7,), (4096,)], ids=["scalar", "short", "vectorised"])
@pytest.mark.parametrize("name,f,fused", CASES, ids=[c[0] for c in CASES])
def test_product_and_sum_round_once(name, f, fused, shape):
    ops = _operands(np.float32, shape)
    got = _last(tracejit.jit(f, static_argnums=0)(tnp, *ops))
    if fused is None or not native():
        expected = _last(f(tnp, *[tnp.asarray(v) for v in ops]))  # eager: rounded twice
    else:
        expected = fused(*ops)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


@native_only
@pytest.mark.parametrize("name,f,fused", CASES, ids=[c[0] for c in CASES])
def test_jit_matches_jax_bits(name, f, fused, jax):
    ops = _operands(np.float32, (4096,), seed=1)
    got = _last(tracejit.jit(f, static_argnums=0)(tnp, *ops))
    expected = _last(jax.jit(f, static_argnums=0)(jax.numpy, *ops))
    if fused is not None:  # (otherwise the case would not test contraction)
        assert (expected != _last(f(np, *ops))).any()
    np.testing.assert_array_equal(got, expected)


@native_only
def test_float64_contracts(x64, jax):
    ops = _operands(np.float64, (4096,), seed=2)
    f = CASES[0][1]
    got = np.asarray(tracejit.jit(f, static_argnums=0)(tnp, *ops))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, _fma_impl(*ops[:3]))
    np.testing.assert_array_equal(got, np.asarray(jax.jit(f, static_argnums=0)(jax.numpy, *ops)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_round_every_operation(dtype, jax):
    """XLA rounds each float16/bfloat16 operation (JAX's jit equals its eager ops): no fma."""
    ops = [tnp.asarray(v).astype(dtype) for v in _operands(np.float32, (4096,), seed=3)]
    f = CASES[0][1]
    got = np.asarray(tracejit.jit(f, static_argnums=0)(tnp, *ops)).astype(np.float32)
    eager = np.asarray(f(tnp, *ops)).astype(np.float32)
    theirs = np.asarray(jax.jit(f, static_argnums=0)(
        jax.numpy, *[jax.numpy.asarray(np.asarray(v)) for v in ops]))
    np.testing.assert_array_equal(got, eager)
    np.testing.assert_array_equal(got, theirs.astype(np.float32))


@native_only
def test_fori_loop_carry_contracts(jax):
    """The benchmark's `fori_loop` (x * 0.999 + 0.001, 10k steps): one fma a step, JAX's bits
    from several starts (unfused, 9 of 10 of these starts end elsewhere)."""
    def run(lib, x):
        return lib.jit(lambda x: lib.lax.fori_loop(0, 10_000, lambda i, x: x * 0.999 + 0.001,
                                                    x))(x)
    starts = np.array([1.0, 0.5, -3.0, 7.25, -5.3566923, 3.6159487, 1e-3, 40.0], np.float32)
    a, b = np.full_like(starts, 0.999), np.full_like(starts, 0.001)
    fused, unfused = starts.copy(), starts.copy()
    for _ in range(10_000):
        fused, unfused = _fma_impl(fused, a, b), unfused * a + b
    assert (fused != unfused).sum() >= 4
    for k, x in enumerate(starts):
        got = np.asarray(run(tracejit, x))
        assert got == np.asarray(run(jax, x)), (x, got)
        assert got == fused[k], (x, got)


# which of a sum's two products is contracted, when a math function's code lies between them
# (its range reduction or slow path is a branch in scalar code, none in the vector body)
_BETWEEN = [
    ("x*b + f(x)*a", lambda f, x, a, b: x * b + f(x) * a,
     lambda x, a, b, s: _fma_impl(x, b, s * a)),
    ("f(x)*a + x*b", lambda f, x, a, b: f(x) * a + x * b,
     lambda x, a, b, s: _fma_impl(s, a, x * b)),
    ("x*b - f(x)*a", lambda f, x, a, b: x * b - f(x) * a,
     lambda x, a, b, s: _fma_impl(x, b, -(s * a))),
    ("f(x)*a - x*b", lambda f, x, a, b: f(x) * a - x * b,
     lambda x, a, b, s: _fma_impl(s, a, -(x * b))),
]


@native_only
@pytest.mark.parametrize("n", [1, 7, 1001, 4096, 4099])
@pytest.mark.parametrize("fn", ["sin", "cos", "tan", "exp", "log", "tanh"])
@pytest.mark.parametrize("name,f,fused", _BETWEEN, ids=[c[0] for c in _BETWEEN])
def test_the_first_product_contracts_across_a_math_functions_branches(name, f, fused, fn, n):
    """The first operand's product, in the vector body and the scalar remainder alike (before:
    the remainder's instruction selection, one block at a time, could not see a product left
    before sin's branch and contracted the other). Oracle: the function's own jit bits."""
    rng = np.random.default_rng(n)
    x, a, b = rng.standard_normal((3, n)).astype(np.float32) * np.float32(3)
    if fn == "log":
        x = np.abs(x) + np.float32(0.1)
    g = getattr(tnp, fn)
    s = np.asarray(tracejit.jit(g)(x))
    got = np.asarray(tracejit.jit(lambda x, a, b: f(g, x, a, b))(x, a, b))
    np.testing.assert_array_equal(got, fused(x, a, b, s))


def _chain(m, x, a, b, d):  # 120 equations: its kernel is outlined (a module of its own)
    for _ in range(30):
        x = m.sin(x) * a + x * b
    return x


@pytest.mark.parametrize("name,f,fused", [*CASES, ("chain", _chain, True)],
                         ids=[c[0] for c in CASES] + ["chain"])
def test_our_ir_has_the_fmas_and_no_contract_flag(name, f, fused):
    """The fmas are chosen in the IR codegen hands LLVM (backend/llvm/contraction.py), the
    main module's and each outlined kernel's: no `contract` flag is left for instruction
    selection to act on, block by block, so O0's code generation is exact for them too."""
    ops = _operands(np.float32, (1001,))
    closed = tracejit.make_jaxpr(lambda *a: f(tnp, *a))(*ops)
    program = codegen.generate(ClosedJaxpr(*optimize(closed.jaxpr, list(closed.consts))), "f")
    texts = [program.ir_text, *program.kernels.values()]
    assert (len(program.kernels) > 0) == (name == "chain")
    assert not any(re.search(r"\bcontract\b", t) for t in texts)
    assert any("llvm.fma." in t for t in texts) == (fused is not None)
    assert all(jit_engine.fast_codegen_exact(t) for t in texts)
