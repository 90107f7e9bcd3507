// Checkpoints in the safetensors format (readable by the `safetensors` tools of other frameworks):
// an 8-byte little-endian header size, a JSON header naming each tensor's dtype, shape and byte
// range, then the raw little-endian data.
//
//   io::save("model.safetensors", params);             // Tree -> file, written atomically
//   Tree restored = io::load("model.safetensors", params);  // same structure as the template
//
// Tree leaves are named by their path, joined with '.' ("0.w", "layers.1.b"). Writes go to a
// temporary file in the same directory that is renamed into place after an fsync, so a crash never
// leaves a half-written checkpoint. Loading validates everything and raises graft::IOError naming
// the file and the problem on corrupt or truncated input.
#pragma once

#include <map>
#include <string>

#include "graft/core/array.h"
#include "graft/transforms/pytree.h"

namespace graft::io {

using TensorMap = std::map<std::string, Array>;
using Metadata = std::map<std::string, std::string>;

/// Writes named arrays (concrete) and optional string metadata.
void save_tensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});
/// The bytes of a safetensors file holding `tensors` (what save_tensors writes).
std::string tensors_to_bytes(const TensorMap& tensors, const Metadata& metadata = {});
/// Reads every tensor of a file; metadata (if any) into *metadata.
TensorMap load_tensors(const std::string& path, Metadata* metadata = nullptr);
/// The same for a file's bytes already in memory (`path` names it in errors).
TensorMap load_tensors_from_bytes(const std::string& bytes, Metadata* metadata = nullptr,
                                  const std::string& path = "<memory>");

/// Leaf names of a tree ("a.0.w" style) in leaf order.
std::vector<std::string> leaf_names(const Tree& t);
/// Saves a parameter tree (its leaves, named by path).
void save(const std::string& path, const Tree& tree, const Metadata& metadata = {});
/// Loads a parameter tree with the structure of `like`; every leaf must be present with the same
/// shape and dtype (IOError otherwise).
Tree load(const std::string& path, const Tree& like, Metadata* metadata = nullptr);

/// Reads a whole regular file (IOError naming it when it cannot).
std::string read_file(const std::string& path);
/// Writes `bytes` to `path` atomically (temporary file + fsync + rename).
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace graft::io
