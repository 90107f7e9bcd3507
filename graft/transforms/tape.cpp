// The eager tape (GradientTape, and requires_grad_ / backward / grad on arrays).
#include "graft/transforms/tape.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "graft/interp/staging.h"
#include "graft/interp/transpose.h"
#include "graft/prims/lax.h"

namespace graft {

namespace {

// One recorded operation: the linear map from the tangents of its recorded inputs to the tangents
// of its floating outputs, with the nodes those inputs came from.
std::atomic<int64_t> g_live_nodes{0};

struct TapeNode : RefCounted {
  TapeNode() { ++g_live_nodes; }
  ~TapeNode() override { --g_live_nodes; }
  ClosedJaxpr linear;
  std::vector<std::pair<Ref<TapeNode>, int>> inputs;  ///< (producer, its output index) per linear input
  std::vector<int> out_slot;                          ///< output index -> linear output (-1: none)
  std::vector<Aval> out_avals;
  uint64_t seq = 0;  ///< creation order: a node comes after every node it uses
  Array grad;        ///< leaves of the requires_grad style: the accumulated gradient
  bool leaf = false;
};

uint64_t next_seq() {
  static std::atomic<uint64_t> n{0};
  return ++n;
}

class TapeTracer final : public Tracer {
 public:
  TapeTracer(Ref<Trace> t, Array primal, Ref<TapeNode> node, int index)
      : Tracer(primal.aval(), std::move(t)), primal(std::move(primal)), node(std::move(node)), index(index) {}
  std::optional<Array> concrete_value() const override {
    if (primal.is_concrete()) return primal;
    return primal.tracer()->concrete_value();
  }
  Array primal;
  Ref<TapeNode> node;
  int index;
};

struct EndOnExit {
  Trace* t;
  ~EndOnExit() { t->end(); }
};

}  // namespace

class TapeTrace final : public Trace {
 public:
  explicit TapeTrace(Ref<Trace> parent) : Trace(std::move(parent), "tape") {}
  std::string describe() const override { return "a gradient tape"; }

  Array make(const Array& primal, Ref<TapeNode> node, int index) {
    return Array(Ref<ArrayNode>(new TapeTracer(Ref<Trace>(this), primal, std::move(node), index)));
  }
  TapeTracer* tape_tracer(const Array& x) const { return static_cast<TapeTracer*>(own(x)); }

  Array watch(const Array& x) {
    if (!x.valid() || !is_inexact(x.dtype()))
      fail<TypeError>("GradientTape.watch: only floating arrays have gradients, got ",
                      x.valid() ? x.aval().str() : std::string("a null array"));
    auto n = make_ref<TapeNode>();
    n->leaf = true;
    n->seq = next_seq();
    n->out_slot = {0};
    n->out_avals = {Aval(x.shape(), x.dtype())};
    return make(x, n, 0);
  }

  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override {
    Arrays primals;
    std::vector<size_t> tracked;
    for (size_t i = 0; i < in.size(); ++i) {
      if (TapeTracer* t = tape_tracer(in[i])) {
        primals.push_back(t->primal);
        tracked.push_back(i);
      } else {
        primals.push_back(in[i]);
      }
    }
    if (tracked.empty()) {
      TraceScope scope(parent());
      return bind(p, primals, params);
    }
    // linearize this one application: primal work runs in the parent, tangent equations are staged
    auto S = make_ref<StagingTrace>(Ref<Trace>(parent()), "tape", /*forward_known=*/true);
    EndOnExit end{S.get()};
    auto node = make_ref<TapeNode>();
    Arrays tangents(in.size());
    for (size_t i : tracked) {
      TapeTracer* t = tape_tracer(in[i]);
      tangents[i] = S->new_arg(t->primal.aval());
      node->inputs.emplace_back(t->node, t->index);
    }
    if (!p.jvp) fail<NotImplementedError>(p.name, ": differentiation is not implemented for this primitive");
    JvpResult r;
    {
      TraceScope scope(S.get());
      r = p.linearize ? p.linearize(p, primals, tangents, params) : p.jvp(p, primals, tangents, params);
    }
    std::vector<Array> touts;
    for (size_t k = 0; k < r.primals.size(); ++k) {
      bool has = k < r.tangents.size() && r.tangents[k].valid() && is_inexact(r.primals[k].dtype());
      node->out_slot.push_back(has ? static_cast<int>(touts.size()) : -1);
      if (has) {
        touts.push_back(r.tangents[k]);
        node->out_avals.push_back(Aval(r.primals[k].shape(), r.primals[k].dtype()));
      }
    }
    if (touts.empty()) return r.primals;
    node->linear = S->finish(touts);
    node->seq = next_seq();
    Arrays out;
    for (size_t k = 0; k < r.primals.size(); ++k)
      out.push_back(node->out_slot[k] >= 0 ? make(r.primals[k], node, node->out_slot[k]) : r.primals[k]);
    return out;
  }

