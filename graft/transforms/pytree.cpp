#include "graft/transforms/pytree.h"

namespace graft {

const Array& Tree::array() const {
  if (!is_leaf()) fail<TypeError>("Tree::array(): this node is ", structure(), ", not a leaf");
  return std::get<Array>(v_);
}
Array& Tree::array() {
  if (!is_leaf()) fail<TypeError>("Tree::array(): this node is ", structure(), ", not a leaf");
  return std::get<Array>(v_);
}
const std::vector<Tree>& Tree::items() const {
  if (!is_list()) fail<TypeError>("Tree::items(): this node is ", structure(), ", not a list");
  return std::get<std::vector<Tree>>(v_);
}
std::vector<Tree>& Tree::items() {
  if (!is_list()) fail<TypeError>("Tree::items(): this node is ", structure(), ", not a list");
  return std::get<std::vector<Tree>>(v_);
}
const std::map<std::string, Tree>& Tree::dict() const {
  if (!is_dict()) fail<TypeError>("Tree::dict(): this node is ", structure(), ", not a dict");
  return std::get<std::map<std::string, Tree>>(v_);
}
std::map<std::string, Tree>& Tree::dict() {
  if (is_none()) v_ = std::map<std::string, Tree>();
  if (!is_dict()) fail<TypeError>("Tree::dict(): this node is ", structure(), ", not a dict");
  return std::get<std::map<std::string, Tree>>(v_);
}
Tree& Tree::operator[](const std::string& key) { return dict()[key]; }
const Tree& Tree::operator[](const std::string& key) const {
  auto& d = dict();
  auto it = d.find(key);
  if (it == d.end()) fail<ValueError>("Tree: no key '", key, "' in ", structure());
  return it->second;
}
Tree& Tree::operator[](size_t i) {
  auto& l = items();
  if (i >= l.size()) fail<ValueError>("Tree: index ", i, " out of range for a list of ", l.size());
  return l[i];
}
const Tree& Tree::operator[](size_t i) const {
  auto& l = items();
  if (i >= l.size()) fail<ValueError>("Tree: index ", i, " out of range for a list of ", l.size());
  return l[i];
}
size_t Tree::size() const {
  if (is_list()) return items().size();
  if (is_dict()) return dict().size();
  return is_leaf() ? 1 : 0;
}

std::vector<Array> Tree::leaves() const {
  std::vector<Array> out;
  struct Rec {
    static void go(const Tree& t, std::vector<Array>& out) {
      if (t.is_leaf()) {
        out.push_back(t.array());
      } else if (t.is_list()) {
        for (auto& c : t.items()) go(c, out);
      } else if (t.is_dict()) {
        for (auto& [k, c] : t.dict()) go(c, out);
      }
    }
  };
  Rec::go(*this, out);
  return out;
}

Tree Tree::with_leaves(const Array*& it) const {
  if (is_leaf()) return Tree(*it++);
  if (is_list()) {
    std::vector<Tree> l;
    for (auto& c : items()) l.push_back(c.with_leaves(it));
    return Tree(std::move(l));
  }
  if (is_dict()) {
    std::map<std::string, Tree> d;
    for (auto& [k, c] : dict()) d.emplace(k, c.with_leaves(it));
    return Tree(std::move(d));
  }
  return Tree();
}

Tree Tree::with_leaves(const std::vector<Array>& leaves) const {
  if (leaves.size() != this->leaves().size())
    fail<ValueError>("Tree::with_leaves: the tree has ", this->leaves().size(), " leaves, got ", leaves.size());
  const Array* it = leaves.data();
  return with_leaves(it);
}

std::string Tree::structure() const {
  if (is_leaf()) return "*";
  if (is_none()) return "None";
  std::string s;
  if (is_list()) {
    s = "[";
    for (size_t i = 0; i < items().size(); ++i) s += (i ? ", " : "") + items()[i].structure();
    return s + "]";
  }
  s = "{";
  bool first = true;
  for (auto& [k, c] : dict()) {
    s += first ? "'" : ", '";
    for (char ch : k) {  // escaped as Python's repr does: structures (and jit's keys) are unambiguous
      if (ch == '\\' || ch == '\'') s += '\\';
      s += ch;
    }
    s += "': " + c.structure();
    first = false;
  }
  return s + "}";
}

std::ostream& operator<<(std::ostream& os, const Tree& t) {
  if (t.is_leaf()) return os << t.array();
  if (t.is_none()) return os << "None";
  if (t.is_list()) {
    os << "[";
    for (size_t i = 0; i < t.items().size(); ++i) os << (i ? ", " : "") << t.items()[i];
    return os << "]";
  }
  os << "{";
  bool first = true;
  for (auto& [k, c] : t.dict()) {
    os << (first ? "'" : ", '") << k << "': " << c;
    first = false;
  }
  return os << "}";
}

}  // namespace graft
