// Reductions over axes: reduce_{sum,max,min,prod,and,or}, argmax, argmin. All their rules.
#include <cmath>
#include <cstring>
#include <numeric>

#include "graft/core/buffer.h"
#include "graft/runtime/cpu/pairwise.h"
#include "graft/prims/elementwise.h"

namespace graft::prims {

namespace {

enum class RKind { sum, max, min, prod, and_, or_ };
struct ReduceInfo {
  RKind kind;
  uint32_t mask;
};

// ---- shape ------------------------------------------------------------------------------------------
// Validates the axes against the operand; returns them normalized and sorted.
IntList checked_axes(const Primitive& p, AvalPtrs in, const IntList& axes) {
  IntList out;
  for (int64_t a : axes) {
    if (a < 0 || a >= in[0]->ndim())
      shape_error(p, in, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(in[0]->ndim()));
    if (std::find(out.begin(), out.end(), a) != out.end())
      shape_error(p, in, "axis " + std::to_string(a) + " appears twice");
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& s, const IntList& axes) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(s[i]);
  return out;
}

Avals reduce_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const ReduceInfo& info = *static_cast<const ReduceInfo*>(p.data);
  if (!(info.mask & bit(in[0]->dtype)))
    type_error(p, in, "requires a " + mask_str(info.mask) + " operand, got " + std::string(short_name(in[0]->dtype)));
  IntList axes = checked_axes(p, in, params.get_ints("axes"));
  return {Aval(reduced_shape(in[0]->shape, axes), in[0]->dtype, in[0]->weak_type)};
}

// ---- kernels ----------------------------------------------------------------------------------------
// The operand viewed as [outer, red, inner] blocks after merging adjacent axes; anything else is first
// transposed so that the reduced axes are last.
struct Layout {
  int64_t outer = 1, red = 1, inner = 1;
};

template <RKind K, class A>
inline A combine(A acc, A v) {
  if constexpr (K == RKind::sum) {
    return wrap_add(acc, v);
  } else if constexpr (K == RKind::prod) {
    return wrap_mul(acc, v);
  } else if constexpr (K == RKind::max) {
    // NaN propagates: a NaN v is taken, and a NaN acc is never replaced (v > NaN is false). Written
    // as one select so that row loops vectorize.
    if constexpr (std::is_floating_point_v<A>) {
      return (v > acc || v != v) ? v : acc;
    } else {
      return v > acc ? v : acc;
    }
  } else if constexpr (K == RKind::min) {
    if constexpr (std::is_floating_point_v<A>) {
      return (v < acc || v != v) ? v : acc;
    } else {
      return v < acc ? v : acc;
    }
  } else if constexpr (K == RKind::and_) {
    if constexpr (std::is_same_v<A, bool>) {
      return acc && v;
    } else {
      return static_cast<A>(acc & v);
    }
  } else {
    if constexpr (std::is_same_v<A, bool>) {
      return acc || v;
    } else {
      return static_cast<A>(acc | v);
    }
  }
}

template <RKind K, class A>
A identity() {
  if constexpr (K == RKind::sum || K == RKind::or_) {
    return A(0);
  } else if constexpr (K == RKind::prod) {
    return A(1);
  } else if constexpr (K == RKind::and_) {
    if constexpr (std::is_same_v<A, bool>) {
      return true;
    } else {
      return static_cast<A>(~A(0));
    }
  } else if constexpr (K == RKind::max) {
    if constexpr (std::is_floating_point_v<A>) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();
    }
  } else {
    if constexpr (std::is_floating_point_v<A>) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  }
}

