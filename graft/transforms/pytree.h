// Pytrees: nested containers of arrays that transformations flatten to lists of leaves and rebuild.
//
// Supported as arguments and results of transformed functions: Array, graft::Tree (a dynamic tree of
// lists and string-keyed dicts, for model parameters), std::vector<T>, std::array<T, N>,
// std::map<std::string, T>, std::pair and std::tuple of those, and structs registered as nodes (below).
// Arguments of other types are *static*: passed through unchanged, with jit keying its cache on their
// values. Static types are numbers, enums, strings, pointers, printable types (operator<<)
// and containers of those, or types marked with GRAFT_STATIC_TYPE(T); any other type is a compile-time
// error naming both ways out (never silently static: a struct of arrays treated as a constant would get
// no gradient).
//
//   graft::Tree params = graft::Tree::dict({{"w", w}, {"b", b}});
//   auto g = graft::grad(loss)(params, x, y);   // g has params' structure
//   g["w"].array();
//
// A struct becomes a pytree node by naming its children (arrays or pytrees), at namespace scope:
//
//   struct Linear { Array w, b; std::string name; };
//   GRAFT_PYTREE_NODE(Linear, &Linear::w, &Linear::b);
//   Linear g = graft::grad(loss)(layer, x);      // g.w, g.b: gradients; g.name copied from layer
//
// Members it does not name are copied from the argument when a node is rebuilt. If they change what the
// function computes, name them as static fields so that jit keys its cache on them:
//
//   template <> struct graft::PyTreeNode<Linear> {
//     static constexpr auto children = std::make_tuple(&Linear::w, &Linear::b);
//     static constexpr auto statics = std::make_tuple(&Linear::name);
//   };
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <typeinfo>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/array.h"

namespace graft {

/// A dynamic pytree: None, an Array leaf, a list of trees, or a string-keyed dict of trees.
class Tree {
 public:
  Tree() = default;  ///< None (no leaves)
  Tree(Array a) : v_(std::move(a)) {}  // NOLINT: a leaf
  Tree(std::vector<Tree> l) : v_(std::move(l)) {}  // NOLINT
  Tree(std::map<std::string, Tree> d) : v_(std::move(d)) {}  // NOLINT
  static Tree list(std::initializer_list<Tree> items) { return Tree(std::vector<Tree>(items)); }
  static Tree dict(std::initializer_list<std::pair<const std::string, Tree>> items) {
    return Tree(std::map<std::string, Tree>(items));
  }

  bool is_none() const { return v_.index() == 0; }
  bool is_leaf() const { return v_.index() == 1; }
  bool is_list() const { return v_.index() == 2; }
  bool is_dict() const { return v_.index() == 3; }

  /// The leaf array (throws if this node is not a leaf).
  const Array& array() const;
  Array& array();
  operator Array() const { return array(); }  // NOLINT: leaves convert to arrays
  const std::vector<Tree>& items() const;
  std::vector<Tree>& items();
  const std::map<std::string, Tree>& dict() const;
  std::map<std::string, Tree>& dict();
  /// Dict access (inserts None for a new key on the non-const version).
  Tree& operator[](const std::string& key);
  const Tree& operator[](const std::string& key) const;
  Tree& operator[](const char* key) { return (*this)[std::string(key)]; }
  const Tree& operator[](const char* key) const { return (*this)[std::string(key)]; }
  /// List access.
  Tree& operator[](size_t i);
  const Tree& operator[](size_t i) const;
  Tree& operator[](int i) { return (*this)[static_cast<size_t>(i)]; }
  const Tree& operator[](int i) const { return (*this)[static_cast<size_t>(i)]; }
  size_t size() const;

  /// Leaves in order (dict keys sorted).
  std::vector<Array> leaves() const;
  /// A tree of this structure with the given leaves (consumed from `it`).
  Tree with_leaves(const Array*& it) const;
  Tree with_leaves(const std::vector<Array>& leaves) const;
  /// "{'b': *, 'w': *}"-style structure string (used in jit cache keys and errors).
  std::string structure() const;

