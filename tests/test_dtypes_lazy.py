"""ml_dtypes is imported on first need, not with tracejit (core/dtypes.py): a float32 program
never imports it, and everything about its dtypes (jnp.bfloat16, names like "bfloat16", the
promotion lattice, finfo, error messages, printed jaxprs) answers in a fresh process, where the
first such use imports it, as in one that imported ml_dtypes before tracejit (the eager import
tracejit had before: the oracle)."""
import json
import os
import subprocess
import sys

import pytest

_PRELUDE = """
import json, sys
import numpy as np
if sys.argv[1] == "eager":
    import ml_dtypes  # noqa: F401
import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
"""

# Each check: an expression, evaluated in a process where ml_dtypes is not imported yet
# (lazy), and in one that imported it first (eager). `ml()` is the user's own `import ml_dtypes`.
CHECKS = {
    "scalar_type": "jnp.bfloat16.dtype.name, jnp.bfloat16 is jnp.bfloat16, "
                   "np.dtype(jnp.bfloat16) == jnp.dtype('bfloat16')",
    "name_in_creation": "str(jnp.zeros(2, 'bfloat16').dtype), jnp.ones(2, 'bfloat16').tolist()",
    "promote_types": "str(jnp.promote_types('bfloat16', 'float16')), "
                     "str(jnp.promote_types(jnp.int8, 'bfloat16'))",
    "result_type_weak": "str(jnp.result_type(jnp.ones(2, 'bfloat16'), 1.0)), "
                        "str((jnp.ones(2, jnp.bfloat16) * 2).dtype)",
    "jnp_dtype": "str(jnp.dtype('bfloat16')), jnp.dtype is np.dtype",
    "issubdtype": "jnp.issubdtype('bfloat16', jnp.floating), "
                  "jnp.issubdtype(jnp.bfloat16, jnp.inexact), "
                  "jnp.issubdtype(jnp.int4, jnp.integer)",
    "finfo": "float(jax.dtypes.finfo(jnp.bfloat16).eps), float(jnp.finfo('bfloat16').eps), "
             "str(jnp.finfo(ml().bfloat16).dtype)",
    "canonicalize": "str(jax.dtypes.canonicalize_dtype('bfloat16')), "
                    "str(jax.dtypes.result_type('bfloat16', 1))",
    "isdtype": "jnp.isdtype('bfloat16', 'real floating'), jnp.isdtype(jnp.int4, 'integral')",
    "users_array": "np.asarray(jax.jit(lambda x: x * 3)(np.full(3, 1.5, ml().bfloat16)))"
                   ".astype(float).tolist(), str(jax.jit(lambda x: x + 1)("
                   "np.ones(2, ml().bfloat16)).dtype)",
    "users_dtype_object": "str(jnp.zeros(2, np.dtype(ml().bfloat16)).dtype), "
                          "str(jnp.promote_types(np.dtype(ml().bfloat16), np.float16))",
    "float8_refused": "jnp.asarray(np.ones(2, ml().float8_e4m3fn))",
    "bad_name": "jnp.zeros(2, 'bfloat17')",
    "printed_jaxpr": "str(jax.make_jaxpr(lambda x: (x + 1).astype('float32'))("
                     "np.ones(3, ml().bfloat16)))",
    "shape_dtype_struct": "str(jax.eval_shape(lambda x: x * 2, "
                          "jax.ShapeDtypeStruct((2,), 'bfloat16')).dtype)",
    "shaped_array": "str(jax.ShapedArray((2,), 'bfloat16'))",
    "shaped_array_of_users_dtype": "str(jax.ShapedArray((2,), ml().bfloat16)), "
                                   "str(jax.eval_shape(jnp.sin, jax.ShapeDtypeStruct((2,), "
                                   "ml().bfloat16)))",
    "convert": "str(lax.convert_element_type(jnp.arange(3.0), 'bfloat16').dtype), "
               "jnp.arange(3.0).astype(jnp.bfloat16).astype(jnp.float32).tolist()",
    "dtypes_module": "jax.dtypes.itemsize_bits(jnp.int4), "
                     "jax.dtypes.supports_inf(jnp.float8_e4m3fn), "
                     "jax.dtypes.supports_inf('bfloat16'), jax.dtypes.bfloat16 is ml().bfloat16",
    "names": "'bfloat16' in dir(jnp), hasattr(jnp, 'float8_e4m3fn'), "
             "'bfloat16' in dir(jax.dtypes)",
    "grad": "jax.grad(lambda x: (x * x).astype('float32').sum())("
            "jnp.ones(2, 'bfloat16')).tolist()",
}

_RUN = _PRELUDE + """
def ml():
    import ml_dtypes
    return ml_dtypes

out = {}
for name in sys.argv[2:]:
    before = "ml_dtypes" in sys.modules
    try:
        value = repr(eval(CHECKS[name]))
    except Exception as e:  # the error, as the user sees it
        value = f"{type(e).__name__}: {e}"
    out[name] = [before, value]
print(json.dumps(out))
"""


def _run(mode: str, names: list[str]) -> dict:
    script = f"CHECKS = {CHECKS!r}\n" + _RUN
    env = dict(os.environ, TRACEJIT_PERSISTENT_CACHE="0")
    done = subprocess.run([sys.executable, "-c", script, mode, *names], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def eager() -> dict:
    return _run("eager", list(CHECKS))


@pytest.mark.parametrize("name", list(CHECKS))
def test_first_use_answers_as_with_ml_dtypes_imported(name, eager):
    [before, value] = _run("lazy", [name])[name]
    assert not before  # the check itself was the first use
    assert eager[name][0]
    assert value == eager[name][1]


def test_float32_programs_do_not_import_ml_dtypes():
    script = _PRELUDE + """
f = jax.jit(lambda x, y: jnp.sin(x) @ y + jnp.float32(2) * x.sum())
x = jnp.ones((3, 3))
f(x, x)
jax.grad(lambda x: jnp.tanh(x).sum())(x)
jax.vmap(lambda x: lax.cumsum(x) / x.size)(x)
lax.scan(lambda c, v: (c + v, c * v), 0.0, jnp.arange(4.0))
jax.random.normal(jax.random.key(0), (3,), jnp.float16)
str(jax.make_jaxpr(f)(x, x)), jnp.finfo(jnp.float32).eps, jnp.iinfo("int8").max
jnp.promote_types("int8", "uint8"), jnp.result_type(x, 1), jnp.isdtype("float32", "numeric")
jax.dtypes.canonicalize_dtype(np.float64), jax.dtypes.itemsize_bits(jnp.float16)
jnp.asarray(np.ones(2, np.float16)).astype(jnp.int32), jax.ShapeDtypeStruct((2,), "float32")
jnp.zeros(2, jnp.complex64) + 1j, jnp.issubdtype(jnp.float32, jnp.floating)
print("ml_dtypes" in sys.modules)
"""
    env = dict(os.environ, TRACEJIT_PERSISTENT_CACHE="0")
    done = subprocess.run([sys.executable, "-c", script, "lazy"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
