"""dot_general and the contractions built on it (jnp.dot/matmul/einsum/...) and jnp.linalg norms,
against JAX (values, dtypes, weak types, error classes)."""
from functools import partial

import numpy as np
import pytest
from tolerance import assert_jit_matches_eager, reassociation_ulps

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax
from tracejit.lax.linalg import canonicalize_precision

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

RNG = np.random.default_rng(1234)
BF16 = jnp.bfloat16


def rand(shape, dtype=np.float32):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -9
        return RNG.integers(lo, 10, shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def to_tj(x):
    return tnp.asarray(x) if isinstance(x, np.ndarray) else x


def to_jax(x):
    return jnp.asarray(x) if isinstance(x, np.ndarray) else x


def tol(dtype):
    dtype = np.dtype(dtype)
    if dtype in (np.float16, np.dtype(BF16)):
        return 2e-2
    return 1e-5 if dtype.kind in "fc" else 0


def assert_same(t, j, rtol=None):
    """Same shape, dtype, weak type and values (within a dtype-dependent tolerance)."""
    assert t.shape == j.shape, (t.shape, j.shape)
    assert t.dtype == j.dtype, (t.dtype, j.dtype)
    assert t.weak_type == j.weak_type, (t.weak_type, j.weak_type)
    tv, jv = np.asarray(t), np.asarray(j)
    r = tol(j.dtype) if rtol is None else rtol
    if r == 0:
        np.testing.assert_array_equal(tv, jv)
    else:
        np.testing.assert_allclose(tv.astype(np.complex128 if tv.dtype.kind == "c" else
                                             np.float64),
                                   jv.astype(np.complex128 if jv.dtype.kind == "c" else
                                             np.float64), rtol=r, atol=r, equal_nan=True)


def same_error(tfun, jfun):
    """Both raise; tracejit raises an instance of JAX's exception class."""
    with pytest.raises(Exception) as jerr:
        jfun()
    with pytest.raises(type(jerr.value)):
        tfun()


# --- lax.dot_general -----------------------------------------------------------------------

DOT_GENERAL_CASES = [
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((3,), (3,), (((0,), (0,)), ((), ()))),
    ((3,), (3, 4), (((0,), (0,)), ((), ()))),
    ((2, 3), (4, 3), (((1,), (1,)), ((), ()))),
    ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
    ((2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,)))),  # batch dims not leading
    ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),  # two contracting dims
    ((2, 3), (4, 5), (((), ()), ((), ()))),  # outer product
    ((), (3,), (((), ()), ((), ()))),  # scalar operand
    ((0, 3), (3, 4), (((1,), (0,)), ((), ()))),  # zero-size free dim
    ((2, 0), (0, 4), (((1,), (0,)), ((), ()))),  # zero-size contraction -> zeros
    ((3, 0, 2), (3, 2, 5), (((2,), (1,)), ((0,), (0,)))),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dnums,dtype", [
    case + (np.float32,) for case in DOT_GENERAL_CASES] + [
    case + (dtype,) for case in DOT_GENERAL_CASES[4:8] + DOT_GENERAL_CASES[-1:]
    for dtype in (np.int32, np.int8, np.uint8, np.float16, BF16, np.bool_, np.complex64)])
def test_dot_general_matches_jax(lhs_shape, rhs_shape, dnums, dtype):
    x, y = rand(lhs_shape, dtype), rand(rhs_shape, dtype)
    t = tlax.dot_general(tnp.asarray(x), tnp.asarray(y), dnums)
    j = jlax.dot_general(jnp.asarray(x), jnp.asarray(y), dnums)
    assert_same(t, j)


@pytest.mark.parametrize("ldtype,rdtype,preferred", [
    (np.float32, np.int32, None), (np.int32, np.float32, None), (np.int8, np.uint8, None),
    (np.uint8, np.int8, None), (np.float16, BF16, None), (np.bool_, np.int32, None),
    (np.complex64, np.float32, None), (np.int8, np.int8, np.int32),
    (np.int8, np.int8, np.float32), (np.float32, np.float32, np.float16),
    (np.int32, np.int32, np.uint32), (np.int8, np.uint8, np.int16),
    (np.float16, np.float16, np.float32),
])
def test_dot_general_mixed_dtypes_and_preferred_element_type(ldtype, rdtype, preferred):
    x, y = rand((2, 3), ldtype), rand((3, 4), rdtype)
    t = tlax.dot(tnp.asarray(x), tnp.asarray(y), preferred_element_type=preferred)
    j = jlax.dot(jnp.asarray(x), jnp.asarray(y), preferred_element_type=preferred)
    assert_same(t, j)


