"""Shape manipulation in tracejit.numpy (reshape, transpose, concatenate/stack, split, tile,
repeat, flip, roll, rot90, pad, ...) and the array methods built on it, against jax.numpy:
values, dtypes, weak types, zero-size shapes, error classes, and tracejit.jit against eager."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.errors import ConcretizationTypeError
from jax_oracle import assert_matches, check, check_error, jnp

def _x(shape, dtype="float32"):
    n = int(np.prod(shape))
    return (np.arange(n) % 11 - 3).reshape(shape).astype(dtype)


X23 = _x((2, 3))
X234 = _x((2, 3, 4))
X34 = _x((3, 4), "int32")
DTYPES = ["float32", "int32", "bool", "uint8", "float16", "complex64"]

# --- reshape / ravel -----------------------------------------------------------------------

RESHAPES = [((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (3, -1)), ((2, 3), 6), ((), (1, 1)),
            ((6,), (1, 2, -1)), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((1,), ()),
            ((2, 3, 4), (4, -1, 2)), ((2, 3), [1, 6])]


@pytest.mark.parametrize("shape,new", RESHAPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_reshape(shape, new, order):
    check(lambda np_, x: np_.reshape(x, new, order=order), _x(shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_dtypes(dtype):
    check(lambda np_, x: [np_.reshape(x, (3, 2)), np_.ravel(x), np_.ravel(x, order="F")],
          _x((2, 3), dtype))


def test_reshape_methods():
    check(lambda np_, x: [x.reshape(3, 2), x.reshape((3, 2)), x.reshape(-1), x.reshape([6]),
                          x.reshape(6), x.reshape((2, 3, 1), order="F"), x.ravel(),
                          x.ravel(order="F"), x.flatten(), x.reshape(np.int64(6))], X23)


def test_reshape_weak_scalar():
    check(lambda np_: [np_.reshape(1.0, (1, 1)), np_.ravel(2), np_.asarray(3.0).reshape(1)])


@pytest.mark.parametrize("case", [
    lambda np_, x: x.reshape(-1, -1),
    lambda np_, x: x.reshape(4),
    lambda np_, x: x.reshape(4, -1),
    lambda np_, x: x.reshape(-2, 3),
    lambda np_, x: x.reshape(2.0, 3),
    lambda np_, x: x.reshape((3, 2), order="A"),
    lambda np_, x: x.reshape((3, 2), order="Z"),
    lambda np_, x: np_.reshape([1, 2, 3, 4], (2, 2)),
    lambda np_, x: np_.ravel(x, order="K"),
    lambda np_, x: np_.ravel([1, 2]),
    lambda np_, x: np_.zeros((0, 3)).reshape(-1, 0),
])
def test_reshape_errors(case):
    check_error(case, X23)


def test_reshape_traced_shape_is_an_error():
    with pytest.raises(TypeError):
        tracejit.jit(lambda x, n: x.reshape(n, -1))(tnp.ones(6), 2)


@pytest.mark.parametrize("new_shape", [(2, 4), 7, (0,), (1, 1), (3, 3)])
def test_resize(new_shape):
    check(lambda np_, x: np_.resize(x, new_shape), _x((5,)))
    check(lambda np_, x: np_.resize(x, new_shape), _x((0,)))


def test_resize_errors():
    check_error(lambda np_: np_.resize(np_.ones(3), (-1, 2)))


def test_shape_ndim_size():
    check(lambda np_, x: [np_.shape(x), np_.ndim(x), np_.size(x), np_.size(x, 1),
                          np_.size(x, (0, 1)), np_.size(x, -1), np_.shape(2.0), np_.ndim(3),
                          np_.size(True), np_.shape(np.ones((2, 0)))], X23, jit=False)
    for np_ in (jnp, tnp):
        with pytest.warns(DeprecationWarning):
            assert np_.shape([1, 2]) == (2,)
        with pytest.warns(DeprecationWarning):
            assert np_.ndim([[1, 2]]) == 2
    check_error(lambda np_, x: np_.size(x, (0, 0)), X23)
    check_error(lambda np_, x: np_.size(x, 2), X23)
    assert tnp.shape("ab") == jnp.shape("ab") == ()
    shapes = tracejit.jit(lambda x: tnp.asarray([tnp.ndim(x), tnp.size(x), tnp.shape(x)[1]]))(
        tnp.asarray(X23))
    np.testing.assert_array_equal(np.asarray(shapes), [2, 6, 3])


# --- transpose and friends -----------------------------------------------------------------

@pytest.mark.parametrize("shape,axes", [((2, 3), None), ((2, 3, 4), (2, 0, 1)),
                                        ((2, 3, 4), (-1, 0, -2)), ((), None), ((0, 2), (1, 0)),
                                        ((3,), None)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_transpose(shape, axes, dtype):
    check(lambda np_, x: np_.transpose(x, axes), _x(shape, dtype))


def test_transpose_methods():
    check(lambda np_, x: [x.T, x.transpose(), x.transpose(1, 0, 2), x.transpose((2, 1, 0)),
                          x.mT, np_.matrix_transpose(x), np_.permute_dims(x, (1, 2, 0))], X234)
    check(lambda np_: [np_.asarray(2.0).T, np_.ones(3).T, np_.asarray(1.0).transpose()])


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.transpose(x, (0, 0)),
    lambda np_, x: np_.transpose(x, (0,)),
    lambda np_, x: np_.transpose(x, (0, 2)),
    lambda np_, x: np_.transpose([[1]]),
    lambda np_, x: np_.permute_dims(x, (-1, 0)),
    lambda np_, x: np_.matrix_transpose(np_.ones(3)),
    lambda np_, x: np_.ones(3).mT,
])
def test_transpose_errors(case):
    check_error(case, X23)


@pytest.mark.parametrize("source,destination", [(0, 2), (-1, 0), ((0, 1), (-1, 0)),
                                                ((0, 2), (2, 0)), ((), ())])
def test_moveaxis(source, destination):
    check(lambda np_, x: np_.moveaxis(x, source, destination), X234)


@pytest.mark.parametrize("axis1,axis2", [(0, 1), (0, -1), (2, 2), (-3, 1)])
def test_swapaxes(axis1, axis2):
    check(lambda np_, x: [np_.swapaxes(x, axis1, axis2), x.swapaxes(axis1, axis2)], X234)


@pytest.mark.parametrize("axis,start", [(2, 0), (0, 3), (1, -1), (-1, 1), (0, 0)])
def test_rollaxis(axis, start):
    check(lambda np_, x: np_.rollaxis(x, axis, start), X234)


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.moveaxis(x, (0, 1), (-1,)),
    lambda np_, x: np_.moveaxis(x, (0, 0), (1, 2)),
    lambda np_, x: np_.moveaxis(x, 3, 0),
    lambda np_, x: np_.swapaxes(x, 0, 3),
    lambda np_, x: np_.rollaxis(x, 0, 5),
])
def test_axes_errors(case):
    check_error(case, X234)


# --- expand_dims / squeeze / atleast -------------------------------------------------------

@pytest.mark.parametrize("axis", [0, -1, (0, -1), (1, 2), (0, 1, 2, 3)])
def test_expand_dims(axis):
    check(lambda np_, x: np_.expand_dims(x, axis), X23)


@pytest.mark.parametrize("shape,axis", [((1, 2, 1), None), ((1, 2, 1), 0), ((1, 2, 1), (0, -1)),
                                        ((2,), None), ((), None), ((1, 0, 1), None),
                                        ((1, 1), ())])
def test_squeeze(shape, axis):
    check(lambda np_, x: [np_.squeeze(x, axis), x.squeeze(axis)], _x(shape))


def test_squeeze_scalar_and_weak():
    check(lambda np_: [np_.squeeze(2.0), np_.asarray(1.0).reshape(1, 1).squeeze()])


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.expand_dims(x, (0, 0)),
    lambda np_, x: np_.expand_dims(x, 3),
    lambda np_, x: np_.expand_dims(x, (0, -4)),
    lambda np_, x: np_.squeeze(x, 0),
    lambda np_, x: np_.squeeze(np_.ones((1, 2)), 2),
    lambda np_, x: np_.squeeze([1]),
    lambda np_, x: np_.expand_dims([1], 0),
])
def test_expand_squeeze_errors(case):
    check_error(case, X23)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(name):
    check(lambda np_, a, b, c, d: [getattr(np_, name)(a), getattr(np_, name)(b),
                                   getattr(np_, name)(c), getattr(np_, name)(d),
                                   getattr(np_, name)(a, b, c, d), getattr(np_, name)(2.0),
                                   getattr(np_, name)()],
          np.float32(1), _x((3,)), X23, X234)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_errors(name):
    check_error(lambda np_: getattr(np_, name)([1, 2]))


# --- broadcasting --------------------------------------------------------------------------

def test_broadcast_arrays():
    check(lambda np_, a, b: np_.broadcast_arrays(a, 2.0, b, np_.ones((2, 1), "int32")),
          _x((3,)), np.array(True))
    check(lambda np_, a: np_.broadcast_arrays(a), X23)
    check(lambda np_: np_.broadcast_arrays(np_.ones((0, 1)), np_.ones(3)))


@pytest.mark.parametrize("shape,target", [((3,), (2, 3)), ((1,), 3), ((), (2, 2)), ((2, 1), (2, 4)),
                                          ((1, 3), (0, 3)), ((3,), (3,))])
def test_broadcast_to(shape, target):
    check(lambda np_, x: np_.broadcast_to(x, target), _x(shape))
    check(lambda np_: np_.broadcast_to(2.0, target))


@pytest.mark.parametrize("case", [
    lambda np_: np_.broadcast_arrays(np_.ones(3), np_.ones(2)),
    lambda np_: np_.broadcast_arrays([1, 2]),
    lambda np_: np_.broadcast_to(np_.ones(3), (2,)),
    lambda np_: np_.broadcast_to(np_.ones((2, 3)), (3,)),
    lambda np_: np_.broadcast_to([1, 2], (2, 2)),
    lambda np_: np_.broadcast_to(np_.ones(2), (-1, 2)),
    lambda np_: np_.broadcast_to(np_.ones(2), 2.0),
])
def test_broadcast_errors(case):
    check_error(case)


# --- joining -------------------------------------------------------------------------------

def test_concatenate():
    a, b = X23, _x((1, 3), "int32")
    check(lambda np_, x, y: [np_.concatenate([x, y]), np_.concatenate((x, x), 1),
                             np_.concatenate([x, y], axis=None), np_.concatenate([x]),
                             np_.concatenate([x, x], -1), np_.concatenate([x, y], dtype="int8"),
                             np_.concatenate([np_.ones((0, 3)), x]),
                             np_.concat([x, y]), np_.concat([x, x], axis=None)], a, b)


@pytest.mark.parametrize("dtypes", [("float32", "float16"), ("int32", "uint8"), ("bool", "int8"),
                                    ("float16", "complex64"), ("uint8", "int8")])
def test_concatenate_promotes(dtypes):
    check(lambda np_, x, y: [np_.concatenate([x, y]), np_.stack([x, y]), np_.hstack([x, y]),
                             np_.append(x, y)], _x((3,), dtypes[0]), _x((3,), dtypes[1]))


def test_concatenate_weak_types():
    check(lambda np_: [np_.concatenate([np_.asarray(1.0).reshape(1), np_.ones(2, "float16")]),
                       np_.concatenate([np_.full(1, 1.0), np_.ones(2, "int32")]),
                       np_.concatenate([np_.full(1, 1.0), np_.full(2, 2)]),
                       np_.append(np_.arange(3), 1.0), np_.hstack([1, 2.0]),
                       np_.stack([1, 2.0])])


def test_concatenate_array_argument():
    check(lambda np_, x: [np_.concatenate(x), np_.concatenate(x, axis=1),
                          np_.concatenate(x, axis=-1), np_.concatenate(x, axis=None),
                          np_.stack(x), np_.stack(x, 2), np_.stack(x, dtype="int32")], X234)


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.concatenate([]),
    lambda np_, x: np_.concatenate([1.0, 2.0]),
    lambda np_, x: np_.concatenate([x, np_.ones((2, 2))]),
    lambda np_, x: np_.concatenate([x, np_.ones(3)]),
    lambda np_, x: np_.concatenate([x, x], axis=2),
    lambda np_, x: np_.concatenate([[1, 2], [3]]),
    lambda np_, x: np_.concatenate(np_.ones(3)),
    lambda np_, x: np_.concatenate(np_.ones((0, 2))),
    lambda np_, x: np_.concat([[1], [2]]),
    lambda np_, x: np_.append([1], [2]),
])
def test_concatenate_errors(case):
    check_error(case, X23)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(axis):
    check(lambda np_, x, y: [np_.stack([x, y], axis), np_.stack((x,), axis),
                             np_.stack([x, y], axis, dtype="float16")], X23, X23 * 2)


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.stack([x, x.T]),
    lambda np_, x: np_.stack([x, x], 3),
    lambda np_, x: np_.stack([]),
    lambda np_, x: np_.stack([[1, 2], [3, 4]]),
    lambda np_, x: np_.stack([x], out=x),
])
def test_stack_errors(case):
    check_error(case, X23)


def test_unstack():
    check(lambda np_, x: [np_.unstack(x), np_.unstack(x, axis=-1), np_.unstack(x, axis=1)], X234)


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack"])
def test_stack_helpers(name):
    f = lambda np_, *xs: getattr(np_, name)(xs)  # noqa: E731
    check(f, _x((3,)), _x((3,)) + 1)
    check(f, X23, X23 * 2)
    check(f, X234, X234)
    check(f, np.float32(1), np.float32(2))
    check(lambda np_, x: getattr(np_, name)(x), X23)   # an array is a stack of its rows
    check(lambda np_, x: getattr(np_, name)(x), X234)


def test_stack_helpers_mixed_and_dtype():
    check(lambda np_, a, b: [np_.vstack([a, b]), np_.column_stack([a, np_.zeros((3, 2))]),
                             np_.vstack([a, b], dtype="float16"),
                             np_.hstack([a, b], dtype="int32"), np_.dstack([a, b], "bool")],
          _x((3,)), _x((3,), "int32"))


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack"])
def test_stack_helpers_errors(name):
    check_error(lambda np_: getattr(np_, name)([[1, 2], [3, 4]]))
    check_error(lambda np_: getattr(np_, name)([np_.ones((2, 2)), np_.ones((3, 3, 3))]))


def test_append():
    check(lambda np_, x: [np_.append(x, x, axis=0), np_.append(x, 1.0), np_.append(x, x, 1),
                          np_.append(2, 3)], X23)


@pytest.mark.parametrize("obj,axis", [(1, None), (-1, 1), (0, 0), (slice(0, 4, 2), 1),
                                     (slice(None, None, -1), None), (np.array([0, 2]), 1),
                                     (np.array([1, 1, -1]), None), (np.array([], np.int32), 0),
                                     (np.array([True, False, True]), 0)])
def test_delete(obj, axis):
    check(lambda np_, x: np_.delete(x, obj, axis), X34, jit=False)
    if not isinstance(obj, np.ndarray):
        check(lambda np_, x: np_.delete(x, obj, axis), X34)


def test_delete_traced_unique_indices():
    check(lambda np_, x, i: [np_.delete(x, i, 1, assume_unique_indices=True),
                             np_.delete(x, i, None, assume_unique_indices=True)],
          X34, np.array([3, -4], np.int32))


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.delete(x, 5, 1),
    lambda np_, x: np_.delete(x, np.array([7]), 1),
    lambda np_, x: np_.delete(x, np.array([True, False]), 0),
    lambda np_, x: np_.delete(x, np.array([0.5]), 0),
    lambda np_, x: np_.delete(x, [1, 2]),
    lambda np_, x: np_.delete([1, 2], 0),
])
def test_delete_errors(case):
    check_error(case, X34)


def test_delete_traced_indices_need_uniqueness():
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(lambda x, i: tnp.delete(x, i))(tnp.asarray(X34), tnp.asarray([1]))


@pytest.mark.parametrize("obj,values,axis", [
    (1, 5, None), (1, 5, 1), (3, np.array([1, 2, 3]), 1), (np.array([0, 2, 2]), 7, 1),
    (np.array([0, 2, 2]), np.array([7, 8, 9]), 1), (slice(0, 2), -1, 0),
    (np.array([1]), np.array([[1], [2], [3]]), 1), (np.array([-1, 9]), 0, None),
    (4, 2.5, 1), (np.array([], np.int32), 1, 0),
])
def test_insert(obj, values, axis):
    check(lambda np_, x: np_.insert(x, obj, values, axis), X34, jit=False)


def test_insert_traced_index_and_values():
    check(lambda np_, x, i, v: [np_.insert(x, i, v, 1), np_.insert(x, i, v)], X34, 2,
          np.float32(9))


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.insert(x, np.array([[1]]), 0),
    lambda np_, x: np_.insert(x, np.array([1.5]), 0),
    lambda np_, x: np_.insert(x, 1, 0, axis=2),
    lambda np_, x: np_.insert(x, [1], 0),
])
def test_insert_errors(case):
    check_error(case, X34)


# --- splitting -----------------------------------------------------------------------------

@pytest.mark.parametrize("arg", [3, 1, [2, 5], (0, 7), [], [3, 3], np.array([2, 5]),
                                 [np.int64(1)]])
def test_split_1d(arg):
    x = _x((7,)) if not isinstance(arg, int) else _x((6,))
    check(lambda np_, a: np_.split(a, arg), x)
    check(lambda np_, a: np_.array_split(a, arg), x)


@pytest.mark.parametrize("sections", [1, 2, 3, 4, 7])
def test_array_split_uneven(sections):
    check(lambda np_, a: np_.array_split(a, sections), _x((7,)))
    check(lambda np_, a: np_.array_split(a, sections, axis=1), _x((2, 7)))


def test_split_axes_and_helpers():
    check(lambda np_, x: [np_.split(x, 2, axis=0), np_.split(x, 3, axis=1),
                          np_.split(x, [1], axis=-1), np_.hsplit(x, 3), np_.vsplit(x, 2),
                          np_.dsplit(np_.ones((2, 3, 4)), 2), np_.hsplit(np_.arange(6), 2),
                          np_.split(np_.ones((0, 2)), 2)], _x((2, 6)))


@pytest.mark.parametrize("case", [
    lambda np_: np_.split(np_.arange(7), 3),
    lambda np_: np_.split(np_.arange(7), [2, 9]),
    lambda np_: np_.split(np_.arange(7), [5, 2]),
    lambda np_: np_.split(np_.arange(7), 0),
    lambda np_: np_.split(np_.arange(7), 2.0),
    lambda np_: np_.split([1, 2], 2),
    lambda np_: np_.dsplit(np_.ones((2, 4)), 2),
    lambda np_: np_.vsplit(np_.ones(()), 1),
])
def test_split_errors(case):
    check_error(case)


def test_split_traced_sections_is_an_error():
    with pytest.raises(TypeError):
        tracejit.jit(lambda x, n: tnp.split(x, n))(tnp.ones(4), 2)


# --- tile / repeat -------------------------------------------------------------------------

@pytest.mark.parametrize("shape,reps", [((3,), (2, 2)), ((3,), 2), ((2, 3), 2), ((2, 3), (2, 1)),
                                        ((2, 3), (2, 1, 3)), ((), 3), ((3,), 0), ((0, 2), 3),
                                        ((2, 3), ()), ((2,), [np.int64(2)])])
@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_tile(shape, reps, dtype):
    check(lambda np_, x: np_.tile(x, reps), _x(shape, dtype))


def test_tile_weak_and_errors():
    check(lambda np_: [np_.tile(2.0, 3), np_.tile(1, (2, 2))])
    check_error(lambda np_: np_.tile([1, 2], 2))


@pytest.mark.parametrize("repeats,axis", [(2, None), (2, 0), (2, 1), (3, -1), (0, 1), (1, None),
                                          (np.int32(2), 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_repeat_scalar(repeats, axis, dtype):
    check(lambda np_, x: [np_.repeat(x, repeats, axis), x.repeat(repeats, axis)],
          _x((2, 3), dtype))


@pytest.mark.parametrize("repeats,axis", [(np.array([1, 2]), 0), (np.array([1, 0, 2]), 1),
                                          (np.array([0, 0]), 0), (np.array([3]), 1),
                                          (np.array([2, 1, 0, 1, 2, 0]), None)])
def test_repeat_array(repeats, axis):
    check(lambda np_, x: [np_.repeat(x, repeats, axis), x.repeat(repeats, axis=axis)], X23,
          jit=False)
    # under jit the concrete repeats live outside the trace (a closure constant)
    expected = jnp.repeat(jnp.asarray(X23), jnp.asarray(repeats), axis)
    got = tracejit.jit(lambda x: tnp.repeat(x, tnp.asarray(repeats), axis))(tnp.asarray(X23))
    assert_matches(got, expected)


def test_repeat_scalars_and_empty():
    check(lambda np_, x: [np_.repeat(2.0, 3), np_.repeat(np_.asarray(2.0), 3), np_.repeat(x, 2),
                          np_.repeat(np_.ones((0, 2)), 2, axis=0),
                          np_.repeat(np_.ones((0, 2)), np_.asarray([1, 2]), axis=1)], X23)


@pytest.mark.parametrize("total", [2, 4, 7])
def test_repeat_total_repeat_length(total):
    check(lambda np_, x, r: np_.repeat(x, r, axis=0, total_repeat_length=total), X23,
          np.array([1, 2], np.int32))
    check(lambda np_, x, r: np_.repeat(x, r, axis=1, total_repeat_length=total), X23,
          np.array([2, 0, 1], np.int32))
    check(lambda np_, x: np_.repeat(x, 2, total_repeat_length=total), X23)


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.repeat(x, -1),
    lambda np_, x: np_.repeat(x, np_.asarray([1, 2, 3]), axis=0),
    lambda np_, x: np_.repeat(x, [1, 2], axis=0),
    lambda np_, x: np_.repeat([1, 2], 2),
    lambda np_, x: np_.repeat(x, 2, axis=2),
])
def test_repeat_errors(case):
    check_error(case, X23)


def test_repeat_traced_repeats_need_total_length():
    with pytest.raises(ConcretizationTypeError, match="total_repeat_length"):
        tracejit.jit(lambda x, r: tnp.repeat(x, r, axis=0))(tnp.asarray(X23),
                                                            tnp.asarray([1, 2]))


# --- flip / rot90 / roll -------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), ()])
@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_flip(axis, dtype):
    check(lambda np_, x: np_.flip(x, axis), _x((2, 3, 4), dtype))


def test_fliplr_flipud():
    check(lambda np_, x: [np_.fliplr(x), np_.flipud(x), np_.flipud(np_.ones(3)),
                          np_.flip(2.0)], X23)


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.flip(x, 2),
    lambda np_, x: np_.fliplr(np_.ones(3)),
    lambda np_, x: np_.flip([1, 2]),
    lambda np_, x: np_.flip(x, (0, 0)),
])
def test_flip_errors(case):
    check_error(case, X23)


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (0, 2), (-1, -2)])
def test_rot90(k, axes):
    check(lambda np_, x: np_.rot90(x, k, axes), X234)


@pytest.mark.parametrize("case", [
    lambda np_: np_.rot90(np_.ones(3)),
    lambda np_: np_.rot90(np_.ones((2, 2)), 1, (0, 0)),
    lambda np_: np_.rot90(np_.ones((2, 2)), 1, (0, 2)),
    lambda np_: np_.rot90([[1]]),
])
def test_rot90_errors(case):
    check_error(case)


@pytest.mark.parametrize("shift,axis", [(1, None), (-7, None), (1, 0), (2, 1), ((1, -1), (0, 1)),
                                        (1, (0, 1)), ((1, 2), 1), (0, 0), (5, -1),
                                        (np.int32(1), 0)])
def test_roll(shift, axis):
    check(lambda np_, x: np_.roll(x, shift, axis), X23)


def test_roll_zero_size_and_scalar():
    check(lambda np_: [np_.roll(np_.ones((0, 2)), 1, 0), np_.roll(np_.ones((0, 2)), 1),
                       np_.roll(np_.asarray(2.0), 3)])


@pytest.mark.parametrize("axis", [0, -1, None, (0, 1)])
@pytest.mark.parametrize("shift", [1, -4, 7])
def test_roll_traced_shift(shift, axis):
    def f(np_, x, s):
        return np_.roll(x, s if isinstance(axis, int) or axis is None else (s, s + 1), axis)
    check(f, X23, shift)
    check(f, X23, np.int32(shift))


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.roll(x, (1, 2, 3), (0, 1)),
    lambda np_, x: np_.roll(x, 1, 2),
    lambda np_, x: np_.roll([1, 2], 1),
    lambda np_, x: np_.roll(x, np_.ones((2, 2), "int32"), 0),
])
def test_roll_errors(case):
    check_error(case, X23)


# --- pad -----------------------------------------------------------------------------------

PAD_WIDTHS = [1, ((1, 0), (2, 3)), ((0, 0), (0, 0)), [[2, 1]], ((4, 5), (6, 7))]


@pytest.mark.parametrize("width", PAD_WIDTHS, ids=range(len(PAD_WIDTHS)))
@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric",
                                  "linear_ramp", "maximum", "minimum", "mean", "median",
                                  "empty"])
def test_pad_modes(mode, width):
    # linear_ramp is a linspace: XLA's FMAs round its last bits differently
    check(lambda np_, x: np_.pad(x, width, mode), _x((2, 3), "float32"),
          rtol=1e-6 if mode == "linear_ramp" else 0.0)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("width", [(0, 5), (7, 2), 1])
def test_pad_reflect_odd_and_short_axes(mode, width):
    check(lambda np_, x: [np_.pad(x, width, mode, reflect_type="odd"),
                          np_.pad(x[:1], width, mode), np_.pad(x[:1], width, mode,
                                                               reflect_type="odd")],
          _x((3,), "float32"))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float16", "complex64"])
@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric", "empty"])
def test_pad_dtypes(dtype, mode):
    check(lambda np_, x: np_.pad(x, ((1, 2), (2, 0)), mode), _x((2, 3), dtype))


@pytest.mark.parametrize("mode", ["maximum", "minimum", "mean", "linear_ramp"])
def test_pad_integer_stats(mode):
    check(lambda np_, x: np_.pad(x, ((1, 2), (2, 0)), mode), _x((3, 4), "int32"))


def test_pad_keywords():
    check(lambda np_, x: [
        np_.pad(x, 1, constant_values=7), np_.pad(x, 1, constant_values=(1, 2)),
        np_.pad(x, 1, constant_values=((1, 2), (3, 4))), np_.pad(x, 1, constant_values=[5]),
        np_.pad(x, 2, "linear_ramp", end_values=(5, -1)),
        np_.pad(x, 2, "linear_ramp", end_values=((1, 2), (3, 4))),
        np_.pad(x, 2, "mean", stat_length=1), np_.pad(x, 2, "maximum", stat_length=(1, 2)),
        np_.pad(x, (1, 2), "minimum", stat_length=((1, 1), (2, 3))),
    ], X23, rtol=1e-6)


def test_pad_weak_scalar_and_traced_values():
    check(lambda np_: [np_.pad(np_.full(2, 1.0), 1), np_.pad(np_.full(2, 1.0), 1, "edge"),
                       np_.pad(np_.full(2, 1.0), 1, constant_values=np_.float32(3)),
                       np_.pad(2.0, 3)])
    check(lambda np_, x, v: np_.pad(x, 1, constant_values=v), X23, np.float32(9))


def test_pad_zero_size():
    check(lambda np_: [np_.pad(np_.ones((0, 2)), ((0, 0), (1, 1)), "edge"),
                       np_.pad(np_.ones((0, 2)), 1), np_.pad(np_.ones((0, 2)), 1, "mean")])


@pytest.mark.parametrize("case", [
    lambda np_, x: np_.pad(x, -1),
    lambda np_, x: np_.pad(x, 1.5),
    lambda np_, x: np_.pad(x, ((1, 2, 3),)),
    lambda np_, x: np_.pad(x, ((1,), (2, 3))),
    lambda np_, x: np_.pad(x, 1, "bogus"),
    lambda np_, x: np_.pad(x, 1, "edge", constant_values=1),
    lambda np_, x: np_.pad(x, 1, constant_values=np_.ones(3)),
    lambda np_, x: np_.pad(np_.ones((0, 2)), 1, "wrap"),
    lambda np_, x: np_.pad(np_.ones((0, 2)), 1, "reflect"),
    lambda np_, x: np_.pad(np_.ones((0, 2)), 1, "edge"),
    lambda np_, x: np_.pad(x, 1, "mean", stat_length=0),
    lambda np_, x: np_.pad([1, 2], 1),
])
def test_pad_errors(case):
    check_error(case, X23)


def test_pad_traced_width_is_an_error():
    with pytest.raises(TypeError):
        tracejit.jit(lambda x, w: tnp.pad(x, w))(tnp.ones(3), 1)


# --- composition under jit -----------------------------------------------------------------

def test_pipeline_under_jit_matches_eager():
    def f(np_, x, y):
        z = np_.concatenate([x.reshape(3, 2).T, np_.tile(y, (2, 1))], axis=1)
        z = np_.pad(np_.roll(z, 1, 1), 1, "reflect")
        parts = np_.split(np_.moveaxis(np_.stack([z, z * 2]), 0, -1), 2, axis=1)
        return [np_.squeeze(np_.expand_dims(p, 0), 0).ravel() for p in parts]
    check(f, _x((6,)), _x((3,)))


def test_x64(x64):
    check(lambda np_, x, r: [np_.concatenate([x, np_.ones(2, "int32")]), np_.stack([x, 1.5 * x]),
                             np_.repeat(x, r, total_repeat_length=5), np_.repeat(x, 2),
                             np_.roll(x, r[0]), np_.tile(x, 2), np_.pad(x, 1, "mean"),
                             np_.split(x, [1]), x.reshape(-1, 1).T],
          np.arange(3, dtype=np.int64), np.array([1, 2, 0], np.int64))
    check(lambda np_, x: np_.repeat(x, np.array([1, 0, 2])), np.arange(3.0), jit=False)
