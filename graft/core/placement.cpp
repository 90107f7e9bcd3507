#include "graft/core/placement.h"

#include <string>

#include "graft/core/error.h"

namespace graft {

namespace {

[[noreturn]] void conflict(const char* what, Device a, Device b, std::span<const Array> operands) {
  std::string types;
  for (size_t i = 0; i < operands.size(); ++i)
    types += (i ? ", " : "") + (operands[i].valid() ? operands[i].aval().str() : std::string("null"));
  fail<ValueError>(what, ": its operands are committed to different devices, ", a, " and ", b, " (operands ", types,
                   "); move one of them with device_put");
}

}  // namespace

Placement place(std::span<const Array> operands, const char* what, std::span<const Array> more) {
  // One pass: the committed device (checked for conflicts) and whether every concrete operand lives on
  // one same device; the eager hot path (everything on the CPU, nothing committed) costs one test per
  // operand.
  Placement pl;
  bool any = false, uniform = true;
  Device first;
  for (std::span<const Array> group : {operands, more})
    for (const Array& x : group) {
      const ConcreteNode* c = x.concrete();
      if (!c) continue;
      Device d = c->device();
      if (!any) {
        first = d;
        any = true;
      } else if (d != first) {
        uniform = false;
      }
      if (c->committed()) {
        if (pl.committed && d != pl.device) conflict(what, pl.device, d, operands);
        pl.device = d;
        pl.committed = true;
      }
    }
  if (!pl.committed) pl.device = default_device();
  pl.moves = any && !(uniform && first == pl.device);
  return pl;
}

}  // namespace graft
