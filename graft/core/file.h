// Writing files that other processes may read while they are written (the kernel caches).
#pragma once

#include <string>

namespace graft {

/// Writes `bytes` to `path` (inside `dir`) whole or not at all: into a new file of our own in `dir`
/// (never through a link, never one that exists), renamed into place. False when it cannot (a cache
/// that cannot be written is only slower); a crash leaves at most a stray temporary, never half a file.
bool write_file_atomically(const std::string& dir, const std::string& path, const std::string& bytes);

}  // namespace graft
