// Must not compile: a struct of arrays that is neither registered as a pytree node nor a static type,
// passed to a transformation (graft/transforms/pytree.h). tests/CMakeLists.txt expects the error.
#include "graft/ops/ops.h"
#include "graft/transforms/api.h"

struct Params {
  graft::Array w, b;
};

int main() {
  auto loss = [](const Params& p, const graft::Array& x) { return graft::sum(p.w * x + p.b); };
  Params p{graft::ones({3}), graft::zeros({3})};
  (void)graft::grad(loss)(p, graft::ones({3}));
}
