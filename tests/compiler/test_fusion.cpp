// Fused loops against the unfused interpreter: every function runs eagerly (one kernel per
// primitive) and under jit (optimized and fused), on random inputs of awkward sizes (1, odd,
// around the tile and vector widths, rows longer than a tile, rows chunked), and must agree.
#include "testing.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "graft/compiler/executable.h"
#include "graft/compiler/cpu/fused_kernel.h"
#include "graft/compiler/pipeline.h"
#include "graft/compiler/target.h"

namespace graft {
namespace {

using testing::close;
using testing::Rng;

// Number of fusion equations in the optimized program of f at these arguments.
template <class F, class... A>
int fusions(F f, const A&... args) {
  ClosedJaxpr j = make_jaxpr(f)(args...);
  int n = 0;
  ClosedJaxpr opt = compiler::optimize(j);
  for (auto& e : opt.jaxpr->eqns) n += e.prim == &compiler::fusion_p ? 1 : 0;
  return n;
}

template <class F, class... A>
void expect_same(F f, double rtol, const A&... args) {
  Array want = f(args...);
  Array got = jit(f)(args...);
  EXPECT_TRUE(close(got, want, rtol, rtol)) << "arguments " << (args.aval().str() + ...);
}

const std::vector<int64_t> kSizes = {1, 2, 7, 15, 16, 17, 255, 1000, 2047, 2048, 2049, 5000, 100003};

TEST(Fusion, elementwise_chain_all_sizes) {
  Rng rng(1);
  auto f = [](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; };
  for (int64_t n : kSizes) expect_same(f, 1e-6, rng.uniform({n}, f32, -4, 4));
  EXPECT_EQ(fusions(f, ones({100})), 1);
}

TEST(Fusion, transcendental_chain_f32_and_f64) {
  Rng rng(2);
  auto f = [](const Array& x) { return sigmoid(x) + log(x * x + 1.0) - exp(-abs(x)) / (sqrt(abs(x)) + 1.0); };
  for (DType d : {f32, f64})
    for (int64_t n : {3, 2049, 7001}) expect_same(f, d == f32 ? 1e-5 : 1e-12, rng.uniform({n}, d, -5, 5));
}

TEST(Fusion, bias_relu_broadcasts) {
  Rng rng(3);
  auto f = [](const Array& x, const Array& b) { return relu(x * 2.0 + b); };
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 5}, {128, 512}, {7, 2049}, {3000, 3}})
    expect_same(f, 1e-6, rng.uniform({r, c}), rng.uniform({c}));
  EXPECT_EQ(fusions(f, ones({4, 8}), ones({8})), 1);
}

// An operand whose size equals the rows' count only by coincidence: a [T, S] attention mask spread
// over logits [B, H, T, S] with B * H = S, next to the softmax's row reductions (once an internal error).
TEST(Fusion, operand_of_a_rows_size_spread_otherwise) {
  Rng rng(31);
  auto f = [](const Array& x, const Array& mask) { return softmax(where(broadcast_to(mask, x.shape()), x, full_like(x, -1e9)), -1); };
  Array x = rng.uniform({2, 4, 8, 8}), mask = rng.bools({8, 8});
  expect_same(f, 1e-6, x, mask);
  EXPECT_EQ(fusions(f, x, mask), 1);
}

TEST(Fusion, row_and_middle_broadcasts) {
  Rng rng(4);
  auto rows = [](const Array& x, const Array& s) { return x * s - s; };
  expect_same(rows, 1e-6, rng.uniform({37, 129}), rng.uniform({37, 1}));
  auto middle = [](const Array& x, const Array& s) { return x + broadcast_to(s.reshape({1, 5, 1}), {3, 5, 7}); };
  expect_same(middle, 1e-6, rng.uniform({3, 5, 7}), rng.uniform({5}));
  // a broadcast whose kept dimensions are not contiguous is materialized, not fused
  auto split = [](const Array& x, const Array& s) { return x + broadcast_to(s.reshape({3, 1, 7}), {3, 5, 7}); };
  expect_same(split, 1e-6, rng.uniform({3, 5, 7}), rng.uniform({3, 7}));
}

