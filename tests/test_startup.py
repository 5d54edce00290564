"""What the first program of a process pays: the support routines (float16 conversions that
LLVM's code generator calls by name) are compiled only for a program with float16 values, and
such a program, compiled first or later, converts as NumPy does."""
import json
import os
import subprocess
import sys

import numpy as np

_SCRIPT = """
import json
import numpy as np
import tracejit, tracejit.numpy as jnp
from tracejit.backend.llvm import jit_engine
built = lambda: jit_engine._make_support_engine.cache_info().currsize
x = np.linspace(-70000, 70000, 13)
out = {"plus": float(tracejit.jit(lambda x: x + 1)(np.float32(1.5))), "after_f32": built()}
out["half"] = np.asarray(tracejit.jit(lambda x: x.astype(jnp.float16))(x)).tolist()
out["back"] = np.asarray(tracejit.jit(lambda h: h.astype(jnp.float32) * 2)(
    x.astype(np.float16))).tolist()
out["after_f16"] = built()
print(json.dumps(out))
"""


def test_support_routines_are_compiled_only_for_float16():
    env = dict(os.environ, TRACEJIT_PERSISTENT_CACHE="0")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["plus"] == 2.5 and out["after_f32"] == 0 and out["after_f16"] == 1
    x = np.linspace(-70000, 70000, 13)  # (beyond float16's range at both ends: infinities)
    with np.errstate(over="ignore"):
        half = x.astype(np.float16)
    np.testing.assert_array_equal(out["half"], half.astype(float))
    np.testing.assert_array_equal(out["back"], half.astype(np.float32) * 2)
