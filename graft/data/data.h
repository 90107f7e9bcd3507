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

// ---- text -------------------------------------------------------------------------------------------
/// Where Debian keeps the license texts that every installation has (package base-files): the main
/// job's default corpus for its language model.
inline constexpr const char* kCommonLicensesDir = "/usr/share/common-licenses";

/// A byte-level text corpus: every file's bytes, split into a training part (the first 1 - test_fraction
/// of each file) and a test part (the rest of each file), each the files' parts one after another.
struct TextCorpus {
  Array train, test;  ///< u8 [n]: the tokens of a byte-level model (vocabulary 256)
  std::vector<std::string> files;  ///< what was read, in order
};
/// Reads text files (and the files directly in directories given, in name order); links to a file
/// already read are skipped. IOError names a file that cannot be read; ValueError an empty corpus.
TextCorpus load_text(const std::vector<std::string>& paths, double test_fraction = 0.1);

/// Windows of a token sequence for next-token prediction: x[i] = tokens[offset + i len, offset + (i+1) len)
/// and y[i] the same window one token later; as many whole windows as fit (at least one, or a
/// ValueError). Both i32 [windows, len].
std::pair<Array, Array> next_token_windows(const Array& tokens, int64_t len, int64_t offset = 0);

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
