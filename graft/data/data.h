// Datasets: IDX files (gzip or plain), Fashion-MNIST, and shuffled batching.
//
//   auto ds = data::load_fashion_mnist();                 // Debian's dataset-fashion-mnist
//   Array x = ds.train_images.astype(f32).reshape({-1, 784}) / 255.0;
//   for (auto [xb, yb] : data::batches(x, ds.train_labels, 128, random::key(epoch)))
//     ...
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/array.h"

namespace graft::data {

/// Reads an IDX file (the MNIST format; .gz files are decompressed). Returns an array of the file's
/// dtype and dimensions. Throws IOError naming the file on missing, truncated or malformed input.
Array read_idx(const std::string& path);
/// The same for a file's bytes already in memory (`path` names it in errors).
Array read_idx_bytes(const std::string& bytes, const std::string& path = "<memory>");

struct FashionMnist {
  Array train_images, train_labels;  ///< u8 [60000, 28, 28], i32 [60000]
  Array test_images, test_labels;    ///< u8 [10000, 28, 28], i32 [10000]
};
/// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
/// Loads Fashion-MNIST; a missing file raises IOError telling to install dataset-fashion-mnist.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir);

/// Mini-batches of (x, y) along axis 0, in order or shuffled by a key (random::permutation, so the
/// order is the one jax.random gives for that key). The last partial batch is dropped unless
/// drop_last is false.
class Batches {
 public:
  Batches(Array x, Array y, int64_t batch_size, std::optional<Array> key, bool drop_last);
  int64_t size() const { return static_cast<int64_t>(starts_.size()); }
  std::pair<Array, Array> operator[](int64_t i) const;

  class iterator {
   public:
    iterator(const Batches* b, int64_t i) : b_(b), i_(i) {}
    std::pair<Array, Array> operator*() const { return (*b_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    const Batches* b_;
    int64_t i_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  Array x_, y_;
  std::optional<Array> order_;  ///< permutation of the rows (shuffled batches)
  std::vector<int64_t> starts_;
  int64_t batch_;
};

Batches batches(const Array& x, const Array& y, int64_t batch_size, std::optional<Array> key = std::nullopt,
                bool drop_last = true);

}  // namespace graft::data
