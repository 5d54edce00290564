"""Loop nests cut at concatenates and pads (backend/llvm/codegen.loop_pieces): a kernel reading a
concatenate, a stack, a stack flattened or a pad loops over each operand's range (and the
padding's) on its own, so that it reads that operand alone and LLVM vectorises it. Oracles: NumPy (exact operations), the same
program over the concatenated array made beforehand (sin: bit for bit), the unit's own cut
analysis, and the optimised IR (vector instructions in the kernel)."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.backend.llvm import codegen
from tracejit.backend.llvm.parallel_loops import PARALLEL_MIN_ELEMENTS

_RNG = np.random.default_rng(3)

def _interior(a):
    out = np.zeros(2 * a.size - 1, a.dtype)
    out[::2] = a
    return out


# (name, program over operands a and b, its NumPy counterpart)
_PROGRAMS = [
    ("concat 0", lambda a, b: tnp.concatenate([a, b]) * 2 + 1,
     lambda a, b: np.concatenate([a, b]) * 2 + 1),
    ("concat 3", lambda a, b: tnp.concatenate([a, b[:-1], a[1:3]]) - 0.5,
     lambda a, b: np.concatenate([a, b[:-1], a[1:3]]) - np.float32(0.5)),
    ("stack -1", lambda a, b: tnp.stack([a, b], -1) * 3, lambda a, b: np.stack([a, b], -1) * 3),
    ("stack 0", lambda a, b: tnp.stack([a, b, a]) + b, lambda a, b: np.stack([a, b, a]) + b),
    ("stack flat", lambda a, b: (tnp.stack([a, b, -a, b], -1) * 2).reshape(-1),
     lambda a, b: (np.stack([a, b, -a, b], -1) * 2).reshape(-1)),
    ("2-d concat 1", lambda a, b: tnp.concatenate([a.reshape(-1, 4), b.reshape(-1, 4)[:, :1]],
                                                  axis=1) + 1,
     lambda a, b: np.concatenate([a.reshape(-1, 4), b.reshape(-1, 4)[:, :1]], axis=1) + 1),
    ("through transpose", lambda a, b: tnp.stack([a, b]).T * 2, lambda a, b: np.stack([a, b]).T * 2),
    ("through broadcast", lambda a, b: tnp.concatenate([a, b])[None, :] + tnp.ones((3, 1)),
     lambda a, b: np.concatenate([a, b])[None, :] + np.ones((3, 1), np.float32)),
    ("nested", lambda a, b: tnp.concatenate([tnp.concatenate([a, b]), a]) * 2,
     lambda a, b: np.concatenate([np.concatenate([a, b]), a]) * 2),
    ("an empty operand", lambda a, b: tnp.concatenate([a, b[:0], b]) + 1,
     lambda a, b: np.concatenate([a, b[:0], b]) + 1),
    ("nine operands", lambda a, b: tnp.concatenate([a, b] * 4 + [a]) + 1,
     lambda a, b: np.concatenate([a, b] * 4 + [a]) + 1),
    ("two results", lambda a, b: (tnp.stack([a, b], -1) + 1, tnp.stack([a, b], -1) * 2),
     lambda a, b: (np.stack([a, b], -1) + 1, np.stack([a, b], -1) * 2)),
    ("pad", lambda a, b: tnp.pad(a, (3, 5)) * 2 + 1,
     lambda a, b: np.pad(a, (3, 5)) * 2 + 1),
    ("pad with a value", lambda a, b: tnp.pad(a, (0, 2), constant_values=7.0) - b[0],
     lambda a, b: np.pad(a, (0, 2), constant_values=7) - b[0]),
    ("pad 2-d", lambda a, b: tnp.pad(a.reshape(-1, 4), ((1, 2), (2, 1))) * 2,
     lambda a, b: np.pad(a.reshape(-1, 4), ((1, 2), (2, 1))) * 2),
    ("pad of a concatenate", lambda a, b: tnp.pad(tnp.concatenate([a, b]), (0, 3)) + 1,
     lambda a, b: np.pad(np.concatenate([a, b]), (0, 3)) + 1),
    ("concatenate of a pad", lambda a, b: tnp.concatenate([tnp.pad(a, (2, 0)), b]) + 1,
     lambda a, b: np.concatenate([np.pad(a, (2, 0)), b]) + 1),
    ("interior and negative padding", lambda a, b: lax.pad(a, 0.0, [(-1, 2, 1)]) * 2,
     lambda a, b: np.concatenate([_interior(a)[1:], np.zeros(2, np.float32)]) * 2),
    ("stencil", lambda a, b: (lambda p: p[2:] - 2 * p[1:-1] + p[:-2])(tnp.pad(a, 1)),
     lambda a, b: (lambda p: p[2:] - 2 * p[1:-1] + p[:-2])(np.pad(a, 1))),
    ("tile", lambda a, b: tnp.tile(a, 3) * 2 + b[0], lambda a, b: np.tile(a, 3) * 2 + b[0]),
    ("repeat", lambda a, b: tnp.repeat(a, 3) - 1, lambda a, b: np.repeat(a, 3) - 1),
    ("repeat 2-d", lambda a, b: tnp.repeat(a.reshape(2, -1), 2, axis=1) * 2,
     lambda a, b: np.repeat(a.reshape(2, -1), 2, axis=1) * 2),
    ("reshape of an elementwise value", lambda a, b: (a * 2 + b).reshape(-1, 2)[::-1] + 1,
     lambda a, b: (a * 2 + b).reshape(-1, 2)[::-1] + 1),
    ("reshape 2-d to 2-d", lambda a, b: (tnp.outer(a[:4], b[:4]) * 2).reshape(2, 8) + 1,
     lambda a, b: (np.outer(a[:4], b[:4]) * 2).reshape(2, 8) + 1),
    ("cut rows of a where", lambda a, b: tnp.where(tnp.concatenate([a, b]) > 0,
                                                     tnp.concatenate([b, a]), 0.0),
     lambda a, b: np.where(np.concatenate([a, b]) > 0, np.concatenate([b, a]), 0)),
]


@pytest.mark.parametrize("n", [4, 1000, PARALLEL_MIN_ELEMENTS + 12])
@pytest.mark.parametrize("name,f,ref", _PROGRAMS, ids=[p[0] for p in _PROGRAMS])
def test_a_cut_loop_computes_what_numpy_does(name, f, ref, n):
    """Exact operations: every element NumPy's (sizes around the parallel threshold: the chunk
    body's rows cut at the pieces)."""
    a, b = _RNG.standard_normal((2, n)).astype(np.float32)
    got, want = tracejit.jit(f)(a, b), ref(a, b)
    for g, w in zip(*(((got,), (want,)) if name != "two results" else (got, want))):
        assert g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w, np.float32))


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, np.float64, np.complex64, np.uint32])
def test_a_cut_loop_keeps_each_dtype(dtype):
    a = (_RNG.standard_normal(3001) * 50).astype(dtype)
    b = (_RNG.standard_normal(3001) * 50).astype(dtype)
    got = tracejit.jit(lambda a, b: (tnp.stack([a, b, a], -1)).reshape(-1) == 0)(a, b)
    np.testing.assert_array_equal(got, np.stack([a, b, a], -1).reshape(-1) == 0)
    got = tracejit.jit(lambda a, b: tnp.concatenate([b, a]) == tnp.concatenate([a, a]))(a, b)
    np.testing.assert_array_equal(got, np.concatenate([b, a]) == np.concatenate([a, a]))


