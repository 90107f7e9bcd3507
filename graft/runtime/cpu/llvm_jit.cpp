#include "graft/runtime/cpu/llvm_jit.h"
#include "graft/core/env.h"
#include "graft/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "graft/core/error.h"

#ifdef GRAFT_HAVE_LLVM
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/RuntimeDyld.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#endif

namespace graft::cpu {

namespace {
std::atomic<int64_t> g_compiled{0}, g_hits{0};
}

JitStats jit_stats() { return {g_compiled.load(), g_hits.load()}; }

// ---- the cache files' format (no LLVM needed: also what the fuzz target checks) ----------------------
namespace {
constexpr char kMagic[8] = {'G', 'R', 'A', 'F', 'T', 'K', 'O', '1'};

// A 128-bit hash of the object code, stored beside it: a file whose bytes changed is never loaded.
// (Not cryptographic: the cache directory is the user's own; this catches truncation, corruption and
// overwrites, not someone who can also recompute the hash.)
struct Hash128 {
  uint64_t a, b;
  bool operator==(const Hash128& o) const { return a == o.a && b == o.b; }
};
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
Hash128 hash128(const char* p, size_t n) {
  uint64_t a = 0x243f6a8885a308d3ULL ^ n, b = 0x13198a2e03707344ULL + n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    a = mix64(a ^ w) + 0x9e3779b97f4a7c15ULL;
    b = (b ^ mix64(w + i)) * 0xff51afd7ed558ccdULL;
  }
  uint64_t tail = 0;
  if (n > i) std::memcpy(&tail, p + i, n - i);
  a = mix64(a ^ tail ^ (uint64_t(n - i) << 56));
  b = mix64(b ^ mix64(tail + 0x632be59bd9b4e019ULL));
  return {a ^ mix64(b), b};
}

}  // namespace

std::string make_cache_file(const std::string& key, const char* obj, size_t n) {
  std::string f(kMagic, 8);
  auto put = [&](uint64_t v) { f.append(reinterpret_cast<const char*>(&v), 8); };
  Hash128 h = hash128(obj, n);
  put(n);
  put(h.a);
  put(h.b);
  put(key.size());
  f += key;
  f.append(obj, n);
  return f;
}

std::optional<std::pair<size_t, size_t>> cached_object_in(const std::string& f, const std::string& key) {
  auto get = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, f.data() + at, 8);
    return v;
  };
  if (f.size() < 40 || std::memcmp(f.data(), kMagic, 8) != 0) return std::nullopt;
  uint64_t n = get(8), klen = get(32);
  if (klen != key.size() || f.size() - 40 < klen || f.size() - 40 - klen != n) return std::nullopt;
  if (f.compare(40, klen, key) != 0) return std::nullopt;  // another key whose name hashed the same
  size_t at = 40 + klen;
  if (!(hash128(f.data() + at, n) == Hash128{get(16), get(24)})) return std::nullopt;
  return std::make_pair(at, static_cast<size_t>(n));
}

#ifndef GRAFT_HAVE_LLVM

bool have_llvm_jit() { return false; }
std::vector<void*> jit_load_cached(const std::string&, const std::vector<std::string>&) { return {}; }
std::vector<void*> jit_compile(std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>,
                               const std::vector<std::string>&, const std::string&) {
  fail<NotImplementedError>("code generation: graft was built without LLVM");
}
std::string jit_target() { return "none"; }
void cache_put(const std::string&, const std::string&, const std::string&) {}
std::optional<std::string> cache_get(const std::string&, const std::string&) { return std::nullopt; }

#else

bool have_llvm_jit() { return true; }

