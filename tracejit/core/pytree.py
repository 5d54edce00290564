"""Pytrees: flattening nested containers to leaves and back (`tracejit.tree_util`), and key
paths naming where each leaf sits (`tree_flatten_with_path`, `keystr`, DictKey, ...)."""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import re
import textwrap
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple, TypeVar

KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


class _KeyEntryBase:
    """One step of a key path: which child of a node. Immutable, compared and hashed by kind
    and value; `str` gives the step as JAX's keystr spells it."""
    __slots__ = ("_value",)
    _field = ""

    def __init__(self, value):
        object.__setattr__(self, "_value", value)

    def __setattr__(self, name, value):
        raise AttributeError(f"property of {type(self).__name__!r} object has no setter")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._value == other._value

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._value))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={self._value!r})"

    def __reduce__(self):
        return type(self), (self._value,)


def _int_entry(cls_name: str, field: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"__init__(): incompatible function arguments. {cls_name}({field}) "
                        f"takes an int, not {type(value).__name__}.")
    return value


class SequenceKey(_KeyEntryBase):
    """The `idx`-th item of a list or tuple; prints as `[idx]`."""
    __slots__ = ()
    __match_args__ = ("idx",)
    _field = "idx"

    def __init__(self, idx: int):
        super().__init__(_int_entry("SequenceKey", "idx", idx))

    @property
    def idx(self) -> int:
        return self._value

    def __str__(self) -> str:
        return f"[{self._value!r}]"


class DictKey(_KeyEntryBase):
    """The value under `key` in a dict; prints as `[key!r]`."""
    __slots__ = ()
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: Hashable):
        super().__init__(key)

    @property
    def key(self) -> Hashable:
        return self._value

    def __str__(self) -> str:
        return f"[{self._value!r}]"


class GetAttrKey(_KeyEntryBase):
    """The attribute `name` (a NamedTuple or dataclass field); prints as `.name`."""
    __slots__ = ()
    __match_args__ = ("name",)
    _field = "name"

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError("__init__(): incompatible function arguments. GetAttrKey(name) "
                            f"takes a str, not {type(name).__name__}.")
        super().__init__(name)

    @property
    def name(self) -> str:
        return self._value

    def __str__(self) -> str:
        return f".{self._value}"


class FlattenedIndexKey(_KeyEntryBase):
    """The `key`-th child of a node registered without keys; prints as `[<flat index key>]`."""
    __slots__ = ()
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: int):
        super().__init__(_int_entry("FlattenedIndexKey", "key", key))

    @property
    def key(self) -> int:
        return self._value

    def __str__(self) -> str:
        return f"[<flat index {self._value}>]"


def _simple_entrystr(key) -> str:
    if isinstance(key, _KeyEntryBase):
        return str(key._value)
    return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: `['a'][0].x` by default, or `a/0/x` with simple=True and
    separator='/' (the simple form drops brackets and quotes, so it can be ambiguous)."""
    return separator.join(map(_simple_entrystr if simple else str, keys))


class _NodeType(NamedTuple):
    name: str
    to_iter: Callable  # node -> (children, aux_data)
    from_iter: Callable  # (aux_data, children) -> node
    # node -> ([(key, child), ...], aux_data); None: children are keyed FlattenedIndexKey(i).
    # Only the *_with_path walks read it, so plain flattening never pays for keys.
    with_keys: Callable | None = None


_registry: dict[type, _NodeType] = {}
_dataclass_nodes: set[type] = set()  # registered by register_dataclass (named so in errors)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Make `nodetype` a pytree node: `flatten_func(x) -> (children, aux_data)` and
    `unflatten_func(aux_data, children) -> x`; `flatten_with_keys_func(x)` may give
    `([(key, child), ...], aux_data)` for key paths (else children get FlattenedIndexKey)."""
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = _NodeType(nodetype.__name__, flatten_func, unflatten_func,
                                    flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Register a node whose `flatten_with_keys(x)` gives `([(key, child), ...], aux_data)`;
    `flatten_func`, if given, must give the same children and aux data without keys."""
    if not flatten_func:
        def flatten_func(x):
            key_children, aux = flatten_with_keys(x)
            return [c for _, c in key_children], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: register `cls` by its `tree_flatten_with_keys` method and
    `tree_unflatten` classmethod (and its `tree_flatten`, if it has one)."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def register_static(cls: type) -> type:
    """Register `cls` as a node without leaves: instances live whole in the treedef, so jit
    treats them as static arguments. They must be hashable."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
    return cls


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register `cls` by its `tree_flatten` method and `tree_unflatten`
    classmethod."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass (or any class built from keyword arguments): `data_fields` are
    children (keyed GetAttrKey(name)), `meta_fields` auxiliary data; by default taken from the
    dataclass fields, `static=True` in a field's metadata marking it meta."""
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

    def flatten_with_keys(x):
        return ([(GetAttrKey(k), getattr(x, k)) for k in data_fields],
                tuple(getattr(x, k) for k in meta_fields))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    _dataclass_nodes.add(nodetype)
    return nodetype


def _dict_flatten(d):
    try:
        keys = sorted(d)
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys "
                         f"{list(d)}; pytree dict keys must be mutually orderable.") from None
    return [d[k] for k in keys], tuple(keys)