@pytest.mark.parametrize("x,y,preferred", [
    # int8 products wrap around in the output type: 100*100*100 = 1e6 -> 64 (mod 256)
    (np.full((1, 100), 100, np.int8), np.full((100, 1), 100, np.int8), None),
    # float16 accumulates in float32: the partial sum 120000 does not overflow to inf
    (np.array([[60000, 60000, -60000]], np.float16), np.ones((3, 1), np.float16), None),
    (np.full((1, 4), 30000, np.float16), np.ones((4, 1), np.float16), None),  # inf at the end
    (np.array([[1, 2.0 ** -9, 2.0 ** -9, 2.0 ** -9]], BF16), np.ones((4, 1), BF16), None),
    # int32 -> float32 converts the exact integer result, not rounded operands
    (np.array([[2 ** 24 + 1]], np.int32), np.array([[3]], np.int32), np.float32),
    (np.array([[2 ** 31 - 1, 1]], np.int32), np.array([[2], [2]], np.int32), None),
    (np.array([[np.inf, 1]], np.float32), np.array([[0], [1]], np.float32), None),
])
def test_dot_accumulation_matches_jax(x, y, preferred):
    t = tlax.dot(tnp.asarray(x), tnp.asarray(y), preferred_element_type=preferred)
    j = jlax.dot(jnp.asarray(x), jnp.asarray(y), preferred_element_type=preferred)
    assert_same(t, j, rtol=0 if j.dtype.kind in "iu" else 1e-6)


def test_dot_general_weak_type_and_precision():
    t = tlax.dot_general(2.0, 3.0, (((), ()), ((), ())))
    j = jlax.dot_general(2.0, 3.0, (((), ()), ((), ())))
    assert_same(t, j)
    x = rand((2, 3))
    for prec in (None, "highest", tlax.Precision.HIGH, ("default", "float32")):
        jprec = prec if not isinstance(prec, tlax.Precision) else jlax.Precision.HIGH
        assert_same(tlax.dot(tnp.asarray(x), tnp.asarray(x.T), precision=prec),
                    jlax.dot(jnp.asarray(x), jnp.asarray(x.T), precision=jprec))
    with pytest.raises(ValueError):
        tlax.dot(tnp.asarray(x), tnp.asarray(x.T), precision="bogus")
    assert canonicalize_precision("highest") == (tlax.Precision.HIGHEST,) * 2


