"""Pytree key paths (tracejit.tree_util / tracejit.tree) against jax.tree_util / jax.tree: the
key entries, keystr, *_with_path, registration with keys, register_static, tree_transpose,
tree_broadcast and the key-path-naming structure errors. Each case runs on both libraries."""
import collections
import dataclasses
import pickle
import re
from typing import Any, NamedTuple

import jax
import jax.tree_util as jtu
import numpy as np
import pytest

import tracejit
import tracejit.tree_util as ttu

MODULES = [jtu, ttu]
TREE_MODULE = {jtu: jax.tree, ttu: tracejit.tree}


# --- node types, each registered with both libraries (their registries are separate) -------

class Point(NamedTuple):
    x: Any
    y: Any


class Box:
    """Registered without keys: its children get FlattenedIndexKey."""

    def __init__(self, a, b, meta="m"):
        self.a, self.b, self.meta = a, b, meta


class Keyed:
    """Registered with register_pytree_with_keys and custom key entries (plain strings too)."""

    def __init__(self, u, v):
        self.u, self.v = u, v


class KeyedFast(Keyed):
    """Registered with keys and a separate flatten_func."""


class Fourth(Keyed):
    """Registered through register_pytree_node's fourth argument, flatten_with_keys_func."""


@dataclasses.dataclass
class Params:
    w: Any
    n: int = dataclasses.field(metadata={"static": True})
    b: Any = None


for _m in MODULES:
    _m.register_pytree_node(Box, lambda b: ((b.a, b.b), b.meta), lambda m, c: Box(*c, m))
    _m.register_dataclass(Params)
    _m.register_pytree_with_keys(
        Keyed, lambda k, m=_m: ([(m.GetAttrKey("u"), k.u), (m.SequenceKey(7), k.v)], "aux"),
        lambda aux, c: Keyed(*c))
    _m.register_pytree_with_keys(
        KeyedFast, lambda k, m=_m: ([(m.DictKey("u"), k.u), (m.FlattenedIndexKey(3), k.v)],
                                    None),
        lambda aux, c: KeyedFast(*c), lambda k: ((k.u, k.v), None))
    _m.register_pytree_node(Fourth, lambda k: ((k.u, k.v), 1), lambda aux, c: Fourth(*c),
                            lambda k: ([("first", k.u), ("second", k.v)], 1))


def _make_with_keys_class(m):
    @m.register_pytree_with_keys_class
    class Special:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return ((m.GetAttrKey("x"), self.x), (m.GetAttrKey("y"), self.y)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    @m.register_pytree_with_keys_class
    class SpecialFast(Special):
        def tree_flatten(self):
            return (self.x, self.y), None

    @m.register_static
    class StaticStr(str):
        pass
    return Special, SpecialFast, StaticStr


CLASSES = {m: _make_with_keys_class(m) for m in MODULES}


def _first(a, b, c=0):
    return a


def _trees(m):
    """The trees of the table, built for module m (classes registered per library)."""
    special, special_fast, static_str = CLASSES[m]
    return [
        1, None, (), [], {}, [None], (1,), [1, [2, (3, None)]],
        {"b": 1, "a": [2, (3, None)]}, {2: "x", 0: "y", 1: "z"},
        {"z": {"c": 1, "b": 2}, "x": [3, {"q": 4, "p": 5}]},
        Point(1, (2, 3)), Point(None, Point(1, [2])),
        collections.OrderedDict([("b", 1), ("a", [2])]),
        collections.defaultdict(list, {"z": 1, "y": (2, 3)}),
        Params(w=[1, 2], n=5, b={"k": 3}), Params(w=1, n=6),
        Box(1, [2, 3]), Box({"a": Point(1, 2)}, None),
        Keyed(1, [2, 3]), KeyedFast({"p": 1}, 2), Fourth([1], (2,)),
        special(1, [2, {"a": 3}]), special_fast((1, 2), 3),
        [static_str("s"), 1, {"t": static_str("t")}],
        m.Partial(_first, 1, [2], c={"d": 3}),
        np.arange(3), "a string leaf",
    ]


N_TREES = len(_trees(ttu))


def _key_desc(k):
    """A key entry as (kind, value), the value read through its public attribute."""
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr) and type(k).__name__ in ("SequenceKey", "DictKey", "GetAttrKey",
                                                    "FlattenedIndexKey"):
            return type(k).__name__, attr, getattr(k, attr)
    return type(k).__name__, None, k  # a user's own key (e.g. a string)


