"""tracejit.tree: the short names (`jax.tree.map`, ...)."""
from .core.pytree import static  # noqa: F401
from .core.pytree import tree_all as all  # noqa: F401,A004
from .core.pytree import tree_broadcast as broadcast  # noqa: F401
from .core.pytree import tree_flatten as flatten  # noqa: F401
from .core.pytree import tree_flatten_with_path as flatten_with_path  # noqa: F401
from .core.pytree import tree_leaves as leaves  # noqa: F401
from .core.pytree import tree_leaves_with_path as leaves_with_path  # noqa: F401
from .core.pytree import tree_map as map  # noqa: F401,A004
from .core.pytree import tree_map_with_path as map_with_path  # noqa: F401
from .core.pytree import tree_reduce as reduce  # noqa: F401
from .core.pytree import tree_reduce_associative as reduce_associative  # noqa: F401
from .core.pytree import tree_structure as structure  # noqa: F401
from .core.pytree import tree_transpose as transpose  # noqa: F401
from .core.pytree import tree_unflatten as unflatten  # noqa: F401