def test_dot_algorithm_presets_as_jax_on_the_cpu():
    """precision= a DotAlgorithmPreset (or its name): the seven JAX runs on the CPU cast the
    operands to the preset's input types and accumulate in its type (F16_F16_F16 of float32
    operands rounds them to float16, F64_F64_F64 computes in float64 with x64 off, bfloat16
    operands of F32_F32_F32 go to float32 and back), with dot_general's result type; the others
    and a DotAlgorithm raise JAX's ValueError. Oracle: JAX 0.10 (XLA's float32 sums may differ
    in their order: 1e-6 there; float16 / bfloat16 results in their own ulps)."""
    import ml_dtypes
    P, JP = tlax.DotAlgorithmPreset, jlax.DotAlgorithmPreset
    x, y = rand((4, 5)), rand((5, 3))
    bf = ml_dtypes.bfloat16
    cases = [(x, y, "F16_F16_F16", None), (x.astype(bf), y.astype(bf), "F32_F32_F32", None),
             (x.astype(np.float16), y.astype(np.float16), "F32_F32_F32", None),
             (x, y, "F64_F64_F64", None), (x, y, "BF16_BF16_F32_X3", None),
             (x.astype(bf), y.astype(bf), "BF16_BF16_F32", None),
             (x.astype(bf), y.astype(bf), "BF16_BF16_F32", np.float32),
             (x.astype(np.float16), y, "F16_F16_F16", None), (x, y, "DEFAULT", None),
             ((x * 3).astype(np.int32), (y * 3).astype(np.int32), "F32_F32_F32", None)]
    for a, b, name, pref in cases:
        want = jlax.dot(a, b, precision=JP[name], preferred_element_type=pref)
        for prec in (P[name], name):
            got = tracejit.jit(lambda a, b, prec=prec: tlax.dot(
                a, b, precision=prec, preferred_element_type=pref))(a, b)
            assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
            rtol = 1e-6 if want.dtype in (np.float32, np.int32) else 1e-2
            np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                       rtol=rtol, atol=rtol, err_msg=name)
    # F16_F16_F16 of float32 operands is float16 arithmetic, F64_F64_F64 float64's
    exact = x.astype(np.float64) @ y
    assert np.abs(np.asarray(tlax.dot(x, y, precision=P.F16_F16_F16)) - exact).max() > 1e-4
    np.testing.assert_array_equal(tlax.dot(x, y, precision=P.F64_F64_F64),
                                  exact.astype(np.float32))
    for bad in ("F16_F16_F32", "TF32_TF32_F32", "BF16_BF16_F32_X9"):
        with pytest.raises(ValueError, match=f"The precision '{bad}' is not supported by "
                                             "dot_general on CPU"):
            tlax.dot(x, y, precision=P[bad])
        with pytest.raises(ValueError):
            jlax.dot(x, y, precision=JP[bad])
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        tlax.dot(x, y, precision=tlax.DotAlgorithm(np.float32, np.float32, np.float32))


@pytest.mark.parametrize("lhs_shape,rhs_shape,dnums", [
    ((2, 3), (2, 3), (((1,), (0,)), ((), ()))),  # contracting sizes differ
    ((2, 3), (3, 2), (((2,), (0,)), ((), ()))),  # out of range
    ((2, 3), (3, 2), (((-1,), (0,)), ((), ()))),  # negative
    ((2, 3), (3, 3), (((1,), (0,)), ((0,), (1,)))),  # batch sizes differ
    ((2, 3), (2, 3), (((1,), (1,)), ((0,), ()))),  # unequal batch counts
    ((2, 3), (2, 3), (((1, 1), (1, 1)), ((), ()))),  # repeated contracting dim
    ((2, 3), (2, 3), (((1,), (1,)), ((1,), (1,)))),  # batch overlaps contracting
])
def test_dot_general_errors_match_jax(lhs_shape, rhs_shape, dnums):
    x, y = rand(lhs_shape), rand(rhs_shape)
    same_error(lambda: tlax.dot_general(tnp.asarray(x), tnp.asarray(y), dnums),
               lambda: jlax.dot_general(jnp.asarray(x), jnp.asarray(y), dnums))


@pytest.mark.parametrize("call", [
    lambda L, ones: L.dot(ones((2, 3)), ones((4, 2))),
    lambda L, ones: L.dot(ones((2, 2, 2)), ones((2,))),
    lambda L, ones: L.dot(ones(()), ones(())),
    lambda L, ones: L.dot(ones((2, 3), np.int32), ones((3, 2), np.int32),
                          preferred_element_type=np.int8),
    lambda L, ones: L.batch_matmul(ones((5, 2, 3)), ones((3, 4))),
    lambda L, ones: L.batch_matmul(ones((3,)), ones((3,))),
    lambda L, ones: L.dot_general(ones((2, 3)), ones((3, 2)), (((1,), (0,)),)),
])
def test_lax_dot_errors_match_jax(call):
    same_error(lambda: call(tlax, lambda s, d=np.float32: tnp.asarray(np.ones(s, d))),
               lambda: call(jlax, lambda s, d=np.float32: jnp.ones(s, d)))


def test_dot_general_without_dimension_numbers_is_dot():
    x, y = rand((2, 3)), rand((3,))
    assert_same(tlax.dot_general(tnp.asarray(x), tnp.asarray(y), None),
                jlax.dot_general(jnp.asarray(x), jnp.asarray(y), None))


