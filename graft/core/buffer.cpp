#include "graft/core/buffer.h"
#include "graft/core/env.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "graft/core/device.h"
#include "graft/core/error.h"

namespace graft {

namespace {

// Large host buffers are recycled instead of being returned to the OS: a fresh large allocation is
// an mmap whose pages fault in on first touch, which cost about a third of a CNN training step.
// Blocks of at least kCacheMin bytes are rounded up to kCacheQuantum and kept in free lists keyed by
// size, up to GRAFT_CPU_CACHE_BYTES in total (default 1 GiB; 0 disables the cache).
constexpr size_t kCacheMin = size_t(1) << 18;      // 256 KiB
constexpr size_t kCacheQuantum = size_t(1) << 16;  // 64 KiB

size_t rounded_size(size_t nbytes) {
  size_t r = (nbytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  if (r == 0) r = kBufferAlign;
  if (r >= kCacheMin) r = (r + kCacheQuantum - 1) / kCacheQuantum * kCacheQuantum;
  return r;
}

class HostCache {
 public:
  HostCache() {
    limit_ = static_cast<size_t>(env::integer("GRAFT_CPU_CACHE_BYTES", int64_t(1) << 30, 0, int64_t(1) << 50));
  }
  void* take(size_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = free_.find(n);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= n;
    return p;
  }
  // Returns every cached block to the system (before giving up on an allocation).
  void release_all() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [n, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }
  bool give(void* p, size_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    if (cached_ + n > limit_) return false;
    free_[n].push_back(p);
    cached_ += n;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0, limit_;
};

// Never destroyed: buffers may be freed during static destruction (the blocks stay reachable).
HostCache& cache() {
  static HostCache* c = new HostCache();
  return *c;
}

void free_cpu(void* p, size_t nbytes, Device) {
  size_t r = rounded_size(nbytes);
  if (r >= kCacheMin && cache().give(p, r)) return;
  std::free(p);
}

}  // namespace

Ref<Buffer> Buffer::allocate_cpu(size_t nbytes) {
  size_t r = rounded_size(nbytes);
  void* p = r >= kCacheMin ? cache().take(r) : nullptr;
  if (!p) p = std::aligned_alloc(kBufferAlign, r);
  if (!p) {
    cache().release_all();  // memory held for reuse may be what is missing
    p = std::aligned_alloc(kBufferAlign, r);
  }
  if (!p)
    fail<MemoryError>("out of memory: cannot allocate ", nbytes, " bytes (", static_cast<double>(nbytes) / (1 << 30),
                      " GiB) of host memory for an array");
  return make_ref<Buffer>(p, nbytes, Device::cpu(), &free_cpu);
}

// ---- backends ---------------------------------------------------------------------------------------
namespace {
class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool available(int index, std::string* why) const override {
    if (index == 0) return true;
    if (why) *why = "there is one CPU device, cpu:0";
    return false;
  }
  Ref<Buffer> allocate(size_t nbytes, Device) override { return Buffer::allocate_cpu(nbytes); }
  void copy(const void* src, Device, void* dst, Device, size_t n) override { std::memcpy(dst, src, n); }
  void synchronize(Device) override {}
};

constexpr int kMaxTypes = 8;
std::array<Backend*, kMaxTypes>& registry() {
  static CpuBackend cpu;
  static std::array<Backend*, kMaxTypes> r = {&cpu};
  return r;
}
}  // namespace

Backend* backend_for(int16_t type) {
  if (type < 0 || type >= kMaxTypes) return nullptr;
  return registry()[static_cast<size_t>(type)];
}

void register_backend(int16_t type, Backend* b) {
  if (type <= 0 || type >= kMaxTypes) fail<ValueError>("register_backend: bad device type ", type);
  registry()[static_cast<size_t>(type)] = b;
}

Backend& usable_backend(Device d, const char* what) {
  Backend* b = backend_for(d.type);
  if (!b)
    fail<ValueError>(what, ": device ", d, " is not available: graft was built without ",
                     d.type == 1 ? "CUDA (configure with -DGRAFT_WITH_CUDA=ON where the CUDA toolkit is installed)"
                                 : "a backend for it");
  std::string why;
  if (!b->available(d.index, &why)) fail<ValueError>(what, ": device ", d, " is not available: ", why);
  return *b;
}

// ---- devices ---------------------------------------------------------------------------------------
Device parse_device(std::string_view s) {
  std::string_view kind = s, idx;
  if (auto colon = s.find(':'); colon != std::string_view::npos) {
    kind = s.substr(0, colon);
    idx = s.substr(colon + 1);
  }
  int index = 0;
  if (!idx.empty()) {
    index = -1;
    if (idx.size() <= 4 && idx.find_first_not_of("0123456789") == std::string_view::npos) index = std::stoi(std::string(idx));
  }
  if (index >= 0) {
    if (kind == "cpu" && index == 0) return Device::cpu();
    if (kind == "cuda" || kind == "gpu") return Device::cuda(index);
    for (int16_t t = 2; t < kMaxTypes; ++t)  // other backends, by the name they registered
      if (Backend* b = backend_for(t); b && b->name() == kind) return Device{t, static_cast<int16_t>(index)};
  }
  fail<ValueError>("unknown device '", s, "': expected cpu, cuda or cuda:N");
}

namespace {
Device process_default() {
  static const Device d = [] {
    auto v = env::get("GRAFT_DEFAULT_DEVICE");
    if (!v) return Device::cpu();
    try {
      return parse_device(*v);
    } catch (const ValueError& e) {
      fail<ValueError>("GRAFT_DEFAULT_DEVICE: ", e.what());
    }
  }();
  return d;
}
thread_local Device tl_default;
thread_local bool tl_has_default = false;
}  // namespace

Device default_device() { return tl_has_default ? tl_default : process_default(); }

DefaultDevice::DefaultDevice(Device d) : prev_(tl_default), had_prev_(tl_has_default) {
  tl_default = d;
  tl_has_default = true;
}
DefaultDevice::~DefaultDevice() {
  tl_default = prev_;
  tl_has_default = had_prev_;
}

std::string Device::str() const {
  std::string kind = type == 0 ? "cpu" : type == 1 ? "cuda" : "device" + std::to_string(type);
  if (type > 1)
    if (Backend* b = backend_for(type)) kind = b->name();
  return kind + ":" + std::to_string(index);
}
std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace graft