namespace {

std::string cache_dir() {
  const char* d = std::getenv("GRAFT_CACHE_DIR");
  if (d && *d) return std::string(d) == "off" ? std::string() : std::string(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/graft";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/graft";
  return std::string();
}

// GRAFT_CACHE_MAX_BYTES (default 256 MiB): the disk cache's size, beyond which the objects used
// least recently are deleted.
uint64_t cache_limit() {
  return static_cast<uint64_t>(env::integer("GRAFT_CACHE_MAX_BYTES", int64_t(256) << 20, 0, int64_t(1) << 50));
}

// Cache files: "k<16 hex digits>.gko", each a header (kMagic, the payload's size and 128-bit hash, the
// full key) followed by the object code; temporary files ".k<16 hex>.gko.tmp.<pid>.<n>". Nothing else in
// the directory is graft's: pruning touches only files named so whose first bytes are kMagic.

bool is_hex16(const std::string& s, size_t at) {
  if (s.size() < at + 16) return false;
  for (size_t i = at; i < at + 16; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i])) || std::isupper(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
// objects (.gko) and cached programs (.gkp, graft/compiler/program_cache.h)
bool is_object_name(const std::string& n) {
  return n.size() == 21 && n[0] == 'k' && is_hex16(n, 1) && (n.substr(17) == ".gko" || n.substr(17) == ".gkp");
}
bool is_temp_name(const std::string& n) {
  if (n.size() < 28 || n[0] != '.' || n[1] != 'k' || !is_hex16(n, 2) ||
      (n.compare(18, 9, ".gko.tmp.") != 0 && n.compare(18, 9, ".gkp.tmp.") != 0))
    return false;
  for (size_t i = 27; i < n.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(n[i])) && n[i] != '.') return false;
  return true;
}
bool has_magic(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  char m[8] = {};
  return f.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

// Keeps the directory under the limit: deletes the least recently used objects (a hit sets its
// file's time) until a quarter of the limit is free, so that pruning is rare; `keep` (the object
// just written) stays. Temporary files older than an hour are left by crashed writers: deleted.
// Another process may prune or read at the same time: every failure here is ignored (a deleted
// object is compiled again).
void prune(const std::string& dir, const std::string& keep) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type time;
    uint64_t size;
    fs::path path;
  };
  std::vector<Entry> objects;
  uint64_t total = 0;
  auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2) || !it->is_regular_file(e2)) continue;
    std::string name = it->path().filename().string();
    bool object = is_object_name(name), temp = is_temp_name(name);
    if (!object && !temp) continue;  // not ours
    auto time = it->last_write_time(e2);
    uint64_t size = it->file_size(e2);
    if (e2) continue;
    if (temp) {
      // a writer that crashed before its first bytes leaves an empty file: old enough, it goes too
      if (now - time > std::chrono::hours(1) && (size == 0 || has_magic(it->path()))) fs::remove(it->path(), e2);
      continue;
    }
    if (!has_magic(it->path())) continue;  // named like ours, but not written by graft
    total += size;
    if (it->path().string() != keep) objects.push_back({time, size, it->path()});
  }
  uint64_t limit = cache_limit();
  if (total <= limit) return;
  std::sort(objects.begin(), objects.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& o : objects) {
    if (total <= limit - limit / 4) break;
    std::error_code e2;
    if (fs::remove(o.path, e2)) total -= o.size;
  }
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Reads a whole cache file with one read (a compile in a fresh process reads several).
bool read_whole(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st{};
  bool ok = ::fstat(fd, &st) == 0 && st.st_size >= 0;
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t r = ::read(fd, out.data() + done, out.size() - done);
      if (r < 0 && errno == EINTR) continue;
      ok = r > 0;
      if (ok) done += static_cast<size_t>(r);
    }
  }
  ::close(fd);
  return ok;
}


// Object files on disk, keyed by the module identifier (set to a hash of the IR and the target).
// The directory is read for every module, so that a program (or a test) can move it.
class DiskCache : public llvm::ObjectCache {
 public:
  void notifyObjectCompiled(const llvm::Module* m, llvm::MemoryBufferRef obj) override {
    ++g_compiled;
    std::string dir = cache_dir();
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return;  // a cache that cannot be written is only slower
    const std::string& id = m->getModuleIdentifier();
    auto key = keys_.find(id);
    if (key == keys_.end()) return;
    std::string bytes = make_cache_file(key->second, obj.getBufferStart(), obj.getBufferSize());
    std::string path = dir + "/" + id + ".gko";
    if (!write_file_atomically(dir, path, bytes)) return;
    prune(dir, path);
  }
  // The full key of a module about to be compiled (by its identifier), for its file's header.
  void expect(const std::string& id, const std::string& key) { keys_[id] = key; }
  // Lookups go through jit_load_cached, which validates the file first; LLVM itself never reads it.
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module*) override { return nullptr; }

 private:
  std::map<std::string, std::string> keys_;  // written under the Jit's mutex
};

struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<DiskCache> cache;
  std::mutex mu;
};

[[noreturn]] void llvm_fail(const char* what, llvm::Error err) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << err;
  fail<ValueError>("code generation: ", what, ": ", os.str());
}

// The host CPU and its features, as the JIT compiles for them: part of every cached object's name.
// Cheap (CPUID), unlike starting the JIT.
const std::string& host_target() {
  static const std::string t = [] {
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) llvm_fail("detecting the host CPU", jtmb.takeError());
    return jtmb->getCPU() + " " + jtmb->getFeatures().getString();
  }();
  return t;
}

Jit& jit() {
  static Jit* j = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto* s = new Jit();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) llvm_fail("detecting the host CPU", jtmb.takeError());
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    s->cache = std::make_unique<DiskCache>();
    DiskCache* cache = s->cache.get();
    auto built = llvm::orc::LLJITBuilder()
                     .setJITTargetMachineBuilder(*jtmb)
                     .setCompileFunctionCreator([cache](llvm::orc::JITTargetMachineBuilder b)
                                                    -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                       auto tm = b.createTargetMachine();
                       if (!tm) return tm.takeError();
                       return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(std::move(*tm), cache);
                     })
                     .create();
    if (!built) llvm_fail("starting the JIT", built.takeError());
    s->lljit = std::move(*built);
    return s;  // leaked on purpose: kernels stay valid until the process exits
  }();
  return *j;
}

}  // namespace

std::string jit_target() { return host_target(); }

