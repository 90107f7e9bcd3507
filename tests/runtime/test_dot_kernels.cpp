// The register-tile product kernels (cpu::bf16dot, cpu::f32dot) against a double-precision reference from the
// bf16 operands' exact values: every register tile and its row and column remainders, both packings, A read
// by rows and (in pairs of rows) transposed, odd reduction lengths, alpha and accumulation; and the f32 ->
// bf16 roundings that make A operands. Runs where the CPU has AVX512-BF16 (skipped, saying so, elsewhere: the
// kernels are never called there).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "graft/core/half.h"
#include "graft/runtime/cpu/dot_kernels.h"
#include "testing.h"

namespace graft::cpu {
namespace {
using namespace bf16dot;

std::vector<bfloat16> rounded(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// The tolerance of an f32 sum of K exact products: K roundings of at most half an ulp of the running
// sum, bounded by the sum of magnitudes.
double tolerance(int64_t K, double abs_sum) { return (K + 2) * std::ldexp(abs_sum, -24) + 1e-30; }

#define REQUIRE_BF16_DOT() \
  if (!bf16dot::available()) GTEST_SKIP() << "no AVX512-BF16 here: the kernels are not used on this CPU"

TEST(Bf16Dot, ProductsMatchADoubleReferenceForEveryTileAndRemainder) {
  REQUIRE_BF16_DOT();
  for (int64_t M : {1, 5, 8, 12, 13, 64, 67})
    for (int64_t N : {1, 7, 16, 17, 32, 33, 50, 128})
      for (int64_t K : {1, 2, 7, 32, 127})
        for (bool transposed : {false, true}) {
          const int64_t lda = (K + 1) / 2 * 2 + 2;  // A's rows padded (an odd K's last pair is half A's)
          std::vector<bfloat16> A =
              rounded(testing::uniform_floats(size_t(M * lda), uint64_t(M * 1000 + N * 10 + K)));
          // past K: infinities, which must not enter any sum (an odd K's last pair is half used)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t k = K; k < lda; ++k)
              A[size_t(m * lda + k)] = bfloat16(std::numeric_limits<float>::infinity());
          // B(k, n) from [K, N] with row stride N + 3, or from X [N, K] with row stride K + 1
          const int64_t ldb = transposed ? K + 1 : N + 3;
          std::vector<bfloat16> B =
              rounded(testing::uniform_floats(size_t((transposed ? N : K) * ldb), uint64_t(K * 7 + N)));
          auto b_at = [&](int64_t k, int64_t n) {
            return float(B[size_t(transposed ? n * ldb + k : k * ldb + n)]);
          };
          std::vector<bfloat16> packed_b(size_t(packed_size(K, N)) + 1);
          Packed pb = transposed ? pack_transposed(B.data(), ldb, N, K, packed_b.data())
                                 : pack(B.data(), ldb, K, N, packed_b.data());
          ASSERT_EQ(pb.ld, packed_ld(N));
          const int64_t ldc = N + 5;
          std::vector<float> C0 = testing::uniform_floats(size_t(M * ldc), 99), C = C0, D = C0;
          gemm(M, N, K, A.data(), lda / 2, 1, pb, C.data(), ldc, 0.5f, false);
          gemm(M, N, K, A.data(), lda / 2, 1, pb, D.data(), ldc, -2.0f, true);
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              double ref = 0, mag = 0;
              for (int64_t k = 0; k < K; ++k) {
                double t = double(float(A[size_t(m * lda + k)])) * b_at(k, n);
                ref += t, mag += std::abs(t);
              }
              size_t at = size_t(m * ldc + n);
              ASSERT_NEAR(C[at], 0.5 * ref, 0.5 * tolerance(K, mag))
                  << M << "x" << N << "x" << K << " at " << m << "," << n;
              ASSERT_NEAR(D[at], C0[at] - 2.0 * ref, 2.0 * tolerance(K, mag) + 1e-7)
                  << M << "x" << N << "x" << K;
            }
            // columns past N are not touched
            for (int64_t n = N; n < ldc; ++n) ASSERT_EQ(C[size_t(m * ldc + n)], C0[size_t(m * ldc + n)]);
          }
        }
}

TEST(Bf16Dot, PairsOfRowsServeAsTheTransposedOperand) {
  REQUIRE_BF16_DOT();
  // X [R, M] in f32; its transpose [M, R] as A (pairs of X's rows), times B [R, N]
  for (int64_t R : {1, 2, 9, 64, 65})
    for (int64_t M : {1, 15, 16, 33, 128})
      for (int64_t N : {8, 32}) {
        const int64_t ldx = M + 1;
        std::vector<float> X = testing::uniform_floats(size_t(R * ldx), uint64_t(R * 31 + M));
        std::vector<bfloat16> pairs(size_t((R + 1) / 2 * 2 * M));
        to_pairs_of_rows(X.data(), ldx, R, M, pairs.data());
        std::vector<bfloat16> B = rounded(testing::uniform_floats(size_t(R * N), 5));
        std::vector<bfloat16> pk(size_t(packed_size(R, N)));
        Packed pb = pack(B.data(), N, R, N, pk.data());
        std::vector<float> C(size_t(M * N));
        gemm(M, N, R, pairs.data(), 1, M, pb, C.data(), N, 1.0f, false);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int64_t r = 0; r < R; ++r) {
              double t = double(float(bfloat16(X[size_t(r * ldx + m)]))) * float(B[size_t(r * N + n)]);
              ref += t, mag += std::abs(t);
            }
            ASSERT_NEAR(C[size_t(m * N + n)], ref, tolerance(R, mag)) << R << "x" << M << "x" << N;
          }
      }
}

