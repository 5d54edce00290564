"""tracejit.lax: the primitives (JAX's `jax.lax`), grouped by family, each with all its rules."""
from . import _base  # noqa: F401
from .control_flow import *  # noqa: F401,F403
from .cumulative import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from . import random_bits  # noqa: F401  (the PRNG's primitives; tracejit.prng uses them)
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
