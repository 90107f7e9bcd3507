// Golden tests of the compiler's passes: input jaxpr (made by tracing a small function), one pass,
// the expected jaxpr text. Dead equations a pass leaves behind (printed with `_` binders) are dce's
// to remove, which its own test shows.
#include "testing.h"

#include "graft/compiler/fusion.h"
#include "graft/compiler/memory_plan.h"
#include "graft/compiler/pipeline.h"
#include "graft/runtime/cpu/features.h"

namespace graft {
namespace {

class Passes : public ::testing::Test {
 protected:
  Array v = ones({3}), m = ones({2, 3}), W = ones({3, 4});
  std::function<Array(const Array&)> inner = jit([](const Array& x) { return sin(x) * 2.0; });

  template <class F, class... A>
  std::string after(const char* pass, F f, const A&... args) {
    return testing::golden(compiler::run_pass(pass, make_jaxpr(f)(args...)));
  }
};

TEST_F(Passes, inline_flattens_nested_jit) {
  EXPECT_EQ(after("inline", [&](const Array& x) { return inner(x) + inner(cos(x)); }, v), R"({ lambda ; a:f32[3]. let
    b:f32[3] = cos a
    c:f32[3] = sin b
    d:f32[3] = mul c 2.0:f32[]
    e:f32[3] = sin a
    f:f32[3] = mul e 2.0:f32[]
    g:f32[3] = add f d
  in (g,) })");
}

TEST_F(Passes, dce_drops_unused) {
  EXPECT_EQ(after("dce", [](const Array& x) { Array unused = exp(x); (void)unused; return sin(x); }, v), R"({ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) })");
}

TEST_F(Passes, cse_merges_repeats) {
  EXPECT_EQ(after("cse", [](const Array& x) { return sin(x) * cos(x) + sin(x) * cos(x); }, v), R"({ lambda ; a:f32[3]. let
    b:f32[3] = cos a
    c:f32[3] = sin a
    d:f32[3] = mul c b
    e:f32[3] = add d d
  in (e,) })");
}

TEST_F(Passes, fold_constants_evaluates_known) {
  EXPECT_EQ(after("fold_constants", [](const Array& x) { Array c = exp(array(1.0f)) * 2.0; return x * c + iota(f32, {3}); }, v), R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = mul b 5.4365635:f32[]
    d:f32[3] = add c a
  in (d,) })");
}

TEST_F(Passes, simplify_identities) {
  EXPECT_EQ(after("simplify", [](const Array& x) { return stop_gradient(x) * 1.0 + 0.0; }, v), R"({ lambda ; a:f32[3]. let  in (a,) })");
}

TEST_F(Passes, simplify_transpose_of_transpose) {
  EXPECT_EQ(after("simplify", [](const Array& x) { return transpose(transpose(x)); }, m), R"({ lambda ; a:f32[2,3]. let
    _:f32[3,2] = transpose[permutation=(1, 0)] a
  in (a,) })");
}

TEST_F(Passes, simplify_reshape_chain) {
  EXPECT_EQ(after("simplify", [](const Array& x) { return reshape(reshape(x, {3, 2}), {6}); }, m), R"({ lambda ; a:f32[2,3]. let
    _:f32[3,2] = reshape[new_sizes=(3, 2)] a
    b:f32[6] = reshape[new_sizes=(6,)] a
  in (b,) })");
}

TEST_F(Passes, simplify_broadcast_chain) {
  EXPECT_EQ(after("simplify", [](const Array& x) { return broadcast_to(broadcast_to(x, {2, 3}), {4, 2, 3}); }, v), R"({ lambda ; a:f32[3]. let
    _:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a
    b:f32[4,2,3] = broadcast_in_dim[broadcast_dimensions=(2,) shape=(4, 2, 3)] a
  in (b,) })");
}

TEST_F(Passes, simplify_transposed_product) {
  EXPECT_EQ(after("simplify", [](const Array& a, const Array& b) { return transpose(matmul(a, b)); }, m, W), R"({ lambda ; a:f32[2,3] b:f32[3,4]. let
    _:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] a b
    c:f32[4,2] = dot_general[
      dimension_numbers=(([0], [1]), ([], []))
      precision=None
      preferred_element_type=None
    ] b a
  in (c,) })");
}