def _path_desc(m, path):
    return (m.keystr(path), m.keystr(path, simple=True, separator="/"), repr(path),
            [_key_desc(k) for k in path])


def _same_leaf(a, b) -> bool:
    return (a is b) or (type(a) is type(b) and np.array_equal(np.asarray(a), np.asarray(b)))


@pytest.mark.parametrize("i", range(N_TREES))
def test_flatten_with_path_matches_jax(i):
    j_tree, t_tree = _trees(jtu)[i], _trees(ttu)[i]
    j_pairs, j_def = jtu.tree_flatten_with_path(j_tree)
    t_pairs, t_def = ttu.tree_flatten_with_path(t_tree)
    assert [_path_desc(ttu, p) for p, _ in t_pairs] == [_path_desc(jtu, p) for p, _ in j_pairs]
    assert len(t_pairs) == len(j_pairs)
    assert all(_same_leaf(a, b) for (_, a), (_, b) in zip(t_pairs, j_pairs))
    assert str(t_def) == str(j_def)
    assert t_def == ttu.tree_structure(t_tree)  # the keyed walk builds the same treedef
    assert [x for _, x in t_pairs] == ttu.tree_leaves(t_tree) or isinstance(t_tree, np.ndarray)
    assert [_path_desc(ttu, p) for p, _ in ttu.tree_leaves_with_path(t_tree)] == \
        [_path_desc(jtu, p) for p, _ in jtu.tree_leaves_with_path(j_tree)]
    t_short, j_short = tracejit.tree.flatten_with_path(t_tree), jax.tree.flatten_with_path(j_tree)
    assert [_path_desc(ttu, p) for p, _ in t_short[0]] == \
        [_path_desc(jtu, p) for p, _ in j_short[0]]
    assert str(t_short[1]) == str(j_short[1])
    assert [ttu.keystr(p) for p, _ in tracejit.tree.leaves_with_path(t_tree)] == \
        [jtu.keystr(p) for p, _ in jax.tree.leaves_with_path(j_tree)]


@pytest.mark.parametrize("i", range(N_TREES))
def test_map_with_path_matches_jax(i):
    def tag(m):
        return lambda path, x: (m.keystr(path), str(x))
    j_tree, t_tree = _trees(jtu)[i], _trees(ttu)[i]
    ours = ttu.tree_leaves(ttu.tree_map_with_path(tag(ttu), t_tree),
                           is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2)
    theirs = jtu.tree_leaves(jtu.tree_map_with_path(tag(jtu), j_tree),
                             is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2)
    assert ours == theirs
    # with a second tree: f sees (path, x, y)
    t_out = tracejit.tree.map_with_path(lambda p, x, y: (ttu.keystr(p), str(x), str(y)),
                                        t_tree, t_tree)
    j_out = jax.tree.map_with_path(lambda p, x, y: (jtu.keystr(p), str(x), str(y)),
                                   j_tree, j_tree)
    assert str(ttu.tree_structure(t_out)) == str(jtu.tree_structure(j_out))


KEY_ENTRIES = [
    ("SequenceKey", (0,)), ("SequenceKey", (3,)), ("DictKey", ("a",)), ("DictKey", (1,)),
    ("DictKey", ((1, "b"),)), ("DictKey", ("it's",)), ("GetAttrKey", ("x",)),
    ("GetAttrKey", ("y",)), ("FlattenedIndexKey", (0,)), ("FlattenedIndexKey", (2,)),
]


def _entry(m, spec):
    name, args = spec
    return getattr(m, name)(*args)


@pytest.mark.parametrize("spec", KEY_ENTRIES, ids=[f"{n}{a}" for n, a in KEY_ENTRIES])
def test_key_entries_match_jax(spec):
    ours, theirs = _entry(ttu, spec), _entry(jtu, spec)
    assert (repr(ours), str(ours)) == (repr(theirs), str(theirs))
    assert type(ours).__match_args__ == type(theirs).__match_args__
    assert _key_desc(ours) == _key_desc(theirs)
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert ttu.keystr((ours,), simple=True) == jtu.keystr((theirs,), simple=True)
    for other in KEY_ENTRIES:  # equality across kinds and values, as JAX
        assert (ours == _entry(ttu, other)) == (theirs == _entry(jtu, other)), other
        if ours == _entry(ttu, other):
            assert hash(ours) == hash(_entry(ttu, other))
    attr = type(ours).__match_args__[0]
    for m, k in ((ttu, ours), (jtu, theirs)):
        with pytest.raises(AttributeError):
            setattr(k, attr, 5)
    match ours:  # structural pattern matching by the attribute, as JAX's _simple_entrystr
        case ttu.SequenceKey(idx=v) | ttu.DictKey(key=v) | ttu.GetAttrKey(name=v) | \
                ttu.FlattenedIndexKey(key=v):
            assert v == spec[1][0]


