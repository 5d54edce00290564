"""lax.sort / sort_key_val / top_k and jnp's sorting, searching and set functions, against JAX
(exact values incl. NaN placement and the sign of zeros, dtypes, weak types, error classes)
and NumPy (stable orderings)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax
from tracejit.core.errors import ConcretizationTypeError

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

NAN = np.nan
FLOATS = np.array([3., NAN, -0.0, 0.0, -NAN, -np.inf, np.inf, 1., 0., -0., 1.], np.float32)
INTS = np.array([3, 1, 2, 3, 1, -5, 7], np.int32)
MATRIX = np.random.default_rng(0).integers(0, 4, (3, 5)).astype(np.float32)
BOOLS = np.array([True, False, True, False])
COMPLEX = np.array([1 + 2j, 1 + 1j, complex(NAN, 0), complex(0, NAN), -1 + 0j, 1 + 1j],
                   np.complex64)


def to_tj(x):
    if isinstance(x, np.ndarray):
        return tnp.asarray(x)
    if isinstance(x, tuple):
        return tuple(to_tj(e) for e in x)
    return x


def to_jax(x):
    if isinstance(x, np.ndarray):
        return jnp.asarray(x)
    if isinstance(x, tuple):
        return tuple(to_jax(e) for e in x)
    return x


def assert_same(t, j):
    """Same structure, shapes, dtypes, weak types, exact values, NaNs and signs of zero."""
    ts, js = (t, j) if isinstance(j, (tuple, list)) else ((t,), (j,))
    assert type(t) is type(j) or not isinstance(j, (tuple, list))
    assert len(ts) == len(js)
    for a, b in zip(ts, js):
        assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, b.weak_type)
        av, bv = np.asarray(a), np.asarray(b)
        np.testing.assert_array_equal(av, bv)
        if av.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(av), np.signbit(bv))


def check(tfun, jfun, *args, **kw):
    """Run the JAX oracle; tracejit must give the same result, or raise JAX's error class."""
    try:
        expected = jfun(*map(to_jax, args), **kw)
    except Exception as e:  # noqa: BLE001 - the oracle decides which error class is right
        with pytest.raises(type(e)):
            tfun(*map(to_tj, args), **kw)
        return
    assert_same(tfun(*map(to_tj, args), **kw), expected)


# --- lax.sort / sort_key_val / top_k -------------------------------------------------------

@pytest.mark.parametrize("x", [FLOATS, INTS, MATRIX, BOOLS, COMPLEX, FLOATS.astype(np.float16),
                               np.zeros((0, 3), np.float32), INTS.astype(np.uint8)], ids=str)
@pytest.mark.parametrize("kw", [{}, {"dimension": 0}, {"is_stable": False}], ids=str)
def test_lax_sort_matches_jax(x, kw):
    check(tlax.sort, jlax.sort, x, **kw)


@pytest.mark.parametrize("operands,kw", [
    ((FLOATS, np.arange(11, dtype=np.int32)), {}),
    ((np.array([1, 0, 1, 0, 1]), np.array([2., 2, 1, 1, NAN], np.float32),
      np.arange(5, dtype=np.int32)), {"num_keys": 2}),
    ((np.array([1, 0, 1, 0]), np.array([3, 2, 1, 0])), {"num_keys": 1}),
    ((MATRIX, MATRIX * 2), {"dimension": 0}),
    ((MATRIX, MATRIX.astype(np.int32)), {"num_keys": 2, "dimension": 1}),
    ((FLOATS,), {}),
    ((FLOATS, INTS), {}),  # shape mismatch
    ((FLOATS,), {"num_keys": 2}),
    ((), {}),
], ids=str)
def test_lax_sort_multi_operand_matches_jax(operands, kw):
    check(tlax.sort, jlax.sort, operands, **kw)