// One contiguous row. Floats use eight independent accumulators so that the loop vectorizes without
// reassociation flags; integers use a plain loop, which the vectorizer treats as a reduction itself
// (the eight-accumulator form of this loop is miscompiled for 16/32-bit signed integers by GCC 12 at
// -O3 with AVX2/AVX-512: tests/ops/test_reduction_sizes.cpp pins it).
// max/min of float rows with GCC vector types: the compiler does not if-convert the NaN-propagating
// select of a scalar loop, so the lanes are written out (64 bytes a step).
template <RKind K, class T>
T minmax_row(const T* row, int64_t n) {
  constexpr int W = static_cast<int>(64 / sizeof(T));
  using V [[gnu::vector_size(64)]] = T;
  using M [[gnu::vector_size(64)]] = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto step = [](V acc, V v) {
    M take = K == RKind::max ? ((v > acc) | (v != v)) : ((v < acc) | (v != v));
    return take ? v : acc;
  };
  T id = identity<K, T>();
  // four independent accumulators: each step is a compare and a blend, whose latency one chain exposes
  constexpr int U = 4;
  V acc[U];
  for (auto& a : acc)
    for (int j = 0; j < W; ++j) a[j] = id;
  int64_t r = 0;
  for (; r + U * W <= n; r += U * W)
    for (int u = 0; u < U; ++u) {
      V v;
      std::memcpy(&v, row + r + u * W, sizeof(V));
      acc[u] = step(acc[u], v);
    }
  for (; r + W <= n; r += W) {
    V v;
    std::memcpy(&v, row + r, sizeof(V));
    acc[0] = step(acc[0], v);
  }
  for (int u = 1; u < U; ++u) acc[0] = step(acc[0], acc[u]);
  T total = id;
  for (; r < n; ++r) total = combine<K>(total, row[r]);
  for (int j = 0; j < W; ++j) total = combine<K>(total, acc[0][j]);
  return total;
}

// The type a reduction accumulates in: the compute type, except for products of f32 (and f16, bf16),
// which accumulate in f64: every multiplication's rounding adds to the product's relative error
// whatever the order (2^20 factors near 1 were 2.5e-4 off in f32), so only a wider type helps.
template <RKind K, class T>
using acc_t = std::conditional_t<K == RKind::prod && std::is_same_v<compute_t<T>, float>, double, compute_t<T>>;

// Float sums fold pairwise (graft/runtime/cpu/pairwise.h): blocks of kPairBlock elements with eight
// accumulators each (32 values per accumulator), the blocks' results in a balanced tree, so that the
// error grows with log2(n) as NumPy's does (one accumulator per lane over the whole row made an f32 sum
// of 2^24 values 1.7% low). Rows longer than kPiece elements are folded as pieces of that
// length, the pieces' results again pairwise: the pieces of a few long rows run on all threads, and
// a row's result is the same whichever thread folded which piece.
template <RKind K, class A>
constexpr bool kPairwise = K == RKind::sum && std::is_floating_point_v<A>;
constexpr int64_t kPairBlock = 256;
constexpr int64_t kPiece = int64_t(1) << 16;

template <RKind K, class A>
struct Combiner {
  A operator()(A a, A b) const { return combine<K>(a, b); }
};

// Folds a list of partial results in order: pairwise for float sums, left to right for the others (exact: max, min, integer arithmetic modulo 2^n, and, or).
template <RKind K, class A>
class Folder {
 public:
  void add(A v) {
    if constexpr (kPairwise<K, A>) {
      tree_.add(v);
    } else {
      acc_ = combine<K>(acc_, v);
    }
  }
  A total() const {
    if constexpr (kPairwise<K, A>) {
      return tree_.total(identity<K, A>());
    } else {
      return acc_;
    }
  }

 private:
  std::conditional_t<kPairwise<K, A>, cpu::PairwiseFold<A, Combiner<K, A>>, char> tree_{};
  A acc_ = identity<K, A>();
};

// Eight lanes of float or double in one vector (GCC's vector extension).
template <class A>
struct Lanes8Of;
template <>
struct Lanes8Of<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Lanes8Of<double> {
  typedef double type __attribute__((vector_size(64)));
};
template <class A>
using Lanes8 = typename Lanes8Of<A>::type;

