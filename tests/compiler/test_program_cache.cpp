// The whole-program cache (graft/compiler/program_cache.h): entries read back to the same optimized
// program and memory plan; a second compile of the same program (as another process would) reads
// the entry and runs to the same bits; other donations, other constants and damaged files compile
// again. (bench/bench_compile_cache.cpp measures a fresh process's compile time with it.)
#include <filesystem>
#include <fstream>

#include "graft/compiler/executable.h"
#include "graft/compiler/program_cache.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;
namespace fs = std::filesystem;

bool same_bits(const Array& a, const Array& b) {
  return a.aval().same_type(b.aval()) && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A training step of a small MLP (SGD), traced with its weights as arguments, as jit does.
ClosedJaxpr train_step(int64_t batch) {
  auto loss = [](const std::vector<Array>& p, const Array& x, const Array& y) {
    Array h = relu(matmul(x, p[0]) + p[1]);
    return mean(square(matmul(h, p[2]) - y));
  };
  auto step = [loss](const std::vector<Array>& p, const Array& x, const Array& y) {
    auto g = grad(loss)(p, x, y);
    std::vector<Array> out;
    for (size_t i = 0; i < p.size(); ++i) out.push_back(p[i] - g[i] * 0.1);
    return out;
  };
  std::vector<Array> p{ones({8, 16}), zeros({16}), ones({16, 4})};
  return make_jaxpr(step)(p, ones({batch, 8}), ones({batch, 4}));
}

std::vector<Array> args(int64_t batch) {
  Rng rng(3);
  return {rng.uniform({8, 16}), rng.uniform({16}), rng.uniform({16, 4}), rng.uniform({batch, 8}),
          rng.uniform({batch, 4})};
}

class ProgramCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_program_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    setenv("GRAFT_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GRAFT_CACHE_DIR");
    fs::remove_all(dir_);
  }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> v;
    if (fs::exists(dir_))
      for (auto& e : fs::directory_iterator(dir_))
        if (e.path().extension() == ".gkp") v.push_back(e.path());
    return v;
  }
  fs::path dir_;
};

TEST_F(ProgramCache, EntriesReadBackToTheSameProgramAndPlan) {
  Executable exe(train_step(32));
  compiler::MemoryPlan plan = compiler::plan_memory(exe.program(), {});
  std::optional<compiler::CachedProgram> back = compiler::read_program_entry(compiler::program_entry_bytes(exe.program(), plan));
  ASSERT_TRUE(back);
  std::string why;
  EXPECT_TRUE(same_program(exe.program(), back->program, &why)) << why;
  EXPECT_EQ(back->program.str(), exe.program().str());
  EXPECT_EQ(back->peak_bytes, plan.peak_bytes);
  EXPECT_EQ(back->argument_bytes, plan.argument_bytes);
  ASSERT_EQ(back->release.size(), plan.release.size());
  // the released variables are the corresponding ones (compared by their position in the program)
  auto position = [](const Jaxpr& j, const Var* v) {
    for (size_t i = 0; i < j.eqns.size(); ++i)
      for (size_t k = 0; k < j.eqns[i].outputs.size(); ++k)
        if (j.eqns[i].outputs[k].get() == v) return static_cast<int64_t>(i * 100 + k);
    for (size_t i = 0; i < j.invars.size(); ++i)
      if (j.invars[i].get() == v) return -1 - static_cast<int64_t>(i);
    return INT64_MIN;
  };
  for (size_t i = 0; i < plan.release.size(); ++i) {
    ASSERT_EQ(back->release[i].size(), plan.release[i].size());
    for (size_t k = 0; k < plan.release[i].size(); ++k)
      EXPECT_EQ(position(*back->program.jaxpr, back->release[i][k]), position(*exe.program().jaxpr, plan.release[i][k]));
  }
  // truncated entries are refused
  std::string bytes = compiler::program_entry_bytes(exe.program(), plan);
  for (size_t n : {size_t(0), size_t(5), bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(compiler::read_program_entry(bytes.substr(0, n))) << n;
}

TEST_F(ProgramCache, ASecondCompileReadsTheOptimizedProgram) {
  ClosedJaxpr j = train_step(32);
  Executable first(j);
  EXPECT_FALSE(first.stats().cached_program);
  ASSERT_EQ(entries().size(), 1u);
  // a new trace of the same function: other Var objects, the same program
  Executable second(train_step(32));
  EXPECT_TRUE(second.stats().cached_program);
  EXPECT_EQ(second.program().str(), first.program().str());
  EXPECT_EQ(second.peak_bytes(), first.peak_bytes());
  auto a = args(32);
  Arrays x = first.run(a), y = second.run(a);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(same_bits(x[i], y[i])) << i;
  // another batch size, other donations: other programs
  Executable other(train_step(16));
  EXPECT_FALSE(other.stats().cached_program);
  Executable donating(j, "jit", {true, true, true, false, false});
  EXPECT_FALSE(donating.stats().cached_program);
  EXPECT_EQ(entries().size(), 3u);
}

TEST_F(ProgramCache, ConstantsArePartOfTheKey) {
  auto with = [](float c) {
    Array k = array({c, c, c});
    return make_jaxpr([k](const Array& x) { return exp(x) * k; })(ones({3}));
  };
  Executable a(with(2.0f)), b(with(3.0f)), a2(with(2.0f));
  EXPECT_FALSE(b.stats().cached_program);
  EXPECT_TRUE(a2.stats().cached_program);
  Array x = array({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(same_bits(b.run(std::vector<Array>{x})[0], exp(x) * 3.0));
  EXPECT_TRUE(same_bits(a2.run(std::vector<Array>{x})[0], a.run(std::vector<Array>{x})[0]));
}

TEST_F(ProgramCache, DamagedEntriesAreCompiledAgain) {
  ClosedJaxpr j = train_step(8);
  Executable first(j);
  auto files = entries();
  ASSERT_EQ(files.size(), 1u);
  std::string bytes;
  {
    std::ifstream f(files[0], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  auto a = args(8);
  Arrays want = first.run(a);
  std::string flipped = bytes;
  flipped[flipped.size() - 20] ^= 0x10;  // the plan, under the hash
  for (const std::string& damaged : {bytes.substr(0, bytes.size() / 2), flipped, std::string("not a cache file")}) {
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << damaged;
    Executable again(train_step(8));
    EXPECT_FALSE(again.stats().cached_program);
    Arrays got = again.run(a);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i]));
  }
  // GRAFT_CACHE_DIR=off: nothing is read or written
  setenv("GRAFT_CACHE_DIR", "off", 1);
  Executable off(train_step(8));
  EXPECT_FALSE(off.stats().cached_program);
}

}  // namespace
}  // namespace graft
