#include "graft/data/data.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "graft/ops/ops.h"
#include "graft/random/random.h"

namespace graft::data {

namespace {
std::vector<uint8_t> read_all(const std::string& path) {
  // gzopen reads plain files too (transparently), so one path covers .gz and raw IDX files
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail<IOError>("cannot open '", path, "': ", std::strerror(errno));
  std::vector<uint8_t> raw;
  std::vector<uint8_t> buf(1 << 20);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) raw.insert(raw.end(), buf.begin(), buf.begin() + n);
  int err = 0;
  const char* msg = gzerror(f, &err);
  bool bad = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  std::string why = bad ? msg : "";
  gzclose(f);
  if (bad) fail<IOError>("'", path, "' is corrupt or truncated (", why, ")");
  return raw;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t off) {
  return (uint32_t(b[off]) << 24) | (uint32_t(b[off + 1]) << 16) | (uint32_t(b[off + 2]) << 8) | b[off + 3];
}
}  // namespace

Array read_idx(const std::string& path) {
  std::vector<uint8_t> raw = read_all(path);
  if (raw.size() < 4) fail<IOError>("'", path, "' is too short for an IDX header");
  if (raw[0] != 0 || raw[1] != 0) fail<IOError>("'", path, "' is not an IDX file (bad magic number)");
  DType d;
  switch (raw[2]) {
    case 0x08: d = DType::u8; break;
    case 0x09: d = DType::i8; break;
    case 0x0B: d = DType::i16; break;
    case 0x0C: d = DType::i32; break;
    case 0x0D: d = DType::f32; break;
    case 0x0E: d = DType::f64; break;
    default: fail<IOError>("'", path, "': unknown IDX element type 0x", std::hex, int(raw[2]));
  }
  size_t nd = raw[3], off = 4 + 4 * nd;
  if (raw.size() < off) fail<IOError>("'", path, "': truncated IDX header");
  Shape shape;
  for (size_t i = 0; i < nd; ++i) shape.push_back(be32(raw, 4 + 4 * i));
  size_t need = static_cast<size_t>(numel(shape)) * itemsize(d);
  if (raw.size() - off < need)
    fail<IOError>("'", path, "' is truncated: the header promises ", need, " bytes of data, the file has ",
                  raw.size() - off);
  Array out = Array::empty(Aval(shape, d));
  uint8_t* dst = static_cast<uint8_t*>(out.concrete()->data());
  size_t isz = itemsize(d);
  // IDX stores big-endian values
  for (size_t i = 0; i < need; i += isz)
    for (size_t k = 0; k < isz; ++k) dst[i + k] = raw[off + i + isz - 1 - k];
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
  FashionMnist ds;
  ds.train_images = file("train-images-idx3-ubyte.gz");
  ds.train_labels = file("train-labels-idx1-ubyte.gz").astype(DType::i32);
  ds.test_images = file("t10k-images-idx3-ubyte.gz");
  ds.test_labels = file("t10k-labels-idx1-ubyte.gz").astype(DType::i32);
  if (ds.train_images.shape(0) != ds.train_labels.shape(0) || ds.test_images.shape(0) != ds.test_labels.shape(0))
    fail<IOError>("Fashion-MNIST in '", dir, "': image and label counts differ");
  return ds;
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
