"""Pytrees: flattening nested containers to leaves and back (`tracejit.tree_util`)."""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, NamedTuple


class _NodeType(NamedTuple):
    name: str
    to_iter: Callable  # node -> (children, aux_data)
    from_iter: Callable  # (aux_data, children) -> node


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = _NodeType(nodetype.__name__, flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None, drop_fields=()):
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            "specified when either is specified. Got "
                            f"data_fields={data_fields!r} meta_fields={meta_fields!r}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when "
                            f"nodetype is not a dataclass. Got nodetype={nodetype!r}.")
        fields = dataclasses.fields(nodetype)
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):  # the fields must be exactly the __init__ arguments
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if {*meta_fields, *data_fields} != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            if missing := init_fields - {*meta_fields, *data_fields}:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress this "
                        "error.")
            if unexpected := {*meta_fields, *data_fields} - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: "
                         f"{overlap}.")

    def flatten(x):
        return [getattr(x, k) for k in data_fields], tuple(getattr(x, k) for k in meta_fields)

    def unflatten(meta, children):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, children)))

    register_pytree_node(nodetype, flatten, unflatten)
    return nodetype


def _dict_flatten(d):
    try:
        keys = sorted(d)
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys "
                         f"{list(d)}; pytree dict keys must be mutually orderable.") from None
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)))
register_pytree_node(
    collections.defaultdict,
    lambda d: (_dict_flatten(d)[0], (d.default_factory, _dict_flatten(d)[1])),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)))


def _is_namedtuple(x) -> bool:
    return _is_namedtuple_type(type(x))


def _is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _node_type_of(x) -> tuple[Any, _NodeType | None]:
    t = type(x)
    nt = _registry.get(t)
    if nt is not None:
        return t, nt
    if _is_namedtuple(x):
        return t, _NodeType(f"namedtuple[{t.__name__}]", lambda n: (tuple(n), None),
                            lambda _, c, t=t: t(*c))
    return None, None


class PyTreeDef:
    """The structure of a pytree: node types, their auxiliary data and where leaves go."""
    __slots__ = ("node_type", "node_data", "children", "num_leaves", "num_nodes", "_nt", "_hash")

    def __init__(self, node_type, node_data, children: tuple, nt: _NodeType | None):
        self.node_type = node_type
        self.node_data = node_data
        self.children = children
        self._nt = nt
        if node_type is None:  # a leaf
            self.num_leaves, self.num_nodes = 1, 1
        else:
            self.num_leaves = sum(c.num_leaves for c in children)
            self.num_nodes = 1 + sum(c.num_nodes for c in children)
        try:
            self._hash = hash((node_type, node_data, children))
        except TypeError:
            self._hash = hash((node_type, children))

    def __eq__(self, other) -> bool:
        if not isinstance(other, PyTreeDef):
            return False
        if self is other:
            return True
        if self._hash != other._hash or self.node_type is not other.node_type:
            return False
        return _same_data(self.node_data, other.node_data) and self.children == other.children

    def __hash__(self) -> int:
        return self._hash

    def unflatten(self, leaves) -> Any:
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        return _flatten_up_to(self, tree)

    def __repr__(self) -> str:
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self.node_type is None:
            return "*"
        kids = [c._str() for c in self.children]
        if self.node_type is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if self.node_type is list:
            return "[" + ", ".join(kids) + "]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self.node_data, kids)) + "}"
        if self.node_type is type(None):
            return "None"
        name = self._nt.name if _is_namedtuple_type(self.node_type) else \
            f"{self._nt.name}[{self.node_data}]"
        return f"CustomNode({name}, [{', '.join(kids)}])"


