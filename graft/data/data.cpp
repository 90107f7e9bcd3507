#include "graft/data/data.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "graft/ops/ops.h"
#include "graft/random/random.h"

namespace graft::data {

namespace {

// The bytes of a file (an IOError naming it if it cannot be read).
std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail<IOError>("cannot read '", path, "': it is a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail<IOError>("cannot open '", path, "': ", std::strerror(errno ? errno : ENOENT));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail<IOError>("cannot read '", path, "'");
  return bytes;
}

// An IDX stream over a file's bytes, gzip (one or more members) or plain, read in order with every
// failure an IOError naming the file. Reading is driven by the header: its size claim is checked
// against the actual data as the data arrives, so a small file that claims (or decompresses to) a huge
// size never makes graft allocate more than the data it holds.
class IdxStream {
 public:
  IdxStream(const std::string& bytes, const std::string& name) : in_(bytes), name_(name) {
    gzip_ = bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b;
    if (gzip_) {
      std::memset(&z_, 0, sizeof z_);
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail<IOError>("'", name_, "': cannot start zlib");
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data()));
      z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.size(), UINT32_MAX));
      fed_ = z_.avail_in;
    }
  }
  ~IdxStream() {
    if (gzip_) inflateEnd(&z_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  // Reads up to n bytes into dst; returns how many arrived (fewer only at the end of the data).
  size_t read(void* dst, size_t n) {
    if (n == 0) return 0;  // (dst may be null then: an IDX header of no dimensions)
    if (!gzip_) {
      size_t k = std::min(n, in_.size() - pos_);
      std::memcpy(dst, in_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    z_.next_out = static_cast<Bytef*>(dst);
    size_t done = 0;
    while (done < n && !ended_) {
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - done, UINT32_MAX));
      uInt before = z_.avail_out;
      int r = inflate(&z_, Z_NO_FLUSH);
      done += before - z_.avail_out;
      if (z_.avail_in == 0 && fed_ < in_.size()) feed();
      if (r == Z_STREAM_END) {
        // another gzip member may follow (as gzip -c a b > c makes); trailing zero padding ends it
        skip_zeros();
        if (z_.avail_in == 0) {
          ended_ = true;
        } else if (inflateReset(&z_) != Z_OK) {
          corrupt("cannot restart zlib");
        }
      } else if (r == Z_BUF_ERROR && z_.avail_in == 0) {
        corrupt("the gzip stream is truncated");
      } else if (r != Z_OK && r != Z_BUF_ERROR) {
        corrupt(z_.msg ? z_.msg : "invalid gzip data");
      }
    }
    return done;
  }
  void read_exact(void* dst, size_t n, const char* what) {
    if (read(dst, n) != n) fail<IOError>("'", name_, "' is truncated: it ends inside the ", what);
  }
  bool at_end() {
    char c;
    return read(&c, 1) == 0;
  }

 private:
  [[noreturn]] void corrupt(const char* why) { fail<IOError>("'", name_, "' is corrupt or truncated (", why, ")"); }
  void feed() {  // inputs beyond 4 GiB are fed to zlib in pieces
    z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.size() - fed_, UINT32_MAX));
    fed_ += z_.avail_in;
  }
  void skip_zeros() {
    while (z_.avail_in > 0 && *z_.next_in == 0) {
      ++z_.next_in;
      --z_.avail_in;
    }
  }
  const std::string& in_;
  std::string name_;
  bool gzip_ = false, ended_ = false;
  size_t pos_ = 0, fed_ = 0;
  z_stream z_;
};

}  // namespace

Array read_idx(const std::string& path) { return read_idx_bytes(read_file_bytes(path), path); }

