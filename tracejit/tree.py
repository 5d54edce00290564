"""tracejit.tree: the short names (`jax.tree.map`, ...)."""
from .core.pytree import tree_all as all  # noqa: F401,A004
from .core.pytree import tree_flatten as flatten  # noqa: F401
from .core.pytree import tree_leaves as leaves  # noqa: F401
from .core.pytree import tree_map as map  # noqa: F401,A004
from .core.pytree import tree_reduce as reduce  # noqa: F401
from .core.pytree import tree_structure as structure  # noqa: F401
from .core.pytree import tree_unflatten as unflatten  # noqa: F401
