// jax.tree / jax.tree_util for C++'s typed pytrees: what the transformations flatten (graft/transforms/
// pytree.h: Array, graft::Tree, std::vector, std::array, std::map<std::string, T>, std::pair,
// std::tuple and structs registered with GRAFT_PYTREE_NODE), as functions a program calls itself.
//
//   struct Params { Array w, b; };
//   GRAFT_PYTREE_NODE(Params, &Params::w, &Params::b);
//   std::map<std::string, Params> p = ...;
//   auto q = graft::tree::map([](const Array& x) { return x * 0.5; }, p);        // same type, halved
//   auto sgd = graft::tree::map([](const Array& w, const Array& g) { return w - 0.1 * g; }, p, grads);
//   Array n = graft::tree::reduce([](Array a, const Array& x) { return a + sum(square(x)); }, p, Array(0.0));
//   for (auto& [path, leaf] : graft::tree::leaves_with_path(p))
//     std::cout << graft::keystr(path) << "\n";                                  // ['enc'].w ...
//
// Paths follow JAX's key entries: a map's key is a DictKey (printed ['k']), a position in a vector, array,
// pair or tuple a SequenceKey ([0]), a registered struct's member a GetAttrKey (.w) — named by the
// member pointers GRAFT_PYTREE_NODE was given, or by a `fields` string in a hand-written PyTreeNode
// ("&T::a, &T::b"); without one, a FlattenedIndexKey per child — and a graft::Tree's entries as its
// dicts' keys and lists' positions. Leaves come in flattening order (map keys sorted), the order of
// tree_flatten, jit and grad.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/error.h"
#include "graft/transforms/pytree.h"

