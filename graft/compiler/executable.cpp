#include "graft/compiler/executable.h"
#include "graft/core/env.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "graft/compiler/cpu/accumulate.h"
#include "graft/compiler/cpu/fused_kernel.h"
#include "graft/compiler/memory_plan.h"
#include "graft/compiler/pipeline.h"
#include "graft/compiler/program_cache.h"
#include "graft/core/backend.h"
#include "graft/core/config.h"
#include "graft/core/placement.h"
#include "graft/core/trace.h"
#include "graft/compiler/target.h"

namespace graft {

namespace {

// GRAFT_PROFILE=1: time every step of every executable, by primitive and operand types, and print
// the table at exit (what a slow jitted program spends its time on). A row's first call is listed
// apart: it includes one-time work (oneDNN generates a GEMM's kernel on its first call, ~50 ms for a
// training step), which would otherwise pass for a slow step.
class StepProfile {
 public:
  static StepProfile* get() {
    static StepProfile* p = [] {
      return env::flag("GRAFT_PROFILE") ? new StepProfile() : nullptr;
    }();
    return p;
  }
  void add(const std::string& what, double ms) {
    std::lock_guard<std::mutex> lk(mu_);
    Row& r = rows_[what];
    if (r.calls++ == 0) {
      r.first_ms = ms;
    } else {
      r.ms += ms;
    }
  }
  ~StepProfile() = default;

 private:
  struct Row {
    int64_t calls = 0;
    double ms = 0, first_ms = 0;  // ms: the calls after the first
  };
  StepProfile() {
    std::atexit([] { get()->print(); });
  }
  void print() {
    std::vector<std::pair<std::string, Row>> v(rows_.begin(), rows_.end());
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second.ms > b.second.ms; });
    double total = 0, first = 0;
    for (auto& r : v) total += r.second.ms, first += r.second.first_ms;
    std::fprintf(stderr,
                 "graft profile: %.1f ms in jitted steps after each step's first call (first calls: %.1f ms)\n"
                 "%10s %8s %6s %9s %9s  %s\n",
                 total, first, "ms", "calls", "%", "us/call", "first ms", "step");
    for (auto& [what, r] : v) {
      int64_t n = r.calls - 1;
      std::fprintf(stderr, "%10.1f %8lld %5.1f%% %9.1f %9.2f  %s\n", r.ms, static_cast<long long>(n),
                   100 * r.ms / std::max(total, 1e-9), n ? 1e3 * r.ms / static_cast<double>(n) : 0.0, r.first_ms,
                   what.c_str());
    }
  }
  std::mutex mu_;
  std::unordered_map<std::string, Row> rows_;
};

// "dot_general f32[128,784] f32[784,512] -> f32[128,512]": the operands tell apart steps that make
// arrays of one type (the forward and backward products of a layer)
std::string step_label(const Eqn& e) {
  std::string s = e.name_stack ? *e.name_stack + "/" + e.prim->name : std::string(e.prim->name);
  for (auto& a : e.inputs) s += " " + a.aval().str();
  s += " ->";
  for (auto& v : e.outputs) s += " " + v->aval.str();
  return s;
}

}  // namespace

Executable::Executable(const ClosedJaxpr& original, const std::string& name, std::vector<bool> donated)
    : traced_(original), name_(name), donated_(std::move(donated)) {
  compiler::OptimizeOptions opts;
  opts.name = name;
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  auto t0 = std::chrono::steady_clock::now();
  // the optimized program and its memory plan come from the disk cache when another process (or an
  // earlier run) compiled the same program with this build on this CPU
  std::string key = compiler::program_cache_key(original, donated_);
  std::optional<compiler::CachedProgram> cached = compiler::load_cached_program(key);
  compiler::MemoryPlan plan;
  if (cached) {
    program_ = std::move(cached->program);
    plan.release = std::move(cached->release);
    plan.peak_bytes = cached->peak_bytes;
    plan.argument_bytes = cached->argument_bytes;
    stats_.cached_program = true;
  } else {
    program_ = compiler::optimize(original, opts);
  }
  auto t1 = std::chrono::steady_clock::now();
  const ClosedJaxpr& cj = program_;
  const Jaxpr& j = *cj.jaxpr;
  // fused loops are compiled now (machine code included, one batch), not on their first run; before
  // the memory plan, which would otherwise compile them one by one (and their objects, cached under
  // other keys, would not be found by a process that reads the plan from the cache)
  std::vector<const ClosedJaxpr*> bodies;
  for (const Eqn& e : j.eqns)
    if (e.prim == &compiler::fusion_p) bodies.push_back(&compiler::fusion_body(e.params));
  compiler::FusedKernel::compile_all(bodies);
  stats_.fused_loops = static_cast<int>(bodies.size());
  auto t2 = std::chrono::steady_clock::now();
  if (!cached) {
    plan = compiler::plan_memory(program_, donated_);
    compiler::store_cached_program(key, program_, plan);
  }
  stats_.optimize_ms = ms(t0, t1) + ms(t2, std::chrono::steady_clock::now());
  stats_.kernels_ms = ms(t1, t2);
  peak_bytes_ = plan.peak_bytes;
  argument_bytes_ = plan.argument_bytes;
  for (auto& v : j.invars) in_avals_.push_back(v->aval);
  lower(program_, plan.release, true, cpu_);
}