Array read_idx_bytes(const std::string& bytes, const std::string& path) {
  IdxStream in(bytes, path);
  uint8_t magic[4];
  in.read_exact(magic, 4, "IDX header");
  if (magic[0] != 0 || magic[1] != 0) fail<IOError>("'", path, "' is not an IDX file (bad magic number)");
  DType d;
  switch (magic[2]) {
    case 0x08: d = DType::u8; break;
    case 0x09: d = DType::i8; break;
    case 0x0B: d = DType::i16; break;
    case 0x0C: d = DType::i32; break;
    case 0x0D: d = DType::f32; break;
    case 0x0E: d = DType::f64; break;
    default: fail<IOError>("'", path, "': unknown IDX element type 0x", std::hex, int(magic[2]));
  }
  size_t nd = magic[3];
  std::vector<uint8_t> dims(4 * nd);
  in.read_exact(dims.data(), dims.size(), "IDX header");
  Shape shape;
  for (size_t i = 0; i < nd; ++i)
    shape.push_back((int64_t(dims[4 * i]) << 24) | (int64_t(dims[4 * i + 1]) << 16) | (int64_t(dims[4 * i + 2]) << 8) |
                    dims[4 * i + 3]);
  int64_t count = 0;
  try {
    count = checked_numel(shape, "read_idx");
  } catch (const ValueError&) {
    fail<IOError>("'", path, "': the IDX header's shape (", shape_str(shape), ") is too large to be real");
  }
  size_t isz = itemsize(d), need = static_cast<size_t>(count) * isz;
  // the data arrives in pieces into a buffer that grows with it: a header's claim alone allocates nothing
  std::vector<uint8_t> raw;
  constexpr size_t kPiece = size_t(16) << 20;
  while (raw.size() < need) {
    size_t at = raw.size(), want = std::min(kPiece, need - at);
    raw.resize(at + want);
    size_t got = in.read(raw.data() + at, want);
    if (got < want)
      fail<IOError>("'", path, "' is truncated: the header promises ", need, " bytes of data, the file has ", at + got);
  }
  if (!in.at_end()) fail<IOError>("'", path, "' has data after the ", need, " bytes its header (", shape_str(shape), ") promises");
  Array out = Array::empty(Aval(shape, d));
  uint8_t* dst = static_cast<uint8_t*>(out.concrete()->data());
  // IDX stores big-endian values
  for (size_t i = 0; i < need; i += isz)
    for (size_t k = 0; k < isz; ++k) dst[i + k] = raw[i + isz - 1 - k];
  return out;
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  auto file = [&](const char* name) {
    std::string p = dir + "/" + name;
    if (!std::filesystem::exists(p))
      fail<IOError>("Fashion-MNIST file '", p, "' not found: install Debian's dataset-fashion-mnist package "
                    "(apt-get install dataset-fashion-mnist) or pass the directory that holds the files");
    return read_idx(p);
  };
  // the files must be what Fashion-MNIST is: u8 images of 28x28, u8 labels in [0, 10) (a label outside
  // it would train to loss 0 through an all-zero one-hot row)
  auto images = [&](const char* name) {
    Array a = file(name);
    if (a.dtype() != DType::u8 || a.ndim() != 3 || a.shape(1) != 28 || a.shape(2) != 28)
      fail<IOError>("Fashion-MNIST file '", dir, "/", name, "' holds ", a.aval().str(), ", not u8[n,28,28] images");
    return a;
  };
  auto labels = [&](const char* name) {
    Array a = file(name);
    if (a.dtype() != DType::u8 || a.ndim() != 1)
      fail<IOError>("Fashion-MNIST file '", dir, "/", name, "' holds ", a.aval().str(), ", not u8[n] labels");
    if (a.size() > 0 && max(a).item<int64_t>() >= 10)
      fail<IOError>("Fashion-MNIST file '", dir, "/", name, "' has a label ", max(a).item<int64_t>(),
                    " outside the 10 classes [0, 10)");
    return a.astype(DType::i32);
  };
  FashionMnist ds;
  ds.train_images = images("train-images-idx3-ubyte.gz");
  ds.train_labels = labels("train-labels-idx1-ubyte.gz");
  ds.test_images = images("t10k-images-idx3-ubyte.gz");
  ds.test_labels = labels("t10k-labels-idx1-ubyte.gz");
  if (ds.train_images.shape(0) != ds.train_labels.shape(0) || ds.test_images.shape(0) != ds.test_labels.shape(0))
    fail<IOError>("Fashion-MNIST in '", dir, "': image and label counts differ");
  return ds;
}