@pytest.mark.parametrize("n", [1000, PARALLEL_MIN_ELEMENTS + 12])
def test_sin_of_pieces_is_sin_of_the_whole(n):
    """The same bits as the program over the concatenated array made beforehand."""
    a, b = _RNG.standard_normal((2, n)).astype(np.float32) * 10
    sin = tracejit.jit(tnp.sin)
    for f, whole in [(lambda a, b: tnp.sin(tnp.concatenate([a, b])), np.concatenate([a, b])),
                     (lambda a, b: tnp.sin(tnp.stack([a, b], -1)).reshape(-1),
                      np.stack([a, b], -1).reshape(-1))]:
        assert np.asarray(tracejit.jit(f)(a, b)).tobytes() == np.asarray(sin(whole)).tobytes()


def _kernel_pieces(f, *args):
    """loop_pieces of each kernel the program materialises, as codegen calls it (kernels an
    earlier test's programs emitted forgotten first: each is emitted here)."""
    codegen.forget_emitted_kernels()
    seen = []
    real = codegen.loop_pieces

    def spy(vals, shape):
        seen.append(real(vals, shape))
        return seen[-1]
    codegen.loop_pieces = spy
    try:
        tracejit.jit(f).lower(*args).compile()
    finally:
        codegen.loop_pieces = real
    return [p for p in seen if p]