@pytest.mark.parametrize("call", [
    lambda m: m.SequenceKey("a"), lambda m: m.FlattenedIndexKey("a"),
    lambda m: m.GetAttrKey(1), lambda m: m.SequenceKey(1.0),
])
def test_key_entry_argument_errors_match_jax(call):
    for m in MODULES:
        with pytest.raises(TypeError):
            call(m)


KEYSTR_PATHS = [
    (), (("SequenceKey", (0,)),), (("DictKey", ("a",)), ("SequenceKey", (1,))),
    (("GetAttrKey", ("w",)), ("DictKey", (2,)), ("FlattenedIndexKey", (4,))),
    (("DictKey", ((1, 2),)), ("GetAttrKey", ("b",))),
]


@pytest.mark.parametrize("path", KEYSTR_PATHS)
@pytest.mark.parametrize("options", [{}, {"simple": True}, {"separator": "/"},
                                     {"simple": True, "separator": "."},
                                     {"simple": False, "separator": " -> "}])
def test_keystr_matches_jax(path, options):
    ours = ttu.keystr(tuple(_entry(ttu, s) for s in path), **options)
    assert ours == jtu.keystr(tuple(_entry(jtu, s) for s in path), **options)


def test_keystr_of_plain_objects_matches_jax():
    for options in ({}, {"simple": True, "separator": "/"}):
        assert ttu.keystr(("a", 1, None), **options) == jtu.keystr(("a", 1, None), **options)


@pytest.mark.parametrize("rule", [
    lambda path, x: len(path) == 1,
    lambda path, x: isinstance(x, tuple),
    lambda path, x: any(getattr(k, "key", None) == "q" for k in path),
    lambda path, x: False,
])
def test_is_leaf_takes_path_matches_jax(rule):
    def run(m):
        seen = []

        def is_leaf(path, x):
            seen.append((m.keystr(path), str(x)))
            return rule(path, x)
        tree = [1, (2, 3), {"q": [4, 5], "r": Point(6, None)}]
        pairs, treedef = m.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path=True)
        mapped = m.tree_map_with_path(lambda p, x: m.keystr(p), tree, is_leaf=is_leaf,
                                      is_leaf_takes_path=True)
        return seen, [(m.keystr(p), str(x)) for p, x in pairs], str(treedef), str(mapped)
    assert run(ttu) == run(jtu)


def test_is_leaf_without_path_matches_jax():
    def run(m):
        tree = [1, (2, 3), {"q": [4, 5]}]
        pairs = m.tree_leaves_with_path(tree, is_leaf=lambda x: isinstance(x, tuple))
        return [(m.keystr(p), str(x)) for p, x in pairs]
    assert run(ttu) == run(jtu)


def test_one_level_and_node_predicates_match_jax():
    for tree in ([1, 2], {"b": 1, "a": 2}, None, Params(w=1, n=2), (3,)):
        for m in MODULES:
            assert m.is_tree_node(type(tree))
        assert [(repr(k), c) for k, c in ttu.flatten_one_level_with_keys(tree)[0]] == \
            [(repr(k), c) for k, c in jtu.flatten_one_level_with_keys(tree)[0]]
        assert list(ttu.flatten_one_level(tree)[0]) == list(jtu.flatten_one_level(tree)[0])
    for m in MODULES:
        assert not m.is_tree_node(int) and m.is_tree_node(Point)
        for fn in (m.flatten_one_level, m.flatten_one_level_with_keys):
            with pytest.raises(ValueError, match="can't tree-flatten type"):
                fn(1)


def test_register_with_keys_errors_match_jax():
    for m in MODULES:
        with pytest.raises(ValueError, match="Duplicate custom PyTreeDef"):
            m.register_pytree_with_keys(Keyed, lambda k: ((), None), lambda a, c: None)
        with pytest.raises(ValueError, match="Duplicate custom PyTreeDef"):
            m.register_static(Box)


