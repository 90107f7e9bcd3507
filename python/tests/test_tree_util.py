"""graft.tree_util / graft.tree: flattening in JAX's order, key paths, the registration of custom node types
(classes, dataclasses, static types, Partial), and registered types through grad, jvp, vmap, jit, scan and
checkpoint."""
import collections
import dataclasses

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import tree_util as tu


@tu.register_pytree_node_class
class Linear:
    def __init__(self, w, b, name="linear"):
        self.w, self.b, self.name = w, b, name

    def tree_flatten(self):
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, name=aux)

    def __call__(self, x):
        return x @ self.w + self.b


@dataclasses.dataclass
class State:
    params: object
    step: object
    tag: str = dataclasses.field(default="s", metadata={"static": True})


tu.register_dataclass(State)

Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_static
class Config:
    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Config) and other.k == self.k

    def __hash__(self):
        return hash(self.k)


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


def test_flatten_order_and_round_trip():
    tree = {"b": [1, (2, None)], "a": Point(3, {"z": 4, "y": 5}), "c": Linear(6, 7, "l"), "d": State(8, 9, "t")}
    leaves, d = tu.tree_flatten(tree)
    assert leaves == [3, 5, 4, 1, 2, 6, 7, 8, 9]  # dict keys sorted, registered children in their order
    back = tu.tree_unflatten(d, leaves)
    assert back["a"] == tree["a"] and back["b"] == tree["b"]
    assert back["c"].name == "l" and (back["c"].w, back["c"].b) == (6, 7)
    assert back["d"] == State(8, 9, "t")
    assert d.num_leaves == 9 and d.num_nodes == 17
    assert tu.tree_structure(tree) == d and hash(tu.tree_structure(tree)) == hash(d)
    assert tu.tree_structure(Linear(1, 2, "other")) != tu.tree_structure(Linear(1, 2, "l"))  # aux data counts
    assert repr(tu.tree_structure(Linear(1, 2))) == "CustomNode(Linear['linear'], [*, *])"
    assert tu.tree_leaves(Config(3)) == [] and tu.tree_unflatten(tu.tree_structure(Config(3)), []) == Config(3)
    with pytest.raises(ValueError, match="has 9 leaves, got 2"):
        tu.tree_unflatten(d, [1, 2])


def test_is_leaf_and_treedef_methods():
    tree = [(1, 2), {"a": (3, 4)}]
    assert tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3, 4)]
    d = tu.tree_structure(tree)
    assert [c.num_leaves for c in d.children()] == [2, 2]
    assert tu.treedef_is_leaf(tu.tree_structure(1)) and not tu.treedef_is_leaf(d)
    assert tu.tree_structure([1, 2]).flatten_up_to([(1, 2), {"k": 3}]) == [(1, 2), {"k": 3}]
    assert tu.tree_structure(Linear(1, 2, "q")).node_data() == (Linear, "q")
    assert tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1])]) == tu.tree_structure((1, [2]))
    assert tu.all_leaves([1, 2.0, "x"]) and not tu.all_leaves([[1]])


def test_paths():
    tree = {"a": [1, Point(2, 3)], "s": State(4, 5), "l": Linear(6, 7)}
    pl, _ = tu.tree_flatten_with_path(tree)
    assert [(tu.keystr(p), v) for p, v in pl] == [("['a'][0]", 1), ("['a'][1].x", 2), ("['a'][1].y", 3),
                                                ("['l'][<flat index 0>]", 6), ("['l'][<flat index 1>]", 7),
                                                ("['s'].params", 4), ("['s'].step", 5)]
    doubled = tu.tree_map_with_path(lambda p, v: v * 2 if p[0] == tu.DictKey("a") else v, tree)
    assert doubled["a"] == [2, Point(4, 6)] and doubled["s"] == State(4, 5)
    assert tu.tree_leaves_with_path([7])[0] == ((tu.SequenceKey(0),), 7)


def test_map_reduce_transpose_broadcast():
    assert gf.tree.map(lambda x, y: x + y, {"a": 1, "b": [2]}, {"a": 10, "b": [20]}) == {"a": 11, "b": [22]}
    # the other trees may be deeper below the first one's leaves
    assert tu.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), {"k": 5}]) == [(1, (3, 4)), (2, {"k": 5})]
    with pytest.raises(ValueError, match="differ in structure"):
        tu.tree_map(lambda x, y: x, [1, 2], [1, 2, 3])
    assert tu.tree_map(lambda x: x is None, [None, 1]) == [None, False]  # None is a node without children
    assert gf.tree.reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)}) == 6
    assert gf.tree.reduce(lambda a, b: a + b, [], 10) == 10
    assert gf.tree.all([True, (1, 2)]) and not gf.tree.all({"a": 0})
    outer, inner = tu.tree_structure([0, 0, 0]), tu.tree_structure((0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2), (3, 4), (5, 6)]) == ([1, 3, 5], [2, 4, 6])
    assert gf.tree.broadcast([1, 2], [(0, 0), {"a": 0}]) == [(1, 1), {"a": 2}]


