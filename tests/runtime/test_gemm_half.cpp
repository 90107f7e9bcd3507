// Half-precision GEMMs (bf16 and f16): f32 accumulation and one rounding per result, on oneDNN's
// native bf16 kernels where the CPU has them and on the f32 route (operands widened, the f32 GEMM,
// the result rounded) otherwise; both routes are run here whatever the CPU (the native one only where
// it exists), against a double-precision reference and against each other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "graft/core/half.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/gemm.h"

namespace graft::cpu {
namespace {

template <class H>
std::vector<H> random_half(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<H> v(n);
  for (auto& x : v) x = H(u(g));
  return v;
}

template <class H>
DType dtype_of() {
  return std::is_same_v<H, bfloat16> ? DType::bf16 : DType::f16;
}

// op(A) op(B) in double from the half operands' exact values
template <class H>
std::vector<double> reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const std::vector<H>& A,
                              const std::vector<H>& B, std::vector<double>* abs_sum) {
  std::vector<double> C(static_cast<size_t>(M * N));
  abs_sum->assign(C.size(), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double p = double(float(A[size_t(ta ? k * M + m : m * K + k)])) * double(float(B[size_t(tb ? n * K + k : k * N + n)]));
        acc += p;
        mag += std::abs(p);
      }
      C[size_t(m * N + n)] = acc;
      (*abs_sum)[size_t(m * N + n)] = mag;
    }
  return C;
}

template <class H>
void check_routes() {
  const DType d = dtype_of<H>();
  // one rounding of the result (half an ulp: 2^-9 relative for bf16, 2^-12 for f16) plus f32 accumulation
  const double unit = d == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{128, 96, 200}, {33, 17, 29}, {1, 300, 64}, {70, 1, 513}}) {
        auto A = random_half<H>(size_t(M * K), 1 + uint64_t(M)), B = random_half<H>(size_t(K * N), 2 + uint64_t(N));
        std::vector<double> mag;
        auto want = reference(ta, tb, M, N, K, A, B, &mag);
        std::vector<std::vector<H>> results;
        for (int native : {0, 1}) {
          if (native && !(d == DType::bf16 && native_bf16())) continue;
          set_native_bf16_for_testing(native);
          std::vector<H> C(size_t(M * N), H(NAN));  // beta 0: C's old contents are not read
          gemm(d, ta, tb, M, N, K, A.data(), ta ? M : K, B.data(), tb ? K : N, C.data(), N);
          for (size_t i = 0; i < C.size(); ++i) {
            double got = float(C[i]);
            ASSERT_LE(std::abs(got - want[i]), unit * std::abs(want[i]) + 1e-6 * mag[i])
                << short_name(d) << (native ? " native" : " via f32") << " ta=" << ta << " tb=" << tb << " M=" << M
                << " N=" << N << " K=" << K << " at " << i << ": " << got << " vs " << want[i];
          }
          results.push_back(std::move(C));
        }
        set_native_bf16_for_testing(-1);
        // the two routes differ only in the order of the f32 sums: at most one ulp apart
        if (results.size() == 2)
          for (size_t i = 0; i < results[0].size(); ++i) {
            double a = float(results[0][i]), b = float(results[1][i]);
            EXPECT_LE(std::abs(a - b), 2 * unit * std::max(std::abs(a), std::abs(b)) + 1e-6 * mag[i]) << "at " << i;
          }
      }
}

TEST(GemmHalf, Bf16OnBothRoutes) { check_routes<bfloat16>(); }

TEST(GemmHalf, F16ViaF32) { check_routes<float16>(); }

TEST(GemmHalf, NativeBf16FollowsTheCpuAndTheSwitch) {
  // oneDNN's view of the CPU decides; the test hook overrides it both ways
  bool detected = native_bf16();
  set_native_bf16_for_testing(0);
  EXPECT_FALSE(native_bf16());
  EXPECT_FALSE(native_half_gemm(DType::bf16));
  set_native_bf16_for_testing(1);
  EXPECT_TRUE(native_half_gemm(DType::bf16));
  EXPECT_FALSE(native_half_gemm(DType::f16));
  EXPECT_FALSE(native_half_gemm(DType::f32));
  set_native_bf16_for_testing(-1);
  EXPECT_EQ(native_bf16(), detected);
}

TEST(GemmHalf, NanAndInfPropagate) {
  const int64_t M = 16, N = 16, K = 64;
  auto A = random_half<bfloat16>(M * K, 7), B = random_half<bfloat16>(K * N, 8);
  A[3 * K + 5] = bfloat16(NAN);       // row 3 of the result is NaN
  B[10 * N + 7] = bfloat16(INFINITY);  // column 7 is +-inf (or NaN where inf meets 0 or -inf)
  for (int native : {0, 1}) {
    if (native && !native_bf16()) continue;
    set_native_bf16_for_testing(native);
    std::vector<bfloat16> C(M * N);
    gemm(DType::bf16, false, false, M, N, K, A.data(), K, B.data(), N, C.data(), N);
    for (int64_t n = 0; n < N; ++n) EXPECT_TRUE(std::isnan(float(C[3 * N + n]))) << n;
    for (int64_t m = 0; m < M; ++m) {
      if (m == 3) continue;
      EXPECT_FALSE(std::isfinite(float(C[m * N + 7]))) << m;
    }
    EXPECT_TRUE(std::isfinite(float(C[0])));
  }
  set_native_bf16_for_testing(-1);
}

// Attention's per-head products read in place: q [b, t, h, d] times k [b, s, h, d] over d, batched
// over (b, h), as one strided matmul; against a double loop.
TEST(StridedMatmul, AttentionLayoutInPlace) {
  const int64_t b = 3, t = 40, s = 37, h = 4, d = 16;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> q(size_t(b * t * h * d)), k(size_t(b * s * h * d)), out(size_t(b * h * t * s), NAN);
  for (auto& x : q) x = u(g);
  for (auto& x : k) x = u(g);
  std::vector<int64_t> batch{b, h};
  std::vector<int64_t> qs{t * h * d, d, h * d, 1};  // [b, h] batch, then M = t, K = d
  std::vector<int64_t> ks{s * h * d, d, 1, h * d};  // [b, h] batch, then K = d, N = s
  bool took = strided_matmul(DType::f32, batch, t, s, d, q.data(), qs, k.data(), ks, out.data());
  EXPECT_EQ(took, have_onednn());
  if (!took) GTEST_SKIP() << "graft was built without oneDNN";
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < h; ++j)
      for (int64_t x = 0; x < t; ++x)
        for (int64_t y = 0; y < s; ++y) {
          double acc = 0;
          for (int64_t z = 0; z < d; ++z) acc += double(q[size_t(((i * t + x) * h + j) * d + z)]) * double(k[size_t(((i * s + y) * h + j) * d + z)]);
          ASSERT_NEAR(out[size_t(((i * h + j) * t + x) * s + y)], acc, 1e-5) << i << " " << j << " " << x << " " << y;
        }
  // f16 has no such kernel: declined, nothing written
  std::vector<float16> hq(q.size()), hk(k.size()), ho(out.size(), float16(0.0f));
  EXPECT_FALSE(strided_matmul(DType::f16, batch, t, s, d, hq.data(), qs, hk.data(), ks, ho.data()));
}

}  // namespace
}  // namespace graft::cpu