def test_batch_matmul_matches_jax():
    x, y = rand((4, 5, 2, 3)), rand((4, 5, 3, 6))
    assert_same(tlax.batch_matmul(tnp.asarray(x), tnp.asarray(y)),
                jlax.batch_matmul(jnp.asarray(x), jnp.asarray(y)))


def test_dot_general_jaxpr():
    x, y = tnp.asarray(rand((2, 3))), tnp.asarray(rand((3,)))
    jaxpr = tracejit.make_jaxpr(lambda a, b: tnp.dot(a, b))(x, y).jaxpr
    (eqn,) = jaxpr.eqns
    assert eqn.primitive.name == "dot_general"
    assert eqn.params["dimension_numbers"] == (((1,), (0,)), ((), ()))
    assert eqn.params["preferred_element_type"] == np.float32


# --- jnp contractions ----------------------------------------------------------------------

SHAPE_PAIRS = [
    ((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((4, 1, 2, 3), (5, 3, 4)),
    ((2, 2, 3), (3, 3, 4)), ((), (3,)), ((), ()), ((0, 3), (3, 0)), ((2, 0), (0, 3)),
    ((4, 3), (4, 3)), ((2, 3, 4), (3, 4, 5)), ((3,), (2, 3, 4)), ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "vdot", "tensordot", "outer",
                                  "kron"])
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_contractions_match_jax(name, shapes):
    x, y = rand(shapes[0]), rand(shapes[1])
    tfun, jfun = getattr(tnp, name), getattr(jnp, name)
    try:
        j = jfun(jnp.asarray(x), jnp.asarray(y))
    except Exception as e:  # noqa: BLE001 - the oracle decides which error class is right
        with pytest.raises(type(e)):
            tfun(tnp.asarray(x), tnp.asarray(y))
        return
    assert_same(tfun(tnp.asarray(x), tnp.asarray(y)), j)


@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "tensordot", "vdot", "outer"])
@pytest.mark.parametrize("x,y", [
    (rand((2, 3), np.int8), rand((3, 2), np.uint8)),
    (rand((2, 3), np.int32), rand((3, 2), np.float32)),
    (rand((2, 3), np.bool_), rand((3, 2), np.bool_)),
    (rand((2, 3), np.float16), rand((3, 2), np.float16)),
    (rand((2, 3), np.complex64), rand((3, 2), np.float32)),
    (rand((2, 3), np.float32), 2.0),
    (2, 3.0),
    (rand((3,), np.int32), 2),
], ids=["i8u8", "i32f32", "bool", "f16", "c64f32", "py-float", "py-scalars", "py-int"])
def test_contraction_dtypes_and_weak_types_match_jax(name, x, y):
    tfun, jfun = getattr(tnp, name), getattr(jnp, name)
    if name == "tensordot":
        tfun, jfun = partial(tnp.tensordot, axes=0), partial(jnp.tensordot, axes=0)
    try:
        j = jfun(to_jax(x), to_jax(y))
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tfun(to_tj(x), to_tj(y))
        return
    assert_same(tfun(to_tj(x), to_tj(y)), j)


@pytest.mark.parametrize("name,shapes,kw", [
    ("dot", ((2, 3), (3, 3)), dict(preferred_element_type=np.float32)),
    ("matmul", ((2, 3), (3, 3)), dict(preferred_element_type=np.int32)),
    ("tensordot", ((2, 3), (3, 3)), dict(axes=1, preferred_element_type=np.float32)),
    ("inner", ((2, 3), (4, 3)), dict(preferred_element_type=np.int16)),
    ("inner", ((), (4, 3)), dict(preferred_element_type=np.int16)),
    ("vdot", ((2, 3), (3, 2)), dict(preferred_element_type=np.float32)),
    ("matmul", ((2, 3), (3, 3)), dict(precision="highest")),
], ids=str)
def test_contraction_keywords_match_jax(name, shapes, kw):
    x, y = rand(shapes[0], np.int8), rand(shapes[1], np.int8)
    assert_same(getattr(tnp, name)(tnp.asarray(x), tnp.asarray(y), **kw),
                getattr(jnp, name)(jnp.asarray(x), jnp.asarray(y), **kw))


