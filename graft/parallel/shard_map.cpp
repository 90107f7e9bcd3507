#include "graft/parallel/shard_map.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "graft/core/axis_names.h"
#include "graft/core/error.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control_util.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/jit.h"

namespace graft {

namespace {

// The mesh axes a spec splits, checked against the array's rank and the mesh: has[k] for axis k.
std::vector<bool> split_axes(const Mesh& mesh, const PartitionSpec& spec, int64_t ndim, const std::string& what) {
  if (static_cast<int64_t>(spec.dims.size()) > ndim)
    fail<ValueError>("shard_map: ", what, " has spec ", spec.str(), " for an array of rank ", ndim);
  std::vector<bool> has(mesh.axis_names().size(), false);
  for (auto& d : spec.dims)
    for (auto& a : d.axes) {
      int k = mesh.axis_index(a);
      if (k < 0) fail<ValueError>("shard_map: ", what, " has spec ", spec.str(), ", but ", mesh.str(), " has no axis '", a, "'");
      if (has[static_cast<size_t>(k)]) fail<ValueError>("shard_map: ", what, " has spec ", spec.str(), ", which splits over axis '", a, "' twice");
      has[static_cast<size_t>(k)] = true;
    }
  return has;
}

const PartitionSpec& out_spec(const std::vector<PartitionSpec>& specs, size_t j, size_t n) {
  if (specs.size() != 1 && specs.size() != n)
    fail<ValueError>("shard_map: out_specs has ", specs.size(), " entries for ", n, " outputs (give one per output, or one for all)");
  return specs[specs.size() == 1 ? 0 : j];
}

// ---- every device in this process: nested vmap over the blocks ------------------------------------------
// x with each split dimension d (over axes of n1, n2, ... devices) as [n1, n2, ..., d / (n1 n2 ...)], the
// n's moved to the front in the mesh's axis order.
Array blocks_in_front(const Array& x, const Mesh& mesh, const PartitionSpec& spec, const std::string& what) {
  Shape s;
  std::vector<std::pair<int, int64_t>> member;  // (mesh axis, position in s)
  for (int64_t d = 0; d < x.ndim(); ++d) {
    int64_t size = x.shape()[d];
    if (d < static_cast<int64_t>(spec.dims.size()) && spec.dims[static_cast<size_t>(d)]) {
      const SpecDim& a = spec.dims[static_cast<size_t>(d)];
      int64_t n = mesh.split_size(a);
      if (size % n != 0)
        fail<ValueError>("shard_map: ", what, " (", x.aval().str(), ") has ", size, " entries along dimension ", d,
                         ", which do not divide over the ", n, " devices of ", a.str(), " (spec ", spec.str(), ")");
      for (auto& name : a.axes) {
        member.push_back({mesh.axis_index(name), static_cast<int64_t>(s.size())});
        s.push_back(mesh.axis_size(name));
      }
      s.push_back(size / n);
    } else {
      s.push_back(size);
    }
  }
  std::sort(member.begin(), member.end());
  Axes perm;
  for (auto& m : member) perm.push_back(m.second);
  for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k)
    if (std::find(perm.begin(), perm.end(), k) == perm.end()) perm.push_back(k);
  return lax::transpose(lax::reshape(x, s), perm);
}

// The inverse: y holds the devices' blocks with the member dimensions of the spec's axes in front (mesh
// order); each goes back in front of its block dimension and merges with it.
Array merge_blocks(const Array& y, const Mesh& mesh, const PartitionSpec& spec, const std::vector<bool>& has) {
  int64_t r = 0;
  std::vector<int64_t> member_pos(has.size(), -1);
  for (size_t k = 0; k < has.size(); ++k)
    if (has[k]) member_pos[k] = r++;
  int64_t nb = y.ndim() - r;
  Axes perm;
  Shape merged;
  for (int64_t d = 0; d < nb; ++d) {
    int64_t size = y.shape()[r + d];
    if (d < static_cast<int64_t>(spec.dims.size()) && spec.dims[static_cast<size_t>(d)]) {
      for (auto& a : spec.dims[static_cast<size_t>(d)].axes) {
        int k = mesh.axis_index(a);
        perm.push_back(member_pos[static_cast<size_t>(k)]);
        size *= mesh.shape()[static_cast<size_t>(k)];
      }
    }
    perm.push_back(r + d);
    merged.push_back(size);
  }
  return lax::reshape(lax::transpose(y, perm), merged);
}

std::vector<Array> run_local(const FlatFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                             const std::vector<PartitionSpec>& out_specs, const std::vector<Array>& args) {
  size_t K = mesh.axis_names().size();
  std::vector<Array> xs;
  std::vector<std::vector<bool>> has_in;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string what = "argument leaf " + std::to_string(i);
    has_in.push_back(split_axes(mesh, in_specs[i], args[i].ndim(), what));
    xs.push_back(blocks_in_front(args[i], mesh, in_specs[i], what));
  }
  std::vector<std::vector<bool>> has_out;  // found when the innermost level runs
  std::function<std::vector<Array>(const std::vector<Array>&, size_t)> level = [&](const std::vector<Array>& v,
                                                                                   size_t k) -> std::vector<Array> {
    if (k == K) {
      std::vector<Array> out = f(v);
      has_out.clear();
      for (size_t j = 0; j < out.size(); ++j)
        has_out.push_back(split_axes(mesh, out_spec(out_specs, j, out.size()), out[j].ndim(),
                                     "output leaf " + std::to_string(j)));
      return out;
    }
    std::vector<std::optional<int64_t>> in_axes;
    for (auto& h : has_in) in_axes.push_back(h[k] ? std::optional<int64_t>(0) : std::nullopt);
    // out_axes are known once the body has run: vmap_flat reads them after it returns, so they are
    // given through a spec-derived list per output (one spec for all applies to every output)
    std::vector<std::optional<int64_t>> out_axes;
    for (auto& spec : out_specs) {
      bool named = false;
      for (auto& d : spec.dims)
        named = named || std::find(d.axes.begin(), d.axes.end(), mesh.axis_names()[k]) != d.axes.end();
      out_axes.push_back(named ? std::optional<int64_t>(0) : std::nullopt);
    }
    const std::string& name = mesh.axis_names()[k];
    try {
      return vmap_flat([&](const std::vector<Array>& w) { return level(w, k + 1); }, v, in_axes, out_axes, name,
                       mesh.shape()[k]);
    } catch (const ValueError& e) {
      if (std::string(e.what()).find("out_axes is None") == std::string::npos) throw;
      fail<ValueError>("shard_map: an output varies over mesh axis '", name, "' but its out_spec does not split ",
                       "it over that axis (reduce it with psum / pmean, or name the axis in out_specs): ", e.what());
    }
  };
  std::vector<Array> ys = level(xs, 0);
  std::vector<Array> result;
  for (size_t j = 0; j < ys.size(); ++j)
    result.push_back(merge_blocks(ys[j], mesh, out_spec(out_specs, j, ys.size()), has_out[j]));
  return result;
}

