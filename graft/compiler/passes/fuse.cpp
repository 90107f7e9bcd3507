// fuse: groups equations into fused loops (the `fusion` primitive, graft/compiler/fusion.h).
//
// A greedy producer-consumer grouping in program order, as XLA does it: an equation joins the group
// of one of its operands when its shape fits the group's domain (N elements, rows of C) and joining
// creates no cycle between groups; when its operands come from several compatible groups they merge.
// Broadcasts of values from outside start groups of their own, so that their consumers merge them in
// and the broadcast is never materialized; a broadcast read by several loops is first copied for each
// (split_broadcasts). Groups with a single computation stay plain equations.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "graft/compiler/fusion.h"
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/target.h"
#include "graft/prims/primitives.h"

namespace graft::compiler::passes {

namespace {

enum class Role { none, map, reduce, broadcast, alias };

constexpr size_t kMaxOperands = 8;

// A lone elementwise equation still becomes a fused loop when the generated loop beats the eager
// kernel by far: the transcendental functions (their C++ kernels, one dependency chain per
// vector and masked clamps, ran at half the generated loops' speed: exp 0.25 -> 0.14 ns an element
// on one thread), and outputs far beyond the caches (non-temporal stores and prefetching: exp of 64
// MiB 2.3 -> 1.4 ms, x * 2 1.8 -> 1.4 ms).
bool generated_beats_eager(const Eqn& e) {
  using namespace prims;
  const Primitive* p = e.prim;
  if (p == &exp_p || p == &log_p || p == &tanh_p || p == &logistic_p) return true;
  return e.outputs[0]->aval.nbytes() >= static_cast<size_t>(kStreamingBytes);
}

Role classify(const Eqn& e) {
  using namespace prims;
  if (e.outputs.size() != 1 || e.prim->has(kEffectful) || e.prim->has(kHigherOrder)) return Role::none;
  if (auto fusible = current_target().fusible; fusible && !fusible(e)) return Role::none;
  int64_t out_n = e.outputs[0]->aval.size();
  if (e.prim == &broadcast_in_dim_p) {
    bool ok = out_n >= 2 && broadcast_pattern(e.inputs[0].aval().shape, e.outputs[0]->aval.shape,
                                              e.params.get_ints("broadcast_dimensions"));
    return ok ? Role::broadcast : Role::none;
  }
  if (e.prim == &reshape_p || e.prim == &squeeze_p) return Role::alias;
  if (fusible_row_length(e)) return Role::reduce;
  if (e.prim->tile && e.inputs.size() <= kMaxOperands && out_n >= 2) {
    std::vector<Aval> in;
    for (auto& a : e.inputs) in.push_back(a.aval());
    if (e.prim->tile(*e.prim, in, e.params).map) return Role::map;
  }
  return Role::none;
}

struct Group {
  int64_t n = 0, row = 0;     // domain size, row length (0: no reductions yet)
  bool row_to_full = false;   // broadcasts a row value of its own back to full size: needs whole rows
  std::vector<size_t> members;
  int64_t rows() const { return row ? n / row : 0; }
};

class Fuser {
 public:
  // copies: results of split_broadcasts' per-reader copies, which start groups of their own
  Fuser(const Jaxpr& j, std::unordered_set<const Var*> copies) : j_(j), copies_(std::move(copies)) {}

  ClosedJaxpr run(const ClosedJaxpr& cj);