def _dict_flatten_with_keys(d):
    children, keys = _dict_flatten(d)
    return [(DictKey(k), c) for k, c in zip(keys, children)], keys


def _sequence_with_keys(t):
    return [(SequenceKey(i), c) for i, c in enumerate(t)], None


def _defaultdict_with_keys(d):
    key_children, keys = _dict_flatten_with_keys(d)
    return key_children, (d.default_factory, keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c), _sequence_with_keys)
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c), _sequence_with_keys)
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)),
                     _dict_flatten_with_keys)
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None,
                     lambda _: ((), None))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)),
                     lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)))
register_pytree_node(
    collections.defaultdict,
    lambda d: (_dict_flatten(d)[0], (d.default_factory, _dict_flatten(d)[1])),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)), _defaultdict_with_keys)


def _is_namedtuple(x) -> bool:
    return _is_namedtuple_type(type(x))


def _is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _namedtuple_with_keys(n):
    return [(GetAttrKey(f), c) for f, c in zip(n._fields, n)], None


def _node_type_of(x) -> tuple[Any, _NodeType | None]:
    t = type(x)
    nt = _registry.get(t)
    if nt is not None:
        return t, nt
    if _is_namedtuple(x):
        return t, _NodeType(f"namedtuple[{t.__name__}]", lambda n: (tuple(n), None),
                            lambda _, c, t=t: t(*c), _namedtuple_with_keys)
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

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with each leaf replaced by `inner`."""
        if self.node_type is None:
            return inner
        return PyTreeDef(self.node_type, self.node_data,
                         tuple(c.compose(inner) for c in self.children), self._nt)

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

    # (`rec = None` in these walks: a nested function that calls itself is a reference cycle
    # through its closure, which kept the leaves -- a call's output arrays -- alive until the
    # garbage collector ran, so their buffers missed the output pool and every call faulted in
    # fresh pages: 11% of a 1024^2 matmul's time)
    treedef = rec(tree)
    rec = None
    return leaves, treedef


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
    rec = None  # (breaks the cycle: see tree_flatten)
    if next(it, _sentinel) is not _sentinel:
        raise ValueError(f"Too many leaves for PyTreeDef; expected {treedef.num_leaves}.")
    return out


_sentinel = object()


class _Mismatch(Exception):
    """Raised inside _flatten_up_to's walk at the node (prefix treedef, value) that differs."""