// ---- one device per process: the body staged with the mesh's communicators -----------------------------
// The mesh's axes over processes: a communicator per axis (the processes that differ only along it).
struct MeshComms final : ParamObject {
  std::string mesh_str;
  std::vector<AxisFrame> frames;
  void print(std::ostream& os) const override { os << mesh_str; }
  size_t hash() const override { return std::hash<std::string>{}(mesh_str); }
  bool equals(const ParamObject& o) const override {
    auto* m = dynamic_cast<const MeshComms*>(&o);
    return m && m->mesh_str == mesh_str;
  }
};

struct SpecList final : ParamObject {
  std::vector<PartitionSpec> specs;
  explicit SpecList(std::vector<PartitionSpec> s) : specs(std::move(s)) {}
  void print(std::ostream& os) const override {
    os << "(";
    for (size_t i = 0; i < specs.size(); ++i) os << (i ? ", " : "") << specs[i].str();
    os << (specs.size() == 1 ? ",)" : ")");
  }
  size_t hash() const override { return std::hash<std::string>{}((std::ostringstream() << *this).str()); }
  bool equals(const ParamObject& o) const override {
    auto* s = dynamic_cast<const SpecList*>(&o);
    return s && s->specs == specs;
  }
  friend std::ostream& operator<<(std::ostream& os, const SpecList& s) {
    s.print(os);
    return os;
  }
};