 private:
  std::variant<std::monostate, Array, std::vector<Tree>, std::map<std::string, Tree>> v_;
};

std::ostream& operator<<(std::ostream& os, const Tree& t);

/// Applies f to every leaf: tree_map(f, t) or tree_map(f, a, b) for two trees of the same structure.
template <class F>
Tree tree_map(F&& f, const Tree& t) {
  std::vector<Array> out;
  for (auto& x : t.leaves()) out.push_back(f(x));
  return t.with_leaves(out);
}
template <class F>
Tree tree_map(F&& f, const Tree& a, const Tree& b) {
  if (a.structure() != b.structure())
    fail<ValueError>("tree_map: trees have different structures: ", a.structure(), " vs ", b.structure());
  auto la = a.leaves(), lb = b.leaves();
  std::vector<Array> out;
  for (size_t i = 0; i < la.size(); ++i) out.push_back(f(la[i], lb[i]));
  return a.with_leaves(out);
}

// ---- static type traits: flatten / unflatten of typed pytrees ---------------------------------------
/// Describes the runtime shape of a typed pytree (container sizes, dict keys, Tree structure).
struct TreeDef {
  std::string repr;               ///< structure string: part of jit cache keys
  std::vector<size_t> sizes;      ///< sizes of variable-length containers, in traversal order
  std::vector<std::vector<std::string>> keys;  ///< keys of std::map containers, in traversal order
  std::vector<Tree> trees;        ///< prototypes of dynamic Trees, in traversal order
  std::vector<std::shared_ptr<const void>> nodes;  ///< copies of registered nodes (their static members)
};

/// A struct's registration as a pytree node: `children`, a tuple of pointers to its members that are
/// arrays or pytrees, and optionally `statics`, pointers to members that jit keys its cache on.
/// Specialize it (or use GRAFT_PYTREE_NODE) at namespace scope.
template <class T>
struct PyTreeNode;

/// Marks T as a static argument type that is not printable (jit keys its cache on T's typeid only: every
/// value of T must trace the same program).
template <class T>
struct StaticType : std::false_type {};

namespace detail {
template <class T, class = void>
struct is_node : std::false_type {};
template <class T>
struct is_node<T, std::void_t<decltype(PyTreeNode<T>::children)>> : std::true_type {};
template <class T, class = void>
struct node_has_statics : std::false_type {};
template <class T>
struct node_has_statics<T, std::void_t<decltype(PyTreeNode<T>::statics)>> : std::true_type {};
template <class M>
struct member_type;
template <class C, class M>
struct member_type<M C::*> {
  using type = M;
};
}  // namespace detail

template <class T, class = void>
struct PyTree {
  static constexpr bool is_static = true;  ///< not made of arrays: passed through, hashed by jit
};

template <>
struct PyTree<Array> {
  static constexpr bool is_static = false;
  static void flatten(const Array& x, std::vector<Array>& leaves, TreeDef& d) {
    leaves.push_back(x);
    d.repr += '*';
  }
  struct Cursor {
    const Array* leaf;
    size_t size = 0, key = 0, tree = 0, node = 0;
  };
  static Array unflatten(const TreeDef&, Cursor& c) { return *c.leaf++; }
};
using TreeCursor = PyTree<Array>::Cursor;

template <>
struct PyTree<Tree> {
  static constexpr bool is_static = false;
  static void flatten(const Tree& t, std::vector<Array>& leaves, TreeDef& d) {
    for (auto& x : t.leaves()) leaves.push_back(x);
    d.repr += t.structure();
    d.trees.push_back(t);
  }
  static Tree unflatten(const TreeDef& d, TreeCursor& c) { return d.trees[c.tree++].with_leaves(c.leaf); }
};

template <class T>
struct PyTree<std::vector<T>, std::enable_if_t<!PyTree<T>::is_static>> {
  static constexpr bool is_static = false;
  static void flatten(const std::vector<T>& v, std::vector<Array>& leaves, TreeDef& d) {
    d.repr += '[';
    d.sizes.push_back(v.size());
    for (auto& x : v) {
      PyTree<T>::flatten(x, leaves, d);
      d.repr += ',';
    }
    d.repr += ']';
  }
  static std::vector<T> unflatten(const TreeDef& d, TreeCursor& c) {
    size_t n = d.sizes[c.size++];
    std::vector<T> v;
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(PyTree<T>::unflatten(d, c));
    return v;
  }
};

template <class T, size_t N>
struct PyTree<std::array<T, N>, std::enable_if_t<!PyTree<T>::is_static>> {
  static constexpr bool is_static = false;
  static void flatten(const std::array<T, N>& v, std::vector<Array>& leaves, TreeDef& d) {
    d.repr += '<';
    for (auto& x : v) {
      PyTree<T>::flatten(x, leaves, d);
      d.repr += ',';
    }
    d.repr += '>';
  }
  static std::array<T, N> unflatten(const TreeDef& d, TreeCursor& c) {
    std::array<T, N> v;
    for (auto& x : v) x = PyTree<T>::unflatten(d, c);
    return v;
  }
};

template <class T>
struct PyTree<std::map<std::string, T>, std::enable_if_t<!PyTree<T>::is_static>> {
  static constexpr bool is_static = false;
  static void flatten(const std::map<std::string, T>& m, std::vector<Array>& leaves, TreeDef& d) {
    d.repr += '{';
    std::vector<std::string> keys;
    for (auto& [k, x] : m) {
      keys.push_back(k);
      d.repr += std::to_string(k.size()) + '#' + k + ':';  // length-prefixed: a key may hold any character
      PyTree<T>::flatten(x, leaves, d);
      d.repr += ',';
    }
    d.keys.push_back(std::move(keys));
    d.repr += '}';
  }
  static std::map<std::string, T> unflatten(const TreeDef& d, TreeCursor& c) {
    const auto& keys = d.keys[c.key++];
    std::map<std::string, T> m;
    for (auto& k : keys) m.emplace(k, PyTree<T>::unflatten(d, c));
    return m;
  }
};

template <class... Ts>
struct PyTree<std::tuple<Ts...>, std::enable_if_t<(!PyTree<Ts>::is_static && ...)>> {
  static constexpr bool is_static = false;
  static void flatten(const std::tuple<Ts...>& t, std::vector<Array>& leaves, TreeDef& d) {
    d.repr += '(';
    std::apply([&](const auto&... xs) { ((PyTree<std::decay_t<decltype(xs)>>::flatten(xs, leaves, d), d.repr += ','), ...); }, t);
    d.repr += ')';
  }
  static std::tuple<Ts...> unflatten(const TreeDef& d, TreeCursor& c) {
    return std::tuple<Ts...>{PyTree<Ts>::unflatten(d, c)...};  // braced init: left-to-right order
  }
};

template <class A, class B>
struct PyTree<std::pair<A, B>, std::enable_if_t<!PyTree<A>::is_static && !PyTree<B>::is_static>> {
  static constexpr bool is_static = false;
  static void flatten(const std::pair<A, B>& p, std::vector<Array>& leaves, TreeDef& d) {
    d.repr += '(';
    PyTree<A>::flatten(p.first, leaves, d);
    d.repr += ',';
    PyTree<B>::flatten(p.second, leaves, d);
    d.repr += ')';
  }
  static std::pair<A, B> unflatten(const TreeDef& d, TreeCursor& c) {
    A a = PyTree<A>::unflatten(d, c);
    B b = PyTree<B>::unflatten(d, c);
    return {std::move(a), std::move(b)};
  }
};

template <class T>
void append_static_key(std::string& key, const T& x);

template <class T>
struct PyTree<T, std::enable_if_t<detail::is_node<T>::value>> {
  static constexpr bool is_static = false;
  static void flatten(const T& x, std::vector<Array>& leaves, TreeDef& d) {
    d.nodes.push_back(std::make_shared<const T>(x));  // before the children's: unflatten reads in this order
    d.repr += '<';
    d.repr += typeid(T).name();
    if constexpr (detail::node_has_statics<T>::value) {
      std::string k;
      std::apply([&](auto... m) { (append_static_key(k, x.*m), ...); }, PyTreeNode<T>::statics);
      d.repr += std::to_string(k.size()) + '#' + k;
    }
    d.repr += ':';
    std::apply(
        [&](auto... m) {
          ((PyTree<typename detail::member_type<decltype(m)>::type>::flatten(x.*m, leaves, d), d.repr += ','), ...);
        },
        PyTreeNode<T>::children);
    d.repr += '>';
  }
  static T unflatten(const TreeDef& d, PyTree<Array>::Cursor& c) {
    T out = *static_cast<const T*>(d.nodes[c.node++].get());
    std::apply([&](auto... m) { ((out.*m = PyTree<typename detail::member_type<decltype(m)>::type>::unflatten(d, c)), ...); },
               PyTreeNode<T>::children);
    return out;
  }
};

template <class T>
inline constexpr bool is_static_v = PyTree<std::decay_t<T>>::is_static;

namespace detail {
template <class T>
struct is_container_of_static : std::false_type {};
template <class T, class A>
struct is_container_of_static<std::vector<T, A>> : std::bool_constant<PyTree<T>::is_static> {};
template <class T, size_t N>
struct is_container_of_static<std::array<T, N>> : std::bool_constant<PyTree<T>::is_static> {};
template <class K, class V, class C, class A>
struct is_container_of_static<std::map<K, V, C, A>> : std::bool_constant<PyTree<V>::is_static> {};
template <class A, class B>
struct is_container_of_static<std::pair<A, B>> : std::bool_constant<PyTree<A>::is_static && PyTree<B>::is_static> {};
template <class... Ts>
struct is_container_of_static<std::tuple<Ts...>> : std::bool_constant<(PyTree<Ts>::is_static && ...)> {};
template <class T>
struct is_container_of_static<std::optional<T>> : std::bool_constant<PyTree<T>::is_static> {};
}  // namespace detail

/// Whether T may be a static argument of a transformation (see the top of this file).
template <class T>
inline constexpr bool is_known_static_v =
    std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T> || std::is_member_pointer_v<T> ||
    std::is_convertible_v<const T&, std::string_view> || std::is_same_v<T, std::nullopt_t> ||
    detail::is_container_of_static<T>::value || StaticType<T>::value ||
    requires(std::ostream& o, const T& v) { o << v; };

/// Flattens a typed pytree.
template <class T>
std::vector<Array> tree_flatten(const T& x, TreeDef* def = nullptr) {
  std::vector<Array> leaves;
  TreeDef d;
  PyTree<T>::flatten(x, leaves, d);
  if (def) *def = std::move(d);
  return leaves;
}
/// Rebuilds a typed pytree from leaves (with the TreeDef its flattening produced).
template <class T>
T tree_unflatten(const TreeDef& d, const std::vector<Array>& leaves) {
  TreeCursor c{leaves.data()};
  return PyTree<T>::unflatten(d, c);
}

/// Converts any typed pytree into a dynamic Tree (tuples and vectors become lists).
template <class T>
Tree to_tree(const T& x) {
  if constexpr (std::is_same_v<T, Tree>) {
    return x;
  } else if constexpr (std::is_same_v<T, Array>) {
    return Tree(x);
  } else {
    std::vector<Array> leaves = tree_flatten(x);
    std::vector<Tree> l(leaves.begin(), leaves.end());
    return Tree(l);
  }
}

namespace detail {
template <class T>
void append_bytes(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
struct is_static_range : std::false_type {};
template <class T, class A>
struct is_static_range<std::vector<T, A>> : std::true_type {};
template <class T, size_t N>
struct is_static_range<std::array<T, N>> : std::true_type {};
}  // namespace detail

/// Appends the exact value of a static argument to jit's cache key: the type (so that `f(x, 1)` and
/// `f(x, 1.0)` are told apart), then the value's bits for numbers (0.1234561 and 0.1234564 differ;
/// so do 0.0 and -0.0), a length-prefixed copy for strings, and element by element for vectors,
/// arrays, pairs and tuples of static values. Other types are keyed by what `operator<<` prints,
/// length-prefixed: such a type must print every bit of its value.
template <class T>
void append_static_key(std::string& key, const T& x) {
  const char* tname = typeid(T).name();
  key.append(tname);
  key.push_back('=');
  if constexpr (StaticType<T>::value) {
    // marked static without a printable value: every value of T traces the same program
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    std::string_view v(x);
    detail::append_bytes(key, v.size());
    key.append(v.data(), v.size());
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
    detail::append_bytes(key, x);
  } else if constexpr (detail::is_static_range<T>::value) {
    detail::append_bytes(key, x.size());
    for (const auto& e : x) append_static_key(key, e);
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    std::apply([&](const auto&... e) { (append_static_key(key, e), ...); }, x);
  } else if constexpr (requires(std::ostream& o, const T& v) { o << v; }) {
    std::ostringstream os;
    os.precision(17);
    os << x;
    std::string s = os.str();
    detail::append_bytes(key, s.size());
    key += s;
  } else {
    static_assert(sizeof(T) == 0, "a static argument of jit must be a number, enum, string, a container of those, "
                                  "or printable (operator<<) to key the cache");
  }
}

/// The value of a static argument as jit's cache key spells it (see append_static_key).
template <class T>
std::string static_key(const T& x) {
  std::string key;
  append_static_key(key, x);
  return key;
}

}  // namespace graft

/// Registers struct T as a pytree node whose children are the listed members (pointers to members), at
/// namespace scope: GRAFT_PYTREE_NODE(Linear, &Linear::w, &Linear::b);
/// (`fields` keeps the members' names for the paths of graft/transforms/tree_util.h.)
#define GRAFT_PYTREE_NODE(T, ...)                                          \
  template <>                                                               \
  struct graft::PyTreeNode<T> {                                             \
    static constexpr auto children = std::make_tuple(__VA_ARGS__);          \
    static constexpr std::string_view fields = #__VA_ARGS__;                \
  }
/// Marks T as a static argument type (see StaticType), at namespace scope.
#define GRAFT_STATIC_TYPE(T) \
  template <>                \
  struct graft::StaticType<T> : std::true_type {}
