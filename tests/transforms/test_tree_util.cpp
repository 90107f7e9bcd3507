// graft::tree / tree_util on typed pytrees: leaves and paths in flattening order (JAX's keystr
// spelling), map over one and several trees (a structure mismatch is an error naming the tree),
// map_with_path, the reductions, all, flatten / unflatten round trips, and the same inside jit and grad.
#include <graft/graft.h>

#include "testing.h"

namespace tree_nodes {
struct Dense {
  graft::Array w, b;
};
struct Unnamed {  // registered by hand, without `fields`: its paths use the children's positions
  graft::Array a, c;
};
}  // namespace tree_nodes

GRAFT_PYTREE_NODE(tree_nodes::Dense, &tree_nodes::Dense::w, &tree_nodes::Dense::b);
template <>
struct graft::PyTreeNode<tree_nodes::Unnamed> {
  static constexpr auto children = std::make_tuple(&tree_nodes::Unnamed::a, &tree_nodes::Unnamed::c);
};

namespace graft::testing {
namespace {

using tree_nodes::Dense;
using Model = std::map<std::string, std::vector<Dense>>;

Model model(double scale) {
  auto d = [&](double s) {
    return Dense{arange(6, DType::f64).reshape({2, 3}) * s, full({3}, s, DType::f64)};
  };
  return Model{{"enc", {d(scale), d(2 * scale)}}, {"dec", {d(-scale)}}};
}

TEST(TreeUtil, LeavesAndPathsInFlatteningOrder) {
  Model m = model(1.0);
  auto lp = tree::leaves_with_path(m);
  std::vector<std::string> paths;
  for (auto& [p, leaf] : lp) paths.push_back(keystr(p));
  EXPECT_EQ(paths, (std::vector<std::string>{"['dec'][0].w", "['dec'][0].b", "['enc'][0].w", "['enc'][0].b",
                                             "['enc'][1].w", "['enc'][1].b"}));
  std::vector<Array> leaves = tree_flatten(m);
  ASSERT_EQ(lp.size(), leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) EXPECT_TRUE(close(lp[i].second, leaves[i], 0, 0)) << paths[i];
  EXPECT_EQ(tree::leaves(m).size(), 6u);
  // pairs, tuples, arrays and graft::Tree
  std::pair<Array, std::tuple<Array, std::array<Array, 2>>> pt{zeros({1}), {ones({1}), {ones({2}), ones({3})}}};
  std::vector<std::string> pp;
  for (auto& [p, leaf] : tree_leaves_with_path(pt)) pp.push_back(keystr(p));
  EXPECT_EQ(pp, (std::vector<std::string>{"[0]", "[1][0]", "[1][1][0]", "[1][1][1]"}));
  Tree t = Tree::dict({{"b", Tree::list({zeros({1}), ones({1})})}, {"a", ones({2})}});
  std::vector<std::string> tp;
  for (auto& [p, leaf] : tree_leaves_with_path(t)) tp.push_back(keystr(p));
  EXPECT_EQ(tp, (std::vector<std::string>{"['a']", "['b'][0]", "['b'][1]"}));
  // a node registered without member names: positions, as JAX's FlattenedIndexKey
  tree_nodes::Unnamed u{zeros({1}), ones({1})};
  auto up = tree_leaves_with_path(u);
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(keystr(up[1].first), "[<flat index 1>]");
  EXPECT_TRUE(std::holds_alternative<GetAttrKey>(lp[0].first.back()));
  EXPECT_EQ(std::get<GetAttrKey>(lp[0].first.back()).name, "w");
  EXPECT_EQ(std::get<DictKey>(lp[0].first.front()).key, "dec");
  EXPECT_EQ(std::get<SequenceKey>(lp[0].first[1]).idx, 0u);
}

TEST(TreeUtil, MapOverOneAndSeveralTrees) {
  Model p = model(1.0), g = model(0.5);
  Model half = tree::map([](const Array& x) { return x * 0.5; }, p);
  EXPECT_TRUE(close(half.at("enc")[1].w, p.at("enc")[1].w * 0.5, 0, 0));
  Model sgd = tree::map([](const Array& w, const Array& d) { return w - d * 0.1; }, p, g);
  EXPECT_TRUE(close(sgd.at("dec")[0].b, p.at("dec")[0].b - g.at("dec")[0].b * 0.1, 1e-15, 0));
  Model three = tree_map([](const Array& a, const Array& b, const Array& c) { return a + b + c; }, p, g, half);
  EXPECT_TRUE(close(three.at("enc")[0].w, p.at("enc")[0].w * 2.0, 1e-15, 0));
  // another structure: an error naming the tree, never a silent zip
  Model other = p;
  other.at("enc").pop_back();
  EXPECT_THROW(tree::map([](const Array& a, const Array& b) { return a + b; }, p, other), ValueError);
  // Tree keeps its own overloads
  Tree t = Tree::dict({{"w", ones({2})}});
  EXPECT_TRUE(close(tree::map([](const Array& x) { return x + 1.0; }, t)["w"].array(), full({2}, 2.0), 0, 0));
  // with paths: decay the weights, not the biases
  Model decayed = tree::map_with_path(
      [](const KeyPath& path, const Array& x) { return std::get<GetAttrKey>(path.back()).name == "w" ? x * 0.9 : x; }, p);
  EXPECT_TRUE(close(decayed.at("enc")[0].w, p.at("enc")[0].w * 0.9, 1e-15, 0));
  EXPECT_TRUE(close(decayed.at("enc")[0].b, p.at("enc")[0].b, 0, 0));
}

TEST(TreeUtil, ReductionsAllAndStructure) {
  Model p = model(1.0);
  // the global squared norm: every leaf's sum of squares
  double want = 0;
  for (const Array& x : tree_flatten(p)) want += sum(square(x)).item<double>();
  Array left = tree::reduce([](Array acc, const Array& x) { return acc + sum(square(x)); }, p, Array(0.0));
  EXPECT_NEAR(left.item<double>(), want, 1e-12);
  Array bal = tree::reduce_associative([](const Array& a, const Array& b) { return a + b; },
                                       tree::map([](const Array& x) { return sum(square(x)); }, p));
  EXPECT_NEAR(bal.item<double>(), want, 1e-12);
  EXPECT_THROW(tree::reduce_associative([](const Array& a, const Array& b) { return a + b; }, std::vector<Array>{}),
               ValueError);
  EXPECT_TRUE(tree::all(tree::map([](const Array& x) { return abs(x) >= 0.0; }, p)));
  EXPECT_FALSE(tree::all(tree::map([](const Array& x) { return x > 0.0; }, p)));  // the zeros of arange
  EXPECT_TRUE(tree::all(std::vector<Array>{}));
  // structure, flatten, unflatten
  auto [leaves, def] = tree::flatten(p);
  EXPECT_EQ(tree::structure(p).repr, def.repr);
  EXPECT_NE(tree::structure(model(2.0)).repr, tree::structure(std::vector<Dense>{}).repr);
  for (Array& l : leaves) l = l + 1.0;
  Model back = tree::unflatten<Model>(def, leaves);
  EXPECT_TRUE(close(back.at("dec")[0].w, p.at("dec")[0].w + 1.0, 0, 0));
  EXPECT_TRUE(treedef_is_leaf(tree_structure(zeros({2}))));
  EXPECT_FALSE(treedef_is_leaf(def));
  EXPECT_TRUE(is_tree_node(p));
  EXPECT_FALSE(is_tree_node(zeros({1})));
  EXPECT_FALSE(is_tree_node(3));
}

// Inside transformations the functions see tracers and build the same structures: an SGD step written
// with tree::map under jit equals the eager one; grad of a loss summed with tree::reduce.
TEST(TreeUtil, UnderJitAndGrad) {
  Model p = model(1.0);
  auto loss = [](const Model& m) {
    return tree::reduce([](Array acc, const Array& x) { return acc + sum(square(tanh(x))); }, m, Array(0.0));
  };
  auto step = [&](const Model& m) {
    Model g = grad(loss)(m);
    return tree::map([](const Array& w, const Array& d) { return w - d * 0.1; }, m, g);
  };
  Model eager = step(p), jitted = jit(step)(p);
  for (auto& [path, leaf] : tree::leaves_with_path(eager)) {
    Array other;
    for (auto& [q, l] : tree::leaves_with_path(jitted))
      if (keystr(q) == keystr(path)) other = l;
    ASSERT_TRUE(other.valid()) << keystr(path);
    EXPECT_TRUE(close(other, leaf, 1e-12, 1e-12)) << keystr(path);
  }
  // the gradient of sum(square(tanh(x))) leaf by leaf
  Model g = grad(loss)(p);
  Array x = p.at("enc")[1].w;
  EXPECT_TRUE(close(g.at("enc")[1].w, 2.0 * tanh(x) * (1.0 - square(tanh(x))), 1e-12, 1e-12));
}

}  // namespace
}  // namespace graft::testing
