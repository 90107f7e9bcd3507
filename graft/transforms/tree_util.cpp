#include "graft/transforms/tree_util.h"

#include "graft/prims/lax.h"

namespace graft {

std::string keystr(const KeyPath& path) {
  std::string s;
  for (const KeyEntry& e : path) {
    if (auto* d = std::get_if<DictKey>(&e)) {
      s += "['" + d->key + "']";
    } else if (auto* q = std::get_if<SequenceKey>(&e)) {
      s += "[" + std::to_string(q->idx) + "]";
    } else if (auto* a = std::get_if<GetAttrKey>(&e)) {
      s += "." + a->name;
    } else {
      s += "[<flat index " + std::to_string(std::get<FlattenedIndexKey>(e).key) + ">]";  // JAX's spelling
    }
  }
  return s;
}

namespace detail {
// "&Linear::w, &Linear::b" (GRAFT_PYTREE_NODE's arguments as written) -> {"w", "b"}: each item's text
// after its last "::" (or '.', or '&'), trimmed. Anything unexpected gives no names: the paths then use
// the children's positions.
std::vector<std::string> field_names(std::string_view fields, size_t expected) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= fields.size()) {
    size_t end = fields.find(',', start);
    if (end == std::string_view::npos) end = fields.size();
    std::string_view item = fields.substr(start, end - start);
    size_t cut = item.rfind("::");
    if (cut != std::string_view::npos) item.remove_prefix(cut + 2);
    while (!item.empty() && (item.front() == ' ' || item.front() == '&' || item.front() == '\n')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == ')' || item.back() == '\n')) item.remove_suffix(1);
    if (item.empty()) return {};
    names.emplace_back(item);
    start = end + 1;
  }
  if (names.size() != expected) return {};
  return names;
}
}  // namespace detail

bool tree_all(const std::vector<Array>& leaves) {
  for (const Array& x : leaves)
    if (x.size() > 0) {
      Axes every;
      for (int64_t d = 0; d < x.ndim(); ++d) every.push_back(d);
      Array b = x.dtype() == DType::bool_ ? x : lax::ne(x, lax::convert_element_type(Array(0.0), x.dtype()));
      if (!lax::reduce_and(b, every).item<bool>()) return false;
    }
  return true;
}

}  // namespace graft