def _same_data(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # e.g. arrays as aux data: ambiguous truth value counts as different
        return False


_LEAF = PyTreeDef(None, None, (), None)


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    leaves: list = []

    def rec(x) -> PyTreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return _LEAF
        t, nt = _node_type_of(x)
        if nt is None:
            leaves.append(x)
            return _LEAF
        children, aux = nt.to_iter(x)
        return PyTreeDef(t, aux, tuple(rec(c) for c in children), nt)

    return leaves, rec(tree)


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    leaves = list(leaves)
    if len(leaves) < treedef.num_leaves:
        raise ValueError(f"Too few leaves for PyTreeDef; expected {treedef.num_leaves}, got "
                         f"{len(leaves)}")
    it = iter(leaves)

    def rec(td: PyTreeDef):
        if td.node_type is None:
            return next(it)
        return td._nt.from_iter(td.node_data, [rec(c) for c in td.children])

    out = rec(treedef)
    if next(it, _sentinel) is not _sentinel:
        raise ValueError(f"Too many leaves for PyTreeDef; expected {treedef.num_leaves}.")
    return out


_sentinel = object()


def _child_keys(td: PyTreeDef) -> list[str]:
    """Key-path entries of td's children, spelled as in JAX's error messages."""
    if _is_namedtuple_type(td.node_type):
        return [f".{f}" for f in td.node_type._fields]
    if td.node_type in (list, tuple):
        return [f"[{i}]" for i in range(len(td.children))]
    if td.node_type in (dict, collections.OrderedDict):
        return [f"[{k!r}]" for k in td.node_data]
    if td.node_type is collections.defaultdict:
        return [f"[{k!r}]" for k in td.node_data[1]]
    return [f"[<flat index {i}>]" for i in range(len(td.children))]


def _flatten_up_to(treedef: PyTreeDef, tree) -> list:
    """The subtrees of `tree` at the leaves of `treedef` (a prefix of tree's structure)."""
    out: list = []

    def rec(td: PyTreeDef, x, path: str):
        if td.node_type is None:
            out.append(x)
            return
        where = f"pytree structure error: {{}} at key path\n    tree{path}\nAt that key path, "
        t, nt = _node_type_of(x)
        if t is not td.node_type:
            raise ValueError(where.format("different types") + "the prefix pytree has a "
                             f"subtree of type\n    {td.node_type}\nbut the full pytree has a "
                             f"subtree of different type\n    {type(x)}.")
        children, aux = nt.to_iter(x)
        children = list(children)
        if len(children) != len(td.children):
            raise ValueError(where.format("different numbers of pytree children") + "the "
                             f"prefix pytree has a subtree of type {td.node_type} with "
                             f"{len(td.children)} children, but the full pytree has one with "
                             f"{len(children)} children: {x!r:.200}.")
        if not _same_data(aux, td.node_data):
            raise ValueError(where.format("different pytree metadata") + "the prefix pytree "
                             f"has a subtree of type {td.node_type} with metadata\n    "
                             f"{td.node_data}\nbut the full pytree has one with metadata\n    "
                             f"{aux}.")
        for key, c_td, c in zip(_child_keys(td), td.children, children):
            rec(c_td, c, path + key)

    rec(treedef, tree, "")
    return out


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def leaf_names(name: str, tree: Any) -> list[str]:
    """Names like `x`, `params['w']`, `state[0]` for each leaf of an argument (for errors)."""
    if isinstance(tree, dict):
        try:
            keys = sorted(tree)
        except TypeError:
            keys = list(tree)
        return [n for k in keys for n in leaf_names(f"{name}[{k!r}]", tree[k])]
    if isinstance(tree, (list, tuple)):
        return [n for i, x in enumerate(tree) for n in leaf_names(f"{name}[{i}]", x)]
    leaves, _ = tree_flatten(tree)
    if len(leaves) == 1:
        return [name]
    return [f"{name}.<leaf {i}>" for i in range(len(leaves))]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    leaves, treedef = tree_flatten(tree, is_leaf)
    all_leaves = [leaves] + [_flatten_up_to(treedef, r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_all(tree, is_leaf=None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable, tree, initializer=_sentinel, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _sentinel:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every item is a leaf (None and empty containers are not)."""
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


class _HashableCallableShim:
    """A partial given to Partial, kept opaque (its arguments are not leaves) but hashable and
    comparable by the wrapped callable, as in JAX."""

    def __init__(self, fun: Callable):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other) -> bool:
        if isinstance(other, _HashableCallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A functools.partial that is a pytree (its args are leaves), as jax.tree_util.Partial."""

    def __new__(klass, func, *args, **kw):
        if isinstance(func, functools.partial):
            original = func
            func = _HashableCallableShim(original)
            out = super().__new__(klass, func, *args, **kw)
            # JAX exposes the wrapped partial's parts on the shim for introspection
            func.func, func.args, func.keywords = original.func, original.args, original.keywords
            return out
        return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))
