"""tracejit.tree_util / tracejit.tree against jax.tree_util / jax.tree: leaf order, treedef
equality and printing, registration of custom nodes, errors, and pytrees through jit."""
import collections
import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jjnp
import jax.tree_util as jtu
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
import tracejit.tree_util as ttu

MODULES = [jtu, ttu]


# --- node types, each registered with both libraries (their registries are separate) -------

class Point(NamedTuple):
    x: Any
    y: Any


class Other(NamedTuple):
    x: Any
    y: Any


class Box:
    """Registered with register_pytree_node; `meta` is auxiliary data."""

    def __init__(self, a, b, meta="m"):
        self.a, self.b, self.meta = a, b, meta

    def __eq__(self, other):
        return type(other) is Box and (self.a, self.b, self.meta) == (other.a, other.b,
                                                                         other.meta)

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, {self.meta!r})"


for _m in MODULES:
    _m.register_pytree_node(Box, lambda b: ((b.a, b.b), b.meta),
                            lambda meta, children: Box(*children, meta))


@jtu.register_pytree_node_class
@ttu.register_pytree_node_class
class Pair:
    def __init__(self, first, second, tag):
        self.first, self.second, self.tag = first, second, tag

    def tree_flatten(self):
        return (self.first, self.second), self.tag

    @classmethod
    def tree_unflatten(cls, tag, children):
        return cls(*children, tag)

    def __eq__(self, other):
        return type(other) is Pair and (self.first, self.second, self.tag) == (
            other.first, other.second, other.tag)


@dataclasses.dataclass
class Params:
    w: Any
    n: int = dataclasses.field(metadata=dict(static=True))
    b: Any = None


@dataclasses.dataclass
class Explicit:
    w: Any
    n: int


for _m in MODULES:
    _m.register_dataclass(Params)
    _m.register_dataclass(Explicit, data_fields=["w"], meta_fields=["n"])


def _odict(*items):
    return collections.OrderedDict(items)


def _ddict(factory, **kw):
    return collections.defaultdict(factory, kw)


TREES = [
    1, None, (), [], {}, (1,), [1, 2], (1, [2, (3, None)]), [None, [None]],
    {"b": 1, "a": (2, 3)}, {"z": {"c": 1, "b": 2}, "x": [3, {"q": 4, "p": 5}]},
    {1: "x", 3: "y", 2: "z"}, {"a": None, "b": ()},
    Point(1, (2, 3)), Point(None, Point(1, 2)), Other(1, (2, 3)),
    _odict(("b", 1), ("a", 2)), _odict(("a", 2), ("b", 1)),
    _ddict(list, z=1, y=[2, 3]), _ddict(int, z=1, y=[2, 3]),
    Box([1, 2], 3, "q"), Box(1, {"k": 2}, "r"), Pair(1, {"a": 2}, "t"), Pair((1, 2), None, 7),
    Params(w=[1, 2], n=5, b=(3,)), Params(w=1, n=6), Explicit(w={"u": 1}, n=2),
    np.arange(3), "a string leaf",
]
TREE_IDS = [f"{i}-{type(t).__name__}" for i, t in enumerate(TREES)]


def _leaves_equal(a, b) -> bool:
    return len(a) == len(b) and all(
        (x is y) or (type(x) is type(y) and np.array_equal(np.asarray(x), np.asarray(y)))
        for x, y in zip(a, b))


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_flatten_matches_jax(tree):
    jl, jd = jtu.tree_flatten(tree)
    tl, td = ttu.tree_flatten(tree)
    assert _leaves_equal(tl, jl)
    assert str(td) == str(jd)
    assert (td.num_leaves, td.num_nodes) == (jd.num_leaves, jd.num_nodes)
    assert _leaves_equal(ttu.tree_leaves(tree), jtu.tree_leaves(tree))
    assert str(ttu.tree_structure(tree)) == str(jtu.tree_structure(tree))
    back = ttu.tree_unflatten(td, tl)
    assert type(back) is type(tree)
    assert str(ttu.tree_structure(back)) == str(td)
    assert td.unflatten(tl) is not None or tree is None