void Executable::lower(const ClosedJaxpr& cj, const std::vector<std::vector<const Var*>>& release, bool cpu,
                       Lowered& L) {
  const Jaxpr& j = *cj.jaxpr;
  std::unordered_map<const Var*, int32_t> slot;
  auto new_slot = [&](const Var* v) { return slot[v] = L.num_slots++; };
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    int32_t s = new_slot(j.constvars[i].get());
    if (L.slot_init.size() <= static_cast<size_t>(s)) L.slot_init.resize(static_cast<size_t>(s) + 1);
    L.slot_init[static_cast<size_t>(s)] = cj.consts[i];
  }
  for (auto& v : j.invars) L.in_slots.push_back(new_slot(v.get()));
  auto slot_of = [&](const Atom& a) -> int32_t {
    if (a.is_literal()) {
      int32_t s = L.num_slots++;
      L.slot_init.resize(static_cast<size_t>(L.num_slots));
      L.slot_init[static_cast<size_t>(s)] = a.literal;
      return s;
    }
    return slot.at(a.var.get());
  };
  for (const Eqn& e : j.eqns) {
    Step st{e.prim, {}, {}, {}, {}, e.params, nullptr, {}};
    if (StepProfile::get()) st.label = step_label(e);
    if (cpu && e.prim == &compiler::fusion_p) st.fused = &compiler::FusedKernel::of(compiler::fusion_body(e.params));
    for (auto& a : e.inputs) st.in.push_back(slot_of(a));
    for (auto& v : e.outputs) {
      st.out.push_back(new_slot(v.get()));
      st.out_avals.push_back(v->aval);
    }
    L.steps.push_back(std::move(st));
  }
  for (auto& a : j.outvars) L.out_slots.push_back(slot_of(a));
  L.slot_init.resize(static_cast<size_t>(L.num_slots));
  // release intermediates after their last use, as the memory plan says
  for (size_t i = 0; i < L.steps.size(); ++i)
    for (const Var* v : release[i]) L.steps[i].release.push_back(slot.at(v));
}

// The program optimized for a device type, made on the first run on one of its devices (its devices
// share it: it holds no device's kernels, only the groups; each device compiles its fused loops when
// they first run).
const Executable::Lowered* Executable::device_lowering(int16_t device_type) const {
  std::lock_guard<std::mutex> lk(device_mu_);
  std::unique_ptr<Lowered>& slot = device_[static_cast<size_t>(device_type)];
  if (!slot) {
    auto L = std::make_unique<Lowered>();
    compiler::OptimizeOptions opts;
    opts.name = name_ + "." + device_type_name(device_type);
    opts.device_type = device_type;
    L->program = compiler::optimize(traced_, opts);
    compiler::MemoryPlan plan = compiler::plan_memory(L->program, donated_);
    lower(L->program, plan.release, false, *L);
    slot = std::move(L);
  }
  return slot.get();
}

const ClosedJaxpr* Executable::device_program(int16_t device_type) const {
  std::lock_guard<std::mutex> lk(device_mu_);
  const std::unique_ptr<Lowered>& slot = device_[static_cast<size_t>(device_type)];
  return slot ? &slot->program : nullptr;
}

