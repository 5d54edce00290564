"""lax.rng_bit_generator against real JAX on CPU, bit for bit: THREE_FRY, PHILOX and DEFAULT,
shapes whose halves split unevenly, every unsigned dtype, the new key, eagerly (the impl),
natively under jit and under vmap (JAX's batching rule); JAX's errors."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

KEYS = (np.array([1, 2, 3, 0xFFFFFFFF], np.uint32),
        np.array([0xFFFFFFFF, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32))  # counters carry
SHAPES = [(), (5,), (3, 5), (7, 1, 3)]
DTYPES = [np.uint8, np.uint16, np.uint32]
ALGS = ["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]


def _bits(lib, key, shape, dtype, alg, jit=False):
    alg = getattr(lib.lax.RandomAlgorithm, alg)
    f = lambda k: lib.lax.rng_bit_generator(k, shape, dtype, alg)  # noqa: E731
    return (lib.jit(f) if jit else f)(key)


def _same(got, expected):
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def _all_cases(lib, keys, cases):
    """Every (shape, dtype, algorithm) case on every key; JAX's in one compiled program (its
    eager calls compile one program each)."""
    def run(keys):
        return [_bits(lib, k, shape, dtype, alg) for k in keys for shape, dtype, alg in cases]
    return (jax.jit(run) if lib is jax else run)(keys)


def _same_all(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        _same(g, e)


def test_bits_match_jax():
    cases = [(shape, dtype, alg) for alg in ALGS for shape in SHAPES for dtype in DTYPES
             if dtype == np.uint32 or shape == (5,)]
    _same_all(_all_cases(tracejit, KEYS, cases), _all_cases(jax, KEYS, cases))


def test_native_and_vmap_match_jax():
    cases = [((3, 5), np.uint32, "RNG_THREE_FRY"), ((4,), np.uint8, "RNG_PHILOX")]
    native = tracejit.jit(lambda keys: _all_cases(tracejit, keys, cases))(KEYS)
    _same_all(native, _all_cases(jax, KEYS, cases))
    keys = np.stack(KEYS)

    def batched(lib):
        return [lib.vmap(lambda k: lib.lax.rng_bit_generator(
            k, (2, 3), algorithm=getattr(lib.lax.RandomAlgorithm, alg)))(keys)
            for alg in ALGS[1:2]]
    _same_all(batched(tracejit), jax.jit(lambda: batched(jax))())


def test_uint64_bits_and_keys_match_jax(x64):
    cases = [(shape, np.uint64, alg) for alg in ALGS[1:] for shape in [(), (2, 3)]]
    _same_all(_all_cases(tracejit, KEYS, cases), _all_cases(jax, KEYS, cases))
    native = tracejit.jit(lambda keys: _all_cases(tracejit, keys, cases[:2]))(KEYS)
    _same_all(native, _all_cases(jax, KEYS, cases[:2]))


def test_errors():
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        tracejit.lax.rng_bit_generator(KEYS[0], (2,), tnp.int32)
    with pytest.raises(TypeError, match="unsupported dtype float32"):
        tracejit.lax.rng_bit_generator(KEYS[0], (2,), tnp.float32)
    with pytest.raises(TypeError, match="uint32\\[4\\]"):  # JAX: an AssertionError in lowering
        tracejit.lax.rng_bit_generator(np.zeros(3, np.uint32), (2,))
    assert tracejit.lax.rng_bit_generator_p.name == jax.lax.rng_bit_generator_p.name


def test_rng_uniform_as_jax():
    """XLA's stateful generator: JAX's types, jaxpr and errors; values in range, a new draw
    each call (eager and native), uniform in distribution (its numbers are XLA's own)."""
    lax = tracejit.lax
    for a, b in [(0., 1.), (0, 10), (np.float32(-2), np.float32(3))]:
        theirs = jax.eval_shape(lambda a=a, b=b: jax.lax.rng_uniform(a, b, (2, 3)))
        ours = lax.rng_uniform(a, b, (2, 3))
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        assert np.all((np.asarray(ours) >= a) & (np.asarray(ours) < b))
    assert str(tracejit.make_jaxpr(lambda: lax.rng_uniform(0., 1., (3,)))()) == \
        str(jax.make_jaxpr(lambda: jax.lax.rng_uniform(0., 1., (3,)))())
    f = tracejit.jit(lambda: lax.rng_uniform(0., 1., (4000,)))
    x, y = np.asarray(f()), np.asarray(f())
    assert not np.array_equal(x, y)
    assert abs(x.mean() - 0.5) < 0.03 and abs(x.var() - 1 / 12) < 0.01
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'rng_uniform'"):
        tracejit.grad(lambda x: lax.rng_uniform(x, 2.0, ()))(1.)
    with pytest.raises(NotImplementedError, match="Batching rule for 'rng_uniform'"):
        tracejit.vmap(lambda x: lax.rng_uniform(x, 2.0, ()))(np.ones(3, np.float32))
