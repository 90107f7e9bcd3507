#include "graft/core/backend.h"

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "graft/core/env.h"
#include "graft/core/error.h"

namespace graft {

namespace {

class HostBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool available(int index, std::string* why) const override {
    if (index == 0) return true;
    if (why) *why = "there is one CPU device, cpu:0";
    return false;
  }
  Ref<Buffer> allocate(size_t nbytes, Device) override { return Buffer::allocate_cpu(nbytes); }
  void copy(const void* src, Device, void* dst, Device, size_t n) override { std::memcpy(dst, src, n); }
  void synchronize(Device) override {}
};

struct TypeEntry {
  std::string name;  // empty: a free id
  std::vector<std::string> aliases;
  std::atomic<Backend*> runtime{nullptr};
  std::string missing;
};

// Ids are handed out once and never taken back, so lookups by id read an entry without the lock; names
// change only under it.
struct Registry {
  std::mutex mu;
  std::array<TypeEntry, kMaxDeviceTypes> types;
  Registry() {
    types[0].name = "cpu";
    types[0].runtime = &host_backend();
  }
};

Registry& raw_registry() {
  static Registry* r = new Registry();  // never destroyed: arrays may be freed during exit
  return *r;
}

// The registry with the built-in backends in it. register_builtin_backends registers through the raw
// registry (register_device_type does not come back here), so the once-flag is never re-entered.
Registry& registry() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_backends(); });
  return raw_registry();
}

bool has_name(const TypeEntry& e, std::string_view n) {
  if (e.name == n) return true;
  for (auto& a : e.aliases)
    if (a == n) return true;
  return false;
}

int16_t find_locked(Registry& r, std::string_view name) {
  for (size_t t = 0; t < r.types.size(); ++t)
    if (!r.types[t].name.empty() && has_name(r.types[t], name)) return static_cast<int16_t>(t);
  return -1;
}

}  // namespace

Backend& host_backend() {
  static HostBackend* b = new HostBackend();
  return *b;
}

int16_t register_device_type(const std::string& name, const std::vector<std::string>& aliases, Backend* runtime,
                             const std::string& missing) {
  if (name.empty()) fail<ValueError>("register_device_type: a device type needs a name");
  Registry& r = raw_registry();
  std::lock_guard<std::mutex> lk(r.mu);
  int16_t t = -1;
  for (size_t i = 0; i < r.types.size(); ++i)
    if (r.types[i].name == name) t = static_cast<int16_t>(i);
  for (const std::string& n : aliases) {
    int16_t other = find_locked(r, n);
    if (other >= 0 && other != t)
      fail<ValueError>("register_device_type: '", n, "' already names device type ", r.types[size_t(other)].name);
  }
  if (t < 0) {
    int16_t other = find_locked(r, name);
    if (other >= 0) fail<ValueError>("register_device_type: '", name, "' is an alias of ", r.types[size_t(other)].name);
    for (size_t i = 1; i < r.types.size() && t < 0; ++i)
      if (r.types[i].name.empty()) t = static_cast<int16_t>(i);
    if (t < 0)
      fail<ValueError>("register_device_type: no id left for '", name, "' (", kMaxDeviceTypes, " device types at most)");
  }
  TypeEntry& e = r.types[static_cast<size_t>(t)];
  e.name = name;
  e.aliases = aliases;
  e.missing = runtime ? "" : missing;
  e.runtime.store(runtime, std::memory_order_release);
  return t;
}

int16_t find_device_type(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return find_locked(r, name);
}

std::string device_type_name(int16_t type) {
  if (type == 0) return "cpu";
  if (type < 0 || type >= kMaxDeviceTypes) return "device" + std::to_string(type);
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  const std::string& n = r.types[static_cast<size_t>(type)].name;
  return n.empty() ? "device" + std::to_string(type) : n;
}

std::string device_type_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  std::string s;
  for (auto& e : r.types)
    if (!e.name.empty()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

Backend* backend_for(int16_t type) {
  if (type < 0 || type >= kMaxDeviceTypes) return nullptr;
  if (type == 0) return &host_backend();
  return registry().types[static_cast<size_t>(type)].runtime.load(std::memory_order_acquire);
}

Backend& usable_backend(Device d, const char* what) {
  Backend* b = backend_for(d.type);
  if (!b) {
    std::string missing;
    if (d.type > 0 && d.type < kMaxDeviceTypes) {
      Registry& r = registry();
      std::lock_guard<std::mutex> lk(r.mu);
      missing = r.types[static_cast<size_t>(d.type)].missing;
    }
    fail<ValueError>(what, ": device ", d, " is not available: ",
                     missing.empty() ? "graft was built without a backend for it" : missing);
  }
  std::string why;
  if (!b->available(d.index, &why)) fail<ValueError>(what, ": device ", d, " is not available: ", why);
  return *b;
}

// ---- devices ---------------------------------------------------------------------------------------
Device Device::named(std::string_view type_name, int i) {
  int16_t t = find_device_type(type_name);
  if (t < 0) fail<ValueError>("unknown device type '", type_name, "' (known: ", device_type_names(), ")");
  if (i < 0 || i > INT16_MAX) fail<ValueError>("device index ", i, " of ", type_name, " is out of range");
  return Device{t, static_cast<int16_t>(i)};
}

Device Device::cuda(int i) {
  static const int16_t t = Device::named("cuda").type;
  if (i < 0 || i > INT16_MAX) fail<ValueError>("device index ", i, " of cuda is out of range");
  return Device{t, static_cast<int16_t>(i)};
}

Device parse_device(std::string_view s) {
  std::string_view kind = s, idx;
  if (auto colon = s.find(':'); colon != std::string_view::npos) {
    kind = s.substr(0, colon);
    idx = s.substr(colon + 1);
  }
  int index = 0;
  if (!idx.empty()) {
    index = -1;
    if (idx.size() <= 4 && idx.find_first_not_of("0123456789") == std::string_view::npos) index = std::stoi(std::string(idx));
  }
  int16_t t = kind.empty() ? -1 : find_device_type(kind);
  if (index >= 0 && t >= 0 && (t != 0 || index == 0)) return Device{t, static_cast<int16_t>(index)};
  fail<ValueError>("unknown device '", s, "': expected a device type (", device_type_names(),
                   ") with an optional index, as cpu, cuda or cuda:1");
}

namespace {
Device process_default() {
  static const Device d = [] {
    auto v = env::get("GRAFT_DEFAULT_DEVICE");
    if (!v) return Device::cpu();
    try {
      return parse_device(*v);
    } catch (const ValueError& e) {
      fail<ValueError>("GRAFT_DEFAULT_DEVICE: ", e.what());
    }
  }();
  return d;
}
thread_local Device tl_default;
thread_local bool tl_has_default = false;
}  // namespace

Device default_device() { return tl_has_default ? tl_default : process_default(); }

DefaultDevice::DefaultDevice(Device d) : prev_(tl_default), had_prev_(tl_has_default) {
  tl_default = d;
  tl_has_default = true;
}
DefaultDevice::~DefaultDevice() {
  tl_default = prev_;
  tl_has_default = had_prev_;
}

std::string Device::str() const { return device_type_name(type) + ":" + std::to_string(index); }
std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace graft