@pytest.mark.parametrize("axes", [0, 1, 2, (1, 0), ((1, 2), (1, 0)), ([2], [0]),
                                  3, (2, (0,)), ((2, 1), (0,)), "x", (1, 2, 3)], ids=str)
def test_tensordot_axes_match_jax(axes):
    x, y = rand((2, 3, 4)), rand((4, 3, 5))
    try:
        j = jnp.tensordot(jnp.asarray(x), jnp.asarray(y), axes)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tnp.tensordot(tnp.asarray(x), tnp.asarray(y), axes)
        return
    assert_same(tnp.tensordot(tnp.asarray(x), tnp.asarray(y), axes), j)


@pytest.mark.parametrize("shapes,kw", [
    (((3,), (3,)), {}), (((4, 3), (4, 3)), {}), (((4, 2), (4, 3)), {}), (((3,), (2,)), {}),
    (((2,), (2,)), {}), (((5, 1, 3), (4, 3)), {}), (((3, 4), (3, 4)), dict(axis=0)),
    (((3, 4), (4, 3)), dict(axisa=0, axisc=0)), (((4, 3), (3, 4)), dict(axisb=0, axisc=-1)),
    (((4,), (3,)), {}), (((2, 3), (3, 2)), {}),
], ids=str)
def test_cross_matches_jax(shapes, kw):
    x, y = rand(shapes[0]), rand(shapes[1])
    try:
        j = jnp.cross(jnp.asarray(x), jnp.asarray(y), **kw)
    except Exception:  # noqa: BLE001 - JAX's message and ours both say which shapes are bad
        with pytest.raises((TypeError, ValueError)):
            tnp.cross(tnp.asarray(x), tnp.asarray(y), **kw)
        return
    assert_same(tnp.cross(tnp.asarray(x), tnp.asarray(y), **kw), j)


@pytest.mark.parametrize("name,shapes,kw", [
    ("vecdot", ((5, 1, 3), (4, 3)), {}), ("vecdot", ((3, 4), (3, 1)), dict(axis=0)),
    ("vecdot", ((3,), (4,)), {}), ("matvec", ((5, 2, 3), (4, 1, 3)), {}),
    ("matvec", ((2, 3), (3,)), {}), ("vecmat", ((3,), (5, 3, 4)), {}),
    ("vecmat", ((2, 3), (2, 3, 4)), {}),
], ids=str)
def test_vector_products_match_jax(name, shapes, kw):
    x, y = rand(shapes[0], np.complex64), rand(shapes[1], np.complex64)
    try:
        j = getattr(jnp, name)(jnp.asarray(x), jnp.asarray(y), **kw)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            getattr(tnp, name)(tnp.asarray(x), tnp.asarray(y), **kw)
        return
    assert_same(getattr(tnp, name)(tnp.asarray(x), tnp.asarray(y), **kw), j)


@pytest.mark.parametrize("name,args", [("dot", ([1, 2], [3, 4])), ("matmul", ([1, 2], [3, 4])),
                                       ("einsum", ("i,i", [1, 2], [3, 4]))])
def test_contractions_reject_lists_like_jax(name, args):
    same_error(lambda: getattr(tnp, name)(*args), lambda: getattr(jnp, name)(*args))


