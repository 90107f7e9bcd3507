// Bounds on the nesting of outside input. Parsers of files and text from outside the process (a
// safetensors header, an exported program's metadata, a .npy header) check the depth of brackets first,
// so that a hostile input nested tens of thousands of levels deep is refused with an error instead of
// exhausting the stack in a recursive parser, printer or destructor.
#pragma once

#include <string_view>

namespace graft::io {

/// How deeply brackets ([ { ( ) nest in `text`, counted outside of quoted strings (JSON's "..." with
/// backslash escapes, and Python's '...'): stops counting at `limit` + 1, so the scan of a hostile
/// input ends early.
int nesting_depth(std::string_view text, int limit);

}  // namespace graft::io
