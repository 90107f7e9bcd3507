// libFuzzer target: the jaxpr parser (graft/compiler/jaxpr_text.h), which reads exported programs and
// the compiler's cache entries. Any text must parse or throw graft::Error, never crash or hang; a text
// that parses must print to a text that parses back to the same text (the printer and the parser
// agree). Constants are not given, so a text with constvars is refused before any allocation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "graft/compiler/jaxpr_text.h"
#include "graft/core/error.h"
#include "graft/transforms/jit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = (graft::register_transform_primitives(), true);
  (void)registered;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string printed;
  try {
    printed = graft::parse_jaxpr(text, {}).str();
  } catch (const graft::Error&) {
    return 0;
  }
  try {
    if (graft::parse_jaxpr(printed, {}).str() != printed) std::abort();  // printing is not stable
  } catch (const graft::Error&) {
    std::abort();  // the printer wrote what the parser refuses
  }
  return 0;
}
