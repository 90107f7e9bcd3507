#include "graft/transforms/graph.h"

#include "graft/interp/staging.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/jit.h"
#include "graft/prims/lax.h"

namespace graft {

Function::Function(ClosedJaxpr j, std::string name)
    : jaxpr_(std::make_shared<const ClosedJaxpr>(hoist_consts(*j.jaxpr), std::vector<Array>{})),
      consts_(j.consts),
      closed_(std::move(j)),
      name_(std::move(name)),
      in_avals_(closed_.in_avals()) {
  for (auto& c : consts_)
    if (!c.is_concrete())
      fail<ValueError>("Function '", name_, "': the graph captured a traced value of type ", c.aval().str(),
                       "; make it a placeholder instead");
}

std::vector<Array> Function::operator()(const std::vector<Array>& args) const {
  if (args.size() != in_avals_.size())
    fail<ValueError>("Function '", name_, "' takes ", in_avals_.size(), " arrays, got ", args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].valid() || !args[i].aval().same_type(in_avals_[i]))
      fail<TypeError>("Function '", name_, "': argument ", i, " has type ",
                      args[i].valid() ? args[i].aval().str() : std::string("null"), ", the graph's placeholder is ",
                      in_avals_[i].str());
  std::vector<Array> all = consts_;
  all.insert(all.end(), args.begin(), args.end());
  Arrays out = jit_call(jaxpr_, all, name_);
  return std::vector<Array>(out.begin(), out.end());
}

Graph::Graph(std::string name)
    : trace_(make_ref<StagingTrace>(Ref<Trace>(current_trace()), "graph")),
      scope_(std::make_unique<TraceScope>(trace_.get())),
      name_(std::move(name)) {}

Graph::~Graph() {
  scope_.reset();
  trace_->end();
}

Array Graph::placeholder(const Shape& shape, DType d) {
  if (!scope_) fail<ValueError>("Graph '", name_, "': placeholder() after function() closed the graph");
  placeholders_.push_back(trace_->new_arg(Aval(shape, d)));
  return placeholders_.back();
}

Function Graph::function(const std::vector<Array>& inputs, const std::vector<Array>& outputs) {
  if (!scope_) fail<ValueError>("Graph '", name_, "': function() was already called; the graph is closed");
  // the staged jaxpr's invars are all placeholders in creation order; pick `inputs`
  std::vector<size_t> order;
  for (auto& x : inputs) {
    size_t k = 0;
    while (k < placeholders_.size() && placeholders_[k].node() != x.node()) ++k;
    if (k == placeholders_.size()) fail<ValueError>("Graph '", name_, "': an input is not a placeholder of this graph");
    order.push_back(k);
  }
  scope_.reset();
  ClosedJaxpr all = trace_->finish(outputs);
  trace_->end();
  if (order.size() != placeholders_.size()) {
    // placeholders not among the inputs must be unused
    std::vector<bool> listed(placeholders_.size(), false);
    for (size_t k : order) listed[k] = true;
    for (size_t k = 0; k < listed.size(); ++k) {
      if (listed[k]) continue;
      const Var* v = all.jaxpr->invars[k].get();
      bool used = false;
      for (auto& e : all.jaxpr->eqns)
        for (auto& a : e.inputs) used = used || a.var.get() == v;
      for (auto& a : all.jaxpr->outvars) used = used || a.var.get() == v;
      if (used)
        fail<ValueError>("Graph '", name_, "': the outputs depend on placeholder ", k, " (", v->aval.str(),
                         "), which is not among the function's inputs");
    }
    auto j = std::make_shared<Jaxpr>(*all.jaxpr);
    j->invars.clear();
    for (size_t k : order) j->invars.push_back(all.jaxpr->invars[k]);
    return Function(ClosedJaxpr(std::move(j), all.consts), name_);
  }
  return Function(permute_invars(all, order), name_);
}

Function grad(const Function& f, const std::vector<int>& argnums) {
  std::vector<Aval> avals = f.jaxpr().in_avals();
  std::vector<Aval> outs = f.jaxpr().out_avals();
  if (outs.empty() || !outs[0].shape.empty() || !is_floating(outs[0].dtype))
    fail<TypeError>("grad of Function '", f.name(), "': its first output must be a floating scalar, got ",
                    outs.empty() ? std::string("no outputs") : outs[0].str());
  for (int a : argnums)
    if (a < 0 || static_cast<size_t>(a) >= avals.size())
      fail<ValueError>("grad of Function '", f.name(), "': argnum ", a, " is out of range for ", avals.size(), " inputs");
  FlatFn g = [&](const std::vector<Array>& args) {
    VjpResult r = vjp_flat([&](const std::vector<Array>& xs) { return f(xs); }, args);
    std::vector<Array> cts(r.outs.size());
    cts[0] = lax::full({}, 1.0, outs[0].dtype);
    std::vector<Array> all = r.pullback(cts), picked;
    for (int a : argnums) picked.push_back(all[static_cast<size_t>(a)]);
    return picked;
  };
  return Function(make_jaxpr_flat(g, avals, "grad"), "grad(" + f.name() + ")");
}

}  // namespace graft
