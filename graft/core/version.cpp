#include "graft/core/version.h"

#include <cstdio>

// CMakeLists.txt passes the project's version to this file
#ifndef GRAFT_VERSION
#error "GRAFT_VERSION is set by CMakeLists.txt from project(graft VERSION ...)"
#endif

namespace graft {

const char* version() { return GRAFT_VERSION; }

VersionInfo version_info() {
  VersionInfo v{0, 0, 0};
  std::sscanf(GRAFT_VERSION, "%d.%d.%d", &v.major, &v.minor, &v.patch);
  return v;
}

}  // namespace graft