def _flatten_up_to(treedef: PyTreeDef, tree, name: str | None = None) -> list:
    """The subtrees of `tree` at the leaves of `treedef` (a prefix of tree's structure).
    The walk carries no key path. On a mismatch: with a `name` (how to call the prefix tree,
    e.g. 'tree_map tree') a second, keyed walk names it as JAX's tree_map does; without one,
    the message is PyTreeDef.flatten_up_to's in JAX."""
    out: list = []

    def rec(td: PyTreeDef, x):
        if td.node_type is None:
            out.append(x)
            return
        t, nt = _node_type_of(x)
        if t is not td.node_type:
            raise _Mismatch(td, x)
        children, aux = nt.to_iter(x)
        children = list(children)
        if len(children) != len(td.children) or not _same_data(aux, td.node_data):
            raise _Mismatch(td, x)
        for c_td, c in zip(td.children, children):
            rec(c_td, c)

    try:
        rec(treedef, tree)
    except _Mismatch as e:
        if name is None:
            raise ValueError(_flatten_up_to_message(*e.args)) from None
        raise _prefix_error(treedef, tree, name) from None
    finally:
        rec = None  # (breaks the cycle: see tree_flatten)
    return out


def _flatten_up_to_message(td: PyTreeDef, x) -> str:
    """JAX's (C++) PyTreeDef.flatten_up_to message for value x not matching node td."""
    kind = td.node_type
    if kind in (list, tuple, dict, type(None)) and type(x) is not kind:
        expected = "None" if kind is type(None) else kind.__name__
        hint = ("\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a "
                "tree-prefix of non-None values. To obtain the previous behavior, you can "
                "usually write:\n  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, "
                "b, is_leaf=lambda x: x is None)") if kind is type(None) and x is not None else ""
        return f"Expected {expected}, got {x!r}.{hint}"
    if kind in (list, tuple):
        return (f"{kind.__name__.capitalize()} arity mismatch: {len(x)} != {len(td.children)}; "
                f"{kind.__name__}: {x!r}.")
    if kind is dict:
        return (f"Dict key mismatch; expected keys: {list(td.node_data)}; present keys: "
                f"{list(_dict_flatten(x)[1])}.")
    if _is_namedtuple_type(kind):
        if not isinstance(x, tuple) or not _is_namedtuple(x):
            return f"Expected named tuple, got {x!r}."
        return f"Named tuple type mismatch: expected type: {kind}, tuple: {x!r}."
    custom = "Custom dataclass node" if kind in _dataclass_nodes else "Custom node"
    if type(x) is not kind:
        return f"{custom} type mismatch: expected type: {kind}, value: {x!r}."
    children, aux = td._nt.to_iter(x)
    if not _same_data(aux, td.node_data):
        return f"Mismatch {custom[0].lower()}{custom[1:]} data: {td.node_data!r} != {aux!r}; " \
            f"value: {x!r}."
    return f"Custom type arity mismatch: {len(list(children))} != {len(td.children)}; " \
        f"value: {x!r}."


