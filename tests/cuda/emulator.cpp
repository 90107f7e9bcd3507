#include "cuda/emulator.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace graft::testing {

namespace {

// CUDA's built-ins as host code (see emulator.h).
const char* kHostCuda = R"(
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>
using namespace std;
struct g_dim3 { unsigned x = 0, y = 1, z = 1; };
namespace g_emu {
struct Block { std::barrier<>* bar; std::vector<unsigned long long>* xchg; };
inline thread_local g_dim3 tid, bid;
inline g_dim3 bdim, gdim;
inline thread_local Block* blk;
}
#define threadIdx g_emu::tid
#define blockIdx g_emu::bid
#define blockDim g_emu::bdim
#define gridDim g_emu::gdim
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
inline void __syncthreads() { g_emu::blk->bar->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { __syncthreads(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int o) {
  static_assert(sizeof(T) <= 8, "shuffles move up to 8 bytes");
  auto& x = *g_emu::blk->xchg;
  unsigned t = g_emu::tid.x;
  unsigned long long w = 0;
  std::memcpy(&w, &v, sizeof(T));
  x[t] = w;
  __syncthreads();
  unsigned long long pw = x[t ^ (unsigned)o];
  __syncthreads();
  T r;
  std::memcpy(&r, &pw, sizeof(T));
  return r;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
template <class T> inline T erfinv(T y) {
  if (y <= (T)-1) return y == (T)-1 ? -INFINITY : NAN;
  if (y >= (T)1) return y == (T)1 ? INFINITY : NAN;
  double x = 0;
  for (int i = 0; i < 60; ++i) x -= (std::erf(x) - (double)y) / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  return (T)x;
}
template <class T, class U> T atomicAdd(T* p, U v) { return std::atomic_ref<T>(*p).fetch_add((T)v); }
template <class T> T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p); T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T> T atomicCAS(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}
template <class... P> void g_emu_invoke(void (*f)(P...), void** a) {
  [&]<size_t... I>(std::index_sequence<I...>) { f(*static_cast<std::remove_cvref_t<P>*>(a[I])...); }(
      std::index_sequence_for<P...>{});
}
template <class... P> void g_emu_launch(void (*f)(P...), unsigned grid, unsigned block, void** args) {
  g_emu::bdim = {block, 1, 1};
  g_emu::gdim = {grid, 1, 1};
  std::barrier<> bar(block);
  std::vector<unsigned long long> xchg(block);
  g_emu::Block b{&bar, &xchg};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < block; ++t)
    ts.emplace_back([&, t] {
      g_emu::blk = &b;
      g_emu::tid = {t, 0, 0};
      for (unsigned k = 0; k < grid; ++k) {
        g_emu::bid = {k, 0, 0};
        g_emu_invoke(f, args);
        bar.arrive_and_wait();
      }
    });
  for (auto& t : ts) t.join();
}
)";

constexpr const char* kFlags = "-std=c++20 -O1 -w -fPIC -pthread";

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + cmd);
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  *status = pclose(p);
  return out;
}

const char* host_compiler() {
#ifdef GRAFT_TEST_CXX
  return GRAFT_TEST_CXX;
#else
  return nullptr;
#endif
}

// The header above, precompiled once per process (a module then compiles in about half the time);
// "" when that failed (modules then parse it themselves).
const std::string& shim_dir() {
  static const std::string* dir = new std::string([] {  // never destroyed: the exit handler reads it
    std::string d = std::filesystem::temp_directory_path() / ("graft_emu_pch_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d + "/host_cuda.h") << "#pragma once\n" << kHostCuda;
    int status = 0;
    run_command(std::string(host_compiler()) + " " + kFlags + " -x c++-header -o " + d + "/host_cuda.h.gch " + d + "/host_cuda.h",
                &status);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(shim_dir(), ec); });
    return d;
  }());
  return *dir;
}

}  // namespace

bool EmulatedModule::available() { return host_compiler() != nullptr && std::filesystem::exists(host_compiler()); }

EmulatedModule::EmulatedModule(const std::vector<std::string>& sources, const std::vector<std::string>& names) {
  if (!available()) throw std::runtime_error("no host C++ compiler for the emulator");
  char tmpl[] = "/tmp/graft_emu_XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::string src = "#include \"host_cuda.h\"\n";
  for (size_t i = 0; i < sources.size(); ++i) {
    // each kernel in a namespace of its own (every source repeats the prelude), its name made unique
    std::string id = std::to_string(i);
    src += "#define " + names[i] + " " + names[i] + "_" + id + "\nnamespace g_k" + id + " {\n" + sources[i] +
           "\n}\nextern \"C\" void g_emu_entry_" + id + "(unsigned g, unsigned b, void** a) { g_emu_launch(&g_k" + id +
           "::" + names[i] + ", g, b, a); }\n#undef " + names[i] + "\n";
  }
  std::string cpp = dir_ + "/kernels.cpp", so = dir_ + "/kernels.so";
  std::ofstream(cpp) << src;
  int status = 0;
  std::string log = run_command(std::string(host_compiler()) + " " + kFlags + " -shared -I" + shim_dir() + " -o " + so + " " + cpp,
                                &status);
  if (status != 0) throw std::runtime_error("the emulator could not compile the kernels:\n" + log + "\n" + src);
  handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  for (size_t i = 0; i < sources.size(); ++i) {
    void* f = dlsym(handle_, ("g_emu_entry_" + std::to_string(i)).c_str());
    if (!f) throw std::runtime_error("the emulated module lacks kernel " + names[i]);
    entries_.push_back(reinterpret_cast<void (*)(unsigned, unsigned, void**)>(f));
  }
  // loaded: the files can go (modules kept on cached programs may outlive the test's cleanup)
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

EmulatedModule::~EmulatedModule() {
  if (handle_) dlclose(handle_);
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

void EmulatedModule::launch(size_t i, unsigned grid, unsigned block, void** args) const {
  entries_.at(i)(grid, block, args);
}

}  // namespace graft::testing