@pytest.mark.parametrize("call", [
    lambda L, x: L.sort(x, num_keys=2),
    lambda L, x: L.sort(x, dimension=1),
    lambda L, x: L.sort(x.sum()),  # rank 0
])
def test_lax_sort_errors_match_jax(call):
    check(lambda x: call(tlax, x), lambda x: call(jlax, x), FLOATS)


def test_sort_key_val_matches_jax():
    check(tlax.sort_key_val, jlax.sort_key_val, FLOATS, np.arange(11, dtype=np.int32))
    check(tlax.sort_key_val, jlax.sort_key_val, MATRIX, MATRIX * 3, dimension=0)


@pytest.mark.parametrize("x,k,kw", [
    (FLOATS, 11, {}), (FLOATS, 3, {}), (INTS, 3, {}), (np.array([-0.0, 0.0, -0.0, 0.0]), 4, {}),
    (np.array([NAN, 1, -NAN, 2], np.float32), 4, {}), (MATRIX, 2, {"axis": 0}),
    (MATRIX, 0, {}), (np.zeros((3, 0)), 0, {}), (BOOLS, 2, {}), (INTS.astype(np.uint8), 4, {}),
    (FLOATS.astype(np.float16), 5, {}), (INTS, 8, {}), (INTS, -1, {}), (np.float32(1), 0, {}),
    (COMPLEX, 1, {}),
], ids=str)
def test_top_k_matches_jax(x, k, kw):
    check(lambda a: tlax.top_k(a, k, **kw), lambda a: jlax.top_k(a, k, **kw), x)


def test_sort_jaxprs():
    x = tnp.asarray(FLOATS)
    eqns = tracejit.make_jaxpr(lambda a: tnp.argsort(a))(x).jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["iota", "sort"]
    assert eqns[1].params == {"dimension": 0, "is_stable": True, "num_keys": 1}
    (eqn,) = tracejit.make_jaxpr(lambda a: tlax.top_k(a, 2))(x).jaxpr.eqns
    assert (eqn.primitive.name, eqn.params) == ("top_k", {"k": 2, "axis": 0})


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 12),
                  elements=st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, NAN])))
def test_stable_argsort_matches_numpy(x):
    t = tnp.argsort(tnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(t), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(np.asarray(tnp.sort(tnp.asarray(x))), np.sort(x))


# --- jnp.sort / argsort / lexsort / partition ----------------------------------------------

@pytest.mark.parametrize("name", ["sort", "argsort"])
@pytest.mark.parametrize("x", [FLOATS, INTS, MATRIX, BOOLS, np.zeros((0, 3), np.float32),
                               np.float32(2)], ids=str)
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": None}, {"descending": True},
                                {"stable": False}, {"descending": True, "axis": 0},
                                {"kind": "stable"}, {"order": "x"}], ids=str)
def test_sort_argsort_match_jax(name, x, kw):
    if name == "argsort" and kw == {"stable": False}:
        return  # unstable argsort may order ties differently: not comparable
    check(getattr(tnp, name), getattr(jnp, name), x, **kw)


def test_argsort_dtype_keyword_and_methods():
    check(lambda a: tnp.argsort(a, dtype=np.int8), lambda a: jnp.argsort(a, dtype=np.int8), INTS)
    assert_same(tnp.asarray(FLOATS).sort(), jnp.asarray(FLOATS).sort())
    assert_same(tnp.asarray(FLOATS).argsort(), jnp.asarray(FLOATS).argsort())
    assert_same(tnp.asarray(np.sort(INTS)).searchsorted(3),
                jnp.asarray(np.sort(INTS)).searchsorted(3))
    for name in ("sort", "argsort", "searchsorted"):
        assert name not in tnp._MISSING_METHODS


@pytest.mark.parametrize("keys,kw", [
    ((np.array([1, 2, 1, 2]), np.array([0, 0, 0, 1])), {}),
    ((FLOATS, FLOATS[::-1].copy()), {}),
    ((MATRIX, MATRIX * 2), {"axis": 0}),
    ((np.float32(1), np.float32(2)), {}),
    ((), {}),
    ((np.ones(3), np.ones(4)), {}),
], ids=str)
def test_lexsort_matches_jax(keys, kw):
    check(tnp.lexsort, jnp.lexsort, keys, **kw)


