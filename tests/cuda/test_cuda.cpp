// The CUDA backend. Host logic (the caching allocator through a fake device, the kernel cache's
// files, every generated kernel compiled with NVRTC for sm_90) runs everywhere; the GPU tests skip
// with one line when there is no GPU. On a GPU, every conformance row runs on the device and is
// compared with the CPU (values, forward and reverse derivatives, vmap, jit).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "graft/backends/cuda/allocator.h"
#include "graft/backends/cuda/kernel_cache.h"
#include "graft/runtime/dist/mpi.h"
#include "graft/backends/cuda/kernels.h"
#include "cuda/device_checks.h"
#ifdef GRAFT_HAVE_CUDA
#include "graft/backends/cuda/runtime.h"
#endif

namespace graft::testing {
namespace {

using namespace graft::cuda;

// ---- the caching allocator through a fake device --------------------------------------------------------
class FakeMemory final : public DeviceMemory {
 public:
  explicit FakeMemory(size_t capacity) : capacity_(capacity) {}
  void* raw_alloc(size_t n) override {
    if (used_ + n > capacity_) return nullptr;
    used_ += n;
    ++allocs;
    void* p = std::malloc(n);
    sizes_[p] = n;
    return p;
  }
  void raw_free(void* p) override {
    used_ -= sizes_.at(p);
    sizes_.erase(p);
    ++frees;
    std::free(p);
  }
  std::string name() const override { return "fake:0"; }
  size_t used() const { return used_; }
  int allocs = 0, frees = 0;

 private:
  size_t capacity_, used_ = 0;
  std::map<void*, size_t> sizes_;
};

TEST(CudaAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) - 1), size_t(1) << 20);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t(2) << 20);
}

TEST(CudaAllocator, ReusesFreedBlocksOfItsClass) {
  FakeMemory mem(size_t(64) << 20);
  CachingAllocator a(mem, true, 0);
  void* p = a.allocate(1000);
  EXPECT_EQ(a.block_size(p), 1024u);
  a.release(p);
  EXPECT_EQ(a.stats().cached_bytes, 1024);
  void* q = a.allocate(900);  // same class: the same block, no device call
  EXPECT_EQ(q, p);
  EXPECT_EQ(mem.allocs, 1);
  EXPECT_EQ(a.stats().num_cache_hits, 1);
  void* big = a.allocate(4 << 20);
  a.release(big);
  void* small = a.allocate(1 << 20);  // a cached 4 MiB block is far larger: not used for 1 MiB
  EXPECT_NE(small, big);
  EXPECT_EQ(mem.allocs, 3);
  a.release(q);
  a.release(small);
  MemoryStats s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, s.cached_bytes);
  EXPECT_EQ(s.peak_allocated_bytes, 1024 + (4 << 20));
  a.empty_cache();
  EXPECT_EQ(mem.used(), 0u);
  EXPECT_EQ(a.stats().reserved_bytes, 0);
}

TEST(CudaAllocator, OutOfMemoryEmptiesTheCacheThenRaises) {
  FakeMemory mem(size_t(8) << 20);
  CachingAllocator a(mem, true, 0);
  void* p = a.allocate(6 << 20);
  a.release(p);  // cached: the device is full
  void* q = a.allocate(3 << 20);  // does not fit beside the cached block: the cache is emptied, then it fits
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(a.stats().num_ooms, 1);
  EXPECT_EQ(a.stats().cached_bytes, 0);
  expect_throws<MemoryError>([&] { a.allocate(16 << 20); }, "out of memory on fake:0");
  a.release(q);
}

TEST(CudaAllocator, CapAndCachingOff) {
  FakeMemory mem(size_t(64) << 20);
  CachingAllocator capped(mem, true, size_t(4) << 20);
  void* p = capped.allocate(3 << 20);
  expect_throws<MemoryError>([&] { capped.allocate(2 << 20); }, "GRAFT_CUDA_MEMORY_LIMIT");
  capped.release(p);
  FakeMemory mem2(size_t(64) << 20);
  CachingAllocator off(mem2, false, 0);
  void* q = off.allocate(100);
  off.release(q);
  EXPECT_EQ(mem2.frees, 1);  // freed at once: nothing cached (for compute-sanitizer)
  EXPECT_EQ(off.stats().cached_bytes, 0);
  expect_throws<ValueError>([&] { off.release(q); }, "not a live block");
}

