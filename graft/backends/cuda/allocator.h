// The caching allocator of device memory, written against a small seam (DeviceMemory) so that its
// host logic (size classes, reuse, the cap, out-of-memory recovery, statistics) is tested without a GPU.
//
// Sizes are rounded to 512 bytes below 1 MiB and to 1 MiB above (PyTorch's classes, coarser at the top
// so a training step's recurring sizes share blocks). A freed block is kept in a free list and handed
// to the next request of its size class or a little larger (best fit, at most 1/8 larger).
// Reuse is stream-ordered without events: each device has one stream, and allocation, kernels and
// frees all follow its order, so a block freed by the host may be given to the next kernel at once
// (the kernels that read it were queued before). When the device has no memory left, or the reserved
// bytes would pass the cap, the cache is emptied and the request retried once; then MemoryError.
// Caching off (GRAFT_CUDA_CACHING=0, for compute-sanitizer) frees every block on release.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace graft::cuda {

/// What the allocator needs from a device. raw_alloc returns null when the device is out of memory.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* raw_alloc(size_t nbytes) = 0;
  virtual void raw_free(void* p) = 0;
  /// Names the device in messages ("cuda:0").
  virtual std::string name() const = 0;
};

/// Counters of one device's allocator (graft::cuda::memory_stats()).
struct MemoryStats {
  int64_t allocated_bytes = 0;       ///< held by live arrays (rounded sizes)
  int64_t peak_allocated_bytes = 0;
  int64_t reserved_bytes = 0;        ///< taken from the device: allocated + cached
  int64_t cached_bytes = 0;          ///< free blocks kept for reuse
  int64_t num_allocs = 0;            ///< requests served
  int64_t num_cache_hits = 0;        ///< requests served from the cache
  int64_t num_device_allocs = 0, num_device_frees = 0;
  int64_t num_ooms = 0;              ///< requests that emptied the cache to retry
};

class CachingAllocator {
 public:
  /// `limit`: the most bytes reserved from the device at once (0: no cap besides the device's own).
  CachingAllocator(DeviceMemory& mem, bool caching, size_t limit);
  /// Returns the cached blocks to the device (live blocks stay their holders').
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  /// A block of at least n bytes (n = 0 gives a block too).
  void* allocate(size_t n);
  /// Gives back a block that allocate() returned.
  void release(void* p);
  /// The size of a live block (its size class).
  size_t block_size(void* p) const;
  /// Returns every cached block to the device.
  void empty_cache();
  MemoryStats stats() const;
  static size_t round_size(size_t n);

 private:
  /// A cached block for size class r (best fit), moved to the live blocks; null when none fits.
  void* take_cached(size_t r);
  void free_cached_locked();
  DeviceMemory& mem_;
  bool caching_;
  size_t limit_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::unordered_map<void*, size_t> live_;
  MemoryStats st_;
};

}  // namespace graft::cuda