TextCorpus load_text(const std::vector<std::string>& paths, double test_fraction) {
  namespace fs = std::filesystem;
  if (!(test_fraction >= 0 && test_fraction < 1))
    fail<ValueError>("load_text: test_fraction must be in [0, 1), got ", test_fraction);
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> inside;
      for (auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file(ec)) inside.push_back(e.path().string());
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      files.push_back(p);
    }
  }
  TextCorpus c;
  std::string train, test;
  std::vector<std::string> seen;  // canonical paths: GPL is a link to GPL-3
  for (const std::string& f : files) {
    std::error_code ec;
    std::string canon = fs::weakly_canonical(f, ec).string();
    if (!ec && std::find(seen.begin(), seen.end(), canon) != seen.end()) continue;
    seen.push_back(canon);
    std::string bytes = read_file_bytes(f);
    size_t cut = bytes.size() - static_cast<size_t>(double(bytes.size()) * test_fraction);
    train += bytes.substr(0, cut);
    test += bytes.substr(cut);
    c.files.push_back(f);
  }
  if (train.empty()) fail<ValueError>("load_text: no text in ", paths.empty() ? std::string("(no paths)") : paths[0]);
  auto to_array = [](const std::string& b) {
    return Array::from_data(b.data(), {static_cast<int64_t>(b.size())}, DType::u8);
  };
  c.train = to_array(train);
  c.test = to_array(test);
  return c;
}

std::pair<Array, Array> next_token_windows(const Array& tokens, int64_t len, int64_t offset) {
  if (tokens.ndim() != 1 || !is_integer(tokens.dtype()))
    fail<ShapeError>("next_token_windows: tokens must be a vector of integers, got ", tokens.aval().str());
  int64_t n = tokens.shape(0);
  if (len <= 0 || offset < 0) fail<ValueError>("next_token_windows: len must be positive and offset not negative");
  int64_t windows = offset + 1 < n ? (n - offset - 1) / len : 0;
  if (windows < 1)
    fail<ValueError>("next_token_windows: ", n, " tokens hold no window of ", len, " (+1) from offset ", offset);
  int64_t used = windows * len;
  Array t = tokens.astype(DType::i32);
  return {reshape(t[{slice(offset, offset + used)}], {windows, len}),
          reshape(t[{slice(offset + 1, offset + used + 1)}], {windows, len})};
}

Batches::Batches(Array x, Array y, int64_t batch_size, std::optional<Array> key, bool drop_last)
    : x_(std::move(x)), y_(std::move(y)), batch_(batch_size) {
  if (batch_size <= 0) fail<ValueError>("batches: batch_size must be positive, got ", batch_size);
  if (x_.ndim() == 0 || y_.ndim() == 0 || x_.shape(0) != y_.shape(0))
    fail<ShapeError>("batches: x ", x_.aval().str(), " and y ", y_.aval().str(), " must have the same first axis");
  int64_t n = x_.shape(0);
  if (key) order_ = random::permutation(*key, n);
  for (int64_t s = 0; s < n; s += batch_size)
    if (!drop_last || s + batch_size <= n) starts_.push_back(s);
}

std::pair<Array, Array> Batches::operator[](int64_t i) const {
  if (i < 0 || i >= size()) fail<ValueError>("batches: index ", i, " out of range (", size(), " batches)");
  int64_t s = starts_[static_cast<size_t>(i)], e = std::min(s + batch_, x_.shape(0));
  if (!order_) return {x_[{slice(s, e)}], y_[{slice(s, e)}]};
  Array idx = (*order_)[{slice(s, e)}];
  return {take(x_, idx, 0), take(y_, idx, 0)};
}

Batches batches(const Array& x, const Array& y, int64_t batch_size, std::optional<Array> key, bool drop_last) {
  return Batches(x, y, batch_size, std::move(key), drop_last);
}

}  // namespace graft::data