TEST(Bf16Dot, RoundingToRowsIsToNearestEvenAndFlushesSubnormals) {
  REQUIRE_BF16_DOT();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = testing::uniform_floats(3 * 21, 8);
  // ties (to even: down, then up), a NaN, infinities, a subnormal, the largest finite float
  x[0] = std::bit_cast<float>(0x3f808000u), x[1] = std::bit_cast<float>(0x3f818000u);
  x[2] = nan, x[3] = inf, x[4] = -inf, x[5] = 1e-39f, x[6] = std::numeric_limits<float>::max();
  std::vector<bfloat16> rows(3 * 22, bfloat16(7.0f));
  to_rows(x.data(), 21, 3, 21, rows.data(), 22);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t n = 0; n < 21; ++n) {
      float v = x[size_t(r * 21 + n)];
      bfloat16 got = rows[size_t(r * 22 + n)];
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(float(got)));
      } else if (v != 0 && std::abs(v) < std::numeric_limits<float>::min()) {
        EXPECT_EQ(float(got), 0.0f);
      } else {
        EXPECT_EQ(got.bits, bfloat16(v).bits) << r << "," << n << ": " << v;
      }
    }
    EXPECT_EQ(rows[size_t(r * 22 + 21)].bits, 0) << "an odd row's pair is completed with a zero";
  }
  EXPECT_EQ(rows[0].bits, 0x3f80);
  EXPECT_EQ(rows[1].bits, 0x3f82);
}

TEST(Bf16Dot, RowDotsAndExactRoundingOfResults) {
  REQUIRE_BF16_DOT();
  for (int64_t N : {1, 31, 32, 33, 100}) {
    const int64_t M = 5, lda = N + 1, ldb = N + 7;
    std::vector<bfloat16> a = rounded(testing::uniform_floats(size_t(M * lda), uint64_t(N))),
                          b = rounded(testing::uniform_floats(size_t(M * ldb), 3));
    std::vector<float> got(static_cast<size_t>(M));
    row_dots(a.data(), lda, b.data(), ldb, M, N, got.data());
    for (int64_t m = 0; m < M; ++m) {
      double ref = 0, mag = 0;
      for (int64_t n = 0; n < N; ++n) {
        double t = double(float(a[size_t(m * lda + n)])) * float(b[size_t(m * ldb + n)]);
        ref += t, mag += std::abs(t);
      }
      EXPECT_NEAR(got[size_t(m)], ref, tolerance(N, mag)) << N;
    }
  }
  // round_rows is bfloat16(float) bit for bit: ties, NaNs, infinities, subnormals (kept), the largest
  // finite float (rounds to inf), over rows with a partial last vector
  std::vector<float> x = testing::uniform_floats(3 * 37, 4);
  const float specials[] = {std::bit_cast<float>(0x3f808000u),
                            std::bit_cast<float>(0x3f818000u),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::infinity(),
                            1e-39f,
                            -3e-40f,
                            std::numeric_limits<float>::max(),
                            std::bit_cast<float>(0x7f800001u),
                            std::bit_cast<float>(0xffc12345u),
                            -0.0f};
  for (size_t i = 0; i < std::size(specials); ++i) x[3 * i] = specials[i];
  std::vector<bfloat16> out(3 * 40, bfloat16(5.0f));
  round_rows(x.data(), 37, 3, 37, out.data(), 40);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t n = 0; n < 37; ++n)
      EXPECT_EQ(out[size_t(r * 40 + n)].bits, bfloat16(x[size_t(r * 37 + n)]).bits) << r << "," << n;
    for (int64_t n = 37; n < 40; ++n)
      EXPECT_EQ(float(out[size_t(r * 40 + n)]), 5.0f) << "past the row: untouched";
  }
}

