#include "graft/io/nesting.h"

namespace graft::io {

int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  char quote = 0;  // the quote character of the string being skipped, or 0
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') {
        ++i;  // an escaped character, the quote included
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{' || c == '(') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}' || c == ')') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace graft::io
