// Generated loops (LLVM) against the interpreter's kernels: the emitter implements each primitive
// with the same operations as its tile kernel, so fused loops with and without code generation
// agree bit for bit with eager evaluation, for every dtype the generator handles and for every
// length (the vector body, the unrolled body and the scalar tail).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "graft/compiler/cpu/codegen.h"
#include "graft/compiler/cpu/fused_kernel.h"
#include "graft/compiler/executable.h"
#include "graft/compiler/pipeline.h"
#include "graft/runtime/cpu/llvm_jit.h"
#include "testing.h"

namespace graft {
namespace {

using testing::Rng;

bool bit_equal(const Array& a, const Array& b) {
  if (a.aval().shape != b.aval().shape || a.dtype() != b.dtype()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Bit for bit, except that NaNs are equal whatever their sign and payload (which NaN an operation
// passes on depends on its operands' order in the instruction, which vectorizing compilers choose).
template <class T>
bool same_bits_or_nan(const Array& a, const Array& b) {
  if (a.aval().shape != b.aval().shape || a.dtype() != b.dtype()) return false;
  const T* x = static_cast<const T*>(a.raw_data());
  const T* y = static_cast<const T*>(b.raw_data());
  size_t n = a.nbytes() / sizeof(T);
  for (size_t i = 0; i < n; ++i)
    if (!(std::isnan(x[i]) && std::isnan(y[i])) && std::memcmp(&x[i], &y[i], sizeof(T)) != 0) return false;
  return true;
}

// f under jit with code generation on, and off; both must equal eager evaluation exactly.
template <class F, class... A>
void expect_exact(F f, const A&... args) {
  Array want = f(args...);
  compiler::set_codegen_enabled(true);
  Array gen = jit(f)(args...);
  compiler::set_codegen_enabled(false);
  Array tiled = jit(f)(args...);
  compiler::set_codegen_enabled(true);
  EXPECT_TRUE(bit_equal(gen, want)) << "generated loop differs:\n" << gen << "\n" << want;
  EXPECT_TRUE(bit_equal(tiled, want)) << "tile kernels differ:\n" << tiled << "\n" << want;
}

class Codegen : public ::testing::Test {
 protected:
  // these tests are about generated code: on even when the environment says GRAFT_CODEGEN=0
  void SetUp() override {
    if (!cpu::have_llvm_jit()) GTEST_SKIP() << "graft was built without LLVM";
    was_on_ = compiler::codegen_enabled();
    compiler::set_codegen_enabled(true);
  }
  void TearDown() override {
    if (cpu::have_llvm_jit()) compiler::set_codegen_enabled(was_on_);
  }
  bool was_on_ = true;
};

TEST_F(Codegen, float_elementwise_exact_at_every_length) {
  Rng rng(1);
  auto f = [](const Array& x) {
    return tanh(x) * 0.5 + exp(x * 0.25) - log(abs(x) + 0.5) + sigmoid(x) + sqrt(abs(x)) * rsqrt(x * x + 1.0);
  };
  // lengths around the vector (16), the main loop's step (4 vectors) and a tile (2048)
  for (int64_t n : {1, 5, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 79, 127, 129, 1000, 2047, 2049, 4099})
    expect_exact(f, rng.uniform({n}, f32, -30, 30));
}

TEST_F(Codegen, edge_values) {
  Array x = array({0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 88.7f, -103.0f, 9.5f, -9.5f, 1e30f,
                   0.624f, 0.626f, 3.0f, -3.0f, 1.0f});
  expect_exact([](const Array& a) { return exp(a); }, x);
  expect_exact([](const Array& a) { return log(a); }, x);
  expect_exact([](const Array& a) { return tanh(a); }, x);
  expect_exact([](const Array& a) { return sigmoid(a); }, x);
  expect_exact([](const Array& a) { return maximum(a, 1.0) + minimum(a, -1.0) + sign(a); }, x);
  expect_exact([](const Array& a) { return floor(a) + ceil(a) + isfinite(a).astype(f32); }, x);
}

TEST_F(Codegen, f64_and_integers_and_bools) {
  Rng rng(2);
  expect_exact([](const Array& x) { return x * x - x / 3.0 + maximum(x, 0.1) + sqrt(abs(x)); },
               rng.uniform({1001}, f64, -5, 5));
  for (DType d : {i8, i16, i32, i64, u8, u32}) {
    Array a = rng.ints({777}, d, 0, 100), b = rng.ints({777}, d, 0, 100);
    expect_exact([](const Array& p, const Array& q) { return maximum(p * 3 + q, q) - minimum(p, q) + square(q); }, a, b);
    expect_exact([](const Array& p, const Array& q) {
      return where((p > q) & (p != q), p, q) + (p <= q).astype(p.dtype()) + (p ^ q) + abs(p) + sign(q);
    }, a, b);
  }
  expect_exact([](const Array& x) { return clip(x, -1.0, 2.0) + lax::integer_pow(x, 3) + lax::integer_pow(x, -2); },
               rng.uniform({301}, f32, -3, 3));
}

TEST_F(Codegen, conversions) {
  Rng rng(3);
  Array x = concatenate({rng.uniform({200}, f32, -3e9, 3e9), array({NAN, INFINITY, -INFINITY, 255.5f, -0.5f, 1e10f})});
  expect_exact([](const Array& a) { return a.astype(i32); }, x);
  expect_exact([](const Array& a) { return a.astype(u8).astype(f32) + a.astype(bool_).astype(f32); }, x);
  expect_exact([](const Array& a) { return a.astype(f64) * 2.0; }, x);
  Array i = rng.ints({300}, i64, -1000000, 1000000);
  expect_exact([](const Array& a) { return a.astype(i8).astype(i32) + a.astype(f32).astype(i32); }, i);
}

TEST_F(Codegen, loops_write_only_what_is_read_later) {
  // values used after a reduction, outputs, and values used by several later operations
  Rng rng(4);
  auto f = [](const Array& x) {
    Array e = exp(x - max(x, -1, true));
    return std::vector<Array>{e / sum(e, -1, true), e * 2.0};
  };
  Array x = rng.uniform({33, 130}, f32, -5, 5);
  auto want = f(x);
  auto got = jit(f)(x);
  EXPECT_TRUE(testing::close(got[0], want[0], 1e-6, 1e-7));
  EXPECT_TRUE(bit_equal(got[1], want[1]));
}

TEST_F(Codegen, reductions_folded_into_loops) {
  // rows of >= 2048 elements are one block each, chunked beyond 16K: the reduction runs inside the
  // generated loop (one accumulator per row, continued across chunks)
  Rng rng(6);
  for (int64_t c : {2048, 3001, 20000}) {
    Array x = rng.uniform({3, c}, f32, -2, 2);
    auto f = [](const Array& a) {
      return std::vector<Array>{sum(exp(a) * 0.5, -1), max(a * 2.0, -1), min(a - 1.0, -1), prod(a * 0.01 + 1.0, -1)};
    };
    auto want = f(x);
    auto got = jit(f)(x);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(testing::close(got[k], want[k], 1e-5, 1e-6)) << k << " c=" << c;
    Array d = rng.uniform({2, c}, f64, -2, 2);
    auto fd = [](const Array& a) { return sum(a * a, -1) + max(a + 1.0, -1); };
    EXPECT_TRUE(testing::close(jit(fd)(d), fd(d), 1e-12, 1e-12));
    Array i = rng.ints({2, c}, i32, -100, 100);
    auto fi = [](const Array& a) { return sum(a * 3, -1) + max(a - 1, -1) + min(abs(a), -1); };
    EXPECT_TRUE(bit_equal(jit(fi)(i), fi(i)));
  }
  // NaN propagation of max/min inside the loop, at the start, middle and tail of a row
  Array x = rng.uniform({4, 2051}, f32, -1, 1);
  x = x.at({0, 0}).set(NAN).at({1, 1000}).set(NAN).at({2, 2050}).set(NAN);
  auto mm = [](const Array& a) { return std::vector<Array>{max(a * 1.0, -1), min(a * 1.0, -1)}; };
  auto want = mm(x);
  auto got = jit(mm)(x);
  EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << got[0] << want[0];
}

// The fused program of f at x (its only fusion).
std::string fused_program(const std::function<Array(const Array&)>& f, const Array& x) {
  ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(x));
  for (auto& e : opt.jaxpr->eqns)
    if (e.prim->name == std::string("fusion")) return compiler::FusedKernel::of(compiler::fusion_body(e.params)).program();
  return "no fusion";
}

TEST_F(Codegen, reductions_of_inputs_run_in_generated_loops) {
  // softmax's max reads the input itself: a loop of no maps, with the generated loops' independent
  // accumulators; rows of every remainder against the main loop's step, and chunked rows
  Rng rng(7);
  auto sm = [](const Array& a) { return softmax(a); };
  EXPECT_EQ(fused_program(sm, zeros({4, 4096})), "rows 4x4096 pipelined: loop(reduce_max) loop(sub exp; reduce_sum) loop(div)");
  for (int64_t c : {2048, 2049, 2063, 2111, 3001, 20000}) {
    Array x = rng.uniform({3, c}, f32, -5, 5);
    EXPECT_TRUE(testing::close(jit(sm)(x), sm(x), 1e-5, 1e-7)) << "c=" << c;
    // NaN at a row's start, middle and end (where the unrolled accumulators and the tail meet)
    auto mm = [](const Array& a) { return std::vector<Array>{max(a, -1), min(a, -1), sum(a * 2.0, -1)}; };
    Array y = x.at({0, 0}).set(NAN).at({1, c / 2}).set(NAN).at({2, c - 1}).set(NAN);
    auto want = mm(y);
    auto got = jit(mm)(y);
    EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << "c=" << c << got[0] << want[0];
    Array z = x.at({0, c - 1}).set(9.0f).at({1, 3}).set(-9.0f);
    want = mm(z);
    got = jit(mm)(z);
    EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << "c=" << c << got[0] << want[0];
    EXPECT_TRUE(testing::close(got[2], want[2], 1e-4, 1e-3)) << "c=" << c;  // f32 sums in another order
    Array i = rng.ints({2, c}, i32, -1000, 1000);
    auto fi = [](const Array& a) { return max(a, -1) - min(a, -1) + sum(a, -1); };
    EXPECT_TRUE(bit_equal(jit(fi)(i), fi(i))) << "c=" << c;
  }
}

TEST_F(Codegen, blocks_of_short_rows_run_row_by_row_in_generated_loops) {
  // a layer norm over rows of 128: a block holds several rows, and its generated loops go row by row,
  // reading the rows' mean and scale in place (no expansion to every element, no broadcast load) and
  // folding each row's sum into its own accumulator. Every row length against the vector step, a
  // partial last block, NaN, integers; max and min exact, sums in the loops' order.
  Rng rng(11);
  auto ln = [](const Array& x, const Array& w, const Array& b) {
    Array mu = mean(x, {-1}, true);
    Array var = mean(square(x - mu), {-1}, true);
    return (x - mu) * rsqrt(var + 1e-5) * w + b;
  };
  auto program = [&](const Shape& s) {
    ClosedJaxpr opt = compiler::optimize(make_jaxpr(ln)(zeros(s), zeros({s.back()}), zeros({s.back()})));
    for (auto& e : opt.jaxpr->eqns)
      if (e.prim->name == std::string("fusion")) return compiler::FusedKernel::of(compiler::fusion_body(e.params)).program();
    return std::string("no fusion");
  };
  EXPECT_EQ(program({8, 128, 128}),
            "rows 1024x128: loop(reduce_sum) loop(div) loop(sub square; reduce_sum) loop(div add rsqrt) loop(mul mul add)");
  for (int64_t c : {128, 100, 7}) {
    for (int64_t r : {1001, 3}) {
      Array x = rng.uniform({r, c}, f32, -3, 3), w = rng.uniform({c}, f32, 0.5, 2), b = rng.uniform({c}, f32, -1, 1);
      EXPECT_TRUE(testing::close(jit(ln)(x, w, b), ln(x, w, b), 1e-5, 1e-5)) << r << "x" << c;
      auto mm = [](const Array& a, const Array& w) {
        return std::vector<Array>{max(a * w, -1), min(a - w, -1), sum(a * w, -1), exp(a - max(a, -1, true)) * w};
      };
      Array y = x.at({0, 0}).set(NAN).at({r - 1, c - 1}).set(NAN);
      auto want = mm(y, w);
      auto got = jit(mm)(y, w);
      EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << r << "x" << c << got[0] << want[0];
      EXPECT_TRUE(testing::close(got[2], want[2], 1e-5, 1e-5)) << r << "x" << c;  // f32 sums in another order
      EXPECT_TRUE(bit_equal(got[3], want[3])) << r << "x" << c;
      Array i = rng.ints({r, c}, i32, -1000, 1000), iw = rng.ints({c}, i32, -3, 3);
      auto fi = [](const Array& a, const Array& w) { return sum(a * w, -1, true) - a + max(a - w, -1, true); };
      EXPECT_TRUE(bit_equal(jit(fi)(i, iw), fi(i, iw))) << r << "x" << c;
    }
  }
  // a row value that a map without generated code reads (pow) is still expanded for it
  auto pw = [](const Array& x) { return pow(abs(x) + 1.0, mean(x, {-1}, true)) + x; };
  Array x = rng.uniform({300, 64}, f32, -1, 1);
  EXPECT_NE(fused_program(pw, x).find("expand"), std::string::npos) << fused_program(pw, x);
  EXPECT_TRUE(testing::close(jit(pw)(x), pw(x), 1e-5, 1e-6));
}

TEST_F(Codegen, generated_chains_run_over_whole_ranges) {
  // a body of generated loops alone runs each thread's share in one call per loop ("ranges"); one
  // with a tile instruction (a broadcast column's load) keeps fixed tiles; one reading a broadcast
  // row goes by blocks of rows and reads the row in place. All exact at lengths that split into
  // several shares with every kind of remainder.
  Rng rng(9);
  auto chain = [](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; };
  EXPECT_EQ(fused_program(chain, zeros({100000})), "ranges: loop(mul tanh mul add sub)");
  Array row = rng.uniform({1, 1024}, f32, -1, 1), col = rng.uniform({300, 1}, f32, -1, 1);
  auto bcast = [row](const Array& x) { return exp(x) * row; };
  auto bcol = [col](const Array& x) { return exp(x) * col; };
  EXPECT_EQ(fused_program(bcast, zeros({300, 1024})), "rows 300x1024: loop(exp mul)");
  EXPECT_EQ(fused_program(bcol, zeros({300, 1024})).rfind("tiles:", 0), 0u) << fused_program(bcol, zeros({300, 1024}));
  for (int64_t n : {int64_t(1) << 16, (int64_t(1) << 16) + 1, 3 * (int64_t(1) << 16) + 13, int64_t(1000003)}) {
    Array x = rng.uniform({n}, f32, -9, 9);
    expect_exact(chain, x);
    Array s = rng.uniform({}, f32, 1, 2);  // a scalar operand: the same value in every share
    expect_exact([](const Array& a, const Array& b) { return exp(a * 0.1) * b - a; }, x, s);
    // two outputs written by one loop over the same range
    auto two = [](const Array& a) { return std::vector<Array>{sqrt(abs(a)), a * 3.0 + 1.0}; };
    auto want = two(x);
    auto got = jit(two)(x);
    EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << "n=" << n;
  }
  Array y = rng.uniform({300, 1024}, f32, -2, 2);
  expect_exact(bcast, y);
  expect_exact(bcol, y);
  expect_exact(bcast, rng.uniform({299, 1024}, f32, -2, 2));  // a partial last block
}

// Complex values in generated loops: a vector of real parts and one of imaginary parts, loaded
// de-interleaved and stored interleaved. Sums, the textbook product (and the powers made of it),
// conjugates, parts, conversions, comparisons and selections are exact against eager evaluation and
// the tile kernels at every length, with infinite, NaN and signed-zero parts; division and the
// transcendental functions stay tile calls of the same program.
// expect_exact for complex values with NaN parts: NaNs equal whatever their sign.
template <class F>
void expect_exact_complex(F f, const Array& z, const Array& w) {
  Array want = f(z, w);
  compiler::set_codegen_enabled(true);
  Array gen = jit(f)(z, w);
  compiler::set_codegen_enabled(false);
  Array tiled = jit(f)(z, w);
  compiler::set_codegen_enabled(true);
  auto same = [](const Array& a, const Array& b) {
    return a.dtype() == c64 || a.dtype() == f32 ? same_bits_or_nan<float>(a, b)
                                                : same_bits_or_nan<double>(a, b);
  };
  EXPECT_TRUE(same(gen, want)) << "generated loop differs:\n" << gen << "\n" << want;
  EXPECT_TRUE(same(tiled, want)) << "tile kernels differ:\n" << tiled << "\n" << want;
}

TEST_F(Codegen, complex_values_exact_at_every_length) {
  Rng rng(11);
  auto chain = [](const Array& z, const Array& w) {
    return (z * w + conj(z)) * lax::integer_pow(w, 3) - square(z) * 2.0 + complex(real(w), imag(z) * 0.5);
  };
  auto mixed = [](const Array& z, const Array& w) {
    return where(z == w, z, -w) + (z != w).astype(z.dtype()) + z.astype(c128).astype(c64).astype(z.dtype()) +
           z.astype(real_dtype(z.dtype())).astype(z.dtype()) + z.astype(bool_).astype(f32);
  };
  for (DType d : {c64, c128}) {
    DType r = real_dtype(d);
    for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 129, 1000, 2049, 4099}) {
      Array z = complex(rng.uniform({n}, r, -3, 3), rng.uniform({n}, r, -3, 3));
      Array w = complex(rng.uniform({n}, r, -3, 3), rng.uniform({n}, r, -3, 3));
      SCOPED_TRACE(::testing::Message() << short_name(d) << " n=" << n);
      expect_exact(chain, z, w);
      expect_exact(mixed, z, w.at({0}).set(z[0]));
    }
    // every pair of parts from the special values, against every other
    std::vector<double> v{0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -2.5, 1e30, 1e-30, 3e38};
    std::vector<double> re, im;
    for (double a : v)
      for (double b : v) re.push_back(a), im.push_back(b);
    Array z = complex(array(re).astype(r), array(im).astype(r));
    SCOPED_TRACE(::testing::Message() << short_name(d) << " special values");
    expect_exact_complex(chain, z, roll(z, 37));
    expect_exact_complex(mixed, z, roll(z, 11));
    expect_exact_complex(chain, z, z);
  }
  Array w = complex(rng.uniform({100000}, f32, -1, 1), rng.uniform({100000}, f32, -1, 1));
  auto prod = [w](const Array& z) { return z * w + conj(z); };
  EXPECT_EQ(fused_program(prod, w), "ranges: loop(conj mul add)");
  auto with_div = [w](const Array& z) { return exp(z * w) / (z + 1.0) - z; };
  EXPECT_EQ(fused_program(with_div, w), "tiles: loop(add mul) exp div loop(sub)");
  expect_exact(with_div, w);
}

// Complex sums in fused loops: the parts' sums (pairwise, as the eager kernel sums the array read as its
// parts), in rows, in chunked rows (16-byte accumulators folded pairwise over the chunks) and with the
// row's sum read back by the rest of the row.
TEST_F(Codegen, complex_sums_in_rows_and_chunked_rows) {
  Rng rng(12);
  for (DType d : {c64, c128}) {
    DType r = real_dtype(d);
    double tol = d == c64 ? 2e-5 : 1e-12;
    for (Shape shape : {Shape{7, 33}, Shape{3, 2048}, Shape{2, 40000}}) {
      Array w = complex(rng.uniform(shape, r, -1, 1), rng.uniform(shape, r, -1, 1));
      Array z = complex(rng.uniform(shape, r, -1, 1), rng.uniform(shape, r, -1, 1));
      auto dot = [w](const Array& x) { return sum(x * w, -1); };
      auto centered = [w](const Array& x) { return x * w - mean(x * w, -1, true); };
      std::string p = fused_program(dot, z);
      EXPECT_NE(p.find("reduce_sum"), std::string::npos) << p;
      if (shape[1] == 40000) {
        EXPECT_EQ(p.rfind("chunked rows", 0), 0u) << p;
      }
      EXPECT_TRUE(testing::close(jit(dot)(z), dot(z), tol, tol)) << short_name(d) << " " << z.aval().str();
      EXPECT_TRUE(testing::close(jit(centered)(z), centered(z), tol, tol))
          << short_name(d) << " " << z.aval().str();
    }
  }
}

// bf16 and f16 in generated loops: widened on load, f32 in registers, rounded on store. With excess
// precision off every operation's result is rounded, as eager evaluation and the tile kernels round
// it: the three agree bit for bit. With it on (the default) the loop computes in f32 what eager
// computes on f32 operands, and rounds once.
class CodegenHalf : public Codegen {
 protected:
  void TearDown() override {
    compiler::set_excess_precision(true);
    Codegen::TearDown();
  }
};

Array half_edge_values(DType d) {
  // zeros, infinities, NaN, the largest finite values, subnormals, values that round up to infinity,
  // ties (1 + half an ulp) and values just beside them
  double big = d == DType::bf16 ? 3.3895313892515355e38 : 65504.0;
  double ulp = d == DType::bf16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
  std::vector<double> v{0.0, -0.0, INFINITY, -INFINITY, NAN, big, -big, 1e-40, 6e-8, -6e-8, 1 + ulp / 2, 1 + ulp * 1.5,
                        1 + ulp * 0.49, -(1 + ulp / 2), 0.1, 3.0, -7.5, 100.0};
  return array(v).astype(d);
}

TEST_F(CodegenHalf, rounded_after_every_operation_they_equal_eager) {
  compiler::set_excess_precision(false);
  Rng rng(21);
  auto f = [](const Array& x) {
    return tanh(x) * 0.5 + exp(x * 0.25) - log(abs(x) + 0.5) + sigmoid(x) + sqrt(abs(x)) - x * x / 3.0;
  };
  for (DType d : {DType::bf16, DType::f16}) {
    for (int64_t n : {1, 15, 16, 17, 33, 64, 65, 129, 1000, 2049, 4099}) expect_exact(f, rng.uniform({n}, d, -4, 4));
    Array e = half_edge_values(d);
    expect_exact([](const Array& x) { return x * 2.0 + 1.0; }, e);
    expect_exact([](const Array& x) { return maximum(x, 0.5) - minimum(x, -0.5) + floor(x) + sign(x); }, e);
    expect_exact([](const Array& x) { return where(x > 1.0, exp(x), x * x); }, e);
    expect_exact([](const Array& x, const Array& y) { return x * y + (x > y).astype(x.dtype()); },
                 rng.uniform({300}, d, -2, 2), rng.uniform({300}, d, -2, 2));
  }
  EXPECT_EQ(fused_program([](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; }, zeros({100000}, DType::bf16)),
            "ranges: loop(mul tanh mul add sub)");
}

TEST_F(CodegenHalf, with_excess_precision_they_compute_in_f32_and_round_once) {
  compiler::set_excess_precision(true);
  Rng rng(22);
  auto f = [](const Array& x) { return tanh(x) * 0.5 + exp(x * 0.25) - x * x / 3.0 + sqrt(abs(x)); };
  for (DType d : {DType::bf16, DType::f16}) {
    // (from 17 elements: the fuse pass leaves the tiniest arrays to eager kernels, which round)
    for (int64_t n : {17, 65, 1000, 4099}) {
      Array x = rng.uniform({n}, d, -4, 4);
      Array want = f(x.astype(DType::f32)).astype(d);  // eager in f32, one rounding
      Array got = jit(f)(x);
      EXPECT_TRUE(bit_equal(got, want)) << short_name(d) << " n=" << n << "\n" << got << "\n" << want;
      // and it differs from eager's per-operation rounding somewhere (otherwise this test shows nothing)
      if (n == 4099) {
        EXPECT_FALSE(bit_equal(got, f(x))) << short_name(d);
      }
    }
    Array e = half_edge_values(d);
    auto g = [](const Array& x) { return x * 3.0 - 1.0; };
    EXPECT_TRUE(bit_equal(jit(g)(e), g(e.astype(DType::f32)).astype(d))) << short_name(d);
  }
}

TEST_F(CodegenHalf, explicit_conversions_always_round) {
  // f32 -> half -> f32 inside one loop rounds in the middle, as eager does, excess precision or not;
  // f64 and integers reach halves through f32 as eager's conversion does
  Rng rng(23);
  for (bool excess : {true, false}) {
    compiler::set_excess_precision(excess);
    for (DType d : {DType::bf16, DType::f16}) {
      Array x = concatenate({rng.uniform({500}, DType::f32, -70000, 70000), rng.uniform({500}, DType::f32, -2, 2),
                             half_edge_values(d).astype(DType::f32)});
      expect_exact([d](const Array& a) { return (a * 1.5).astype(d).astype(DType::f32) - a; }, x);
      expect_exact([d](const Array& a) { return a.astype(d).astype(DType::i32); }, x);
      expect_exact([d](const Array& a) { return (a.astype(d) > 1.0).astype(DType::f32) + a.astype(d).astype(DType::f64); }, x);
      expect_exact([d](const Array& a) { return (a * 1.0).astype(d); }, rng.uniform({777}, DType::f64, -1e5, 1e5));
      expect_exact([d](const Array& a) { return (a * 3).astype(d); }, rng.ints({777}, DType::i32, -3000000, 3000000));
      DType other = d == DType::bf16 ? DType::f16 : DType::bf16;
      expect_exact([other](const Array& a) { return (a * 1.0).astype(other); }, rng.uniform({300}, d, -100, 100));
    }
  }
}

TEST_F(Codegen, last_loop_of_a_row_runs_inside_the_next_rows_loop) {
  // blocks of one row ending in two generated loops: row r's last loop runs inside row r + 1's loop
  // before it, with scratch double-buffered by row parity. A program with an order-independent
  // reduction is exact against eager evaluation at every row count (a thread's share of one row,
  // of several, several shares) and every remainder of the row against the loop's step.
  Rng rng(10);
  auto f = [](const Array& a) {
    Array m = max(a, -1, true);
    Array d = exp(a * 0.5) - m;
    return std::vector<Array>{d * (a - min(a, -1, true)) + m, d * 2.0};
  };
  EXPECT_EQ(fused_program([&](const Array& a) { return f(a)[0]; }, zeros({8, 2048})),
            "rows 8x2048 pipelined: loop(reduce_max) loop(mul exp sub) loop(reduce_min) loop(sub mul add)");
  // not pipelined: several rows a block, chunked rows
  EXPECT_EQ(fused_program([](const Array& a) { return softmax(a); }, zeros({8, 100})).find("pipelined"), std::string::npos);
  EXPECT_EQ(fused_program([](const Array& a) { return softmax(a); }, zeros({2, 40000})).find("pipelined"), std::string::npos);
  for (int64_t c : {1025, 1500, 2048, 2049, 2111, 4096})
    for (int64_t r : {1, 2, 3, 17, 100}) {
      Array x = rng.uniform({r, c}, f32, -3, 3);
      auto want = f(x);
      auto got = jit(f)(x);
      EXPECT_TRUE(bit_equal(got[0], want[0]) && bit_equal(got[1], want[1])) << r << "x" << c;
      auto sm = [](const Array& a) { return softmax(a); };
      EXPECT_TRUE(testing::close(jit(sm)(x), sm(x), 1e-5, 1e-7)) << r << "x" << c;
      // the result written into the donated input's buffer, row by row behind the reads
      auto g = [](const Array& a) { Array m = max(a, -1, true); return exp(a - m) * 3.0 + m; };
      Array want_g = g(x);
      Array donated = x * 1.0;
      Array got_g = jit(g, {.donate_argnums = {0}})(donated);
      EXPECT_TRUE(bit_equal(got_g, want_g)) << r << "x" << c;
    }
}

TEST_F(Codegen, streaming_stores_for_large_outputs) {
  // 2^23 floats (32 MiB) exceed the streaming threshold: non-temporal stores, same values
  Rng rng(5);
  Array x = rng.uniform({int64_t(1) << 23}, f32, -2, 2);
  expect_exact([](const Array& a) { return tanh(a) * 0.5 + a * a - 1.0; }, x);
}

// f under jit with GRAFT_STREAMING_STORES forced to `mode` for its calls (unset afterwards)
template <class F>
Array with_stores(const char* mode, F& f, const Array& x) {
  setenv("GRAFT_STREAMING_STORES", mode, 1);
  Array y = f(x);
  unsetenv("GRAFT_STREAMING_STORES");
  return y;
}

TEST_F(Codegen, large_outputs_come_with_and_without_streaming_stores_alike) {
  // a plain chain of an odd length (the scalar tail), softmax rows (pipelined), and a kernel below
  // the threshold, which has one variant only
  Rng rng(6);
  auto chain = [](const Array& a) { return tanh(a) * 0.5 + a * a - 1.0; };
  auto sm = [](const Array& a) { return softmax(a); };
  int64_t n = compiler::kStreamingBytes / 4 + 37;
  Array x = rng.uniform({n}, f32, -3, 3), rows = rng.uniform({compiler::kStreamingBytes / 4 / 4096, 4096}, f32, -5, 5);
  // (the kernel lives on the optimized program: asked while that is alive)
  auto tunes_stores = [](const std::function<Array(const Array&)>& f, const Array& a) {
    ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(a));
    for (auto& e : opt.jaxpr->eqns)
      if (e.prim->name == std::string("fusion")) return compiler::FusedKernel::of(compiler::fusion_body(e.params)).tunes_stores();
    ADD_FAILURE() << "no fusion";
    return false;
  };
  EXPECT_TRUE(tunes_stores(chain, x));
  EXPECT_TRUE(tunes_stores(sm, rows));
  EXPECT_FALSE(tunes_stores(chain, rng.uniform({1000}, f32, -3, 3)));
  auto jc = jit(chain);
  auto js = jit(sm);
  // softmax's fused rows sum in another order than eager: the variants must agree with each other
  Array want = chain(x), want_s = with_stores("on", js, rows);
  EXPECT_TRUE(testing::close(want_s, sm(rows), 1e-5, 1e-7));
  for (const char* mode : {"on", "off", "auto"}) {
    for (int call = 0; call < 3; ++call) {  // auto alternates over its first calls
      EXPECT_TRUE(bit_equal(with_stores(mode, jc, x), want)) << mode << " call " << call;
      EXPECT_TRUE(bit_equal(with_stores(mode, js, rows), want_s)) << mode << " call " << call;
    }
  }
  // blocks of several short rows store row by row: rows of 100 f32 (400 bytes) start off a 64-byte
  // boundary and take ordinary stores (non-temporal ones would fault), rows of 128 stream
  auto norm = [](const Array& a) { return a - mean(a, {-1}, true); };
  auto jn = jit(norm);
  for (int64_t c : {100, 128}) {
    Array r = rng.uniform({compiler::kStreamingBytes / 4 / c + 3, c}, f32, -1, 1);
    Array off = with_stores("off", jn, r);
    EXPECT_TRUE(bit_equal(with_stores("on", jn, r), off)) << c;
    EXPECT_TRUE(testing::close(off, norm(r), 1e-6, 1e-6)) << c;
  }
}

TEST(VariantTuner, runs_the_faster_variant_and_follows_a_change) {
  compiler::VariantTuner t;
  double time[2] = {2.0, 1.0};  // variant 1 faster
  int runs[2] = {0, 0};
  auto call = [&](int n) {
    for (int i = 0; i < n; ++i) {
      int v = t.pick();
      ++runs[v];
      t.record(v, time[v]);
    }
  };
  call(6);  // a warm-up and two measurements each
  EXPECT_EQ(runs[0], 3);
  EXPECT_EQ(runs[1], 3);
  runs[0] = runs[1] = 0;
  call(640);
  // variant 0 is 2x behind: re-measured once every 4 kExplore calls
  EXPECT_EQ(runs[0], 640 / (4 * compiler::VariantTuner::kExplore));
  EXPECT_DOUBLE_EQ(t.score(1), 1.0);
  // the machine changes: variant 0 becomes the faster; its first re-measurement brings it back
  time[0] = 0.5;
  call(4 * compiler::VariantTuner::kExplore);
  runs[0] = runs[1] = 0;
  call(64);
  EXPECT_GE(runs[0], 60);
  EXPECT_DOUBLE_EQ(t.score(0), 0.5);
  // and variant 0 slows down for good: within a window of calls the tuner has gone back to variant 1
  time[0] = 3.0;
  call(compiler::VariantTuner::kWindow);
  runs[0] = runs[1] = 0;
  call(64);
  EXPECT_LE(runs[0], 1);
}

TEST(VariantTuner, one_disturbed_call_does_not_hand_the_choice_to_the_slower_variant) {
  // the faster variant's first measured call is disturbed (5x slower): an average of recent times
  // would prefer the slower variant for hundreds of calls, the best of recent times at once
  compiler::VariantTuner t;
  const double time[2] = {2.0, 1.0};
  int runs[2] = {0, 0};
  int calls_of_1 = 0;
  for (int i = 0; i < 70; ++i) {
    int v = t.pick();
    if (i >= 6) ++runs[v];
    // variant 1's first call is the warm-up, its second the first measured
    t.record(v, v == 1 && ++calls_of_1 == 2 ? 5.0 : time[v]);
  }
  EXPECT_GE(runs[1], 60);
}

TEST_F(Codegen, disk_cache_keeps_the_recently_used_objects_under_its_limit) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("graft_kernel_cache_prune_" + std::to_string(getpid()));
  fs::remove_all(dir);
  setenv("GRAFT_CACHE_DIR", dir.c_str(), 1);
  Array x = testing::Rng(11).uniform({3, 100}, f32, -2, 2);
  // programs no other test compiles (the constants), each one object
  auto fa = [](const Array& a) { return exp(a * 1.4375) + a; };
  auto fb = [](const Array& a) { return exp(a * 2.71875) - a; };
  auto objects = [&] {
    std::vector<fs::path> v;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gko") v.push_back(e.path());
    return v;
  };
  auto now = fs::file_time_type::clock::now();
  jit(fa)(x);
  ASSERT_EQ(objects().size(), 1u);
  fs::path a_obj = objects()[0];
  fs::last_write_time(a_obj, now - std::chrono::hours(5));
  auto hits = cpu::jit_stats().cache_hits;
  jit(fa)(x);  // read from disk: marked as used now
  EXPECT_EQ(cpu::jit_stats().cache_hits, hits + 1);
  EXPECT_GT(fs::last_write_time(a_obj), now - std::chrono::minutes(1));
  // three older objects of 1 MB (graft's header: its magic), files that are not the cache's, and
  // temporary files of a crashed writer
  auto make = [&](const std::string& name, size_t bytes, std::chrono::hours age, bool ours = true) {
    std::ofstream(dir / name, std::ios::binary) << (ours ? std::string("GRAFTKO1") : std::string()) << std::string(bytes, 'x');
    fs::last_write_time(dir / name, now - age);
  };
  make("k0000000000000001.gko", 1000000, std::chrono::hours(3));
  make("k0000000000000002.gko", 1000000, std::chrono::hours(2));
  make("k0000000000000003.gko", 1000000, std::chrono::hours(1));
  make("notes.txt", 5000000, std::chrono::hours(9), false);
  make("k0000000000000009.o", 5000000, std::chrono::hours(9), false);     // somebody else's file
  make("k00000000000000aa.gko", 3000000, std::chrono::hours(9), false);   // our name, not our contents
  make("k0000000000000007.gko.bak", 100, std::chrono::hours(9));          // not exactly our name
  make(".k0000000000000004.gko.tmp.17.0", 100, std::chrono::hours(2));
  make(".k0000000000000005.gko.tmp.18.0", 100, std::chrono::hours(0));
  make("k0000000000000006.o.tmp17", 100, std::chrono::hours(2), false);   // not ours (the old rule took it)
  setenv("GRAFT_CACHE_MAX_BYTES", "2500000", 1);
  jit(fb)(x);  // a new object: the directory is over its limit, pruned to three quarters of it
  unsetenv("GRAFT_CACHE_MAX_BYTES");
  unsetenv("GRAFT_CACHE_DIR");
  EXPECT_FALSE(fs::exists(dir / "k0000000000000001.gko"));
  EXPECT_FALSE(fs::exists(dir / "k0000000000000002.gko"));
  EXPECT_TRUE(fs::exists(dir / "k0000000000000003.gko"));
  EXPECT_TRUE(fs::exists(a_obj));  // older than the others on disk, but used last
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "k0000000000000009.o"));
  EXPECT_TRUE(fs::exists(dir / "k00000000000000aa.gko"));
  EXPECT_TRUE(fs::exists(dir / "k0000000000000007.gko.bak"));
  EXPECT_FALSE(fs::exists(dir / ".k0000000000000004.gko.tmp.17.0"));
  EXPECT_TRUE(fs::exists(dir / ".k0000000000000005.gko.tmp.18.0"));
  EXPECT_TRUE(fs::exists(dir / "k0000000000000006.o.tmp17"));
  fs::remove_all(dir);
}