// ---- the kernel cache's files ----------------------------------------------------------------------------
TEST(CudaKernelCache, KeyAndAtomicFiles) {
  std::string f = kernel_file_name("ew_add_f32", 90, 13, 0, "source text");
  EXPECT_EQ(f.rfind("ew_add_f32_sm90_nvrtc13.0_11_", 0), 0u) << f;
  EXPECT_NE(f, kernel_file_name("ew_add_f32", 80, 13, 0, "source text"));
  EXPECT_NE(f, kernel_file_name("ew_add_f32", 90, 13, 1, "source text"));
  EXPECT_NE(f, kernel_file_name("ew_add_f32", 90, 13, 0, "source texT"));
  auto dir = std::filesystem::temp_directory_path() / ("graft_cuda_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("GRAFT_CUDA_CACHE_DIR", dir.c_str(), 1);
  EXPECT_FALSE(kernel_cache_get(f, "key").has_value());
  ASSERT_TRUE(kernel_cache_put(f, "key", "CUBIN-BYTES"));
  EXPECT_EQ(kernel_cache_get(f, "key").value_or(""), "CUBIN-BYTES");
  EXPECT_FALSE(kernel_cache_get(f, "other key").has_value());
  {  // a truncated file is compiled again, never loaded
    auto path = dir / f;
    auto n = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, n - 3);
  }
  EXPECT_FALSE(kernel_cache_get(f, "key").has_value());
  for (auto& e : std::filesystem::directory_iterator(dir))  // no temporary left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
  ::setenv("GRAFT_CUDA_CACHE_DIR", "off", 1);
  EXPECT_FALSE(kernel_cache_put(f, "key", "x"));
  ::unsetenv("GRAFT_CUDA_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

// ---- devices without a GPU ---------------------------------------------------------------------------------
TEST(CudaDevices, ParseAndDefault) {
  EXPECT_EQ(parse_device("cuda:1"), Device::cuda(1));
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  expect_throws<ValueError>([] { parse_device("tpu:0"); }, "unknown device 'tpu:0'");
  expect_throws<ValueError>([] { parse_device("cuda:x"); }, "unknown device");
  EXPECT_EQ(default_device(), Device::cpu());
  {
    DefaultDevice g(Device::cuda(0));
    EXPECT_EQ(default_device(), Device::cuda(0));
  }
  EXPECT_EQ(default_device(), Device::cpu());
}

bool have_gpu() {
#ifdef GRAFT_HAVE_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}
[[maybe_unused]] std::string no_gpu_why() {
#ifdef GRAFT_HAVE_CUDA
  return "no GPU: " + cuda::unavailable_reason();
#else
  return "graft built without CUDA";
#endif
}
#define REQUIRE_GPU()                \
  if (!have_gpu()) {                 \
    GTEST_SKIP() << no_gpu_why();    \
  }                                  \
  static_assert(true)

TEST(CudaDevices, WithoutAGpuTheErrorSaysWhy) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  Array x = concrete({1, 2, 3}, {3});
  expect_throws<ValueError>([&] { device_put(x, Device::cuda()); }, "cuda:0 is not available");
  DefaultDevice g(Device::cuda());
  expect_throws<ValueError>([&] { (void)(x + x); }, "not available");
}

#ifdef GRAFT_HAVE_CUDA
// Without a GPU no NCCL communicator can be made: collectives on GPU arrays would go through the host
// (device_communicator gives none), and asking for one directly is a graft::Error saying why.
TEST(CudaNccl, WithoutAGpuCollectivesGoThroughTheHost) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(device_communicator(self_communicator(), Device::cuda()), nullptr);
  EXPECT_THROW(cuda::nccl_communicator(self_communicator(), 0), Error);
}

// graft opens CUDA's libraries on first use: a process that never multiplies matrices on a GPU never
// loads cuBLAS (its constructors cost a third of a second at every start when it was linked), and every
// function graft calls is in the installed toolkit.
TEST(CudaLibraries, OpenedOnFirstUseWithEveryFunctionGraftCalls) {
  if (!have_gpu()) {  // with a GPU, earlier tests may have run GEMMs
    std::ifstream maps("/proc/self/maps");
    std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("libcublas"), std::string::npos);
  }
  EXPECT_EQ(cuda::missing_library_functions(), "");
}

// ---- every generated kernel compiles (NVRTC needs no GPU) -------------------------------------------------
constexpr DType kAll[] = {DType::bool_, DType::i8,  DType::i16, DType::i32,  DType::i64, DType::u8, DType::u16,
                          DType::u32,   DType::u64, DType::f16, DType::bf16, DType::f32, DType::f64};

