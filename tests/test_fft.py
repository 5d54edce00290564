"""lax.fft and jnp.fft: the native FFT (backend/llvm/fft.py) against pocketfft run in long
double, over every size class the generator treats differently (radix 2/3/4/5, the generic
odd-radix step, Bluestein); jnp.fft's API, dtypes and errors against real JAX; gradients
against finite differences and JAX's vjp; vmap against a loop."""
import math

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax
from tracejit.backend.llvm.fft import _bluestein_size, _radices

jax = pytest.importorskip("jax")
jnp = jax.numpy

SMALL = list(range(1, 65))
PRIMES = [97, 1009, 4099]
POW2 = [2 ** k for k in range(7, 17)]
MIXED = [90, 144, 225, 360, 750, 1296, 3000, 3375, 6000]  # 2^a 3^b 5^c
ODD_RADIX = [77, 91, 143, 1001, 323, 2 * 4099]  # 7/11/13 steps; 17*19 and 2*4099: Bluestein


def error_bound(n: int, eps: float) -> float:
    """Normwise relative error tolerance of our FFT of length n. Worst case (Higham, Accuracy
    and Stability, thm 24.2): log2(n) (mu + gamma_4 (sqrt 2 + mu)) with mu the twiddles' error
    (<= 4.3 float64 ulps: products of two float64 roots; 0.5 ulp once rounded to float32),
    about 11 eps log2 n. Rounding errors of successive stages are independent and add in
    quadrature, so the observed error is far smaller (0.1-0.2 eps log2 n, README's table); the
    tolerance sits between, at eps (2 + 2 log2 n), so a real regression (a wrong twiddle, a
    lost guard) fails it. Bluestein does three power-of-two FFTs of size M and two chirp
    products: eps (4 + 6 log2 M)."""
    if n <= 1:
        return 2 * eps
    if _radices(n) is None:
        m = _bluestein_size(n)
        return eps * (4 + 6 * math.log2(m))
    return eps * (2 + 2 * math.log2(n))


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    """||got - ref|| / ||ref|| along the last axis, the worst row."""
    diff = np.linalg.norm((got - ref).astype(np.complex128), axis=-1)
    norm = np.linalg.norm(ref.astype(np.complex128), axis=-1)
    return float(np.max(diff / np.maximum(norm, 1e-300)))


def _signals(rng, n: int, complex_dtype, batch: int = 3) -> np.ndarray:
    x = rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))
    return x.astype(complex_dtype)


