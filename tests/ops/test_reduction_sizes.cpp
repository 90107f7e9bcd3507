// Kernels over every dtype at sizes that exercise the vectorized and threaded paths (large, odd,
// not a multiple of the vector width), against exact host arithmetic. Pins a GCC 12 -O3
// miscompilation of integer row reductions (sums of 2000 ones came out as 1000).
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

}  // namespace
}  // namespace graft
