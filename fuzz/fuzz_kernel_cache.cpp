// libFuzzer target: the kernel disk cache's files. The checker accepts a file only when it is whole and
// written for the key asked (never an object of another key, a truncated one or one whose bytes
// changed), and never reads outside the file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "graft/runtime/cpu/llvm_jit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t klen = data[0] % 48;
  if (size < 1 + klen) return 0;
  std::string key(reinterpret_cast<const char*>(data + 1), klen);
  std::string file(reinterpret_cast<const char*>(data + 1 + klen), size - 1 - klen);
  auto where = graft::cpu::cached_object_in(file, key);
  if (where && (where->first > file.size() || where->second > file.size() - where->first)) __builtin_trap();
  // a file the writer makes for (key, object) is accepted and gives the object back
  std::string made = graft::cpu::make_cache_file(key, file.data(), file.size());
  auto back = graft::cpu::cached_object_in(made, key);
  if (!back || made.compare(back->first, back->second, file) != 0) __builtin_trap();
  // one flipped byte anywhere is refused
  if (!made.empty()) {
    made[data[0] % made.size()] ^= 0x5a;
    if (graft::cpu::cached_object_in(made, key)) __builtin_trap();
  }
  return 0;
}