  /// Cotangents of every node output reachable from `target`, seeded with ones.
  std::unordered_map<const TapeNode*, Arrays> backward(const Array& target) const {
    std::unordered_map<const TapeNode*, Arrays> cts;
    TapeTracer* t = tape_tracer(target);
    if (!t) return cts;
    // the reachable nodes, latest first
    std::vector<TapeNode*> order;
    std::unordered_map<const TapeNode*, bool> seen;
    std::vector<TapeNode*> stack{t->node.get()};
    while (!stack.empty()) {
      TapeNode* n = stack.back();
      stack.pop_back();
      if (seen[n]) continue;
      seen[n] = true;
      order.push_back(n);
      for (auto& [src, idx] : n->inputs) stack.push_back(src.get());
    }
    std::sort(order.begin(), order.end(), [](const TapeNode* a, const TapeNode* b) { return a->seq > b->seq; });
    TraceScope scope(parent());  // an enclosing tape (or jit) records the backward pass
    auto add = [&](const TapeNode* n, int slot, const Array& ct) {
      if (!ct.valid()) return;
      Arrays& v = cts[n];
      if (v.empty()) v.resize(n->out_avals.size());
      v[static_cast<size_t>(slot)] = v[static_cast<size_t>(slot)].valid() ? lax::add_any(v[static_cast<size_t>(slot)], ct) : ct;
    };
    add(t->node.get(), t->index, lax::full(t->primal.shape(), 1.0, t->primal.dtype()));
    for (TapeNode* n : order) {
      if (n->leaf) continue;
      auto it = cts.find(n);
      if (it == cts.end()) continue;
      Arrays in_cts = backward_pass(*n->linear.jaxpr, n->linear.consts, it->second);
      for (size_t k = 0; k < n->inputs.size(); ++k) add(n->inputs[k].first.get(), n->inputs[k].second, in_cts[k]);
      cts.erase(it);  // free as we go
    }
    return cts;  // what is left: the leaves'
  }
};

int64_t GradientTape::live_nodes() { return g_live_nodes.load(); }

GradientTape::GradientTape() : trace_(make_ref<TapeTrace>(Ref<Trace>(current_trace()))), scope_(new TraceScope(trace_.get())) {}

GradientTape::~GradientTape() {
  delete scope_;
  trace_->end();
}

Array GradientTape::watch(const Array& x) { return trace_->watch(x); }

void GradientTape::stop_recording() {
  delete scope_;
  scope_ = nullptr;
}

std::vector<Array> GradientTape::gradient(const Array& target, const std::vector<Array>& sources) const {
  if (!target.valid()) fail<ValueError>("GradientTape.gradient: the target is a null array");
  auto cts = trace_->backward(target);
  std::vector<Array> out;
  for (auto& s : sources) {
    TapeTracer* t = s.valid() ? trace_->tape_tracer(s) : nullptr;
    if (!t || !t->node->leaf)
      fail<ValueError>("GradientTape.gradient: a source is not an array returned by this tape's watch()");
    auto it = cts.find(t->node.get());
    out.push_back(it != cts.end() && it->second[0].valid() ? it->second[0] : lax::zeros(Aval(s.shape(), s.dtype())));
  }
  return out;
}

// ---- the requires_grad style: a tape per thread that stays open ------------------------------------
namespace {
TapeTrace* default_tape() {
  thread_local Ref<TapeTrace> tape;
  thread_local std::unique_ptr<TraceScope> scope;
  if (!tape) {
    if (current_trace() != eval_trace())
      fail<ValueError>("requires_grad_: call it in eager code (not inside jit, grad, vmap or a GradientTape)");
    tape = make_ref<TapeTrace>(Ref<Trace>(current_trace()));
    scope = std::make_unique<TraceScope>(tape.get());
  }
  return tape.get();
}

TapeTracer* default_tracer(const Array& x) {
  TapeTrace* t = default_tape();
  return x.is_tracer() && x.tracer()->trace() == t ? static_cast<TapeTracer*>(x.tracer()) : nullptr;
}
}  // namespace

Array& requires_grad(Array& x) {
  TapeTrace* t = default_tape();
  if (!default_tracer(x)) x = t->watch(x);
  return x;
}

void backward(const Array& loss) {
  TapeTrace* t = default_tape();
  if (!default_tracer(loss))
    fail<ValueError>("backward: this ", loss.aval().str(), " array does not depend on any array with requires_grad_()");
  if (loss.size() != 1) fail<ShapeError>("backward: the array must have one element (a loss), got ", loss.aval().str());
  for (auto& [node, ct] : t->backward(loss)) {
    if (!node->leaf || !ct[0].valid()) continue;
    auto* n = const_cast<TapeNode*>(node);
    n->grad = n->grad.valid() ? lax::add(n->grad, ct[0]) : ct[0];
  }
}

Array tape_grad(const Array& x) {
  TapeTracer* t = x.is_tracer() ? default_tracer(x) : nullptr;
  if (!t || !t->node->leaf) fail<ValueError>("grad: only arrays marked with requires_grad_() have a gradient");
  return t->node->grad;
}

void zero_grad(const Array& x) {
  TapeTracer* t = x.is_tracer() ? default_tracer(x) : nullptr;
  if (t && t->node->leaf) t->node->grad = Array();
}

}  // namespace graft
