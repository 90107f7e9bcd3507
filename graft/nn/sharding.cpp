#include "graft/nn/sharding.h"

#include <sstream>

#include "graft/parallel/pjit.h"

namespace graft::nn {

namespace {

std::vector<std::string> parts(const std::string& path) {
  std::vector<std::string> r;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) r.push_back(p);
  return r;
}

bool is_number(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// Megatron's role of a weight or bias: +1 split by output columns (a bias then split too), -1 by input
// rows (its bias replicated), 0 none.
int tensor_role(const std::vector<std::string>& p, int64_t mlp_layers) {
  if (p.size() < 2) return 0;
  const std::string& layer = p[p.size() - 2];
  if (layer == "query" || layer == "key" || layer == "value" || layer == "fc1") return +1;
  if (layer == "out" || layer == "fc2") return -1;
  // an MLP as a list of layers: [i].w / [i].b, the last layer whole
  if (is_number(layer) && p.size() == 2 && mlp_layers > 1) {
    int64_t i = std::stoll(layer);
    if (i % 2 == 1) return -1;
    return i + 1 < mlp_layers ? +1 : 0;
  }
  return 0;
}

}  // namespace

NamedSharding parameter_sharding(const std::string& path, const Aval& leaf, const Mesh& mesh, const Layout& layout,
                                 int64_t mlp_layers) {
  std::vector<std::string> p = parts(path);
  if (!p.empty() && (p[0] == "mu" || p[0] == "nu" || p[0] == "momentum" || p[0] == "trace")) p.erase(p.begin());
  PartitionSpec spec;
  spec.dims.assign(static_cast<size_t>(leaf.ndim()), std::nullopt);
  auto split = [&](int64_t d, const std::string& axis) {
    if (axis.empty() || d < 0 || d >= leaf.ndim() || spec.dims[static_cast<size_t>(d)]) return false;
    if (leaf.shape[static_cast<size_t>(d)] % mesh.axis_size(axis) != 0) return false;
    spec.dims[static_cast<size_t>(d)] = axis;
    return true;
  };
  if (!layout.tensor.empty()) {
    int role = tensor_role(p, mlp_layers);
    bool weight = !p.empty() && p.back() == "w" && leaf.ndim() == 2;
    bool bias = !p.empty() && p.back() == "b" && leaf.ndim() == 1;
    if (role > 0 && weight) split(1, layout.tensor);
    if (role > 0 && bias) split(0, layout.tensor);
    if (role < 0 && weight) split(0, layout.tensor);
  }
  if (!layout.fsdp.empty())
    for (int64_t d = 0; d < leaf.ndim(); ++d)
      if (split(d, layout.fsdp)) break;
  while (!spec.dims.empty() && !spec.dims.back()) spec.dims.pop_back();
  return NamedSharding{mesh, spec};
}

std::vector<std::optional<NamedSharding>> parameter_shardings(const Tree& params, const Mesh& mesh, const Layout& layout) {
  // an MLP's parameters are a list of layers (as are the optimizer's trees shaped like them)
  int64_t layers = 0;
  if (params.is_list()) layers = static_cast<int64_t>(params.items().size());
  if (params.is_dict() && params.dict().count("mu") && params["mu"].is_list())
    layers = static_cast<int64_t>(params["mu"].items().size());
  return leaf_shardings(params, [&](const std::string& path, const Array& leaf) {
    return std::optional<NamedSharding>(parameter_sharding(path, leaf.aval(), mesh, layout, layers));
  });
}

}  // namespace graft::nn