def test_the_pieces_are_each_operands_range():
    a = np.ones(1000, np.float32)
    assert _kernel_pieces(lambda a, b: tnp.concatenate([a, b[:10]]) + 1, a, a) == \
        [{(0,): [(0, 1000), (1000, 1010)]}]
    assert _kernel_pieces(lambda a, b: tnp.stack([a, b], -1) + 1, a, a) == \
        [{(1,): [(0, 1), (1, 2)]}]
    # a stack flattened: the dimension looped over as (1000, 3), the pieces the columns
    assert _kernel_pieces(lambda a, b: (tnp.stack([a, b, a], -1) + 1).reshape(-1), a, a) == \
        [{(0, 3): [(0, 1), (1, 2), (2, 3)]}]
    # through a broadcast: the concatenate's axis is the result's last
    assert _kernel_pieces(lambda a, b: tnp.concatenate([a, b])[None] + tnp.ones((3, 1)), a, a) \
        == [{(1,): [(0, 1000), (1000, 2000)]}]
    # a pad: its operand's range and the padding either side, in the innermost padded
    # dimension
    assert _kernel_pieces(lambda a: tnp.pad(a, (3, 5)) + 1, a) == \
        [{(0,): [(0, 3), (3, 1003), (1003, 1008)]}]
    assert _kernel_pieces(lambda a: tnp.pad(a.reshape(10, 100), 1) + 1, a) == \
        [{(1,): [(0, 1), (1, 101), (101, 102)]}]
    # jnp.tile and jnp.repeat: the dimension looped over as the reshape's (n, c), a loop over c
    # where it is long, its columns side by side where it is short
    assert _kernel_pieces(lambda a: tnp.tile(a, 2) * 2, a) == [{(0, 1000): [(0, 1000)]}]
    assert _kernel_pieces(lambda a: tnp.repeat(a, 2) * 2, a) == [{(0, 2): [(0, 1), (1, 2)]}]
    # more operands than MAX_LOOP_PIECES: the concatenate is a kernel of its own, a piece per
    # operand, which the add reads from memory
    many = codegen.MAX_LOOP_PIECES + 1
    assert _kernel_pieces(lambda a: tnp.concatenate([a] * many) + 1, a) == \
        [{(0,): [(k * 1000, k * 1000 + 1000) for k in range(many)]}]
    # more pieces than MAX_LOOP_PIECES (3 x 3) in a nest that stores no concatenate: one loop,
    # the operands selected at each element
    assert _kernel_pieces(lambda a: tnp.concatenate([a] * 3)[:, None]
                          + tnp.concatenate([a[:3]] * 3)[None, :], a) == []
    # a slice of a concatenate keeps no dimension whole: not cut
    assert _kernel_pieces(lambda a, b: tnp.concatenate([a, b])[5:1500] + 1, a, a) == []


def test_a_cut_loop_is_vectorised():
    """The kernel of an elementwise op over a stack, flattened, holds vector arithmetic (before
    the cut, every element selected among the operands' clamped reads: scalar code)."""
    a = np.ones(100_000, np.float32)
    for f in [lambda a, b: (tnp.stack([a, b, a, b], -1) * 2).reshape(-1),
              lambda a, b: tnp.concatenate([a, b]) * 2, lambda a, b: tnp.pad(a, 3) * 2,
              lambda a, b: tnp.tile(a, 2) * 2,
              # (a reshape reads the buffers of an elementwise value at its linear index)
              lambda a, b: (a.reshape(400, 250) * 2).reshape(200, 500)]:
        text = tracejit.jit(f).lower(a, a).compile().as_text(dialect="llvm")
        assert re.search(r"fmul <\d+ x float>", text), text


def test_wide_concatenates_are_copies_of_their_operands():
    """Concatenates of more operands than MAX_LOOP_PIECES -- stacks along each axis, operands
    of different lengths or computed, one read by a sum and a sin, one on the pool -- are
    kernels of their own, a piece per operand: NumPy's values (the sin's within its ulps)."""
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((30, 7)).astype(np.float32) for _ in range(12)]
    ragged = [rng.standard_normal((k + 1, 7)).astype(np.float32) for k in range(12)]
    big = [rng.standard_normal(10_000).astype(np.float32) for _ in range(100)]

    def cases(np_, xs, ragged, big):
        cat = np_.concatenate(ragged)
        return (np_.stack(xs), np_.stack(xs, 1), np_.stack(xs, 2),
                np_.concatenate([x * 2 + 1 for x in ragged], 0), np_.concatenate(ragged, 0)
                .sum(0), np_.sin(cat), np_.stack(big), np_.stack(big, 1))
    got = tracejit.jit(cases, static_argnums=0)(tnp, xs, ragged, big)
    want = cases(np, xs, ragged, big)
    for g, w in zip(got, want):
        if w.shape == (78, 7):  # (the sin)
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-7, atol=2e-7)
        elif w.shape == (7,):  # (the sum, in another order)
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(np.asarray(g), w)


def test_a_reshape_of_a_computed_value_loops_over_the_values_shape():
    """jnp.kron's product of broadcasts, (16, 32, 16, 32) reshaped to (512, 512), is stored by
    a loop nest over the product's shape: its rows of 32 vectorise (each element's index was
    taken apart over that shape, its loads gathers). NumPy's values exactly."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    text = tracejit.jit(tnp.kron).lower(a, b).compile().as_text(dialect="llvm")
    assert re.search(r"fmul <\d+ x float>", text)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(tnp.kron)(a, b)), np.kron(a, b))
