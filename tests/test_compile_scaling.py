"""Compile-time structure (never timings): a program of many kernels is emitted as one small
function per kernel (codegen.lower_outlined), and gives bit for bit what the one-function
program gives, with donated buffers, host callbacks and scalar outputs among its equations."""
import re

import numpy as np

import tracejit
import tracejit.numpy as jnp
from tracejit.backend.llvm import codegen


def _program(x, y):
    # sin / cumsum / reversal / reduction: kernels, structural rules and index maps
    total = jnp.float32(0)
    for i in range(30):
        x = jnp.cumsum(jnp.sin(x)) * 0.001 + x[::-1] * 0.5
        y = y * 0.5 + jnp.cos(x[:, None] * y).mean(axis=0)
        total = total + x.sum()
    return x, y, total


def _both(f, *args, **jit_kw):
    """f's results compiled with every kernel outlined and with none."""
    old = codegen.OUTLINE_MIN_EQNS
    try:
        codegen.OUTLINE_MIN_EQNS = 1
        outlined = tracejit.jit(f, **jit_kw)(*[np.array(a) for a in args])
        codegen.OUTLINE_MIN_EQNS = 10 ** 9
        inline = tracejit.jit(f, **jit_kw)(*[np.array(a) for a in args])
    finally:
        codegen.OUTLINE_MIN_EQNS = old
    return outlined, inline


