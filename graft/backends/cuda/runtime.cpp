#include "graft/backends/cuda/runtime.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "graft/backends/cuda/kernel_cache.h"
#include "graft/backends/cuda/libraries.h"
#include "graft/core/backend.h"
#include "graft/core/env.h"
#include "graft/core/error.h"

namespace graft::cuda {

namespace {

constexpr int kMaxDevices = 16;
std::atomic<int64_t> g_compiled{0}, g_disk_hits{0}, g_launches{0};
std::atomic<int> g_tf32{-1};

struct Probe {
  int count = 0;
  std::string why;
};
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    if (r.why = lib::unavailable(lib::Library::cudart); !r.why.empty()) return r;
    cudaError_t e = lib::cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      r.count = 0;
      r.why = std::string("the CUDA runtime found no usable GPU (") + lib::cudaGetErrorName(e) + ": " +
              lib::cudaGetErrorString(e) + ")";
      lib::cudaGetLastError();  // not sticky: clear it
    } else if (r.count == 0) {
      r.why = "the CUDA driver shows no GPU";
    }
    return r;
  }();
  return p;
}

void set_device(int device) {
  if (probe().count > 1) check(lib::cudaSetDevice(device), "cudaSetDevice");
}

class Memory final : public DeviceMemory {
 public:
  explicit Memory(int device) : device_(device) {}
  void* raw_alloc(size_t n) override {
    set_device(device_);
    void* p = nullptr;
    cudaError_t e = lib::cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      lib::cudaGetLastError();
      return nullptr;
    }
    check(e, "cudaMalloc");
    return p;
  }
  void raw_free(void* p) override {
    set_device(device_);
    lib::cudaFree(p);  // synchronizes with the device: no queued kernel still reads p
  }
  std::string name() const override { return "cuda:" + std::to_string(device_); }

 private:
  int device_;
};

// Per-device state, made on first use and never destroyed (buffers may be freed during exit).
struct DeviceState {
  int index = 0;
  cudaStream_t stream = nullptr;
  std::unique_ptr<Memory> memory;
  std::unique_ptr<CachingAllocator> alloc;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int arch = 0, sms = 0;
  std::mutex mu;  // kernels map
  std::unordered_map<std::string, const void*> kernels;
};

DeviceState& state(int device) {
  static std::array<std::atomic<DeviceState*>, kMaxDevices> states{};
  static std::mutex mu;
  if (device < 0 || device >= kMaxDevices || device >= probe().count) {
    if (probe().count == 0) fail<ValueError>("cuda:", device, " is not available: ", probe().why);
    fail<ValueError>("cuda:", device, " does not exist: the driver shows ", probe().count, " GPU(s)");
  }
  DeviceState* s = states[static_cast<size_t>(device)].load(std::memory_order_acquire);
  if (s) return *s;
  std::lock_guard<std::mutex> lk(mu);
  s = states[static_cast<size_t>(device)].load();
  if (s) return *s;
  s = new DeviceState();
  s->index = device;
  check(lib::cudaSetDevice(device), "cudaSetDevice");
  check(lib::cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  int major = 0, minor = 0;
  check(lib::cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check(lib::cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  check(lib::cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  s->arch = major * 10 + minor;
  s->memory = std::make_unique<Memory>(device);
  bool caching = env::flag("GRAFT_CUDA_CACHING", true);
  auto limit = static_cast<size_t>(env::integer("GRAFT_CUDA_MEMORY_LIMIT", 0, 0, int64_t(1) << 50));
  s->alloc = std::make_unique<CachingAllocator>(*s->memory, caching, limit);
  states[static_cast<size_t>(device)].store(s, std::memory_order_release);
  return *s;
}

void free_cuda(void* p, size_t, Device d) { state(d.index).alloc->release(p); }

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  bool available(int index, std::string* why) const override {
    const Probe& p = probe();
    if (index >= 0 && index < p.count) return true;
    if (why) *why = p.count == 0 ? p.why : "the driver shows " + std::to_string(p.count) + " GPU(s)";
    return false;
  }
  Ref<Buffer> allocate(size_t nbytes, Device d) override {
    DeviceState& s = state(d.index);
    void* p = s.alloc->allocate(nbytes);
    return make_ref<Buffer>(p, nbytes, d, &free_cuda);
  }
  void copy(const void* src, Device from, void* dst, Device to, size_t n) override {
    Device dev = from.is_cpu() ? to : from;
    DeviceState& s = state(dev.index);
    set_device(dev.index);
    if (to.is_cpu()) {
      // the host reads the bytes next: wait for them (and report what the queued work raised)
      check(lib::cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s.stream), "cudaMemcpyAsync (to the host)");
      check(lib::cudaStreamSynchronize(s.stream), "a kernel queued on the device (reported when its result was read)");
    } else if (from.is_cpu()) {
      // from pageable memory the copy has read the source when the call returns
      check(lib::cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s.stream), "cudaMemcpyAsync (to the device)");
    } else {
      if (from.index != to.index) check(lib::cudaStreamSynchronize(state(to.index).stream), "cudaStreamSynchronize");
      check(lib::cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s.stream), "cudaMemcpyAsync (between devices)");
      if (from.index != to.index) check(lib::cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    }
  }
  void synchronize(Device d) override { cuda::synchronize(d.index); }
};

std::string nvrtc_log(nvrtcProgram prog) {
  size_t n = 0;
  lib::nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) lib::nvrtcGetProgramLog(prog, log.data());
  return log;
}

