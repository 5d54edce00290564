"""tracejit: JAX's programming model (jit, lax control flow, jax.numpy, ...) as a compiler.

    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit import lax
"""
from . import errors, lax, nn, numpy, tree, tree_util  # noqa: F401
from .core.array import Array  # noqa: F401
from .core.avals import ShapedArray, ShapeDtypeStruct  # noqa: F401
from .core.config import config, disable_jit, enable_x64  # noqa: F401
from .core.devices import (default_backend, device_count, devices,  # noqa: F401
                           local_device_count, local_devices, process_count, process_index)
from .core.dtypes import float0  # noqa: F401
from .runtime.devices import block_until_ready, device_put  # noqa: F401
from .runtime.jit import clear_caches, eval_shape, jit, make_jaxpr  # noqa: F401
from .runtime.stages import Compiled, Lowered, Traced  # noqa: F401
from .transforms.api import (checkpoint, custom_jvp, custom_vjp, grad, hessian,  # noqa: F401
                             jacfwd, jacobian, jacrev, jvp, linear_transpose, linearize, remat,
                             value_and_grad, vjp, vmap)

__version__ = "0.1.0"
__version_info__ = tuple(int(part) for part in __version__.split("."))  # as JAX's
from . import random  # noqa: E402,F401  (after numpy: random is built on it)
from . import dtypes, flatten_util, test_util, typing  # noqa: E402,F401
