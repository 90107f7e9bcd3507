#include "graft/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "graft/io/nesting.h"

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
    case DType::c64: return "C64";  // safetensors has complex64, not complex128
    case DType::c128: return "?";
  }
  return "?";
}

std::optional<DType> from_st_dtype(const std::string& s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (s != "?" && s == st_dtype(static_cast<DType>(i))) return static_cast<DType>(i);
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

// Every failure is an IOError naming the file (a directory, a missing file, a read error), never a
// std::ios_base::failure.
std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail<IOError>("cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail<IOError>("cannot read '", path, "': ", S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = r < 0 ? errno : 0;
      ::close(fd);
      fail<IOError>("cannot read '", path, "': ", e ? std::strerror(e) : "the file shrank while it was read");
    }
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  return bytes;
}

namespace {

// A temporary name in the target's directory that no other writer (thread or process) uses at the same
// time: pid, a per-process counter and the clock.
std::string temp_name(const std::filesystem::path& dir, const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return (dir / ("." + base + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
                 std::to_string(t % 1000000007)))
      .string();
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.filename().empty()) fail<IOError>("cannot write '", path, "': the path names a directory");
  std::error_code ec;
  if (fs::is_directory(target, ec)) fail<IOError>("cannot write '", path, "': it is a directory");
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = temp_name(dir, target.filename().string());
  // a new file of our own: never follows a link planted at the temporary name, never opens one that exists
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail<IOError>("cannot write '", path, "': ", std::strerror(errno));
  auto abandon = [&](int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail<IOError>("cannot write '", path, "': ", std::strerror(e));
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      abandon(errno);
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) abandon(errno);
  if (::close(fd) != 0) {
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
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string tensors_to_bytes(const TensorMap& tensors, const Metadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  std::vector<Array> order;
  for (auto& [name, a] : tensors) {
    if (name == "__metadata__") fail<ValueError>("safetensors: '__metadata__' is not a valid tensor name");
    Array c = a.concretize("save");
    if (c.dtype() == DType::c128)
      fail<TypeError>("safetensors: the format has no complex128 type (tensor '", name,
                      "'); save it as complex64, or as two float64 tensors of its parts");
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
  return bytes;
}

void save_tensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  write_file_atomic(path, tensors_to_bytes(tensors, metadata));
}

namespace {

// The reference implementation's limit on the JSON header (100 MB): a header claiming more is corrupt.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
// A header nests three levels (the object, a tensor's entry, its shape); a header nested deeper than
// this is refused before it is parsed (nlohmann's printer and destructor recurse per level).
constexpr int kMaxHeaderDepth = 16;

// Parses the header, rejecting a key that appears twice in the same object (nlohmann's parser would
// keep the last one silently).
nlohmann::json parse_header(const std::string& path, const char* begin, const char* end) {
  if (int d = nesting_depth(std::string_view(begin, static_cast<size_t>(end - begin)), kMaxHeaderDepth);
      d > kMaxHeaderDepth)
    corrupt(path, "the header nests more than " + std::to_string(kMaxHeaderDepth) + " levels deep");
  std::vector<std::set<std::string>> seen;
  auto cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) seen.resize(static_cast<size_t>(depth) + 1), seen[static_cast<size_t>(depth)].clear();
    if (ev == E::key) {
      auto& keys = seen[static_cast<size_t>(depth) - 1];  // a key is reported one level inside its object
      if (!keys.insert(parsed.get<std::string>()).second)
        corrupt(path, "the header names '" + parsed.get<std::string>() + "' twice");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(begin, end, cb);
  } catch (const nlohmann::json::exception& e) {
    corrupt(path, std::string("the header is not valid JSON (") + e.what() + ")");
  }
}

// A value as error messages quote it: its JSON, cut short (a hostile header's value may be megabytes).
std::string brief(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() <= 80 ? s : s.substr(0, 77) + "...";
}

// A non-negative integer written as a JSON integer (not 2.0, "2", null or -1).
uint64_t json_size(const std::string& path, const std::string& name, const char* field, const nlohmann::json& v) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    corrupt(path, "tensor '" + name + "' has a " + field + " that is not a non-negative integer: " + brief(v));
  return v.get<uint64_t>();
}

}  // namespace

