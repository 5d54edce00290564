"""Random bits computed inside their consumers' loops (compiler/fusion.py, backend/llvm/bits.py):
iota_2x32_shape's counters and threefry2x32's two words fuse into the kernel that reads them, so
random.normal/uniform/bits under jit are one element loop with no workspace. Values against
real JAX's bits (exact), the reference interpreter where a reduction's order differs, threefry's
NumPy reference; structure as kernel summaries and the compiled program's temporary bytes."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
import tracejit.random as tr
from tracejit import lax
from tracejit.compiler.fusion import HASH_FUSE_MIN_ELEMENTS
from tracejit.lax.random_bits import (philox4x32_numpy, philox4x32_p, threefry2x32_numpy,
                                      threefry2x32_p)


def _compiled(f, *args):
    return tracejit.jit(f).lower(*args).compile()


def _kernels(f, *args) -> list[str]:
    """The compiled program's kernel summary lines ("iota_2x32_shape -> threefry2x32 -> ...")."""
    return re.findall(r"^// kernel \d+: (.*)$", _compiled(f, *args).as_text(), re.MULTILINE)


def _same_bits(ours, theirs) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.view(f"uint{ours.dtype.itemsize * 8}"),
                                  theirs.view(f"uint{theirs.dtype.itemsize * 8}"))