 private:
  int find(int g) {
    while (parent_[static_cast<size_t>(g)] != g) g = parent_[static_cast<size_t>(g)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(g)])];
    return g;
  }
  int group_of(size_t eqn) { return group_[eqn] < 0 ? -1 : find(group_[eqn]); }
  int producer(const Atom& a) const {
    if (a.is_literal()) return -1;
    auto it = producer_.find(a.var.get());
    return it == producer_.end() ? -1 : static_cast<int>(it->second);
  }
  bool in_group(const Atom& a, int g) {
    int p = producer(a);
    return p >= 0 && group_of(static_cast<size_t>(p)) == g;
  }
  void consider(size_t i);
  // Whether a member computes a full-sized value from a smaller value made in group `other` (after a
  // merge with `other` that value would be a row value of the merged group).
  bool reads_smaller(const std::vector<size_t>& members, int other) {
    for (size_t m : members) {
      const Eqn& e = j_.eqns[m];
      if (role_[m] != Role::map && role_[m] != Role::broadcast) continue;
      for (auto& a : e.inputs)
        if (in_group(a, other) && a.aval().size() < e.outputs[0]->aval.size()) return true;
    }
    return false;
  }
  // A full-sized result computed from a smaller value of the group (a reduction's result): the group
  // then needs whole rows in a block.
  bool depends_on_row(size_t i, int gid) {
    const Eqn& e = j_.eqns[i];
    if (role_[i] != Role::map && role_[i] != Role::broadcast) return false;
    int64_t out_n = e.outputs[0]->aval.size();
    for (auto& a : e.inputs)
      if (in_group(a, gid) && a.aval().size() < out_n) return true;
    return false;
  }
  bool fits(size_t i, const Group& g, int gid);
  bool reaches(size_t from, const std::unordered_set<int>& targets);
  bool creates_cycle(const std::vector<size_t>& unit, const std::unordered_set<int>& targets);
  void merge(int into, int from);
  // the kept group of equation `eqn`, or -1
  int unit_of(size_t eqn) {
    int g = group_of(eqn);
    return g >= 0 && keep_[static_cast<size_t>(g)] ? g : -1;
  }
  std::unordered_map<int, Eqn> fused_equations();
  std::shared_ptr<Jaxpr> in_dependency_order(const std::unordered_map<int, Eqn>& fused);

  const Jaxpr& j_;
  std::vector<Role> role_;
  std::vector<int> group_, parent_;
  std::vector<Group> groups_;
  std::unordered_map<const Var*, size_t> producer_;
  std::vector<bool> keep_;  // per group: becomes a fusion equation
  std::unordered_set<const Var*> copies_;
};

// Whether equation i, given its role, fits group g's domain.
bool Fuser::fits(size_t i, const Group& g, int gid) {
  const Eqn& e = j_.eqns[i];
  int64_t out_n = e.outputs[0]->aval.size();
  switch (role_[i]) {
    case Role::map:
      if (out_n == g.n) return !(g.row > kMaxRowElements && depends_on_row(i, gid));
      return g.row && out_n == g.rows();
    case Role::reduce: {
      int64_t c = fusible_row_length(e);
      if (e.inputs[0].aval().size() != g.n || (g.row && g.row != c)) return false;
      return !(c > kMaxRowElements && g.row_to_full);
    }
    case Role::broadcast: {
      if (out_n != g.n) return false;
      const Atom& a = e.inputs[0];
      if (!in_group(a, gid)) return true;  // a load of an outside value
      int64_t m = a.aval().size();
      if (m == g.n) return true;  // only unit dimensions added
      if (m == 1) return !(g.row > kMaxRowElements);
      auto pat = broadcast_pattern(a.aval().shape, e.outputs[0]->aval.shape, e.params.get_ints("broadcast_dimensions"));
      return g.row && g.row <= kMaxRowElements && m == g.rows() && pat->inner == g.row && pat->mod == g.rows();
    }
    case Role::alias:
      return true;
    case Role::none:
      return false;
  }
  return false;
}

// Does the value made by equation `from` depend on a group in `targets`? Groups count as units: a
// value that depends on any member depends on the whole group.
bool Fuser::reaches(size_t from, const std::unordered_set<int>& targets) {
  std::vector<size_t> stack{from};
  std::unordered_set<size_t> seen{from};
  while (!stack.empty()) {
    size_t x = stack.back();
    stack.pop_back();
    int g = group_of(x);
    if (g >= 0 && targets.count(g)) return true;
    auto push = [&](size_t eqn) {
      for (auto& a : j_.eqns[eqn].inputs) {
        int p = producer(a);
        if (p >= 0 && seen.insert(static_cast<size_t>(p)).second) stack.push_back(static_cast<size_t>(p));
      }
    };
    if (g >= 0) {
      for (size_t m : groups_[static_cast<size_t>(g)].members) push(m);
    } else {
      push(x);
    }
  }
  return false;
}

