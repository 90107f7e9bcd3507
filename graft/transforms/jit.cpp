// The jit call primitive (all its rules) and jit's trace cache.
#include "graft/transforms/jit.h"
#include "graft/core/env.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "graft/core/config.h"
#include "graft/core/trace.h"
#include "graft/ir/print_rules.h"
#include "graft/interp/transpose.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control_util.h"
#include "graft/transforms/control.h"
#include "graft/transforms/custom.h"
#include "graft/transforms/polymorphic.h"
#include "graft/transforms/remat.h"

namespace graft {

namespace {

const ClosedJaxpr& call_of(const Params& p) { return p.get_jaxpr("jaxpr"); }
const std::string& name_of(const Params& p) { return p.get<std::string>("name"); }

std::string mask_key(const char* tag, const std::vector<bool>& m) {
  std::string k = tag;
  for (bool b : m) k += b ? '1' : '0';
  return k;
}

Avals jit_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  const auto& invars = c.jaxpr->invars;
  if (in.size() != invars.size())
    fail<ValueError>("jit: the function takes ", invars.size(), " arrays, got ", in.size(), " (", prims::avals_str(in),
                     ")");
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]->same_type(invars[i]->aval))
      fail<TypeError>("jit: argument ", i, " has type ", in[i]->str(), ", the traced function expects ",
                      invars[i]->aval.str());
  Avals out;
  for (auto& a : c.out_avals()) out.push_back(a);
  return out;
}

Arrays jit_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  const ClosedJaxpr& body = call_of(params);
  if (!config::debug_numerics()) return Executable::of(body, name_of(params)).run(in);
  DebugScope scope("jit(" + name_of(params) + ")");
  Arrays out = Executable::of(body, name_of(params)).run(in);
  try {
    check_numerics(p, in, params, out);
  } catch (const FloatingPointError& whole) {
    // JAX's way: run the program again op by op, where each primitive's outputs are checked
    TraceScope eager(eval_trace());
    eval_jaxpr(body, in);
    throw FloatingPointError(std::string(whole.what()) +
                             "; run op by op, the program makes none (the compiled program computes differently)");
  }
  return out;
}

JvpResult jit_jvp(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  std::vector<bool> nz;
  for (auto& t : tangents) nz.push_back(t.valid());
  auto jj = c.derived<ClosedJaxpr>(mask_key("jvp", nz), [&] { return *hoisted(jvp_jaxpr(c, nz)); });
  Arrays args(primals.begin(), primals.end());
  for (auto& t : tangents)
    if (t.valid()) args.push_back(t);
  Arrays outs = jit_call(jj, args, name_of(params));
  size_t n = outs.size() / 2;
  JvpResult r;
  for (size_t i = 0; i < n; ++i) {
    r.primals.push_back(outs[i]);
    r.tangents.push_back(outs[n + i]);
  }
  return r;
}

// Under grad: the body is linearized once per tangent mask into a known part (primal outputs and
// residuals; run now, as one jit call) and its linear part, whose equations are recorded into the
// linear program being built (the current trace). Higher-order primitives inside the body apply their
// own linearize rules (a scan stacks its residuals, a while_loop records its trip count).
struct LinearizedCall {
  JaxprPtr known, linear;
  std::vector<bool> out_nonzero;
};

JvpResult jit_linearize(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                        const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  std::vector<bool> nz;
  for (auto& t : tangents) nz.push_back(t.valid());
  auto lc = c.derived<LinearizedCall>(mask_key("linearize", nz), [&] {
    LinearizedJaxpr lj = linearize_jaxpr(c, nz, /*instantiate=*/false);
    return LinearizedCall{hoisted(lj.known), std::make_shared<const ClosedJaxpr>(lj.linear), lj.out_nonzero};
  });
  Arrays known_outs = jit_call(lc->known, primals, name_of(params));
  size_t n = lc->out_nonzero.size();
  Arrays lin_in(known_outs.begin() + static_cast<std::ptrdiff_t>(n), known_outs.end());
  for (auto& t : tangents)
    if (t.valid()) lin_in.push_back(t);
  Arrays touts = eval_jaxpr(*lc->linear, lin_in);
  JvpResult r;
  r.primals.assign(known_outs.begin(), known_outs.begin() + static_cast<std::ptrdiff_t>(n));
  r.tangents.resize(n);
  for (size_t k = 0, t = 0; k < n; ++k)
    if (lc->out_nonzero[k]) r.tangents[k] = touts[t++];
  return r;
}

