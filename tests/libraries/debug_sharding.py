"""jax.debug.visualize_array_sharding / visualize_sharding / inspect_array_sharding over a 2x2
and a 4-device mesh: the tables printed (1-D and 2-D, split, replicated, partly replicated)
and the shardings reported (written for real JAX)."""
import contextlib
import io
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))
line = Mesh(np.array(jax.devices()), ("i",))
cases = {"1d": ((8,), NamedSharding(line, P("i"))),
         "2d": ((8, 8), NamedSharding(mesh, P("x", "y"))),
         "rows": ((8, 4), NamedSharding(mesh, P("x"))),
         "replicated": ((4, 4), NamedSharding(mesh, P())),
         "cols": ((4, 8), NamedSharding(mesh, P(None, "y"))),
         "two_axes": ((8,), NamedSharding(mesh, P(("x", "y")))),
         "transposed": ((8, 16), NamedSharding(mesh, P("y", "x"))),
         "small_scale": ((8, 8), NamedSharding(mesh, P("x", "y")))}
out = {}
for name, (shape, sharding) in cases.items():
    x = jax.device_put(jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape), sharding)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        if name == "small_scale":
            jax.debug.visualize_sharding(shape, sharding, scale=0.5, min_width=4)
        else:
            jax.debug.visualize_array_sharding(x)
    out[name] = np.array(text.getvalue())
    seen = []
    jax.debug.inspect_array_sharding({"a": x, "b": [x]}, callback=seen.append)
    out[name + "_inspected"] = np.array([repr(s) for s in seen])
    out[name + "_same"] = np.array([s == sharding for s in seen])
for shape in [(3, 5), (7,), (16, 4)]:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        jax.debug.visualize_array_sharding(jnp.ones(shape))
    out[f"single_{shape}"] = np.array(text.getvalue())
np.savez(sys.argv[1], **out)