// Would fusing `unit` (equations) with the groups in `targets` create a cycle? Only if an operand from
// outside depends on one of the targets.
bool Fuser::creates_cycle(const std::vector<size_t>& unit, const std::unordered_set<int>& targets) {
  for (size_t m : unit)
    for (auto& a : j_.eqns[m].inputs) {
      int p = producer(a);
      if (p < 0) continue;
      int g = group_of(static_cast<size_t>(p));
      if (g >= 0 && targets.count(g)) continue;
      if (reaches(static_cast<size_t>(p), targets)) return true;
    }
  return false;
}

void Fuser::merge(int into, int from) {
  Group& a = groups_[static_cast<size_t>(into)];
  Group& b = groups_[static_cast<size_t>(from)];
  a.row = a.row ? a.row : b.row;
  a.row_to_full = a.row_to_full || b.row_to_full || reads_smaller(b.members, into) || reads_smaller(a.members, from);
  a.members.insert(a.members.end(), b.members.begin(), b.members.end());
  b.members.clear();
  parent_[static_cast<size_t>(from)] = into;
}

void Fuser::consider(size_t i) {
  const Eqn& e = j_.eqns[i];
  Role r = role_[i];
  if (r == Role::none) return;
  std::vector<int> cands;
  // a reader's copy of a broadcast goes with its reader, not with the group that made its operand
  // (which would export the full array again)
  const bool copy = r == Role::broadcast && copies_.count(e.outputs[0].get());
  for (auto& a : e.inputs) {
    if (copy) break;
    int p = producer(a);
    if (p < 0) continue;
    int g = group_of(static_cast<size_t>(p));
    if (g >= 0 && std::find(cands.begin(), cands.end(), g) == cands.end()) cands.push_back(g);
  }
  int chosen = -1;
  for (int g : cands) {
    if (!fits(i, groups_[static_cast<size_t>(g)], g)) continue;
    if (creates_cycle({i}, {g})) continue;
    chosen = g;
    break;
  }
  if (chosen >= 0) {
    for (int g2 : cands) {
      if (g2 == chosen || find(g2) != g2) continue;
      Group& a = groups_[static_cast<size_t>(chosen)];
      Group& b = groups_[static_cast<size_t>(g2)];
      if (a.n != b.n || (a.row && b.row && a.row != b.row)) continue;
      int64_t row = a.row ? a.row : b.row;
      bool row_to_full = a.row_to_full || b.row_to_full || reads_smaller(b.members, chosen) ||
                         reads_smaller(a.members, g2) || reads_smaller({i}, g2) || reads_smaller({i}, chosen);
      if (row > kMaxRowElements && row_to_full) continue;
      std::vector<size_t> unit = a.members;
      unit.insert(unit.end(), b.members.begin(), b.members.end());
      unit.push_back(i);
      if (creates_cycle(unit, {chosen, g2})) continue;
      merge(chosen, g2);
    }
  } else {
    if (r == Role::alias) return;  // a reshape of an outside value stays outside
    Group g;
    g.n = r == Role::reduce ? e.inputs[0].aval().size() : e.outputs[0]->aval.size();
    groups_.push_back(g);
    parent_.push_back(static_cast<int>(groups_.size() - 1));
    chosen = static_cast<int>(groups_.size() - 1);
  }
  Group& g = groups_[static_cast<size_t>(chosen)];
  if (r == Role::reduce) g.row = fusible_row_length(e);
  if (depends_on_row(i, chosen)) g.row_to_full = true;
  g.members.push_back(i);
  group_[i] = chosen;
}

ClosedJaxpr Fuser::run(const ClosedJaxpr& cj) {
  size_t ne = j_.eqns.size();
  role_.resize(ne);
  group_.assign(ne, -1);
  for (size_t i = 0; i < ne; ++i) {
    role_[i] = classify(j_.eqns[i]);
    consider(i);
    for (auto& v : j_.eqns[i].outputs) producer_[v.get()] = i;
  }
  // keep groups that do at least one computation besides loads and aliases, in at least two equations
  // or in one that a generated loop runs much faster than the eager kernel
  keep_.assign(groups_.size(), false);
  bool any = false;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (parent_[g] != static_cast<int>(g)) continue;
    int compute = 0;
    for (size_t m : groups_[g].members) compute += (role_[m] == Role::map || role_[m] == Role::reduce) ? 1 : 0;
    bool lone_worth_it = false;
    for (size_t m : groups_[g].members)
      lone_worth_it = lone_worth_it || (role_[m] == Role::map && generated_beats_eager(j_.eqns[m]));
    keep_[g] = compute >= 1 && (groups_[g].members.size() >= 2 || lone_worth_it);
    any = any || keep_[g];
  }
  if (!any) return cj;
  std::unordered_map<int, Eqn> fused = fused_equations();
  return ClosedJaxpr(in_dependency_order(fused), cj.consts);
}

