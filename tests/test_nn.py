"""tracejit.nn against jax.nn: values (special values and large magnitudes included), result
dtypes and weak types, errors, gradients, and jit against eager."""
import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import tracejit
import tracejit.nn as tnn
import tracejit.numpy as tnp

# float16 results agree to about an ulp of float16 (XLA may keep intermediates in float32)
TOL = {np.dtype(np.float16): (4e-3, 1e-3), np.dtype(np.float32): (2e-6, 1e-6),
       np.dtype(np.float64): (1e-13, 1e-15)}


def _tol(dtype):
    dtype = np.dtype(dtype)
    return TOL.get(dtype, (0, 0))


def _check(ours, theirs, rtol=None, atol=None):
    """Same pytree of arrays: dtype, weak type, shape, and values (NaN where JAX has NaN)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _check(a, b, rtol, atol)
        return
    assert isinstance(ours, tracejit.Array), type(ours)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.weak_type == theirs.weak_type, (ours.weak_type, theirs.weak_type)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    d_rtol, d_atol = _tol(theirs.dtype)
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64),
                                   rtol=d_rtol if rtol is None else rtol,
                                   atol=d_atol if atol is None else atol, equal_nan=True)


def _same_error(ours_fn, theirs_fn):
    """Both raise; a builtin JAX error class must be matched (or subclassed), a JAX-specific one
    by name."""
    with pytest.raises(Exception) as theirs:
        theirs_fn()
    with pytest.raises(Exception) as ours:
        ours_fn()
    jax_cls = theirs.type
    if jax_cls.__module__ == "builtins":
        assert isinstance(ours.value, jax_cls), (ours.value, theirs.value)
    else:
        assert ours.type.__name__ == jax_cls.__name__, (ours.value, theirs.value)
    return ours.value


_ORACLES: dict = {}


def _oracle(name, **kw):
    """jax.nn.<name> under jax.jit, so each input signature costs JAX one compilation instead of
    one per primitive (the unjitted ones, like gelu and logsumexp). Array-valued keyword
    arguments are traced; the rest are baked in."""
    static = {k: v for k, v in kw.items() if not isinstance(v, (np.ndarray, np.generic))}
    dynamic = {k: v for k, v in kw.items() if k not in static}
    key = (name, tuple(sorted(static.items(), key=lambda kv: kv[0])))
    if key not in _ORACLES:
        fn = getattr(jax.nn, name)
        _ORACLES[key] = jax.jit(lambda *args, **arrays: fn(*args, **static, **arrays))
    return lambda *args: _ORACLES[key](*args, **dynamic)


def _compare(name, *args, rtol=None, atol=None, **kw):
    theirs = _oracle(name, **kw)(*args)
    ours = getattr(tnn, name)(*args, **kw)
    _check(ours, theirs, rtol, atol)
    return ours


def _check_aval(ours, expected):
    """dtype, weak type and shape against jax.eval_shape's answer (no JAX compilation)."""
    if isinstance(expected, tuple):
        for a, b in zip(ours, expected, strict=True):
            _check_aval(a, b)
        return
    assert (ours.dtype, ours.weak_type, ours.shape) == \
        (expected.dtype, expected.weak_type, expected.shape)


def _compare_aval_or_error(name, x, **kw):
    """JAX's result type for x (via eval_shape), or JAX's error class. Returns ours or None."""
    fn = getattr(jax.nn, name)
    try:
        expected = jax.eval_shape(lambda a: fn(a, **kw), x)
    except Exception:
        _same_error(lambda: getattr(tnn, name)(x, **kw), lambda: fn(x, **kw))
        return None
    ours = getattr(tnn, name)(x, **kw)
    _check_aval(ours, expected)
    return ours


def _jit_matches_eager(name, *args, **kw):
    eager = getattr(tnn, name)(*args, **kw)
    jitted = tracejit.jit(lambda *a: getattr(tnn, name)(*a, **kw))(*args)
    _check(jitted, eager, *_tol(eager.dtype))


# --- elementwise activations -----------------------------------------------------------------

