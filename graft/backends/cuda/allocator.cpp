#include "graft/backends/cuda/allocator.h"

#include <algorithm>

#include "graft/core/error.h"

namespace graft::cuda {

namespace {
constexpr size_t kSmall = size_t(1) << 20;
constexpr size_t kSmallQuantum = 512;
constexpr size_t kLargeQuantum = size_t(1) << 20;
}  // namespace

size_t CachingAllocator::round_size(size_t n) {
  size_t q = n < kSmall ? kSmallQuantum : kLargeQuantum;
  size_t r = (n + q - 1) / q * q;
  return r == 0 ? kSmallQuantum : r;
}

CachingAllocator::CachingAllocator(DeviceMemory& mem, bool caching, size_t limit)
    : mem_(mem), caching_(caching), limit_(limit) {}

CachingAllocator::~CachingAllocator() { empty_cache(); }

void* CachingAllocator::take_cached(size_t r) {
  auto it = free_.lower_bound(r);
  // best fit, but never a block much larger than asked for (it would sit idle)
  if (it == free_.end() || it->first > r + r / 8) return nullptr;
  auto [size, p] = *it;
  free_.erase(it);
  st_.cached_bytes -= static_cast<int64_t>(size);
  st_.allocated_bytes += static_cast<int64_t>(size);
  st_.peak_allocated_bytes = std::max(st_.peak_allocated_bytes, st_.allocated_bytes);
  ++st_.num_cache_hits;
  live_[p] = size;
  return p;
}

void CachingAllocator::free_cached_locked() {
  for (auto& [n, p] : free_) {
    mem_.raw_free(p);
    ++st_.num_device_frees;
    st_.reserved_bytes -= static_cast<int64_t>(n);
  }
  st_.cached_bytes = 0;
  free_.clear();
}

void* CachingAllocator::allocate(size_t n) {
  size_t r = round_size(n);
  std::lock_guard<std::mutex> lk(mu_);
  ++st_.num_allocs;
  if (caching_)
    if (void* p = take_cached(r)) return p;
  auto try_device = [&]() -> void* {
    if (limit_ && static_cast<size_t>(st_.reserved_bytes) + r > limit_) return nullptr;
    return mem_.raw_alloc(r);
  };
  void* p = try_device();
  if (!p) {
    ++st_.num_ooms;
    free_cached_locked();  // memory held for reuse may be what is missing
    p = try_device();
  }
  if (!p) {
    bool capped = limit_ && static_cast<size_t>(st_.reserved_bytes) + r > limit_;
    fail<MemoryError>("out of memory on ", mem_.name(), ": cannot allocate ", n, " bytes (",
                      static_cast<double>(n) / (1 << 20), " MiB); ", st_.allocated_bytes, " bytes are held by arrays",
                      capped ? ", and the cap GRAFT_CUDA_MEMORY_LIMIT=" + std::to_string(limit_) + " would be passed"
                             : std::string(" and the device has no more"),
                      " (the cache of freed blocks was emptied first). Free arrays, or use a smaller batch");
  }
  ++st_.num_device_allocs;
  live_[p] = r;
  st_.reserved_bytes += static_cast<int64_t>(r);
  st_.allocated_bytes += static_cast<int64_t>(r);
  st_.peak_allocated_bytes = std::max(st_.peak_allocated_bytes, st_.allocated_bytes);
  return p;
}

size_t CachingAllocator::block_size(void* p) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = live_.find(p);
  return it == live_.end() ? 0 : it->second;
}

void CachingAllocator::release(void* p) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) fail<ValueError>("CachingAllocator::release: ", p, " is not a live block of ", mem_.name());
  size_t rounded = it->second;
  live_.erase(it);
  st_.allocated_bytes -= static_cast<int64_t>(rounded);
  if (caching_) {
    free_.emplace(rounded, p);
    st_.cached_bytes += static_cast<int64_t>(rounded);
    return;
  }
  mem_.raw_free(p);
  ++st_.num_device_frees;
  st_.reserved_bytes -= static_cast<int64_t>(rounded);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  free_cached_locked();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return st_;
}

}  // namespace graft::cuda
