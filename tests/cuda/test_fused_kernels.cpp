// The CUDA generator for fused loops (graft/backends/cuda/fusion_codegen.h): every fused body of a set of
// programs (elementwise chains with broadcasts, softmax, log-softmax, layer norm, cross-entropy,
// reductions to a scalar, 16-bit floats, integers, selects, NaNs) becomes a kernel that
//   - NVRTC compiles for sm_90 (CUDA builds; no GPU needed), and
//   - computes, run on the CPU by the emulator (cuda/emulator.h), what the CPU's fused loop computes
//     for the same operands.
#include <functional>
#include <set>

#include "cuda/emulator.h"
#include "graft/backends/cuda/kernels.h"
#include "graft/prims/primitives.h"
#include "graft/backends/cuda/fusion_codegen.h"
#include "graft/compiler/cpu/fused_kernel.h"
#include "graft/compiler/pipeline.h"
#include "testing.h"
#ifdef GRAFT_HAVE_CUDA
#include "graft/backends/cuda/runtime.h"
#endif

namespace graft::testing {
namespace {

using cuda::CudaFusedKernel;

// The fused bodies of f's program as optimized for a GPU.
template <class F, class... A>
std::vector<ClosedJaxpr> fused_bodies(F f, const A&... args) {
  ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(args...), {.passes = {{"gemm_epilogues"}}});
  std::vector<ClosedJaxpr> out;
  for (auto& e : opt.jaxpr->eqns)
    if (e.prim == &compiler::fusion_p) out.push_back(compiler::fusion_body(e.params));
  return out;
}

Array random_operand(Rng& rng, const Aval& a) {
  if (a.dtype == DType::bool_) return rng.bools(a.shape);
  if (is_unsigned(a.dtype)) return rng.ints(a.shape, a.dtype, 0, 100);
  if (is_integer(a.dtype)) return rng.ints(a.shape, a.dtype, -50, 50);
  if (is_complex(a.dtype))
    return complex(rng.uniform(a.shape, real_dtype(a.dtype), -2, 2),
                   rng.uniform(a.shape, real_dtype(a.dtype), -2, 2));
  return rng.uniform(a.shape, a.dtype, -2, 2);
}

struct Run {
  ClosedJaxpr body;
  CudaFusedKernel kernel;
  std::vector<Array> inputs, expected, got;
};

// Runs every body on the CPU's fused loop and, emulated, as its CUDA kernel (grid: `grid` blocks
// at most, so that blocks loop over several rows).
std::vector<Run> run_all(const std::vector<ClosedJaxpr>& bodies, unsigned grid = 3, int max_vector = 8, int row_vectors = -1) {
  std::vector<Run> runs;
  std::vector<std::string> sources, names;
  Rng rng(11);
  for (const ClosedJaxpr& b : bodies) {
    std::string why;
    auto k = cuda::cuda_fused_kernel(b, {.max_vector = max_vector, .row_vectors = row_vectors}, &why);
    EXPECT_TRUE(k.has_value()) << why << "\n" << b;
    if (!k) continue;
    Run r{b, *k, {}, {}, {}};
    for (auto& v : b.jaxpr->invars) r.inputs.push_back(random_operand(rng, v->aval));
    for (Array& a : compiler::FusedKernel::of(b).run(r.inputs)) r.expected.push_back(a);
    sources.push_back(k->source);
    names.push_back(CudaFusedKernel::kName);
    runs.push_back(std::move(r));
  }
  if (!EmulatedModule::available()) return runs;
  EmulatedModule mod(sources, names);
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = runs[i];
    std::vector<void*> ptrs;
    for (const Array& c : r.body.consts) ptrs.push_back(const_cast<void*>(c.raw_data()));
    for (const Array& x : r.inputs) ptrs.push_back(const_cast<void*>(x.raw_data()));
    for (auto& a : r.body.jaxpr->outvars) {
      r.got.push_back(Array::empty(Aval(a.aval().shape, a.aval().dtype)));
      ptrs.push_back(r.got.back().concrete()->data());
    }
    std::vector<void*> args;
    for (void*& p : ptrs) args.push_back(&p);
    unsigned g = static_cast<unsigned>(std::min<int64_t>(r.kernel.units, grid));
    mod.launch(i, g, static_cast<unsigned>(r.kernel.block), args.data());
  }
  return runs;
}

void expect_matches(const std::vector<Run>& runs, double rtol = 2e-5, double atol = 1e-6) {
  for (const Run& r : runs) {
    ASSERT_EQ(r.got.size(), r.expected.size()) << r.kernel.describe();
    for (size_t o = 0; o < r.got.size(); ++o) {
      DType d = r.expected[o].dtype();
      double rt = d == DType::bf16 ? 1e-2 : d == DType::f16 ? 2e-3 : rtol;
      EXPECT_TRUE(close(r.got[o], r.expected[o], rt, atol)) << r.kernel.describe() << ", output " << o << "\n" << r.body;
    }
  }
}