namespace {

std::string module_id(const std::string& key) {
  char id[40];
  std::snprintf(id, sizeof id, "k%016llx", static_cast<unsigned long long>(fnv1a(key + "|" + host_target())));
  return id;
}

// Cached objects are linked into the process by LLVM's RuntimeDyld alone: starting the ORC JIT (its
// target machine, execution session and linking layer) costs more than loading a program's kernels,
// and a process whose kernels are all cached never needs it. Loaded code stays until exit.
struct Loader {
  std::mutex mu;
  std::vector<std::unique_ptr<llvm::SectionMemoryManager>> memory;
  std::vector<std::unique_ptr<llvm::RuntimeDyld>> linkers;
};

Loader& loader() {
  static Loader* l = [] {
    llvm::sys::DynamicLibrary::LoadLibraryPermanently(nullptr);  // resolve libm and libc symbols in the process
    return new Loader();
  }();
  return *l;
}

// The addresses of `symbols` in `object`, or an empty vector if it cannot be linked.
std::vector<void*> link_object(const llvm::object::ObjectFile& object, const std::vector<std::string>& symbols) {
  Loader& l = loader();
  std::lock_guard<std::mutex> lk(l.mu);
  auto mm = std::make_unique<llvm::SectionMemoryManager>();
  auto dyld = std::make_unique<llvm::RuntimeDyld>(*mm, *mm);  // the memory manager resolves process symbols
  dyld->loadObject(object);
  if (dyld->hasError()) return {};
  dyld->resolveRelocations();
  if (dyld->hasError()) return {};
  std::string err;
  if (mm->finalizeMemory(&err)) return {};
  std::vector<void*> out;
  for (auto& name : symbols) {
    llvm::JITEvaluatedSymbol sym = dyld->getSymbol(name);
    if (!sym.getAddress()) return {};
    out.push_back(reinterpret_cast<void*>(sym.getAddress()));
  }
  l.memory.push_back(std::move(mm));
  l.linkers.push_back(std::move(dyld));
  return out;
}

// One JIT library per module: names of different modules never clash.
llvm::orc::JITDylib& new_library(Jit& j) {
  static std::atomic<int> counter{0};
  auto& lib = j.lljit->getExecutionSession().createBareJITDylib("m" + std::to_string(counter++));
  lib.addToLinkOrder(j.lljit->getMainJITDylib());
  return lib;
}

}  // namespace

void cache_put(const std::string& key, const std::string& payload, const std::string& ext) {
  std::string dir = cache_dir();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  std::string full = key + "|" + host_target();
  std::string path = dir + "/" + module_id(key) + "." + ext;
  if (write_file_atomically(dir, path, make_cache_file(full, payload.data(), payload.size()))) prune(dir, path);
}

std::optional<std::string> cache_get(const std::string& key, const std::string& ext) {
  std::string dir = cache_dir();
  if (dir.empty()) return std::nullopt;
  std::string path = dir + "/" + module_id(key) + "." + ext;
  std::string bytes;
  if (!read_whole(path, bytes)) return std::nullopt;
  auto where = cached_object_in(bytes, key + "|" + host_target());
  if (!where) return std::nullopt;
  std::error_code ec;  // recently used (pruning deletes the least recently used first)
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  return bytes.substr(where->first, where->second);
}

std::vector<void*> jit_load_cached(const std::string& key, const std::vector<std::string>& symbols) {
  std::string dir = cache_dir();
  if (dir.empty()) return {};
  std::string path = dir + "/" + module_id(key) + ".gko";
  std::string bytes;
  if (!read_whole(path, bytes)) return {};
  // a damaged file (truncated, overwritten, written for another key) is compiled again, never trusted
  auto where = cached_object_in(bytes, key + "|" + host_target());
  if (!where) return {};
  // copied into a buffer of its own: the object follows a key of any length in the file, and LLVM
  // parses only objects aligned as their headers ask ("Insufficient alignment" otherwise)
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(bytes.data() + where->first, where->second));
  auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return {};
  }
  std::vector<void*> out = link_object(**obj, symbols);  // copies the sections: `bytes` may go
  if (out.empty()) return {};  // an unlinkable object is compiled again
  ++g_hits;
  // recently used: pruning deletes the objects used least recently
  std::error_code ec;
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  return out;
}

std::vector<void*> jit_compile(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
                               const std::vector<std::string>& symbols, const std::string& key) {
  Jit& j = jit();
#ifndef NDEBUG
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*module, &es)) fail<ValueError>("code generation: invalid module: ", es.str());
#endif
  std::string id = module_id(key);
  module->setModuleIdentifier(id);  // names the object in the disk cache
  std::lock_guard<std::mutex> lk(j.mu);
  j.cache->expect(id, key + "|" + host_target());
  auto& lib = new_library(j);
  if (auto e = j.lljit->addIRModule(lib, llvm::orc::ThreadSafeModule(std::move(module), std::move(context))))
    llvm_fail("adding a module", std::move(e));
  std::vector<void*> out;
  for (auto& name : symbols) {
    auto sym = j.lljit->lookup(lib, name);
    if (!sym) llvm_fail("looking up a kernel", sym.takeError());
    out.push_back(reinterpret_cast<void*>(sym->getAddress()));
  }
  return out;
}

#endif

}  // namespace graft::cpu