ELEMENTWISE = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {}), ("celu", {"alpha": 2.0}),
    ("gelu", {}), ("gelu", {"approximate": False}), ("sigmoid", {}), ("log_sigmoid", {}),
    ("silu", {}), ("swish", {}), ("softplus", {}), ("soft_sign", {}), ("hard_tanh", {}),
    ("hard_sigmoid", {}), ("hard_silu", {}), ("hard_swish", {}), ("mish", {}),
    ("squareplus", {}), ("squareplus", {"b": 1.0}), ("sparse_plus", {}), ("sparse_sigmoid", {}),
    ("identity", {}), ("log1mexp", {}), ("tanh", {}),
]
ELEMENTWISE_IDS = [n + "".join(f"-{k}={v}" for k, v in kw.items()) for n, kw in ELEMENTWISE]


def _special_values(dtype) -> np.ndarray:
    big = float(np.finfo(dtype).max)
    vals = [-np.inf, -big, -big / 7, -1e4, -40., -10., -3., -1., -0.5, -1e-3, -0.0, 0.0, 1e-3,
            0.5, 0.69, 0.7, 1., 2., 3., 6., 10., 40., 1e4, big / 7, big, np.inf, np.nan]
    return np.array(vals, dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_special_values(name, kw, dtype):
    x = _special_values(dtype)
    with np.errstate(all="ignore"):
        _compare(name, x, **kw)


@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_shapes_and_jit(name, kw, rng):
    """Scalars, zero-size and n-d arrays: JAX's avals, and values against JAX on the same
    numbers laid out flat (elementwise functions do not care about the shape)."""
    xs = [(rng.standard_normal(shape) * 4).astype(np.float32)
          for shape in [(), (0,), (2, 0, 3), (3, 4)]]
    flat = _oracle(name, **kw)(np.concatenate([x.ravel() for x in xs]))
    offset = 0
    for x in xs:
        ours = getattr(tnn, name)(x, **kw)
        _check_aval(ours, jax.eval_shape(lambda a: getattr(jax.nn, name)(a, **kw), x))
        _check(ours.reshape(-1), flat[offset:offset + x.size])
        offset += x.size
        _jit_matches_eager(name, tnp.asarray(x), **kw)


NON_FLOAT_INPUTS = {
    "py_float": 2.5, "py_int": -3, "py_bool": True,
    "int32": np.array([-5, -1, 0, 1, 2, 7], np.int32),
    "uint8": np.array([0, 1, 3, 200], np.uint8),
    "bool": np.array([True, False]),
    "int8": np.array([-128, -1, 0, 127], np.int8),
}


@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_promotion_and_weak_types(name, kw):
    """Python scalars, ints and bools: JAX's result dtype and weak type, or JAX's error; the
    values for the integer arrays (uint8 wraps Python ints as JAX does)."""
    for kind, x in NON_FLOAT_INPUTS.items():
        with np.errstate(all="ignore"):
            ours = _compare_aval_or_error(name, x, **kw)
            if ours is not None and (kind == "int32" or ours.dtype.kind in "iu"):
                _check(ours, _oracle(name, **kw)(x))


@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_x64(name, kw, x64, rng):
    x = np.concatenate([_special_values(np.float64), rng.standard_normal(16) * 5])
    with np.errstate(all="ignore"):
        _compare(name, x, **kw)
    _jit_matches_eager(name, tnp.asarray(x), **kw)
    for x in (np.array([-4, 0, 5], np.int64), 3, 2.5, np.array([-1.5, 0.5], np.float32),
              np.array([1, 2], np.uint32)):
        _compare_aval_or_error(name, x, **kw)


@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_rejects_lists(name, kw):
    _same_error(lambda: getattr(tnn, name)([1.0, 2.0], **kw),
                lambda: getattr(jax.nn, name)([1.0, 2.0], **kw))


@pytest.mark.parametrize("name,param", [("leaky_relu", "negative_slope"), ("elu", "alpha"),
                                        ("celu", "alpha"), ("squareplus", "b")])
def test_array_valued_parameters(name, param):
    x = np.array([-2.0, -0.5, 1.0], np.float32)
    for value in (np.float32(0.3), np.array([0.1, 2.0, 3.0], np.float32), 2, np.float16(0.5)):
        _compare(name, x, **{param: value})
        _compare_aval_or_error(name, x.astype(np.float16), **{param: value})
    # float16 intermediates: float16's tolerance even where the result is promoted to float32
    _compare(name, x.astype(np.float16), **{param: np.float32(0.3)}, rtol=4e-3, atol=1e-3)


def test_relu6_and_hard_functions_at_kinks():
    x = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 6.5], np.float32)
    for name in ("relu6", "hard_tanh", "hard_sigmoid", "hard_silu", "sparse_plus",
                 "sparse_sigmoid"):
        _compare(name, x, rtol=0, atol=0)