// One block of a row: eight independent accumulators for floats.
template <RKind K, class T>
acc_t<K, T> fold_block(const T* row, int64_t n) {
  using A = acc_t<K, T>;
  constexpr int W = 8;
  A acc[W];
  for (int j = 0; j < W; ++j) acc[j] = identity<K, A>();
  int64_t r = 0;
  if constexpr (std::is_same_v<A, T> && (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                (K == RKind::sum || K == RKind::prod)) {
    // the eight accumulators as one vector, spelled out: GCC 12 turned the array form into scalar
    // additions and lane shuffles (a 128-element row took ~100 cycles; the fused loops' row sums, layer
    // norm's, spent most of their time here). Lane j still takes elements j, j + 8, ...: the same sums.
    Lanes8<A> v;
    std::memcpy(&v, acc, sizeof v);
    for (; r + W <= n; r += W) {
      Lanes8<A> x;
      std::memcpy(&x, row + r, sizeof x);
      if constexpr (K == RKind::sum) {
        v += x;
      } else {
        v *= x;
      }
    }
    std::memcpy(acc, &v, sizeof v);
  } else if constexpr (is_half_v<T> && std::is_same_v<A, float> && K == RKind::sum) {
    // half sums: the same lanes over the row widened by blocks (core/half.h's widen, vectorized, and
    // F16C's for f16), instead of a conversion per element inside the accumulation
    Lanes8<float> v;
    std::memcpy(&v, acc, sizeof v);
    float wide[kPairBlock];
    while (r + W <= n) {
      int64_t m = std::min<int64_t>(kPairBlock, (n - r) / W * W);
      widen(row + r, wide, m);
      for (int64_t i = 0; i < m; i += W) {
        Lanes8<float> x;
        std::memcpy(&x, wide + i, sizeof x);
        v += x;
      }
      r += m;
    }
    std::memcpy(acc, &v, sizeof v);
  } else {
    for (; r + W <= n; r += W)
      for (int j = 0; j < W; ++j) acc[j] = combine<K>(acc[j], static_cast<A>(row[r + j]));
  }
  A total = identity<K, A>();
  for (; r < n; ++r) total = combine<K>(total, static_cast<A>(row[r]));
  A a01 = combine<K>(acc[0], acc[1]), a23 = combine<K>(acc[2], acc[3]), a45 = combine<K>(acc[4], acc[5]),
    a67 = combine<K>(acc[6], acc[7]);
  return combine<K>(combine<K>(combine<K>(a01, a23), combine<K>(a45, a67)), total);
}

// A row of at most kPiece elements.
template <RKind K, class T>
acc_t<K, T> reduce_piece(const T* row, int64_t n) {
  using A = acc_t<K, T>;
  if constexpr ((K == RKind::max || K == RKind::min) && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    return minmax_row<K>(row, n);
  } else if constexpr (kPairwise<K, A>) {
    if (n <= kPairBlock) return fold_block<K>(row, n);
    Folder<K, A> f;
    for (int64_t b = 0; b < n; b += kPairBlock) f.add(fold_block<K>(row + b, std::min(kPairBlock, n - b)));
    return f.total();
  } else if constexpr (std::is_floating_point_v<A>) {
    return fold_block<K>(row, n);
  } else {
    A total = identity<K, A>();
    for (int64_t r = 0; r < n; ++r) total = combine<K>(total, static_cast<A>(row[r]));
    return total;
  }
}

template <RKind K, class T>
acc_t<K, T> reduce_row(const T* row, int64_t n) {
  if (n <= kPiece) return reduce_piece<K>(row, n);
  Folder<K, acc_t<K, T>> f;
  for (int64_t b = 0; b < n; b += kPiece) f.add(reduce_piece<K>(row + b, std::min(kPiece, n - b)));
  return f.total();
}

// Input elements a thread's piece of a reduction folds at least. A fold is one instruction an element
// and starting the second thread costs ~3.5 us on this project's machine: with elementwise ops' grain
// (2^15) a column sum of 128x512 took 8.7 us on two threads against 2.2 us on one, and a 1000x512
// one, split into 16 strips of 32 columns, 60 us against 28 us in 4 strips of 128.
constexpr int64_t kReduceGrain = int64_t(1) << 17;

// [a, kept, b] with a and b reduced (per-channel sums of NCHW: the axes (0, 2, 3)): each kept index
// folds its a rows of b contiguous elements in place, where moving the reduced axes together first
// copied the whole operand (a 128x32x26x26 sum: 556 us).
template <RKind K, class T>
void reduce_ends_kernel(const T* x, T* out, int64_t a, int64_t kept, int64_t b) {
  using A = acc_t<K, T>;
  int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, a * b));
  cpu::parallel_for(kept, grain, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      Folder<K, A> f;
      for (int64_t i = 0; i < a; ++i) f.add(reduce_row<K>(x + (i * kept + k) * b, b));
      out[k] = static_cast<T>(f.total());
    }
  });
}

// Fewer rows than threads, each longer than a piece (a full sum of a large array): the rows' pieces are
// folded on all threads, then each row's pieces in order (the same result as reduce_row).
template <RKind K, class T>
void reduce_long_rows(const T* x, T* out, int64_t rows, int64_t n) {
  using A = acc_t<K, T>;
  using Store = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
  int64_t pieces = (n + kPiece - 1) / kPiece;
  std::vector<Store> part(static_cast<size_t>(rows * pieces));
  cpu::parallel_for(rows * pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t r = i / pieces, p = i % pieces;
      part[static_cast<size_t>(i)] = static_cast<Store>(reduce_piece<K>(x + r * n + p * kPiece, std::min(kPiece, n - p * kPiece)));
    }
  });
  for (int64_t r = 0; r < rows; ++r) {
    Folder<K, A> f;
    for (int64_t p = 0; p < pieces; ++p) f.add(static_cast<A>(part[static_cast<size_t>(r * pieces + p)]));
    out[r] = static_cast<T>(f.total());
  }
}