def test_register_static_through_jit_matches_jax():
    outs = []
    for m, lib in ((jtu, jax), (ttu, tracejit)):
        static_str = CLASSES[m][2]
        f = lib.jit(lambda x, y, s: x + y if s == "add" else x - y)
        outs.append([np.asarray(f(1.0, 2.0, static_str(op))) for op in ("add", "sub", "add")])
        assert m.tree_leaves(static_str("s")) == []
    np.testing.assert_array_equal(outs[0], outs[1])


def _structures(m, spec):
    return m.tree_structure(spec) if spec is not None else None


TRANSPOSES = {
    "list_of_tuples": ([0, 0], (0, 0), [(1, 2), (3, 4)]),
    "dict_of_lists": ({"x": 0, "y": 0}, [0, 0, 0], {"x": [1, 2, 3], "y": [4, 5, 6]}),
    "inferred_inner": ([0, 0], None, [{"a": 1, "b": 2}, {"a": 3, "b": 4}]),
    "nested": ((0, [0]), {"p": 0, "q": (0,)}, ({"p": 1, "q": (2,)}, [{"p": 3, "q": (4,)}])),
    "namedtuple_inner": ([0, 0, 0], Point(0, 0), [Point(1, 2), Point(3, 4), Point(5, 6)]),
    "leaf_outer": (0, [0, 0], [1, 2]),
    "leaf_inner": ([0, 0], 0, [1, 2]),
    "none_inside": ([0, 0], (0, None), [(1, None), (2, None)]),
    "too_few": ([0, 0], (0, 0), [(1, 2), (3,)]),
    "too_many": ([0, 0], (0, 0), [(1, 2), (3, 4), (5, 6)]),
    "outer_not_prefix": ([0, 0], (0, 0), ((1, 2), (3, 4))),
    "inferred_from_leaf": ([0, 0], None, [1, 2]),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_transpose_matches_jax(name):
    outer, inner, tree = TRANSPOSES[name]

    def run(m):
        try:
            out = TREE_MODULE[m].transpose(_structures(m, outer), _structures(m, inner), tree)
        except (TypeError, ValueError) as e:
            return "error", type(e), str(e) if isinstance(e, TypeError) else ""
        return "ok", str(out), str(m.tree_structure(out))
    assert run(ttu) == run(jtu)


def test_compose_and_treedef_tuple_match_jax():
    pairs = [([0, 0], (0, 0)), ({"a": 0, "b": None}, [0, {"q": 0}]), (0, [0]), ((0,), 0)]
    for outer, inner in pairs:
        ours = ttu.tree_structure(outer).compose(ttu.tree_structure(inner))
        theirs = jtu.tree_structure(outer).compose(jtu.tree_structure(inner))
        assert (str(ours), ours.num_leaves, ours.num_nodes) == \
            (str(theirs), theirs.num_leaves, theirs.num_nodes)
    defs = [[1], {"a": 1}, None, Point(1, 2)]
    ours = ttu.treedef_tuple([ttu.tree_structure(d) for d in defs])
    assert str(ours) == str(jtu.treedef_tuple([jtu.tree_structure(d) for d in defs]))
    assert ours == ttu.tree_structure(tuple(defs))


BROADCASTS = [
    (1, [1, 2, {"a": 3}]), ([1, {"a": None}], [[1, 2], {"a": None}]),
    ({"a": 1, "b": 2}, {"a": (1, 2), "b": [3]}), ([1, 2], [1]), ({"a": 1}, {"b": 1}),
]


@pytest.mark.parametrize("prefix, full", BROADCASTS)
def test_broadcast_and_reduce_associative_match_jax(prefix, full):
    def run(m):
        try:
            return "ok", str(TREE_MODULE[m].broadcast(prefix, full))
        except ValueError as e:
            return "error", str(e)
    assert run(ttu) == run(jtu)
    for m in MODULES:
        assert str(TREE_MODULE[m].reduce_associative(lambda a, b: (a, b), full)) == str(
            jax.tree.reduce_associative(lambda a, b: (a, b), full))
    for m in MODULES:
        with pytest.raises(TypeError, match="Must specify identity"):
            TREE_MODULE[m].reduce_associative(lambda a, b: a, [])
        assert TREE_MODULE[m].reduce_associative(lambda a, b: a, [None], identity=7) == 7


def test_static_field_matches_jax():
    made = {}
    for m in MODULES:
        @dataclasses.dataclass
        class Op:
            x: Any
            op: str = TREE_MODULE[m].static(default="add", metadata={"doc": "d"})
        m.register_dataclass(Op)
        made[m] = Op
        assert dataclasses.fields(Op)[1].metadata == {"static": True, "doc": "d"}
    assert str(ttu.tree_structure(made[ttu](1))) == str(jtu.tree_structure(made[jtu](1))) \
        .replace(made[jtu].__qualname__, made[ttu].__qualname__)
    assert [ttu.keystr(p) for p, _ in ttu.tree_leaves_with_path(made[ttu]([1]))] == \
        [jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(made[jtu]([1]))]


# --- structure errors: JAX's wording and the key path of the first mismatch -----------------

MISMATCHES = {
    "list_vs_tuple": ([1, 2], (1, 2)),
    "list_lengths": ([1, 2], [1, 2, 3]),
    "nested_tuple_lengths": ({"a": [1, (2, 3)]}, {"a": [1, (2,)]}),
    "dict_keys": ({"a": 1}, {"b": 1}),
    "dict_more_keys": ({"a": 1}, {"a": 1, "b": 2}),
    "dict_fewer_keys": ({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 2}}),
    "none_vs_leaf": ({"a": None}, {"a": 1}),
    "subtree_vs_leaf": ([1, [2]], [1, 2]),
    "namedtuple_first_field": (Point([1], 2), Point([1, 2], 2)),
    "namedtuple_vs_tuple": (Point(1, 2), (1, 2)),
    "odict_order": (collections.OrderedDict([("a", 1), ("b", 2)]),
                    collections.OrderedDict([("b", 1), ("a", 2)])),
    "ddict_factory": (collections.defaultdict(int, a=1), collections.defaultdict(list, a=1)),
    "custom_aux": (Box(1, 2, "a"), Box(1, 2, "b")),
    "inside_custom": (Box(1, [2], "a"), Box(1, [2, 3], "a")),
    "dataclass_meta": (Params(w=1, n=5), Params(w=1, n=6)),
    "inside_dataclass": (Params(w=(1,), n=5), Params(w=[1], n=5)),
    "multiline_meta": (Box(1, 2, "x\ny"), Box(1, 2, "x\nz")),
}


