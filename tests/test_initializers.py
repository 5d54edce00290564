"""tracejit.nn.initializers against jax.nn.initializers: the same key, shape and dtype give the
same bits (orthogonal ones to a few ulp: JAX's QR is LAPACK's), eagerly and under jit; the same
errors for bad shapes and modes."""
import numpy as np
import pytest

import tracejit
import tracejit.nn.initializers as T

jax = pytest.importorskip("jax")
J = jax.nn.initializers


def test_names_are_jaxs():
    theirs = {n for n in dir(J) if not n.startswith("_")}
    assert theirs <= {n for n in dir(T) if not n.startswith("_")}
    assert set(T.__all__) == theirs
    assert tracejit.nn.initializers is T


def _pair(name, args, kwargs):
    """(ours, JAX's) initializer: zeros/ones are initializers themselves, the rest builders."""
    if name in ("zeros", "ones"):
        return getattr(T, name), getattr(J, name)
    return getattr(T, name)(*args, **kwargs), getattr(J, name)(*args, **kwargs)


_CASES = [  # (name, builder args, builder kwargs, shape, dtype)
    ("zeros", (), {}, (3, 4), None), ("ones", (), {}, (2, 0, 3), "bfloat16"),
    ("zeros", (), {}, (), "int32"),
    ("constant", (-7,), {}, (2, 3), None), ("constant", (2.5,), {}, (4,), "float16"),
    ("constant", (1 + 2j,), {"dtype": "complex64"}, (2, 2), None),
    ("uniform", (), {}, (4, 5), None), ("uniform", (10.0,), {}, (7,), "float16"),
    ("uniform", (3.0,), {"dtype": "bfloat16"}, (3, 3), None),
    ("normal", (), {}, (4, 5), None), ("normal", (5.0,), {}, (2, 3, 2), "float16"),
    ("normal", (0.5,), {}, (3, 2), "complex64"),
    ("truncated_normal", (), {}, (4, 5), None),
    ("truncated_normal", (5.0,), {"lower": -1.0, "upper": 3.0}, (6, 2), None),
    ("variance_scaling", (1.0, "fan_geo_avg", "normal"), {}, (4, 6), None),
    ("variance_scaling", (2.0, "fan_out", "uniform"), {}, (4, 5), "complex64"),
    ("variance_scaling", (2.0, "fan_avg", "truncated_normal"), {}, (4, 5), "complex64"),
    ("variance_scaling", (0.5, "fan_in", "uniform"), {"in_axis": (0, 1), "out_axis": 3,
                                                      "batch_axis": 2}, (2, 3, 4, 5), None),
    ("variance_scaling", (1.0, "fan_in", "normal"), {"in_axis": 0}, (7,), None),
    ("orthogonal", (), {}, (4, 5), None), ("orthogonal", (), {}, (5, 3), None),
    ("orthogonal", (2.0,), {"column_axis": 0}, (3, 4, 5), None),
    ("orthogonal", (), {}, (0, 3), None),
    ("delta_orthogonal", (), {}, (3, 4, 5), None),
    ("delta_orthogonal", (), {}, (3, 3, 4, 5), None),
    ("delta_orthogonal", (1.5,), {}, (2, 3, 2, 2, 4), None),
]
for _name in ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal",
              "lecun_uniform", "lecun_normal", "he_uniform", "he_normal", "kaiming_uniform",
              "kaiming_normal"]:
    _CASES += [(_name, (), {}, (4, 5), None), (_name, (), {}, (3, 3, 4, 8), "float16"),
               (_name, (), {"dtype": "bfloat16"}, (6, 2), None)]


def _check(got, expected, name):
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    eps = np.finfo(got.dtype).eps if got.dtype.kind in "fc" else 0
    if "orthogonal" in name:  # our Householder QR and LAPACK's round differently
        scale = np.abs(expected).max(initial=0)
        np.testing.assert_allclose(got, expected, rtol=0, atol=16 * eps * scale)
    elif got.dtype.kind == "c":  # complex exp/log: ours and XLA's may round 1 ulp apart
        np.testing.assert_allclose(got, expected, rtol=2 * eps, atol=eps)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name,args,kwargs,shape,dtype", _CASES,
                         ids=[f"{c[0]}-{c[3]}-{c[4] or c[2].get('dtype')}" for c in _CASES])
def test_same_values_as_jax(name, args, kwargs, shape, dtype, x64):
    ours, theirs = _pair(name, args, kwargs)
    assert isinstance(ours, T.Initializer)
    extra = () if dtype is None else (dtype,)  # None would override the builder's dtype
    with tracejit.enable_x64(x64), jax.enable_x64(x64):
        for seed in (0, 42):
            _check(ours(tracejit.random.key(seed), shape, *extra),
                   theirs(jax.random.key(seed), shape, *extra), name)
        # raw uint32 keys work as well
        _check(ours(tracejit.random.PRNGKey(3), shape, *extra),
               theirs(jax.random.PRNGKey(3), shape, *extra), name)


@pytest.mark.parametrize("name", ["glorot_uniform", "he_normal", "normal", "orthogonal",
                                  "delta_orthogonal"])
def test_under_jit(name):
    shape = (3, 4, 5) if name == "delta_orthogonal" else (4, 5)
    ours, theirs = _pair(name, (), {})
    got = tracejit.jit(lambda k: ours(k, shape))(tracejit.random.key(1))
    _check(got, theirs(jax.random.key(1), shape), name)
    # and vmapped over keys, as models initialise stacked layers
    keys = tracejit.random.split(tracejit.random.key(2), 3)
    got = tracejit.vmap(lambda k: ours(k, shape))(keys)
    for i, k in enumerate(jax.random.split(jax.random.key(2), 3)):
        _check(got[i], theirs(k, shape), name)


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the oracle compares any exception
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name,args,shape", [
    ("glorot_uniform", (), (5,)),                     # no default fans for a 1-D kernel
    ("variance_scaling", (1.0, "fan_sum", "normal"), (3, 4)),
    ("variance_scaling", (1.0, "fan_in", "cauchy"), (3, 4)),
    ("orthogonal", (), (4,)),
    ("delta_orthogonal", (), (3, 4)),
    ("delta_orthogonal", (), (3, 5, 4)),                # fan_in > fan_out
])
def test_errors_as_jax(name, args, shape):
    ours, theirs = _pair(name, args, {})
    expected = _error(lambda: theirs(jax.random.key(0), shape))
    assert expected is not None
    assert _error(lambda: ours(tracejit.random.key(0), shape)) == expected


def test_orthogonal_refuses_out_sharding():
    for name in ["orthogonal", "delta_orthogonal"]:
        ours, theirs = _pair(name, (), {})
        with pytest.raises(NotImplementedError):
            ours(tracejit.random.key(0), (3, 3, 3), out_sharding=object())
        with pytest.raises(NotImplementedError):
            theirs(jax.random.key(0), (3, 3, 3), out_sharding=object())
