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
// Below glibc's mmap threshold the heap's trimming does the same (a freed block at the heap's top goes
// back to the OS and faults in again on the next step): a bf16 step's [128,512] activations (128 KiB)
// cost 27 page faults a step, ~7 % of it, before blocks from 32 KiB up were kept here. Blocks of at
// least kCacheMin bytes are rounded up to 4 KiB below 256 KiB and to 64 KiB above, and kept in free
// lists keyed by size, up to GRAFT_CPU_CACHE_BYTES in total (default 1 GiB; 0 disables the cache).
constexpr size_t kCacheMin = size_t(1) << 15;  // 32 KiB

size_t rounded_size(size_t nbytes) {
  size_t r = (nbytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  if (r == 0) r = kBufferAlign;
  if (r >= kCacheMin) {
    const size_t quantum = r < (size_t(1) << 18) ? size_t(1) << 12 : size_t(1) << 16;
    r = (r + quantum - 1) / quantum * quantum;
  }
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

}  // namespace graft
