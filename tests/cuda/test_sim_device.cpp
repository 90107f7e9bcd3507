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
