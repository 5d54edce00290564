"""NumPy indexing in tracejit.numpy (x[idx], x.at[idx], take, where, nonzero, diagonal, ...)
against jax.numpy: values, dtypes, weak types, out-of-bounds rules and error classes; jit
against eager, with traced indices."""
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import errors

import jax_oracle
from jax_oracle import assert_matches, jax, jnp, same_error


def assert_same(ours, theirs):
    """Same structure, values (NaN-aware), dtypes and weak types as the JAX result."""
    assert isinstance(ours, tuple) == isinstance(theirs, (tuple, list))
    assert_matches(ours, theirs)


def check(f, *args):
    """f(jnp, *args) on tracejit against JAX; returns tracejit's result."""
    return jax_oracle.check(f, *args, jit=False)


def check_jit(f, *args):
    """f against JAX, and tracejit.jit(f) against eager f."""
    ours = check(f, *args)
    arrays = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    jitted = tracejit.jit(lambda *a: f(tnp, *a))(*arrays)
    assert_same(jitted, ours)


def _x(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return np.asarray(rng.integers(-20, 20, shape).astype(dtype))


def _split(idx):
    """An index as (template, integer arrays): the arrays become traced jit arguments."""
    items = idx if isinstance(idx, tuple) else (idx,)
    arrays = [i for i in items if isinstance(i, np.ndarray) and i.dtype != np.bool_]

    def build(*arrs):
        it = iter(arrs)
        out = tuple(next(it) if isinstance(i, np.ndarray) and i.dtype != np.bool_ else i
                    for i in items)
        return out if isinstance(idx, tuple) else out[0]
    return build, arrays


A, s_ = np.array, np.s_
GETITEM_CASES = [
    # 1-D: ints (clamped when out of range), slices, None, ..., index arrays, masks, bools
    ((5,), 1), ((5,), -1), ((5,), 10), ((5,), -10), ((5,), np.int8(-2)), ((5,), np.uint8(3)),
    ((5,), s_[1:3]), ((5,), s_[::-1]), ((5,), s_[::-2]), ((5,), s_[3:0:-2]), ((5,), s_[10:]),
    ((5,), s_[-10:2]), ((5,), s_[5:1]), ((5,), s_[0:3:-1]), ((5,), s_[::3]), ((5,), None),
    ((5,), (None, 2)), ((5,), Ellipsis), ((5,), ()), ((5,), A([0, 7, -1, -6])),
    ((5,), A([[0, 1], [2, 3]])), ((5,), A([True, False, True, False, True])), ((5,), ([1, 2],)),
    ((5,), ([True, False, True, False, True],)), ((5,), True), ((5,), False),
    ((5,), A([], np.int32)), ((5,), A(3)), ((5,), A([1, 2], np.uint8)),
    ((5,), A([-1, 2], np.int8)),
    # 2-D: mixed basic and advanced indices, broadcasting index arrays
    ((3, 4), 1), ((3, 4), (1, 2)), ((3, 4), s_[-1, ::-1]), ((3, 4), s_[:, 2]),
    ((3, 4), s_[..., 1]), ((3, 4), s_[1, ...]), ((3, 4), s_[None, ..., None]),
    ((3, 4), (A([0, 2]), A([1, 3]))), ((3, 4), (A([0, 2]), s_[:])),
    ((3, 4), (s_[:], A([0, 1]))), ((3, 4), (1, A([0, 3]))),
    ((3, 4), (A([[0], [2]]), A([1, 3]))), ((3, 4), _x((3, 4), np.bool_)),
    ((3, 4), A([True, False, True])), ((3, 4), (A([True, False, True]), 1)),
    ((3, 4), (A([0, 1]), None)), ((3, 4), (s_[::-1], A([0, 2, 1]))),
    ((3, 4), s_[1::-1, 5:0:-2]), ((3, 4), (A([0, 1]), s_[::-2])), ((3, 4), s_[:, True]),
    ((3, 4), (A([0, 1]), True)), ((3, 4), s_[..., True]), ((3, 4), (A([0, 2]), s_[1:3], None)),
    ((3, 4), (A(1), s_[1:3])),
    # 4-D: advanced indices separated by a slice put their dimensions first (NumPy's rule)
    ((2, 3, 4, 5), (s_[:], A([0, 1]), s_[:], A([1, 2]))),
    ((2, 3, 4, 5), (A([0, 1]), s_[:], A([1, 2]))),
    ((2, 3, 4, 5), (s_[:], A([0, 1]), A([1, 2]))),
    ((2, 3, 4, 5), (s_[:], A([0, 1]), None, A([1, 2]))),
    ((2, 3, 4, 5), (Ellipsis, 1, A([1, 2]))), ((2, 3, 4, 5), (1, Ellipsis, A([1, 2]))),
    ((2, 3, 4, 5), (s_[:], 1, s_[:], A([1, 2]))),
    ((2, 3, 4, 5), (A([[0], [1]]), s_[1:3], A([0, 2, 3]))),
    ((2, 3, 4, 5), (0, s_[::2], A([3, 0]), s_[4:1:-1])),
    # zero-size and 0-d
    ((0,), s_[:]), ((0,), A([], np.int32)), ((2, 0), A([0, 1])), ((2, 0), s_[:, 1:]),
    ((2, 0), A([True, False])), ((), ()), ((), None), ((), Ellipsis), ((), True), ((), False),
]


@pytest.mark.parametrize("shape,idx", GETITEM_CASES)
def test_getitem_matches_jax(shape, idx):
    x = _x(shape)
    check(lambda m, x: x[idx], x)
    build, arrays = _split(idx)
    if arrays:  # the same index with traced index arrays, under jit
        check_jit(lambda m, x, *a: x[build(*a)], x, *arrays)


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, np.float16])
@pytest.mark.parametrize("idx", [2, (slice(None), -1), (A([1, 0, 5]), slice(None, None, -1)),
                                 A([[True, False, True, False], [False] * 4, [True] * 4])])