TEST(CudaKernels, EveryElementwiseKernelCompilesForSm90) {
  int compiled = 0, complex = 0;
  std::vector<DType> types(std::begin(kAll), std::end(kAll));
  types.push_back(DType::c64);
  types.push_back(DType::c128);
  for (const std::string& prim : cuda_kernels::elementwise_prims()) {
    for (DType d : types) {
      auto expr = cuda_kernels::elementwise_expr(prim, d);
      if (!expr) continue;
      bool cmp = prim == "eq" || prim == "ne" || prim == "lt" || prim == "le" || prim == "gt" || prim == "ge" ||
                 prim == "is_finite";
      DType out = cmp ? DType::bool_ : d;
      if (is_complex(d) && (prim == "real" || prim == "imag" || prim == "abs")) out = real_dtype(d);
      if (prim == "complex") out = complex_dtype(d);
      complex += is_complex(d) || is_complex(out);
      std::vector<DType> in(static_cast<size_t>(cuda_kernels::elementwise_arity(prim)), d);
      if (prim == "select_n") in[0] = DType::bool_;
      std::string name = "k_" + prim + "_" + std::string(short_name(d));
      SCOPED_TRACE(name);
      std::string src = cuda_kernels::elementwise_source(name, *expr, in, d, out, prim == "select_n");
      EXPECT_NO_THROW(cuda::compile_cubin(src, name, 90));
      ++compiled;
    }
  }
  EXPECT_GT(compiled, 250);
  EXPECT_GE(complex, 40);  // the complex arithmetic, parts, comparisons and elementary functions
}

TEST(CudaKernels, ConversionsLayoutAndReductionsCompileForSm90) {
  for (DType from : kAll)
    for (DType to : {DType::bool_, DType::i32, DType::u8, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}) {
      if (from == to) continue;
      std::string name = "convert_" + std::string(short_name(from)) + "_" + std::string(short_name(to));
      SCOPED_TRACE(name);
      EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::convert_source(name, from, to), name, 90));
    }
  // complex: part by part, the real part, either part nonzero, a real value with imaginary part 0
  for (DType z : {DType::c64, DType::c128})
    for (DType t :
         {DType::bool_, DType::i32, DType::f16, DType::bf16, DType::f32, DType::f64, DType::c64, DType::c128})
      for (auto [from, to] : {std::pair{z, t}, std::pair{t, z}}) {
        if (from == to) continue;
        std::string name = "convert_" + std::string(short_name(from)) + "_" + std::string(short_name(to));
        SCOPED_TRACE(name);
        EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::convert_source(name, from, to), name, 90));
      }
  for (int b : {1, 2, 4, 8, 16}) {
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::strided_copy_source("sc", b), "sc", 90));
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::fill_source("fill", b), "fill", 90));
  }
  for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::u8, DType::i64}) {
    for (const char* op : {"sum", "max", "min", "prod", "argmax", "argmin"}) {
      std::string name = std::string("r_") + op;
      SCOPED_TRACE(name + " " + std::string(short_name(d)));
      DType out = std::string(op).rfind("arg", 0) == 0 ? DType::i32 : d;
      EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::reduce_source(name, op, d, out), name, 90));
    }
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::iota_source("iota", d), "iota", 90));
  }
  for (DType d : {DType::c64, DType::c128})
    for (const char* op : {"sum", "prod"})
      EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::reduce_source("r", op, d, d), "r", 90))
          << op << " " << short_name(d);
  for (const char* op : {"and", "or", "max", "min"})
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::reduce_source("r", op, DType::bool_, DType::bool_), "r", 90));
  expect_throws<Error>([] { cuda::compile_cubin("this is not CUDA", "bad", 90); }, "NVRTC could not compile");
}