Ref<const MeshComms> comms_for(const Mesh& mesh) {
  static std::mutex mu;
  static std::map<std::string, Ref<const MeshComms>> cache;
  std::string key = mesh.str();
  for (auto& d : mesh.devices()) key += "," + std::to_string(d.id);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (mesh.size() != process_count())
    fail<NotImplementedError>("shard_map: ", mesh.str(), " has ", mesh.size(), " devices over ", process_count(),
                              " processes; across processes, a mesh holds one device of every process (run with "
                              "GRAFT_CPU_DEVICES=1)");
  size_t pos = mesh.devices().size();
  for (size_t i = 0; i < mesh.devices().size(); ++i)
    if (mesh.devices()[i].process_index == process_index()) pos = i;
  std::vector<int64_t> c = mesh.coords(pos);
  auto r = make_ref<MeshComms>();
  r->mesh_str = mesh.str();
  auto world = distributed::world();
  for (size_t k = 0; k < c.size(); ++k) {
    int64_t color = 0;  // the position among the other axes
    for (size_t q = 0; q < c.size(); ++q)
      if (q != k) color = color * mesh.shape()[q] + c[q];
    r->frames.push_back(AxisFrame{mesh.axis_names()[k], mesh.shape()[k],
                                  world->split(static_cast<int>(color), static_cast<int>(c[k]))});
  }
  cache[key] = r;
  return r;
}

const MeshComms& comms_of(const Params& p) { return p.get_object<MeshComms>("mesh"); }

struct Frames {
  std::vector<std::unique_ptr<AxisScope>> scopes;
  explicit Frames(const MeshComms& m) {
    for (auto& f : m.frames) scopes.push_back(std::make_unique<AxisScope>(f));
  }
};

AxisSet mesh_axes(const MeshComms& m) {
  AxisSet s = 0;
  for (auto& f : m.frames) s |= axis_bit(f.name);
  return s;
}

Avals shard_map_shape(const Primitive&, AvalPtrs in, const Params& params) {
  const ClosedJaxpr& body = params.get_jaxpr("jaxpr");
  if (in.size() != body.jaxpr->invars.size())
    fail<ValueError>("shard_map: the body takes ", body.jaxpr->invars.size(), " arrays, got ", in.size());
  AxisSet mine = mesh_axes(comms_of(params));
  Avals out;
  for (auto a : body.out_avals()) {
    a.vma &= ~mine;  // outside, the process's blocks are plain values
    out.push_back(a);
  }
  return out;
}

Arrays shard_map_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  Frames frames(comms_of(params));
  return jit_call(params.get<JaxprPtr>("jaxpr"), in, "shard_map");
}

const std::vector<PartitionSpec>& specs_of(const Params& p, const char* key) { return p.get_object<SpecList>(key).specs; }

// A staged shard_map call of `body` over the same mesh as `like`, with the given per-leaf specs;
// `primal_in` / `primal_out` mark a jvp'd body (its first results do not depend on its tangents).
Arrays bind_shard_map(const Params& like, JaxprPtr body, std::vector<PartitionSpec> in_specs,
                      std::vector<PartitionSpec> out_specs, std::span<const Array> args, int64_t primal_in = -1,
                      int64_t primal_out = -1) {
  Params p{{"jaxpr", std::move(body)},
           {"mesh", like.get<Ref<const ParamObject>>("mesh")},
           {"in_specs", Ref<const ParamObject>(new SpecList(std::move(in_specs)))},
           {"out_specs", Ref<const ParamObject>(new SpecList(std::move(out_specs)))}};
  if (primal_in >= 0) {
    p.set("primal_in", primal_in);
    p.set("primal_out", primal_out);
  }
  return bind(shard_map_p, args, p);
}

// Transformations of the staged call are the staged calls of the transformed body (as in JAX): each
// derived body is traced once, with the mesh's axes bound (its collectives' rules need their sizes).
template <class T, class F>
std::shared_ptr<const T> derive(const Params& params, const std::string& key, F make) {
  const ClosedJaxpr& body = params.get_jaxpr("jaxpr");
  return body.derived<T>(key, [&] {
    Frames frames(comms_of(params));
    return make(body);
  });
}