TEST_F(Passes, simplify_double_negation) {
  EXPECT_EQ(after("simplify", [](const Array& x) { return -(-x); }, v), R"({ lambda ; a:f32[3]. let _:f32[3] = neg a in (a,) })");
}

TEST_F(Passes, simplify_iota_is_a_broadcast_of_the_1d_iota) {
  auto f = [](const Array& x) { return x + iota(DType::f32, {2, 3}, 1); };
  EXPECT_EQ(after("simplify", f, m), R"({ lambda ; a:f32[2,3]. let
    b:f32[3] = iota[dimension=0 dtype=float32 shape=(3,)]
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b
    d:f32[2,3] = add a c
  in (d,) })");
  // values along every dimension of a 3-D iota, jitted (through the rewrite) and eager
  for (int64_t d = 0; d < 3; ++d) {
    auto g = [d](const Array& x) { return x * iota(DType::i32, {3, 4, 5}, d); };
    Array x = ones({3, 4, 5}, DType::i32);
    EXPECT_TRUE(testing::close(jit(g)(x), g(x), 0, 0)) << d;
  }
}

TEST_F(Passes, widen_half_products_where_the_cpu_has_no_bf16_dot_products) {
  // a bf16 weight read by two products is widened once; an f32-preferred product keeps its type; with
  // native bf16 the pass leaves the program alone
  auto f = [](const Array& x, const Array& w) {
    return std::vector<Array>{matmul(x, w), lax::dot_general(x, w, lax::DotDims({1}, {0}, {}, {}), DType::f32)};
  };
  Array x = ones({2, 3}, DType::bf16), w = ones({3, 4}, DType::bf16);
  cpu::set_native_bf16_for_testing(0);
  std::string widened = after("widen_half_products", f, x, w);
  cpu::set_native_bf16_for_testing(1);
  std::string kept = after("widen_half_products", f, x, w);
  cpu::set_native_bf16_for_testing(-1);
  EXPECT_EQ(widened, R"({ lambda ; a:bf16[2,3] b:bf16[3,4]. let
    c:f32[2,3] = convert_element_type[new_dtype=float32 weak_type=False] a
    d:f32[3,4] = convert_element_type[new_dtype=float32 weak_type=False] b
    e:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] c d
    f:bf16[2,4] = convert_element_type[new_dtype=bfloat16 weak_type=False] e
    g:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] c d
  in (f, g) })");
  EXPECT_EQ(kept.find("convert_element_type"), std::string::npos) << kept;
}

TEST_F(Passes, widening_reads_the_f32_value_a_cast_rounded_under_excess_precision) {
  // x32.astype(bf16) @ w32.astype(bf16) on the f32 route: with excess precision the product reads x32
  // and w32 (the f32 -> bf16 -> f32 pair dropped: XLA's simplify-fp-conversions); without it the
  // rounded values are widened
  auto f = [](const Array& x, const Array& w) { return matmul(x.astype(DType::bf16), w.astype(DType::bf16)); };
  testing::Rng rng(7);
  Array x = rng.uniform({5, 6}), w = rng.uniform({6, 3});
  cpu::set_native_bf16_for_testing(0);
  std::string excess = after("widen_half_products", f, x, w);
  compiler::set_excess_precision(false);
  std::string exact = after("widen_half_products", f, x, w);
  Array rounded = jit(f)(x, w);
  compiler::set_excess_precision(true);
  Array wide = jit(f)(x, w);
  cpu::set_native_bf16_for_testing(-1);
  EXPECT_NE(excess.find("] a b\n"), std::string::npos) << excess;
  EXPECT_EQ(exact.find("] a b\n"), std::string::npos) << exact;
  EXPECT_NE(exact.find("convert_element_type[new_dtype=float32"), std::string::npos) << exact;
  // f16 keeps its roundings (they overflow to inf above 65504): the product reads them, widened
  auto h = [](const Array& x, const Array& w) { return matmul(x.astype(DType::f16), w.astype(DType::f16)); };
  std::string f16 = after("widen_half_products", h, x, w);
  EXPECT_EQ(f16.find("] a b\n"), std::string::npos) << f16;
  Array big = full({6, 3}, 1e5), small = full({5, 6}, 1e-3);
  EXPECT_TRUE(std::isinf(jit(h)(small, big).astype(DType::f32).to_vector<float>()[0]));
  // values: the f32 product of the unrounded operands, rounded once; and the product of the rounded ones
  EXPECT_TRUE(testing::close(wide, matmul(x, w).astype(DType::bf16), 0, 0));
  EXPECT_TRUE(testing::close(rounded, matmul(x.astype(DType::bf16).astype(DType::f32), w.astype(DType::bf16).astype(DType::f32)).astype(DType::bf16), 0, 0));
}