// One fusion equation per kept group: its body holds the members with fresh variables; what the rest
// of the program reads from them becomes the body's outputs.
std::unordered_map<int, Eqn> Fuser::fused_equations() {
  std::unordered_set<const Var*> used_outside;
  for (size_t i = 0; i < j_.eqns.size(); ++i)
    for (auto& a : j_.eqns[i].inputs) {
      int p = producer(a);
      if (p < 0) continue;
      int gp = unit_of(static_cast<size_t>(p));
      if (gp >= 0 && unit_of(i) != gp) used_outside.insert(a.var.get());
    }
  for (auto& a : j_.outvars)
    if (!a.is_literal()) used_outside.insert(a.var.get());
  std::unordered_map<int, Eqn> fused;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!keep_[g] || parent_[g] != static_cast<int>(g)) continue;
    std::vector<size_t> members = groups_[g].members;
    std::sort(members.begin(), members.end());
    auto body = std::make_shared<Jaxpr>();
    std::unordered_map<const Var*, VarRef> inner;  // outer variable -> body variable
    // the loop carries its first member's name stack (GRAFT_PROFILE's row, printed jaxprs)
    Eqn call{&fusion_p, {}, {}, {}, j_.eqns[members.front()].name_stack};
    auto body_atom = [&](const Atom& a) -> Atom {
      if (a.is_literal()) return a;
      auto it = inner.find(a.var.get());
      if (it != inner.end()) return Atom(it->second);
      VarRef v = make_ref<Var>(a.var->aval);
      inner[a.var.get()] = v;
      body->invars.push_back(v);
      call.inputs.push_back(a);
      return Atom(v);
    };
    for (size_t m : members) {
      const Eqn& e = j_.eqns[m];
      Eqn c{e.prim, {}, {}, e.params, e.name_stack};
      for (auto& a : e.inputs) c.inputs.push_back(body_atom(a));
      for (auto& v : e.outputs) {
        VarRef nv = make_ref<Var>(v->aval);
        inner[v.get()] = nv;
        c.outputs.push_back(nv);
        if (used_outside.count(v.get())) {
          body->outvars.push_back(Atom(nv));
          call.outputs.push_back(v);
        }
      }
      body->eqns.push_back(std::move(c));
    }
    call.params.set("jaxpr", std::make_shared<const ClosedJaxpr>(body, std::vector<Array>{}));
    fused.emplace(static_cast<int>(g), std::move(call));
  }
  return fused;
}

