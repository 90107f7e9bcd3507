// NumPy's files: .npy (one array) and .npz (a zip archive of .npy files, as np.savez writes).
//
//   io::save_npy("x.npy", x);                       Array x = io::load_npy("x.npy");
//   io::save_npz("arrays.npz", {{"w", w}, {"b", b}});  io::TensorMap m = io::load_npz("arrays.npz");
//
// Written: format version 1.0 (2.0 when the header needs it), little-endian, C order, the header
// padded so that the data starts at a multiple of 64 bytes; .npz members stored uncompressed. Read:
// versions 1.0-3.0, either byte order, C or Fortran order; .npz members stored or deflated (so
// np.savez_compressed files load too), checked against their CRC-32. Files are written atomically.
// Bad files raise graft::IOError naming the file and the problem; dtypes NumPy has and graft does not
// (complex, strings, objects, structured) raise TypeError. bfloat16 has no NumPy type: saving it is a
// TypeError (cast to float32 first).
#pragma once

#include <string>

#include "graft/io/safetensors.h"

namespace graft::io {

/// The .npy bytes of a concrete array.
std::string npy_bytes(const Array& x);
/// Parses .npy bytes (`name` names them in errors).
Array parse_npy(const std::string& bytes, const std::string& name = "<memory>");
void save_npy(const std::string& path, const Array& x);
Array load_npy(const std::string& path);

/// The .npz bytes of named arrays (member "<name>.npy" each, in name order).
std::string npz_bytes(const TensorMap& arrays);
/// Parses .npz bytes: one array per member (the ".npy" suffix dropped from its name).
TensorMap parse_npz(const std::string& bytes, const std::string& name = "<memory>");
void save_npz(const std::string& path, const TensorMap& arrays);
TensorMap load_npz(const std::string& path);

}  // namespace graft::io
