// simplify: algebraic identities. Each rule looks at one equation (and the equations producing its
// operands) and either forwards an operand, rewrites the equation, or leaves it alone; the driver
// applies them in one forward sweep, so chains (reshape of reshape of reshape) collapse as they go.
#include <optional>
#include <unordered_map>

#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace graft::compiler::passes {

namespace {

using Producers = std::unordered_map<const Var*, const Eqn*>;

struct Ctx {
  const KnownValues& known;
  const Producers& producers;
  const Eqn* producer(const Atom& a) const {
    if (a.is_literal()) return nullptr;
    auto it = producers.find(a.var.get());
    return it == producers.end() ? nullptr : it->second;
  }
};

// What a rule decides: forward an operand in place of the (single) result, or replace the equation
// (after the equations in `before`, which make the replacement's new operands).
struct Rewrite {
  std::optional<Atom> forward;
  std::optional<Eqn> replace;
  std::vector<Eqn> before;
};

// Forwarding x for the result is only exact when x has the result's full type (a rank-0 operand of
// a broadcasting op would change the shape; a weak operand would change the weak type).
bool same_as_result(const Eqn& e, const Atom& x) { return x.aval() == e.outputs[0]->aval; }

Rewrite forward_if_same(const Eqn& e, const Atom& x) {
  if (same_as_result(e, x)) return {x, std::nullopt};
  return {};
}

bool is_identity_perm(const IntList& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Eqn with_input(const Eqn& e, const Atom& x, Params params) {
  Eqn r{e.prim, {x}, e.outputs, std::move(params), e.name_stack};
  return r;
}

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1
Rewrite arithmetic_identity(const Eqn& e, const Ctx& c) {
  using namespace prims;
  if (e.inputs.size() != 2) return {};
  const Array* a = c.known.of(e.inputs[0]);
  const Array* b = c.known.of(e.inputs[1]);
  if (e.prim == &add_p || e.prim == &add_any_p) {
    if (is_scalar_value(b, 0)) return forward_if_same(e, e.inputs[0]);
    if (is_scalar_value(a, 0)) return forward_if_same(e, e.inputs[1]);
  } else if (e.prim == &sub_p) {
    if (is_scalar_value(b, 0)) return forward_if_same(e, e.inputs[0]);
  } else if (e.prim == &mul_p) {
    if (is_scalar_value(b, 1)) return forward_if_same(e, e.inputs[0]);
    if (is_scalar_value(a, 1)) return forward_if_same(e, e.inputs[1]);
  } else if (e.prim == &div_p) {
    if (is_scalar_value(b, 1)) return forward_if_same(e, e.inputs[0]);
  }
  return {};
}

// neg(neg x); stop_gradient and copy are identities once the program runs
Rewrite unary_identity(const Eqn& e, const Ctx& c) {
  using namespace prims;
  if (e.prim == &stop_gradient_p || e.prim == &copy_p) return forward_if_same(e, e.inputs[0]);
  if (e.prim == &neg_p)
    if (const Eqn* p = c.producer(e.inputs[0]); p && p->prim == &neg_p) return forward_if_same(e, p->inputs[0]);
  if (e.prim == &convert_element_type_p) return forward_if_same(e, e.inputs[0]);
  if (e.prim == &integer_pow_p && e.params.get_int("y") == 1) return forward_if_same(e, e.inputs[0]);
  if (e.prim == &select_n_p && e.inputs.size() >= 2) {
    bool all_same = true;
    for (size_t i = 2; i < e.inputs.size(); ++i)
      all_same = all_same && !e.inputs[i].is_literal() && e.inputs[i].var.get() == e.inputs[1].var.get();
    if (all_same && !e.inputs[1].is_literal()) return forward_if_same(e, e.inputs[1]);
  }
  if ((e.prim == &reduce_sum_p || e.prim == &reduce_max_p || e.prim == &reduce_min_p || e.prim == &reduce_prod_p) &&
      e.params.get_ints("axes").empty())
    return forward_if_same(e, e.inputs[0]);
  return {};
}

// reshape to the same shape; reshape/squeeze of a reshape/squeeze
Rewrite reshape_chain(const Eqn& e, const Ctx& c) {
  using namespace prims;
  if (e.prim != &reshape_p && e.prim != &squeeze_p) return {};
  if (e.inputs[0].aval().shape == e.outputs[0]->aval.shape) return forward_if_same(e, e.inputs[0]);
  const Eqn* p = c.producer(e.inputs[0]);
  if (!p || (p->prim != &reshape_p && p->prim != &squeeze_p)) return {};
  const Atom& x = p->inputs[0];
  if (x.aval().shape == e.outputs[0]->aval.shape) return forward_if_same(e, x);
  return {std::nullopt, Eqn{&reshape_p, {x}, e.outputs, {{"new_sizes", IntList(e.outputs[0]->aval.shape.begin(), e.outputs[0]->aval.shape.end())}}}};
}

// transpose by the identity; transpose of a transpose; transpose of a 2-D product swaps its operands
Rewrite transpose_rules(const Eqn& e, const Ctx& c) {
  using namespace prims;
  if (e.prim != &transpose_p) return {};
  const IntList& perm = e.params.get_ints("permutation");
  if (is_identity_perm(perm)) return forward_if_same(e, e.inputs[0]);
  const Eqn* p = c.producer(e.inputs[0]);
  if (!p) return {};
  if (p->prim == &transpose_p) {
    const IntList& inner = p->params.get_ints("permutation");
    IntList q(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) q[i] = inner[static_cast<size_t>(perm[i])];
    if (is_identity_perm(q)) return forward_if_same(e, p->inputs[0]);
    return {std::nullopt, with_input(e, p->inputs[0], {{"permutation", q}})};
  }
  if (p->prim == &dot_general_p && perm.size() == 2) {
    const auto& d = p->params.get_object<lax::DotDims>("dimension_numbers");
    int64_t lfree = p->inputs[0].aval().ndim() - static_cast<int64_t>(d.lhs_contract.size());
    int64_t rfree = p->inputs[1].aval().ndim() - static_cast<int64_t>(d.rhs_contract.size());
    if (!d.lhs_batch.empty() || lfree != 1 || rfree != 1) return {};
    Params np = p->params;
    np.set("dimension_numbers", Ref<const ParamObject>(new lax::DotDims(d.rhs_contract, d.lhs_contract, {}, {})));
    return {std::nullopt, Eqn{&dot_general_p, {p->inputs[1], p->inputs[0]}, e.outputs, np}};
  }
  return {};
}

// broadcast to the same shape; broadcast of a broadcast
Rewrite broadcast_chain(const Eqn& e, const Ctx& c) {
  using namespace prims;
  if (e.prim != &broadcast_in_dim_p) return {};
  const IntList& dims = e.params.get_ints("broadcast_dimensions");
  if (e.inputs[0].aval().shape == e.outputs[0]->aval.shape && is_identity_perm(dims))
    return forward_if_same(e, e.inputs[0]);
  const Eqn* p = c.producer(e.inputs[0]);
  if (!p || p->prim != &broadcast_in_dim_p) return {};
  const IntList& inner = p->params.get_ints("broadcast_dimensions");
  IntList composed;
  for (auto d : inner) composed.push_back(dims[static_cast<size_t>(d)]);
  return {std::nullopt, with_input(e, p->inputs[0], {{"shape", e.params.get_ints("shape")}, {"broadcast_dimensions", composed}})};
}

// iota over a shape of more than one dimension is a broadcast of the 1-D iota along its dimension:
// fused loops read the broadcast's small operand in place (a cross-entropy's one-hot compares labels
// with an iota [B, T, V]: 1 MB written and read every step for 1 KB of values)
Rewrite iota_broadcast(const Eqn& e, const Ctx&) {
  using namespace prims;
  if (e.prim != &iota_p) return {};
  const Aval& r = e.outputs[0]->aval;
  int64_t dim = e.params.get_int("dimension");
  if (r.ndim() < 2 || r.size() == r.shape[static_cast<size_t>(dim)]) return {};
  int64_t n = r.shape[static_cast<size_t>(dim)];
  VarRef line = make_ref<Var>(Aval(Shape{n}, r.dtype));
  Rewrite w;
  w.before.push_back(Eqn{&iota_p, {}, {line}, Params{{"dimension", int64_t(0)}, {"dtype", r.dtype}, {"shape", IntList{n}}}, e.name_stack});
  w.replace = Eqn{&broadcast_in_dim_p, {Atom(line)}, e.outputs,
                  Params{{"shape", IntList(r.shape.begin(), r.shape.end())}, {"broadcast_dimensions", IntList{dim}}},
                  e.name_stack};
  return w;
}

constexpr Rewrite (*kRules[])(const Eqn&, const Ctx&) = {&arithmetic_identity, &unary_identity, &reshape_chain,
                                                         &transpose_rules, &broadcast_chain, &iota_broadcast};

}  // namespace

ClosedJaxpr simplify(const ClosedJaxpr& j) {
  KnownValues known(j);
  Producers producers;
  Ctx ctx{known, producers};
  auto out = std::make_shared<Jaxpr>();
  out->constvars = j.jaxpr->constvars;
  out->invars = j.jaxpr->invars;
  // room for the equations rules add before their replacements (one per iota)
  size_t extra = 0;
  for (const Eqn& e : j.jaxpr->eqns) extra += e.prim == &prims::iota_p;
  out->eqns.reserve(j.jaxpr->eqns.size() + extra);
  Substitution subst;
  bool changed = false;
  for (const Eqn& e0 : j.jaxpr->eqns) {
    Eqn e = e0;
    for (auto& a : e.inputs) a = subst(a);
    bool forwarded = false;
    // a rewritten equation is offered to the rules again (e.g. a transpose of a transpose of a transpose)
    for (int round = 0; round < 8 && !forwarded; ++round) {
      bool rewrote = false;
      if (e.outputs.size() == 1 && !e.prim->has(kEffectful)) {
        for (auto rule : kRules) {
          Rewrite r = rule(e, ctx);
          if (r.forward) {
            subst.replace(e.outputs[0].get(), *r.forward);
            forwarded = true;
            break;
          }
          if (r.replace) {
            for (Eqn& b : r.before) {
              out->eqns.push_back(std::move(b));
              for (auto& v : out->eqns.back().outputs) producers[v.get()] = &out->eqns.back();
            }
            e = std::move(*r.replace);
            rewrote = true;
            break;
          }
        }
      }
      changed = changed || rewrote || forwarded;
      if (!rewrote) break;
    }
    if (forwarded) continue;
    out->eqns.push_back(std::move(e));
    // out->eqns never reallocates (reserved for every input equation and the rules' few additions), so
    // these pointers stay valid
    for (auto& v : out->eqns.back().outputs) producers[v.get()] = &out->eqns.back();
  }
  if (!changed) return j;
  out->outvars = j.jaxpr->outvars;
  for (auto& a : out->outvars) a = subst(a);
  return ClosedJaxpr(out, j.consts);
}

}  // namespace graft::compiler::passes
