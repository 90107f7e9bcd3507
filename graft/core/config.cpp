#include "graft/core/config.h"

#include <atomic>

#include "graft/core/env.h"

namespace graft::config {

namespace {
// -1: not read from the environment yet
std::atomic<int> g_nans{-1}, g_infs{-1}, g_x64{-1};

bool read(std::atomic<int>& v, const char* name, const char* alias = nullptr) {
  int x = v.load(std::memory_order_relaxed);
  if (x < 0) {
    x = env::flag(name, alias ? env::flag(alias, false) : false) ? 1 : 0;
    v.store(x, std::memory_order_relaxed);
  }
  return x == 1;
}
}  // namespace

bool debug_nans() { return read(g_nans, "GRAFT_DEBUG_NANS"); }
void set_debug_nans(bool on) { g_nans.store(on ? 1 : 0); }
bool debug_infs() { return read(g_infs, "GRAFT_DEBUG_INFS"); }
void set_debug_infs(bool on) { g_infs.store(on ? 1 : 0); }
bool enable_x64() { return read(g_x64, "GRAFT_ENABLE_X64", "JAX_ENABLE_X64"); }
void set_enable_x64(bool on) { g_x64.store(on ? 1 : 0); }

namespace {
std::atomic<bool> g_partitionable{true};
}  // namespace
bool threefry_partitionable() { return g_partitionable.load(std::memory_order_relaxed); }
void set_threefry_partitionable(bool on) { g_partitionable.store(on); }

}  // namespace graft::config