# (5000,) above FOLD_MAX_SIZE (its counters are not folded into constants); 2^18 + 3 above the
# thread pool's threshold (parallel_loops), not a multiple of its chunks
SHAPES = [(7,), (5000,), (3, 1000), ((1 << 18) + 3,), (0,), (4, 0)]
SAMPLERS = {
    "normal": lambda r, k, s: r.normal(k, s),
    "uniform": lambda r, k, s: r.uniform(k, s, minval=-2.0, maxval=3.0),
    "bits32": lambda r, k, s: r.bits(k, s),
    "bits8": lambda r, k, s: r.bits(k, s, np.uint8),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_jitted_samplers_match_jax_exactly(name, shape, threefry_mode, jax):
    sample = SAMPLERS[name]
    ours = tracejit.jit(lambda k: sample(tr, k, shape))(tr.PRNGKey(7))
    theirs = jax.jit(lambda k: sample(jax.random, k, shape))(jax.random.PRNGKey(7))
    _same_bits(ours, theirs)


BIG = HASH_FUSE_MIN_ELEMENTS  # from here the hash joins its reader's kernel


@pytest.mark.parametrize("shape", [(BIG,), (3, BIG // 2), ((1 << 18) + 3,)], ids=str)
@pytest.mark.parametrize("name", ["normal", "uniform", "bits32"])
def test_counters_and_hash_fuse_into_the_consumer(name, shape):
    """One kernel from the counters to the sample: nothing between kernels, no workspace."""
    def f(k):
        return SAMPLERS[name](tr, k, shape)
    k = tr.PRNGKey(0)
    (chain,) = [line for line in _kernels(f, k) if "threefry2x32" in line]
    assert chain.startswith("iota_2x32_shape -> threefry2x32 -> xor"), chain
    assert _compiled(f, k).memory_analysis().temp_size_in_bytes == 0


@pytest.mark.parametrize("shape", [(5000,), (3, 1000)], ids=str)
def test_smaller_hashes_are_a_kernel_of_their_own_with_the_counters(shape):
    """Below HASH_FUSE_MIN_ELEMENTS the hash writes its two words (which stay in cache) and the
    counters are computed in its loop: the workspace is the two words alone."""
    def f(k):
        return tr.normal(k, shape)
    k = tr.PRNGKey(0)
    kernels = _kernels(f, k)
    assert "iota_2x32_shape -> threefry2x32" in kernels, kernels
    assert not any(line.startswith("iota_2x32_shape") and "xor" in line for line in kernels)
    words = 2 * 4 * int(np.prod(shape))
    assert words <= _compiled(f, k).memory_analysis().temp_size_in_bytes < words + 4096


def test_normal_10m_has_no_workspace():
    """The benchmark row: 160 MB of counters and hash words between kernels before."""
    f = lambda k: tr.normal(k, (10_000_000,))
    assert _compiled(f, tr.PRNGKey(0)).memory_analysis().temp_size_in_bytes == 0


@pytest.mark.parametrize("n", [5000, BIG])
def test_bits_64_match_jax_exactly(n, jax):
    tracejit.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        ours = tracejit.jit(lambda k: tr.bits(k, (n,), np.uint64))(tr.PRNGKey(3))
        theirs = jax.jit(lambda k: jax.random.bits(k, (n,), np.uint64))(jax.random.PRNGKey(3))
        _same_bits(ours, theirs)
    finally:
        tracejit.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("shape", [(3,), (2, 5), (5000,), ((1 << 18) + 3,)], ids=str)
def test_split_and_fold_in_match_jax_exactly(shape, threefry_mode, jax):
    ours = tracejit.jit(lambda k: (tr.split(k, shape), tr.fold_in(k, 12345)))(tr.PRNGKey(5))
    theirs = jax.jit(lambda k: (jax.random.split(k, shape), jax.random.fold_in(k, 12345)))(
        jax.random.PRNGKey(5))
    for o, t in zip(ours, theirs):
        _same_bits(o, t)


def test_split_hashes_counters_in_its_own_loop():
    """split's keys are read through a concatenate (two elements per hash): the hash stays a
    kernel of its own writing both words, with the counters computed in it."""
    kernels = _kernels(lambda k: tr.split(k, 5000), tr.PRNGKey(0))
    assert "iota_2x32_shape -> threefry2x32" in kernels, kernels


def test_batched_keys_match_jax_exactly(jax):
    keys, jkeys = tr.split(tr.PRNGKey(1), 8), jax.random.split(jax.random.PRNGKey(1), 8)
    ours = tracejit.jit(tracejit.vmap(lambda k: tr.normal(k, (300,))))(keys)
    theirs = jax.jit(jax.vmap(lambda k: jax.random.normal(k, (300,))))(jkeys)
    _same_bits(ours, theirs)
    big = tracejit.vmap(lambda k: tr.normal(k, (BIG // 4,)))
    assert len(_kernels(big, tr.split(tr.PRNGKey(1), 4))) == 1  # keys broadcast in the loop


def _per_step(r, lax_, n):
    """Fresh normals each step of a scan and of a fori_loop (the SDE rows' pattern)."""
    def f(key):
        def step(key, _):
            key, sub = r.split(key)
            return key, r.normal(sub, (n,))
        key, ys = lax_.scan(step, key, None, length=6)

        def body(i, acc):
            return acc + r.uniform(r.fold_in(key, i), (n,))
        return ys, lax_.fori_loop(0, 4, body, lax_.full((n,), 0.0, np.float32))
    return f


@pytest.mark.parametrize("n", [7, 5000, BIG])
def test_inside_loop_bodies_match_jax(n, jax):
    ys, acc = tracejit.jit(_per_step(tr, lax, n))(tr.PRNGKey(2))
    jys, jacc = jax.jit(_per_step(jax.random, jax.lax, n))(jax.random.PRNGKey(2))
    _same_bits(ys, jys)
    np.testing.assert_array_equal(np.asarray(acc), np.asarray(jacc))  # the same 4 adds


def test_inside_loop_bodies_fuse():
    text = _compiled(_per_step(tr, lax, BIG), tr.PRNGKey(2)).as_text()
    bodies = re.findall(r"threefry2x32 [^\n]*\n\s*\S+ = xor", text)
    assert len(bodies) == 2, text  # the scan's normals and the fori_loop's uniforms


def test_reduction_of_fused_samples_matches_interpreter():
    def f(k):
        return jnp.sum(tr.uniform(k, (1 << 18,)) ** 2), jnp.max(tr.normal(k, (3, 1000)), axis=1)
    k = tr.PRNGKey(4)
    got = tracejit.jit(f)(k)
    want = tracejit.jit(f, backend="interpret")(k)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))


def test_hash_words_read_by_two_kernels_or_returned_are_stored_once():
    """A word that is also a result, or read by two kernels, is stored by the hash's kernel;
    every reader sees the same bits."""
    x0 = np.arange(5000, dtype=np.uint32)
    x1 = (x0 * np.uint32(2654435761)) ^ np.uint32(0xDEADBEEF)

    def f(k0, k1, x0, x1):
        y0, y1 = threefry2x32_p.bind(k0, k1, x0, x1)
        return y0, y0 ^ y1, jnp.sum(y1 >> 16)
    k0, k1 = np.uint32(0x12345678), np.uint32(0x9ABCDEF0)
    got = tracejit.jit(f)(k0, k1, x0, x1)
    w0, w1 = threefry2x32_numpy(k0, k1, x0, x1)
    np.testing.assert_array_equal(np.asarray(got[0]), w0)
    np.testing.assert_array_equal(np.asarray(got[1]), w0 ^ w1)
    assert int(got[2]) == int(np.sum(w1 >> 16, dtype=np.uint32))


# Random123's known answers for philox4x32-10: (key words, counter words) -> the four words
PHILOX_KAT = [
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("n", [7, HASH_FUSE_MIN_ELEMENTS + 3])
def test_philox_words_match_the_reference_alone_fused_and_batched(n):
    """philox4x32 (rng_bit_generator's PHILOX) against Random123's known answers and its NumPy
    reference: as a kernel of its own, with its words read by one elementwise kernel (fused
    there from HASH_FUSE_MIN_ELEMENTS), rank 0, and under vmap over keys."""
    for key, ctr, want in PHILOX_KAT:
        args = [np.uint32(v) for v in (*key, *ctr)]
        assert [int(w) for w in philox4x32_numpy(*args)] == list(want)
        assert [int(w) for w in tracejit.jit(philox4x32_p.bind)(*args)] == list(want)
    rng = np.random.default_rng(n)
    x = [rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(4)]
    k0, k1 = np.uint32(0x12345678), np.uint32(0x9ABCDEF0)
    want = philox4x32_numpy(k0, k1, *x)
    for g, w in zip(tracejit.jit(philox4x32_p.bind)(k0, k1, *x), want):
        np.testing.assert_array_equal(np.asarray(g), w)

    def mixed(*a):  # (one kernel reading the four words at its element)
        w = philox4x32_p.bind(*a)
        return (w[0] ^ w[1]) + (w[2] >> 3) * w[3]
    got = tracejit.jit(mixed)(k0, k1, *x)
    np.testing.assert_array_equal(np.asarray(got), (want[0] ^ want[1]) + (want[2] >> 3) * want[3])
    assert len(_kernels(mixed, k0, k1, *x)) == (1 if n >= HASH_FUSE_MIN_ELEMENTS else 2)
    keys = rng.integers(0, 2**32, (3, 2), dtype=np.uint32)
    batched = tracejit.jit(tracejit.vmap(lambda k: philox4x32_p.bind(k[0], k[1], *x)))(keys)
    for i in range(3):
        for g, w in zip(batched, philox4x32_numpy(keys[i, 0], keys[i, 1], *x)):
            np.testing.assert_array_equal(np.asarray(g)[i], w)


def test_scalar_samples_match_jax(jax):
    ours = tracejit.jit(lambda k: (tr.normal(k), tr.uniform(k), tr.bits(k)))(tr.PRNGKey(9))
    theirs = jax.jit(lambda k: (jax.random.normal(k), jax.random.uniform(k),
                                jax.random.bits(k)))(jax.random.PRNGKey(9))
    for o, t in zip(ours, theirs):
        _same_bits(o, t)


def test_hash_loops_stay_vectorised_four_vectors_a_turn():
    """The hash's 20 rounds are one dependency chain: its loop (fused or alone) is vectorised
    with four vectors a turn (codegen.CHAIN_INTERLEAVE), so the optimised IR rotates vectors
    in at least 4 x 20 places (one vector a turn: 20, plus a narrower epilogue's)."""
    for shape in [(BIG,), (5000,)]:
        ir_text = _compiled(lambda k, s=shape: tr.normal(k, s), tr.PRNGKey(0)).as_text("llvm")
        rotates = re.findall(r"call <\d+ x i32> @llvm\.fshl\.v\d+i32\(", ir_text)
        assert len(rotates) >= 80, (shape, len(rotates))