def test_getitem_dtypes(dtype, idx):
    x = _x((3, 4), dtype)
    check(lambda m, x: x[idx], x)


@pytest.mark.parametrize("idx", [(None, True), (None, False, 1), (0, None, True)])
def test_scalar_bool_after_none_follows_numpy(idx):
    # JAX puts the new axis at the wrong place here; NumPy is the oracle
    x = _x((3, 4))
    got = tnp.asarray(x)[idx]
    np.testing.assert_array_equal(np.asarray(got), x[idx])
    assert got.dtype == x.dtype


def test_getitem_keeps_weak_type():
    assert_same(tnp.asarray(3.0)[()], jnp.asarray(3.0)[()])
    assert_same(tnp.asarray(3.0)[None], jnp.asarray(3.0)[None])
    w, jw = tnp.broadcast_to(tnp.asarray(2), (3,)), jnp.broadcast_to(jnp.asarray(2), (3,))
    assert jw.weak_type
    for idx in (np.array([0, 1]), 1, slice(1, None)):
        assert_same(w[idx], jw[idx])
        assert_same(w.at[idx].add(1), jw.at[idx].add(1))


@pytest.mark.parametrize("i", [0, 3, 4, 5, 10, -1, -5, -6, -100])
def test_traced_scalar_index_clamps_like_jax(i):
    x = _x((5, 3))
    f = lambda m, x, i: x[i]  # noqa: E731
    check_jit(f, x, np.int32(i))
    check_jit(lambda m, x, i: x[i, 1:], x, np.int32(i))
    check_jit(lambda m, x, i: x[::-1, i % 3], x, np.int32(i))
    check_jit(lambda m, x, i: x[None, i, ..., i], x, np.int32(i))
    check_jit(lambda m, x, i: x[i, np.array([0, 2])], x, np.int32(i))


def test_traced_index_lowers_to_dynamic_slice_static_index_to_slice():
    x = np.zeros((5, 3), np.float32)
    text = str(tracejit.make_jaxpr(lambda x, i: x[i])(x, np.int32(1)))
    assert "dynamic_slice" in text and "gather" not in text
    text = str(tracejit.make_jaxpr(lambda x: x[1, ::-2])(x))
    assert "slice[" in text and "rev[" in text and "gather" not in text
    text = str(tracejit.make_jaxpr(lambda x, i: x[i])(x, np.array([1, 2], np.int32)))
    assert "gather[" in text


@pytest.mark.parametrize("shape,idx", [
    ((5,), (1, 2)), ((3, 4), (Ellipsis, Ellipsis)), ((5,), 1.0), ((5,), "a"), ((5,), [1, 2]),
    ((5,), [[1, 2]]), ((5,), A(1.0)), ((5,), A([True, False])), ((0,), 0), ((0,), -1),
    ((3, 4), A([[True, False, True]])), ((5,), {}), ((5,), 1 + 2j), ((5,), np.float32(1)),
    ((5,), slice(1, 3, 0)), ((2, 0), (slice(None), A([0, 1]))), ((2, 0), (slice(None), 1)),
])
def test_getitem_errors_match_jax(shape, idx):
    x = _x(shape)
    same_error(lambda: tnp.asarray(x)[idx], lambda: jnp.asarray(x)[idx])


