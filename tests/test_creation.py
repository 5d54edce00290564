"""Array creation (zeros/ones/full/empty(_like), eye, identity, arange, linspace, logspace,
geomspace, meshgrid, tri/tril/triu, indices, copy) against jax.numpy: values, dtypes, weak
types, x64, error classes, and tracejit.jit against eager."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.errors import ConcretizationTypeError
from jax_oracle import assert_matches, check, check_error, jax, jnp

# --- zeros / ones / empty / full -----------------------------------------------------------

SHAPES = [(), 3, (2, 3), (0,), (2, 0, 3), [2, 1], np.int64(2), (np.int32(2), 3)]
DTYPES = [None, "float32", "int32", "bool", "uint8", "float16", "complex64", int, float, bool]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_shapes(name, shape):
    check(lambda np_: getattr(np_, name)(shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_dtypes(name, dtype):
    check(lambda np_: getattr(np_, name)((2, 2), dtype))


@pytest.mark.parametrize("dtype", [None, float, int, "int64", "float64", "complex128"])
def test_filled_x64(x64, dtype):
    check(lambda np_: [np_.zeros(3, dtype), np_.ones((1, 2), dtype), np_.full(2, 1, dtype)])


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # JAX's, casting 2.5+1j
@pytest.mark.parametrize("fill", [1.0, 1, True, 2.5 + 1j, np.float32(1), np.int8(-3),
                                  np.array(4.0), np.float64(0.5)])
@pytest.mark.parametrize("dtype", [None, "int32", "float16", "bool"])
def test_full(fill, dtype):
    if dtype in ("int32", "float16") and isinstance(fill, complex):
        return check_error(lambda np_: np_.full((2, 3), fill, dtype))
    check(lambda np_: np_.full((2, 3), fill, dtype))


def test_full_array_fill_broadcasts():
    check(lambda np_, v: [np_.full((2, 3), v), np_.full((2, 3), v, "float32"),
                          np_.full((4, 2, 3), v)], np.arange(3, dtype=np.int32))
    check(lambda np_: np_.full((2, 3), np_.asarray(2.0)))


def test_full_traced_fill_value():
    check(lambda np_, v: [np_.full((2,), v), np_.full((2, 2), v, "int32")], 3.0)
    check(lambda np_, v: np_.full((2,), v), np.int32(3))
    check(lambda np_, v: np_.full((3, 2), v), np.array([1.0, 2.0], np.float32))


@pytest.mark.parametrize("case", [
    lambda np_: np_.zeros(-1),
    lambda np_: np_.zeros(2.0),
    lambda np_: np_.zeros(i for i in range(2)),
    lambda np_: np_.zeros(3, 4),
    lambda np_: np_.ones((2,), "U"),
    lambda np_: np_.full(3, [1, 2]),
    lambda np_: np_.full((2,), np_.ones(3)),
])
def test_filled_errors(case):
    check_error(case)


def test_traced_shape_is_an_error():
    for f in (tnp.zeros, tnp.ones, tnp.empty, lambda n: tnp.full(n, 1.0)):
        with pytest.raises(TypeError, match="concrete"):
            tracejit.jit(f)(3)
    with pytest.raises(TypeError):  # JAX's class too
        jax.jit(jnp.zeros)(3)


# --- *_like --------------------------------------------------------------------------------

LIKE_INPUTS = [np.arange(3, dtype=np.int32), np.ones((2, 0), np.float32), np.float32(2),
               np.array([True, False]), 3.0, 2, True, np.arange(4.0)]


@pytest.mark.parametrize("x", LIKE_INPUTS, ids=range(len(LIKE_INPUTS)))
@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like(name, x):
    check(lambda np_, a: [getattr(np_, name)(a), getattr(np_, name)(a, dtype="float16"),
                          getattr(np_, name)(a, shape=(2, 1)),
                          getattr(np_, name)(a, "int32", (3,))], x)


@pytest.mark.parametrize("x", LIKE_INPUTS, ids=range(len(LIKE_INPUTS)))
def test_full_like(x):
    check(lambda np_, a: [np_.full_like(a, 1.5), np_.full_like(a, 7, dtype="float32"),
                          np_.full_like(a, True, shape=2)], x)


def test_full_like_weak_and_array_fill():
    check(lambda np_: [np_.full_like(np_.asarray(1.0), 2), np_.zeros_like(np_.asarray(3.0)),
                       np_.full_like(np_.arange(6).reshape(2, 3), np_.asarray([[1], [2]])),
                       np_.full_like(np_.arange(3.0), np_.arange(3))])


def test_like_traced_prototype_and_fill():
    check(lambda np_, x, v: [np_.zeros_like(x), np_.ones_like(x, "int32"),
                             np_.full_like(x, v), np_.full_like(x, v, shape=(2,))],
          np.arange(6.0, dtype=np.float32).reshape(2, 3), 4)


def test_like_accepts_shape_dtype_structs():
    for name, value in (("zeros_like", 0), ("ones_like", 1)):
        out = getattr(tnp, name)(tracejit.ShapeDtypeStruct((2, 3), np.int32))
        ref = getattr(jnp, name)(jax.ShapeDtypeStruct((2, 3), np.int32))
        assert_matches(out, ref)
        assert np.all(np.asarray(out) == value)


@pytest.mark.parametrize("case", [
    lambda np_: np_.zeros_like([1, 2]),
    lambda np_: np_.full_like([1.0], 2),
    lambda np_: np_.ones_like(np_.ones(2), shape=-1),
])
def test_like_errors(case):
    check_error(case)


# --- eye / identity / tri / tril / triu ----------------------------------------------------

@pytest.mark.parametrize("args", [(3,), (3, 4), (3, 4, 1), (3, 4, -2), (4, 2, 3), (0,),
                                  (2, 3, 5), (3, None, -1), (1, 1, 0), (2, 2, 2 ** 40)])
@pytest.mark.parametrize("dtype", [None, "int32", "bool", "complex64"])
def test_eye(args, dtype):
    check(lambda np_: np_.eye(*args, dtype=dtype))


def test_eye_traced_offset():
    check(lambda np_, k: np_.eye(3, 4, k), 1)
    check(lambda np_, k: np_.eye(3, k=k, dtype="int32"), np.int32(-1))


def test_eye_and_tri_x64(x64):
    check(lambda np_: [np_.eye(3, k=1), np_.identity(2, int), np_.tri(3), np_.tri(2, 3, 1, int),
                       np_.tril(np_.ones((3, 3), "int64"), -1), np_.eye(2, dtype=float)])


@pytest.mark.parametrize("case", [
    lambda np_: np_.eye(-1),
    lambda np_: np_.eye(2.0),
    lambda np_: np_.eye(2, k=1.0),
    lambda np_: np_.eye(2, k=np_.ones(2, "int32")),
    lambda np_: np_.identity(2, "U"),
])
def test_eye_errors(case):
    check_error(case)


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("dtype", [None, "bool", "int32", "float16"])
def test_identity(n, dtype):
    check(lambda np_: np_.identity(n, dtype))


@pytest.mark.parametrize("args", [(3,), (3, 4), (3, 4, 1), (3, 4, -2), (2, 3, -5), (0, 2),
                                  (4, None, 2)])
@pytest.mark.parametrize("dtype", [None, "bool", "int32"])
def test_tri(args, dtype):
    check(lambda np_: np_.tri(*args, dtype=dtype))


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3), (0, 3), (1, 1)])
@pytest.mark.parametrize("k", [0, 1, -1, 5])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu(name, shape, k):
    x = (np.arange(np.prod(shape)) + 1).reshape(shape).astype(np.float32)
    check(lambda np_, m: getattr(np_, name)(m, k), x)


def test_tril_triu_keep_dtype_and_weak_type():
    check(lambda np_: [np_.triu(np_.full((3, 3), 2.0)), np_.tril(np_.ones((2, 2), bool)),
                       np_.tril(np_.ones((2, 2), "int32"), 1)])


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_errors(name):
    check_error(lambda np_: getattr(np_, name)(np_.ones(3)))
    check_error(lambda np_: getattr(np_, name)([[1.0]]))


# --- arange --------------------------------------------------------------------------------

ARANGE_CASES = [
    (5,), (5.0,), (0, 1, 0.1), (2, 7), (1.5, 4), (5, 0, -1.5), (0,), (-3,), (3, 1),
    (0, 10, 3), (10, 0, -3), (0.5, 2.5, 0.5), (np.float32(3),), (np.int16(4),),
    (np.uint8(2), 9), (0, 1, 1 / 3), (1e-3, 1e-2, 1e-3), (True, 3),
]


@pytest.mark.parametrize("args", ARANGE_CASES)
def test_arange(args):
    check(lambda np_: np_.arange(*args), jit=False)


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "float16", "int8", float])
def test_arange_dtype(dtype):
    check(lambda np_: [np_.arange(4, dtype=dtype), np_.arange(0, 1, 0.25, dtype=dtype),
                       np_.arange(2, 9, 2, dtype=dtype), np_.arange(1, 5, dtype=dtype)],
          jit=False)


def test_arange_x64(x64):
    check(lambda np_: [np_.arange(5), np_.arange(5.0), np_.arange(0, 1, 0.1),
                       np_.arange(3, dtype=np.int32), np_.arange(2 ** 33, 2 ** 33 + 2)])


def test_arange_concrete_arrays_and_jit_constants():
    check(lambda np_: [np_.arange(np_.asarray(4)), np_.arange(np_.asarray(1.0), 3)])
    # inside jit, Python values are concrete
    check(lambda np_, x: np_.arange(3) * x, np.float32(2))


@pytest.mark.parametrize("case", [
    lambda np_: np_.arange(0, 4, 0),
    lambda np_: np_.arange(np_.ones(2)),
    lambda np_: np_.arange(3j),
    lambda np_: np_.arange(True),
    lambda np_: np_.arange([1, 2]),
    lambda np_: np_.arange(3, dtype="U"),
])
def test_arange_errors(case):
    check_error(case)


@pytest.mark.parametrize("which", ["stop", "start", "step"])
def test_arange_traced_argument_names_it(which):
    def f(v):
        args = {"stop": (v,), "start": (v, 10), "step": (0, 10, v)}[which]
        return tnp.arange(*args)
    with pytest.raises(ConcretizationTypeError) as info:
        tracejit.jit(f)(2)
    assert f"It arose in the jnp.arange argument '{which}'" in str(info.value)
    with pytest.raises(jax.errors.ConcretizationTypeError) as jinfo:
        jax.jit(lambda v: jnp.arange(*{"stop": (v,), "start": (v, 10),
                                        "step": (0, 10, v)}[which]))(2)
    assert f"It arose in the jnp.arange argument '{which}'" in str(jinfo.value)


# --- linspace / logspace / geomspace -------------------------------------------------------

LINSPACE_CASES = [
    (0, 1, 5), (0, 10, 4), (1, 5, 4, False), (0.0, 1.0, 2), (0.0, 1.0, 1), (0, 1, 0),
    (-1.5, 2.5, 7), (3, -3, 6, False), (0, 1, 50), (1e6, 1e6 + 1, 3),
]


@pytest.mark.parametrize("args", LINSPACE_CASES)
@pytest.mark.parametrize("dtype", [None, "int32", "float16", "int8", "complex64"])
def test_linspace(args, dtype):
    # XLA contracts start*(1-step) + stop*step into FMAs: float results agree to an ulp or two
    rtol = {None: 1e-6, "complex64": 1e-6, "float16": 2e-3}.get(dtype, 0.0)
    check(lambda np_: np_.linspace(*args, dtype=dtype), jit=False, rtol=rtol)


@pytest.mark.parametrize("args", [(0, 1, 5), (1, 5, 4, False), (0.0, 1.0, 1),
                                  (0.0, 1.0, 1, False), (0, 1, 0)])
def test_linspace_retstep(args):
    check(lambda np_: np_.linspace(*args, retstep=True), jit=False, rtol=1e-6)


def test_linspace_array_bounds_and_axis():
    start = np.array([0.0, 5.0], np.float32)
    stop = np.array([[1.0, 10.0], [-1.0, 2.0], [3.0, 3.0]], np.float32)
    check(lambda np_, a, b: [np_.linspace(a, b, 4), np_.linspace(a, b, 4, axis=-1),
                             np_.linspace(a, b, 3, axis=1, endpoint=False),
                             np_.linspace(a, 3, 3, retstep=True)], start, stop, rtol=1e-6)
    check(lambda np_: np_.linspace(np_.asarray([1, 2]), 3, 3), rtol=1e-6)


def test_linspace_traced_bounds():
    check(lambda np_, a, b: np_.linspace(a, b, 5), 1.0, np.float32(3), rtol=1e-6)
    check(lambda np_, a: np_.linspace(0, a, 3, dtype="int32"), np.int32(10))


def test_linspace_x64(x64):
    check(lambda np_: [np_.linspace(0, 1, 7), np_.linspace(0, 1, 4, dtype=int),
                       np_.linspace(np_.float32(0), np_.float32(1), 3)], rtol=1e-15)


@pytest.mark.parametrize("case", [
    lambda np_: np_.linspace(0, 1, -1),
    lambda np_: np_.linspace(0, 1, 3.0),
    lambda np_: np_.linspace([0, 1], 2, 3),
    lambda np_: np_.linspace(0, 1, 3, dtype="U"),
])
def test_linspace_errors(case):
    check_error(case)


def test_linspace_traced_num_is_an_error():
    with pytest.raises(TypeError):
        tracejit.jit(lambda n: tnp.linspace(0, 1, n))(3)


@pytest.mark.parametrize("kwargs", [{}, {"endpoint": False}, {"base": 2}, {"num": 7},
                                    {"base": 2, "dtype": "int32"}, {"dtype": "float16"}])
def test_logspace(kwargs):
    kwargs = {"num": 4, **kwargs}
    check(lambda np_: np_.logspace(0, 3, **kwargs), jit=False, rtol=2e-6)


def test_logspace_arrays():
    check(lambda np_, a, b: [np_.logspace(a, 2, 3, axis=1), np_.logspace(a, a, 2, base=b)],
          np.array([0.0, 1.0], np.float32), np.array([2.0, 3.0], np.float32), rtol=2e-6)


@pytest.mark.parametrize("args", [(1, 16, 5), (1, 1000, 4, False), (-1, -16, 5), (2, 2, 3),
                                  (1, 256, 9)])
@pytest.mark.parametrize("dtype", [None, "float16", "complex64"])
def test_geomspace(args, dtype):
    # (integer dtypes truncate values that XLA's and NumPy's log/pow put an ulp apart)
    check(lambda np_: np_.geomspace(*args, dtype=dtype), jit=False,
          rtol=2e-3 if dtype == "float16" else 2e-6)


def test_geomspace_arrays_and_zero():
    check(lambda np_, a, b: [np_.geomspace(a, b, 4), np_.geomspace(a, b, 3, axis=1)],
          np.array([1.0, 1000.0], np.float32), np.array([27.0, 1.0], np.float32), rtol=2e-6)
    check(lambda np_: np_.geomspace(0, 1, 3), jit=False)


# --- meshgrid / indices / copy -------------------------------------------------------------

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    a = np.arange(3, dtype=np.int32)
    b = np.arange(4, dtype=np.float32)
    c = np.array([True, False])
    check(lambda np_, x, y, z: [np_.meshgrid(x, indexing=indexing, sparse=sparse),
                                np_.meshgrid(x, y, indexing=indexing, sparse=sparse),
                                np_.meshgrid(x, y, z, indexing=indexing, sparse=sparse)],
          a, b, c)
    check(lambda np_: np_.meshgrid(indexing=indexing, sparse=sparse))
    check(lambda np_: np_.meshgrid(np_.ones(0), np_.arange(2)))


@pytest.mark.parametrize("case", [
    lambda np_: np_.meshgrid(np_.ones((2, 2))),
    lambda np_: np_.meshgrid([1, 2]),
    lambda np_: np_.meshgrid(np_.ones(2), indexing="xx"),
    lambda np_: np_.meshgrid(np_.ones(2), copy=False),
])
def test_meshgrid_errors(case):
    check_error(case)


@pytest.mark.parametrize("dims", [(2, 3), (4,), (), (2, 0, 1), (1, 2, 3)])
@pytest.mark.parametrize("dtype", [None, "int8", "float32"])
@pytest.mark.parametrize("sparse", [False, True])
def test_indices(dims, dtype, sparse):
    check(lambda np_: np_.indices(dims, dtype, sparse))


@pytest.mark.parametrize("x", [2.0, 3, True, np.arange(3.0), np.ones((2, 0), np.int8)])
def test_copy(x):
    check(lambda np_, a: np_.copy(a), x)


def test_copy_error():
    check_error(lambda np_: np_.copy([1, 2]))