TEST(Fusion, softmax_and_log_softmax_rows) {
  Rng rng(5);
  auto sm = [](const Array& x) { return softmax(x); };
  auto lsm = [](const Array& x) { return log_softmax(x); };
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 2}, {3, 5}, {130, 10}, {8, 16}, {5, 4096}, {3, 4097}, {2, 20000}, {1, 2049}}) {
    Array x = rng.uniform({r, c}, f32, -10, 10);
    expect_same(sm, 1e-5, x);
    expect_same(lsm, 1e-5, x);
  }
  EXPECT_EQ(fusions(sm, ones({8, 16})), 1);
  EXPECT_EQ(fusions(lsm, ones({8, 16})), 1);
}

TEST(Fusion, reductions_full_and_chunked) {
  Rng rng(6);
  auto ss = [](const Array& x) { return sum(x * x); };
  auto mx = [](const Array& x) { return max(exp(x), -1); };
  auto mn = [](const Array& x) { return min(x * 3.0, -1); };
  for (int64_t n : {2, 10, 2049, 16385, 100000}) {
    Array x = rng.uniform({n});
    expect_same(ss, 1e-5, x);
    expect_same(mx, 1e-6, x);
    expect_same(mn, 1e-6, x);
  }
  EXPECT_EQ(fusions(ss, ones({100000})), 1);
}

TEST(Fusion, layer_norm_rows) {
  Rng rng(7);
  auto ln = [](const Array& x) {
    Array mu = mean(x, -1, true);
    Array d = x - mu;
    return d * rsqrt(mean(d * d, -1, true) + 1e-5);
  };
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{4, 33}, {64, 512}, {3, 5000}})
    expect_same(ln, 1e-4, rng.uniform({r, c}, f32, -3, 3));
}

TEST(Fusion, integer_boolean_and_conversions) {
  Rng rng(8);
  auto ints = [](const Array& i) { return remainder(i * 3 + 1, 5) - (i > 2).astype(i32); };
  expect_same(ints, 0, rng.ints({1001}, i32, -50, 50));
  auto mixed = [](const Array& x, const Array& i) {
    return where(x > 0.25, x.astype(i32) + i, i * 2).astype(f32) * 0.5 + x;
  };
  expect_same(mixed, 1e-6, rng.uniform({2051}, f32, -3, 3), rng.ints({2051}, i32, -9, 9));
  auto clamped = [](const Array& x) { return clip(x * 4.0, -1.0, 1.0) + maximum(x, 0.5); };
  expect_same(clamped, 1e-6, rng.uniform({999}, f32, -1, 1));
}

TEST(Fusion, cross_entropy_and_several_outputs) {
  Rng rng(9);
  auto ce = [](const Array& logits, const Array& y) {
    return -mean(sum(one_hot(y, 10) * log_softmax(logits), -1));
  };
  expect_same(ce, 1e-5, rng.uniform({128, 10}, f32, -3, 3), rng.ints({128}, i32, 0, 9));
  // a group with several outputs, one of them also read by a later, unfused operation
  auto two = [](const Array& x, const Array& w) {
    Array h = tanh(x) * 2.0;
    Array z = matmul(h, w);
    return std::vector<Array>{h + 1.0, z * sum(h)};
  };
  Array x = rng.uniform({16, 8}), w = rng.uniform({8, 8});
  auto want = two(x, w);
  auto got = jit(two)(x, w);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(close(got[0], want[0], 1e-5, 1e-5));
  EXPECT_TRUE(close(got[1], want[1], 1e-5, 1e-5));
}