def test_traced_slices_and_masks_are_errors_under_jit():
    x = np.arange(5, dtype=np.float32)
    same_error(lambda: tracejit.jit(lambda x, i: x[i:i + 1])(x, 1),
               lambda: jax.jit(lambda x, i: x[i:i + 1])(x, 1))
    for f in (lambda x: x[x > 2], lambda x: x.at[x > 2].set(0.0), lambda x: x[(x > 2)[0]]):
        err = same_error(lambda: tracejit.jit(f)(x), lambda: jax.jit(f)(x))
        assert isinstance(err, errors.NonConcreteBooleanIndexError) and isinstance(err, IndexError)
        assert "jnp.where" in str(err)
    # a concrete mask is fine eagerly, and inside jit when it is a constant
    check(lambda m, x: x[x > 2], x)
    assert_same(tracejit.jit(lambda x: x[np.array([True, False] * 2 + [True])])(x),
                jax.jit(lambda x: x[np.array([True, False] * 2 + [True])])(x))


def test_arrays_are_immutable():
    with pytest.raises(TypeError, match="at\\[idx\\].set"):
        tnp.zeros(3)[0] = 1.0


# --- x.at[idx] -------------------------------------------------------------------------------

UPDATE_CASES = [
    # (shape, idx, values): repeated indices accumulate; set keeps the last update
    ((5,), 1, 7), ((5,), -1, 7), ((5,), 10, 7), ((5,), -10, 7), ((5,), s_[1:3], A([7, 8])),
    ((5,), s_[::-1], A([1, 2, 3, 4, 5])), ((5,), s_[::2], 100), ((5,), A([0, 7, -1, -6]), 9),
    ((5,), A([1, 1, 1]), A([7, 8, 9])), ((5,), A([3, 1, 3]), A([0, -5, 4])),
    ((5,), A([True, False, True, False, True]), 0), ((5,), A([[0, 1], [2, 3]]), A([1, 2])),
    ((5,), (), 3), ((5,), Ellipsis, A([1, 2, 3, 4, 5])), ((5,), None, 2), ((5,), True, 6),
    ((2, 3), s_[:, 1], A([7, 8])), ((2, 3), None, A([7, 8, 9])), ((2, 3), s_[..., None], 1),
    ((2, 3), (A([0, 1, 0]), A([2, 2, 2])), A([1, 2, 3])), ((2, 3), (1, A([0, 0])), 5),
    ((2, 3), (A([0, 1]), s_[::-1]), A([[1, 2, 3], [4, 5, 6]])),
    ((2, 3, 4), (s_[:], A([0, 2]), A([1, 3])), 2), ((2, 3, 4), (A([1]), s_[:], A([0])), 3),
    ((0,), A([0]), 1), ((0,), s_[:], 1), ((2, 0), 1, 1), ((), (), 4),
]
OPS = ["set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max"]


@pytest.mark.parametrize("k", range(len(UPDATE_CASES)))
def test_at_updates_match_jax(k):
    shape, idx, values = UPDATE_CASES[k]
    x = np.asarray(_x(shape, np.int32) % 5 + 1)
    vals = values.astype(np.int32) if isinstance(values, np.ndarray) else values
    # every op on the cases with repeated or out-of-bounds indices, a rotating op elsewhere
    ops = OPS if k in (2, 3, 7, 8, 9, 19) else [OPS[k % len(OPS)], "add"]
    for op in ops:
        check(lambda m, x: getattr(x.at[idx], op)(vals), x)
    build, arrays = _split(idx)
    if arrays:  # traced index arrays, under jit
        check_jit(lambda m, x, *a: x.at[build(*a)].max(vals), x, *arrays)


@pytest.mark.parametrize("mode", [None, "clip", "drop", "fill", "promise_in_bounds"])
def test_at_update_modes(mode):
    x = _x((5,), np.float32)
    for idx in (A([0, 7, -1, -6]), 9, -9):
        for op in ("set", "add", "multiply", "min"):
            check(lambda m, x: getattr(x.at[idx], op)(2.0, mode=mode), x)
        check(lambda m, x: x.at[idx].set(2.0, mode=mode, wrap_negative_indices=False), x)