TEST_F(Passes, bf16_arithmetic_moves_to_f32_on_the_f32_route_under_excess_precision) {
  // a mixed-precision layer: with excess precision no bf16 activation is left in the program (the
  // product reads the f32 operands, the ReLU, the reduction and the cast back f32 values); without it
  // the product alone is widened between roundings
  auto f = [](const Array& x, const Array& w, const Array& b) {
    Array h = matmul(x.astype(DType::bf16), w.astype(DType::bf16)) + b.astype(DType::bf16);
    return sum(relu(h) * 2.0).astype(DType::f32);
  };
  testing::Rng rng(5);
  Array x = rng.uniform({6, 5}), w = rng.uniform({5, 4}), b = rng.uniform({4});
  cpu::set_native_bf16_for_testing(0);
  std::string moved = after("widen_half_products", f, x, w, b);
  Array wide = jit(f)(x, w, b);
  compiler::set_excess_precision(false);
  std::string kept = after("widen_half_products", f, x, w, b);
  compiler::set_excess_precision(true);
  cpu::set_native_bf16_for_testing(-1);
  // (the bias's own rounding stays: explicit conversions round for all but products)
  EXPECT_EQ(moved.find("bf16[6,"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("bf16[5,"), std::string::npos) << moved;
  EXPECT_NE(moved.find("bf16[4]"), std::string::npos) << moved;
  EXPECT_NE(kept.find("bf16[6,"), std::string::npos) << kept;
  // a round trip the program writes still rounds
  auto trip = [](const Array& x) { return x - x.astype(DType::bf16).astype(DType::f32); };
  cpu::set_native_bf16_for_testing(0);
  Array err = jit(trip)(x);
  cpu::set_native_bf16_for_testing(-1);
  EXPECT_TRUE(testing::close(err, trip(x), 0, 0));
  EXPECT_GT(max(abs(err)).item<double>(), 0.0);
  // the value is the f32 computation's (fused loops may sum in another order)
  auto f32 = [](const Array& x, const Array& w, const Array& b) {
    return sum(relu(matmul(x, w) + b.astype(DType::bf16).astype(DType::f32)) * 2.0);
  };
  EXPECT_TRUE(testing::close(wide, f32(x, w, b), 1e-6, 1e-6));
}

TEST_F(Passes, sums_read_the_f32_value_a_cast_rounded_on_the_f32_route) {
  // a bias gradient: the sum of a cotangent the program rounded to bf16, which products also read.
  // Sums accumulate in f32 as products do, so both read the f32 value (one cotangent stored, not it
  // and its rounding); an elementwise reader still sees the rounding
  auto f = [](const Array& g, const Array& h) {
    Array gb = g.astype(DType::bf16);
    return std::make_tuple(sum(gb, {0}), matmul(h.astype(DType::bf16), gb), max(gb * 3.0, {0}));
  };
  testing::Rng rng(11);
  Array g = rng.uniform({64, 5}, DType::f32, -1, 1), h = rng.uniform({3, 64});
  std::string ir;
  Array s, p, m;
  {
    testing::NativeBf16 route(0);
    ir = after("widen_half_products", f, g, h);
    std::tie(s, p, m) = jit(f)(g, h);
  }
  // one rounding of g is left (for the elementwise reader), widened once
  size_t roundings = 0;
  for (size_t at = ir.find("new_dtype=bfloat16"); at != std::string::npos;
       at = ir.find("new_dtype=bfloat16", at + 1))
    ++roundings;
  EXPECT_EQ(roundings, 1u + 3u) << ir;  // and the three bf16 results
  // the sum of the unrounded values, rounded once (not the sum of the rounded values)
  Array exact = sum(g, {0});
  EXPECT_TRUE(testing::close(s, exact.astype(DType::bf16), 0, 0));
  Array of_rounded = sum(g.astype(DType::bf16).astype(DType::f32), {0}).astype(DType::bf16);
  EXPECT_FALSE(testing::close(s, of_rounded, 0, 0))
      << "64 rounded values summed to the same bf16 sums: pick another seed";
  // the elementwise reader multiplies the rounded values
  EXPECT_TRUE(
      testing::close(m, max(g.astype(DType::bf16).astype(DType::f32) * 3.0, {0}).astype(DType::bf16), 0, 0));
}

TEST_F(Passes, bf16_convolutions_and_pooling_move_to_f32_on_the_f32_route) {
  // a bf16 conv layer with max pooling and its gradient: on the f32 route the convolutions (forward,
  // data and weight gradients), the pooling and its gradient all compute on f32 values
  auto loss_in = [](DType d) {
    return [d](const Array& x, const Array& w) {
      Array y = lax::conv_general_dilated(x.astype(d), w.astype(d), {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1},
                                          lax::ConvDims::nchw(2), 1, 1);
      Array p = lax::reduce_window_max(relu(y), {1, 1, 2, 2}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
      return sum(square(p.astype(x.dtype())));
    };
  };
  auto f = [&](const Array& x, const Array& w) { return grad(loss_in(DType::bf16), {0, 1})(x, w); };
  testing::Rng rng(13);
  Array x = rng.uniform({2, 3, 8, 8}), w = rng.uniform({4, 3, 3, 3});
  std::string ir;
  std::vector<Array> got;
  {
    testing::NativeBf16 route(0);
    ir = after("widen_half_products", f, x, w);
    got = jit(f)(x, w);
  }
  int seen = 0;
  for (const char* prim : {"conv_general_dilated", "reduce_window_max", "select_and_scatter_add"}) {
    for (size_t at = ir.find(std::string("= ") + prim); at != std::string::npos;
         at = ir.find(std::string("= ") + prim, at + 1)) {
      size_t line = ir.rfind('\n', at);
      std::string lhs = ir.substr(line + 1, at - line - 1);
      EXPECT_EQ(lhs.find("bf16"), std::string::npos) << prim << ": " << lhs << "\n" << ir;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3 + 1 + 1) << ir;  // three convolutions, the pooling, its gradient
  // the convolutions read the f32 operands and the pooling's gradient the f32 cotangent, so the weights'
  // gradient is the f32 program's (here f64's to f32's precision); the data gradient's convolution reads
  // the weights reversed, a structural operation of their rounding, so it is bf16's
  auto want = grad(loss_in(DType::f64), {0, 1})(x.astype(DType::f64), w.astype(DType::f64));
  for (size_t i = 0; i < 2; ++i) {
    double scale = max(abs(want[i])).item<double>();
    EXPECT_TRUE(testing::close(got[i].astype(DType::f64), want[i], i == 1 ? 1e-4 : 1e-2,
                               (i == 1 ? 1e-5 : 1e-2) * scale))
        << i;
  }
}

TEST_F(Passes, pooling_chooses_on_the_rounded_values_on_the_f32_route) {
  // 1.001 and 1.002 both round to bf16 1.0: the pooling of x.astype(bf16) and its gradient choose the
  // first, as eager evaluation does, although the gradient's scatter reads the f32 cotangent
  auto f = grad([](const Array& x) {
    Array p = lax::reduce_window_max(x.astype(DType::bf16), {2, 2}, {2, 2}, {{0, 0}, {0, 0}});
    return sum(p.astype(DType::f32) * 3.0);
  });
  Array x = testing::Rng::from_doubles({1.001, 1.002, 0.5, 0.25}, {2, 2}, DType::f32);
  Array eager = f(x);
  Array jitted;
  {
    testing::NativeBf16 route(0);
    jitted = jit(f)(x);
  }
  EXPECT_TRUE(testing::close(eager, testing::Rng::from_doubles({3, 0, 0, 0}, {2, 2}, DType::f32), 0, 0))
      << eager;
  EXPECT_TRUE(testing::close(jitted, eager, 0, 0)) << jitted;
}

TEST_F(Passes, widened_half_products_equal_eager_ones) {
  // eager bf16 products without native kernels widen, multiply in f32 and round once: the same bits as
  // the rewritten program's f32 product between conversions (batched ones within an ulp: one strided
  // matmul against a GEMM per batch)
  testing::Rng rng(41);
  cpu::set_native_bf16_for_testing(0);
  for (DType d : {DType::bf16, DType::f16}) {
    Array x = rng.uniform({37, 50}, d), w = rng.uniform({50, 29}, d);
    auto f = [](const Array& a, const Array& b) { return relu(matmul(a, b)) * 2.0; };
    Array want = f(x, w), got = jit(f)(x, w);
    EXPECT_EQ(got.dtype(), d);
    EXPECT_TRUE(testing::close(got, want, 0, 0)) << short_name(d);
    Array xb = rng.uniform({4, 37, 50}, d), wb = rng.uniform({4, 50, 29}, d);
    auto g = [](const Array& a, const Array& b) { return matmul(a, b); };
    EXPECT_TRUE(testing::close(jit(g)(xb, wb), g(xb, wb), 1e-2, 1e-2)) << short_name(d);
  }
  cpu::set_native_bf16_for_testing(-1);
}

TEST_F(Passes, fuse_bias_relu) {
  EXPECT_EQ(after("fuse", [](const Array& x, const Array& b) { return relu(x * 2.0 + b); }, m, v), R"({ lambda ; a:f32[2,3] b:f32[3]. let
    c:f32[2,3] = fusion[
      jaxpr={ lambda ; d:f32[2,3] e:f32[3]. let
          f:f32[2,3] = mul d 2.0:f32[]
          g:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=(1,)
            shape=(2, 3)
          ] e
          h:f32[2,3] = add f g
          i:bool[2,3] = gt h 0.0:f32[]
          j:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=()
            shape=(2, 3)
          ] 0.0:f32[]
          k:f32[2,3] = select_n i j h
        in (k,) }
    ] a b
  in (c,) })");
}