def test_treedef_equality_and_hash_match_jax():
    twins = [  # same structure, different leaves: their treedefs must compare equal
        [1, (2, 3)], [4, (5, 6)], {"a": 1, "b": 2}, {"b": 7, "a": 8}, Point(1, 2), Point(3, 4),
        Box(1, 2, "q"), Box(3, 4, "q"), Pair(1, 2, "t"), Pair(5, 6, "t"),
        Params(w=1, n=5), Params(w=2, n=5), _ddict(int, a=1), _ddict(int, a=2)]
    others = [Other(1, 2), (1, 2), Box(1, 2, "other"), Pair(1, 2, "u"), Params(w=1, n=6),
              _ddict(list, a=1), _odict(("a", 1), ("b", 2)), _odict(("b", 2), ("a", 1)), None,
              (), 1]
    trees = twins + others + TREES
    jdefs = [jtu.tree_structure(t) for t in trees]
    tdefs = [ttu.tree_structure(t) for t in trees]
    for i in range(len(trees)):
        assert tdefs[i] == ttu.tree_structure(trees[i])  # stable across calls
        assert hash(tdefs[i]) == hash(ttu.tree_structure(trees[i]))
        for j in range(len(trees)):
            assert (tdefs[i] == tdefs[j]) == (jdefs[i] == jdefs[j]), (trees[i], trees[j])
            if tdefs[i] == tdefs[j]:
                assert hash(tdefs[i]) == hash(tdefs[j])


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # the class is what must agree with JAX
        return "error", type(e)


def _same_outcome(fn_of_module):
    ours, theirs = _outcome(lambda: fn_of_module(ttu)), _outcome(lambda: fn_of_module(jtu))
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[1] is theirs[1], (ours, theirs)
    return ours, theirs


def _add(*xs):
    return sum(xs)


@pytest.mark.parametrize("trees", [
    ([1, (2, 3)], [10, (20, 30)]),
    ([1, (2, 3)], [10, (20, 30)], [100, (200, 300)]),
    ({"b": 1, "a": 2}, {"a": 10, "b": 20}),
    (Point(1, 2), Point(10, 20)),
    (Box(1, 2, "q"), Box(10, 20, "q")),
    (Pair(1, [2], "t"), Pair(10, [20], "t")),
    (Params(w=1, n=5, b=2), Params(w=10, n=5, b=20)),
    (_odict(("b", 1), ("a", 2)), _odict(("b", 10), ("a", 20))),
    (_ddict(int, a=1, b=2), _ddict(int, b=20, a=10)),
    ([None, 1], [None, 10]),
    ([1, 2], [(1, 2), {"a": 3}]),  # a prefix tree: whole subtrees of the others are leaves
])
def test_tree_map_several_trees(trees):
    def pair_up(*xs):
        return tuple(str(x) for x in xs)
    ours, theirs = ttu.tree_map(pair_up, *trees), jtu.tree_map(pair_up, *trees)
    assert ttu.tree_leaves(ours, is_leaf=lambda x: isinstance(x, tuple)) == \
        jtu.tree_leaves(theirs, is_leaf=lambda x: isinstance(x, tuple))
    assert type(ours) is type(trees[0])
    def first(*xs):
        return xs[0]
    assert str(ttu.tree_structure(ttu.tree_map(first, *trees))) == \
        str(jtu.tree_structure(jtu.tree_map(first, *trees)))


MISMATCHES = {
    "list_vs_tuple": ([1, 2], (1, 2)),
    "lengths": ([1, 2], [1, 2, 3]),
    "nested_lengths": ({"a": [1, (2, 3)]}, {"a": [1, (2,)]}),
    "dict_keys": ({"a": 1}, {"b": 1}),
    "dict_more_keys": ({"a": 1}, {"a": 1, "b": 2}),
    "none_vs_leaf": ({"a": None}, {"a": 1}),
    "subtree_vs_leaf": ([(1, 2), 3], [1, 2]),
    "namedtuple_vs_tuple": (Point(1, 2), (1, 2)),
    "namedtuple_types": (Point(1, 2), Other(1, 2)),
    "odict_order": (_odict(("a", 1), ("b", 2)), _odict(("b", 1), ("a", 2))),
    "odict_vs_dict": (_odict(("a", 1)), {"a": 1}),
    "dict_vs_ddict": ({"a": 1}, _ddict(int, a=1)),
    "ddict_factory": (_ddict(int, a=1), _ddict(list, a=1)),
    "custom_aux": (Box(1, 2, "a"), Box(1, 2, "b")),
    "class_aux": (Pair(1, 2, "a"), Pair(1, 2, "b")),
    "dataclass_meta": (Explicit(1, 5), Explicit(1, 6)),
    "custom_vs_tuple": (Box(1, 2), (1, 2)),
}


@pytest.mark.parametrize("name", sorted(MISMATCHES))
def test_tree_map_mismatch_errors_match_jax(name):
    a, b = MISMATCHES[name]
    ours, theirs = _same_outcome(lambda m: m.tree_map(_add, a, b))
    assert ours == ("error", ValueError)
    with pytest.raises(ValueError, match="pytree structure error"):
        ttu.tree_map(_add, a, b)
    _same_outcome(lambda m: m.tree_structure(a).flatten_up_to(b))