// Columns [outer, red, inner] with pairwise sums: the rows of a strip of columns are added in blocks
// of kColBlock rows, the blocks' results pairwise (one partial per tree level and column).
constexpr int64_t kColBlock = 32;

template <RKind K, class T, class O>
void fold_columns_pairwise(const T* x, O* out, int64_t red, int64_t inner, int64_t i0, int64_t i1) {
  using A = acc_t<K, T>;
  size_t w = static_cast<size_t>(i1 - i0);
  std::vector<A> blk(w), carry(w);
  std::vector<std::vector<A>> level;
  uint64_t full = 0;
  for (int64_t r0 = 0; r0 < red; r0 += kColBlock) {
    std::fill(blk.begin(), blk.end(), identity<K, A>());
    for (int64_t r = r0; r < std::min(red, r0 + kColBlock); ++r) {
      const T* row = x + r * inner + i0;
      for (size_t i = 0; i < w; ++i) blk[i] = combine<K>(blk[i], static_cast<A>(row[i]));
    }
    size_t l = 0;
    for (; full >> l & 1; ++l) {
      for (size_t i = 0; i < w; ++i) blk[i] = combine<K>(level[l][i], blk[i]);
      full &= ~(uint64_t(1) << l);
    }
    if (level.size() <= l) level.resize(l + 1);
    level[l] = blk;
    full |= uint64_t(1) << l;
  }
  bool first = true;
  for (size_t l = level.size(); l-- > 0;)
    if (full >> l & 1) {
      for (size_t i = 0; i < w; ++i) carry[i] = first ? level[l][i] : combine<K>(carry[i], level[l][i]);
      first = false;
    }
  for (size_t i = 0; i < w; ++i) out[i0 + static_cast<int64_t>(i)] = static_cast<O>(first ? identity<K, A>() : carry[i]);
}

template <RKind K, class T>
void reduce_kernel(const T* x, T* out, Layout L) {
  using A = acc_t<K, T>;
  if (L.inner == 1) {
    if (L.red > kPiece && L.outer < 2 * cpu::num_threads()) return reduce_long_rows<K>(x, out, L.outer, L.red);
    cpu::parallel_for(L.outer, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, L.red)),
                      [&](int64_t o0, int64_t o1) {
                        for (int64_t o = o0; o < o1; ++o) out[o] = static_cast<T>(reduce_row<K>(x + o * L.red, L.red));
                      });
    return;
  }
  if constexpr (kPairwise<K, A>) {
    if (L.red > kColBlock) {
      // strips of columns of each outer index; a strip of at least 64 columns keeps the loop vectorized
      int64_t strip = std::max<int64_t>(64, kReduceGrain / std::max<int64_t>(1, L.red));
      int64_t strips = (L.inner + strip - 1) / strip;
      const int64_t blocks = (L.red + kColBlock - 1) / kColBlock;
      if (L.outer == 1 && (blocks & (blocks - 1)) == 0 && L.red * L.inner >= kReduceGrain) {
        // A whole column sum ([rows, columns] -> [columns], a bias gradient): the two halves of the
        // rows are summed apart and then added, which is the pairwise tree's top node when the rows
        // make a power of two of blocks (the same bits as one pass). The thread that made a half of
        // the rows (elementwise loops and GEMMs split rows the same way) finds it in its own core's
        // caches: a [1024,128] sum in a transformer step took 12.6 us on one thread reading both.
        const int64_t h = blocks / 2 * kColBlock;
        ScratchBuffer<A> half(static_cast<size_t>(2 * L.inner));
        cpu::parallel_for(2 * strips, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            int64_t k = i / strips, s0 = (i % strips) * strip;
            fold_columns_pairwise<K>(x + k * h * L.inner, half.data() + k * L.inner, k ? L.red - h : h, L.inner, s0,
                                     std::min(L.inner, s0 + strip));
          }
        });
        for (int64_t i = 0; i < L.inner; ++i) out[i] = static_cast<T>(combine<K>(half[static_cast<size_t>(i)], half[static_cast<size_t>(L.inner + i)]));
        return;
      }
      cpu::parallel_for(L.outer * strips, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          int64_t o = i / strips, s0 = (i % strips) * strip;
          fold_columns_pairwise<K>(x + o * L.red * L.inner, out + o * L.inner, L.red, L.inner, s0,
                                   std::min(L.inner, s0 + strip));
        }
      });
      return;
    }
  }
  // [outer, red, inner]: accumulate whole inner rows (vectorizable along inner)
  cpu::parallel_for(L.outer * L.inner, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, L.red)),
                    [&](int64_t b, int64_t e) {
                      using Store = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
                      std::vector<Store> acc;
                      int64_t o = b / L.inner;
                      int64_t i0 = b % L.inner;
                      while (b < e) {
                        int64_t i1 = std::min(L.inner, i0 + (e - b));
                        acc.assign(static_cast<size_t>(i1 - i0), static_cast<Store>(identity<K, A>()));
                        for (int64_t r = 0; r < L.red; ++r) {
                          const T* row = x + (o * L.red + r) * L.inner;
                          for (int64_t i = i0; i < i1; ++i)
                            acc[static_cast<size_t>(i - i0)] = static_cast<Store>(
                                combine<K>(static_cast<A>(acc[static_cast<size_t>(i - i0)]), static_cast<A>(row[i])));
                        }
                        for (int64_t i = i0; i < i1; ++i)
                          out[o * L.inner + i] = static_cast<T>(static_cast<A>(acc[static_cast<size_t>(i - i0)]));
                        b += i1 - i0;
                        ++o;
                        i0 = 0;
                      }
                    });
}

