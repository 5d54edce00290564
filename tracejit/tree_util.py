"""tracejit.tree_util: pytrees and their key paths (`jax.tree_util`)."""
import builtins
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from .core.pytree import (  # noqa: F401
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeDef,
    SequenceKey,
    all_leaves,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_all,
    tree_broadcast,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)


class PyTreeRegistry:
    """The pytree node types (JAX's PyTreeRegistry); `default_registry` is the one that
    tree_flatten, jit and every transformation use: registering through it is registering
    with register_pytree_node."""

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None
                ) -> tuple[list, PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree: Any,
                          leaf_predicate: Callable[[Any, Any], bool] | None = None
                          ) -> tuple[list, PyTreeDef]:
        """Leaves with their key paths; `leaf_predicate(path, x)` as in JAX."""
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable, Hashable] | None:
        """(children, aux_data) of a node, None for a leaf."""
        return flatten_one_level(tree) if is_tree_node(type(tree)) else None

    def flatten_one_level_with_keys(self, tree: Any) -> tuple[Iterable, Hashable] | None:
        """([(key, child), ...], aux_data) of a node, None for a leaf."""
        return flatten_one_level_with_keys(tree) if is_tree_node(type(tree)) else None

    def is_node(self, type: type) -> bool:
        if not isinstance(type, builtins.type):
            raise TypeError(f"is_node(): expected a type, got {type!r}")
        return is_tree_node(type)

    def register_node(self, type: type, to_iterable: Callable,
                      from_iterable: Callable, to_iterable_with_keys: Callable | None = None
                      ) -> None:
        register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, type: type, data_fields: Sequence[str],
                                meta_fields: Sequence[str], /) -> None:
        register_dataclass(type, list(data_fields), list(meta_fields))

    def __repr__(self) -> str:
        return "<tracejit.tree_util.PyTreeRegistry: the default registry>"


default_registry = PyTreeRegistry()