// f32dot: the same tiles on FMAs; A read by rows and transposed in place, B packed from rows and from
// a transposed block; odd sizes everywhere.
TEST(F32Dot, ProductsMatchADoubleReferenceForEveryTileAndRemainder) {
  if (!f32dot::available()) GTEST_SKIP() << "no AVX-512 here: the kernels are not used on this CPU";
  for (int64_t M : {1, 7, 8, 12, 13, 64, 67})
    for (int64_t N : {1, 15, 16, 17, 32, 33, 128})
      for (int64_t K : {0, 1, 5, 32, 129})
        for (int layout = 0; layout < 4; ++layout) {
          const bool a_transposed = layout & 1, b_transposed = layout & 2;
          // A(m, k): a[m * lda + k], or its transpose stored [K, M]: a[k * lda + m]
          const int64_t lda = (a_transposed ? M : K) + 3, ldb = (b_transposed ? K : N) + 2;
          std::vector<float> A =
              testing::uniform_floats(size_t((a_transposed ? K : M) * lda + 1), uint64_t(M + 100 * K));
          std::vector<float> B =
              testing::uniform_floats(size_t((b_transposed ? N : K) * ldb + 1), uint64_t(N + 7 * K));
          auto a_at = [&](int64_t m, int64_t k) {
            return A[size_t(a_transposed ? k * lda + m : m * lda + k)];
          };
          auto b_at = [&](int64_t k, int64_t n) {
            return B[size_t(b_transposed ? n * ldb + k : k * ldb + n)];
          };
          std::vector<float> packed_b(size_t(f32dot::packed_size(K, N)) + 1);
          f32dot::Packed pb = b_transposed ? f32dot::pack_transposed(B.data(), ldb, N, K, packed_b.data())
                                           : f32dot::pack(B.data(), ldb, K, N, packed_b.data());
          const int64_t ldc = N + 1;
          std::vector<float> C0 = testing::uniform_floats(size_t(M * ldc), 5), C = C0;
          f32dot::gemm(M, N, K, A.data(), a_transposed ? 1 : lda, a_transposed ? lda : 1, pb, C.data(), ldc,
                       0.25f, layout == 3);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double ref = 0, mag = 0;
              for (int64_t k = 0; k < K; ++k) {
                double t = double(a_at(m, k)) * b_at(k, n);
                ref += t, mag += std::abs(t);
              }
              const size_t at = size_t(m * ldc + n);
              const double want = 0.25 * ref + (layout == 3 ? C0[at] : 0.0);
              ASSERT_NEAR(C[at], want, 0.25 * tolerance(K, mag) + 1e-7)
                  << M << "x" << N << "x" << K << " layout " << layout << " at " << m << "," << n;
            }
          for (int64_t m = 0; m < M; ++m)
            ASSERT_EQ(C[size_t(m * ldc + N)], C0[size_t(m * ldc + N)]) << "past N";
        }
}

TEST(F32Dot, RowDots) {
  if (!f32dot::available()) GTEST_SKIP() << "no AVX-512 here: the kernels are not used on this CPU";
  for (int64_t N : {1, 15, 16, 17, 32, 100}) {
    const int64_t M = 4, lda = N + 2, ldb = N + 5;
    std::vector<float> a = testing::uniform_floats(size_t(M * lda), uint64_t(N)),
                       b = testing::uniform_floats(size_t(M * ldb), 9);
    std::vector<float> got(static_cast<size_t>(M));
    f32dot::row_dots(a.data(), lda, b.data(), ldb, M, N, got.data());
    for (int64_t m = 0; m < M; ++m) {
      double ref = 0, mag = 0;
      for (int64_t n = 0; n < N; ++n) {
        double t = double(a[size_t(m * lda + n)]) * b[size_t(m * ldb + n)];
        ref += t, mag += std::abs(t);
      }
      EXPECT_NEAR(got[size_t(m)], ref, tolerance(N, mag)) << N;
    }
  }
}

}  // namespace
}  // namespace graft::cpu
