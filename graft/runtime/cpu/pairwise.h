// Pairwise (cascade) folding, for accurate floating-point sums and products: values are combined in
// a balanced binary tree instead of one after the other, so that the rounding error grows with
// log2(n) rather than n (NumPy's pairwise summation; an f32 sum of 2^24 elements was 2.4% low when
// each accumulator took 2^21 values in turn).
//
//   PairwiseFold<float, Add> f;
//   for (block : blocks) f.add(sum_of(block));   // block sums, in order
//   float total = f.total(0.0f);
//
// The fold is a binary counter: level l holds the combination of 2^l consecutive values, and adding a
// value carries it up through the full levels, so memory is one slot per level (64) and the result is
// deterministic: it depends on the values and their order only, never on threads.
#pragma once

#include <cstdint>

namespace graft::cpu {

template <class A, class Combine>
class PairwiseFold {
 public:
  explicit PairwiseFold(Combine c = Combine()) : c_(c) {}
  /// Appends the next value (to the right of those added before).
  void add(A v) {
    int l = 0;
    for (; full_ >> l & 1; ++l) {
      v = c_(part_[l], v);  // the older (left) partial first: the tree keeps the values' order
      full_ &= ~(uint64_t(1) << l);
    }
    part_[l] = v;
    full_ |= uint64_t(1) << l;
  }
  /// The combination of every value added, left to right; `identity` when none was.
  A total(A identity) const {
    A t = identity;
    bool first = true;
    for (int l = 63; l >= 0; --l)
      if (full_ >> l & 1) {
        t = first ? part_[l] : c_(t, part_[l]);
        first = false;
      }
    return t;
  }

 private:
  A part_[64];
  uint64_t full_ = 0;
  Combine c_;
};

}  // namespace graft::cpu