@pytest.mark.parametrize("name", ["partition", "argpartition"])
@pytest.mark.parametrize("x", [np.array([3, 1, 2, 5, 4, 1]), np.array([3, 1, 2, 5, 4, 1],
                                                                      np.uint8),
                               np.array([3., NAN, 2, -0., 0., 1.], np.float32), MATRIX,
                               COMPLEX], ids=str)
@pytest.mark.parametrize("kth,kw", [(0, {}), (2, {}), (-1, {}), (1, {"axis": 0}), (9, {})],
                         ids=str)
def test_partition_matches_jax(name, x, kth, kw):
    check(lambda a: getattr(tnp, name)(a, kth, **kw), lambda a: getattr(jnp, name)(a, kth, **kw),
          x)


# --- searchsorted / digitize ---------------------------------------------------------------

SORTED = np.array([1., 2, 2, 3, 5, NAN], np.float32)
QUERIES = np.array([[0, 2, 2.5], [9, NAN, -0.]], np.float32)


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
@pytest.mark.parametrize("a,v,kw", [
    (SORTED, QUERIES, {}), (SORTED, QUERIES, {"side": "right"}), (SORTED, 2, {}),
    (np.array([1, 3, 3, 7]), np.array([0, 3, 4, 8, 7]), {}),
    (np.array([1, 3, 3, 7]), np.array([0, 3, 4, 8, 7]), {"side": "right"}),
    (np.array([1, 3, 3, 7]), np.array([2.5, 3.0]), {}),  # promotion
    (np.array([], np.float32), np.array([0, 3.]), {}), (SORTED, np.array([], np.float32), {}),
    (np.array([4, 3, 5, 1, 2]), np.array([0, 3, 8, 1.5, 2]),
     {"sorter": np.array([3, 4, 1, 0, 2])}),
    (np.array([False, True]), np.array([True, False, True]), {}),
    (SORTED, QUERIES, {"side": "middle"}), (MATRIX, QUERIES, {}),
    # unsorted: each method's own answer (the binary search's for 'scan'), as JAX's
    (np.array([5, 1, 4, 1, 9, 2, 6, 5, 3], np.float32), np.array([0, 1, 2, 4.5, 5, 10]), {}),
    (np.array([5, 1, 4, 1, 9, 2, 6, 5, 3], np.float32), np.array([0, 1, 2, 4.5, 5, 10]),
     {"side": "right"}),
], ids=str)
def test_searchsorted_matches_jax(a, v, kw, method):
    tkw = {k: to_tj(v) for k, v in kw.items()}
    jkw = {k: to_jax(v) for k, v in kw.items()}
    check(lambda *xs: tnp.searchsorted(*xs, method=method, **tkw),
          lambda *xs: jnp.searchsorted(*xs, method=method, **jkw), a, v)


def test_searchsorted_bad_method():
    check(lambda a, v: tnp.searchsorted(a, v, method="nope"),
          lambda a, v: jnp.searchsorted(a, v, method="nope"), SORTED, QUERIES)


@pytest.mark.parametrize("x,bins,kw", [
    (np.array([1.0, 2.0, 2.5, 1.5, 3.0, 3.5]), np.array([1, 2, 3]), {}),
    (np.array([1.0, 2.0, 2.5, 1.5, 3.0, 3.5]), np.array([1, 2, 3]), {"right": True}),
    (np.array([1.0, 2.0, 2.5, 1.5, 3.0, 3.5]), np.array([3, 2, 1]), {}),
    (np.array([[1.0, 2.0], [2.5, 1.5]]), np.array([3, 2, 1]), {"right": True}),
    (np.array([1.0, 2.0]), np.array([], np.float32), {}),
    (np.array([1.0, 2.0]), np.array([[1.0]]), {}),
    (np.array([1.0, 2.0, NAN]), np.array([0.0, 1.5]), {"method": "compare_all"}),
], ids=str)
def test_digitize_matches_jax(x, bins, kw):
    check(tnp.digitize, jnp.digitize, x, bins, **kw)


