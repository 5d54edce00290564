"""tracejit.lax: the primitives (JAX's `jax.lax`), grouped by family, each with all its rules."""
from ..core.rules import use_lax_primitives
from . import _base, call, random_bits  # noqa: F401  (random_bits: the PRNG's primitives)
from .callback import host_call  # noqa: F401  (host callbacks: their primitives live there)
from .composed import *  # noqa: F401,F403
from .control_flow import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .cumulative import *  # noqa: F401,F403
from .dce_sink import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .elementwise import add_p
from .strict import *  # noqa: F401,F403  (the binary ops users call: JAX's strict operands)
from .fft import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .parallel import *  # noqa: F401,F403
from . import processes as _processes  # noqa: F401,E402  (collectives across processes)
from .polynomials import *  # noqa: F401,F403
from .ragged_dot import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .reductions import reduce_sum_p
from .rng_bit_generator import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .sharding import *  # noqa: F401,F403
from .shape import broadcast_in_dim_p, transpose_p
from .sorting import *  # noqa: F401,F403
from .typenames import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .windowed import *  # noqa: F401,F403

# the rule vocabulary in core builds tangents and batched values with these primitives
use_lax_primitives(add_p=add_p, broadcast_in_dim_p=broadcast_in_dim_p, reduce_sum_p=reduce_sum_p,
                   transpose_p=transpose_p)

# JAX's lax names each primitive `<name>_p`; libraries match jaxpr equations against them
# (equinox's jaxpr finalisation keys a table by lax.stop_gradient_p, ...)
from ..core.primitive import registry as _registry  # noqa: E402

globals().update({f"{p.name.replace('-', '_')}_p": p for p in _registry.values()
                  if f"{p.name.replace('-', '_')}_p" not in globals()})
linear_solve_p = _registry["custom_linear_solve"]  # (JAX's name for it)