def _keyed_children(nt: _NodeType, x) -> tuple[list, Any]:
    """([(key, child), ...], aux_data) of node x of node type nt."""
    if nt.with_keys is not None:
        key_children, aux = nt.with_keys(x)
        return list(key_children), aux
    children, aux = nt.to_iter(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def _prefix_error(treedef: PyTreeDef, tree, name: str) -> ValueError:
    """JAX's message for the first place where `tree` does not have `treedef` as a prefix."""
    for error in _prefix_errors(treedef, tree):
        return error(name)
    return ValueError(f"pytree structure error: {name} is not a prefix of the full tree.")


def prefix_errors(prefix_tree: Any, full_tree: Any, is_leaf=None
                  ) -> list[Callable[[str], ValueError]]:
    """One error maker per place where `full_tree` does not extend `prefix_tree`, in tree
    order; each takes the name to call the prefix by (e.g. 'vmap in_axes')."""
    return list(_prefix_errors(tree_structure(prefix_tree, is_leaf), full_tree))


def _prefix_errors(treedef: PyTreeDef, tree) -> Iterable[Callable[[str], ValueError]]:
    """Where `tree` does not have `treedef` as a prefix, each mismatch worded as
    jax._src.tree_util._prefix_error words it and named by its key path. A mismatching
    subtree is not searched further."""
    def error(text: str) -> Callable[[str], ValueError]:
        return lambda name: ValueError(text.replace(_NAME, name))

    todo = [(treedef, tree, ())]
    while todo:
        td, x, path = todo.pop()
        if td.node_type is None:
            continue
        where = (f"at key path\n    {_NAME}{keystr(path)}\nAt that key path, the prefix "
                 f"pytree {_NAME} has a subtree of type")
        t, nt = _node_type_of(x)
        if t is not td.node_type:
            yield error(
                f"pytree structure error: different types {where}\n    {td.node_type}\nbut at "
                f"the same key path the full pytree has a subtree of different type\n    "
                f"{type(x)}.")
            continue
        key_children, aux = _keyed_children(nt, x)
        if issubclass(t, (list, tuple)) and len(key_children) != len(td.children):
            yield error(
                f"pytree structure error: different lengths of {t.__name__} {where} "
                f"{t.__name__} of length {len(td.children)}, but the full pytree has a subtree "
                f"of the same type but of length {len(key_children)}.")
            continue
        if len(key_children) != len(td.children):
            ours = _child_keys_of(td)
            theirs = [k for k, _ in key_children]
            diff = [k for k in ours if k not in theirs] + [k for k in theirs if k not in ours]
            yield error(
                f"pytree structure error: different numbers of pytree children {where}\n    "
                f"{td.node_type}\nwith {len(td.children)} child keys\n    "
                f"{' '.join(map(_simple_entrystr, ours))}\nbut at the same key path the full "
                f"pytree has a subtree of the same type but with {len(key_children)} child "
                f"keys\n    {' '.join(map(_simple_entrystr, theirs))}\nso the symmetric "
                f"difference on key sets is\n    {' '.join(map(_simple_entrystr, diff))}")
            continue
        if not _same_data(aux, td.node_data):
            import difflib  # (here, on the error's path: ~1 ms of `import tracejit` otherwise)
            before, after = str(td.node_data), str(aux)
            diff = textwrap.indent("\n".join(difflib.ndiff(before.splitlines(),
                                                           after.splitlines())), "    ")
            yield error(
                f"pytree structure error: different pytree metadata {where}\n    "
                f"{td.node_type}\nwith metadata\n    {before}\nbut at the same key path the "
                f"full pytree has a subtree of the same type but with metadata\n    {after}\n"
                f"so the diff in the metadata at these pytree nodes is\n{diff}")
            continue
        todo += reversed([(c_td, c, path + (k,))
                          for c_td, (k, c) in zip(td.children, key_children)])


_NAME = "\x00"  # where an error maker puts the prefix tree's name


class PytreeLeaf:
    """A stand-in leaf: errors about a prefix of some value's structure are computed against
    the structure alone, as JAX's are (its messages then name this type)."""

    def __repr__(self) -> str:
        return "*"


def _child_keys_of(td: PyTreeDef) -> list:
    """The keys of td's children, rebuilt from a stand-in node made of its own structure."""
    try:
        stand_in = td._nt.from_iter(td.node_data, [object() for _ in td.children])
        return [k for k, _ in _keyed_children(td._nt, stand_in)[0]]
    except Exception:  # noqa: BLE001 (an unflatten computing on its children: use positions)
        return [FlattenedIndexKey(i) for i in range(len(td.children))]


def tree_leaves(tree, is_leaf=None) -> list:
    """tree_flatten's leaves, in its order, without building the tree's definition: a jitted
    call's outputs pass through here in block_until_ready, and an optimiser's state of 150
    arrays built 229 PyTreeDef nodes a call for it (a third of that call's time)."""
    leaves: list = []
    append = leaves.append

    def rec(x) -> None:
        if is_leaf is not None and is_leaf(x):
            append(x)
            return
        t = type(x)
        nt = _registry.get(t)
        if nt is not None:
            children = nt.to_iter(x)[0]
        elif _is_namedtuple_type(t):
            children = x
        else:
            append(x)
            return
        for c in children:
            rec(c)

    rec(tree)
    rec = None  # (breaks the cycle: see tree_flatten)
    return leaves


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def leaf_names(name: str, tree: Any) -> list[str]:
    """Names like `x`, `params['w']`, `state[0]`, `p.w` for each leaf of an argument (for
    errors): JAX's key paths, a custom node's `[<flat index 1>]` cleaned to `[1]` as JAX's
    argument names do."""
    return [name + _FLAT_INDEX.sub(r"\1", keystr(path))
            for path, _ in tree_leaves_with_path(tree)]


_FLAT_INDEX = re.compile(r"<flat index ([^>]+)>")


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    leaves, treedef = tree_flatten(tree, is_leaf)
    all_leaves = [leaves] + [_flatten_up_to(treedef, r, "tree_map tree") for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


# --- key paths: walks beside tree_flatten / tree_map, which stay key-free (the jit hot path)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like tree_flatten, but each leaf comes with its key path: `[(path, leaf), ...]`.
    With is_leaf_takes_path, is_leaf is called as `is_leaf(path, x)`."""
    pairs: list = []

    def rec(x, path: tuple) -> PyTreeDef:
        if is_leaf is not None and (is_leaf(path, x) if is_leaf_takes_path else is_leaf(x)):
            pairs.append((path, x))
            return _LEAF
        t, nt = _node_type_of(x)
        if nt is None:
            pairs.append((path, x))
            return _LEAF
        key_children, aux = _keyed_children(nt, x)
        return PyTreeDef(t, aux, tuple(rec(c, path + (k,)) for k, c in key_children), nt)

    treedef = rec(tree, ())
    rec = None  # (breaks the cycle: see tree_flatten)
    return pairs, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """`[(path, leaf), ...]` in tree_leaves order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like tree_map, with each leaf's key path as f's first argument: `f(path, x, *ys)`."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [_flatten_up_to(treedef, r, "tree_map_with_path tree") for r in rest]
    return treedef.unflatten(f(path, x, *ys) for (path, x), *ys in zip(pairs, *others))


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """(children, aux_data) of a pytree node; ValueError for a leaf."""
    _, nt = _node_type_of(tree)
    if nt is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return nt.to_iter(tree)


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[Any, Any]], Hashable]:
    """([(key, child), ...], aux_data) of a pytree node; ValueError for a leaf."""
    _, nt = _node_type_of(tree)
    if nt is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _keyed_children(nt, tree)


