// graft::io: safetensors round trips, the byte layout, atomic writes, corrupt files.
#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace graft