TEST_F(Passes, fuse_log_softmax) {
  EXPECT_EQ(after("fuse", [](const Array& x) { return log_softmax(x); }, m), R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = fusion[
      jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2] = reduce_max[axes=(1,)] c
          e:f32[2] = stop_gradient d
          f:f32[2,1] = reshape[new_sizes=(2, 1)] e
          g:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=(0, 1)
            shape=(2, 3)
          ] f
          h:f32[2,3] = sub c g
          i:f32[2,3] = exp h
          j:f32[2] = reduce_sum[axes=(1,)] i
          k:f32[2] = log j
          l:f32[2,1] = reshape[new_sizes=(2, 1)] k
          m:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=(0, 1)
            shape=(2, 3)
          ] l
          n:f32[2,3] = sub h m
        in (n,) }
    ] a
  in (b,) })");
}

TEST_F(Passes, fuse_sum_of_squares) {
  EXPECT_EQ(after("fuse", [](const Array& x) { return sum(x * x); }, m), R"({ lambda ; a:f32[2,3]. let
    b:f32[] = fusion[
      jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2,3] = mul c c
          e:f32[] = reduce_sum[axes=(0, 1)] d
        in (e,) }
    ] a
  in (b,) })");
}

TEST_F(Passes, fuse_lone_transcendentals_and_maps_beyond_the_caches) {
  // a lone elementwise equation stays plain unless a generated loop beats the eager kernel by far:
  // transcendental functions at any size, any map over 16 MiB or more
  EXPECT_EQ(after("fuse", [](const Array& x) { return x * 2.0; }, v), "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }");
  EXPECT_EQ(after("fuse", [](const Array& x) { return exp(x); }, v), R"({ lambda ; a:f32[3]. let
    b:f32[3] = fusion[
      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = exp c in (d,) }
    ] a
  in (b,) })");
  EXPECT_EQ(after("fuse", [](const Array& x) { return x * 2.0; }, zeros({int64_t(1) << 22})), R"({ lambda ; a:f32[4194304]. let
    b:f32[4194304] = fusion[
      jaxpr={ lambda ; c:f32[4194304]. let d:f32[4194304] = mul c 2.0:f32[] in (d,) }
    ] a
  in (b,) })");
  EXPECT_EQ(after("fuse", [](const Array& x) { return x * 2.0; }, zeros({(int64_t(1) << 22) - 1})).find("fusion"),
            std::string::npos);
}

