// The disk cache of compiled GPU kernels (host logic only: no CUDA needed, so it is tested anywhere).
//
// Each cubin is stored as `<name>_sm<arch>_nvrtc<major>.<minor>_<source length>_<source hash>.cubin`
// (PyTorch's jiterator key: the GPU architecture, the compiler's version and the source), under
// $GRAFT_CUDA_CACHE_DIR, else $GRAFT_CACHE_DIR/cuda, else $XDG_CACHE_HOME/graft/cuda or
// ~/.cache/graft/cuda; "off" disables it. A file holds a header (magic, payload size and hash, the full
// key) before the cubin, so a truncated or foreign file is compiled again, never loaded. Files are
// written to a fresh temporary name and renamed into place: a crash never leaves half a kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace graft::cuda {

/// The file name of a kernel's cubin (see above).
std::string kernel_file_name(const std::string& name, int arch, int nvrtc_major, int nvrtc_minor,
                             const std::string& source);
/// The directory kernels are cached in; empty when the cache is off.
std::string kernel_cache_dir();
/// The cubin stored under `file` for `key` (the full key: name + source), if a whole file is there.
std::optional<std::string> kernel_cache_get(const std::string& file, const std::string& key);
/// Stores `cubin` under `file` atomically; false when it cannot (a cache that cannot be written is
/// only slower).
bool kernel_cache_put(const std::string& file, const std::string& key, const std::string& cubin);
/// 64-bit FNV-1a of s.
uint64_t hash64(const std::string& s);

}  // namespace graft::cuda
