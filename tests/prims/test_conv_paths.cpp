// The f32 convolution (oneDNN's direct convolution where it applies) against the same convolution in
// f64 (graft's own im2col kernel), over layouts, strides, padding, dilation, groups and the shapes of
// the transposes a training step runs (data and weight gradients); bf16 and f16 convolutions (oneDNN's
// bf16 kernels where the CPU has bf16 dot products, f32 on widened operands elsewhere) against the
// f64 convolution of the same values rounded once.
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

struct ConvCase {
  Shape lhs, rhs;
  Shape strides;
  std::vector<std::pair<int64_t, int64_t>> padding;
  Shape rhs_dil;
  lax::ConvDims dn;
  int64_t groups;
};

TEST(ConvPaths, F32MatchesF64) {
  Rng rng(17);
  std::vector<ConvCase> cases{
      {{2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2), 1},
      {{2, 3, 9, 8}, {4, 3, 3, 2}, {2, 1}, {{1, 2}, {0, 1}}, {1, 1}, lax::ConvDims::nchw(2), 1},
      {{1, 4, 10, 9}, {6, 2, 3, 3}, {1, 2}, {{2, 2}, {1, 1}}, {2, 1}, lax::ConvDims::nchw(2), 2},
      {{2, 8, 7, 3}, {3, 3, 3, 5}, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, lax::ConvDims::nhwc(2), 1},
      // the weight gradient of a 3x3 convolution of a batch of 4 (batch and features swapped)
      {{3, 4, 9, 9}, {5, 4, 7, 7}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2), 1},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const ConvCase& c = cases[k];
    Array l = rng.uniform(c.lhs, f64), r = rng.uniform(c.rhs, f64);
    auto run = [&](DType d) {
      return lax::conv_general_dilated(l.astype(d), r.astype(d), c.strides, c.padding, Shape{1, 1}, c.rhs_dil, c.dn,
                                       c.groups, 1);
    };
    EXPECT_TRUE(close(run(f32).astype(f64), run(f64), 1e-4, 1e-4)) << "case " << k;
  }
}

// Every element of `got` (a half type) is `want` (f64) rounded, or its neighbour where the f32 sum
// fell on the other side of a rounding boundary (or within the f32 sum's own error, 1e-4 here, of a
// result near zero); most are exactly the rounding.
void expect_rounded_once(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> g = got.astype(f64).to_vector<double>(),
                      r = want.astype(got.dtype()).astype(f64).to_vector<double>(),
                      w = want.to_vector<double>();
  const double ulp = got.dtype() == bf16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
  size_t exact = 0, far = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    exact += g[i] == r[i];
    far += std::abs(g[i] - w[i]) > ulp * std::abs(w[i]) + 1e-4;
  }
  EXPECT_EQ(far, 0u) << what;
  EXPECT_GE(exact, g.size() * 9 / 10) << what;
}

TEST(ConvPaths, HalfConvolutionsRoundOnce) {
  Rng rng(29);
  std::vector<ConvCase> cases{
      {{4, 3, 12, 12}, {8, 3, 3, 3}, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, lax::ConvDims::nchw(2), 1},
      {{2, 9, 8, 16}, {3, 3, 16, 32}, {2, 1}, {{1, 2}, {0, 1}}, {1, 1}, lax::ConvDims::nhwc(2), 1},
      {{1, 4, 10, 9}, {6, 2, 3, 3}, {1, 2}, {{2, 2}, {1, 1}}, {2, 1}, lax::ConvDims::nchw(2), 2},
      // a weight gradient's shape (oneDNN's backward-weights kernels): kernel larger than the output
      {{16, 8, 13, 13}, {32, 8, 11, 11}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2), 1},
      {{3, 1, 28, 28}, {4, 1, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2), 1},
  };
  for (int native : {-1, 0}) {  // the CPU's own kernels (bf16 ones where it has them), then f32 forced
    NativeBf16 mode(native);
    for (DType d : {bf16, f16})
      for (size_t k = 0; k < cases.size(); ++k) {
        const ConvCase& c = cases[k];
        Array l = rng.uniform(c.lhs, f32).astype(d), r = rng.uniform(c.rhs, f32).astype(d);
        auto run = [&](const Array& a, const Array& b) {
          return lax::conv_general_dilated(a, b, c.strides, c.padding, Shape{1, 1}, c.rhs_dil, c.dn, c.groups,
                                           1);
        };
        Array got = run(l, r);
        EXPECT_EQ(got.dtype(), d);
        expect_rounded_once(got, run(l.astype(f64), r.astype(f64)),
                            "case " + std::to_string(k) + " " + std::string(short_name(d)) + " native " +
                                std::to_string(native));
      }
  }
}

