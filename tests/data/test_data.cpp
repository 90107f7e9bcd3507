// graft::data: IDX reading (plain and gzip, corrupt inputs), Fashion-MNIST, batching.
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

std::string tmpdir() {
  auto d = std::filesystem::temp_directory_path() / ("graft_data_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& payload) {
  std::string b{0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xff));
  return b + payload;
}

void write_plain(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST(Idx, ReadsPlainAndGzipFiles) {
  std::string d = tmpdir();
  std::string payload;
  for (int i = 0; i < 6; ++i) payload.push_back(static_cast<char>(i * 10));
  write_plain(d + "/a.idx", idx_bytes(0x08, {2, 3}, payload));
  write_gz(d + "/a.idx.gz", idx_bytes(0x08, {2, 3}, payload));
  for (const char* f : {"/a.idx", "/a.idx.gz"}) {
    Array a = data::read_idx(d + f);
    EXPECT_EQ(a.dtype(), u8);
    EXPECT_EQ(a.shape(), (Shape{2, 3}));
    EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{0, 10, 20, 30, 40, 50}));
  }
  // big-endian multi-byte values
  std::string ints{0, 0, 1, 2, char(0xff), char(0xff), char(0xff), char(0xfe)};
  write_plain(d + "/i.idx", idx_bytes(0x0C, {2}, ints));
  EXPECT_EQ(data::read_idx(d + "/i.idx").to_vector<int>(), (std::vector<int>{258, -2}));
}

