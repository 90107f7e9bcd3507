// A main() for a libFuzzer target without libFuzzer: runs LLVMFuzzerTestOneInput on every file of the
// folders given, and on variations of each (cut at a spread of lengths, and bytes overwritten at seeded
// positions). CTest runs every target's corpus this way in every build, so the sanitizer builds check
// the corpus and its neighbourhood on each change; tools/fuzz.sh searches further with libFuzzer.
//   fuzz_<target>_replay [--variants N] <folder or file>...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// splitmix64: the variations are the same on every run, so a failure reproduces
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void run(const std::string& bytes) {
  // a copy of exactly the input's size, so that a read past its end is the sanitizer's to see
  std::vector<uint8_t> buf(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(buf.empty() ? nullptr : buf.data(), buf.size());
}

}  // namespace

int main(int argc, char** argv) {
  int variants = 64;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--variants") == 0 && i + 1 < argc) {
      variants = std::atoi(argv[++i]);
      continue;
    }
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(p);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s [--variants N] <folder or file>...)\n", argv[0]);
    return 2;
  }
  std::sort(files.begin(), files.end());
  static const uint8_t kSpecial[] = {0x00, 0xff, 0x7f, 0x80, 0x01, '0', '9', '-', '[', ']', ':', '\n'};
  size_t runs = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream in(files[f], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", files[f].string().c_str(), bytes.size());
    run(bytes), ++runs;
    if (bytes.empty()) continue;
    uint64_t seed = 0x67726166740000ull + f;
    // prefixes: parsers meet files cut short
    for (int k = 0; k < 16; ++k) run(bytes.substr(0, bytes.size() * k / 16)), ++runs;
    // overwritten bytes: lengths, counts and offsets that lie
    for (int v = 0; v < variants; ++v) {
      std::string m = bytes;
      int n = 1 + static_cast<int>(next(seed) % 4);
      for (int j = 0; j < n; ++j) {
        size_t at = next(seed) % m.size();
        uint64_t r = next(seed);
        m[at] = static_cast<char>(r % 3 == 0 ? kSpecial[(r >> 8) % sizeof kSpecial] : (r >> 16) & 0xff);
      }
      run(m), ++runs;
    }
  }
  std::fprintf(stderr, "replay: %zu inputs from %zu files, none failed\n", runs, files.size());
  return 0;
}