TEST_F(Passes, fuse_copies_scalar_broadcasts_per_reader) {
  // after cse both relus read one broadcast zero; each fused loop gets its own copy instead of one
  // loop exporting a materialized array of zeros
  auto f = [](const Array& x, const Array& w) { return relu(matmul(relu(x), w)); };
  ClosedJaxpr j = compiler::run_pass("cse", make_jaxpr(f)(ones({2, 3}), ones({3, 3})));
  EXPECT_EQ(testing::golden(compiler::run_pass("fuse", j)), R"({ lambda ; a:f32[2,3] b:f32[3,3]. let
    c:f32[2,3] = fusion[
      jaxpr={ lambda ; d:f32[2,3]. let
          e:bool[2,3] = gt d 0.0:f32[]
          f:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=()
            shape=(2, 3)
          ] 0.0:f32[]
          g:f32[2,3] = select_n e f d
        in (g,) }
    ] a
    h:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] c b
    i:f32[2,3] = fusion[
      jaxpr={ lambda ; j:f32[2,3]. let
          k:bool[2,3] = gt j 0.0:f32[]
          l:f32[2,3] = broadcast_in_dim[
            broadcast_dimensions=()
            shape=(2, 3)
          ] 0.0:f32[]
          m:f32[2,3] = select_n k l j
        in (m,) }
    ] h
  in (i,) })");
}

