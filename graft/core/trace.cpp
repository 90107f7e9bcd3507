#include "graft/core/trace.h"

#include <algorithm>

#include <pthread.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "graft/core/backend.h"
#include "graft/core/config.h"
#include "graft/core/env.h"
#include "graft/core/placement.h"

namespace graft {

namespace {

// Transformations nested this deep come from a function that calls itself while being traced (Python
// stops at its recursion limit of 1000 in the same place).
constexpr int kMaxTraceDepth = 1000;
// Tracing stops with an error while this much of the thread's stack is left, whatever the depth, so
// that a thread with a small stack also gets an error rather than a segmentation fault.
constexpr size_t kStackReserve = size_t(256) << 10;

// The lowest address of this thread's stack (it grows down), or null where it cannot be known.
const char* stack_limit() {
  thread_local const char* low = [] {
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return static_cast<const char*>(nullptr);
    if (pthread_attr_getstack(&attr, &addr, &size) != 0) addr = nullptr;
    pthread_attr_destroy(&attr);
    return static_cast<const char*>(addr);
  }();
  return low;
}

[[noreturn]] void too_deep(const std::string& kind, int level, const char* why) {
  fail<RecursionError>(kind, ": transformations are nested ", level, " deep (", why,
                       "). A function that calls itself through cond, switch_, while_loop, scan or jit is traced "
                       "without end, because tracing runs every branch: write it as graft::Recursive (see "
                       "graft/transforms/control.h), whose calls refer to the function instead of tracing it again");
}

}  // namespace

Trace::Trace(Ref<Trace> parent, std::string kind)
    : parent_(std::move(parent)), kind_(std::move(kind)), level_(parent_ ? parent_->level() + 1 : 0) {
  if (level_ > kMaxTraceDepth) too_deep(kind_, level_, "the limit is 1000");
  char here;
  const char* low = stack_limit();
  if (low && &here > low && static_cast<size_t>(&here - low) < kStackReserve)
    too_deep(kind_, level_, "the thread's stack is nearly exhausted");
}
Trace::~Trace() = default;

std::string Trace::describe() const { return kind_; }

Tracer* Trace::own(const Array& x) const {
  Tracer* t = x.tracer();
  if (!t) return nullptr;
  Trace* tt = t->trace();
  if (tt == this) return t;
  if (!tt->alive())
    fail<TracerLeakError>("a ", x.aval().str(), " tracer of ", tt->describe(),
                          " was used after that transformation ended (a leaked tracer: it was stored in a "
                          "variable outside the transformed function, or captured by reference)");
  // A live tracer of another trace is a constant here only if that trace encloses this one.
  for (const Trace* p = parent(); p; p = p->parent())
    if (p == tt) return nullptr;
  fail<TracerLeakError>("a ", x.aval().str(), " tracer of ", tt->describe(), " reached ", describe(),
                        ", which does not run inside it (a tracer escaped its transformation)");
}

// ---- eager ------------------------------------------------------------------------------------
EvalTrace::EvalTrace() : Trace(Ref<Trace>(), "eval") {}

namespace {

struct DeviceImpls {
  std::mutex mu;
  std::unordered_map<const Primitive*, ImplRule> impls[kMaxDeviceTypes];
  std::unordered_map<const Primitive*, ImplRule> decompositions;
  std::map<std::string, int64_t> fallbacks[kMaxDeviceTypes];
  std::set<std::string> warned;
};
DeviceImpls& device_impls() {
  static DeviceImpls* d = new DeviceImpls();  // never destroyed: arrays may be freed during exit
  return *d;
}

// Runs p with its operands on `dev` (moving those that are elsewhere): the device's kernel, or the CPU
// impl through the host.
Arrays run_on_device(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params,
                     Device dev, bool moved) {
  SmallVector<Array, 4> here;
  if (moved) {
    here.assign(in.begin(), in.end());
    for (Array& x : here)
      if (x.is_concrete()) x = transfer(x, dev);
    in = std::span<const Array>(here.data(), here.size());
  }
  if (dev.is_cpu()) return p.impl(p, in, outs, params);
  usable_backend(dev, p.name);
  if (ImplRule fn = device_impl(dev.type, p)) return fn(p, in, outs, params);
  return decompose_on_device(p, in, outs, params, dev);
}

}  // namespace

Arrays decompose_on_device(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs,
                           const Params& params, Device dev) {
  ImplRule fn = device_decomposition(p);
  if (!fn) return host_fallback(p, in, outs, params, dev);
  // the primitives it binds run eagerly (below any transformation), and the values it makes (fill
  // values, masks) are made on this device
  DefaultDevice here(dev);
  TraceScope eager(eval_trace());
  return fn(p, in, outs, params);
}

Arrays run_step_on_device(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params,
                          Device dev) {
  bool committed = false;
  for (const Array& x : in)
    if (auto* c = x.concrete(); c && c->committed()) committed = true;
  Arrays res = run_on_device(p, in, outs, params, dev, false);
  if (committed)
    for (Array& r : res)
      if (auto* c = r.concrete()) c->set_committed(true);
  return res;
}

Arrays host_fallback(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params,
                     Device dev) {
  {
    DeviceImpls& d = device_impls();
    std::lock_guard<std::mutex> lk(d.mu);
    ++d.fallbacks[dev.type][p.name];
    if (d.warned.insert(p.name).second && env::flag("GRAFT_LOG_FALLBACKS"))
      std::fprintf(stderr, "graft: %s has no %s kernel: it runs on the CPU, its operands and results copied\n", p.name,
                   dev.str().c_str());
  }
  SmallVector<Array, 4> host(in.begin(), in.end());
  for (Array& x : host) x = transfer(x, Device::cpu());
  // the CPU's kernel may make arrays of its own: they belong on the CPU, whatever the caller's default
  DefaultDevice on_cpu(Device::cpu());
  Arrays res = p.impl(p, std::span<const Array>(host.data(), host.size()), outs, params);
  for (Array& r : res) r = transfer(r, dev);
  return res;
}

void register_device_impl(int16_t device_type, const Primitive& p, ImplRule fn) {
  if (device_type <= 0 || device_type >= kMaxDeviceTypes)
    fail<ValueError>("register_device_impl: bad device type ", device_type);
  DeviceImpls& d = device_impls();
  std::lock_guard<std::mutex> lk(d.mu);
  d.impls[device_type][&p] = fn;
}

ImplRule device_impl(int16_t device_type, const Primitive& p) {
  if (device_type <= 0 || device_type >= kMaxDeviceTypes) return nullptr;
  DeviceImpls& d = device_impls();
  std::lock_guard<std::mutex> lk(d.mu);
  auto it = d.impls[device_type].find(&p);
  return it == d.impls[device_type].end() ? nullptr : it->second;
}

void register_device_decomposition(const Primitive& p, ImplRule fn) {
  DeviceImpls& d = device_impls();
  std::lock_guard<std::mutex> lk(d.mu);
  d.decompositions[&p] = fn;
}

ImplRule device_decomposition(const Primitive& p) {
  DeviceImpls& d = device_impls();
  std::lock_guard<std::mutex> lk(d.mu);
  auto it = d.decompositions.find(&p);
  return it == d.decompositions.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, int64_t>> device_fallbacks(int16_t device_type) {
  std::vector<std::pair<std::string, int64_t>> out;
  if (device_type <= 0 || device_type >= kMaxDeviceTypes) return out;
  DeviceImpls& d = device_impls();
  std::lock_guard<std::mutex> lk(d.mu);
  for (auto& [k, v] : d.fallbacks[device_type]) out.emplace_back(k, v);
  return out;
}

Arrays eval_primitive(const Primitive& p, std::span<const Array> in, const Params& params) {
  constexpr size_t kMaxStack = 8;
  const Aval* stack[kMaxStack];
  SmallVector<const Aval*, kMaxStack> avals;
  const Aval** ptrs = stack;
  if (in.size() > kMaxStack) {
    avals.resize(in.size());
    ptrs = avals.data();
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].valid()) fail<ValueError>(p.name, ": argument ", i, " is a null array");
    ptrs[i] = &in[i].aval();
  }
  Avals outs = p.shape(p, AvalPtrs(ptrs, in.size()), params);
  for (const Aval& a : outs) checked_numel(a.shape, p.name);  // before anything is allocated
  // Placement (graft/core/placement.h): the common case (everything on the CPU) costs one pass of tests.
  Placement pl = place(in, p.name);
  // device_put chooses its device; higher-order primitives (jit, control flow) run their bodies,
  // whose primitives are placed one by one
  if (p.has(kPlacement) || p.has(kHigherOrder)) return p.impl(p, in, outs, params);
  if (pl.device.is_cpu() && !pl.moves && !pl.committed) return p.impl(p, in, outs, params);
  Arrays res = run_on_device(p, in, outs, params, pl.device, pl.moves);
  if (pl.committed)
    for (Array& r : res)
      if (auto* c = r.concrete()) c->set_committed(true);
  return res;
}