void nvrtc_check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) fail<Error>("NVRTC ", what, ": ", lib::nvrtcGetErrorString(r));
}

}  // namespace

int device_count() { return probe().count; }
std::string unavailable_reason() { return probe().why; }

Backend& runtime() {
  static CudaBackend* backend = new CudaBackend();  // never destroyed: arrays may be freed during exit
  return *backend;
}

void check(int err, const char* what) {
  auto e = static_cast<cudaError_t>(err);
  if (e == cudaSuccess) return;
  lib::cudaGetLastError();  // clear a non-sticky error so later calls are not blamed
  if (e == cudaErrorMemoryAllocation) fail<MemoryError>("CUDA ", what, ": out of device memory");
  fail<Error>("CUDA error in ", what, ": ", lib::cudaGetErrorName(e), " (", lib::cudaGetErrorString(e), ")",
              e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorAssert
                  ? "; the GPU context is now unusable: the process must restart to use the GPU"
                  : "");
}

MemoryStats memory_stats(int device) { return state(device).alloc->stats(); }
void empty_cache(int device) {
  synchronize(device);
  state(device).alloc->empty_cache();
}
void synchronize(int device) {
  DeviceState& s = state(device);
  set_device(device);
  check(lib::cudaStreamSynchronize(s.stream), "a kernel queued on the device (reported at synchronization)");
}

void* stream(int device) { return state(device).stream; }
int arch(int device) { return state(device).arch; }
int multiprocessor_count(int device) { return state(device).sms; }

int nvrtc_version() {
  int major = 0, minor = 0;
  lib::nvrtcVersion(&major, &minor);
  return major * 100 + minor;
}

std::string compile_cubin(const std::string& source, const std::string& name, int arch) {
  nvrtcProgram prog;
  nvrtc_check(lib::nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  std::string arch_opt = "--gpu-architecture=sm_" + std::to_string(arch);
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "--use_fast_math=false"};
  nvrtcResult r = lib::nvrtcCompileProgram(prog, 3, opts);
  if (r != NVRTC_SUCCESS) {
    std::string log = nvrtc_log(prog);
    lib::nvrtcDestroyProgram(&prog);
    fail<Error>("NVRTC could not compile the GPU kernel ", name, " for sm_", arch, ": ", lib::nvrtcGetErrorString(r), "\n",
                log);
  }
  size_t n = 0;
  nvrtc_check(lib::nvrtcGetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
  std::string cubin(n, '\0');
  nvrtc_check(lib::nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  lib::nvrtcDestroyProgram(&prog);
  ++g_compiled;
  return cubin;
}

const void* kernel(const std::string& source, const std::string& name, int device) {
  DeviceState& s = state(device);
  std::string key = name + '\n' + source;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.kernels.find(key);
    if (it != s.kernels.end()) return it->second;
  }
  int v = nvrtc_version();
  std::string file = kernel_file_name(name, s.arch, v / 100, v % 100, source);
  std::string cubin;
  if (auto hit = kernel_cache_get(file, key)) {
    cubin = std::move(*hit);
    ++g_disk_hits;
  } else {
    cubin = compile_cubin(source, name, s.arch);
    kernel_cache_put(file, key, cubin);
  }
  set_device(device);
  cudaLibrary_t lib;
  check(lib::cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData");
  cudaKernel_t k;
  check(lib::cudaLibraryGetKernel(&k, lib, name.c_str()), "cudaLibraryGetKernel");
  std::lock_guard<std::mutex> lk(s.mu);
  return s.kernels.emplace(key, reinterpret_cast<const void*>(k)).first->second;
}

void launch(const void* fn, unsigned grid, unsigned block, void** args, size_t shared_bytes, int device) {
  DeviceState& s = state(device);
  set_device(device);
  check(lib::cudaLaunchKernel(fn, dim3(grid), dim3(block), args, shared_bytes, s.stream), "cudaLaunchKernel");
  g_launches.fetch_add(1, std::memory_order_relaxed);
}

void* blas_handle(int device) {
  DeviceState& s = state(device);
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.blas) {
    set_device(device);
    if (lib::cublasCreate(&s.blas) != CUBLAS_STATUS_SUCCESS) fail<Error>("cuBLAS: cublasCreate failed on cuda:", device);
    lib::cublasSetStream(s.blas, s.stream);
    s.workspace_bytes = size_t(32) << 20;
    s.workspace = s.alloc->allocate(s.workspace_bytes);
    lib::cublasSetWorkspace(s.blas, s.workspace, s.workspace_bytes);
  }
  return s.blas;
}

void* blas_workspace(int device, size_t* nbytes) {
  blas_handle(device);
  DeviceState& s = state(device);
  *nbytes = s.workspace_bytes;
  return s.workspace;
}

bool tf32_allowed() {
  int v = g_tf32.load();
  if (v < 0) {
    v = env::flag("GRAFT_ALLOW_TF32", false) ? 1 : 0;
    g_tf32.store(v);
  }
  return v == 1;
}
void allow_tf32(bool on) { g_tf32.store(on ? 1 : 0); }

KernelStats kernel_stats() { return {g_compiled.load(), g_disk_hits.load(), g_launches.load()}; }

}  // namespace graft::cuda