void expect_compiles_for_sm90(const std::vector<Run>& runs) {
#ifdef GRAFT_HAVE_CUDA
  for (const Run& r : runs) EXPECT_NO_THROW(cuda::compile_cubin(r.kernel.source, CudaFusedKernel::kName, 90)) << r.kernel.source;
#else
  (void)runs;
#endif
}

class FusedKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EmulatedModule::available()) GTEST_SKIP() << "no host C++ compiler for the emulator";
  }
};

// Complex chains as one kernel: c64 / c128 values in registers (the prelude's structs), moved as
// vectors of 16 bytes (two complex64 values, one complex128), complex literals, parts and conversions.
TEST_F(FusedKernels, ComplexChainsAsOneKernel) {
  auto cx = [](const Array& z, const Array& w) {
    Array q = (z * w + conj(z) * 2.0) / (w + 3.0) - exp(z * 0.5) + sqrt(w) * log(abs(z) + 1.0);
    return where(real(z) > 0, q, -q) + complex(imag(w), real(z)).astype(q.dtype()) + lax::integer_pow(z, 3);
  };
  std::vector<ClosedJaxpr> bodies;
  for (DType t : {DType::f32, DType::f64})
    for (int64_t n : {1000, 1001}) {
      Array z = complex(zeros({n}, t), zeros({n}, t));
      auto b = fused_bodies(cx, z, z);
      ASSERT_EQ(b.size(), 1u) << short_name(t);
      bodies.push_back(b[0]);
    }
  // a complex row value (one per row, read by the row's lanes) under a real reduction
  auto rows = [](const Array& z, const Array& s) { return sum(abs(z * expand_dims(s, 1)), 1); };
  for (DType t : {DType::f32, DType::f64}) {
    auto b = fused_bodies(rows, complex(zeros({37, 100}, t), zeros({37, 100}, t)),
                          complex(zeros({37}, t), zeros({37}, t)));
    ASSERT_EQ(b.size(), 1u);
    bodies.push_back(b[0]);
  }
  auto runs = run_all(bodies);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[4].kernel.row, 100);
  EXPECT_EQ(runs[0].kernel.describe(), "elementwise 1000 (vector 2)");
  EXPECT_NE(runs[0].kernel.source.find("g_vec<c64, 2>"), std::string::npos);
  EXPECT_EQ(runs[2].kernel.describe(), "elementwise 1000");
  expect_matches(runs, 2e-5, 1e-6);
  expect_compiles_for_sm90(runs);
}

TEST_F(FusedKernels, ElementwiseChainsWithVectorsAndBroadcasts) {
  auto chain = [](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; };
  auto bias_relu = [](const Array& x, const Array& b) { return relu(x + b) * 2.0; };
  std::vector<ClosedJaxpr> bodies = fused_bodies(chain, zeros({1000}));
  ASSERT_EQ(bodies.size(), 1u);
  auto k = cuda::cuda_fused_kernel(bodies[0]);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->describe(), "elementwise 1000 (vector 4)");
  EXPECT_NE(k->source.find("g_vec<float, 4>"), std::string::npos);
  for (auto& b : fused_bodies(chain, zeros({1001}))) bodies.push_back(b);  // no vectors: 1001 is odd
  for (auto& b : fused_bodies(bias_relu, zeros({37, 64}), zeros({64}))) bodies.push_back(b);
  for (auto& b : fused_bodies(bias_relu, zeros({37, 64}), zeros({37, 1}))) bodies.push_back(b);
  auto runs = run_all(bodies);
  EXPECT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[1].kernel.describe(), "elementwise 1001");
  expect_matches(runs);
  expect_compiles_for_sm90(runs);
  // operands not aligned to vectors: the scalar form, the same values
  auto scalar = run_all(bodies, 3, 1);
  EXPECT_EQ(scalar[0].kernel.describe(), "elementwise 1000");
  EXPECT_EQ(scalar[0].kernel.source.find("g_vec<float"), std::string::npos);
  expect_matches(scalar);
}

// The row bodies both row tests compile: softmax, layer norm and cross-entropy.
Array sm(const Array& x) { return softmax(x); }
Array ln(const Array& x, const Array& g, const Array& b) {
  Array m = mean(x, -1, true);
  Array v = mean(square(x - m), -1, true);
  return (x - m) * rsqrt(v + 1e-5) * g + b;
}
Array xent(const Array& logits, const Array& onehot) { return -sum(onehot * log_softmax(logits), -1); }