TEST(CudaKernels, IndexedRunningAndRandomKernelsCompileForSm90) {
  EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::threefry_source("tf"), "tf", 90));
  for (DType d : {DType::bool_, DType::i8, DType::i32, DType::u32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64})
    for (const char* op : {"sum", "max", "min"}) {
      if (d == DType::bool_ && std::string(op) == "sum") continue;
      SCOPED_TRACE(std::string(op) + " " + std::string(short_name(d)));
      EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::cumulative_source("cum", op, d), "cum", 90));
    }
  for (DType d : {DType::c64, DType::c128}) {
    auto src = cuda_kernels::scatter_add_source("sa", d);
    ASSERT_TRUE(src.has_value());
    EXPECT_NO_THROW(cuda::compile_cubin(*src, "sa", 90)) << short_name(d);
  }
  for (DType d : kAll) {
    auto src = cuda_kernels::scatter_add_source("sa", d);
    EXPECT_EQ(src.has_value(), d == DType::f32 || d == DType::f64 || d == DType::i32 || d == DType::u32 || d == DType::i64 ||
                                   d == DType::u64);
    if (src) {
      EXPECT_NO_THROW(cuda::compile_cubin(*src, "sa", 90)) << short_name(d);
    }
  }
  for (DType d : kAll)
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::sort_pass_source("sp", {d, DType::i32}), "sp", 90)) << short_name(d);
  EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::scatter_winner_source("sw"), "sw", 90));
  for (DType d : kAll)
    for (const char* op : {"mul", "min", "max"}) {
      auto src = cuda_kernels::scatter_combine_source("sc", op, d);
      EXPECT_EQ(src.has_value(), d != DType::bool_ && (itemsize(d) == 4 || itemsize(d) == 8));
      if (src) {
        EXPECT_NO_THROW(cuda::compile_cubin(*src, "sc", 90)) << op << " " << short_name(d);
      }
    }
  for (int b : {1, 2, 4, 8})
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::scatter_set_source("ss", b), "ss", 90));
  for (int b : {1, 2, 4, 8, 16}) {
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::take_rows_source("tr", b), "tr", 90));
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::gather_source("g", b), "g", 90));
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::dynamic_copy_source("dc", b, {DType::i32, DType::i64}), "dc", 90));
    EXPECT_NO_THROW(cuda::compile_cubin(cuda_kernels::dynamic_copy_source("dc", b, {DType::u8, DType::u64, DType::i16}), "dc", 90));
  }
}
#endif

// ---- on a GPU ---------------------------------------------------------------------------------------------------
#ifdef GRAFT_HAVE_CUDA
TEST(CudaArrays, RoundTripPlacementAndErrors) {
  REQUIRE_GPU();
  check_round_trip_and_placement(Device::cuda());
}

TEST(CudaArrays, MemoryStatsAndOutOfMemory) {
  REQUIRE_GPU();
  cuda::synchronize();
  int64_t before = cuda::memory_stats().allocated_bytes;
  {
    Array a = device_put(ones({1 << 20}, DType::f32), Device::cuda());
    EXPECT_GE(cuda::memory_stats().allocated_bytes, before + (4 << 20));
  }
  EXPECT_EQ(cuda::memory_stats().allocated_bytes, before);
  int64_t hits = cuda::memory_stats().num_cache_hits;
  { Array a = device_put(ones({1 << 20}, DType::f32), Device::cuda()); }
  EXPECT_GT(cuda::memory_stats().num_cache_hits, hits);
  expect_throws<MemoryError>([] { Array::empty_on(Aval({int64_t(1) << 42}, DType::f32), Device::cuda()); }, "out of memory on cuda:0");
  Array ok = device_put(ones({16}, DType::f32), Device::cuda());  // still usable after the error
  EXPECT_EQ(sum(ok).item<float>(), 16.0f);
}

// A kernel that faults is queued and the host goes on; the fault reaches the user as a graft::Error at
// the next synchronization (or the next launch), never as a crash. The fault spoils the CUDA context
// for good, so the test runs in a fresh process (a death test in "threadsafe" style re-executes).
TEST(CudaArraysDeathTest, AsyncKernelErrorsRaiseAtTheNextSynchronization) {
  REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Array x = device_put(ones({1024}, DType::f32), Device::cuda());
        cuda::synchronize();
        const void* fn = cuda::kernel("extern \"C\" __global__ void bad(float* p) { p[1ll << 40] = 1.0f; }", "bad", 0);
        void* p = x.concrete()->data();
        void* args[] = {&p};
        cuda::launch(fn, 1, 1, args, 0, 0);  // returns at once: the fault happens later, on the device
        std::fprintf(stderr, "queued\n");
        try {
          Array y = (x + 1.0f).block_until_ready();
          std::exit(1);
        } catch (const Error& e) {
          std::fprintf(stderr, "caught: %s\n", e.what());
          std::exit(3);
        }
      },
      ::testing::ExitedWithCode(3), "queued\ncaught: .*illegal memory access");
}

TEST(CudaArrays, TransformationsAndControlFlow) {
  REQUIRE_GPU();
  check_transformations_and_control_flow(Device::cuda());
}

TEST(CudaArrays, MainJobStepOnTheDefaultDevice) {
  REQUIRE_GPU();
  check_main_job_step_on_the_default_device(Device::cuda());
}

TEST(CudaArrays, CnnStepAndExportOnTheDefaultDevice) {
  REQUIRE_GPU();
  check_cnn_step_and_export_on_the_default_device(Device::cuda());
}