Arrays jit_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  const Jaxpr& j = *c.jaxpr;
  // view the body as linear in the linear arguments, with its consts and the other arguments known
  Jaxpr view;
  view.constvars = j.constvars;
  std::vector<Array> known = c.consts;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].linear) {
      view.invars.push_back(j.invars[i]);
    } else {
      view.constvars.push_back(j.invars[i]);
      known.push_back(args[i].value);
    }
  }
  view.eqns = j.eqns;
  view.outvars = j.outvars;
  Arrays lin_cts = backward_pass(view, known, cts);
  Arrays out(args.size());
  size_t k = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].linear) out[i] = lin_cts[k++];
  return out;
}

BatchResult jit_batch(const Primitive&, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  std::string key = control::batch_key("vmap", axis, dims);
  std::vector<int64_t> dv(dims.begin(), dims.end());
  // results the same on every lane (a psum's) stay unbatched, as they would be without the jit
  struct Batched {
    JaxprPtr jaxpr;
    std::vector<bool> mapped;
  };
  auto bj = c.derived<Batched>(key, [&] {
    Batched b;
    b.jaxpr = hoisted(batch_jaxpr(c, dv, axis.size, axis.name, &b.mapped));
    return b;
  });
  Arrays outs = jit_call(bj->jaxpr, vals, name_of(params));
  BatchDims od;
  for (bool m : bj->mapped) od.push_back(m ? 0 : kNotMapped);
  return {std::move(outs), od};
}

}  // namespace

const Primitive jit_p{"jit",           kHigherOrder | kMultipleResults | kCall | kVmaRule, &jit_shape, &jit_impl, &jit_jvp,
                      &jit_transpose, &jit_batch,                      &jit_linearize};

JaxprPtr hoisted(const ClosedJaxpr& j) {
  for (auto& c : j.consts)
    if (!c.is_concrete())
      fail<ValueError>("jit: a derived jaxpr captured a traced value (", c.aval().str(), "); this is a graft bug");
  return std::make_shared<const ClosedJaxpr>(j.jaxpr, j.consts);
}

namespace {
// JAX 0.11's _pjit_pp_rule: jit[name=f jaxpr={ lambda ; a:f32[]. ... }], the name first and the jaxpr's
// binders named like the equation's operands and results
std::vector<PrintedParam> print_jit(const Eqn& e) {
  std::vector<PrintedParam> out;
  if (auto* n = e.params.find("name")) out.push_back({"name", *n});
  for (auto& [k, v] : e.params)
    if (std::string_view(k) != "name") out.push_back({k, v, std::string_view(k) == "jaxpr"});
  return out;
}

void register_jit() {
  static const bool registered = [] {
    prims::register_primitive(&jit_p);
    register_param_spelling("jit", {.print = &print_jit});
    return true;
  }();
  (void)registered;
}
}  // namespace

namespace control {
void register_scan();  // graft/transforms/scan.cpp
}  // namespace control

void register_transform_primitives() {
  static const bool registered = [] {
    register_jit();
    register_custom_call_primitives();
    control::register_scan();
    for (const Primitive* p : {&cond_p, &while_p, &call_p, &checkpoint_p, &name_p}) prims::register_primitive(p);
    return true;
  }();
  (void)registered;
}

Arrays jit_call(const JaxprPtr& call, std::span<const Array> args, const std::string& name) {
  register_jit();
  return bind(jit_p, args, {{"jaxpr", call}, {"name", name}});
}