def test_outlined_kernels_match_one_function_bit_for_bit():
    x = np.linspace(0, 1, 300, dtype=np.float32)
    y = np.linspace(-1, 1, 7, dtype=np.float32)
    outlined, inline = _both(_program, x, y)
    for a, b in zip(outlined, inline):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with tracejit.disable_jit():
        ref = _program(x, y)
    for a, b in zip(outlined, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_big_program_gets_a_function_per_kernel_each_compiled_once():
    x = np.linspace(0, 1, 64, dtype=np.float32)

    def chain(x):
        for i in range(codegen.OUTLINE_MIN_EQNS):
            x = jnp.cumsum(jnp.sin(x * (1.0 + (i % 3))))
        return x
    text = tracejit.jit(chain).lower(x).compile().as_text(dialect="llvm")
    # one function per distinct kernel (x*c+sin fused for three constants, and cumsum), each in
    # a module of its own that the program declares
    declared = re.findall(r"declare [\w ]*void @(tjk_\w+)", text)
    defined = re.findall(r"define [\w ]*void @(tjk_\w+)", text)
    assert len(declared) == 4 and set(declared) <= set(defined)
    small = tracejit.jit(lambda x: jnp.cumsum(jnp.sin(x))).lower(x).compile()
    assert "@tjk_" not in small.as_text(dialect="llvm")
    with tracejit.disable_jit():
        np.testing.assert_allclose(np.asarray(tracejit.jit(chain)(x)), np.asarray(chain(x)),
                                   rtol=1e-5)


def test_kernels_differing_only_in_a_zero_sign_are_not_shared():
    def f(x):
        outs = []
        for i in range(40):
            outs.append(jnp.pad(x, 1, constant_values=0.0 if i % 2 else -0.0))
        return jnp.stack(outs)
    x = np.ones(3, np.float32)
    outlined, inline = _both(f, x)
    bits = np.asarray(outlined).view(np.uint32)
    np.testing.assert_array_equal(bits, np.asarray(inline).view(np.uint32))
    assert np.signbit(np.asarray(outlined)[0, 0]) and not np.signbit(np.asarray(outlined)[1, 0])


def test_kernel_with_temporaries_is_emitted_per_use():
    # sort and argsort need workspace of their own: reusing one function for two calls would
    # let the second clobber slots that hold other live values by then
    def f(x):
        total = x
        for i in range(20):
            total = total + jnp.sort(x * (i + 1)) - jnp.argsort(-x).astype(x.dtype)
        return total
    x = np.random.default_rng(0).standard_normal(33).astype(np.float32)
    outlined, inline = _both(f, x)
    np.testing.assert_array_equal(np.asarray(outlined), np.asarray(inline))
    with tracejit.disable_jit():
        np.testing.assert_allclose(np.asarray(outlined), np.asarray(f(jnp.asarray(x))),
                                   rtol=1e-5)


def test_outlined_in_place_update_of_a_donated_input():
    def f(x):
        for i in range(8):
            x = x.at[i].set(x[i + 1] * 2.0) + 1.0
        return x
    x = np.arange(16, dtype=np.float32)
    outlined, inline = _both(f, x, donate_argnums=0)
    np.testing.assert_array_equal(np.asarray(outlined), np.asarray(inline))
    with tracejit.disable_jit():
        np.testing.assert_array_equal(np.asarray(outlined), np.asarray(f(jnp.asarray(x))))


def test_outlined_host_callback(capsys):
    def f(x):
        x = jnp.sin(x)
        tracejit.debug.print("mid {}", x.sum())
        return jnp.cumsum(x)
    x = np.linspace(0, 1, 16, dtype=np.float32)
    outlined, inline = _both(f, x)
    np.testing.assert_array_equal(np.asarray(outlined), np.asarray(inline))
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and printed[0] == printed[1]


def _ir(f, x) -> str:
    from tracejit.compiler.passes import optimize
    from tracejit.core.jaxpr import ClosedJaxpr
    closed = tracejit.make_jaxpr(f)(x)
    jaxpr, consts = optimize(closed.jaxpr, closed.consts)
    return codegen.generate(ClosedJaxpr(jaxpr, consts), "entry").ir_text


def test_large_loop_body_over_few_elements_is_not_vectorized():
    def chain(x):
        for _ in range(30):  # ~30 x 57 instructions: past VECTORIZE_MAX_BODY
            x = jnp.arcsinh(x)
        return x
    off = '!"llvm.loop.vectorize.enable", i1 0'
    n = 4 * codegen.VECTORIZE_COLD_ELEMENTS  # (below that, no loop is vectorized)
    assert off in _ir(chain, np.ones(n, np.float32))
    assert off not in _ir(chain, np.ones(codegen.VECTORIZE_MIN_ELEMENTS, np.float32))
    assert off not in _ir(lambda x: jnp.arcsinh(x) * 2, np.ones(n, np.float32))
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    with tracejit.disable_jit():
        ref = np.asarray(chain(jnp.asarray(x)))
    np.testing.assert_allclose(np.asarray(tracejit.jit(chain)(x)), ref, rtol=1e-5, atol=1e-6)


def test_trig_slow_path_is_a_scalar_call_in_small_loops_and_a_vector_call_in_large_ones():
    """sin/cos/tan of huge arguments (Payne-Hanek) call a routine compiled once per process:
    in loops over few elements (and in scalar code) the scalar routine, in loops LLVM
    vectorises its masked vector variants (one call per vector); both give NumPy's values
    (float32 sin/cos within 2 ulp, tan through float64)."""
    rng = np.random.default_rng(0)
    for n in (codegen.INLINE_SLOW_PATH_MIN_ELEMENTS // 2, codegen.INLINE_SLOW_PATH_MIN_ELEMENTS):
        x = (rng.uniform(-1, 1, n) * np.float32(10.0) ** rng.integers(0, 30, n)).astype(
            np.float32)
        f = tracejit.jit(lambda x: (jnp.sin(x), jnp.cos(x * 0.5), jnp.tan(x)))
        text = f.lower(x).compile().as_text(dialect="llvm")
        scalar = re.findall(r"call \w+ @tracejit_(\w+)_big_f(?:32|64)\(", text)
        vector = re.findall(r"call <\d+ x \w+> @tracejit_(\w+)_big_f(?:32|64)_[mn]\d+\(", text)
        if n >= codegen.INLINE_SLOW_PATH_MIN_ELEMENTS:
            assert sorted(set(vector)) == ["cos", "sin", "tan"]
        else:
            assert sorted(set(scalar)) == ["cos", "sin", "tan"] and not vector
        for ours, ref in zip(f(x), (np.sin(x), np.cos(x * np.float32(0.5)), np.tan(x))):
            np.testing.assert_allclose(np.asarray(ours), ref, rtol=3e-7, atol=1e-37)
    # a while body runs many times: its loop over 1000 elements vectorises (vector calls), its
    # scalar code calls the scalar routine
    def newton_like(x):
        return tracejit.lax.while_loop(lambda s: s[1] < 3,
                                       lambda s: (jnp.cos(s[0]) * 1.5, s[1] + 1), (x, 0))[0]
    for x in (np.linspace(-1e6, 1e6, 1000, dtype=np.float32), np.float32(1e6)):
        text = tracejit.jit(newton_like).lower(x).compile().as_text(dialect="llvm")
        assert bool(re.search(r"@tracejit_cos_big_f32_[mn]\d+\(", text)) == (x.ndim == 1)
        assert "call float @tracejit_cos_big_f32(" in text or x.ndim == 1
        ref = x
        for _ in range(3):
            ref = np.cos(ref) * np.float32(1.5)
        np.testing.assert_allclose(np.asarray(tracejit.jit(newton_like)(x)), ref, rtol=1e-5,
                                   atol=1e-6)
    # scalar code: a fixed-point scan over a huge start skips the slow path after one step
    scan = tracejit.jit(lambda c: tracejit.lax.scan(lambda c, _: (jnp.cos(c), None), c, None,
                                                    length=5)[0])
    ref = np.float32(1e20)
    for _ in range(5):
        ref = np.cos(ref)
    np.testing.assert_allclose(np.asarray(scan(np.float32(1e20))), ref, rtol=1e-6)