# --- einsum --------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", (2, 3), (3, 4)), ("ij,jk", (2, 3), (3, 4)), ("ii", (3, 3)),
    ("ii->i", (3, 3)), ("ij->ji", (2, 3)), ("ji", (2, 3)), ("iJ->Ji", (2, 3)),
    ("...ij,...jk", (5, 2, 3), (3, 4)), ("bij,bjk->bik", (5, 2, 3), (5, 3, 4)), ("i,i", (3,), (3,)),
    ("i,j->ij", (3,), (4,)), ("ij,kj->ik", (2, 1), (4, 3)), ("iij->j", (3, 3, 2)),
    ("ijk,jil->kl", (2, 3, 4), (3, 2, 5)), ("ab,bc,cd->ad", (2, 3), (3, 4), (4, 5)),
    ("ab,bc,cd", (2, 3), (3, 4), (4, 5)), ("a,a,a->a", (3,), (3,), (3,)), ("iii->", (2, 2, 2)),
    ("i,j->j", (0,), (2,)), ("...i,...i->...", (4, 1, 3), (2, 3)), ("ij,ij->", (2, 3), (2, 3)),
    ("ijkl,lkj->i", (2, 3, 4, 5), (5, 4, 3)), ("a...b,b...->...a", (2, 3, 4), (4, 3)),
    ("ij->", (2, 3)), ("i j , j", (2, 3), (3,)), ("ab,cd,bc,da->", (2, 3), (4, 2), (3, 4), (2, 2)),
    # invalid specs
    ("i.->i", (3, 2)), ("i->ii", (3,)), ("ij,jk", (2, 3), (2, 3)), ("ijk", (2, 3)),
    ("ij", (2, 3), (2, 3)), ("ij,jk->l", (2, 3), (3, 3)), ("i->i->i", (3,)), ("i1", (2, 3)),
    ("i-", (2, 3)), ("i>", (2, 3)),
]


@pytest.mark.parametrize("case,optimize", [(c, "auto") for c in EINSUM_CASES] + [
    (c, False) for c in EINSUM_CASES if c[0].count(",") >= 2], ids=str)
def test_einsum_matches_jax(case, optimize):
    spec, *shapes = case
    ops = [rand(s) for s in shapes]
    try:
        j = jnp.einsum(spec, *map(jnp.asarray, ops), optimize=optimize)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tnp.einsum(spec, *map(tnp.asarray, ops), optimize=optimize)
        return
    assert_same(tnp.einsum(spec, *map(tnp.asarray, ops), optimize=optimize), j)


@pytest.mark.parametrize("spec,ops", [
    ("i->", [np.ones(3, bool)]), ("ij,jk", [rand((2, 3), np.bool_), rand((3, 2), np.bool_)]),
    ("ij,jk", [rand((2, 3), np.int8), rand((3, 2), np.uint8)]), ("i->", [rand((5,), np.int8)]),
    ("...,...", [2.0, 3.0]), ("", [2.0]), ("i,i", [rand((3,), np.int32), rand((3,))]),
    ("ii->i", [np.array([[np.inf, np.nan], [1, 2]], np.float32)]),  # off-diagonal not leaked
], ids=str)
def test_einsum_dtypes_match_jax(spec, ops):
    assert_same(tnp.einsum(spec, *map(to_tj, ops)), jnp.einsum(spec, *map(to_jax, ops)))


def test_einsum_interleaved_paths_and_preferred_type():
    a, b, c = rand((2, 3)), rand((3, 4)), rand((4, 5))
    assert_same(tnp.einsum(tnp.asarray(a), [0, 1], tnp.asarray(b), [1, 2], [0, 2]),
                jnp.einsum(jnp.asarray(a), [0, 1], jnp.asarray(b), [1, 2], [0, 2]))
    assert_same(tnp.einsum(tnp.asarray(a), [0, Ellipsis], tnp.asarray(a), [0, Ellipsis]),
                jnp.einsum(jnp.asarray(a), [0, Ellipsis], jnp.asarray(a), [0, Ellipsis]))
    for path in ([(1, 2), (0, 1)], [(0,), (0, 1), (0, 1)], [(2, 0), (0, 1)]):
        assert_same(tnp.einsum("ab,bc,cd", *map(tnp.asarray, (a, b, c)), optimize=path),
                    jnp.einsum("ab,bc,cd", *map(jnp.asarray, (a, b, c)), optimize=path))
    i8 = rand((2, 3), np.int8)
    assert_same(tnp.einsum("ij,kj", tnp.asarray(i8), tnp.asarray(i8),
                           preferred_element_type=np.int32),
                jnp.einsum("ij,kj", jnp.asarray(i8), jnp.asarray(i8),
                           preferred_element_type=np.int32))
    with pytest.raises(NotImplementedError):
        tnp.einsum("i", tnp.asarray(rand((3,))), out=tnp.asarray(rand((3,))))


