#include "graft/parallel/pjit.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "graft/compiler/passes/passes.h"
#include "graft/core/axis_names.h"
#include "graft/core/error.h"
#include "graft/runtime/collectives.h"

namespace graft {

namespace {

std::string mesh_key(const Mesh& m) {
  std::string k = m.str();
  for (auto& d : m.devices()) k += "," + std::to_string(d.id);
  return k;
}

// The global avals of the arguments: across processes each passes its block, whose split dimensions
// are the whole's divided by their axes.
std::vector<Aval> global_avals(const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                               const std::vector<Array>& args) {
  std::vector<Aval> r;
  for (size_t i = 0; i < args.size(); ++i) {
    Aval a = args[i].aval();
    a.vma = 0;
    if (!mesh.is_local() && in[i])
      for (size_t d = 0; d < in[i]->dims.size() && d < a.shape.size(); ++d)
        if (in[i]->dims[d]) a.shape[d] *= mesh.split_size(in[i]->dims[d]);
    r.push_back(a);
  }
  return r;
}

struct Partitioned {
  std::shared_ptr<const ClosedJaxpr> global;
  std::shared_ptr<const ShardingPlan> plan;
  std::vector<PartitionSpec> in_specs, out_specs;
};

Partitioned partition(const FlatFn& f, const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                      const std::vector<std::optional<PartitionSpec>>& out, const std::vector<Aval>& avals) {
  if (in.size() != avals.size())
    fail<ValueError>("pjit: ", in.size(), " in_shardings for ", avals.size(), " argument leaves");
  std::vector<ValueSharding> in_vs;
  for (size_t i = 0; i < avals.size(); ++i)
    in_vs.push_back(ValueSharding::from_spec(in[i].value_or(PartitionSpec()), mesh, avals[i],
                                             "pjit: argument leaf " + std::to_string(i)));
  auto global = std::make_shared<const ClosedJaxpr>(compiler::passes::inline_calls(make_jaxpr_flat(f, avals, "pjit")));
  auto outs = global->out_avals();
  if (out.size() > 1 && out.size() != outs.size())
    fail<ValueError>("pjit: out_shardings has ", out.size(), " entries for ", outs.size(),
                     " output leaves (give one per output leaf, or one for all)");
  std::vector<std::optional<ValueSharding>> out_vs;
  for (size_t k = 0; k < outs.size(); ++k) {
    const auto& o = out.empty() ? std::nullopt : out[out.size() == 1 ? 0 : k];
    out_vs.push_back(o ? std::optional<ValueSharding>(ValueSharding::from_spec(*o, mesh, outs[k], "pjit: output leaf " + std::to_string(k)))
                       : std::nullopt);
  }
  Partitioned p;
  p.global = global;
  p.plan = std::make_shared<const ShardingPlan>(propagate_shardings(*global->jaxpr, mesh, in_vs, out_vs));
  for (auto& s : in_vs) p.in_specs.push_back(s.spec(mesh));
  for (auto& s : p.plan->outputs) p.out_specs.push_back(s.spec(mesh));
  return p;
}

// One device's program: the partitioned body traced on blocks, with the mesh's axes bound.
ClosedJaxpr local_program(const Partitioned& p, const Mesh& mesh) {
  std::vector<std::unique_ptr<AxisScope>> scopes;
  for (size_t k = 0; k < mesh.axis_names().size(); ++k)
    scopes.push_back(std::make_unique<AxisScope>(AxisFrame{mesh.axis_names()[k], mesh.shape()[k], nullptr}));
  std::vector<Aval> blocks;
  for (size_t i = 0; i < p.plan->inputs.size(); ++i) {
    Aval a = p.global->jaxpr->invars[i]->aval;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      for (int k : ValueSharding::axes_of(p.plan->inputs[i].dims[d])) {
        a.shape[d] /= mesh.shape()[static_cast<size_t>(k)];
        a.vma |= axis_bit(mesh.axis_names()[static_cast<size_t>(k)]);
      }
    }
    blocks.push_back(a);
  }
  auto g = p.global;
  auto plan = p.plan;
  return make_jaxpr_flat([&](const std::vector<Array>& b) { return run_partitioned(*g, *plan, mesh, b); }, blocks,
                         "pjit");
}

void dump(const Partitioned& p, const Mesh& mesh) {
  const char* dir = std::getenv("GRAFT_DUMP_IR");
  if (!dir || !*dir) return;
  static std::atomic<int> counter{0};
  std::string path = std::string(dir) + "/pjit_" + std::to_string(counter++) + ".txt";
  std::ofstream os(path);
  os << "# the program at global shapes\n" << *p.global << "\n# layouts\n" << plan_str(*p.global->jaxpr, *p.plan, mesh)
     << "# one device's program\n" << local_program(p, mesh) << "\n";
}

}  // namespace