def is_tree_node(typ: type) -> bool:
    """Whether `typ` is a registered node type (built-in, custom or a namedtuple)."""
    return typ in _registry or _is_namedtuple_type(typ)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure outer(inner) into one of structure inner(outer); with
    inner_treedef None it is read from the first outer leaf."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    rows = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows))


def tree_all(tree, is_leaf=None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable, tree, initializer=_sentinel, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _sentinel:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable, tree, *, identity=_sentinel, is_leaf=None):
    """Reduce the leaves with an associative `operation`, pairing halves as a balanced tree
    (so the grouping matches JAX's: ((1, 2), (3, (4, 5))) for five leaves)."""
    def reduce(xs: list):
        if not xs:
            if identity is _sentinel:
                raise TypeError("Must specify identity for parallel reduction of empty "
                                "sequence.")
            return identity
        if len(xs) == 1:
            return xs[0]
        return operation(reduce(xs[:len(xs) // 2]), reduce(xs[len(xs) // 2:]))
    return reduce(tree_leaves(tree, is_leaf))


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf=None) -> Any:
    """`full_tree`'s structure with each leaf taken from the prefix leaf above it."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = _flatten_up_to(prefix_def, full_tree, "broadcast_prefix prefix_tree")
    leaves = [x for x, sub in zip(prefix_leaves, subtrees)
              for _ in range(tree_structure(sub).num_leaves)]
    return tree_structure(full_tree).unflatten(leaves)


def static(**kwargs) -> Any:
    """A dataclasses.field marked static (auxiliary data) for register_dataclass."""
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose items have the given structures."""
    return PyTreeDef(tuple, None, tuple(treedefs), _registry[tuple])


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