// NCCL at world size 1 (the lent machine has one GPU): a communicator made through the host's, and
// each collective on device memory.
TEST(CudaNccl, CollectivesOnDeviceMemoryAtWorldSizeOne) {
  REQUIRE_GPU();
  if (!cuda::nccl_unavailable_reason().empty()) GTEST_SKIP() << cuda::nccl_unavailable_reason();
  auto c = cuda::nccl_communicator(self_communicator(), 0);
  EXPECT_EQ(c->kind(), "nccl");
  EXPECT_EQ(c->size(), 1);
  Device d = Device::cuda();
  Array x = device_put(concrete({1, -2, 3, 4.5}, {4}), d);
  Array y = Array::empty_on(x.aval(), d);
  c->allreduce(x.concrete()->data(), y.concrete()->data(), 4, DType::f32, ReduceOp::sum);
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  Array g = Array::empty_on(x.aval(), d);
  c->allgather(x.concrete()->data(), g.concrete()->data(), 4, DType::f32);
  EXPECT_EQ(g.to_vector<float>(), x.to_vector<float>());
  Array s = Array::empty_on(x.aval(), d);
  c->sendrecv(x.concrete()->data(), 0, s.concrete()->data(), 0, 4, DType::f32);
  EXPECT_EQ(s.to_vector<float>(), x.to_vector<float>());
  Array a = Array::empty_on(x.aval(), d);
  c->alltoall(x.concrete()->data(), a.concrete()->data(), 4, DType::f32);
  EXPECT_EQ(a.to_vector<float>(), x.to_vector<float>());
  c->barrier();
  EXPECT_NE(device_communicator(self_communicator(), d), nullptr);
}

// jit on the GPU: the program optimized for devices, its fused loops generated CUDA kernels compiled
// by NVRTC, a donated parameter updated in place
TEST(CudaFusion, JittedProgramsMatchTheCpu) {
  REQUIRE_GPU();
  Device d = Device::cuda();
  check_jitted_training_step(d);
  check_fused_programs(d);
  check_donated_update_in_place(d);
  check_jit_placement(d);
  for (auto& [name, n] : device_fallbacks(Device::cuda().type)) EXPECT_NE(name, "fusion") << "a fused loop ran through the host";
}

// ---- conformance on the device ------------------------------------------------------------------------------
class CudaConformance : public ::testing::TestWithParam<Case> {};

TEST_P(CudaConformance, ValuesMatchTheCpu) {
  REQUIRE_GPU();
  check_values_match_the_cpu(GetParam(), Device::cuda());
}

TEST_P(CudaConformance, DerivativesMatchTheCpu) {
  REQUIRE_GPU();
  if (!GetParam().smooth) GTEST_SKIP() << "no derivative";
  check_derivatives_match_the_cpu(GetParam(), Device::cuda());
}

TEST_P(CudaConformance, VmapAndJitMatchTheCpu) {
  REQUIRE_GPU();
  check_vmap_and_jit_match_the_cpu(GetParam(), Device::cuda());
}

std::string gpu_case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Prims, CudaConformance, ::testing::ValuesIn(device_cases()), gpu_case_name);

// Which primitives still reach the GPU through the host (no kernel yet): printed, and checked against
// the list of those known to have none, so that a new gap shows up here.
TEST(CudaCoverage, PrimitivesWithoutAKernel) {
  REQUIRE_GPU();
  // the real-valued rows (complex reductions, products, sorts and indexed updates still run through the host)
  std::vector<Case> cases = elementwise_cases(), more = structural_cases();
  cases.insert(cases.end(), more.begin(), more.end());
  for (const Case& c : cases) {
    Rng rng(1);
    Inputs in = c.inputs(rng, DType::f32);
    run_case(c, to_device(in, Device::cuda()));
  }
  std::string list = " ";
  for (auto& [name, n] : device_fallbacks(Device::cuda().type)) list += name + " ";
  std::cout << "[ cuda ] primitives run through the host: " << list << "\n";
  for (const char* must : {"add", "mul", "exp", "reduce_sum", "dot_general", "transpose", "broadcast_in_dim", "select_n",
                           "convert_element_type", "argmax", "iota", "concatenate", "slice", "pad", "dynamic_slice",
                           "dynamic_update_slice", "cumsum", "cummax", "threefry2x32", "nextafter", "reduce_window_sum",
                           "reduce_window_max", "select_and_gather_add", "select_and_scatter_add", "conv_general_dilated", "gather",
                           "scatter_add", "scatter", "scatter_max", "sort"})
    EXPECT_EQ(list.find(" " + std::string(must) + " "), std::string::npos) << must << " fell back to the host";
}
#endif

}  // namespace
}  // namespace graft::testing
