// .npy and .npz: round trips in every dtype graft shares with NumPy, files as NumPy writes them
// (hand-made bytes: Fortran order, big-endian, version 2.0, zip64 and deflated members), and bad files.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "graft/io/npy.h"
#include "testing.h"

namespace graft::testing {
namespace {

std::string npy(const std::string& descr, bool fortran, const std::string& shape, const std::string& data,
                int version = 1) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h.push_back(' ');
  h.push_back('\n');
  std::string b = std::string("\x93NUMPY", 6) + char(version) + char(0);
  for (int k = 0; k < (version == 1 ? 2 : 4); ++k) b.push_back(static_cast<char>((h.size() >> (8 * k)) & 0xff));
  return b + h + data;
}

std::string le32(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

TEST(Npy, RoundTripsEveryDType) {
  Rng rng(5);
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8,
                  DType::u16, DType::u32, DType::u64, DType::bool_}) {
    for (Shape s : {Shape{}, Shape{0}, Shape{5}, Shape{2, 3, 4}}) {
      Array x = is_bool(d) ? rng.bools(s) : rng.ints(s, d, 0, 100);
      std::string b = io::npy_bytes(x);
      EXPECT_EQ((b.find('\n') + 1) % 64, 0u) << "the data starts at a multiple of 64";
      Array y = io::parse_npy(b);
      EXPECT_EQ(y.dtype(), d);
      EXPECT_EQ(y.shape(), s);
      EXPECT_TRUE(close(y, x, 0, 0)) << short_name(d);
    }
  }
  EXPECT_THROW(io::npy_bytes(ones({2}, DType::bf16)), TypeError);
}

TEST(Npy, ReadsWhatNumPyWrites) {
  // NumPy's header for a [2, 3] float32 array, C order
  std::string data;
  for (int k = 0; k < 6; ++k) data += le32(float(k));
  Array c = io::parse_npy(npy("<f4", false, "(2, 3)", data));
  EXPECT_TRUE(close(c, reshape(arange(6, DType::f32), {2, 3}), 0, 0));
  // Fortran order: the same bytes are the transpose's
  Array f = io::parse_npy(npy("<f4", true, "(2, 3)", data));
  EXPECT_TRUE(close(f, transpose(reshape(arange(6, DType::f32), {3, 2})), 0, 0));
  // big-endian, and format version 2.0
  std::string be;
  for (int k = 0; k < 3; ++k) {
    std::string v = le32(float(k) + 0.5f);
    be += std::string(v.rbegin(), v.rend());
  }
  EXPECT_TRUE(close(io::parse_npy(npy(">f4", false, "(3,)", be, 2)), arange(3, DType::f32) + 0.5f, 0, 0));
  // a scalar
  EXPECT_EQ(io::parse_npy(npy("<f4", false, "()", le32(2.5f))).item<float>(), 2.5f);
  // an empty Fortran-ordered array with huge other dimensions (found by fuzz_npy: its strides overflowed)
  Array e = io::parse_npy(npy("|i1", true, "(800000000, 511, 46, 500010, 0, 0, 2)", ""));
  EXPECT_EQ(e.size(), 0);
  EXPECT_EQ(e.shape(), (Shape{800000000, 511, 46, 500010, 0, 0, 2}));
  EXPECT_EQ(strides_of({1000000000000, 1000000000000, 0}).size(), 3u);  // saturates, no overflow
}

TEST(Npz, RoundTripAndNumPysZip) {
  io::TensorMap m{{"w", reshape(arange(6, DType::f32), {2, 3})}, {"b", arange(3, DType::i64)}};
  io::TensorMap back = io::parse_npz(io::npz_bytes(m));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(close(back.at("w"), m.at("w"), 0, 0));
  EXPECT_TRUE(close(back.at("b"), m.at("b"), 0, 0));
  // a deflated member, as np.savez_compressed writes (raw deflate, CRC-32 of the .npy bytes)
  std::string member = io::npy_bytes(arange(100, DType::f64));
  uLongf cap = compressBound(member.size());
  std::string z(cap, '\0');
  z_stream s{};
  deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  s.next_in = reinterpret_cast<Bytef*>(member.data());
  s.avail_in = static_cast<uInt>(member.size());
  s.next_out = reinterpret_cast<Bytef*>(z.data());
  s.avail_out = static_cast<uInt>(z.size());
  ASSERT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  z.resize(s.total_out);
  deflateEnd(&s);
  uint32_t crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(member.data()), member.size()));
  auto le = [](std::string& b, uint64_t v, int n) {
    for (int k = 0; k < n; ++k) b.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  };
  std::string zip, name = "x.npy";
  le(zip, 0x04034b50, 4), le(zip, 20, 2), le(zip, 0, 2), le(zip, 8, 2), le(zip, 0, 4), le(zip, crc, 4);
  le(zip, z.size(), 4), le(zip, member.size(), 4), le(zip, name.size(), 2), le(zip, 0, 2);
  zip += name + z;
  std::string cd;
  le(cd, 0x02014b50, 4), le(cd, 20, 2), le(cd, 20, 2), le(cd, 0, 2), le(cd, 8, 2), le(cd, 0, 4), le(cd, crc, 4);
  le(cd, z.size(), 4), le(cd, member.size(), 4), le(cd, name.size(), 2), le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 2);
  le(cd, 0, 2), le(cd, 0, 4), le(cd, 0, 4);
  cd += name;
  size_t off = zip.size();
  zip += cd;
  le(zip, 0x06054b50, 4), le(zip, 0, 2), le(zip, 0, 2), le(zip, 1, 2), le(zip, 1, 2), le(zip, cd.size(), 4);
  le(zip, off, 4), le(zip, 0, 2);
  io::TensorMap d = io::parse_npz(zip);
  EXPECT_TRUE(close(d.at("x"), arange(100, DType::f64), 0, 0));
  // the same archive with one flipped data byte fails its CRC
  std::string bad = zip;
  bad[30 + name.size() + 5] ^= 0x10;
  EXPECT_THROW(io::parse_npz(bad), IOError);
}

