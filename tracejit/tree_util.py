"""tracejit.tree_util: pytrees (`jax.tree_util`)."""
from .core.pytree import (Partial, PyTreeDef, all_leaves, register_dataclass,  # noqa: F401
                          register_pytree_node, register_pytree_node_class, tree_all, tree_flatten,
                          tree_leaves, tree_map, tree_reduce, tree_structure, tree_unflatten,
                          treedef_children, treedef_is_leaf)
