#include "graft/backend/collectives.h"

#include <mutex>
#include <vector>

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