JvpResult shard_map_jvp(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                        const Params& params) {
  std::vector<bool> nz;
  for (auto& t : tangents) nz.push_back(t.valid());
  auto jj = derive<JaxprPtr>(params, control::mask_key("jvp", nz),
                             [&](const ClosedJaxpr& b) { return hoisted(jvp_jaxpr(b, nz)); });
  const auto& in_specs = specs_of(params, "in_specs");
  const auto& out_specs = specs_of(params, "out_specs");
  std::vector<PartitionSpec> ins = in_specs, outs = out_specs;
  Arrays args(primals.begin(), primals.end());
  for (size_t i = 0; i < tangents.size(); ++i)
    if (nz[i]) {
      args.push_back(tangents[i]);
      ins.push_back(in_specs[i]);
    }
  outs.insert(outs.end(), out_specs.begin(), out_specs.end());
  Arrays r = bind_shard_map(params, *jj, ins, outs, args, static_cast<int64_t>(primals.size()),
                            static_cast<int64_t>(out_specs.size()));
  size_t n = out_specs.size();
  JvpResult res;
  res.primals.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n));
  res.tangents.assign(r.begin() + static_cast<std::ptrdiff_t>(n), r.end());
  return res;
}

// A jvp'd call in a linear program: its primal results do not depend on the tangents.
std::vector<bool> shard_map_linear_outputs(const Primitive&, const std::vector<bool>& linear_in, const Params& params) {
  bool any = false, primal = false;
  int64_t pin = params.has("primal_in") ? params.get_int("primal_in") : -1;
  for (size_t i = 0; i < linear_in.size(); ++i) {
    any = any || linear_in[i];
    if (static_cast<int64_t>(i) < pin) primal = primal || linear_in[i];
  }
  std::vector<bool> r(specs_of(params, "out_specs").size(), any);
  if (pin >= 0)
    for (int64_t k = 0; k < params.get_int("primal_out"); ++k) r[static_cast<size_t>(k)] = primal;
  return r;
}

// The transpose: a staged call of the body's transpose, taking the non-linear arguments and the
// results' cotangents (laid out as the results were) and giving the linear arguments' cotangents (laid
// out as those arguments were). A replicated argument's cotangent is summed over the mesh inside.
Arrays shard_map_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                           const Params& params) {
  std::vector<bool> linear;
  for (auto& a : args) linear.push_back(a.linear);
  auto tj = derive<JaxprPtr>(params, control::mask_key("T", linear),
                             [&](const ClosedJaxpr& b) { return hoisted(transpose_jaxpr(b, linear)); });
  const auto& in_specs = specs_of(params, "in_specs");
  const auto& out_specs = specs_of(params, "out_specs");
  std::vector<PartitionSpec> ins, outs;
  for (size_t i = 0; i < args.size(); ++i) (linear[i] ? outs : ins).push_back(in_specs[i]);
  ins.insert(ins.end(), out_specs.begin(), out_specs.end());
  const ClosedJaxpr& body = params.get_jaxpr("jaxpr");
  return control::transpose_call(cts, args, body.out_avals(), 0, [&](std::span<const Array> in) {
    return bind_shard_map(params, *tj, ins, outs, in);
  });
}

// vmap of the call: the batch dimensions go first, the body is batched over them (its collectives over
// the mesh's axes stay what they were), and the specs gain an unsplit leading dimension.
BatchResult shard_map_batch(const Primitive&, std::span<const Array> vals, std::span<const int64_t> dims,
                            const BatchInfo& axis, const Params& params) {
  Arrays in;
  std::vector<int64_t> d0;
  std::vector<PartitionSpec> ins = specs_of(params, "in_specs");
  for (size_t i = 0; i < vals.size(); ++i) {
    if (dims[i] == kNotMapped) {
      in.push_back(vals[i]);
      d0.push_back(kNotMapped);
      continue;
    }
    in.push_back(lax::moveaxis(vals[i], dims[i], 0));
    d0.push_back(0);
    ins[i].dims.insert(ins[i].dims.begin(), std::nullopt);
  }
  struct Batched {
    JaxprPtr jaxpr;
    std::vector<bool> mapped;
  };
  auto bj = derive<Batched>(params, control::batch_key("vmap", axis, d0), [&](const ClosedJaxpr& b) {
    Batched r;
    r.jaxpr = hoisted(batch_jaxpr(b, d0, axis.size, axis.name, &r.mapped));
    return r;
  });
  std::vector<PartitionSpec> outs = specs_of(params, "out_specs");
  BatchDims od;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (bj->mapped[k]) outs[k].dims.insert(outs[k].dims.begin(), std::nullopt);
    od.push_back(bj->mapped[k] ? 0 : kNotMapped);
  }
  return {bind_shard_map(params, bj->jaxpr, ins, outs, in), od};
}