def test_registration_errors_and_partial():
    with pytest.raises(ValueError, match="already a pytree node"):
        tu.register_pytree_node(Linear, lambda x: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="already a pytree node"):
        tu.register_pytree_node(dict, lambda x: ((), None), lambda a, c: None)

    @dataclasses.dataclass
    class Half:
        a: int
        b: int

    with pytest.raises(ValueError, match=r"fields \['b'\]"):
        tu.register_dataclass(Half, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(Linear)

    p = tu.Partial(lambda x, s: x * s, s=f64(3.0))
    assert tu.tree_leaves(p)[0].shape == ()
    out = gf.jit(lambda fn, x: fn(x))(p, f64(2.0))
    assert float(out) == 6.0
    g = gf.grad(lambda fn: fn(f64(2.0)))(p)
    assert isinstance(g, tu.Partial) and float(g.keywords["s"]) == 2.0


def test_registered_types_through_transformations():
    rng = np.random.default_rng(0)
    layer = Linear(f64(rng.normal(size=(3, 2))), f64(rng.normal(size=2)), "dense")
    state = State(layer, f64(0.0), "run")
    x = f64(rng.normal(size=(4, 3)))

    def loss(s, x):
        return gnp.sum(s.params(x) ** 2) * (1 + s.step)

    g = gf.grad(loss)(state, x)
    assert isinstance(g, State) and isinstance(g.params, Linear) and g.tag == "run" and g.params.name == "dense"
    # against the same loss written on plain arrays
    gw, gb = gf.grad(lambda w, b: gnp.sum((x @ w + b) ** 2), argnums=(0, 1))(layer.w, layer.b)
    np.testing.assert_allclose(np.asarray(g.params.w), np.asarray(gw), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g.params.b), np.asarray(gb), rtol=1e-12)
    # jvp with a tangent of the same structure
    t = tu.tree_map(gnp.ones_like, state)
    _, dy = gf.jvp(lambda s: loss(s, x), (state,), (t,))
    want = sum(float(gnp.sum(a * b)) for a, b in zip(tu.tree_leaves(g), tu.tree_leaves(t)))
    assert abs(float(dy) - want) < 1e-9 * abs(want)
    # jit: the structure (with its aux data) is part of the cache key
    jl = gf.jit(loss)
    np.testing.assert_allclose(float(jl(state, x)), float(loss(state, x)), rtol=1e-12)
    renamed = State(Linear(layer.w, layer.b, "other"), f64(0.0), "run")
    np.testing.assert_allclose(float(jl(renamed, x)), float(loss(renamed, x)), rtol=1e-12)
    assert jl._num_traces() == 2
    out = gf.jit(lambda s: s)(state)
    assert isinstance(out, State) and out.params.name == "dense"
    # vmap over a batch of layers, the prefix given as the registered type itself
    layers = Linear(f64(rng.normal(size=(5, 3, 2))), f64(rng.normal(size=(5, 2))), "dense")
    ys = gf.vmap(lambda l, x: l(x), in_axes=(Linear(0, 0, "dense"), None))(layers, x)
    for i in range(5):
        np.testing.assert_allclose(np.asarray(ys[i]), np.asarray(x @ layers.w[i] + layers.b[i]), rtol=1e-12)
    # scan with a registered carry, checkpoint
    def step(carry, xi):
        return State(carry.params, carry.step + gnp.sum(carry.params(xi)), carry.tag), carry.step
    final, steps = gf.lax.scan(step, state, x)
    assert isinstance(final, State) and final.tag == "run"
    np.testing.assert_allclose(float(final.step), float(gnp.sum(layer(x))), rtol=1e-12)
    assert steps.shape == (4,)
    gc = gf.grad(gf.checkpoint(loss))(state, x)
    np.testing.assert_allclose(np.asarray(gc.params.w), np.asarray(g.params.w), rtol=1e-12)
    # named tuples and static nodes as arguments
    pt = gf.grad(lambda p, c: p.x * p.y * c.k)(Point(f64(2.0), f64(3.0)), Config(2))
    assert isinstance(pt, Point) and (float(pt.x), float(pt.y)) == (6.0, 4.0)


def test_one_level_associative_reduce_and_registry():
    import dataclasses
    import graft.tree as gtree
    from graft import tree_util as tu

    tree = {"a": [1, 2], "b": (3, {"c": 4})}
    children, aux = tu.flatten_one_level(tree)
    assert children == [[1, 2], (3, {"c": 4})] and aux == ("a", "b")
    keyed, _ = tu.flatten_one_level_with_keys(tree)
    assert [str(k) for k, _ in keyed] == ["['a']", "['b']"]
    with pytest.raises(ValueError, match="leaf"):
        tu.flatten_one_level(3)
    assert tu.is_tree_node([1]) and tu.is_tree_node(None) and not tu.is_tree_node(1.0)
    assert not tu.is_tree_node([1], is_leaf=lambda x: isinstance(x, list))
    order = []

    def cat(a, b):
        order.append((a, b))
        return a + b

    assert tu.tree_reduce_associative(cat, [["a", "b"], ["c"], "d", "e"]) == "abcde"
    assert len(order) == 4
    assert gtree.reduce_associative(lambda a, b: a * b, (2, [3, 4])) == 24
    with pytest.raises(ValueError):
        tu.tree_reduce_associative(cat, [])
    assert list in tu.default_registry and dict in tu.default_registry and int not in tu.default_registry

    @tu.register_pytree_with_keys_class
    class Pair:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return [(tu.GetAttrKey("x"), self.x), (tu.GetAttrKey("y"), self.y)], None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Pair(1, [2]))[0]]
    assert paths == [".x", ".y[0]"]
    assert tu.tree_leaves(tu.tree_map(lambda v: v * 10, Pair(1, 2))) == [10, 20]

    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        op: str = gtree.static(default="add")

    leaves, d = gtree.flatten(Op(x=5))
    assert leaves == [5] and gtree.unflatten(d, [6]) == Op(x=6, op="add")
