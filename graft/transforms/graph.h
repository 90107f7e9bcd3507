// Explicit graphs: the Theano / TF1 paradigm on graft's IR.
//
//   Graph g;                                        // operations on placeholders are recorded
//   Array x = g.placeholder({3}), w = g.placeholder({3});
//   Array y = sum(sin(x) * w);
//   Function f = g.function({x, w}, {y});           // closes the graph: a callable jaxpr
//   f({array({1.f, 2.f, 3.f}), ones({3})});          // compiled on first call, like jit
//   Function df = grad(f, {0, 1});                  // a new graph: dy/dx, dy/dw
//   std::cout << df.jaxpr();
//
// A Function is a closed jaxpr with a name; calling it binds the jit call primitive, so it runs
// compiled eagerly and composes with every transformation (jit, grad, vmap, ...) like any function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/trace.h"
#include "graft/ir/jaxpr.h"

namespace graft {

class StagingTrace;

class Function {
 public:
  Function(ClosedJaxpr j, std::string name);
  std::vector<Array> operator()(const std::vector<Array>& args) const;
  /// The graph (captured constants as constvars).
  const ClosedJaxpr& jaxpr() const { return closed_; }
  const std::string& name() const { return name_; }

 private:
  JaxprPtr jaxpr_;  ///< consts hoisted into leading inputs
  std::vector<Array> consts_;
  ClosedJaxpr closed_;
  std::string name_;
  std::vector<Aval> in_avals_;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// A new input of the graph.
  Array placeholder(const Shape& shape, DType d = DType::f32);
  /// The graph as a function from `inputs` (placeholders, in this order) to `outputs`. Closes the
  /// graph: no more operations are recorded.
  Function function(const std::vector<Array>& inputs, const std::vector<Array>& outputs);

 private:
  Ref<StagingTrace> trace_;
  std::unique_ptr<TraceScope> scope_;
  std::vector<Array> placeholders_;
  std::string name_;
};

/// The gradient graph of f (whose first output must be a floating scalar) with respect to the
/// inputs at `argnums`: a Function with the same inputs returning one gradient per argnum.
Function grad(const Function& f, const std::vector<int>& argnums = {0});
inline Function grad(const Function& f, std::initializer_list<int> argnums) {
  return grad(f, std::vector<int>(argnums));
}

}  // namespace graft
