#include "graft/parallel/auto_shard.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "graft/compiler/passes/passes.h"
#include "graft/core/error.h"

namespace graft {

namespace {

int64_t memory_limit(int64_t given) {
  if (given > 0) return given;
  const char* e = std::getenv("GRAFT_DEVICE_MEMORY");
  if (!e || !*e) return 0;
  char* end = nullptr;
  double v = std::strtod(e, &end);
  std::string unit = end ? std::string(end) : "";
  double scale = unit.empty() || unit == "B" ? 1 : unit == "K" || unit == "KB" || unit == "KiB" ? 1024.0
                 : unit == "M" || unit == "MB" || unit == "MiB"                             ? 1024.0 * 1024
                 : unit == "G" || unit == "GB" || unit == "GiB"                             ? 1024.0 * 1024 * 1024
                                                                                            : -1;
  if (!(v > 0) || scale < 0)
    fail<ValueError>("GRAFT_DEVICE_MEMORY='", e, "': give bytes, optionally with K, M or G (e.g. 512M)");
  return static_cast<int64_t>(v * scale);
}

double local_bytes(const Aval& a, const ValueSharding& s, const Mesh& mesh) {
  double b = static_cast<double>(itemsize(a.dtype));
  for (size_t d = 0; d < a.shape.size(); ++d)
    b *= static_cast<double>(a.shape[d]) / static_cast<double>(s.dims[d] >= 0 ? ValueSharding::devices_of(mesh, s.dims[d]) : 1);
  return b;
}

// The global program of the call and its leaves' avals.
struct Traced {
  ClosedJaxpr j;
  std::vector<Aval> avals;
};
Traced trace(FlatCall& c) {
  Traced t;
  for (auto& x : c.leaves) {
    Aval a = x.aval();
    a.vma = 0;
    t.avals.push_back(a);
  }
  t.j = compiler::passes::inline_calls(make_jaxpr_flat(c.fn, t.avals, "auto_sharding"));
  return t;
}

struct Evaluator {
  const Traced& t;
  const Mesh& mesh;
  const std::vector<std::pair<size_t, size_t>>& carry;
  int64_t evaluations = 0;
  PlanCost operator()(const std::vector<ValueSharding>& in) {
    ++evaluations;
    std::vector<std::optional<ValueSharding>> out(t.j.jaxpr->outvars.size());
    for (auto [o, i] : carry)
      if (o < out.size() && i < in.size()) out[o] = in[i];
    ShardingPlan plan = propagate_shardings(*t.j.jaxpr, mesh, in, out);
    PlanCost c;
    c.collective_bytes = plan_collective_bytes(*t.j.jaxpr, plan, mesh);
    for (size_t i = 0; i < in.size(); ++i) c.memory_bytes += local_bytes(t.avals[i], in[i], mesh);
    return c;
  }
};

// The layouts a leaf may take: whole, one dimension over one axis, two over two (dimensions that divide).
std::vector<ValueSharding> options_for(const Aval& a, const Mesh& mesh) {
  std::vector<ValueSharding> r{ValueSharding::replicated(a.ndim())};
  int na = static_cast<int>(mesh.axis_names().size());
  for (int64_t d = 0; d < a.ndim(); ++d)
    for (int k = 0; k < na; ++k) {
      if (mesh.shape()[static_cast<size_t>(k)] == 1 || a.shape[static_cast<size_t>(d)] % mesh.shape()[static_cast<size_t>(k)] != 0)
        continue;
      ValueSharding s = ValueSharding::replicated(a.ndim());
      s.dims[static_cast<size_t>(d)] = k;
      r.push_back(s);
      for (int64_t d2 = d + 1; d2 < a.ndim(); ++d2)
        for (int k2 = 0; k2 < na; ++k2) {
          if (k2 == k || mesh.shape()[static_cast<size_t>(k2)] == 1 ||
              a.shape[static_cast<size_t>(d2)] % mesh.shape()[static_cast<size_t>(k2)] != 0)
            continue;
          ValueSharding s2 = s;
          s2.dims[static_cast<size_t>(d2)] = k2;
          r.push_back(s2);
        }
    }
  return r;
}

std::vector<ValueSharding> leaf_layouts(const Mesh& mesh, const std::vector<Aval>& avals,
                                        const std::vector<std::optional<NamedSharding>>& leaf_in) {
  std::vector<ValueSharding> in;
  for (size_t i = 0; i < avals.size(); ++i)
    in.push_back(ValueSharding::from_spec(i < leaf_in.size() && leaf_in[i] ? leaf_in[i]->spec : PartitionSpec(), mesh,
                                          avals[i], "auto_sharding: argument leaf " + std::to_string(i)));
  return in;
}

}  // namespace

namespace detail {

PlanCost plan_cost_flat(FlatCall& c, const Mesh& mesh, const std::vector<std::optional<NamedSharding>>& leaf_in,
                        const std::vector<std::pair<size_t, size_t>>& carry) {
  Traced t = trace(c);
  if (leaf_in.size() != t.avals.size())
    fail<ValueError>("plan_cost: ", leaf_in.size(), " layouts for ", t.avals.size(), " argument leaves");
  Evaluator ev{t, mesh, carry};
  return ev(leaf_layouts(mesh, t.avals, leaf_in));
}

AutoShardingResult auto_sharding_flat(FlatCall& c, const AutoShardingOptions& o) {
  const Mesh& mesh = o.mesh;
  if (o.auto_args.size() != c.num_args())
    fail<ValueError>("auto_sharding: auto_args has ", o.auto_args.size(), " entries for ", c.num_args(), " arguments");
  Traced t = trace(c);
  std::vector<std::optional<NamedSharding>> fixed;
  std::vector<size_t> free;  // the automatic leaves
  for (size_t i = 0; i < c.num_args(); ++i)
    for (size_t k = c.offset[i]; k < c.offset[i + 1]; ++k) {
      fixed.push_back(i < o.in_shardings.size() ? o.in_shardings[i] : std::nullopt);
      if (o.auto_args[i]) {
        fixed.back() = std::nullopt;
        free.push_back(k);
      }
    }
  std::vector<ValueSharding> in = leaf_layouts(mesh, t.avals, fixed);
  const double limit = static_cast<double>(memory_limit(o.device_memory));
  Evaluator ev{t, mesh, o.carry};
  // the excess over the limit dominates every byte moved
  auto objective = [&](const PlanCost& pc) {
    double over = limit > 0 ? std::max(0.0, pc.memory_bytes - limit) : 0;
    return pc.collective_bytes + over * 1e6;
  };
  PlanCost best = ev(in);
  double best_obj = objective(best);
  std::sort(free.begin(), free.end(), [&](size_t a, size_t b) {
    return t.avals[a].size() * static_cast<int64_t>(itemsize(t.avals[a].dtype)) >
           t.avals[b].size() * static_cast<int64_t>(itemsize(t.avals[b].dtype));
  });
  for (int pass = 0; pass < 8; ++pass) {
    bool changed = false;
    for (size_t k : free) {
      ValueSharding keep = in[k];
      for (const ValueSharding& opt : options_for(t.avals[k], mesh)) {
        if (opt == keep) continue;
        in[k] = opt;
        PlanCost pc = ev(in);
        double obj = objective(pc);
        if (obj < best_obj - 1e-9) {
          best_obj = obj;
          best = pc;
          keep = opt;
          changed = true;
        }
      }
      in[k] = keep;
    }
    if (!changed) break;
  }
  AutoShardingResult r;
  r.collective_bytes = best.collective_bytes;
  r.memory_bytes = best.memory_bytes;
  r.evaluations = ev.evaluations;
  for (size_t i = 0; i < c.num_args(); ++i) {
    r.in_leaf_shardings.emplace_back();
    for (size_t k = c.offset[i]; k < c.offset[i + 1]; ++k)
      r.in_leaf_shardings.back().push_back(NamedSharding{mesh, in[k].spec(mesh)});
  }
  r.out_shardings.assign(t.j.jaxpr->outvars.size(), std::nullopt);
  for (auto [out, leaf] : o.carry)
    if (out < r.out_shardings.size() && leaf < in.size()) r.out_shardings[out] = NamedSharding{mesh, in[leaf].spec(mesh)};
  std::ostringstream s;
  s << "automatic sharding over " << mesh.str() << ": " << best.collective_bytes << " bytes of collectives per step, "
    << best.memory_bytes << " bytes of arguments per device";
  if (limit > 0) s << " (limit " << limit << ")";
  s << ", " << ev.evaluations << " plans costed\n";
  std::vector<size_t> order = free;
  std::sort(order.begin(), order.end());
  for (size_t k : order) s << "  leaf " << k << " " << t.avals[k].str() << ": " << in[k].spec(mesh).str() << "\n";
  r.summary = s.str();
  if (limit > 0 && best.memory_bytes > limit)
    fail<ValueError>("auto_sharding: no layout found that fits ", static_cast<int64_t>(limit), " bytes per device (best: ",
                     static_cast<int64_t>(best.memory_bytes), " bytes); ", r.summary);
  return r;
}

}  // namespace detail

std::vector<std::pair<size_t, size_t>> training_state_carry(const Tree& params, const Tree& state) {
  size_t n = params.leaves().size() + state.leaves().size();
  std::vector<std::pair<size_t, size_t>> r;
  for (size_t k = 0; k < n; ++k) r.push_back({k, k});
  return r;
}

}  // namespace graft