std::vector<Array> pjit_flat(const FlatFn& f, const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                             const std::vector<std::optional<PartitionSpec>>& out, const std::vector<Array>& args,
                             std::vector<PartitionSpec>* out_specs) {
  Partitioned p = partition(f, mesh, in, out, global_avals(mesh, in, args));
  dump(p, mesh);
  if (out_specs) *out_specs = p.out_specs;
  auto g = p.global;
  auto plan = p.plan;
  Mesh m = mesh;
  FlatFn body = [g, plan, m](const std::vector<Array>& b) { return run_partitioned(*g, *plan, m, b); };
  return shard_map_flat(body, mesh, p.in_specs, p.out_specs, args);
}

PjitLowered pjit_lower_flat(const FlatFn& f, const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                            const std::vector<std::optional<PartitionSpec>>& out, const std::vector<Aval>& avals) {
  Partitioned p = partition(f, mesh, in, out, avals);
  return PjitLowered{mesh, *p.global, *p.plan, local_program(p, mesh), p.in_specs, p.out_specs};
}

std::string PjitLowered::as_text() const { return local.str(); }
std::string PjitLowered::plan_text() const { return plan_str(*global.jaxpr, plan, mesh); }

std::vector<std::pair<std::string, int64_t>> PjitLowered::collectives() const {
  std::vector<std::pair<std::string, int64_t>> r;
  std::function<void(const Jaxpr&)> walk = [&](const Jaxpr& j) {
    for (const Eqn& e : j.eqns) {
      if (e.prim->has(kCollective) && std::string(e.prim->name) != "axis_index") {
        int64_t bytes = 0;
        for (auto& a : e.inputs) bytes += a.aval().size() * static_cast<int64_t>(itemsize(a.aval().dtype));
        r.push_back({e.prim->name, bytes});
      }
      for (const auto& [k, v] : e.params)
        if (auto* jp = std::get_if<JaxprPtr>(&v)) walk(*(*jp)->jaxpr);
    }
  };
  walk(*local.jaxpr);
  return r;
}

std::vector<std::optional<NamedSharding>> leaf_shardings(
    const Tree& t, const std::function<std::optional<NamedSharding>(const std::string& path, const Array& leaf)>& rule) {
  std::vector<std::optional<NamedSharding>> r;
  std::function<void(const Tree&, const std::string&)> walk = [&](const Tree& n, const std::string& path) {
    if (n.is_leaf()) {
      r.push_back(rule(path, n.array()));
    } else if (n.is_dict()) {
      for (auto& [k, v] : n.dict()) walk(v, path.empty() ? k : path + "." + k);
    } else if (n.is_list()) {
      size_t i = 0;
      for (auto& v : n.items()) walk(v, (path.empty() ? "" : path + ".") + std::to_string(i++));
    }
  };
  walk(t, "");
  return r;
}

