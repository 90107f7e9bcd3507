#include "graft/parallel/mesh.h"

#include <set>

#include "graft/core/error.h"

namespace graft {

std::string SpecDim::str() const {
  if (axes.empty()) return "None";
  if (axes.size() == 1) return "'" + axes[0] + "'";
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", '" : "'") + axes[i] + "'";
  return s + ")";
}

std::string PartitionSpec::str() const {
  std::string s = "P(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  return s + ")";
}

Mesh::Mesh(std::vector<GlobalDevice> devices, std::vector<std::string> axis_names, Shape shape)
    : devices_(std::move(devices)), names_(std::move(axis_names)), shape_(std::move(shape)) {
  if (devices_.empty()) fail<ValueError>("Mesh: no devices");
  if (names_.empty()) fail<ValueError>("Mesh: no axis names");
  if (shape_.empty()) {
    if (names_.size() != 1)
      fail<ValueError>("Mesh: ", names_.size(), " axis names need a shape (the number of devices along each)");
    shape_ = {static_cast<int64_t>(devices_.size())};
  }
  if (shape_.size() != names_.size())
    fail<ValueError>("Mesh: ", names_.size(), " axis names for a shape of rank ", shape_.size());
  std::set<std::string> seen;
  for (auto& n : names_) {
    if (n.empty()) fail<ValueError>("Mesh: axis names must not be empty");
    if (!seen.insert(n).second) fail<ValueError>("Mesh: axis name '", n, "' appears twice");
  }
  if (numel(shape_) != static_cast<int64_t>(devices_.size()))
    fail<ValueError>("Mesh: shape (", shape_str(shape_), ") holds ", numel(shape_), " devices, given ", devices_.size());
  std::set<int> ids;
  for (auto& d : devices_)
    if (!ids.insert(d.id).second) fail<ValueError>("Mesh: device ", d.str(), " appears twice");
}

int64_t Mesh::axis_size(const std::string& name) const {
  int k = axis_index(name);
  if (k < 0) fail<ValueError>(str(), " has no axis '", name, "'");
  return shape_[static_cast<size_t>(k)];
}

int64_t Mesh::split_size(const SpecDim& d) const {
  int64_t n = 1;
  for (auto& a : d.axes) n *= axis_size(a);
  return n;
}

int64_t Mesh::block_index(const SpecDim& d, const std::vector<int64_t>& coords) const {
  int64_t b = 0;
  for (auto& a : d.axes) b = b * axis_size(a) + coords[static_cast<size_t>(axis_index(a))];
  return b;
}

int Mesh::axis_index(const std::string& name) const {
  for (size_t k = 0; k < names_.size(); ++k)
    if (names_[k] == name) return static_cast<int>(k);
  return -1;
}

std::vector<int64_t> Mesh::coords(size_t pos) const {
  std::vector<int64_t> c(shape_.size());
  int64_t r = static_cast<int64_t>(pos);
  for (size_t k = shape_.size(); k-- > 0;) {
    c[k] = r % shape_[k];
    r /= shape_[k];
  }
  return c;
}

std::string Mesh::str() const {
  std::string s = "Mesh(";
  for (size_t k = 0; k < names_.size(); ++k) s += (k ? ", '" : "'") + names_[k] + "': " + std::to_string(shape_[k]);
  return s + ")";
}

bool Mesh::is_local() const {
  for (auto& d : devices_)
    if (d.process_index != process_index()) return false;
  return true;
}

Shape NamedSharding::shard_shape(const Shape& global) const {
  if (spec.dims.size() > global.size())
    fail<ValueError>(spec.str(), " names ", spec.dims.size(), " dimensions, the array has ", global.size(), " (",
                     shape_str(global), ")");
  Shape s = global;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    if (!spec.dims[d]) continue;
    int64_t n = mesh.split_size(spec.dims[d]);
    if (s[d] % n != 0)
      fail<ValueError>(spec.str(), ": dimension ", d, " of (", shape_str(global), ") has ", s[d],
                       " entries, which do not divide over the ", n, " devices of ", spec.dims[d].str());
    s[d] /= n;
  }
  return s;
}

}  // namespace graft