TEST_F(FusedKernels, RowReductionsSoftmaxLayerNormCrossEntropy) {
  auto lsm = [](const Array& x) { return log_softmax(x); };
  std::vector<ClosedJaxpr> bodies;
  auto add = [&](std::vector<ClosedJaxpr> bs) { bodies.insert(bodies.end(), bs.begin(), bs.end()); };
  add(fused_bodies(sm, zeros({4, 4096})));
  ASSERT_EQ(bodies.size(), 1u);
  auto k = cuda::cuda_fused_kernel(bodies[0]);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->describe(), "rows 4x4096, 512 lanes a row, 3 loops, cached");
  add(fused_bodies(sm, zeros({6, 100})));     // a warp a row
  add(fused_bodies(sm, zeros({19, 10})));     // 16 lanes a row, 16 rows a block
  add(fused_bodies(lsm, zeros({5, 3000})));   // the block a row
  add(fused_bodies(lsm, zeros({3, 20000})));  // more than 16 elements a lane: recomputed, not cached
  add(fused_bodies(ln, zeros({8, 48}), zeros({48}), zeros({48})));
  add(fused_bodies(xent, zeros({16, 10}), zeros({16, 10})));
  // a [T, S] mask over [B, H, T, S] logits with B * H = S: an operand of the rows' size spread otherwise
  auto masked = [](const Array& x, const Array& m) { return softmax(where(broadcast_to(m, x.shape()), x, full_like(x, -1e9)), -1); };
  add(fused_bodies(masked, zeros({2, 4, 8, 8}), zeros({8, 8}, DType::bool_)));
  auto runs = run_all(bodies);
  EXPECT_EQ(runs[1].kernel.threads_per_row, 32);
  EXPECT_EQ(runs[2].kernel.describe(), "rows 19x10, 16 lanes a row, 3 loops, cached");
  EXPECT_EQ(runs[2].kernel.rows_per_block, 16);
  bool uncached = false;
  for (auto& r : runs) uncached = uncached || (r.kernel.row == 20000 && !r.kernel.cached);
  EXPECT_TRUE(uncached);
  expect_matches(runs);
  expect_compiles_for_sm90(runs);
}

// Row kernels whose lanes move their elements as 16-byte vectors (row_vectors): softmax, layer norm
// and cross-entropy in f32 and f16, each lane's chunks spread over the row; rows or operands that do
// not allow vectors (a row not a multiple of the vector, a lane's share not a multiple of it, operands
// of two element sizes) keep element accesses.
TEST_F(FusedKernels, RowKernelsWithVectorAccesses) {
  std::vector<ClosedJaxpr> bodies;
  auto add = [&](std::vector<ClosedJaxpr> bs) { bodies.insert(bodies.end(), bs.begin(), bs.end()); };
  add(fused_bodies(sm, zeros({4, 4096})));
  add(fused_bodies(sm, zeros({3, 4096}, DType::f16)));
  add(fused_bodies(ln, zeros({8, 1024}), zeros({1024}), zeros({1024})));
  add(fused_bodies(xent, zeros({6, 2048}), zeros({6, 2048})));
  add(fused_bodies(sm, zeros({5, 3000})));  // 6 elements a lane: not a multiple of 4
  add(fused_bodies(sm, zeros({2, 1001})));  // a row that is no multiple of 4
  auto runs = run_all(bodies, 3, 8, 1);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0].kernel.describe(), "rows 4x4096, 512 lanes a row, 3 loops, cached, vector 4");
  EXPECT_EQ(runs[1].kernel.vector, 8);
  EXPECT_EQ(runs[2].kernel.vector, 4);
  EXPECT_EQ(runs[3].kernel.vector, 4);
  EXPECT_EQ(runs[4].kernel.vector, 1);
  EXPECT_EQ(runs[5].kernel.vector, 1);
  expect_matches(runs);
  expect_compiles_for_sm90(runs);
  // off, the same bodies keep element accesses
  for (const ClosedJaxpr& b : bodies) EXPECT_EQ(cuda::cuda_fused_kernel(b, {.row_vectors = 0})->vector, 1);
}