TEST(Fusion, mlp_training_step_matches_eager) {
  nn::MLP mlp{{20, 32, 32, 5}};
  Tree params = mlp.init(random::key(0));
  Rng rng(10);
  Array x = rng.uniform({17, 20}), y = rng.ints({17}, i32, 0, 4);
  auto loss = [&](const Tree& p, const Array& xb, const Array& yb) { return nn::cross_entropy(mlp(p, xb), yb); };
  auto step = [&](const Tree& p, const Array& xb, const Array& yb) {
    auto [l, g] = value_and_grad(loss)(p, xb, yb);
    Tree next = tree_map([](const Array& w, const Array& dw) { return w - dw * 0.1; }, p, g);
    return std::make_pair(l, next);
  };
  auto [l0, p0] = step(params, x, y);
  auto [l1, p1] = jit(step)(params, x, y);
  EXPECT_TRUE(close(l1, l0, 1e-5, 1e-6));
  auto a = p0.leaves(), b = p1.leaves();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(close(b[i], a[i], 1e-4, 1e-6)) << "leaf " << i;
}

TEST(Fusion, fused_body_runs_standalone) {
  // the fused kernel of a body built by hand (the pass's output format) runs through FusedKernel
  Rng rng(11);
  Array x = rng.uniform({6, 7});
  ClosedJaxpr opt = compiler::optimize(make_jaxpr([](const Array& a) { return softmax(a); })(x));
  ASSERT_EQ(opt.jaxpr->eqns.size(), 1u);
  const ClosedJaxpr& body = compiler::fusion_body(opt.jaxpr->eqns[0].params);
  Arrays out = compiler::FusedKernel::of(body).run(std::vector<Array>{x});
  EXPECT_TRUE(close(out[0], softmax(x), 1e-6, 1e-7));
  EXPECT_THROW(compiler::FusedKernel::of(body).run(std::vector<Array>{ones({6, 8})}), TypeError);
}

TEST(Fusion, outputs_reuse_dead_operands) {
  Rng rng(13);
  ClosedJaxpr opt = compiler::optimize(make_jaxpr([](const Array& a, const Array& b) {
    return tanh(a) * 2.0 + b;
  })(ones({3000}), ones({3000})));
  ASSERT_EQ(opt.jaxpr->eqns.size(), 1u);
  const auto& k = compiler::FusedKernel::of(compiler::fusion_body(opt.jaxpr->eqns[0].params));
  Array a = rng.uniform({3000}), b = rng.uniform({3000});
  Array want = tanh(a) * 2.0 + b;
  // a dead operand that nothing else holds: the output takes its buffer
  Array a2 = a * 1.0;
  const void* storage = a2.raw_data();
  std::vector<Array> dead{std::move(a2), Array()};
  std::vector<Array> args{Array(), b};
  Arrays out = k.run(args, dead);
  EXPECT_EQ(out[0].raw_data(), storage);
  EXPECT_TRUE(close(out[0], want, 1e-6, 1e-7));
  // an operand someone still holds is never overwritten
  std::vector<Array> dead2{a, Array()};
  Arrays out2 = k.run(args, dead2);
  EXPECT_NE(out2[0].raw_data(), a.raw_data());
  EXPECT_TRUE(close(out2[0], want, 1e-6, 1e-7));
  EXPECT_TRUE(close(a, dead2[0]));
}

TEST(Fusion, in_place_reuse_inside_programs_is_invisible) {
  // intermediates between GEMMs die at the fused loops that read them; results stay exact
  Rng rng(14);
  auto f = [](const Array& x, const Array& w) {
    Array h = matmul(tanh(x), w);
    Array g = relu(h) * 2.0 + h;
    return matmul(g, w) + sum(g);
  };
  Array x = rng.uniform({64, 32}), w = rng.uniform({32, 32});
  EXPECT_TRUE(close(jit(f)(x, w), f(x, w), 1e-5, 1e-5));
}

