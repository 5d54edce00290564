"""Complex numbers where JAX gives them a meaning and where it refuses them: var/std of complex
input are real; ordered operations (rem, nextafter, lax comparisons, argmax/argmin, heaviside)
raise JAX's TypeError; jnp's comparisons order complex numbers lexicographically as JAX's do.
Real JAX is the oracle."""
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

Z = np.array([[1 + 2j, 3 - 1j, 0.5j], [2, 1j, -1]], np.complex64)


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": 0, "ddof": 1}, {"keepdims": True}])
@pytest.mark.parametrize("jit", [False, True])
def test_spread_of_complex_input_is_real(name, kw, jit):
    ours = getattr(tnp, name)
    if jit:
        ours = tracejit.jit(lambda z, ours=ours: ours(z, **kw))
        got = ours(Z)
    else:
        got = ours(Z, **kw)
    want = getattr(jjnp, name)(Z, **kw)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_var_of_complex_with_a_real_dtype_is_refused_as_in_jax():
    with pytest.raises(ValueError):
        jjnp.var(Z, dtype=np.float32)
    with pytest.raises(ValueError, match="real `dtype`"):
        tnp.var(Z, dtype=np.float32)


_REFUSED = [
    ("mod", lambda m, lx: m.remainder(Z, Z)),
    ("rem", lambda m, lx: lx.rem(Z, Z)),
    ("fmod", lambda m, lx: m.fmod(Z, Z)),
    ("nextafter", lambda m, lx: m.nextafter(Z, Z)),
    ("argmax", lambda m, lx: m.argmax(Z)),
    ("argmin", lambda m, lx: m.argmin(Z, axis=1)),
    ("heaviside", lambda m, lx: m.heaviside(Z, Z)),
    ("lax.lt", lambda m, lx: lx.lt(Z, Z)),
    ("lax.ge", lambda m, lx: lx.ge(Z, Z)),
]


@pytest.mark.parametrize("name, op", _REFUSED, ids=[n for n, _ in _REFUSED])
def test_ordered_operations_refuse_complex_as_jax_does(name, op):
    with pytest.raises(TypeError) as theirs:
        op(jjnp, jlax)
    with pytest.raises(TypeError) as ours:
        op(tnp, lax)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "maximum",
                                  "minimum"])
def test_jnp_orders_complex_lexicographically(name):
    a = np.array([1 + 2j, 1 + 1j, 2 - 5j, 1 + 2j], np.complex64)
    b = np.array([1 + 1j, 1 + 2j, 1 + 9j, 1 + 2j], np.complex64)
    want = getattr(jjnp, name)(a, b)
    for f in (getattr(tnp, name), tracejit.jit(getattr(tnp, name))):
        got = f(a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)



def test_expm1_of_real_complex_arguments_as_jax():
    # a zero imaginary part stays zero (inf * sin(0) would make it NaN), eagerly and natively
    inf, nan = np.inf, np.nan
    z = np.array([complex(inf, 0), complex(nan, 0), complex(-inf, 0), complex(2, -0.0),
                  complex(inf, -0.0), complex(0.5, 1.0), complex(-inf, inf)], np.complex64)
    expected = np.asarray(jjnp.expm1(z))
    for got in (tnp.expm1(z), tracejit.jit(tnp.expm1)(z)):
        got = np.asarray(got)
        np.testing.assert_allclose(got.real, expected.real, rtol=1e-6)
        np.testing.assert_allclose(got.imag, expected.imag, rtol=1e-6)
        assert (np.signbit(got.imag) == np.signbit(expected.imag)).all()
