// libFuzzer target: IDX files, plain or gzip. Any input is read or rejected with graft::Error, reading
// no more than the header promises.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graft/core/error.h"
#include "graft/data/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    graft::Array a = graft::data::read_idx_bytes(bytes, "fuzz.idx");
    if (a.nbytes() > (size_t(64) << 20)) __builtin_trap();  // more than any input here can hold
  } catch (const graft::Error&) {
  }
  return 0;
}
