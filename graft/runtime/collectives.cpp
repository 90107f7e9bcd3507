#include "graft/runtime/collectives.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "graft/core/env.h"
#include "graft/core/error.h"

namespace graft {

namespace {
thread_local std::vector<AxisFrame> tl_axes;

std::mutex stats_mu;
CollectiveStats stats;
}  // namespace

CollectiveStats collective_stats() {
  std::lock_guard<std::mutex> lock(stats_mu);
  return stats;
}
void reset_collective_stats() {
  std::lock_guard<std::mutex> lock(stats_mu);
  stats = {};
}
void record_collective(uint64_t bytes, double seconds) {
  std::lock_guard<std::mutex> lock(stats_mu);
  ++stats.calls;
  stats.bytes += bytes;
  stats.seconds += seconds;
}

namespace {
struct DeviceComms {
  std::mutex mu;
  DeviceCommunicatorFactory factories[8] = {};
  // (host, device) -> its device communicator (null: making it failed); the host is kept alive so
  // that its address is never another communicator's
  std::map<std::pair<const Communicator*, std::pair<int16_t, int16_t>>,
           std::pair<std::shared_ptr<Communicator>, std::shared_ptr<Communicator>>>
      made;
};
DeviceComms& device_comms() {
  static DeviceComms* d = new DeviceComms();  // never destroyed: communicators may outlive static teardown
  return *d;
}
}  // namespace

void register_device_communicator(int16_t device_type, DeviceCommunicatorFactory f) {
  if (device_type <= 0 || device_type >= 8) fail<ValueError>("register_device_communicator: bad device type ", device_type);
  DeviceComms& c = device_comms();
  std::lock_guard<std::mutex> lk(c.mu);
  c.factories[device_type] = f;
}

std::shared_ptr<Communicator> device_communicator(const std::shared_ptr<Communicator>& host, Device d) {
  if (!host || d.type <= 0 || d.type >= 8 || !env::flag("GRAFT_DEVICE_COLLECTIVES", true)) return nullptr;
  DeviceComms& c = device_comms();
  std::lock_guard<std::mutex> lk(c.mu);  // held while making one: every rank makes its communicators in one order
  DeviceCommunicatorFactory f = c.factories[d.type];
  if (!f) return nullptr;
  auto key = std::make_pair(host.get(), std::make_pair(d.type, d.index));
  auto it = c.made.find(key);
  if (it != c.made.end()) return it->second.second;
  std::shared_ptr<Communicator> dc;
  try {
    dc = f(host, d);
  } catch (const Error& e) {
    if (env::flag("GRAFT_LOG_FALLBACKS"))
      std::fprintf(stderr, "graft: no communicator on %s (%s): collectives go through the host\n", d.str().c_str(), e.what());
  }
  c.made[key] = {host, dc};
  return dc;
}

AxisScope::AxisScope(AxisFrame f) {
  if (f.name.empty()) fail<ValueError>("axis names must not be empty");
  if (f.size < 1) fail<ValueError>("axis '", f.name, "' has size ", f.size, "; named axes have at least one member");
  tl_axes.push_back(std::move(f));
}
AxisScope::~AxisScope() { tl_axes.pop_back(); }

const AxisFrame* find_axis(std::string_view name) {
  for (size_t i = tl_axes.size(); i-- > 0;)
    if (tl_axes[i].name == name) return &tl_axes[i];
  return nullptr;
}

int64_t axis_size(std::string_view name, const char* op) {
  const AxisFrame* f = find_axis(name);
  if (!f)
    fail<ValueError>(op, ": unbound axis name '", name, "': collectives name an axis of an enclosing "
                     "vmap(f, {.axis_name = ...}), shard_map or pmap");
  return f->size;
}

}  // namespace graft
