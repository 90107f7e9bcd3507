// libFuzzer target: .npy and .npz files. Any input loads or is rejected with graft::Error; what loads
// has exactly its shape's bytes, and saves and loads again to the same values.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "graft/core/error.h"
#include "graft/io/npy.h"

namespace {
void check(const graft::Array& a) {
  if (a.nbytes() != static_cast<size_t>(a.size()) * graft::itemsize(a.dtype())) __builtin_trap();
  graft::Array b = graft::io::parse_npy(graft::io::npy_bytes(a));
  if (b.shape() != a.shape() || b.dtype() != a.dtype() ||
      std::memcmp(b.raw_data(), a.raw_data(), a.nbytes()) != 0)
    __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
      for (auto& [name, a] : graft::io::parse_npz(bytes, "fuzz.npz")) check(a);
    } else {
      check(graft::io::parse_npy(bytes, "fuzz.npy"));
    }
  } catch (const graft::Error&) {
  }
  return 0;
}