// Calls f.template operator()<K>() with the kind of fold a T reduces by (bools: max is or, min is and;
// and / or of floats are not defined: the rules reject them before).
template <class T, class F>
void with_kind(RKind kind, F&& f) {
  if constexpr (std::is_same_v<T, bool>) {
    if (kind == RKind::and_ || kind == RKind::min) f.template operator()<RKind::and_>();
    if (kind == RKind::or_ || kind == RKind::max) f.template operator()<RKind::or_>();
  } else {
    switch (kind) {
      case RKind::sum: f.template operator()<RKind::sum>(); break;
      case RKind::max: f.template operator()<RKind::max>(); break;
      case RKind::min: f.template operator()<RKind::min>(); break;
      case RKind::prod: f.template operator()<RKind::prod>(); break;
      case RKind::and_:
        if constexpr (std::is_integral_v<T>) f.template operator()<RKind::and_>();
        break;
      case RKind::or_:
        if constexpr (std::is_integral_v<T>) f.template operator()<RKind::or_>();
        break;
    }
  }
}

// Returns a layout if the reduced axes form one contiguous block; otherwise false.
bool block_layout(const Shape& s, const IntList& axes, Layout& L) {
  if (axes.empty()) {
    L.outer = numel(s);
    return true;
  }
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axes.front()) {
      L.outer *= s[i];
    } else if (i <= axes.back()) {
      L.red *= s[i];
    } else {
      L.inner *= s[i];
    }
  }
  return true;
}