# --- unique and set functions --------------------------------------------------------------

UNIQUE_INPUTS = [np.array([3, 1, 2, 3, 1, 1]), np.array([NAN, 1, NAN, -0.0, 0.0, 1], np.float32),
                 MATRIX, np.array([], np.float32), np.array([5]), COMPLEX]
UNIQUE_KWS = [{}, {"return_index": True}, {"return_inverse": True}, {"return_counts": True},
              {"return_index": True, "return_inverse": True, "return_counts": True},
              {"size": 3}, {"size": 8, "return_index": True, "return_inverse": True,
                            "return_counts": True},
              {"size": 8, "fill_value": -1, "return_index": True, "return_counts": True},
              {"size": 1, "return_counts": True}, {"equal_nan": False, "return_counts": True},
              {"size": 0, "return_counts": True}]


@pytest.mark.parametrize("x", UNIQUE_INPUTS, ids=str)
@pytest.mark.parametrize("kw", UNIQUE_KWS, ids=str)
def test_unique_matches_jax(x, kw):
    check(tnp.unique, jnp.unique, x, **kw)


@pytest.mark.parametrize("kw", [{"axis": 0}, {"axis": 1, "return_counts": True,
                                              "return_inverse": True, "return_index": True},
                                {"axis": 0, "size": 4, "fill_value": 9, "return_counts": True},
                                {"axis": -1, "size": 2}, {"axis": 2}], ids=str)
def test_unique_along_axis_matches_jax(kw):
    check(tnp.unique, jnp.unique, np.array([[1, 2, 1], [1, 2, 1], [0, 5, 0], [1, 2, 1]]), **kw)


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse",
                                  "unique_values"])
@pytest.mark.parametrize("x,kw", [(UNIQUE_INPUTS[1], {}), (UNIQUE_INPUTS[0],
                                                           {"size": 5, "fill_value": 0})],
                         ids=str)
def test_array_api_unique_matches_jax(name, x, kw):
    t, j = getattr(tnp, name)(tnp.asarray(x), **kw), getattr(jnp, name)(jnp.asarray(x), **kw)
    if isinstance(j, tuple):
        assert type(t).__name__ == type(j).__name__ and t._fields == j._fields
        t, j = tuple(t), tuple(j)
    assert_same(t, j)


@pytest.mark.parametrize("a,b,kw", [
    (np.array([3, 1]), np.array([2, 1.]), {}), (np.array([3, 1]), np.array([2, 1.]),
                                                {"size": 5, "fill_value": -1}),
    (np.array([[3, 1], [1, 0]]), np.array([], np.int32), {}),
], ids=str)
def test_union1d_matches_jax(a, b, kw):
    check(tnp.union1d, jnp.union1d, a, b, **kw)


@pytest.mark.parametrize("a,b,kw", [
    (np.array([[1, 2], [3, 4]]), np.array([2, 5, 4]), {}),
    (np.array([[1, 2], [3, 4]]), np.array([2, 5, 4]), {"invert": True}),
    (np.array([NAN, 1, -0.0], np.float32), np.array([NAN, 0.0]), {}),
    (np.array([1., 2]), np.array([], np.float32), {}), (2, np.array([2, 3]), {}),
    (np.array([1, 2]), np.array([2, 3]), {"method": "sort"}),
    (np.array([1, 2]), np.array([2, 3]), {"method": "bogus"}),
], ids=str)
def test_isin_matches_jax(a, b, kw):
    check(tnp.isin, jnp.isin, a, b, **kw)


