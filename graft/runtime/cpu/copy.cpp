#include "graft/runtime/cpu/copy.h"

#include <cstring>
#include <vector>

#include "graft/runtime/cpu/parallel.h"

namespace graft::cpu {

namespace {
template <class E>
void row_copy(const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
  const E* se = reinterpret_cast<const E*>(s);
  E* de = reinterpret_cast<E*>(d);
  if (ss == 0) {
    E v = *se;
    for (int64_t i = 0; i < n; ++i) de[i * ds] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) de[i * ds] = se[i * ss];
  }
}

void copy_row(const char* s, int64_t ss, char* d, int64_t ds, int64_t n, size_t isz) {
  if (ss == 1 && ds == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * isz);
    return;
  }
  switch (isz) {
    case 1: row_copy<uint8_t>(s, ss, d, ds, n); break;
    case 2: row_copy<uint16_t>(s, ss, d, ds, n); break;
    case 4: row_copy<uint32_t>(s, ss, d, ds, n); break;
    case 8: row_copy<uint64_t>(s, ss, d, ds, n); break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds * isz, s + i * ss * isz, isz);
  }
}
}  // namespace

void strided_copy(const void* src, const int64_t* src_strides, void* dst, const int64_t* dst_strides,
                  const int64_t* shape_in, int nd, size_t isz) {
  if (nd == 0) {
    std::memcpy(dst, src, isz);
    return;
  }
  // merge adjacent dims that are contiguous in both src and dst, and drop size-1 dims
  std::vector<int64_t> shape, ss, ds;
  for (int i = 0; i < nd; ++i) {
    if (shape_in[i] == 0) return;
    if (shape_in[i] == 1) continue;
    if (!shape.empty() && ss.back() == src_strides[i] * shape_in[i] && ds.back() == dst_strides[i] * shape_in[i]) {
      shape.back() *= shape_in[i];
      ss.back() = src_strides[i];
      ds.back() = dst_strides[i];
    } else {
      shape.push_back(shape_in[i]);
      ss.push_back(src_strides[i]);
      ds.push_back(dst_strides[i]);
    }
  }
  if (shape.empty()) {
    std::memcpy(dst, src, isz);
    return;
  }
  int n = static_cast<int>(shape.size());
  int64_t inner = shape[n - 1];
  int64_t outer = 1;
  for (int i = 0; i < n - 1; ++i) outer *= shape[i];
  const char* s0 = static_cast<const char*>(src);
  char* d0 = static_cast<char*>(dst);
  parallel_for(outer, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, inner)), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(static_cast<size_t>(n), 0);
    int64_t rem = b;
    for (int i = n - 2; i >= 0; --i) {
      idx[i] = rem % shape[i];
      rem /= shape[i];
    }
    for (int64_t o = b; o < e; ++o) {
      int64_t so = 0, dO = 0;
      for (int i = 0; i < n - 1; ++i) {
        so += idx[i] * ss[i];
        dO += idx[i] * ds[i];
      }
      copy_row(s0 + so * static_cast<int64_t>(isz), ss[n - 1], d0 + dO * static_cast<int64_t>(isz), ds[n - 1], inner,
               isz);
      for (int i = n - 2; i >= 0; --i) {
        if (++idx[i] < shape[i]) break;
        idx[i] = 0;
      }
    }
  });
}

void fill(void* dst, const void* value, int64_t n, size_t isz) {
  int64_t zero = 0, one = 1;
  strided_copy(value, &zero, dst, &one, &n, 1, isz);
}

}  // namespace graft::cpu
