"""lax shape functions (broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev,
concatenate, pad, iota, slice, full, split, stack, tile) against jax.lax: values, dtypes, weak
types and error classes; each case also runs under tracejit.jit."""
from functools import partial

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax
import jax_oracle

# each case is f(lax, jnp, *args)
check = partial(jax_oracle.check, with_lax=True)
check_error = partial(jax_oracle.check_error, with_lax=True)


def _x(shape, dtype="float32"):
    n = int(np.prod(shape))
    return (np.arange(n) % 7 - 2).reshape(shape).astype(dtype)


DTYPES = ["float32", "int32", "bool", "uint8", "float16", "complex64"]

# --- broadcast_in_dim / broadcast ----------------------------------------------------------

BROADCAST_CASES = [
    ((), (3, 2), ()),
    ((3,), (2, 3), (1,)),
    ((3,), (3, 2), (0,)),
    ((1, 3), (4, 2, 3), (1, 2)),
    ((2, 3), (3, 2), (1, 0)),          # non-increasing dimensions transpose
    ((2, 3), (3, 4, 2), (2, 0)),
    ((0, 3), (2, 0, 3), (1, 2)),
    ((1,), (0,), (0,)),
]


@pytest.mark.parametrize("shape,out_shape,dims", BROADCAST_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_in_dim(shape, out_shape, dims, dtype):
    check(lambda lax, np_, x: lax.broadcast_in_dim(x, out_shape, dims), _x(shape, dtype))


def test_broadcast_in_dim_python_scalar_is_weak():
    check(lambda lax, np_: lax.broadcast_in_dim(2.0, (3,), ()), jit=False)
    check(lambda lax, np_: lax.broadcast(3, (2, 2)), jit=False)


@pytest.mark.parametrize("shape,sizes", [((), (3,)), ((2, 3), (4,)), ((2,), (0, 1)), ((2,), ())])
def test_broadcast(shape, sizes):
    check(lambda lax, np_, x: lax.broadcast(x, sizes), _x(shape))


@pytest.mark.parametrize("shape,out_shape,dims", [
    ((2, 3), (4, 2, 3), (0, 2)),        # size mismatch
    ((2, 3), (4, 2, 3), (1,)),          # too few dims
    ((2, 3), (2, 3), (1, 2)),           # dims out of range
    ((2, 2), (2, 2), (0, 0)),           # duplicates
    ((2, 3), (-1, 2, 3), (1, 2)),       # negative size
])
def test_broadcast_in_dim_errors(shape, out_shape, dims):
    check_error(lambda lax, np_, x: lax.broadcast_in_dim(x, out_shape, dims), _x(shape))


# --- reshape / transpose / squeeze / expand_dims / rev -------------------------------------

@pytest.mark.parametrize("shape,new,dims", [
    ((2, 3), (3, 2), None), ((2, 3), (6,), None), ((2, 3), (3, 2), (1, 0)),
    ((2, 3, 4), (4, 6), (2, 0, 1)), ((), (1, 1), None), ((0, 3), (3, 0), None),
    ((2, 3), (2, 3), (0, 1)), ((4,), (2, 1, 2), None),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_reshape(shape, new, dims, dtype):
    check(lambda lax, np_, x: lax.reshape(x, new, dims), _x(shape, dtype))


@pytest.mark.parametrize("shape,new,dims", [
    ((2, 3), (-1,), None), ((2, 3), (6,), (0, 0)), ((2, 3), (2.0, 3), None),
])
def test_reshape_errors(shape, new, dims):
    check_error(lambda lax, np_, x: lax.reshape(x, new, dims), _x(shape))


@pytest.mark.parametrize("shape,perm", [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((), ()),
                                        ((0, 2), (1, 0)), ((3,), (0,))])
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(shape, perm, dtype):
    check(lambda lax, np_, x: lax.transpose(x, perm), _x(shape, dtype))


@pytest.mark.parametrize("perm", [(-1, 0), (0, 0), (0,), (0, 1, 2)])
def test_transpose_errors(perm):
    check_error(lambda lax, np_, x: lax.transpose(x, perm), _x((2, 3)))


@pytest.mark.parametrize("shape,dims", [((1, 2, 1), (0,)), ((1, 2, 1), (0, 2)),
                                        ((1, 2, 1), (-1,)), ((1,), (0,)), ((2,), ()),
                                        ((0, 1), (1,))])
def test_squeeze(shape, dims):
    check(lambda lax, np_, x: lax.squeeze(x, dims), _x(shape))


@pytest.mark.parametrize("dims", [(0,), (5,), (0, 0)])
def test_squeeze_errors(dims):
    check_error(lambda lax, np_, x: lax.squeeze(x, dims), _x((2, 3))[None] if dims == (0, 0)
                else _x((2, 3)))


@pytest.mark.parametrize("shape,dims", [((2, 3), (0,)), ((2, 3), (0, 3)), ((2, 3), (-1,)),
                                        ((), (0, 1)), ((0,), (1,))])
def test_expand_dims(shape, dims):
    check(lambda lax, np_, x: lax.expand_dims(x, dims), _x(shape))


@pytest.mark.parametrize("dims", [(4,), (0, 0)])
def test_expand_dims_errors(dims):
    check_error(lambda lax, np_, x: lax.expand_dims(x, dims), _x((2, 3)))


@pytest.mark.parametrize("shape,dims", [((2, 3), (0,)), ((2, 3), (1, 0)), ((2, 3), ()),
                                        ((4,), (0,)), ((0, 2), (0, 1))])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_rev(shape, dims, dtype):
    check(lambda lax, np_, x: lax.rev(x, dims), _x(shape, dtype))


@pytest.mark.parametrize("dims", [(-1,), (2,), (0, 0)])
def test_rev_errors(dims):
    check_error(lambda lax, np_, x: lax.rev(x, dims), _x((2, 3)))


def test_shape_ops_accept_python_scalars():
    check(lambda lax, np_: [lax.squeeze(2.0, ()), lax.expand_dims(2.0, (0,)), lax.rev(2.0, ()),
                            lax.transpose(2.0, ()), lax.reshape(2.0, (1,)),
                            lax.slice(2.0, (), ())], jit=False)


# --- concatenate ---------------------------------------------------------------------------

@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (2, 3)], 1), ([(2, 3), (1, 3), (0, 3)], 0), ([(4,)], 0), ([(2, 0), (2, 5)], 1),
    ([(1, 2, 3), (1, 2, 1)], 2),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate(shapes, dim, dtype):
    check(lambda lax, np_, *xs: lax.concatenate(xs, dim), *[_x(s, dtype) for s in shapes])


def test_concatenate_weak_types():
    # all weak -> weak; one strong operand makes the result strong
    check(lambda lax, np_: [
        lax.concatenate([np_.asarray(2.0).reshape(1), np_.asarray(3.0).reshape(1)], 0),
        lax.concatenate([np_.asarray(2.0).reshape(1), np_.ones(1)], 0)], jit=False)


@pytest.mark.parametrize("case", [
    lambda lax, np_, x: lax.concatenate([x, x.astype(np_.int32)], 1),
    lambda lax, np_, x: lax.concatenate([x, x], -1),
    lambda lax, np_, x: lax.concatenate([x, x], 2),
    lambda lax, np_, x: lax.concatenate([], 0),
    lambda lax, np_, x: lax.concatenate([1.0, 2.0], 0),
    lambda lax, np_, x: lax.concatenate([2.0], 0),
    lambda lax, np_, x: lax.concatenate([x, 1.0], 0),
    lambda lax, np_, x: lax.concatenate([x, x.ravel()], 0),
    lambda lax, np_, x: lax.concatenate([x, x.T], 0),
])
def test_concatenate_errors(case):
    check_error(case, _x((2, 3)))


# --- pad -----------------------------------------------------------------------------------

PAD_CASES = [
    ((2, 3), [(1, 2, 0), (0, 1, 0)]),
    ((2, 3), [(1, 2, 1), (-1, 0, 0)]),
    ((2, 3), [(-1, -1, 2), (0, -2, 1)]),
    ((4,), [(-2, 3, 0)]),
    ((4,), [(-3, -1, 0)]),
    ((0, 2), [(1, 1, 3), (0, 0, 0)]),
    ((1,), [(0, 0, 5)]),
    ((), []),
    ((3, 1), [(0, 0, 1), (2, 2, 4)]),
]


@pytest.mark.parametrize("shape,config", PAD_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_pad(shape, config, dtype):
    value = np.asarray(np.array(7).astype(dtype))
    check(lambda lax, np_, x, v: lax.pad(x, v, config), _x(shape, dtype), value)


def test_pad_weak_type_needs_both_weak():
    check(lambda lax, np_: [
        lax.pad(np_.asarray(1.0).reshape(1), 0.0, [(1, 1, 0)]),
        lax.pad(np_.asarray(1.0).reshape(1), np_.float32(0), [(1, 1, 0)]),
        lax.pad(np_.ones(1), np_.asarray(0.0), [(1, 1, 0)]),
        lax.pad(np_.ones(2, np_.int32), 0, [(1, 1, 0)])], jit=False)


@pytest.mark.parametrize("value,config", [
    (0.0, [(-3, 0, 0), (0, 0, 0)]),       # negative result size
    (0.0, [(0, 0, -1), (0, 0, 0)]),       # negative interior
    (0.0, [(0, 0, 0)]),                   # wrong rank
    (0, [(0, 0, 0), (0, 0, 0)]),          # Python int keeps int32: dtype mismatch
    (np.zeros(2, np.float32), [(0, 0, 0), (0, 0, 0)]),   # non-scalar value
])
def test_pad_errors(value, config):
    check_error(lambda lax, np_, x, v: lax.pad(x, v, config), _x((2, 3)), value)


def test_pad_python_float_on_float16_is_a_dtype_error():
    check_error(lambda lax, np_, x: lax.pad(x, 0.0, [(1, 1, 0)]), _x((2,), "float16"))


# --- iota ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "int16", "complex64",
                                   "float16"])
