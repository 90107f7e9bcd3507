// Kernels over every dtype at sizes that exercise the vectorized and threaded paths (large, odd,
// not a multiple of the vector width), against exact host arithmetic. Pins a GCC 12 -O3
// miscompilation of integer row reductions (sums of 2000 ones came out as 1000).
#include <algorithm>
#include <climits>
#include <numeric>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(ReductionSizes, SumsMaximaAndScansAreExact) {
  for (DType d : {i16, i32, i64, u16, u32, u64, f32, f64}) {
    for (int64_t n : {7, 64, 1000, 2000, 4099, 70001}) {
      if (itemsize(d) == 2 && n > 20000) continue;  // the sums would overflow 16 bits (lax does not promote)
      SCOPED_TRACE(std::string(short_name(d)) + " n=" + std::to_string(n));
      // values 0, 1, 2, 0, 1, 2, ... keep every sum exact in every dtype
      Array x = (arange(double(n), i64) % 3).astype(d);
      int64_t want = 0;
      for (int64_t i = 0; i < n; ++i) want += i % 3;
      EXPECT_EQ(lax::reduce_sum(x, {0}).item<int64_t>(), want);
      EXPECT_EQ(lax::reduce_max(x, {0}).item<int64_t>(), n > 2 ? 2 : n - 1);
      EXPECT_EQ(lax::reduce_min(x + 1, {0}).item<int64_t>(), 1);
      EXPECT_EQ(lax::cumsum(x, 0).to_vector<int64_t>().back(), want);
      // rows of a matrix (contiguous) and its columns (strided)
      Array m = (arange(double(3 * n), i64) % 3).astype(d).reshape({3, n});
      std::vector<int64_t> rows(3, 0);
      for (int64_t i = 0; i < 3 * n; ++i) rows[static_cast<size_t>(i / n)] += i % 3;
      EXPECT_EQ(lax::reduce_sum(m, {1}).to_vector<int64_t>(), rows);
      EXPECT_EQ(lax::reduce_sum(m.T(), {0}).to_vector<int64_t>(), rows);
      EXPECT_EQ(lax::reduce_sum(lax::add(x, x), {0}).item<int64_t>(), 2 * want);
    }
  }
}

TEST(ReductionSizes, FloatMaximaFindTheExtremeOrNaNAnywhereInARow) {
  // the row kernel keeps several vector accumulators: the extreme value (or a NaN) at each position
  // of the first two steps, the last vector and the scalar tail must win
  for (DType d : {f32, f64}) {
    for (int64_t n : {1, 15, 16, 17, 64, 65, 130, 257}) {
      std::vector<int64_t> at;
      for (int64_t p = 0; p < std::min<int64_t>(n, 130); ++p) at.push_back(p);
      for (int64_t p = std::max<int64_t>(0, n - 20); p < n; ++p) at.push_back(p);
      for (int64_t p : at) {
        SCOPED_TRACE(std::string(short_name(d)) + " n=" + std::to_string(n) + " at " + std::to_string(p));
        Array x = sin(arange(double(n), f64) * 0.37).astype(d);  // in [-1, 1]
        EXPECT_EQ(lax::reduce_max(x.at({p}).set(5.0), {0}).item<double>(), 5.0);
        EXPECT_EQ(lax::reduce_min(x.at({p}).set(-5.0), {0}).item<double>(), -5.0);
        EXPECT_TRUE(std::isnan(lax::reduce_max(x.at({p}).set(NAN), {0}).item<double>()));
        EXPECT_TRUE(std::isnan(lax::reduce_min(x.at({p}).set(NAN), {0}).item<double>()));
      }
    }
  }
}

