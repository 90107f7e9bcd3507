// graft's version: the CMake project's (CMakeLists.txt), the Python package's (graft.__version__) and
// the installed CMake package's (find_package(graft 0.1)). Semantic versioning: until 1.0 a minor
// version may change the API.
//
//   std::cout << "graft " << graft::version() << "\n";   // "graft 0.1.0"
#pragma once

namespace graft {

/// "major.minor.patch".
const char* version();

struct VersionInfo {
  int major, minor, patch;
};
/// The version's numbers.
VersionInfo version_info();

}  // namespace graft