std::vector<Array> run_across_processes(const FlatFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                                        const std::vector<PartitionSpec>& out_specs, const std::vector<Array>& args) {
  Ref<const MeshComms> comms = comms_for(mesh);
  std::vector<Aval> avals;
  for (size_t i = 0; i < args.size(); ++i) {
    auto has = split_axes(mesh, in_specs[i], args[i].ndim(), "argument leaf " + std::to_string(i));
    Aval a = args[i].aval();
    for (size_t k = 0; k < has.size(); ++k)
      if (has[k]) a.vma |= axis_bit(mesh.axis_names()[k]);
    avals.push_back(a);
  }
  ClosedJaxpr body;
  {
    Frames frames(*comms);
    body = make_jaxpr_flat(f, avals, "shard_map");
  }
  auto outs = body.out_avals();
  for (size_t j = 0; j < outs.size(); ++j) {
    auto has = split_axes(mesh, out_spec(out_specs, j, outs.size()), outs[j].ndim(), "output leaf " + std::to_string(j));
    for (size_t k = 0; k < has.size(); ++k)
      if (!has[k] && (outs[j].vma & axis_bit(mesh.axis_names()[k])))
        fail<ValueError>("shard_map: output leaf ", j, " (", outs[j].str(), ") varies over mesh axis '",
                         mesh.axis_names()[k], "' but its out_spec ", out_spec(out_specs, j, outs.size()).str(),
                         " does not split it over that axis (reduce it with psum / pmean, or name the axis)");
  }
  // the body's captured values become leading arguments (the staged call holds no arrays of its own)
  std::vector<Array> in(body.consts.begin(), body.consts.end());
  in.insert(in.end(), args.begin(), args.end());
  auto call = std::make_shared<const ClosedJaxpr>(hoist_consts(*body.jaxpr), std::vector<Array>{});
  std::vector<PartitionSpec> leaf_out;
  for (size_t j = 0; j < outs.size(); ++j) leaf_out.push_back(out_spec(out_specs, j, outs.size()));
  Arrays r = bind(shard_map_p, in,
                  {{"jaxpr", JaxprPtr(call)},
                   {"mesh", Ref<const ParamObject>(comms)},
                   {"in_specs", Ref<const ParamObject>(new SpecList(in_specs))},
                   {"out_specs", Ref<const ParamObject>(new SpecList(leaf_out))}});
  return std::vector<Array>(r.begin(), r.end());
}

}  // namespace

const Primitive shard_map_p{"shard_map",      kHigherOrder | kMultipleResults | kEffectful,
                            &shard_map_shape, &shard_map_impl,
                            &shard_map_jvp,   &shard_map_transpose,
                            &shard_map_batch, nullptr,
                            nullptr,          nullptr,
                            &shard_map_linear_outputs};

std::vector<Array> shard_map_flat(const FlatFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                                  const std::vector<PartitionSpec>& out_specs, const std::vector<Array>& args) {
  if (in_specs.size() != args.size())
    fail<ValueError>("shard_map: ", in_specs.size(), " in_specs for ", args.size(), " argument leaves");
  if (out_specs.empty()) fail<ValueError>("shard_map: out_specs is empty");
  if (mesh.is_local()) return run_local(f, mesh, in_specs, out_specs, args);
  return run_across_processes(f, mesh, in_specs, out_specs, args);
}

}  // namespace graft