Arrays reduce_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const ReduceInfo& info = *static_cast<const ReduceInfo*>(p.data);
  IntList axes = params.get_ints("axes");
  std::sort(axes.begin(), axes.end());
  Array x = in[0];
  Layout L;
  // the kept axes between a reduced prefix and a reduced suffix: folded in place
  int64_t nd = x.ndim(), pre = 0, suf = 0;
  while (pre < static_cast<int64_t>(axes.size()) && axes[static_cast<size_t>(pre)] == pre) ++pre;
  while (suf < static_cast<int64_t>(axes.size()) - pre &&
         axes[axes.size() - 1 - static_cast<size_t>(suf)] == nd - 1 - suf)
    ++suf;
  // (complex reductions take the one-block paths below: a sum's parts interleave innermost)
  bool ends = pre > 0 && suf > 0 && pre + suf == static_cast<int64_t>(axes.size()) && pre + suf < nd &&
              !is_complex(x.dtype());
  int64_t a = 1, kept = 1, b = 1;
  if (ends) {
    for (int64_t i = 0; i < nd; ++i) (i < pre ? a : i >= nd - suf ? b : kept) *= x.shape()[i];
  } else if (!block_layout(x.shape(), axes, L)) {
    // move the reduced axes to the end (one copy), then reduce contiguous rows
    Axes perm;
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (std::find(axes.begin(), axes.end(), i) == axes.end()) perm.push_back(i);
    for (auto ax : axes) perm.push_back(ax);
    x = eval_primitive(transpose_p, {&x, 1}, {{"permutation", to_ints(perm)}})[0];
    L = Layout{numel(out[0].shape), x.size() / std::max<int64_t>(1, numel(out[0].shape)), 1};
    if (numel(out[0].shape) == 0) L.red = 0;
  }
  Array r = Array::empty(out[0]);
  if (info.kind == RKind::prod && is_complex(x.dtype())) {
    // complex products mix the parts: one complex multiply per element (in the layout's order)
    // (accumulated in complex128, as real f32 products accumulate in f64)
    auto run = [&](auto* od, const auto* xd) {
      using C = std::remove_const_t<std::remove_pointer_t<decltype(xd)>>;
      for (int64_t o = 0; o < L.outer; ++o)
        for (int64_t i = 0; i < L.inner; ++i) {
          complex128 acc(1);
          for (int64_t k = 0; k < L.red; ++k) acc *= complex128(xd[(o * L.red + k) * L.inner + i]);
          od[o * L.inner + i] = C(acc);
        }
    };
    if (x.dtype() == DType::c64) {
      run(static_cast<complex64*>(r.concrete()->data()), static_cast<const complex64*>(x.raw_data()));
    } else {
      run(static_cast<complex128*>(r.concrete()->data()), static_cast<const complex128*>(x.raw_data()));
    }
    return {r};
  }
  // A complex sum is the sums of the real and the imaginary parts: the array read as its real parts,
  // (re, im) pairs innermost, reduces over the same axes with twice the inner extent.
  DType elem = x.dtype();
  if (is_complex(elem)) {
    elem = real_dtype(elem);
    L.inner *= 2;
  }
  visit_dtype(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = static_cast<const T*>(x.raw_data());
    T* od = static_cast<T*>(r.concrete()->data());
    if (!(info.mask & bit(x.dtype()))) return;
    with_kind<T>(info.kind, [&]<RKind K>() {
      if (ends) {
        reduce_ends_kernel<K>(xd, od, a, kept, b);
      } else {
        reduce_kernel<K>(xd, od, L);
      }
    });
  });
  return {r};
}

// The tile form (fused loops): folds n contiguous elements into *acc.
template <RKind K, class T>
void reduce_tile(void* acc, const void* in, int64_t n, bool init) {
  using A = acc_t<K, T>;
  T* a = static_cast<T*>(acc);
  A r = reduce_row<K>(static_cast<const T*>(in), n);
  *a = static_cast<T>(init ? r : combine<K>(static_cast<A>(*a), r));
}

// A complex sum's tile form: the parts' sums, each row of parts summed as reduce_row sums a real row
// (pairwise), as the eager kernel sums the array read as its parts.
template <class R>
void reduce_tile_complex_sum(void* acc, const void* in, int64_t n, bool init) {
  thread_local std::vector<R> parts;
  parts.resize(static_cast<size_t>(2 * n));
  const R* x = static_cast<const R*>(in);
  for (int64_t i = 0; i < n; ++i)
    parts[static_cast<size_t>(i)] = x[2 * i], parts[static_cast<size_t>(n + i)] = x[2 * i + 1];
  R* a = static_cast<R*>(acc);
  for (int part = 0; part < 2; ++part) {
    auto r = reduce_row<RKind::sum>(parts.data() + part * n, n);
    a[part] = static_cast<R>(init ? r : combine<RKind::sum>(static_cast<decltype(r)>(a[part]), r));
  }
}

TileKernel reduce_tile_rule(const Primitive& p, std::span<const Aval> in, const Params&) {
  const ReduceInfo& info = *static_cast<const ReduceInfo*>(p.data);
  TileKernel k;
  k.num_inputs = 1;
  if (is_complex(in[0].dtype)) {  // sums only (a complex product is not the parts' products)
    if (info.kind == RKind::sum && (info.mask & bit(in[0].dtype)))
      k.reduce =
          in[0].dtype == DType::c64 ? &reduce_tile_complex_sum<float> : &reduce_tile_complex_sum<double>;
    return k;
  }
  visit_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      switch (info.kind) {
        case RKind::sum: k.reduce = &reduce_tile<RKind::sum, T>; break;
        case RKind::max: k.reduce = &reduce_tile<RKind::max, T>; break;
        case RKind::min: k.reduce = &reduce_tile<RKind::min, T>; break;
        case RKind::prod: k.reduce = &reduce_tile<RKind::prod, T>; break;
        default: break;
      }
    }
  });
  return k;
}

// ---- derivatives ------------------------------------------------------------------------------------
Axes kept_dims(int64_t ndim, const IntList& axes) {
  Axes kept;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept.push_back(i);
  return kept;
}