def test_mismatch_message_names_the_key_path():
    with pytest.raises(ValueError, match=r"tree\['a'\]\[1\]"):
        ttu.tree_map(_add, {"a": [1, (2, 3)]}, {"a": [1, (2,)]})
    with pytest.raises(ValueError, match=r"tree\.y\b"):
        ttu.tree_map(_add, Point(1, [2]), Point(1, [2, 3]))
    with pytest.raises(ValueError, match=r"different types"):
        ttu.tree_map(_add, {"a": None}, {"a": 1})


@pytest.mark.parametrize("is_leaf", [
    lambda x: isinstance(x, tuple), lambda x: x is None, lambda x: isinstance(x, Point),
    lambda x: isinstance(x, dict) and "q" in x, lambda x: False])
def test_is_leaf(is_leaf):
    tree = [(1, 2), None, Point(3, (4, None)), {"q": 5, "r": [6]}, {"s": None}]
    for fn in ("tree_leaves", "tree_structure", "tree_flatten"):
        ours = getattr(ttu, fn)(tree, is_leaf=is_leaf)
        theirs = getattr(jtu, fn)(tree, is_leaf=is_leaf)
        assert str(ours) == str(theirs)

    def tag(*xs):
        return ("leaf", str(xs))
    assert str(ttu.tree_map(tag, tree, is_leaf=is_leaf)) == \
        str(jtu.tree_map(tag, tree, is_leaf=is_leaf))
    other = ttu.tree_map(lambda x: 0, tree, is_leaf=is_leaf)
    assert str(ttu.tree_map(tag, tree, other, is_leaf=is_leaf)) == \
        str(jtu.tree_map(tag, tree, jtu.tree_map(lambda x: 0, tree, is_leaf=is_leaf),
                         is_leaf=is_leaf))


def test_tree_map_none_is_a_node_without_leaves():
    def f(x):
        return ("seen", x)
    tree = {"a": None, "b": [None, 1]}
    assert ttu.tree_map(f, tree) == jtu.tree_map(f, tree)
    assert ttu.tree_map(lambda x: x is None, tree, is_leaf=lambda x: x is None) == \
        jtu.tree_map(lambda x: x is None, tree, is_leaf=lambda x: x is None)


@pytest.mark.parametrize("call", [
    lambda m: m.tree_unflatten(m.tree_structure([1, 2]), [1]),
    lambda m: m.tree_unflatten(m.tree_structure([1, 2]), [1, 2, 3]),
    lambda m: m.tree_unflatten(m.tree_structure({"a": 1, "b": (2,)}), iter([5, 6])),
    lambda m: m.tree_flatten({1: 1, "a": 2}),
    lambda m: m.tree_structure({"b": 1, "a": 2}).unflatten([3, 4]),
    lambda m: m.tree_structure([1, (2, 3)]).flatten_up_to([[1], ({"a": 2}, 3)]),
    lambda m: m.tree_map(1, [1]),
    lambda m: m.tree_leaves({1: 2, "a": 3}),  # (keys that do not sort: the walk of leaves)
    lambda m: m.tree_leaves([{1: 2, "a": 3}], is_leaf=lambda x: isinstance(x, dict)),
    lambda m: m.tree_map(_add, [1], [1], [1, 2]),
    lambda m: m.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None),
    lambda m: m.register_pytree_node(tuple, lambda b: ((), None), lambda a, c: None),
    lambda m: m.register_dataclass(type("NotADataclass", (), {})),
    lambda m: m.register_dataclass(Explicit, data_fields=["w"]),
    lambda m: m.register_dataclass(dataclasses.make_dataclass("Missing", ["a", "b"]),
                                   data_fields=["a"], meta_fields=[]),
    lambda m: m.register_dataclass(dataclasses.make_dataclass("Extra", ["a"]),
                                   data_fields=["a", "zz"], meta_fields=[]),
    lambda m: m.register_dataclass(dataclasses.make_dataclass("Overlap", ["a"]),
                                   data_fields=["a"], meta_fields=["a"]),
    lambda m: m.register_dataclass(dataclasses.make_dataclass(
        "NoInit", [("a", int), ("b", int, dataclasses.field(init=False, default=3))])),
])
def test_errors_and_results_match_jax(call):
    ours, theirs = _same_outcome(call)
    if ours[0] == "ok" and not isinstance(ours[1], type):
        assert str(ours[1]) == str(theirs[1])