def test_einsum_contracts_pairwise_with_dot_general():
    ops = [tnp.asarray(rand(s)) for s in ((2, 3), (3, 4), (4, 5))]
    jaxpr = tracejit.make_jaxpr(lambda *xs: tnp.einsum("ab,bc,cd->ad", *xs))(*ops).jaxpr
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("dot_general") == 2
    trace = tracejit.make_jaxpr(lambda x: tnp.einsum("ii", x))(tnp.asarray(rand((3, 3)))).jaxpr
    assert "dot_general" not in [e.primitive.name for e in trace.eqns]


# --- jit vs eager, operators and methods ---------------------------------------------------

@pytest.mark.parametrize("fun,roundings", [
    (lambda a, b: tnp.dot(a, b), 0), (lambda a, b: a @ b, 0),
    (lambda a, b: tnp.einsum("ij,jk->ki", a, b), 0), (lambda a, b: tnp.tensordot(a, b, 1), 0),
    (lambda a, b: tnp.kron(a, b), 0), (lambda a, b: tnp.linalg.norm(a @ b, axis=0), 2),
    (lambda a, b: tnp.outer(a, b), 0),
    (lambda a, b: tlax.dot_general(a, b, (((1,), (0,)), ((), ()))), 0),
    (lambda a, b: a.dot(b), 0),
], ids=["dot", "matmul-op", "einsum", "tensordot", "kron", "norm", "outer", "dot_general",
        "method"])
def test_jit_matches_eager(fun, roundings):
    a, b = tnp.asarray(rand((2, 3))), tnp.asarray(rand((3, 4)))
    eager = fun(a, b)
    jitted = tracejit.jit(fun)(a, b)
    assert (eager.shape, eager.dtype, eager.weak_type) == (jitted.shape, jitted.dtype,
                                                           jitted.weak_type)
    # jit's dot products (length 3) accumulate in their own order: within reassociation_ulps
    # of sum(|a_i b_i|), which `fun` of |a| and |b| computes; the norm of those sums bounds
    # the change of a norm, whose squares and square root round `roundings` more times
    assert_jit_matches_eager(jitted, eager, ulps=reassociation_ulps(3, roundings),
                             scale=fun(tnp.abs(a), tnp.abs(b)))


def test_matmul_operator_and_methods():
    x, y = rand((4, 2, 3)), rand((3, 5))
    assert_same(tnp.asarray(x) @ tnp.asarray(y), jnp.asarray(x) @ jnp.asarray(y))
    assert_same(x @ tnp.asarray(y), x @ jnp.asarray(y))  # __rmatmul__
    v = rand((3,))
    assert_same(tnp.asarray(v).dot(tnp.asarray(v)), jnp.asarray(v).dot(jnp.asarray(v)))
    for name in ("matmul", "dot"):
        assert name not in tnp._MISSING_METHODS


def test_x64_contractions(x64):
    x, y = rand((2, 3), np.float64), rand((3, 2), np.int64)
    for name in ("dot", "matmul"):
        assert_same(getattr(tnp, name)(tnp.asarray(x), tnp.asarray(y)),
                    getattr(jnp, name)(jnp.asarray(x), jnp.asarray(y)))
    big = np.array([2 ** 62], np.int64)
    assert_same(tlax.dot(tnp.asarray(big), tnp.asarray(np.array([4], np.int64))),
                jlax.dot(jnp.asarray(big), jnp.asarray(np.array([4], np.int64))))
    i, f = rand((3,), np.int32), rand((3,), np.float64)
    assert_same(tnp.einsum("i,i", tnp.asarray(i), tnp.asarray(f)),
                jnp.einsum("i,i", jnp.asarray(i), jnp.asarray(f)))
    assert_same(tnp.einsum("i,->i", tnp.asarray(i), 2.0), jnp.einsum("i,->i", jnp.asarray(i), 2.0))


# --- jnp.linalg norms ----------------------------------------------------------------------

NORM_X = np.array([[1., -2, 3], [4, 5, -6]], np.float32)
NORM_3D = (np.arange(24.).reshape(2, 3, 4) - 7).astype(np.float32)
ORDS = [None, "fro", "f", 1, -1, np.inf, -np.inf, 0, 3, 0.5, "inf", "nuc", 2, -2]