TensorMap load_tensors(const std::string& path, Metadata* metadata) {
  return load_tensors_from_bytes(read_file(path), metadata, path);
}

TensorMap load_tensors_from_bytes(const std::string& bytes, Metadata* metadata, const std::string& path) {
  if (bytes.size() < 8) corrupt(path, "shorter than the 8-byte header size");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeaderBytes) corrupt(path, "the header size (" + std::to_string(n) + ") is over the 100 MB limit");
  if (n > bytes.size() - 8) corrupt(path, "the header size (" + std::to_string(n) + ") runs past the end of the file");
  if (n < 2 || bytes[8] != '{') corrupt(path, "the header is not a JSON object");
  nlohmann::json header = parse_header(path, bytes.data() + 8, bytes.data() + 8 + n);
  if (!header.is_object()) corrupt(path, "the header is not a JSON object");
  size_t data_start = 8 + n, data_size = bytes.size() - data_start;
  TensorMap out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) corrupt(path, "__metadata__ must be an object of strings");
      for (auto& [k, v] : info.items()) {
        if (!v.is_string()) corrupt(path, "__metadata__ value '" + k + "' is not a string: " + brief(v));
        if (metadata) (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    if (!info.is_object()) corrupt(path, "tensor '" + name + "' is not an object");
    for (auto& [field, v] : info.items())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        corrupt(path, "tensor '" + name + "' has an unknown field '" + field + "'");
    if (!info.contains("dtype") || !info["dtype"].is_string())
      corrupt(path, "tensor '" + name + "' needs a dtype string");
    auto d = from_st_dtype(info["dtype"].get<std::string>());
    if (!d) corrupt(path, "tensor '" + name + "' has an unknown dtype " + brief(info["dtype"]));
    if (!info.contains("shape") || !info["shape"].is_array()) corrupt(path, "tensor '" + name + "' needs a shape list");
    Shape shape;
    for (auto& v : info["shape"]) {
      uint64_t dim = json_size(path, name, "dimension", v);
      if (dim > static_cast<uint64_t>(kMaxElements)) corrupt(path, "tensor '" + name + "' has a dimension over 2^48");
      shape.push_back(static_cast<int64_t>(dim));
    }
    if (shape.size() > 64) corrupt(path, "tensor '" + name + "' has more than 64 dimensions");
    int64_t count = 0;
    try {
      count = checked_numel(shape, "safetensors");
    } catch (const ValueError&) {
      corrupt(path, "tensor '" + name + "' has a shape (" + shape_str(shape) + ") over 2^48 elements");
    }
    if (!info.contains("data_offsets") || !info["data_offsets"].is_array() || info["data_offsets"].size() != 2)
      corrupt(path, "tensor '" + name + "' needs data_offsets [begin, end]");
    uint64_t b = json_size(path, name, "data offset", info["data_offsets"][0]);
    uint64_t e = json_size(path, name, "data offset", info["data_offsets"][1]);
    if (b > e || e > data_size) corrupt(path, "tensor '" + name + "' points outside the data (file truncated?)");
    uint64_t want = static_cast<uint64_t>(count) * itemsize(*d);
    if (e - b != want)
      corrupt(path, "tensor '" + name + "' has " + std::to_string(e - b) + " bytes for shape (" + shape_str(shape) +
                        ") of " + std::string(short_name(*d)) + " (" + std::to_string(want) + " bytes)");
    const char* data = bytes.data() + data_start + b;
    if (*d == DType::bool_)
      for (uint64_t i = 0; i < want; ++i)
        if (static_cast<uint8_t>(data[i]) > 1)
          corrupt(path, "tensor '" + name + "' is BOOL but byte " + std::to_string(i) + " is " +
                            std::to_string(static_cast<uint8_t>(data[i])) + " (not 0 or 1)");
    ranges.emplace_back(b, e);
    out[name] = Array::from_data(data, shape, *d);
  }
  // the data must be covered exactly, without holes or overlaps (as the reference loader demands)
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
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