def test_register_dataclass_drop_fields_and_roundtrip():
    @dataclasses.dataclass
    class WithCache:
        a: Any
        b: Any
        cache: Any = None

    for m in MODULES:
        out = m.register_dataclass(WithCache, data_fields=["a"], meta_fields=["b"],
                                   drop_fields=["cache"])
        assert out is WithCache
    value = WithCache([1, 2], "static", cache="dropped")
    leaves, treedef = ttu.tree_flatten(value)
    assert leaves == jtu.tree_leaves(value) == [1, 2]
    back = ttu.tree_unflatten(treedef, [3, 4])
    assert (back.a, back.b, back.cache) == ([3, 4], "static", None)
    assert str(treedef) == str(jtu.tree_structure(value))


def test_treedef_helpers():
    for tree in [[1, (2, None)], {"a": 1, "b": {"c": 2}}, Point(1, [2, 3]), Box(1, (2,)), None,
                 (), 7, [()]]:
        td, jd = ttu.tree_structure(tree), jtu.tree_structure(tree)
        assert ttu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jd)
        assert [str(c) for c in ttu.treedef_children(td)] == \
            [str(c) for c in jtu.treedef_children(jd)]
    for items in ([1, 2], [1, (2,)], [None], [], [np.arange(2), 3.0], [()]):
        assert ttu.all_leaves(items) == jtu.all_leaves(items)
    assert ttu.all_leaves([None, 1], is_leaf=lambda x: x is None) == \
        jtu.all_leaves([None, 1], is_leaf=lambda x: x is None)


def test_reduce_and_all():
    tree = [1, (2, {"a": 3}), Point(4, 5)]
    assert ttu.tree_reduce(lambda a, b: a * 10 + b, tree) == \
        jtu.tree_reduce(lambda a, b: a * 10 + b, tree)
    assert ttu.tree_reduce(lambda a, b: a + b, [], 5) == jtu.tree_reduce(lambda a, b: a + b, [], 5)
    _same_outcome(lambda m: m.tree_reduce(lambda a, b: a + b, []))
    for t in ([1, (True, 0)], [], [1, None], {"a": [1, 2]}, [0]):
        assert ttu.tree_all(t) == jtu.tree_all(t)
    assert ttu.tree_reduce(lambda a, b: a + b, [(1, 2), (3,)], is_leaf=lambda x: isinstance(
        x, tuple)) == jtu.tree_reduce(lambda a, b: a + b, [(1, 2), (3,)],
                                      is_leaf=lambda x: isinstance(x, tuple))


def test_short_names_in_tracejit_tree():
    tree = {"b": [1, 2], "a": Point(3, None)}
    assert tracejit.tree.leaves(tree) == jax.tree.leaves(tree)
    assert str(tracejit.tree.structure(tree)) == str(jax.tree.structure(tree))
    leaves, td = tracejit.tree.flatten(tree)
    jleaves, jd = jax.tree.flatten(tree)
    assert leaves == jleaves and str(td) == str(jd)
    assert tracejit.tree.unflatten(td, [5, 6, 7]) == jax.tree.unflatten(jd, [5, 6, 7])
    assert tracejit.tree.map(lambda x, y: x + y, tree, tree) == \
        jax.tree.map(lambda x, y: x + y, tree, tree)
    assert tracejit.tree.reduce(lambda a, b: a + b, tree) == jax.tree.reduce(
        lambda a, b: a + b, tree)
    assert tracejit.tree.all(tree) == jax.tree.all(tree)
    with pytest.raises(ValueError):
        tracejit.tree.map(lambda x, y: x, tree, {"b": [1], "a": Point(3, None)})


# --- Partial -------------------------------------------------------------------------------

def _f3(a, b, c=0):
    return (a, b, c)


def test_partial_is_a_pytree_like_jax():
    for m in MODULES:
        p = m.Partial(_f3, 1, c=3)
        assert isinstance(p, functools.partial)
        assert m.tree_leaves(p) == [1, 3]
        scaled = m.tree_map(lambda x: x * 10, p)
        assert type(scaled) is m.Partial and scaled(2) == (10, 2, 30)
        # a partial inside a Partial is opaque: its arguments are not leaves
        nested = m.Partial(m.Partial(_f3, 1), 2)
        assert nested.func.func is _f3 and nested.func.args == (1,) and nested(5) == (1, 2, 5)
        assert m.tree_leaves(nested) == [2]
        assert m.tree_map(lambda x: x * 10, nested)(5) == (1, 20, 5)
        inner = m.Partial(_f3, 1)  # shims compare by the wrapped partial, itself by identity
        assert m.tree_structure(m.Partial(inner, 2)) == m.tree_structure(m.Partial(inner, 3))
        assert m.tree_structure(nested) != m.tree_structure(m.Partial(m.Partial(_f3, 1), 2))
        assert m.tree_leaves(m.Partial(functools.partial(_f3, 1), 2)) == [2]
        assert m.tree_structure(m.Partial(_f3, 1)) == m.tree_structure(m.Partial(_f3, 2))
        assert m.tree_structure(m.Partial(_f3, 1)) != m.tree_structure(m.Partial(_add, 1))
        assert m.tree_structure(m.Partial(_f3)).num_leaves == 0