def test_iota(dtype):
    check(lambda lax, np_: [lax.iota(dtype, 5), lax.iota(dtype, 0),
                            lax.broadcasted_iota(dtype, (2, 3), 1),
                            lax.broadcasted_iota(dtype, (2, 3, 4), 0)])


def test_iota_python_types():
    check(lambda lax, np_: [lax.iota(int, 3), lax.iota(float, 3)])


def test_iota_x64(x64):
    check(lambda lax, np_: [lax.iota(int, 3), lax.iota(np.int64, 3), lax.iota(float, 2)])


@pytest.mark.parametrize("case", [
    lambda lax: lax.iota(bool, 4),
    lambda lax: lax.iota(int, -1),
    lambda lax: lax.broadcasted_iota(np.int32, (2, 3), 2),
    lambda lax: lax.broadcasted_iota(np.int32, (2, 3), -1),
])
def test_iota_errors(case):
    check_error(lambda lax, np_: case(lax))


def test_iota_traced_size_is_an_error():
    with pytest.raises(TypeError):
        tracejit.jit(lambda n: tlax.iota(np.int32, n))(3)


# --- slice ---------------------------------------------------------------------------------

@pytest.mark.parametrize("start,limit,strides", [
    ((0, 1), (2, 3), None), ((0, 0), (2, 3), (2, 2)), ((1, 0), (1, 3), None),
    ((0, 0), (2, 3), (1, 1)), ((1, 2), (2, 3), (3, 5)), ((0, 0), (0, 0), None),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_slice(start, limit, strides, dtype):
    check(lambda lax, np_, x: lax.slice(x, start, limit, strides), _x((2, 3), dtype))


@pytest.mark.parametrize("start,limit,strides", [
    ((-1, 1), (2, 3), None), ((1, 2), (0, 3), None),
    ((0, 0), (3, 3), None), ((0, 0), (2, 3), (1, -1)),
])
def test_slice_errors(start, limit, strides):
    check_error(lambda lax, np_, x: lax.slice(x, start, limit, strides), _x((2, 3)))


@pytest.mark.parametrize("args", [(1, None, 1, 1), (-2, -1, 1, -1), (0, 3, 2, 1),
                                  (None, None, 1, 0), (2, 2, 1, 1), (0, None, 2, 0)])
def test_slice_in_dim(args):
    check(lambda lax, np_, x: lax.slice_in_dim(x, *args), _x((2, 3)))


@pytest.mark.parametrize("args", [(0, 5, 1, 1), (2, 1, 1, 1)])
def test_slice_in_dim_errors(args):
    check_error(lambda lax, np_, x: lax.slice_in_dim(x, *args), _x((2, 3)))


@pytest.mark.parametrize("index,axis,keepdims", [(-1, 1, False), (0, 0, True), (1, 0, False),
                                                 (2, -1, True)])
def test_index_in_dim(index, axis, keepdims):
    check(lambda lax, np_, x: lax.index_in_dim(x, index, axis, keepdims), _x((2, 3)))


@pytest.mark.parametrize("index", [3, -4])
def test_index_in_dim_errors(index):
    check_error(lambda lax, np_, x: lax.index_in_dim(x, index, 1, False), _x((2, 3)))


# --- full / split / stack / unstack / tile -------------------------------------------------

def test_full():
    check(lambda lax, np_: [
        lax.full((2,), 1.0), lax.full((2,), 1.5, np.int32), lax.full(3, 1),
        lax.full((2,), True), lax.full((2,), np.float32(2)), lax.full((2, 0), 1.0),
        lax.full((2,), np_.asarray(2.0)), lax.full((), 3.0, np.float16)])


def test_full_traced_fill_value():
    check(lambda lax, np_, v: [lax.full((2, 2), v), lax.full((3,), v, np.int32)], 2.5)
    check(lambda lax, np_, v: lax.full((2,), v), np.float32(-1))


def test_full_like():
    check(lambda lax, np_, x: [lax.full_like(x, 1), lax.full_like(x, 1, shape=(1,)),
                               lax.full_like(2.0, 1), lax.full_like(x, 3, np.int32)],
          _x((2, 3)))
    check(lambda lax, np_: [lax.full_like(np.ones(2), 3), lax.full_like(np_.asarray(1.0), 7)])


@pytest.mark.parametrize("case", [
    lambda lax, np_: lax.full((2,), np_.ones(2)),
    lambda lax, np_: lax.full((-1,), 2.0),
    lambda lax, np_: lax.full_like(np_.ones(2), np_.ones(2)),
])
def test_full_errors(case):
    check_error(case)


@pytest.mark.parametrize("shape,sizes,axis", [((2, 3), (1, 2), 1), ((2, 3), (1, 2), -1),
                                              ((3,), (0, 3), 0), ((4, 1), (2, 1, 1), 0)])
def test_split(shape, sizes, axis):
    check(lambda lax, np_, x: lax.split(x, sizes, axis), _x(shape))


@pytest.mark.parametrize("shape,sizes,axis", [((2, 3), (1, 1), 1), ((2, 3), (4, -1), 1),
                                              ((3,), (3,), 1)])
def test_split_errors(shape, sizes, axis):
    check_error(lambda lax, np_, x: lax.split(x, sizes, axis), _x(shape))


def test_stack_and_unstack():
    check(lambda lax, np_, x, y: [lax.stack([x, y], 0), lax.stack([x, y], -1),
                                  lax.stack([x], 1), lax.unstack(x, 0), lax.unstack(x, -1)],
          _x((2, 3)), _x((2, 3)) * 2)
    check(lambda lax, np_: [lax.stack([1.0, 2.0], 0), lax.stack([np_.ones(()), 2.0], 0)],
          jit=False)


@pytest.mark.parametrize("case", [
    lambda lax, np_, x: lax.stack([x, x.T], 0),
    lambda lax, np_, x: lax.stack([x, x.ravel()], 0),
    lambda lax, np_, x: lax.stack([x, x.astype(np_.int32)], 0),
    lambda lax, np_, x: lax.stack([x, x], 3),
    lambda lax, np_, x: lax.unstack(x.sum(), 0),
])
def test_stack_errors(case):
    check_error(case, _x((2, 3)))


@pytest.mark.parametrize("shape,reps", [((2, 3), (2, 1)), ((2, 3), (1, 3)), ((3,), (0,)),
                                        ((), ()), ((2, 0), (2, 2))])
@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_tile(shape, reps, dtype):
    check(lambda lax, np_, x: lax.tile(x, reps), _x(shape, dtype))


def test_tile_errors():
    check_error(lambda lax, np_, x: lax.tile(x, (2,)), _x((2, 3)))


# --- staging -------------------------------------------------------------------------------

def test_full_stages_a_literal_broadcast():
    jaxpr = tracejit.make_jaxpr(lambda x: tlax.full_like(x, 2))(tnp.ones((2, 3)))
    eqns = jaxpr.jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["broadcast_in_dim"]
    assert eqns[0].params["shape"] == (2, 3)