Array broadcast_back(const Array& y, const Aval& operand, const IntList& axes) {
  return lax::broadcast_in_dim(y, operand.shape, kept_dims(operand.ndim(), axes));
}

JvpResult reduce_sum_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  return {{bind1(p, primals, params)}, {bind1(p, tangents, params)}};
}

Arrays reduce_sum_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                            const Params& params) {
  return {broadcast_back(cts[0], args[0].aval, params.get_ints("axes"))};
}

// d max: the tangent averaged over the positions that attain the maximum (JAX's chooser rule).
JvpResult chooser_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                      const Params& params) {
  Array y = bind1(p, primals, params);
  const IntList& axes = params.get_ints("axes");
  const Array& x = primals[0];
  Array loc = lax::convert_element_type(lax::eq(x, broadcast_back(y, x.aval(), axes)), x.dtype());
  Array counts = lax::reduce_sum(loc, to_shape(axes));
  Array t = lax::div(lax::reduce_sum(lax::mul(tangents[0], loc), to_shape(axes)), counts);
  return {{y}, {t}};
}

// d prod = sum_i t_i * prod_{j != i} x_j, with the products of the others computed without dividing
// (exact at zeros): move the reduced axes last, flatten them to n, and reduce an [..., n, n] array
// whose diagonal is replaced by ones. Costs O(n^2) memory per output element.
JvpResult reduce_prod_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                          const Params& params) {
  Array y = bind1(p, primals, params);
  const Array& x = primals[0];
  const IntList& axes = params.get_ints("axes");
  if (axes.empty()) return {{y}, {tangents[0]}};
  Axes kept = kept_dims(x.ndim(), axes);
  Axes perm = kept;
  int64_t n = 1;
  for (auto a : axes) {
    perm.push_back(a);
    n *= x.shape()[a];
  }
  Shape flat;
  for (auto k : kept) flat.push_back(x.shape()[k]);
  size_t k = flat.size();
  flat.push_back(n);
  auto to_rows = [&](const Array& v) { return lax::reshape(lax::transpose(v, perm), flat); };
  Array x2 = to_rows(x), t2 = to_rows(tangents[0]);
  Shape sq = flat;
  sq.push_back(n);
  Axes bd;
  for (size_t i = 0; i < k; ++i) bd.push_back(static_cast<int64_t>(i));
  bd.push_back(static_cast<int64_t>(k) + 1);
  Array xb = lax::broadcast_in_dim(x2, sq, bd);
  Array eye = lax::eq(lax::iota(DType::i32, sq, static_cast<int64_t>(k)), lax::iota(DType::i32, sq, static_cast<int64_t>(k) + 1));
  Array others = lax::reduce_prod(lax::select(eye, lax::full(sq, 1, x.dtype()), xb), {static_cast<int64_t>(k) + 1});
  Array t = lax::reduce_sum(lax::mul(t2, others), {static_cast<int64_t>(k)});
  return {{y}, {t}};
}

// ---- batching -----------------------------------------------------------------------------------------
// The batch dim is never reduced: shift the axes past it.
BatchResult reduce_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo&, const Params& params) {
  int64_t bd = dims[0];
  IntList axes;
  int64_t below = 0;
  for (int64_t a : params.get_ints("axes")) {
    axes.push_back(a >= bd ? a + 1 : a);
    if (a < bd) ++below;
  }
  Arrays out = graft::bind(p, vals, params.with("axes", axes));
  return {std::move(out), {bd - below}};
}

// ---- argmax / argmin ----------------------------------------------------------------------------------
Avals arg_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const IntList& axes = params.get_ints("axes");
  if (axes.size() != 1) shape_error(p, in, "takes exactly one axis");
  IntList ax = checked_axes(p, in, axes);
  DType id = params.get_dtype("index_dtype");
  if (!is_integer(id)) type_error(p, in, "index_dtype must be an integer dtype");
  if (in[0]->dtype == DType::bool_) type_error(p, in, "requires a numeric operand");
  if (in[0]->shape[ax[0]] == 0) shape_error(p, in, "cannot take the arg-extremum of an empty axis");
  return {Aval(reduced_shape(in[0]->shape, ax), id, false)};
}

