"""tracejit.nn.dot_product_attention against JAX 0.10's: values, dtypes and residuals, gradients
(query, key, value, bias, scale), jit and vmap, grouped-query attention, every mask (boolean,
causal, local window, sequence lengths, fully masked rows), unbatched inputs, half and float64
inputs, and JAX's errors for bad shapes, dtypes and implementations."""
import functools

import numpy as np
import pytest
from jax_oracle import same_error

import tracejit
import tracejit.nn as tnn

jax = pytest.importorskip("jax")
jnp = jax.numpy

BF16 = np.dtype(jnp.bfloat16)
# float32 logits and softmax whatever the input type: half results agree to an ulp or two of
# their own type (XLA's rounding of the second einsum), float32 to a few of float32's
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 2e-6, np.dtype(np.float16): 2e-3,
       BF16: 1.6e-2}


def _inputs(rng, q_shape, kv_shape, dtype=np.float32):
    return [rng.standard_normal(s).astype(dtype) for s in (q_shape, kv_shape, kv_shape)]


def _close(ours, theirs, tol):
    ours, theirs = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert isinstance(a, tracejit.Array), type(a)
        assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, getattr(b, "weak_type", False))
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=tol, atol=tol)


def _attend(nn, q, k, v, bias, scale, mask, kw):
    # the sum of squares weighs every output; the residual carries no gradient (JAX stops it,
    # so its part of the loss, clipped where rows are masked to JAX's -0.7 * float32 max,
    # changes nothing)
    out = nn.dot_product_attention(q, k, v, bias, mask, scale=scale, **kw)
    return (out[0] ** 2).sum() + out[1].clip(-10, 10).sum(), out


def test_float32_values_and_gradients_match_jax(rng):
    """Grouped-query attention (4 query heads, 2 key/value heads) with a bias broadcast over
    the batch, a boolean mask with a fully masked row, a local window, query and key/value
    lengths (one of 0: every row fully masked, the values averaged) and the residual: values
    eagerly and under jit, gradients in query, key, value, bias and a traced scale."""
    q, k, v = _inputs(rng, (3, 5, 4, 4), (3, 6, 2, 4))
    bias = rng.standard_normal((1, 4, 5, 6)).astype(np.float32)
    mask = rng.random((3, 1, 5, 6)) < 0.8
    mask[2, 0, 1] = False
    kw = {"local_window_size": (2, 1), "query_seq_lengths": np.array([3, 5, 5], np.int32),
          "key_value_seq_lengths": np.array([4, 0, 6], np.int32), "return_residual": True}
    args = (q, k, v, bias, np.float32(0.4))

    def value_and_grads(nn, grad):
        return lambda *a: (_attend(nn, *a, mask, kw)[1],
                           grad(lambda *a: _attend(nn, *a, mask, kw)[0], range(5))(*a))
    theirs = jax.jit(value_and_grads(jax.nn, jax.grad))(*args)
    _close(tnn.dot_product_attention(q, k, v, bias, mask, scale=0.4, **kw), theirs[0], 2e-6)
    ours = tracejit.jit(value_and_grads(tnn, tracejit.grad))(*args)
    _close(ours[0], theirs[0], 2e-6)
    _close(ours[1], theirs[1], 2e-5)