TEST_F(Codegen, disk_cache_serves_a_second_compile) {
  auto dir = std::filesystem::temp_directory_path() / ("graft_kernel_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  setenv("GRAFT_CACHE_DIR", dir.c_str(), 1);
  // loops no other test compiles: several functions (with constants and reductions) in one object,
  // linked into the process without the JIT when read back
  auto f = [](const Array& x) { return exp(x * 1.2345) - x + sum(softmax(x * 1.2345), -1, true); };
  Array x = testing::Rng(8).uniform({3, 2100}, f32, -2, 2);
  auto before = cpu::jit_stats();
  Array a = jit(f)(x);                 // a fresh jit: compiled by LLVM, object written
  auto mid = cpu::jit_stats();
  Array b = jit(f)(x);                 // another fresh jit of the same program: read from disk
  auto after = cpu::jit_stats();
  unsetenv("GRAFT_CACHE_DIR");
  EXPECT_EQ(mid.compiled - before.compiled, 1);
  EXPECT_EQ(after.cache_hits - mid.cache_hits, 1);
  EXPECT_EQ(after.compiled, mid.compiled);
  EXPECT_TRUE(bit_equal(a, b));
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".gko") files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  std::string good;
  {
    std::ifstream in(files[0], std::ios::binary);
    good.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // a damaged object is not trusted: the loop is compiled again. Truncated; code bytes overwritten at
  // the same size (the old cache loaded and ran those); a header for another key; another magic.
  auto damaged = [&](std::string bytes) {
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << bytes;
    setenv("GRAFT_CACHE_DIR", dir.c_str(), 1);
    auto before = cpu::jit_stats();
    Array c = jit(f)(x);
    auto after = cpu::jit_stats();
    unsetenv("GRAFT_CACHE_DIR");
    EXPECT_EQ(after.compiled - before.compiled, 1);
    EXPECT_EQ(after.cache_hits, before.cache_hits);
    EXPECT_TRUE(bit_equal(a, c));
  };
  damaged(good.substr(0, 100));
  std::string overwritten = good;
  for (size_t i = overwritten.size() - 600; i < overwritten.size() - 300; ++i) overwritten[i] = '\xcc';  // int3
  damaged(overwritten);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 1;
  damaged(flipped);
  std::string other_key = good;
  other_key[45] ^= 1;  // inside the key stored in the header
  damaged(other_key);
  std::string magic = good;
  magic[0] = 'X';
  damaged(magic);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graft