def _check_sizes(sizes, complex_dtype, rng, kinds=("fft", "ifft", "rfft", "irfft")) -> None:
    """The FFT types of every size, a few sizes per jitted program (LLVM's optimiser takes
    superlinear time in the size of one program)."""
    eps = float(np.finfo(complex_dtype).eps)
    real_dtype = np.finfo(complex_dtype).dtype
    references = {"fft": lambda x, n: np.fft.fft(x), "ifft": lambda x, n: np.fft.ifft(x),
                  "rfft": lambda x, n: np.fft.rfft(x), "irfft": lambda x, n: np.fft.irfft(x, n)}
    for start in range(0, len(sizes), 8):
        chunk = sizes[start:start + 8]
        xs = [_signals(rng, n, complex_dtype) for n in chunk]
        for kind in kinds:
            if kind == "rfft":
                inputs = [x.real.astype(real_dtype) for x in xs]
            elif kind == "irfft":
                inputs = [x[:, :n // 2 + 1] for x, n in zip(xs, chunk)]
            else:
                inputs = xs
            f = tracejit.jit(lambda *a, kind=kind, chunk=chunk: [
                tlax.fft(x, kind, (n,)) for x, n in zip(a, chunk)])
            for n, x, got in zip(chunk, inputs, f(*inputs)):
                got = np.asarray(got)
                wide = np.longdouble if kind == "rfft" else np.clongdouble
                ref = references[kind](x.astype(wide), n)
                assert got.shape == ref.shape, (kind, n)
                err = rel_error(got, ref)
                assert err <= error_bound(n, eps), (kind, n, err / eps)


@pytest.mark.parametrize("sizes", [SMALL, PRIMES, POW2, MIXED, ODD_RADIX],
                         ids=["1..64", "primes", "pow2", "mixed235", "odd-radix"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_native_fft_sizes_against_pocketfft(sizes, dtype, rng, x64):
    # (sizes 1..64: two kinds per dtype, all four between them; compiling 64 sizes of all
    # four kinds in both dtypes takes minutes on a shared machine)
    kinds = ("fft", "ifft", "rfft", "irfft")
    if sizes is SMALL:
        kinds = ("fft", "irfft") if dtype == "complex128" else ("ifft", "rfft")
    _check_sizes(sizes, np.dtype(dtype), rng, kinds)


def test_large_power_of_two_float32(rng):
    n = 2 ** 16 * 4
    x = rng.standard_normal(n).astype(np.float32)
    got = np.asarray(tracejit.jit(lambda x: tlax.fft(x, "rfft", (n,)))(x))
    ref = np.fft.rfft(x.astype(np.longdouble))
    assert rel_error(got, ref) <= error_bound(n, float(np.finfo(np.float32).eps))


@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("lengths", [(6, 10), (4, 5, 9), (3, 97)])
def test_native_multidimensional(kind, lengths, rng, x64):
    shape = (2,) + lengths
    axes = tuple(range(1, len(shape)))
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if kind == "rfft":
        x, ref = x.real, np.fft.rfftn(x.real, axes=axes)
    elif kind == "irfft":
        noise = 0.1 * x[..., :lengths[-1] // 2 + 1]  # (not Hermitian: irfft's parts it ignores)
        x = np.fft.rfftn(rng.standard_normal(shape), axes=axes) + noise
        ref = np.fft.irfftn(x, lengths, axes=axes)
    else:
        ref = (np.fft.fftn if kind == "fft" else np.fft.ifftn)(x, axes=axes)
    got = np.asarray(tracejit.jit(lambda x: tlax.fft(x, kind, lengths))(x))
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.abs(ref).max())


def test_eager_matches_native(rng):
    x = rng.standard_normal((4, 30)).astype(np.float32)
    eager = np.asarray(tlax.fft(x, "rfft", (30,)))
    native = np.asarray(tracejit.jit(lambda x: tlax.fft(x, "rfft", (30,)))(x))
    assert eager.dtype == native.dtype == np.complex64
    np.testing.assert_allclose(native, eager, rtol=0, atol=1e-5 * np.abs(eager).max())


def test_empty_and_length_one(x64):
    for f in (tracejit.jit(tnp.fft.fft), tnp.fft.fft):
        assert f(np.zeros((3, 0))).shape == (3, 0)
    got = tracejit.jit(lambda x: tnp.fft.irfft(x))(np.ones((2, 1), np.complex128))
    assert got.shape == (2, 0)
    np.testing.assert_array_equal(tracejit.jit(tnp.fft.fft)(np.arange(3.0)[:, None]),
                                  np.arange(3.0)[:, None])


# --- jnp.fft against real JAX ----------------------------------------------------------------

API_CASES = [
    ("fft", {}), ("fft", dict(n=6)), ("fft", dict(n=11, axis=1, norm="ortho")),
    ("ifft", dict(norm="forward")), ("ifft", dict(n=3, axis=0)),
    ("rfft", dict(n=9)), ("rfft", dict(axis=0, norm="ortho")), ("irfft", dict(n=7, axis=0)),
    ("irfft", dict(norm="forward")), ("hfft", dict(n=5)), ("hfft", dict(norm="ortho")),
    ("ihfft", dict(norm="forward")), ("ihfft", dict(n=4, axis=1)),
    ("fft2", dict(s=(4, 9))), ("ifft2", dict(axes=(0, 2))), ("rfft2", {}),
    ("irfft2", dict(s=(4, 6))), ("fftn", dict(axes=(2, 0))), ("ifftn", dict(s=(2, 3, 4))),
    ("rfftn", dict(norm="ortho")), ("irfftn", dict(axes=(0, 1))), ("fftn", dict(s=(3, 2))),
]
REAL_ONLY = {"rfft", "rfft2", "rfftn", "ihfft"}


@pytest.mark.parametrize("name,kwargs", API_CASES, ids=[f"{n}-{k}" for n, k in API_CASES])
@pytest.mark.parametrize("use_jit", [False, True], ids=["eager", "jit"])
def test_jnp_fft_matches_jax(name, kwargs, use_jit, rng):
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    inputs = [x] + ([] if name in REAL_ONLY else [(x + 1j * x[::-1]).astype(np.complex64)])
    for a in inputs:
        expected = getattr(jnp.fft, name)(a, **kwargs)
        f = getattr(tnp.fft, name)
        got = tracejit.jit(lambda a, f=f: f(a, **kwargs))(a) if use_jit else f(a, **kwargs)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        scale = np.abs(np.asarray(expected)).max()
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=0,
                                   atol=2e-6 * scale)


def test_jnp_fft_dtypes_match_jax(x64):
    for name in ("fft", "rfft", "ifft", "irfft", "fftn"):
        for a in (np.arange(8), np.arange(8.0), np.arange(8, dtype=np.float32)):
            assert getattr(tnp.fft, name)(a).dtype == getattr(jnp.fft, name)(a).dtype


def test_frequencies_and_shifts_match_jax(rng):
    for n, d in ((7, 0.3), (8, 2.0), (1, 1.0)):
        for name in ("fftfreq", "rfftfreq"):
            got, expected = getattr(tnp.fft, name)(n, d), getattr(jnp.fft, name)(n, d)
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert tnp.fft.fftfreq(4, dtype=np.float16).dtype == jnp.fft.fftfreq(4, dtype=np.float16).dtype
    x = rng.standard_normal((4, 5, 3))
    for axes in (None, 1, (0, 2)):
        for name in ("fftshift", "ifftshift"):
            np.testing.assert_array_equal(getattr(tnp.fft, name)(x, axes),
                                          getattr(jnp.fft, name)(x, axes))


BAD_CALLS = [
    ("fft", (np.ones(4),), dict(norm="bad")),
    ("fft", (np.ones(4),), dict(n=0)),
    ("fftn", (np.ones((4, 4)),), dict(axes=(0, 0))),
    ("fft", (np.ones(4),), dict(axis=(0, 1))),
    ("fft2", (np.ones((4, 4, 4)),), dict(axes=(0,))),
    ("fftn", (np.ones((4, 4)),), dict(s=(2,), axes=(0, 1))),
    ("rfft", (np.ones(4, np.complex64),), {}),
    ("hfft", (np.ones(3),), dict(n=0)),
    ("fftfreq", ((4, 2),), {}),
    ("rfftfreq", (4, [1.0]), {}),
    ("fft", ([1.0, 2.0],), {}),
]


@pytest.mark.parametrize("name,args,kwargs", BAD_CALLS)
def test_errors_match_jax(name, args, kwargs):
    with pytest.raises(Exception) as expected:
        getattr(jnp.fft, name)(*args, **kwargs)
    with pytest.raises(type(expected.value)) as got:
        getattr(tnp.fft, name)(*args, **kwargs)
    if type(expected.value) is ValueError:
        assert str(got.value) == str(expected.value)


LAX_BAD = [
    (np.ones(4, np.float32), "rfft", (5,)),
    (np.ones(4, np.complex64), "rfft", (4,)),
    (np.ones((2, 3), np.complex64), "irfft", (3, 4)),
    (np.ones(4, np.complex64), "fft", (4, 4)),
    (np.ones(4, np.complex64), "fft", (3,)),
    (np.ones(4, np.complex64), "wavelet", (4,)),
    (np.ones(10, np.complex64), "irfft", (8,)),
    (np.ones(3, np.complex64), "irfft", (8,)),
]


@pytest.mark.parametrize("x,kind,lengths", LAX_BAD)
def test_lax_errors_match_jax(x, kind, lengths):
    with pytest.raises(Exception) as expected:
        jax.lax.fft(x, kind, lengths)
    if kind == "irfft" and x.shape[-1] != lengths[-1] // 2 + 1:  # (XLA's own error text)
        with pytest.raises(ValueError, match="IRFFT requires innermost dimension"):
            tlax.fft(x, kind, lengths)
        return
    with pytest.raises(type(expected.value)) as got:
        tlax.fft(x, kind, lengths)
    assert str(got.value) == str(expected.value)


# --- transformations -------------------------------------------------------------------------

def _finite_difference_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("n", [8, 9])
def test_grads_against_finite_differences(n, rng, x64):
    w = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
    v = rng.standard_normal(n)

    def loss_rfft(x, m=tnp):  # a real scalar of the spectrum: both its parts are exercised
        y = m.fft.rfft(x)
        return m.sum(m.real(y * w)) + m.sum(m.abs(y) ** 2) / n

    def loss_irfft(z, m=tnp):
        y = m.fft.irfft(z[0] + 1j * z[1], n)
        return m.sum(y * v) + m.sum(y ** 3)

    def loss_fft2(x, m=tnp):
        y = m.fft.fft2(x[0] + 1j * x[1], norm="ortho")
        return m.sum(m.imag(y) ** 2) + m.sum(m.real(y) * m.arange(y.size).reshape(y.shape))

    for loss, x in ((loss_rfft, rng.standard_normal(n)),
                    (loss_irfft, rng.standard_normal((2, n // 2 + 1))),
                    (loss_fft2, rng.standard_normal((2, 3, n)))):
        numeric = _finite_difference_grad(lambda x, loss=loss: float(loss(x, np)), x)
        for g in (tracejit.grad(loss), tracejit.jit(tracejit.grad(loss))):
            np.testing.assert_allclose(np.asarray(g(x)), numeric, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(tracejit.grad(loss)(x)),
                                   np.asarray(jax.grad(lambda x, loss=loss: loss(x, jnp))(x)),
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind,n", [("rfft", 8), ("rfft", 7), ("irfft", 8), ("irfft", 7),
                                    ("fft", 6), ("ifft", 5)])
def test_jvp_and_vjp_match_jax(kind, n, rng, x64):
    m = n // 2 + 1
    shape = {"rfft": (2, n), "irfft": (2, m)}.get(kind, (2, n))
    x = rng.standard_normal(shape)
    if kind != "rfft":
        x = x + 1j * rng.standard_normal(shape)
    t = np.linspace(-1, 1, x.size).reshape(x.shape).astype(x.dtype)
    if x.dtype.kind == "c":
        t = t + 0.5j
    lengths = (n,)
    out, t_out = tracejit.jvp(lambda x: tlax.fft(x, kind, lengths), (x,), (t,))
    j_out, j_t_out = jax.jvp(lambda x: jax.lax.fft(x, kind, lengths), (x,), (t,))
    np.testing.assert_allclose(np.asarray(out), np.asarray(j_out), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(t_out), np.asarray(j_t_out), rtol=1e-12, atol=1e-12)
    ct = rng.standard_normal(j_out.shape)
    if j_out.dtype.kind == "c":
        ct = ct + 1j * rng.standard_normal(j_out.shape)
    _, pullback = tracejit.vjp(lambda x: tlax.fft(x, kind, lengths), x)
    _, j_pullback = jax.vjp(lambda x: jax.lax.fft(x, kind, lengths), x)
    (got,), (expected,) = pullback(ct), j_pullback(ct)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-12, atol=1e-12)
    jitted = tracejit.jit(lambda x, ct: tracejit.vjp(lambda x: tlax.fft(x, kind, lengths),
                                                        x)[1](ct))
    np.testing.assert_allclose(np.asarray(jitted(x, ct)[0]), np.asarray(expected),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_vmap_matches_loop(in_axes, rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    f = lambda x: tnp.fft.rfft2(x, norm="ortho")  # noqa: E731
    loop = np.stack([np.asarray(f(np.take(x, i, axis=in_axes)))
                     for i in range(x.shape[in_axes])])
    for g in (tracejit.vmap(f, in_axes=in_axes), tracejit.jit(tracejit.vmap(f, in_axes))):
        np.testing.assert_allclose(np.asarray(g(x)), loop, rtol=0, atol=1e-5)
    y = (x + 1j).astype(np.complex64)
    h = lambda y: tlax.fft(y, "ifft", y.shape[-1:])  # noqa: E731
    loop = np.stack([np.asarray(h(np.take(y, i, axis=in_axes)))
                     for i in range(y.shape[in_axes])])
    np.testing.assert_allclose(np.asarray(tracejit.jit(tracejit.vmap(h, in_axes))(y)), loop,
                               rtol=0, atol=1e-6)


@pytest.mark.parametrize("shape", [(1000, 30), (7, 3, 97), (5000, 2)])
def test_many_lines_with_a_partial_last_tile(shape, rng):
    """Lines are transformed a tile at a time; the last tile overlaps the one before it when
    the line count is not a multiple of the tile."""
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    got = np.asarray(tracejit.jit(lambda x: tlax.fft(x, "fft", shape[-1:]))(x))
    ref = np.fft.fft(x.astype(np.clongdouble))
    assert rel_error(got, ref) <= error_bound(shape[-1], float(np.finfo(np.float32).eps))


# even n: rfft/irfft through a complex FFT of n/2 (194 = 2 * 97 halves to a Bluestein length,
# 2 and 6 to the smallest); odd n: the full-length path beside them
HALF_LENGTH = [2, 6, 98, 194, 1000, 7]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_real_transforms_through_half_length(dtype, rng, x64):
    _check_sizes(HALF_LENGTH, np.dtype(dtype), rng, kinds=("rfft", "irfft"))


# many lines: tiles run in chunks on the thread pool (75 lines: a partial last tile)
PARALLEL_CASES = [("rfft", (75, 1024), np.float32), ("irfft", (75, 1024), np.complex64),
                  ("fft", (75, 1000), np.complex64), ("rfft", (40, 2 * 97 * 4), np.float64)]


@pytest.mark.parametrize("kind,shape,dtype", PARALLEL_CASES,
                         ids=[f"{k}-{s[1]}-{np.dtype(d).name}" for k, s, d in PARALLEL_CASES])
def test_parallel_lines_bit_identical_across_threads(kind, shape, dtype, rng, threads, x64):
    from tracejit.backend.llvm import thread_pool
    n = shape[-1]
    x = rng.standard_normal(shape)
    if kind == "irfft":
        x = np.fft.rfft(x) + 0.1j * rng.standard_normal((shape[0], n // 2 + 1))
    elif kind == "fft":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    f = tracejit.jit(lambda x: tlax.fft(x, kind, (n,)))
    assert thread_pool.SYMBOL in f.lower(x).compile().as_text(dialect="llvm")
    results = []
    for count in (1, 2, 3):
        threads(count)
        results.append(np.asarray(f(x)))
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    wide = x.astype(np.clongdouble if x.dtype.kind == "c" else np.longdouble)
    ref = {"rfft": np.fft.rfft, "fft": np.fft.fft,
           "irfft": lambda z: np.fft.irfft(z, n)}[kind](wide)
    eps = float(np.finfo(dtype).eps)
    assert rel_error(results[0], ref) <= error_bound(n, eps)


@pytest.mark.parametrize("cdtype", ["complex64", "complex128"])
@pytest.mark.parametrize("size", [4 ** 6 * 2, 3 * 5 * 7 * 11 * 13 * 4])
def test_library_steps_match_steps_with_constant_sizes(cdtype, size, rng):
    """The Stockham steps are library code, generic in their sizes (backend/llvm/fft.py's
    _step_module). Every step of a line, called with its sizes as arguments, gives the bits of
    the same step compiled with those sizes constant (what each program compiled before), and
    LLVM vectorised it with no run-time overlap checks between the output streams (with them
    the checks failed on every call and the steps ran scalar, ~3x slower: what
    _output_scopes' metadata prevents)."""
    import ctypes
    import re

    from llvmlite import ir

    from tracejit.backend.llvm import fft, jit_engine
    ct = np.dtype(cdtype)
    x = _signals(rng, size, ct, batch=1)[0]
    roots = np.exp(-2j * np.pi * np.arange(size) / size).astype(ct)
    ptr = fft.mem_type(ct).as_pointer()
    steps, nc, ratio, s = [], size, 1, 1
    for k, p in enumerate(_radices(size)):
        m = nc // p
        steps.append((p, m > 1, k == 0, s, m, ratio))
        nc, ratio, s = m, ratio * p, s * p
    for p, twiddled, unit in sorted({step[:3] for step in steps}):
        name = fft._step_name(ct, p, -1, twiddled, unit)
        fft._library_fn(fft.Emitter("declarations"), name, fft._step_type(ct),
                        lambda p=p, twiddled=twiddled, unit=unit:
                        fft._step_module(ct, p, -1, twiddled, unit))
        optimised = str(jit_engine.optimize(jit_engine.parse(str(
            fft._step_module(ct, p, -1, twiddled, unit)))))
        # the pointer compares left are LLVM's wrap checks, at most 2 per output stream (the
        # overlap checks between the streams were 20-30 more)
        compares = len(re.findall(r"icmp \w+ (<\d+ x )?ptr", optimised))
        assert "vector.body" in optimised and compares <= 2 * p, (name, compares)
    # each step with its sizes constant: a wrapper calling an internal copy of the step
    text_parts, wrappers = [], []
    for k, (p, twiddled, unit, s, m, ratio) in enumerate(steps):
        inner = fft.Emitter(f"const{k}")
        fft._emit_step(inner, ct, p, -1, twiddled, unit)
        step = next(iter(inner.module.functions))
        step.linkage = "internal"
        step.attributes.add("noinline")
        wrapper = ir.Function(inner.module, ir.FunctionType(ir.VoidType(), [ptr] * 3),
                              name=f"const_step{k}")
        b = ir.IRBuilder(wrapper.append_basic_block())
        b.call(step, list(wrapper.args) + [ir.Constant(fft.I64, v) for v in (s, m, ratio)])
        b.ret_void()
        text_parts.append(str(inner.module))
        wrappers.append(wrapper.name)
    module = jit_engine.optimize(jit_engine.parse(jit_engine.link_text(text_parts)))
    code, _ = jit_engine.load(module, library=True)
    generic_type = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 3)
    const_type = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3)
    for k, (p, twiddled, unit, s, m, ratio) in enumerate(steps):
        name = fft._step_name(ct, p, -1, twiddled, unit)
        got, want = np.zeros_like(x), np.zeros_like(x)
        generic_type(fft._library[name].address(name))(
            x.ctypes.data, got.ctypes.data, roots.ctypes.data, s, m, ratio)
        const_type(code.address(wrappers[k]))(x.ctypes.data, want.ctypes.data, roots.ctypes.data)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=str(k))
        x = got  # the next step's input


@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_line_routines_match_strided_lines(kind, dtype, rng, x64):
    """A long contiguous line (a tile of one line) is packed and unpacked by copies and the
    library's line routines (fft.py's _line_module); the same lines laid out with a stride
    (along axis 0 of an (n, 2) array) go through the program's own loops. Both compute the
    same arithmetic: the same bits, and within tolerance of pocketfft."""
    n = 1 << 14
    cdtype = np.result_type(dtype, np.complex64)
    x = rng.standard_normal((n, 2)).astype(dtype)
    z = (x + 1j * rng.standard_normal((n, 2))).astype(cdtype)
    arg = {"fft": z, "ifft": z, "rfft": x, "irfft": z[: n // 2 + 1]}[kind]
    f = getattr(tnp.fft, kind)
    kw = {"n": n} if kind == "irfft" else {}
    strided = np.asarray(tracejit.jit(lambda a: f(a, axis=0, **kw))(arg))
    for j in range(2):
        line = np.ascontiguousarray(arg[:, j])
        got = np.asarray(tracejit.jit(lambda a: f(a, **kw))(line))
        np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(
            strided[:, j]).view(np.uint8))
        want = getattr(np.fft, kind)(line.astype(np.result_type(line, np.float64)), **kw)
        eps = float(np.finfo(dtype).eps)
        assert rel_error(got, want) <= error_bound(n, eps)


@pytest.mark.parametrize("shape", [(512, 512), (6, 10, 12), (3, 7, 40), (2, 1000, 30),
                                   (130, 33), (17, 12)], ids=str)
def test_strided_axes_as_the_last_axis_bit_for_bit(shape, rng):
    """A multi-axis transform's passes over the axes before the last read and write a tile's
    lines side by side (element k of each, then k + 1); each line's transform is the last
    axis's, so the values equal the last-axis transforms of the array with that axis moved
    last, bit for bit (a Bluestein length, 17, keeps the line-by-line pass)."""
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    axes = tuple(range(1 if len(shape) == 3 else 0, len(shape)))
    whole = np.asarray(tracejit.jit(lambda a: tnp.fft.fftn(a, axes=axes))(x))
    inverse = np.asarray(tracejit.jit(lambda a: tnp.fft.ifftn(a, axes=axes))(x))

    def by_last_axis(f):
        def apply(a):
            for axis in axes:  # (in the primitive's order of passes: the first axis first)
                a = tnp.moveaxis(f(tnp.moveaxis(a, axis, -1)), -1, axis)
            return a
        return np.asarray(tracejit.jit(apply)(x))
    np.testing.assert_array_equal(whole, by_last_axis(lambda a: tlax.fft(a, "fft", a.shape[-1:])))
    np.testing.assert_array_equal(inverse,
                                  by_last_axis(lambda a: tlax.fft(a, "ifft", a.shape[-1:])))
    ref = np.fft.fftn(x.astype(np.clongdouble), axes=axes)
    assert rel_error(whole, ref) <= error_bound(max(shape), float(np.finfo(np.float32).eps)) * 3


@pytest.mark.parametrize("shape,axis", [((64, 300), 0), ((5, 64, 64), 1), ((3, 64, 100), 1),
                                        ((4, 64, 7), 1)],
                         ids=["one-outer", "whole-tiles", "some-across", "all-across"])
def test_strided_lines_give_the_bits_of_contiguous_ones(shape, axis, rng):
    """A transform along an axis before the last gathers a tile's t lines (64 here) as runs of
    t elements where they share their outer index, else element by element (tiles crossing
    from one outer index to the next; the last tile, moved back to end at the last line, may
    too): either way each line's transform is the one of the same line laid out contiguously,
    bit for bit, and within the bound of pocketfft's."""
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    got = np.asarray(tracejit.jit(lambda a: tnp.fft.fft(a, axis=axis))(x))
    last = np.asarray(tracejit.jit(lambda a: tnp.fft.fft(a, axis=-1))(np.moveaxis(x, axis, -1)))
    np.testing.assert_array_equal(got, np.moveaxis(last, -1, axis))
    ref = np.fft.fft(x.astype(np.clongdouble), axis=axis)
    assert rel_error(got, ref) <= error_bound(shape[axis], float(np.finfo(np.float32).eps))
