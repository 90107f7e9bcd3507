#include "graft/core/axis_names.h"

#include <mutex>
#include <ostream>

#include "graft/core/error.h"

namespace graft {

namespace {
struct Names {
  std::mutex mu;
  std::vector<std::string> list;
};
Names& names() {
  static Names* n = new Names();  // never destroyed: avals may be printed during exit
  return *n;
}
}  // namespace

AxisSet axis_bit(std::string_view name) {
  Names& n = names();
  std::lock_guard<std::mutex> lk(n.mu);
  for (size_t i = 0; i < n.list.size(); ++i)
    if (n.list[i] == name) return AxisSet(1) << i;
  if (name.empty()) fail<ValueError>("axis names must not be empty");
  if (n.list.size() == 64) fail<ValueError>("too many distinct axis names (64) in one process; reuse names");
  n.list.emplace_back(name);
  return AxisSet(1) << (n.list.size() - 1);
}

std::vector<std::string> axis_set_names(AxisSet s) {
  Names& n = names();
  std::lock_guard<std::mutex> lk(n.mu);
  std::vector<std::string> out;
  for (size_t i = 0; i < n.list.size(); ++i)
    if (s >> i & 1) out.push_back(n.list[i]);
  return out;
}

std::string axis_set_str(AxisSet s) {
  std::string out;
  for (auto& n : axis_set_names(s)) out += (out.empty() ? "" : ",") + n;
  return out;
}

AxisSet AxisNames::set() const {
  AxisSet s = 0;
  for (auto& n : names) s |= axis_bit(n);
  return s;
}

void AxisNames::print(std::ostream& os) const {
  os << '(';
  for (size_t i = 0; i < names.size(); ++i) os << (i ? ", '" : "'") << names[i] << '\'';
  os << (names.size() == 1 ? ",)" : ")");
}

size_t AxisNames::hash() const {
  size_t h = names.size();
  for (auto& n : names) h = h * 131 + std::hash<std::string>()(n);
  return h;
}

bool AxisNames::equals(const ParamObject& o) const {
  auto* x = dynamic_cast<const AxisNames*>(&o);
  return x && x->names == names;
}

AxisSet collective_axes(const Params& params) {
  for (const char* key : {"axes", "axis_name"})
    if (const ParamValue* v = params.find(key))
      if (auto* o = std::get_if<Ref<const ParamObject>>(v))
        if (auto* a = dynamic_cast<const AxisNames*>(o->get())) return a->set();
  return 0;
}

}  // namespace graft