TEST_F(Passes, fuse_exports_a_row_value_not_its_broadcast) {
  // a row's scale, broadcast and read by a loop on each side of a product (a layer norm's forward and
  // backward): the first loop exports the [2, 1] scale, and the second broadcasts its own copy
  auto f = [](const Array& x, const Array& w) {
    Array s = broadcast_to(rsqrt(sum(x * x, {1}, true) + 1.0), {2, 3});
    return matmul(x * s, w) * s;
  };
  ClosedJaxpr j = compiler::run_pass("cse", make_jaxpr(f)(ones({2, 3}), ones({3, 3})));
  ClosedJaxpr fused = compiler::run_pass("fuse", j);
  ASSERT_EQ(fused.jaxpr->eqns.size(), 3u) << testing::golden(fused);
  const Eqn& first = fused.jaxpr->eqns[0];
  ASSERT_EQ(first.prim, &compiler::fusion_p);
  ASSERT_EQ(first.outputs.size(), 2u) << testing::golden(fused);
  EXPECT_TRUE(first.outputs[0]->aval.shape == (Shape{2, 1}) || first.outputs[1]->aval.shape == (Shape{2, 1}))
      << testing::golden(fused);
  const Eqn& last = fused.jaxpr->eqns[2];
  EXPECT_EQ(last.prim, &compiler::fusion_p);
  EXPECT_EQ(last.inputs.size(), 2u) << testing::golden(fused);
  // and the values: jit against eager
  testing::Rng rng(3);
  Array x = rng.uniform({2, 3}), w = rng.uniform({3, 3});
  EXPECT_TRUE(testing::close(jit(f)(x, w), f(x, w), 1e-6, 1e-6));
}

TEST_F(Passes, accumulate_dots_sgd_update) {
  // w - (x^T dy) * 0.01: the product, its scaling and the subtraction become one GEMM into w
  Array dy = ones({2, 4});
  EXPECT_EQ(after("accumulate_dots", [](const Array& w, const Array& x, const Array& g) {
    return w - matmul(transpose(x), g) * 0.01;
  }, W, m, dy), R"({ lambda ; a:f32[3,4] b:f32[2,3] c:f32[2,4]. let
    d:f32[3,2] = transpose[permutation=(1, 0)] b
    e:f32[3,4] = dot_general_add[
      alpha=-0.009999999776482582
      beta=1.0
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] d c a
  in (e,) })");
  // the other forms: p - w (beta -1), w + -p, c * p + w
  EXPECT_EQ(after("accumulate_dots", [](const Array& w, const Array& x, const Array& g) {
    Array p = matmul(transpose(x), g);
    Array q = matmul(transpose(x), g * 2.0);
    Array r = matmul(transpose(x * 3.0), g);
    return std::vector<Array>{p - w, w + -q, 0.5 * r + w};
  }, W, m, dy), R"({ lambda ; a:f32[3,4] b:f32[2,3] c:f32[2,4]. let
    d:f32[3,2] = transpose[permutation=(1, 0)] b
    e:f32[2,4] = mul c 2.0:f32[]
    f:f32[3,2] = transpose[permutation=(1, 0)] b
    g:f32[2,3] = mul b 3.0:f32[]
    h:f32[3,2] = transpose[permutation=(1, 0)] g
    i:f32[3,4] = dot_general_add[
      alpha=1.0
      beta=-1.0
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] d c a
    j:f32[3,4] = dot_general_add[
      alpha=-1.0
      beta=1.0
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] f e a
    k:f32[3,4] = dot_general_add[
      alpha=0.5
      beta=1.0
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] h c a
  in (i, j, k) })");
}

