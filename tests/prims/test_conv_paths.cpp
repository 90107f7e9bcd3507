// The f32 convolution (oneDNN's direct convolution where it applies) against the same convolution in
// f64 (graft's own im2col kernel), over layouts, strides, padding, dilation, groups and the shapes of
// the transposes a training step runs (data and weight gradients).
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
