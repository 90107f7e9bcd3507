// A simulated device: a backend whose memory is host memory that graft must treat as another
// device's (reading it through raw_data is an error, every primitive runs through host_fallback).
// It runs the device checks everywhere, without a GPU: placement, the transformations and every
// conformance row, so that a path that reads a device array as if it were on the CPU (a compiled
// CPU program handed device operands, say) fails here rather than only on a lent GPU.
#include <cstdlib>
#include <cstring>

#include "cuda/device_checks.h"

namespace graft::testing {
namespace {

constexpr int16_t kSimType = 7;

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
  void copy(const void* src, Device, void* dst, Device, size_t n) override {
    if (n) std::memcpy(dst, src, n);
  }
  void synchronize(Device) override {}
};

Device sim() {
  static SimBackend backend;
  static bool registered = (register_backend(kSimType, &backend), true);
  (void)registered;
  return Device{kSimType, 0};
}

TEST(SimDevice, RoundTripPlacementAndErrors) { check_round_trip_and_placement(sim()); }

TEST(SimDevice, TransformationsAndControlFlow) { check_transformations_and_control_flow(sim()); }

TEST(SimDevice, NamesAndMissingDevices) {
  EXPECT_EQ(sim().str(), "sim:0");
  Array x = concrete({1, 2, 3}, {3});
  expect_throws<ValueError>([&] { device_put(x, Device{kSimType, 1}); }, "sim:1 is not available: the simulated device has one");
}

int64_t fallbacks_of(const std::string& name) {
  for (auto& [n, c] : device_fallbacks(kSimType))
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