def test_relu_keeps_signed_zero_like_jax():
    x = np.array([-0.0, 0.0, -1.0], np.float32)
    for name in ("relu", "relu6", "leaky_relu"):
        ours, theirs = getattr(tnn, name)(x), _oracle(name)(x)
        np.testing.assert_array_equal(np.signbit(np.asarray(ours)), np.signbit(np.asarray(theirs)))


@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_elementwise_gradients(name, kw):
    """grad against JAX's, at the kinks too (relu'(0) = 0, relu6'(6) = 0 by custom rules)."""
    x = np.array([-40., -3., -1., -0.5, -1e-3, 0., 1e-3, 0.5, 0.69, 1., 3., 6., 7., 40.],
                 np.float32)

    def ours(a):
        return getattr(tnn, name)(a, **kw).sum()

    def theirs(a):
        return getattr(jax.nn, name)(a, **kw).sum()
    with np.errstate(all="ignore"):
        _check(tracejit.grad(ours)(x), jax.jit(jax.grad(theirs))(x), rtol=1e-5, atol=1e-6)


# --- glu -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((4,), -1), ((3, 6), -1), ((4, 3), 0), ((2, 4, 3), 1),
                                        ((0, 4), -1), ((2, 0), -1)])
def test_glu(shape, axis, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    _compare("glu", x, axis=axis)
    _compare("glu", x.astype(np.float16), axis=axis)
    _jit_matches_eager("glu", tnp.asarray(x), axis=axis)


@pytest.mark.parametrize("x,axis", [(np.ones((3,), np.float32), -1),
                                    (np.ones((2, 3), np.float32), 1),
                                    (np.ones((2, 4), np.float32), 2),
                                    (np.arange(4), -1), (2.0, -1)])
def test_glu_errors(x, axis):
    _same_error(lambda: tnn.glu(x, axis), lambda: jax.nn.glu(x, axis))


# --- logsumexp, softmax, log_softmax, logmeanexp ---------------------------------------------

def _matrices(dtype, rng):
    big = float(np.finfo(dtype).max)
    normal = (rng.standard_normal((3, 5)) * 5).astype(dtype)
    large = (rng.choice([-1.0, 1.0], (3, 5)) * big * rng.uniform(0.1, 1.0, (3, 5))).astype(dtype)
    neg_inf = normal.copy()
    neg_inf[0, :] = -np.inf  # a whole row (and, axis 0, some columns) of -inf
    neg_inf[1, 2] = -np.inf
    pos_inf = normal.copy()
    pos_inf[1, 3] = np.inf
    pos_inf[2, :] = np.inf
    nan = normal.copy()
    nan[0, 1] = np.nan
    mixed = normal.copy()
    mixed[0, 0], mixed[0, 1] = np.inf, -np.inf
    return {"normal": normal, "large": large, "neg_inf": neg_inf, "pos_inf": pos_inf,
            "nan": nan, "mixed": mixed}


REDUCERS = ["softmax", "log_softmax", "logsumexp", "logmeanexp"]


def _stacked(dtype, rng, kinds=None):
    """All the special matrices stacked along a new leading axis (reduce over axes 1 and 2)."""
    mats = _matrices(dtype, rng)
    return np.stack([mats[k] for k in (kinds or mats)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("name", REDUCERS)
def test_reductions_special_values(name, dtype, rng):
    x = _stacked(dtype, rng)
    axes = [-1, 1, (1, 2), None] + ([] if name in ("softmax", "log_softmax") else [()])
    for axis in axes:
        with np.errstate(all="ignore"):
            _compare(name, x, axis=axis)


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("shape,axis", [((), None), ((5,), 0), ((2, 3, 4), 1), ((2, 3, 4), (0, 2)),
                                        ((0, 3), 0), ((0, 3), 1), ((3, 0), -1),
                                        ((3, 0), None), ((2, 0, 3), (1, 2))])
def test_reductions_shapes_axes_and_jit(name, shape, axis, rng):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if shape == () and name in ("softmax", "log_softmax"):
        _same_error(lambda: getattr(tnn, name)(x), lambda: getattr(jax.nn, name)(x))
        return
    _compare(name, x, axis=axis)
    _jit_matches_eager(name, tnp.asarray(x), axis=axis)


@pytest.mark.parametrize("name", ["logsumexp", "logmeanexp"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_keepdims(name, axis, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    _compare(name, x, axis=axis, keepdims=True)
    _jit_matches_eager(name, tnp.asarray(x), axis=axis, keepdims=True)


def _masks():
    return {"some": np.array([[True, False, True, True, False]] * 2 + [[False] * 5]),
            "row": np.array([True, True, False, True, False]),
            "all": np.ones((3, 5), bool)}


@pytest.mark.parametrize("name", REDUCERS)
def test_where_masks(name, rng):
    x = _stacked(np.float32, rng, ["normal", "neg_inf", "nan"])
    for where in _masks().values():
        for axis in (-1, (1, 2), None):
            with np.errstate(all="ignore"):
                _compare(name, x, axis=axis, where=where)
        ours = tracejit.jit(lambda a, w: getattr(tnn, name)(a, axis=-1, where=w))(x, where)
        _check(ours, getattr(tnn, name)(x, axis=-1, where=where))


@pytest.mark.parametrize("b", [
    np.float32(2.0), np.array([1.0, 0.0, 2.0, 0.5, 3.0], np.float32),
    np.array([[1.0, -1.0, 1.0, 1.0, 1.0]] * 3, np.float32),  # sign flips: NaN or sign -1
    np.array([[1.0, -1.0, 0.0, 0.0, 0.0], [-1.0, -1.0, 0.0, 0.0, 0.0], [0.0] * 5], np.float32),
    3, np.array([1, 0, 2, 1, 1], np.int32)])
@pytest.mark.parametrize("return_sign", [False, True])
def test_logsumexp_b_and_return_sign(b, return_sign, rng):
    x = _matrices(np.float32, rng)["normal"]
    with np.errstate(all="ignore"):
        for axis in (-1, None):
            _compare("logsumexp", x, axis=axis, b=b, return_sign=return_sign)
        _compare("logsumexp", x, axis=0, b=b, return_sign=return_sign, keepdims=True)
    eager = tnn.logsumexp(x, axis=-1, b=b, return_sign=return_sign)
    jitted = tracejit.jit(lambda a, bb: tnn.logsumexp(a, axis=-1, b=bb,
                                                      return_sign=return_sign))(x, b)
    _check(jitted, eager)


def test_logsumexp_b_with_where_and_neg_inf(rng):
    x = _matrices(np.float32, rng)["neg_inf"]
    b = np.array([0.5, 0.0, 2.0, 1.0, 1.0], np.float32)
    where = _masks()["some"]
    with np.errstate(all="ignore"):
        _compare("logsumexp", x, axis=-1, b=b, where=where)
        _compare("logsumexp", x, axis=None, b=b, where=where, return_sign=True)


@pytest.mark.parametrize("name", REDUCERS)
def test_reductions_promotion(name):
    ints = np.array([[1, 2, 3], [-4, 0, 4]], np.int32)
    for x in (ints, np.array([True, False, True]), np.array([1, 2, 250], np.uint8), 3, 2.0,
              np.float16(1.5), np.array([-2.0, 1.0], np.float16)):
        _compare_aval_or_error(name, x)
    _compare(name, ints)


@pytest.mark.parametrize("name", REDUCERS)
def test_reductions_float64(name, x64, rng):
    x = _stacked(np.float64, rng)
    with np.errstate(all="ignore"):
        _compare(name, x, axis=-1)
        _compare(name, x, axis=None)
    _compare(name, np.array([[1, 2, 3]], np.int64))
    _compare_aval_or_error(name, np.array([1.0, 2.0], np.float32))


@pytest.mark.parametrize("name", REDUCERS)
def test_reduction_gradients(name, rng):
    """Shifting by the max carries no gradient (stop_gradient), as in JAX: -inf entries and
    masked-out entries get zero (or JAX's NaN) gradients."""
    mats = _matrices(np.float32, rng)
    for x in (mats["normal"], mats["neg_inf"]):
        for axis, where in ((-1, None), (None, None), (-1, _masks()["some"])):
            out_shape = getattr(tnn, name)(x, axis=axis, where=where).shape
            weights = rng.standard_normal(out_shape).astype(np.float32)

            def ours(a):
                return (getattr(tnn, name)(a, axis=axis, where=where) * weights).sum()

            def theirs(a):
                return (getattr(jax.nn, name)(a, axis=axis, where=where) * weights).sum()
            with np.errstate(all="ignore"):
                _check(tracejit.grad(ours)(x), jax.jit(jax.grad(theirs))(x), rtol=1e-5,
                       atol=1e-6)


def test_logsumexp_gradient_with_b(rng):
    x = _matrices(np.float32, rng)["normal"]
    b = np.array([1.0, 0.0, 2.0, 0.5, 3.0], np.float32)

    def ours(a, bb):
        return tnn.logsumexp(a, axis=-1, b=bb).sum()

    def theirs(a, bb):
        return jax.nn.logsumexp(a, axis=-1, b=bb).sum()
    _check(tracejit.grad(ours, argnums=(0, 1))(x, b),
           jax.jit(jax.grad(theirs, argnums=(0, 1)))(x, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda nn: nn.softmax(np.ones((2, 3), np.float32), axis=2),
    lambda nn: nn.log_softmax(np.ones((2, 3), np.float32), axis=-3),
    lambda nn: nn.logsumexp(np.ones((2, 3), np.float32), axis=(0, 0)),
    lambda nn: nn.logsumexp(np.ones((2, 3), np.float32), axis=(1, -1)),
    lambda nn: nn.logsumexp(np.ones((2, 3), np.float32), axis=5),
    lambda nn: nn.logsumexp([1.0, 2.0]),
    lambda nn: nn.log_softmax([1.0, 2.0]),
    lambda nn: nn.softmax([1.0, 2.0]),
    lambda nn: nn.softmax(np.array([True, False])),
    lambda nn: nn.log_softmax(np.array([True, False])),
    lambda nn: nn.logsumexp(np.ones((2, 3), np.float32), b=np.ones((4,), np.float32)),
    lambda nn: nn.softmax(np.ones((2, 3), np.float32), where=np.ones((4,), bool)),
    lambda nn: nn.logmeanexp(np.ones((2, 3), np.float32), axis=[0]),
])
def test_reduction_errors(call):
    _same_error(lambda: call(tnn), lambda: call(jax.nn))


# --- standardize -------------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["fast", "stable"])
@pytest.mark.parametrize("axis", [-1, 0, (0, 1), None])
def test_standardize(axis, algorithm, rng):
    x = (rng.standard_normal((4, 6)) * 3 + 2).astype(np.float32)
    _compare("standardize", x, axis=axis, algorithm=algorithm, rtol=2e-5, atol=2e-5)
    _compare("standardize", x.astype(np.float16), axis=axis, algorithm=algorithm,
             rtol=1e-2, atol=1e-2)
    _jit_matches_eager("standardize", tnp.asarray(x), axis=axis, algorithm=algorithm)


def test_standardize_options(rng):
    x = (rng.standard_normal((3, 5)) * 2).astype(np.float32)
    mean = np.float32(0.5)
    variance = rng.uniform(0.5, 2.0, (3, 1)).astype(np.float32)
    _compare("standardize", x, mean=mean)
    _compare("standardize", x, variance=variance)
    _compare("standardize", x, mean=mean, variance=variance, epsilon=0.1)
    _compare("standardize", x, epsilon=np.float32(1e-2), rtol=2e-5, atol=2e-5)
    _compare("standardize", x, where=_masks()["some"], rtol=2e-5, atol=2e-5)
    _compare("standardize", np.full((2, 3), 7.0, np.float32))  # zero variance: x - mean = 0
    _compare("standardize", np.array([[1, 2, 3]], np.int32), rtol=2e-5, atol=2e-5)
    _compare("standardize", np.zeros((0, 3), np.float32))
    _compare("standardize", np.array([[1.0, np.inf, 2.0], [np.nan, 0.0, 1.0]], np.float32))


def test_standardize_float64(x64, rng):
    x = rng.standard_normal((3, 5)) * 1e3 + 1e4
    _compare("standardize", x, rtol=1e-9, atol=1e-9)
    _compare("standardize", x, algorithm="stable", rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("call", [
    lambda nn: nn.standardize(np.ones((2, 3), np.float32), algorithm="exact"),
    lambda nn: nn.standardize([1.0, 2.0]),
    lambda nn: nn.standardize(np.ones((2, 3), np.float32), mean=[1.0]),
    lambda nn: nn.standardize(np.ones((2, 3), np.float32), axis=2),
    lambda nn: nn.standardize(np.ones((2, 3), np.float32), axis=[0]),
])
def test_standardize_errors(call):
    _same_error(lambda: call(tnn), lambda: call(jax.nn))


# --- one_hot -----------------------------------------------------------------------------------

ONE_HOT_INPUTS = [
    np.array([0, 1, 2, 5, -1, 3], np.int32), np.array([[0, 2], [1, 4]], np.int8),
    np.array([0, 3, 255], np.uint8), np.array(2, np.int32), np.zeros((0,), np.int32),
    np.zeros((2, 0), np.int32), 1, [0, 2, 1]]


@pytest.mark.parametrize("axis", [-1, 0, -2])
@pytest.mark.parametrize("x", ONE_HOT_INPUTS, ids=range(len(ONE_HOT_INPUTS)))
def test_one_hot(x, axis):
    ndim = np.ndim(x)
    if not -(ndim + 1) <= axis <= ndim:
        _same_error(lambda: tnn.one_hot(x, 4, axis=axis),
                    lambda: jax.nn.one_hot(x, 4, axis=axis))
        return
    expected = jax.nn.one_hot(x, 4, axis=axis)
    ours = tnn.one_hot(x, 4, axis=axis)
    _check(ours, expected)
    for dtype in (np.float16, np.int32, np.bool_, tnp.float16):  # the same 0/1 pattern
        typed = tnn.one_hot(x, 4, dtype=dtype, axis=axis)
        _check_aval(typed, jax.eval_shape(lambda a: jax.nn.one_hot(a, 4, dtype=np.dtype(dtype),
                                                                   axis=axis), x))
        np.testing.assert_array_equal(np.asarray(typed), np.asarray(expected).astype(dtype))
    jitted = tracejit.jit(lambda a: tnn.one_hot(a, 4, axis=axis))(tnp.asarray(x))
    _check(jitted, ours)


def test_one_hot_x64_and_zero_classes(x64):
    x = np.array([0, 1, 7], np.int64)
    _check(tnn.one_hot(x, 8), jax.nn.one_hot(x, 8))
    _check(tnn.one_hot(x, 0), jax.nn.one_hot(x, 0))
    _check(tnn.one_hot(x, np.int64(3), dtype=np.float64), jax.nn.one_hot(x, np.int64(3),
                                                                         dtype=np.float64))


def test_one_hot_float_input_warns_like_jax():
    x = np.array([0.0, 1.0, 2.5], np.float32)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = jax.nn.one_hot(x, 3)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = tnn.one_hot(x, 3)
    _check(got, expected)
    assert [w.category for w in ours] == [w.category for w in theirs]


@pytest.mark.parametrize("call", [
    lambda nn, np_: nn.one_hot(np.array([1, 2]), 3.0),
    lambda nn, np_: nn.one_hot(np.array([1, 2]), "3"),
    lambda nn, np_: nn.one_hot(np.array([1, 2]), 3, axis=3),
    lambda nn, np_: nn.one_hot(np.array([1, 2]), 3, dtype="not a dtype"),
])
def test_one_hot_errors(call):
    _same_error(lambda: call(tnn, tnp), lambda: call(jax.nn, jjnp))


def test_one_hot_traced_num_classes_is_a_concretization_error():
    x = np.array([0, 1], np.int32)
    err = _same_error(lambda: tracejit.jit(lambda n: tnn.one_hot(x, n))(3),
                      lambda: jax.jit(lambda n: jax.nn.one_hot(x, n))(3))
    assert "num_classes" in str(err)


# --- jit structure ---------------------------------------------------------------------------

def test_jitted_activations_stage_as_calls_like_jax():
    """JAX jits most activations (a `jit` equation named after the function) but inlines
    sigmoid and leaves gelu/softmax/logsumexp unjitted."""
    x = np.ones((4,), np.float32)
    for name in ("relu", "sigmoid", "softplus", "gelu", "softmax", "logsumexp", "glu",
                 "log_softmax", "standardize"):
        ours = str(tracejit.make_jaxpr(getattr(tnn, name))(x))
        theirs = str(jax.make_jaxpr(getattr(jax.nn, name))(x))
        assert ("jit[" in ours and f"name={name}" in ours) == \
            ("jit[" in theirs and f"name={name}" in theirs), name