namespace detail {

bool log_compiles() {
  // read on every cache miss (rare), so that it can be switched on while a program runs
  return env::flag("GRAFT_LOG_COMPILES");
}

char config_key_byte() {
  return static_cast<char>((config::enable_x64() ? 1 : 0) | (config::threefry_partitionable() ? 2 : 0));
}

void append_aval_key(std::string& key, const std::vector<Array>& leaves) {
  // a compact binary spelling: the key is built on every call, so no number formatting here. The x64
  // mode changes what a trace makes of its integer operands (their promotion to floating point), the
  // threefry mode what its random draws hash.
  key.push_back(config_key_byte());
  for (auto& x : leaves) {
    if (!x.valid()) fail<ValueError>("jit: a null array was passed");
    const Aval& a = x.aval();
    key.push_back(static_cast<char>(a.dtype));
    key.push_back(static_cast<char>(a.weak_type));
    key.push_back(static_cast<char>(a.shape.size()));
    key.append(reinterpret_cast<const char*>(a.shape.data()), a.shape.size() * sizeof(int64_t));
    // the named axes a traced argument varies over shape the trace's reverse mode (interp/transpose.cpp)
    key.push_back(static_cast<char>(a.vma != 0));
    if (a.vma) key.append(reinterpret_cast<const char*>(&a.vma), sizeof a.vma);
  }
}

namespace {
std::string avals_list(const std::vector<Aval>& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i].str();
  return s + ")";
}

std::string explain_miss(const std::vector<std::pair<std::string, std::vector<Aval>>>& history,
                         const std::string& key, const std::vector<Aval>& avals) {
  if (history.empty()) return "first call";
  // the most similar earlier trace: same number of arrays, fewest differences
  const std::vector<Aval>* best = nullptr;
  size_t best_diff = SIZE_MAX;
  for (auto& [k, a] : history) {
    if (a.size() != avals.size()) continue;
    size_t d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] == avals[i]) ? 0 : 1;
    if (d < best_diff) {
      best_diff = d;
      best = &a;
    }
  }
  if (!best) return "the number of array arguments changed (now " + std::to_string(avals.size()) + ")";
  if (best_diff == 0) return "static arguments or the pytree structure changed";
  std::string s;
  for (size_t i = 0; i < avals.size(); ++i) {
    if ((*best)[i] == avals[i]) continue;
    if (!s.empty()) s += "; ";
    s += "array argument " + std::to_string(i) + " changed from " + (*best)[i].str() +
         ((*best)[i].weak_type ? " (weak)" : "") + " to " + avals[i].str() + (avals[i].weak_type ? " (weak)" : "");
  }
  (void)key;
  return s;
}
}  // namespace

std::shared_ptr<const JitEntry> JitState::get(const std::string& key, const std::vector<Array>& leaves,
                                              const std::function<ClosedJaxpr(TreeDef&)>& trace,
                                              const std::vector<bool>& donated) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  std::vector<Aval> avals;
  for (auto& x : leaves) avals.push_back(x.aval());
  std::string why;
  {
    std::lock_guard<std::mutex> lk(mu_);
    why = explain_miss(history_, key, avals);
  }
  auto e = std::make_shared<JitEntry>();
  auto t0 = std::chrono::steady_clock::now();
  ClosedJaxpr closed = trace(e->out_def);  // no lock held: the function may call itself
  auto t1 = std::chrono::steady_clock::now();
  e->call = std::make_shared<const ClosedJaxpr>(hoist_consts(*closed.jaxpr), std::vector<Array>{});
  e->consts = closed.consts;
  bool cacheable = true;
  for (auto& c : e->consts) cacheable = cacheable && c.is_concrete();
  if (cacheable && std::find(donated.begin(), donated.end(), true) != donated.end()) {
    // the executable that takes donated storage is this entry's own (jit_p's cached one, used when
    // the call is traced inside another function, donates nothing)
    std::vector<bool> d(e->consts.size(), false);
    d.insert(d.end(), donated.begin(), donated.end());
    e->exe = std::make_shared<const Executable>(*e->call, opts.name, std::move(d));
  } else if (cacheable) {
    e->exe = std::shared_ptr<const Executable>(e->call, &Executable::of(*e->call, opts.name));
  }
  std::lock_guard<std::mutex> lk(mu_);
  ++traces_;
  if (log_compiles()) {
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::cerr << "graft: tracing jit(" << opts.name << ") for " << avals_list(avals) << " -- " << why
              << (cacheable ? "" : " (not cached: it closes over a value of an enclosing transformation)");
    std::cerr << " [trace " << ms(t0, t1) << " ms";
    if (e->exe)
      std::cerr << (e->exe->stats().cached_program ? ", cached program " : ", optimize ") << e->exe->stats().optimize_ms
                << " ms, kernels " << e->exe->stats().kernels_ms
                << " ms (" << e->exe->stats().fused_loops << " fused loops)";
    std::cerr << "]\n";
  }
  if (!cacheable) return e;
  history_.emplace_back(key, avals);
  cache_[key] = e;
  return e;
}