@pytest.mark.parametrize("args,kw", [
    ((np.array([0, 1, 1, 3]),), {}),
    ((np.array([0, 1, 1, 3]), np.array([.5, 1, 1, 2], np.float32)), {}),
    ((np.array([0, 1, 1, 3, -1, 7]),), {"length": 3}), ((np.array([0, 1, 1, 3]),),
                                                        {"minlength": 7}),
    ((np.array([], np.int32),), {}), ((BOOLS,), {}), ((np.array([0.5, 1.]),), {}),
    ((np.array([[0, 1]]),), {}),
    ((np.array([0, 1, 1, 3]), np.array([np.inf, 1, 1, NAN], np.float32)), {}),
    ((np.array([0, 1]), np.array([1., 2, 3])), {}),
    ((np.array([2, 0], np.uint8), np.array([1, 2], np.int8)), {"length": 4}),
    ((np.array([0, 1, 1, 3]), np.array([True, False, True, True])), {}),  # JAX's TypeError
    ((np.array([0, 1, 1, 3]), np.array([1 + 2j, 1, 1, 3j], np.complex64)), {}),
], ids=str)
def test_bincount_matches_jax(args, kw):
    check(tnp.bincount, jnp.bincount, *args, **kw)


# --- jit: same results as eager, and JAX's errors for data-dependent sizes ------------------

@pytest.mark.parametrize("fun", [
    lambda x: tnp.sort(x, descending=True), lambda x: tnp.argsort(x, axis=None),
    lambda x: tnp.unique(x, size=6, fill_value=-1, return_index=True, return_inverse=True,
                         return_counts=True),
    lambda x: tnp.searchsorted(tnp.sort(x, axis=None), x),
    lambda x: tnp.partition(x, 1), lambda x: tnp.argpartition(x, 2),
    lambda x: tlax.top_k(x, 3), lambda x: tnp.lexsort((x, -x)),
    lambda x: tnp.bincount(tnp.ravel(x).astype(np.int32), length=5),
    lambda x: tnp.digitize(x, tnp.asarray(np.array([0.5, 2.0], np.float32))),
    lambda x: tnp.isin(x, tnp.asarray(np.array([1.0, 3.0], np.float32))),
], ids=["sort", "argsort", "unique", "searchsorted", "partition", "argpartition", "top_k",
        "lexsort", "bincount", "digitize", "isin"])
def test_jit_matches_eager(fun):
    x = tnp.asarray(MATRIX)
    eager, jitted = fun(x), tracejit.jit(fun)(x)
    assert_same(jitted, eager)


@pytest.mark.parametrize("name,tfun,jfun", [
    ("unique", tnp.unique, jnp.unique),
    ("union1d", lambda x: tnp.union1d(x, x), lambda x: jnp.union1d(x, x)),
    ("bincount", tnp.bincount, jnp.bincount),
    ("unique-traced-size", lambda x: tnp.unique(x, size=x[0]),
     lambda x: jnp.unique(x, size=x[0])),
])
def test_data_dependent_sizes_need_static_size_under_jit(name, tfun, jfun):
    x = np.array([3, 1, 2, 3], np.int32)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jfun)(jnp.asarray(x))
    with pytest.raises(ConcretizationTypeError, match="size|length"):
        tracejit.jit(tfun)(tnp.asarray(x))


def test_x64_index_dtypes(x64):
    x = np.array([3, 1, 2, 3, 1], np.int64)
    check(tnp.argsort, jnp.argsort, x)
    check(tnp.lexsort, jnp.lexsort, (x, x))
    check(lambda a: tnp.unique(a, return_index=True, return_inverse=True, return_counts=True),
          lambda a: jnp.unique(a, return_index=True, return_inverse=True, return_counts=True), x)
    check(tnp.searchsorted, jnp.searchsorted, np.sort(x), x)
    check(lambda a: tnp.argpartition(a, 1), lambda a: jnp.argpartition(a, 1), x)
    check(tnp.bincount, jnp.bincount, x)
    check(tnp.digitize, jnp.digitize, x.astype(np.float64), np.array([1.5, 2.5]))
