#include "graft/backend/cpu/llvm_jit.h"
#include "graft/core/env.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
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

#ifndef GRAFT_HAVE_LLVM

bool have_llvm_jit() { return false; }
std::vector<void*> jit_load_cached(const std::string&, const std::vector<std::string>&) { return {}; }
std::vector<void*> jit_compile(std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>,
                               const std::vector<std::string>&, const std::string&) {
  fail<NotImplementedError>("code generation: graft was built without LLVM");
}
std::string jit_target() { return "none"; }

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
    if (!it->is_regular_file(e2)) continue;
    std::string name = it->path().filename().string();
    auto time = it->last_write_time(e2);
    uint64_t size = it->file_size(e2);
    if (e2) continue;
    if (name.find(".tmp") != std::string::npos) {
      if (now - time > std::chrono::hours(1)) fs::remove(it->path(), e2);
      continue;
    }
    if (name.size() < 3 || name[0] != 'k' || name.substr(name.size() - 2) != ".o") continue;  // not ours
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
    std::string path = dir + "/" + m->getModuleIdentifier() + ".o";
    std::string tmp = path + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(&obj)) + std::to_string(serial_++);
    {
      std::ofstream f(tmp, std::ios::binary);
      f.write(obj.getBufferStart(), static_cast<std::streamsize>(obj.getBufferSize()));
      if (!f) return;
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      return;
    }
    prune(dir, path);
  }
  // Lookups go through jit_load_cached, which validates the file first; LLVM itself never reads it.
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module*) override { return nullptr; }

 private:
  std::atomic<uint64_t> serial_{0};
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

std::vector<void*> jit_load_cached(const std::string& key, const std::vector<std::string>& symbols) {
  std::string dir = cache_dir();
  if (dir.empty()) return {};
  std::string path = dir + "/" + module_id(key) + ".o";
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) return {};
  // a damaged file (truncated, overwritten) is compiled again rather than trusted
  auto obj = llvm::object::ObjectFile::createObjectFile((*buf)->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return {};
  }
  std::vector<void*> out = link_object(**obj, symbols);
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
  module->setModuleIdentifier(module_id(key));  // names the object in the disk cache
  std::lock_guard<std::mutex> lk(j.mu);
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
