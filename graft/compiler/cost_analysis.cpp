// Cost analysis over a jaxpr. Primitives are recognized by name and flag (kElementwise) rather than by
// their Primitive objects so that this file depends on no family's rules; new primitives without a
// formula still count their memory traffic.
#include "graft/compiler/cost_analysis.h"

#include <algorithm>
#include <string_view>

#include "graft/prims/lax.h"

namespace graft::compiler {

namespace {

double elements(const Aval& a) { return static_cast<double>(a.size()); }
double bytes(const Aval& a) { return elements(a) * static_cast<double>(itemsize(a.dtype)); }

bool transcendental(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "exp",   "exp2",  "expm1", "log",   "log1p", "tanh",  "logistic", "sin",  "cos",   "tan",    "asin",
      "acos",  "atan",  "atan2", "sinh",  "cosh",  "asinh", "acosh",    "atanh", "erf",  "erfc",   "erf_inv",
      "pow",   "sqrt",  "rsqrt", "cbrt",  "lgamma", "digamma", "igamma", "igammac", "bessel_i0e", "bessel_i1e"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

bool reduction(std::string_view n) {
  return n.starts_with("reduce_") || n == "argmax" || n == "argmin" || n.starts_with("cum");
}

// 2 x (result elements) x (the contracted size).
double dot_flops(const Eqn& e) {
  const auto& d = e.params.get_object<lax::DotDims>("dimension_numbers");
  const Aval& lhs = e.inputs[0].aval();
  double k = 1;
  for (int64_t a : d.lhs_contract) k *= static_cast<double>(lhs.shape[static_cast<size_t>(a)]);
  return 2 * elements(e.outputs[0]->aval) * k;
}

// 2 x (result elements) x (kernel elements per output feature): each result element is a dot product
// of a window of the input's features in its group.
double conv_flops(const Eqn& e) {
  const auto& d = e.params.get_object<lax::ConvDims>("dimension_numbers");
  const Aval& rhs = e.inputs[1].aval();
  double out_features = static_cast<double>(rhs.shape[static_cast<size_t>(d.rhs_spec[0])]);
  return 2 * elements(e.outputs[0]->aval) * elements(rhs) / std::max(out_features, 1.0);
}

// The sub-jaxpr a call-like primitive evaluates, or null.
const ClosedJaxpr* callee(const Eqn& e) {
  for (const char* k : {"jaxpr", "call_jaxpr", "fun_jaxpr"})
    if (const ParamValue* v = e.params.find(k))
      if (auto* p = std::get_if<JaxprPtr>(v); p && *p) return p->get();
  for (const auto& [k, v] : e.params)
    if (auto* p = std::get_if<JaxprPtr>(&v); p && *p) return p->get();
  return nullptr;
}

void add(CostAnalysis& to, const CostAnalysis& c, double times = 1) {
  to.flops += times * c.flops;
  to.transcendentals += times * c.transcendentals;
  to.bytes_accessed += times * c.bytes_accessed;
}

CostAnalysis analyze(const Jaxpr& j);

// A higher-order equation: its bodies' costs (their operations' traffic stands for the equation's own).
bool analyze_higher_order(const Eqn& e, CostAnalysis& c) {
  std::string_view n = e.prim->name;
  if (n == "scan") {
    add(c, analyze(*e.params.get_jaxpr("jaxpr").jaxpr), static_cast<double>(e.params.get_int("length")));
    return true;
  }
  if (n == "while") {
    add(c, analyze(*e.params.get_jaxpr("cond_jaxpr").jaxpr));
    add(c, analyze(*e.params.get_jaxpr("body_jaxpr").jaxpr));
    return true;
  }
  if (n == "cond") {
    CostAnalysis most;
    for (const auto& b : e.params.get_jaxprs("branches")) {
      CostAnalysis cb = analyze(*b->jaxpr);
      if (cb.flops + cb.bytes_accessed > most.flops + most.bytes_accessed) most = cb;
    }
    add(c, most);
    return true;
  }
  const ClosedJaxpr* body = callee(e);
  if (!body) return false;
  CostAnalysis inner = analyze(*body->jaxpr);
  if (n == "fusion") {
    // one loop: its arithmetic, and only the traffic of its operands and results
    inner.bytes_accessed = 0;
    for (const auto& a : e.inputs) inner.bytes_accessed += bytes(a.aval());
    for (const auto& o : e.outputs) inner.bytes_accessed += bytes(o->aval);
  }
  add(c, inner);
  return true;
}

CostAnalysis analyze(const Jaxpr& j) {
  CostAnalysis c;
  for (const Eqn& e : j.eqns) {
    if (e.prim->has(kHigherOrder) && analyze_higher_order(e, c)) continue;
    std::string_view n = e.prim->name;
    for (const auto& a : e.inputs) c.bytes_accessed += bytes(a.aval());
    for (const auto& o : e.outputs) c.bytes_accessed += bytes(o->aval);
    double out = e.outputs.empty() ? 0 : elements(e.outputs[0]->aval);
    if (n == "dot_general") {
      c.flops += dot_flops(e);
    } else if (n == "dot_bias") {
      c.flops += dot_flops(e) + out;  // the product, and the bias added to it
    } else if (n == "dot_bias_grad") {
      // x^T g contracting axis 0 of both, and g summed over it
      c.flops += 2 * out * static_cast<double>(e.inputs[0].aval().shape[0]) + elements(e.inputs[1].aval());
    } else if (n == "conv_general_dilated") {
      c.flops += conv_flops(e);
    } else if (reduction(n)) {
      c.flops += elements(e.inputs[0].aval());
    } else if (e.prim->has(kElementwise)) {
      c.flops += out;
      if (transcendental(n)) c.transcendentals += out;
    }
  }
  return c;
}

}  // namespace

CostAnalysis cost_analysis(const ClosedJaxpr& j) { return analyze(*j.jaxpr); }

}  // namespace graft::compiler
