"""lax indexing primitives (dynamic_slice, dynamic_update_slice, gather, scatter family) against
jax.lax: values, dtypes, weak types, out-of-bounds modes and error classes; jit against eager."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

from jax_oracle import assert_matches as assert_same, jlax, jnp, same_error

MODES = ["clip", "fill", "promise_in_bounds"]


def _operand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return (rng.integers(-50, 50, shape)).astype(dtype)


# --- dynamic_slice / dynamic_update_slice ----------------------------------------------------

DYNAMIC_SLICE_CASES = [
    ((5,), (1,), (2,)),
    ((5,), (4,), (3,)),            # overruns: start clamps so the window fits
    ((5,), (-1,), (2,)),           # negative: counted from the end, then clamped
    ((5,), (-9,), (2,)),
    ((5,), (100,), (0,)),          # zero-size window
    ((3, 4), (1, 1), (2, 3)),
    ((3, 4), (5, -1), (1, 2)),
    ((3, 4), (0, 0), (3, 4)),
    ((2, 0, 3), (1, 0, 2), (1, 0, 1)),
    ((), (), ()),
]


@pytest.mark.parametrize("shape,starts,sizes", DYNAMIC_SLICE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_dynamic_slice_matches_jax(shape, starts, sizes, dtype):
    x = _operand(shape, dtype)
    assert_same(lax.dynamic_slice(x, starts, sizes), jlax.dynamic_slice(x, starts, sizes))
    # traced start indices, under jit
    idx = [np.int32(s) for s in starts]
    got = tracejit.jit(lambda x, *i: lax.dynamic_slice(x, i, sizes))(x, *idx)
    assert_same(got, jlax.dynamic_slice(x, starts, sizes))


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int32])
def test_dynamic_slice_index_dtypes(idx_dtype):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for starts in [(1, 2), (2, 3), (0, 0)]:
        s = [idx_dtype(v) for v in starts]
        assert_same(lax.dynamic_slice(x, s, (2, 2)), jlax.dynamic_slice(x, s, (2, 2)))
    s = np.array([1, 3], idx_dtype)  # a 1-D array of starts
    assert_same(lax.dynamic_slice(x, s, (1, 2)), jlax.dynamic_slice(x, s, (1, 2)))


def test_dynamic_slice_negative_traced_index_and_allow_negative():
    x = np.arange(10, dtype=np.int32)
    f = tracejit.jit(lambda x, i: lax.dynamic_slice(x, (i,), (3,)))
    for i in (-1, -3, -10, -20, 7):
        assert_same(f(x, np.int32(i)), jlax.dynamic_slice(x, (np.int32(i),), (3,)))
    for i in (-2, 4):  # a negative array index is then out of bounds: clamped to 0
        kw = dict(allow_negative_indices=False)
        assert_same(lax.dynamic_slice(x, (np.array(i, np.int32),), (3,), **kw),
                    jlax.dynamic_slice(x, (np.array(i, np.int32),), (3,), **kw))
    same_error(lambda: lax.dynamic_slice(x, (-2,), (3,), allow_negative_indices=False),
               lambda: jlax.dynamic_slice(x, (-2,), (3,), allow_negative_indices=False))


def test_dynamic_slice_keeps_weak_type():
    assert_same(lax.dynamic_slice(tnp.asarray(3.0)[None], (0,), (1,)),
                jlax.dynamic_slice(jnp.asarray(3.0)[None], (0,), (1,)))


@pytest.mark.parametrize("shape,starts,update_shape", [
    ((6,), (2,), (3,)), ((6,), (5,), (3,)), ((6,), (-1,), (2,)), ((6,), (-20,), (2,)),
    ((3, 4), (1, 2), (2, 2)), ((3, 4), (2, -1), (2, 2)), ((3, 4), (0, 0), (0, 2)),
    ((3, 4), (9, 9), (3, 4)), ((), (), ()),
])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_dynamic_update_slice_matches_jax(shape, starts, update_shape, dtype):
    x = _operand(shape, dtype)
    u = _operand(update_shape, dtype, seed=1)
    want = jlax.dynamic_update_slice(x, u, starts)
    assert_same(lax.dynamic_update_slice(x, u, starts), want)
    idx = [np.int32(s) for s in starts]
    got = tracejit.jit(lambda x, u, *i: lax.dynamic_update_slice(x, u, i))(x, u, *idx)
    assert_same(got, want)


def test_in_dim_helpers_match_jax():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for axis in (0, 1, 2, -1):
        for i in (0, 1, -1, 7):
            assert_same(lax.dynamic_index_in_dim(x, i, axis),
                        jlax.dynamic_index_in_dim(x, i, axis))
            assert_same(lax.dynamic_index_in_dim(x, np.int32(i), axis, keepdims=False),
                        jlax.dynamic_index_in_dim(x, np.int32(i), axis, keepdims=False))
            assert_same(lax.dynamic_slice_in_dim(x, i, 2, axis),
                        jlax.dynamic_slice_in_dim(x, i, 2, axis))
    u = np.ones((2, 3, 2), np.float32)
    for i in (0, 3, -1, np.int8(2)):
        assert_same(lax.dynamic_update_slice_in_dim(x, u, i, 2),
                    jlax.dynamic_update_slice_in_dim(x, u, i, 2))
    for upd in (np.full((3, 4), 7, np.float32), np.full((1, 3, 4), 7, np.float32)):
        for i in (1, -1, 5):
            assert_same(lax.dynamic_update_index_in_dim(x, upd, i, 0),
                        jlax.dynamic_update_index_in_dim(x, upd, i, 0))


def test_dynamic_slice_errors_match_jax():
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [
        (lambda L: L.dynamic_slice(m, (np.int8(1), 1), (1, 2))),       # mixed index dtypes
        (lambda L: L.dynamic_slice(m, (1.0, 1), (1, 2))),              # float index
        (lambda L: L.dynamic_slice(m, (1,), (1, 2))),                  # too few indices
        (lambda L: L.dynamic_slice(m, (1, 1), (4, 2))),                # window too large
        (lambda L: L.dynamic_update_slice(m, np.ones((2, 2), np.int32), (0, 0))),
        (lambda L: L.dynamic_update_slice(m, np.ones((2,), np.float32), (0, 0))),
        (lambda L: L.dynamic_update_slice(m, np.ones((4, 2), np.float32), (0, 0))),
        (lambda L: L.dynamic_update_slice(m, np.ones((2, 2), np.float32), (0,))),
    ]
    for case in cases:
        err = same_error(lambda: case(lax), lambda: case(jlax))
        assert str(err)


# --- gather ------------------------------------------------------------------------------

G, S = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers
JG, JS = jlax.GatherDimensionNumbers, jlax.ScatterDimensionNumbers

GATHER_CASES = [
    # (operand shape, indices, dnums fields, slice_sizes)
    ((5,), [[7], [1], [-1], [-6]], ((), (0,), (0,)), (1,)),
    ((5,), [[3], [1]], ((1,), (), (0,)), (2,)),
    ((5,), [[4], [0]], ((1,), (), (0,)), (3,)),
    ((3, 4), [[0], [2]], ((1,), (0,), (0,)), (1, 4)),
    ((3, 4), [[0], [1], [2]], ((1,), (0,), (1,)), (1, 2)),
    ((3, 4), [[0, 1], [2, 3], [5, -1]], ((), (0, 1), (0, 1)), (1, 1)),
    ((3, 4), [[1, 0], [3, 2]], ((), (0, 1), (1, 0)), (1, 1)),
    ((3, 4), [[0, 1], [2, 3]], ((0, 2), (), (0, 1)), (2, 2)),
    ((3, 4), [[0], [1], [2]], ((1,), (), (1,), (0,), (0,)), (1, 2)),   # batching dims
    ((2, 3, 4), [[[0], [1]], [[2], [3]]], ((0, 3, 4), (), (2,)), (2, 3, 1)),
    ((2, 3, 4), [[1], [0]], ((1, 2), (0,), (0,)), (1, 3, 4)),
    ((4,), np.zeros((0, 1), np.int32), ((), (0,), (0,)), (1,)),        # no indices
    ((0, 3), np.zeros((0, 1), np.int32), ((1,), (0,), (0,)), (1, 3)),  # empty operand
    ((3, 4), np.zeros((2, 0), np.int32), ((1, 2), (), ()), (3, 4)),    # no index components
    ((), np.zeros((0,), np.int32), ((), (), ()), ()),
]


@pytest.mark.parametrize("shape,indices,dn,sizes", GATHER_CASES)
@pytest.mark.parametrize("mode", MODES)
def test_gather_matches_jax(shape, indices, dn, sizes, mode):
    x = _operand(shape, np.float32)
    idx = np.asarray(indices, np.int32)
    want = jlax.gather(x, idx, JG(*dn), sizes, mode=mode)
    assert_same(lax.gather(x, idx, G(*dn), sizes, mode=mode), want)
    got = tracejit.jit(lambda x, i: lax.gather(x, i, G(*dn), sizes, mode=mode))(x, idx)
    assert_same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("fill_value", [None, 3])
def test_gather_fill_values_match_jax(dtype, fill_value):
    x = _operand((5,), dtype)
    idx = np.array([[7], [1], [-1], [4]], np.int32)
    dn = ((), (0,), (0,))
    assert_same(lax.gather(x, idx, G(*dn), (1,), mode="fill", fill_value=fill_value),
                jlax.gather(x, idx, JG(*dn), (1,), mode="fill", fill_value=fill_value))


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int16, np.uint32])
def test_gather_index_dtypes(idx_dtype):
    x = np.arange(300, dtype=np.float32)
    idx = np.array([[0], [127], [255], [5]]).astype(idx_dtype)
    for mode in MODES:
        assert_same(lax.gather(x, idx, G((), (0,), (0,)), (1,), mode=mode),
                    jlax.gather(x, idx, JG((), (0,), (0,)), (1,), mode=mode))


def _random_gather(rng):
    """A random well-formed gather: operand dims are collapsed, windowed or batching; indices
    hold out-of-bounds and negative values too."""
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(d) for d in rng.integers(1, 5, ndim))
    dims = list(range(ndim))
    operand_bdims = sorted(int(d) for d in rng.choice(dims, int(rng.integers(0, 2)) if ndim > 1
                                                      else 0, replace=False))
    rest = [d for d in dims if d not in operand_bdims]
    start_map = [int(d) for d in rng.permutation(rest)[:int(rng.integers(0, len(rest) + 1))]]
    collapsed = sorted(d for d in rest if rng.random() < 0.4)
    sizes = [1 if d in collapsed or d in operand_bdims else int(rng.integers(0, shape[d] + 1))
             for d in dims]
    n_extra = int(rng.integers(0, 3))
    batch = [int(d) for d in rng.integers(1, 4, n_extra)]
    indices_bdims = []
    for d in operand_bdims:  # batching dims of the indices hold the operand's batch sizes
        pos = int(rng.integers(0, len(batch) + 1))
        batch.insert(pos, shape[d])
        indices_bdims = [p + (p >= pos) for p in indices_bdims] + [pos]
    n_offset = ndim - len(collapsed) - len(operand_bdims)
    out_rank = len(batch) + n_offset
    offset_dims = sorted(int(d) for d in rng.choice(out_rank, n_offset, replace=False))
    hi = np.array([shape[d] for d in start_map] or [1])
    idx = rng.integers(-3, hi + 3, tuple(batch) + (len(start_map),)).astype(np.int32)
    dn = (tuple(offset_dims), tuple(collapsed), tuple(start_map), tuple(operand_bdims),
          tuple(indices_bdims))
    return shape, idx, dn, tuple(sizes)


@pytest.mark.parametrize("seed", range(40))
def test_gather_random_dimension_numbers_match_jax(seed):
    rng = np.random.default_rng(seed)
    shape, idx, dn, sizes = _random_gather(rng)
    x = _operand(shape, np.int32, seed)
    mode = MODES[seed % 3]
    assert_same(lax.gather(x, idx, G(*dn), sizes, mode=mode),
                jlax.gather(x, idx, JG(*dn), sizes, mode=mode))


GATHER_ERRORS = [
    # (operand shape, indices, dnums, slice sizes)
    ((5,), [[7], [1]], ((), (0,), (0,)), (2,)),          # collapsed dim with size 2
    ((5,), [[7], [1]], ((1,), (0,), (0,)), (1,)),        # too many offset dims
    ((5,), [7, 1], ((), (0,), (0,)), (1,)),              # index vector length 2 vs map 1
    ((5,), 7, ((), (0,), (0,)), (1,)),                   # rank-0 indices
    ((5,), [[7.0], [1]], ((), (0,), (0,)), (1,)),        # float indices
    ((5,), [[7], [1]], ((), (0,), (0,)), (6,)),          # slice larger than operand
    ((5,), [[7], [1]], ((), (0,), (0,)), (1, 1)),        # slice_sizes rank
    ((3, 4), [[0], [1]], ((1, 0), (), (0,)), (1, 2)),    # offset_dims unsorted
    ((3, 4), [[0], [1]], ((), (0,), (1,)), (1, 4)),      # dims unaccounted for
    ((3, 4), [[0], [1]], ((1,), (0,), (2,)), (1, 4)),    # start_index_map out of range
    ((3, 4), [[0], [1], [2]], ((1,), (), (0,), (0,), (0,)), (1, 2)),  # map/batching overlap
    ((3, 4), [[0], [1]], ((1,), (), (1,), (0,), (0,)), (1, 2)),  # batch sizes differ
]


@pytest.mark.parametrize("shape,indices,dn,sizes", GATHER_ERRORS)
def test_gather_errors_match_jax(shape, indices, dn, sizes):
    x = np.zeros(shape, np.float32)
    idx = np.asarray(indices)
    idx = idx.astype(np.float32 if idx.dtype.kind == "f" else np.int32)
    err = same_error(lambda: lax.gather(x, idx, G(*dn), sizes),
                     lambda: jlax.gather(x, idx, JG(*dn), sizes))
    assert str(err)


def test_gather_scatter_mode_parsing():
    assert lax.GatherScatterMode.from_any("fill") is lax.GatherScatterMode.FILL_OR_DROP
    assert lax.GatherScatterMode.from_any("drop") is lax.GatherScatterMode.FILL_OR_DROP
    assert lax.GatherScatterMode.from_any(None) is lax.GatherScatterMode.FILL_OR_DROP
    assert lax.GatherScatterMode.from_any("clip") is lax.GatherScatterMode.CLIP
    same_error(lambda: lax.GatherScatterMode.from_any("bogus"),
               lambda: jlax.GatherScatterMode.from_any("bogus"))


def test_gather_jaxpr_shows_dimension_numbers():
    x = np.arange(5, dtype=np.float32)
    text = str(tracejit.make_jaxpr(
        lambda x, i: lax.gather(x, i, G((), (0,), (0,)), (1,), mode="clip"))(
            x, np.zeros((2, 1), np.int32)))
    assert "gather[" in text and "GatherDimensionNumbers(offset_dims=()" in text
    assert "mode=GatherScatterMode.CLIP" in text and "slice_sizes=(1,)" in text


# --- scatter family ------------------------------------------------------------------------

SCATTERS = ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
            "scatter_max"]

SCATTER_CASES = [
    # (operand shape, indices, updates shape, dnums fields)
    ((5,), [[7], [1], [1], [-1]], (4,), ((), (0,), (0,))),
    ((5,), [[3], [4], [0]], (3, 2), ((1,), (), (0,))),
    ((3, 4), [[0], [2], [0]], (3, 2), ((1,), (0,), (0,))),
    ((3, 4), [[0, 1], [2, 3], [0, 1], [5, 0]], (4,), ((), (0, 1), (0, 1))),
    ((3, 4), [[1, 0], [3, 2]], (2,), ((), (0, 1), (1, 0))),
    ((3, 4), [[0], [2], [1]], (3, 1), ((1,), (), (1,), (0,), (0,))),  # batching dims
    ((2, 3, 4), [[1], [0]], (2, 3, 4), ((1, 2), (0,), (0,))),
    ((4,), np.zeros((0, 1), np.int32), (0,), ((), (0,), (0,))),
    ((0, 3), [[0]], (1, 3), ((1,), (0,), (0,))),                      # empty operand
    ((3, 4), np.zeros((0,), np.int32), (3, 4), ((0, 1), (), ())),    # whole-array window
]


@pytest.mark.parametrize("shape,indices,ushape,dn", SCATTER_CASES)
@pytest.mark.parametrize("name", SCATTERS[1:])
@pytest.mark.parametrize("mode", MODES)
def test_scatter_combiners_match_jax(shape, indices, ushape, dn, name, mode):
    # integer updates: the combine order of repeated indices cannot change the result
    x = _operand(shape, np.int32)
    u = _operand(ushape, np.int32, seed=1) % 7
    idx = np.asarray(indices, np.int32)
    want = getattr(jlax, name)(x, idx, u, JS(*dn), mode=mode)
    assert_same(getattr(lax, name)(x, idx, u, S(*dn), mode=mode), want)
    f = tracejit.jit(lambda x, i, u: getattr(lax, name)(x, i, u, S(*dn), mode=mode))
    assert_same(f(x, idx, u), want)


@pytest.mark.parametrize("shape,indices,ushape,dn", SCATTER_CASES)
@pytest.mark.parametrize("mode", MODES)
def test_scatter_set_matches_jax(shape, indices, ushape, dn, mode):
    x = _operand(shape, np.float32)
    u = _operand(ushape, np.float32, seed=1)
    idx = np.asarray(indices, np.int32)
    # repeated windows: the last update wins, as in NumPy (and XLA on CPU)
    want = jlax.scatter(x, idx, u, JS(*dn), mode=mode)
    assert_same(lax.scatter(x, idx, u, S(*dn), mode=mode), want)


def test_scatter_repeated_set_is_last_wins():
    x = np.zeros(4, np.float32)
    idx = np.array([[1], [1], [1], [2], [2]], np.int32)
    u = np.array([7, 8, 9, 1, 2], np.float32)
    got = lax.scatter(x, idx, u, S((), (0,), (0,)))
    expected = x.copy()
    expected[idx[:, 0]] = u
    np.testing.assert_array_equal(np.asarray(got), expected)
    assert_same(got, jlax.scatter(x, idx, u, JS((), (0,), (0,))))


def test_scatter_float_accumulation_and_nan():
    x = np.array([0.0, 1.0, np.nan, 3.0], np.float32)
    idx = np.array([[0], [0], [1], [2], [3]], np.int32)
    u = np.array([0.5, 0.25, np.nan, 1.0, -np.inf], np.float32)
    for name in SCATTERS[1:]:
        assert_same(getattr(lax, name)(x, idx, u, S((), (0,), (0,))),
                    getattr(jlax, name)(x, idx, u, JS((), (0,), (0,))))


@pytest.mark.parametrize("seed", range(30))
def test_scatter_random_dimension_numbers_match_jax(seed):
    rng = np.random.default_rng(100 + seed)
    shape, idx, dn, sizes = _random_gather(rng)
    while not dn[2]:  # XLA on CPU drops repeated windows when indices have no components
        shape, idx, dn, sizes = _random_gather(rng)
    # the scatter that is the transpose of this gather
    x = _operand(shape, np.int32, seed)
    gathered = jlax.gather(x, idx, JG(*dn), sizes, mode="clip")
    u = (np.asarray(gathered) % 5).astype(np.int32)
    sdn = (dn[0], dn[1], dn[2], dn[3], dn[4])
    mode = MODES[seed % 3]
    for name in ("scatter_add", "scatter_max"):
        assert_same(getattr(lax, name)(x, idx, u, S(*sdn), mode=mode),
                    getattr(jlax, name)(x, idx, u, JS(*sdn), mode=mode))


def test_scatter_weak_type_follows_operand():
    w, s = tnp.asarray(3.0)[None], np.array([2.0], np.float32)
    jw = jnp.asarray(3.0)[None]
    idx = np.array([[0]], np.int32)
    assert_same(lax.scatter(w, idx, s, S((), (0,), (0,))),
                jlax.scatter(jw, idx, s, JS((), (0,), (0,))))
    assert_same(lax.scatter(s, idx, w, S((), (0,), (0,))),
                jlax.scatter(s, idx, jw, JS((), (0,), (0,))))


SCATTER_ERRORS = [
    # (operand dtype, updates, dnums)
    (np.int32, np.array([10.0, 11.0], np.float32), ((), (0,), (0,))),  # dtype mismatch
    (np.int32, np.array([10, 11, 12], np.int32), ((), (0,), (0,))),     # batch size mismatch
    (np.int32, np.int32(10), ((), (0,), (0,))),                          # updates rank
    (np.int32, np.array([[1, 2, 3, 4, 5, 6]] * 2, np.int32), ((1,), (), (0,))),  # window > dim
    (np.int32, np.array([1, 2], np.int32), ((), (), (0,))),              # window rank
]


@pytest.mark.parametrize("dtype,updates,dn", SCATTER_ERRORS)
def test_scatter_errors_match_jax(dtype, updates, dn):
    x = np.arange(5).astype(dtype)
    idx = np.array([[3], [1]], np.int32)
    same_error(lambda: lax.scatter(x, idx, updates, S(*dn)),
               lambda: jlax.scatter(x, idx, updates, JS(*dn)))


def test_scatter_add_and_mul_reject_bool():
    x = np.array([True, False])
    idx = np.array([[0]], np.int32)
    for name in ("scatter_add", "scatter_mul"):
        same_error(lambda: getattr(lax, name)(x, idx, x[:1], S((), (0,), (0,))),
                   lambda: getattr(jlax, name)(x, idx, x[:1], JS((), (0,), (0,))))
    for name in ("scatter_min", "scatter_max", "scatter"):
        assert_same(getattr(lax, name)(x, idx, x[1:], S((), (0,), (0,))),
                    getattr(jlax, name)(x, idx, x[1:], JS((), (0,), (0,))))


def test_scatter_apply_repeats_func_on_repeated_indices():
    x = np.arange(5, dtype=np.int32)
    idx = np.array([[1], [1], [3], [9]], np.int32)
    for mode in MODES:
        got = lax.scatter_apply(x, idx, lambda v: v * 3 + 1, S((), (0,), (0,)),
                                update_shape=(4,), mode=mode)
        want = jlax.scatter_apply(x, idx, lambda v: v * 3 + 1, JS((), (0,), (0,)),
                                  update_shape=(4,), mode=mode)
        assert_same(got, want)
    # closing over a traced value works under jit (the closure becomes an operand)
    f = tracejit.jit(lambda x, y: lax.scatter_apply(x, idx, lambda v: v * y, S((), (0,), (0,)),
                                                    update_shape=(4,)))
    np.testing.assert_array_equal(np.asarray(f(x, np.int32(2))), [0, 4, 2, 6, 4])
    with pytest.raises(ValueError, match="same type"):
        lax.scatter_apply(x, idx, lambda v: v * 1.5, S((), (0,), (0,)), update_shape=(4,))


def test_scatter_jaxpr_names_match_jax():
    x = np.arange(5, dtype=np.float32)
    idx = np.zeros((1, 1), np.int32)
    u = np.ones(1, np.float32)
    for name, prim in zip(SCATTERS, ["scatter", "scatter-add", "scatter-sub", "scatter-mul",
                                     "scatter-min", "scatter-max"]):
        text = str(tracejit.make_jaxpr(
            lambda x, i, u: getattr(lax, name)(x, i, u, S((), (0,), (0,))))(x, idx, u))
        assert f"= {prim}[" in text
        assert "mode=GatherScatterMode.FILL_OR_DROP" in text
