// graft::io: safetensors round trips, the byte layout, atomic writes, corrupt files.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;
namespace fs = std::filesystem;

std::string tmp(const std::string& name) {
  auto d = fs::temp_directory_path() / ("graft_io_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}
std::string read(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write(const std::string& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

TEST(Safetensors, RoundTripsEveryDtype) {
  io::TensorMap m;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    if (d == c128) continue;  // the format has none (below)
    m[std::string(short_name(d))] = arange(6.0, f32).reshape({2, 3}).astype(d);
  }
  m["scalar"] = array(3.5);
  m["empty"] = zeros({0, 4});
  std::string p = tmp("all.safetensors");
  io::save_tensors(p, m, {{"format", "graft"}, {"epoch", "3"}});
  io::Metadata meta;
  io::TensorMap back = io::load_tensors(p, &meta);
  EXPECT_EQ(meta.at("format"), "graft");
  EXPECT_EQ(meta.at("epoch"), "3");
  ASSERT_EQ(back.size(), m.size());
  for (auto& [k, v] : m) {
    EXPECT_EQ(back.at(k).dtype(), v.dtype()) << k;
    EXPECT_EQ(back.at(k).shape(), v.shape()) << k;
    EXPECT_TRUE(array_equal(back.at(k), v)) << k;
  }
  expect_throws<TypeError>([&] { io::save_tensors(tmp("c128.safetensors"), {{"z", zeros({2}, c128)}}); },
                           "no complex128");
}

TEST(Safetensors, LayoutFollowsTheSpec) {
  std::string p = tmp("layout.safetensors");
  io::save_tensors(p, {{"w", array({1.0f, 2.0f})}});
  std::string b = read(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
  EXPECT_EQ((8 + n) % 8, 0u);  // data 8-byte aligned
  std::string header = b.substr(8, n);
  EXPECT_NE(header.find("\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"), std::string::npos)
      << header;
  EXPECT_EQ(b.size(), 8 + n + 8);
  float f[2];
  std::memcpy(f, b.data() + 8 + n, 8);  // little-endian f32 data
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 2.0f);
}

TEST(Safetensors, TreesSaveAndLoadByPath) {
  Tree params = nn::MLP{{4, 3, 2}}.init(random::key(0));
  EXPECT_EQ(io::leaf_names(params), (std::vector<std::string>{"0.b", "0.w", "1.b", "1.w"}));
  std::string p = tmp("mlp.safetensors");
  io::save(p, params);
  Tree back = io::load(p, params);
  for (size_t i = 0; i < params.leaves().size(); ++i) EXPECT_TRUE(array_equal(back.leaves()[i], params.leaves()[i]));
  // a template of another shape is refused with a clear message
  Tree other = nn::MLP{{4, 5, 2}}.init(random::key(0));
  try {
    io::load(p, other);
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("expects f32[5]"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, WritesAtomically) {
  std::string p = tmp("atomic.safetensors");
  io::save_tensors(p, {{"a", ones({100})}});
  std::string before = read(p);
  // a write that fails (a tensor named like the metadata key) leaves the old file intact
  EXPECT_THROW(io::save_tensors(p, {{"__metadata__", ones({2})}}), ValueError);
  EXPECT_EQ(read(p), before);
  // no temporary files are left behind
  for (auto& e : fs::directory_iterator(fs::path(p).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  EXPECT_THROW(io::save_tensors("/nonexistent_dir/x.safetensors", {{"a", ones({1})}}), IOError);
}

TEST(Safetensors, CorruptFilesRaiseIOError) {
  std::string p = tmp("good.safetensors");
  io::save_tensors(p, {{"a", arange(4.0, f32)}, {"b", ones({2}, i32)}});
  std::string good = read(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(good[static_cast<size_t>(i)]);
  std::string header = good.substr(8, n);
  auto expect_io = [&](const std::string& bytes, const std::string& words) {
    std::string q = tmp("bad.safetensors");
    write(q, bytes);
    try {
      io::load_tensors(q);
      FAIL() << "expected IOError: " << words;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  auto with_header = [&](std::string h) {
    std::string b(8, '\0');
    uint64_t m = h.size();
    for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((m >> (8 * i)) & 0xff);
    return b + h + good.substr(8 + n);
  };
  expect_io(good.substr(0, 5), "8-byte");
  expect_io(good.substr(0, good.size() - 4), "outside the data");         // truncated data
  expect_io(good.substr(0, 8) + header.substr(0, 10), "header size");    // truncated header
  expect_io(with_header("{not json"), "not valid JSON");
  std::string h2 = header;
  h2.replace(h2.find("F32"), 3, "F99");
  expect_io(with_header(h2), "unknown dtype");
  std::string h3 = header;
  h3.replace(h3.find("[4]"), 3, "[5]");
  expect_io(with_header(h3), "bytes for shape");
  expect_io(good + "trailing", "unindexed trailing bytes");
  EXPECT_THROW(io::load_tensors(tmp("does_not_exist")), IOError);
}

// Hostile and malformed files, each rejected with an IOError that names the problem (never a crash,
// an out-of-bounds read, a huge allocation or a silently wrong tensor). docs/bad_inputs.md lists them.
struct BadFile {
  const char* what;
  std::string bytes;
  const char* words;
};

std::string with_header_size(uint64_t n, const std::string& rest) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return b + rest;
}
std::string file_with(const std::string& header, const std::string& data) {
  return with_header_size(header.size(), header) + data;
}

std::vector<BadFile> bad_safetensors() {
  std::string d8(8, '\1');
  return {
      {"empty file", "", "8-byte"},
      {"five bytes", "12345", "8-byte"},
      {"header size past the end", with_header_size(1000, "{}"), "runs past the end"},
      {"header size 2^63", with_header_size(uint64_t(1) << 63, "{}"), "100 MB limit"},
      {"header of 200 MB claimed", with_header_size(uint64_t(200) << 20, "{}"), "100 MB limit"},
      {"header size 2^64 - 1", with_header_size(~uint64_t(0), "{}"), "100 MB limit"},
      {"header not JSON", file_with("{not json", ""), "not valid JSON"},
      {"header a JSON list", file_with("[1,2]", ""), "not a JSON object"},
      {"header a JSON string", file_with("\"x\"", ""), "not a JSON object"},
      {"duplicate tensor names",
       file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "\1\2"),
       "names 'a' twice"},
      {"duplicate field", file_with(R"({"a":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}})", "\1"), "twice"},
      {"unknown dtype", file_with(R"({"a":{"dtype":"F99","shape":[1],"data_offsets":[0,1]}})", "\1"), "unknown dtype"},
      {"dtype not a string", file_with(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})", "\1"), "dtype string"},
      {"missing shape", file_with(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", "\1"), "shape list"},
      {"fractional dimension", file_with(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", "\1"),
       "not a non-negative integer"},
      {"null dimension", file_with(R"({"a":{"dtype":"U8","shape":[null],"data_offsets":[0,1]}})", "\1"),
       "not a non-negative integer"},
      {"negative dimension", file_with(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "\1"),
       "not a non-negative integer"},
      {"string dimension", file_with(R"({"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}})", "\1"),
       "not a non-negative integer"},
      {"shape [2^61, 2] with 0 data bytes (wraps to 0 bytes)",
       file_with(R"({"a":{"dtype":"F32","shape":[2305843009213693952,2],"data_offsets":[0,0]}})", ""), "over 2^48"},
      {"shape [2^32, 2^32, 2^32]",
       file_with(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}})", ""),
       "over 2^48"},
      {"fractional offset", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}})", "\1"),
       "not a non-negative integer"},
      {"null offset", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[null,1]}})", "\1"),
       "not a non-negative integer"},
      {"three offsets", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", "\1"), "[begin, end]"},
      {"offsets reversed", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}})", "\1"), "outside the data"},
      {"offset 2^64 - 1", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551615]}})", "\1"),
       "outside the data"},
      {"size mismatch", file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8), "bytes for shape"},
      {"overlapping tensors",
       file_with(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", d8),
       "holes or overlaps"},
      {"hole in the data",
       file_with(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", "\1\1\1\1\1\1"),
       "holes or overlaps"},
      {"trailing bytes", file_with(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "\1\1\1"), "trailing bytes"},
      {"bool byte 2", file_with(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\1\2", 2)),
       "not 0 or 1"},
      {"metadata not an object", file_with(R"({"__metadata__":[1]})", ""), "object of strings"},
      {"metadata value a number", file_with(R"({"__metadata__":{"epoch":3}})", ""), "not a string"},
      {"tensor entry a number", file_with(R"({"a":3})", ""), "not an object"},
      {"unknown field", file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":1}})", "\1"),
       "unknown field"},
      {"65 dimensions", file_with(R"({"a":{"dtype":"U8","shape":[)" + [] {
         std::string d;
         for (int i = 0; i < 65; ++i) d += i ? ",1" : "1";
         return d;
       }() + R"(],"data_offsets":[0,1]}})", "\1"),
       "more than 64 dimensions"},
  };
}