@pytest.mark.parametrize("name", sorted(MISMATCHES))
@pytest.mark.parametrize("how", ["tree_map", "tree_map_with_path", "jax.tree.map"])
def test_mismatch_messages_match_jax(name, how):
    a, b = MISMATCHES[name]

    def run(m):
        call = {"tree_map": lambda: m.tree_map(lambda *xs: 0, a, b),
                "tree_map_with_path": lambda: m.tree_map_with_path(lambda *xs: 0, a, b),
                "jax.tree.map": lambda: TREE_MODULE[m].map(lambda *xs: 0, a, b)}[how]
        with pytest.raises(ValueError) as info:
            call()
        return str(info.value)
    assert run(ttu) == run(jtu)


def test_mismatch_in_a_later_namedtuple_field_names_that_field():
    # JAX 0.10.2's error walk names every NamedTuple child `.x` (flatten_one_level_with_keys
    # gives GetAttrKey('x') for each field); the path its own tree_flatten_with_path gives,
    # `.y[1]`-style, is the right one, and what tracejit names.
    a, b = Point(1, [2]), Point(1, [2, 3])
    expected = jtu.keystr(jtu.tree_leaves_with_path(a)[1][0][:1])
    assert expected == ".y"
    with pytest.raises(ValueError, match=r"    tree_map tree\.y\n"):
        ttu.tree_map(lambda *xs: 0, a, b)


@pytest.mark.parametrize("arg", [
    {"w": [1.0, Params(w="bad", n=1)]}, Box(1.0, ["bad"]), Point(1.0, {"k": "bad"}),
    [Keyed(1.0, "bad")],
])
def test_jit_argument_errors_name_the_key_path_as_jax(arg):
    # jit names a non-array leaf by the argument's name and the leaf's key path
    def where(lib):
        with pytest.raises(TypeError) as info:
            lib.jit(lambda params: params)(arg)
        return re.search(r"at path (\S+)\.\n", str(info.value)).group(1)
    assert where(tracejit) == where(jax)