Arrays EvalTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  for (const Array& x : in)
    if (x.is_tracer()) {
      own(x);  // throws: a tracer can only reach the eager interpreter by escaping its transformation
      fail<TracerLeakError>(p.name, ": a tracer reached eager evaluation");
    } else if (auto* c = x.concrete(); c && c->deleted()) {
      check_not_deleted(x, p.name);
    }
  Arrays out = eval_primitive(p, in, params);
  if (config::debug_numerics()) check_numerics(p, in, params, out);
  return out;
}

// ---- GRAFT_DEBUG_NANS ---------------------------------------------------------------------------------
namespace {

thread_local std::vector<std::string> tl_debug_scopes;

struct BadCount {
  int64_t nan = 0, inf = 0;
};

BadCount count_bad(const Array& x) {
  BadCount c;
  if (!is_floating(x.dtype()) || !x.is_concrete()) return c;
  Array a = x.concretize("debug_nans");  // a device's values are read on the host
  int64_t n = a.size();
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* d = static_cast<const T*>(a.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        auto v = static_cast<compute_t<T>>(d[i]);
        c.nan += v != v;
        c.inf += std::isinf(v);
      }
    }
  });
  return c;
}

}  // namespace

DebugScope::DebugScope(std::string where) { tl_debug_scopes.push_back(std::move(where)); }
DebugScope::~DebugScope() { tl_debug_scopes.pop_back(); }

