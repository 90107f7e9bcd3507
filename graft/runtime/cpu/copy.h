// Strided copies: the kernel behind broadcast, transpose, reverse, slice, pad and concatenate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::cpu {

/// Copies an n-d block of `shape` (rank nd) from src to dst. Strides are in elements and may be zero
/// (broadcast) or negative (reverse). Elements are `itemsize` bytes. Runs in parallel when large.
void strided_copy(const void* src, const int64_t* src_strides, void* dst, const int64_t* dst_strides,
                  const int64_t* shape, int nd, size_t itemsize);

/// Fills n elements of `itemsize` bytes at dst with the element at `value`.
void fill(void* dst, const void* value, int64_t n, size_t itemsize);

}  // namespace graft::cpu
