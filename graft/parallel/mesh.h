// Meshes of devices with named axes, and how an array is laid out over them.
//
//   graft::Mesh mesh(graft::devices(), {"data"});            // 1-D: every device along "data"
//   graft::Mesh mesh2(graft::devices(), {"data", "model"}, {2, 2});
//   graft::P("data")            // dimension 0 split over "data", the rest whole
//   graft::P(std::nullopt, "model")
//   graft::P()                  // replicated
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/shape.h"
#include "graft/parallel/device.h"

namespace graft {

/// For each dimension of an array, the mesh axis it is split over (nullopt: not split). Dimensions past
/// the listed ones are not split.
struct PartitionSpec {
  std::vector<std::optional<std::string>> dims;
  PartitionSpec() = default;
  template <class... A>
    requires(!(sizeof...(A) == 1 && (std::is_same_v<std::decay_t<A>, PartitionSpec> && ...)))
  explicit PartitionSpec(A&&... a) : dims{to_dim(std::forward<A>(a))...} {}
  /// P('data', None)
  std::string str() const;
  bool operator==(const PartitionSpec& o) const { return dims == o.dims; }

 private:
  static std::optional<std::string> to_dim(std::nullopt_t) { return std::nullopt; }
  static std::optional<std::string> to_dim(const char* s) { return std::string(s); }
  static std::optional<std::string> to_dim(std::string s) { return s; }
  static std::optional<std::string> to_dim(std::optional<std::string> s) { return s; }
};
using P = PartitionSpec;

class Mesh {
 public:
  /// The devices laid out row-major over axes of the given sizes (default: one axis of all devices).
  Mesh(std::vector<GlobalDevice> devices, std::vector<std::string> axis_names, Shape shape = {});
  const std::vector<GlobalDevice>& devices() const { return devices_; }
  const std::vector<std::string>& axis_names() const { return names_; }
  const Shape& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(devices_.size()); }
  /// The number of devices along `name` (a ValueError naming the mesh if it has no such axis).
  int64_t axis_size(const std::string& name) const;
  /// The position of axis `name`, or -1.
  int axis_index(const std::string& name) const;
  /// The device's coordinates along the axes.
  std::vector<int64_t> coords(size_t device_position) const;
  /// Mesh('data': 4, 'model': 2)
  std::string str() const;
  /// Whether every device belongs to this process.
  bool is_local() const;

 private:
  std::vector<GlobalDevice> devices_;
  std::vector<std::string> names_;
  Shape shape_;
};

/// An array laid out over a mesh by a PartitionSpec.
struct NamedSharding {
  Mesh mesh;
  PartitionSpec spec;
  /// The shape of one device's block of an array of `global` shape (a ValueError when a split dimension
  /// does not divide over its axis).
  Shape shard_shape(const Shape& global) const;
};

}  // namespace graft