TEST(ConvPaths, HalfTrainingStepGradientsFollowF64) {
  // a bf16 conv layer's gradients (forward, data and weight gradients in bf16, the loss in f32) against
  // f64's at bf16's precision (relative to the largest element: the gradients' sums cancel), on the
  // CPU's own kernels and with bf16 dot products turned off
  Rng rng(5);
  Array x = rng.uniform({8, 4, 12, 12}, f32).astype(bf16).astype(f64),
        w = rng.uniform({6, 4, 3, 3}, f32).astype(bf16).astype(f64);
  auto loss = [](const Array& x, const Array& w) {
    Array y = lax::conv_general_dilated(x, w, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1},
                                        lax::ConvDims::nchw(2), 1, 1);
    return sum(square(y.astype(y.dtype() == f64 ? f64 : f32)));
  };
  auto want = grad(loss, {0, 1})(x, w);
  for (int native : {-1, 0}) {
    NativeBf16 mode(native);
    auto got = grad(loss, {0, 1})(x.astype(bf16), w.astype(bf16));
    auto jitted = jit([&](const Array& a, const Array& b) {
      return grad(loss, {0, 1})(a, b);
    })(x.astype(bf16), w.astype(bf16));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(got[i].dtype(), bf16);
      double scale = max(abs(want[i])).item<double>();
      EXPECT_TRUE(close(got[i].astype(f64), want[i], 1e-2, 1e-2 * scale))
          << "grad " << i << " native " << native;
      EXPECT_TRUE(close(jitted[i].astype(f64), want[i], 1e-2, 1e-2 * scale))
          << "jit grad " << i << " native " << native;
    }
  }
}

TEST(ConvPaths, TrainingStepGradientsMatchF64) {
  // value_and_grad of a conv layer: forward, data gradient (padded, flipped kernel) and weight gradient
  // (oneDNN's backward-weights kernels in f32), over layouts, strides, padding and dilation, including
  // strides that leave input rows unread (the weight gradient then takes the forward-convolution path)
  struct G {
    Shape x, w, strides;
    std::vector<std::pair<int64_t, int64_t>> pad;
    Shape dil;
    lax::ConvDims dn;
  };
  std::vector<G> cases{
      {{4, 3, 10, 10}, {5, 3, 3, 3}, {2, 1}, {{1, 1}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2)},
      {{4, 3, 11, 11}, {5, 3, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, lax::ConvDims::nchw(2)},
      {{3, 12, 9, 4}, {3, 3, 4, 6}, {1, 1}, {{1, 0}, {2, 1}}, {2, 1}, lax::ConvDims::nhwc(2)},
      {{2, 2, 10, 9}, {4, 2, 3, 2}, {2, 3}, {{0, 0}, {1, 0}}, {1, 1}, lax::ConvDims::nchw(2)},
  };
  Rng rng(3);
  for (size_t k = 0; k < cases.size(); ++k) {
    const G& c = cases[k];
    Array x = rng.uniform(c.x, f64), w = rng.uniform(c.w, f64);
    auto loss = [&c](const Array& x, const Array& w) {
      return sum(square(lax::conv_general_dilated(x, w, c.strides, c.pad, {1, 1}, c.dil, c.dn, 1, 1)));
    };
    auto g64 = grad(loss, {0, 1})(x, w);
    auto g32 = grad(loss, {0, 1})(x.astype(f32), w.astype(f32));
    for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(close(g32[i].astype(f64), g64[i], 1e-3, 1e-3)) << "case " << k << " grad " << i;
  }
}

}  // namespace
}  // namespace graft
