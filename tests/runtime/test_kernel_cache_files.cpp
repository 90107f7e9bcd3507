// The kernel disk cache's file format (llvm_jit.h): a file is accepted only whole and for the key it
// was written for. Each damaged or foreign file below is refused (docs/bad_inputs.md lists them); the
// loader then compiles the kernels again (tests/compiler/test_codegen.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "graft/runtime/cpu/llvm_jit.h"

namespace graft::cpu {
namespace {

const std::string kKey = "loop0 f32 exp mul|znver5 +avx512f";

std::string object() {
  std::string o = "\x7f" "ELF";
  for (int i = 0; i < 300; ++i) o.push_back(static_cast<char>(i * 7));
  return o;
}

void put64(std::string& f, size_t at, uint64_t v) { std::memcpy(f.data() + at, &v, 8); }

TEST(KernelCacheFile, AWholeFileGivesItsObjectBack) {
  std::string f = make_cache_file(kKey, object().data(), object().size());
  auto at = cached_object_in(f, kKey);
  ASSERT_TRUE(at);
  EXPECT_EQ(f.substr(at->first, at->second), object());
  std::string empty = make_cache_file(kKey, nullptr, 0);
  ASSERT_TRUE(cached_object_in(empty, kKey));
  EXPECT_EQ(cached_object_in(empty, kKey)->second, 0u);
}

TEST(KernelCacheFile, DamagedAndForeignFilesAreRefused) {
  const std::string good = make_cache_file(kKey, object().data(), object().size());
  const size_t obj_at = 40 + kKey.size();
  struct Case {
    const char* what;
    std::string file;
    std::string key = kKey;
  };
  auto edit = [&](auto f) {
    std::string g = good;
    f(g);
    return g;
  };
  std::vector<Case> cases = {
      {"empty file", ""},
      {"magic only", good.substr(0, 8)},
      {"header cut short", good.substr(0, 39)},
      {"cut inside the key", good.substr(0, 45)},
      {"cut inside the object", good.substr(0, obj_at + 100)},
      {"one byte missing at the end", good.substr(0, good.size() - 1)},
      {"one byte too many", good + "x"},
      {"a plain ELF object (the old format)", object()},
      {"another magic", edit([](std::string& g) { g[7] = '2'; })},
      {"object bytes overwritten, same size", edit([&](std::string& g) { std::memset(g.data() + obj_at + 50, 0xcc, 100); })},
      {"one object bit flipped", edit([&](std::string& g) { g[obj_at + 7] ^= 1; })},
      {"last object byte changed", edit([&](std::string& g) { g.back() ^= 0x80; })},
      {"first hash word changed", edit([](std::string& g) { g[16] ^= 1; })},
      {"second hash word changed", edit([](std::string& g) { g[31] ^= 0x40; })},
      {"size field smaller", edit([&](std::string& g) { put64(g, 8, object().size() - 1); })},
      {"size field 2^64 - 1", edit([](std::string& g) { put64(g, 8, ~uint64_t(0)); })},
      {"key length 2^64 - 1", edit([](std::string& g) { put64(g, 32, ~uint64_t(0)); })},
      {"key length one more", edit([&](std::string& g) { put64(g, 32, kKey.size() + 1); })},
      {"key length zero", edit([](std::string& g) { put64(g, 32, 0); })},
      {"key text changed", edit([](std::string& g) { g[41] ^= 1; })},
      {"asked for another key", good, kKey + "x"},
      {"asked for another CPU", good, "loop0 f32 exp mul|znver4 +avx512f"},
      {"asked for an empty key", good, ""},
      {"header of another file, this object", make_cache_file("other", object().data(), object().size())},
      {"two files concatenated", good + good},
  };
  EXPECT_GE(cases.size(), 20u);
  for (auto& c : cases) EXPECT_FALSE(cached_object_in(c.file, c.key)) << c.what;
  EXPECT_TRUE(cached_object_in(good, kKey));
}

}  // namespace
}  // namespace graft::cpu