void check_numerics(const Primitive& p, std::span<const Array> in, const Params& params, std::span<const Array> out) {
  bool nans = config::debug_nans(), infs = config::debug_infs();
  for (size_t k = 0; k < out.size(); ++k) {
    BadCount b = count_bad(out[k]);
    bool nan = nans && b.nan > 0, inf = infs && b.inf > 0;
    if (!nan && !inf) continue;
    const char* what = nan ? "NaN" : "infinity";
    std::ostringstream m;
    m << p.name;
    if (params.size()) {
      m << "[";
      bool first = true;
      for (auto& [key, v] : params) {
        if (std::holds_alternative<JaxprPtr>(v) || std::holds_alternative<JaxprList>(v)) continue;
        m << (first ? "" : " ") << key << "=";
        print_param_value(m, v);
        first = false;
      }
      m << "]";
    }
    m << " produced " << (nan ? b.nan : b.inf) << " " << what << (nan ? "" : " values") << " in its "
      << (out.size() > 1 ? "output " + std::to_string(k) + " " : "output ") << out[k].aval().str() << " from (";
    bool inputs_bad = false, inputs_inf = false;
    for (size_t i = 0; i < in.size(); ++i) {
      BadCount bi = count_bad(in[i]);
      bool had = nan ? bi.nan > 0 : bi.inf > 0;
      inputs_bad = inputs_bad || had;
      inputs_inf = inputs_inf || bi.inf > 0;
      m << (i ? ", " : "") << in[i].aval().str() << (had ? std::string(" holding ") + what : "")
        << (nan && bi.nan == 0 && bi.inf > 0 ? " holding infinities" : "");
    }
    m << ")"
      << (inputs_bad ? ": it came in with an operand"
                     : nan && inputs_inf ? ": this operation made it from infinities (inf - inf, 0 * inf)"
                                         : ": this operation made it");
    if (!tl_debug_scopes.empty()) {
      m << " [in ";
      for (size_t i = 0; i < tl_debug_scopes.size(); ++i) m << (i ? " > " : "") << tl_debug_scopes[i];
      m << "]";
    }
    m << " (GRAFT_DEBUG_" << (nan ? "NANS" : "INFS") << ")";
    throw FloatingPointError(m.str());
  }
}

// ---- current trace ------------------------------------------------------------------------------
Trace* eval_trace() {
  static EvalTrace* t = [] {
    auto* e = new EvalTrace();
    e->retain();  // immortal
    return e;
  }();
  return t;
}

namespace {
thread_local Trace* tl_current = nullptr;
}

Trace* current_trace() { return tl_current ? tl_current : eval_trace(); }

TraceScope::TraceScope(Trace* t) : saved_(tl_current) { tl_current = t; }
TraceScope::~TraceScope() { tl_current = saved_; }

namespace {
thread_local std::shared_ptr<const std::string> tl_name_stack;
}  // namespace

NameScope::NameScope(const std::string& name) : saved_(tl_name_stack) {
  tl_name_stack = std::make_shared<const std::string>(saved_ ? *saved_ + "/" + name : name);
}
NameScope::~NameScope() { tl_name_stack = std::move(saved_); }
const std::shared_ptr<const std::string>& current_name_stack() { return tl_name_stack; }

namespace {
// Concrete operands: evaluate now; any tracer: hand the application to the enclosing trace.
class CompileTimeEvalTrace final : public Trace {
 public:
  explicit CompileTimeEvalTrace(Trace* parent) : Trace(Ref<Trace>(parent), "ensure_compile_time_eval") {}
  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override {
    bool concrete = std::all_of(in.begin(), in.end(), [](const Array& x) { return !x.is_tracer(); });
    TraceScope scope(concrete ? eval_trace() : parent());
    return bind(p, in, params);
  }
  std::string describe() const override { return parent()->describe(); }
};
}  // namespace

CompileTimeEvalScope::CompileTimeEvalScope()
    : trace_(Ref<Trace>(new CompileTimeEvalTrace(current_trace()))), saved_(tl_current) {
  tl_current = trace_.get();
}
CompileTimeEvalScope::~CompileTimeEvalScope() {
  tl_current = saved_;
  trace_->end();
}

Arrays BindFn::operator()(const Primitive& p, std::span<const Array> in, const Params& params) const {
  return current_trace()->process(p, in, params);
}

Array bind1(const Primitive& p, std::span<const Array> in, const Params& params) {
  Arrays out = bind(p, in, params);
  return std::move(out[0]);
}

}  // namespace graft
