#include "graft/backends/cuda/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "graft/core/env.h"
#include "graft/core/file.h"

namespace graft::cuda {

namespace {
constexpr char kMagic[8] = {'G', 'R', 'F', 'T', 'C', 'U', 'B', '1'};

std::string header(const std::string& key, const std::string& payload) {
  std::string h(kMagic, sizeof kMagic);
  uint64_t n = payload.size(), hp = hash64(payload), nk = key.size();
  h.append(reinterpret_cast<const char*>(&n), 8);
  h.append(reinterpret_cast<const char*>(&hp), 8);
  h.append(reinterpret_cast<const char*>(&nk), 8);
  return h + key;
}
}  // namespace

uint64_t hash64(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string kernel_file_name(const std::string& name, int arch, int major, int minor, const std::string& source) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash64(source)));
  return name + "_sm" + std::to_string(arch) + "_nvrtc" + std::to_string(major) + "." + std::to_string(minor) + "_" +
         std::to_string(source.size()) + "_" + hex + ".cubin";
}

std::string kernel_cache_dir() {
  if (auto d = env::get("GRAFT_CUDA_CACHE_DIR")) return *d == "off" ? std::string() : *d;
  if (auto d = env::get("GRAFT_CACHE_DIR")) return *d == "off" ? std::string() : *d + "/cuda";
  if (auto x = env::get("XDG_CACHE_HOME")) return *x + "/graft/cuda";
  if (auto h = env::get("HOME")) return *h + "/.cache/graft/cuda";
  return {};
}

std::optional<std::string> kernel_cache_get(const std::string& file, const std::string& key) {
  std::string dir = kernel_cache_dir();
  if (dir.empty()) return std::nullopt;
  std::ifstream in(dir + "/" + file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kMagic, 8) != 0) return std::nullopt;
  uint64_t n, hp, nk;
  std::memcpy(&n, bytes.data() + 8, 8);
  std::memcpy(&hp, bytes.data() + 16, 8);
  std::memcpy(&nk, bytes.data() + 24, 8);
  if (nk != key.size() || bytes.size() != 32 + nk + n || bytes.compare(32, nk, key) != 0) return std::nullopt;
  std::string payload = bytes.substr(32 + nk);
  if (hash64(payload) != hp) return std::nullopt;
  return payload;
}

bool kernel_cache_put(const std::string& file, const std::string& key, const std::string& cubin) {
  std::string dir = kernel_cache_dir();
  if (dir.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  return write_file_atomically(dir, dir + "/" + file, header(key, cubin) + cubin);
}

}  // namespace graft::cuda