namespace detail {

PjitSetup pjit_setup(const PjitOptions& o, const std::vector<const ShardedArray*>& args) {
  PjitSetup s;
  s.mesh = o.mesh;
  auto take = [&](const Mesh& m, const char* what) {
    if (!s.mesh) {
      s.mesh = m;
    } else if (mesh_key(*s.mesh) != mesh_key(m)) {
      fail<ValueError>("pjit: ", what, " is over ", m.str(), ", another mesh than ", s.mesh->str(),
                       " (one sharded jit runs over one mesh)");
    }
  };
  for (auto& x : o.in_shardings)
    if (x) take(x->mesh, "an in_sharding");
  for (auto& x : o.out_shardings)
    if (x) take(x->mesh, "an out_sharding");
  for (auto* a : args) take(a->sharding().mesh, "a sharded argument");
  for (auto& leaves : o.in_leaf_shardings)
    for (auto& x : leaves)
      if (x) take(x->mesh, "an in_leaf_sharding");
  if (!s.mesh)
    fail<ValueError>("pjit: no mesh (give PjitOptions::mesh, an in- or out-sharding, or sharded arguments)");
  if (!args.empty() && !o.in_shardings.empty() && o.in_shardings.size() != args.size())
    fail<ValueError>("pjit: in_shardings has ", o.in_shardings.size(), " entries for ", args.size(), " arguments");
  size_t n = std::max(o.in_shardings.size(), args.size());
  for (size_t i = 0; i < n; ++i) {
    std::optional<PartitionSpec> spec;
    if (i < o.in_shardings.size() && o.in_shardings[i]) spec = o.in_shardings[i]->spec;
    else if (i < args.size()) spec = args[i]->sharding().spec;
    s.in.push_back(spec);
  }
  for (auto& x : o.out_shardings) s.out.push_back(x ? std::optional<PartitionSpec>(x->spec) : std::nullopt);
  for (auto& leaves : o.in_leaf_shardings) {
    s.in_leaf.emplace_back();
    for (auto& x : leaves) s.in_leaf.back().push_back(x ? std::optional<PartitionSpec>(x->spec) : std::nullopt);
  }
  s.in_exact = !o.in_shardings.empty();
  if (s.in.size() < s.in_leaf.size()) s.in.resize(s.in_leaf.size());
  s.key = "|pjit " + mesh_key(*s.mesh) + " in";
  for (auto& x : s.in) s.key += " " + (x ? x->str() : std::string("-"));
  s.key += " out";
  for (auto& x : s.out) s.key += " " + (x ? x->str() : std::string("-"));
  for (size_t i = 0; i < s.in_leaf.size(); ++i) {
    if (s.in_leaf[i].empty()) continue;
    s.key += " leaves" + std::to_string(i);
    for (auto& x : s.in_leaf[i]) s.key += " " + (x ? x->str() : std::string("-"));
  }
  return s;
}

std::vector<std::optional<PartitionSpec>> leaf_specs(const PjitSetup& s, const FlatCall& c) {
  std::vector<std::optional<PartitionSpec>> in = s.in;
  if (!s.in_exact && in.size() < c.num_args()) in.resize(c.num_args());
  if (in.size() != c.num_args())
    fail<ValueError>("pjit: in_shardings has ", in.size(), " entries for ", c.num_args(), " arguments");
  std::vector<std::optional<PartitionSpec>> r;
  for (size_t i = 0; i < c.num_args(); ++i) {
    size_t n = c.offset[i + 1] - c.offset[i];
    if (i < s.in_leaf.size() && !s.in_leaf[i].empty()) {
      if (s.in_leaf[i].size() != n)
        fail<ValueError>("pjit: in_leaf_shardings[", i, "] has ", s.in_leaf[i].size(), " entries for the ", n,
                         " leaves of argument ", i);
      r.insert(r.end(), s.in_leaf[i].begin(), s.in_leaf[i].end());
    } else {
      r.insert(r.end(), n, in[i]);
    }
  }
  return r;
}

std::vector<Array> pjit_call(const JitFunction& jit, const PjitSetup& s, FlatCall& c,
                             const std::vector<std::optional<PartitionSpec>>& leaf_in,
                             std::vector<PartitionSpec>* out_specs) {
  // the arguments' specs are per argument; an argument without one (all nullopt: no in_shardings)
  // counts every leaf replicated
  std::vector<std::optional<PartitionSpec>> in = leaf_in;
  FlatCall k = c;
  std::string sig = c.key + s.key;
  detail::append_aval_key(sig, c.leaves);
  Mesh mesh = *s.mesh;
  auto record = s.out_specs;
  auto mu = s.mu;
  FlatFn inner = c.fn;
  k.fn = [inner, mesh, in, out = s.out, record, mu, sig](const std::vector<Array>& leaves) {
    std::vector<PartitionSpec> specs;
    auto r = pjit_flat(inner, mesh, in, out, leaves, &specs);
    std::lock_guard<std::mutex> lock(*mu);
    (*record)[sig] = specs;
    return r;
  };
  k.key = c.key + s.key;
  std::vector<Array> r = jit(k);
  if (out_specs) {
    std::lock_guard<std::mutex> lock(*s.mu);
    auto it = s.out_specs->find(sig);
    if (it == s.out_specs->end()) fail<ValueError>("pjit: the results' layouts were not recorded for this call");
    *out_specs = it->second;
  }
  return r;
}

Array sharded_argument(const ShardedArray& x) {
  if (x.sharding().mesh.is_local()) return x.gather();
  if (x.addressable_shards().size() != 1)
    fail<NotImplementedError>("pjit: across processes, a sharded argument holds one block per process (it holds ",
                              x.addressable_shards().size(), ")");
  return x.addressable_data(0);
}

ShardedArray sharded_result(const Array& x, const Mesh& mesh, const PartitionSpec& spec) {
  NamedSharding s{mesh, spec};
  if (mesh.is_local()) return device_put(x, s);
  Shape global = x.shape();
  for (size_t d = 0; d < spec.dims.size(); ++d)
    if (spec.dims[d]) global[d] *= mesh.split_size(spec.dims[d]);
  return make_array_from_single_device_arrays(global, s, {x});
}

}  // namespace detail

}  // namespace graft