@pytest.mark.parametrize("ord", ORDS, ids=str)
@pytest.mark.parametrize("x", [NORM_X, NORM_X[0], np.zeros((0,), np.float32),
                               np.array([3, 4], np.int32), np.array([np.nan, 1], np.float32),
                               np.array([3 + 4j, 1j], np.complex64),
                               np.array([3, 4], np.float16)], ids=str)
def test_norm_matches_jax(x, ord):
    try:
        j = jnp.linalg.norm(jnp.asarray(x), ord=ord)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tnp.linalg.norm(tnp.asarray(x), ord=ord)
        return
    assert_same(tnp.linalg.norm(tnp.asarray(x), ord=ord), j)


@pytest.mark.parametrize("ord", [None, 1, -1, np.inf, -np.inf, "fro"], ids=str)
@pytest.mark.parametrize("axis", [(1, 0), (0, 1), (-1, -2), 1, (0, 1, 2)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_axes_match_jax(ord, axis, keepdims):
    try:
        j = jnp.linalg.norm(jnp.asarray(NORM_3D), ord=ord, axis=axis, keepdims=keepdims)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tnp.linalg.norm(tnp.asarray(NORM_3D), ord=ord, axis=axis, keepdims=keepdims)
        return
    assert_same(tnp.linalg.norm(tnp.asarray(NORM_3D), ord=ord, axis=axis, keepdims=keepdims), j)


@pytest.mark.parametrize("ord", [2, 1, 0, np.inf, -np.inf, 3, None], ids=str)
@pytest.mark.parametrize("x,kw", [(NORM_X, dict(axis=0)), (np.array([3, 4], np.int32), {}),
                                  (NORM_3D, dict(axis=(0, 2), keepdims=True))], ids=str)
def test_vector_norm_matches_jax(x, kw, ord):
    try:
        j = jnp.linalg.vector_norm(jnp.asarray(x), ord=ord, **kw)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tnp.linalg.vector_norm(tnp.asarray(x), ord=ord, **kw)
        return
    assert_same(tnp.linalg.vector_norm(tnp.asarray(x), ord=ord, **kw), j)


@pytest.mark.parametrize("ord", ["fro", 1, -1, np.inf, -np.inf], ids=str)
def test_matrix_norm_matches_jax(ord):
    assert_same(tnp.linalg.matrix_norm(tnp.asarray(NORM_3D), ord=ord),
                jnp.linalg.matrix_norm(jnp.asarray(NORM_3D), ord=ord))
    assert_same(tnp.linalg.matrix_norm(tnp.asarray(NORM_3D), ord=ord, keepdims=True),
                jnp.linalg.matrix_norm(jnp.asarray(NORM_3D), ord=ord, keepdims=True))


def test_norm_of_python_scalar_and_weak_type():
    assert_same(tnp.linalg.norm(3.0), jnp.linalg.norm(3.0))
    assert_same(tnp.linalg.norm(-3), jnp.linalg.norm(-3))


@pytest.mark.parametrize("name,args,kw", [
    ("matmul", ((2, 3), (3,)), {}), ("tensordot", ((2, 3), (3, 2)), dict(axes=1)),
    ("vecdot", ((2, 3), (3, 2)), dict(axis=0)), ("vecdot", ((3, 2), (3, 2)), dict(axis=0)),
    ("outer", ((3,), (2,)), {}), ("outer", ((2, 2), (2,)), {}), ("cross", ((2, 3), (3,)), {}),
    ("cross", ((2,), (2,)), {}),
], ids=str)
def test_linalg_namespace_matches_jax(name, args, kw):
    x, y = rand(args[0]), rand(args[1])
    try:
        j = getattr(jnp.linalg, name)(jnp.asarray(x), jnp.asarray(y), **kw)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            getattr(tnp.linalg, name)(tnp.asarray(x), tnp.asarray(y), **kw)
        return
    assert_same(getattr(tnp.linalg, name)(tnp.asarray(x), tnp.asarray(y), **kw), j)