def test_unbatched_half_and_float16(rng):
    """Unbatched multi-query attention (one key/value head) with a causal mask, a symmetric
    window, a 2-D bias and a given scale; bfloat16 with a float32 bias; float16 (JAX 0.10's
    jit refuses on the CPU the F16_F16_F32 dot algorithm its attention asks for, where JAX
    0.12's accepts it; ours runs under jit too)."""
    q, k, v = _inputs(rng, (4, 3, 8), (6, 1, 8))
    bias = rng.standard_normal((4, 6)).astype(np.float32)
    kw = {"is_causal": True, "local_window_size": 1, "scale": 0.7, "implementation": "xla",
          "return_residual": True}
    theirs = jax.jit(lambda *a: jax.nn.dot_product_attention(*a, **kw))(q, k, v, bias)
    _close(tnn.dot_product_attention(q, k, v, bias, **kw), theirs, 2e-6)
    q, k, v = _inputs(rng, (2, 4, 4, 8), (2, 6, 2, 8), BF16)
    bias = rng.standard_normal((2, 1, 4, 6)).astype(np.float32)
    kw = {"is_causal": True, "return_residual": True}
    theirs = jax.jit(functools.partial(jax.nn.dot_product_attention, **kw))(q, k, v, bias)
    attend = functools.partial(tnn.dot_product_attention, **kw)
    _close(attend(q, k, v, bias), theirs, TOL[BF16])
    _close(tracejit.jit(attend)(q, k, v, bias), theirs, TOL[BF16])
    # float16 against JAX's steps in NumPy (eager JAX 0.10 compiles op by op: seconds): float32
    # logits of the float16 products, a float32 softmax, probabilities rounded to float16
    q, k, v = (x.astype(np.float16) for x in (q, k, v))
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    logits = np.einsum("btkgh,bskh->bkgts", f32[0].reshape(2, 4, 2, 2, 8), f32[1]) / np.sqrt(8)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs = (probs / probs.sum(-1, keepdims=True)).astype(np.float16).astype(np.float32)
    expected = np.einsum("bkgts,bskh->btkgh", probs, f32[2]).reshape(2, 4, 4, 8)
    expected = expected.astype(np.float16)
    _close(tnn.dot_product_attention(q, k, v), expected, TOL[np.dtype(np.float16)])
    _close(tracejit.jit(tnn.dot_product_attention)(q, k, v), expected, TOL[np.dtype(np.float16)])


def test_float64_softmax_stays_float32(x64, rng):
    """float64 inputs give float64 results through JAX's float32 softmax: the result equals
    JAX's to float32 precision, and a float64 softmax's differs by more."""
    q, k, v = _inputs(rng, (1, 6, 2, 4), (1, 6, 2, 4), np.float64)
    ours = tnn.dot_product_attention(q, k, v, is_causal=True, return_residual=True)
    theirs = jax.jit(lambda *a: jax.nn.dot_product_attention(
        *a, is_causal=True, return_residual=True))(q, k, v)
    _close(ours, theirs, 2e-6)
    logits = np.einsum("tnh,snh->nts", q[0], k[0]) / 2 + np.where(np.tri(6), 0, -np.inf)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    exact = np.einsum("nts,snh->tnh", probs / probs.sum(-1, keepdims=True), v[0])
    assert np.abs(np.asarray(ours[0][0]) - exact).max() > 1e-12


def test_vmap_matches_a_loop(rng):
    """vmap over every input's leading axis (the sequence lengths and a mask too), under jit
    and with its gradient, and over the query's alone: the per-example results stacked."""
    q, k, v = _inputs(rng, (3, 2, 4, 2, 4), (3, 2, 5, 1, 4))
    lengths = np.array([[1, 4], [2, 2], [4, 3]], np.int32)
    mask = rng.random((3, 1, 1, 4, 5)) < 0.7

    def attend(q, k, v, n, m):
        return tnn.dot_product_attention(q, k, v, mask=m, is_causal=True,
                                         key_value_seq_lengths=n, local_window_size=(1, 0))

    def loss(*a):
        return (attend(*a) ** 2).sum()
    args = (q, k, v, lengths, mask)
    loop = [(attend(*a), tracejit.grad(loss, (0, 1, 2))(*a)) for a in zip(*args)]
    _close(tracejit.jit(tracejit.vmap(attend))(*args),
           np.stack([out for out, _ in loop]), 1e-6)
    _close(tracejit.vmap(tracejit.grad(loss, (0, 1, 2)))(*args),
           [np.stack([g[i] for _, g in loop]) for i in range(3)], 1e-6)
    _close(tracejit.vmap(tnn.dot_product_attention, (0, None, None))(q, k[0], v[0]),
           np.stack([tnn.dot_product_attention(x, k[0], v[0]) for x in q]), 1e-6)


def _z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