TEST_F(Passes, accumulate_dots_leaves_shared_products_and_biases) {
  // a product read twice is written out anyway; a bias is cheaper to add in the fused loop after the
  // GEMM than to broadcast for the GEMM to read; an addend of another shape would need a broadcast
  Array b = ones({4});
  EXPECT_EQ(after("accumulate_dots", [](const Array& w, const Array& x, const Array& bias) {
    Array p = matmul(x, w);
    return std::vector<Array>{p + 1.0, p * 2.0, matmul(x, w) + bias};
  }, W, m, b), R"({ lambda ; a:f32[3,4] b:f32[2,3] c:f32[4]. let
    d:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] b a
    e:f32[2,4] = add d 1.0:f32[]
    f:f32[2,4] = mul d 2.0:f32[]
    g:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=None
    ] b a
    h:f32[2,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 4)] c
    i:f32[2,4] = add g h
  in (e, f, i) })");
}

TEST_F(Passes, memory_plan_reuses_buffers_in_place) {
  // each fused loop writes into the product it reads (which dies there): two buffers in all
  auto f = [](const Array& x, const Array& w) {
    Array h = relu(matmul(x, w));
    return tanh(matmul(h, w)) * 2.0 + 1.0;
  };
  ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(ones({4, 8}), ones({8, 8})));
  EXPECT_EQ(compiler::plan_memory(opt).str(*opt.jaxpr), R"(eqn 0 dot_general -> #0 f32[4,8]
eqn 1 fusion -> #0 f32[4,8] (in place of operand 0)
eqn 2 dot_general -> #1 f32[4,8]
eqn 3 fusion -> #1 f32[4,8] (in place of operand 0)
peak 256 bytes in 2 buffers (+ 384 bytes of arguments))");
  // without fusion opportunities values still share buffers once their readers are done
  auto g = [](const Array& x, const Array& w) { return matmul(matmul(matmul(x, w), w), w); };
  ClosedJaxpr opt2 = compiler::optimize(make_jaxpr(g)(ones({4, 8}), ones({8, 8})));
  EXPECT_EQ(compiler::plan_memory(opt2).str(*opt2.jaxpr), R"(eqn 0 dot_general -> #0 f32[4,8]
eqn 1 dot_general -> #1 f32[4,8]
eqn 2 dot_general -> #0 f32[4,8]
peak 256 bytes in 2 buffers (+ 384 bytes of arguments))");
}

TEST_F(Passes, memory_plan_donated_arguments) {
  // an SGD update p - lr * g with p donated: the result takes p's buffer, whichever operand order
  // the fused loop has; g (not donated) stays the caller's
  auto f = [](const Array& p, const Array& g) { return p - g * 0.1; };
  ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(ones({1000}), ones({1000})));
  EXPECT_EQ(compiler::plan_memory(opt, {true, false}).str(*opt.jaxpr), R"(arg 0 (donated) -> #0 f32[1000]
eqn 0 fusion -> #0 f32[1000] (in place of operand 1)
peak 4000 bytes in 1 buffers (+ 4000 bytes of arguments))");
  // both donated: the fused update takes v's buffer (its first candidate); v * 0.9, a lone primitive
  // rather than a fused loop, gets a buffer of its own
  auto g = [](const Array& p, const Array& v) { return std::make_pair(p - v * 0.1, v * 0.9); };
  ClosedJaxpr opt2 = compiler::optimize(make_jaxpr(g)(ones({8}), ones({8})));
  EXPECT_EQ(compiler::plan_memory(opt2, {true, true}).str(*opt2.jaxpr), R"(arg 0 (donated) -> #0 f32[8]
arg 1 (donated) -> #1 f32[8]
eqn 0 mul -> #2 f32[8]
eqn 1 fusion -> #1 f32[8] (in place of operand 0)
peak 96 bytes in 3 buffers)");
}

}  // namespace
}  // namespace graft
