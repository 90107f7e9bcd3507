// A simulated device: a backend whose memory is host memory that graft must treat as another
// device's (reading it through raw_data is an error, every primitive runs through host_fallback).
// It runs the device checks everywhere, without a GPU: placement, the transformations and every
// conformance row, so that a path that reads a device array as if it were on the CPU (a compiled
// CPU program handed device operands, say) fails here rather than only on a lent GPU.
//
// Its fused loops are the GPU's: the generated CUDA kernels (graft/backends/cuda/fusion_codegen.h) run on the
// CPU through the emulator (cuda/emulator.h), so that jit on the device — the program optimized for a
// device, its fused kernels, the memory plan — is tested here as a GPU runs it.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "cuda/device_checks.h"
#include "cuda/emulator.h"
#include "graft/backends/backend.h"
#include "graft/backends/cuda/fusion_codegen.h"
#include "graft/compiler/executable.h"
#include "graft/compiler/target.h"
#include "graft/compiler/cpu/fused_kernel.h"

namespace graft::testing {
namespace {

class SimBackend final : public Backend {
 public:
  std::string name() const override { return "sim"; }
  bool available(int index, std::string* why) const override {
    if (index == 0) return true;
    if (why) *why = "the simulated device has one device, sim:0";
    return false;
  }
  Ref<Buffer> allocate(size_t nbytes, Device d) override {
    void* p = std::aligned_alloc(kBufferAlign, (nbytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign + kBufferAlign);
    if (!p) fail<MemoryError>("sim: out of memory");
    return make_ref<Buffer>(p, nbytes, d, [](void* q, size_t, Device) { std::free(q); });
  }
  void copy(const void* src, Device from, void* dst, Device to, size_t n) override {
    if (n) std::memcpy(dst, src, n);
    if (from.is_cpu() && !to.is_cpu()) copies_in.fetch_add(1);
  }
  std::atomic<int64_t> copies_in{0};  // host -> device copies
  void synchronize(Device) override {}
};

Device sim();
SimBackend& sim_backend();

// Fused loops on the simulated device: the body's CUDA kernel, emulated (compiled once per body and
// kept on it).
struct SimFused {
  std::shared_ptr<cuda::CudaFusedKernel> kernel;  // null: the generator refused the body
  std::shared_ptr<EmulatedModule> module;
  std::shared_ptr<std::vector<Array>> consts;  // the body's constants on the device, moved once (as CUDA's)
};
std::mutex g_sim_mu;
int64_t g_sim_launches = 0;

Arrays sim_fusion(const Primitive&, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  const ClosedJaxpr& body = compiler::fusion_body(params);
  auto f = body.derived<SimFused>("sim_fused_kernel", [&] {
    SimFused s;
    if (auto k = cuda::cuda_fused_kernel(body)) {
      s.module = std::make_shared<EmulatedModule>(std::vector<std::string>{k->source},
                                                  std::vector<std::string>{cuda::CudaFusedKernel::kName});
      s.kernel = std::make_shared<cuda::CudaFusedKernel>(std::move(*k));
      s.consts = std::make_shared<std::vector<Array>>();
      for (const Array& c : body.consts) s.consts->push_back(device_put(c, sim()));
    }
    return s;
  });
  if (!f->kernel) {  // op by op, each primitive on the device
    DefaultDevice here(sim());
    TraceScope eager(eval_trace());
    return eval_jaxpr(body, in);
  }
  for (const Array& x : in)  // a device's kernels read device memory only
    if (x.device() != sim()) fail<ValueError>("sim fusion: an operand lives on ", x.device().str());
  std::vector<void*> ptrs;
  for (const Array& c : *f->consts) ptrs.push_back(c.concrete()->data());
  for (const Array& x : in) ptrs.push_back(x.concrete()->data());
  Arrays res = cuda::fused_outputs(*f->kernel, body.consts.size(), in, outs, sim());
  for (const Array& r : res) ptrs.push_back(r.concrete()->data());
  std::vector<void*> args;
  for (void*& p : ptrs) args.push_back(&p);
  f->module->launch(0, static_cast<unsigned>(std::min<int64_t>(f->kernel->units, 4)),
                    static_cast<unsigned>(f->kernel->block), args.data());
  std::lock_guard<std::mutex> lk(g_sim_mu);
  ++g_sim_launches;
  return res;
}

// Registered as any backend is: one descriptor (graft/backends/backend.h). Its kernels are the
// decompositions and the host's; its fused loops the emulated CUDA kernels; its programs, like a GPU's,
// fold GEMM epilogues.
SimBackend& sim_backend() {
  static SimBackend backend;
  return backend;
}

int16_t sim_type() {
  static const int16_t type = [] {
    BackendDescriptor b;
    b.name = "sim";
    b.runtime = &sim_backend();
    b.fusion = EmulatedModule::available() ? &sim_fusion : nullptr;
    b.fusible = &cuda::cuda_fusible;
    b.passes = {"gemm_epilogues"};
    return register_backend(b);
  }();
  return type;
}

Device sim() { return Device{sim_type(), 0}; }

// jit on the device runs the program optimized for devices: fused loops as the GPU's kernels, no CPU
// rewrites, and the same values as the CPU's program.
TEST(SimDevice, JitRunsFusedKernelsOnTheDevice) {
  if (!EmulatedModule::available()) GTEST_SKIP() << "no host compiler for the emulator";
  Device d = sim();
  int64_t before = g_sim_launches;
  check_jitted_training_step(d);
  EXPECT_GE(g_sim_launches - before, 3) << "the step's fused loops ran as device kernels";
  // the device's program: fused, without the CPU's accumulated products
  auto f = [](const Array& x, const Array& w) { return softmax(matmul(x, w) * 2.0 + 1.0); };
  Array x = device_put(ones({4, 8}), d), w = device_put(ones({8, 16}), d);
  Array y = jit(f)(x, w);
  EXPECT_EQ(y.device(), d);
  EXPECT_TRUE(close(y, f(ones({4, 8}), ones({8, 16}))));
  check_fused_programs(d, false);
  check_jit_placement(d);
}

// The device's generator says what it compiles: a complex sine (no GPU expression) stays out of the
// device's fused group, which then compiles to one kernel; the CPU's tile kernels take it in.
TEST(SimDevice, GroupsHoldWhatTheDevicesGeneratorCompiles) {
  auto f = [](const Array& z) { return sin(z * 2.0) * z + conj(z) * 3.0; };
  Array z = complex(linspace(-1, 1, 64), linspace(2, 0, 64));
  ClosedJaxpr j = make_jaxpr(f)(z);
  auto top_level = [](const ClosedJaxpr& o, const char* name) {
    int n = 0;
    for (auto& e : o.jaxpr->eqns) n += std::string(e.prim->name) == name;
    return n;
  };
  ClosedJaxpr dev = compiler::optimize(j, {.device_type = sim_type()}), cpu = compiler::optimize(j);
  EXPECT_EQ(top_level(dev, "sin"), 1) << dev;
  EXPECT_EQ(top_level(dev, "fusion"), 1) << dev;
  EXPECT_EQ(top_level(cpu, "sin"), 0) << cpu;
  for (auto& e : dev.jaxpr->eqns)
    if (e.prim == &compiler::fusion_p) {
      std::string why;
      EXPECT_TRUE(cuda::cuda_fused_kernel(compiler::fusion_body(e.params), {}, &why).has_value()) << why;
    }
  if (!EmulatedModule::available()) return;
  Array got = jit(f)(device_put(z, sim()));
  EXPECT_EQ(got.device(), sim());
  EXPECT_TRUE(close(got, f(z), 2e-6, 1e-6));
}

// A donated parameter is updated in place on the device: the fused update writes into its buffer.
TEST(SimDevice, DonatedParametersAreUpdatedInPlace) {
  if (!EmulatedModule::available()) GTEST_SKIP() << "no host compiler for the emulator";
  check_donated_update_in_place(sim());
}

// A compiled program on a device runs each step's kernel directly: its constants and literals move to
// the device on the first call only, and a later call copies nothing from the host.
TEST(SimDevice, CompiledProgramsMoveTheirConstantsOnce) {
  if (!EmulatedModule::available()) GTEST_SKIP() << "no host compiler for the emulator";
  Array table = concrete({1, 2, 3, 4, 5, 6, 7, 8}, {8});  // a constant on the host
  auto f = jit([&](const Array& x) { return exp(x * table + 1.5f) / sum(x * 0.5f); });
  Array x = concrete({8, 7, 6, 5, 4, 3, 2, 1}, {8});
  Array want = f(x);
  Array xs = device_put(x, sim());
  Array first = f(xs);
  EXPECT_EQ(first.device(), sim());
  int64_t before = sim_backend().copies_in.load();
  Array second = f(xs);
  EXPECT_EQ(sim_backend().copies_in.load(), before) << "the second call copied from the host";
  EXPECT_TRUE(second.concrete()->committed());
  EXPECT_EQ(second.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(first.to_vector<float>(), want.to_vector<float>());
  // a donated argument that has to move to the program's device: the program reads its copy there
  auto update = jit([](const Array& w, const Array& g) { return w - g * 0.5f; }, {.donate_argnums = {0}});
  Array w = concrete({1, 2, 3, 4}, {4});  // on the host, not committed
  Array w2 = update(w, device_put(concrete({2, 2, 2, 2}, {4}), sim()));
  EXPECT_EQ(w2.device(), sim());
  EXPECT_EQ(w2.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(SimDevice, MainJobStepOnTheDefaultDevice) { check_main_job_step_on_the_default_device(sim()); }

TEST(SimDevice, CnnStepAndExportOnTheDefaultDevice) { check_cnn_step_and_export_on_the_default_device(sim()); }

TEST(SimDevice, RoundTripPlacementAndErrors) { check_round_trip_and_placement(sim()); }

TEST(SimDevice, TransformationsAndControlFlow) { check_transformations_and_control_flow(sim()); }

// The descriptor's parts reach every layer: the core's device types (names, aliases, parsing), the
// compiler's target (its passes, its fused loops), and the kernel table; bad descriptors are refused.
TEST(SimDevice, RegisteredThroughOneDescriptor) {
  int16_t t = sim_type();
  EXPECT_GT(t, 0);
  EXPECT_EQ(Device::named("sim"), sim());
  EXPECT_EQ(parse_device("sim:0"), sim());
  EXPECT_EQ(find_device_type("sim"), t);
  EXPECT_NE(device_type_names().find("sim"), std::string::npos);
  EXPECT_EQ(register_backend({.name = "sim", .runtime = backend_for(t), .fusion = device_impl(t, compiler::fusion_p),
                              .passes = {"gemm_epilogues"}}),
            t)
      << "registering a name again keeps its id";
  compiler::Target target = compiler::target_of(t);
  EXPECT_EQ(target.passes, std::vector<std::string>{"gemm_epilogues"});
  EXPECT_EQ(target.fused_loops, EmulatedModule::available());
  EXPECT_EQ(compiler::target_of(0).passes, (std::vector<std::string>{"widen_half_products", "accumulate_dots"}));
  // the built-in backends keep the first ids: the CPU is 0 and cuda (built or not) is known by name
  EXPECT_EQ(find_device_type("cpu"), 0);
  EXPECT_GT(find_device_type("cuda"), 0);
  EXPECT_EQ(find_device_type("gpu"), find_device_type("cuda"));
  EXPECT_LT(find_device_type("cuda"), t);
  expect_throws<ValueError>([&] { register_backend({.name = "", .runtime = backend_for(t)}); }, "needs a name");
  expect_throws<ValueError>([&] { register_backend({.name = "nosim"}); }, "has no runtime");
  expect_throws<ValueError>([&] { register_backend({.name = "badsim", .runtime = backend_for(t), .passes = {"cse"}}); },
                            "pass 'cse' runs for every target");
  expect_throws<ValueError>([&] { register_backend({.name = "badsim", .runtime = backend_for(t), .passes = {"nope"}}); },
                            "no pass named 'nope'");
  expect_throws<ValueError>([&] { register_backend({.name = "gpu", .runtime = backend_for(t)}); }, "alias of cuda");
  expect_throws<ValueError>([&] { parse_device("nodevice:0"); }, "unknown device 'nodevice:0'");
  expect_throws<ValueError>([&] { (void)Device::named("nodevice"); }, "unknown device type 'nodevice'");
}

TEST(SimDevice, NamesAndMissingDevices) {
  EXPECT_EQ(sim().str(), "sim:0");
  Array x = concrete({1, 2, 3}, {3});
  expect_throws<ValueError>([&] { device_put(x, Device{sim_type(), 1}); }, "sim:1 is not available: the simulated device has one");
}

int64_t fallbacks_of(const std::string& name) {
  for (auto& [n, c] : device_fallbacks(sim_type()))
    if (n == name) return c;
  return 0;
}

// The decompositions (graft/prims/decompose.cpp) run on the device: the primitives they cover do not
// go to the host whole (their parts do here, on a device without kernels).
TEST(SimDevice, DecompositionsKeepPrimitivesOnTheDevice) {
  int checked = 0;
  for (const Case& c : device_cases()) {
    std::string n = c.prim->name;
    if (n != "conv_general_dilated" && n.rfind("reduce_window_", 0) != 0 && n.rfind("select_and_", 0) != 0) continue;
    Rng rng(1);
    Inputs in = c.inputs(rng, DType::f32);
    int64_t before = fallbacks_of(n);
    Inputs out = run_case(c, to_device(in, sim()));
    EXPECT_EQ(out[0].device(), sim());
    EXPECT_EQ(fallbacks_of(n), before) << c.name << " went through the host";
    ++checked;
  }
  EXPECT_GE(checked, 10);
  // three cases: two selects of two cases each
  Array which = device_put(concrete({0, 1, 2, 1}, {4}, DType::i32), sim());
  Array a = concrete({1, 2, 3, 4}, {4}), b = concrete({5, 6, 7, 8}, {4}), c = concrete({9, 10, 11, 12}, {4});
  int64_t selects = fallbacks_of("select_n");
  Array cases[] = {a, b, c};
  EXPECT_EQ(lax::select_n(which, cases).to_vector<float>(), (std::vector<float>{1, 6, 11, 8}));
  EXPECT_EQ(fallbacks_of("select_n"), selects + 2);
  // negative padding: a pad with the positive part, then a slice
  int64_t pads = fallbacks_of("pad"), slices = fallbacks_of("slice");
  Array x = device_put(concrete({1, 2, 3, 4, 5}, {5}), sim());
  Array p = lax::pad(x, lax::scalar(0, DType::f32), {{-2, 1, 1}});
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{2, 0, 3, 0, 4, 0, 5, 0}));
  EXPECT_EQ(fallbacks_of("pad"), pads + 1);
  EXPECT_EQ(fallbacks_of("slice"), slices + 1);
}

class SimConformance : public ::testing::TestWithParam<Case> {};

TEST_P(SimConformance, ValuesMatchTheCpu) { check_values_match_the_cpu(GetParam(), sim()); }

TEST_P(SimConformance, DerivativesMatchTheCpu) {
  if (!GetParam().smooth) GTEST_SKIP() << "no derivative";
  check_derivatives_match_the_cpu(GetParam(), sim());
}

TEST_P(SimConformance, VmapAndJitMatchTheCpu) { check_vmap_and_jit_match_the_cpu(GetParam(), sim()); }

std::string sim_case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Prims, SimConformance, ::testing::ValuesIn(device_cases()), sim_case_name);

}  // namespace
}  // namespace graft::testing