TEST(Npy, FilesAreWrittenAndReadBack) {
  auto dir = std::filesystem::temp_directory_path() / ("graft-npy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Array x = reshape(arange(12, DType::f32), {3, 4});
  io::save_npy((dir / "x.npy").string(), x);
  EXPECT_TRUE(close(io::load_npy((dir / "x.npy").string()), x, 0, 0));
  io::save_npz((dir / "m.npz").string(), {{"x", x}});
  EXPECT_TRUE(close(io::load_npz((dir / "m.npz").string()).at("x"), x, 0, 0));
  EXPECT_THROW(io::load_npy((dir / "missing.npy").string()), IOError);
  std::filesystem::remove_all(dir);
}

TEST(Npy, BadFilesAreIOErrors) {
  std::string good = io::npy_bytes(arange(4, DType::f32));
  std::vector<std::string> bad = {
      "", "not npy at all", good.substr(0, 9), good.substr(0, good.size() - 1),  // short, truncated data
      npy("<c32", false, "(2,)", std::string(64, '\0')),                          // complex256: no graft type
      npy("<f4", false, "(99999999999, 99999999999)", ""),                         // a size that overflows
      npy("<f4", false, "(-1,)", ""), npy("<f4", false, "(2", ""), npy("xx", false, "(2,)", ""),
      npy("<f4", false, "(2,)", std::string(8, '\0'), 7),                          // unknown version
  };
  std::string cut_header = good;
  cut_header[8] = '\xff', cut_header[9] = '\xff';  // a header longer than the file
  bad.push_back(cut_header);
  for (size_t i = 0; i < bad.size(); ++i) {
    try {
      io::parse_npy(bad[i], "bad.npy");
      ADD_FAILURE() << "bad file " << i << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos) << i << ": " << e.what() << " (" << typeid(e).name() << ")";
    }
  }
  for (const std::string& z : {std::string(), std::string("PK"), std::string(22, '\0'), good})
    EXPECT_THROW(io::parse_npz(z, "bad.npz"), IOError);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// Mutated files (flipped bytes, cut ends, spliced headers) load or fail with graft::Error, never a
// crash or a huge allocation (a deterministic sweep; fuzz/fuzz_npy.cpp explores further).
TEST(Npy, MutatedFilesFailCleanly) {
  std::vector<std::string> seeds = {io::npy_bytes(reshape(arange(6, DType::f32), {2, 3})),
                                    io::npy_bytes(ones({3}, DType::bool_)),
                                    io::npz_bytes({{"a", arange(5, DType::f64)}, {"b", ones({2, 2}, DType::i8)}})};
  std::mt19937_64 gen(7);
  int loaded = 0, failed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string b = seeds[static_cast<size_t>(trial) % seeds.size()];
    int edits = 1 + static_cast<int>(gen() % 4);
    for (int e = 0; e < edits && !b.empty(); ++e) {
      size_t at = gen() % b.size();
      switch (gen() % 3) {
        case 0: b[at] = static_cast<char>(gen()); break;
        case 1: b.resize(at); break;
        default: b[at] = static_cast<char>(b[at] ^ (1 << (gen() % 8))); break;
      }
    }
    try {
      if (b.size() >= 2 && b[0] == 'P' && b[1] == 'K') {
        io::parse_npz(b, "mutated.npz");
      } else {
        io::parse_npy(b, "mutated.npy");
      }
      ++loaded;
    } catch (const Error&) {
      ++failed;
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace graft::testing