// The program with each group replaced by its fusion equation, in a dependency order (a group's
// outputs may be read between its members' old positions); otherwise the original order.
std::shared_ptr<Jaxpr> Fuser::in_dependency_order(const std::unordered_map<int, Eqn>& fused) {
  struct Unit {
    const Eqn* eqn;
    size_t order;
  };
  std::vector<Unit> units;
  std::unordered_map<int, size_t> unit_of_group;
  for (size_t i = 0; i < j_.eqns.size(); ++i) {
    int g = unit_of(i);
    if (g < 0) {
      units.push_back({&j_.eqns[i], i});
    } else if (!unit_of_group.count(g)) {
      unit_of_group[g] = units.size();
      units.push_back({&fused.at(g), i});
    } else {
      units[unit_of_group[g]].order = i;  // at its last member
    }
  }
  std::unordered_map<const Var*, size_t> unit_of_var;
  for (size_t u = 0; u < units.size(); ++u)
    for (auto& v : units[u].eqn->outputs) unit_of_var[v.get()] = u;
  std::vector<std::vector<size_t>> users(units.size());
  std::vector<int> pending(units.size(), 0);
  for (size_t u = 0; u < units.size(); ++u) {
    std::unordered_set<size_t> preds;
    for (auto& a : units[u].eqn->inputs)
      if (!a.is_literal())
        if (auto it = unit_of_var.find(a.var.get()); it != unit_of_var.end() && it->second != u) preds.insert(it->second);
    pending[u] = static_cast<int>(preds.size());
    for (size_t p : preds) users[p].push_back(u);
  }
  auto later = [&](size_t a, size_t b) { return units[a].order > units[b].order; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
  for (size_t u = 0; u < units.size(); ++u)
    if (pending[u] == 0) ready.push(u);
  auto out = std::make_shared<Jaxpr>();
  out->constvars = j_.constvars;
  out->invars = j_.invars;
  out->outvars = j_.outvars;
  while (!ready.empty()) {
    size_t u = ready.top();
    ready.pop();
    out->eqns.push_back(*units[u].eqn);
    for (size_t w : users[u])
      if (--pending[w] == 0) ready.push(w);
  }
  if (out->eqns.size() != units.size()) fail<ValueError>("fuse: the grouping has a cycle; this is a graft compiler bug");
  return out;
}

// A broadcast of a smaller value is free inside a fused loop (a load of the small value) but a full
// array outside one: give every reader that can fuse it its own copy (placed just before it), so that
// no group has to export it. Scalars and rows alike: a layer norm's forward loop otherwise writes its
// rows' rsqrt and its gamma broadcast to [B, T, C] for the backward loops to read back.
std::shared_ptr<const Jaxpr> split_broadcasts(const Jaxpr& j, std::unordered_set<const Var*>& copies) {
  std::unordered_map<const Var*, const Eqn*> bcast;
  std::unordered_map<const Var*, int> uses;
  for (auto& e : j.eqns) {
    if (e.prim == &prims::broadcast_in_dim_p && e.inputs[0].aval().size() < e.outputs[0]->aval.size() &&
        classify(e) == Role::broadcast)
      bcast[e.outputs[0].get()] = &e;
    for (auto& a : e.inputs)
      if (!a.is_literal()) ++uses[a.var.get()];
  }
  for (auto& a : j.outvars)
    if (!a.is_literal()) ++uses[a.var.get()];
  bool any = false;
  for (auto& [v, e] : bcast) any = any || uses[v] > 1;
  if (!any) return nullptr;
  auto out = std::make_shared<Jaxpr>();
  out->constvars = j.constvars;
  out->invars = j.invars;
  out->outvars = j.outvars;
  std::unordered_map<const Var*, int> seen;
  for (const Eqn& e0 : j.eqns) {
    Eqn e = e0;
    // a reader that cannot fuse the copy (a product) shares the original: a copy would be another
    // full array (as it still is where the reader's group cannot take it: rows beyond kMaxRowElements)
    const Role reader = classify(e0);
    const bool fusible = reader != Role::none && reader != Role::alias;
    for (auto& a : e.inputs) {
      if (a.is_literal()) continue;
      auto it = bcast.find(a.var.get());
      if (it == bcast.end() || ++seen[a.var.get()] == 1 || !fusible) continue;  // the first reader keeps the original
      Eqn copy = *it->second;
      copy.outputs = {make_ref<Var>(a.var->aval)};
      copies.insert(copy.outputs[0].get());
      a = Atom(copy.outputs[0]);
      out->eqns.push_back(std::move(copy));
    }
    out->eqns.push_back(std::move(e));
  }
  return out;
}

}  // namespace

ClosedJaxpr fuse(const ClosedJaxpr& j) {
  std::unordered_set<const Var*> copies;
  std::shared_ptr<const Jaxpr> split = split_broadcasts(*j.jaxpr, copies);
  const Jaxpr& src = split ? *split : *j.jaxpr;
  Fuser f(src, std::move(copies));
  ClosedJaxpr r = f.run(split ? ClosedJaxpr(split, j.consts) : j);
  for (auto& e : r.jaxpr->eqns)
    if (e.prim == &fusion_p) return r;
  return j;  // nothing fused: keep the program as it was (without the copied broadcasts)
}

}  // namespace graft::compiler::passes