TEST(ReductionSizes, PerChannelReductionsFoldInPlaceLikeHostLoops) {
  // axes (0, 2, 3) of NCHW (a reduced prefix and suffix around kept axes) fold without moving the
  // axes together first: every kind and dtype against loops on the host, at sizes that thread and
  // have odd rows, with a NaN for the float maxima and a zero-sized reduced axis
  struct Case {
    Shape shape;
    IntList axes;
  };
  for (const Case& c : {Case{{3, 5, 7, 9}, {0, 2, 3}}, Case{{64, 33, 26, 26}, {0, 2, 3}}, Case{{4, 6, 5}, {0, 2}},
                        Case{{2, 3, 4, 5, 6}, {0, 1, 4}}, Case{{0, 4, 3}, {0, 2}}}) {
    int64_t nd = static_cast<int64_t>(c.shape.size()), size = numel(c.shape);
    for (DType d : {i32, f32, f64}) {
      SCOPED_TRACE(std::string(short_name(d)) + " shape " + std::to_string(size) + " nd " + std::to_string(nd));
      Array x = (arange(double(size), i64) % 7 - 3).astype(d).reshape(c.shape);
      std::vector<int64_t> xv = x.astype(i64).reshape({size}).to_vector<int64_t>();
      // host: the kept index of every element
      Shape kept_shape;
      for (int64_t i = 0; i < nd; ++i)
        if (std::find(c.axes.begin(), c.axes.end(), i) == c.axes.end()) kept_shape.push_back(c.shape[i]);
      int64_t kept = numel(kept_shape);
      std::vector<int64_t> sum(static_cast<size_t>(kept), 0), mx(static_cast<size_t>(kept), INT64_MIN),
          mn(static_cast<size_t>(kept), INT64_MAX);
      for (int64_t e = 0; e < size; ++e) {
        int64_t rest = e, k = 0;
        for (int64_t i = nd - 1, kstride = 1; i >= 0; --i) {
          int64_t idx = rest % c.shape[i];
          rest /= c.shape[i];
          if (std::find(c.axes.begin(), c.axes.end(), i) == c.axes.end()) {
            k += idx * kstride;
            kstride *= c.shape[i];
          }
        }
        sum[static_cast<size_t>(k)] += xv[static_cast<size_t>(e)];
        mx[static_cast<size_t>(k)] = std::max(mx[static_cast<size_t>(k)], xv[static_cast<size_t>(e)]);
        mn[static_cast<size_t>(k)] = std::min(mn[static_cast<size_t>(k)], xv[static_cast<size_t>(e)]);
      }
      EXPECT_EQ(lax::reduce_sum(x, c.axes).astype(i64).reshape({kept}).to_vector<int64_t>(), sum);
      if (size > 0) {
        EXPECT_EQ(lax::reduce_max(x, c.axes).astype(i64).reshape({kept}).to_vector<int64_t>(), mx);
        EXPECT_EQ(lax::reduce_min(x, c.axes).astype(i64).reshape({kept}).to_vector<int64_t>(), mn);
        Array b = x > 0;
        std::vector<int64_t> any(mx.size()), all(mn.size());
        for (size_t k = 0; k < mx.size(); ++k) {
          any[k] = mx[k] > 0;
          all[k] = mn[k] > 0;
        }
        EXPECT_EQ(lax::reduce_or(b, c.axes).astype(i64).reshape({kept}).to_vector<int64_t>(), any);
        EXPECT_EQ(lax::reduce_and(b, c.axes).astype(i64).reshape({kept}).to_vector<int64_t>(), all);
      }
      if (is_floating(d) && size > 0) {
        // a NaN in the last element reaches its channel's maximum and no other
        Array y = x.reshape({size}).at({size - 1}).set(NAN).reshape(c.shape);
        std::vector<double> m = lax::reduce_max(y, c.axes).reshape({kept}).to_vector<double>();
        for (int64_t k = 0; k < kept; ++k)
          EXPECT_EQ(std::isnan(m[static_cast<size_t>(k)]), k == kept - 1) << "channel " << k;
      }
    }
  }
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// host model of a d-typed value (wrapping like the kernels)
int64_t wrap(int64_t v, DType d) {
  switch (d) {
    case DType::i8: return int8_t(v);
    case DType::i16: return int16_t(v);
    case DType::i32: return int32_t(v);
    case DType::u8: return uint8_t(v);
    case DType::u16: return uint16_t(v);
    case DType::u32: return uint32_t(v);
    default: return v;
  }
}

TEST(ElementwiseSizes, IntegerAndFloatKernelsAreExact) {
  for (DType d : {i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64}) {
    for (int64_t n : {7, 64, 1000, 4099, 70001}) {
      SCOPED_TRACE(std::string(short_name(d)) + " n=" + std::to_string(n));
      std::vector<int64_t> a(static_cast<size_t>(n)), b(a.size());
      for (int64_t i = 0; i < n; ++i) {
        a[static_cast<size_t>(i)] = i % 7 + (is_unsigned(d) ? 0 : -3);
        b[static_cast<size_t>(i)] = (i * 5) % 11 + 1;
      }
      Array x = array(a).astype(d), y = array(b).astype(d);
      auto check = [&](const Array& got, auto f, const char* what) {
        auto g = got.to_vector<int64_t>();
        for (int64_t i = 0; i < n; ++i) {
          int64_t want = f(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
          if (g[static_cast<size_t>(i)] != want) {
            ADD_FAILURE() << what << " at " << i << ": " << g[static_cast<size_t>(i)] << " vs " << want;
            return;
          }
        }
      };
      check(lax::add(x, y), [&](int64_t p, int64_t q) { return wrap(wrap(p, d) + q, d); }, "add");
      check(lax::sub(y, x), [&](int64_t p, int64_t q) { return wrap(q - wrap(p, d), d); }, "sub");
      check(lax::mul(x, y), [&](int64_t p, int64_t q) { return wrap(wrap(p, d) * q, d); }, "mul");
      check(lax::max(x, y), [&](int64_t p, int64_t q) { return std::max(wrap(p, d), q); }, "max");
      check(lax::min(x, y), [&](int64_t p, int64_t q) { return std::min(wrap(p, d), q); }, "min");
      check(lax::lt(x, y), [&](int64_t p, int64_t q) { return int64_t(wrap(p, d) < q); }, "lt");
      check(lax::select(lax::lt(x, y), x, y), [&](int64_t p, int64_t q) { return wrap(p, d) < q ? wrap(p, d) : q; },
            "select");
      check(lax::convert_element_type(x, f64), [&](int64_t p, int64_t) { return wrap(p, d); }, "convert");
      if (!is_unsigned(d)) {
        check(lax::neg(x), [&](int64_t p, int64_t) { return -p; }, "neg");
        check(lax::abs(x), [&](int64_t p, int64_t) { return p < 0 ? -p : p; }, "abs");
      }
      // layout kernels
      Array m = lax::reshape(lax::slice_in_dim(x, 0, n - n % 7, 1, 0), {(n - n % 7) / 7, 7});
      Array t = lax::transpose(m, {1, 0});
      EXPECT_EQ(lax::reshape(lax::transpose(t, {1, 0}), {m.size()}).to_vector<int64_t>(),
                lax::reshape(m, {m.size()}).to_vector<int64_t>());
    }
  }
}

TEST(ReductionSizes, HalfSumsAreTheF32SumsOfTheirValuesRounded) {
  // a half row sum accumulates in f32 lanes over the row widened by blocks: the same additions as
  // the f32 sum of the widened values, rounded once
  for (DType d : {f16, bf16}) {
    for (int64_t n : {1, 7, 8, 9, 255, 256, 257, 1000, 4099, 70001}) {
      SCOPED_TRACE(std::string(short_name(d)) + " n=" + std::to_string(n));
      Array x = random::normal(random::key(uint32_t(n)), {3, n}).astype(d);
      Array got = lax::reduce_sum(x, {1});
      Array want = lax::reduce_sum(x.astype(f32), {1}).astype(d);
      EXPECT_EQ(got.astype(f32).to_vector<float>(), want.astype(f32).to_vector<float>());
      EXPECT_EQ(lax::reduce_sum(x, {0, 1}).astype(f32).item<float>(),
                lax::reduce_sum(x.astype(f32), {0, 1}).astype(d).astype(f32).item<float>());
    }
  }
  // a row whose f32 sum depends on the order of its additions far beyond a bf16 rounding: 2^24 first
  // absorbs the ones that share its lane, -2^24 last (another order gives another sum)
  for (int64_t n : {1000, 4099}) {
    std::vector<float> v(static_cast<size_t>(n), 1.0f);
    v.front() = 16777216.0f;
    v.back() = -16777216.0f;
    Array x = array(v).astype(bf16);
    float got = lax::reduce_sum(x, {0}).astype(f32).item<float>();
    EXPECT_EQ(got, lax::reduce_sum(x.astype(f32), {0}).astype(bf16).astype(f32).item<float>()) << n;
    EXPECT_LT(got, float(n - 2) - 16.0f) << n;  // ones were absorbed (more than bf16 rounds away): lane order
  }
}

TEST(ReductionSizes, ColumnSumsSplitTheirRowsAtThePairwiseTreesTopNode) {
  // a whole column sum of a power of two of 32-row blocks sums its two halves on two threads: the
  // same bits as the halves' sums added (the pairwise tree's top node), against f64 within f32's
  // error, for f32, bf16 and f64, with a partial last block; other row counts take one pass
  for (DType d : {f32, bf16, f64}) {
    for (Shape s : {Shape{1024, 128}, Shape{8, 128, 512}, Shape{2040, 96}, Shape{1000, 160}}) {
      SCOPED_TRACE(std::string(short_name(d)) + " rows " + std::to_string(s[0]));
      Array x = random::normal(random::key(3), s, f64).astype(d).reshape({numel(s) / s.back(), s.back()});
      const int64_t rows = x.shape(0), h = (rows + 63) / 64 * 32;
      Array got = lax::reduce_sum(x, {0});
      Array want = lax::reduce_sum(x.astype(f64), {0});
      EXPECT_LT(max(abs(got.astype(f64) - want)).item<double>(), d == bf16 ? 0.5 : 1e-3);
      if ((rows == 1024 || rows == 2040) && d != bf16) {  // 32 and 64 blocks (bf16 rounds its halves' sums)
        Array halves = lax::reduce_sum(x[{slice(0, h)}], {0}) + lax::reduce_sum(x[{slice(h, rows)}], {0});
        EXPECT_EQ(max(abs(got - halves)).item<double>(), 0.0);
      }
    }
  }
}

}  // namespace
}  // namespace graft