TEST(Idx, CorruptFilesRaiseIOError) {
  std::string d = tmpdir();
  auto expect_io = [](const std::string& path, const std::string& words) {
    try {
      data::read_idx(path);
      FAIL() << "expected IOError for " << path;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  write_plain(d + "/short.idx", idx_bytes(0x08, {2, 3}, "abc"));
  expect_io(d + "/short.idx", "truncated");
  write_plain(d + "/magic.idx", std::string("PK\x03\x04") + "junkjunk");
  expect_io(d + "/magic.idx", "magic");
  write_plain(d + "/type.idx", idx_bytes(0x42, {1}, "a"));
  expect_io(d + "/type.idx", "element type");
  expect_io(d + "/missing.idx", "cannot open");
  // a gzip stream cut in the middle
  std::string payload(4000, 'x');
  write_gz(d + "/cut.gz", idx_bytes(0x08, {4000}, payload));
  std::string gz;
  {
    std::ifstream f(d + "/cut.gz", std::ios::binary);
    gz.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  write_plain(d + "/cut.gz", gz.substr(0, gz.size() / 2));
  EXPECT_THROW(data::read_idx(d + "/cut.gz"), IOError);
}

// Hostile and malformed IDX files, plain and gzip: each is rejected with an IOError naming the file
// and the problem, after reading no more than the file holds (docs/bad_inputs.md lists them).
struct BadIdx {
  const char* what;
  std::string bytes;
  const char* words;
  bool gzip = false;
};

std::vector<BadIdx> bad_idx() {
  std::string ok6(6, 'a');
  std::vector<BadIdx> cases = {
      {"empty file", "", "truncated"},
      {"two bytes", std::string("\0\0", 2), "truncated"},
      {"bad magic", std::string("PK\x03\x04") + "junk", "magic"},
      {"magic 0x01 first byte", std::string("\x01\x00\x08\x01\0\0\0\1a", 9), "magic"},
      {"unknown element type 0x42", idx_bytes(0x42, {1}, "a"), "element type"},
      {"element type 0x00", idx_bytes(0x00, {1}, "a"), "element type"},
      {"header cut inside the dimensions", idx_bytes(0x08, {2, 3}, "").substr(0, 6), "inside the IDX header"},
      {"255 dimensions, header cut", std::string("\0\0\x08\xff", 4) + std::string(20, '\1'), "inside the IDX header"},
      {"data shorter than the header says", idx_bytes(0x08, {2, 3}, "abc"), "truncated"},
      {"data longer than the header says", idx_bytes(0x08, {2, 3}, ok6 + "extra"), "data after"},
      {"i32 data cut mid-value", idx_bytes(0x0C, {2}, "abcdef"), "truncated"},
      {"f64 data cut mid-value", idx_bytes(0x0E, {1}, "abcd"), "truncated"},
      {"header [2^31, 2^31] with no data (wrapped to a small size)", idx_bytes(0x08, {0x80000000u, 0x80000000u}, ""),
       "too large to be real"},
      {"header [2^32-1]^4", idx_bytes(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, ""), "too large"},
      {"header [2^31] with 10 bytes (claims 2 GB)", idx_bytes(0x08, {0x80000000u}, std::string(10, 'x')), "truncated"},
      {"f64 header [2^30, 2^16] (2^49 bytes) and no data: nothing is allocated", idx_bytes(0x0E, {0x40000000u, 0x10000u}, ""),
       "truncated"},
      {"gzip: empty stream", "", "truncated", true},
      {"gzip: bad magic", std::string("junkjunk"), "magic", true},
      {"gzip: data shorter than the header", idx_bytes(0x08, {100}, "abc"), "truncated", true},
      {"gzip: data longer than the header", idx_bytes(0x08, {2}, "abcd"), "data after", true},
      {"gzip bomb: 1 MiB of header-less zeros decompressing to 1 GB", std::string(size_t(1) << 20, '\0'),
       "element type", true},
      {"gzip bomb: a small header followed by 64 MB of zeros",
       idx_bytes(0x08, {4}, "abcd") + std::string(size_t(64) << 20, '\0'), "data after", true},
      {"gzip: [2^31, 2^31] header", idx_bytes(0x08, {0x80000000u, 0x80000000u}, ""), "too large", true},
  };
  return cases;
}

TEST(Idx, HostileFilesAreRejectedWithAClearError) {
  std::string d = tmpdir();
  auto cases = bad_idx();
  EXPECT_GE(cases.size(), 20u);
  for (auto& c : cases) {
    std::string path = d + (c.gzip ? "/hostile.idx.gz" : "/hostile.idx");
    if (c.gzip) {
      write_gz(path, c.bytes);
    } else {
      write_plain(path, c.bytes);
    }
    try {
      data::read_idx(path);
      ADD_FAILURE() << c.what << ": loaded";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << c.what << ": " << e.what();
    }
  }
  expect_throws<IOError>([&] { data::read_idx(d); }, "is a directory");
}

TEST(Idx, AGzipBombIsRejectedAfterReadingItsHeader) {
  // 1 GB of zeros behind an IDX header for 4 bytes, as 64 gzip members of 16 MB each (a file of ~1 MB):
  // the reader stops after the 4 bytes plus one, where the old one inflated everything first (the
  // bound is loose: inflating 1 GB takes over a second)
  std::string d = tmpdir();
  write_gz(d + "/zeros.gz", std::string(size_t(1) << 24, '\0'));
  std::string member;
  {
    std::ifstream f(d + "/zeros.gz", std::ios::binary);
    member.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  write_gz(d + "/head.gz", idx_bytes(0x08, {4}, "abcd"));
  std::string bomb;
  {
    std::ifstream f(d + "/head.gz", std::ios::binary);
    bomb.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  for (int i = 0; i < 64; ++i) bomb += member;
  std::string path = d + "/bomb.idx.gz";
  write_plain(path, bomb);
  EXPECT_LT(bomb.size(), size_t(2) << 20);
  auto t0 = std::chrono::steady_clock::now();
  expect_throws<IOError>([&] { data::read_idx(path); }, "data after");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.25);
}

TEST(FashionMnist, MissingDatasetNamesThePackage) {
  try {
    data::load_fashion_mnist("/nonexistent");
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

TEST(FashionMnist, LoadsDebiansPackage) {
  // tools/test.sh installs dataset-fashion-mnist, so this always runs in CI
  auto ds = data::load_fashion_mnist();
  EXPECT_EQ(ds.train_images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(ds.train_labels.shape(), (Shape{60000}));
  EXPECT_EQ(ds.test_images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(ds.train_images.dtype(), u8);
  EXPECT_EQ(ds.train_labels.dtype(), i32);
  EXPECT_EQ(min(ds.train_labels).item<int>(), 0);
  EXPECT_EQ(max(ds.train_labels).item<int>(), 9);
  // the classes are balanced: 6000 of each in the training set
  EXPECT_EQ(sum(ds.train_labels == 3).item<int>(), 6000);
  EXPECT_EQ(ds.train_labels[{slice(0, 5)}].to_vector<int>(), (std::vector<int>{9, 0, 0, 3, 0}));
}

TEST(Batches, InOrderAndShuffled) {
  Array x = arange(10.0, f32).reshape({10, 1}), y = arange(10.0, i32);
  auto plain = data::batches(x, y, 4);
  EXPECT_EQ(plain.size(), 2);
  auto [x0, y0] = plain[0];
  EXPECT_EQ(y0.to_vector<int>(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(data::batches(x, y, 4, std::nullopt, false).size(), 3);
  auto sh = data::batches(x, y, 5, random::key(1));
  std::vector<int> seen;
  for (auto [xb, yb] : sh) {
    EXPECT_TRUE(array_equal(xb.reshape({-1}).astype(i32), yb));  // rows stay paired
    for (int v : yb.to_vector<int>()) seen.push_back(v);
  }
  std::vector<int> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_NE(seen, sorted);
  // the same key gives the same order (jax.random.permutation's)
  auto again = data::batches(x, y, 5, random::key(1));
  EXPECT_TRUE(array_equal(again[0].second, sh[0].second));
  EXPECT_THROW(data::batches(x, arange(9.0), 4), ShapeError);
}

}  // namespace
}  // namespace graft
