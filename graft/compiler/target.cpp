#include "graft/compiler/target.h"

#include <array>
#include <mutex>

#include "graft/compiler/pipeline.h"
#include "graft/core/backend.h"
#include "graft/core/error.h"

namespace graft::compiler {

namespace {
struct Targets {
  std::mutex mu;
  std::array<Target, kMaxDeviceTypes> by_type;
};
Targets& targets() {
  static Targets* t = new Targets();
  return *t;
}
}  // namespace

void set_target(int16_t device_type, Target t) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) fail<ValueError>("set_target: bad device type ", device_type);
  for (const std::string& name : t.passes)
    if (!pass_named(name).per_target)
      fail<ValueError>("set_target: pass '", name, "' runs for every target; a backend can only ask for per-target passes");
  Targets& ts = targets();
  std::lock_guard<std::mutex> lk(ts.mu);
  ts.by_type[static_cast<size_t>(device_type)] = std::move(t);
}

namespace {
thread_local const Target* g_current = nullptr;
}

const Target& current_target() {
  if (g_current) return *g_current;
  thread_local const Target cpu = target_of(0);
  return cpu;
}

TargetScope::TargetScope(int16_t device_type) : saved_(g_current), mine_(target_of(device_type)) {
  g_current = &mine_;
}

TargetScope::~TargetScope() { g_current = saved_; }

Target target_of(int16_t device_type) {
  if (device_type < 0 || device_type >= kMaxDeviceTypes) return {};
  find_device_type("cpu");  // the built-in backends have registered their targets
  Targets& ts = targets();
  std::lock_guard<std::mutex> lk(ts.mu);
  return ts.by_type[static_cast<size_t>(device_type)];
}

}  // namespace graft::compiler