def test_partial_through_jit_matches_jax():
    def apply(p, x):
        return p(x)

    for m, jit, np_ in ((ttu, tracejit.jit, tnp), (jtu, jax.jit, jjnp)):
        p = m.Partial(lambda s, x: s * x, np_.asarray(3.0))
        out = jit(apply)(p, np_.asarray([1.0, 2.0]))
        np.testing.assert_array_equal(np.asarray(out), [3.0, 6.0])


# --- pytrees as jit arguments and results ----------------------------------------------------

def _model(params, batch):
    """Exercises dicts, NamedTuples, custom nodes, dataclasses and None leaves in and out."""
    h = params["w"] * batch.x + params["b"]
    return {"out": Point(h, batch.y * 2.0), "none": None,
            "box": Box(h.sum(), [batch.y], "tag"), "pair": Pair(h, None, 3),
            "params": Params(w=params["w"], n=4, b=None)}


def _inputs(np_):
    params = {"w": np_.asarray([1.0, 2.0, 3.0]), "b": np_.asarray(0.5), "unused": None}
    batch = Point(np_.asarray([4.0, 5.0, 6.0]), np_.asarray(7.0))
    return params, batch


def _assert_trees_close(ours, theirs):
    lo, to = ttu.tree_flatten(ours)
    lt, tt = jtu.tree_flatten(theirs)
    assert str(to) == str(tt)
    for a, b in zip(lo, lt):
        assert a.dtype == b.dtype and a.shape == b.shape and a.weak_type == b.weak_type
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_pytrees_through_jit_match_eager_and_jax():
    eager = _model(*_inputs(tnp))
    jitted = tracejit.jit(_model)(*_inputs(tnp))
    theirs = jax.jit(_model)(*_inputs(jjnp))
    _assert_trees_close(jitted, theirs)
    _assert_trees_close(eager, theirs)
    assert jitted["none"] is None and jitted["box"].meta == "tag" and jitted["pair"].tag == 3


@pytest.mark.parametrize("arg", [
    {"a": 1.0, "b": [2.0, None]}, Point(1.0, 2.0), Box(1.0, 2.0, "q"), Pair(1.0, (2.0,), 0),
    Params(w=1.0, n=3, b=2.0), Explicit(w={"u": 1.0}, n=2), _odict(("z", 1.0), ("a", 2.0)),
    _ddict(float, k=1.0), (None, 1.0), [],
])
def test_jit_identity_roundtrips_pytrees(arg):
    def double(t):
        return ttu.tree_map(lambda x: x * 2, t)

    def jdouble(t):
        return jtu.tree_map(lambda x: x * 2, t)
    ours = tracejit.jit(double)(arg)
    theirs = jax.jit(jdouble)(arg)
    assert type(ours) is type(theirs) is type(arg)
    _assert_trees_close(ours, theirs)
    _assert_trees_close(double(ttu.tree_map(tnp.asarray, arg)), theirs)


def test_jit_retraces_on_structure_changes_like_jax():
    calls = [
        {"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}, {"b": 4.0, "a": 3.0}, {"a": 1.0},
        Point(1.0, 2.0), Point(3.0, 4.0), Other(1.0, 2.0), (1.0, 2.0),
        Box(1.0, 2.0, "q"), Box(3.0, 4.0, "q"), Box(1.0, 2.0, "r"), [1.0, None], [1.0, None],
        Params(w=1.0, n=1), Params(w=2.0, n=1), Params(w=1.0, n=2),
    ]
    counts = {}
    for name, jit, m in (("ours", tracejit.jit, ttu), ("jax", jax.jit, jtu)):
        traces = []

        def f(t, m=m, traces=traces):
            traces.append(1)
            return m.tree_leaves(t)
        jf = jit(f)
        for c in calls:
            jf(c)
        counts[name] = len(traces)
    assert counts["ours"] == counts["jax"]