TEST_F(FusedKernels, ScalarsHalfFloatsIntegersSelectsAndNans) {
  std::vector<ClosedJaxpr> bodies;
  auto add = [&](std::vector<ClosedJaxpr> bs) { bodies.insert(bodies.end(), bs.begin(), bs.end()); };
  add(fused_bodies([](const Array& x) { return sum(x * x); }, zeros({1000})));  // one row
  add(fused_bodies([](const Array& x) { return exp(x.astype(DType::bf16) * 3.0 + 1.0); }, zeros({64, 33})));
  add(fused_bodies([](const Array& x) { return sum(x.astype(DType::f16) * x.astype(DType::f16), -1); }, zeros({8, 70})));
  add(fused_bodies([](const Array& i) { return (i * 3 + 7) % 5 + maximum(i, Array(2).astype(DType::i32)); }, zeros({300}, DType::i32)));
  add(fused_bodies([](const Array& x) { return where(x > 0.0, x, -x * 2.0).astype(DType::i32); }, zeros({50, 7})));
  add(fused_bodies([](const Array& x) { return log1p(exp(x)) - sqrt(x * x + 1.0); }, zeros({99}, DType::f64)));
  add(fused_bodies([](const Array& x) { return max(x * 1.0, -1) + min(x * 2.0, -1); }, zeros({12, 40})));
  add(fused_bodies([](const Array& x) { return prod(x * 0.5 + 1.0, -1); }, zeros({3, 50})));
  add(fused_bodies([](const Array& i) { return sum(i * 2, -1) + max(i * 1, -1); }, zeros({5, 300}, DType::i8)));
  auto runs = run_all(bodies);
  EXPECT_GE(runs.size(), 9u);
  expect_matches(runs, 2e-5, 1e-5);
  expect_compiles_for_sm90(runs);
  // NaN in a row: max and the sum that follows carry it, as on the CPU
  std::vector<ClosedJaxpr> nb = fused_bodies([](const Array& x) { return softmax(x); }, zeros({3, 64}));
  ASSERT_EQ(nb.size(), 1u);
  auto k = cuda::cuda_fused_kernel(nb[0]);
  ASSERT_TRUE(k);
  Rng rng(3);
  Array x = rng.uniform({3, 64});
  std::vector<double> xv = values(x);
  xv[64 + 17] = NAN;
  x = concrete(xv, {3, 64});
  Array want = compiler::FusedKernel::of(nb[0]).run(std::vector<Array>{x})[0];
  Array got = Array::empty(want.aval());
  EmulatedModule mod({k->source}, {CudaFusedKernel::kName});
  void* ptrs[] = {const_cast<void*>(x.raw_data()), got.concrete()->data()};
  void* args[] = {&ptrs[0], &ptrs[1]};
  mod.launch(0, 1, static_cast<unsigned>(k->block), args);
  EXPECT_TRUE(close(got, want));
  EXPECT_TRUE(std::isnan(values(got)[64]));
  EXPECT_FALSE(std::isnan(values(got)[0]));
}

// The element kernels of every elementwise primitive (graft/backends/cuda/kernels.h: one expression per
// primitive and type class), emulated, against the CPU's kernels: NaN rules, integer division by zero
// and by -1, out-of-range shifts, 16-bit floats rounded as the CPU rounds them, scalar operands.
TEST_F(FusedKernels, ElementKernelsOfEveryPrimitiveMatchTheCpu) {
  struct K {
    const Primitive* prim;
    std::vector<Array> in;
    Params params;
    DType out;
  };
  std::vector<K> ks;
  std::vector<std::string> sources, names;
  Rng rng(21);
  const int64_t n = 64;
  for (const std::string& name : cuda_kernels::elementwise_prims()) {
    const Primitive* p = prims::find_primitive(name);
    ASSERT_NE(p, nullptr) << name;
    for (DType d : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i8, DType::u8, DType::bool_,
                    DType::c64, DType::c128}) {
      auto expr = cuda_kernels::elementwise_expr(name, d);
      if (!expr) continue;
      auto arity = static_cast<size_t>(cuda_kernels::elementwise_arity(name));
      K k{p, {}, {}, d};
      for (size_t a = 0; a < arity; ++a) {
        DType t = name == "select_n" && a == 0 ? DType::bool_ : d;
        Array x = t == DType::bool_                       ? rng.bools({n})
                  : is_floating(t)                        ? rng.uniform({n}, t, -3, 3)
                  : is_complex(t)                         ? complex(rng.uniform({n}, real_dtype(t), -3, 3),
                                                                    rng.uniform({n}, real_dtype(t), -3, 3))
                  : name.rfind("shift", 0) == 0 && a == 1 ? rng.ints({n}, t, 0, 40)
                  : is_unsigned(t)                        ? rng.ints({n}, t, 0, 200)
                                                          : rng.ints({n}, t, -4, 4);
        if (a == 1 && arity == 2) x = x[{slice(0, 1)}];  // a scalar operand (broadcast by the kernel)
        k.in.push_back(x);
      }
      if (arity == 2) k.in[1] = broadcast_to(k.in[1], {n});  // the CPU's operands share a shape
      if (name == "integer_pow") k.params = Params{{"y", int64_t(3)}};
      if (name == "round") k.params = Params{{"rounding_method", int64_t(1)}};
      std::vector<DType> ts;
      for (auto& x : k.in) ts.push_back(x.dtype());
      try {
        k.out = bind1(*p, std::span<const Array>(k.in.data(), k.in.size()), k.params).dtype();
      } catch (const Error&) {
        continue;  // the CPU refuses these operands (add of booleans): nothing to compare with
      }
      std::string kname = "ew_" + name + "_" + std::string(short_name(d));
      sources.push_back(cuda_kernels::elementwise_source(kname, *expr, ts, name == "select_n" ? ts[1] : d, k.out,
                                                         name == "select_n"));
      names.push_back(kname);
      ks.push_back(std::move(k));
    }
  }
  EXPECT_GT(ks.size(), 150u);
  EmulatedModule mod(sources, names);
  int checked = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    K& k = ks[i];
    Array want = bind1(*k.prim, std::span<const Array>(k.in.data(), k.in.size()), k.params);
    Array got = Array::empty(want.aval());
    // the second operand of binary kernels is passed as one element (the scalar mask's bit 1)
    std::vector<Array> args = k.in;
    uint32_t scalar = 0;
    if (args.size() == 2) {
      args[1] = args[1][{slice(0, 1)}] + zeros({1}, args[1].dtype());
      scalar = 2;
    }
    void* out = got.concrete()->data();
    std::vector<void*> ptrs{out};
    for (auto& a : args) ptrs.push_back(const_cast<void*>(a.raw_data()));
    int64_t count = n, p = k.params.has("y") ? 3 : k.params.has("rounding_method") ? 1 : 0;
    std::vector<void*> argv;
    for (void*& q : ptrs) argv.push_back(&q);
    argv.push_back(&count);
    argv.push_back(&scalar);
    argv.push_back(&p);
    mod.launch(i, 2, 32, argv.data());
    double rt = k.out == DType::bf16 ? 1e-2 : is_inexact(k.out) ? 2e-5 : 0;
    EXPECT_TRUE(close(got, want, rt, rt)) << names[i];
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(ks.size()));
}