namespace graft {

/// A map's (or a graft::Tree dict's) key: printed ['key'].
struct DictKey {
  std::string key;
};
/// A position in a sequence (vector, array, pair, tuple, graft::Tree list): printed [i].
struct SequenceKey {
  size_t idx = 0;
};
/// A registered struct's member: printed .name.
struct GetAttrKey {
  std::string name;
};
/// A registered struct's child without a name (its position among the children): printed [<flat index i>].
struct FlattenedIndexKey {
  size_t key = 0;
};
/// One step of a path into a pytree.
using KeyEntry = std::variant<DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey>;
/// The steps from a pytree's root to one of its leaves.
using KeyPath = std::vector<KeyEntry>;
/// JAX's name for a tree's structure: what tree_flatten gives and tree_unflatten reads.
using PyTreeDef = TreeDef;

/// A path as JAX's keystr prints it: "['enc'].w[0]".
std::string keystr(const KeyPath& path);

namespace detail {
template <class T, class = void>
struct node_has_fields : std::false_type {};
template <class T>
struct node_has_fields<T, std::void_t<decltype(PyTreeNode<T>::fields)>> : std::true_type {};

/// The member names in a GRAFT_PYTREE_NODE argument list ("&Linear::w, &Linear::b" -> w, b).
std::vector<std::string> field_names(std::string_view fields, size_t expected);

template <class T>
void collect_paths(const T& x, KeyPath& prefix, std::vector<KeyPath>& out) {
  if constexpr (std::is_same_v<T, Array>) {
    out.push_back(prefix);
  } else if constexpr (std::is_same_v<T, Tree>) {
    if (x.is_leaf()) {
      out.push_back(prefix);
    } else if (x.is_list()) {
      for (size_t i = 0; i < x.size(); ++i) {
        prefix.emplace_back(std::in_place_type<SequenceKey>, i);
        collect_paths(x[i], prefix, out);
        prefix.pop_back();
      }
    } else if (x.is_dict()) {
      for (auto& [k, v] : x.dict()) {
        prefix.emplace_back(std::in_place_type<DictKey>, k);
        collect_paths(v, prefix, out);
        prefix.pop_back();
      }
    }
  } else if constexpr (PyTree<T>::is_static) {
    // no leaves
  } else if constexpr (is_node<T>::value) {
    constexpr size_t n = std::tuple_size_v<std::decay_t<decltype(PyTreeNode<T>::children)>>;
    std::vector<std::string> names;
    if constexpr (node_has_fields<T>::value) names = field_names(PyTreeNode<T>::fields, n);
    size_t i = 0;
    std::apply(
        [&](auto... m) {
          (((names.empty() ? void(prefix.emplace_back(std::in_place_type<FlattenedIndexKey>, i))
                            : void(prefix.emplace_back(std::in_place_type<GetAttrKey>, names[i]))),
            collect_paths(x.*m, prefix, out), prefix.pop_back(), ++i),
           ...);
        },
        PyTreeNode<T>::children);
  } else if constexpr (requires { typename T::key_type; }) {  // std::map<std::string, V>
    for (auto& [k, v] : x) {
      prefix.emplace_back(std::in_place_type<DictKey>, k);
      collect_paths(v, prefix, out);
      prefix.pop_back();
    }
  } else if constexpr (requires { std::tuple_size<T>::value; } && !requires(const T& y) { y.begin(); }) {  // pair, tuple
    size_t i = 0;
    std::apply([&](const auto&... e) { ((prefix.emplace_back(std::in_place_type<SequenceKey>, i++), collect_paths(e, prefix, out), prefix.pop_back()), ...); },
               x);
  } else {  // std::vector, std::array
    size_t i = 0;
    for (const auto& e : x) {
      prefix.emplace_back(std::in_place_type<SequenceKey>, i++);
      collect_paths(e, prefix, out);
      prefix.pop_back();
    }
  }
}
}  // namespace detail

/// The leaves of a pytree, in flattening order.
template <class T>
std::vector<Array> tree_leaves(const T& x) {
  return tree_flatten(x);
}
/// A pytree's structure (compare structures by their `repr`).
template <class T>
TreeDef tree_structure(const T& x) {
  TreeDef d;
  tree_flatten(x, &d);
  return d;
}
/// Whether a structure is a single leaf (an Array).
inline bool treedef_is_leaf(const TreeDef& d) { return d.repr == "*"; }

/// Each leaf with its path, in flattening order.
template <class T>
std::vector<std::pair<KeyPath, Array>> tree_leaves_with_path(const T& x) {
  std::vector<KeyPath> paths;
  KeyPath prefix;
  detail::collect_paths(x, prefix, paths);
  std::vector<Array> leaves = tree_flatten(x);
  if (paths.size() != leaves.size())
    fail<ValueError>("tree_leaves_with_path: ", paths.size(), " paths for ", leaves.size(), " leaves");
  std::vector<std::pair<KeyPath, Array>> r;
  for (size_t i = 0; i < leaves.size(); ++i) r.emplace_back(std::move(paths[i]), leaves[i]);
  return r;
}
/// tree_leaves_with_path and the structure.
template <class T>
std::pair<std::vector<std::pair<KeyPath, Array>>, TreeDef> tree_flatten_with_path(const T& x) {
  return {tree_leaves_with_path(x), tree_structure(x)};
}

namespace detail {
template <class T, class... Rest>
std::vector<std::vector<Array>> leaves_alike(const char* what, const T& x, const Rest&... rest) {
  (void)what;  // (unused with one tree)
  TreeDef d;
  std::vector<std::vector<Array>> all{tree_flatten(x, &d)};
  (
      [&] {
        TreeDef e;
        all.push_back(tree_flatten(rest, &e));
        if (e.repr != d.repr)
          fail<ValueError>(what, ": tree ", all.size() - 1, " has another structure than tree 0 (", e.repr, " vs ", d.repr, ")");
      }(),
      ...);
  return all;
}
}  // namespace detail

/// f applied leaf by leaf: f(leaf) on one tree, f(leaf, leaf of the second, ...) on several of the same
/// structure (an error names the tree that differs). The result has x's type and structure.
template <class F, class T, class... Rest>
  requires(!std::is_same_v<T, Tree> || sizeof...(Rest) > 1)
T tree_map(F&& f, const T& x, const Rest&... rest) {
  TreeDef d;
  tree_flatten(x, &d);
  auto all = detail::leaves_alike("tree_map", x, rest...);
  std::vector<Array> out;
  for (size_t i = 0; i < all[0].size(); ++i) {
    out.push_back([&]<size_t... I>(std::index_sequence<I...>) { return Array(f(all[0][i], all[I + 1][i]...)); }(
        std::index_sequence_for<Rest...>()));
  }
  return tree_unflatten<T>(d, out);
}
/// tree_map with each leaf's path first: f(path, leaf, ...).
template <class F, class T, class... Rest>
T tree_map_with_path(F&& f, const T& x, const Rest&... rest) {
  TreeDef d;
  tree_flatten(x, &d);
  auto all = detail::leaves_alike("tree_map_with_path", x, rest...);
  auto paths = tree_leaves_with_path(x);
  std::vector<Array> out;
  for (size_t i = 0; i < all[0].size(); ++i) {
    out.push_back([&]<size_t... I>(std::index_sequence<I...>) {
      return Array(f(paths[i].first, all[0][i], all[I + 1][i]...));
    }(std::index_sequence_for<Rest...>()));
  }
  return tree_unflatten<T>(d, out);
}
/// f folded over the leaves from the left: f(f(init, leaf 0), leaf 1)...
template <class F, class T, class A>
A tree_reduce(F&& f, const T& x, A init) {
  for (const Array& l : tree_flatten(x)) init = f(std::move(init), l);
  return init;
}
/// f folded over the leaves as a balanced tree (f must be associative): for sums of many leaves, with
/// less rounding than a left fold. An empty tree is an error (there is no identity to return).
template <class F, class T>
Array tree_reduce_associative(F&& f, const T& x) {
  std::vector<Array> v = tree_flatten(x);
  if (v.empty()) fail<ValueError>("tree_reduce_associative: the tree has no leaves");
  while (v.size() > 1) {
    std::vector<Array> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(f(v[i], v[i + 1]));
    if (v.size() % 2) next.push_back(v.back());
    v = std::move(next);
  }
  return v[0];
}
/// Whether every element of every leaf is true (nonzero); true for a tree without leaves.
bool tree_all(const std::vector<Array>& leaves);
template <class T>
bool tree_all(const T& x) {
  return tree_all(tree_flatten(x));
}
/// Whether x is an inner node of a pytree (a container or registered struct), not a leaf or static.
template <class T>
constexpr bool is_tree_node(const T&) {
  return !std::is_same_v<T, Array> && !PyTree<T>::is_static;
}

/// jax.tree's spellings of the same functions.
namespace tree {
template <class T>
std::vector<Array> leaves(const T& x) {
  return tree_leaves(x);
}
template <class T>
TreeDef structure(const T& x) {
  return tree_structure(x);
}
template <class T>
std::pair<std::vector<Array>, TreeDef> flatten(const T& x) {
  TreeDef d;
  std::vector<Array> l = tree_flatten(x, &d);
  return {std::move(l), std::move(d)};
}
/// flatten's inverse: the tree of type T (the type flatten was given) with these leaves.
template <class T>
T unflatten(const TreeDef& d, const std::vector<Array>& leaves) {
  return tree_unflatten<T>(d, leaves);
}
template <class F, class T, class... Rest>
T map(F&& f, const T& x, const Rest&... rest) {
  if constexpr (std::is_same_v<T, Tree> && sizeof...(Rest) <= 1) {
    return tree_map(std::forward<F>(f), x, rest...);
  } else {
    return graft::tree_map(std::forward<F>(f), x, rest...);
  }
}
template <class F, class T, class... Rest>
T map_with_path(F&& f, const T& x, const Rest&... rest) {
  return tree_map_with_path(std::forward<F>(f), x, rest...);
}
template <class T>
std::vector<std::pair<KeyPath, Array>> leaves_with_path(const T& x) {
  return tree_leaves_with_path(x);
}
template <class T>
std::pair<std::vector<std::pair<KeyPath, Array>>, TreeDef> flatten_with_path(const T& x) {
  return tree_flatten_with_path(x);
}
template <class F, class T, class A>
A reduce(F&& f, const T& x, A init) {
  return tree_reduce(std::forward<F>(f), x, std::move(init));
}
template <class F, class T>
Array reduce_associative(F&& f, const T& x) {
  return tree_reduce_associative(std::forward<F>(f), x);
}
template <class T>
bool all(const T& x) {
  return tree_all(x);
}
}  // namespace tree

}  // namespace graft
