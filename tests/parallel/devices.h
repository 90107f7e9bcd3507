// Meshes for the one-process parallel tests: CPU devices made by hand, so the tests do not depend on
// GRAFT_CPU_DEVICES.
#pragma once

#include <vector>

#include <graft/graft.h>

namespace graft::testing {

/// n CPU devices of this process, ids 0..n-1.
inline std::vector<GlobalDevice> cpus(int n) {
  std::vector<GlobalDevice> d;
  for (int k = 0; k < n; ++k) d.push_back(GlobalDevice{k, 0, Device::cpu()});
  return d;
}

}  // namespace graft::testing
