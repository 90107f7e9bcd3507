// Deeply nested outside input: every parser of files and text from outside the process refuses input
// nested tens of thousands of levels deep with an error (IOError for files, ValueError for text), never
// a crash from an exhausted stack. docs/bad_inputs.md lists the bounds.
#include <cstring>

#include "graft/compiler/jaxpr_text.h"
#include "graft/compiler/program_cache.h"
#include "graft/io/export.h"
#include "graft/io/nesting.h"
#include "graft/io/npy.h"
#include "graft/io/safetensors.h"
#include "graft/transforms/jit.h"
#include "testing.h"

namespace graft::testing {
namespace {

constexpr int kDeep = 50000;

std::string repeat(const std::string& s, int n) {
  std::string r;
  r.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) r += s;
  return r;
}

template <class E>
void expect_error(const std::function<void()>& f, const std::string& words, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << what << ": " << e.what();
  }
}

TEST(Nesting, DepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(io::nesting_depth("", 8), 0);
  EXPECT_EQ(io::nesting_depth(R"({"a":[1,[2]],"b":{}})", 8), 3);
  EXPECT_EQ(io::nesting_depth(R"({"a":"[[[[\"[[[["})", 8), 1);  // brackets inside strings, escaped quotes
  EXPECT_EQ(io::nesting_depth("{'shape': (2, 3), 'descr': '((('}", 8), 2);
  EXPECT_EQ(io::nesting_depth("]]]{", 8), 1);  // stray closers do not go below zero
  EXPECT_EQ(io::nesting_depth(repeat("[", kDeep), 16), 17) << "stops counting past the limit";
}

std::string with_header(const std::string& header) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return b + header;
}

TEST(Nesting, SafetensorsHeaders) {
  const std::string arrays = R"({"a":{"dtype":"U8","shape":)" + repeat("[", kDeep) + repeat("]", kDeep) +
                             R"(,"data_offsets":[0,0]}})";
  const std::string objects = repeat(R"({"a":)", kDeep) + "1" + repeat("}", kDeep);
  const std::string metadata = R"({"__metadata__":{"k":)" + repeat("[", kDeep) + repeat("]", kDeep) + "}}";
  const std::string unclosed = R"({"a":)" + repeat("[", kDeep);
  for (auto& [what, header] : std::vector<std::pair<std::string, std::string>>{
           {"arrays", arrays}, {"objects", objects}, {"metadata", metadata}, {"unclosed", unclosed}}) {
    std::string bytes = with_header(header);
    expect_error<IOError>([&] { io::load_tensors_from_bytes(bytes, nullptr, "deep.safetensors"); },
                          "nests more than 16 levels deep", what);
  }
  // what graft writes still reads
  io::TensorMap t = io::load_tensors_from_bytes(io::tensors_to_bytes({{"a", ones({2, 3})}}, {{"k", "[[v]]"}}));
  EXPECT_EQ(t.at("a").shape(), (Shape{2, 3}));
}

TEST(Nesting, NpyHeaders) {
  auto npy = [](const std::string& shape) {
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64) h.push_back(' ');
    h.push_back('\n');
    std::string b = std::string("\x93NUMPY", 6) + char(1) + char(0);
    b.push_back(static_cast<char>(h.size() & 0xff));
    b.push_back(static_cast<char>((h.size() >> 8) & 0xff));
    return b + h;
  };
  std::string deep = npy(repeat("(", 30000) + repeat(")", 30000));  // a header of 60 KB: version 1 holds 64 KB
  expect_error<IOError>([&] { io::parse_npy(deep, "deep.npy"); }, "nests more than 4 levels deep", "npy");
  EXPECT_EQ(io::parse_npy(npy("(0,)"), "empty.npy").shape(), (Shape{0}));
}

TEST(Nesting, JaxprText) {
  register_transform_primitives();
  std::string jits = "{ lambda ; a:f32[]. let b:f32[] = " +
                     repeat("jit[name=f jaxpr={ lambda ; a:f32[]. let b:f32[] = ", kDeep) + "sin a";
  std::string tuples = "{ lambda ; a:f32[]. let b:f32[] = reduce_sum[axes=" + repeat("(", kDeep) + "] a in (b,) }";
  std::string lists = "{ lambda ; a:f32[]. let b:f32[] = reduce_sum[axes=" + repeat("[", kDeep) + "] a in (b,) }";
  for (auto& [what, text] : std::vector<std::pair<std::string, std::string>>{
           {"nested jit", jits}, {"tuples", tuples}, {"lists", lists}})
    expect_error<ValueError>([&] { parse_jaxpr(text); }, "levels deep", what);
}

TEST(Nesting, ExportedPrograms) {
  auto f = [](const Array& x) { return sin(x); };
  std::string good = export_fn(jit(f), {.name = "f"})(ones({3})).serialize();
  Exported back = deserialize_exported(good);  // reads
  EXPECT_EQ(back.name(), "f");
  io::Metadata meta;
  io::TensorMap tensors = io::load_tensors_from_bytes(good, &meta);
  for (const char* key : {"graft.in_names", "graft.in_types"}) {
    io::Metadata m = meta;
    m[key] = repeat("[", kDeep) + repeat("]", kDeep);
    std::string bytes = io::tensors_to_bytes(tensors, m);
    expect_error<IOError>([&] { deserialize_exported(bytes, "deep.graft"); }, "is not a list of strings", key);
  }
  io::Metadata m = meta;
  m["graft.jaxpr"] = "{ lambda ; a:f32[3]. let b:f32[3] = " +
                     repeat("jit[name=f jaxpr={ lambda ; a:f32[3]. let b:f32[3] = ", kDeep) + "sin a";
  std::string bytes = io::tensors_to_bytes(tensors, m);
  expect_error<IOError>([&] { deserialize_exported(bytes, "deep.graft"); }, "levels deep", "graft.jaxpr");
}

TEST(Nesting, ProgramCacheEntries) {
  // an entry whose program text nests deeply is damaged: a cache miss, not a crash
  std::string text = "{ lambda ; a:f32[]. let b:f32[] = reduce_sum[axes=" + repeat("(", kDeep) + "] a in (b,) }";
  std::string bytes = "graft-program-1\n";
  uint64_t n = text.size(), zero = 0;
  bytes.append(reinterpret_cast<const char*>(&n), sizeof n);
  bytes += text;
  bytes.append(reinterpret_cast<const char*>(&zero), sizeof zero);
  EXPECT_FALSE(compiler::read_program_entry(bytes).has_value());
}

}  // namespace
}  // namespace graft::testing
