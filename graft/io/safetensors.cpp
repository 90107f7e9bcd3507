#include "graft/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace graft::io {

namespace {

const char* st_dtype(DType d) {
  switch (d) {
    case DType::bool_: return "BOOL";
    case DType::i8: return "I8";
    case DType::i16: return "I16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
    case DType::u16: return "U16";
    case DType::u32: return "U32";
    case DType::u64: return "U64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
  }
  return "?";
}

std::optional<DType> from_st_dtype(const std::string& s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (s == st_dtype(static_cast<DType>(i))) return static_cast<DType>(i);
  return std::nullopt;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  fail<IOError>("'", path, "' is not a valid safetensors file: ", why);
}

void name_leaves(const Tree& t, const std::string& prefix, std::vector<std::string>& out) {
  if (t.is_leaf()) {
    out.push_back(prefix.empty() ? "." : prefix);
  } else if (t.is_list()) {
    for (size_t i = 0; i < t.items().size(); ++i)
      name_leaves(t.items()[i], prefix.empty() ? std::to_string(i) : prefix + "." + std::to_string(i), out);
  } else if (t.is_dict()) {
    for (auto& [k, c] : t.dict()) name_leaves(c, prefix.empty() ? k : prefix + "." + k, out);
  }
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail<IOError>("cannot write '", path, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail<IOError>("cannot write '", path, "': ", std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail<IOError>("cannot write '", path, "': ", std::strerror(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail<IOError>("cannot write '", path, "': ", std::strerror(e));
  }
  // make the rename itself durable
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void save_tensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  std::vector<Array> order;
  for (auto& [name, a] : tensors) {
    if (name == "__metadata__") fail<ValueError>("safetensors: '__metadata__' is not a valid tensor name");
    Array c = a.concretize("save");
    header[name] = {{"dtype", st_dtype(c.dtype())},
                    {"shape", std::vector<int64_t>(c.shape().begin(), c.shape().end())},
                    {"data_offsets", {offset, offset + c.nbytes()}}};
    offset += c.nbytes();
    order.push_back(c);
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // data starts 8-byte aligned
  std::string bytes(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  bytes += h;
  bytes.reserve(bytes.size() + offset);
  for (auto& c : order) bytes.append(static_cast<const char*>(c.raw_data()), c.nbytes());
  write_file_atomic(path, bytes);
}

TensorMap load_tensors(const std::string& path, Metadata* metadata) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail<IOError>("cannot open '", path, "': ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) corrupt(path, "shorter than the 8-byte header size");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > bytes.size() - 8) corrupt(path, "the header size (" + std::to_string(n) + ") runs past the end of the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    corrupt(path, std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) corrupt(path, "the header is not a JSON object");
  size_t data_start = 8 + n, data_size = bytes.size() - data_start;
  TensorMap out;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) corrupt(path, "__metadata__ must be an object of strings");
      if (metadata)
        for (auto& [k, v] : info.items()) {
          if (!v.is_string()) corrupt(path, "__metadata__ values must be strings");
          (*metadata)[k] = v.get<std::string>();
        }
      continue;
    }
    try {
      auto d = from_st_dtype(info.at("dtype").get<std::string>());
      if (!d) corrupt(path, "tensor '" + name + "' has an unknown dtype " + info.at("dtype").dump());
      Shape shape;
      for (auto& s : info.at("shape")) {
        int64_t v = s.get<int64_t>();
        if (v < 0) corrupt(path, "tensor '" + name + "' has a negative dimension");
        shape.push_back(v);
      }
      auto offs = info.at("data_offsets");
      if (!offs.is_array() || offs.size() != 2) corrupt(path, "tensor '" + name + "' needs data_offsets [begin, end]");
      size_t b = offs[0].get<size_t>(), e = offs[1].get<size_t>();
      if (b > e || e > data_size) corrupt(path, "tensor '" + name + "' points outside the data (file truncated?)");
      if (e - b != static_cast<size_t>(numel(shape)) * itemsize(*d))
        corrupt(path, "tensor '" + name + "' has " + std::to_string(e - b) + " bytes for shape (" + shape_str(shape) +
                          ") of " + std::string(short_name(*d)));
      ranges.emplace_back(b, e);
      out[name] = Array::from_data(bytes.data() + data_start + b, shape, *d);
    } catch (const nlohmann::json::exception& ex) {
      corrupt(path, "tensor '" + name + "' has a malformed entry (" + ex.what() + ")");
    }
  }
  // the data must be covered exactly, without holes or overlaps (as the reference loader demands)
  std::sort(ranges.begin(), ranges.end());
  size_t at = 0;
  for (auto& [b, e] : ranges) {
    if (b != at) corrupt(path, "tensor data has holes or overlaps");
    at = e;
  }
  if (at != data_size) corrupt(path, "the file has " + std::to_string(data_size - at) + " unindexed trailing bytes");
  return out;
}

std::vector<std::string> leaf_names(const Tree& t) {
  std::vector<std::string> names;
  name_leaves(t, "", names);
  return names;
}

void save(const std::string& path, const Tree& tree, const Metadata& metadata) {
  TensorMap m;
  auto names = leaf_names(tree);
  auto leaves = tree.leaves();
  for (size_t i = 0; i < names.size(); ++i)
    if (!m.emplace(names[i], leaves[i]).second) fail<ValueError>("save: two leaves are both named '", names[i], "'");
  save_tensors(path, m, metadata);
}

Tree load(const std::string& path, const Tree& like, Metadata* metadata) {
  TensorMap m = load_tensors(path, metadata);
  auto names = leaf_names(like);
  auto want = like.leaves();
  std::vector<Array> leaves;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = m.find(names[i]);
    if (it == m.end()) fail<IOError>("'", path, "' has no tensor '", names[i], "'");
    const Array& a = it->second;
    if (a.shape() != want[i].shape() || a.dtype() != want[i].dtype())
      fail<IOError>("'", path, "': tensor '", names[i], "' is ", a.aval().str(), ", the model expects ",
                    want[i].aval().str());
    leaves.push_back(a);
  }
  return like.with_leaves(leaves);
}

}  // namespace graft::io
