"""tracejit.scipy.optimize.minimize (BFGS) against SciPy's BFGS on problems where JAX's own
line search gives up (Rosenbrock's valley): the same minimum, under jit; the comparison with
real JAX on well-conditioned problems is tests/libraries/scipy_minimize.py."""
import numpy as np
import pytest
import scipy.optimize

import tracejit
import tracejit.numpy as jnp
from tracejit.scipy.optimize import minimize


def rosenbrock(x, xp=jnp):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [-1.2, 1.0, 0.5], [2.0, -1.0, 0.3, 1.5]])
def test_bfgs_finds_scipys_minimum_of_rosenbrock(x0):
    with tracejit.enable_x64():
        r = tracejit.jit(lambda x: minimize(rosenbrock, x, method="BFGS"))(
            jnp.asarray(x0, jnp.float64))
        expected = scipy.optimize.minimize(lambda x: rosenbrock(x, np), np.array(x0),
                                           method="BFGS", options={"gtol": 1e-10})
        assert bool(r.success) and int(r.status) == 0
        np.testing.assert_allclose(np.asarray(r.x), expected.x, atol=1e-4)
        assert float(r.fun) < 1e-10
        assert float(np.max(np.abs(np.asarray(r.jac)))) < 1e-5


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one-dimensional"):
        minimize(rosenbrock, jnp.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError, match="unknown options"):
        minimize(rosenbrock, jnp.zeros(2), method="BFGS", options={"maxiterr": 3})