Arrays Executable::run(std::span<const Array> args) const {
  if (args.size() != cpu_.in_slots.size())
    fail<ValueError>("jit: expected ", cpu_.in_slots.size(), " arguments, got ", args.size());
  // The program runs where eager code would (graft/core/placement.h): where committed operands live,
  // else on the default device; operands elsewhere move. On the CPU: the compiled loops. On another
  // device: the program optimized for it when its backend generates fused loops, otherwise the traced
  // program op by op (the CPU-optimized one's fused loops and rewrites are the CPU's).
  Placement pl = place(args, "jit", traced_.consts);
  if (!pl.device.is_cpu()) {
    if (compiler::target_of(pl.device.type).fused_loops)
      return run_lowered(*device_lowering(pl.device.type), args, pl.device);
    TraceScope eager(eval_trace());
    return eval_jaxpr(traced_, args);
  }
  if (pl.moves) {  // arrays left on a device, uncommitted: they come to the CPU, as eager operands would
    std::vector<Array> host(args.begin(), args.end());
    for (Array& a : host)
      if (a.is_concrete() && !a.concrete()->device().is_cpu()) a = transfer(a, Device::cpu());
    if (std::any_of(traced_.consts.begin(), traced_.consts.end(),
                    [](const Array& c) { return c.is_concrete() && !c.concrete()->device().is_cpu(); })) {
      TraceScope eager(eval_trace());
      return eval_jaxpr(traced_, host);
    }
    return run_lowered(cpu_, host, std::nullopt);
  }
  return run_lowered(cpu_, args, std::nullopt);
}

Array Executable::argument_on(size_t i, const Array& x, Device d) const {
  // only host arrays nothing can change: not donated (the program may take their storage), not committed
  bool keep = x.device().is_cpu() && !x.concrete()->committed() && (i >= donated_.size() || !donated_[i]);
  if (!keep) return transfer(x, d);
  std::lock_guard<std::mutex> lk(device_mu_);
  auto& cache = device_args_[{d.type, d.index}];
  if (cache.size() <= i) cache.resize(i + 1);
  auto& [host, there] = cache[i];
  if (host.node() != x.node()) {
    host = x;
    there = transfer(x, d);
  }
  return there;
}

const std::vector<Array>& Executable::slot_init_on(const Lowered& L, Device d) const {
  std::lock_guard<std::mutex> lk(device_mu_);
  auto [it, fresh] = device_slots_.try_emplace({d.type, d.index});
  if (fresh) {
    it->second = L.slot_init;
    for (Array& a : it->second)
      if (a.valid() && a.is_concrete() && a.device() != d) a = transfer(a, d);
  }
  return it->second;
}