std::shared_ptr<const JitEntry> JitState::find(const std::string& key) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second;
}

std::vector<Array> JitState::run(const JitEntry& e, const std::vector<Array>& leaves) const {
  std::vector<Array> args = e.consts;
  args.insert(args.end(), leaves.begin(), leaves.end());
  // with GRAFT_DEBUG_NANS the call goes through the jit primitive, which checks (and keeps donated
  // arguments alive, so that it can run the program again op by op)
  bool eager = current_trace() == eval_trace() && e.exe && !config::debug_numerics();
  for (auto& a : args) eager = eager && a.is_concrete();
  Arrays out = eager ? e.exe->run(args) : jit_call(e.call, args, opts.name);
  return std::vector<Array>(out.begin(), out.end());
}

}  // namespace detail

// ---- the front end -------------------------------------------------------------------------------------
JitFunction::JitFunction(JitOptions o)
    : poly_(o.polymorphic.empty() ? nullptr : std::make_shared<detail::PolyState>(o)),
      st_(std::make_shared<detail::JitState>(std::move(o))) {}

const JitOptions& JitFunction::options() const { return st_->opts; }
size_t JitFunction::num_traces() const { return st_->num_traces(); }
size_t JitFunction::num_compiles() const { return st_->num_traces() + (poly_ ? poly_->num_compiles() : 0); }

std::vector<bool> JitFunction::donated_leaves(const FlatCall& c) const {
  const auto& nums = st_->opts.donate_argnums;
  if (nums.empty()) return {};
  std::vector<bool> d(c.leaves.size(), false);
  for (int a : nums) {
    if (a < 0 || static_cast<size_t>(a) >= c.num_args())
      fail<ValueError>("jit(", st_->opts.name, "): donate_argnums has ", a, " but the function was called with ",
                       c.num_args(), " arguments");
    if (!c.traced[static_cast<size_t>(a)])
      fail<TypeError>("jit(", st_->opts.name, "): donated argument ", a, " is static (not an array or a pytree of arrays)");
    for (size_t k = c.offset[static_cast<size_t>(a)]; k < c.offset[static_cast<size_t>(a) + 1]; ++k) d[k] = true;
  }
  return d;
}

namespace {
thread_local bool tl_jit_disabled = false;
}  // namespace

DisableJit::DisableJit(bool disable) : saved_(tl_jit_disabled) { tl_jit_disabled = disable; }
DisableJit::~DisableJit() { tl_jit_disabled = saved_; }
bool jit_disabled() { return tl_jit_disabled; }

std::vector<Array> JitFunction::operator()(FlatCall& c) const {
  if (tl_jit_disabled) return c.fn(c.leaves);  // op by op (fn records the output's structure)
  auto trace = [&](const std::vector<Aval>& avals, TreeDef& out_def) {
    ClosedJaxpr j = make_jaxpr_flat(c.fn, avals, "jit");
    if (c.out_def) out_def = *c.out_def;
    return j;
  };
  std::vector<bool> donated = donated_leaves(c);
  if (poly_ && detail::PolyState::eager_here() &&
      std::all_of(c.leaves.begin(), c.leaves.end(), [](const Array& x) { return x.valid() && x.is_concrete(); })) {
    // called eagerly: batch sizes share the program of a bucket
    std::vector<int64_t> axes = poly_->leaf_axes(c.leaves, c.offset.data(), c.traced.data(), c.num_args());
    if (auto r = poly_->call(c.key, c.leaves, axes, trace, donated)) {
      if (c.out_def) *c.out_def = r->out_def;
      return std::move(r->outs);
    }
  }
  std::string key = c.key;
  detail::append_aval_key(key, c.leaves);
  auto entry = st_->get(
      key, c.leaves,
      [&](TreeDef& out_def) {
        std::vector<Aval> avals;
        for (auto& x : c.leaves) avals.push_back(x.aval());
        return trace(avals, out_def);
      },
      donated);
  if (c.out_def) *c.out_def = entry->out_def;
  return st_->run(*entry, c.leaves);
}