VMAP_SPEC_MISMATCHES = {
    "in_axes_dict_keys": (lambda x, y: x, {"in_axes": (0, {"a": 0})},
                          lambda np_: (np_.ones(2), {"b": np_.ones(2)})),
    "in_axes_two_places": (lambda x, y: x, {"in_axes": ([0, 1], {"a": 0})},
                           lambda np_: ([np_.ones(2)], {"b": np_.ones(2)})),
    "in_axes_with_kwargs": (lambda x, **kw: x, {"in_axes": ({"a": 0},)},
                            lambda np_: ({"b": np_.ones(2)},)),
    "in_axes_subtree_vs_leaf": (lambda x: x, {"in_axes": ((0, 0),)}, lambda np_: (np_.ones(2),)),
    "out_axes_type": (lambda x: x, {"out_axes": (0, [0])}, lambda np_: (np_.ones(2),)),
    "out_axes_length": (lambda x: (x, [x]), {"out_axes": (0, [0, 0])},
                        lambda np_: (np_.ones(2),)),
}


@pytest.mark.parametrize("name", sorted(VMAP_SPEC_MISMATCHES))
def test_vmap_axis_spec_errors_name_key_paths_as_jax(name):
    fn, kw, make_args = VMAP_SPEC_MISMATCHES[name]

    def message(lib):
        with pytest.raises(ValueError) as info:
            lib.vmap(fn, **kw)(*make_args(lib.numpy))
        # leaves are compared through a stand-in type, named after the library that defines it
        return re.sub(r"<class '[\w.]+\.PytreeLeaf'>", "<PytreeLeaf>", str(info.value))
    assert message(tracejit) == message(jax)


class Other(NamedTuple):
    x: Any
    y: Any


class Flex:
    """A custom node whose arity varies with the value."""

    def __init__(self, *children):
        self.children = children

    def __repr__(self):
        return f"Flex{self.children}"


for _m in MODULES:
    _m.register_pytree_node(Flex, lambda f: (f.children, None), lambda aux, c: Flex(*c))

FLATTEN_UP_TO_MISMATCHES = {
    "list_vs_tuple": ([1, 2], (1, 2)), "tuple_vs_list": ((1, 2), [1, 2]),
    "list_arity": ([1, 2], [1, 2, 3]), "tuple_arity": ((1, 2), (1,)),
    "list_vs_leaf": ([1, 2], 5), "nested_list_vs_leaf": ([1, [2]], [1, 2]),
    "dict_keys": ({"a": 1}, {"b": 1}), "dict_more_keys": ({"a": 1}, {"a": 1, "b": 2}),
    "dict_vs_list": ({"a": 1}, [1]), "dict_vs_odict": ({"a": 1}, collections.OrderedDict(a=1)),
    "none_vs_leaf": ({"a": None}, {"a": 1}), "tuple_vs_none": ((1,), None),
    "namedtuple_vs_tuple": (Point(1, 2), (1, 2)), "tuple_vs_namedtuple": ((1, 2), Point(1, 2)),
    "namedtuple_types": (Point(1, 2), Other(1, 2)),
    "inside_namedtuple": (Point(1, [2]), Point(1, [2, 3])),
    "odict_order": (collections.OrderedDict([("a", 1), ("b", 2)]),
                    collections.OrderedDict([("b", 1), ("a", 2)])),
    "odict_vs_dict": (collections.OrderedDict([("a", 1)]), {"a": 1}),
    "ddict_factory": (collections.defaultdict(int, a=1), collections.defaultdict(list, a=1)),
    "custom_aux": (Box(1, 2, "a"), Box(1, 2, "b")), "custom_vs_tuple": (Box(1, 2), (1, 2)),
    "custom_arity": (Flex(1, 2), Flex(1)), "custom_vs_none": (Flex(1), None),
    "dataclass_meta": (Params(w=1, n=5), Params(w=1, n=6)),
    "dataclass_vs_tuple": (Params(w=1, n=5), (1,)), "keyed_vs_tuple": (Keyed(1, 2), (1, 2)),
}


@pytest.mark.parametrize("name", sorted(FLATTEN_UP_TO_MISMATCHES))
def test_flatten_up_to_messages_match_jax(name):
    prefix, full = FLATTEN_UP_TO_MISMATCHES[name]

    def message(m):
        with pytest.raises(ValueError) as info:
            m.tree_structure(prefix).flatten_up_to(full)
        return str(info.value)
    assert message(ttu) == message(jtu)