TEST(Pipeline, dump_ir_writes_every_pass) {
  auto dir = std::filesystem::temp_directory_path() / "graft_dump_test";
  std::filesystem::remove_all(dir);
  setenv("GRAFT_DUMP_IR", dir.c_str(), 1);
  compiler::OptimizeOptions o;
  o.name = "my_fn";
  compiler::optimize(make_jaxpr([](const Array& x) { return exp(x) + 1.0; })(ones({4})), o);
  unsetenv("GRAFT_DUMP_IR");
  int files = 0;
  bool saw_fuse = false;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::string name = e.path().filename().string();
    EXPECT_EQ(name.rfind("my_fn.", 0), 0u) << name;
    saw_fuse = saw_fuse || name.find(".fuse.txt") != std::string::npos;
  }
  int cpu_passes = 0;  // per-target passes run only where the target asks (the CPU: two of them)
  auto cpu = compiler::target_of(0).passes;
  for (auto& p : compiler::pipeline())
    cpu_passes += !p.per_target || std::find(cpu.begin(), cpu.end(), p.name) != cpu.end() ? 1 : 0;
  EXPECT_EQ(cpu, (std::vector<std::string>{"widen_half_products", "accumulate_dots"}));
  EXPECT_EQ(files, cpu_passes + 1);
  EXPECT_TRUE(saw_fuse);
  std::filesystem::remove_all(dir);
}

// The pipeline as docs/architecture.md and pipeline.h spell it is the one pipeline.cpp runs (per-target
// passes in brackets): a comment nothing checks drifts.
TEST(Pipeline, docs_list_the_passes_in_order) {
  std::string line;
  for (auto& p : compiler::pipeline())
    line += (line.empty() ? "" : " → ") + (p.per_target ? "[" + std::string(p.name) + "]" : std::string(p.name));
  EXPECT_EQ(line,
            "inline → simplify → fold_constants → cse → dce → [widen_half_products] → [accumulate_dots] → "
            "[gemm_epilogues] → fuse → dce");
  for (const char* doc : {"/docs/architecture.md", "/graft/compiler/pipeline.h"}) {
    std::ifstream f(std::string(GRAFT_SOURCE_DIR) + doc);
    ASSERT_TRUE(f) << doc;
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(line), std::string::npos) << doc << " does not list the pipeline as: " << line;
  }
}

TEST(Pipeline, profile_table_names_each_step_by_operand_types) {
  // GRAFT_PROFILE is read once per process and the table printed at exit: run in a child process
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("GRAFT_PROFILE", "1", 1);
  auto run_and_exit = [] {
    auto f = jit([](const Array& a, const Array& b) { return exp(matmul(a, b)); });
    Array a = ones({2, 3}), b = ones({3, 4});
    for (int i = 0; i < 3; ++i) f(a, b);
    std::exit(0);
  };
  EXPECT_EXIT(run_and_exit(), ::testing::ExitedWithCode(0),
      "graft profile: .* ms in jitted steps after each step's first call \\(first calls: .* ms\\)(.|\n)*"
      " 2 .*dot_general f32\\[2,3\\] f32\\[3,4\\] -> f32\\[2,4\\]");
  unsetenv("GRAFT_PROFILE");
}

TEST(Pipeline, unknown_pass_is_named) {
  try {
    compiler::run_pass("vectorize", make_jaxpr([](const Array& x) { return x; })(ones({1})));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no pass named 'vectorize'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fuse"), std::string::npos);
  }
}

TEST(Pipeline, small_constants_fold_large_broadcasts_stay) {
  ClosedJaxpr j = make_jaxpr([](const Array& x) { return x + zeros({1000}) * exp(array(0.0f)); })(ones({1000}));
  ClosedJaxpr opt = compiler::run_pass("fold_constants", j);
  int64_t const_elems = 0;
  for (auto& c : opt.consts) const_elems += c.size();
  EXPECT_LE(const_elems, 256);
  EXPECT_TRUE(close(eval_jaxpr(opt, std::vector<Array>{ones({1000})})[0], ones({1000})));
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
TEST(Fusion, long_rows_never_need_two_passes) {
  // rows longer than a block: a value computed from a row's sum cannot be fused with that sum
  Rng rng(12);
  auto f = [](const Array& x, const Array& s) { return x * 2.0 + sum(exp(x)) + s; };
  expect_same(f, 1e-5, rng.uniform({50000}), array(3.0f));
  auto g = [](const Array& x) { return x - max(x, -1, true) + mean(x, -1, true); };
  expect_same(g, 1e-5, rng.uniform({3, 30000}));
}
}  // namespace
}  // namespace graft