// Conversions between every pair of types, threefry2x32, running reductions and reductions (with the
// argument layouts graft/backends/cuda/primitives.cpp passes), emulated, against the CPU.
TEST_F(FusedKernels, ConversionRandomRunningAndReductionKernelsMatchTheCpu) {
  namespace ck = cuda_kernels;
  struct Run {
    std::string name;
    std::function<void(const EmulatedModule&, size_t)> launch;
    Array got, want;
  };
  std::vector<Run> runs;
  std::vector<std::string> sources;
  Rng rng(23);
  const DType types[] = {DType::bool_, DType::i8, DType::u8, DType::i32, DType::i64, DType::u32, DType::f16,
                         DType::bf16, DType::f32, DType::f64};
  auto ptr = [](const Array& a) { return const_cast<void*>(a.raw_data()); };
  for (DType from : types)
    for (DType to : types) {
      if (from == to) continue;
      // floats beyond the integers' ranges and NaN: saturation and NaN to 0, as the CPU
      Array x = is_floating(from) ? concrete({-1e30, -300, -129.7, -1.5, -0.4, 0, 0.6, 1.5, 127.9, 255.5, 70000, 1e30, NAN}, {13}, from)
                                  : rng.ints({13}, from, is_unsigned(from) || from == DType::bool_ ? 0 : -100,
                                             from == DType::bool_ ? 1 : 100);
      Array want = x.astype(to), got = Array::empty(want.aval());
      std::string name = "cv_" + std::string(short_name(from)) + "_" + std::string(short_name(to));
      sources.push_back(ck::convert_source(name, from, to));
      runs.push_back({name, [=](const EmulatedModule& m, size_t i) mutable {
                        void *o = got.concrete()->data(), *in = ptr(x);
                        int64_t n = 13;
                        void* args[] = {&o, &in, &n};
                        m.launch(i, 1, 32, args);
                      }, got, want});
    }
  // complex values: part by part, the real part (saturating into integers), either part nonzero to
  // bool, a real value with imaginary part 0
  for (DType z : {DType::c64, DType::c128})
    for (DType t : {DType::bool_, DType::i32, DType::u8, DType::f16, DType::bf16, DType::f32, DType::f64,
                    DType::c64, DType::c128})
      for (auto [from, to] : {std::pair{z, t}, std::pair{t, z}}) {
        if (from == to) continue;
        Array re =
            concrete({-1e30, -300, -1.5, 0, 0, -0.0, 0.6, 255.5, 1e30, NAN, INFINITY}, {11}, DType::f64);
        Array im = concrete({0, 2.5, -0.0, 0, 1, 0, NAN, -3, 1e-40, 0, 4}, {11}, DType::f64);
        Array x = is_complex(from)       ? complex(re, im).astype(from)
                  : from == DType::bool_ ? rng.bools({11})
                  : is_floating(from)    ? re.astype(from)
                                         : rng.ints({11}, from, 0, 100);
        Array want = x.astype(to), got = Array::empty(want.aval());
        std::string name = "cv_" + std::string(short_name(from)) + "_" + std::string(short_name(to));
        sources.push_back(ck::convert_source(name, from, to));
        runs.push_back({name,
                        [=](const EmulatedModule& m, size_t i) mutable {
                          void *o = got.concrete()->data(), *in = ptr(x);
                          int64_t n = 11;
                          void* args[] = {&o, &in, &n};
                          m.launch(i, 1, 32, args);
                        },
                        got, want});
      }
  {  // 16-byte elements: a complex128 matrix transposed by the strided copy, and filled with one value
    struct StridedArgs {
      int64_t in_offset = 0, out_offset = 0, ndim = 2, shape[8] = {}, in_stride[8] = {}, out_stride[8] = {};
    };
    Array x = complex(rng.uniform({5, 7}, DType::f64), rng.uniform({5, 7}, DType::f64));
    Array want = transpose(x), got = Array::empty(want.aval());
    sources.push_back(ck::strided_copy_source("sc16", 16));
    runs.push_back({"sc16 (a complex128 transpose)",
                    [=](const EmulatedModule& m, size_t i) mutable {
                      StridedArgs a;
                      a.shape[0] = 7, a.shape[1] = 5, a.in_stride[0] = 1, a.in_stride[1] = 7,
                      a.out_stride[0] = 5, a.out_stride[1] = 1;
                      void *o = got.concrete()->data(), *in = ptr(x);
                      int64_t n = 35;
                      void* args[] = {&o, &in, &n, &a};
                      m.launch(i, 2, 32, args);
                    },
                    got, want});
    complex128 v(-2.5, 1e300);
    Array filled = complex(full({40}, v.real(), DType::f64), full({40}, v.imag(), DType::f64)),
          fgot = Array::empty(filled.aval());
    sources.push_back(ck::fill_source("fill16", 16));
    runs.push_back({"fill16 (complex128)",
                    [=](const EmulatedModule& m, size_t i) mutable {
                      uint64_t bits[2];
                      std::memcpy(bits, &v, 16);
                      void* o = fgot.concrete()->data();
                      int64_t n = 40;
                      void* args[] = {&o, &n, &bits[0], &bits[1]};
                      m.launch(i, 2, 32, args);
                    },
                    fgot, filled});
    // a gather of complex128 rows by start index, the window out of range filled with NaN + 0i
    struct IndexArgs {
      int64_t ndim = 1, shape[8] = {4}, bmul[8] = {1}, wmul[8] = {0};
    };
    Array op = complex(rng.uniform({10}, DType::f64), rng.uniform({10}, DType::f64));
    Array starts = concrete({3, 0, 9, 5}, {4}, DType::i64), ok = concrete({1, 1, 0, 1}, {4}, DType::bool_);
    Array gwant =
        concatenate({op[{slice(3, 4)}], op[{slice(0, 1)}],
                     complex(full({1}, NAN, DType::f64), zeros({1}, DType::f64)), op[{slice(5, 6)}]},
                    0);
    Array ggot = Array::empty(gwant.aval());
    // scatter-adds of complex updates: two into one element, part by part
    Array sops = complex(rng.uniform({8}, DType::f32), rng.uniform({8}, DType::f32));
    Array supd = complex(rng.uniform({5}, DType::f32), rng.uniform({5}, DType::f32));
    Array sstarts = concrete({2, 0, 2, 7, 1}, {5}, DType::i64),
          sok = concrete({1, 1, 1, 1, 0}, {5}, DType::bool_);
    Array swant = sops;
    for (int64_t b = 0; b < 4; ++b) {
      int64_t at = sstarts.to_vector<int64_t>()[static_cast<size_t>(b)];
      swant = swant.at({at}).add(supd[b]);
    }
    Array sgot = sops + complex(zeros({8}), zeros({8}));  // a copy: the kernel adds in place
    sources.push_back(*ck::scatter_add_source("scatter_add_c64", DType::c64));
    runs.push_back({"scatter_add_c64",
                    [=](const EmulatedModule& m, size_t i) mutable {
                      struct {
                        int64_t ndim = 1, shape[8] = {5}, bmul[8] = {1}, wmul[8] = {0};
                      } a;
                      void *o = sgot.concrete()->data(), *u = ptr(supd), *s = ptr(sstarts), *k = ptr(sok);
                      int64_t n = 5;
                      void* args[] = {&o, &u, &s, &k, &n, &a};
                      m.launch(i, 1, 32, args);
                    },
                    sgot, swant});
    sources.push_back(ck::gather_source("gather16", 16));
    runs.push_back({"gather16 (complex128)",
                    [=](const EmulatedModule& m, size_t i) mutable {
                      IndexArgs a;
                      uint64_t fill[2];
                      complex128 nan_fill(NAN, 0);
                      std::memcpy(fill, &nan_fill, 16);
                      void *o = ggot.concrete()->data(), *src = ptr(op), *s = ptr(starts), *k = ptr(ok);
                      int64_t n = 4;
                      void* args[] = {&o, &src, &s, &k, &n, &a, &fill[0], &fill[1]};
                      m.launch(i, 1, 32, args);
                    },
                    ggot, gwant});
  }
  {  // f32 <-> f16 bit for bit: NaN payloads (kept at the top, made quiet), ties, subnormals, overflow
    Array w = lax::bitcast_convert_type(
        concrete({double(0x7f800001u), double(0xffa00000u), double(0x7fc02000u), double(0x477fefffu),
                  double(0x477ff000u), double(0x80000000u), double(0x33000001u), double(0x33c00000u),
                  double(0x387fe000u), double(0x3f801001u), double(0x00000001u)},
                 {11}, DType::u32),
        DType::f32);
    Array h = lax::bitcast_convert_type(
        concrete({0x7c01, 0xfe00, 0x0001, 0x7bff, 0x8000, 0x7e55, 0xfc00, 0x03ff}, {8}, DType::u16),
        DType::f16);
    for (auto [x, to] : {std::pair<Array, DType>{w, DType::f16}, {h, DType::f32}}) {
      Array want = x.astype(to), got = Array::empty(want.aval());
      std::string name = "bits_" + std::string(short_name(x.dtype())) + "_" + std::string(short_name(to));
      sources.push_back(ck::convert_source(name, x.dtype(), to));
      runs.push_back({name,
                      [=](const EmulatedModule& m, size_t i) mutable {
                        void *o = got.concrete()->data(), *in = ptr(x);
                        int64_t n = x.size();
                        void* args[] = {&o, &in, &n};
                        m.launch(i, 1, 32, args);
                      },
                      got, want});
    }
  }
  {  // threefry2x32, a scalar key against counters
    Array k0 = concrete({42}, {}, DType::u32), k1 = concrete({7}, {}, DType::u32);
    Array c0 = rng.ints({50}, DType::u32, 0, 1 << 30), c1 = rng.ints({50}, DType::u32, 0, 1 << 30);
    Arrays want = lax::threefry2x32(k0, k1, c0, c1);
    Array y0 = Array::empty(want[0].aval()), y1 = Array::empty(want[1].aval());
    sources.push_back(ck::threefry_source("tf"));
    runs.push_back({"tf", [=](const EmulatedModule& m, size_t i) mutable {
                      void* p[6] = {y0.concrete()->data(), y1.concrete()->data(), ptr(k0), ptr(k1), ptr(c0), ptr(c1)};
                      int64_t n = 50;
                      uint32_t scalar = 3;
                      void* args[] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &n, &scalar};
                      m.launch(i, 2, 32, args);
                    }, y0, want[0]});
    runs.push_back({"tf (second word)", nullptr, y1, want[1]});
  }
  for (std::string op : {"sum", "max", "min"})
    for (DType d : {DType::f32, DType::f64, DType::i32}) {  // running reductions along axis 1 of [3, 40, 5]
      Array x = is_floating(d) ? rng.uniform({3, 40, 5}, d) : rng.ints({3, 40, 5}, d, -1000, 1000);
      if (op == "max" && d == DType::f32) x = x.at({1, 7, 2}).set(Array(NAN));
      for (bool reverse : {false, true}) {
        Array want = op == "sum" ? lax::cumsum(x, 1, reverse) : op == "max" ? lax::cummax(x, 1, reverse) : lax::cummin(x, 1, reverse);
        Array got = Array::empty(want.aval());
        std::string name = "cum_" + op + "_" + std::string(short_name(d));
        sources.push_back(ck::cumulative_source(name, op, d));
        runs.push_back({name + (reverse ? " reversed" : ""), [=](const EmulatedModule& m, size_t i) mutable {
                          void *o = got.concrete()->data(), *in = ptr(x);
                          int64_t outer = 3, n = 40, inner = 5;
                          int rev = reverse;
                          void* args[] = {&o, &in, &outer, &n, &inner, &rev};
                          m.launch(i, 1, 32, args);
                        }, got, want});
      }
    }
  for (DType d : {DType::c64, DType::c128}) {  // complex: the parts' running sums (cumulative_gpu's layout)
    Array x = complex(rng.uniform({3, 40, 5}, real_dtype(d)), rng.uniform({3, 40, 5}, real_dtype(d)));
    Array want = lax::cumsum(x, 1, false), got = Array::empty(want.aval());
    std::string name = "cum_sum_parts_" + std::string(short_name(d));
    sources.push_back(ck::cumulative_source(name, "sum", real_dtype(d)));
    runs.push_back({name,
                    [=](const EmulatedModule& m, size_t i) mutable {
                      void *o = got.concrete()->data(), *in = ptr(x);
                      int64_t outer = 3, n = 40, inner = 10;  // 5 complex values: 10 parts
                      int rev = 0;
                      void* args[] = {&o, &in, &outer, &n, &inner, &rev};
                      m.launch(i, 1, 32, args);
                    },
                    got, want});
  }
  struct ReduceArgs {
    int64_t nkeep = 0, keep_shape[8] = {}, keep_stride[8] = {}, nred = 0, red_shape[8] = {}, red_stride[8] = {};
  };
  for (std::string op : {"sum", "max", "min", "prod", "argmax", "argmin", "and", "or"})
    for (DType d : {DType::f32, DType::bf16, DType::i32, DType::bool_, DType::c64, DType::c128}) {
      bool logical = op == "and" || op == "or";
      if (logical != (d == DType::bool_)) continue;  // (the CPU has no argmax of booleans)
      if (is_complex(d) && op != "sum" && op != "prod") continue;  // (no order: the host's)
      // over axes 0 and 2 of [6, 4, 33]: strided rows, as rules.cpp lays them out
      Array x = d == DType::bool_ ? rng.bools({6, 4, 33})
                : is_complex(d)   ? complex(rng.uniform({6, 4, 33}, real_dtype(d), op == "prod" ? 0.9 : -1,
                                                      op == "prod" ? 1.1 : 1),
                                            rng.uniform({6, 4, 33}, real_dtype(d), -0.05, 0.05))
                : is_floating(d) ? rng.uniform({6, 4, 33}, d, op == "prod" ? 0.9 : -1, op == "prod" ? 1.1 : 1)
                                 : rng.ints({6, 4, 33}, d, -50, 50);
      Array want;
      if (op == "argmax" || op == "argmin") {
        Array xt = transpose(x, {1, 0, 2});
        want = reshape(op == "argmax" ? argmax(reshape(xt, {4, 198}), 1) : argmin(reshape(xt, {4, 198}), 1), {4});
      } else {
        const Primitive* p = prims::find_primitive("reduce_" + op);
        want = bind1(*p, {x}, Params{{"axes", IntList{0, 2}}});
      }
      Array got = Array::empty(want.aval());
      std::string name = "red_" + op + "_" + std::string(short_name(d));
      sources.push_back(ck::reduce_source(name, op, d, want.dtype()));
      runs.push_back({name, [=](const EmulatedModule& m, size_t i) mutable {
                        ReduceArgs r;
                        r.nkeep = 1;
                        r.keep_shape[0] = 4;
                        r.keep_stride[0] = 33;
                        r.nred = 2;
                        r.red_shape[0] = 6;
                        r.red_stride[0] = 4 * 33;
                        r.red_shape[1] = 33;
                        r.red_stride[1] = 1;
                        void *o = got.concrete()->data(), *in = ptr(x);
                        int64_t nout = 4, inner = 6 * 33;
                        void* args[] = {&o, &in, &nout, &inner, &r};
                        m.launch(i, 2, 256, args);
                      }, got, want});
    }
  std::vector<std::string> names;
  for (auto& r : runs)
    if (r.launch) names.push_back(r.name.substr(0, r.name.find(' ')));
  ASSERT_EQ(names.size(), sources.size());
  EmulatedModule mod(sources, names);
  size_t k = 0;
  for (auto& r : runs)
    if (r.launch) r.launch(mod, k++);
  for (auto& r : runs) {
    DType d = r.want.dtype();
    double rt = d == DType::bf16 || d == DType::f16 ? 1e-2 : is_inexact(d) ? 1e-5 : 0;
    EXPECT_TRUE(close(r.got, r.want, rt, rt)) << r.name;
    if (r.name.rfind("bits_", 0) == 0) {  // these bit for bit
      EXPECT_EQ(std::memcmp(r.got.raw_data(), r.want.raw_data(), size_t(r.want.size()) * itemsize(d)), 0)
          << r.name;
    }
  }
  EXPECT_GT(runs.size(), 100u);
}

TEST(FusedKernelSource, BodiesItCannotCompileSayWhy) {
  // a body with an operation that has no GPU expression is refused, naming it
  std::string why;
  ClosedJaxpr body = make_jaxpr([](const Array& a) { return cumsum(a, 0) * 2.0; })(zeros({8}));
  EXPECT_FALSE(cuda::cuda_fused_kernel(body, {}, &why).has_value());
  EXPECT_NE(why.find("cumsum"), std::string::npos) << why;
}

}  // namespace
}  // namespace graft::testing
