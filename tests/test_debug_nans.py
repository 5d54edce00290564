"""jax_debug_nans / jax_debug_infs: a FloatingPointError naming the operation that produced the
NaN (infinity) and the user's line, eagerly and under jit, as JAX raises it."""
import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp_tj

API = [(tracejit, jnp_tj), (jax, jnp_jax)]


def _error(api, jnp, option, fun, *args):
    api.config.update(option, True)
    try:
        fun(api, jnp)(*args)
    except FloatingPointError as e:
        return str(e)
    finally:
        api.config.update(option, False)
    return None


def _jitted_log(api, jnp):
    @api.jit
    def f(x):
        y = x * 2
        return jnp.log(y - 10)  # the line the error names
    return f


CASES = [
    ("jax_debug_nans", lambda api, jnp: jnp.log, -1.0),
    ("jax_debug_infs", lambda api, jnp: jnp.log, 0.0),
    ("jax_debug_nans", _jitted_log, 1.0),
    ("jax_debug_nans", lambda api, jnp: api.jit(lambda x: api.jit(jnp.sqrt)(x) + 1), -4.0),
]


@pytest.mark.parametrize("option,fun,arg", CASES)
def test_invalid_value_raises_naming_the_operation(option, fun, arg):
    ours = _error(*API[0], option, fun, arg)
    theirs = _error(*API[1], option, fun, arg)
    assert theirs is not None and ours is not None
    assert ours.startswith(theirs.splitlines()[0])     # "invalid value (nan) encountered in log"
    assert __file__ in ours                            # and where, in the user's code


def test_jitted_error_names_the_users_line():
    msg = _error(*API[0], "jax_debug_nans", _jitted_log, 1.0)
    import inspect
    lines, start = inspect.getsourcelines(_jitted_log)
    line = start + next(i for i, text in enumerate(lines) if "jnp.log(y - 10)" in text)
    assert f"{__file__}:{line}" in msg


def test_valid_values_and_the_option_off_pass():
    for option in ("jax_debug_nans", "jax_debug_infs"):
        assert _error(*API[0], option, _jitted_log, 7.0) is None
    assert np.isnan(_jitted_log(*API[0])(1.0))  # off: a NaN is just a value


def test_context_managers():
    f = _jitted_log(*API[0])
    with tracejit.debug_nans(True):
        with pytest.raises(FloatingPointError, match="encountered in log"):
            f(1.0)
    assert np.isnan(f(1.0))
    with tracejit.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\)"):
            jnp_tj.log(0.0)
