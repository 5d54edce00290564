"""Real JAX as the oracle for API behaviour: run the same function on jax.numpy/jax.lax and on
tracejit's, then compare structure, shapes, dtypes, weak types and values (NaN equal to NaN),
or compare the exception classes raised."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import errors
from tracejit import lax as tlax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax


def leaves(x) -> list:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in leaves(item)]
    return [x]


def convert(args, asarray) -> list:
    """NumPy arguments become arrays of one library; Python scalars stay (weakly typed)."""
    return [asarray(a) if isinstance(a, np.ndarray) else a for a in args]


def assert_matches(got, expected, rtol: float = 0.0) -> None:
    """Same structure, shapes, dtypes, weak types and values; `rtol` only for float arithmetic
    that XLA contracts into FMAs or evaluates with its own transcendental functions."""
    assert isinstance(got, (list, tuple)) == isinstance(expected, (list, tuple))
    got_l, exp_l = leaves(got), leaves(expected)
    assert len(got_l) == len(exp_l)
    for g, e in zip(got_l, exp_l):
        if isinstance(e, (int, tuple)):  # jnp.shape / ndim / size
            assert g == e
            continue
        assert isinstance(g, tracejit.Array), type(g)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        assert g.weak_type == e.weak_type, (g.weak_type, e.weak_type)
        if rtol:
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=1e-6)
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def _namespaces(with_lax: bool):
    return ((tlax, tnp), (jlax, jnp)) if with_lax else ((tnp,), (jnp,))


def check(f, *args, jit: bool = True, rtol: float = 0.0, with_lax: bool = False):
    """f(jnp, *args) — or f(lax, jnp, *args) with `with_lax` — on JAX and on tracejit (eagerly
    and under jit) gives the same arrays. Returns tracejit's eager result."""
    ours_ns, jax_ns = _namespaces(with_lax)
    expected = f(*jax_ns, *convert(args, jnp.asarray))
    targs = convert(args, tnp.asarray)
    got = f(*ours_ns, *targs)
    assert_matches(got, expected, rtol)
    if jit:
        assert_matches(tracejit.jit(lambda *a: f(*ours_ns, *a))(*targs), expected, rtol)
    return got


def ours_for(cls: type) -> type:
    """The class tracejit raises where JAX raises `cls`: ours of the same name for JAX's own
    classes (tracejit.errors mirrors jax.errors), else the nearest builtin base."""
    if not cls.__module__.startswith("jax"):
        return cls
    if hasattr(errors, cls.__name__):
        return getattr(errors, cls.__name__)
    return next(c for c in cls.__mro__ if c.__module__ == "builtins")


def same_error(ours_fn, theirs_fn) -> BaseException:
    """Both raise, ours an instance of the class JAX raises; returns our exception (its message
    must not be empty)."""
    with pytest.raises(Exception) as theirs:
        theirs_fn()
    with pytest.raises(Exception) as ours:
        ours_fn()
    jax_cls = type(theirs.value)
    assert isinstance(ours.value, ours_for(jax_cls)), (ours.value, theirs.value)
    if jax_cls.__module__.startswith("jax"):
        assert type(ours.value).__name__ == jax_cls.__name__, (ours.value, theirs.value)
    assert str(ours.value)
    return ours.value


def check_error(f, *args, with_lax: bool = False) -> None:
    """f raises on tracejit the exception class it raises on JAX."""
    ours_ns, jax_ns = _namespaces(with_lax)
    same_error(lambda: f(*ours_ns, *convert(args, tnp.asarray)),
                      lambda: f(*jax_ns, *convert(args, jnp.asarray)))