Arrays Executable::run_lowered(const Lowered& L, std::span<const Array> args, std::optional<Device> device) const {
  const bool on_device = device.has_value();
  // on a device, the constants and literals were moved there once, and arguments elsewhere move now
  std::vector<Array> slots(on_device ? slot_init_on(L, *device) : L.slot_init);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid() || !args[i].is_concrete() || !args[i].aval().same_type(in_avals_[i]))
      fail<TypeError>("jit: argument ", i, " should be a concrete ", in_avals_[i].str(), ", got ",
                      args[i].valid() ? args[i].aval().str() : std::string("null"));
    check_not_deleted(args[i], "jit");
    slots[static_cast<size_t>(L.in_slots[i])] =
        on_device && args[i].device() != *device ? argument_on(i, args[i], *device) : args[i];
  }
  // donated arguments: the program's slot becomes the storage's only holder, so that the plan's
  // releases free it and fused loops may overwrite it; an array passed twice is not taken, nor one that
  // had to move to the program's device (its slot holds the copy)
  if (!donated_.empty()) {
    std::vector<const ArrayNode*> nodes;
    for (auto& a : args) nodes.push_back(a.node());
    std::sort(nodes.begin(), nodes.end());
    for (size_t i = 0; i < donated_.size() && i < args.size(); ++i) {
      if (!donated_[i] || (on_device && args[i].device() != *device)) continue;
      auto [lo, hi] = std::equal_range(nodes.begin(), nodes.end(), args[i].node());
      if (hi - lo > 1) continue;
      if (Ref<ConcreteNode> own = args[i].concrete()->take_storage())
        slots[static_cast<size_t>(L.in_slots[i])] = Array(Ref<ArrayNode>(std::move(own)));
    }
  }
  // On a device each step runs the device's kernel (its fused loops included) directly: the types and
  // the placement eager dispatch would work out per operation are the program's, known once. Steps
  // that run programs of their own (control flow) or choose their device, and every step when
  // GRAFT_DEBUG_NANS checks results, go through eager dispatch.
  std::optional<TraceScope> eager;
  if (on_device) eager.emplace(eval_trace());
  const bool direct = on_device && !config::debug_numerics();
  Arrays in;
  std::vector<Array> dead;
  StepProfile* prof = StepProfile::get();
  for (const Step& st : L.steps) {
    auto t0 = prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    in.clear();
    Arrays out;
    if (on_device && st.prim == &compiler::fusion_p) {
      // operands whose last use is this step are handed over (moved out of their slots), so that the
      // device's fused kernel may write its output into one of them (a donated parameter updated in
      // place)
      for (auto s : st.in) {
        bool last = std::find(st.release.begin(), st.release.end(), s) != st.release.end() &&
                    std::count(st.in.begin(), st.in.end(), s) == 1;
        in.push_back(last ? std::move(slots[static_cast<size_t>(s)]) : slots[static_cast<size_t>(s)]);
      }
      out = direct ? run_step_on_device(*st.prim, in, st.out_avals, st.params, *device) : bind(*st.prim, in, st.params);
      in.clear();
    } else if (st.fused || (!on_device && st.prim == &compiler::dot_general_add_p)) {
      // operands whose last use is this step are moved out of their slots, so that a fused loop (or a
      // product accumulating into its addend) can write its output into one of them when nothing
      // else holds it (liveness-based reuse)
      dead.assign(st.in.size(), Array());
      for (size_t i = 0; i < st.in.size(); ++i) {
        auto s = st.in[i];
        bool last = std::find(st.release.begin(), st.release.end(), s) != st.release.end() &&
                    std::count(st.in.begin(), st.in.end(), s) == 1;
        if (last) {
          dead[i] = std::move(slots[static_cast<size_t>(s)]);
          in.push_back(Array());
        } else {
          in.push_back(slots[static_cast<size_t>(s)]);
        }
      }
      out = st.fused ? st.fused->run(in, dead) : Arrays{compiler::run_dot_general_add(in, dead, st.params)};
      dead.clear();
    } else {
      for (auto s : st.in) in.push_back(slots[static_cast<size_t>(s)]);
      if (!on_device)
        out = st.prim->impl(*st.prim, in, st.out_avals, st.params);
      else if (direct && !st.prim->has(kHigherOrder) && !st.prim->has(kPlacement))
        out = run_step_on_device(*st.prim, in, st.out_avals, st.params, *device);
      else
        out = bind(*st.prim, in, st.params);
    }
    for (size_t k = 0; k < st.out.size(); ++k) slots[static_cast<size_t>(st.out[k])] = std::move(out[k]);
    for (auto s : st.release) slots[static_cast<size_t>(s)] = Array();
    if (prof)
      prof->add(st.label,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  Arrays result;
  for (auto s : L.out_slots) result.push_back(slots[static_cast<size_t>(s)]);
  return result;
}

const Executable& Executable::of(const ClosedJaxpr& j, const std::string& name) {
  // compiling may compile nested programs (a fused body), so the lock is not held while compiling
  static std::mutex mu;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (j.compiled) return *static_cast<const Executable*>(j.compiled.get());
  }
  auto exe = std::make_shared<Executable>(j, name);
  if (env::flag("GRAFT_LOG_COMPILES")) {  // jit's own cache logs its compiles; these are jit_p's (exported programs)
    std::string types;
    for (auto& a : j.in_avals()) types += (types.empty() ? "" : ", ") + a.str();
    const Stats& st = exe->stats();
    std::fprintf(stderr, "graft: compiling %s for (%s) [%s %g ms, kernels %g ms (%d fused loops)]\n", name.c_str(),
                 types.c_str(), st.cached_program ? "cached program" : "optimize", st.optimize_ms, st.kernels_ms,
                 st.fused_loops);
  }
  std::lock_guard<std::mutex> lk(mu);
  if (!j.compiled) j.compiled = std::move(exe);
  return *static_cast<const Executable*>(j.compiled.get());
}

}  // namespace graft