@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
def test_at_get_modes(mode):
    for dtype in (np.float32, np.uint8, np.bool_):
        x = _x((5, 2), dtype)
        for idx in (A([0, 7, -1, -6]), -9, (1, A([3, 0])), (A(2), slice(None))):
            check(lambda m, x: x.at[idx].get(mode=mode, indices_are_sorted=True), x)
    x = _x((5, 2), np.int32)
    for idx in (A([0, 7, -1, -6]), 9, (A(-7), slice(None))):
        check(lambda m, x: x.at[idx].get(mode=mode, fill_value=-1), x)
        check(lambda m, x: x.at[idx].get(mode=mode, wrap_negative_indices=False), x)


def test_at_dtype_casting_and_weak_types():
    i8 = np.arange(5, dtype=np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a Python int wraps into int8 without a warning
        assert_same(tnp.asarray(i8).at[1].set(300), jnp.asarray(i8).at[1].set(300))
    check(lambda m, x: x.at[1].set(-3), i8)
    check(lambda m, x: x.at[2].add(np.int8(3)), i8)
    check(lambda m, x: x.at[1].divide(2), i8)                 # divide gives floats
    assert_same(tnp.asarray(3.0).at[()].add(2), jnp.asarray(3.0).at[()].add(2))
    assert_same(tnp.asarray(3).at[()].set(2), jnp.asarray(3).at[()].set(2))
    check(lambda m, x: x.at[0].min(False), np.array([True, False]))
    for f in (lambda m, x: x.at[1].set(1.5), lambda m, x: x.at[1].add(np.int32(3))):
        with pytest.warns(FutureWarning, match="cannot safely cast"):
            ours = f(tnp, tnp.asarray(i8))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(ours, f(jnp, jnp.asarray(i8)))


def test_at_apply_matches_jax():
    x = np.arange(6, dtype=np.float32)
    for idx in (1, A([1, 1, 3]), A([0, 9]), slice(None, None, 2), A([True, False] * 3)):
        check(lambda m, x: x.at[idx].apply(lambda v: v * 2 + 1), x)
    check(lambda m, x: x.at[A([0, 9])].apply(lambda v: v + 1, mode="clip"), x)
    check(lambda m, x: x.at[0].apply(m.sin), x)
    check_jit(lambda m, x, i: x.at[i].apply(lambda v: v * 3 - 1), x, A([2, 2, 5], np.int32))


def test_at_errors_match_jax():
    x = np.arange(5, dtype=np.float32)
    cases = [
        lambda m: m.asarray(x).at[1].set(2.0, mode="bogus"),
        lambda m: m.asarray(x).at[1].set(m.asarray([1.0, 2.0])),
        lambda m: m.asarray(x).at[1:3].set(m.asarray([[7.0, 8.0]])),
        lambda m: m.asarray(np.array([True, False])).at[0].add(True),
        lambda m: m.asarray(np.zeros(0, np.float32)).at[0].set(1.0),
        lambda m: m.asarray(x).at[1.5].set(1.0),
        lambda m: m.asarray(x).at[A([1, 2])].get(fill_value=A([1, 2]), mode="fill"),
    ]
    for case in cases:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_at_repr():
    x = tnp.asarray(np.arange(3))
    assert repr(x.at).startswith("_IndexUpdateHelper(")
    assert repr(x.at[1]).startswith("_IndexUpdateRef(")


# --- take / take_along_axis -----------------------------------------------------------------

@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
def test_take_matches_jax(mode):
    x = _x((2, 3), np.float32)
    for indices, axis in [(A([[0, 2], [4, 1]]), 1), (A([[0, 2], [4, -1]]), None), (A(2), 0),
                          (A([-1, -7, 5]), 0), (A([], np.int32), 1), (A([1, 0], np.uint8), -1),
                          (A([127, -1], np.int8), 1)]:
        check_jit(lambda m, x, i: m.take(x, i, axis=axis, mode=mode), x, indices)
    check(lambda m, x, i: m.take(x, i, mode=mode, fill_value=-5), x, A([-1, -7, 5]))
    i = _x((4,), np.int32)
    for dtype in (np.uint8, np.bool_):
        check(lambda m, x, i: m.take(x, i, mode=mode), _x((3, 3), dtype), i)


def test_take_errors_and_edge_cases_match_jax():
    x = np.arange(6, dtype=np.float32)
    check(lambda m, x: m.take(x, 2), x)
    check(lambda m, x: m.take(x, m.asarray(np.zeros(0, np.int32)), axis=1), np.zeros((2, 0)))
    for case in [lambda m: m.take(m.asarray(x), [1, 2]),
                 lambda m: m.take(m.asarray(x), m.asarray([1]), mode="raise"),
                 lambda m: m.take(m.asarray(x), m.asarray([1]), mode="bad"),
                 lambda m: m.take(m.asarray(np.zeros((2, 0))), m.asarray([1]), axis=1),
                 lambda m: m.take(m.asarray(x), m.asarray([1.5])),
                 lambda m: m.take(m.asarray(x), m.asarray([1]), axis=1)]:
        same_error(lambda: case(tnp), lambda: case(jnp))


@pytest.mark.parametrize("mode", [None, "fill", "clip", "promise_in_bounds"])
def test_take_along_axis_matches_jax(mode):
    x = _x((2, 3, 4), np.float32)
    for indices, axis in [(A([[[0], [2], [1]]]), 2), (A([[[0, 5, -1, 2]]]), 0),
                          (A([[[1, 0, 3, 2]] * 3] * 2), -1), (A([[[2]], [[0]]]), 1),
                          (A([[[0, 1, 2, 3]]] * 2), 1), (A([0, 1, -1, 30]), None),
                          (np.zeros((2, 3, 0), np.int32), 2)]:
        check_jit(lambda m, x, i: m.take_along_axis(x, i, axis, mode=mode), x, indices)
    check(lambda m, x, i: m.take_along_axis(x, i, 0, mode=mode, fill_value=7), x,
          A([[[0, 5, -1, 2]]]))
    check(lambda m, x, i: m.take_along_axis(x, i, 0, wrap_negative_indices=False), x,
          A([[[-1, 0, 1, 0]]]))
    check(lambda m, x, i: m.take_along_axis(x, i, 1), np.zeros((2, 0, 3), np.float32),
          np.zeros((2, 1, 3), np.int32))
    for case in [lambda m: m.take_along_axis(m.asarray(x), m.asarray([0, 1]), 0),
                 lambda m: m.take_along_axis(m.asarray(x), m.asarray([[[0.0]]]), 0),
                 lambda m: m.take_along_axis(m.asarray(x), m.asarray([[0]]), None),
                 lambda m: m.take_along_axis(m.asarray(x), m.asarray(np.zeros((3, 1, 1), int)),
                                             2)]:
        same_error(lambda: case(tnp), lambda: case(jnp))


# --- where / select / nonzero family --------------------------------------------------------

def test_where_matches_jax():
    c = A([[True, False, True]])
    for x, y in [(1, 2), (1.0, 2), (A([1, 2, 3], np.int8), 5), (A([[1.5], [2.5]], np.float32), 0),
                 (np.float32(1), A([1, 2, 3], np.uint8)), (True, A([0, 1, 0], np.int32))]:
        check_jit(lambda m, c, x, y: m.where(c, x, y), c, x, y)
    check(lambda m, c: m.where(c, 1.0, 2), A([1, 0, 3]))
    check(lambda m, c: m.where(c, 1.0, 2), True)
    check(lambda m, c: m.where(c, np.nan, 2.0), A([0.0, np.nan, 2.0], np.float32))
    check(lambda m, c: m.where(c), A([[1, 0], [0, 3]]))
    check(lambda m, c: m.where(c, size=3, fill_value=-1), A([1, 0, 1]))
    for case in [lambda m: m.where(True, 1), lambda m: m.where(True, 1, None),
                 lambda m: m.where(m.asarray([1, 0]), 1, 2, size=3),
                 lambda m: m.where(m.ones(2, bool), m.ones(3), m.ones(2))]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_select_matches_jax():
    c1, c2 = A([True, False, False]), A([True, True, False])
    check_jit(lambda m, a, b: m.select([a, b], [1, A([2.0, 3.0, 4.0], np.float32)], 7), c1, c2)
    check(lambda m, a: m.select([a], [5]), A([1, 0]))
    check(lambda m, a, b: m.select([a, b], [A([[1]]), 2], A([9, 9, 9], np.int8)), c1, c2)
    for case in [lambda m: m.select([], []), lambda m: m.select([True], [1, 2])]:
        same_error(lambda: case(tnp), lambda: case(jnp))


NONZERO_INPUTS = [A([0.0, -0.0, np.nan, 2.0], np.float32), np.zeros((2, 0)), _x((2, 3, 4)) % 3]


@pytest.mark.parametrize("a", NONZERO_INPUTS)
@pytest.mark.parametrize("size,fill_value", [(None, None), (3, -1), (30, 1.5)])
def test_nonzero_family_matches_jax(a, size, fill_value):
    check(lambda m, a: m.nonzero(a, size=size, fill_value=fill_value), a)
    check(lambda m, a: m.argwhere(a, size=size, fill_value=fill_value), a)
    check(lambda m, a: m.flatnonzero(a, size=size, fill_value=fill_value), a)
    if size is not None:
        check_jit(lambda m, a: m.nonzero(a, size=size, fill_value=fill_value), a)
        check_jit(lambda m, a: m.argwhere(a, size=size, fill_value=fill_value), a)


def test_nonzero_tuple_fill_scalars_and_errors():
    a = A([[1, 0], [0, 3]])
    check(lambda m, a: m.nonzero(a, size=3, fill_value=(7, 8)), a)
    check(lambda m, a: m.nonzero(a, size=0), a)
    check(lambda m, a: m.argwhere(a, size=0), a)
    check(lambda m, a: m.argwhere(a), np.int32(5))
    check(lambda m, a: m.argwhere(a), np.int32(0))
    check(lambda m, a: m.argwhere(a, size=2), np.float32(3))
    for case in [lambda m: m.nonzero(3),
                 lambda m: jit_of(m)(m.nonzero)(m.asarray([1, 0])),
                 lambda m: jit_of(m)(m.argwhere)(m.asarray([1, 0])),
                 lambda m: m.nonzero(m.asarray(a), size=3, fill_value=A([1, 2]))]:
        same_error(lambda: case(tnp), lambda: case(jnp))
    err = same_error(lambda: tracejit.jit(tnp.flatnonzero)(np.ones(3)),
                     lambda: jax.jit(jnp.flatnonzero)(np.ones(3)))
    assert isinstance(err, errors.ConcretizationTypeError) and "size" in str(err)


def jit_of(m):
    return tracejit.jit if m is tnp else jax.jit


def test_extract_and_compress_match_jax():
    c3, a4 = A([1, 0, 1]), A([5, 6, 7, 8])
    check(lambda m, c, a: m.extract(c, a), c3, a4)
    check(lambda m, c, a: m.extract(c, a, size=3, fill_value=-1), c3, a4.astype(np.float32))
    check_jit(lambda m, c, a: m.extract(c, a, size=2), c3, a4)
    x = _x((3, 2), np.int32)
    check(lambda m, c, a: m.compress(c, a, axis=1), A([True, False]), x)
    check(lambda m, c, a: m.compress(c, a, axis=0), A([True, False, True]), x)
    check(lambda m, c, a: m.compress(c, a), A([0, 1, 1]), x)
    check(lambda m, c, a: m.compress(c, a, axis=-2, size=3, fill_value=-1),
          A([True, False, True]), x)
    check_jit(lambda m, c, a: m.compress(c, a, axis=0, size=1), A([False, True]), x)
    for case in [lambda m: m.compress(m.asarray([1, 0, 1, 1, 1]), m.asarray(a4)),
                 lambda m: m.compress(m.asarray([[1]]), m.asarray(a4)),
                 lambda m: m.compress(m.asarray([1, 0]), m.asarray(a4), size=7),
                 lambda m: jit_of(m)(lambda c: m.compress(c, m.asarray(a4)))(
                     m.asarray([1, 0, 1]))]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_choose_matches_jax():
    a = A([0, 1, 2, 1])
    choices = [A([1, 2, 3, 4]), 10, A([7.0, 8, 9, 10], np.float32)]
    check(lambda m, a, c0, c2: m.choose(a, [c0, 10, c2]), a, choices[0], choices[2])
    for mode in ("wrap", "clip"):
        check_jit(lambda m, a: m.choose(a, [1, 2, 3], mode=mode), A([0, 5, -1, -4]))
    check(lambda m: m.choose(0, [1, 2]))
    check(lambda m, a: m.choose(a, [A([[1], [2]]), A([5, 6, 7])]), A([[0, 1, 1]]))
    for case in [lambda m: m.choose(m.asarray([0, 5]), [1, 2, 3]),
                 lambda m: m.choose(m.asarray([0.0]), [1, 2]),
                 lambda m: m.choose(m.asarray([0]), [1, 2], mode="bad"),
                 lambda m: jit_of(m)(lambda a: m.choose(a, [1, 2]))(m.asarray([0]))]:
        same_error(lambda: case(tnp), lambda: case(jnp))


# --- diagonals and index helpers -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (0, 3)])
@pytest.mark.parametrize("offset", [0, 1, -2, 7])
def test_diagonal_diag_trace_match_jax(shape, offset):
    x = _x(shape, np.int32)
    axes = [(0, 1), (-1, 0)] if len(shape) == 3 else [(0, 1), (1, 0)]
    for ax1, ax2 in axes:
        check(lambda m, x: m.diagonal(x, offset, ax1, ax2), x)
    check(lambda m, x: x.trace(offset, *axes[-1]), x)
    if len(shape) == 2 and shape[0]:
        check_jit(lambda m, x: m.diag(x, offset), x)
        check_jit(lambda m, x: m.diag(x[0], offset), x)


def test_diag_trace_dtypes_and_errors():
    check(lambda m, x: m.trace(x), np.arange(9, dtype=np.int8).reshape(3, 3))
    check(lambda m, x: m.trace(x), np.ones((3, 3), bool))
    check(lambda m, x: m.trace(x, 1, dtype=np.int32), _x((3, 3), np.float32))
    check(lambda m, x: m.diag(x, -1), A([1.5, 2.5], np.float32))
    check(lambda m, x: m.diag(x), np.float32(2.0) * np.ones(0, np.float32))
    for case in [lambda m: m.diag(m.zeros((2, 2, 2))), lambda m: m.diag(3),
                 lambda m: m.diagonal(m.zeros(3)), lambda m: m.trace(m.zeros(3)),
                 lambda m: m.trace(m.ones((2, 2)), 0, 1, 1),
                 lambda m: m.diagonal(m.zeros((2, 2)), 1.0)]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_index_helpers_match_jax():
    check(lambda m: m.diag_indices(3))
    check(lambda m: m.diag_indices(4, 3))
    check(lambda m: m.diag_indices(0))
    check(lambda m, a: m.diag_indices_from(a), np.zeros((3, 3, 3)))
    for n, k, mm in [(3, 1, 4), (4, -1, 2)]:
        check(lambda m: m.tril_indices(n, k, mm))
        check(lambda m: m.triu_indices(n, k, mm))
    check(lambda m, a: m.tril_indices_from(a, 1), np.zeros((2, 3)))
    check(lambda m, a: m.triu_indices_from(a, -1), np.zeros((4, 3)))
    check(lambda m, a, b: m.ix_(a, b), A([0, 1]), A([2, 3, 4], np.uint8))
    check(lambda m, a: m.ix_(a), A([], np.int32))
    check(lambda m: m.ix_())
    for case in [lambda m: m.diag_indices(-1), lambda m: m.diag_indices_from(m.ones((2, 3))),
                 lambda m: m.diag_indices_from(m.ones(3)), lambda m: m.tril_indices_from(m.ones(3)),
                 lambda m: m.triu_indices_from(m.ones((2, 2, 2))),
                 lambda m: m.ix_(m.asarray([True])), lambda m: m.ix_(m.ones((2, 2), int))]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_unravel_and_ravel_multi_index_match_jax():
    flat = A([0, 5, 11, 12, -1, -13, 100])
    for shape in [(3, 4), (12,), (2, 3, 2), (1,)]:
        check_jit(lambda m, i: m.unravel_index(i, shape), flat)
    check(lambda m: m.unravel_index(7, 3))
    check(lambda m, i: m.unravel_index(i, (3, 4)), A([0, 5, 250], np.uint8))
    i, j = A([0, 2, 1]), A([1, 3, 0])
    check(lambda m, i, j: m.ravel_multi_index((i, j), (3, 4)), i, j)
    i, j = A([0, 5, -1]), A([1, -3, 9])
    for mode in ("wrap", "clip"):
        for order in ("C", "F"):
            check_jit(lambda m, i, j: m.ravel_multi_index((i, j), (3, 4), mode=mode,
                                                          order=order), i, j)
    check(lambda m, i, j: m.ravel_multi_index((i, j), (3, 4), mode="clip", dtype=np.uint8), i, j)
    for case in [lambda m: m.ravel_multi_index((m.asarray(i), m.asarray(j)), (3, 4)),
                 lambda m: m.ravel_multi_index((m.asarray([0.0]), m.asarray([1])), (3, 4),
                                               mode="clip"),
                 lambda m: m.ravel_multi_index((m.asarray([0]), m.asarray([1])), (3, 4),
                                               mode="bad"),
                 lambda m: m.ravel_multi_index((m.asarray([0]), m.asarray([1])), (3, 4),
                                               mode="clip", order="K"),
                 lambda m: m.ravel_multi_index((m.asarray([0]), m.asarray([1])), (300, 4),
                                               mode="clip", dtype=np.int8),
                 lambda m: jit_of(m)(lambda a: m.ravel_multi_index((a, a), (3, 4)))(
                     m.asarray([0])),
                 lambda m: m.unravel_index(m.asarray([1]), ((2, 3),))]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_put_and_place_match_jax():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for mode in (None, "clip", "wrap"):
        check_jit(lambda m, x, i, v: m.put(x, i, v, mode=mode, inplace=False), x,
                  A([1, 8, -8, 1]), A([10, 20, 30]))
        check(lambda m, x, i: m.put(x, i, 5, mode=mode, inplace=False), x, A([[0], [4]]))
    check(lambda m, x, i: m.put(x, i, m.asarray(np.zeros(0, np.int32)), inplace=False), x,
          A([1]))
    check(lambda m, x, mask, v: m.place(x, mask, v, inplace=False), x, x > 1, A([-1, -2]))
    check(lambda m, x, mask: m.place(x, mask, 7, inplace=False), x, x % 2 == 0)
    check(lambda m, x, mask: m.place(x, mask, 7, inplace=False), np.zeros(0), np.zeros(0, bool))
    for case in [lambda m: m.put(m.asarray(x), m.asarray([1]), 5),
                 lambda m: m.put(m.asarray(x), m.asarray([1]), 5, mode="raise", inplace=False),
                 lambda m: m.put(m.asarray(x), m.asarray([1]), 5, mode="x", inplace=False),
                 lambda m: m.place(m.asarray(x), m.asarray(x > 1), 1),
                 lambda m: m.place(m.asarray(x), m.asarray([True]), 1, inplace=False),
                 lambda m: m.place(m.asarray(x), m.asarray(x > 1), m.asarray([]), inplace=False)]:
        same_error(lambda: case(tnp), lambda: case(jnp))


def test_array_methods_route_here():
    x = _x((3, 3), np.float32)
    check(lambda m, x: x.take(A([0, 4])), x)
    check(lambda m, x: x.nonzero(), x)
    check(lambda m, x: (x > 0).nonzero(size=2), x)


def test_indexing_in_x64_mode(x64):
    x = np.arange(10, dtype=np.float64)
    check_jit(lambda m, x, i: x[i], x, A([1, -2, 30], np.int64))
    check_jit(lambda m, x, i: x[i], x, np.int64(-3))
    check(lambda m, x: m.argwhere(x > 7, size=3, fill_value=-1), x)
    check(lambda m, x: m.diag_indices(3), x)
    check(lambda m, x: x.at[A([1, 1])].add(2), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.complex64, np.float64])
