// dot_general's CPU kernel over operand layouts: batch dims anywhere, several free or contracting
// dims, transposed operands. Strided layouts run as one batched oneDNN matmul on the operands in place
// (f32, and bf16 where the CPU has bf16 dot products); the rest are laid out densely first. Each f32
// and bf16 product is checked against the same product in f64 (dense BLAS), and bf16 on both routes.
#include "testing.h"

#include "graft/runtime/cpu/features.h"

namespace graft {
namespace {
using namespace graft::testing;

struct DotCase {
  const char* what;
  Shape lhs, rhs;
  IntList lc, rc, lb, rb;
};

TEST(DotLayouts, StridedAndDenseProductsMatchF64) {
  Rng rng(31);
  std::vector<DotCase> cases{
      {"attention logits q k^T: [b,t,h,d] x [b,s,h,d]", {3, 40, 4, 16}, {3, 37, 4, 16}, {3}, {3}, {0, 2}, {0, 2}},
      {"attention output p v: [b,h,t,s] x [b,s,h,d]", {3, 4, 40, 37}, {3, 37, 4, 16}, {3}, {1}, {0, 1}, {0, 2}},
      {"its gradient for v: [b,h,t,s] x [b,t,h,d] over t", {3, 4, 40, 37}, {3, 40, 4, 16}, {2}, {1}, {0, 1}, {0, 2}},
      {"dense batch", {6, 33, 20}, {6, 20, 19}, {2}, {1}, {0}, {0}},
      {"batch last on both", {33, 20, 6}, {20, 19, 6}, {1}, {0}, {2}, {2}},
      {"two free dims that merge", {5, 7, 9, 24}, {5, 24, 30}, {3}, {1}, {0}, {0}},
      {"two contractions that merge", {8, 6, 5, 30}, {8, 6, 5, 11}, {1, 2}, {1, 2}, {0}, {0}},
      {"two contractions in swapped order (no merge)", {8, 6, 5, 30}, {8, 5, 6, 11}, {1, 2}, {2, 1}, {0}, {0}},
      {"free dims split by a contraction (no merge)", {7, 9, 8, 6}, {9, 30}, {1}, {0}, {}, {}},
      {"no batch, transposed lhs", {50, 40}, {50, 30}, {0}, {0}, {}, {}},
      {"unit batch dims", {1, 64, 1, 32}, {1, 32, 1, 48}, {3}, {1}, {0, 2}, {0, 2}},
  };
  for (const DotCase& c : cases) {
    lax::DotDims dims(c.lc, c.rc, c.lb, c.rb);
    Array l64 = rng.uniform(c.lhs, DType::f64), r64 = rng.uniform(c.rhs, DType::f64);
    Array want = lax::dot_general(l64, r64, dims);
    Array got = lax::dot_general(l64.astype(DType::f32), r64.astype(DType::f32), dims);
    EXPECT_EQ(got.shape(), want.shape()) << c.what;
    EXPECT_TRUE(close(got, want, 1e-5, 1e-5)) << c.what;
    for (int native : {0, 1}) {
      if (native && !cpu::native_bf16()) continue;
      cpu::set_native_bf16_for_testing(native);
      Array lb = l64.astype(DType::bf16), rb = r64.astype(DType::bf16);
      Array exact = lax::dot_general(lb.astype(DType::f64), rb.astype(DType::f64), dims);
      Array h = lax::dot_general(lb, rb, dims);
      EXPECT_TRUE(close(h, exact, 1e-2, 1e-2)) << c.what << (native ? " (bf16 native)" : " (bf16 via f32)");
    }
    cpu::set_native_bf16_for_testing(-1);
  }
}

}  // namespace
}  // namespace graft
