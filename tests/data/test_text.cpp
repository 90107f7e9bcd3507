// Text corpora for byte-level language models: files and directories read in order, links to a file
// already read skipped, the per-file train/test split, and next-token windows.
#include <filesystem>
#include <fstream>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;
namespace fs = std::filesystem;

std::vector<int64_t> ints(const Array& a) { return a.astype(DType::i64).to_vector<int64_t>(); }

TEST(Text, FilesDirectoriesLinksAndTheSplit) {
  fs::path dir = fs::temp_directory_path() / ("graft_text_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "d");
  std::ofstream(dir / "d" / "b.txt") << "0123456789";
  std::ofstream(dir / "d" / "a.txt") << "abcdefghij";
  fs::create_symlink(dir / "d" / "a.txt", dir / "d" / "c-link.txt");
  std::ofstream(dir / "e.txt") << "XYZ";
  data::TextCorpus c = data::load_text({(dir / "d").string(), (dir / "e.txt").string()}, 0.2);
  ASSERT_EQ(c.files.size(), 3u);  // a, b (the link to a skipped), e
  EXPECT_EQ(fs::path(c.files[0]).filename(), "a.txt");
  EXPECT_EQ(fs::path(c.files[1]).filename(), "b.txt");
  auto text = [](const Array& a) {
    std::string s;
    for (int64_t v : ints(a)) s += static_cast<char>(v);
    return s;
  };
  EXPECT_EQ(text(c.train), "abcdefgh01234567XYZ");  // each file's last 20% is test text
  EXPECT_EQ(text(c.test), "ij89");
  EXPECT_EQ(c.train.dtype(), DType::u8);
  expect_throws<IOError>([&] { data::load_text({(dir / "missing.txt").string()}); }, "missing.txt");
  expect_throws<ValueError>([&] { data::load_text({(dir / "e.txt").string()}, 1.0); }, "test_fraction");
  fs::remove_all(dir);
}

TEST(Text, NextTokenWindows) {
  Array t = arange(10, DType::u8);
  auto [x, y] = data::next_token_windows(t, 3, 1);
  EXPECT_EQ(x.dtype(), DType::i32);
  EXPECT_EQ(x.shape(), (Shape{2, 3}));  // from offset 1: tokens 1..6, targets 2..7
  EXPECT_EQ(ints(x), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 4, 5, 6, 7}));
  auto [x3, y3] = data::next_token_windows(t, 3);
  EXPECT_EQ(x3.shape(), (Shape{3, 3}));  // 0..8 with targets 1..9
  EXPECT_EQ(ints(y3).back(), 9);
  expect_throws<ValueError>([&] { data::next_token_windows(t, 10); }, "no window of 10");
  expect_throws<ShapeError>([&] { data::next_token_windows(ones({2, 5}), 2); }, "vector of integers");
}

}  // namespace
}  // namespace graft