def test_gathers_from_small_tables_against_the_interpreter(dtype):
    """A gather from a stored table of at most index_maps.SMALL_TABLE elements is a chain of
    selects (vectorised with its loop): tables either side of that size, rows of a 2-D table,
    every index mode, negative and out-of-range indices, over 2^13 indices."""
    from tracejit.backend.llvm.index_maps import SMALL_TABLE
    rng = np.random.default_rng(1)
    idx = rng.integers(-SMALL_TABLE - 3, 2 * SMALL_TABLE, 8192).astype(np.int32)
    for size in (1, 2, 10, SMALL_TABLE, SMALL_TABLE + 1):
        table = _x((size,), dtype, seed=size)
        if dtype == np.complex64:
            table = table + 1j * _x((size,), np.float32, seed=size + 50)
        for mode in ("clip", "fill", "wrap", None):
            def f(t, i):
                return tnp.take(t, i, mode=mode) * 1 if dtype != np.bool_ else \
                    tnp.take(t, i, mode=mode) | False
            ours = tracejit.jit(f)(table, idx)
            want = tracejit.jit(f, backend="interpret")(table, idx)
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(want),
                                          err_msg=f"size {size} mode {mode}")
    rows = _x((4, 4), dtype, seed=3)
    i = (idx % 9 - 2)[:, None]
    got = tracejit.jit(lambda t, i: t[i[:, 0]] + t[i[:, 0], ::-1])(rows, i)
    want = tracejit.jit(lambda t, i: t[i[:, 0]] + t[i[:, 0], ::-1], backend="interpret")(rows, i)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