std::shared_ptr<const detail::JitEntry> JitFunction::cached(const std::string& key) const { return st_->find(key); }

namespace {
// A program whose leading inputs stand for `consts` (jit's hoisted form) as a closed jaxpr with them as
// constvars again: what a reader expects to see.
ClosedJaxpr with_consts(const ClosedJaxpr& hoisted, const std::vector<Array>& consts) {
  auto j = std::make_shared<Jaxpr>(*hoisted.jaxpr);
  size_t n = std::min(consts.size(), j->invars.size());
  j->constvars.insert(j->constvars.end(), j->invars.begin(), j->invars.begin() + static_cast<std::ptrdiff_t>(n));
  j->invars.erase(j->invars.begin(), j->invars.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<Array> cs = hoisted.consts;
  cs.insert(cs.end(), consts.begin(), consts.end());
  return ClosedJaxpr{std::move(j), std::move(cs)};
}

std::string text(const ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}
}  // namespace

Lowered JitFunction::lower(FlatCall& c) const {
  std::string key = c.key;
  detail::append_aval_key(key, c.leaves);
  auto entry = st_->get(key, c.leaves, [&](TreeDef& out_def) {
    std::vector<Aval> avals;
    for (auto& x : c.leaves) avals.push_back(x.aval());
    ClosedJaxpr j = make_jaxpr_flat(c.fn, avals, "jit");
    if (c.out_def) out_def = *c.out_def;
    return j;
  });
  if (!entry->exe)
    fail<TypeError>("jit(", st_->opts.name, ").lower: the function closes over a value of an enclosing transformation ",
                    "(a tracer): lower it outside that transformation, or pass the value as an argument");
  if (c.out_def) *c.out_def = entry->out_def;
  Lowered l;
  l.entry_ = entry;
  l.st_ = st_;
  for (auto& x : c.leaves) l.in_avals_.push_back(x.aval());
  l.key_ = std::move(key);
  l.jaxpr_ = with_consts(*entry->call, entry->consts);
  return l;
}

std::string Lowered::as_text() const { return text(jaxpr_); }
compiler::CostAnalysis Lowered::cost_analysis() const { return compiler::cost_analysis(jaxpr_); }

Compiled Lowered::compile() const {
  Compiled c;
  c.entry_ = entry_;
  c.st_ = st_;
  c.in_avals_ = in_avals_;
  c.key_ = key_;
  c.program_ = with_consts(entry_->exe->program(), entry_->consts);
  return c;
}

std::vector<Array> Compiled::operator()(const std::vector<Array>& leaves) const {
  if (leaves.size() != in_avals_.size())
    fail<TypeError>("compiled jit(", st_->opts.name, "): called with ", leaves.size(), " arrays, it was compiled for ",
                    in_avals_.size(), " (", detail::avals_list(in_avals_), ")");
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Aval& a = leaves[i].aval();
    if (a.shape != in_avals_[i].shape || a.dtype != in_avals_[i].dtype)
      fail<TypeError>("compiled jit(", st_->opts.name, "): argument ", i, " is ", a.str(), ", it was compiled for ",
                      in_avals_[i].str(), " (a compiled function is not traced again: lower it for these types)");
  }
  return st_->run(*entry_, leaves);
}

std::string Compiled::as_text() const { return text(program_); }
compiler::CostAnalysis Compiled::cost_analysis() const { return compiler::cost_analysis(program_); }
std::vector<Aval> Compiled::out_avals() const { return program_.jaxpr->out_avals(); }

MemoryAnalysis Compiled::memory_analysis() const {
  MemoryAnalysis m;
  for (auto& a : in_avals_) m.argument_bytes += a.size() * static_cast<int64_t>(itemsize(a.dtype));
  for (auto& a : out_avals()) m.output_bytes += a.size() * static_cast<int64_t>(itemsize(a.dtype));
  m.peak_bytes = entry_->exe->peak_bytes();
  return m;
}

std::vector<Array> JitFunction::run(const detail::JitEntry& e, const std::vector<Array>& leaves) const {
  return st_->run(e, leaves);
}

}  // namespace graft