QKV = (_z(2, 3, 2, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 4))
BAD = [  # (arguments, keyword arguments): each raises JAX's exception class here too
    ((_z(1, 2, 3, 2, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 4)), {}),   # query ndim
    ((_z(2, 3, 2, 4), _z(1, 2, 3, 2, 4), _z(1, 2, 3, 2, 4)), {}),   # key ndim
    ((_z(2, 3, 2, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 5)), {}),   # value shape
    ((_z(2, 3, 2, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 4, dtype=np.float16)), {}),   # value dtype
    ((_z(2, 3, 2, 5), _z(2, 3, 2, 4), _z(2, 3, 2, 4)), {}),   # head size
    ((_z(2, 3, 3, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 4)), {}),   # heads not a multiple
    (QKV, {"mask": _z(2, 1, 3, 3)}),   # mask dtype
    (QKV, {"bias": _z(1, 2, 2, 3, 3)}),   # bias ndim
    ((_z(2, 3, 4, 4), _z(2, 3, 2, 4), _z(2, 3, 2, 4)), {"bias": _z(1, 3, 3, 3)}),  # bias heads
    (QKV, {"bias": _z(1, 2, 3, 4)}),   # bias does not broadcast
    (QKV, {"query_seq_lengths": np.ones(2, np.float32)}),
    (QKV, {"key_value_seq_lengths": np.ones(3, np.int32)}),
    (QKV, {"implementation": "flash"}),
    (QKV, {"implementation": "cudnn"}),   # no cuDNN on the CPU
    (QKV, {"implementation": "cudnn", "local_window_size": (2, 1)}),   # checked before that
]


def test_errors_match_jax():
    for args, kw in BAD:
        same_error(functools.partial(tnn.dot_product_attention, *args, **kw),
                   functools.partial(jax.nn.dot_product_attention, *args, **kw))
    with pytest.raises(TypeError, match="mask of shape"):  # (JAX's: and got incompatible...)
        tnn.dot_product_attention(*QKV, mask=_z(3, 2, 3, 3, dtype=bool))


def test_scaled_matmul_and_scaled_dot_general(rng):
    """scaled_matmul against its definition in NumPy (JAX 0.12's CPU semantics: JAX 0.10 has
    no CPU rule), with JAX's shape errors; scaled_dot_general without configs is JAX 0.10's
    dot_general, with configs JAX 0.10's NotImplementedError on the CPU; the configs."""
    a, b = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 4, 8))
    sa, sb = rng.random((2, 3, 2)), rng.random((2, 4, 2))
    expected = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 4, -1))
    args = [x.astype(np.float32) for x in (a, b, sa, sb)]
    for dtype, tol in ((np.float32, 2e-6), (BF16, 2e-2)):
        got = tracejit.jit(tnn.scaled_matmul, static_argnames="preferred_element_type")(
            *args, preferred_element_type=dtype)
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=tol, atol=tol)
    got = tracejit.vmap(tnn.scaled_matmul)(*(x[None] for x in args))
    np.testing.assert_allclose(np.asarray(got[0]), expected, rtol=2e-6, atol=2e-6)
    for bad in ((a[0], b, sa, sb), (a, b[:1], sa, sb), (a, b, sa, sb[..., :1]),
                (a, b, sa[:, :2], sb)):
        same_error(functools.partial(tnn.scaled_matmul, *bad),
                   functools.partial(jax.nn.scaled_matmul, *bad))
    with pytest.raises(TypeError, match="multiple"):  # (JAX's: its reshape's TypeError)
        tnn.scaled_matmul(a, b, sa[..., :1].repeat(3, -1), sb[..., :1].repeat(3, -1))

    dims = (((2,), (2,)), ((0,), (0,)))
    ours = tnn.scaled_dot_general(args[0], args[1], dims, preferred_element_type=BF16)
    theirs = jax.nn.scaled_dot_general(args[0], args[1], dims, preferred_element_type=BF16)
    _close(ours, theirs, 0)
    for mode in ("mxfp8", "nvfp4"):
        ours, theirs = (nn.get_scaled_dot_general_config(mode) for nn in (tnn, jax.nn))
        assert [getattr(ours, f) for f in ("mode", "block_size", "data_type", "scale_type",
                                           "infer_only")] == \
            [getattr(theirs, f) for f in ("mode", "block_size", "data_type", "scale_type",
                                          "infer_only")]
        assert (ours.global_scale is None) == (theirs.global_scale is None)
    # (JAX 0.10 quantizes op by op before its NotImplementedError: seconds; not rerun here)
    with pytest.raises(NotImplementedError, match="configs"):
        tnn.scaled_dot_general(args[0], args[1], dims, configs=[ours] * 3)
    assert float(tnn.get_scaled_dot_general_config("nvfp4").global_scale) == 1.0
    with pytest.raises(ValueError, match="Unsupported mode"):
        tnn.get_scaled_dot_general_config("fp8")