template <bool kMax, class T>
void arg_kernel(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  cpu::parallel_for(outer * inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t oi = b; oi < e; ++oi) {
                        int64_t o = oi / inner, i = oi % inner;
                        const T* base = x + o * n * inner + i;
                        C best = static_cast<C>(base[0]);
                        int64_t bi = 0;
                        for (int64_t r = 1; r < n; ++r) {
                          C v = static_cast<C>(base[r * inner]);
                          if constexpr (std::is_floating_point_v<C>) {
                            if (best != best) break;  // the first NaN wins
                            if (v != v) {
                              best = v;
                              bi = r;
                              break;
                            }
                          }
                          if (kMax ? v > best : v < best) {
                            best = v;
                            bi = r;
                          }
                        }
                        out[oi] = bi;
                      }
                    });
}

Arrays arg_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  int64_t axis = params.get_ints("axes")[0];
  const Array& x = in[0];
  int64_t outer = 1, inner = 1, n = x.shape()[axis];
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i < axis) outer *= x.shape()[i];
    if (i > axis) inner *= x.shape()[i];
  }
  std::vector<int64_t> idx(static_cast<size_t>(outer * inner));
  bool is_max = &p == &argmax_p;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (is_max) {
        arg_kernel<true>(static_cast<const T*>(x.raw_data()), idx.data(), outer, n, inner);
      } else {
        arg_kernel<false>(static_cast<const T*>(x.raw_data()), idx.data(), outer, n, inner);
      }
    }
  });
  Array r = Array::empty(out[0]);
  convert_elements(idx.data(), DType::i64, r.concrete()->data(), out[0].dtype, r.size());
  return {r};
}

const ReduceInfo sum_info{RKind::sum, kMaskNum | kMaskComplex};
const ReduceInfo max_info{RKind::max, kMaskAll};
const ReduceInfo min_info{RKind::min, kMaskAll};
const ReduceInfo prod_info{RKind::prod, kMaskNum | kMaskComplex};
const ReduceInfo and_info{RKind::and_, kMaskInt | kMaskBool};
const ReduceInfo or_info{RKind::or_, kMaskInt | kMaskBool};

}  // namespace

const Primitive reduce_sum_p{"reduce_sum",          0,             &reduce_shape, &reduce_impl, &reduce_sum_jvp,
                             &reduce_sum_transpose, &reduce_batch, nullptr,       &sum_info,    &reduce_tile_rule};
const Primitive reduce_max_p{"reduce_max", 0,       &reduce_shape, &reduce_impl, &chooser_jvp, nullptr, &reduce_batch,
                             nullptr,      &max_info, &reduce_tile_rule};
const Primitive reduce_min_p{"reduce_min", 0,       &reduce_shape, &reduce_impl, &chooser_jvp, nullptr, &reduce_batch,
                             nullptr,      &min_info, &reduce_tile_rule};
const Primitive reduce_prod_p{"reduce_prod", 0,              &reduce_shape, &reduce_impl, &reduce_prod_jvp, nullptr,
                              &reduce_batch, nullptr,        &prod_info,    &reduce_tile_rule};
const Primitive reduce_and_p{"reduce_and", kNotDifferentiable, &reduce_shape, &reduce_impl, &zero_jvp, nullptr,
                             &reduce_batch, nullptr,           &and_info};
const Primitive reduce_or_p{"reduce_or", kNotDifferentiable, &reduce_shape, &reduce_impl, &zero_jvp, nullptr,
                            &reduce_batch, nullptr,          &or_info};
const Primitive argmax_p{"argmax", kNotDifferentiable, &arg_shape, &arg_impl, &zero_jvp, nullptr, &reduce_batch};
const Primitive argmin_p{"argmin", kNotDifferentiable, &arg_shape, &arg_impl, &zero_jvp, nullptr, &reduce_batch};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
#define LAX_REDUCE(name)                                             \
  Array name(const Array& x, const Axes& axes) {                     \
    return bind1(name##_p, {x}, {{"axes", to_ints(axes)}});          \
  }
LAX_REDUCE(reduce_sum)
LAX_REDUCE(reduce_max)
LAX_REDUCE(reduce_min)
LAX_REDUCE(reduce_prod)
LAX_REDUCE(reduce_and)
LAX_REDUCE(reduce_or)
#undef LAX_REDUCE
Array argmax(const Array& x, int64_t axis, DType index_dtype) {
  return bind1(argmax_p, {x}, {{"axes", IntList{axis}}, {"index_dtype", index_dtype}});
}
Array argmin(const Array& x, int64_t axis, DType index_dtype) {
  return bind1(argmin_p, {x}, {{"axes", IntList{axis}}, {"index_dtype", index_dtype}});
}
}  // namespace graft::lax