TEST(Safetensors, HostileFilesAreRejectedWithAClearError) {
  auto cases = bad_safetensors();
  EXPECT_GE(cases.size(), 20u);
  for (auto& c : cases) {
    std::string q = tmp("hostile.safetensors");
    write(q, c.bytes);
    try {
      io::load_tensors(q);
      ADD_FAILURE() << c.what << ": loaded";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(q), std::string::npos) << c.what << ": the message names the file";
    }
  }
}

TEST(Safetensors, ADirectoryIsAnIOErrorForReadingAndWriting) {
  std::string d = tmp("a_directory");
  fs::create_directories(d);
  expect_throws<IOError>([&] { io::load_tensors(d); }, "is a directory");
  expect_throws<IOError>([&] { io::save_tensors(d, {{"a", ones({1})}}); }, "is a directory");
}

TEST(Safetensors, ConcurrentSavesOfOnePathNeverCollide) {
  // temporary files were named by pid only: two threads saving one path wrote into the same file
  std::string p = tmp("shared.safetensors");
  std::vector<std::thread> ts;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      try {
        for (int r = 0; r < 20; ++r) io::save_tensors(p, {{"a", full({1000}, float(t))}});
      } catch (const Error&) {
        errors++;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  Array a = io::load_tensors(p).at("a");  // one thread's whole file, never a mix
  float v = a[0].item<float>();
  EXPECT_TRUE(array_equal(a, full({1000}, v)));
  for (auto& e : fs::directory_iterator(fs::path(p).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace graft
