#include <mutex>
#include <string_view>
#include <vector>

#include "graft/prims/primitives.h"

namespace graft::prims {

namespace {
constexpr const Primitive* kAll[] = {
#define GRAFT_PRIM(id, family) &id##_p,
#include "graft/prims/primitives.def"
#undef GRAFT_PRIM
};

std::vector<const Primitive*>& extra() {
  static std::vector<const Primitive*> v;
  return v;
}
std::mutex& extra_mu() {
  static std::mutex m;
  return m;
}
}  // namespace

std::span<const Primitive* const> all_primitives() { return kAll; }

const Primitive* find_primitive(std::string_view name) {
  for (const Primitive* p : kAll)
    if (name == p->name) return p;
  std::lock_guard<std::mutex> lk(extra_mu());
  for (const Primitive* p : extra())
    if (name == p->name) return p;
  return nullptr;
}

void register_primitive(const Primitive* p) {
  std::lock_guard<std::mutex> lk(extra_mu());
  for (const Primitive* q : extra())
    if (q == p) return;
  extra().push_back(p);
}

}  // namespace graft::prims
